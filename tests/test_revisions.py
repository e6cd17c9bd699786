"""Tests for revision expressions: the parser, and resolution through a real repository."""

from __future__ import annotations

import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import statevcs
from statevcs.errors import AmbiguousRevision, InvalidRevision, UnknownRevision
from statevcs.hashing import MIN_PREFIX
from statevcs.objects import CommitObject
from statevcs.revisions import (
    MAX_COUNT,
    MAX_REVISION_LENGTH,
    AmbiguousRefWarning,
    Revision,
    matching_refs,
    parse_revision,
    reflog_ref,
    resolve_revision,
)
from statevcs.snapshot import Snapshot
from statevcs.stores.base import ANY

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
        ("@{2}", Revision("", 2)),
        ("@@{2}", Revision("HEAD", 2)),
        ("@{0}~1", Revision("", 0, (("~", 1),))),
        ("main~01^02", Revision("main", None, (("~", 1), ("^", 2)))),
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


@pytest.mark.parametrize(
    ("value", "type_name"), [(None, "NoneType"), (5, "int"), (b"main", "bytes")]
)
def test_a_non_string_revision_is_a_type_error_naming_the_argument(
    value: object, type_name: str
) -> None:
    with pytest.raises(TypeError, match=f"revision must be a str, got {type_name}"):
        parse_revision(value)  # type: ignore[arg-type]


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


T0 = datetime(2024, 1, 1, tzinfo=UTC)


class HeadContext:
    """A :class:`RevisionContext` over a repository's refs with an explicit ``HEAD``.

    Resolution rules are tested here against a ``HEAD`` the test sets, attached to ``head`` or
    detached at ``detached_at``; how a ``Repo`` handle moves its own ``HEAD`` is tested with the
    repository.
    """

    def __init__(
        self, repo: statevcs.Repo, head: str | None = "refs/heads/main", detached_at: str = ""
    ) -> None:
        self.repo = repo
        self.head = None if detached_at else head
        self.detached = bytes.fromhex(detached_at) if detached_at else None

    def ref_value(self, full_name: str) -> bytes | None:
        if full_name == "HEAD":
            return self.repo.store.get_ref(self.head) if self.head else self.detached
        return self.repo.store.get_ref(full_name)

    def ref_values(self, full_names: Sequence[str]) -> dict[str, bytes]:
        values = {name: self.ref_value(name) for name in full_names}
        return {name: value for name, value in values.items() if value is not None}

    def head_target(self) -> str | None:
        return self.head

    def reflog_values(self, full_name: str) -> list[bytes | None]:
        return [entry.new for entry in self.repo.store.reflog(full_name)]

    def commits_with_prefix(self, low: bytes, high: bytes) -> list[bytes]:
        ids = self.repo.store.ids_in_range(low, high, limit=1000)
        return [i for i in ids if isinstance(self.repo.objects.load(i), CommitObject)]

    def parents(self, commit_id: bytes) -> tuple[bytes, ...]:
        commit = self.repo.get_commit(commit_id.hex())
        return tuple(bytes.fromhex(p) for p in commit.parents)

    def resolve(self, text: str) -> str:
        return resolve_revision(self, text).hex()


def make_commit(repo: statevcs.Repo, label: str, parents: list[str], minute: int) -> str:
    snapshot_id = repo.objects.write_snapshot(Snapshot(kind="dict", state={"label": label}))
    commit_id = repo.objects.write_commit(
        snapshot_id,
        [bytes.fromhex(p) for p in parents],
        message=f"commit {label}",
        author=repo.author,
        timestamp=T0 + timedelta(minutes=minute),
    )
    return commit_id.hex()


def set_ref(
    repo: statevcs.Repo,
    name: str,
    commit: str,
    *,
    expected: str | object | None = ANY,
    reflog_message: str = "",
) -> None:
    """Move a ref by hex ids through the plumbing (``repo.refs``)."""
    want = bytes.fromhex(expected) if isinstance(expected, str) else expected
    repo.refs.set(name, bytes.fromhex(commit), expected=want, message=reflog_message)


@pytest.fixture
def history() -> History:
    repo = statevcs.Repo.init("memory://")
    main, side = "refs/heads/main", "refs/heads/side"
    a = make_commit(repo, "a", [], 0)
    set_ref(repo, main, a, expected=None, reflog_message="a")
    b = make_commit(repo, "b", [a], 1)
    set_ref(repo, main, b, expected=a, reflog_message="b")
    s1 = make_commit(repo, "s1", [b], 2)
    set_ref(repo, side, s1, expected=None, reflog_message="s1")
    c = make_commit(repo, "c", [b], 3)
    set_ref(repo, main, c, expected=b, reflog_message="c")
    s2 = make_commit(repo, "s2", [s1], 4)
    set_ref(repo, side, s2, expected=s1, reflog_message="s2")
    m = make_commit(repo, "m", [c, s2], 5)
    set_ref(repo, main, m, expected=c, reflog_message="merge side")
    d = make_commit(repo, "d", [m], 6)
    set_ref(repo, main, d, expected=m, reflog_message="d")
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


