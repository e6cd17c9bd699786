"""StateVCSSessionService reads: a restored session equals what was appended (binary parts,
thought signatures, function calls, unicode, empty content, state and artifact deltas, metadata),
``num_recent_events`` and ``after_timestamp`` agree with ADK's own service on long sessions, and a
caller's edits to a returned session reach nothing stored; on SQLite and on S3."""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("google.adk")

from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.sessions import InMemorySessionService
from google.adk.sessions.base_session_service import GetSessionConfig
from google.genai import types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import ValidationError
from support import run

from statevcs import Repo
from statevcs.integrations.google_adk import StateVCSSessionService
from statevcs.integrations.google_adk.events import (
    event_from_record,
    event_record,
    events_from_records,
    python_mode_is_exact,
    validate_events,
)
from statevcs.integrations.stored import branch_tip, commit_messages

KEY = {"app_name": "app", "user_id": "u", "session_id": "s"}


@pytest.fixture(params=["sqlite", "s3"])
def target(request: pytest.FixtureRequest, tmp_path: Path) -> str | Path:
    """Where a repository lives: a SQLite folder, or a fresh prefix on the S3 fixture."""
    if request.param == "s3":
        url: str = request.getfixturevalue("s3_url")
        return url
    return tmp_path / "repo"


def dumped(events: list[Event]) -> list[Any]:
    return [e.model_dump(mode="json") for e in events]


# --- hostile events ---------------------------------------------------------------------------

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
json_values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
json_objects = st.dictionaries(st.text(max_size=8), json_values, max_size=3)

parts = st.one_of(
    st.builds(types.Part, text=st.text(max_size=40)),
    st.builds(
        lambda data, mime: types.Part(inline_data=types.Blob(data=data, mime_type=mime)),
        st.binary(max_size=40),
        st.sampled_from(["image/png", "application/octet-stream", "audio/wav"]),
    ),
    st.builds(
        lambda words, signature: types.Part(text=words, thought=True, thought_signature=signature),
        st.text(max_size=20),
        st.binary(min_size=1, max_size=20),
    ),
    st.builds(
        lambda name, args: types.Part(
            function_call=types.FunctionCall(id="call-1", name=name, args=args)
        ),
        st.sampled_from(["add", "search", "ünïcode_tool"]),
        json_objects,
    ),
    st.builds(
        lambda name, response: types.Part(
            function_response=types.FunctionResponse(id="call-1", name=name, response=response)
        ),
        st.sampled_from(["add", "search"]),
        json_objects,
    ),
)
contents = st.one_of(
    st.none(),
    st.builds(types.Content, role=st.sampled_from(["user", "model"]), parts=st.just([])),
    st.builds(
        types.Content, role=st.sampled_from(["user", "model"]), parts=st.lists(parts, max_size=4)
    ),
)
deltas = st.dictionaries(
    st.sampled_from(["k", "mood", "ключ", "🙂", "app:theme", "user:lang", "temp:scratch"]),
    json_values,
    max_size=3,
)


