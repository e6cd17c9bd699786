"""The LangGraph checkpointer on object storage: the same conformance suite and a real graph on
an ``s3://`` repository (a SeaweedFS server), with no change to the saver."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Annotated, Any, TypedDict

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import (
    BASE_CAPABILITIES,
    EXTENDED_CAPABILITIES,
)
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages

import statevcs
from statevcs.integrations.langgraph import StateVCSSaver


def test_conformance_full_on_s3(s3_url: str) -> None:
    opened: list[statevcs.Repo] = []

    @checkpointer_test(name="StateVCSSaver[s3]")
    async def factory() -> AsyncIterator[StateVCSSaver]:
        # One fresh repository per capability run: a new prefix beside the fixture's.
        url = s3_url.replace("/t/", f"/t/{uuid.uuid4().hex[:8]}-", 1)
        repo = statevcs.Repo.init(url)
        opened.append(repo)
        yield StateVCSSaver(repo)
        repo.close()

    report = asyncio.run(validate(factory))
    failures = {name: r.failures for name, r in report.results.items() if r.failures}
    assert not failures
    for capability in BASE_CAPABILITIES | EXTENDED_CAPABILITIES:
        result = report.results[capability.value]
        assert result.detected and result.passed is True, f"{capability.value}: {result}"
        assert result.tests_skipped == 0 and result.tests_passed > 0
    assert report.conformance_level() == "FULL"
    assert len(opened) == 8


class _Chat(TypedDict):
    messages: Annotated[list[AnyMessage], add_messages]


def _reply(state: _Chat) -> dict[str, Any]:
    return {"messages": [AIMessage(f"answer {len(state['messages'])}")]}


def _graph(checkpointer: Any) -> Any:
    builder = StateGraph(_Chat)
    builder.add_node("reply", _reply)
    builder.add_edge(START, "reply")
    builder.add_edge("reply", END)
    return builder.compile(checkpointer=checkpointer)


def _texts(graph: Any, config: Any) -> list[list[str]]:
    return [
        [str(m.content) for m in snapshot.values.get("messages", [])]
        for snapshot in graph.get_state_history(config)
    ]


def test_a_graph_on_s3_matches_in_memory_saver_and_resumes_on_another_handle(
    s3_url: str,
) -> None:
    config = {"configurable": {"thread_id": "trip"}}
    reference = _graph(InMemorySaver())
    with statevcs.Repo.init(s3_url) as repo:
        ours = _graph(StateVCSSaver(repo))
        for question in ["Lisbon?", "Museums?", "Food?"]:
            for graph in (reference, ours):
                graph.invoke({"messages": [HumanMessage(question)]}, config)
        assert _texts(ours, config) == _texts(reference, config)
    # Another handle (another host, as far as the store knows) resumes the thread.
    with statevcs.Repo.open(s3_url) as again:
        resumed = _graph(StateVCSSaver(again))
        resumed.invoke({"messages": [HumanMessage("Trams?")]}, config)
        reference.invoke({"messages": [HumanMessage("Trams?")]}, config)
        assert _texts(resumed, config) == _texts(reference, config)
        assert again.fsck().problems == ()
