"""The ``statevcs`` command line: git's habits (log, show, diff, branch, merge, ...) on agent state.

The repository is found as git finds one: the current folder or its nearest parent holding
``statevcs.sqlite3`` (or ``.statevcs/statevcs.sqlite3``); ``-C PATH`` runs as if started in
PATH, ``--repo URL`` (or ``$STATEVCS_REPO``) names one directly. Read commands take ``--json``.
Colors follow the terminal: none when piped or when ``NO_COLOR`` is set. Errors print one line,
``error: ...``, and exit 1 (2 for a command used wrongly); ``--debug`` shows the traceback.

Everything read from a repository (messages, authors, keys, ref names, metadata) is printed as
plain text through :func:`safe_text`, never as rich markup, with terminal control characters
shown as visible escapes.
"""

from __future__ import annotations

import base64
import contextlib
import json
import math
import os
import re
import sys
import traceback
import warnings
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, NoReturn

import click
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from .errors import (
    RefExists,
    RefNotFound,
    RepositoryExists,
    RepositoryNotFound,
    StateVCSError,
    UnknownRevision,
)

if TYPE_CHECKING:
    from .diff import SnapshotDiff
    from .repo import Commit, Repo

DB_FILENAME = "statevcs.sqlite3"
HIDDEN_FOLDER = ".statevcs"
# git's default log.graphColors: six colors, then the same six in bold.
_LANE_COLORS = (
    "red",
    "green",
    "yellow",
    "blue",
    "magenta",
    "cyan",
    "bold red",
    "bold green",
    "bold yellow",
    "bold blue",
    "bold magenta",
    "bold cyan",
)
_ROLE_STYLES = {
    "user": "bold green",
    "assistant": "bold blue",
    "system": "bold magenta",
    "tool": "bold yellow",
}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(w|d|h|m|s)", re.IGNORECASE)
_UNIT_SECONDS = {"w": 604_800, "d": 86_400, "h": 3_600, "m": 60, "s": 1}

REVISION_HELP = """\
\b
Revisions (REV, START, A, B):
  HEAD, @        the newest commit of the current branch
  NAME           a branch or tag (also refs/heads/NAME, refs/tags/NAME)
  1a2b3c4d       a commit id, or a unique prefix of it (4 hex digits or more)
  REV~N          N generations back along first parents (REV~ is REV~1)
  REV^N          the N-th parent of a merge (REV^ is REV^1, REV^0 is REV)
  NAME@{N}       where NAME pointed N moves ago (see `statevcs reflog NAME`);
                 @{N} is the same for the current branch
  Suffixes chain: main~2^2, budget@{1}~3.
"""

DURATION_HELP = (
    "a number of seconds (90, 0.5), or counts with units w, d, h, m, s, combined (2w, 3d12h, "
    "90m, 45s, 1w2d); 0 or now means no grace"
)


# --- terminal safety ----------------------------------------------------------------------

# C0 and C1 control characters and DEL drive the terminal (colors, cursor moves, OSC 8 links,
# title changes, \x9b is a one-byte CSI); the bidi embeddings, overrides and isolates reorder
# what is shown (CVE-2021-42574); lone surrogates cannot be encoded for output at all.
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")
# In JSON output C0 characters are already escaped by the encoder; these are not.
_UNSAFE_IN_JSON = re.compile("[\x7f-\x9f\u202a-\u202e\u2066-\u2069\ud800-\udfff]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def safe_text(value: object, *, keep: str = "") -> str:
    """Return ``value`` as text that cannot drive a terminal.

    Control characters (C0, DEL, C1), the bidi override and isolate characters (U+202A-U+202E,
    U+2066-U+2069) and lone surrogates become visible escapes such as ``\\x1b`` and ``\\u202e``;
    the characters in ``keep`` (``"\\n"``, ``"\\t"``) pass through. Every string the command
    line prints from a repository goes through this function.
    """
    text = value if isinstance(value, str) else str(value)
    if keep:
        return _UNSAFE.sub(lambda m: m.group() if m.group() in keep else _escape(m), text)
    return _UNSAFE.sub(_escape, text)


def _json_text(text: str) -> str:
    # These characters only ever occur inside JSON string literals, so a \uXXXX escape keeps
    # the document valid and the value unchanged for a JSON reader.
    return _UNSAFE_IN_JSON.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def _text(*parts: object | tuple[object, str]) -> Text:
    """Build one rich ``Text`` from parts (a value, or ``(value, style)``), all made safe."""
    line = Text()
    for part in parts:
        value, style = part if isinstance(part, tuple) else (part, "")
        line.append(safe_text(value), style=style)
    return line


def _lines(text: str) -> list[str]:
    """Split on newlines only (a lone \\r is escaped, not a line break); drop CRLF's \\r."""
    return [line.removesuffix("\r") for line in text.split("\n")]


# --- repository discovery -------------------------------------------------------------


def find_repository(start: Path) -> Path:
    """Return the statevcs repository folder at ``start`` or its nearest parent.

    A repository folder holds ``statevcs.sqlite3``; a project folder may instead hold one in
    ``.statevcs/``. Raises :class:`RepositoryNotFound` when none is found up to the root.
    """
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / DB_FILENAME).is_file():
            return folder
        if (folder / HIDDEN_FOLDER / DB_FILENAME).is_file():
            return folder / HIDDEN_FOLDER
    raise RepositoryNotFound(
        f"not a statevcs repository (or any parent up to /): {start}; create one with "
        "`statevcs init`, or name one with -C PATH or --repo PATH"
    )


@dataclass
class _State:
    """Options shared by every command, and the lazily opened repository."""

    repo_url: str | None
    debug: bool
    color: str
    serializer: str
    _repo: Repo | None = None
    _out: Console | None = None
    _err: Console | None = None
    closers: list[Any] = field(default_factory=list)

    def _console(self, stderr: bool) -> Console:
        force = True if self.color == "always" else None
        # markup=False and emoji=False: a plain string is printed as it is, never parsed.
        return Console(
            stderr=stderr,
            highlight=False,
            markup=False,
            emoji=False,
            soft_wrap=True,
            force_terminal=force,
            no_color=True if self.color == "never" else None,
        )

    @property
    def out(self) -> Console:
        """The console for results (stdout)."""
        if self._out is None:
            self._out = self._console(stderr=False)
        return self._out

    @property
    def err(self) -> Console:
        """The console for notes and progress (stderr)."""
        if self._err is None:
            self._err = self._console(stderr=True)
        return self._err

    def repo(self) -> Repo:
        """Open (once) the repository these options name."""
        if self._repo is None:
            from .repo import Repo

            location: str | Path = (
                self.repo_url if self.repo_url is not None else find_repository(Path.cwd())
            )
            if str(location) == "memory://":
                # A throwaway repository: each command starts from an empty one.
                self._repo = Repo.init("memory://", serializer=self._serializer())
                return self._repo
            try:
                self._repo = Repo.open(location, serializer=self._serializer())
            except RepositoryNotFound:
                if _holds_database(Path(location)):
                    raise  # a file that is not a statevcs database: the library says which
                raise CommandError(
                    f"not a statevcs repository: {location}; create one with "
                    f"`statevcs init {location}`, or name an existing one with -C PATH"
                ) from None
        return self._repo

    def _serializer(self) -> Any:
        from .serializers import JSONSerializer, MsgpackSerializer, PickleSerializer

        if self.serializer == "msgpack":
            return MsgpackSerializer()
        if self.serializer == "pickle":
            key = os.environ.get("STATEVCS_PICKLE_KEY")
            if not key:
                raise CommandError(
                    "--serializer pickle needs the signing key in $STATEVCS_PICKLE_KEY"
                )
            return PickleSerializer(key)
        return JSONSerializer()

    def reading(self, repo: Repo, snapshot_ids: Iterable[str]) -> None:
        """Let ``auto`` decode msgpack state: switch the reader when a snapshot needs it."""
        if self.serializer != "auto":
            return
        from .serializers import MsgpackSerializer

        codecs = {repo.snapshot_codec(s) for s in snapshot_ids}
        if "msgpack" in codecs and repo.serializer.name != "msgpack":
            repo.serializer = MsgpackSerializer()

    def close(self) -> None:
        """Close the repository if a command opened it."""
        if self._repo is not None:
            self._repo.close()
            self._repo = None


def _holds_database(location: Path) -> bool:
    return location.is_file() or (location / DB_FILENAME).exists()


def _state() -> _State:
    state = click.get_current_context().find_object(_State)
    if state is None:  # pragma: no cover - every command runs under the group
        raise click.UsageError("internal error: command run outside the statevcs group")
    return state


# --- errors -------------------------------------------------------------------------------


class CommandError(click.ClickException):
    """A failure reported as one ``error: ...`` line on stderr, with exit status 1."""

    exit_code = 1

    def show(self, file: IO[Any] | None = None) -> None:
        """Print the message as one safe line."""
        click.echo("error: " + _one_line(self.message), err=True, file=file)


