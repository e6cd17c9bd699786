"""What the history tools of every framework share: argument checks, revisions relative to the
conversation's own branch, bounded plain-text answers, and the names that keep abandoned
timelines and labelled checkpoints reachable.

The Strands tools (:mod:`statevcs.integrations.strands.tools`) and the LangChain/LangGraph tools
(:mod:`statevcs.integrations.langgraph.tools`) are thin wrappers around this module. Nothing
here imports a framework.

Names (see ``docs/history-tools.md``):

* ``abandoned/<branch>/<n>`` -- a tag on the tip a rollback left behind (``n`` counts from 1);
* ``checkpoints/<branch>/<n>`` -- a tag on a commit the model asked to keep, with its label.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ..diff import render
from ..errors import InvalidRefName, StateVCSError, UnknownRevision
from ..refs import HEAD, TAG_PREFIX, check_short_name, short_name, tag_ref

if TYPE_CHECKING:
    from ..repo import Commit, Repo

ABANDONED_PREFIX = "abandoned"
"""Tags ``abandoned/<branch>/<n>`` keep each timeline a rollback left behind."""
CHECKPOINTS_PREFIX = "checkpoints"
"""Tags ``checkpoints/<branch>/<n>`` name the commits the model asked to keep."""
MAX_OUTPUT = 4000
"""Default bound, in characters, of one tool answer."""
MAX_LIMIT = 50
"""The most commits ``list_checkpoints`` lists in one answer."""
MAX_TEXT = 500
"""The most characters of a checkpoint label or a rollback reason."""
MAX_REVISION = 200
"""The most characters of a revision a tool accepts."""

RequestKind = Literal["checkpoint", "branch", "rollback"]

_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


class HistoryToolError(StateVCSError):
    """A history tool refused its arguments; the tool answers the model with this message."""


@dataclass(frozen=True, slots=True)
class Request:
    """A write a tool asked for during an invocation, applied when the invocation ends."""

    kind: RequestKind
    text: str
    """The checkpoint label, the new branch's name, or the rollback reason."""
    requested_by: Mapping[str, Any]
    """Who asked: ``{"by": "model", "tool": ..., "tool_call_id": ..., ...}``."""
    revision: str = ""
    """For a rollback: the revision as the model wrote it."""
    target: str = ""
    """For a rollback: the commit ``revision`` named when the model asked (full id)."""


@dataclass(slots=True)
class Pending:
    """The requests of one conversation waiting for the end of its invocation."""

    requests: list[Request] = field(default_factory=list)

    def add(self, request: Request) -> None:
        """Queue ``request``; a second rollback in one invocation is refused."""
        if request.kind == "rollback":
            earlier = next((r for r in self.requests if r.kind == "rollback"), None)
            if earlier is not None:
                raise HistoryToolError(
                    f"a rollback to {earlier.target[:12]} ({earlier.revision!r}) is already "
                    "scheduled for the end of this invocation; only one rollback per invocation"
                )
        if request.kind == "branch" and any(
            r.kind == "branch" and r.text == request.text for r in self.requests
        ):
            raise HistoryToolError(f"branch {request.text!r} is already scheduled")
        self.requests.append(request)


def escape(value: object) -> str:
    """Text read from a repository, as data: control characters shown as ``\\xNN`` escapes."""
    return _CONTROL.sub(lambda m: repr(m.group())[1:-1], str(value))


