"""The ``statevcs`` command line: git's habits (log, show, diff, branch, merge, ...) on agent state.

The repository is found as git finds one: the current folder or its nearest parent holding
``statevcs.sqlite3`` (or ``.statevcs/statevcs.sqlite3``); ``-C PATH`` runs as if started in
PATH, ``--repo URL`` (or ``$STATEVCS_REPO``) names one directly. Read commands take ``--json``.
Colors follow the terminal: none when piped or when ``NO_COLOR`` is set. Errors print one line
and exit 2 (``--debug`` shows the traceback).
"""

from __future__ import annotations

import base64
import contextlib
import heapq
import json
import math
import os
import re
import sys
import traceback
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import click
from rich import box
from rich.console import Console
from rich.table import Table
from rich.text import Text

from .errors import RepositoryNotFound, StateVCSError

if TYPE_CHECKING:
    from .diff import SnapshotDiff
    from .repo import Commit, Repo

DB_FILENAME = "statevcs.sqlite3"
HIDDEN_FOLDER = ".statevcs"
_LANE_COLORS = ("red", "green", "yellow", "blue", "magenta", "cyan")
_ROLE_STYLES = {
    "user": "bold green",
    "assistant": "bold blue",
    "system": "bold magenta",
    "tool": "bold yellow",
}
_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*(w|d|h|m|s)", re.IGNORECASE)
_UNIT_SECONDS = {"w": 604_800, "d": 86_400, "h": 3_600, "m": 60, "s": 1}


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
        f"not a statevcs repository (or any parent up to /): {start}; run `statevcs init`, "
        "or pass -C PATH or --repo URL"
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
        return Console(
            stderr=stderr,
            highlight=False,
            soft_wrap=True,
            force_terminal=force,
            no_color=True if self.color == "never" else None,
        )

    @property
    def out(self) -> Console:
        if self._out is None:
            self._out = self._console(stderr=False)
        return self._out

    @property
    def err(self) -> Console:
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
            self._repo = Repo.open(location, serializer=self._serializer())
        return self._repo

    def _serializer(self) -> Any:
        from .serializers import JSONSerializer, MsgpackSerializer, PickleSerializer

        if self.serializer == "msgpack":
            return MsgpackSerializer()
        if self.serializer == "pickle":
            key = os.environ.get("STATEVCS_PICKLE_KEY")
            if not key:
                raise StateVCSError(
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
        if self._repo is not None:
            self._repo.close()
            self._repo = None


def _state() -> _State:
    state = click.get_current_context().find_object(_State)
    if state is None:  # pragma: no cover - every command runs under the group
        raise click.UsageError("internal error: command run outside the statevcs group")
    return state


# --- output helpers ---------------------------------------------------------------------


def to_plain(value: Any) -> Any:
    """Return a JSON-compatible rendering of any decoded value, for ``--json`` output.

    Bytes become ``{"__bytes__": "<base64>"}``; datetimes ISO strings; sets and tuples lists;
    non-finite floats strings; anything else its ``repr``.
    """
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"__bytes__": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, dict):
        return {k if isinstance(k, str) else repr(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if isinstance(value, (set, frozenset)):
        return [to_plain(v) for v in sorted(value, key=repr)]
    if isinstance(value, (datetime, date, time)):
        return value.isoformat()
    if isinstance(value, timedelta):
        return value.total_seconds()
    return repr(value)


def _emit_json(value: Any) -> None:
    click.echo(json.dumps(to_plain(value), indent=2, ensure_ascii=False))


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
    return message.splitlines()[0] if message else ""


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
    """Parse ``2w``, ``3d12h``, ``90m``, ``45s`` or a plain number of seconds."""
    cleaned = text.strip()
    if cleaned in ("0", "now"):
        return timedelta(0)
    try:
        return timedelta(seconds=float(cleaned))
    except ValueError:
        pass
    total = 0.0
    position = 0
    for match in _DURATION.finditer(cleaned):
        if cleaned[position : match.start()].strip():
            break
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2).lower()]
        position = match.end()
    if position == 0 or cleaned[position:].strip():
        raise click.BadParameter(
            f"{text!r} is not a duration; use forms like 2w, 3d, 12h, 30m, 45s or 1w2d"
        )
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
        text = Text(" (", style="yellow")
        for index, (label, style) in enumerate(found):
            if index:
                text.append(", ", style="yellow")
            text.append(label, style=style)
        text.append(")", style="yellow")
        return text


# --- graph layout --------------------------------------------------------------------------