class _UsageError(click.UsageError):
    """A command used wrongly: ``error: ...`` and a pointer to its help, exit status 2."""

    def show(self, file: IO[Any] | None = None) -> None:
        """Print the message and where to find the command's help, on one line."""
        where = self.ctx.command_path if self.ctx is not None else "statevcs"
        message = _one_line(self.format_message()).rstrip(".")
        click.echo(f"error: {message} (see `{where} --help`)", err=True, file=file)


def _one_line(message: str) -> str:
    return safe_text(" ".join(message.split()))


# Advice written for Python callers, as the command line says it; the commands give more
# precise messages where they know the context, these cover what reaches the handler.
_CLI_ADVICE: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"open it with statevcs\.Repo\.open\([^)]*\)"), "use it with `statevcs -C PATH`"),
    (
        re.compile(r"create one with statevcs\.Repo\.init\([^)]*\)(?: or `statevcs init`)?"),
        "create one with `statevcs init PATH`",
    ),
    (re.compile(r"list branches with repo\.branches\(\)"), "list branches with `statevcs branch`"),
    (re.compile(r"list tags with repo\.tags\(\)"), "list tags with `statevcs tag`"),
    (
        re.compile(r"create it with repo\.branch\(\.\.\.\)"),
        "create it with `statevcs branch NAME REV`",
    ),
    (re.compile(r"pass force=True to move it"), "pass -f to move it"),
    (re.compile(r"check out another branch first"), "switch to another branch first"),
    (
        re.compile(
            r"Choose a side with strategy='ours' or 'theirs' \(`--strategy ours\|theirs` on the "
            r"command line\)(?:; a per-key resolver callable can settle state keys)?"
        ),
        "Choose a side with `--strategy ours` or `--strategy theirs`",
    ),
)


def cli_message(exc: BaseException) -> str:
    """Return an exception's message with advice for Python callers given as CLI advice."""
    message = str(exc) or type(exc).__name__
    for pattern, replacement in _CLI_ADVICE:
        message = pattern.sub(replacement, message)
    return message


# --- output helpers ---------------------------------------------------------------------


def to_plain(value: Any) -> Any:
    """Return a JSON-compatible rendering of any decoded value, for ``--json`` output.

    Uses the git mirror's markers where JSON has no form (see :func:`statevcs.git.to_json`):
    bytes become ``{"__bytes__": "<base64>"}``, non-finite floats ``{"__float__": "nan"}``,
    dicts with non-string keys ``{"__map__": [[key, value], ...]}``. Datetimes become ISO
    strings, sets and tuples lists, and anything else its ``repr``. Never recurses, so any
    depth renders.
    """
    root: list[Any] = [None]
    stack: list[tuple[Any, Any, Any]] = [(value, root, 0)]
    while stack:
        item, out, slot = stack.pop()
        if item is None or isinstance(item, (bool, str, int)):
            out[slot] = item
        elif isinstance(item, float):
            if math.isfinite(item):
                out[slot] = item
            else:
                out[slot] = {"__float__": "nan" if math.isnan(item) else repr(item)}
        elif isinstance(item, (bytes, bytearray, memoryview)):
            out[slot] = {"__bytes__": base64.b64encode(bytes(item)).decode("ascii")}
        elif isinstance(item, dict) and all(isinstance(k, str) for k in item):
            mapping: dict[str, Any] = dict.fromkeys(item)
            out[slot] = mapping
            stack.extend((v, mapping, k) for k, v in item.items())
        elif isinstance(item, dict):
            pairs: list[list[Any]] = [[None, None] for _ in range(len(item))]
            out[slot] = {"__map__": pairs}
            for pair, (k, v) in zip(pairs, item.items()):
                stack.append((k, pair, 0))
                stack.append((v, pair, 1))
        elif isinstance(item, (list, tuple, set, frozenset)):
            items = sorted(item, key=repr) if isinstance(item, (set, frozenset)) else item
            array: list[Any] = [None] * len(items)
            out[slot] = array
            stack.extend((v, array, i) for i, v in enumerate(items))
        elif isinstance(item, (datetime, date, time)):
            out[slot] = item.isoformat()
        elif isinstance(item, timedelta):
            out[slot] = item.total_seconds()
        else:
            out[slot] = repr(item)
    return root[0]


def _emit_json(value: Any) -> None:
    click.echo(_json_text(json.dumps(to_plain(value), indent=2, ensure_ascii=False)))


def _commit_json(commit: Commit, refs: Sequence[str] = ()) -> dict[str, Any]:
    return {
        "id": commit.id,
        "short_id": commit.short_id,
        "parents": list(commit.parents),
        "snapshot_id": commit.snapshot_id,
        "author": commit.author,
        "timestamp": commit.timestamp.isoformat(),
        "message": commit.message,
        "metadata": commit.metadata,
        "refs": list(refs),
    }


def _first_line(message: str) -> str:
    return _lines(message)[0] if message else ""


def _short(value: Any, width: int = 80) -> str:
    try:
        # JSON for JSON values; Python's repr shows what else it is (datetime, set, bytes).
        text = json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(", ", ": "))
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _human_bytes(size: float) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if abs(size) < 1024 or unit == "GiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    return f"{size:.1f} TiB"  # pragma: no cover - unreachable


def parse_duration(text: str) -> timedelta:
    """Parse ``2w``, ``3d12h``, ``90m``, ``45s``, ``0``/``now`` or a plain number of seconds."""
    cleaned = text.strip()
    if cleaned in ("0", "now"):
        return timedelta(0)
    try:
        seconds = float(cleaned)
    except ValueError:
        pass
    else:
        if math.isfinite(seconds) and seconds >= 0:
            return timedelta(seconds=seconds)
        raise click.BadParameter(f"{text!r} is not a duration; use {DURATION_HELP}")
    total = 0.0
    position = 0
    for match in _DURATION.finditer(cleaned):
        if cleaned[position : match.start()].strip():
            break
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2).lower()]
        position = match.end()
    if position == 0 or cleaned[position:].strip():
        raise click.BadParameter(f"{text!r} is not a duration; use {DURATION_HELP}")
    return timedelta(seconds=total)


class _Decorations:
    """Which refs point at which commits, for ``(HEAD -> main, tag: v1)`` labels."""

    def __init__(self, repo: Repo) -> None:
        self.by_commit: dict[str, list[tuple[str, str]]] = {}
        head_branch = repo.head_branch
        refs = repo.refs()
        head_ref = f"refs/heads/{head_branch}" if head_branch else None
        if head_branch is None:
            with contextlib.suppress(StateVCSError):
                self._add(repo.resolve("HEAD"), "HEAD", "bold cyan")
        for name, commit_id in sorted(refs.items()):
            if name == head_ref:
                self.by_commit.setdefault(commit_id, []).insert(
                    0, (f"HEAD -> {head_branch}", "bold cyan")
                )
            elif name.startswith("refs/heads/"):
                self._add(commit_id, name.removeprefix("refs/heads/"), "bold green")
            elif name.startswith("refs/tags/"):
                self._add(commit_id, "tag: " + name.removeprefix("refs/tags/"), "bold yellow")

    def _add(self, commit_id: str, label: str, style: str) -> None:
        self.by_commit.setdefault(commit_id, []).append((label, style))

    def labels(self, commit_id: str) -> list[str]:
        return [label for label, _ in self.by_commit.get(commit_id, [])]

    def text(self, commit_id: str) -> Text:
        found = self.by_commit.get(commit_id)
        if not found:
            return Text()
        text = _text((" (", "yellow"))
        for index, (label, style) in enumerate(found):
            if index:
                text.append(", ", style="yellow")
            text.append_text(_text((label, style)))
        text.append(")", style="yellow")
        return text


# --- revisions ----------------------------------------------------------------------------


def _unborn_head(repo: Repo) -> str | None:
    """The current branch's name if it has no commits yet, else ``None``."""
    name = repo.head_branch
    if name is None or name in repo.branches():
        return None
    return name


_COUNT_CAP = 1000


def _count_commits(repo: Repo, commit_id: str) -> str:
    count = sum(1 for _ in repo.log(commit_id, limit=_COUNT_CAP + 1, all_parents=True))
    return f"{_COUNT_CAP}+ commits" if count > _COUNT_CAP else _plural(count, "commit")


def unborn_message(repo: Repo, branch: str) -> str:
    """Say that ``branch`` has no commits, and which branches have (with how to look at them).

    Every command says the same about an empty branch, whichever way it ran into it.
    """
    others = repo.branches()
    if not others:
        return (
            f"branch {branch} has no commits yet, and neither has any other branch: the "
            "repository is empty; commits come from the Python library, or from a git mirror "
            "with `statevcs import-git MIRROR`"
        )
    newest = sorted(others, key=lambda n: repo.get_commit(others[n]).timestamp, reverse=True)
    shown = ", ".join(f"{n} ({_count_commits(repo, others[n])})" for n in newest[:5])
    if len(newest) > 5:
        shown += f" and {len(newest) - 5} more (`statevcs branch`)"
    return (
        f"branch {branch} has no commits yet; these branches have commits: {shown}; "
        f"try `statevcs log {newest[0]}` or `statevcs switch {newest[0]}`"
    )