@st.composite
def hostile_events(draw: st.DrawFn) -> list[Event]:
    count = draw(st.integers(min_value=1, max_value=6))
    stamp = draw(st.floats(min_value=0, max_value=4e9))
    events = []
    for n in range(count):
        stamp += draw(st.sampled_from([0.0, 0.001, 1.5]))  # ties too
        events.append(
            Event(
                invocation_id=draw(st.sampled_from(["inv", "inv-2", "ïnv"])),
                author=draw(st.sampled_from(["user", "agent", "tool_agent"])),
                content=draw(contents),
                actions=EventActions(
                    state_delta=draw(deltas),
                    artifact_delta=draw(
                        st.dictionaries(st.text(min_size=1, max_size=8), st.integers(0, 9))
                    ),
                ),
                custom_metadata=draw(st.none() | json_objects),
                timestamp=stamp,
                id=f"e{n}",
            )
        )
    return events


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(events=hostile_events())
def test_a_restored_session_equals_what_was_appended(events: list[Event]) -> None:
    with tempfile.TemporaryDirectory() as folder:
        with Repo.init(Path(folder) / "repo") as repo:
            service = StateVCSSessionService(repo)
            session = run(service.create_session(**KEY))
            appended = [run(service.append_event(session, e)) for e in events]
            warm = run(service.get_session(**KEY))
        with Repo.open(Path(folder) / "repo") as repo:  # a fresh handle
            service = StateVCSSessionService(repo)
            got = run(service.get_session(**KEY))
            records = commit_messages(
                repo, branch_tip(repo, service.session_branch("app", "u", "s"))
            )
    assert got is not None and warm is not None
    assert got.events == appended == warm.events
    assert dumped(got.events) == dumped(appended)
    kept = {k: v for k, v in session.state.items() if not k.startswith("temp:")}  # never stored
    assert got.state == kept and got.last_update_time == session.last_update_time
    # both ways of validating give what each record alone gives
    alone = [event_from_record(r) for r in records]
    assert validate_events(records, python=True) == validate_events(records, python=False) == alone
    assert dumped(validate_events(records, python=True)) == dumped(alone)
    assert [event_record(e) for e in got.events] == records


def test_python_mode_is_exact_with_the_locked_pydantic() -> None:
    # The fast path runs here; validate_events(python=False) stays for a pydantic that is not.
    assert python_mode_is_exact() is True
    assert events_from_records([]) == []


def test_binary_parts_survive_both_validations_byte_for_byte() -> None:
    every_byte = bytes(range(256))
    event = Event(
        invocation_id="inv",
        author="agent",
        content=types.Content(
            role="model",
            parts=[
                types.Part(inline_data=types.Blob(data=every_byte, mime_type="image/png")),
                types.Part(text="", thought=True, thought_signature=every_byte[::-1]),
            ],
        ),
    )
    record = event_record(event)
    assert isinstance(record["content"]["parts"][0]["inline_data"]["data"], str)  # base64
    for python in (True, False):
        (back,) = validate_events([record], python=python)
        assert back == event
        parts = back.content.parts if back.content and back.content.parts else []
        assert parts[0].inline_data is not None and parts[0].inline_data.data == every_byte
        assert parts[1].thought_signature == every_byte[::-1]


# --- long sessions: num_recent_events and after_timestamp ---------------------------------------


def long_event(n: int) -> Event:
    """~400 bytes, so 300 of them span many leaves; timestamps rise in steps with ties."""
    return Event(
        invocation_id=f"inv-{n // 2}",
        author="user" if n % 2 == 0 else "agent",
        content=types.Content(
            role="user" if n % 2 == 0 else "model",
            parts=[types.Part(text=f"message {n} " + "words " * 60)],
        ),
        actions=EventActions(state_delta={"n": n} if n % 7 == 0 else {}),
        timestamp=1000.0 + n // 3,
        id=f"e{n}",
    )


def test_recent_events_and_timestamps_match_adk_own_service_on_a_long_session(
    tmp_path: Path,
) -> None:
    total = 300
    adk = InMemorySessionService()
    with Repo.init(tmp_path / "repo") as repo:
        ours = StateVCSSessionService(repo)
        mine, theirs = run(ours.create_session(**KEY)), run(adk.create_session(**KEY))
        for n in range(total):
            run(ours.append_event(mine, long_event(n)))
            run(adk.append_event(theirs, long_event(n)))
    recents = [None, 0, 1, 2, 57, total - 1, total, total + 1, 10_000]
    afters = [None, 999.0, 1000.0, 1000.0 + 50, 1000.0 + 50.5, 1000.0 + 99, 1000.0 + 100]
    with Repo.open(tmp_path / "repo") as repo:  # a fresh handle
        ours = StateVCSSessionService(repo)
        for recent in recents:
            for after in afters:
                config = GetSessionConfig(num_recent_events=recent, after_timestamp=after)
                got = run(ours.get_session(**KEY, config=config))
                expected = run(adk.get_session(**KEY, config=config))
                assert got is not None and expected is not None
                assert dumped(got.events) == dumped(expected.events), (recent, after)
                assert got.state == expected.state


