"""Tests for ref names: git's ``check-ref-format`` rules and the branch/tag helpers."""

from __future__ import annotations

import random
import shutil
import subprocess

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from statevcs.errors import InvalidRefName
from statevcs.refs import (
    BRANCH_PREFIX,
    TAG_PREFIX,
    branch_ref,
    check_ref_name,
    check_short_name,
    short_name,
    tag_ref,
)


def is_valid(name: str) -> bool:
    try:
        assert check_ref_name(name) == name
    except InvalidRefName:
        return False
    return True


def git_rules(name: str) -> bool:
    """An independent transcription of git's ``check_refname_format`` (refs.c, flags = 0)."""
    if not name or name == "@":
        return False
    components = name.split("/")
    for component in components:
        if not component or component.startswith(".") or component.endswith(".lock"):
            return False
        previous = ""
        for char in component:
            if ord(char) < 0x20 or char in " ~^:?*[\\\x7f":
                return False
            if (previous, char) in {(".", "."), ("@", "{")}:
                return False
            previous = char
    return not name.endswith(".")


VALID = [
    "main",
    "refs/heads/main",
    "feature/login-form",
    "exp/a/b/c",
    "v1.0",
    "release-2024.01",
    "a.b.c",
    "@foo",
    "foo@bar",
    "a@",
    "x{y}",
    "{",
    "-leading-dash",  # valid as a ref; check_short_name rejects it as a branch name
    "HEAD",
    "naïve/ünïcode/名前",
    "a.lockb",
    "lock",
    "locked.lockx",
    "a/b.c",
    "a./b",
    "trailing-at@",
    "#hash",
    "semi;colon",
    "a'b\"c",
    "percent%",
]

INVALID = [
    ("", "empty"),
    ("@", "reserved"),
    ("a..b", ".."),
    ("..", ".."),
    ("a@{b", "@{"),
    ("@{1}", "@{"),
    ("a\\b", "backslash"),
    ("a b", "space"),
    ("tab\there", "control"),
    ("nl\n", "control"),
    ("del\x7f", "control"),
    ("nul\x00", "control"),
    ("a~1", "'~'"),
    ("a^", "'^'"),
    ("a:b", "':'"),
    ("what?", "'?'"),
    ("star*", "'*'"),
    ("[bracket", "'['"),
    ("/leading", "'/'"),
    ("trailing/", "'/'"),
    ("a//b", "empty component"),
    ("ends.", "ends with '.'"),
    ("a/ends./", "'/'"),
    (".hidden", "starts with '.'"),
    ("a/.hidden", "starts with '.'"),
    ("a.lock", ".lock"),
    ("a.lock/b", ".lock"),
    ("a/b.lock", ".lock"),
    (".lock", "starts with '.'"),
]


@pytest.mark.parametrize("name", VALID)
def test_valid_names_are_returned_unchanged(name: str) -> None:
    assert check_ref_name(name) == name
    assert git_rules(name)


@pytest.mark.parametrize(("name", "reason"), INVALID)
def test_invalid_names_raise_with_a_reason(name: str, reason: str) -> None:
    with pytest.raises(InvalidRefName) as info:
        check_ref_name(name)
    assert reason in info.value.reason
    assert info.value.name == name
    assert "check-ref-format" in str(info.value)
    assert not git_rules(name)


def test_a_non_string_is_rejected() -> None:
    with pytest.raises(InvalidRefName):
        check_ref_name(None)  # type: ignore[arg-type]


# An alphabet dense in the characters git's rules care about.
ref_chars = st.sampled_from([*list("ab/.@{}-_~^:?*[\\ \t\x7fé名"), "lock", ".lock", "@{", ".."])
ref_names = st.lists(ref_chars, max_size=12).map("".join)


@settings(max_examples=400, deadline=None)
@given(name=ref_names)
@example(name="a/.lock/b")
@example(name="a.lock.lock")
@example(name="@/a")
def test_check_ref_name_follows_git_rules(name: str) -> None:
    assert is_valid(name) == git_rules(name)


components = st.from_regex(r"[a-z0-9_@é名][a-z0-9_@é名\-]{0,6}(\.[a-z]{1,3})?", fullmatch=True)
short_names = st.lists(components, min_size=1, max_size=3).map("/".join).filter(lambda n: n != "@")


@settings(max_examples=100, deadline=None)
@given(name=short_names)
def test_branch_and_tag_refs_round_trip_through_short_name(name: str) -> None:
    assert git_rules(name)
    assert branch_ref(name) == BRANCH_PREFIX + name
    assert tag_ref(name) == TAG_PREFIX + name
    assert short_name(branch_ref(name)) == name
    assert short_name(tag_ref(name)) == name
    assert branch_ref(branch_ref(name)) == branch_ref(name)  # a full name is accepted too


@pytest.mark.parametrize(
    ("name", "fragment"),
    [("-x", "start with '-'"), ("HEAD", "'HEAD'"), ("refs/heads/x", "short"), ("a..b", "'..'")],
)
def test_short_names_reject_what_git_branch_rejects(name: str, fragment: str) -> None:
    with pytest.raises(InvalidRefName, match=fragment):
        check_short_name(name)
    with pytest.raises(InvalidRefName):
        tag_ref(name if name != "refs/heads/x" else "refs/tags/refs/heads/x")


def test_short_name_leaves_other_refs_alone() -> None:
    assert short_name("HEAD") == "HEAD"
    assert short_name("refs/remotes/origin/main") == "refs/remotes/origin/main"
    assert short_name("refs/heads/exp/a") == "exp/a"


def _sample_names(count: int) -> list[str]:
    rng = random.Random(20240607)
    safe = [*list("abcxyz/.-_@{}é"), "lock", "名"]
    risky = [*list("~^:?*[\\ \t\x7f"), ".lock", "@{", "..", "//", "/.", "."]
    names = {name for name, _ in INVALID if "\x00" not in name and name} | set(VALID)
    while len(names) < count:
        parts = [rng.choice(safe) for _ in range(rng.randint(1, 8))]
        if rng.random() < 0.4:
            parts.insert(rng.randint(0, len(parts)), rng.choice(risky))
        names.add("".join(parts))
    return sorted(names)[:count]


@pytest.mark.skipif(shutil.which("git") is None, reason="the git CLI is not installed")
def test_verdicts_match_the_git_cli() -> None:
    disagreements = []
    for name in _sample_names(200):
        full = "refs/heads/" + name
        result = subprocess.run(
            ["git", "check-ref-format", full], capture_output=True, check=False, timeout=10
        )
        if (result.returncode == 0) != is_valid(full):
            disagreements.append((name, result.returncode))
    assert disagreements == []
