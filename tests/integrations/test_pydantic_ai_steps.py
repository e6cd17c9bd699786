"""StateVCSStepStore: the pydantic-ai-harness StepStore protocol, checked against the harness's
own InMemoryStepStore under its real StepPersistence capability and a scripted model."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

pytest.importorskip("pydantic_ai_harness")

from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai_harness import StepPersistence
from pydantic_ai_harness.step_persistence import (
    ContinuableSnapshot,
    InMemoryStepStore,
    RunRecord,
    StepEvent,
    ToolEffectRecord,
    continue_run,
    fork_run,
)
from support import run

from statevcs import Repo
from statevcs.integrations.pydantic_ai.steps import StateVCSStepStore, StepStoreError

T0 = datetime(2026, 5, 1, tzinfo=UTC)


@pytest.fixture(params=["memory", "statevcs"])
def store(request: pytest.FixtureRequest, repo: Repo) -> Any:
    """The harness's own store and ours: every protocol case runs on both."""
    return InMemoryStepStore() if request.param == "memory" else StateVCSStepStore(repo)


def dumped(messages: list[ModelMessage]) -> bytes:
    return ModelMessagesTypeAdapter.dump_json(messages)


def talk(n: int) -> list[ModelMessage]:
    return [
        ModelRequest(parts=[UserPromptPart(f"q{n}", timestamp=T0)]),
        ModelResponse(parts=[TextPart(f"a{n}")], timestamp=T0),
    ]


# --- the protocol's cases, on both stores ------------------------------------------------------


def test_runs_are_registered_listed_and_filtered(store: Any) -> None:
    async def scenario() -> None:
        await store.register_run(RunRecord(run_id="b", conversation_id="c1", started_at=T0))
        await store.register_run(
            RunRecord(
                run_id="a", conversation_id="c1", parent_run_id="b", started_at=T0 - timedelta(1)
            )
        )
        await store.register_run(RunRecord(run_id="c", conversation_id="c2", started_at=T0))
        assert (await store.get_run(run_id="a")).parent_run_id == "b"
        assert await store.get_run(run_id="nope") is None
        assert [r.run_id for r in await store.list_runs(conversation_id="c1")] == ["a", "b"]
        assert [r.run_id for r in await store.list_runs(parent_run_id="b")] == ["a"]
        assert [
            r.run_id for r in await store.list_runs(parent_run_id="b", conversation_id="c2")
        ] == []
        assert {r.run_id for r in await store.list_runs()} == {"a", "b", "c"}

    run(scenario())


def test_events_append_in_order_and_idempotency_keys_suppress_retries(store: Any) -> None:
    async def scenario() -> None:
        await store.register_run(RunRecord(run_id="r"))
        for kind, key in [
            ("run_started", "k1"),
            ("model_request_started", "k2"),
            ("run_started", "k1"),
        ]:
            await store.append_event(
                StepEvent(
                    run_id="r", kind=kind, step_index=0, idempotency_key=key, metadata={"x": "y"}
                )
            )
        await store.append_event(StepEvent(run_id="r", kind="run_completed", step_index=3))
        await store.append_event(StepEvent(run_id="r", kind="run_completed", step_index=3))
        events = await store.list_events(run_id="r")
        assert [e.kind for e in events] == [
            "run_started",
            "model_request_started",
            "run_completed",
            "run_completed",
        ]
        assert events[0].metadata == {"x": "y"} and events[2].step_index == 3
        assert await store.list_events(run_id="other") == []

    run(scenario())


def test_latest_snapshot_skips_interrupted_ones_unless_asked(store: Any) -> None:
    async def scenario() -> None:
        await store.register_run(RunRecord(run_id="r"))
        assert await store.latest_snapshot(run_id="r") is None
        await store.save_snapshot(
            ContinuableSnapshot(run_id="r", step_index=1, messages=talk(1), timestamp=T0)
        )
        await store.save_snapshot(
            ContinuableSnapshot(
                run_id="r",
                step_index=2,
                messages=talk(1) + talk(2),
                state="interrupted",
                timestamp=T0,
            )
        )
        complete = await store.latest_snapshot(run_id="r")
        assert complete.step_index == 1 and dumped(complete.messages) == dumped(talk(1))
        latest = await store.latest_snapshot(run_id="r", include_interrupted=True)
        assert latest.state == "interrupted" and dumped(latest.messages) == dumped(
            talk(1) + talk(2)
        )
        assert latest.timestamp == T0
        # a retried save with the same key is suppressed
        await store.save_snapshot(
            ContinuableSnapshot(run_id="r", step_index=3, messages=talk(3), idempotency_key="s1")
        )
        await store.save_snapshot(
            ContinuableSnapshot(run_id="r", step_index=3, messages=talk(4), idempotency_key="s1")
        )
        assert dumped((await store.latest_snapshot(run_id="r")).messages) == dumped(talk(3))

    run(scenario())


def test_tool_effects_newest_record_wins(store: Any) -> None:
    async def scenario() -> None:
        await store.register_run(RunRecord(run_id="r"))
        for call, status in [("c1", "started"), ("c2", "started"), ("c1", "completed")]:
            await store.record_tool_effect(
                ToolEffectRecord(tool_call_id=call, tool_name="t", run_id="r", status=status)
            )
        assert (await store.get_tool_effect(run_id="r", tool_call_id="c1")).status == "completed"
        assert await store.get_tool_effect(run_id="r", tool_call_id="c9") is None
        assert [e.tool_call_id for e in await store.list_unresolved_tool_effects(run_id="r")] == [
            "c2"
        ]

    run(scenario())


# --- the real capability -----------------------------------------------------------------------