def resolve(repo: Repo, rev: str) -> str:
    """Resolve ``rev`` to a commit id, or raise a :class:`CommandError` that explains why not.

    A revision on an empty branch gets :func:`unborn_message`; one that walks past the first
    commit (``main~9`` on a shorter history) says where history ends.
    """
    try:
        return repo.resolve(rev)
    except UnknownRevision as exc:
        raise CommandError(_explain_unknown(repo, rev, exc)) from exc


def _explain_unknown(repo: Repo, rev: str, exc: UnknownRevision) -> str:
    from .revisions import parse_revision

    parsed = parse_revision(rev)
    head = repo.head_branch
    unborn = _unborn_head(repo)
    if unborn is not None and parsed.base in ("HEAD", unborn, f"refs/heads/{unborn}"):
        return unborn_message(repo, unborn)
    if not repo.refs():
        return f"unknown revision {rev!r}: " + unborn_message(repo, head or "main")
    if parsed.steps and parsed.reflog_index is None:
        return _explain_walk(repo, rev, parsed.base, parsed.steps) or cli_message(exc)
    return cli_message(exc)


def _explain_walk(repo: Repo, rev: str, base: str, steps: Sequence[tuple[str, int]]) -> str | None:
    try:
        commit = repo.get_commit(base)
    except StateVCSError:
        return None  # the base itself is unknown: the library's message says so
    walked = base
    for op, count in steps:
        if op == "~":
            for _ in range(count):
                if not commit.parents:
                    return (
                        f"unknown revision {rev!r}: {walked} ({commit.short_id}) is the first "
                        "commit of its history, it has no parent to go back to; "
                        f"see the history with `statevcs log {base}`"
                    )
                commit = repo.get_commit(commit.parents[0])
                walked = _step(walked, "~")
        elif count > 0:
            if count > len(commit.parents):
                have = _plural(len(commit.parents), "parent") if commit.parents else "no parent"
                return (
                    f"unknown revision {rev!r}: {walked} ({commit.short_id}) has {have}, so "
                    f"{walked}^{count} does not exist"
                )
            commit = repo.get_commit(commit.parents[count - 1])
            walked = f"{walked}^{count}"
    return None


def _step(expression: str, op: str) -> str:
    """``main`` -> ``main~1``, ``main~1`` -> ``main~2``: the walked expression, one step on."""
    match = re.fullmatch(r"(.*)~([0-9]+)", expression)
    if op == "~" and match is not None:
        return f"{match.group(1)}~{int(match.group(2)) + 1}"
    return f"{expression}~1"


# --- graph layout --------------------------------------------------------------------------
#
# The order and the drawing follow git's `log --graph` (git's graph.c, as of git 2.25-2.39)
# so that a statevcs history and its git mirror look the same: children before parents, a
# branch's commits kept together, a merge's further parents in new columns to its right.


def graph_order(parents: Mapping[str, Sequence[str]], tips: Sequence[str] = ()) -> list[str]:
    """Order commits for ``--graph`` as git does (``--topo-order``): children before parents.

    ``parents`` maps every commit to show to its parents (parents outside the mapping are
    ignored); ``tips`` lists the starting commits in the order to show them (git: newest
    first). After a commit, the parents it made ready are shown last-ready-first, so a merge's
    second-parent line comes before its first-parent line and each branch stays together.
    """
    waiting = dict.fromkeys(parents, 1)
    for commit_parents in parents.values():
        for parent in commit_parents:
            if parent in waiting:
                waiting[parent] += 1
    starts = [t for t in dict.fromkeys(tips) if waiting.get(t) == 1]
    starts += [c for c in parents if waiting[c] == 1 and c not in starts]
    stack = starts[::-1]
    order: list[str] = []
    while stack:
        commit = stack.pop()
        for parent in parents[commit]:
            if waiting.get(parent, 0) == 0:
                continue
            waiting[parent] -= 1
            if waiting[parent] == 1:
                stack.append(parent)
        waiting[commit] = 0
        order.append(commit)
    return order


_PADDING, _PRE_COMMIT, _COMMIT, _POST_MERGE, _COLLAPSING = range(5)
_MERGE_CHARS = "/|\\"

Cell = tuple[str, "int | None"]
"""One character of a graph row and the lane color index it is drawn in (None: no color)."""


