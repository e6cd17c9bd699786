"""A second adversarial review of issue 8: tracking per repository, plain dicts per handle,
``tracked_messages``, ``on_conflict="merge"`` and HEAD's reflog next to other processes.

Each test is named after the behaviour docs/concepts.md promises ("HEAD belongs to a handle",
"The conflict rule", "Your messages stay yours"). The ones that fail are reproducers of
defects; the others pin guarantees nothing else tested yet.
"""

from __future__ import annotations

import contextlib
import copy
import gc
import itertools
import shutil
import subprocess
import sys
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import statevcs.repo
from statevcs import Repo, Snapshot, tracked_messages
from statevcs.errors import MergeConflict, RefConflict, StateVCSError

from .harness import dump_tables

DB = "statevcs.sqlite3"


def _message(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"text": text}]}


def _conversation(n: int, tag: str = "m") -> list[dict[str, Any]]:
    # Long enough that the messages form closed prolly leaves, not only the open tail.
    return [_message(f"{tag}{i}") for i in range(n)]


def _fresh_snapshot_id(state: dict[str, Any]) -> str:
    """The snapshot id a cold write of ``state`` (plain containers, a new repository) gets."""
    plain = copy.deepcopy({k: list(v) if isinstance(v, list) else v for k, v in state.items()})
    return Repo.init("memory://").commit(plain).snapshot_id


def _assert_whole(folder: Path) -> None:
    """fsck is clean and a fresh handle restores every commit of every branch."""
    with Repo.open(folder) as fresh:
        report = fresh.fsck()
        assert report.ok, report.problems
        for name in fresh.branches():
            for commit in fresh.log(name, all_parents=True):
                fresh.show(commit.id)


@pytest.fixture
def two_handles(repo_path: Path) -> tuple[Repo, Repo]:
    """Handles A and B on one SQLite repository whose ``main`` is C0 (``x=1``)."""
    return Repo.open(repo_path), Repo.open(repo_path)


# --- objects tracked per repository ------------------------------------------------------------


