"""Fork a run at any revision, or replay its user turns against another agent, on a new branch.

A :class:`Driver` is what a framework supplies: how to name a run's branch, restore a fresh
agent at a branch's tip, read the user turns of a revision range, run one turn and commit it.
The Strands and LangGraph integrations ship one each
(:class:`statevcs.integrations.strands.experiments.StrandsDriver`,
:class:`statevcs.integrations.langgraph.experiments.LangGraphDriver`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, runtime_checkable

from ..commitfields import canonical_metadata
from ..errors import RefExists
from ..plain import to_plain
from ..refs import short_name
from .timeline import Turn, parse_range

if TYPE_CHECKING:
    from ..repo import Commit, Repo

AgentT = TypeVar("AgentT")

REPLAY_KEY = "replay"
"""The commit metadata key a replayed turn records (its source commit and what changed)."""


@runtime_checkable
class Driver(Protocol[AgentT]):
    """How a framework takes part in experiments (see the module documentation)."""

    def branch(self, name: str) -> str:
        """The statevcs branch a run called ``name`` lives on (LangGraph: ``threads/<name>``)."""
        ...

    def restore(self, repo: Repo, branch: str, *, keep_settings: bool) -> AgentT:
        """A fresh agent at the tip of ``branch`` that commits to it (an empty one if unborn).

        ``keep_settings=True`` keeps the new agent's own configuration (system prompt, model,
        tools) instead of the one stored in the commit: what a replay compares.
        """
        ...

    def user_turns(self, repo: Repo, revisions: str) -> list[Turn]:
        """The user turns of ``"A..B"`` (or of all of ``B``), oldest first."""
        ...

    def run_turn(self, agent: AgentT, turn: Turn, metadata: Mapping[str, Any]) -> None:
        """Send ``turn``'s prompt to ``agent`` and let it answer (``metadata`` for the commit)."""
        ...

    def commit(
        self, repo: Repo, agent: AgentT, branch: str, message: str, metadata: Mapping[str, Any]
    ) -> Commit:
        """Commit the agent's state after a turn to ``branch`` and return the commit."""
        ...

    def settings(self, agent: AgentT) -> dict[str, Any]:
        """The agent's configuration as JSON-compatible values (model, prompt, tools, ...)."""
        ...

    def stored_settings(self, repo: Repo, commit: str) -> dict[str, Any]:
        """The part of that configuration a commit records (compared to find what changed)."""
        ...


@dataclass(frozen=True, slots=True)
class Fork(Generic[AgentT]):
    """A fresh agent restored at a revision, on its own new branch."""

    agent: AgentT
    branch: str
    """The new branch (short name)."""
    commit: str
    """The commit it starts from."""


@dataclass(frozen=True, slots=True)
class ReplayedTurn:
    """One replayed turn: the source turn's commit and the commit the replay made for it."""

    index: int
    text: str
    source: str | None
    commit: str

    def to_dict(self) -> dict[str, Any]:
        """A JSON-compatible rendering."""
        return {
            "index": self.index,
            "text": self.text,
            "source": self.source,
            "commit": self.commit,
        }


@dataclass(frozen=True, slots=True)
class ReplayResult(Generic[AgentT]):
    """What :func:`replay` did: the source run, the new branch, each turn, what changed."""

    source: str
    """The source revision as given (``B`` of ``A..B``)."""
    source_commit: str
    branch: str
    """The new branch holding the replay (short name)."""
    base: str | None
    """The commit both runs share (``A`` of ``A..B``; ``None`` when the replay starts empty)."""
    changes: dict[str, Any]
    turns: tuple[ReplayedTurn, ...]
    agent: AgentT = field(repr=False)

    @property
    def branches(self) -> tuple[str, str]:
        """``(source, replay branch)``: the pair to pass to :func:`compare`."""
        return self.source, self.branch

    def to_dict(self) -> dict[str, Any]:
        """A JSON-compatible rendering (without the agent)."""
        return {
            "source": self.source,
            "source_commit": self.source_commit,
            "branch": self.branch,
            "base": self.base,
            "changes": to_plain(self.changes),
            "turns": [t.to_dict() for t in self.turns],
        }


def _check_driver(driver: object) -> None:
    if not isinstance(driver, Driver):
        raise TypeError(
            f"driver must implement statevcs.experiments.Driver, got {type(driver).__name__}"
        )


