"""Mirror statevcs history into a git repository any git tool can read, and read it back.

Each statevcs commit becomes a git commit with the same author, time, message and parent shape.
Its tree holds one pretty-printed JSON file per message (``messages/000001-user.json``), the
state (``state.json``), the extras (``extras.json``) and ``statevcs.json`` (ids, snapshot kind,
state codec and the exact commit fields), so :func:`import_git` rebuilds identical snapshot and
commit ids. Exports are incremental: a map of statevcs ids to git shas, stored in the git
repository (``statevcs-map`` in its git folder), lets a second export write only new commits.

Values JSON cannot hold exactly are written as one-key marker objects:
``{"__bytes__": "<base64>"}``, ``{"__float__": "nan"}``, ``{"__map__": [[key, value], ...]}``
(non-string keys), ``{"__dict__": {...}}`` (a dict that would look like a marker) and, for state
written by a non-JSON serializer (msgpack, pickle), ``{"__raw__": {"codec": ..., "base64": ...}}``
holding the stored bytes (plus a ``repr`` preview for people when the value can be decoded).

Needs the ``git`` extra (dulwich): ``pip install 'statevcs[git]'``.
"""

from __future__ import annotations

import base64
import io
import json
import math
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from .errors import GitMirrorError, StateVCSError
from .hashing import ObjectId, from_hex, to_hex
from .objects import Doc, MapRef, SnapshotObject, encode
from .refs import BRANCH_PREFIX, HEAD, TAG_PREFIX, branch_ref
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
_FILE_MODE = 0o100644
_TREE_MODE = 0o040000
_MARKERS = frozenset({"__bytes__", "__float__", "__map__", "__dict__", "__raw__"})
_ROLE = re.compile(r"[^a-z0-9_-]+")
_AUTHOR = re.compile(r"^(?P<name>[^<>\n]*?)\s*<(?P<email>[^<>\n]*)>$")
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


_T = TypeVar("_T")


def _git_object(git: GitRepo, sha: bytes, kind: type[_T], what: str) -> _T:
    obj = git.object_store[_oid(sha)]
    if not isinstance(obj, kind):
        raise GitMirrorError(
            f"{sha.decode()} in the mirror is a {obj.type_name.decode()}, not a {what}"
        )
    return obj


def _git_commit(git: GitRepo, sha: bytes) -> GitCommit:
    from dulwich.objects import Commit

    return _git_object(git, sha, Commit, "commit")


def _git_tree(git: GitRepo, sha: bytes) -> Tree:
    from dulwich.objects import Tree

    return _git_object(git, sha, Tree, "tree")


def _git_blob(git: GitRepo, sha: bytes) -> bytes:
    from dulwich.objects import Blob

    return bytes(_git_object(git, sha, Blob, "file").data)


# --- JSON mapping ---------------------------------------------------------------


def to_json(value: Any) -> Any:
    """Return a JSON-compatible form of a msgpack-native value, with markers where needed.

    :func:`from_json` inverts it exactly: bytes, non-finite floats, non-string keys and
    marker-shaped dicts all come back as they were.
    """
    if value is None or isinstance(value, (bool, str, int)):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return {"__float__": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"__bytes__": base64.b64encode(bytes(value)).decode("ascii")}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value):
            encoded = {k: to_json(v) for k, v in value.items()}
            if len(value) == 1 and next(iter(value)) in _MARKERS:
                return {"__dict__": encoded}
            return encoded
        return {"__map__": [[to_json(k), to_json(v)] for k, v in value.items()]}
    raise GitMirrorError(
        f"cannot write a {type(value).__name__} value to the git mirror: messages and extras "
        "hold only JSON types and bytes"
    )


def from_json(value: Any) -> Any:
    """Invert :func:`to_json` (``__raw__`` markers are left for the caller)."""
    if isinstance(value, list):
        return [from_json(v) for v in value]
    if isinstance(value, dict):
        if len(value) == 1:
            ((key, inner),) = value.items()
            if key == "__bytes__":
                return base64.b64decode(inner)
            if key == "__float__":
                return float(inner)
            if key == "__map__":
                return {_hashable(from_json(k)): from_json(v) for k, v in inner}
            if key == "__dict__":
                return {k: from_json(v) for k, v in inner.items()}
        return {k: from_json(v) for k, v in value.items()}
    return value


