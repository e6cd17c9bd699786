"""Former home of the offline Strands model; it now lives in
:mod:`statevcs.integrations.strands.testing`, and this module re-exports it so existing imports
keep working.
"""

from __future__ import annotations

from .strands.testing import Reply, ScriptedModel, ScriptExhausted, ScriptItem, ToolCall

__all__ = ["Reply", "ScriptExhausted", "ScriptItem", "ScriptedModel", "ToolCall"]
