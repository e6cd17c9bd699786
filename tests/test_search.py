"""repo.search: exact answers (checked against a brute-force oracle), each message read once, and
only documented errors for hostile patterns and arguments (issue 19, section 3)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import statevcs
from statevcs.errors import StateVCSError, UnknownRevision
from statevcs.search import InvalidPattern, UnsafePattern, compile_pattern

EXAMPLES = int(os.environ.get("STATEVCS_HYPOTHESIS_EXAMPLES", "60"))


def message(role: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"role": role, "content": [{"text": text}], **extra}


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Iterator[statevcs.Repo]:
    """main: 12 turns; side: forked at turn 4 with 3 turns; a tag on a trimmed conversation."""
    path = tmp_path_factory.mktemp("search") / "repo"
    with statevcs.Repo.init(path) as repo:
        agent: dict[str, Any] = {"messages": []}
        for i in range(12):
            agent["messages"] += [
                message("user", f"Question {i}: Lisbon or Porto?"),
                message("assistant", f"Answer {i}: go to {'Porto' if i % 3 else 'Lisbon'}."),
            ]
            repo.commit(agent, f"turn {i}")
        side: dict[str, Any] = {}
        repo.checkout(side, "main~8")
        repo.branch("side", "main~8")
        repo.checkout(side, "side")
        for i in range(3):
            side["messages"] += [
                message("user", f"Side question {i} about Faro"),
                {
                    "role": "assistant",
                    "content": [{"toolUse": {"name": "weather", "input": {"city": "Faro"}}}],
                },
            ]
            repo.commit(side, f"side turn {i}")
        trimmed = {"messages": agent["messages"][-4:]}
        repo.commit(trimmed, "trimmed", branch="trimmed")
        yield repo


def oracle(
    repo: statevcs.Repo, pattern: re.Pattern[str], starts: list[str]
) -> dict[str, set[tuple[str, int]]]:
    """Brute force: every commit's every message, compared with its parents' messages."""
    seen: dict[str, statevcs.Commit] = {}
    for start in starts:
        for commit in repo.log(start, all_parents=True):
            seen[commit.id] = commit
    found: dict[str, set[tuple[str, int]]] = {}
    for commit in seen.values():
        mine = repo.show(commit.id).messages
        parents = [repo.show(p).messages for p in commit.parents]
        for position, msg in enumerate(mine):
            if any(position < len(p) and p[position] == msg for p in parents):
                continue
            texts = _strings(msg)
            if any(pattern.search(t) for t in texts):
                key = repr(msg)
                found.setdefault(key, set()).add((commit.id, position))
    return found


def _strings(value: Any, top: bool = True) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [
            s
            for k, v in value.items()
            if not (top and k in ("role", "channel"))
            for s in _strings(v, False)
        ]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v, False)]
    return []


def answer(result: statevcs.search.SearchResult) -> dict[str, set[tuple[str, int]]]:
    return {
        repr(m.message): {(i.commit, i.position) for i in m.introduced} for m in result.messages
    }


@pytest.mark.parametrize(
    ("pattern", "regex", "ignore_case"),
    [
        ("Porto", False, False),
        ("porto", False, True),
        ("porto", False, False),
        ("Faro", False, False),
        ("weather", False, False),
        (r"Question \d+: Lisbon", True, False),
        (r"^Answer (1|2)\d?:", True, False),
        ("a.b", False, False),  # plain text: the dot is a dot
        ("user", False, False),  # roles are labels, not text
    ],
)
@pytest.mark.parametrize("scope", ["main", "side", "all"])
def test_search_finds_exactly_what_brute_force_finds(
    history: statevcs.Repo, pattern: str, regex: bool, ignore_case: bool, scope: str
) -> None:
    repo = history
    if scope == "all":
        result = repo.search(pattern, all_refs=True, regex=regex, ignore_case=ignore_case)
        starts = list(repo.branches().values())
    else:
        result = repo.search(pattern, rev=scope, regex=regex, ignore_case=ignore_case)
        starts = [scope]
    compiled = compile_pattern(pattern, regex=regex, ignore_case=ignore_case)
    assert answer(result) == oracle(repo, compiled, starts)
    assert len({m.message_id for m in result.messages}) == len(result.messages)
    listed = {(c.commit, p, mid) for c in result.commits for p, mid in c.matches}
    assert listed == {
        (i.commit, i.position, m.message_id) for m in result.messages for i in m.introduced
    }


def test_each_message_is_read_once_however_many_commits_hold_it(
    history: statevcs.Repo, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = history
    asked: list[bytes] = []
    original = repo.objects.iter_docs

    def counting(ids: Any) -> Any:
        asked.extend(ids)
        return original(ids)

    monkeypatch.setattr(repo.objects, "iter_docs", counting)
    result = repo.search("Question", all_refs=True)
    assert len(asked) == len(set(asked)) == result.messages_searched
    assert result.commits_searched == len(list(repo.log_all()))
    distinct = {repr(m) for c in repo.log_all() for m in repo.show(c.id).messages}
    assert result.messages_searched == len(distinct)


def test_a_match_names_its_snippet_role_and_newest_commit_first(history: statevcs.Repo) -> None:
    result = history.search("Answer 11", rev="main")
    (match,) = result.messages
    assert match.role == "assistant"
    assert match.snippet == "Answer 11: go to Porto."
    assert [i.commit for i in match.introduced] == [history.resolve("main")]
    assert match.introduced[0].position == 23
    data = result.to_dict()
    assert data["messages"][0]["introduced"][0]["position"] == 23
    trimmed = history.search("Answer 11", rev="trimmed")
    # A root commit of its own: it added every message it holds, this one at position 3.
    assert [i.position for i in trimmed.messages[0].introduced] == [3]


@pytest.mark.parametrize(
    "pattern",
    [r"(a+)+$", r"(a*)*b", r"(x+x+)+y", r"(a|aa)*c", r"(\w+\s?)+$", r"(.*)\1", r"(a)?(?(1)b|c)"],
)
def test_patterns_that_could_backtrack_exponentially_are_refused(
    history: statevcs.Repo, pattern: str
) -> None:
    with pytest.raises(UnsafePattern, match="exponential"):
        history.search(pattern, regex=True, rev="main")
    assert isinstance(UnsafePattern("x"), StateVCSError)


@pytest.mark.parametrize("pattern", ["(", "[a-", "a{2,1}", "(?P<x>a)(?P<x>b)", "\\"])
def test_invalid_regexes_say_so(history: statevcs.Repo, pattern: str) -> None:
    with pytest.raises(InvalidPattern, match="not a valid regular expression"):
        history.search(pattern, regex=True)
    # As plain text the same characters are just text.
    assert history.search(pattern).messages == ()


def test_limits_and_bad_arguments(history: statevcs.Repo) -> None:
    with pytest.raises(InvalidPattern, match="empty"):
        history.search("")
    with pytest.raises(InvalidPattern, match="limit is"):
        history.search("a" * 1001)
    with pytest.raises(InvalidPattern, match="unbounded"):
        history.search("a*b*c*d*e*f*g*", regex=True)
    with pytest.raises(UnknownRevision):
        history.search("x", rev="nothing")
    for kwargs in (
        {"pattern": 1},
        {"pattern": b"x"},
        {"pattern": "x", "rev": 3},
        {"pattern": "x", "regex": "yes"},
        {"pattern": "x", "ignore_case": 1},
        {"pattern": "x", "all_refs": None},
        {"pattern": "x", "limit": "3"},
        {"pattern": "x", "limit": -1},
    ):
        with pytest.raises(TypeError):
            history.search(**kwargs)
    assert len(history.search("Question", rev="main", limit=3).messages) == 3
    newest = history.search("Question", rev="main", limit=1).messages[0]
    assert newest.snippet.startswith("Question 11")


def test_an_empty_repository_has_nothing_to_find(tmp_path: Path) -> None:
    with statevcs.Repo.init(tmp_path / "empty") as repo:
        result = repo.search("x")
        assert result.messages == () and result.commits_searched == 0
        assert repo.search("x", all_refs=True).messages == ()


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(
    pattern=st.text(
        alphabet=st.sampled_from(list("ab()[]{}|*+?.^$\\1,-:Pdw<>=!#")), min_size=1, max_size=24
    ),
    regex=st.booleans(),
)
def test_hostile_patterns_give_documented_errors_or_exact_results(
    history: statevcs.Repo, pattern: str, regex: bool
) -> None:
    before = (history.branches(), history.stats().objects)
    try:
        result = history.search(pattern, regex=regex, rev="side")
    except InvalidPattern:
        assert regex
        return
    compiled = compile_pattern(pattern, regex=regex, ignore_case=False)
    assert answer(result) == oracle(history, compiled, ["side"])
    assert (history.branches(), history.stats().objects) == before