def graph_rows(commits: Sequence[tuple[str, Sequence[str]]]) -> list[tuple[str, str | None]]:
    """Lay out commits (children before parents) as ASCII rows like ``git log --graph``.

    Returns ``(graph, commit_id)`` pairs; connector rows carry ``None``. Lane ``k`` is drawn at
    column ``2k``; ``\\`` and ``/`` between lanes show forks and joins.
    """
    rows: list[tuple[str, str | None]] = []
    lanes: list[str] = []
    for commit_id, parents in commits:
        if commit_id not in lanes:
            lanes.append(commit_id)
        col = lanes.index(commit_id)
        rows.append((" ".join("*" if i == col else "|" for i in range(len(lanes))), commit_id))
        unique = list(dict.fromkeys(parents))
        # Slots keep lane positions stable: the commit's slot passes to its first parent (or
        # closes), a lane further right waiting for that parent joins it, and further parents
        # of a merge open fresh lanes just right of the commit.
        slots: list[tuple[float, str | None]] = [(float(i), lane) for i, lane in enumerate(lanes)]
        slots[col] = (float(col), None)
        moves: dict[int, float] = {}
        targets: list[float] = []
        for number, parent in enumerate(unique):
            where = lanes.index(parent) if parent in lanes and parent != commit_id else None
            if number == 0:
                if where is None:
                    slots[col] = (float(col), parent)
                    targets.append(float(col))
                elif where > col:
                    slots[col] = (float(col), parent)
                    slots[where] = (float(where), None)
                    moves[where] = float(col)
                    targets.append(float(col))
                else:
                    targets.append(float(where))
            elif where is not None:
                targets.append(float(where))
            else:
                position = col + number / (len(unique) + 1)
                slots.append((position, parent))
                targets.append(position)
        slots.sort(key=lambda slot: slot[0])
        final: dict[float, int] = {}
        new_lanes: list[str] = []
        for position, lane in slots:
            if lane is not None:
                final[position] = len(new_lanes)
                new_lanes.append(lane)
        edges: list[tuple[int, int]] = []
        for i in range(len(lanes)):
            if i == col:
                edges.extend((col, final[t]) for t in targets)
            else:
                edges.append((i, final[moves.get(i, float(i))]))
        lanes = new_lanes
        rows.extend((row, None) for row in _connector_rows(edges))
    return rows


def _connector_rows(edges: Sequence[tuple[int, int]]) -> Iterator[str]:
    if all(a == b for a, b in edges):
        return
    positions = [a for a, _ in edges]
    width = 2 * max([0, *positions, *(b for _, b in edges)]) + 2
    while True:
        chars = [" "] * width
        moved = False
        for index, (_, target) in enumerate(edges):
            at = positions[index]
            if at < target:
                chars[2 * at + 1] = "\\"
                positions[index] = at + 1
                moved = True
            elif at > target:
                chars[2 * at - 1] = "/"
                positions[index] = at - 1
                moved = True
            elif chars[2 * at] == " ":
                chars[2 * at] = "|"
        if not moved:
            return
        yield "".join(chars).rstrip()


def _graph_text(row: str) -> Text:
    text = Text()
    for index, char in enumerate(row):
        if char == " ":
            text.append(char)
        elif char == "*":
            text.append(char, style="bold")
        else:
            lane = index // 2 if char == "|" else (index - 1) // 2 + (1 if char == "\\" else 0)
            text.append(char, style=_LANE_COLORS[lane % len(_LANE_COLORS)])
    return text


def _topo_order(commits: Mapping[str, Commit]) -> list[Commit]:
    """Children before parents; among ready commits the newest first (git's --date-order)."""
    waiting: dict[str, int] = dict.fromkeys(commits, 0)
    for commit in commits.values():
        for parent in set(commit.parents):
            if parent in waiting:
                waiting[parent] += 1
    ready = [(-c.timestamp.timestamp(), c.id) for c in commits.values() if waiting[c.id] == 0]
    heapq.heapify(ready)
    order: list[Commit] = []
    while ready:
        _, commit_id = heapq.heappop(ready)
        commit = commits[commit_id]
        order.append(commit)
        for parent in set(commit.parents):
            if parent in waiting:
                waiting[parent] -= 1
                if waiting[parent] == 0:
                    heapq.heappush(ready, (-commits[parent].timestamp.timestamp(), parent))
    return order


# --- message rendering ------------------------------------------------------------------------


