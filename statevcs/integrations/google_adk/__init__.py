"""Google ADK integration: a ``BaseSessionService`` whose every appended event is a commit.

* :mod:`~statevcs.integrations.google_adk.service` -- :class:`StateVCSSessionService`: ADK's
  session service contract (app/user/session state prefixes, ``Runner.rewind_async``) on
  statevcs branches, plus ``fork_session`` at any event, sharing every earlier event.
* :mod:`~statevcs.integrations.google_adk.events` -- an event's stored form, and validating
  many stored events at once, exactly.
"""

from __future__ import annotations

from ...errors import require_module

# Without the extra, say which extra to install instead of a bare ModuleNotFoundError.
require_module("statevcs.integrations.google_adk", "google.adk", "google-adk")

from .service import KIND, SessionNameError, StateVCSSessionService  # noqa: E402

__all__ = ["KIND", "SessionNameError", "StateVCSSessionService"]
