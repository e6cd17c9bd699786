"""An ADK event's stored form and back: the JSON ADK's own SQLite session service writes, and
the validators that turn many stored records into events at once, exactly.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Sequence
from typing import Any

import pydantic_core
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.genai import types
from pydantic import TypeAdapter


def event_record(event: Event) -> dict[str, Any]:
    """An event's stored form: the JSON ADK's own SQLite session service writes."""
    record: dict[str, Any] = json.loads(event.model_dump_json(exclude_none=True))
    return record


def _json(value: Any) -> bytes:
    # The JSON json.dumps writes (NaN and infinities as constants), ten times faster.
    return pydantic_core.to_json(value, inf_nan_mode="constants")


def event_from_record(record: Any) -> Event:
    """An event from its stored form (the inverse of :func:`event_record`)."""
    return Event.model_validate_json(_json(record))


_EVENTS: TypeAdapter[list[Event]] = TypeAdapter(list[Event])


def _probe() -> Event:
    """An event with a field of every awkward kind: bytes (base64 in JSON), a thought
    signature, a function call and response, state, artifact and metadata values."""
    return Event(
        invocation_id="probe",
        author="model",
        content=types.Content(
            role="model",
            parts=[
                types.Part(inline_data=types.Blob(data=b"\x00\xff\x80", mime_type="image/png")),
                types.Part(text="t\u00e9", thought=True, thought_signature=b"\xfe\x00"),
                types.Part(function_call=types.FunctionCall(id="c", name="f", args={"a": [1.5]})),
                types.Part(
                    function_response=types.FunctionResponse(id="c", name="f", response={"r": 1})
                ),
            ],
        ),
        actions=EventActions(state_delta={"k": {"n": [1, None]}}, artifact_delta={"a.png": 0}),
        custom_metadata={"m": {"x": 2.5}},
        timestamp=1.25,
    )


@functools.cache
def python_mode_is_exact() -> bool:
    """Whether a stored record validated as Python data gives the event its JSON gives.

    It does when pydantic decodes a base64 string into a bytes field in Python mode too, as
    ADK's own ``DatabaseSessionService`` relies on (pydantic 2.10 on); checked once, on an event
    with a field of every awkward kind.
    """
    probe = _probe()
    record = event_record(probe)
    from_python = Event.model_validate(record)
    from_json = event_from_record(record)
    return from_python == from_json == probe and from_python.model_dump(
        mode="json"
    ) == from_json.model_dump(mode="json")


def validate_events(records: Sequence[Any], *, python: bool) -> list[Event]:
    """Events from their stored forms, in order, all validated at once: as Python data
    (``python=True``: only exact when :func:`python_mode_is_exact`) or from one JSON array
    (bytes as base64, as ADK's SQLite service reads its rows)."""
    if not records:
        return []
    if python:
        return _EVENTS.validate_python(list(records))
    return _EVENTS.validate_json(_json(list(records)))


def events_from_records(records: Sequence[Any]) -> list[Event]:
    """Events from their stored forms, in order: each as :func:`event_from_record` gives it,
    validated at once (as Python data where that is exact, which skips writing JSON)."""
    return validate_events(records, python=python_mode_is_exact())


__all__ = [
    "event_from_record",
    "event_record",
    "events_from_records",
    "python_mode_is_exact",
    "validate_events",
]
