"""Repository locations fit for a message: credentials masked, wherever they hide.

Its own module, below both the registry and the S3 store (which each show locations), so
neither imports the other for it.
"""

from __future__ import annotations

import re

_AUTHORITY = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:(?://|/)?")
# A '%' percent-encoded any number of times ("%40", "%2540", ...): a value is decoded once
# per layer (the query, then the endpoint inside it), and a mask must not depend on how many.
_PCT = "%(?:25)*"
# An '@' in any spelling a parser may read as one: plain, percent-encoded, or a character that
# NFKC folds to '@' (U+FF20, U+FE6B; Python's urlsplit refuses those with the netloc in its
# message), raw or percent-encoded as UTF-8.
_AT = re.compile(
    rf"[@\uff20\ufe6b]|{_PCT}40|{_PCT}ef{_PCT}bc{_PCT}a0|{_PCT}ef{_PCT}b9{_PCT}ab",
    re.IGNORECASE,
)
# A query parameter that carries a secret (``secret_access_key=``, ``token=``, ``password=``,
# ``X-Amz-Signature=``, Azure's ``sig=``, ``aws_session=``), its '=' plain or percent-encoded.
_SECRET_PARAMETER = re.compile(
    r"(?:secret|token|passw|pwd|credential|sig|key|auth|session|sas|bearer|jwt|cookie)"
    rf"[A-Za-z0-9_.-]*(?:=|{_PCT}3d|\uff1d|\ufe66)",
    re.IGNORECASE,
)
MASK = "***"


def _secret_spans(location: str) -> list[tuple[int, int]]:
    """Where ``location`` may hold a secret: the userinfo and secret-bearing parameters.

    A password may hold any character, '/', '?', '#' and '@' included, so no parse can tell
    where it ends: the userinfo is taken as everything from the first ``scheme:`` (and its
    slashes) to the last '@' (or ``%40``) anywhere, and a secret parameter's value as
    everything to the end. Over-masking a message loses nothing; under-masking leaks a key.
    A location with no ``scheme:`` anywhere is a folder path and holds no URL secrets.
    """
    authority = _AUTHORITY.search(location)
    if authority is None:
        return []
    spans: list[tuple[int, int]] = []
    ats = list(_AT.finditer(location))
    if ats and authority.end() <= ats[-1].start():
        spans.append((authority.end(), ats[-1].start()))
    parameter = _SECRET_PARAMETER.search(location)
    if parameter:
        spans.append((parameter.end(), len(location)))
    return spans


def holds_credentials(location: str) -> bool:
    """Whether ``location`` may carry a secret (an '@', or a secret-bearing parameter)."""
    return bool(_secret_spans(location))


def mask_credentials(location: str) -> str:
    """``location`` (a URL or path) with every part that may hold a secret replaced by ``***``.

    Whatever characters a password holds, no part of it survives: see :func:`holds_credentials`.
    Meant for a location, not for a whole message (which it would over-mask).
    """
    spans = sorted(_secret_spans(location))
    if not spans:
        return location
    merged: list[list[int]] = []
    for start, end in spans:
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    out: list[str] = []
    last = 0
    for start, end in merged:
        out.append(location[last:start] + MASK)
        last = end
    out.append(location[last:])
    return "".join(out)


def shown_location(location: str, limit: int = 200) -> str:
    """``location`` fit for a message: credentials masked, cut to ``limit`` characters."""
    masked = mask_credentials(location)
    return masked if len(masked) <= limit else masked[:limit] + "..."


__all__ = ["MASK", "holds_credentials", "mask_credentials", "shown_location"]
