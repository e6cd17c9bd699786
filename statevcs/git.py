"""Mirror statevcs history into a git repository any git tool can read, and read it back.

Each statevcs commit becomes a git commit with the same author, time, message and parent shape.
Its tree holds one pretty-printed JSON file per message (``messages/000001-user.json``), the
state (``state.json``), the extras (``extras.json``) and ``statevcs.json`` (ids, snapshot kind,
state codec and the exact commit fields), so :func:`import_git` rebuilds identical snapshot and
commit ids. Exports are incremental: a map of statevcs ids to git shas, stored in the git
repository (``statevcs-map`` in its git folder), lets a second export write only new commits.

One statevcs commit always gives one git commit, whichever process exports it: ``statevcs.json``
is written with sorted keys (metadata included), and message, state and extras files keep the
key order of the stored values, which is part of their content (it decides their ids).

A git repository written by :func:`export_git` is marked as a mirror in its git config
(``[statevcs] mirror = true``); an export refuses any other non-empty git repository unless
forced, and never touches a working tree that has local changes.

Values JSON cannot hold exactly are written as one-key marker objects:
``{"__bytes__": "<base64>"}``, ``{"__float__": "nan"}``, ``{"__map__": [[key, value], ...]}``
(non-string keys), ``{"__dict__": {...}}`` (a dict that would look like a marker) and, for state
written by a non-JSON serializer (msgpack, pickle), ``{"__raw__": {"codec": ..., "base64": ...}}``
holding the stored bytes (plus a ``repr`` preview for people when the value can be decoded).

Needs the ``git`` extra (dulwich): ``pip install 'statevcs[git]'``.
"""

from __future__ import annotations

import base64
import binascii
import io
import json
import math
import os
import re
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from .commitfields import canonical_metadata, check_text, timestamp_us
from .errors import GitMirrorError, InvalidRefName, StateVCSError
from .hashing import ObjectId, from_hex, to_hex
from .objects import Doc, MapRef, SnapshotObject, canonical, encode, encode_doc
from .refs import BRANCH_PREFIX, HEAD, TAG_PREFIX, branch_ref, check_ref_name
from .serializers import JSONSerializer, serializer_for
from .snapshot import (
    MessageBase,
    Snapshot,
    StoredMessages,
    load_snapshot_object,
    read_values,
    stored_messages,
    write_snapshot,
)
from .structures.maps import read_map

if TYPE_CHECKING:
    from dulwich.objects import Commit as GitCommit
    from dulwich.objects import ObjectID, Tree
    from dulwich.refs import Ref
    from dulwich.repo import Repo as GitRepo

    from .repo import Commit, Repo

MIRROR_FORMAT = 1
MAP_FILE = "statevcs-map"
MIRROR_SECTION = b"statevcs"
"""The git config section marking a statevcs mirror: ``[statevcs] mirror = true``."""
MAX_FILE_SIZE = 512 * 1024 * 1024
"""Largest file :func:`import_git` reads from a mirror (bytes); larger ones are refused."""
MAX_DEPTH = 512
"""Deepest nesting of lists and objects the JSON mapping reads or writes (documents deeper
than msgpack's 511 levels cannot be stored anyway; deeper JSON state is written verbatim)."""

_FILE_MODE = 0o100644
_TREE_MODE = 0o040000
_SYMLINK_MODE = 0o120000
_GITLINK_MODE = 0o160000
_MARKERS = frozenset({"__bytes__", "__float__", "__map__", "__dict__", "__raw__"})
_FLOATS = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
_ROLE = re.compile(r"[^a-z0-9_-]+")
_AUTHOR = re.compile(r"^(?P<name>[^<>\n]*?)\s*<(?P<email>[^<>\n]*)>$")
_HEX_ID = re.compile(r"[0-9a-f]{64}")
_GIT_SHA = re.compile(rb"[0-9a-f]{40}")
_MESSAGE_FILE = re.compile(r"([0-9]{1,12})-[^/]*\.json")
_MIRROR_FILES = ("statevcs.json", "state.json", "extras.json")
_KNOWN_ENTRIES = frozenset({b"messages", *(name.encode() for name in _MIRROR_FILES)})
_FLUSH_EVERY = 20_000


def _dulwich() -> None:
    try:
        import dulwich
    except ImportError:
        raise GitMirrorError(
            "the git mirror needs dulwich: install it with pip install 'statevcs[git]'"
        ) from None
    del dulwich


def _oid(sha: bytes) -> ObjectID:
    return cast("ObjectID", sha)


def _ref(name: str | bytes) -> Ref:
    return cast("Ref", name.encode() if isinstance(name, str) else name)


def _show(sha: bytes) -> str:
    return sha.decode("ascii", "replace")


_T = TypeVar("_T")
_K = TypeVar("_K", bound=Hashable)
_V = TypeVar("_V")


def _git_object(git: GitRepo, sha: bytes, kind: type[_T], what: str) -> _T:
    try:
        obj = git.object_store[_oid(sha)]
    except KeyError:
        raise GitMirrorError(
            f"{what} {_show(sha)} is not in the mirror's object store (a shallow or partial "
            "copy?); import from a complete mirror (git fetch --unshallow)"
        ) from None
    except Exception as exc:  # dulwich reports damaged objects with many unrelated types
        raise GitMirrorError(
            f"{what} {_show(sha)} in the mirror is damaged ({exc}); run `git fsck` in the mirror"
        ) from None
    if not isinstance(obj, kind):
        raise GitMirrorError(
            f"{_show(sha)} in the mirror is a {obj.type_name.decode()}, not a {what}"
        )
    return obj


def _git_commit(git: GitRepo, sha: bytes) -> GitCommit:
    from dulwich.objects import Commit

    return _git_object(git, sha, Commit, "commit")


def _git_tree(git: GitRepo, sha: bytes) -> Tree:
    from dulwich.objects import Tree

    return _git_object(git, sha, Tree, "tree")


def _git_blob(git: GitRepo, sha: bytes, name: str) -> bytes:
    from dulwich.objects import Blob

    data = bytes(_git_object(git, sha, Blob, f"file {name}").data)
    if len(data) > MAX_FILE_SIZE:
        raise GitMirrorError(
            f"{name} is {len(data):,} bytes, more than the {MAX_FILE_SIZE:,} an import reads "
            "(statevcs.git.MAX_FILE_SIZE); raise that limit if the file is genuine"
        )
    return data


def _parents_first(
    starts: Iterable[_K],
    load: Callable[[_K], _V],
    parents_of: Callable[[_V], Sequence[_K]],
    done: Callable[[_K], bool] = lambda key: False,
) -> list[_V]:
    """Return the commits reachable from ``starts`` and not ``done``, parents before children.

    An explicit stack instead of recursion: histories are arbitrarily long.
    """
    order: list[_V] = []
    seen: set[_K] = set()
    for start in starts:
        if start in seen or done(start):
            continue
        seen.add(start)
        stack: list[tuple[_V, Sequence[_K], int]] = []
        node = load(start)
        stack.append((node, parents_of(node), 0))
        while stack:
            node, parents, index = stack[-1]
            if index < len(parents):
                stack[-1] = (node, parents, index + 1)
                parent = parents[index]
                if parent not in seen and not done(parent):
                    seen.add(parent)
                    loaded = load(parent)
                    stack.append((loaded, parents_of(loaded), 0))
            else:
                stack.pop()
                order.append(node)
    return order


# --- JSON mapping ---------------------------------------------------------------


def _too_deep(where: str) -> GitMirrorError:
    return GitMirrorError(
        f"{where} is nested more than {MAX_DEPTH} levels deep; flatten the value "
        "(statevcs.git.MAX_DEPTH)"
    )