def _block_lines(block: Any) -> list[Text]:
    if not isinstance(block, dict):
        return [Text(_short(block, 400))]
    if "text" in block and isinstance(block["text"], str):
        return [Text(block["text"])]
    if "toolUse" in block and isinstance(block["toolUse"], dict):
        use = block["toolUse"]
        line = Text("→ ", style="yellow")
        line.append(str(use.get("name", "?")), style="bold yellow")
        line.append("(" + _short(use.get("input", {}), 300) + ")")
        if use.get("toolUseId"):
            line.append(f"  [{use['toolUseId']}]", style="dim")
        return [line]
    if "toolResult" in block and isinstance(block["toolResult"], dict):
        result = block["toolResult"]
        status = str(result.get("status", "?"))
        line = Text("← ", style="yellow")
        line.append(f"result {status}", style="bold yellow" if status != "error" else "bold red")
        if result.get("toolUseId"):
            line.append(f"  [{result['toolUseId']}]", style="dim")
        lines = [line]
        for part in result.get("content", []) or []:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                lines.append(Text("  " + part["text"]))
            elif isinstance(part, dict) and "json" in part:
                lines.append(Text("  " + _short(part["json"], 300)))
            else:
                lines.append(Text("  " + _short(part, 300)))
        return lines
    if "reasoningContent" in block:
        reasoning = block["reasoningContent"]
        text = ""
        if isinstance(reasoning, dict):
            inner = reasoning.get("reasoningText", {})
            text = inner.get("text", "") if isinstance(inner, dict) else ""
        return [Text("[reasoning] " + (text or _short(reasoning, 200)), style="dim italic")]
    kind = next(iter(block), "block")
    return [Text(f"[{kind}] " + _short(block[kind], 200) if block else "[empty]", style="dim")]


def message_lines(message: Any) -> list[Text]:
    """Render one message readably: text, tool uses (→) and tool results (←)."""
    if not isinstance(message, dict):
        return [Text(_short(message, 400))]
    content = message.get("content")
    lines: list[Text] = []
    if isinstance(content, str):
        lines.append(Text(content))
    elif isinstance(content, list):
        for block in content:
            lines.extend(_block_lines(block))
    elif content is not None:
        lines.append(Text(_short(content, 400)))
    for call in message.get("tool_calls", []) or []:
        function = call.get("function", {}) if isinstance(call, dict) else {}
        line = Text("→ ", style="yellow")
        line.append(str(function.get("name", "?")), style="bold yellow")
        line.append("(" + _short(function.get("arguments", ""), 300) + ")")
        lines.append(line)
    if not lines:
        lines.append(Text("(empty)", style="dim"))
    return lines


def _role_text(message: Any) -> Text:
    role = str(message.get("role", "?")) if isinstance(message, dict) else "?"
    return Text(role, style=_ROLE_STYLES.get(role, "bold"))


def _preview(message: Any, width: int = 70) -> str:
    parts = [line.plain for line in message_lines(message)]
    text = " ".join(" ".join(parts).split())
    return text if len(text) <= width else text[: width - 1] + "…"


# --- the command group -------------------------------------------------------------------------