def _new_branch(repo: Repo, driver: Driver[Any], name: object) -> str:
    if not isinstance(name, str):
        raise TypeError(f"branch must be a str, got {type(name).__name__}")
    branch = driver.branch(name)
    if branch in repo.branches():
        raise RefExists(
            f"branch {branch!r} already exists at {repo.branches()[branch][:12]}; pick another "
            "name for the experiment (or delete it with repo.delete_branch)"
        )
    return branch


def fork(repo: Repo, driver: Driver[AgentT], rev: str, *, branch: str) -> Fork[AgentT]:
    """Start a new run from revision ``rev``: a new branch there and a fresh agent restored on it.

    The branch shares every object of the history up to ``rev`` (creating it writes no object).
    Raises ``RefExists`` if the branch exists and ``UnknownRevision`` if ``rev`` names nothing.
    """
    _check_driver(driver)
    if not isinstance(rev, str):
        raise TypeError(f"rev must be a str, got {type(rev).__name__}")
    target = _new_branch(repo, driver, branch)
    commit = repo.resolve(rev)
    repo.branch(target, commit)
    with _removed_on_failure(repo, target):
        agent = driver.restore(repo, target, keep_settings=False)
    return Fork(agent, short_name(target), commit)


def replay(
    repo: Repo,
    driver: Driver[AgentT],
    revisions: str,
    *,
    branch: str,
    changes: Mapping[str, Any] | None = None,
) -> ReplayResult[AgentT]:
    """Send the user turns of ``revisions`` again, to the driver's agent, on a new branch.

    ``revisions`` is ``"A..B"`` (the new branch starts at ``A``; the turns after it up to ``B``
    are re-sent) or ``"B"`` (the whole conversation, from an empty agent). The agent keeps its
    own configuration -- another model, system prompt, tool set or graph -- and each turn is
    committed with metadata ``{"replay": {"source": <source turn's commit>, "turn": k,
    "changes": {...}}}``; ``changes`` describes what differs (merged over what the driver
    detects: settings the base commit records that the new agent does not share).
    Nothing is created when the range, the branch name or the agent's setup is refused; a
    turn that fails (the model raises) leaves the turns committed before it on the branch.
    """
    _check_driver(driver)
    since_rev, tip_rev = parse_range(revisions)
    if changes is not None and not isinstance(changes, Mapping):
        raise TypeError(f"changes must be a mapping or None, got {type(changes).__name__}")
    given = canonical_metadata({"changes": dict(changes or {})})["changes"]
    target = _new_branch(repo, driver, branch)
    tip = repo.resolve(tip_rev)
    base = repo.resolve(since_rev) if since_rev is not None else None
    # Read (and check) the turns before creating anything: a bad range leaves no branch.
    source_turns = driver.user_turns(repo, revisions)
    if base is not None:
        repo.branch(target, base)
    with _removed_on_failure(repo, target):
        agent = driver.restore(repo, target, keep_settings=True)
        detected = _detected(repo, driver, agent, base)
        described = canonical_metadata({"changes": {**detected, **given}})["changes"]
    replayed = []
    for turn in source_turns:
        info = {"source": turn.commit, "source_tip": tip, "turn": turn.index, "changes": described}
        metadata = {REPLAY_KEY: info}
        driver.run_turn(agent, turn, metadata)
        first = turn.text.splitlines()[0] if turn.text else ""
        commit = driver.commit(repo, agent, target, f"replay turn {turn.index}: {first}", metadata)
        replayed.append(ReplayedTurn(turn.index, turn.text, turn.commit, commit.id))
    return ReplayResult(tip_rev, tip, short_name(target), base, described, tuple(replayed), agent)


@contextmanager
def _removed_on_failure(repo: Repo, branch: str) -> Iterator[None]:
    """Delete the experiment's new branch if the agent cannot be set up on it."""
    try:
        yield
    except BaseException:
        if branch in repo.branches():
            repo.delete_branch(branch)
        raise


def _detected(
    repo: Repo, driver: Driver[Any], agent: Any, base: str | None
) -> dict[str, dict[str, Any]]:
    if base is None:
        return {}
    stored = driver.stored_settings(repo, base)
    current = driver.settings(agent)
    return {
        key: {"from": value, "to": current[key]}
        for key, value in stored.items()
        if key in current and current[key] != value
    }


__all__ = ["REPLAY_KEY", "Driver", "Fork", "ReplayResult", "ReplayedTurn", "fork", "replay"]