class _GitGraph:
    """git's graph state machine: columns (lanes) and a mapping of where each line goes.

    ``mapping[2k]`` is the column the line now in column ``k`` is heading to, ``mapping[2k+1]``
    one in between columns; -1 is empty. Rows are emitted one at a time by :meth:`next_row`.
    """

    def __init__(self) -> None:
        self.commit: str | None = None
        self.parents: list[str] = []
        self.width = 0
        self.expansion_row = 0
        self.state = _PADDING
        self.prev_state = _PADDING
        self.commit_index = 0
        self.prev_commit_index = 0
        self.merge_layout = 0
        self.edges_added = 0
        self.prev_edges_added = 0
        self.columns: list[tuple[str, int]] = []
        self.new_columns: list[tuple[str, int]] = []
        # Both mapping arrays keep stale entries past mapping_size, as git's do: the commit row
        # after a collapse reads the previous mapping.
        self.mapping: list[int] = []
        self.old_mapping: list[int] = []
        self.mapping_size = 0
        self.color = len(_LANE_COLORS) - 1

    # -- bookkeeping -------------------------------------------------------------------------

    @property
    def num_parents(self) -> int:
        return len(self.parents)

    def _grow(self, size: int) -> None:
        for array in (self.mapping, self.old_mapping):
            if len(array) < size:
                array.extend([-1] * (size - len(array)))

    def _new_column_of(self, commit: str) -> int:
        for index, (column_commit, _) in enumerate(self.new_columns):
            if column_commit == commit:
                return index
        return -1

    def _color_of(self, commit: str) -> int:
        for column_commit, color in self.columns:
            if column_commit == commit:
                return color
        return self.color

    def _insert(self, commit: str, index: int) -> None:
        column = self._new_column_of(commit)
        if column < 0:
            column = len(self.new_columns)
            self.new_columns.append((commit, self._color_of(commit)))
        if self.num_parents > 1 and index > -1 and self.merge_layout == -1:
            # The first parent of a merge: lean the merge left when that parent's column is
            # to the left, so the line joins it at once.
            distance = index - column
            shift = 2 * distance - 3 if distance > 1 else 1
            self.merge_layout = 0 if distance > 0 else 1
            self.edges_added = self.num_parents + self.merge_layout - 2
            where = self.width + (self.merge_layout - 1) * shift
            self.width += 2 * self.merge_layout
        elif self.edges_added > 0 and column == self.mapping[self.width - 2]:
            # A later parent already in the last column: its edge joins that column directly.
            where = self.width - 2
            self.edges_added = -1
        else:
            where = self.width
            self.width += 2
        self.mapping[where] = column

    def update(self, commit: str, parents: Sequence[str]) -> None:
        """Start drawing ``commit`` with its (interesting) parents."""
        self.commit = commit
        self.parents = list(parents)
        self.prev_commit_index = self.commit_index
        self.columns, self.new_columns = self.new_columns, []
        size = 2 * (len(self.columns) + self.num_parents)
        self._grow(size)
        self.mapping_size = size
        for index in range(size):
            self.mapping[index] = -1
        self.width = 0
        self.prev_edges_added = self.edges_added
        self.edges_added = 0
        seen = False
        in_columns = True
        for index in range(len(self.columns) + 1):
            if index == len(self.columns):
                if seen:
                    break
                in_columns = False
                column_commit = commit
            else:
                column_commit = self.columns[index][0]
            if column_commit == commit:
                seen = True
                self.commit_index = index
                self.merge_layout = -1
                for parent in self.parents:
                    if self.num_parents > 1 or not in_columns:
                        self.color = (self.color + 1) % len(_LANE_COLORS)
                    self._insert(parent, index)
                if self.num_parents == 0:
                    self.width += 2
            else:
                self._insert(column_commit, -1)
        while self.mapping_size > 1 and self.mapping[self.mapping_size - 1] < 0:
            self.mapping_size -= 1
        self.expansion_row = 0
        self.state = _PRE_COMMIT if self._needs_pre_commit_row() else _COMMIT

    def _dashed_parents(self) -> int:
        return self.num_parents + self.merge_layout - 3

    def _needs_pre_commit_row(self) -> bool:
        return (
            self.num_parents >= 3
            and self.commit_index < len(self.columns) - 1
            and self.expansion_row < 2 * self._dashed_parents()
        )

    def _mapping_settled(self) -> bool:
        return all(
            target < 0 or target == index // 2
            for index, target in enumerate(self.mapping[: self.mapping_size])
        )

    def _set_state(self, state: int) -> None:
        self.prev_state = self.state
        self.state = state

    @property
    def finished(self) -> bool:
        """Whether every row of the current commit has been emitted."""
        return self.state == _PADDING

    # -- rows --------------------------------------------------------------------------------

    def next_row(self) -> tuple[list[Cell], bool]:
        """Return the next row (padded to the commit's width) and whether it is the commit's."""
        row: list[Cell] = []
        is_commit = False
        if self.state == _PADDING:
            for _, color in self.new_columns:
                row += [("|", color), (" ", None)]
        elif self.state == _PRE_COMMIT:
            self._pre_commit_row(row)
        elif self.state == _COMMIT:
            self._commit_row(row)
            is_commit = True
        elif self.state == _POST_MERGE:
            self._post_merge_row(row)
        else:
            self._collapsing_row(row)
        row += [(" ", None)] * (self.width - len(row))
        return row, is_commit

    def _pre_commit_row(self, row: list[Cell]) -> None:
        seen = False
        for index, (column_commit, color) in enumerate(self.columns):
            if column_commit == self.commit:
                seen = True
                row.append(("|", color))
                row += [(" ", None)] * self.expansion_row
            elif seen and self.expansion_row == 0:
                leaning = self.prev_state == _POST_MERGE and self.prev_commit_index < index
                row.append(("\\" if leaning else "|", color))
            elif seen:
                row.append(("\\", color))
            else:
                row.append(("|", color))
            row.append((" ", None))
        self.expansion_row += 1
        if not self._needs_pre_commit_row():
            self._set_state(_COMMIT)

    def _commit_row(self, row: list[Cell]) -> None:
        seen = False
        for index in range(len(self.columns) + 1):
            if index == len(self.columns):
                if seen:
                    break
                column_commit, color = self.commit or "", 0
            else:
                column_commit, color = self.columns[index]
            if column_commit == self.commit:
                seen = True
                row.append(("*", None))
                if self.num_parents > 2:
                    dashed = self._dashed_parents()
                    for number in range(dashed):
                        target = self.mapping[(self.commit_index + number + 2) * 2]
                        dash_color = self.new_columns[target][1]
                        row.append(("-", dash_color))
                        row.append(("." if number == dashed - 1 else "-", dash_color))
            elif seen and self.edges_added > 1:
                row.append(("\\", color))
            elif seen and self.edges_added == 1:
                leaning = (
                    self.prev_state == _POST_MERGE
                    and self.prev_edges_added > 0
                    and self.prev_commit_index < index
                )
                row.append(("\\" if leaning else "|", color))
            elif (
                self.prev_state == _COLLAPSING
                and self.old_mapping[2 * index + 1] == index
                and self.mapping[2 * index] < index
            ):
                row.append(("/", color))
            else:
                row.append(("|", color))
            row.append((" ", None))
        if self.num_parents > 1:
            self._set_state(_POST_MERGE)
        elif self._mapping_settled():
            self._set_state(_PADDING)
        else:
            self._set_state(_COLLAPSING)

    def _post_merge_row(self, row: list[Cell]) -> None:
        seen = False
        first_parent = self.parents[0]
        parent_color: int | None = None
        for index in range(len(self.columns) + 1):
            if index == len(self.columns):
                if seen:
                    break
                column_commit, color = self.commit or "", 0
            else:
                column_commit, color = self.columns[index]
            if column_commit == self.commit:
                seen = True
                kind = self.merge_layout
                for number, parent in enumerate(self.parents):
                    row.append(
                        (_MERGE_CHARS[kind], self.new_columns[self._new_column_of(parent)][1])
                    )
                    if kind == 2:
                        if self.edges_added > 0 or number < self.num_parents - 1:
                            row.append((" ", None))
                    else:
                        kind += 1
                if self.edges_added == 0:
                    row.append((" ", None))
            elif seen:
                row.append(("\\" if self.edges_added > 0 else "|", color))
                row.append((" ", None))
            else:
                row.append(("|", color))
                if self.merge_layout != 0 or index != self.commit_index - 1:
                    row.append(("_", parent_color) if parent_color is not None else (" ", None))
            if column_commit == first_parent:
                parent_color = color
        self._set_state(_PADDING if self._mapping_settled() else _COLLAPSING)

    def _collapsing_row(self, row: list[Cell]) -> None:
        self.mapping, self.old_mapping = self.old_mapping, self.mapping
        size = self.mapping_size
        mapping, old = self.mapping, self.old_mapping
        for index in range(size):
            mapping[index] = -1
        horizontal = -1
        horizontal_target = -1
        for index in range(size):
            target = old[index]
            if target < 0:
                continue
            if 2 * target == index:
                mapping[index] = target
            elif mapping[index - 1] < 0:
                # Nothing to the left: move one step left.
                mapping[index - 1] = target
                if horizontal == -1:
                    horizontal, horizontal_target = index, target
                    for between in range(2 * target + 3, index - 2, 2):
                        mapping[between] = target
            elif mapping[index - 1] == target:
                pass  # joins the line to its left, which goes to the same parent
            else:
                # Cross the line to the left, which goes elsewhere.
                mapping[index - 2] = target
                if horizontal == -1:
                    horizontal, horizontal_target = index - 1, target
                    for between in range(2 * target + 3, index - 2, 2):
                        mapping[between] = target
        old[:size] = mapping[:size]
        if mapping[size - 1] < 0:
            self.mapping_size = size = size - 1
        used_horizontal = False
        for index in range(size):
            target = mapping[index]
            if target < 0:
                row.append((" ", None))
            elif 2 * target == index:
                row.append(("|", self.new_columns[target][1]))
            elif target == horizontal_target and index != horizontal - 1:
                if index != 2 * target + 3:
                    mapping[index] = -1
                used_horizontal = True
                row.append(("_", self.new_columns[target][1]))
            else:
                if used_horizontal and index < horizontal:
                    mapping[index] = -1
                row.append(("/", self.new_columns[target][1]))
        if self._mapping_settled():
            self._set_state(_PADDING)


def graph_cells(
    commits: Sequence[tuple[str, Sequence[str]]],
) -> Iterator[tuple[list[Cell], str | None]]:
    """Yield the colored rows of :func:`graph_rows` (a commit's row carries its id)."""
    graph = _GitGraph()
    for commit_id, parents in commits:
        graph.update(commit_id, parents)
        while True:
            row, is_commit = graph.next_row()
            yield row, commit_id if is_commit else None
            if is_commit:
                break
        while not graph.finished:
            yield graph.next_row()[0], None


def graph_rows(commits: Sequence[tuple[str, Sequence[str]]]) -> list[tuple[str, str | None]]:
    """Lay out commits as ASCII rows exactly like ``git log --graph``.

    ``commits`` are ``(id, parents)`` in display order (see :func:`graph_order`); parents that
    are never shown keep their lines open to the bottom, as git's do after ``-n``. Returns
    ``(row, commit_id)`` pairs: a commit's row is padded so the text after it lines up (``*   ``
    for a merge), connector rows carry ``None`` and no trailing spaces.
    """
    rows: list[tuple[str, str | None]] = []
    for cells, commit_id in graph_cells(commits):
        row = "".join(char for char, _ in cells)
        rows.append((row, commit_id) if commit_id is not None else (row.rstrip(), None))
    return rows


def _graph_text(cells: Sequence[Cell], keep_padding: bool) -> Text:
    text = Text()
    if not keep_padding:
        while cells and cells[-1][0] == " ":
            cells = cells[:-1]
    for char, color in cells:
        if char == "*":
            text.append(char, style="bold")
        elif color is None:
            text.append(char)
        else:
            text.append(char, style=_LANE_COLORS[color])
    return text


# --- message rendering ------------------------------------------------------------------------


def _text_lines(text: str, style: str = "", indent: str = "") -> list[Text]:
    return [_text((indent + line, style)) for line in _lines(text)]


def _block_lines(block: Any) -> list[Text]:
    if not isinstance(block, dict):
        return [_text(_short(block, 400))]
    if "text" in block and isinstance(block["text"], str):
        return _text_lines(block["text"])
    if "toolUse" in block and isinstance(block["toolUse"], dict):
        use = block["toolUse"]
        line = _text(("→ ", "yellow"), (use.get("name", "?"), "bold yellow"))
        line.append_text(_text("(" + _short(use.get("input", {}), 300) + ")"))
        if use.get("toolUseId"):
            line.append_text(_text((f"  [{use['toolUseId']}]", "dim")))
        return [line]
    if "toolResult" in block and isinstance(block["toolResult"], dict):
        result = block["toolResult"]
        status = str(result.get("status", "?"))
        line = _text(
            ("← ", "yellow"),
            (f"result {status}", "bold yellow" if status != "error" else "bold red"),
        )
        if result.get("toolUseId"):
            line.append_text(_text((f"  [{result['toolUseId']}]", "dim")))
        lines = [line]
        content = result.get("content", [])
        for part in content if isinstance(content, list) else [content]:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                lines.extend(_text_lines(part["text"], indent="  "))
            elif isinstance(part, dict) and "json" in part:
                lines.append(_text("  " + _short(part["json"], 300)))
            else:
                lines.append(_text("  " + _short(part, 300)))
        return lines
    if "reasoningContent" in block:
        reasoning = block["reasoningContent"]
        text = ""
        if isinstance(reasoning, dict):
            inner = reasoning.get("reasoningText", {})
            text = inner.get("text", "") if isinstance(inner, dict) else ""
        shown = text if isinstance(text, str) and text else _short(reasoning, 200)
        return _text_lines("[reasoning] " + shown, style="dim italic")
    kind = next(iter(block), "block")
    return [_text((f"[{kind}] " + _short(block[kind], 200) if block else "[empty]", "dim"))]