def calculator(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    last = messages[-1].parts[-1]
    if isinstance(last, UserPromptPart):
        return ModelResponse(parts=[ToolCallPart("add", {"a": 2, "b": 3})])
    assert isinstance(last, ToolReturnPart)
    return ModelResponse(parts=[TextPart(f"the sum is {last.content}")])


def agent_on(store: Any) -> Agent[None, str]:
    agent = Agent(
        FunctionModel(calculator), name="calc", capabilities=[StepPersistence(store=store)]
    )

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    return agent


def test_step_persistence_writes_the_same_as_the_harness_own_store(repo: Repo) -> None:
    async def trace(store: Any) -> tuple[list[str], list[int], bytes, list[str]]:
        agent = agent_on(store)
        first = await agent.run("2 + 3?", conversation_id="conv")
        second = await agent.run(
            "again", conversation_id="conv", message_history=first.all_messages()
        )
        runs = await store.list_runs(conversation_id="conv")
        assert [r.run_id for r in runs] == [first.run_id, second.run_id]
        events = await store.list_events(run_id=second.run_id)
        history = await continue_run(store, run_id=second.run_id)
        assert dumped(history) == dumped(second.all_messages())
        forked = await fork_run(store, run_id=first.run_id)
        calls = [p.tool_call_id for m in history for p in m.parts if isinstance(p, ToolCallPart)]
        statuses = [
            (await store.get_tool_effect(run_id=second.run_id, tool_call_id=c)) for c in calls
        ]
        return (
            [e.kind for e in events],
            [e.step_index for e in events],
            dumped(forked),
            [s.status if s is not None else "-" for s in statuses],
        )

    theirs = run(trace(InMemoryStepStore()))
    ours = run(trace(StateVCSStepStore(repo)))
    assert ours[0] == theirs[0] and ours[1] == theirs[1] and ours[3] == theirs[3]
    assert len(ours[2]) > 0
    # each run is a branch whose log holds every write
    branches = [b for b in repo.branches() if b.startswith("runs/")]
    assert len(branches) == 2
    ops = {c.metadata["op"] for b in branches for c in repo.log(b)}
    assert ops == {"register", "event", "snapshot", "tool_effect"}


def test_fork_run_is_a_branch_sharing_the_messages(repo: Repo) -> None:
    store = StateVCSStepStore(repo)

    async def scenario() -> None:
        agent = agent_on(store)
        first = await agent.run("2 + 3?")
        before = repo.stats()
        forked = await store.fork_run(first.run_id, "alt", conversation_id="c-alt")
        assert forked.run_id == "alt" and forked.parent_run_id == first.run_id
        assert dumped(forked.messages) == dumped(first.all_messages())
        assert (await store.get_run(run_id="alt")).parent_run_id == first.run_id
        # O(1): one register commit, no message stored again
        assert repo.stats().bytes_stored - before.bytes_stored < 2_000
        latest = await store.latest_snapshot(run_id="alt")
        assert dumped(latest.messages) == dumped(first.all_messages())
        with pytest.raises(StepStoreError, match="exists already"):
            await store.fork_run(first.run_id, "alt")
        with pytest.raises(StepStoreError, match="no complete snapshot"):
            await store.fork_run("never-ran", "alt2")

    run(scenario())


def test_run_ids_that_cannot_name_a_branch_are_refused(repo: Repo) -> None:
    store = StateVCSStepStore(repo)
    for bad in ["a..b", "x.lock", "with space", "tail/", "@{1}", "a/b"]:
        with pytest.raises(ValueError, match="cannot name a branch"):
            run(store.register_run(RunRecord(run_id=bad)))
    with pytest.raises(TypeError, match="run_id"):
        store.branch_of(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="repo"):
        StateVCSStepStore(str(repo.path))  # type: ignore[arg-type]
    assert repo.branches() == {}


def test_two_stores_on_one_repository_see_each_others_writes(repo: Repo) -> None:
    first, second = StateVCSStepStore(repo), StateVCSStepStore(repo)

    async def scenario() -> None:
        await first.register_run(RunRecord(run_id="r"))
        for n in range(6):
            store = first if n % 2 == 0 else second
            await store.append_event(
                StepEvent(run_id="r", kind="run_started", step_index=n, idempotency_key=f"k{n}")
            )
            await store.save_snapshot(
                ContinuableSnapshot(
                    run_id="r", step_index=n, messages=talk(n), idempotency_key=f"s{n}"
                )
            )
        # a key one store applied is suppressed on the other too
        await first.append_event(
            StepEvent(run_id="r", kind="run_failed", step_index=9, idempotency_key="k1")
        )
        await second.save_snapshot(
            ContinuableSnapshot(run_id="r", step_index=9, messages=talk(9), idempotency_key="s4")
        )
        for store in (first, second):
            events = await store.list_events(run_id="r")
            assert [e.step_index for e in events] == list(range(6))
            latest = await store.latest_snapshot(run_id="r")
            assert latest.step_index == 5 and dumped(latest.messages) == dumped(talk(5))

    run(scenario())


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(run_id=st.text(max_size=12))
def test_any_run_id_is_stored_or_refused_cleanly(repo: Repo, run_id: str) -> None:
    store = StateVCSStepStore(repo)
    before = repo.branches()
    try:
        run(store.register_run(RunRecord(run_id=run_id, agent_name="a")))
    except StepStoreError:
        assert repo.branches() == before
        return
    assert run(store.get_run(run_id=run_id)).agent_name == "a"
    run(store.save_snapshot(ContinuableSnapshot(run_id=run_id, step_index=1, messages=talk(1))))
    assert dumped(run(store.latest_snapshot(run_id=run_id)).messages) == dumped(talk(1))
