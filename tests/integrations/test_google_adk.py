"""StateVCSSessionService against Google ADK: its session-service cases on both it and ADK's own
InMemorySessionService, a real Runner with a scripted model (tool calls, output_key state,
rewind), forks that share their prefix, and names that cannot be branches."""

from __future__ import annotations

from typing import Any

import pytest

pytest.importorskip("google.adk")

from google.adk.agents import LlmAgent
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.events.event_actions import EventActions
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.sessions.base_session_service import GetSessionConfig
from google.genai import types
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support import run

from statevcs import Repo
from statevcs.integrations.google_adk import SessionNameError, StateVCSSessionService
from statevcs.integrations.google_adk.testing import ScriptedLlm, text, tool_call


@pytest.fixture(params=["in-memory", "statevcs"])
def service(request: pytest.FixtureRequest, repo: Repo) -> Any:
    """ADK's own service and ours: every contract case runs on both."""
    return (
        InMemorySessionService() if request.param == "in-memory" else StateVCSSessionService(repo)
    )


def event(author: str, words: str, delta: dict[str, Any] | None = None, **kwargs: Any) -> Event:
    return Event(
        invocation_id=kwargs.pop("invocation_id", "inv"),
        author=author,
        content=types.Content(
            role="user" if author == "user" else "model", parts=[types.Part(text=words)]
        ),
        actions=EventActions(state_delta=delta or {}),
        **kwargs,
    )


# --- ADK's session-service cases, on both services ----------------------------------------------


def test_create_get_list_delete(service: Any) -> None:
    async def scenario() -> None:
        first = await service.create_session(app_name="app", user_id="u1", state={"k": 1})
        await service.create_session(app_name="app", user_id="u1", session_id="s2")
        await service.create_session(app_name="app", user_id="u2", session_id="s3")
        got = await service.get_session(app_name="app", user_id="u1", session_id=first.id)
        assert got.state == {"k": 1} and got.events == []
        with pytest.raises(AlreadyExistsError):
            await service.create_session(app_name="app", user_id="u1", session_id="s2")
        assert await service.get_session(app_name="app", user_id="u1", session_id="nope") is None
        mine = (await service.list_sessions(app_name="app", user_id="u1")).sessions
        assert sorted(s.id for s in mine) == sorted([first.id, "s2"])
        assert len((await service.list_sessions(app_name="app")).sessions) == 3
        assert (await service.list_sessions(app_name="other")).sessions == []
        await service.delete_session(app_name="app", user_id="u1", session_id="s2")
        await service.delete_session(app_name="app", user_id="u1", session_id="s2")  # no error
        assert await service.get_session(app_name="app", user_id="u1", session_id="s2") is None

    run(scenario())


def test_state_prefixes_app_user_session_and_temp(service: Any) -> None:
    async def scenario() -> None:
        state = {"app:version": 2, "user:lang": "pt", "mood": "ok", "temp:scratch": 1}
        one = await service.create_session(app_name="app", user_id="u1", state=state)
        assert one.state == {"app:version": 2, "user:lang": "pt", "mood": "ok"}
        await service.append_event(
            one,
            event(
                "agent", "hi", {"user:lang": "en", "app:flag": True, "mood": "good", "temp:t": 5}
            ),
        )
        assert one.state["temp:t"] == 5  # in memory for the invocation ...
        two = await service.create_session(app_name="app", user_id="u1")
        other = await service.create_session(app_name="app", user_id="u2")
        assert two.state == {"app:version": 2, "app:flag": True, "user:lang": "en"}
        assert other.state == {"app:version": 2, "app:flag": True}
        again = await service.get_session(app_name="app", user_id="u1", session_id=one.id)
        assert again.state == {
            "app:version": 2,
            "app:flag": True,
            "user:lang": "en",
            "mood": "good",
        }
        assert "temp:t" not in again.events[0].actions.state_delta  # ... never stored
        assert await service.get_user_state(app_name="app", user_id="u1") == {"lang": "en"}

    run(scenario())


def test_events_round_trip_and_get_session_config(service: Any) -> None:
    async def scenario() -> None:
        session = await service.create_session(app_name="app", user_id="u", session_id="s")
        appended = []
        for n in range(5):
            e = event("user" if n % 2 == 0 else "agent", f"message {n}", timestamp=1000.0 + n)
            appended.append(await service.append_event(session, e))
        await service.append_event(session, event("agent", "partial", partial=True))
        await service.append_event(session, appended[-1])  # a retried append: stored once
        assert len(session.events) == 5
        got = await service.get_session(app_name="app", user_id="u", session_id="s")
        assert [e.model_dump() for e in got.events] == [e.model_dump() for e in appended]
        recent = await service.get_session(
            app_name="app",
            user_id="u",
            session_id="s",
            config=GetSessionConfig(num_recent_events=2),
        )
        assert [e.content.parts[0].text for e in recent.events] == ["message 3", "message 4"]
        after = await service.get_session(
            app_name="app",
            user_id="u",
            session_id="s",
            config=GetSessionConfig(after_timestamp=1003.0),
        )
        assert len(after.events) == 2
        none = await service.get_session(
            app_name="app",
            user_id="u",
            session_id="s",
            config=GetSessionConfig(num_recent_events=0),
        )
        assert none.events == []
        await service.delete_session(app_name="app", user_id="u", session_id="s")
        with pytest.raises(SessionNotFoundError):
            await service.append_event(session, event("agent", "late"))

    run(scenario())


# --- a real Runner ---------------------------------------------------------------------------


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