def message_lines(message: Any) -> list[Text]:
    """Render one message readably: text, tool uses (→) and tool results (←), all made safe."""
    if not isinstance(message, dict):
        return [_text(_short(message, 400))]
    content = message.get("content")
    lines: list[Text] = []
    if isinstance(content, str):
        lines.extend(_text_lines(content))
    elif isinstance(content, list):
        for block in content:
            lines.extend(_block_lines(block))
    elif content is not None:
        lines.append(_text(_short(content, 400)))
    calls = message.get("tool_calls", [])
    for call in calls if isinstance(calls, list) else []:
        function = call.get("function", {}) if isinstance(call, dict) else {}
        if not isinstance(function, dict):
            function = {}
        line = _text(("→ ", "yellow"), (function.get("name", "?"), "bold yellow"))
        line.append_text(_text("(" + _short(function.get("arguments", ""), 300) + ")"))
        lines.append(line)
    if not lines:
        lines.append(_text(("(empty)", "dim")))
    return lines


def _role_text(message: Any) -> Text:
    role = str(message.get("role", "?")) if isinstance(message, dict) else "?"
    return _text((role, _ROLE_STYLES.get(role, "bold")))


def _preview(message: Any, width: int = 70) -> str:
    parts = [line.plain for line in message_lines(message)]
    text = " ".join(" ".join(parts).split())
    return text if len(text) <= width else text[: width - 1] + "…"


# --- the command group -------------------------------------------------------------------------


def _usage_error(exc: click.UsageError) -> _UsageError:
    error = _UsageError(exc.format_message(), exc.ctx)
    error.exit_code = exc.exit_code
    return error


def _show_warnings(caught: Sequence[warnings.WarningMessage]) -> None:
    """Print the library's warnings (an ambiguous name, ...) as git does: ``warning: ...``."""
    shown: set[str] = set()
    for warning in caught:
        if not issubclass(warning.category, UserWarning):
            continue
        message = _one_line(str(warning.message))
        if message not in shown:
            shown.add(message)
            click.echo(f"warning: {message}", err=True)


class _Group(click.Group):
    """Reports every failure as ``error: ...`` on stderr: exit 1, or 2 for a usage mistake."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Accept git's ``log -3`` for ``log -n 3`` before click parses the arguments."""
        return super().parse_args(ctx, _git_counts(args))

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        """Parse the group's own options, reporting mistakes in the statevcs style."""
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as exc:
            if isinstance(exc, (_UsageError, click.exceptions.NoArgsIsHelpError)):
                raise
            raise _usage_error(exc) from None

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; turn any failure into one ``error:`` line (never a traceback)."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", UserWarning)
            try:
                return self._invoke(ctx)
            finally:
                _show_warnings(caught)

    def _invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.exceptions.Abort, BrokenPipeError):
            raise
        except click.UsageError as exc:
            if isinstance(exc, (_UsageError, click.exceptions.NoArgsIsHelpError)):
                raise
            raise _usage_error(exc) from None
        except click.ClickException:
            raise
        except Exception as exc:  # the command line never shows a traceback
            state = ctx.find_object(_State)
            if state is not None and state.debug:
                click.echo(safe_text(traceback.format_exc(), keep="\n"), err=True)
            if isinstance(exc, (StateVCSError, TypeError, OSError, UnicodeError)):
                raise CommandError(cli_message(exc)) from None
            raise CommandError(
                f"internal error ({type(exc).__name__}: {exc}); run again with --debug to see "
                "where, and report it"
            ) from None


@click.group(
    cls=_Group,
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=REVISION_HELP,
)
@click.option(
    "-C",
    "chdir",
    type=click.Path(file_okay=False, path_type=Path),
    help="Run as if statevcs was started in PATH.",
    metavar="PATH",
)
@click.option(
    "--repo",
    "repo_url",
    envvar="STATEVCS_REPO",
    help="Repository location: a folder path or URL (memory://). Default: found like git.",
    metavar="URL",
)
@click.option(
    "--serializer",
    type=click.Choice(["auto", "json", "msgpack", "pickle"]),
    default="auto",
    envvar="STATEVCS_SERIALIZER",
    show_default=True,
    help="State serializer to open the repository with (pickle reads $STATEVCS_PICKLE_KEY).",
)
@click.option(
    "--color",
    type=click.Choice(["auto", "always", "never"]),
    default="auto",
    show_default=True,
    help="Colored output (auto: only on a terminal, never with NO_COLOR set).",
)
@click.option("--debug", is_flag=True, help="Show tracebacks of errors.")
@click.version_option(package_name="statevcs", prog_name="statevcs")
@click.pass_context
def cli(
    ctx: click.Context,
    chdir: Path | None,
    repo_url: str | None,
    serializer: str,
    color: str,
    debug: bool,
) -> None:
    """Version control for AI agent state: git's commands on conversations and state."""
    if chdir is not None:
        try:
            os.chdir(chdir)
        except OSError as exc:
            raise click.BadParameter(
                f"cannot change to {chdir}: {exc.strerror}", param_hint="-C"
            ) from None
    state = _State(repo_url=repo_url, debug=debug, color=color, serializer=serializer)
    ctx.obj = state
    ctx.call_on_close(state.close)


def _json_option(func: Any) -> Any:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")(func)


_REV_EPILOG = (
    "REV is HEAD, a branch or tag name, a commit id prefix (4+ hex digits), with suffixes ~N "
    "(first parents back), ^N (N-th parent) or NAME@{N} (reflog); see `statevcs --help`."
)


# --- init -------------------------------------------------------------------------------------


@cli.command()
@click.argument("path", required=False)
@click.option("--branch", "-b", default="main", show_default=True, help="Name of the first branch.")
@click.option(
    "--durability",
    type=click.Choice(["normal", "full"]),
    default="normal",
    show_default=True,
    help="normal: commits survive an application crash; full: they also survive power loss "
    "or an OS crash (an fsync per commit, ~1.5-2x slower). Stored in the repository's config.",
)
@_json_option
def init(path: str | None, branch: str, durability: str, as_json: bool) -> None:
    """Create an empty repository in PATH (default: the current folder)."""
    from .repo import Repo

    if path is not None and "://" in path:
        raise CommandError(
            f"statevcs init takes a folder path, not a URL ({path}); "
            "`statevcs --repo memory:// ...` opens a throwaway in-memory repository"
        )
    folder = (Path(path) if path else Path.cwd()).resolve()
    try:
        Repo.init(
            folder, default_branch=branch, durability="full" if durability == "full" else "normal"
        ).close()
    except RepositoryExists:
        raise CommandError(
            f"a statevcs repository already exists at {folder}; use it with "
            f"`statevcs -C {folder} log`"
        ) from None
    if as_json:
        _emit_json({"path": str(folder), "branch": branch, "durability": durability})
    else:
        _state().out.print(_text(f"Initialized empty statevcs repository in {folder}"))


# --- log ---------------------------------------------------------------------------------------


@cli.command(epilog=_REV_EPILOG)
@click.argument("rev", required=False)
@click.option("--graph", is_flag=True, help="Draw the commit graph (of all branches unless REV).")
@click.option("--all", "all_refs", is_flag=True, help="Every commit reachable from any ref.")
@click.option("-n", "--max-count", "limit", type=click.IntRange(min=0), help="At most N commits.")
@click.option("--oneline", is_flag=True, help="One line per commit.")
@click.option("--first-parent", is_flag=True, help="Follow only the first parent of merges.")
@_json_option
def log(
    rev: str | None,
    graph: bool,
    all_refs: bool,
    limit: int | None,
    oneline: bool,
    first_parent: bool,
    as_json: bool,
) -> None:
    """Show commit history, newest first (--graph: children before parents, like git)."""
    state = _state()
    repo = state.repo()
    everything = all_refs or (graph and rev is None)
    if rev is not None:
        resolve(repo, rev)
    else:
        unborn = _unborn_head(repo)
        if (unborn is not None and not everything) or not repo.refs():
            if as_json:
                _emit_json([])
            else:
                state.err.print(_text(unborn_message(repo, unborn or repo.head_branch or "main")))
            return
    decorations = _Decorations(repo)
    commits: list[Commit]
    if graph:
        reachable = {
            c.id: c for c in _history(repo, rev, everything, limit=None, first_parent=first_parent)
        }
        # git orders by every parent even with --first-parent; only the drawing drops the rest.
        order = graph_order(
            {c.id: c.parents for c in reachable.values()}, _tips(repo, rev, everything, reachable)
        )
        commits = [reachable[c] for c in order[:limit]]
        parents = {c.id: list(c.parents[:1] if first_parent else c.parents) for c in commits}
    else:
        commits = list(_history(repo, rev, everything, limit=limit, first_parent=first_parent))
    if as_json:
        _emit_json([_commit_json(c, decorations.labels(c.id)) for c in commits])
        return
    out = state.out
    if graph:
        by_id = {c.id: c for c in commits}
        # Parents cut off by -n keep their lanes open to the bottom, as in git.
        pairs = [(c.id, parents[c.id]) for c in commits]
        for cells, commit_id in graph_cells(pairs):
            line = _graph_text(cells, keep_padding=commit_id is not None)
            if commit_id is not None:
                line.append_text(_oneline(by_id[commit_id], decorations))
            out.print(line)
        return
    for index, commit in enumerate(commits):
        if oneline:
            out.print(_oneline(commit, decorations))
        else:
            if index:
                out.print()
            _print_header(out, commit, decorations)


