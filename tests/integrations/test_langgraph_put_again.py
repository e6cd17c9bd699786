"""Checkpoints put again, forks and pending writes read back as LangGraph's own savers read them.

Putting an existing checkpoint id again replaces that checkpoint only, as ``InMemorySaver``
and ``SqliteSaver`` do: every other checkpoint stays, its pending writes stay (some folded
into its lead child), its children stay its children (``get_delta_channel_history`` walks
them), and ``list`` orders by id across namespaces. A random differential test runs puts,
forks, puts of existing ids (same parent, another parent, itself, identical) and pending
writes on this saver, ``InMemorySaver`` and ``SqliteSaver`` and compares every answer;
``STATEVCS_REPUT_EXAMPLES`` sets how many sequences (200 by default).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import statevcs
from statevcs.integrations.langgraph import StateVCSSaver
from statevcs.integrations.langgraph import saver as lg_saver
from statevcs.integrations.langgraph import store as lg_store

from .langgraph_support import Differential, checkpoint, checkpoint_uuid, config_of, thread

_EXAMPLES = int(os.environ.get("STATEVCS_REPUT_EXAMPLES", "200"))

# One step: (operation, a, b). Operations: put a child of checkpoint a (a fork when it is not a
# leaf; "other_child" through a second handle), a new root in namespace b; put checkpoint a
# again under its parent with other values ("again"), exactly as before ("identical"), under
# checkpoint b of its namespace or as a root ("move": even under its own descendant), under
# itself ("self"); pending writes for checkpoint a; compare the lists now ("list").
_STEPS = st.lists(
    st.tuples(
        st.sampled_from(
            [
                *("child", "child", "other_child", "root"),
                *("again", "identical", "move", "self"),
                *("writes", "writes", "list"),
            ]
        ),
        st.integers(min_value=0, max_value=40),
        st.integers(min_value=0, max_value=40),
    ),
    min_size=3,
    max_size=30,
)


@settings(
    max_examples=_EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(steps=_STEPS, backwards=st.integers(min_value=0, max_value=3), early=st.booleans())
# Found by this test: the writes of a checkpoint put again while it had children were lost
# (its lead child, which carried them, was moved off it); ...
@example(
    steps=[("writes", 0, 0), ("child", 0, 0), ("child", 1, 0), ("again", 0, 0), ("child", 0, 0)],
    backwards=0,
    early=False,
)
# ... a same-slot write came back newest-first instead of first-kept; ...
@example(
    steps=[
        ("child", 0, 0),
        ("child", 0, 0),
        ("again", 0, 0),
        ("writes", 39, 0),
        ("child", 0, 0),
        ("again", 0, 0),
        ("writes", 0, 0),
        ("child", 0, 0),
        ("again", 0, 0),
    ],
    backwards=0,
    early=False,
)
# ... an old lead moved off its parent and put again claimed to be its lead a second time,
# hiding the real lead's writes; ...
@example(
    steps=[
        ("child", 0, 0),
        ("child", 0, 0),
        ("child", 0, 0),
        ("child", 0, 0),
        ("child", 0, 0),
        ("again", 0, 0),
        ("writes", 0, 0),
        ("child", 0, 0),
        ("child", 6, 0),
        ("again", 1, 0),
        ("child", 0, 0),
    ],
    backwards=0,
    early=False,
)
# ... and putting it again next to its leaf parent moved one ref twice in one batch (RefError).
@example(
    steps=[("writes", 0, 0), ("child", 0, 0), ("again", 0, 0), ("writes", 0, 0), ("again", 1, 0)],
    backwards=0,
    early=False,
)
def test_puts_again_forks_and_writes_answer_as_langgraphs_own_savers(
    steps: list[tuple[str, int, int]], backwards: int, early: bool
) -> None:
    """The same calls on this saver (two handles), ``InMemorySaver`` and ``SqliteSaver``:
    every checkpoint, its pending writes, ``list`` (limit, before, filter, across namespaces
    and threads), the latest and ``get_delta_channel_history`` read back the same
    (``early``: the saver indexes a namespace at its first deep lookup or page)."""
    with pytest.MonkeyPatch.context() as patch:
        if early:
            patch.setattr(lg_store, "INDEX_AFTER", 1)
            patch.setattr(lg_saver, "_SKIPS", 1)
        _differential(steps, backwards)


def _differential(steps: list[tuple[str, int, int]], backwards: int) -> None:
    run = Differential(statevcs.Repo.init("memory://"))
    counter = 100
    used: set[str] = set()

    def fresh(back: bool) -> str:
        # Now and then an id smaller than its parent's (a writer's clock was behind).
        n = counter - (backwards * 50 if back else 0)
        cid = checkpoint_uuid(n)
        return cid if cid not in used else checkpoint_uuid(counter)

    first = checkpoint_uuid(counter)
    run.put(Differential.PLACES[0], None, first, 1)
    used.add(first)
    for op, a, b in steps:
        place, target = run.ids[a % len(run.ids)]
        parents, versions = run.parents[place], run.versions[place]
        if op in ("child", "other_child", "root"):
            counter += 1
            cid = fresh(a % 5 == 0)
            used.add(cid)
            if op == "root":
                run.put(Differential.PLACES[b % 3], None, cid, counter)
            else:
                # Now and then channel n unchanged since the parent (not in new_versions).
                n_version = run.n_versions[place][target] if b % 2 else None
                by_other = op == "other_child"
                run.put(place, target, cid, counter, by_other=by_other, n_version=n_version)
        elif op == "again":
            run.put(place, parents[target], target, a + 1)
        elif op == "identical":
            n_version = run.n_versions[place][target]
            run.put(place, parents[target], target, versions[target], n_version=n_version)
        elif op == "move":
            here = [cid for where, cid in run.ids if where == place and cid != target]
            parent = None if b % 4 == 0 or not here else here[b % len(here)]
            counter += 1
            run.put(place, parent, target, counter)
        elif op == "self":
            counter += 1
            run.put(place, target, target, counter)
        elif op == "writes":
            # Regular writes keep the first value per (task, index); special ones the last.
            channel = ("messages", "messages", "__error__", "__interrupt__")[a % 4]
            writes = [(channel, f"w{a}")] if a % 3 else [(channel, f"w{a}"), ("n", a)]
            run.put_writes(place, target, writes, f"task-{(a + b) % 3}")
        else:
            run.check(run.ours, deep=False)
    run.check(run.ours)
    run.check(StateVCSSaver(run.repo))  # a fresh handle: no index, no cached view


def _both() -> Differential:
    return Differential(statevcs.Repo.init("memory://"))


def _n(n: int) -> str:
    return checkpoint_uuid(n)


_ROOT = Differential.PLACES[0]


def test_a_checkpoint_put_again_as_a_root_keeps_its_old_parent() -> None:
    run = _both()
    run.put(_ROOT, None, _n(1), 1)
    run.put(_ROOT, _n(1), _n(2), 2)
    run.put(_ROOT, None, _n(2), 3)
    assert run.ours.get_tuple(config_of("t", "", _n(1))) is not None
    run.check(run.ours)
    run.check(StateVCSSaver(run.repo))


def test_a_checkpoint_put_again_under_its_grandparent_keeps_its_old_parent() -> None:
    run = _both()
    run.put(_ROOT, None, _n(1), 1)
    run.put(_ROOT, _n(1), _n(2), 2)
    run.put(_ROOT, _n(2), _n(3), 3)
    run.put(_ROOT, _n(1), _n(3), 4)
    listed = [t.checkpoint["id"] for t in run.ours.list(thread())]
    assert listed == [_n(3), _n(2), _n(1)]
    run.check(run.ours)


def test_an_identical_put_again_keeps_its_children_and_their_delta_history() -> None:
    run = _both()
    run.put(_ROOT, None, _n(1), 1)
    run.put_writes(_ROOT, _n(1), [("n", 7)], "task")
    run.put(_ROOT, _n(1), _n(2), 2)
    run.put(_ROOT, None, _n(1), 1)  # exactly as before
    history = run.ours.get_delta_channel_history(config=config_of("t", "", _n(2)), channels=["n"])
    assert history == {"n": {"seed": 1, "writes": [("task", "n", 7)]}}
    run.check(run.ours)
    run.check(StateVCSSaver(run.repo))


def test_a_checkpoint_put_as_its_own_parent_is_listed_once() -> None:
    run = _both()
    run.put(_ROOT, None, _n(1), 1)
    run.put(_ROOT, _n(1), _n(2), 2)
    run.put(_ROOT, _n(2), _n(2), 3)  # config names checkpoint 2, the checkpoint is 2
    assert [t.checkpoint["id"] for t in run.ours.list(thread())] == [_n(2), _n(1)]
    got = run.ours.get_tuple(config_of("t", "", _n(2)))
    assert got is not None and got.parent_config == config_of("t", "", _n(2))
    run.check(run.ours)


def test_list_across_namespaces_and_threads_is_newest_first_by_id() -> None:
    run = _both()
    # Branch names sort "t" < "t.ns-sub" < "u"; ids interleave across them.
    for n, place in enumerate([_ROOT, ("u", ""), ("t", "sub"), _ROOT, ("u", ""), ("t", "sub")]):
        run.put(place, None, _n(10 + n), 10 + n)
    for config in ({"configurable": {"thread_id": "t"}}, None):
        for limit in (None, 1, 2, 4):
            got = [t.config for t in run.ours.list(config, limit=limit)]
            assert got == [t.config for t in run.sqlite.list(config, limit=limit)]
    ids = [t.checkpoint["id"] for t in run.ours.list(None, limit=3)]
    assert ids == [_n(15), _n(14), _n(13)]
    run.check(run.ours)


def test_deleting_a_lead_child_leaves_its_parents_pending_writes_as_they_were() -> None:
    """The writes the deleted child carried go back to the parent's side ref as the older
    ones: a regular write keeps its first value, a special write its last."""
    saver = StateVCSSaver(statevcs.Repo.init("memory://"))
    one = saver.put(thread(), checkpoint(_n(1), {"n": 1}, 1), {"run_id": "a"}, {"n": 1})
    saver.put_writes(one, [("n", "first"), ("__error__", "old")], "task")
    saver.put(one, checkpoint(_n(2), {"n": 2}, 2), {"run_id": "b"}, {"n": 2})  # folds them
    saver.put_writes(one, [("n", "second"), ("__error__", "new")], "task")
    before = saver.get_tuple(one)
    assert before is not None
    assert before.pending_writes == [("task", "__error__", "new"), ("task", "n", "first")]
    saver.delete_for_runs(["b"])
    after = saver.get_tuple(one)
    assert after is not None and after.pending_writes == before.pending_writes
    assert [t.checkpoint["id"] for t in saver.list(thread())] == [_n(1)]