def to_json(value: Any) -> Any:
    """Return a JSON-compatible form of a msgpack-native value, with markers where needed.

    :func:`from_json` inverts it exactly: bytes, non-finite floats, non-string keys and
    marker-shaped dicts all come back as they were. Raises :class:`GitMirrorError` for other
    types and for nesting deeper than :data:`MAX_DEPTH`.
    """
    root: list[Any] = [None]
    # Each task writes the converted item into out[slot]; containers are created before their
    # items are converted, so key order is kept without recursion.
    stack: list[tuple[Any, Any, Any, int]] = [(value, root, 0, 0)]
    while stack:
        item, out, slot, depth = stack.pop()
        if item is None or isinstance(item, (bool, str, int)):
            out[slot] = item
        elif isinstance(item, float):
            if math.isfinite(item):
                out[slot] = item
            else:
                out[slot] = {"__float__": "nan" if math.isnan(item) else repr(item)}
        elif isinstance(item, (bytes, bytearray, memoryview)):
            out[slot] = {"__bytes__": base64.b64encode(bytes(item)).decode("ascii")}
        elif isinstance(item, (list, tuple, dict)):
            if depth >= MAX_DEPTH:
                raise _too_deep("a value")
            if isinstance(item, dict) and all(isinstance(k, str) for k in item):
                mapping: dict[str, Any] = dict.fromkeys(item)
                marker_like = len(item) == 1 and next(iter(item)) in _MARKERS
                out[slot] = {"__dict__": mapping} if marker_like else mapping
                stack.extend((v, mapping, k, depth + 1) for k, v in item.items())
            elif isinstance(item, dict):
                pairs: list[list[Any]] = [[None, None] for _ in range(len(item))]
                out[slot] = {"__map__": pairs}
                for pair, (k, v) in zip(pairs, item.items()):
                    stack.append((k, pair, 0, depth + 1))
                    stack.append((v, pair, 1, depth + 1))
            else:
                array: list[Any] = [None] * len(item)
                out[slot] = array
                stack.extend((v, array, i, depth + 1) for i, v in enumerate(item))
        else:
            raise GitMirrorError(
                f"cannot write a {type(item).__name__} value to the git mirror: messages and "
                "extras hold only JSON types and bytes"
            )
    return root[0]


_VALUE, _TUPLE, _MAP = 0, 1, 2


def from_json(value: Any, where: str = "a value") -> Any:
    """Invert :func:`to_json` (``__raw__`` markers are left for the caller).

    Raises :class:`GitMirrorError` naming ``where`` for a malformed marker, a map key that
    cannot be a key, or nesting deeper than :data:`MAX_DEPTH`.
    """
    root: list[Any] = [None]
    # Tasks: (_VALUE, item, out, slot, depth, as_key) converts one item; (_TUPLE, items, ...)
    # and (_MAP, pairs, ...) run after their children to build tuples (hashable map keys) and
    # marker maps whose keys must be complete before they can be inserted.
    stack: list[tuple[int, Any, Any, Any, int, bool]] = [(_VALUE, value, root, 0, 0, False)]
    while stack:
        task, item, out, slot, depth, as_key = stack.pop()
        if task == _TUPLE:
            out[slot] = tuple(item)
            continue
        if task == _MAP:
            if as_key:
                raise GitMirrorError(f"{where}: a map cannot be a key of another map")
            try:
                out[slot] = dict(cast("list[tuple[Any, Any]]", item))
            except TypeError as exc:
                raise GitMirrorError(f"{where}: a __map__ key cannot be a key ({exc})") from None
            continue
        if isinstance(item, (list, dict)) and depth >= MAX_DEPTH:
            raise _too_deep(where)
        if isinstance(item, list):
            array: list[Any] = [None] * len(item)
            if as_key:
                stack.append((_TUPLE, array, out, slot, depth, False))
            else:
                out[slot] = array
            stack.extend((_VALUE, v, array, i, depth + 1, as_key) for i, v in enumerate(item))
        elif isinstance(item, dict):
            if len(item) == 1:
                ((key, inner),) = item.items()
                if key in _MARKERS and key != "__raw__":
                    _marker(stack, key, inner, out, slot, depth, as_key, where)
                    continue
            if as_key:
                raise GitMirrorError(f"{where}: an object cannot be a key of a map")
            mapping: dict[str, Any] = dict.fromkeys(item)
            out[slot] = mapping
            stack.extend((_VALUE, v, mapping, k, depth + 1, False) for k, v in item.items())
        else:
            out[slot] = item
    return root[0]


def _marker(
    stack: list[tuple[int, Any, Any, Any, int, bool]],
    key: str,
    inner: Any,
    out: Any,
    slot: Any,
    depth: int,
    as_key: bool,
    where: str,
) -> None:
    """Decode one marker object for :func:`from_json` (children go on ``stack``)."""
    if key == "__bytes__":
        try:
            if not isinstance(inner, str):
                raise TypeError("not a string")
            out[slot] = base64.b64decode(inner, validate=True)
        except (TypeError, ValueError, binascii.Error) as exc:
            raise GitMirrorError(
                f"{where}: a __bytes__ marker must hold base64 text ({exc})"
            ) from None
    elif key == "__float__":
        if not isinstance(inner, str) or inner not in _FLOATS:
            raise GitMirrorError(
                f"{where}: a __float__ marker must hold 'nan', 'inf' or '-inf', not {inner!r:.40}"
            )
        out[slot] = _FLOATS[inner]
    elif key == "__map__":
        if not isinstance(inner, list) or not all(
            isinstance(p, list) and len(p) == 2 for p in inner
        ):
            raise GitMirrorError(f"{where}: a __map__ marker must hold a list of [key, value]")
        pairs: list[list[Any]] = [[None, None] for _ in range(len(inner))]
        stack.append((_MAP, pairs, out, slot, depth, as_key))
        for pair, (k, v) in zip(pairs, inner):
            stack.append((_VALUE, k, pair, 0, depth + 1, True))
            stack.append((_VALUE, v, pair, 1, depth + 1, False))
    else:  # __dict__
        if not isinstance(inner, dict):
            raise GitMirrorError(f"{where}: a __dict__ marker must hold an object")
        if as_key:
            raise GitMirrorError(f"{where}: an object cannot be a key of a map")
        mapping: dict[str, Any] = dict.fromkeys(inner)
        out[slot] = mapping
        stack.extend((_VALUE, v, mapping, k, depth + 1, False) for k, v in inner.items())


def dump_json(value: Any, *, sort_keys: bool = False) -> bytes:
    """Return ``value`` (already JSON-compatible) as the pretty UTF-8 JSON the mirror stores.

    The layout is fixed (two-space indent, ``", "``/``": "`` separators, non-ASCII text as
    UTF-8), so equal values always give equal bytes. ``sort_keys`` is for ``statevcs.json``;
    documents keep their key order, which is part of their content.
    """
    try:
        text = json.dumps(
            value,
            indent=2,
            separators=(",", ": "),
            ensure_ascii=False,
            allow_nan=False,
            sort_keys=sort_keys,
        )
        return (text + "\n").encode("utf-8")
    except RecursionError:
        raise _too_deep("a value") from None
    except (ValueError, TypeError) as exc:  # lone surrogates, NaN, non-JSON types
        raise GitMirrorError(f"a value cannot be written as JSON to the mirror ({exc})") from None


def _parse_json(data: bytes, where: str) -> Any:
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise GitMirrorError(f"{where} is not UTF-8 text ({exc})") from None
    try:
        return json.loads(text)
    except RecursionError:
        raise _too_deep(where) from None
    except ValueError as exc:
        raise GitMirrorError(f"{where} is not valid JSON ({exc})") from None


def _role_of(message: Any) -> str:
    role = message.get("role") if isinstance(message, dict) else None
    name = _ROLE.sub("-", str(role).lower()).strip("-")[:40] if role is not None else ""
    return name or "message"


