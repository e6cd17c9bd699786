"""StateVCSSession reads: items come back as fresh values (a caller's edits reach nothing stored or
cached), and ``limit`` reads the tail with SQLiteSession's semantics on long sessions."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from agents import SessionSettings, SQLiteSession
from hypothesis import given, settings
from hypothesis import strategies as st
from support import run

from statevcs import Repo
from statevcs.integrations.openai_agents import StateVCSSession


def item(n: int) -> dict[str, Any]:
    """A nested item (a content list of part dicts), ~300 bytes, so long sessions span leaves."""
    role = "user" if n % 2 == 0 else "assistant"
    return {
        "role": role,
        "content": [{"type": "input_text", "text": f"message {n} " + "words " * 40}],
        "meta": {"n": n, "tags": ["a", "b"]},
    }


def vandalize(items: list[dict[str, Any]]) -> None:
    """Edit every level of every item in place."""
    for value in items:
        value["content"][0]["text"] = "changed"
        value["content"].append({"type": "input_text", "text": "extra"})
        value["meta"]["tags"].clear()
        value["role"] = "system"
    items.append(item(-1))


def test_editing_returned_items_changes_nothing(repo: Repo) -> None:
    session = StateVCSSession(repo, "mutations")
    expected = [item(n) for n in range(40)]
    run(session.add_items([item(n) for n in range(30)]))
    run(session.add_items([item(n) for n in range(30, 40)]))
    vandalize(run(session.get_items()))
    vandalize(run(session.get_items(limit=5)))
    for turn in run(session.get_conversation_turns()):
        turn["full_content"][0]["text"] = "changed"
        turn["full_content"].clear()
    assert run(session.get_items()) == expected
    assert run(session.get_items(limit=3)) == expected[-3:]
    assert repo.show("mutations").messages == expected
    # The next commit starts from the stored items, not from the edited copies.
    run(session.add_items([item(40)]))
    assert repo.show("mutations").messages == [*expected, item(40)]
    popped = run(session.pop_item())
    assert popped == item(40)
    assert popped is not None
    popped["role"] = "changed"
    assert run(session.get_items()) == expected
    with Repo.open(repo.path) as again:
        assert run(StateVCSSession(again, "mutations").get_items()) == expected


def test_editing_items_after_adding_them_changes_nothing(repo: Repo) -> None:
    session = StateVCSSession(repo, "added")
    added = [item(n) for n in range(6)]
    run(session.add_items(added))
    vandalize(added)
    assert run(session.get_items()) == [item(n) for n in range(6)]


def test_two_reads_share_nothing(repo: Repo) -> None:
    session = StateVCSSession(repo, "fresh")
    run(session.add_items([item(n) for n in range(4)]))
    first, second = run(session.get_items()), run(session.get_items())
    assert first == second
    for a, b in zip(first, second):
        assert a is not b
        assert a["content"] is not b["content"]
        assert a["meta"]["tags"] is not b["meta"]["tags"]


LIMITS = [None, -5, -1, 0, 1, 2, 3, 7, 64, 299, 300, 301, 1000]


def test_limit_on_a_long_session_matches_sqlite_session(repo: Repo, tmp_path: Path) -> None:
    ours = StateVCSSession(repo, "long")
    theirs = SQLiteSession("long", db_path=tmp_path / "sqlite.db")
    for start in range(0, 300, 50):  # 300 items in six commits: a tree of several leaves
        batch = [item(n) for n in range(start, start + 50)]
        run(ours.add_items(batch))  # type: ignore[arg-type]
        run(theirs.add_items(batch))  # type: ignore[arg-type]
    for session in (ours, StateVCSSession(repo, "long")):  # live handle and a fresh one
        for limit in LIMITS:
            assert run(session.get_items(limit)) == run(theirs.get_items(limit)), limit
    for limit in (0, 4, 299):
        settings_limited = StateVCSSession(repo, "long", session_settings=SessionSettings(limit))
        assert run(settings_limited.get_items()) == run(theirs.get_items(limit))
        assert run(settings_limited.get_items(limit=2)) == run(theirs.get_items(2))
    run(ours.pop_item())
    run(theirs.pop_item())
    assert run(ours.get_items(3)) == run(theirs.get_items(3))
    theirs.close()


def test_limit_reads_another_branch(repo: Repo) -> None:
    session = StateVCSSession(repo, "branched")
    run(session.add_items([item(n) for n in range(20)]))
    run(session.create_branch_from_turn(5, "side"))
    run(session.add_items([item(100)]))
    assert run(session.get_items(limit=2)) == [item(7), item(100)]
    assert run(session.get_items(limit=2, branch_id="main")) == [item(18), item(19)]
    empty = StateVCSSession(repo, "nothing-yet")
    assert run(empty.get_items()) == []
    assert run(empty.get_items(limit=3)) == []


@settings(max_examples=25, deadline=None)
@given(
    batches=st.lists(st.integers(min_value=0, max_value=40), min_size=1, max_size=5),
    pops=st.integers(min_value=0, max_value=3),
    limits=st.lists(st.one_of(st.none(), st.integers(min_value=-3, max_value=120)), max_size=6),
)
def test_limit_matches_sqlite_session(
    batches: list[int], pops: int, limits: list[int | None]
) -> None:
    async def scenario() -> None:
        with tempfile.TemporaryDirectory() as folder, Repo.init(Path(folder) / "repo") as repo:
            ours = StateVCSSession(repo, "prop")
            theirs = SQLiteSession("prop")
            n = 0
            for size in batches:
                batch = [item(n + i) for i in range(size)]
                n += size
                await ours.add_items(batch)  # type: ignore[arg-type]
                await theirs.add_items(batch)  # type: ignore[arg-type]
            for _ in range(pops):
                assert await ours.pop_item() == await theirs.pop_item()
            for limit in limits:
                assert await ours.get_items(limit) == await theirs.get_items(limit)
            theirs.close()

    run(scenario())
