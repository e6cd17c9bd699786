"""The :class:`Snapshot` model, in a module of its own so that pydantic loads only when a
snapshot is built or checked (reading a log or a ref never needs it).

Import it as ``statevcs.Snapshot`` or ``statevcs.snapshot.Snapshot``; both name this class.
"""

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class Snapshot(BaseModel):
    """One version of an agent: its conversation, key-value state and other fields."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    kind: str = "snapshot"
    """Adapter kind that captured it, e.g. ``"dict"`` or ``"strands.agent"``."""
    messages: list[dict[str, Any]] = Field(default_factory=list)
    """The conversation; values that read back equal (:mod:`statevcs.documents`)."""
    state: dict[str, Any] = Field(default_factory=dict)
    """Key-value state; each value goes through the repository's serializer."""
    extras: dict[str, Any] = Field(default_factory=dict)
    """Other fields (system prompt, conversation-manager state, ...); held to the message rules."""


# Its public home: pickles, adapter registrations by name and reprs keep naming
# statevcs.snapshot.Snapshot, which resolves to this class (statevcs.snapshot.__getattr__).
Snapshot.__module__ = "statevcs.snapshot"

__all__ = ["Snapshot"]
