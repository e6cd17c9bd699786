"""What the MCP tools answer, as JSON-compatible data: no MCP SDK here, only the repository.

Every function checks its arguments before it reads or writes anything and raises
:class:`ToolArgumentError` (a :class:`~statevcs.errors.StateVCSError`) naming what to do
instead; the server turns it into a tool error. Text read from the repository is returned as it
is stored, inside JSON values: it is data for the client, never interpreted here.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

from ..errors import CorruptObject, InvalidRefName, StateVCSError
from ..experiments import compare as compare_runs
from ..hashing import from_hex
from ..integrations import history
from ..objects import Doc
from ..plain import to_plain
from ..refs import branch_ref, check_short_name, tag_ref
from ..repo import Commit, Repo
from ..serializers import serializer_for
from ..snapshot import (
    extras_entries,
    load_snapshot_object,
    message_ids_from,
    read_values,
    state_entries,
)
from ..stores.base import RefUpdate
from ..structures import prolly

MAX_REVISION = history.MAX_REVISION
"""The longest revision accepted, in characters."""
MAX_PAGE = 200
"""The most commits, messages, matches or turns one answer lists."""
MAX_RESULT_CHARS = 200_000
"""Default bound of one answer's JSON text, in characters."""


class ToolArgumentError(StateVCSError):
    """An MCP tool refused its arguments or could not answer; nothing was written."""


def _text(value: object, argument: str, *, limit: int = MAX_REVISION) -> str:
    if not isinstance(value, str):
        raise ToolArgumentError(f"{argument} must be a string, got {type(value).__name__}")
    if not value:
        raise ToolArgumentError(f"{argument} cannot be empty")
    if len(value) > limit:
        raise ToolArgumentError(f"{argument} is longer than {limit} characters")
    return value


