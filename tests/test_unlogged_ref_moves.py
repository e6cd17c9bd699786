"""``RefUpdate(log=False)``: ref moves without reflog entries, on every store.

Each test checks refs, reflogs, revisions and ``gc`` by content: what a ref or reflog entry
names must come back exactly, and nothing a ref or reflog reaches may be collected.
"""

from __future__ import annotations

import pytest

import statevcs
from statevcs import Repo
from statevcs.stores.base import RefUpdate

MAIN = "refs/heads/main"


def _commit(repo: Repo, n: int, branch: str | None = None) -> bytes:
    return bytes.fromhex(repo.commit({"n": n}, message=f"c{n}", branch=branch).id)


def _log(repo: Repo, name: str) -> list[tuple[str | None, str | None, str]]:
    return [(e.old, e.new, e.message) for e in repo.reflog(name)]


def test_a_batch_mixing_logged_and_unlogged_moves_logs_only_the_logged(repo: Repo) -> None:
    one, two = _commit(repo, 1), _commit(repo, 2)
    main_before, head_before = _log(repo, MAIN), _log(repo, "HEAD")
    repo.refs.update(
        [
            RefUpdate(MAIN, one, two, "main quiet", log=False),
            RefUpdate("refs/heads/a", two, None, "a loud"),
            # log_also names more reflogs of a logged move; an unlogged move has none at all.
            RefUpdate("refs/heads/b", one, None, "b quiet", log_also=("refs/heads/a",), log=False),
            RefUpdate("refs/heads/c", two, None, "c loud", log_also=("refs/heads/b",)),
        ]
    )
    assert repo.refs.as_hex("refs/heads/") == {
        "refs/heads/a": two.hex(),
        "refs/heads/b": one.hex(),
        "refs/heads/c": two.hex(),
        MAIN: one.hex(),
    }
    assert _log(repo, MAIN) == main_before
    assert _log(repo, "HEAD") == head_before
    assert _log(repo, "refs/heads/a") == [(None, two.hex(), "a loud")]
    assert _log(repo, "refs/heads/b") == [(None, two.hex(), "c loud")]
    assert _log(repo, "refs/heads/c") == [(None, two.hex(), "c loud")]
    repo.gc(grace="0")
    assert repo.fsck().problems == ()
    assert repo.show("main").state == {"n": 1}
    assert repo.show("a").state == {"n": 2}


def test_head_branch_moved_unlogged_keeps_head_reflog_and_gc_keeps_logged_commits(
    repo: Repo,
) -> None:
    one, two, three = _commit(repo, 1), _commit(repo, 2), _commit(repo, 3)
    head_before = _log(repo, "HEAD")
    assert [new for _, new, _ in head_before] == [three.hex(), two.hex(), one.hex()]
    repo.refs.update([RefUpdate(MAIN, one, three, "rewind quietly", log=False)])
    assert repo.resolve("HEAD") == one.hex()
    assert _log(repo, "HEAD") == head_before
    repo.gc(grace="0")
    # "two" and "three" are above main now, reached only by the reflog entries of the commits.
    assert repo.show(two.hex()).state == {"n": 2}
    assert repo.show(three.hex()).state == {"n": 3}
    assert repo.fsck().problems == ()
    # A logged move afterwards is recorded in both logs, once.
    repo.refs.update([RefUpdate(MAIN, two, one, "loud")])
    assert _log(repo, "HEAD")[0] == (one.hex(), two.hex(), "loud")
    assert _log(repo, MAIN)[0] == (one.hex(), two.hex(), "loud")
    # HEAD@{1}: the value before the newest logged move ("loud" moved one -> two).
    assert repo.resolve("HEAD@{1}") == one.hex()
    assert repo.resolve("HEAD@{0}") == two.hex()


def test_a_ref_deleted_unlogged_is_gone_and_gc_keeps_what_other_refs_reach(repo: Repo) -> None:
    one = _commit(repo, 1)
    side = _commit(repo, 2, branch="side")
    repo.refs.update([RefUpdate("refs/heads/side", None, side, "quiet", log=False)])
    assert repo.refs.get("refs/heads/side") is None
    assert "side" not in repo.branches()
    with pytest.raises(statevcs.UnknownRevision):
        repo.resolve("side@{1}")
    with pytest.raises(statevcs.UnknownRevision):
        repo.resolve("side")
    repo.gc(grace="0")
    assert repo.fsck().problems == ()
    assert repo.show("main").state == {"n": 1}
    assert repo.resolve("main") == one.hex()


def test_recreating_a_ref_deleted_through_refs_does_not_revive_a_stale_reflog(
    repo: Repo,
) -> None:
    one = _commit(repo, 1)
    side = _commit(repo, 2, branch="side")
    repo.refs.set("refs/heads/side", None, expected=side, message="delete")
    repo.gc(grace="0")  # "side"'s commit: no live ref or live reflog reaches it
    repo.refs.set("refs/heads/side", one, expected=None, message="again")
    repo.gc(grace="0")
    assert repo.fsck().problems == ()
    for entry in repo.reflog("side"):
        for value in (entry.old, entry.new):
            if value is not None:
                assert repo.show(value).state in ({"n": 1}, {"n": 2})


def test_name_at_zero_is_the_current_value_after_an_unlogged_move(repo: Repo) -> None:
    one, two = _commit(repo, 1), _commit(repo, 2)
    repo.refs.update([RefUpdate(MAIN, one, two, "quiet", log=False)])
    assert repo.resolve("main") == one.hex()
    assert repo.resolve("main@{0}") == one.hex()
    # main@{1}: the value before the newest logged move (one -> two).
    assert repo.resolve("main@{1}") == one.hex()
    three = _commit(repo, 3)
    assert repo.resolve("main@{0}") == three.hex()
    assert repo.resolve("main@{1}") == one.hex()


def test_an_unlogged_move_still_changes_refs_state_so_gc_marks_again(repo: Repo) -> None:
    """gc refuses a delete batch when refs moved since marking; a quiet move must count."""
    one, two = _commit(repo, 1), _commit(repo, 2)
    store = repo.store
    before = store.refs_state()
    repo.refs.update([RefUpdate(MAIN, one, two, "quiet", log=False)])
    assert store.refs_state() != before
    between = store.refs_state()
    repo.refs.update([RefUpdate(MAIN, two, one, "quiet", log=False)])
    # Back to the same value (A-B-A): the state still differs from both earlier ones.
    assert store.refs_state() != between
    repo.gc(grace="0")
    assert repo.show("main").state == {"n": 2}
    assert repo.fsck().problems == ()