def _hashable(key: Any) -> Any:
    return tuple(_hashable(k) for k in key) if isinstance(key, list) else key


def dump_json(value: Any) -> bytes:
    """Return ``value`` (already JSON-compatible) as the pretty UTF-8 JSON the mirror stores."""
    return (json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode()


def _role_of(message: Any) -> str:
    role = message.get("role") if isinstance(message, dict) else None
    name = _ROLE.sub("-", str(role).lower()).strip("-")[:40] if role is not None else ""
    return name or "message"


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
            "existing git repository"
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


class _IdMap:
    """statevcs commit id <-> git sha, kept in a file inside the git folder."""

    def __init__(self, git: GitRepo) -> None:
        self.path = Path(git.controldir()) / MAP_FILE
        self.to_git: dict[str, ObjectID] = {}
        self.new: list[tuple[str, ObjectID]] = []
        self.existed = self.path.exists()
        if self.existed:
            for line in self.path.read_text("ascii").splitlines():
                parts = line.split()
                if len(parts) == 2:
                    self.to_git[parts[0]] = _oid(parts[1].encode("ascii"))

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
    return f"{name} <{email}>".encode()


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
        sha = self.map_blobs[key] = self.blob(dump_json(out))
        return sha

    def _state_value(self, name: str, data: bytes, codec: str) -> Any:
        if codec == self.json.name:
            try:
                value = self.json.deserialize(data)
                if self.json.serialize(value) == data:
                    return to_json(value)
            except StateVCSError:
                pass
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
            "metadata": commit.metadata,
        }
        tree = Tree()
        messages = self.messages_tree(snap)
        if messages is not None:
            tree.add(b"messages", _TREE_MODE, messages)
        tree.add(b"state.json", _FILE_MODE, self.state_blob(snap.state, snap.state_codec))
        tree.add(b"extras.json", _FILE_MODE, self.extras_blob(snap.extras))
        tree.add(b"statevcs.json", _FILE_MODE, self.blob(dump_json(info)))
        git_commit = GitCommit()
        git_commit.tree = self.add(tree)
        git_commit.parents = list(parents)
        git_commit.author = git_commit.committer = _git_author(commit.author)
        seconds = math.floor(commit.timestamp.timestamp())
        git_commit.author_time = git_commit.commit_time = seconds
        git_commit.author_timezone = git_commit.commit_timezone = 0
        text = commit.message if commit.message.endswith("\n") else commit.message + "\n"
        git_commit.message = text.encode("utf-8")
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
    order: list[Commit] = []
    state: dict[str, int] = {}  # 1 = on the stack, 2 = emitted
    for start in starts:
        if start in state or done(start):
            continue
        stack: list[tuple[Commit, int]] = [(repo.get_commit(start), 0)]
        state[start] = 1
        while stack:
            commit, index = stack[-1]
            if index < len(commit.parents):
                stack[-1] = (commit, index + 1)
                parent = commit.parents[index]
                if parent not in state and not done(parent):
                    state[parent] = 1
                    stack.append((repo.get_commit(parent), 0))
            else:
                stack.pop()
                state[commit.id] = 2
                order.append(commit)
    return order


