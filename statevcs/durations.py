"""Durations as people type them: ``2w``, ``3d12h``, ``90m``, ``45s``, or seconds."""

from __future__ import annotations

import math
import re
from datetime import timedelta

from .errors import StateVCSError

_PART = re.compile(r"(\d+(?:\.\d+)?)\s*(w|d|h|m|s)", re.IGNORECASE)
_UNIT_SECONDS = {"w": 604_800, "d": 86_400, "h": 3_600, "m": 60, "s": 1}
_MAX_SECONDS = 1000 * 365 * 86_400

DURATION_HELP = "a duration such as 2w, 3d, 12h, 30m, 45s, 1w2d, a number of seconds, or 0/now"
"""One line describing the accepted forms, for help texts and error messages."""


class InvalidDuration(StateVCSError, ValueError):
    """A duration string could not be parsed."""


def parse_duration(text: str) -> timedelta:
    """Parse ``2w``, ``3d12h``, ``90m``, ``45s``, ``0``/``now`` or a plain number of seconds."""
    if not isinstance(text, str):
        raise TypeError(f"a duration must be a str or timedelta, got {type(text).__name__}")
    cleaned = text.strip()
    if cleaned.lower() in ("0", "now"):
        return timedelta(0)
    seconds: float | None = None
    try:
        seconds = float(cleaned)
    except ValueError:
        total = 0.0
        position = 0
        for match in _PART.finditer(cleaned):
            if cleaned[position : match.start()].strip():
                break
            total += float(match.group(1)) * _UNIT_SECONDS[match.group(2).lower()]
            position = match.end()
        if position and not cleaned[position:].strip():
            seconds = total
    if seconds is None or not math.isfinite(seconds) or not 0 <= seconds <= _MAX_SECONDS:
        raise InvalidDuration(f"{text!r} is not a duration; use {DURATION_HELP}")
    return timedelta(seconds=seconds)


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


__all__ = ["DURATION_HELP", "InvalidDuration", "as_duration", "parse_duration"]