async def conversation(service: Any) -> tuple[Any, Runner, str]:
    model = ScriptedLlm([tool_call("add", {"a": 2, "b": 3}), text("5"), text("bye")])
    agent = LlmAgent(name="calc", model=model, tools=[add], output_key="last")
    runner = Runner(agent=agent, app_name="calc", session_service=service)
    session = await service.create_session(app_name="calc", user_id="u", state={"k": 0})
    for words in ["2 + 3?", "thanks"]:
        message = types.Content(role="user", parts=[types.Part(text=words)])
        async for _ in runner.run_async(user_id="u", session_id=session.id, new_message=message):
            pass
    return session, runner, session.id


def scrub(value: Any) -> Any:
    """``value`` without ``id`` keys (ADK draws tool-call ids at random)."""
    if isinstance(value, dict):
        return {k: scrub(v) for k, v in value.items() if k != "id"}
    if isinstance(value, list):
        return [scrub(v) for v in value]
    return value


def shape(session: Any) -> list[tuple[Any, ...]]:
    """What a session holds, without its random ids and clock."""
    return [
        (
            e.author,
            scrub(e.content.model_dump(exclude_none=True)) if e.content else None,
            e.actions.state_delta,
            e.actions.rewind_before_invocation_id is not None,
        )
        for e in session.events
    ]


def test_runner_with_tools_state_and_rewind_matches_adk_own_service(repo: Repo) -> None:
    async def trace(service: Any) -> tuple[Any, Any, Any, Any]:
        _, runner, sid = await conversation(service)
        before = await service.get_session(app_name="calc", user_id="u", session_id=sid)
        await runner.rewind_async(
            user_id="u", session_id=sid, rewind_before_invocation_id=before.events[-2].invocation_id
        )
        after = await service.get_session(app_name="calc", user_id="u", session_id=sid)
        return shape(before), before.state, shape(after), after.state

    theirs = run(trace(InMemorySessionService()))
    ours = run(trace(StateVCSSessionService(repo)))
    assert ours == theirs
    assert theirs[1]["last"] == "bye" and theirs[3]["last"] == "5"
    sid = next(name for name in repo.branches() if "/sessions/" in name)
    ops = [c.metadata["op"] for c in repo.log(sid)]
    assert ops[-1] == "create" and ops.count("event") == len(theirs[2])  # a commit per event


def test_fork_at_an_event_shares_the_prefix(repo: Repo) -> None:
    service = StateVCSSessionService(repo)

    async def scenario() -> None:
        session = await service.create_session(app_name="app", user_id="u", session_id="long")
        for n in range(200):
            await service.append_event(session, event("user", f"question {n}: " + "context " * 20))
            await service.append_event(
                session, event("agent", f"answer {n}: " + "details " * 30, {"turn": n})
            )
        full = await service.get_session(app_name="app", user_id="u", session_id="long")
        cut = full.events[359]
        before = repo.stats()
        forks = []
        for n in range(10):
            fork = await service.fork_session(
                app_name="app",
                user_id="u",
                session_id="long",
                new_session_id=f"f{n}",
                at_event_id=cut.id,
            )
            assert len(fork.events) == 360 and fork.state == {"turn": 179}
            await service.append_event(fork, event("user", f"fork {n} asks"))
            forks.append(fork)
        after = repo.stats()
        assert after.bytes_stored - before.bytes_stored < 0.10 * before.bytes_stored
        again = await service.get_session(app_name="app", user_id="u", session_id="f3")
        assert [e.id for e in again.events[:360]] == [e.id for e in full.events[:360]]
        at = await service.get_session_at(app_name="app", user_id="u", session_id="long", rev="~40")
        assert [e.id for e in at.events] == [e.id for e in full.events[:360]]
        assert at.state == {"turn": 179}
        with pytest.raises(AlreadyExistsError):
            await service.fork_session(
                app_name="app", user_id="u", session_id="long", new_session_id="f1"
            )
        with pytest.raises(SessionNotFoundError):
            await service.fork_session(
                app_name="app", user_id="u", session_id="long", at_event_id="nope"
            )

    run(scenario())


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    name=st.sampled_from(
        ["a..b", "x.lock", "with space", "tail/", "@{1}", "a~1", "c:d", "q?", "u/s"]
    )
)
def test_ids_that_cannot_name_a_branch_are_refused(repo: Repo, name: str) -> None:
    service = StateVCSSessionService(repo)
    with pytest.raises(SessionNameError, match="cannot be part of a branch name"):
        run(service.create_session(app_name="app", user_id="u", session_id=name))
    with pytest.raises(ValueError):
        run(service.create_session(app_name=name, user_id="u"))
    with pytest.raises(TypeError, match="user_id"):
        run(service.create_session(app_name="app", user_id=3))
    with pytest.raises(TypeError, match="repo"):
        StateVCSSessionService(None)
    assert repo.branches() == {}


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(app=st.text(max_size=8), user=st.text(max_size=8), sid=st.text(min_size=1, max_size=8))
def test_any_ids_are_stored_or_refused_cleanly(repo: Repo, app: str, user: str, sid: str) -> None:
    service = StateVCSSessionService(repo)
    before = repo.branches()
    try:
        created = run(service.create_session(app_name=app, user_id=user, session_id=sid))
    except (SessionNameError, AlreadyExistsError):
        assert repo.branches() == before
        return
    got = run(service.get_session(app_name=app, user_id=user, session_id=created.id))
    assert got is not None and got.id == created.id and got.app_name == app


def test_the_integration_also_goes_by_adk() -> None:
    from statevcs.integrations import adk, google_adk

    assert adk.StateVCSSessionService is google_adk.StateVCSSessionService