def _worktree_clean(git: GitRepo) -> bool:
    from dulwich import porcelain

    status = porcelain.status(git, untracked_files="no")
    staged = any(status.staged[kind] for kind in ("add", "delete", "modify"))
    return not staged and not status.unstaged


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
    working tree that follows the branch git's ``HEAD`` is on while it has no local edits).
    Every branch and tag is exported, or only ``branch``. Exports are incremental. ``push``
    then pushes the exported refs to a git remote URL or path (``force`` allows non
    fast-forward updates, after a ``statevcs reset`` for example).
    """
    _dulwich()
    path = Path(target)
    report = ExportReport(target=str(path))
    wanted = _export_refs(repo, branch)
    git, created = _open_or_init(path)
    try:
        ids = _IdMap(git)
        if not ids.existed and not created:
            _rebuild_map(git, ids)
        store = git.object_store

        def done(commit_id: str) -> bool:
            sha = ids.to_git.get(commit_id)
            return sha is not None and sha in store

        todo = _to_write(repo, dict.fromkeys(wanted.values()), done)
        exporter = _Exporter(repo, git, report)
        for commit in todo:
            parents = [ids.to_git[p] for p in commit.parents]
            ids.add(commit.id, exporter.commit(commit, parents))
        exporter.flush()
        ids.save()
        report.commits_exported = len(todo)
        report.mirror_commits = len(ids.to_git)

        bare = git.bare
        before = git.refs.as_dict()
        head_target = _symbolic_head(git)
        head = head_target.decode("utf-8", "replace") if head_target is not None else None
        head_moves = (
            head is not None
            and head in wanted
            and before.get(_ref(head)) != ids.to_git[wanted[head]]
        )
        # Checked before the refs move: git status compares against the old HEAD commit.
        clean = not bare and not created and head_moves and _worktree_clean(git)
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
        if created:
            head = branch_ref(branch) if branch else _default_head(repo, wanted)
            git.refs.set_symbolic_ref(_ref(HEAD), _ref(head))
            clean = head_moves = not bare and head in report.refs_updated
        if clean and head is not None:
            from dulwich import porcelain

            porcelain.reset(git, "hard", report.refs_updated[head].encode("ascii"))
            report.worktree_updated = True
        elif head_moves and not bare:
            report.warnings.append(
                "the mirror's working tree has local changes, so it was left as it was "
                "(the refs moved); run `git reset --hard` in it to see the new files"
            )
        if push is not None:
            _push(git, push, [n for n in wanted], force, report)
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
    heads = _mirror_refs(git)
    order = _git_order(git, heads.values())
    svc: dict[bytes, str] = {}
    for sha in order:
        commit = _git_commit(git, sha)
        info = _read_info(git, commit.tree)
        parents = [svc.get(p) for p in commit.parents]
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


# --- import --------------------------------------------------------------------------------


def _mirror_refs(git: GitRepo) -> dict[str, ObjectID]:
    refs: dict[str, ObjectID] = {}
    for raw_name in git.refs.allkeys():
        name = raw_name.decode("utf-8", "replace")
        if not name.startswith((BRANCH_PREFIX, TAG_PREFIX)):
            continue
        try:
            sha = git.get_peeled(raw_name)
        except KeyError:
            continue
        if git.object_store[sha].type_name == b"commit":
            refs[name] = sha
    return refs


def _git_order(git: GitRepo, starts: Iterable[ObjectID]) -> list[ObjectID]:
    order: list[ObjectID] = []
    state: set[bytes] = set()
    for start in starts:
        if start in state:
            continue
        state.add(start)
        stack: list[tuple[ObjectID, list[ObjectID], int]] = [
            (start, list(_git_commit(git, start).parents), 0)
        ]
        while stack:
            sha, parents, index = stack[-1]
            if index < len(parents):
                stack[-1] = (sha, parents, index + 1)
                parent = parents[index]
                if parent not in state:
                    state.add(parent)
                    stack.append((parent, list(_git_commit(git, parent).parents), 0))
            else:
                stack.pop()
                order.append(sha)
    return order


def _entries(git: GitRepo, tree_sha: bytes) -> dict[bytes, tuple[int, bytes]]:
    tree = _git_tree(git, tree_sha)
    return {
        entry.path: (entry.mode, entry.sha)
        for entry in tree.iteritems()
        if entry.path is not None and entry.mode is not None and entry.sha is not None
    }


def _read_info(git: GitRepo, tree_sha: bytes) -> dict[str, Any] | None:
    entry = _entries(git, tree_sha).get(b"statevcs.json")
    if entry is None:
        return None
    try:
        info = json.loads(_git_blob(git, entry[1]))
    except ValueError:
        return None
    return info if isinstance(info, dict) else None


class _Importer:
    """Reads mirror trees into snapshots, parsing each distinct git blob once."""

    def __init__(self, repo: Repo, git: GitRepo) -> None:
        self.repo = repo
        self.git = git
        self.messages: dict[bytes, Any] = {}
        self.documents: dict[bytes, Any] = {}
        self.lists: dict[bytes, tuple[list[Any], tuple[bytes, ...]]] = {}

    def _json(self, sha: bytes, path: str) -> Any:
        found = self.documents.get(sha)
        if found is None:
            try:
                found = self.documents[sha] = json.loads(_git_blob(self.git, sha))
            except ValueError as exc:
                raise GitMirrorError(f"{path} in the mirror is not valid JSON ({exc})") from None
        return found

    def snapshot(
        self, tree_sha: bytes, kind: str, codec: str
    ) -> tuple[Snapshot, tuple[bytes, ...]]:
        """Return the snapshot a mirror tree holds, and its message files' blob shas."""
        entries = _entries(self.git, tree_sha)
        messages, blobs = (
            self._messages(entries[b"messages"][1]) if b"messages" in entries else ([], ())
        )
        state_json = self._file(entries, b"state.json")
        extras_json = self._file(entries, b"extras.json")
        state = {k: self._state_value(k, v, codec) for k, v in state_json.items()}
        extras = {k: from_json(v) for k, v in extras_json.items()}
        snapshot = Snapshot.model_construct(
            kind=kind, messages=messages, state=state, extras=extras
        )
        return snapshot, blobs

    def _messages(self, tree_sha: bytes) -> tuple[list[Any], tuple[bytes, ...]]:
        found = self.lists.get(tree_sha)
        if found is None:
            files = _entries(self.git, tree_sha)
            numbered = []
            for name, (_, sha) in files.items():
                text = name.decode("utf-8", "replace")
                number = text.split("-", 1)[0]
                if not number.isdigit() or not text.endswith(".json"):
                    raise GitMirrorError(
                        f"unexpected file messages/{text} in the mirror; message files are "
                        "named like 000001-user.json"
                    )
                numbered.append((int(number), sha))
            blobs = tuple(sha for _, sha in sorted(numbered))
            messages = []
            for sha in blobs:
                message = self.messages.get(sha)
                if message is None:
                    message = self.messages[sha] = from_json(self._json(sha, "a message file"))
                messages.append(message)
            found = self.lists[tree_sha] = (messages, blobs)
        return list(found[0]), found[1]

    def _file(self, entries: Mapping[bytes, tuple[int, bytes]], name: bytes) -> dict[str, Any]:
        entry = entries.get(name)
        if entry is None:
            return {}
        value = self._json(entry[1], name.decode())
        if not isinstance(value, dict):
            raise GitMirrorError(f"{name.decode()} in the mirror must hold a JSON object")
        return value

    def _state_value(self, key: str, value: Any, codec: str) -> _Raw:
        if isinstance(value, dict) and len(value) == 1 and "__raw__" in value:
            raw = value["__raw__"]
            if raw.get("codec") != codec:
                raise GitMirrorError(
                    f"state[{key!r}] was written with codec {raw.get('codec')!r} but the "
                    f"snapshot uses {codec!r}"
                )
            return _Raw(base64.b64decode(raw["base64"]))
        decoded = from_json(value)
        serializer = serializer_for(codec, self.repo.serializer)
        return _Raw(serializer.serialize(decoded, f"state[{key!r}]"))