def _count(value: object, argument: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ToolArgumentError(f"{argument} must be a whole number from {low} to {high}")
    return value


def _flag(value: object, argument: str) -> bool:
    if not isinstance(value, bool):
        raise ToolArgumentError(f"{argument} must be true or false")
    return value


def commit_data(commit: Commit) -> dict[str, Any]:
    """A commit as the tools show it."""
    return {
        "id": commit.id,
        "short_id": commit.short_id,
        "parents": list(commit.parents),
        "snapshot_id": commit.snapshot_id,
        "author": commit.author,
        "timestamp": commit.timestamp.isoformat(),
        "message": commit.message,
        "metadata": to_plain(commit.metadata),
    }


def _commit(repo: Repo, rev: object, argument: str = "rev") -> Commit:
    return repo.get_commit(_text(rev, argument))


def log(
    repo: Repo, rev: object = "HEAD", all_refs: object = False, limit: object = 20, skip: object = 0
) -> dict[str, Any]:
    """Commits newest first (first parents of ``rev``, or every ref's history), one page."""
    every = _flag(all_refs, "all")
    count = _count(limit, "limit", 1, MAX_PAGE)
    start = _count(skip, "skip", 0, 10**9)
    if every:
        walked = list(repo.log_all(limit=start + count + 1))
    else:
        name = _text(rev, "rev")
        if name not in ("HEAD", "@"):
            repo.get_commit(name)  # an unknown revision is an error; an unborn HEAD lists none
        walked = list(repo.log(name, limit=start + count + 1))
    page = walked[start : start + count]
    more = len(walked) > start + count
    return {
        "commits": [commit_data(c) for c in page],
        "next_skip": start + count if more else None,
    }


def show(
    repo: Repo,
    rev: object = "HEAD",
    offset: object = 0,
    limit: object = 50,
    state: object = True,
    extras: object = False,
) -> dict[str, Any]:
    """A commit, one page of its conversation, and (optionally) its state and extras.

    Only the page's messages are decoded, however long the conversation.
    """
    first = _count(offset, "offset", 0, 10**9)
    count = _count(limit, "limit", 1, MAX_PAGE)
    with_state = _flag(state, "state")
    with_extras = _flag(extras, "extras")
    commit = _commit(repo, rev)
    db = repo.objects
    obj = load_snapshot_object(db, from_hex(commit.snapshot_id))
    total = prolly.length(db, obj.messages) + len(obj.tail)
    page = message_ids_from(db, obj, first)[:count] if first < total else []
    docs = db.load_values(page)
    messages = []
    for i, message_id in enumerate(page):
        doc = docs[message_id]
        if not isinstance(doc, Doc):
            raise CorruptObject(message_id.hex(), "a message must be a document")
        messages.append({"position": first + i, "message": to_plain(doc.value)})
    data: dict[str, Any] = {
        "commit": commit_data(commit),
        "kind": obj.kind,
        "message_count": total,
        "offset": first,
        "messages": messages,
        "next_offset": first + count if total > first + count else None,
    }
    if with_state:
        codec = serializer_for(obj.state_codec, repo.serializer)
        data["state"] = to_plain(read_values(db, state_entries(db, obj), codec))
    if with_extras:
        data["extras"] = to_plain(read_values(db, extras_entries(db, obj), None))
    return data


def diff(repo: Repo, a: object, b: object = "HEAD") -> dict[str, Any]:
    """The structural diff of two revisions: messages by position, state and extras."""
    old, new = _commit(repo, a, "a"), _commit(repo, b, "b")
    result = repo.diff(old.id, new.id)
    m = result.messages
    return {
        "a": {"rev": a, "commit": old.id, "kind": result.old_kind},
        "b": {"rev": b, "commit": new.id, "kind": result.new_kind},
        "empty": result.is_empty,
        "messages": {
            "common_prefix": m.common_prefix,
            "a_length": m.old_length,
            "b_length": m.new_length,
            "changes": [
                {"index": c.index, "kind": c.kind, "a": to_plain(c.old), "b": to_plain(c.new)}
                for c in m.changes
            ],
        },
        "state": [
            {"key": c.key, "kind": c.kind, "a": to_plain(c.old), "b": to_plain(c.new)}
            for c in result.state
        ],
        "extras": [
            {"key": c.key, "kind": c.kind, "a": to_plain(c.old), "b": to_plain(c.new)}
            for c in result.extras
        ],
        "order": [{"field": c.field, "a": list(c.old), "b": list(c.new)} for c in result.order],
    }


def branches(repo: Repo) -> dict[str, Any]:
    """Every branch and tag with the commit it names, and the branch ``HEAD`` is on."""
    return {"head": repo.head_branch, "branches": repo.branches(), "tags": repo.tags()}


def search(
    repo: Repo,
    pattern: object,
    rev: object = "HEAD",
    all_refs: object = False,
    regex: object = False,
    ignore_case: object = False,
    limit: object = 20,
    messages: object = False,
) -> dict[str, Any]:
    """:meth:`statevcs.Repo.search`, newest ``limit`` matches (whole messages if asked)."""
    text = _text(pattern, "pattern", limit=1000)
    every = _flag(all_refs, "all")
    name = _text(rev, "rev")
    count = _count(limit, "limit", 1, MAX_PAGE)
    whole = _flag(messages, "messages")
    if not every and name not in ("HEAD", "@"):
        repo.get_commit(name)
    result = repo.search(
        text,
        rev=name,
        all_refs=every,
        regex=_flag(regex, "regex"),
        ignore_case=_flag(ignore_case, "ignore_case"),
        limit=count,
    ).to_dict()
    if not whole:
        for match in result["messages"]:
            del match["message"]
    return result


def compare(
    repo: Repo,
    a: object,
    b: object,
    offset: object = 0,
    limit: object = 50,
    messages: object = False,
) -> dict[str, Any]:
    """:func:`statevcs.experiments.compare` of two runs, one page of its turns."""
    first = _count(offset, "offset", 0, 10**9)
    count = _count(limit, "limit", 1, MAX_PAGE)
    whole = _flag(messages, "messages")
    old, new = _text(a, "a"), _text(b, "b")
    repo.get_commit(old)
    repo.get_commit(new)
    data = compare_runs(repo, old, new).to_dict(messages=whole)
    turns = data["turns"]
    data["turn_count"] = len(turns)
    data["offset"] = first
    data["turns"] = turns[first : first + count]
    data["next_offset"] = first + count if len(turns) > first + count else None
    return data


# --- writes -----------------------------------------------------------------------------------


def _name(value: object, kind: str) -> str:
    text = _text(value, "name")
    try:
        return check_short_name(text, kind)
    except InvalidRefName as exc:
        raise ToolArgumentError(f"{exc}; use letters, digits, '-', '_' and '/'") from None


def _absent(repo: Repo, ref: str, what: str) -> None:
    found = repo.refs.get(ref)
    if found is not None:
        raise ToolArgumentError(
            f"{what} already exists at {found.hex()[:12]}; pick another name (it is never moved)"
        )


def create_branch(repo: Repo, name: object, rev: object = "HEAD") -> dict[str, Any]:
    """Create a branch at ``rev`` (never moves an existing one)."""
    checked = _name(name, "branch")
    _absent(repo, branch_ref(checked), f"branch {checked!r}")
    commit = _commit(repo, rev)
    repo.refs.set(
        branch_ref(checked),
        from_hex(commit.id),
        expected=None,
        message=f"branch: created from {rev} over MCP",
    )
    return {"branch": checked, "commit": commit_data(commit)}


def create_tag(repo: Repo, name: object, rev: object = "HEAD") -> dict[str, Any]:
    """Create a tag at ``rev`` (never moves an existing one)."""
    checked = _name(name, "tag")
    _absent(repo, tag_ref(checked), f"tag {checked!r}")
    commit = _commit(repo, rev)
    repo.refs.set(
        tag_ref(checked), from_hex(commit.id), expected=None, message=f"tag: {rev} over MCP"
    )
    return {"tag": checked, "commit": commit_data(commit)}


def _existing_branch(repo: Repo, branch: object) -> tuple[str, str, bytes]:
    name = _name(branch, "branch")
    ref = branch_ref(name)
    tip = repo.refs.get(ref)
    if tip is None:
        raise ToolArgumentError(f"no branch named {name!r}; the branches tool lists them")
    return name, ref, tip


def reset(repo: Repo, branch: object, rev: object) -> dict[str, Any]:
    """Move an existing branch to ``rev`` (its old tip stays in the branch's reflog)."""
    name, ref, tip = _existing_branch(repo, branch)
    target = _commit(repo, history.relative(_text(rev, "rev"), ref))
    repo.refs.move(ref, from_hex(target.id), tip, f"reset: moving to {rev} over MCP")
    return {"branch": name, "old": tip.hex(), "commit": commit_data(target)}


def rollback(repo: Repo, branch: object, revision: object, reason: object) -> dict[str, Any]:
    """Put an earlier state back on top of ``branch``, keeping the abandoned tip under a tag.

    As the history tools do (``docs/history-tools.md``): the tip is tagged
    ``abandoned/<branch>/<n>`` and the branch moves to a new commit holding the target's
    snapshot, its parent the target, its metadata saying who asked and why. Both refs move in
    one atomic step.
    """
    name, ref, tip = _existing_branch(repo, branch)
    why = history.check_text(reason, "reason")
    written = _text(revision, "revision")
    target = _commit(repo, history.relative(written, ref), "revision")
    request = history.Request(
        "rollback",
        why,
        {"by": "mcp", "tool": "rollback"},
        revision=written,
        target=target.id,
    )
    abandoned = history.next_tag(repo, history.ABANDONED_PREFIX, name)
    commit_id = repo.objects.write_commit(
        from_hex(target.snapshot_id),
        [from_hex(target.id)],
        message=history.commit_message(request),
        author=repo.author,
        timestamp=datetime.now(UTC),
        metadata=history.record(request, abandoned=abandoned, abandoned_commit=tip.hex()),
    )
    repo.refs.update(
        [
            RefUpdate(ref, commit_id, tip, f"rollback: to {target.short_id} over MCP"),
            RefUpdate(tag_ref(abandoned), tip, None, f"rollback: abandoned {name}"),
        ],
        verify=[commit_id, tip],
    )
    return {
        "branch": name,
        "abandoned": abandoned,
        "abandoned_commit": tip.hex(),
        "commit": commit_data(repo.get_commit(commit_id.hex())),
    }


def as_json(data: Any, max_chars: int) -> str:
    """``data`` as JSON text of at most ``max_chars`` characters, or a :class:`ToolArgumentError`.

    Every character that could act on a terminal or hide text (controls, bidi and invisible
    format characters) is a ``\\uXXXX`` escape: the text decodes to the stored strings exactly.
    """
    text = json.dumps(data, ensure_ascii=False, indent=1)
    text = _UNSAFE.sub(_escape, text)
    if len(text) > max_chars:
        raise ToolArgumentError(
            f"the answer is {len(text)} characters, over this server's limit of {max_chars}; "
            "ask for less (a smaller limit, a later offset, messages=false) or start the "
            "server with a larger --max-chars"
        )
    return text


# Beyond what json.dumps escapes (C0 controls): DEL and C1 controls, lone surrogates, line and
# paragraph separators, bidi formatting and invisible format characters (as the command line).
_UNSAFE = re.compile(
    "[\x7f-\x9f\ud800-\udfff\u2028\u2029\u061c\u200b\u200e\u200f\u202a-\u202e\u2060-\u2069\u180e"
    "\ufeff\ufff9-\ufffb\U000e0000-\U000e007f]"
)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


__all__ = [
    "MAX_PAGE",
    "MAX_RESULT_CHARS",
    "MAX_REVISION",
    "ToolArgumentError",
    "as_json",
    "branches",
    "commit_data",
    "compare",
    "create_branch",
    "create_tag",
    "diff",
    "log",
    "reset",
    "rollback",
    "search",
    "show",
]
