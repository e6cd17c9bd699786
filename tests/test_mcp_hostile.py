"""The MCP server in-process (the SDK's own ``Client`` over its in-memory transport): hostile
arguments answer tool errors and write nothing, hostile content reads back equal, answers are
bounded."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client

import statevcs
from statevcs.mcpserver.queries import as_json
from statevcs.mcpserver.server import build_server

EXAMPLES = int(os.environ.get("STATEVCS_HYPOTHESIS_EXAMPLES", "25"))
CHECK = settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
TEXT = st.text(st.characters(exclude_categories=["Cs"]), max_size=60) | st.sampled_from(
    ["HEAD~99", "../x", "main..short", "@{-1}", "refs/heads/", "a" * 300, "", " ", "HEAD^^^^^^3"]
)
JUNK = st.one_of(TEXT, st.integers(), st.none(), st.lists(st.integers(), max_size=2), st.booleans())


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Iterator[statevcs.Repo]:
    path: Path = tmp_path_factory.mktemp("mcp-hostile")
    with statevcs.Repo.init(path) as repo:
        for n in range(3):
            repo.commit({"messages": [{"role": "user", "content": f"q{i}"} for i in range(n + 1)]})
        yield repo


def _state(repo: statevcs.Repo) -> Any:
    return repo.refs.as_hex("refs/"), [(e.old, e.new) for e in repo.reflog("main")]


def _call(repo: statevcs.Repo, tool: str, args: dict[str, Any], **options: Any) -> Any:
    server = build_server(repo, allow_write=True, **options)

    async def main() -> Any:
        async with Client(server) as client:
            return await client.call_tool(tool, args)

    return anyio.run(main)


@CHECK
@given(
    tool=st.sampled_from(
        ["log", "show", "diff", "search", "compare", "branch", "tag", "reset", "rollback"]
    ),
    args=st.dictionaries(
        st.sampled_from(
            ["rev", "a", "b", "name", "branch", "revision", "reason", "pattern", "limit", "offset"]
        ),
        JUNK,
        max_size=4,
    ),
)
def test_hostile_arguments_write_nothing_or_succeed(
    repo: statevcs.Repo, tool: str, args: dict[str, Any]
) -> None:
    before = _state(repo)
    result = _call(repo, tool, args)
    if result.is_error:
        assert _state(repo) == before
        assert result.content[0].text.startswith("Error executing tool")
        return
    assert json.loads(result.content[0].text) == result.structured_content
    # Leave the next example the same repository.
    refs, _log = before
    for ref in set(repo.refs.as_hex("refs/")) - set(refs):
        repo.refs.move(ref, None, repo.refs.get(ref), "test: undo")
    for ref, commit in refs.items():
        if repo.refs.as_hex("refs/").get(ref) != commit:
            repo.refs.move(ref, bytes.fromhex(commit), repo.refs.get(ref), "test: undo")


@CHECK
@given(content=st.text(st.characters(exclude_categories=["Cs"]), min_size=1, max_size=80))
def test_any_text_reads_back_equal_and_inert(repo: statevcs.Repo, content: str) -> None:
    text = as_json({"content": content}, 10_000)
    assert json.loads(text) == {"content": content}
    assert not any(ord(ch) < 0x20 or 0x7F <= ord(ch) <= 0x9F for ch in text if ch != "\n")
    assert not any(ch in text for ch in "\u202e\u2066\u200b\u2028\U000e0041")


def test_answers_are_bounded(repo: statevcs.Repo) -> None:
    full = len(_call(repo, "show", {"limit": 3}).content[0].text)
    one = len(_call(repo, "show", {"limit": 1}).content[0].text)
    bound = (full + one) // 2
    big = _call(repo, "show", {"limit": 3}, max_chars=bound)
    assert big.is_error and f"limit of {bound}" in big.content[0].text
    small = _call(repo, "show", {"limit": 1}, max_chars=bound)
    assert not small.is_error and len(small.content[0].text) <= bound


def test_tool_schemas_name_their_limits(repo: statevcs.Repo) -> None:
    server = build_server(repo)

    async def main() -> Any:
        async with Client(server) as client:
            return (await client.list_tools()).tools

    tools = {t.name: t for t in anyio.run(main)}
    assert set(tools) == {"log", "show", "diff", "branches", "search", "compare"}
    show = tools["show"].input_schema["properties"]
    assert show["limit"]["maximum"] == 200 and show["offset"]["minimum"] == 0
    assert tools["search"].input_schema["required"] == ["pattern"]
    assert all(t.annotations and t.annotations.read_only_hint for t in tools.values())


def test_resources_answer_json_or_a_clear_error(repo: statevcs.Repo) -> None:
    server = build_server(repo)

    async def main() -> tuple[Any, str]:
        async with Client(server) as client:
            tip = await client.read_resource("statevcs://branches/main")
            try:
                await client.read_resource("statevcs://commits/nosuch")
            except Exception as exc:  # the SDK's client raises the server's error
                return tip, str(exc)
            raise AssertionError("an unknown revision was read")

    tip, error = anyio.run(main)
    assert json.loads(tip.contents[0].text)["commits"][0]["id"] == repo.resolve("main")
    assert error.startswith("UnknownRevision") and "nosuch" in error