def bounded(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying so when it was cut."""
    if len(text) <= limit:
        return text
    note = f"\n... (cut: {len(text)} characters, limit {limit})"
    return text[: max(0, limit - len(note))] + note


def answer(call: Callable[[], str], limit: int) -> str:
    """Run a tool body; a refused argument or a data error becomes an ``error: ...`` answer.

    The model reads the answer; the agent loop never sees an exception for bad arguments.
    """
    try:
        return bounded(call(), limit)
    except (StateVCSError, TypeError, ValueError) as exc:
        return bounded(f"error: {escape(exc)}", limit)


def check_text(value: object, argument: str, *, empty: bool = False) -> str:
    """A label or reason: a str of at most :data:`MAX_TEXT` characters, valid Unicode."""
    if not isinstance(value, str):
        raise HistoryToolError(f"{argument} must be text, got {type(value).__name__}")
    if not empty and not value.strip():
        raise HistoryToolError(f"{argument} cannot be empty: say in a few words what and why")
    if len(value) > MAX_TEXT:
        raise HistoryToolError(
            f"{argument} is {len(value)} characters long; at most {MAX_TEXT}, please"
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise HistoryToolError(f"{argument} is not valid Unicode text") from None
    return value


def check_limit(value: object) -> int:
    """A ``list_checkpoints`` limit: an int from 1 to :data:`MAX_LIMIT`."""
    if not isinstance(value, int) or isinstance(value, bool) or not 1 <= value <= MAX_LIMIT:
        raise HistoryToolError(f"limit must be a whole number from 1 to {MAX_LIMIT}")
    return value


def check_branch_name(value: object) -> str:
    """A new branch's short name, by git's ref-name rules."""
    if not isinstance(value, str):
        raise HistoryToolError(f"name must be text, got {type(value).__name__}")
    try:
        return check_short_name(value, "branch")
    except InvalidRefName as exc:
        raise HistoryToolError(
            f"{escape(exc)}; use letters, digits, '-', '_' and '/' (e.g. 'try-shorter-plan')"
        ) from None


def relative(revision: object, branch_ref: str) -> str:
    """``revision`` with ``HEAD`` / ``@`` meaning the conversation's branch ``branch_ref``."""
    if not isinstance(revision, str):
        raise HistoryToolError(f"revision must be text, got {type(revision).__name__}")
    if len(revision) > MAX_REVISION:
        raise HistoryToolError(f"revision is longer than {MAX_REVISION} characters")
    if revision in (HEAD, "@"):
        return branch_ref
    if revision.startswith(HEAD) and revision[len(HEAD) : len(HEAD) + 1] in ("~", "^", "@"):
        return branch_ref + revision[len(HEAD) :]
    if revision.startswith("@{"):
        return branch_ref + revision
    if revision.startswith("@") and revision[1:2] in ("~", "^"):
        return branch_ref + revision[1:]
    return revision


def resolve(repo: Repo, branch_ref: str, revision: object, head: str | None = None) -> Commit:
    """The commit ``revision`` names, ``HEAD`` being ``head`` (default: the tip of
    ``branch_ref``)."""
    if repo.refs.get(branch_ref) is None:
        raise HistoryToolError(
            f"branch {short_name(branch_ref)!r} has no commits yet: nothing to go back to"
        )
    rewritten = relative(revision, head or branch_ref)
    try:
        return repo.get_commit(rewritten)
    except UnknownRevision as exc:
        # Say it in the model's own words: HEAD~9, not refs/heads/main~9.
        text = str(exc).replace(rewritten, str(revision))
        raise HistoryToolError(
            f"{escape(text)}; list_checkpoints shows the revisions you can name"
        ) from None


def _tags_by_commit(repo: Repo, branch: str) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for prefix in (ABANDONED_PREFIX, CHECKPOINTS_PREFIX):
        folder = f"{TAG_PREFIX}{prefix}/{branch}/"
        for ref, commit_id in repo.refs.as_hex(folder).items():
            found.setdefault(commit_id, []).append(ref[len(TAG_PREFIX) :])
    return found


def list_text(repo: Repo, branch_ref: str, limit: object, head: str | None = None) -> str:
    """The newest ``limit`` commits of the branch (from ``head`` if given), newest first."""
    count = check_limit(limit)
    branch = short_name(branch_ref)
    if repo.refs.get(branch_ref) is None:
        return f"branch {branch!r} has no commits yet"
    tags = _tags_by_commit(repo, branch)
    lines = [f"branch {escape(branch)}, newest first (name a commit by HEAD~n or its id):"]
    for steps, commit in enumerate(repo.log(head or branch_ref, limit=count)):
        when = commit.timestamp.strftime("%Y-%m-%d %H:%M:%S")
        names = tags.get(commit.id, [])
        shown = f"  [{', '.join(escape(n) for n in names)}]" if names else ""
        message = escape(commit.message)
        if len(message) > 120:
            message = message[:119] + "..."
        lines.append(f"HEAD~{steps}  {commit.short_id}  {when}  {message}{shown}")
    return "\n".join(lines)


def diff_text(repo: Repo, branch_ref: str, a: object, b: object, head: str | None = None) -> str:
    """The structural diff of two revisions as plain text (``HEAD``: ``head`` or the tip)."""
    old = resolve(repo, branch_ref, a, head)
    new = resolve(repo, branch_ref, b, head)
    return escape_lines(render(repo.diff(old.id, new.id)))


def escape_lines(text: str) -> str:
    """``text`` with control characters escaped inside each line (line breaks kept)."""
    return "\n".join(escape(line) for line in text.split("\n"))


def next_tag(repo: Repo, prefix: str, branch: str) -> str:
    """The first free ``<prefix>/<branch>/<n>`` tag name."""
    folder = f"{TAG_PREFIX}{prefix}/{branch}/"
    used = set()
    for ref in repo.refs.as_dict(folder):
        rest = ref[len(folder) :]
        if rest.isascii() and rest.isdigit():  # not "²", which int() refuses
            used.add(int(rest))
    number = max(used, default=0) + 1
    name = f"{prefix}/{branch}/{number}"
    tag_ref(name)  # a branch name near the length limit leaves no room: say so now
    return name


def scheduled(request: Request, conversation: str) -> str:
    """What a write tool answers: the request is queued, applied when the invocation ends."""
    if request.kind == "rollback":
        return (
            f"rollback to {request.target[:12]} ({escape(request.revision)}) scheduled: it is "
            f"applied when this {conversation} ends; the current timeline will stay reachable "
            "as a tag abandoned/<branch>/<n>"
        )
    if request.kind == "branch":
        return (
            f"branch {escape(request.text)!r} scheduled: it is created at the state this "
            f"{conversation} ends with; this conversation stays on its own branch"
        )
    return (
        f"checkpoint {escape(request.text)!r} scheduled: it is saved when this {conversation} "
        "ends, as a tag checkpoints/<branch>/<n>"
    )


def record(request: Request, *, abandoned: str, abandoned_commit: str) -> dict[str, Any]:
    """The metadata a rollback commit carries: who asked, why, from where to where."""
    return {
        "event": "rollback",
        "requested_by": dict(request.requested_by),
        "reason": request.text,
        "revision": request.revision,
        "target": request.target,
        "abandoned": abandoned,
        "abandoned_commit": abandoned_commit,
    }


def commit_message(request: Request) -> str:
    """A one-line commit message for a rollback (the reason's first line, shortened)."""
    reason = " ".join(escape(request.text).split())
    if len(reason) > 100:
        reason = reason[:99] + "..."
    return f"rollback to {request.target[:12]}: {reason}"


TOOL_DOCS: dict[str, str] = {
    "checkpoint": (
        "Save the conversation's state under a label, to come back to later with rollback. "
        "It is saved when the current turn ends."
    ),
    "list_checkpoints": (
        "List the newest saved states of this conversation (newest first), with the names "
        "rollback and diff accept (HEAD~n, a commit id, a checkpoints/... tag)."
    ),
    "rollback": (
        "Go back to an earlier saved state (e.g. 'HEAD~2', a commit id or a checkpoints/... "
        "tag), saying why. Applied when the current turn ends; the abandoned timeline stays "
        "reachable as a tag abandoned/<branch>/<n>."
    ),
    "start_branch": (
        "Save the state this turn ends with as a new branch, to explore an alternative later. "
        "This conversation stays on its own branch."
    ),
    "diff": (
        "Show how two saved states differ (messages, state, extras), e.g. diff('HEAD~2', 'HEAD')."
    ),
}
"""The tools' descriptions, shared by every framework."""

__all__ = [
    "ABANDONED_PREFIX",
    "CHECKPOINTS_PREFIX",
    "MAX_LIMIT",
    "MAX_OUTPUT",
    "MAX_REVISION",
    "MAX_TEXT",
    "TOOL_DOCS",
    "HistoryToolError",
    "Pending",
    "Request",
    "RequestKind",
    "answer",
    "bounded",
    "check_branch_name",
    "check_limit",
    "check_text",
    "commit_message",
    "diff_text",
    "escape",
    "escape_lines",
    "list_text",
    "next_tag",
    "record",
    "relative",
    "resolve",
    "scheduled",
]
