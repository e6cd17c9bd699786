"""AgentHistory reads: ``messages()`` reads only the message tree of a revision and validates it,
with the same exact round trip as a checkout, the same refusals, and nothing shared with what
is stored."""

from __future__ import annotations

import pytest
from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelRequest,
    TextPart,
    UserPromptPart,
)

from statevcs import Repo
from statevcs.errors import UnknownRevision, UnsupportedObject
from statevcs.integrations.pydantic_ai import AgentHistory

from .test_pydantic_ai import every_part


def dumped(messages: list[ModelMessage]) -> bytes:
    return ModelMessagesTypeAdapter.dump_json(messages)


def test_every_part_type_reads_back_exactly_on_a_fresh_handle(repo: Repo) -> None:
    history = AgentHistory(repo, "parts")
    history.commit(every_part()[:2])
    history.commit(every_part())
    with Repo.open(repo.path) as again:
        fresh = AgentHistory(again, "parts")
        assert dumped(fresh.messages()) == dumped(every_part())
        assert fresh.messages() == ModelMessagesTypeAdapter.validate_json(dumped(every_part()))
        assert dumped(fresh.messages("~1")) == dumped(every_part()[:2])
        assert dumped(fresh.messages(history.head or "")) == dumped(every_part())
    # A checkout gives the same messages as the read.
    back: list[ModelMessage] = []
    repo.checkout(back, "parts")
    assert back == AgentHistory(repo, "parts").messages()


def test_editing_returned_messages_changes_nothing_stored(repo: Repo) -> None:
    history = AgentHistory(repo, "edits")
    history.commit(every_part())
    stored = repo.show("edits").messages
    with Repo.open(repo.path) as again:
        read = AgentHistory(again, "edits").messages()
        request = read[0]
        assert isinstance(request, ModelRequest)
        request.parts.append(UserPromptPart("injected"))
        read[1].parts[1] = TextPart("replaced")
        read.clear()
        assert dumped(AgentHistory(again, "edits").messages()) == dumped(every_part())
    assert repo.show("edits").messages == stored
    assert dumped(history.messages()) == dumped(every_part())


def test_reads_before_the_first_commit_and_of_unknown_revisions(repo: Repo) -> None:
    history = AgentHistory(repo, "empty")
    assert history.messages() == []
    with pytest.raises(UnknownRevision):
        history.messages("~1")
    history.commit(every_part()[:1])
    with pytest.raises(UnknownRevision):
        history.messages("~1")


def test_a_branch_of_another_kind_is_refused(repo: Repo) -> None:
    repo.commit({"messages": [{"role": "user", "content": "hi"}]}, branch="dicts")
    with pytest.raises(UnsupportedObject, match="not a Pydantic AI message history"):
        AgentHistory(repo, "dicts").messages()
    history = AgentHistory(repo, "chat")
    history.commit(every_part())
    with pytest.raises(UnsupportedObject, match="not a Pydantic AI message history"):
        history.messages(repo.resolve("dicts"))
