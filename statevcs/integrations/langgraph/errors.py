"""The errors the LangGraph saver raises beyond statevcs's own tree."""

from __future__ import annotations

from ...errors import StateVCSError


class LangGraphError(StateVCSError):
    """A LangGraph checkpoint could not be stored or read as asked."""


class InvalidCheckpointConfig(LangGraphError, ValueError):
    """A ``RunnableConfig`` lacks what the call needs (``thread_id``, ``checkpoint_id``, ...).

    Also a ``ValueError``, the type LangGraph's own savers raise for a bad config.
    """


class ThreadExists(LangGraphError):
    """``copy_thread`` was asked to copy onto a thread that already has checkpoints."""


class NotACheckpoint(LangGraphError):
    """A commit on a thread's branch is not a LangGraph checkpoint (written by something else)."""


class UnsafeValue(LangGraphError):
    """A value is of a type the saver's serde may not load (loading could run code).

    Raised when such a value is read, and when one is put (before anything is written: it
    could not be read back). Allow the type with ``saver.with_allowlist([(module, name)])`` if
    the repository is trusted.
    """


__all__ = [
    "InvalidCheckpointConfig",
    "LangGraphError",
    "NotACheckpoint",
    "ThreadExists",
    "UnsafeValue",
]
