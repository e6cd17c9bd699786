""":class:`HistoryTools`: a LangGraph thread's own history as LangChain tools its model calls.

``HistoryTools(saver).tools`` are ``checkpoint``, ``list_checkpoints``, ``rollback``,
``start_branch`` and ``diff`` (``StructuredTool`` objects for a ``ToolNode`` or ``bind_tools``).
Reads answer at once. Writes are queued per thread and applied after the graph run, by
:meth:`HistoryTools.invoke` / :meth:`HistoryTools.ainvoke` (which wrap the compiled graph's own)
or by :meth:`HistoryTools.apply` once a run you drive yourself (``stream``) has ended: never
while the graph is running. See ``docs/history-tools.md``.
"""

from __future__ import annotations

import logging
import threading
import time
from typing import Annotated, Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, InjectedToolCallId, StructuredTool
from langgraph.checkpoint.base import create_checkpoint

from ...errors import StateVCSError
from ...hashing import from_hex
from ...refs import short_name, tag_ref
from .. import history
from ..history import HistoryToolError, Pending, Request
from .names import ThreadKey
from .saver import StateVCSSaver

logger = logging.getLogger(__name__)

_WAIT_SECONDS = 5.0
"""How long a tool waits for LangGraph to store the checkpoint its step started from."""

STATEVCS_KEY = "statevcs"
"""Checkpoint metadata key holding a rollback's or checkpoint's record (who asked, why)."""