def _tips(
    repo: Repo, rev: str | None, everything: bool, commits: Mapping[str, Commit]
) -> list[str]:
    """The starting commits of a graph in git's order: newest first, then by ref name."""
    if not everything:
        return [repo.resolve(rev or "HEAD")]
    starts = [commit_id for _, commit_id in sorted(repo.refs().items())]
    with contextlib.suppress(StateVCSError):
        starts.append(repo.resolve("HEAD"))
    unique = [c for c in dict.fromkeys(starts) if c in commits]
    return sorted(unique, key=lambda c: commits[c].timestamp, reverse=True)


def _history(
    repo: Repo, rev: str | None, everything: bool, *, limit: int | None, first_parent: bool
) -> Iterator[Commit]:
    if everything and rev is None:
        if first_parent:
            yield from _merge_walks(repo, limit)
        else:
            yield from repo.log_all(limit=limit)
        return
    yield from repo.log(rev or "HEAD", limit=limit, all_parents=not first_parent)


def _merge_walks(repo: Repo, limit: int | None) -> Iterator[Commit]:
    seen: dict[str, Commit] = {}
    for start in set(repo.refs().values()):
        for commit in repo.log(start, all_parents=False):
            seen.setdefault(commit.id, commit)
    ordered = sorted(seen.values(), key=lambda c: c.timestamp, reverse=True)
    yield from ordered[:limit] if limit is not None else ordered


def _oneline(commit: Commit, decorations: _Decorations) -> Text:
    line = _text((commit.short_id, "yellow"))
    line.append_text(decorations.text(commit.id))
    line.append_text(_text(" " + _first_line(commit.message)))
    return line


def _print_header(out: Console, commit: Commit, decorations: _Decorations) -> None:
    line = _text(("commit " + commit.id, "yellow"))
    line.append_text(decorations.text(commit.id))
    out.print(line)
    if len(commit.parents) > 1:
        out.print(_text("Merge:  " + " ".join(p[:12] for p in commit.parents)))
    out.print(_text("Author: " + commit.author))
    out.print(_text("Date:   " + commit.timestamp.strftime("%Y-%m-%d %H:%M:%S %z")))
    out.print()
    for text_line in _lines(commit.message or "(no message)"):
        out.print(_text("    " + text_line))


# --- show ---------------------------------------------------------------------------------------


@cli.command(epilog=_REV_EPILOG)
@click.argument("rev", default="HEAD")
@click.option("--messages", "only_messages", is_flag=True, help="Show the conversation.")
@click.option("--state", "only_state", is_flag=True, help="Show the state table.")
@_json_option
def show(rev: str, only_messages: bool, only_state: bool, as_json: bool) -> None:
    """Show a commit and its snapshot: messages, state and extras."""
    state = _state()
    repo = state.repo()
    commit = repo.get_commit(resolve(repo, rev))
    state.reading(repo, [commit.snapshot_id])
    snapshot = repo.read_snapshot(commit.snapshot_id)
    codec = repo.snapshot_codec(commit.snapshot_id)
    everything = not only_messages and not only_state
    decorations = _Decorations(repo)
    if as_json:
        payload: dict[str, Any] = {
            "commit": _commit_json(commit, decorations.labels(commit.id)),
            "snapshot": {"id": commit.snapshot_id, "kind": snapshot.kind, "state_codec": codec},
        }
        if everything or only_messages:
            payload["snapshot"]["messages"] = snapshot.messages
        if everything or only_state:
            payload["snapshot"]["state"] = snapshot.state
        if everything:
            payload["snapshot"]["extras"] = snapshot.extras
        _emit_json(payload)
        return
    out = state.out
    _print_header(out, commit, decorations)
    if commit.metadata:
        out.print()
        out.print(_text(("Metadata: " + _short(commit.metadata, 400), "dim")))
    out.print()
    out.print(
        _text(
            (f"snapshot {commit.snapshot_id[:12]}", "cyan"),
            f"  kind {snapshot.kind}  ·  {len(snapshot.messages)} messages  ·  "
            f"{len(snapshot.state)} state keys  ·  codec {codec}",
        )
    )
    if everything or only_messages:
        out.print()
        out.print(_text((f"Messages ({len(snapshot.messages)})", "bold underline")))
        for index, message in enumerate(snapshot.messages):
            header = _text((f"[{index}] ", "dim"))
            header.append_text(_role_text(message))
            out.print(header)
            for line in message_lines(message):
                out.print(Text("    ").append_text(line))
    if everything or only_state:
        out.print()
        if snapshot.state:
            table = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
            table.add_column("state key", style="cyan", no_wrap=True)
            table.add_column("value", overflow="fold")
            for key, value in snapshot.state.items():
                table.add_row(_text(key), _text(_short(value, 200)))
            out.print(table)
        else:
            out.print(_text(("(no state)", "dim")))
    if everything and snapshot.extras:
        out.print()
        out.print(_text(("Extras", "bold underline")))
        for key, value in snapshot.extras.items():
            out.print(_text((f"  {key}: ", "cyan"), _short(value, 120)))


# --- diff ----------------------------------------------------------------------------------------


@cli.command(epilog=_REV_EPILOG)
@click.argument("a")
@click.argument("b", default="HEAD")
@click.option("--exit-code", is_flag=True, help="Exit with 1 when the snapshots differ.")
@_json_option
def diff(a: str, b: str, exit_code: bool, as_json: bool) -> None:
    """Compare the snapshots of revisions A and B (default HEAD) structurally."""
    state = _state()
    repo = state.repo()
    old, new = repo.get_commit(resolve(repo, a)), repo.get_commit(resolve(repo, b))
    state.reading(repo, [old.snapshot_id, new.snapshot_id])
    result = repo.diff(a, b)
    if as_json:
        _emit_json(_diff_json(result, old.id, new.id))
    else:
        _print_diff(state.out, result, old, new)
    if exit_code and not result.is_empty:
        click.get_current_context().exit(1)


def _diff_json(result: SnapshotDiff, old_id: str, new_id: str) -> dict[str, Any]:
    m = result.messages
    return {
        "old": {"rev": result.old, "id": old_id, "kind": result.old_kind},
        "new": {"rev": result.new, "id": new_id, "kind": result.new_kind},
        "empty": result.is_empty,
        "messages": {
            "common_prefix": m.common_prefix,
            "old_length": m.old_length,
            "new_length": m.new_length,
            "changes": [
                {"index": c.index, "kind": c.kind, "old": c.old, "new": c.new} for c in m.changes
            ],
        },
        "state": [{"key": c.key, "kind": c.kind, "old": c.old, "new": c.new} for c in result.state],
        "extras": [
            {"key": c.key, "kind": c.kind, "old": c.old, "new": c.new} for c in result.extras
        ],
    }


_SIGNS = {"added": ("+", "green"), "removed": ("-", "red"), "changed": ("~", "yellow")}


def _print_diff(out: Console, result: SnapshotDiff, old: Commit, new: Commit) -> None:
    out.print(
        _text(
            ("diff ", "bold"),
            (f"{result.old} ({old.short_id})", "red"),
            (" → ", "bold"),
            (f"{result.new} ({new.short_id})", "green"),
        )
    )
    if result.old_kind != result.new_kind:
        out.print(_text((f"kind: {result.old_kind} → {result.new_kind}", "yellow")))
    m = result.messages
    out.print(
        _text(
            (
                f"messages: {m.old_length} → {m.new_length} (common prefix {m.common_prefix}; "
                f"+{len(m.added)} -{len(m.removed)} ~{len(m.changed)})",
                "bold",
            )
        )
    )
    for change in m.changes:
        sign, style = _SIGNS[change.kind]
        line = _text((f"  {sign} [{change.index}] ", style))
        shown = change.old if change.kind == "removed" else change.new
        line.append_text(_role_text(shown))
        line.append_text(_text((": " + _preview(shown), style)))
        out.print(line)
        if change.kind == "changed":
            out.print(_text(("      was: " + _preview(change.old), "dim")))
    for title, changes in (("state", result.state), ("extras", result.extras)):
        if not changes:
            continue
        out.print(_text((f"{title}:", "bold")))
        for c in changes:
            sign, style = _SIGNS[c.kind]
            if c.kind == "added":
                out.print(_text((f"  {sign} {c.key} = {_short(c.new)}", style)))
            elif c.kind == "removed":
                out.print(_text((f"  {sign} {c.key} (was {_short(c.old)})", style)))
            else:
                out.print(
                    _text(
                        (f"  {sign} {c.key}: ", style),
                        (_short(c.old, 60), "red"),
                        " → ",
                        (_short(c.new, 60), "green"),
                    )
                )
    if result.is_empty:
        out.print(_text(("(no differences)", "dim")))


