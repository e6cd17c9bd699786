"""JSON-compatible renderings of decoded values, for ``--json`` output and result objects."""

from __future__ import annotations

import base64
import math
from datetime import date, datetime, time, timedelta
from typing import Any

NOT_A_SCALAR: Any = object()
"""What :func:`json_scalar` returns for a container or a value of another type."""


def json_scalar(item: Any) -> Any:
    """A document scalar as JSON holds it: itself, or the marker standing in where JSON has none.

    Non-finite floats become ``{"__float__": "nan"}`` (``"inf"``, ``"-inf"``), bytes
    ``{"__bytes__": "<base64>"}``; None, bool, int, str and finite floats are themselves.
    Anything else (containers included) gives :data:`NOT_A_SCALAR`. The one home of these
    markers: the git mirror's JSON files and the command line's ``--json`` output use it.
    """
    if item is None or isinstance(item, (bool, str, int)):
        return item
    if isinstance(item, float):
        if math.isfinite(item):
            return item
        return {"__float__": "nan" if math.isnan(item) else repr(item)}
    if isinstance(item, (bytes, bytearray, memoryview)):
        return {"__bytes__": base64.b64encode(bytes(item)).decode("ascii")}
    return NOT_A_SCALAR


def to_plain(value: Any) -> Any:
    """Return a JSON-compatible rendering of any decoded value, for ``--json`` output.

    Uses the git mirror's markers where JSON has no form (see :func:`statevcs.mirror.git.to_json`):
    bytes become ``{"__bytes__": "<base64>"}``, non-finite floats ``{"__float__": "nan"}``,
    dicts with non-string keys ``{"__map__": [[key, value], ...]}``. Datetimes become ISO
    strings, sets and tuples lists, and anything else its ``repr``. Never recurses, so any
    depth renders.
    """
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]
    while stack:
        item, out, slot = stack.pop()
        scalar = json_scalar(item)
        if scalar is not NOT_A_SCALAR:
            out[slot] = scalar
        elif isinstance(item, dict) and all(isinstance(k, str) for k in item):
            mapping: dict[str, Any] = dict.fromkeys(item)
            out[slot] = mapping
            stack.extend((v, mapping, k) for k, v in item.items())
        elif isinstance(item, dict):
            pairs: list[list[Any]] = [[None, None] for _ in range(len(item))]
            out[slot] = {"__map__": pairs}
            for pair, (k, v) in zip(pairs, item.items()):
                stack.append((k, pair, 0))
                stack.append((v, pair, 1))
        elif isinstance(item, (list, tuple, set, frozenset)):
            items = sorted(item, key=repr) if isinstance(item, (set, frozenset)) else item
            array: list[Any] = [None] * len(items)
            out[slot] = array
            stack.extend((v, array, i) for i, v in enumerate(items))
        elif isinstance(item, (datetime, date, time)):
            out[slot] = item.isoformat()
        elif isinstance(item, timedelta):
            out[slot] = item.total_seconds()
        else:
            out[slot] = repr(item)
    return root[0]


__all__ = ["NOT_A_SCALAR", "json_scalar", "to_plain"]
