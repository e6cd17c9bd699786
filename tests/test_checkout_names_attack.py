"""Attacks on the one-read checkout lookup (``_branch_named`` with a caching ``_Context``) and
the one-regex ``check_ref_name``: same answers as the code they replaced, on every store.

``checkout(obj, rev)`` of an object this handle does not track is specified as: ``rev`` naming
an existing branch (``name`` or ``refs/heads/name``) restores that branch's tip and stays
attached to it, even over a tag or a full commit id of the same name; ``HEAD`` and ``@`` are the
handle's own branch; anything else is exactly ``resolve(rev)`` (same commit, same
``AmbiguousRefWarning`` texts, same exception type and message), detached.
"""

from __future__ import annotations

import tempfile
import warnings
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from statevcs import Repo
from statevcs.errors import InvalidRefName, InvalidRevision, StateVCSError
from statevcs.refs import _FORBIDDEN_CHARS, check_ref_name

# --- check_ref_name: the one-regex scan against the per-character loop it replaced ---------


def _loop_reason(name: str) -> str | None:
    """The reason the per-character loop (statevcs 0.2.0) gave for the first bad character."""
    for char in name:
        if ord(char) < 0x20 or ord(char) == 0x7F:
            return "it contains a control character"
        if 0xD800 <= ord(char) <= 0xDFFF:
            return (
                f"it contains a lone surrogate ({char!r}), which is not Unicode text; "
                "decode the name from UTF-8 first"
            )
        if char == " ":
            return "it contains a space"
        if char in _FORBIDDEN_CHARS:
            return f"it contains {_FORBIDDEN_CHARS[char]}"
    return None


def _verdict(name: str) -> str | None:
    try:
        check_ref_name(name)
    except InvalidRefName as exc:
        return str(exc)
    return None


def test_every_code_point_gets_the_per_character_loops_verdict() -> None:
    """Each of the 1,114,112 code points, between two good characters: refused exactly when the
    old loop refused it, with its reason text."""
    for code in range(0x110000):
        name = f"a{chr(code)}b"
        reason = _loop_reason(name)
        verdict = _verdict(name)
        if code in (0x5C,):  # a backslash is refused before the scan
            assert verdict is not None and "backslash" in verdict
        elif reason is None:
            assert verdict is None or "'.'" in verdict, (hex(code), verdict)
        else:
            assert verdict == str(InvalidRefName(name, reason)), hex(code)


_HOSTILE = [*"ab/.-@{}~^:?*[\\ é0", "\x00", "\x1f", "\x7f", "\x85", "\u2028", "\ud800"]
_HOSTILE += ["\udfff", "\ufeff", "\U0001f600", ".lock", "\t", "\n"]


@settings(max_examples=3000, deadline=None)
@given(
    st.one_of(st.text(max_size=40), st.lists(st.sampled_from(_HOSTILE), max_size=24).map("".join))
)
def test_check_ref_name_gives_the_loops_reason_for_any_text(name: str) -> None:
    """Refusals decided before the scan (empty, '@', '..', '@{', backslash) are untouched;
    otherwise the first character the loop refused is named with the loop's words."""
    verdict = _verdict(name)
    early = not name or name == "@" or ".." in name or "@{" in name or "\\" in name
    reason = _loop_reason(name)
    if early:
        assert verdict is not None
    elif reason is not None:
        assert verdict == str(InvalidRefName(name, reason))
    elif verdict is not None:  # refused by a later rule, never for a character
        character = ["control character", "lone surrogate", "a space"]
        character += [f"contains {shown}" for shown in _FORBIDDEN_CHARS.values()]
        assert not any(words in verdict for words in character), verdict


# --- checkout's branch and revision lookup ---------------------------------------------------


def _at(second: int) -> datetime:
    return datetime.fromtimestamp(1_700_000_000 + second, UTC)


def _outcome(call: Any) -> tuple[Any, ...]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result: tuple[Any, ...] = ("ok", call())
        except Exception as exc:  # compared, type and text, with the specification's
            result = ("error", type(exc).__name__, str(exc))
    return (*result, [(w.category.__name__, str(w.message)) for w in caught])


