"""Tests for ref names: git's ``check-ref-format`` rules and the branch/tag helpers."""

from __future__ import annotations

import random
import shutil
import subprocess

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from statevcs import Repo
from statevcs.errors import InvalidRefName
from statevcs.refs import (
    BRANCH_PREFIX,
    MAX_REF_NAME_LENGTH,
    TAG_PREFIX,
    branch_ref,
    check_ref_name,
    check_short_name,
    full_branch_ref,
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
    """An independent transcription of git's ``check_refname_format`` (refs.c, flags = 0).

    Plus statevcs's two deliberate additions: no lone surrogates (not Unicode text, so not
    storable) and at most ``MAX_REF_NAME_LENGTH`` characters.
    """
    if not name or name == "@" or len(name) > MAX_REF_NAME_LENGTH:
        return False
    if any(0xD800 <= ord(char) <= 0xDFFF for char in name):
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
    "refs/heads/refs/heads/x",
    "\u202eevil",  # right-to-left override: git accepts any byte >= 0x20 but DEL
    "zero\u200bwidth",
    "c1\u0085control",
    "nbsp\u00a0",
    "line\u2028sep",
    "non\uffffchar",
    "emoji\U0001f600",
    "e\u0301",
    "x" * MAX_REF_NAME_LENGTH,
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
    ("lone\ud800", "lone surrogate"),
    ("\udc80", "lone surrogate"),
    ("a/\udfff/b", "lone surrogate"),
    ("esc\x1b[31m", "control"),
    ("x" * (MAX_REF_NAME_LENGTH + 1), "the limit is"),
]


def _ids(names: list[str]) -> list[str]:
    return [ascii(name)[:40] for name in names]


@pytest.mark.parametrize("name", VALID, ids=_ids(VALID))
def test_valid_names_are_returned_unchanged(name: str) -> None:
    assert check_ref_name(name) == name
    assert git_rules(name)


@pytest.mark.parametrize(("name", "reason"), INVALID, ids=_ids([name for name, _ in INVALID]))
def test_invalid_names_raise_with_a_reason(name: str, reason: str) -> None:
    with pytest.raises(InvalidRefName) as info:
        check_ref_name(name)
    assert reason in info.value.reason
    assert info.value.name == name
    assert "check-ref-format" in str(info.value)
    assert not git_rules(name)


@pytest.mark.parametrize(("value", "type_name"), [(None, "NoneType"), (5, "int"), (b"x", "bytes")])
def test_a_non_string_name_is_a_type_error_naming_the_argument(
    value: object, type_name: str
) -> None:
    for check in (check_ref_name, check_short_name, branch_ref, tag_ref):
        with pytest.raises(TypeError, match=f"^name must be a str, got {type_name}$"):
            check(value)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=f"name_or_full must be a str, got {type_name}"):
        full_branch_ref(value)  # type: ignore[arg-type]


def test_a_lone_surrogate_says_what_to_do() -> None:
    with pytest.raises(InvalidRefName, match="decode the name from UTF-8") as info:
        check_ref_name("feat/\udc80x")
    assert "'\\udc80'" in info.value.reason


@pytest.mark.parametrize("name", ["a\ud800", "refs/heads/\udc80", "\udfff/x"])
def test_ref_names_that_cannot_be_stored_raise_before_reaching_the_store(
    repo: Repo, name: str
) -> None:
    repo.commit({"x": 1}, "one")
    before = repo.refs.as_hex()
    for call in (
        lambda: repo.branch(name),
        lambda: repo.tag(name),
        lambda: repo.refs.set("refs/heads/" + name, bytes.fromhex(repo.resolve("main"))),
    ):
        with pytest.raises(InvalidRefName, match="lone surrogate"):
            call()
    assert repo.refs.as_hex() == before


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
    assert full_branch_ref(name) == full_branch_ref(branch_ref(name)) == branch_ref(name)


@pytest.mark.parametrize(
    ("name", "fragment"),
    [("-x", "start with '-'"), ("HEAD", "'HEAD'"), ("a..b", "'..'")],
)
def test_short_names_reject_what_git_branch_rejects(name: str, fragment: str) -> None:
    for check in (check_short_name, branch_ref, tag_ref, full_branch_ref):
        with pytest.raises(InvalidRefName, match=fragment):
            check(name)
    with pytest.raises(InvalidRefName, match=fragment):
        full_branch_ref("refs/heads/" + name)


def test_branch_ref_takes_a_short_name_even_when_it_starts_with_refs() -> None:
    # git branch refs/heads/x creates refs/heads/refs/heads/x; git tag refs/tags/y likewise.
    assert branch_ref("refs/heads/x") == "refs/heads/refs/heads/x"
    assert tag_ref("refs/tags/y") == "refs/tags/refs/tags/y"
    assert check_short_name("refs/heads/x") == "refs/heads/x"
    assert full_branch_ref("refs/heads/x") == "refs/heads/x"
    assert full_branch_ref("x") == "refs/heads/x"
    assert full_branch_ref("refs/tags/x") == "refs/heads/refs/tags/x"