# --- a caller's edits reach nothing stored ---------------------------------------------------


def rich_event(n: int) -> Event:
    return Event(
        invocation_id="inv",
        author="agent",
        content=types.Content(
            role="model",
            parts=[
                types.Part(text=f"reply {n}"),
                types.Part(function_call=types.FunctionCall(name="f", args={"xs": [n, [n]]})),
            ],
        ),
        actions=EventActions(state_delta={"nested": {"list": [n]}, "user:seen": [n]}),
        custom_metadata={"tags": ["a", n]},
        timestamp=2000.0 + n,
    )


def vandalize(session: Any) -> None:
    """Edit every mutable thing a returned session holds."""
    for event in session.events:
        event.actions.state_delta["nested"]["list"].append("x")
        event.actions.state_delta["added"] = 1
        event.custom_metadata["tags"].append("x")
        event.content.parts[0].text = "changed"
        event.content.parts[1].function_call.args["xs"][1].append("x")
        event.content.parts.append(types.Part(text="extra"))
    session.events.clear()
    session.state["nested"]["list"].append("x")
    session.state["user:seen"].append("x")
    session.state["new"] = True


def test_editing_a_returned_session_changes_nothing_stored(target: str | Path) -> None:
    async def scenario(repo: Repo) -> None:
        service = StateVCSSessionService(repo)
        session = await service.create_session(**KEY, state={"app:theme": ["dark"]})
        for n in range(5):
            await service.append_event(session, rich_event(n))
        before = await service.get_session(**KEY)
        assert before is not None
        expected = (dumped(before.events), before.model_dump(mode="json"))
        for read in (
            service.get_session(**KEY),
            service.get_session(**KEY, config=GetSessionConfig(num_recent_events=2)),
            service.get_session_at(**KEY, rev="~1"),
        ):
            vandalize(await read)
        for listed in (await service.list_sessions(app_name="app")).sessions:
            listed.state["app:theme"].append("x")
            listed.state["nested"]["list"].append("x")
        again = await service.get_session(**KEY)
        assert again is not None
        assert (dumped(again.events), again.model_dump(mode="json")) == expected
        assert again.state["app:theme"] == ["dark"] and again.state["nested"] == {"list": [4]}
        # an append after the edits stores what it is given, on top of what was stored
        await service.append_event(session, rich_event(5))
        after = await service.get_session(**KEY)
        assert after is not None
        assert dumped(after.events) == expected[0] + dumped([session.events[-1]])

    with Repo.init(target) as repo:
        run(scenario(repo))
    with Repo.open(target) as repo:  # and on a fresh handle
        service = StateVCSSessionService(repo)
        got = run(service.get_session(**KEY))
        assert got is not None and len(got.events) == 6
        assert got.events[0].content is not None and got.events[0].content.parts is not None
        assert got.events[0].content.parts[0].text == "reply 0"