# --- refs ----------------------------------------------------------------------------------------


@cli.command(epilog=_REV_EPILOG)
@click.argument("name", required=False)
@click.argument("start", required=False)
@click.option("-d", "--delete", "delete", metavar="NAME", help="Delete branch NAME.")
@click.option("-f", "--force", is_flag=True, help="Move NAME if it already exists.")
@_json_option
def branch(
    name: str | None, start: str | None, delete: str | None, force: bool, as_json: bool
) -> None:
    """List branches, create NAME at START (default HEAD), or delete one with -d."""
    state = _state()
    repo = state.repo()
    out = state.out
    if delete is not None:
        if name is not None:
            raise click.UsageError("give either -d NAME or NAME [START], not both")
        old = repo.branches().get(delete)
        if old is None:
            raise CommandError(f"no branch named {delete!r}; list branches with `statevcs branch`")
        if delete == repo.head_branch:
            raise CommandError(
                f"cannot delete branch {delete!r}: it is the current branch; "
                "`statevcs switch OTHER` first"
            )
        repo.delete_branch(delete)
        if as_json:
            _emit_json({"deleted": delete, "was": old})
        else:
            out.print(_text(f"Deleted branch {delete} (was {old[:12]})."))
        return
    if name is not None:
        resolve(repo, start or "HEAD")
        try:
            commit = repo.branch(name, start or "HEAD", force=force)
        except RefExists:
            raise CommandError(
                f"branch {name!r} already exists; `statevcs branch -f {name} REV` moves it"
            ) from None
        if as_json:
            _emit_json({"branch": name, "commit": _commit_json(commit)})
        else:
            out.print(
                _text(f"Created branch {name} at {commit.short_id} {_first_line(commit.message)}")
            )
        return
    _list_refs(repo.branches(), repo.head_branch, "branch", as_json)


@cli.command(epilog=_REV_EPILOG)
@click.argument("name")
@click.argument("start", required=False)
@click.option("-c", "--create", is_flag=True, help="Create branch NAME at START (default HEAD).")
@_json_option
def switch(name: str, start: str | None, create: bool, as_json: bool) -> None:
    """Make NAME the current branch: the one `log`, `show` and new repository handles start from."""
    state = _state()
    repo = state.repo()
    if start is not None and not create:
        raise click.UsageError("START needs -c (create the branch there first)")
    if create and name in repo.branches():
        raise CommandError(
            f"branch {name!r} already exists; `statevcs switch {name}` switches to it"
        )
    if create and start is not None:
        resolve(repo, start)
        repo.branch(name, start)
    try:
        repo.switch(name, create=create)
    except RefNotFound:
        raise CommandError(
            f"no branch named {name!r}; list branches with `statevcs branch`, or create it "
            f"with `statevcs switch -c {name} [START]`"
        ) from None
    head = repo.branches().get(name)
    if as_json:
        _emit_json({"branch": name, "commit": head, "created": create})
    else:
        verb = "Switched to a new branch" if create else "Switched to branch"
        state.out.print(_text(f"{verb} {name}"))


@cli.command(epilog=_REV_EPILOG)
@click.argument("name", required=False)
@click.argument("rev", required=False)
@click.option("-d", "--delete", "delete", metavar="NAME", help="Delete tag NAME.")
@click.option("-f", "--force", is_flag=True, help="Move NAME if it already exists.")
@_json_option
def tag(name: str | None, rev: str | None, delete: str | None, force: bool, as_json: bool) -> None:
    """List tags, create tag NAME at REV (default HEAD), or delete one with -d."""
    state = _state()
    repo = state.repo()
    if delete is not None:
        if name is not None:
            raise click.UsageError("give either -d NAME or NAME [REV], not both")
        old = repo.tags().get(delete)
        if old is None:
            raise CommandError(f"no tag named {delete!r}; list tags with `statevcs tag`")
        repo.delete_tag(delete)
        if as_json:
            _emit_json({"deleted": delete, "was": old})
        else:
            state.out.print(_text(f"Deleted tag {delete} (was {old[:12]})."))
        return
    if name is not None:
        resolve(repo, rev or "HEAD")
        try:
            commit = repo.tag(name, rev or "HEAD", force=force)
        except RefExists:
            raise CommandError(
                f"tag {name!r} already exists; `statevcs tag -f {name} REV` moves it"
            ) from None
        if as_json:
            _emit_json({"tag": name, "commit": _commit_json(commit)})
        else:
            state.out.print(_text(f"Tagged {commit.short_id} as {name}"))
        return
    _list_refs(repo.tags(), None, "tag", as_json)


def _list_refs(refs: Mapping[str, str], current: str | None, what: str, as_json: bool) -> None:
    state = _state()
    repo = state.repo()
    commits = {name: repo.get_commit(commit_id) for name, commit_id in sorted(refs.items())}
    if as_json:
        key = "branches" if what == "branch" else "tags"
        payload: dict[str, Any] = {key: {n: _commit_json(c) for n, c in commits.items()}}
        if what == "branch":
            payload["head"] = current
        _emit_json(payload)
        return
    names = {name: safe_text(name) for name in commits}
    width = max((len(shown) for shown in names.values()), default=0)
    for name, commit in commits.items():
        state.out.print(
            _text(
                ("* " if name == current else "  ", "bold green"),
                (names[name].ljust(width), "bold green" if name == current else ""),
                ("  " + commit.short_id, "yellow"),
                " " + _first_line(commit.message),
            )
        )


@cli.command(epilog=_REV_EPILOG)
@click.argument("branch_name", metavar="BRANCH")
@click.argument("rev")
@_json_option
def reset(branch_name: str, rev: str, as_json: bool) -> None:
    """Move BRANCH to REV (the commits it leaves stay in the reflog)."""
    state = _state()
    repo = state.repo()
    resolve(repo, rev)
    old = repo.branches().get(branch_name)
    if old is None:
        raise CommandError(
            f"no branch named {branch_name!r}; list branches with `statevcs branch`, or create "
            f"it with `statevcs branch {branch_name} {rev}`"
        )
    commit = repo.reset(branch_name, rev)
    if as_json:
        _emit_json({"branch": branch_name, "old": old, "commit": _commit_json(commit)})
    else:
        state.out.print(
            _text(f"{branch_name} is now at {commit.short_id} {_first_line(commit.message)}")
        )


@cli.command()
@click.argument("ref", default="HEAD")
@click.option("-n", "--max-count", "limit", type=click.IntRange(min=0), help="At most N entries.")
@_json_option
def reflog(ref: str, limit: int | None, as_json: bool) -> None:
    """Show how REF (default HEAD, or a branch or tag name) moved, newest first."""
    state = _state()
    entries = state.repo().reflog(ref)
    if limit is not None:
        entries = entries[:limit]
    if as_json:
        _emit_json(
            [
                {
                    "index": i,
                    "old": e.old,
                    "new": e.new,
                    "timestamp": e.timestamp.isoformat(),
                    "message": e.message,
                }
                for i, e in enumerate(entries)
            ]
        )
        return
    for index, entry in enumerate(entries):
        state.out.print(
            _text(
                ((entry.new or "0" * 12)[:12], "yellow"),
                (f" {ref}@{{{index}}}: ", "cyan"),
                entry.message,
                ("  " + entry.timestamp.strftime("%Y-%m-%d %H:%M:%S"), "dim"),
            )
        )


# --- merge ---------------------------------------------------------------------------------------