def _write_raw_snapshot(
    repo: Repo,
    snapshot: Snapshot,
    codec: str,
    base: MessageBase | None,
) -> tuple[str, StoredMessages]:
    # Repo.write_snapshot takes values and a codec name; the mirror holds already-serialized
    # state bytes (maybe pickled with a key this process lacks), so it writes them verbatim.
    # Messages shared with the parent (same git blobs) are not encoded again.
    written = write_snapshot(repo.db, snapshot, _RawSerializer(codec), base=base)
    pending = repo.db.unknown(written.objects)
    repo.store.put_many(pending)
    repo.db.mark_stored(pending)
    return to_hex(written.snapshot_id), written.messages


def _parse_time(text: str) -> datetime:
    moment = datetime.fromisoformat(text)
    return moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)


def _has_commit(repo: Repo, commit_id: str) -> bool:
    try:
        return bool(repo.store.has_many([from_hex(commit_id)]))
    except ValueError:
        return False


def import_git(repo: Repo, source: str | os.PathLike[str]) -> ImportReport:
    """Read a git mirror written by :func:`export_git` into ``repo``.

    Commits exported from statevcs come back with identical snapshot and commit ids (checked:
    a mismatch raises :class:`GitMirrorError`). Commits made with git tools on top of a mirror
    (editing ``state.json``, say) become new statevcs commits with git's author, time and
    message. Branches and tags are created, or fast-forwarded; a ref that diverged from the
    mirror is left alone and listed in ``refs_skipped``.
    """
    _dulwich()
    from .merge import is_ancestor

    path = Path(source)
    report = ImportReport(source=str(path))
    git = _open_existing(path)
    try:
        refs = _mirror_refs(git)
        importer = _Importer(repo, git)
        to_svc: dict[bytes, str] = {}
        lists: dict[bytes, tuple[StoredMessages, tuple[bytes, ...]]] = {}
        kinds: dict[bytes, str] = {}
        for sha in _git_order(git, refs.values()):
            git_commit = _git_commit(git, sha)
            info = _read_info(git, git_commit.tree)
            parents = [to_svc[p] for p in git_commit.parents]
            authentic = (
                info is not None
                and info.get("format") == MIRROR_FORMAT
                and info.get("parents") == parents
                and isinstance(info.get("commit"), str)
            )
            if authentic and info is not None and _has_commit(repo, info["commit"]):
                to_svc[sha] = info["commit"]
                kinds[sha] = str(info.get("kind", "snapshot"))
                report.commits_existing += 1
                continue
            first = git_commit.parents[0] if git_commit.parents else None
            if info is not None:
                kind = str(info.get("kind", "snapshot"))
                codec = str(info.get("state_codec", repo.serializer.name))
            else:
                kind = kinds.get(first, "snapshot") if first else "snapshot"
                codec = repo.serializer.name
            snapshot, blobs = importer.snapshot(git_commit.tree, kind, codec)
            base = None
            if first is not None and first in lists:
                previous, previous_blobs = lists[first]
                keep = 0
                for mine, theirs in zip(blobs, previous_blobs):
                    if mine != theirs:
                        break
                    keep += 1
                base = MessageBase(previous=previous, keep=keep)
            snapshot_id, written = _write_raw_snapshot(repo, snapshot, codec, base)
            lists[sha] = (written, blobs)
            kinds[sha] = kind
            if authentic and info is not None:
                if snapshot_id != info.get("snapshot"):
                    raise GitMirrorError(
                        f"git commit {sha.decode()} rebuilt snapshot {snapshot_id[:12]}, not the "
                        f"recorded {str(info.get('snapshot'))[:12]}: its files were changed "
                        "without a new commit, or were written by an incompatible statevcs"
                    )
                commit = repo.write_commit(
                    snapshot_id,
                    parents,
                    str(info.get("message", "")),
                    author=str(info.get("author")),
                    timestamp=_parse_time(str(info.get("timestamp"))),
                    metadata=info.get("metadata") or {},
                )
                if commit.id != info["commit"]:
                    raise GitMirrorError(
                        f"git commit {sha.decode()} rebuilt commit {commit.id[:12]}, not the "
                        f"recorded {info['commit'][:12]}"
                    )
            else:
                commit = repo.write_commit(
                    snapshot_id,
                    parents,
                    git_commit.message.decode("utf-8", "replace").rstrip("\n"),
                    author=git_commit.author.decode("utf-8", "replace"),
                    timestamp=datetime.fromtimestamp(git_commit.author_time, tz=timezone.utc),
                    metadata={"git": {"sha": sha.decode("ascii")}},
                )
                report.commits_from_git += 1
            to_svc[sha] = commit.id
            report.commits_imported += 1

        current = repo.refs()
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
            repo.set_ref(name, new, expected=old, reflog_message=f"import-git: {path}")
            report.refs_updated[name] = new
        _adopt_head(repo, git)
    finally:
        git.close()
    return report


def _adopt_head(repo: Repo, git: GitRepo) -> None:
    """Put an empty repository's HEAD on the branch the mirror's HEAD is on."""
    head = repo.head_branch
    if head is not None and branch_ref(head) in repo.refs():
        return
    target = _symbolic_head(git)
    if target is not None and target.decode() in repo.refs():
        repo.store.set_symbolic(HEAD, target.decode())


__all__ = [
    "ExportReport",
    "ImportReport",
    "dump_json",
    "export_git",
    "from_json",
    "import_git",
    "to_json",
]
