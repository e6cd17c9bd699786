"""Real graphs on StateVCSSaver behave exactly as on LangGraph's InMemorySaver, side by side."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from langchain_core.messages import HumanMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.types import Command

import statevcs
from statevcs.integrations.langgraph import StateVCSSaver

from .langgraph_support import (
    approval_graph,
    chat_graph,
    history_shape,
    nested_graph,
    plain,
)


@pytest.fixture(params=["sqlite", "memory"])
def repo(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[statevcs.Repo]:
    url = str(tmp_path / "repo") if request.param == "sqlite" else "memory://"
    with statevcs.Repo.init(url) as opened:
        yield opened


def _both(repo: statevcs.Repo, run: Callable[[Any], Any]) -> tuple[Any, Any]:
    """Run one script against InMemorySaver and against StateVCSSaver; return both results."""
    return run(InMemorySaver()), run(StateVCSSaver(repo))


def _ask(text: str, index: int) -> dict[str, Any]:
    return {"messages": [HumanMessage(content=text, id=f"user-{index}")]}


def test_chat_with_tools_history_time_travel_and_fork(repo: statevcs.Repo) -> None:
    def run(saver: Any) -> dict[str, Any]:
        app = chat_graph(saver)
        config = {"configurable": {"thread_id": "chat"}}
        for index, text in enumerate(["hello", "weather in Lisbon?", "thanks", "weather in Porto"]):
            app.invoke(_ask(text, index), config)
        history = list(app.get_state_history(config))
        before_porto = next(s for s in history if s.metadata["source"] == "input")
        replayed = app.invoke(None, before_porto.config)
        forked = app.update_state(history[5].config, {"turns": 100})
        after_fork = app.invoke(_ask("weather in Faro", 9), forked)
        return {
            "shape": history_shape(app, config),
            "replayed": plain(replayed),
            "forked": plain(after_fork),
            "latest": plain(app.get_state(config).values),
        }

    theirs, ours = _both(repo, run)
    assert ours == theirs
    assert len(ours["shape"]) > 20
    assert ours["latest"]["turns"] == 102
    assert any(m.get("type") == "tool" for m in ours["latest"]["messages"])


def test_interrupt_and_resume_with_command(repo: statevcs.Repo) -> None:
    def run(saver: Any) -> dict[str, Any]:
        app = approval_graph(saver)
        config = {"configurable": {"thread_id": "approval"}}
        first = app.invoke({"request": "a refund"}, config)
        waiting = app.get_state(config)
        final = app.invoke(Command(resume="yes"), config)
        return {
            "first": plain(first),
            "next": waiting.next,
            "interrupts": plain([t.interrupts for t in waiting.tasks]),
            "final": plain(final),
            "shape": history_shape(app, config),
        }

    theirs, ours = _both(repo, run)
    assert ours == theirs
    assert ours["next"] == ("ask",)
    assert ours["interrupts"] == [[{"interrupt": {"question": "approve a refund?"}}]]
    assert ours["final"]["answer"] == "yes"


def test_subgraph_checkpoints_keep_their_namespace(repo: statevcs.Repo) -> None:
    def run(saver: Any) -> dict[str, Any]:
        app = nested_graph(saver)
        config = {"configurable": {"thread_id": "nested"}}
        app.invoke({"request": "x"}, config)
        inner = app.get_state(config, subgraphs=True).tasks[0].state
        final = app.invoke(Command(resume="fine"), config)
        namespaces = sorted(
            {t.config["configurable"]["checkpoint_ns"].split(":")[0] for t in saver.list(config)}
        )
        return {
            "inner": plain(inner.values),
            "final": plain(final),
            "namespaces": namespaces,
            "shape": history_shape(app, config),
        }

    theirs, ours = _both(repo, run)
    assert ours == theirs
    assert ours["namespaces"] == ["", "review"]
    assert any(b.startswith("threads/nested.ns-review") for b in repo.branches())


def test_a_second_process_reads_the_thread(tmp_path: Path) -> None:
    path = tmp_path / "repo"
    with StateVCSSaver.from_path(path) as saver:
        app = chat_graph(saver)
        config = {"configurable": {"thread_id": "shared"}}
        app.invoke(_ask("weather in Lisbon?", 0), config)
        expected = plain(app.get_state(config).values)
    script = textwrap.dedent(
        f"""
        import json, sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[2])!r})
        from tests.integrations.langgraph_support import chat_graph, plain
        from statevcs.integrations.langgraph import StateVCSSaver
        with StateVCSSaver.from_path({str(path)!r}) as saver:
            app = chat_graph(saver)
            config = {{"configurable": {{"thread_id": "shared"}}}}
            values = plain(app.get_state(config).values)
            ask = {{"role": "user", "content": "thanks", "id": "u2"}}
            app.invoke({{"messages": [ask]}}, config)
            print(json.dumps({{"values": values, "turns": app.get_state(config).values["turns"]}}))
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    read = json.loads(done.stdout)
    assert read["values"] == json.loads(json.dumps(expected))
    assert read["turns"] == 3
    with StateVCSSaver.from_path(path) as saver:
        app = chat_graph(saver)
        latest = app.get_state({"configurable": {"thread_id": "shared"}}).values
        assert latest["messages"][-1].content == "echo: thanks"


def test_async_graph_matches_sync(repo: statevcs.Repo) -> None:
    saver = StateVCSSaver(repo)
    app = chat_graph(saver)
    config = {"configurable": {"thread_id": "async"}}

    async def run() -> list[Any]:
        await app.ainvoke(_ask("weather in Lisbon?", 0), config)
        return [s async for s in app.aget_state_history(config)]

    history = asyncio.run(run())
    memory_app = chat_graph(InMemorySaver())
    memory_app.invoke(_ask("weather in Lisbon?", 0), config)
    assert [plain(s.values) for s in history] == [
        plain(s.values) for s in memory_app.get_state_history(config)
    ]
