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

from .errors import (
    InvalidCheckpointConfig,
    LangGraphError,
    NotACheckpoint,
    ThreadExists,
    UnsafeValue,
)
from .names import decode as decode_thread_id
from .names import encode as encode_thread_id
from .saver import StateVCSSaver, UnknownStrategy

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
