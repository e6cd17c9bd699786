"""The history browser's JSON answers, from the repository alone (no web framework here).

Each answer reuses :mod:`statevcs.mcpserver.queries` (log, show, diff, search, compare and the
writes) and adds what a page needs: the branch graph laid out like ``log --graph``, ref labels,
pages of diff changes. Arguments are checked before anything is read; a refusal is a
:class:`~statevcs.mcpserver.queries.ToolArgumentError`. Text read from the repository is
returned as stored: the front end renders it as text, never as markup.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from ... import __version__
from ...errors import StateVCSError
from ...mcpserver import queries
from ...repo import Commit, Repo
from ..graph import graph_cells, graph_order

DEFAULT_PAGE = 100
"""Commits (graph), messages (commit) or changes (diff) one answer lists unless asked."""

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class _Layout:
    """The whole graph of one state of the refs: rows in order, and where each commit's is."""

    version: str
    rows: list[tuple[list[list[Any]], str | None]]
    commit_rows: list[int]
    commits: dict[str, Commit]
    labels: dict[str, list[dict[str, str]]]


@dataclass(frozen=True, slots=True)
class _Refs:
    """One read of the refs and ``HEAD``, and the ``version`` naming that state."""

    refs: dict[str, str]
    head_branch: str | None
    head: str | None
    version: str

    @classmethod
    def read(cls, repo: Repo) -> _Refs:
        refs = repo.refs.as_hex("refs/")
        head_branch = repo.head_branch
        head: str | None = None
        with contextlib.suppress(StateVCSError):  # an unborn or detached HEAD may name nothing
            head = repo.resolve("HEAD")
        digest = hashlib.blake2b(digest_size=12)
        for name in sorted(refs):
            digest.update(f"{name}\0{refs[name]}\n".encode("utf-8", "surrogatepass"))
        digest.update(f"HEAD\0{head_branch}\0{head}".encode("utf-8", "surrogatepass"))
        return cls(refs, head_branch, head, digest.hexdigest())

    def named(self, prefix: str) -> dict[str, str]:
        """The refs under ``prefix`` by their short names."""
        return {n.removeprefix(prefix): c for n, c in self.refs.items() if n.startswith(prefix)}

    def labels(self) -> dict[str, list[dict[str, str]]]:
        """Every ref's label by the commit it names: ``HEAD -> main``, branches, tags, others."""
        found: dict[str, list[dict[str, str]]] = {}
        if self.head_branch is None and self.head is not None:
            found.setdefault(self.head, []).append({"kind": "head", "name": "HEAD"})
        for name, commit_id in sorted(self.refs.items()):
            if name.startswith("refs/heads/"):
                short = name.removeprefix("refs/heads/")
                if short == self.head_branch:
                    found.setdefault(commit_id, []).insert(0, {"kind": "head", "name": short})
                    continue
                label = {"kind": "branch", "name": short}
            elif name.startswith("refs/tags/"):
                label = {"kind": "tag", "name": name.removeprefix("refs/tags/")}
            else:
                label = {"kind": "ref", "name": name}
            found.setdefault(commit_id, []).append(label)
        return found


