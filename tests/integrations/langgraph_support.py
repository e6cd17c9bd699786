"""Real LangGraph graphs for the saver's tests, driven by a scripted chat model (no network)."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import Annotated, Any, TypedDict

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Interrupt, interrupt

from statevcs.integrations.langgraph import StateVCSSaver


class ScriptedChatModel(BaseChatModel):
    """A chat model whose reply depends only on the conversation so far (deterministic).

    A user message mentioning a city asks the ``weather`` tool; a tool result is summed up;
    anything else is echoed. Reply ids are the conversation length, so two runs of one script
    produce equal messages.
    """

    @property
    def _llm_type(self) -> str:
        return "scripted"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChatModel:  # type: ignore[override]
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        last = messages[-1]
        reply_id = f"ai-{len(messages)}"
        if isinstance(last, ToolMessage):
            reply = AIMessage(content=f"Summary: {last.content}", id=reply_id)
        elif "weather in " in str(last.content):
            city = str(last.content).split("weather in ", 1)[1].strip(" ?")
            reply = AIMessage(
                content="",
                id=reply_id,
                tool_calls=[
                    {"name": "weather", "args": {"city": city}, "id": f"call-{len(messages)}"}
                ],
            )
        else:
            reply = AIMessage(content=f"echo: {last.content}", id=reply_id)
        return ChatResult(generations=[ChatGeneration(message=reply)])


@tool
def weather(city: str) -> str:
    """Return the weather in ``city``."""
    return f"sunny in {city}"


class ChatState(TypedDict, total=False):
    """A chat: messages plus a turn counter and an append-only list of notes."""

    messages: Annotated[list[AnyMessage], add_messages]
    turns: int
    notes: Annotated[list[str], lambda a, b: a + b]


def chat_graph(checkpointer: BaseCheckpointSaver[Any]) -> CompiledStateGraph[Any]:
    """An agent with a tool node: agent -> (tools -> agent)* -> end."""
    model = ScriptedChatModel().bind_tools([weather])

    def agent(state: ChatState) -> dict[str, Any]:
        reply = model.invoke(state["messages"])
        return {
            "messages": [reply],
            "turns": state.get("turns", 0) + 1,
            "notes": [f"agent saw {len(state['messages'])}"],
        }

    graph = StateGraph(ChatState)
    graph.add_node("agent", agent)
    graph.add_node("tools", ToolNode([weather]))
    graph.add_edge(START, "agent")
    graph.add_conditional_edges("agent", tools_condition)
    graph.add_edge("tools", "agent")
    return graph.compile(checkpointer=checkpointer)


class ApprovalState(TypedDict, total=False):
    """A request waiting for a human's answer."""

    request: str
    answer: str
    messages: Annotated[list[AnyMessage], add_messages]


def approval_graph(checkpointer: BaseCheckpointSaver[Any]) -> CompiledStateGraph[Any]:
    """draft -> ask (``interrupt()``) -> done."""

    def draft(state: ApprovalState) -> dict[str, Any]:
        return {"messages": [AIMessage(content=f"draft for {state['request']}", id="draft")]}

    def ask(state: ApprovalState) -> dict[str, Any]:
        answer = interrupt({"question": f"approve {state['request']}?"})
        return {"answer": answer}

    def done(state: ApprovalState) -> dict[str, Any]:
        return {"messages": [AIMessage(content=f"done: {state['answer']}", id="done")]}

    graph = StateGraph(ApprovalState)
    graph.add_node("draft", draft)
    graph.add_node("ask", ask)
    graph.add_node("done", done)
    graph.add_edge(START, "draft")
    graph.add_edge("draft", "ask")
    graph.add_edge("ask", "done")
    graph.add_edge("done", END)
    return graph.compile(checkpointer=checkpointer)


def nested_graph(checkpointer: BaseCheckpointSaver[Any]) -> CompiledStateGraph[Any]:
    """A parent whose ``review`` node is a subgraph that interrupts (its own namespace)."""

    def check(state: ApprovalState) -> dict[str, Any]:
        answer = interrupt({"question": "ok?"})
        return {"answer": answer, "messages": [AIMessage(content=f"checked {answer}", id="chk")]}

    inner = StateGraph(ApprovalState)
    inner.add_node("check", check)
    inner.add_edge(START, "check")
    inner.add_edge("check", END)

    def prepare(state: ApprovalState) -> dict[str, Any]:
        return {"messages": [AIMessage(content="prepared", id="prep")]}

    outer = StateGraph(ApprovalState)
    outer.add_node("prepare", prepare)
    outer.add_node("review", inner.compile())
    outer.add_edge(START, "prepare")
    outer.add_edge("prepare", "review")
    outer.add_edge("review", END)
    return outer.compile(checkpointer=checkpointer)


