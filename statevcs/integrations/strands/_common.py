"""Constants shared by the Strands adapters, conversion and hooks (snapshot kinds and fields)."""

from __future__ import annotations

KIND_AGENT = "strands.agent"
"""Snapshot kind of a Strands ``Agent``/``BidiAgent`` and of an agent-scope ``strands.Snapshot``."""
KIND_SWARM = "strands.swarm"
"""Snapshot kind of a Strands ``Swarm``: orchestrator state plus every node agent."""
KIND_GRAPH = "strands.graph"
"""Snapshot kind of a Strands ``Graph``: orchestrator state plus every node agent."""
KIND_MULTIAGENT = "strands.multiagent"
"""Snapshot kind of another ``MultiAgentBase`` orchestrator, or of a multiAgent-scope snapshot."""

SNAPSHOT_FIELDS: tuple[str, ...] = (
    "messages",
    "state",
    "conversation_manager_state",
    "interrupt_state",
    "system_prompt",
    "model_state",
)
"""The fields ``Agent.take_snapshot`` can capture, all of which a commit keeps."""
BIDI_SNAPSHOT_FIELDS: tuple[str, ...] = ("messages", "state", "system_prompt")
"""The subset a ``BidiAgent`` supports."""

SCHEMA_VERSION = "1.0"
"""The ``strands.Snapshot`` schema version written when a commit does not record one."""
FIELDS_KEY = "fields"
"""Extras key: the snapshot fields an agent commit captured."""
NODES_KEY = "nodes"
"""Extras key of an orchestrator commit: which message slice and state keys belong to each node."""
ORCHESTRATORS_KEY = "orchestrators"
"""Extras key of an orchestrator commit: each (nested) orchestrator's id and serialized state."""

__all__ = [
    "BIDI_SNAPSHOT_FIELDS",
    "FIELDS_KEY",
    "KIND_AGENT",
    "KIND_GRAPH",
    "KIND_MULTIAGENT",
    "KIND_SWARM",
    "NODES_KEY",
    "ORCHESTRATORS_KEY",
    "SCHEMA_VERSION",
    "SNAPSHOT_FIELDS",
]