@cli.command(epilog=_REV_EPILOG)
@click.argument("branch_name", metavar="BRANCH")
@click.argument("rev")
@click.option("--strategy", type=click.Choice(["ours", "theirs"]), help="Settle conflicts.")
@click.option("-m", "--message", help="Merge commit message.")
@click.option("--author", help='Author of the merge commit ("Name <email>").')
@click.option("--no-ff", is_flag=True, help="Make a merge commit even when a fast-forward works.")
@_json_option
def merge(
    branch_name: str,
    rev: str,
    strategy: str | None,
    message: str | None,
    author: str | None,
    no_ff: bool,
    as_json: bool,
) -> None:
    """Merge REV into BRANCH: three-way on state keys, messages fast-forward or a chosen side."""
    from . import merge as merging

    state = _state()
    repo = state.repo()
    source = resolve(repo, rev)
    old = repo.branches().get(branch_name)
    if old is not None:
        state.reading(repo, [repo.get_commit(old).snapshot_id, repo.get_commit(source).snapshot_id])
    commit = merging.merge(
        repo,
        branch_name,
        rev,
        strategy=strategy,  # type: ignore[arg-type]  # click.Choice guarantees the literal
        message=message,
        author=author,
        fast_forward=not no_ff,
    )
    if commit.id == old:
        outcome = "up-to-date"
        text = "Already up to date."
    elif commit.id == source:
        outcome = "fast-forward"
        text = f"Fast-forward {branch_name} to {commit.short_id} {_first_line(commit.message)}"
    else:
        outcome = "merge"
        info = commit.metadata.get("merge", {})
        resolved = info.get("resolved", {}) if isinstance(info, dict) else {}
        text = f"Merged {rev} into {branch_name}: {commit.short_id} {_first_line(commit.message)}"
        if isinstance(resolved, dict) and resolved:
            text += " (settled: " + ", ".join(f"{k} → {v}" for k, v in resolved.items()) + ")"
    if as_json:
        _emit_json({"outcome": outcome, "branch": branch_name, "commit": _commit_json(commit)})
    else:
        state.out.print(_text(text))


# --- maintenance ---------------------------------------------------------------------------------


@cli.command()
@click.option(
    "--grace",
    default="2w",
    show_default=True,
    help=f"Keep unreachable objects younger than this: {DURATION_HELP}.",
)
@click.option("--dry-run", is_flag=True, help="Only report what would be deleted.")
@_json_option
def gc(grace: str, dry_run: bool, as_json: bool) -> None:
    """Delete objects no ref or reflog reaches, once older than the grace period."""
    state = _state()
    try:
        period = parse_duration(grace)
    except click.BadParameter as exc:
        exc.param_hint = "--grace"
        raise
    repo = state.repo()
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    progress = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        TimeElapsedColumn(),
        console=state.err,
        transient=True,
        disable=as_json or not state.err.is_terminal,
    )
    with progress:
        task = progress.add_task("collecting garbage", total=None)

        def advance(phase: str, done: int, total: int) -> None:
            progress.update(task, description=safe_text(phase), completed=done, total=total)

        report = repo.gc(period, dry_run=dry_run, progress=advance)
    if as_json:
        _emit_json(
            {
                "reachable": report.reachable,
                "unreachable": report.unreachable,
                "deleted": report.deleted,
                "deleted_bytes": report.deleted_bytes,
                "kept_recent": report.kept_recent,
                "dry_run": report.dry_run,
                "grace_seconds": period.total_seconds(),
            }
        )
        return
    verb = "would delete" if dry_run else "deleted"
    state.out.print(
        _text(
            f"{report.reachable} objects reachable, {report.unreachable} unreachable; {verb} "
            f"{report.deleted} ({_human_bytes(report.deleted_bytes)}), kept "
            f"{report.kept_recent} younger than {grace}"
        )
    )


@cli.command()
@_json_option
def fsck(as_json: bool) -> None:
    """Check every object, ref and link; print each problem on its own line (exit 1 if any)."""
    state = _state()
    report = state.repo().fsck()
    problems = [" ".join(p.split()) for p in report.problems]
    if as_json:
        _emit_json(
            {
                "ok": report.ok,
                "objects_checked": report.objects_checked,
                "reachable": report.reachable,
                "dangling": report.dangling,
                "problems": problems,
            }
        )
    else:
        for problem in problems:
            click.echo(safe_text(problem))
        summary = (
            f"checked {report.objects_checked} objects: {report.reachable} reachable, "
            f"{report.dangling} dangling, {len(problems)} problems"
        )
        state.err.print(_text(summary if problems else f"ok: {summary}"))
    if problems:
        click.get_current_context().exit(1)


@cli.command()
@_json_option
def stats(as_json: bool) -> None:
    """Show storage use, deduplication and branch heads."""
    state = _state()
    repo = state.repo()
    report = repo.stats()
    if as_json:
        _emit_json(
            {
                "objects": report.objects,
                "bytes": report.bytes_stored,
                "commits": report.commits,
                "naive_bytes": report.naive_bytes,
                "dedup_ratio": round(report.dedup_ratio, 3),
                "branches": report.branches,
            }
        )
        return
    table = Table(show_header=False, box=None, show_edge=False, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_row(_text("objects"), _text(f"{report.objects:,}"))
    table.add_row(
        _text("stored"),
        _text(f"{_human_bytes(report.bytes_stored)} ({report.bytes_stored:,} B)"),
    )
    table.add_row(_text("commits"), _text(f"{report.commits:,}"))
    table.add_row(
        _text("naive (copy per commit)"),
        _text(f"{_human_bytes(report.naive_bytes)} ({report.naive_bytes:,} B)"),
    )
    table.add_row(_text("dedup ratio"), _text(f"{report.dedup_ratio:.1f}x"))
    state.out.print(table)
    if report.branches:
        state.out.print()
        heads = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
        heads.add_column("branch", style="green")
        heads.add_column("head", style="yellow")
        heads.add_column("message")
        for name, commit_id in sorted(report.branches.items()):
            heads.add_row(
                _text(name),
                _text(commit_id[:12]),
                _text(_first_line(repo.get_commit(commit_id).message)),
            )
        state.out.print(heads)


# --- git mirror ---------------------------------------------------------------------------------


@cli.command("export-git")
@click.argument("target", type=click.Path(path_type=Path))
@click.option("--branch", "branch_name", help="Export only this branch.")
@click.option("--push", "push_url", metavar="REMOTE_URL", help="Then push to this git remote.")
@click.option(
    "--force",
    is_flag=True,
    help="Export into a git repository that is not a statevcs mirror (never one with local "
    "changes), and let the push overwrite branches that were reset.",
)
@_json_option
def export_git(
    target: Path, branch_name: str | None, push_url: str | None, force: bool, as_json: bool
) -> None:
    """Mirror history into the git repository TARGET (created if missing); optionally push."""
    from . import git

    state = _state()
    report = git.export_git(state.repo(), target, branch=branch_name, push=push_url, force=force)
    if as_json:
        _emit_json(report.__dict__)
        return
    out = state.out
    out.print(
        _text(
            f"exported {_plural(report.commits_exported, 'new commit')} "
            f"({_plural(report.objects_written, 'git object')}) to {report.target}; "
            f"the mirror holds {_plural(report.mirror_commits, 'commit')}"
        )
    )
    for name, sha in report.refs_updated.items():
        out.print(_text(f"  {name} → git {sha[:7]}"))
    for name in report.refs_deleted:
        out.print(_text((f"  {name} deleted", "red")))
    if report.pushed:
        out.print(_text(f"pushed {_plural(len(report.push_refs), 'ref')} to {report.pushed}"))
    if report.remote_head:
        out.print(_text(f"remote HEAD -> {report.remote_head}"))
    for warning in report.warnings:
        state.err.print(_text(("warning: " + warning, "yellow")))


@cli.command("import-git")
@click.argument("source", type=click.Path(path_type=Path))
@_json_option
def import_git(source: Path, as_json: bool) -> None:
    """Read a git mirror written by export-git back into this repository."""
    from . import git

    state = _state()
    report = git.import_git(state.repo(), source)
    if as_json:
        _emit_json(report.__dict__)
        return
    out = state.out
    out.print(
        _text(
            f"imported {_plural(report.commits_imported, 'commit')} from {report.source} "
            f"({report.commits_existing} already present, {report.commits_from_git} made "
            "with git)"
        )
    )
    for name, commit_id in report.refs_updated.items():
        out.print(_text(f"  {name} → {commit_id[:12]}"))
    for name, reason in report.refs_skipped.items():
        state.err.print(_text((f"warning: skipped {name}: {reason}", "yellow")))
    for warning in report.warnings:
        state.err.print(_text(("warning: " + warning, "yellow")))


# --- entry point ---------------------------------------------------------------------------------


def _git_counts(args: list[str]) -> list[str]:
    """Accept git's ``log -3`` shorthand for ``log -n 3`` (also for reflog)."""
    out: list[str] = []
    counting = False
    for arg in args:
        if counting and re.fullmatch(r"-[0-9]+", arg):
            out += ["-n", arg[1:]]
            continue
        if arg == "--":
            counting = False
        elif arg in ("log", "reflog") and out[-1:] not in (["-C"], ["--repo"]):
            counting = True
        out.append(arg)
    return out


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Run the ``statevcs`` command line (the console script and ``python -m statevcs``)."""
    args = list(argv) if argv is not None else sys.argv[1:]
    try:
        cli.main(args=args, prog_name="statevcs")
    except BrokenPipeError:
        # The reader went away (`statevcs log | head`): stop quietly, as git does.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(1)
    sys.exit(0)  # pragma: no cover - click's main exits itself


__all__ = [
    "CommandError",
    "cli",
    "cli_message",
    "find_repository",
    "graph_cells",
    "graph_order",
    "graph_rows",
    "main",
    "message_lines",
    "parse_duration",
    "resolve",
    "safe_text",
    "to_plain",
    "unborn_message",
]
