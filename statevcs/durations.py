"""Durations as people type them: ``2w``, ``3d12h``, ``90m``, ``45s``, or seconds."""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime, timedelta

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


_AGO = re.compile(r"(\d+(?:\.\d+)?)[.\s]*([a-z]+)[.\s]+ago", re.IGNORECASE)
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
    match = _AGO.fullmatch(cleaned)
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
    "InvalidDuration",
    "as_duration",
    "parse_age",
    "parse_duration",
]
