"""Real LangGraph graphs for the saver's tests, driven by a scripted chat model (no network)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any, TypedDict

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.tools import tool
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, StateGraph
from langgraph.graph.message import add_messages
from langgraph.graph.state import CompiledStateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from langgraph.types import Interrupt, interrupt


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
