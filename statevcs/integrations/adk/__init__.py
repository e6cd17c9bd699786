"""``statevcs.integrations.adk``: the name the Google ADK integration goes by in issue 21.

The same objects as :mod:`statevcs.integrations.google_adk` (extra ``[adk]`` or
``[google-adk]``): :class:`StateVCSSessionService` and its errors.
"""

from __future__ import annotations

from ..google_adk import KIND, SessionNameError, StateVCSSessionService

__all__ = ["KIND", "SessionNameError", "StateVCSSessionService"]