class _Group(click.Group):
    """Turns statevcs errors into one line on stderr and exit status 2."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (StateVCSError, OSError) as exc:
            if isinstance(exc, BrokenPipeError):
                raise
            state = ctx.find_object(_State)
            if state is not None and state.debug:
                traceback.print_exc()
            message = " ".join(str(exc).split()) or type(exc).__name__
            click.echo(f"error: {message}", err=True)
            ctx.exit(2)


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"]})
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
            raise click.BadParameter(f"cannot change to {chdir}: {exc.strerror}") from None
    state = _State(repo_url=repo_url, debug=debug, color=color, serializer=serializer)
    ctx.obj = state
    ctx.call_on_close(state.close)


def _json_option(func: Any) -> Any:
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")(func)


# --- init -------------------------------------------------------------------------------------


@cli.command()
@click.argument("path", required=False, type=click.Path(path_type=Path))
@click.option("--branch", "-b", default="main", show_default=True, help="Name of the first branch.")
@_json_option
def init(path: Path | None, branch: str, as_json: bool) -> None:
    """Create an empty repository in PATH (default: the current folder)."""
    from .repo import Repo

    folder = (path or Path.cwd()).resolve()
    Repo.init(folder, default_branch=branch).close()
    if as_json:
        _emit_json({"path": str(folder), "branch": branch})
    else:
        _state().out.print(f"Initialized empty statevcs repository in {folder}")


# --- log ---------------------------------------------------------------------------------------


@cli.command()
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
    """Show commit history, newest first."""
    state = _state()
    repo = state.repo()
    decorations = _Decorations(repo)
    everything = all_refs or (graph and rev is None)
    if not repo.refs() and rev is None:
        if as_json:
            _emit_json([])
        else:
            state.err.print("no commits yet")
        return
    commits: Iterable[Commit]
    if graph:
        reachable = {
            c.id: c for c in _history(repo, rev, everything, limit=None, first_parent=first_parent)
        }
        commits = _topo_order(reachable)[:limit] if limit is not None else _topo_order(reachable)
    else:
        commits = _history(repo, rev, everything, limit=limit, first_parent=first_parent)
    if as_json:
        _emit_json([_commit_json(c, decorations.labels(c.id)) for c in commits])
        return
    out = state.out
    if graph:
        listed = list(commits)
        by_id = {c.id: c for c in listed}
        # Parents cut off by -n keep their lanes open to the bottom, as in git.
        pairs = [(c.id, c.parents) for c in listed]
        for row, commit_id in graph_rows(pairs):
            line = _graph_text(row)
            if commit_id is not None:
                line.append(" ")
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
    line = Text(commit.short_id, style="yellow")
    line.append_text(decorations.text(commit.id))
    line.append(" " + _first_line(commit.message))
    return line


def _print_header(out: Console, commit: Commit, decorations: _Decorations) -> None:
    line = Text("commit " + commit.id, style="yellow")
    line.append_text(decorations.text(commit.id))
    out.print(line)
    if len(commit.parents) > 1:
        out.print("Merge:  " + " ".join(p[:12] for p in commit.parents))
    out.print(Text("Author: " + commit.author))
    out.print("Date:   " + commit.timestamp.strftime("%Y-%m-%d %H:%M:%S %z"))
    out.print()
    for text_line in (commit.message or "(no message)").splitlines() or [""]:
        out.print(Text("    " + text_line))


# --- show ---------------------------------------------------------------------------------------


@cli.command()
@click.argument("rev", default="HEAD")
@click.option("--messages", "only_messages", is_flag=True, help="Show the conversation.")
@click.option("--state", "only_state", is_flag=True, help="Show the state table.")
@_json_option
def show(rev: str, only_messages: bool, only_state: bool, as_json: bool) -> None:
    """Show a commit and its snapshot: messages, state and extras."""
    state = _state()
    repo = state.repo()
    commit = repo.get_commit(rev)
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
        out.print(Text("Metadata: " + _short(commit.metadata, 400), style="dim"))
    out.print()
    summary = Text(f"snapshot {commit.snapshot_id[:12]}", style="cyan")
    summary.append(
        f"  kind {snapshot.kind}  ·  {len(snapshot.messages)} messages  ·  "
        f"{len(snapshot.state)} state keys  ·  codec {codec}"
    )
    out.print(summary)
    if everything or only_messages:
        out.print()
        out.print(Text(f"Messages ({len(snapshot.messages)})", style="bold underline"))
        for index, message in enumerate(snapshot.messages):
            header = Text(f"[{index}] ", style="dim")
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
                table.add_row(Text(key), Text(_short(value, 200)))
            out.print(table)
        else:
            out.print(Text("(no state)", style="dim"))
    if everything and snapshot.extras:
        out.print()
        out.print(Text("Extras", style="bold underline"))
        for key, value in snapshot.extras.items():
            out.print(Text(f"  {key}: ", style="cyan").append(_short(value, 120), style="none"))


# --- diff ----------------------------------------------------------------------------------------


@cli.command()
@click.argument("a")
@click.argument("b", default="HEAD")
@click.option("--exit-code", is_flag=True, help="Exit with 1 when the snapshots differ.")
@_json_option
def diff(a: str, b: str, exit_code: bool, as_json: bool) -> None:
    """Compare the snapshots of revisions A and B (default HEAD) structurally."""
    state = _state()
    repo = state.repo()
    old, new = repo.get_commit(a), repo.get_commit(b)
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
    head = Text("diff ", style="bold")
    head.append(f"{result.old} ({old.short_id})", style="red")
    head.append(" → ", style="bold")
    head.append(f"{result.new} ({new.short_id})", style="green")
    out.print(head)
    if result.old_kind != result.new_kind:
        out.print(Text(f"kind: {result.old_kind} → {result.new_kind}", style="yellow"))
    m = result.messages
    out.print(
        Text(
            f"messages: {m.old_length} → {m.new_length} (common prefix {m.common_prefix}; "
            f"+{len(m.added)} -{len(m.removed)} ~{len(m.changed)})",
            style="bold",
        )
    )
    for change in m.changes:
        sign, style = _SIGNS[change.kind]
        line = Text(f"  {sign} [{change.index}] ", style=style)
        shown = change.old if change.kind == "removed" else change.new
        line.append_text(_role_text(shown))
        line.append(": " + _preview(shown), style=style)
        out.print(line)
        if change.kind == "changed":
            was = Text("      was: ", style="dim")
            was.append(_preview(change.old), style="dim")
            out.print(was)
    for title, changes in (("state", result.state), ("extras", result.extras)):
        if not changes:
            continue
        out.print(Text(f"{title}:", style="bold"))
        for c in changes:
            sign, style = _SIGNS[c.kind]
            if c.kind == "added":
                out.print(Text(f"  {sign} {c.key} = {_short(c.new)}", style=style))
            elif c.kind == "removed":
                out.print(Text(f"  {sign} {c.key} (was {_short(c.old)})", style=style))
            else:
                line = Text(f"  {sign} {c.key}: ", style=style)
                line.append(_short(c.old, 60), style="red")
                line.append(" → ")
                line.append(_short(c.new, 60), style="green")
                out.print(line)
    if result.is_empty:
        out.print(Text("(no differences)", style="dim"))


# --- refs ----------------------------------------------------------------------------------------


@cli.command()
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
        repo.delete_branch(delete)
        if as_json:
            _emit_json({"deleted": delete, "was": old})
        else:
            out.print(f"Deleted branch {delete} (was {(old or '')[:12]}).")
        return
    if name is not None:
        commit = repo.branch(name, start or "HEAD", force=force)
        if as_json:
            _emit_json({"branch": name, "commit": _commit_json(commit)})
        else:
            out.print(f"Created branch {name} at {commit.short_id} {_first_line(commit.message)}")
        return
    _list_refs(repo.branches(), repo.head_branch, "branch", as_json)


@cli.command()
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
        repo.delete_tag(delete)
        if as_json:
            _emit_json({"deleted": delete, "was": old})
        else:
            state.out.print(f"Deleted tag {delete} (was {(old or '')[:12]}).")
        return
    if name is not None:
        commit = repo.tag(name, rev or "HEAD", force=force)
        if as_json:
            _emit_json({"tag": name, "commit": _commit_json(commit)})
        else:
            state.out.print(f"Tagged {commit.short_id} as {name}")
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
    width = max((len(n) for n in commits), default=0)
    for name, commit in commits.items():
        mark = "* " if name == current else "  "
        line = Text(mark, style="bold green")
        line.append(name.ljust(width), style="bold green" if name == current else "")
        line.append("  " + commit.short_id, style="yellow")
        line.append(" " + _first_line(commit.message))
        state.out.print(line)


@cli.command()
@click.argument("branch_name", metavar="BRANCH")
@click.argument("rev")
@_json_option
def reset(branch_name: str, rev: str, as_json: bool) -> None:
    """Move BRANCH to REV (the commits it leaves stay in the reflog)."""
    state = _state()
    repo = state.repo()
    old = repo.branches().get(branch_name)
    commit = repo.reset(branch_name, rev)
    if as_json:
        _emit_json({"branch": branch_name, "old": old, "commit": _commit_json(commit)})
    else:
        state.out.print(f"{branch_name} is now at {commit.short_id} {_first_line(commit.message)}")


@cli.command()
@click.argument("ref", default="HEAD")
@click.option("-n", "--max-count", "limit", type=click.IntRange(min=0), help="At most N entries.")
@_json_option
def reflog(ref: str, limit: int | None, as_json: bool) -> None:
    """Show how REF (default HEAD) moved, newest first."""
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
        line = Text((entry.new or "0" * 12)[:12], style="yellow")
        line.append(f" {ref}@{{{index}}}: ", style="cyan")
        line.append(entry.message)
        line.append("  " + entry.timestamp.strftime("%Y-%m-%d %H:%M:%S"), style="dim")
        state.out.print(line)


# --- merge ---------------------------------------------------------------------------------------


@cli.command()
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
    old = repo.branches().get(branch_name)
    source = repo.resolve(rev)
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
        resolved = commit.metadata.get("merge", {}).get("resolved", {})
        text = f"Merged {rev} into {branch_name}: {commit.short_id} {_first_line(commit.message)}"
        if resolved:
            text += " (settled: " + ", ".join(f"{k} → {v}" for k, v in resolved.items()) + ")"
    if as_json:
        _emit_json({"outcome": outcome, "branch": branch_name, "commit": _commit_json(commit)})
    else:
        state.out.print(text)


# --- maintenance ---------------------------------------------------------------------------------


@cli.command()
@click.option(
    "--grace", default="2w", show_default=True, help="Keep unreachable objects younger than this."
)
@click.option("--dry-run", is_flag=True, help="Only report what would be deleted.")
@_json_option
def gc(grace: str, dry_run: bool, as_json: bool) -> None:
    """Delete objects no ref or reflog reaches, once older than the grace period."""
    state = _state()
    repo = state.repo()
    period = parse_duration(grace)
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    progress = Progress(
        SpinnerColumn(),
        TextColumn("[progress.description]{task.description}"),
        BarColumn(),
        TimeElapsedColumn(),
        console=state.err,
        transient=True,
        disable=as_json or not state.err.is_terminal,
    )
    with progress:
        task = progress.add_task("collecting garbage", total=None)

        def advance(phase: str, done: int, total: int) -> None:
            progress.update(task, description=phase, completed=done, total=total)

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
        f"{report.reachable} objects reachable, {report.unreachable} unreachable; {verb} "
        f"{report.deleted} ({_human_bytes(report.deleted_bytes)}), kept {report.kept_recent} "
        f"younger than {grace}"
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
            click.echo(problem)
        summary = (
            f"checked {report.objects_checked} objects: {report.reachable} reachable, "
            f"{report.dangling} dangling, {len(problems)} problems"
        )
        state.err.print(summary if problems else f"ok: {summary}")
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
    table.add_row("objects", f"{report.objects:,}")
    table.add_row("stored", f"{_human_bytes(report.bytes_stored)} ({report.bytes_stored:,} B)")
    table.add_row("commits", f"{report.commits:,}")
    table.add_row(
        "naive (copy per commit)",
        f"{_human_bytes(report.naive_bytes)} ({report.naive_bytes:,} B)",
    )
    table.add_row("dedup ratio", f"{report.dedup_ratio:.1f}x")
    state.out.print(table)
    if report.branches:
        state.out.print()
        heads = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
        heads.add_column("branch", style="green")
        heads.add_column("head", style="yellow")
        heads.add_column("message")
        for name, commit_id in sorted(report.branches.items()):
            heads.add_row(name, commit_id[:12], _first_line(repo.get_commit(commit_id).message))
        state.out.print(heads)


# --- git mirror ---------------------------------------------------------------------------------


@cli.command("export-git")
@click.argument("target", type=click.Path(path_type=Path))
@click.option("--branch", "branch_name", help="Export only this branch.")
@click.option("--push", "push_url", metavar="REMOTE_URL", help="Then push to this git remote.")
@click.option("--force", is_flag=True, help="Let the push overwrite branches that were reset.")
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
        f"exported {_plural(report.commits_exported, 'new commit')} "
        f"({_plural(report.objects_written, 'git object')}) to {report.target}; "
        f"the mirror holds {_plural(report.mirror_commits, 'commit')}"
    )
    for name, sha in report.refs_updated.items():
        out.print(Text(f"  {name} → git {sha[:7]}"))
    for name in report.refs_deleted:
        out.print(Text(f"  {name} deleted", style="red"))
    if report.pushed:
        out.print(f"pushed {_plural(len(report.push_refs), 'ref')} to {report.pushed}")
    for warning in report.warnings:
        state.err.print(Text("warning: " + warning, style="yellow"))


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
        f"imported {_plural(report.commits_imported, 'commit')} from {report.source} "
        f"({report.commits_existing} already present, {report.commits_from_git} made with git)"
    )
    for name, commit_id in report.refs_updated.items():
        out.print(Text(f"  {name} → {commit_id[:12]}"))
    for name, reason in report.refs_skipped.items():
        state.err.print(Text(f"warning: skipped {name}: {reason}", style="yellow"))
    for warning in report.warnings:
        state.err.print(Text("warning: " + warning, style="yellow"))


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
    args = _git_counts(list(argv) if argv is not None else sys.argv[1:])
    try:
        cli.main(args=args, prog_name="statevcs")
    except BrokenPipeError:
        # The reader went away (`statevcs log | head`): stop quietly, as git does.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(1)
    sys.exit(0)  # pragma: no cover - click's main exits itself


__all__ = [
    "cli",
    "find_repository",
    "graph_rows",
    "main",
    "message_lines",
    "parse_duration",
    "to_plain",
]
