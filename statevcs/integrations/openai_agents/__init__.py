"""OpenAI Agents SDK integration: a ``Session`` whose every change is a statevcs commit.

* :mod:`~statevcs.integrations.openai_agents.session` -- :class:`StateVCSSession`, the SDK's
  ``Session`` protocol plus the branch verbs of ``AdvancedSQLiteSession``, ``restore`` and
  ``fork``;
* :mod:`~statevcs.integrations.openai_agents.testing` -- :class:`~.testing.ScriptedModel`, an
  offline model for tests and examples (imported on demand, not from here).
"""

from __future__ import annotations

from ...errors import require_module

# Without the extra, say which extra to install instead of a bare ModuleNotFoundError.
require_module("statevcs.integrations.openai_agents", "agents", "openai-agents")

from .session import (  # noqa: E402
    BRANCH_SEPARATOR,
    KIND,
    MAIN,
    SessionBranchError,
    StateVCSSession,
)

__all__ = ["BRANCH_SEPARATOR", "KIND", "MAIN", "SessionBranchError", "StateVCSSession"]
