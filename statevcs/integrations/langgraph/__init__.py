"""LangGraph integration: :class:`StateVCSSaver`, a checkpointer whose threads are branches.

>>> from statevcs import Repo
>>> from statevcs.integrations.langgraph import StateVCSSaver
>>> saver = StateVCSSaver(Repo.init("memory://"))

Pass it to ``graph.compile(checkpointer=saver)``. A thread is the branch ``threads/<thread>``,
a checkpoint a commit whose parent is its parent checkpoint; ``statevcs log --graph
threads/<thread>`` shows a conversation's history. One module per job:

* :mod:`~statevcs.integrations.langgraph.saver` -- :class:`StateVCSSaver` (LangGraph's
  ``BaseCheckpointSaver``, sync and async, plus ``copy_thread``, ``delete_for_runs``, ``prune``
  and ``get_delta_channel_history``);
* :mod:`~statevcs.integrations.langgraph.store` -- checkpoints to commits and back;
* :mod:`~statevcs.integrations.langgraph.codec` -- channel values, list items and writes to
  documents;
* :mod:`~statevcs.integrations.langgraph.names` -- thread ids and namespaces to ref names;
* :mod:`~statevcs.integrations.langgraph.errors` -- the errors it adds.
"""

from __future__ import annotations

from ...errors import require_module

# Without the langgraph extra, say which extra to install instead of a bare ModuleNotFoundError.
require_module("statevcs.integrations.langgraph", "langgraph", "langgraph")

from .errors import (  # noqa: E402
    InvalidCheckpointConfig,
    LangGraphError,
    NotACheckpoint,
    ThreadExists,
    UnsafeValue,
)
from .names import decode as decode_thread_id  # noqa: E402
from .names import encode as encode_thread_id  # noqa: E402
from .saver import StateVCSSaver, UnknownStrategy  # noqa: E402

__all__ = [
    "InvalidCheckpointConfig",
    "LangGraphError",
    "NotACheckpoint",
    "StateVCSSaver",
    "ThreadExists",
    "UnknownStrategy",
    "UnsafeValue",
    "decode_thread_id",
    "encode_thread_id",
]