def plain(value: Any) -> Any:
    """``value`` with messages as comparable dicts (ids that LangGraph makes up dropped)."""
    if isinstance(value, BaseMessage):
        data = value.model_dump()
        if isinstance(value, ToolMessage) or str(data.get("id", "")).count("-") == 4:
            data.pop("id", None)  # uuid4s LangGraph assigns differ from run to run
        return data
    if isinstance(value, Interrupt):
        return {"interrupt": plain(value.value)}  # its id hashes a random checkpoint id
    if isinstance(value, dict):
        return {k: plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


def history_shape(app: CompiledStateGraph[Any], config: dict[str, Any]) -> list[Any]:
    """Everything ``get_state_history`` shows, minus ids that differ between savers."""
    rows = []
    for state in app.get_state_history(config):  # type: ignore[arg-type]
        rows.append(
            (
                plain(state.values),
                state.next,
                state.metadata.get("source") if state.metadata else None,
                state.metadata.get("step") if state.metadata else None,
                state.parent_config is not None,
                [(t.name, plain(t.interrupts)) for t in state.tasks],
            )
        )
    return rows


__all__ = [
    "ApprovalState",
    "ChatState",
    "ScriptedChatModel",
    "approval_graph",
    "chat_graph",
    "history_shape",
    "nested_graph",
    "plain",
    "weather",
]


def exact(a: Any, b: Any) -> bool:
    """Equal with the same types everywhere and dict keys in the same order."""
    if type(a) is not type(b):
        return False
    if isinstance(a, BaseMessage):
        return exact(a.__dict__, b.__dict__) and exact(a.__pydantic_extra__, b.__pydantic_extra__)
    if isinstance(a, dict):
        return list(a) == list(b) and all(exact(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple):
        return len(a) == len(b) and all(exact(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def checkpoint(checkpoint_id: str, values: dict[str, Any], version: int) -> Any:
    """A checkpoint holding ``values``, every channel at ``version`` (for direct saver calls)."""
    return {
        "v": 1,
        "id": checkpoint_id,
        "ts": "2025-01-01T00:00:00+00:00",
        "channel_values": values,
        "channel_versions": dict.fromkeys(values, version),
        "versions_seen": {},
        "updated_channels": None,
    }


def thread(thread_id: str = "t") -> Any:
    """The config of thread ``thread_id``'s root namespace."""
    return {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}


def checkpoint_uuid(n: int) -> str:
    """A checkpoint id shaped and ordered like LangGraph's uuid6 ids (by ``n``)."""
    return f"1ef{n:05d}-0000-6000-8000-000000000000"


def config_of(thread_id: str, ns: str = "", checkpoint_id: str | None = None) -> Any:
    """The config of a namespace of ``thread_id``, at ``checkpoint_id`` if given."""
    configurable: dict[str, Any] = {"thread_id": thread_id, "checkpoint_ns": ns}
    if checkpoint_id is not None:
        configurable["checkpoint_id"] = checkpoint_id
    return {"configurable": configurable}


def tuple_shape(result: Any) -> Any:
    """What a checkpoint tuple says that two savers must agree on (``None`` stays ``None``)."""
    if result is None:
        return None
    return (
        result.config,
        result.checkpoint["id"],
        result.checkpoint["channel_values"],
        result.metadata,
        result.parent_config,
        result.pending_writes,
    )


Place = tuple[str, str]
"""A namespace: ``(thread_id, checkpoint_ns)``."""


class Differential:
    """The same direct saver calls on ``StateVCSSaver`` (two handles on one repository),
    ``InMemorySaver`` and ``SqliteSaver``, and every answer compared.

    Channel values are a function of their version (``values_of``): ``InMemorySaver`` keeps
    one blob per channel version of a namespace, so a version must mean one value.
    """

    PLACES: tuple[Place, ...] = (("t", ""), ("t", "sub"), ("u", ""))

    def __init__(self, repo: Any) -> None:
        self.repo = repo
        self.ours = StateVCSSaver(repo)
        self.other = StateVCSSaver(repo)
        self.memory = InMemorySaver()
        self.sqlite = SqliteSaver(sqlite3.connect(":memory:", check_same_thread=False))
        self.parents: dict[Place, dict[str, str | None]] = {p: {} for p in self.PLACES}
        self.versions: dict[Place, dict[str, int]] = {p: {} for p in self.PLACES}
        """The version of each checkpoint's channels as last put."""
        self.n_versions: dict[Place, dict[str, int]] = {p: {} for p in self.PLACES}
        """The version of each checkpoint's channel ``n`` (kept from its parent, or not)."""
        self.ids: list[tuple[Place, str]] = []

    @staticmethod
    def values_of(version: int) -> dict[str, Any]:
        """The channel values at ``version``."""
        return {"messages": [f"m{i}" for i in range(version % 7)], "n": version}

    def put(
        self,
        place: Place,
        parent: str | None,
        checkpoint_id: str,
        version: int,
        *,
        by_other: bool = False,
        n_version: int | None = None,
    ) -> None:
        """Put ``checkpoint_id`` under ``parent`` on every saver (``n_version``: channel
        ``n``'s older version, left out of ``new_versions`` as LangGraph leaves a channel
        that did not change)."""
        values = self.values_of(version)
        versions = dict.fromkeys(values, version)
        new_versions = dict(versions)
        if n_version is not None and n_version != version:
            versions["n"] = n_version
            values["n"] = self.values_of(n_version)["n"]
            del new_versions["n"]
        stored = {**checkpoint(checkpoint_id, values, version), "channel_versions": versions}
        metadata = {"source": ("loop", "input")[version % 2], "step": version}
        config = config_of(*place, parent)
        ours = self.other if by_other else self.ours
        for saver in (ours, self.memory, self.sqlite):
            saver.put(config, stored, metadata, new_versions)
        self.parents[place][checkpoint_id] = parent
        self.versions[place][checkpoint_id] = version
        self.n_versions[place][checkpoint_id] = versions["n"]
        if (place, checkpoint_id) not in self.ids:
            self.ids.append((place, checkpoint_id))

    def put_writes(
        self, place: Place, checkpoint_id: str, writes: list[tuple[str, Any]], task: str
    ) -> None:
        """Pending writes of ``task`` for a checkpoint, on every saver."""
        for saver in (self.ours, self.memory, self.sqlite):
            saver.put_writes(config_of(*place, checkpoint_id), writes, task)

    def acyclic(self, place: Place, checkpoint_id: str) -> bool:
        """Whether the parent chain above a checkpoint ends (``InMemorySaver`` walks it)."""
        seen: set[str] = set()
        current: str | None = checkpoint_id
        while current is not None:
            if current in seen:
                return False
            seen.add(current)
            current = self.parents[place].get(current)
        return True

    def check(self, saver: Any, *, deep: bool = True) -> None:
        """Compare ``saver``'s answers with ``InMemorySaver``'s (and list order across
        namespaces with ``SqliteSaver``'s); ``deep=False``: the lists and the latest only."""
        memory = self.memory
        for place in self.PLACES:
            config = config_of(*place)
            listed = [tuple_shape(t) for t in saver.list(config)]
            assert listed == [tuple_shape(t) for t in memory.list(config)]
            assert tuple_shape(saver.get_tuple(config)) == tuple_shape(memory.get_tuple(config))
            if not deep:
                continue
            ids = [row[1] for row in listed]
            pages: list[dict[str, Any]] = [{"limit": 1}, {"limit": 2}, {"filter": {"step": 1}}]
            pages += [{"filter": {"source": "loop"}, "limit": 2}]
            pages += [{"before": config_of(*place, i), "limit": 2} for i in ids[1::3]]
            for kwargs in pages:
                got = [tuple_shape(t) for t in saver.list(config, **kwargs)]
                assert got == [tuple_shape(t) for t in memory.list(config, **kwargs)], kwargs
            for checkpoint_id in self.versions[place]:
                at = config_of(*place, checkpoint_id)
                assert tuple_shape(saver.get_tuple(at)) == tuple_shape(memory.get_tuple(at))
                if hasattr(memory, "get_delta_channel_history") and self.acyclic(
                    place, checkpoint_id
                ):
                    channels = ["messages", "n", "__error__"]
                    assert saver.get_delta_channel_history(
                        config=at, channels=channels
                    ) == memory.get_delta_channel_history(config=at, channels=channels), at
        everything = sorted((cid for _, cid in self.ids), reverse=True)
        for config in ({"configurable": {"thread_id": "t"}}, None):
            pages: list[dict[str, Any]] = [{"limit": 3}]
            if deep:
                pages += [{}, {"limit": 1}, {"filter": {"source": "input"}, "limit": 2}]
                pages += [
                    {"before": {"configurable": {"checkpoint_id": i}}, "limit": 3}
                    for i in everything[::4]
                ]
            for kwargs in pages:
                got = list(saver.list(config, **kwargs))
                # Newest first by id across namespaces and threads, as SqliteSaver lists.
                want = [t.config for t in self.sqlite.list(config, **kwargs)]
                assert [t.config for t in got] == want, kwargs
                for t in got:
                    assert tuple_shape(t) == tuple_shape(memory.get_tuple(t.config))