def test_list_sessions_and_get_session_at_read_state_and_names(target: str | Path) -> None:
    async def scenario(repo: Repo) -> None:
        service = StateVCSSessionService(repo)
        one = await service.create_session(
            **KEY, state={"app:a": 1, "user:b": 2, "own": 3, "temp:t": 4}
        )
        await service.create_session(app_name="app", user_id="v", session_id="s", state={"x": 1})
        await service.append_event(one, rich_event(0))
        await service.append_event(one, rich_event(1))
        listed = {s.user_id: s for s in (await service.list_sessions(app_name="app")).sessions}
        assert listed["u"].events == [] and listed["v"].events == []
        assert listed["u"].state == {
            "own": 3,
            "nested": {"list": [1]},
            "app:a": 1,
            "user:b": 2,
            "user:seen": [1],
        }
        assert listed["v"].state == {"x": 1, "app:a": 1}
        assert listed["u"].last_update_time == 2001.0
        earlier = await service.get_session_at(**KEY, rev="~1")
        assert [e.timestamp for e in earlier.events] == [2000.0]
        assert earlier.state["nested"] == {"list": [0]} and earlier.state["user:seen"] == [1]
        assert (earlier.app_name, earlier.user_id, earlier.id) == ("app", "u", "s")

    with Repo.init(target) as repo:
        run(scenario(repo))


def test_a_session_deleted_or_never_made_reads_as_none(tmp_path: Path) -> None:
    with Repo.init(tmp_path / "repo") as repo:
        service = StateVCSSessionService(repo)
        assert run(service.get_session(**KEY)) is None
        run(service.create_session(**KEY))
        run(service.delete_session(**KEY))
        assert run(service.get_session(**KEY)) is None
        assert run(service.list_sessions(app_name="app")).sessions == []


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    session_id=st.one_of(st.integers(), st.none(), st.binary(), st.lists(st.text())),
    config=st.one_of(st.just({"num_recent_events": 1}), st.integers(), st.text()),
)
def test_reads_refuse_wrong_argument_types_and_change_nothing(
    tmp_path: Path, session_id: Any, config: Any
) -> None:
    with Repo.init(tmp_path / f"repo-{uuid.uuid4().hex}") as repo:
        service = StateVCSSessionService(repo)
        run(service.create_session(**KEY))
        before = run(service.get_session(**KEY))
        with pytest.raises(TypeError, match="session_id"):
            run(service.get_session(app_name="app", user_id="u", session_id=session_id))
        with pytest.raises(TypeError, match="session_id"):
            run(
                service.get_session_at(app_name="app", user_id="u", session_id=session_id, rev="~0")
            )
        with pytest.raises(TypeError, match="session_id"):
            run(service.delete_session(app_name="app", user_id="u", session_id=session_id))
        with pytest.raises(TypeError, match="config"):
            run(service.get_session(**KEY, config=config))
        assert run(service.get_session(**KEY)) == before


def mutated_record(draw: st.DrawFn) -> Any:
    """A stored record with one field replaced by any JSON value, or any JSON value at all."""
    record = event_record(draw(hostile_events())[0])
    if draw(st.booleans()):
        return draw(json_values)
    target = record
    path = draw(
        st.lists(st.sampled_from(["content", "parts", 0, "actions", "state_delta"]), max_size=3)
    )
    for step in path:
        if (
            isinstance(target, dict)
            and isinstance(step, str)
            and isinstance(target.get(step), (dict, list))
        ):
            target = target[step]
        elif isinstance(target, list) and isinstance(step, int) and target:
            target = target[0]
    key = draw(
        st.sampled_from(
            ["timestamp", "author", "id", "data", "thought_signature", "text", "role", "x"]
        )
    )
    if isinstance(target, dict):
        target[key] = draw(json_values)
    return record


drawn = {"id", "timestamp"}


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_hostile_records_are_refused_or_read_alike_in_both_modes(data: st.DataObject) -> None:
    records = [mutated_record(data.draw) for _ in range(data.draw(st.integers(1, 3)))]
    outcomes = []
    for python in (True, False):
        try:
            events = validate_events(records, python=python)
        except ValidationError:
            outcomes.append("refused")
        else:
            # an event without a stored id or timestamp draws a new one: leave those out
            outcomes.append(
                [
                    {
                        k: v
                        for k, v in e.items()
                        if (isinstance(r, dict) and k in r) or k not in drawn
                    }
                    for e, r in zip(dumped(events), records, strict=True)
                ]
            )
    assert outcomes[0] == outcomes[1]
