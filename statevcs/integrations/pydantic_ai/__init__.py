"""Pydantic AI integration: message histories as commits, runs on branches, a step store.

Importing this package (statevcs does it for you the first time it meets a list of Pydantic AI
messages, through the ``statevcs.adapters`` entry point) registers an adapter for lists, so
``repo.commit(history)`` and ``repo.checkout(history, "main~1")`` work on a
``list[ModelMessage]``:

* :mod:`~statevcs.integrations.pydantic_ai.messages` -- the adapter (each message stored once,
  in ``ModelMessagesTypeAdapter``'s JSON form) and :class:`MessageHistory`, a list the
  repository keeps attached to its branch;
* :mod:`~statevcs.integrations.pydantic_ai.history` -- :class:`AgentHistory`: ``run`` /
  ``run_sync`` / ``run_stream`` continuing from a branch and committing each run, ``messages``
  at any revision, ``fork``, ``restore``;
* :mod:`~statevcs.integrations.pydantic_ai.steps` -- :class:`StateVCSStepStore`, the
  ``pydantic-ai-harness`` ``StepStore`` (runs as branches, snapshots as commits, ``fork_run``
  as a branch; imported on demand, it needs ``pydantic-ai-harness``).
"""

from __future__ import annotations

from ...errors import require_module

# Without the extra, say which extra to install instead of a bare ModuleNotFoundError.
require_module("statevcs.integrations.pydantic_ai", "pydantic_ai", "pydantic-ai")

from .history import AgentHistory  # noqa: E402
from .messages import (  # noqa: E402
    KIND,
    MessageHistory,
    MessageHistoryAdapter,
    from_records,
    to_records,
)

__all__ = [
    "KIND",
    "AgentHistory",
    "MessageHistory",
    "MessageHistoryAdapter",
    "from_records",
    "to_records",
]
