"""The framework-neutral parts of experiments: turns and compare on plain runs, and the
``statevcs compare`` / ``statevcs search`` commands (issue 19)."""

from __future__ import annotations

import contextlib
import json
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_cli import invoke

import statevcs
from statevcs.errors import StateVCSError
from statevcs.experiments import compare, parse_range, turns
from statevcs.transcript import is_prompt, text_of, tool_uses

EXAMPLES = int(os.environ.get("STATEVCS_HYPOTHESIS_EXAMPLES", "40"))


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"text": text}]}


def reply(text: str, *tools: str) -> dict[str, Any]:
    blocks: list[dict[str, Any]] = [{"text": text}]
    blocks += [
        {"toolUse": {"name": t, "input": {"n": i}, "toolUseId": f"t{i}"}}
        for i, t in enumerate(tools)
    ]
    return {"role": "assistant", "content": blocks}


def result(tool: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"toolResult": {"toolUseId": "t0", "content": [tool]}}]}


@pytest.fixture
def runs(tmp_path: Path) -> Path:
    """main: 4 turns; other: the same first 2 turns, then others, one with a tool call."""
    path = tmp_path / "repo"
    with statevcs.Repo.init(path) as repo:
        run: dict[str, Any] = {"messages": [{"role": "system", "content": "Be kind."}]}
        for i in range(4):
            run["messages"] += [user(f"Q{i}"), reply(f"A{i}")]
            run["step"] = i
            repo.commit(run, f"turn {i + 1}")
        other: dict[str, Any] = {}
        repo.branch("other", "main~2")
        repo.checkout(other, "other")
        other["messages"] += [user("Q2"), reply("B2", "weather"), result("sun"), reply("B2b")]
        other["step"] = 20
        repo.commit(other, "other 3")
        other["messages"] += [user("Q3 \x1b[31m"), reply("B3")]
        repo.commit(other, "other 4")
        other["messages"] += [user("Q4"), reply("B4")]
        repo.commit(other, "other 5")
    return path


def test_the_transcript_reads_the_common_message_shapes() -> None:
    assert is_prompt(user("hi")) and not is_prompt(result("x")) and not is_prompt(reply("x"))
    assert is_prompt({"role": "human", "content": "hi"})
    assert text_of({"role": "user", "content": "plain"}) == "plain"
    assert [t.name for t in tool_uses(reply("x", "a", "b"))] == ["a", "b"]
    langchain = {"role": "assistant", "content": "", "tool_calls": [{"name": "w", "args": {}}]}
    openai = {"role": "assistant", "tool_calls": [{"function": {"name": "f", "arguments": "{}"}}]}
    assert [t.name for t in tool_uses(langchain) + tool_uses(openai)] == ["w", "f"]
    assert tool_uses("not a message") == [] and text_of(None) == ""


def test_turns_skip_leading_system_messages_and_tool_results(runs: Path) -> None:
    with statevcs.Repo.open(runs) as repo:
        found = turns(repo, "other")
        assert [t.text for t in found] == ["Q0", "Q1", "Q2", "Q3 \x1b[31m", "Q4"]
        assert [t.start for t in found] == [1, 3, 5, 9, 11]  # the tool result stays in turn 3
        assert [c.name for c in found[2].tool_calls] == ["weather"]
        assert found[0].commit == repo.resolve("main~3")
        assert found[2].commit == repo.resolve("other~2")
    assert parse_range("a..b") == ("a", "b") and parse_range("b") == (None, "b")


def test_compare_pairs_turns_and_reports_state_and_tools(runs: Path) -> None:
    with statevcs.Repo.open(runs) as repo:
        result = compare(repo, "main", "other")
        assert result.merge_base == repo.resolve("main~2")
        assert result.common_prefix == 6  # the system message and two turns, Q2 too: 6 of 7
        assert [t.status for t in result.turns] == [
            "same",
            "same",
            "diverged",
            "diverged",
            "only_b",
        ]
        third = result.turns[2]
        assert third.tools_only_b == ("weather",) and third.tools_only_a == ()
        assert [(c.index, c.kind) for c in third.messages.changes] == [
            (1, "changed"),
            (2, "added"),
            (3, "added"),
        ]
        assert [(c.key, c.old, c.new) for c in third.state] == [("step", 2, 20)]
        assert result.turns[4].a is None
        json.dumps(result.to_dict(messages=True))
        with pytest.raises(TypeError, match="a must be a str"):
            compare(repo, 1, "main")  # type: ignore[arg-type]


def test_statevcs_compare_prints_a_table_and_json(runs: Path) -> None:
    out = invoke("-C", runs, "compare", "main", "other").stdout
    assert "merge base" in out and "2 turns differ" not in out
    assert "3 turns differ (first: turn 3)" in out
    assert "weather" in out and "\x1b" not in out and "\\x1b[31m" in out
    data = json.loads(invoke("-C", runs, "compare", "main", "other", "--json").stdout)
    assert data["diverged"] == [3, 4, 5]
    assert data["turns"][2]["tools_only_b"] == ["weather"]
    assert "messages" not in data["turns"][0]["a"]
    full = json.loads(invoke("-C", runs, "compare", "main", "other", "--json", "--messages").stdout)
    assert full["turns"][3]["b"]["messages"][0]["content"][0]["text"] == "Q3 \x1b[31m"
    error = invoke("-C", runs, "compare", "main", "nothing", code=1).stderr
    assert error.startswith("error: ") and "nothing" in error


def test_statevcs_search_lists_each_match_once(runs: Path) -> None:
    found = invoke("-C", runs, "search", "Q2")
    lines = found.stdout.splitlines()
    assert len(lines) == 1 and "user: Q2" in lines[0]
    assert "1 message matched in 1 commit" in found.stderr
    everywhere = invoke("-C", runs, "search", "--all", "-E", r"^[AB]\d$")
    assert len(everywhere.stdout.splitlines()) == 7  # A0-A3, B2, B3, B4
    data = json.loads(invoke("-C", runs, "search", "q3", "other", "-i", "--json").stdout)
    assert [m["snippet"] for m in data["messages"]] == ["Q3 \x1b[31m"]
    assert (
        data["messages"][0]["introduced"][0]["commit"]
        == json.loads(invoke("-C", runs, "log", "other~1", "-n", "1", "--json").stdout)[0]["id"]
    )
    refused = invoke("-C", runs, "search", "-E", "(a+)+", code=1).stderr
    assert "exponential" in refused
    assert invoke("-C", runs, "search", "x", "main", "--all", code=2).stderr


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    a=st.one_of(st.text(max_size=12), st.sampled_from(["main", "other~1", "main..other", "HEAD"])),
    b=st.one_of(st.text(max_size=12), st.integers(), st.none(), st.sampled_from(["other", "@"])),
)
def test_hostile_revisions_give_documented_errors_and_change_nothing(
    runs: Path, a: str, b: Any
) -> None:
    with statevcs.Repo.open(runs) as repo:
        before = (repo.branches(), repo.stats().objects)
        for call in (
            lambda: compare(repo, a, b),
            lambda: turns(repo, a),
            lambda: repo.search(a or "x", rev=b),
        ):
            with contextlib.suppress(StateVCSError, TypeError):
                call()
        assert (repo.branches(), repo.stats().objects) == before