def _tip(repo: Repo, branch: str) -> str:
    tip = repo.store.get_ref(f"refs/heads/{branch}")
    assert tip is not None
    return tip.hex()


def _expected(repo: Repo, branches: set[str], rev: str) -> tuple[Any, ...]:
    short = rev.removeprefix("refs/heads/") if rev.startswith("refs/heads/") else rev
    if short in branches:
        return _outcome(lambda: (_tip(repo, short), short))
    if rev in ("HEAD", "@"):
        return _outcome(lambda: (_tip(repo, "main"), "main"))
    return _outcome(lambda: (repo.resolve(rev), None))


def _actual(repo: Repo, rev: str) -> tuple[Any, ...]:
    def run() -> tuple[str, str | None]:
        agent: dict[str, Any] = {}
        commit = repo.checkout(agent, rev)
        return commit.id, repo.attached_branch(agent)

    return _outcome(run)


def _history(repo: Repo) -> list[str]:
    agent: dict[str, Any] = {"messages": [{"role": "user", "content": "hi"}], "n": 0}
    ids = []
    for n in range(3):
        agent["n"] = n
        ids.append(repo.commit(agent, message=f"c{n}", timestamp=_at(n)).id)
    return ids


_NAMES = ["dup", "x", "heads/x", "refs/heads/x", "tags/dup", "refs/tags/dup", "ü", "@x", "x@"]
_NAMES += ["dup/HEAD", "remotes/dup", "a.b", "Main", "-x", "HEAD", "@"]


def _revs(ids: list[str]) -> list[str]:
    tails = ["", "~1", "^", "@{0}", "@{1}"]
    names = [*_NAMES, *ids, *(i.upper() for i in ids), *(i[:8] for i in ids), "main"]
    revs = [f"{name}{tail}" for name in names for tail in tails]
    revs += [f"refs/heads/{name}" for name in names] + [f"refs/tags/{name}" for name in names]
    revs += ["", " ", "x\x00", "\ud800", "refs/heads/\ud800", "refs/heads/x\x7f", "refs/heads/"]
    revs += ["refs/heads/a..b", "refs/heads/" + "q" * 1100, "nosuch", "0" * 64, "@{1}"]
    return revs


@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    made=st.lists(
        st.tuples(
            st.sampled_from(["branch", "tag"]),
            st.sampled_from([*_NAMES, "id0", "id1", "ID2", "pre1"]),
            st.integers(0, 2),
        ),
        max_size=10,
    ),
    store=st.sampled_from(["memory", "sqlite"]),
)
def test_checkout_finds_what_the_specification_says_among_colliding_names(
    made: list[tuple[str, str, int]], store: str
) -> None:
    with tempfile.TemporaryDirectory() as folder:
        repo = Repo.init("memory://" if store == "memory" else Path(folder) / "r")
        ids = _history(repo)
        branches = {"main"}
        for kind, name, at in made:
            name = {"id0": ids[0], "id1": ids[1], "ID2": ids[2].upper(), "pre1": ids[1][:8]}.get(
                name, name
            )
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    (repo.branch if kind == "branch" else repo.tag)(name, ids[at], force=True)
            except InvalidRefName:
                continue
            if kind == "branch":
                branches.add(name)
        for rev in _revs(ids):
            # A checked-out dict moves the handle's HEAD (dicts cannot be tracked weakly).
            repo.checkout({}, "refs/heads/main")
            expected = _expected(repo, branches, rev)
            assert _actual(repo, rev) == expected, rev
        repo.close()


@pytest.mark.parametrize(
    "rev", ["refs/heads/\ud800", "refs/heads/x\udfff/y", "refs/heads/\ud83d\ude00\ud800"]
)
def test_checkout_of_a_full_branch_name_with_a_lone_surrogate_is_an_invalid_revision(
    repo: Repo, rev: str
) -> None:
    """It was a UnicodeEncodeError from SQLite (the name went to the store as it was)."""
    _history(repo)
    agent: dict[str, Any] = {}
    with pytest.raises(InvalidRevision, match="lone surrogate"):
        repo.checkout(agent, rev)
    assert agent == {}
    with pytest.raises(StateVCSError):
        repo.checkout(agent, "refs/heads/a..b")