def test_a_branch_name_wins_over_a_hex_prefix_with_a_warning(history: History) -> None:
    prefix = history.a[:8]
    history.repo.branch(prefix, "main")
    with pytest.warns(AmbiguousRefWarning, match="a commit hash prefix"):
        assert history.repo.resolve(prefix) == history.d
    assert history.repo.resolve(history.a[:9]) == history.a


def test_walking_past_the_root_names_the_commit(history: History) -> None:
    with pytest.raises(UnknownRevision, match=r"~5 walks past the first commit") as info:
        history.repo.resolve("main~5")
    assert "main~5" in str(info.value)
    assert f"{history.a[:12]}, reached after 4 steps, has no parent" in str(info.value)
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
    set_ref(repo, "refs/heads/gone", history.a)
    repo.store.set_ref("refs/heads/gone", None, message="deleted")
    set_ref(repo, "refs/heads/gone", history.b)
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
    ctx = HeadContext(history.repo, detached_at=history.c)
    assert ctx.resolve("HEAD") == history.c
    assert ctx.resolve("HEAD~1") == history.b
    assert ctx.resolve("main") == history.d


def test_a_tag_wins_over_a_branch_of_the_same_name_with_a_warning(history: History) -> None:
    repo = history.repo
    repo.branch("dup", "main~1")
    repo.tag("dup", "side")
    for revision, expected in (("dup", "s2"), ("dup~1", "s1"), ("dup@{0}", "s2")):
        with pytest.warns(AmbiguousRefWarning) as record:
            assert repo.resolve(revision) == getattr(history, expected)
        message = str(record[0].message)
        assert "refname 'dup' is ambiguous" in message
        assert "refs/tags/dup, refs/heads/dup" in message
        assert "full ref name" in message
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert repo.resolve("refs/heads/dup") == history.m
        assert repo.resolve("heads/dup") == history.m
        assert repo.resolve("refs/tags/dup~1") == history.s1
        assert repo.resolve("tags/dup~1") == history.s1


def test_the_ambiguity_warning_points_at_the_callers_line(history: History) -> None:
    history.repo.branch("dup", "main~1")
    history.repo.tag("dup", "side")
    with pytest.warns(AmbiguousRefWarning) as record:
        history.repo.resolve("dup")
    assert record[0].filename == __file__


def test_commits_sharing_a_prefix_are_ambiguous(history: History) -> None:
    repo = history.repo
    snapshot_id = bytes.fromhex(repo.get_commit(history.a).snapshot_id)
    seen: dict[str, str] = {}
    pair: tuple[str, str] | None = None
    for n in range(20_000):  # a 4-hex-digit collision is expected after ~300 commits
        commit_id = repo.objects.write_commit(
            snapshot_id, [], message=f"probe {n}", author=repo.author, timestamp=T0
        ).hex()
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
    ctx = HeadContext(history.repo, head="refs/heads/side")
    assert ctx.resolve("HEAD") == history.s2
    assert ctx.resolve("@~1") == history.s1


def test_head_reflog_records_a_logged_branch_switch(history: History) -> None:
    history.repo.store.set_symbolic(
        "HEAD", "refs/heads/side", message="checkout: moving from main to side"
    )
    ctx = HeadContext(history.repo, head="refs/heads/side")
    # HEAD@{0} is always HEAD's current value; HEAD@{1} is where it was before the switch.
    assert ctx.resolve("HEAD@{0}") == history.s2
    assert ctx.resolve("HEAD@{1}") == history.d
    assert ctx.resolve("HEAD@{1}~1^2") == history.s2


# --- reflog selectors: @{n} is the current branch's reflog, HEAD@{n} is HEAD's ----------


def test_at_n_reads_the_reflog_of_the_branch_head_is_on(history: History) -> None:
    store = history.repo.store
    store.set_symbolic("HEAD", "refs/heads/side", message="checkout: moving from main to side")
    ctx = HeadContext(history.repo, head="refs/heads/side")
    # side's reflog: s2, s1. HEAD's reflog: the switch (s2), then main's moves (d, m, ...).
    assert ctx.resolve("@{0}") == history.s2
    assert ctx.resolve("@{1}") == history.s1
    assert ctx.resolve("@{1}~1") == history.b
    assert ctx.resolve("HEAD@{1}") == history.d
    assert ctx.resolve("@@{1}") == history.d
    with pytest.raises(UnknownRevision, match="reflog of refs/heads/side has only 2 entries"):
        ctx.resolve("@{2}")