def test_repo_branch_creates_what_git_branch_creates(repo: Repo) -> None:
    first = repo.commit({"x": 1}, "one")
    repo.branch("refs/heads/x")
    repo.tag("refs/tags/y")
    assert repo.refs.as_hex() == {
        "refs/heads/main": first.id,
        "refs/heads/refs/heads/x": first.id,
        "refs/tags/refs/tags/y": first.id,
    }
    assert repo.resolve("refs/heads/refs/heads/x") == first.id
    assert repo.resolve("heads/refs/heads/x") == first.id


def test_short_name_leaves_other_refs_alone() -> None:
    assert short_name("HEAD") == "HEAD"
    assert short_name("refs/remotes/origin/main") == "refs/remotes/origin/main"
    assert short_name("refs/heads/exp/a") == "exp/a"


HOSTILE_CHARS = [
    "\u202e",  # right-to-left override
    "\u200b",  # zero-width space
    "\u0085",  # C1 control (NEL): two bytes in UTF-8, both >= 0x80, so git accepts it
    "\u009b",  # C1 CSI
    "\u00a0",
    "\u2028",
    "\ufeff",
    "\uffff",
    "\U0001f600",
    "\u0301",
    "\x1b",
    "\x01",
    "\t",
    "\x7f",
]


def _sample_names(count: int) -> list[str]:
    rng = random.Random(20240607)
    safe = [*list("abcxyz/.-_@{}é"), "lock", "名", *HOSTILE_CHARS]
    risky = [*list("~^:?*[\\ \t\x7f"), ".lock", "@{", "..", "//", "/.", "."]
    # NUL and lone surrogates cannot reach git's argv (test_hostile_names_... covers them).
    names = {
        name
        for name, _ in INVALID
        if name and "\x00" not in name and not any(0xD800 <= ord(c) <= 0xDFFF for c in name)
    } | set(VALID)
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
        if len(full) > MAX_REF_NAME_LENGTH:
            assert not is_valid(full)  # statevcs's length limit; git has none
            continue
        result = subprocess.run(
            ["git", "check-ref-format", full], capture_output=True, check=False, timeout=10
        )
        if (result.returncode == 0) != is_valid(full):
            disagreements.append((name, result.returncode))
    assert disagreements == []


def _git_accepts(name: str, *options: str) -> bool:
    result = subprocess.run(
        ["git", "check-ref-format", *options, name], capture_output=True, check=False, timeout=10
    )
    assert result.returncode in (0, 1), result.stderr
    return result.returncode == 0


hostile_names = st.lists(
    ref_chars | st.sampled_from([*HOSTILE_CHARS, "\ud800", "\udfff", "\x00"]), max_size=10
).map("".join)


@pytest.mark.skipif(shutil.which("git") is None, reason="the git CLI is not installed")
@settings(max_examples=300, deadline=None)
@given(name=hostile_names)
@example(name="\u202eevil/\u0085x")
@example(name="a\udc80")
@example(name="nul\x00")
def test_hostile_names_get_git_check_ref_formats_verdict(name: str) -> None:
    full = "refs/heads/" + name
    if "\x00" in name or any(0xD800 <= ord(c) <= 0xDFFF for c in name):
        # git cannot even receive these (argv ends at NUL; a lone surrogate is not text):
        # statevcs refuses them.
        assert not is_valid(full) and not is_valid(name)
        return
    assert is_valid(full) == _git_accepts(full)
    if not name.startswith("-"):  # git would read it as an option
        assert is_valid(name) == _git_accepts(name, "--allow-onelevel")


def test_the_length_limit_applies_to_the_full_ref_name() -> None:
    longest = "x" * (MAX_REF_NAME_LENGTH - len(BRANCH_PREFIX))
    assert branch_ref(longest) == BRANCH_PREFIX + longest
    with pytest.raises(InvalidRefName, match=f"the limit is {MAX_REF_NAME_LENGTH}"):
        branch_ref(longest + "x")
    with pytest.raises(InvalidRefName, match=f"the limit is {MAX_REF_NAME_LENGTH}"):
        tag_ref("x" * (MAX_REF_NAME_LENGTH - len(TAG_PREFIX) + 1))


def _first_bad_char_reason(char: str) -> str:
    """The reason git's rules give for one character, written out per character class."""
    code = ord(char)
    if code < 0x20 or code == 0x7F:
        return "control character"
    if 0xD800 <= code <= 0xDFFF:
        return "lone surrogate"
    if char == " ":
        return "space"
    return f"'{char}'"


@settings(max_examples=300, deadline=None)
@given(
    prefix=st.text(st.sampled_from("abc-_/é0")).filter(
        lambda p: is_valid(p + "x") and ".." not in p
    ),
    bad=st.sampled_from(
        [" ", "~", "^", ":", "?", "*", "[", "\x7f", "\ud800", "\udfff"]
        + [chr(c) for c in range(0x20)]
    ),
    rest=hostile_names,
)
def test_the_reason_names_the_first_character_git_refuses(prefix: str, bad: str, rest: str) -> None:
    name = prefix + "x" + bad + rest
    if "\\" in name or ".." in name or "@{" in name:
        return  # refused for that first, whatever the characters
    with pytest.raises(InvalidRefName) as raised:
        check_ref_name(name)
    assert _first_bad_char_reason(bad) in str(raised.value)