def _count(value: object, argument: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise queries.ToolArgumentError(f"{argument} must be a whole number from {low} to {high}")
    return value


_LARGEST_INDEX = 2**32 - 2
"""The largest key a JavaScript object lists first, as an array index."""


def _js_index(key: str) -> bool:
    """Whether a JavaScript object lists ``key`` first (an array index: ``"0"``, ``"10"``)."""
    return (
        key.isascii()
        and key.isdigit()
        and (key == "0" or key[0] != "0")
        and int(key) <= _LARGEST_INDEX
    )


def _reordered_by_js(keys: list[str]) -> bool:
    """Whether a JavaScript object would list ``keys`` in another order (index keys first)."""
    indexes = [k for k in keys if _js_index(k)]
    if not indexes:
        return False
    js = sorted(indexes, key=int) + [k for k in keys if not _js_index(k)]
    return js != keys


def in_js_order(value: Any) -> Any:
    """``value`` (plain JSON) with every object whose key order JavaScript would change (keys
    like ``"2"`` and ``"10"`` go first there) written as ``{"__map__": [[key, value], ...]}``,
    which the page lists in order. Never recurses, so any depth renders."""
    root: list[Any] = [value]
    stack: list[tuple[Any, Any]] = [(root, 0)]
    while stack:
        holder, slot = stack.pop()
        item = holder[slot]
        if isinstance(item, list):
            items = list(item)
            holder[slot] = items
            stack.extend((items, i) for i in range(len(items)))
        elif isinstance(item, dict):
            if _reordered_by_js(list(item)):
                pairs = [[k, v] for k, v in item.items()]
                holder[slot] = {"__map__": pairs}
                stack.extend((pair, 1) for pair in pairs)
            else:
                mapping = dict(item)
                holder[slot] = mapping
                stack.extend((mapping, k) for k in mapping)
    return root[0]


def _page(offset: object, limit: object) -> tuple[int, int]:
    return _count(offset, "offset", 0, 10**9), _count(limit, "limit", 1, queries.MAX_PAGE)


class HistoryBrowser:
    """The JSON answers over one open repository, one at a time (a handle serves one call).

    ``writable`` adds :meth:`create_branch`, :meth:`create_tag` and :meth:`reset`; read-only
    browsers refuse them.
    """

    def __init__(self, repo: Repo, *, writable: bool = False) -> None:
        if not isinstance(repo, Repo):
            raise TypeError(f"repo must be a statevcs.Repo, got {type(repo).__name__}")
        if not isinstance(writable, bool):
            raise TypeError(f"writable must be a bool, got {type(writable).__name__}")
        self.repo = repo
        self.writable = writable
        self._lock = threading.Lock()
        self._layout: _Layout | None = None

    def _run(self, body: Callable[[], T]) -> T:
        with self._lock:
            return body()

    # --- reads -------------------------------------------------------------------------------

    def info(self) -> dict[str, Any]:
        """What the front end needs first: the repository, the version, whether writes work."""
        return {"repository": self.repo.url, "statevcs": __version__, "writable": self.writable}

    def refs(self) -> dict[str, Any]:
        """Branches, tags, other refs, ``HEAD``, and a ``version`` that changes when any moves.

        The front end polls this to refresh its view when another process commits.
        """

        def answer() -> dict[str, Any]:
            read = _Refs.read(self.repo)
            return {
                "version": read.version,
                "head": read.head,
                "head_branch": read.head_branch,
                "branches": read.named("refs/heads/"),
                "tags": read.named("refs/tags/"),
                "others": {
                    n: c
                    for n, c in read.refs.items()
                    if not n.startswith(("refs/heads/", "refs/tags/"))
                },
            }

        return self._run(answer)

    def _current_layout(self) -> _Layout:
        read = _Refs.read(self.repo)
        if self._layout is not None and self._layout.version == read.version:
            return self._layout
        refs, head = read.refs, read.head
        commits = {c.id: c for c in self.repo.log_all(all_parents=True)}
        starts = [refs[n] for n in sorted(refs, key=lambda n: (not n.startswith("refs/heads/"), n))]
        if head is not None:
            starts.append(head)
        tips = sorted(
            (c for c in dict.fromkeys(starts) if c in commits),
            key=lambda c: commits[c].timestamp,
            reverse=True,
        )
        order = graph_order({c.id: c.parents for c in commits.values()}, tips)
        rows: list[tuple[list[list[Any]], str | None]] = []
        commit_rows: list[int] = []
        for cells, commit_id in graph_cells([(c, list(commits[c].parents)) for c in order]):
            if commit_id is not None:
                commit_rows.append(len(rows))
            else:
                while cells and cells[-1][0] == " ":
                    cells = cells[:-1]
            rows.append(([[char, lane] for char, lane in cells], commit_id))
        self._layout = _Layout(read.version, rows, commit_rows, commits, read.labels())
        return self._layout

    def graph(self, offset: object = 0, limit: object = DEFAULT_PAGE) -> dict[str, Any]:
        """One page of every ref's history drawn like ``log --graph``: commits ``offset`` on.

        A row is ``{"graph": [[char, lane], ...], "commit": {...} | None}`` (connector rows
        carry no commit); the lanes continue across pages. Only commit objects are read, never
        a snapshot.
        """
        first, count = _page(offset, limit)

        def answer() -> dict[str, Any]:
            layout = self._current_layout()
            labels = layout.labels
            total = len(layout.commit_rows)
            start = layout.commit_rows[first] if first < total else len(layout.rows)
            end = layout.commit_rows[first + count] if first + count < total else len(layout.rows)
            rows = []
            for cells, commit_id in layout.rows[start:end]:
                commit = None
                if commit_id is not None:
                    commit = queries.commit_data(layout.commits[commit_id])
                    commit["labels"] = labels.get(commit_id, [])
                rows.append({"graph": cells, "commit": commit})
            return {
                "version": layout.version,
                "commit_count": total,
                "offset": first,
                "rows": rows,
                "next_offset": first + count if first + count < total else None,
            }

        return self._run(answer)

    def commit(
        self, rev: object = "HEAD", offset: object = 0, limit: object = 50
    ) -> dict[str, Any]:
        """A commit, its labels, one page of its conversation, its state and extras."""
        first, count = _page(offset, limit)

        def answer() -> dict[str, Any]:
            data = queries.show(self.repo, rev, first, count, state=True, extras=True)
            data["commit"]["labels"] = _Refs.read(self.repo).labels().get(data["commit"]["id"], [])
            for part in ("messages", "state", "extras"):
                data[part] = in_js_order(data[part])  # as committed, also keys like "10"
            return data

        return self._run(answer)

    def diff(
        self, a: object, b: object = "HEAD", offset: object = 0, limit: object = DEFAULT_PAGE
    ) -> dict[str, Any]:
        """The structural diff of two revisions, one page of its message changes."""
        first, count = _page(offset, limit)
        data = self._run(lambda: queries.diff(self.repo, a, b))
        changes = data["messages"]["changes"]
        data["messages"]["change_count"] = len(changes)
        data["messages"]["offset"] = first
        data["messages"]["changes"] = changes[first : first + count]
        data["messages"]["next_offset"] = first + count if len(changes) > first + count else None
        return data

    def search(
        self,
        pattern: object,
        rev: object = "HEAD",
        all_refs: object = True,
        regex: object = False,
        ignore_case: object = True,
        limit: object = 50,
    ) -> dict[str, Any]:
        """Messages matching ``pattern`` across history (every ref unless asked), newest first."""
        return self._run(
            lambda: queries.search(
                self.repo,
                pattern,
                rev=rev,
                all_refs=all_refs,
                regex=regex,
                ignore_case=ignore_case,
                limit=limit,
                messages=True,
            )
        )

    def compare(
        self, a: object, b: object, offset: object = 0, limit: object = 50
    ) -> dict[str, Any]:
        """Two runs (branches) turn by turn, one page of turns with their messages."""
        return self._run(
            lambda: queries.compare(self.repo, a, b, offset=offset, limit=limit, messages=True)
        )

    # --- writes ------------------------------------------------------------------------------

    def _writing(self) -> None:
        if not self.writable:
            raise ReadOnly(
                "this browser is read-only; start it with `statevcs serve --allow-write` "
                "to create branches and tags or reset a branch"
            )

    def create_branch(self, name: object, rev: object = "HEAD") -> dict[str, Any]:
        """Create a branch at ``rev`` (an existing one is never moved)."""
        self._writing()
        return self._run(lambda: queries.create_branch(self.repo, name, rev))

    def create_tag(self, name: object, rev: object = "HEAD") -> dict[str, Any]:
        """Create a tag at ``rev`` (an existing one is never moved)."""
        self._writing()
        return self._run(lambda: queries.create_tag(self.repo, name, rev))

    def reset(self, branch: object, rev: object) -> dict[str, Any]:
        """Move an existing branch to ``rev`` (its old tip stays in the branch's reflog)."""
        self._writing()
        return self._run(lambda: queries.reset(self.repo, branch, rev))


class ReadOnly(StateVCSError):
    """A write was asked of a read-only history browser; nothing was written."""


__all__ = ["DEFAULT_PAGE", "HistoryBrowser", "ReadOnly"]