def test_at_n_on_the_repository_handle_reads_its_branch(history: History) -> None:
    # The handle is on main: main's reflog and HEAD's agree until HEAD switches branch.
    assert history.repo.resolve("@{1}") == history.m
    assert history.repo.resolve("@{4}") == history.a


def test_at_n_reads_heads_reflog_when_detached(history: History) -> None:
    history.repo.store.set_ref("HEAD", bytes.fromhex(history.c), message="checkout: detach")
    ctx = HeadContext(history.repo, detached_at=history.c)
    assert ctx.resolve("@{0}") == history.c
    assert ctx.resolve("@{1}") == history.d
    assert ctx.resolve("@{1}") == ctx.resolve("HEAD@{1}")


def test_at_n_on_an_unborn_branch_says_so() -> None:
    repo = statevcs.Repo.init("memory://")
    with pytest.raises(UnknownRevision, match="refs/heads/main has no commits yet"):
        repo.resolve("@{0}")
    with pytest.raises(UnknownRevision, match="has no commits yet"):
        repo.resolve("HEAD@{0}")


def test_reflog_ref_names_the_log_a_selector_reads(history: History) -> None:
    ctx = HeadContext(history.repo)
    assert reflog_ref(ctx, "") == "refs/heads/main"
    assert reflog_ref(HeadContext(history.repo, head="refs/heads/side"), "") == "refs/heads/side"
    assert reflog_ref(HeadContext(history.repo, detached_at=history.c), "") == "HEAD"
    assert reflog_ref(ctx, "HEAD") == "HEAD"
    assert reflog_ref(ctx, "side") == "refs/heads/side"
    assert reflog_ref(ctx, "heads/side") == "refs/heads/side"
    with pytest.raises(UnknownRevision, match="no branch or tag named 'nope'"):
        reflog_ref(ctx, "nope")
    with pytest.raises(TypeError, match="name must be a str, got int"):
        reflog_ref(ctx, 5)  # type: ignore[arg-type]


def test_an_empty_reflog_answers_at_zero_with_the_ref_itself(history: History) -> None:
    # What git does once every entry of a reflog has expired.
    history.repo.store.delete_reflog("refs/heads/side")
    assert history.repo.resolve("side@{0}") == history.s2
    with pytest.raises(UnknownRevision, match="the reflog of refs/heads/side is empty"):
        history.repo.resolve("side@{1}")


# --- git's lookup order for a name ---------------------------------------------------------------


def test_names_expand_in_gitrevisions_order(history: History) -> None:
    repo = history.repo
    repo.tag("v1", "main~1")
    set_ref(repo, "refs/remotes/origin/main", history.c)
    set_ref(repo, "refs/remotes/origin/HEAD", history.b)
    set_ref(repo, "refs/notes/x", history.a)
    expected = {
        "heads/main": "d",
        "heads/side~1": "s1",
        "refs/heads/main": "d",
        "tags/v1": "m",
        "tags/v1^2": "s2",
        "refs/tags/v1": "m",
        "remotes/origin/main": "c",
        "origin/main": "c",
        "origin": "b",
        "refs/remotes/origin/HEAD": "b",
        "notes/x": "a",
        "heads/main@{1}": "m",
        "tags/v1@{0}": "m",
        "origin/main@{0}": "c",
    }
    for revision, label in expected.items():
        assert repo.resolve(revision) == getattr(history, label), revision
    for unknown in ("refs/main", "heads/v1", "tags/main", "refs/heads/v1", "main/heads", "rigin"):
        with pytest.raises(UnknownRevision):
            repo.resolve(unknown)


def test_matching_refs_lists_every_match_in_lookup_order(history: History) -> None:
    repo = history.repo
    repo.tag("main", "side")
    set_ref(repo, "refs/remotes/main", history.a)
    ctx = HeadContext(repo)
    assert matching_refs(ctx, "main") == ["refs/tags/main", "refs/heads/main", "refs/remotes/main"]
    assert matching_refs(ctx, "HEAD") == ["HEAD"]
    assert matching_refs(ctx, "nope") == []
    assert matching_refs(ctx, "a\ud800") == []
    with pytest.raises(TypeError, match="name must be a str, got NoneType"):
        matching_refs(ctx, None)  # type: ignore[arg-type]


