"""Google ADK and the committed key order: session state (own keys, then ``app:`` and ``user:``
keys) comes back as ADK's own InMemorySessionService gives it on the same calls."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("google.adk")

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions import InMemorySessionService
from google.genai import types
from support import run

from statevcs import Repo
from statevcs.integrations.google_adk import StateVCSSessionService


def _event(delta: dict[str, Any]) -> Event:
    return Event(
        invocation_id="inv",
        author="user",
        content=types.Content(role="user", parts=[types.Part(text="hi")]),
        actions=EventActions(state_delta=delta),
    )


async def _trace(service: Any) -> list[list[str]]:
    """The state's key order after each call (a fresh read every time)."""
    orders: list[list[str]] = []
    session = await service.create_session(
        app_name="app",
        user_id="u",
        session_id="s",
        state={"zeta": 1, "user:z": 0, "alpha": 2, "app:y": 1, "app:b": 2, "Mid": 3},
    )
    for delta in ({"beta": 1, "app:a": 3, "aa": 0}, {"zeta": 5, "user:c": 1}, {"alpha": None}):
        await service.append_event(session, _event(delta))
        got = await service.get_session(app_name="app", user_id="u", session_id="s")
        orders.append(list(got.state))
    return orders


def test_adk_session_state_comes_back_in_adks_order(repo: Repo) -> None:
    ours = run(_trace(StateVCSSessionService(repo)))
    theirs = run(_trace(InMemorySessionService()))
    assert ours == theirs