def _utf8(text: str, what: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise GitMirrorError(f"{what} cannot be written as UTF-8 ({exc})") from None


# --- reports --------------------------------------------------------------------------


@dataclass
class ExportReport:
    """What :func:`export_git` wrote."""

    target: str
    commits_exported: int = 0
    """statevcs commits newly written as git commits."""
    objects_written: int = 0
    """git objects (blobs, trees, commits) newly added to the git object store."""
    refs_updated: dict[str, str] = field(default_factory=dict)
    """Ref name -> git sha for every ref created or moved."""
    refs_deleted: list[str] = field(default_factory=list)
    mirror_commits: int = 0
    """statevcs commits the mirror holds (also ones no ref reaches any more)."""
    worktree_updated: bool = False
    pushed: str | None = None
    push_refs: dict[str, str | None] = field(default_factory=dict)
    """Ref name -> ``None`` when the remote accepted it, else the remote's reason."""
    remote_head: str | None = None
    """The branch a pushed remote's ``HEAD`` was pointed at (it named no existing branch)."""
    warnings: list[str] = field(default_factory=list)


@dataclass
class ImportReport:
    """What :func:`import_git` read."""

    source: str
    commits_imported: int = 0
    """git commits written as new statevcs commits."""
    commits_existing: int = 0
    """git commits whose statevcs commit was already in the repository."""
    commits_from_git: int = 0
    """Imported commits made with git tools (no matching ``statevcs.json``); new ids."""
    refs_updated: dict[str, str] = field(default_factory=dict)
    """Ref name -> statevcs commit id for every ref created or fast-forwarded."""
    refs_skipped: dict[str, str] = field(default_factory=dict)
    """Ref name -> why it was left alone (it diverged from the mirror)."""
    warnings: list[str] = field(default_factory=list)


# --- opening mirrors --------------------------------------------------------------------


def _open_or_init(target: Path) -> tuple[GitRepo, bool]:
    from dulwich.errors import NotGitRepository
    from dulwich.repo import Repo as GitRepo

    try:
        return GitRepo(str(target)), False
    except NotGitRepository:
        pass
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise GitMirrorError(
            f"{target} exists and is not a git repository; export into a new folder or an "
            "existing git mirror"
        )
    target.mkdir(parents=True, exist_ok=True)
    if target.name.endswith(".git"):
        return GitRepo.init_bare(str(target)), True
    return GitRepo.init(str(target)), True


def _open_existing(source: Path) -> GitRepo:
    from dulwich.errors import NotGitRepository
    from dulwich.repo import Repo as GitRepo

    try:
        return GitRepo(str(source))
    except NotGitRepository:
        raise GitMirrorError(
            f"{source} is not a git repository; give the folder written by `statevcs export-git`"
        ) from None
    except Exception as exc:  # dulwich reports a damaged git folder with many types
        raise GitMirrorError(
            f"{source} could not be opened as a git repository ({exc}); run `git fsck` in it"
        ) from None


def _is_marked(git: GitRepo) -> bool:
    try:
        value = git.get_config().get((MIRROR_SECTION,), b"mirror")
    except KeyError:
        return False
    return value.strip().lower() in (b"true", b"yes", b"on", b"1")


def _mark(git: GitRepo) -> None:
    config = git.get_config()
    config.set((MIRROR_SECTION,), b"mirror", b"true")
    config.write_to_path()


def _has_refs(git: GitRepo) -> bool:
    return any(name.startswith(b"refs/") for name in git.refs.allkeys())


def _looks_like_mirror(git: GitRepo) -> bool:
    """A mirror written before mirrors were marked, or a clone or pushed copy of one."""
    if (Path(git.controldir()) / MAP_FILE).is_file():
        return True
    tips = _branch_and_tag_commits(git)
    return bool(tips) and all(_read_info(git, sha) is not None for sha in tips.values())


def _worktree_changes(git: GitRepo, *, mirror_paths_only: bool = False) -> list[str]:
    """Paths ``git status`` would list: staged, modified and untracked (not ignored) files.

    With ``mirror_paths_only`` untracked files count only where an export writes files, since
    checking out a mirror commit leaves every other untracked file alone.
    """
    from dulwich import porcelain

    # optional_locks=False: looking must not rewrite the index of someone else's repository.
    status = porcelain.status(git, untracked_files="all", optional_locks=False)
    changed = [*status.staged["add"], *status.staged["delete"], *status.staged["modify"]]
    changed.extend(status.unstaged)
    names = {p.decode("utf-8", "replace") if isinstance(p, bytes) else str(p) for p in changed}
    for raw in status.untracked:
        name = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else str(raw)
        if not mirror_paths_only or name in _MIRROR_FILES or name.startswith("messages/"):
            names.add(name)
    return sorted(names)


def _listing(paths: Sequence[str]) -> str:
    shown = ", ".join(paths[:5])
    return shown + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")


class _IdMap:
    """statevcs commit id <-> git sha, kept in a file inside the git folder."""

    def __init__(self, git: GitRepo) -> None:
        self.path = Path(git.controldir()) / MAP_FILE
        self.to_git: dict[str, ObjectID] = {}
        self.new: list[tuple[str, ObjectID]] = []
        self.existed = self.path.is_file()
        if self.existed:
            for line in self.path.read_bytes().splitlines():
                parts = line.split()
                if len(parts) == 2 and _GIT_SHA.fullmatch(parts[1]):
                    name = parts[0].decode("ascii", "replace")
                    if _HEX_ID.fullmatch(name):
                        self.to_git[name] = _oid(parts[1])

    def add(self, statevcs_id: str, sha: ObjectID) -> None:
        self.to_git[statevcs_id] = sha
        self.new.append((statevcs_id, sha))

    def save(self) -> None:
        if not self.new:
            return
        with self.path.open("a", encoding="ascii") as handle:
            handle.writelines(f"{s} {g.decode('ascii')}\n" for s, g in self.new)
        self.new.clear()


# --- export -------------------------------------------------------------------------------


class _Raw:
    """Serialized state bytes carried through :func:`write_snapshot` unchanged."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data


class _RawSerializer:
    """A pass-through 'serializer' writing already-serialized bytes under a codec name."""

    def __init__(self, name: str) -> None:
        self.name = name

    def serialize(self, value: Any, path: str = "value") -> bytes:
        if not isinstance(value, _Raw):
            raise GitMirrorError(f"{path}: expected serialized bytes from the mirror")
        return value.data

    def deserialize(self, data: bytes, path: str = "value") -> Any:
        return _Raw(data)

    def validate(self, value: Any, path: str = "value") -> None:
        self.serialize(value, path)


def _git_author(author: str) -> bytes:
    match = _AUTHOR.match(author.strip())
    if match:
        name, email = match.group("name"), match.group("email")
    else:
        name, email = author, ""
    name = re.sub(r"[<>\n]+", " ", name).strip() or "unknown"
    return _utf8(f"{name} <{email}>", "the commit author")


def _map_key(ref: MapRef) -> bytes:
    """A hashable key for a stored map (its id) or a small map kept inline (its encoding)."""
    return ref if isinstance(ref, bytes) else encode(ref)


class _Exporter:
    """Builds git objects for statevcs commits, sharing blobs and trees between commits."""

    def __init__(self, repo: Repo, git: GitRepo, report: ExportReport) -> None:
        self.repo = repo
        self.git = git
        self.store = git.object_store
        self.report = report
        self.pending: list[tuple[Any, None]] = []
        self.pending_ids: set[bytes] = set()
        self.message_blobs: dict[ObjectId, tuple[str, ObjectID]] = {}
        self.message_trees: dict[tuple[ObjectId, tuple[ObjectId, ...]], ObjectID | None] = {}
        self.map_blobs: dict[tuple[bytes, str], ObjectID] = {}
        self.json = JSONSerializer()

    def add(self, obj: Any) -> ObjectID:
        sha: ObjectID = obj.id
        if sha not in self.pending_ids and sha not in self.store:
            self.pending.append((obj, None))
            self.pending_ids.add(sha)
            if len(self.pending) >= _FLUSH_EVERY:
                self.flush()
        return sha

    def flush(self) -> None:
        if self.pending:
            self.store.add_objects(self.pending)
            self.report.objects_written += len(self.pending)
            self.pending = []
            self.pending_ids = set()

    def blob(self, data: bytes) -> ObjectID:
        from dulwich.objects import Blob

        return self.add(Blob.from_string(data))

    def messages_tree(self, snap: SnapshotObject) -> ObjectID | None:
        key = (snap.messages, snap.tail)
        if key in self.message_trees:
            return self.message_trees[key]
        from dulwich.objects import Tree

        ids = stored_messages(self.repo.db, snap).ids(self.repo.db)
        missing = [i for i in dict.fromkeys(ids) if i not in self.message_blobs]
        values = self.repo.db.load_values(missing)
        for object_id in missing:
            doc = values[object_id]
            message = doc.value if isinstance(doc, Doc) else doc.data
            self.message_blobs[object_id] = (
                _role_of(message),
                self.blob(dump_json(to_json(message))),
            )
        sha: ObjectID | None = None
        if ids:
            tree = Tree()
            for index, object_id in enumerate(ids, start=1):
                role, blob = self.message_blobs[object_id]
                tree.add(f"{index:06d}-{role}.json".encode(), _FILE_MODE, blob)
            sha = self.add(tree)
        self.message_trees[key] = sha
        return sha

    def state_blob(self, map_ref: MapRef, codec: str) -> ObjectID:
        key = (_map_key(map_ref), codec)
        found = self.map_blobs.get(key)
        if found is not None:
            return found
        # The pass-through serializer hands back each value's stored bytes, inline or not.
        raw = read_values(self.repo.db, read_map(self.repo.db, map_ref), _RawSerializer(codec))
        out = {name: self._state_value(name, value.data, codec) for name, value in raw.items()}
        try:
            data = dump_json(out)
        except GitMirrorError:
            # Too deep for pretty JSON: the stored bytes go in verbatim, which always works.
            out = {name: self._raw_marker(value.data, codec) for name, value in raw.items()}
            data = dump_json(out)
        sha = self.map_blobs[key] = self.blob(data)
        return sha

    def _state_value(self, name: str, data: bytes, codec: str) -> Any:
        if codec == self.json.name:
            try:
                value = self.json.deserialize(data)
                if self.json.serialize(value) == data:
                    return to_json(value)
            except StateVCSError:  # not canonical JSON, or deeper than MAX_DEPTH: keep bytes
                pass
        return self._raw_marker(data, codec)

    def _raw_marker(self, data: bytes, codec: str) -> Any:
        raw: dict[str, Any] = {"codec": codec, "base64": base64.b64encode(data).decode("ascii")}
        try:
            decoded = serializer_for(codec, self.repo.serializer).deserialize(data)
            raw["repr"] = repr(decoded)
        except Exception:  # the preview is for people only; the bytes are what count
            pass
        return {"__raw__": raw}

    def extras_blob(self, map_ref: MapRef) -> ObjectID:
        key = (_map_key(map_ref), "")
        found = self.map_blobs.get(key)
        if found is not None:
            return found
        values = read_values(self.repo.db, read_map(self.repo.db, map_ref), None)
        out = {name: to_json(value) for name, value in values.items()}
        sha = self.map_blobs[key] = self.blob(dump_json(out))
        return sha

    def commit(self, commit: Commit, parents: Sequence[ObjectID]) -> ObjectID:
        from dulwich.objects import Commit as GitCommit
        from dulwich.objects import Tree

        snap = load_snapshot_object(self.repo.db, from_hex(commit.snapshot_id))
        info = {
            "format": MIRROR_FORMAT,
            "commit": commit.id,
            "parents": list(commit.parents),
            "snapshot": commit.snapshot_id,
            "kind": snap.kind,
            "state_codec": snap.state_codec,
            "author": commit.author,
            "timestamp": commit.timestamp.isoformat(),
            "message": commit.message,
            # The commit object stores metadata canonically; a handle's copy may still be in
            # the committing caller's key order, which must not leak into the mirror.
            "metadata": to_json(canonical(commit.metadata)),
        }
        tree = Tree()
        messages = self.messages_tree(snap)
        if messages is not None:
            tree.add(b"messages", _TREE_MODE, messages)
        tree.add(b"state.json", _FILE_MODE, self.state_blob(snap.state, snap.state_codec))
        tree.add(b"extras.json", _FILE_MODE, self.extras_blob(snap.extras))
        tree.add(b"statevcs.json", _FILE_MODE, self.blob(dump_json(info, sort_keys=True)))
        git_commit = GitCommit()
        git_commit.tree = self.add(tree)
        git_commit.parents = list(parents)
        git_commit.author = git_commit.committer = _git_author(commit.author)
        seconds = math.floor(commit.timestamp.timestamp())
        git_commit.author_time = git_commit.commit_time = seconds
        git_commit.author_timezone = git_commit.commit_timezone = 0
        text = commit.message if commit.message.endswith("\n") else commit.message + "\n"
        git_commit.message = _utf8(text, f"the message of commit {commit.id[:12]}")
        return self.add(git_commit)


def _export_refs(repo: Repo, branch: str | None) -> dict[str, str]:
    refs = {
        name: value
        for name, value in repo.refs().items()
        if name.startswith((BRANCH_PREFIX, TAG_PREFIX))
    }
    if branch is None:
        return refs
    ref = branch_ref(branch)
    if ref not in refs:
        raise GitMirrorError(
            f"no branch named {branch!r} to export; list them with `statevcs branch`"
        )
    return {ref: refs[ref]}


def _to_write(repo: Repo, starts: Iterable[str], done: Callable[[str], bool]) -> list[Commit]:
    """Return the commits reachable from ``starts`` not ``done`` yet, parents first."""
    return _parents_first(starts, repo.get_commit, lambda commit: commit.parents, done)


def _check_target(git: GitRepo, path: Path, force: bool) -> tuple[bool, bool]:
    """Refuse a target that is neither empty nor a mirror (unless forced); return
    ``(is_mirror, is_empty)``. Nothing is written here."""
    if _is_marked(git):
        return True, False
    if not _has_refs(git):
        untracked = [] if git.bare else _worktree_changes(git)
        if not untracked:
            return False, True
        problem = f"has no commits but holds files ({_listing(untracked)})"
    elif _looks_like_mirror(git):
        return True, False
    else:
        problem = "has branches or tags of its own"
    if not force:
        raise GitMirrorError(
            f"{path} is a git repository that is not a statevcs mirror: it {problem}, which an "
            "export would replace. Export into a new folder (or an empty git repository), or "
            "pass --force (force=True) to overwrite its branches anyway"
        )
    return False, False


def export_git(
    repo: Repo,
    target: str | os.PathLike[str],
    *,
    branch: str | None = None,
    push: str | None = None,
    force: bool = False,
) -> ExportReport:
    """Mirror the repository's history into the git repository at ``target``.

    ``target`` is created when missing (bare when its name ends in ``.git``, else with a
    working tree that follows the branch git's ``HEAD`` is on) and marked as a statevcs mirror
    in its git config. Any other git repository that is not empty is refused unless ``force``
    is given; a working tree with local changes (what ``git status`` lists) is never
    overwritten, even with ``force``: the export is refused before anything is written. Every
    branch and tag is exported, or only ``branch``. Exports are incremental. ``push`` then
    pushes the exported refs to a git remote URL or path (``force`` also allows non
    fast-forward updates, after a ``statevcs reset`` for example) and points the remote's
    ``HEAD`` at the exported default branch when it named none.
    """
    _dulwich()
    if not isinstance(target, (str, os.PathLike)):
        raise TypeError(f"target must be a path (str or os.PathLike), not {type(target).__name__}")
    if branch is not None and not isinstance(branch, str):
        raise TypeError(f"branch must be a str or None, not {type(branch).__name__}")
    if push is not None and not isinstance(push, str):
        raise TypeError(f"push must be a str or None, not {type(push).__name__}")
    if not isinstance(force, bool):
        raise TypeError(f"force must be a bool, not {type(force).__name__}")
    path = Path(target)
    report = ExportReport(target=str(path))
    wanted = _export_refs(repo, branch)
    git, created = _open_or_init(path)
    try:
        mirror, empty = (False, True) if created else _check_target(git, path, force)
        fresh = created or empty
        ids = _IdMap(git)
        if not ids.existed and not fresh:
            _rebuild_map(git, ids)
        store = git.object_store

        def done(commit_id: str) -> bool:
            sha = ids.to_git.get(commit_id)
            return sha is not None and sha in store

        bare = git.bare
        before = git.refs.as_dict()
        if fresh:
            head: str | None = branch_ref(branch) if branch else _default_head(repo, wanted)
        else:
            head_target = _symbolic_head(git)
            head = head_target.decode("utf-8", "replace") if head_target is not None else None
        known = ids.to_git.get(wanted[head]) if head is not None and head in wanted else None
        head_moves = (
            not bare
            and head is not None
            and head in wanted
            and (known is None or known not in store or before.get(_ref(head)) != known)
        )
        if not bare and (head_moves or not mirror) and not fresh:
            # A forced export into someone else's repository needs a clean working tree even
            # when its checked-out branch stays put: it is theirs, not a mirror's.
            changes = _worktree_changes(git, mirror_paths_only=mirror)
            if changes:
                advice = (
                    "Commit them with git (then `statevcs import-git` brings them in) or discard "
                    "them, and export again; or export into a bare mirror (a folder named *.git)"
                    if mirror
                    else "Export into a new folder instead"
                )
                raise GitMirrorError(
                    f"the working tree of {path} has local changes ({_listing(changes)}), which "
                    f"an export would overwrite, so nothing was exported (not even with force). "
                    f"{advice}"
                )

        todo = _to_write(repo, dict.fromkeys(wanted.values()), done)
        exporter = _Exporter(repo, git, report)
        for commit in todo:
            parents = [ids.to_git[p] for p in commit.parents]
            try:
                sha = exporter.commit(commit, parents)
            except GitMirrorError as exc:
                raise GitMirrorError(
                    f"statevcs commit {commit.id} cannot be exported: {exc}. Refs in {path} "
                    "were not moved"
                ) from exc
            ids.add(commit.id, sha)
        exporter.flush()
        ids.save()
        report.commits_exported = len(todo)
        report.mirror_commits = len(ids.to_git)

        for name, commit_id in wanted.items():
            sha = ids.to_git[commit_id]
            old = before.get(_ref(name))
            if old == sha:
                continue
            if not git.refs.set_if_equals(_ref(name), old, sha, message=b"statevcs export-git"):
                raise GitMirrorError(f"{name} moved in {path} during the export; run it again")
            report.refs_updated[name] = sha.decode("ascii")
        if branch is None:
            exported = set(ids.to_git.values())
            for raw_name, sha in before.items():
                name = raw_name.decode("utf-8", "replace")
                if (
                    name.startswith((BRANCH_PREFIX, TAG_PREFIX))
                    and name not in wanted
                    and sha in exported
                    and git.refs.remove_if_equals(raw_name, sha)
                ):
                    report.refs_deleted.append(name)
        if not _is_marked(git):
            # Only once its refs are written: a failed export leaves a foreign repository
            # as foreign as it was.
            _mark(git)
        if fresh and head is not None:
            git.refs.set_symbolic_ref(_ref(HEAD), _ref(head))
        if head_moves and head is not None and head in report.refs_updated:
            from dulwich import porcelain

            porcelain.reset(git, "hard", report.refs_updated[head].encode("ascii"))
            report.worktree_updated = True
        if push is not None:
            default = head if head is not None and head in wanted else None
            _push(git, push, list(wanted), force, report)
            _fix_remote_head(push, default or _default_head(repo, wanted), report)
    finally:
        git.close()
    return report


def _symbolic_head(git: GitRepo) -> bytes | None:
    symrefs = git.refs.get_symrefs()
    target = symrefs.get(_ref(HEAD))
    return target if isinstance(target, bytes) else None


def _default_head(repo: Repo, wanted: Mapping[str, str]) -> str:
    head = repo.head_branch
    if head is not None and branch_ref(head) in wanted:
        return branch_ref(head)
    branches = sorted(n for n in wanted if n.startswith(BRANCH_PREFIX))
    return branches[0] if branches else branch_ref("main")


def _rebuild_map(git: GitRepo, ids: _IdMap) -> None:
    """Recover the id map from the ``statevcs.json`` files of an existing mirror."""
    for git_sha, info in _walk_mirror(git):
        commit_id = info.get("commit") if info else None
        if isinstance(commit_id, str) and commit_id not in ids.to_git:
            ids.add(commit_id, git_sha)


def _walk_mirror(git: GitRepo) -> Iterable[tuple[ObjectID, dict[str, Any] | None]]:
    """Yield (git sha, authentic statevcs.json or None) for mirror commits, parents first."""
    heads = _branch_and_tag_commits(git)
    order = _git_order(git, heads.values())
    svc: dict[bytes, str] = {}
    for git_commit in order:
        sha = git_commit.id
        info = _read_info(git, sha)
        parents = [svc.get(p) for p in git_commit.parents]
        if (
            info is not None
            and info.get("parents") == parents
            and isinstance(info.get("commit"), str)
        ):
            svc[sha] = info["commit"]
            yield sha, info
        else:
            yield sha, None


def _push(
    git: GitRepo, remote: str, refs: Sequence[str], force: bool, report: ExportReport
) -> None:
    from dulwich import porcelain

    out = io.BytesIO()
    try:
        result = porcelain.push(
            git,
            remote,
            [r.encode() for r in refs],
            outstream=out,
            errstream=out,
            force=force,
        )
    except porcelain.DivergedBranches as exc:
        raise GitMirrorError(
            f"the remote {remote} rejected a non fast-forward update (a branch was reset or "
            "rewritten); the mirror was exported locally. Pass --force (force=True) to "
            "overwrite the remote's branches"
        ) from exc
    except Exception as exc:  # dulwich raises many unrelated types (protocol, OS, HTTP)
        detail = str(exc) or type(exc).__name__
        raise GitMirrorError(
            f"push to {remote} failed: {detail}; check the URL (a bare repository path, "
            "file://, ssh:// or https://) and that the remote exists"
        ) from exc
    report.pushed = remote
    statuses = getattr(result, "ref_status", None) or {}
    for ref in refs:
        status = statuses.get(ref.encode())
        report.push_refs[ref] = status.decode() if isinstance(status, bytes) else status
    rejected = {r: s for r, s in report.push_refs.items() if s is not None}
    if rejected:
        listing = ", ".join(f"{r} ({s})" for r, s in sorted(rejected.items()))
        raise GitMirrorError(
            f"the remote {remote} rejected {listing}; the mirror was exported locally. "
            "Pass --force (force=True) to overwrite branches that were reset"
        )


def _fix_remote_head(remote: str, default: str, report: ExportReport) -> None:
    """Point a pushed remote's ``HEAD`` at ``default`` when it names no existing branch.

    ``git init --bare`` leaves ``HEAD`` on a branch that may never be pushed, and then
    ``git clone`` checks nothing out. The git protocol cannot move a remote's ``HEAD``, so
    only a remote on this machine is fixed; for others the report says what to run.
    """
    from dulwich.client import LocalGitClient, get_transport_and_path
    from dulwich.repo import Repo as GitRepo

    try:
        client, remote_path = get_transport_and_path(remote)
    except Exception:  # an unparsable URL already failed the push; nothing more to do here
        return
    if not isinstance(client, LocalGitClient):
        from dulwich import porcelain

        try:
            advertised = porcelain.ls_remote(remote).refs
        except Exception:  # the push went through; a failed look is no reason to fail now
            return
        if _ref(HEAD) not in advertised:
            report.warnings.append(
                f"the remote's HEAD names no branch, so `git clone {remote}` checks nothing "
                f"out; run `git symbolic-ref HEAD {default}` in the remote repository"
            )
        return
    with GitRepo(remote_path) as remote_git:
        target = _symbolic_head(remote_git)
        names = remote_git.refs.allkeys()
        if target is not None and target in names:
            return
        if _ref(default) not in names:
            return
        remote_git.refs.set_symbolic_ref(_ref(HEAD), _ref(default))
        report.remote_head = default


# --- reading mirrors -------------------------------------------------------------------------


def _branch_and_tag_commits(git: GitRepo) -> dict[str, ObjectID]:
    """Branches and tags that lead to commits, for looking at a possibly foreign repository."""
    from dulwich.objects import Commit

    refs: dict[str, ObjectID] = {}
    for raw_name in git.refs.allkeys():
        name = raw_name.decode("utf-8", "replace")
        if not name.startswith((BRANCH_PREFIX, TAG_PREFIX)):
            continue
        try:
            sha = git.get_peeled(raw_name)
            if isinstance(git.object_store[sha], Commit):
                refs[name] = sha
        except Exception:  # a dangling or damaged ref says nothing about what the repo is
            continue
    return refs


def _git_order(git: GitRepo, starts: Iterable[ObjectID]) -> list[GitCommit]:
    """git commits reachable from ``starts``, parents first."""
    return _parents_first(starts, lambda sha: _git_commit(git, sha), lambda commit: commit.parents)


def _entries(git: GitRepo, tree_sha: bytes) -> dict[bytes, tuple[int, bytes]]:
    tree = _git_tree(git, tree_sha)
    try:
        return {
            entry.path: (entry.mode, entry.sha)
            for entry in tree.iteritems()
            if entry.path is not None and entry.mode is not None and entry.sha is not None
        }
    except Exception as exc:  # dulwich parses tree entries lazily and reports damage variously
        raise GitMirrorError(
            f"tree {_show(tree_sha)} in the mirror is damaged ({exc}); run `git fsck` in it"
        ) from None


def _read_info(git: GitRepo, commit_sha: bytes) -> dict[str, Any] | None:
    """The ``statevcs.json`` object of a commit, or ``None`` whatever is wrong with it."""
    try:
        entries = _entries(git, _git_commit(git, commit_sha).tree)
        entry = entries.get(b"statevcs.json")
        if entry is None or entry[0] & 0o170000 != 0o100000:
            return None
        info = _parse_json(_git_blob(git, entry[1], "statevcs.json"), "statevcs.json")
    except GitMirrorError:
        return None
    return info if isinstance(info, dict) and "format" in info else None


def _has_info_file(git: GitRepo, commit_sha: bytes) -> bool:
    """Whether a commit's tree has a ``statevcs.json`` entry at all (valid or not)."""
    try:
        return b"statevcs.json" in _entries(git, _git_commit(git, commit_sha).tree)
    except GitMirrorError:
        return True  # damaged, not foreign: let the commit-by-commit check name the problem


# --- import --------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Info:
    """A validated ``statevcs.json``."""

    commit: str
    parents: tuple[str, ...]
    snapshot: str
    kind: str
    codec: str
    author: str
    timestamp: datetime
    message: str
    metadata: dict[Any, Any]


def _text_field(info: Mapping[str, Any], key: str) -> str:
    value = info.get(key)
    if not isinstance(value, str):
        raise GitMirrorError(f"statevcs.json: {key!r} must be a string, not {_kind(value)}")
    _utf8(value, f"statevcs.json: {key!r}")
    return value


def _kind(value: Any) -> str:
    return "missing" if value is None else f"a {type(value).__name__}"


def _hex_field(value: Any, what: str) -> str:
    if not isinstance(value, str) or not _HEX_ID.fullmatch(value):
        raise GitMirrorError(
            f"statevcs.json: {what} must be a 64-digit lowercase hex statevcs id, not {value!r:.80}"
        )
    return value


def _parse_info(data: bytes) -> _Info:
    info = _parse_json(data, "statevcs.json")
    if not isinstance(info, dict):
        raise GitMirrorError(f"statevcs.json must hold a JSON object, not {_kind(info)}")
    version = info.get("format")
    if type(version) is not int or version != MIRROR_FORMAT:
        if type(version) is int and version > MIRROR_FORMAT:
            raise GitMirrorError(
                f"statevcs.json has mirror format {version}, newer than this statevcs reads "
                f"({MIRROR_FORMAT}); upgrade statevcs"
            )
        raise GitMirrorError(
            f"statevcs.json: 'format' must be {MIRROR_FORMAT}, not {info.get('format')!r:.40}"
        )
    parents = info.get("parents")
    if not isinstance(parents, list):
        raise GitMirrorError(f"statevcs.json: 'parents' must be a list, not {_kind(parents)}")
    stamp = _text_field(info, "timestamp")
    try:
        moment = datetime.fromisoformat(stamp)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=timezone.utc)
        moment.astimezone(timezone.utc)
    except (ValueError, OverflowError) as exc:
        raise GitMirrorError(
            f"statevcs.json: 'timestamp' must be an ISO 8601 time, not {stamp!r:.60} ({exc})"
        ) from None
    raw_metadata = info.get("metadata", {})
    if not isinstance(raw_metadata, dict):
        raise GitMirrorError(
            f"statevcs.json: 'metadata' must be a JSON object, not {_kind(raw_metadata)}"
        )
    metadata = from_json(raw_metadata, "statevcs.json metadata")
    if not isinstance(metadata, dict):
        raise GitMirrorError("statevcs.json: 'metadata' must decode to an object")
    _check_document(metadata, "statevcs.json metadata")
    _check_metadata_keys(metadata)
    return _Info(
        commit=_hex_field(info.get("commit"), "'commit'"),
        parents=tuple(_hex_field(p, "each of 'parents'") for p in parents),
        snapshot=_hex_field(info.get("snapshot"), "'snapshot'"),
        kind=_text_field(info, "kind"),
        codec=_text_field(info, "state_codec"),
        author=_text_field(info, "author"),
        timestamp=moment,
        message=_text_field(info, "message"),
        metadata=metadata,
    )


def _check_metadata_keys(metadata: dict[Any, Any]) -> None:
    """Refuse non-string metadata keys, which statevcs commits no longer accept."""
    stack: list[Any] = [metadata]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            for key in item:
                if not isinstance(key, str):
                    raise GitMirrorError(
                        f"statevcs.json metadata has the non-string key {key!r:.40}, which "
                        "statevcs commits do not accept; turn the key into a string in "
                        "statevcs.json and commit that with git, which imports as a new commit"
                    )
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _check_document(value: Any, where: str) -> None:
    """Raise unless ``value`` can be stored (msgpack-native, in range, not too deep)."""
    try:
        encode_doc(value)
    except (TypeError, ValueError, OverflowError) as exc:
        raise GitMirrorError(f"{where} cannot be stored ({exc})") from None


def _file_entry(
    entries: Mapping[bytes, tuple[int, bytes]], name: str, *, folder: bool = False
) -> bytes:
    """The sha of a required file (or, with ``folder``, tree) entry, checking its mode."""
    entry = entries.get(name.encode())
    if entry is None:
        raise GitMirrorError(
            f"{name} is missing; every mirror commit holds statevcs.json, state.json and "
            "extras.json (write {} for an empty one)"
        )
    mode, sha = entry
    kind = mode & 0o170000
    if folder and kind == _TREE_MODE:
        return sha
    if not folder and kind == 0o100000:
        return sha
    found = {
        _TREE_MODE: "a folder",
        _SYMLINK_MODE: "a symbolic link",
        _GITLINK_MODE: "a submodule",
        0o100000: "a file",
    }.get(kind, f"an entry of mode {mode:o}")
    wanted = "a folder" if folder else "a regular file"
    raise GitMirrorError(f"{name} is {found}, not {wanted}; replace it with {wanted}")


@dataclass(frozen=True)
class _Parts:
    """The validated files of one mirror commit."""

    messages: tuple[bytes, ...]
    state: bytes
    extras: bytes


class _Importer:
    """Reads and validates mirror trees, parsing each distinct git blob once."""

    def __init__(self, repo: Repo, git: GitRepo, report: ImportReport) -> None:
        self.repo = repo
        self.git = git
        self.report = report
        self.messages: dict[bytes, dict[Any, Any]] = {}
        self.lists: dict[bytes, tuple[bytes, ...]] = {}
        self.states: dict[tuple[bytes, str], dict[str, _Raw]] = {}
        self.extras: dict[bytes, dict[str, Any]] = {}
        self.ignored: set[bytes] = set()

    def _json(self, sha: bytes, name: str) -> Any:
        return _parse_json(_git_blob(self.git, sha, name), name)

    def parts(self, entries: Mapping[bytes, tuple[int, bytes]], codec: str) -> _Parts:
        """Validate a commit's files (everything but statevcs.json) and return their shas."""
        for name in entries:
            if name not in _KNOWN_ENTRIES and name not in self.ignored:
                self.ignored.add(name)
                self.report.warnings.append(
                    f"ignored {name.decode('utf-8', 'replace')!r}: a mirror holds only "
                    "messages/, state.json, extras.json and statevcs.json"
                )
        messages: tuple[bytes, ...] = ()
        if b"messages" in entries:
            messages = self._messages(_file_entry(entries, "messages", folder=True))
        state = _file_entry(entries, "state.json")
        extras = _file_entry(entries, "extras.json")
        self._state(state, codec)
        self._extras(extras)
        return _Parts(messages, state, extras)

    def snapshot(self, parts: _Parts, kind: str, codec: str) -> Snapshot:
        """Return the snapshot of validated ``parts``."""
        return Snapshot.model_construct(
            kind=kind,
            messages=[self.messages[sha] for sha in parts.messages],
            state=dict(self._state(parts.state, codec)),
            extras=dict(self._extras(parts.extras)),
        )

    def _messages(self, tree_sha: bytes) -> tuple[bytes, ...]:
        found = self.lists.get(tree_sha)
        if found is not None:
            return found
        numbered: dict[int, bytes] = {}
        for raw_name, (mode, sha) in _entries(self.git, tree_sha).items():
            try:
                name = raw_name.decode("utf-8")
            except UnicodeDecodeError:
                raise GitMirrorError(
                    f"messages/ holds a file whose name is not UTF-8 ({raw_name!r:.60}); message "
                    "files are named like 000001-user.json"
                ) from None
            match = _MESSAGE_FILE.fullmatch(name)
            if match is None:
                raise GitMirrorError(
                    f"unexpected file messages/{name!r:.60} in the mirror; message files are "
                    "named like 000001-user.json"
                )
            path = f"messages/{name}"
            _file_entry({path.encode(): (mode, sha)}, path)
            number = int(match.group(1))
            if number in numbered:
                raise GitMirrorError(f"two message files have number {number} ({path})")
            numbered[number] = sha
            if sha not in self.messages:
                message = from_json(self._json(sha, path), path)
                if not isinstance(message, dict):
                    raise GitMirrorError(f"{path} must hold a JSON object, not {_kind(message)}")
                _check_document(message, path)
                self.messages[sha] = message
        if sorted(numbered) != list(range(1, len(numbered) + 1)):
            raise GitMirrorError(
                f"message files must be numbered 1 to {len(numbered)} without gaps; found "
                f"{_listing([str(n) for n in sorted(numbered)])}"
            )
        found = self.lists[tree_sha] = tuple(numbered[n] for n in sorted(numbered))
        return found

    def _object(self, sha: bytes, name: str) -> dict[str, Any]:
        value = self._json(sha, name)
        if not isinstance(value, dict):
            raise GitMirrorError(f"{name} must hold a JSON object, not {_kind(value)}")
        return value

    def _extras(self, sha: bytes) -> dict[str, Any]:
        found = self.extras.get(sha)
        if found is None:
            found = {}
            for key, value in self._object(sha, "extras.json").items():
                where = f"extras.json {key!r:.60}"
                found[key] = from_json(value, where)
                _check_document(found[key], where)
            self.extras[sha] = found
        return found

    def _state(self, sha: bytes, codec: str) -> dict[str, _Raw]:
        found = self.states.get((sha, codec))
        if found is None:
            found = {
                key: self._state_value(key, value, codec)
                for key, value in self._object(sha, "state.json").items()
            }
            self.states[(sha, codec)] = found
        return found

    def _state_value(self, key: str, value: Any, codec: str) -> _Raw:
        where = f"state.json {key!r:.60}"
        if isinstance(value, dict) and len(value) == 1 and "__raw__" in value:
            raw = value["__raw__"]
            if not isinstance(raw, dict) or not isinstance(raw.get("base64"), str):
                raise GitMirrorError(
                    f"{where}: a __raw__ marker must be an object with 'codec' and 'base64'"
                )
            if raw.get("codec") != codec:
                raise GitMirrorError(
                    f"{where} was written with codec {raw.get('codec')!r:.40} but the snapshot "
                    f"uses {codec!r:.40}"
                )
            try:
                data = base64.b64decode(raw["base64"], validate=True)
            except (ValueError, binascii.Error) as exc:
                raise GitMirrorError(f"{where}: 'base64' is not valid base64 ({exc})") from None
            if codec == JSONSerializer.name:
                # Only JSON is checked: decoding msgpack or pickle from an untrusted mirror
                # could run or crash on hostile bytes, and their ids are checked anyway.
                JSONSerializer().deserialize(data, where)
            return _Raw(data)
        decoded = from_json(value, where)
        serializer = serializer_for(codec, self.repo.serializer)
        return _Raw(serializer.serialize(decoded, f"state[{key!r}]"))


@dataclass
class _Planned:
    """One git commit of the mirror, validated and ready to write."""

    sha: ObjectID
    git_parents: tuple[ObjectID, ...]
    info: _Info
    authentic: bool
    existing: bool
    parts: _Parts | None
    message: str = ""
    author: str = ""
    timestamp: datetime | None = None


def _has_commit(repo: Repo, commit_id: str) -> bool:
    return bool(repo.store.has_many([from_hex(commit_id)]))


def _import_refs(git: GitRepo, report: ImportReport) -> dict[str, ObjectID]:
    """The mirror's branches and tags (peeled to commits), with their names validated."""
    from dulwich.objects import Commit

    refs: dict[str, ObjectID] = {}
    for raw_name in sorted(git.refs.allkeys()):
        if not raw_name.startswith((b"refs/heads/", b"refs/tags/")):
            continue
        try:
            name = raw_name.decode("utf-8")
            check_ref_name(name)
        except (UnicodeDecodeError, InvalidRefName) as exc:
            raise GitMirrorError(
                f"the mirror has a ref named {raw_name!r:.80}, which statevcs cannot hold "
                f"({exc}); rename or delete it with git, then import again"
            ) from None
        try:
            sha = git.get_peeled(raw_name)
        except KeyError:
            raise GitMirrorError(
                f"{name} in the mirror points to an object that is missing; delete the ref "
                "or restore the object, then import again"
            ) from None
        try:
            obj = git.object_store[sha]
        except KeyError:
            raise GitMirrorError(
                f"{name} in the mirror points to {_show(sha)}, which is missing; delete the ref "
                "or restore the object, then import again"
            ) from None
        except Exception as exc:  # dulwich reports damaged objects with many unrelated types
            raise GitMirrorError(f"{name} points to a damaged object ({exc})") from None
        if not isinstance(obj, Commit):
            report.warnings.append(f"skipped {name}: it points to a {obj.type_name.decode()}")
            continue
        refs[name] = sha
    return refs


def _plan(
    repo: Repo, git: GitRepo, importer: _Importer, refs: Mapping[str, ObjectID]
) -> list[_Planned]:
    """Read and validate every commit reachable from ``refs`` without writing anything."""
    plans: dict[bytes, _Planned] = {}
    for git_commit in _git_order(git, refs.values()):
        sha = git_commit.id
        try:
            plans[sha] = _plan_one(repo, git, importer, git_commit, plans)
        except StateVCSError as exc:
            raise GitMirrorError(
                f"git commit {_show(sha)} cannot be imported: {exc}. Nothing was imported"
            ) from exc
    return list(plans.values())


def _plan_one(
    repo: Repo,
    git: GitRepo,
    importer: _Importer,
    git_commit: GitCommit,
    plans: Mapping[bytes, _Planned],
) -> _Planned:
    entries = _entries(git, git_commit.tree)
    if b"statevcs.json" not in entries:
        raise GitMirrorError(
            "it has no statevcs.json, so it is not part of a statevcs mirror; a commit made "
            "with git must keep the statevcs.json of its parent"
        )
    info = _parse_info(_git_blob(git, _file_entry(entries, "statevcs.json"), "statevcs.json"))
    parents = tuple(git_commit.parents)
    parent_plans = [plans[p] for p in parents]
    authentic = all(p.authentic for p in parent_plans) and info.parents == tuple(
        p.info.commit for p in parent_plans
    )
    existing = authentic and _has_commit(repo, info.commit)
    plan = _Planned(git_commit.id, parents, info, authentic, existing, None)
    if existing:
        return plan
    plan.parts = importer.parts(entries, info.codec)
    if authentic:
        _check_commit_fields(info.message, info.author, info.timestamp, info.metadata)
    else:
        plan.message = git_commit.message.decode("utf-8", "replace").rstrip("\n")
        plan.author = git_commit.author.decode("utf-8", "replace")
        try:
            plan.timestamp = datetime.fromtimestamp(git_commit.author_time, tz=timezone.utc)
        except (OverflowError, ValueError, OSError) as exc:
            raise GitMirrorError(f"its author time cannot be read ({exc})") from None
        _check_commit_fields(plan.message, plan.author, plan.timestamp, {})
    return plan


def _check_commit_fields(
    message: str, author: str, timestamp: datetime, metadata: dict[Any, Any]
) -> None:
    """Apply the checks a commit applies to its fields now, so the import fails before writing."""
    check_text(message, "the commit message")
    check_text(author, "the commit author")
    timestamp_us(timestamp)
    canonical_metadata(metadata)


def import_git(repo: Repo, source: str | os.PathLike[str]) -> ImportReport:
    """Read a git mirror written by :func:`export_git` into ``repo``.

    Commits exported from statevcs come back with identical snapshot and commit ids (checked:
    a mismatch raises :class:`GitMirrorError`). Commits made with git tools on top of a mirror
    (editing ``state.json``, say) become new statevcs commits with git's author, time and
    message. Branches and tags are created, or fast-forwarded; a ref that diverged from the
    mirror is left alone and listed in ``refs_skipped``.

    Every commit is read and validated before anything is written: a repository that is not a
    statevcs mirror, or a damaged or hand-broken one, raises :class:`GitMirrorError` naming the
    git commit and the problem, and leaves every ref as it was.
    """
    _dulwich()
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(f"source must be a path (str or os.PathLike), not {type(source).__name__}")
    from .merge import is_ancestor

    path = Path(source)
    report = ImportReport(source=str(path))
    git = _open_existing(path)
    try:
        refs = _import_refs(git, report)
        _check_is_mirror(git, path, refs)
        importer = _Importer(repo, git, report)
        plans = _plan(repo, git, importer, refs)
        to_svc = _write_commits(repo, importer, plans, report)

        current = repo.refs()
        moves: list[tuple[str, str, str | None]] = []
        for name, sha in sorted(refs.items()):
            new = to_svc[sha]
            old = current.get(name)
            if old == new:
                continue
            if old is not None and not (
                name.startswith(BRANCH_PREFIX) and is_ancestor(repo, old, new)
            ):
                report.refs_skipped[name] = (
                    f"{name} is at {old[:12]} here and at {new[:12]} in the mirror, which do not "
                    "fast-forward; merge or reset it yourself"
                )
                continue
            moves.append((name, new, old))
        for name, new, old in moves:
            repo.set_ref(name, new, expected=old, reflog_message=f"import-git: {path}")
            report.refs_updated[name] = new
        _adopt_head(repo, git)
    finally:
        git.close()
    return report


def _check_is_mirror(git: GitRepo, path: Path, refs: Mapping[str, ObjectID]) -> None:
    """Refuse an ordinary git repository before reading its history."""
    advice = (
        "import-git reads only git repositories written by `statevcs export-git` "
        "(repo.export_git); export one with it"
    )
    if not refs:
        if _is_marked(git):
            return
        raise GitMirrorError(
            f"{path} is not a statevcs mirror: it has no branches or tags. {advice}"
        )
    if not any(_has_info_file(git, sha) for sha in refs.values()):
        raise GitMirrorError(
            f"{path} is not a statevcs mirror: no branch or tag has a statevcs.json. {advice}"
        )


def _write_commits(
    repo: Repo, importer: _Importer, plans: Sequence[_Planned], report: ImportReport
) -> dict[bytes, str]:
    """Write the planned commits; return git sha -> statevcs commit id."""
    to_svc: dict[bytes, str] = {}
    lists: dict[bytes, tuple[StoredMessages, tuple[bytes, ...]]] = {}
    for plan in plans:
        info = plan.info
        if plan.existing or plan.parts is None:
            to_svc[plan.sha] = info.commit
            report.commits_existing += 1
            continue
        try:
            to_svc[plan.sha] = _write_one(repo, importer, plan, lists, to_svc)
        except StateVCSError as exc:
            raise GitMirrorError(
                f"git commit {_show(plan.sha)} cannot be imported: {exc}. No ref was changed"
            ) from exc
        report.commits_imported += 1
        if not plan.authentic:
            report.commits_from_git += 1
    return to_svc


def _write_one(
    repo: Repo,
    importer: _Importer,
    plan: _Planned,
    lists: dict[bytes, tuple[StoredMessages, tuple[bytes, ...]]],
    to_svc: Mapping[bytes, str],
) -> str:
    info, parts = plan.info, plan.parts
    assert parts is not None
    snapshot = importer.snapshot(parts, info.kind, info.codec)
    base = None
    first = plan.git_parents[0] if plan.git_parents else None
    if first is not None and first in lists:
        previous, previous_blobs = lists[first]
        keep = 0
        for mine, theirs in zip(parts.messages, previous_blobs):
            if mine != theirs:
                break
            keep += 1
        base = MessageBase(previous=previous, keep=keep)
    # The mirror holds already-serialized state bytes (maybe pickled with a key this process
    # lacks), so they are written verbatim; messages shared with the parent are not re-encoded.
    written = write_snapshot(repo.db, snapshot, _RawSerializer(info.codec), base=base)
    snapshot_id = to_hex(written.snapshot_id)
    if plan.authentic and snapshot_id != info.snapshot:
        raise GitMirrorError(
            f"its files rebuild snapshot {snapshot_id[:12]}, not the recorded "
            f"{info.snapshot[:12]}: they were changed without a new commit, or were written by "
            "an incompatible statevcs; make a new git commit for the change instead"
        )
    pending = repo.db.unknown(written.objects)
    repo.store.put_many(pending)
    repo.db.mark_stored(pending)
    lists[plan.sha] = (written.messages, parts.messages)
    parents = [to_svc[p] for p in plan.git_parents]
    if plan.authentic:
        commit = repo.write_commit(
            snapshot_id,
            parents,
            info.message,
            author=info.author,
            timestamp=info.timestamp,
            metadata=info.metadata,
        )
        if commit.id != info.commit:
            raise GitMirrorError(
                f"it rebuilds commit {commit.id[:12]}, not the recorded {info.commit[:12]}: "
                "statevcs.json was edited, or the mirror was written by an older statevcs that "
                "wrote non-string metadata keys as strings (such commits cannot be read back "
                "exactly; export them again from the original repository)"
            )
        return commit.id
    assert plan.timestamp is not None
    commit = repo.write_commit(
        snapshot_id,
        parents,
        plan.message,
        author=plan.author,
        timestamp=plan.timestamp,
        metadata={"git": {"sha": _show(plan.sha)}},
    )
    return commit.id


def _adopt_head(repo: Repo, git: GitRepo) -> None:
    """Make the mirror's ``HEAD`` branch the default branch of a repository that had none."""
    current = repo.default_branch
    if current is not None and branch_ref(current) in repo.refs():
        return
    target = _symbolic_head(git)
    if target is None:
        return
    name = target.decode("utf-8", "replace")
    if name.startswith(BRANCH_PREFIX) and name in repo.refs():
        # switch() records the move in HEAD's reflog, as every move of the default branch is.
        repo.switch(name[len(BRANCH_PREFIX) :])


__all__ = [
    "MAX_DEPTH",
    "MAX_FILE_SIZE",
    "ExportReport",
    "ImportReport",
    "dump_json",
    "export_git",
    "from_json",
    "import_git",
    "to_json",
]