def test_a_reflog_selector_on_a_hash_like_ref_name_warns(history: History) -> None:
    prefix = history.a[:8]
    history.repo.branch(prefix, "main")
    with pytest.warns(AmbiguousRefWarning, match="a commit hash prefix"):
        assert history.repo.resolve(prefix + "@{0}") == history.d
    history.repo.branch("cafe0000", "side")  # hex, but no commit starts with it
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        commits = (history.a, history.b, history.c, history.s1, history.s2, history.m, history.d)
        if not any(c.startswith("cafe0000") for c in commits):
            assert history.repo.resolve("cafe0000@{0}") == history.s2


def test_a_full_length_id_wins_over_a_ref_of_that_name(history: History) -> None:
    repo = history.repo
    set_ref(repo, "refs/heads/" + history.a, history.d)
    with pytest.warns(AmbiguousRefWarning, match="is a commit id and also names"):
        assert repo.resolve(history.a) == history.a
    assert repo.resolve("refs/heads/" + history.a) == history.d
    assert repo.resolve("heads/" + history.a) == history.d


# --- hostile input: only StateVCSError (or TypeError for a non-str), and quickly ---------


HOSTILE = [
    "main\ud800",
    "\udc80",
    "ma\udfffin~1",
    "refs/heads/\ud83d",
    "main\x00",
    "\x00",
    "main\x1b[31m",
    "main\n",
    "HEAD\x7f",
    "main@{\ud800}",
    "main~1\t",
    "x" * (MAX_REVISION_LENGTH + 1),
    "main~" + "9" * 4000,
    "main~99999999999999999999",
    "main^99999999999999999999",
    "main@{99999999999999999999}",
    f"main~{MAX_COUNT + 1}",
    f"main@{{{MAX_COUNT + 1}}}",
]


@pytest.mark.parametrize("text", HOSTILE, ids=range(len(HOSTILE)))
def test_hostile_revisions_raise_invalid_revision_on_every_store(
    repo: statevcs.Repo, text: str
) -> None:
    repo.commit({"x": 1}, "one")
    started = time.perf_counter()
    with pytest.raises(InvalidRevision) as info:
        repo.resolve(text)
    assert time.perf_counter() - started < 2
    assert len(str(info.value)) < 400  # a 4,000-character revision is not echoed back whole


def test_lone_surrogates_name_the_position_and_the_fix(repo: statevcs.Repo) -> None:
    with pytest.raises(InvalidRevision, match=r"lone surrogate '\\udc80' at position 4") as info:
        repo.resolve("main\udc80")
    assert "decode the name from UTF-8" in str(info.value)


def test_a_huge_count_walks_no_further_than_the_history(repo: statevcs.Repo) -> None:
    for n in range(3):
        repo.commit({"n": n}, f"c{n}")
    started = time.perf_counter()
    with pytest.raises(UnknownRevision, match="walks past the first commit"):
        repo.resolve(f"main~{MAX_COUNT}")
    with pytest.raises(UnknownRevision, match="has 1 parent"):
        repo.resolve(f"main^{MAX_COUNT}")
    with pytest.raises(UnknownRevision, match="has only 3 entries"):
        repo.resolve(f"main@{{{MAX_COUNT}}}")
    assert time.perf_counter() - started < 2


def test_the_longest_revision_is_accepted(repo: statevcs.Repo) -> None:
    repo.commit({"x": 1}, "one")
    text = "main" + "~0" * ((MAX_REVISION_LENGTH - 4) // 2)
    assert len(text) == MAX_REVISION_LENGTH
    assert repo.resolve(text) == repo.resolve("main")


revision_text = st.lists(
    st.characters(exclude_categories=())  # surrogates and controls included
    | st.sampled_from(["~", "^", "@", "{", "}", "@{", "main", "HEAD", "refs/heads/", "\ud800"])
    | st.sampled_from([str(n) for n in (0, 1, 2, 9, MAX_COUNT, MAX_COUNT + 1)]),
    max_size=12,
).map("".join)


@pytest.fixture(scope="module")
def sqlite_repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[statevcs.Repo]:
    with statevcs.Repo.init(tmp_path_factory.mktemp("fuzz") / "repo") as repo:
        for n in range(3):
            repo.commit({"n": n}, f"c{n}")
        repo.branch("side", "main~1")
        repo.tag("v1", "main~2")
        yield repo


@settings(max_examples=300, deadline=None)
@given(text=revision_text)
def test_any_text_resolves_or_raises_a_statevcs_error(
    sqlite_repo: statevcs.Repo, text: str
) -> None:
    try:
        result = sqlite_repo.resolve(text)
    except statevcs.StateVCSError:
        return
    assert sqlite_repo.get_commit(result).id == result
