"""Durations as people type them: ``2w``, ``3d12h``, ``30min``, ``2.weeks``, ``1 month``, seconds.

The spellings follow git's approxidate (``2.weeks.ago``, ``1 month``, ``30 minutes``) plus the
short forms statevcs always took (``2w``, ``3d12h``, ``90m``). Single letters are minutes for
``m`` and refused for ``M``, which reads as months as often as minutes.
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta

from .errors import StateVCSError

_DAY = 86_400
_UNITS: dict[str, int] = {}
for _seconds, _spellings in (
    (1, "s sec secs second seconds"),
    (60, "m min mins minute minutes"),
    (3_600, "h hr hrs hour hours"),
    (_DAY, "d day days"),
    (7 * _DAY, "w wk wks week weeks"),
    (30 * _DAY, "month months"),
    (365 * _DAY, "y yr yrs year years"),
):
    _UNITS.update(dict.fromkeys(_spellings.split(), _seconds))

_NUMBER = r"[0-9]+(?:\.[0-9]+)?"
# A part is a number, then the unit, optionally apart by spaces or a dot (git's ``1.month``);
# parts may be apart by spaces, dots or commas. ``ago`` may close it, as in ``2.weeks.ago``.
_PART = re.compile(rf"({_NUMBER})[\s.]*([a-z]+)", re.IGNORECASE | re.ASCII)
_BETWEEN = re.compile(r"[\s.,]*", re.ASCII)
_AGO = re.compile(r"[\s.]+ago", re.IGNORECASE | re.ASCII)
_PLAIN = re.compile(rf"\s*({_NUMBER})\s*", re.ASCII)
_MAX_SECONDS = 1000 * 365 * _DAY

UNITS_HELP = (
    "s/sec/second(s), m/min/minute(s), h/hr/hour(s), d/day(s), w/wk/week(s), month(s) "
    "(30 days), y/yr/year(s) (365 days)"
)
"""The accepted units, for error messages."""

DURATION_HELP = (
    "a duration such as 2w, 1w2d, 12h, 30m or 30min (minutes), 1.month, 2 weeks, 45s, a number "
    "of seconds, or 0/now"
)
"""One line describing the accepted forms, for help texts and error messages."""


class InvalidDuration(StateVCSError, ValueError):
    """A duration string could not be parsed."""


def parse_duration(text: str) -> timedelta:
    """Parse a duration: ``2w``, ``3d12h``, ``30min``, ``2.weeks.ago``, ``1 month``, ``0``/``now``.

    A plain number is seconds. Unit words are case-insensitive; ``M`` alone is refused (months
    or minutes?). Anything else raises :class:`InvalidDuration` listing the accepted units.
    """
    if not isinstance(text, str):
        raise TypeError(f"a duration must be a str or timedelta, got {type(text).__name__}")
    cleaned = text.strip()
    if cleaned.lower() in ("0", "now"):
        return timedelta(0)
    plain = _PLAIN.fullmatch(cleaned)
    seconds = float(plain.group(1)) if plain else _sum_of_parts(text, cleaned)
    if not math.isfinite(seconds) or seconds > _MAX_SECONDS:
        raise InvalidDuration(
            f"{_shown(text)} is not a duration statevcs handles: it is longer than 1000 years; "
            f"use {DURATION_HELP}"
        )
    return timedelta(seconds=seconds)


def _sum_of_parts(text: str, cleaned: str) -> float:
    total = 0.0
    position = 0
    end = len(cleaned)
    ago = _AGO.search(cleaned)
    if ago is not None and ago.end() == end:
        end = ago.start()
    while position < end:
        start = position
        if position:
            separator = _BETWEEN.match(cleaned, position, end)
            assert separator is not None  # it matches the empty string too
            start = separator.end()
        match = _PART.match(cleaned, start, end)
        if match is None:
            break
        unit = match.group(2)
        if unit == "M":
            raise InvalidDuration(
                f"{_shown(text)} is ambiguous: 'M' could be months or minutes; write "
                f"{match.group(1)}month or {match.group(1)}min (units: {UNITS_HELP})"
            )
        seconds = _UNITS.get(unit.lower())
        if seconds is None:
            raise InvalidDuration(
                f"{_shown(text)} is not a duration: unknown unit {unit[:20]!r}; the units are "
                f"{UNITS_HELP}; or use {DURATION_HELP}"
            )
        total += float(match.group(1)) * seconds
        position = match.end()
    if position == 0 or position != end:
        raise InvalidDuration(
            f"{_shown(text)} is not a duration; use {DURATION_HELP} (units: {UNITS_HELP})"
        )
    return total


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 60 else f"{text[:60]!r}..."


_AGE_AGO = re.compile(r"(\d+(?:\.\d+)?)[.\s]*([a-z]+)[.\s]+ago", re.IGNORECASE)
_WORD_SECONDS = {
    "second": 1,
    "minute": 60,
    "hour": 3_600,
    "day": 86_400,
    "week": 604_800,
    "month": 30 * 86_400,
    "year": 365 * 86_400,
}
AGE_HELP = f"{DURATION_HELP}, git's 2.weeks.ago or '3 days ago', a date (2026-01-31), or never"
"""The forms :func:`parse_age` accepts, for help texts and error messages."""


def parse_age(text: str, *, now: datetime | None = None) -> timedelta | None:
    """An age as git's ``--prune=`` and ``--expire=`` take it; ``None`` for ``never``.

    Accepts everything :func:`parse_duration` does, ``all`` (as ``now``), git's approxidate
    forms ``2.weeks.ago`` and ``3 days ago`` (second, minute, hour, day, week, month = 30
    days, year = 365 days, singular or plural), and a date or time in ISO form (its age).
    """
    if not isinstance(text, str):
        raise TypeError(f"an age must be a str, got {type(text).__name__}")
    cleaned = text.strip().lower()
    if cleaned == "never":
        return None
    if cleaned == "all":
        return timedelta(0)
    match = _AGE_AGO.fullmatch(cleaned)
    if match is not None:
        unit = match.group(2).removesuffix("s")
        if unit in _WORD_SECONDS:
            seconds = float(match.group(1)) * _WORD_SECONDS[unit]
            if seconds <= _MAX_SECONDS:
                return timedelta(seconds=seconds)
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}([ t].*)?", cleaned):
        try:
            when = datetime.fromisoformat(text.strip())
        except ValueError:
            pass
        else:
            if when.tzinfo is None:
                when = when.astimezone()  # a date without a zone is local time, as in git
            age = (now or datetime.now(UTC)) - when
            return max(age, timedelta(0))
    try:
        return parse_duration(text)
    except InvalidDuration:
        raise InvalidDuration(f"{text!r} is not an age; use {AGE_HELP}") from None


def as_duration(value: timedelta | str, argument: str) -> timedelta:
    """Return ``value`` as a non-negative ``timedelta`` (strings go through parse_duration)."""
    if isinstance(value, timedelta):
        if value < timedelta(0):
            raise InvalidDuration(f"{argument} must not be negative, got {value}")
        return value
    if isinstance(value, str):
        return parse_duration(value)
    raise TypeError(
        f"{argument} must be a datetime.timedelta or a duration string, got {type(value).__name__}"
    )


__all__ = [
    "AGE_HELP",
    "DURATION_HELP",
    "UNITS_HELP",
    "InvalidDuration",
    "as_duration",
    "parse_age",
    "parse_duration",
]