def test_an_object_synced_with_a_deleted_repository_cannot_corrupt_a_new_one_at_its_path(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "repo"
    old = Repo.init(folder)
    live = Snapshot(messages=_conversation(40), state={"x": 1})
    old.commit(live, message="in the old repository")
    old.close()
    shutil.rmtree(folder)
    # A new repository at the same path is another repository: the object is fresh there.
    new = Repo.init(folder)
    new.commit({"messages": [], "y": 1}, message="C0 of the new repository")
    live.messages.append(_message("one more"))
    new.commit(live, message="the object, on a branch of its own", branch="x")
    new.close()
    _assert_whole(folder)


def test_a_snapshot_checked_out_through_a_closed_handle_stays_stale_for_the_next_handle(
    repo_path: Path,
) -> None:
    live = Snapshot()
    with Repo.open(repo_path) as first:
        first.checkout(live, "main")
    with Repo.open(repo_path) as other:
        other.commit({"messages": [], "x": 2}, message="another writer")
    with Repo.open(repo_path) as second:
        live.state["y"] = 1
        with pytest.raises(RefConflict):
            second.commit(live, message="stale")
        assert second.show("main").state == {"x": 2}


def test_memory_repositories_never_share_what_they_know_of_an_object() -> None:
    one, two = Repo.init("memory://"), Repo.init("memory://")
    live = Snapshot(state={"x": 1})
    one.commit(live, message="first in one")
    one.commit(live, message="second in one")
    # Fresh in ``two``: a root commit there, no RefConflict about ``one``'s commits.
    commit = two.commit(live, message="first in two")
    assert commit.parents == ()
    assert two.synced_commit(live) == commit.id != one.synced_commit(live)


def test_memory_repositories_leave_nothing_behind_in_the_tracking_registry() -> None:
    gc.collect()
    before = len(statevcs.repo._REGISTRIES)
    for _ in range(50):
        with Repo.init("memory://") as repo:
            repo.commit(Snapshot(state={"x": 1}))
    gc.collect()
    # A server creating a memory:// repository per request must not grow without bound.
    assert len(statevcs.repo._REGISTRIES) - before < 50


# --- plain dicts remembered per handle -------------------------------------------------------


def test_a_dict_checked_out_through_one_handle_cannot_revert_work_committed_through_another(
    repo_path: Path,
) -> None:
    a, b, writer = Repo.open(repo_path), Repo.open(repo_path), Repo.open(repo_path)
    state: dict[str, Any] = {}
    a.checkout(state, "main")
    writer.commit({"messages": [], "x": 2}, message="another writer sets x=2")
    state["y"] = 1
    # As for a Snapshot (the record belongs to the repository): stale, whichever handle.
    with pytest.raises(RefConflict):
        b.commit(state, message="stale dict through another handle")
    assert b.show("main").state == {"x": 2}


def test_the_same_dict_committed_through_two_handles_in_turn_never_conflicts_with_itself(
    two_handles: tuple[Repo, Repo],
) -> None:
    a, b = two_handles
    state: dict[str, Any] = {}
    a.checkout(state, "main")
    state["x"] = 2
    b.commit(state, message="through B")
    state["x"] = 3
    # Nobody else wrote: the dict's last sync (through B) is the tip.
    a.commit(state, message="through A")
    assert a.show("main").state == {"x": 3}


def test_a_dict_the_handle_forgot_cannot_write_one_branchs_state_onto_another(
    repo_path: Path,
) -> None:
    with Repo.open(repo_path) as repo:
        repo.commit({"messages": [], "secret": "feature only"}, branch="feature", message="F")
        on_feature: dict[str, Any] = {}
        repo.checkout(on_feature, "feature")
        for _ in range(statevcs.repo.DICT_MEMORY):
            repo.checkout({}, "main")  # other dicts, as an agent loop would
        on_feature["more"] = 1
        with contextlib.suppress(StateVCSError):  # refusing is a fine answer too
            repo.commit(on_feature, message="meant for feature")
        # Wherever it lands, main must not silently take feature's state.
        assert "secret" not in repo.show("main").state


def test_a_dict_still_remembered_at_the_edge_of_the_memory_is_refused_when_stale(
    two_handles: tuple[Repo, Repo],
) -> None:
    a, b = two_handles
    state: dict[str, Any] = {}
    a.checkout(state, "main")
    for _ in range(statevcs.repo.DICT_MEMORY - 1):
        a.checkout({}, "main")
    b.commit({"messages": [], "x": 2}, message="another writer")
    state["y"] = 1
    with pytest.raises(RefConflict):
        a.commit(state, message="stale")


def test_dicts_the_program_dropped_are_not_kept_alive(repo_path: Path) -> None:
    """A server restoring one session dict per request and dropping it must not keep the last
    DICT_MEMORY of them (and their messages) alive: measured, that held 256 restored
    conversations and made full collections ~7x slower."""
    with Repo.open(repo_path) as repo:
        text = "x" * 1000
        repo.commit({"messages": [{"role": "user", "content": text} for _ in range(200)]}, "m")

        def restore_and_drop() -> None:
            repo.checkout({}, "main")

        restore_and_drop()
        gc.collect()
        tracemalloc.start()
        try:
            restore_and_drop()
            gc.collect()
            before = tracemalloc.get_traced_memory()[0]
            for _ in range(100):
                restore_and_drop()
            gc.collect()
            grown = tracemalloc.get_traced_memory()[0] - before
        finally:
            tracemalloc.stop()
        # Each restored dict holds ~250 KB of messages: keeping them would grow ~25 MB.
        assert grown < 2_000_000, grown
        kept: dict[str, Any] = {}
        repo.checkout(kept, "main")
        for _ in range(10):
            restore_and_drop()
        assert repo.synced_commit(kept) == repo.resolve("main")  # a dict still in use stays known


def test_equal_but_distinct_dicts_are_tracked_one_by_one(two_handles: tuple[Repo, Repo]) -> None:
    a, b = two_handles
    stale: dict[str, Any] = {}
    a.checkout(stale, "main")
    b.commit({"messages": [], "x": 2}, message="another writer")
    current: dict[str, Any] = {}
    a.checkout(current, "main")
    stale.update(current)  # equal content, another object: still the one synced with C0
    assert stale == current and stale is not current
    with pytest.raises(RefConflict):
        a.commit(stale, message="stale twin")
    current["y"] = 1
    a.commit(current, message="the current one")
    assert a.show("main").state == {"x": 2, "y": 1}


# --- your messages stay yours; tracked_messages as fast as a fresh write ---------------------

_EDITS: dict[str, Callable[[list[Any]], object]] = {
    "slice assignment": lambda m: m.__setitem__(slice(2, 5), [_message("a"), _message("b")]),
    "stepped slice deletion": lambda m: m.__delitem__(slice(1, 20, 3)),
    "negative stepped slice": lambda m: m.__setitem__(slice(20, 10, -2), _conversation(5, "s")),
    "sort": lambda m: m.sort(key=lambda x: x["content"][0]["text"], reverse=True),
    "reverse": lambda m: m.reverse(),
    "nested edit": lambda m: m[3]["content"][0].__setitem__("text", "edited"),
    "nested append": lambda m: m[4]["content"].append({"text": "more"}),
    "nested in-place add": lambda m: m[4]["content"].__iadd__([{"text": "more"}]),
    "dict in-place or": lambda m: m[5].__ior__({"role": "assistant"}),
    "insert at a negative index": lambda m: m.insert(-100, _message("first")),
    "pop from the middle": lambda m: m.pop(10),
    "remove by value": lambda m: m.remove(_message("m7")),
    "multiply by zero": lambda m: m.__imul__(0),
    "multiply by two": lambda m: m.__imul__(2),
    "append then edit the appended": lambda m: (m.append(_message("n")), m[-1].update(role="x")),
    "replace the last": lambda m: m.__setitem__(-1, _message("last")),
    "edit a deep new value": lambda m: (
        m[1]["content"][0].__setitem__("deep", {"a": [1]}),
        m[1]["content"][0]["deep"]["a"].append(2),
    ),
}


@pytest.mark.parametrize("edit", sorted(_EDITS))
@pytest.mark.parametrize("holder", ["dict", "snapshot"])
def test_every_edit_of_tracked_messages_gives_the_snapshot_id_of_a_fresh_write(
    edit: str, holder: str
) -> None:
    repo = Repo.init("memory://")
    live: Any
    if holder == "dict":
        live = {"messages": tracked_messages(_conversation(30)), "k": 1}
    else:
        live = Snapshot(messages=tracked_messages(_conversation(30)), state={"k": 1})

    def messages() -> list[Any]:
        return live["messages"] if holder == "dict" else live.messages  # type: ignore[no-any-return]

    repo.commit(live, message="one")
    repo.commit(live, message="two: the list is watched now")
    _EDITS[edit](messages())
    commit = repo.commit(live, message=edit)
    expected = {"messages": copy.deepcopy(list(messages())), "k": 1}
    if holder == "dict":
        assert commit.snapshot_id == _fresh_snapshot_id(expected)
    else:
        cold = Snapshot(messages=expected["messages"], state={"k": 1})
        assert commit.snapshot_id == Repo.init("memory://").commit(cold).snapshot_id
    assert repo.show(commit.id).messages == expected["messages"]


def test_tracked_messages_watched_by_two_repositories_and_checked_out_match_fresh_writes() -> None:
    one, two = Repo.init("memory://"), Repo.init("memory://")
    live: dict[str, Any] = {"messages": tracked_messages(_conversation(20))}
    one.commit(live, message="one: C1")
    two.commit(live, message="two: C1")
    live["messages"][3]["content"][0]["text"] = "edited after both synced"
    first = one.commit(live, message="one: edit")
    assert first.snapshot_id == _fresh_snapshot_id(live)
    live["messages"].append(_message("appended"))
    second = two.commit(live, message="two: edit and append (two never saw the edit)")
    assert second.snapshot_id == _fresh_snapshot_id(live)
    two.checkout(live, "main~1")
    one.checkout(live, "main")  # back to one's tip, through the other repository's list
    live["messages"][0]["role"] = "system"
    live["messages"] = tracked_messages(live["messages"][:5])  # a new list, replacing the old
    third = one.commit(live, message="one: shortened")
    assert third.snapshot_id == _fresh_snapshot_id(live)
    assert one.show("main").messages == list(live["messages"])


@pytest.mark.parametrize("holder", ["dict", "snapshot"])
def test_a_commit_keeps_the_callers_plain_list_and_message_dicts(holder: str) -> None:
    repo = Repo.init("memory://")
    live: Any
    if holder == "dict":
        live = {"messages": _conversation(20)}
        messages = live["messages"]
    else:
        live = Snapshot(messages=_conversation(20))  # pydantic copies: the list is live.messages
        messages = live.messages
    kept = list(messages)
    for turn in range(3):
        repo.commit(live, message=f"turn {turn}")
        current = live["messages"] if holder == "dict" else live.messages
        assert current is messages
        assert all(a is b for a, b in zip(current, kept, strict=True))
    # An edit through a reference the caller kept reaches the next commit.
    kept[0]["content"][0]["text"] = "streamed later"
    commit = repo.commit(live, message="after the edit")
    assert repo.show(commit.id).messages[0]["content"][0]["text"] == "streamed later"


# --- on_conflict="merge" ---------------------------------------------------------------------


def test_a_fresh_object_racing_a_commit_merges_against_its_parent_not_an_empty_base(
    two_handles: tuple[Repo, Repo],
) -> None:
    a, b = two_handles
    real = a.store.update_refs
    raced: list[bool] = []

    def another_writer_first(*args: Any, **kwargs: Any) -> None:
        if not raced:
            raced.append(True)
            b.commit({"messages": [], "x": 2}, message="racer sets x")
        real(*args, **kwargs)

    a.store.update_refs = another_writer_first  # type: ignore[method-assign]
    fresh = {"messages": [], "x": 1, "y": 5}  # C0's state plus y: its parent is C0
    a.commit(fresh, message="fresh dict adds y", on_conflict="merge")
    assert a.show("main").state == {"x": 2, "y": 5}


@pytest.mark.parametrize(
    "ours, theirs",
    [
        (lambda s: s.messages.append(_message("ours")), lambda s: s.messages.append(_message("t"))),
        (lambda s: s.extras.__setitem__("e", "ours"), lambda s: s.extras.__setitem__("e", "t")),
        (lambda s: s.messages.pop(), lambda s: s.messages.append(_message("theirs"))),
    ],
    ids=["both appended", "both set one extras key", "one removed, one appended"],
)
def test_a_merge_conflict_on_commit_writes_nothing_and_keeps_the_object(
    tmp_path: Path,
    ours: Callable[[Snapshot], object],
    theirs: Callable[[Snapshot], object],
) -> None:
    folder = tmp_path / "repo"
    with Repo.init(folder) as repo:
        repo.commit(Snapshot(messages=_conversation(12), extras={"e": "base"}), message="C0")
    a, b = Repo.open(folder), Repo.open(folder)
    mine, other = Snapshot(), Snapshot()
    a.checkout(mine, "main")
    b.checkout(other, "main")
    theirs(other)
    b.commit(other, message="theirs")
    before = dump_tables(folder / DB)
    ours(mine)
    wanted = copy.deepcopy((mine.messages, mine.extras, mine.state))
    with pytest.raises(MergeConflict):
        a.commit(mine, message="ours", on_conflict="merge")
    assert dump_tables(folder / DB) == before
    assert (mine.messages, mine.extras, mine.state) == wanted


# --- HEAD's reflog next to other processes ------------------------------------------------------


def test_heads_reflog_is_one_unbroken_chain_while_another_process_switches(
    repo_path: Path,
) -> None:
    with Repo.open(repo_path) as repo:
        repo.branch("side")
    committer = (
        "from statevcs import Repo\n"
        f"r = Repo.open({str(repo_path)!r})\n"
        "d = {}\n"
        "r.checkout(d, 'main')\n"
        "for i in range(40):\n"
        "    d['n'] = i\n"
        "    r.commit(d, message=f'c{i}')\n"
    )
    switcher = (
        "from statevcs import Repo\n"
        f"r = Repo.open({str(repo_path)!r})\n"
        "for i in range(40):\n"
        "    r.switch('side' if i % 2 == 0 else 'main')\n"
    )
    processes = [subprocess.Popen([sys.executable, "-c", code]) for code in (committer, switcher)]
    assert [p.wait(timeout=120) for p in processes] == [0, 0]
    with Repo.open(repo_path) as repo:
        log = list(reversed(repo.reflog("HEAD")))
        # Every move of HEAD's value is logged exactly once, in order: no entry missed or doubled.
        assert all(prev.new == entry.old for prev, entry in itertools.pairwise(log))
        assert sum(e.message.startswith("switch:") for e in log) == 40
        commits_while_on_main = [e for e in log if e.message.startswith("commit")]
        assert 1 < len(commits_while_on_main) <= 41  # C0 and some of the 40
        assert len(repo.reflog("main")) == 41
