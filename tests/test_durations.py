"""Duration strings (statevcs.durations): git's approxidate spellings, and no ambiguous ``M``."""

from __future__ import annotations

import os
from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from statevcs import Repo
from statevcs.durations import (
    DURATION_HELP,
    UNITS_HELP,
    InvalidDuration,
    as_duration,
    parse_duration,
)

EXAMPLES = int(os.environ.get("STATEVCS_HYPOTHESIS_EXAMPLES", "150"))
MINUTE, HOUR, DAY = 60, 3_600, 86_400
MAX_SECONDS = 1000 * 365 * DAY

SPELLINGS = {
    1: ["s", "sec", "secs", "second", "seconds"],
    MINUTE: ["m", "min", "mins", "minute", "minutes"],
    HOUR: ["h", "hr", "hrs", "hour", "hours"],
    DAY: ["d", "day", "days"],
    7 * DAY: ["w", "wk", "wks", "week", "weeks"],
    30 * DAY: ["month", "months"],
    365 * DAY: ["y", "yr", "yrs", "year", "years"],
}


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("2w", 14 * DAY),
        ("3d12h", 3 * DAY + 12 * HOUR),
        ("90m", 90 * MINUTE),
        ("45s", 45),
        ("1w2d", 9 * DAY),
        ("0", 0),
        ("now", 0),
        ("NOW", 0),
        ("120", 120),
        ("3.5", 3.5),
        ("1.5h", 90 * MINUTE),
        # git's approxidate spellings (gc.pruneExpire=2.weeks.ago, reflogExpire=90.days)
        ("1.month", 30 * DAY),
        ("1 month", 30 * DAY),
        ("2 weeks", 14 * DAY),
        ("2.weeks.ago", 14 * DAY),
        ("3 days ago", 3 * DAY),
        ("1.year.2.months.ago", 425 * DAY),
        ("90.days", 90 * DAY),
        ("30m", 30 * MINUTE),
        ("30min", 30 * MINUTE),
        ("30 minutes", 30 * MINUTE),
        ("1 Month", 30 * DAY),
        ("1MIN", MINUTE),
        ("2W", 14 * DAY),
        ("1w, 2d", 9 * DAY),
        ("  7d  ", 7 * DAY),
    ],
)
def test_accepted_spellings(text: str, seconds: float) -> None:
    assert parse_duration(text) == timedelta(seconds=seconds)


@pytest.mark.parametrize("text", ["1M", "30M", "1.M", "2 M", "1w1M"])
def test_capital_m_is_refused_as_ambiguous_and_the_message_lists_the_units(text: str) -> None:
    with pytest.raises(InvalidDuration, match="ambiguous") as raised:
        parse_duration(text)
    assert "month" in str(raised.value) and "min" in str(raised.value)
    assert UNITS_HELP in str(raised.value)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "soon",
        "two weeks",
        "-5",
        "-1d",
        "nan",
        "inf",
        "1e3",
        ".2w",
        "2w,",
        "2w.",
        "2wago",
        "ago",
        "1w and 2d",
        "5x",
        "1ms",
        "\u0663d",  # an Arabic-Indic digit: only ASCII digits are numbers
        "1000000w",
        "9" * 400,
        "1001y",
    ],
)
def test_refused_spellings_raise_invalid_duration(text: str) -> None:
    with pytest.raises(InvalidDuration, match="is not a duration") as raised:
        parse_duration(text)
    assert DURATION_HELP in str(raised.value)


def test_unknown_units_are_named_with_the_accepted_ones() -> None:
    with pytest.raises(InvalidDuration, match=r"unknown unit 'fortnight'") as raised:
        parse_duration("1 fortnight")
    assert UNITS_HELP in str(raised.value)


def test_wrong_types() -> None:
    with pytest.raises(TypeError, match="str or timedelta"):
        parse_duration(14)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="grace"):
        as_duration(3.0, "grace")  # type: ignore[arg-type]
    with pytest.raises(InvalidDuration, match="negative"):
        as_duration(timedelta(seconds=-1), "grace")


NEAR_DURATIONS = st.text(alphabet="0123456789 .,-+eE_smhdwMSHDWyoniutkrag\t\u0663", max_size=24)


@settings(max_examples=EXAMPLES)
@given(st.one_of(st.text(), NEAR_DURATIONS))
def test_any_text_parses_or_raises_invalid_duration(text: str) -> None:
    try:
        parsed = parse_duration(text)
    except InvalidDuration:
        return
    assert timedelta(0) <= parsed <= timedelta(seconds=MAX_SECONDS)


@st.composite
def spelled_durations(draw: st.DrawFn) -> tuple[str, int]:
    """A duration written out in parts (``2.weeks 3d``) and its length in seconds."""
    out, total = "", 0
    for index in range(draw(st.integers(1, 4))):
        seconds = draw(st.sampled_from(sorted(SPELLINGS)))
        unit = draw(st.sampled_from(SPELLINGS[seconds]))
        if unit != "m":  # "M" alone is refused; every other spelling is case-insensitive
            unit = "".join(c.upper() if draw(st.booleans()) else c for c in unit)
        number = draw(st.integers(0, 999))
        if index:
            out += draw(st.sampled_from(["", " ", ", ", ".", " . "]))
        out += f"{number}{draw(st.sampled_from(['', ' ', '.']))}{unit}"
        total += number * seconds
    out += draw(st.sampled_from(["", " ago", ".ago", " AGO"]))
    return out, total


@settings(max_examples=EXAMPLES)
@given(spelled_durations())
def test_spelled_durations_round_trip(spelled: tuple[str, int]) -> None:
    text, seconds = spelled
    if seconds > MAX_SECONDS:
        with pytest.raises(InvalidDuration, match="1000 years"):
            parse_duration(text)
    else:
        assert parse_duration(text) == timedelta(seconds=seconds)


@settings(max_examples=EXAMPLES)
@given(st.timedeltas(min_value=timedelta(0), max_value=timedelta(days=365_000)))
def test_timedeltas_round_trip_through_their_spelled_and_plain_forms(period: timedelta) -> None:
    whole = timedelta(days=period.days, seconds=period.seconds)
    assert parse_duration(f"{whole.days}d{whole.seconds}s") == whole
    assert parse_duration(f"{whole.days} days, {whole.seconds} seconds ago") == whole
    assert parse_duration(str(int(whole.total_seconds()))) == whole


def test_every_caller_refuses_capital_m() -> None:
    repo = Repo.init("memory://")
    repo.commit({"n": 1})
    with pytest.raises(InvalidDuration, match="ambiguous"):
        repo.gc(grace="1M")
    with pytest.raises(InvalidDuration, match="ambiguous"):
        repo.gc(expire_reflog="1M")
    assert len(repo.reflog("main")) == 1  # nothing expired
    assert repo.gc(grace="1.month", expire_reflog="2.weeks.ago").deleted == 0
