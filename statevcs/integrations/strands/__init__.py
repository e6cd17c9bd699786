"""Strands Agents integration: chunked, deduplicated, branchable homes for Strands snapshots.

Importing this package (statevcs does it for you the first time it meets a Strands object,
through the ``statevcs.adapters`` entry point) registers adapters, so ``repo.commit(agent)`` and
``repo.checkout(agent, "main~1")`` work on a live :class:`strands.Agent` (and ``BidiAgent``,
``Swarm``, ``Graph`` and ``strands.Snapshot``).

What a commit holds is exactly what ``agent.take_snapshot()`` captures -- messages, state,
conversation-manager state, interrupt state, system prompt and model state -- plus ``agent_id``
and ``name``:

* messages go into :attr:`statevcs.Snapshot.messages` (a prolly list: one object per message,
  shared between commits and branches; bytes such as images stay bytes);
* ``agent.state`` values go into :attr:`statevcs.Snapshot.state`, through the repository's
  serializer, minus the keys marked with :func:`statevcs.transient`;
* everything else goes into :attr:`statevcs.Snapshot.extras`.

One module per job:

* :mod:`~statevcs.integrations.strands.adapters` -- the agent, orchestrator and
  ``strands.Snapshot`` adapters (with incremental commits) and their registration;
* :mod:`~statevcs.integrations.strands.conversion` -- ``strands.Snapshot`` <-> statevcs
  ``Snapshot`` field mapping;
* :mod:`~statevcs.integrations.strands.hooks` -- :class:`AutoCommit` and the commit policy;
* :mod:`~statevcs.integrations.strands.session` -- :class:`StateVCSSessionManager`;
* :mod:`~statevcs.integrations.strands.testing` -- :class:`~.testing.ScriptedModel`, an offline
  Strands model for tests and examples (imported on demand, not from here).
"""

from __future__ import annotations

from ...errors import require_module

# Without the strands extra, say which extra to install instead of a bare ModuleNotFoundError.
require_module("statevcs.integrations.strands", "strands", "strands")

from ...tracking import TrackedDict, TrackedList, TrackedMessages  # noqa: E402
from ._common import (  # noqa: E402
    BIDI_SNAPSHOT_FIELDS,
    KIND_AGENT,
    KIND_GRAPH,
    KIND_MULTIAGENT,
    KIND_SWARM,
    SNAPSHOT_FIELDS,
)
from .adapters import (  # noqa: E402
    StrandsAgentAdapter,
    StrandsOrchestratorAdapter,
    StrandsSnapshotAdapter,
    agent_adapter,
)
from .conversion import from_strands_snapshot, to_strands_snapshot  # noqa: E402
from .hooks import AutoCommit, CommitOn  # noqa: E402
from .session import StateVCSSessionManager  # noqa: E402

__all__ = [
    "BIDI_SNAPSHOT_FIELDS",
    "KIND_AGENT",
    "KIND_GRAPH",
    "KIND_MULTIAGENT",
    "KIND_SWARM",
    "SNAPSHOT_FIELDS",
    "AutoCommit",
    "CommitOn",
    "StateVCSSessionManager",
    "StrandsAgentAdapter",
    "StrandsOrchestratorAdapter",
    "StrandsSnapshotAdapter",
    "TrackedDict",
    "TrackedList",
    "TrackedMessages",
    "agent_adapter",
    "from_strands_snapshot",
    "to_strands_snapshot",
]