class HistoryTools:
    """History tools over the threads of ``saver``, and the wrapper that applies their writes.

    ``HEAD`` in a tool's revision is the tip of the thread's branch ``threads/<thread>`` (its
    latest checkpoint, root namespace). After a run, for the run's thread: each ``checkpoint``
    becomes a copy of the latest checkpoint whose metadata carries the label (tagged
    ``checkpoints/threads/<thread>/<n>``); each ``start_branch(name)`` copies the thread to the
    thread ``name`` (``saver.copy_thread``); a ``rollback`` tags the tip
    ``abandoned/threads/<thread>/<n>`` and puts a copy of the target checkpoint as the thread's
    latest (its parent: the target; its metadata ``statevcs``: who asked, why, from where), as
    LangGraph's ``update_state`` does. A run that raises drops its thread's requests.

        history = HistoryTools(saver)
        app = build_graph(tools=[*my_tools, *history.tools]).compile(checkpointer=saver)
        history.invoke(app, {"messages": [...]}, {"configurable": {"thread_id": "t"}})
    """

    def __init__(self, saver: StateVCSSaver, *, max_output: int = history.MAX_OUTPUT) -> None:
        """Serve the threads of ``saver``; each answer is at most ``max_output`` characters."""
        if not isinstance(saver, StateVCSSaver):
            raise TypeError(f"saver must be a StateVCSSaver, got {type(saver).__name__}")
        if not isinstance(max_output, int) or isinstance(max_output, bool) or max_output < 200:
            raise TypeError("max_output must be an int of at least 200")
        self.saver = saver
        self.repo = saver.repo
        self.max_output = max_output
        self._pending: dict[str, Pending] = {}
        self._lock = threading.Lock()
        self.tools: list[BaseTool] = self._build()
        """The five tools, for a ``ToolNode`` and the chat model's ``bind_tools``."""

    # --- running a graph ------------------------------------------------------------

    def invoke(self, graph: Any, input: Any, config: RunnableConfig, **kwargs: Any) -> Any:
        """``graph.invoke(input, config, **kwargs)``, then apply the thread's queued writes."""
        thread = _thread_id(config)
        try:
            result = graph.invoke(input, config, **kwargs)
        except BaseException:
            self._drop(thread)
            raise
        self.apply(config)
        return result

    async def ainvoke(self, graph: Any, input: Any, config: RunnableConfig, **kwargs: Any) -> Any:
        """``await graph.ainvoke(input, config, **kwargs)``, then apply the queued writes."""
        thread = _thread_id(config)
        try:
            result = await graph.ainvoke(input, config, **kwargs)
        except BaseException:
            self._drop(thread)
            raise
        self.apply(config)
        return result

    def pending(self, config: RunnableConfig) -> list[Request]:
        """The writes queued for the thread ``config`` names."""
        with self._lock:
            found = self._pending.get(_thread_id(config))
            return list(found.requests) if found is not None else []

    def _drop(self, thread: str) -> None:
        with self._lock:
            dropped = self._pending.pop(thread, None)
        if dropped is not None and dropped.requests:
            logger.warning(
                "the run failed: %d history request(s) dropped, nothing written",
                len(dropped.requests),
            )

    def apply(self, config: RunnableConfig) -> None:
        """Apply the writes queued for the thread ``config`` names; call once its run ended."""
        thread = _thread_id(config)
        with self._lock:
            found = self._pending.pop(thread, None)
        if found is None:
            return
        key = ThreadKey.of(thread, "")
        for request in found.requests:
            if request.kind == "checkpoint":
                self._copy(
                    thread,
                    self._checkpoint_id(self._tip_commit(key)),
                    {"event": "checkpoint", "label": request.text, **_by(request)},
                )
                name = history.next_tag(
                    self.repo, history.CHECKPOINTS_PREFIX, short_name(key.branch)
                )
                self.repo.tag(name, self._tip_commit(key))
            elif request.kind == "branch":
                try:
                    self.saver.copy_thread(thread, request.text)
                except StateVCSError as exc:  # created by someone else since the request
                    logger.warning("start_branch %r not applied: %s", request.text, exc)
        rollback = next((r for r in found.requests if r.kind == "rollback"), None)
        if rollback is not None:
            self._rollback(thread, key, rollback)

    def _tip_commit(self, key: ThreadKey) -> str:
        tip = self.repo.refs.get(key.branch)
        if tip is None:
            raise HistoryToolError(f"thread {key.thread_id!r} has no checkpoints")
        return tip.hex()

    def _checkpoint_id(self, commit_id: str) -> str:
        info = self.repo.get_commit(commit_id).metadata.get("langgraph")
        found = info.get("checkpoint_id") if isinstance(info, dict) else None
        if not isinstance(found, str):
            raise HistoryToolError(f"commit {commit_id[:12]} is not a LangGraph checkpoint")
        return found

    def _rollback(self, thread: str, key: ThreadKey, request: Request) -> None:
        repo = self.repo
        tip = self._tip_commit(key)
        abandoned = history.next_tag(repo, history.ABANDONED_PREFIX, short_name(key.branch))
        target_id = self._checkpoint_id(request.target)
        # The saver keeps the old line too (a fork's leaf ref); the tag gives it a stable name.
        repo.refs.set(tag_ref(abandoned), from_hex(tip), expected=None, message="rollback")
        try:
            self._copy(
                thread,
                target_id,
                history.record(request, abandoned=abandoned, abandoned_commit=tip),
            )
        except BaseException:
            repo.refs.set(
                tag_ref(abandoned), None, expected=from_hex(tip), message="rollback failed"
            )
            raise

    def _copy(self, thread: str, checkpoint_id: str, note: dict[str, Any]) -> RunnableConfig:
        """Put a copy of a checkpoint as the thread's latest, its child, with ``note`` recorded."""
        config: RunnableConfig = {
            "configurable": {
                "thread_id": thread,
                "checkpoint_ns": "",
                "checkpoint_id": checkpoint_id,
            }
        }
        saved = self.saver.get_tuple(config)
        if saved is None:
            raise HistoryToolError(f"checkpoint {checkpoint_id} is not in thread {thread!r}")
        step = saved.metadata.get("step", -1)
        metadata: dict[str, Any] = {
            "source": "update",
            "step": step + 1,
            "parents": saved.metadata.get("parents", {}),
            STATEVCS_KEY: note,
        }
        copied = create_checkpoint(saved.checkpoint, None, step)
        return self.saver.put(saved.config, copied, metadata, {})  # type: ignore[arg-type]

    # --- the tools ------------------------------------------------------------------

    def _queue(self, thread: str, request: Request) -> str:
        with self._lock:
            self._pending.setdefault(thread, Pending()).add(request)
        return history.scheduled(request, "run")

    def _branch(self, config: RunnableConfig) -> tuple[str, str, str | None]:
        """The thread, its branch, and ``HEAD``: the commit of the checkpoint the step began at.

        LangGraph may still be storing that checkpoint in the background
        (``durability="async"``): wait for it briefly rather than read an older tip.
        """
        thread = _thread_id(config)
        branch = ThreadKey.of(thread, "").branch
        configurable = config.get("configurable") or {}
        started = (configurable.get("checkpoint_map") or {}).get("")
        if not isinstance(started, str):
            return thread, branch, None  # called outside a graph run: HEAD is the tip
        deadline = time.monotonic() + _WAIT_SECONDS
        while True:
            tip = self.repo.refs.get(branch)
            if tip is not None:
                info = self.repo.get_commit(tip.hex()).metadata.get("langgraph")
                if isinstance(info, dict) and info.get("checkpoint_id") == started:
                    return thread, branch, tip.hex()
            if time.monotonic() > deadline:
                raise HistoryToolError(
                    "the checkpoint this step started from is not stored yet (is the graph "
                    "running with durability='exit'?); run it with durability='sync' or 'async'"
                )
            time.sleep(0.005)

    def _build(self) -> list[BaseTool]:
        chars = self.max_output

        def checkpoint(
            message: str, config: RunnableConfig, tool_call_id: Annotated[str, InjectedToolCallId]
        ) -> str:
            def body() -> str:
                label = history.check_text(message, "message")
                thread = _thread_id(config)
                who = _who(thread, "checkpoint", tool_call_id)
                return self._queue(thread, Request("checkpoint", label, who))

            return history.answer(body, chars)

        def list_checkpoints(config: RunnableConfig, limit: int = 10) -> str:
            def body() -> str:
                _thread, ref, head = self._branch(config)
                return history.list_text(self.repo, ref, limit, head)

            return history.answer(body, chars)

        def rollback(
            revision: str,
            reason: str,
            config: RunnableConfig,
            tool_call_id: Annotated[str, InjectedToolCallId],
        ) -> str:
            def body() -> str:
                why = history.check_text(reason, "reason")
                thread, ref, head = self._branch(config)
                target = history.resolve(self.repo, ref, revision, head)
                info = target.metadata.get("langgraph")
                checkpoint_id = info.get("checkpoint_id") if isinstance(info, dict) else None
                found = (
                    self.saver.get_tuple(_config(thread, checkpoint_id))
                    if isinstance(checkpoint_id, str)
                    else None
                )
                if found is None:
                    raise HistoryToolError(
                        f"{history.escape(revision)!r} ({target.short_id}) is not a checkpoint of "
                        "this thread; list_checkpoints shows the ones you can name"
                    )
                who = _who(thread, "rollback", tool_call_id)
                request = Request("rollback", why, who, revision=revision, target=target.id)
                return self._queue(thread, request)

            return history.answer(body, chars)

        def start_branch(
            name: str, config: RunnableConfig, tool_call_id: Annotated[str, InjectedToolCallId]
        ) -> str:
            def body() -> str:
                checked = history.check_branch_name(name)
                thread = _thread_id(config)
                ThreadKey.of(checked, "")  # refuses names too long to be a thread
                if self.saver.get_tuple({"configurable": {"thread_id": checked}}) is not None:
                    raise HistoryToolError(f"thread {checked!r} already exists; pick another name")
                who = _who(thread, "start_branch", tool_call_id)
                return self._queue(thread, Request("branch", checked, who))

            return history.answer(body, chars)

        def diff(a: str, b: str, config: RunnableConfig) -> str:
            def body() -> str:
                _thread, ref, head = self._branch(config)
                return history.diff_text(self.repo, ref, a, b, head)

            return history.answer(body, chars)

        tools = [
            StructuredTool.from_function(
                checkpoint, name="checkpoint", description=history.TOOL_DOCS["checkpoint"]
            ),
            StructuredTool.from_function(
                list_checkpoints,
                name="list_checkpoints",
                description=history.TOOL_DOCS["list_checkpoints"],
            ),
            StructuredTool.from_function(
                rollback, name="rollback", description=history.TOOL_DOCS["rollback"]
            ),
            StructuredTool.from_function(
                start_branch, name="start_branch", description=history.TOOL_DOCS["start_branch"]
            ),
            StructuredTool.from_function(diff, name="diff", description=history.TOOL_DOCS["diff"]),
        ]
        return list(tools)


def _thread_id(config: object) -> str:
    configurable = config.get("configurable") if isinstance(config, dict) else None
    thread = configurable.get("thread_id") if isinstance(configurable, dict) else None
    if not isinstance(thread, str):
        raise HistoryToolError(
            "the run's config names no thread: pass {'configurable': {'thread_id': '...'}}"
        )
    return thread


def _config(thread: str, checkpoint_id: str) -> RunnableConfig:
    return {
        "configurable": {"thread_id": thread, "checkpoint_ns": "", "checkpoint_id": checkpoint_id}
    }


def _who(thread: str, tool_name: str, tool_call_id: str) -> dict[str, Any]:
    return {"by": "model", "tool": tool_name, "tool_call_id": tool_call_id, "thread_id": thread}


def _by(request: Request) -> dict[str, Any]:
    return {"requested_by": dict(request.requested_by)}


__all__ = ["STATEVCS_KEY", "HistoryTools"]
