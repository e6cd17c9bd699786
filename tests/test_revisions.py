"""Tests for revision expressions: the parser, and resolution through a real repository."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import statevcs
from statevcs.errors import AmbiguousRevision, InvalidRevision, UnknownRevision
from statevcs.hashing import MIN_PREFIX
from statevcs.revisions import Revision, parse_revision
from statevcs.snapshot import Snapshot

# --- parser ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("HEAD", Revision("HEAD")),
        ("@", Revision("HEAD")),
        ("main", Revision("main")),
        ("refs/heads/exp/a", Revision("refs/heads/exp/a")),
        ("main~2^2~1", Revision("main", None, (("~", 2), ("^", 2), ("~", 1)))),
        ("HEAD@{3}~1", Revision("HEAD", 3, (("~", 1),))),
        ("abcd1234^", Revision("abcd1234", None, (("^", 1),))),
        ("main^^", Revision("main", None, (("^", 1), ("^", 1)))),
        ("main~", Revision("main", None, (("~", 1),))),
        ("main~0", Revision("main", None, (("~", 0),))),
        ("main^0", Revision("main", None, (("^", 0),))),
        ("main@{0}", Revision("main", 0)),
        ("@{2}", Revision("HEAD", 2)),
        ("@~3", Revision("HEAD", None, (("~", 3),))),
        ("exp/a@{12}^2", Revision("exp/a", 12, (("^", 2),))),
        ("v1.0~10", Revision("v1.0", None, (("~", 10),))),
    ],
)
def test_parse_examples(text: str, expected: Revision) -> None:
    assert parse_revision(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "",
        "   ",
        "~1",
        "^",
        "@{1}@{2}x",
        "main^{commit}",
        "main~a",
        "main~1x",
        "main@{-1}",
        "main@{x}",
        "main@{1",
        "main@{}",
        "main@{1}@{2}",
        "a@{b}c",
        "@{1}~1^x",
    ],
)
def test_invalid_syntax_raises_invalid_revision(text: str) -> None:
    with pytest.raises(InvalidRevision):
        parse_revision(text)


def test_a_non_string_is_invalid() -> None:
    with pytest.raises(InvalidRevision):
        parse_revision(None)  # type: ignore[arg-type]


names = st.from_regex(r"[a-z][a-z0-9_\-]{0,8}(/[a-z][a-z0-9]{0,5}){0,2}", fullmatch=True)
hexes = st.from_regex(r"[0-9a-f]{4,64}", fullmatch=True)
bases = st.sampled_from(["HEAD", "@"]) | names | hexes
steps = st.lists(st.tuples(st.sampled_from("~^"), st.integers(0, 30), st.booleans()), max_size=5)


@settings(max_examples=300, deadline=None)
@given(base=bases, reflog=st.none() | st.integers(0, 500), suffixes=steps)
def test_rendered_revisions_parse_back(
    base: str, reflog: int | None, suffixes: list[tuple[str, int, bool]]
) -> None:
    text = base + (f"@{{{reflog}}}" if reflog is not None else "")
    # ``~1`` may be written ``~`` (and ``^1`` as ``^``).
    text += "".join(
        op + ("" if count == 1 and short else str(count)) for op, count, short in suffixes
    )
    parsed = parse_revision(text)
    assert parsed.base == ("HEAD" if base == "@" else base)
    assert parsed.reflog_index == reflog
    assert parsed.steps == tuple((op, count) for op, count, _ in suffixes)


# --- resolution ---------------------------------------------------------------------------


@dataclass
class History:
    """A repository whose history is::

    a -- b -- c -- m -- d     main (HEAD)
          \\       /
           s1 -- s2           side
    """

    repo: statevcs.Repo
    a: str
    b: str
    c: str
    s1: str
    s2: str
    m: str
    d: str


T0 = datetime(2024, 1, 1, tzinfo=timezone.utc)


def make_commit(repo: statevcs.Repo, label: str, parents: list[str], minute: int) -> str:
    snapshot_id = repo.write_snapshot(Snapshot(kind="dict", state={"label": label}))
    commit = repo.write_commit(
        snapshot_id, parents, f"commit {label}", timestamp=T0 + timedelta(minutes=minute)
    )
    return commit.id


@pytest.fixture
def history() -> History:
    repo = statevcs.Repo.init("memory://")
    main, side = "refs/heads/main", "refs/heads/side"
    a = make_commit(repo, "a", [], 0)
    repo.set_ref(main, a, expected=None, reflog_message="a")
    b = make_commit(repo, "b", [a], 1)
    repo.set_ref(main, b, expected=a, reflog_message="b")
    s1 = make_commit(repo, "s1", [b], 2)
    repo.set_ref(side, s1, expected=None, reflog_message="s1")
    c = make_commit(repo, "c", [b], 3)
    repo.set_ref(main, c, expected=b, reflog_message="c")
    s2 = make_commit(repo, "s2", [s1], 4)
    repo.set_ref(side, s2, expected=s1, reflog_message="s2")
    m = make_commit(repo, "m", [c, s2], 5)
    repo.set_ref(main, m, expected=c, reflog_message="merge side")
    d = make_commit(repo, "d", [m], 6)
    repo.set_ref(main, d, expected=m, reflog_message="d")
    return History(repo, a, b, c, s1, s2, m, d)


@pytest.mark.parametrize(
    ("revision", "expected"),
    [
        ("main", "d"),
        ("HEAD", "d"),
        ("@", "d"),
        ("refs/heads/main", "d"),
        ("side", "s2"),
        ("main~0", "d"),
        ("main~1", "m"),
        ("main~", "m"),
        ("main~2", "c"),
        ("main~3", "b"),
        ("main~4", "a"),
        ("main^", "m"),
        ("main^1", "m"),
        ("main^0", "d"),
        ("main^^", "c"),
        ("main~1^1", "c"),
        ("main~1^2", "s2"),
        ("main~1^2~1", "s1"),
        ("main~1^2~2", "b"),
        ("main^^2^", "s1"),
        ("HEAD~1^2^0~1", "s1"),
        ("side~2", "b"),
        ("main@{0}", "d"),
        ("main@{1}", "m"),
        ("main@{2}", "c"),
        ("main@{4}", "a"),
        ("main@{1}^2", "s2"),
        ("side@{1}", "s1"),
        ("HEAD@{0}", "d"),
        ("HEAD@{1}~1", "c"),
        ("@{2}", "c"),
        ("refs/heads/side@{0}~1", "s1"),
    ],
)
def test_resolution(history: History, revision: str, expected: str) -> None:
    assert history.repo.resolve(revision) == getattr(history, expected)


def test_hex_prefixes_of_four_or_more_characters_resolve(history: History) -> None:
    repo = history.repo
    for length in (MIN_PREFIX, 7, 12, 40, 64):
        prefix = history.c[:length]
        assert repo.resolve(prefix) == history.c
        assert repo.resolve(prefix.upper()) == history.c
    assert repo.resolve(history.m[:10] + "^2") == history.s2
    assert repo.resolve(history.d + "~4") == history.a


def test_hex_prefixes_shorter_than_four_characters_are_unknown(history: History) -> None:
    for length in (1, 2, MIN_PREFIX - 1):
        with pytest.raises(UnknownRevision, match="no branch, tag or commit hash"):
            history.repo.resolve(history.c[:length])


def test_hex_prefixes_of_non_commit_objects_are_unknown(history: History) -> None:
    snapshot_id = history.repo.get_commit(history.c).snapshot_id
    with pytest.raises(UnknownRevision):
        history.repo.resolve(snapshot_id)
    with pytest.raises(UnknownRevision):
        history.repo.resolve("0" * 64)


def test_a_branch_name_wins_over_a_hex_prefix(history: History) -> None:
    prefix = history.a[:8]
    history.repo.branch(prefix, "main")
    assert history.repo.resolve(prefix) == history.d
    assert history.repo.resolve(history.a[:9]) == history.a


def test_walking_past_the_root_names_the_commit(history: History) -> None:
    with pytest.raises(UnknownRevision, match=r"history has only 4 commits") as info:
        history.repo.resolve("main~5")
    assert "main~5" in str(info.value)
    with pytest.raises(UnknownRevision, match="has 0 parent"):
        history.repo.resolve("main~4^")
    with pytest.raises(UnknownRevision, match=r"has 2 parent\(s\), not 3"):
        history.repo.resolve("main~1^3")
    # ^0 of a root, and ~0, stay put.
    assert history.repo.resolve("main~4^0~0") == history.a


def test_reflog_past_its_start_is_unknown(history: History) -> None:
    with pytest.raises(UnknownRevision, match="has only 5 entries"):
        history.repo.resolve("main@{5}")
    with pytest.raises(UnknownRevision, match="no branch or tag named 'nope'"):
        history.repo.resolve("nope@{0}")


def test_reflog_of_a_deleted_value_is_unknown(history: History) -> None:
    repo = history.repo
    repo.set_ref("refs/heads/gone", history.a)
    repo.store.set_ref("refs/heads/gone", None, message="deleted")
    repo.set_ref("refs/heads/gone", history.b)
    assert repo.resolve("gone@{0}") == history.b
    assert repo.resolve("gone@{2}") == history.a
    with pytest.raises(UnknownRevision, match="did not exist then"):
        repo.resolve("gone@{1}")


def test_unknown_names_say_what_was_looked_up(history: History) -> None:
    with pytest.raises(UnknownRevision) as info:
        history.repo.resolve("no-such-branch~2")
    message = str(info.value)
    assert "no-such-branch" in message
    assert "statevcs log" in message


def test_an_unborn_head_is_unknown_with_a_hint() -> None:
    repo = statevcs.Repo.init("memory://")
    with pytest.raises(UnknownRevision, match="refs/heads/main has no commits yet"):
        repo.resolve("HEAD")
    with pytest.raises(UnknownRevision):
        repo.resolve("main")


def test_a_detached_head_resolves_to_its_commit(history: History) -> None:
    history.repo.store.set_ref("HEAD", bytes.fromhex(history.c), message="detach")
    assert history.repo.resolve("HEAD") == history.c
    assert history.repo.resolve("HEAD~1") == history.b
    assert history.repo.resolve("main") == history.d


def test_a_branch_and_a_tag_with_one_name_are_ambiguous(history: History) -> None:
    repo = history.repo
    repo.branch("dup", "main~1")
    repo.tag("dup", "side")
    for revision in ("dup", "dup~1", "dup@{0}"):
        with pytest.raises(AmbiguousRevision) as info:
            repo.resolve(revision)
        assert info.value.candidates == ["refs/heads/dup", "refs/tags/dup"]
        assert "refs/heads/dup" in str(info.value)
        assert "refs/tags/dup" in str(info.value)
    assert repo.resolve("refs/heads/dup") == history.m
    assert repo.resolve("refs/tags/dup~1") == history.s1


def test_commits_sharing_a_prefix_are_ambiguous(history: History) -> None:
    repo = history.repo
    snapshot_id = repo.get_commit(history.a).snapshot_id
    seen: dict[str, str] = {}
    pair: tuple[str, str] | None = None
    for n in range(20_000):  # a 4-hex-digit collision is expected after ~300 commits
        commit_id = repo.write_commit(snapshot_id, [], f"probe {n}", timestamp=T0).id
        prefix = commit_id[:MIN_PREFIX]
        if prefix in seen:
            pair = (seen[prefix], commit_id)
            break
        seen[prefix] = commit_id
    assert pair is not None
    first, second = pair
    prefix = first[:MIN_PREFIX]
    with pytest.raises(AmbiguousRevision) as info:
        repo.resolve(prefix)
    assert set(info.value.candidates) >= {first, second}
    assert first in str(info.value) and second in str(info.value)
    with pytest.raises(AmbiguousRevision):
        repo.resolve(prefix + "~1")
    # A prefix long enough to tell them apart resolves.
    common = MIN_PREFIX
    while first[:common] == second[:common]:
        common += 1
    assert repo.resolve(first[:common]) == first
    assert repo.resolve(second[:common]) == second


def test_tags_resolve_and_walk(history: History) -> None:
    history.repo.tag("v1", "main~1")
    assert history.repo.resolve("v1") == history.m
    assert history.repo.resolve("v1^2") == history.s2
    assert history.repo.resolve("refs/tags/v1~2") == history.b


def test_head_follows_a_branch_switch(history: History) -> None:
    history.repo.store.set_symbolic("HEAD", "refs/heads/side")
    assert history.repo.resolve("HEAD") == history.s2
    assert history.repo.resolve("@~1") == history.s1


def test_head_reflog_records_a_logged_branch_switch(history: History) -> None:
    store = history.repo.store
    store.set_symbolic("HEAD", "refs/heads/side", message="checkout: moving from main to side")
    # HEAD@{0} is always HEAD's current value; HEAD@{1} is where it was before the switch.
    assert history.repo.resolve("HEAD@{0}") == history.s2
    assert history.repo.resolve("HEAD@{1}") == history.d
    assert history.repo.resolve("HEAD@{1}~1^2") == history.s2


def test_head_at_zero_is_head_after_checking_out_another_branch(history: History) -> None:
    state: dict[str, object] = {}
    history.repo.checkout(state, "side")
    assert history.repo.resolve("HEAD") == history.s2
    assert history.repo.resolve("HEAD@{0}") == history.s2
