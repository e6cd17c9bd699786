"""Export: statevcs history into a git repository (then, optionally, a push).

Written against the repository's porcelain and plumbing containers only: refs from
``repo.refs``, commits through :class:`statevcs.history.CommitGraph` on ``repo.objects``,
state as its stored bytes (``repo.objects.read_state_bytes``), so state written with any
serializer exports without being decoded.
"""

from __future__ import annotations

import base64
import math
import os
import re
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...errors import GitMirrorError, StateVCSError
from ...hashing import ObjectId, from_hex, to_hex
from ...history import CommitGraph, topological_order
from ...objects import CommitObject, Doc, MapRef, SnapshotObject, canonical, encode
from ...refs import BRANCH_PREFIX, HEAD, TAG_PREFIX, branch_ref
from ...repo import Repo
from ...serializers import JSONSerializer, serializer_for
from ...snapshot import extras_entries, read_values, stored_messages
from ...structures import prolly
from ...structures.prolly import prefix_length
from .jsonmap import dump_json, to_json
from .layout import (
    HEX_ID,
    MESSAGES_PER_FOLDER,
    MIRROR_FILES,
    MIRROR_FORMAT,
    MIRROR_SECTION,
    branch_and_tag_commits,
    is_marked,
    listing,
    map_path,
    message_file,
    message_folder,
    oid,
    parents_first,
    read_info,
    ref,
    require_dulwich,
    symbolic_head,
    utf8,
)
from .packs import (
    BLOB,
    COMMIT,
    FILE_ENTRY,
    TREE,
    TREE_ENTRY,
    raw_object,
    tree_data,
    tree_entry,
    write_pack,
)
from .push import fix_remote_head, push_refs
from .reports import ExportReport, Progress

if TYPE_CHECKING:
    from dulwich.objects import ObjectID
    from dulwich.repo import Repo as GitRepo

_ROLE = re.compile(r"[^a-z0-9_-]+")
_AUTHOR = re.compile(r"^(?P<name>[^<>\n]*?)\s*<(?P<email>[^<>\n]*)>$")
_GIT_SHA = re.compile(rb"[0-9a-f]{40}")
_FLUSH_EVERY = 20_000
_CONVERSATIONS_KEPT = 64
_READ_AHEAD = 256
"""Commits whose snapshots and unpacked messages an export reads in one batch."""
"""Conversations an export keeps to diff children against (a fork's parent may fall out)."""


def export_git(
    repo: Repo,
    target: str | os.PathLike[str],
    *,
    branch: str | None = None,
    push: str | None = None,
    force: bool = False,
    progress: Progress | None = None,
) -> ExportReport:
    """Mirror the history of ``repo`` into the git repository at ``target``.

    ``target`` is created when missing (bare when its name ends in ``.git``, else with a
    working tree that follows the branch git's ``HEAD`` is on) and marked as a statevcs mirror
    in its git config. Any other git repository that is not empty is refused unless ``force``
    is given; a working tree with local changes (what ``git status`` lists) is never
    overwritten, even with ``force``: the export is refused before anything is written. Every
    branch and tag is exported, or only ``branch``. Exports are incremental. ``push`` then
    pushes the exported refs to a git remote URL or path (``force`` also allows non
    fast-forward updates, after a ``statevcs reset`` for example) and points the remote's
    ``HEAD`` at the exported default branch when it named none. ``progress``, when given, is
    called with ``("exporting", commits written, commits to write)`` after each commit.
    """
    require_dulwich()
    if not isinstance(repo, Repo):
        raise TypeError(f"repo must be a statevcs.Repo, not {type(repo).__name__}")
    if not isinstance(target, (str, os.PathLike)):
        raise TypeError(f"target must be a path (str or os.PathLike), not {type(target).__name__}")
    if branch is not None and not isinstance(branch, str):
        raise TypeError(f"branch must be a str or None, not {type(branch).__name__}")
    if push is not None and not isinstance(push, str):
        raise TypeError(f"push must be a str or None, not {type(push).__name__}")
    if not isinstance(force, bool):
        raise TypeError(f"force must be a bool, not {type(force).__name__}")
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be callable or None, not {type(progress).__name__}")
    path = Path(target)
    if "\x00" in str(path):
        raise GitMirrorError("the mirror path contains a NUL character; choose another path")
    report = ExportReport(target=str(path))
    wanted = _export_refs(repo, branch)
    git, created = _open_or_init(path)
    try:
        head = _export(repo, git, path, wanted, branch, created, force, report, progress)
        if push is not None:
            push_refs(git, push, list(wanted), force, report)
            default = head if head is not None and head in wanted else None
            fix_remote_head(push, default or _default_head(repo, wanted), report)
    finally:
        git.close()
    return report


def _export(
    repo: Repo,
    git: GitRepo,
    path: Path,
    wanted: Mapping[str, ObjectId],
    branch: str | None,
    created: bool,
    force: bool,
    report: ExportReport,
    progress: Progress | None = None,
) -> str | None:
    """Write the commits ``wanted`` reaches that the mirror lacks, then move the mirror's refs.

    Returns the branch the mirror's ``HEAD`` is on.
    """
    mirror, empty = (False, True) if created else _check_target(git, path, force)
    fresh = created or empty
    ids = _IdMap(git)
    if not ids.existed and not fresh:
        _rebuild_map(git, ids)
    store = git.object_store

    def done(commit_id: ObjectId) -> bool:
        sha = ids.to_git.get(commit_id)
        return sha is not None and sha in store

    bare = git.bare
    before = git.refs.as_dict()
    if fresh:
        head: str | None = branch_ref(branch) if branch else _default_head(repo, wanted)
    else:
        head_target = symbolic_head(git)
        head = head_target.decode("utf-8", "replace") if head_target is not None else None
    known = ids.to_git.get(wanted[head]) if head is not None and head in wanted else None
    head_moves = (
        not bare
        and head is not None
        and head in wanted
        and (known is None or known not in store or before.get(ref(head)) != known)
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
                f"the working tree of {path} has local changes ({listing(changes)}), which "
                f"an export would overwrite, so nothing was exported (not even with force). "
                f"{advice}"
            )

    graph = CommitGraph(repo.objects)
    todo = topological_order(graph, dict.fromkeys(wanted.values()), stop=done)
    exporter = _Exporter(repo, git, report, fresh)
    for done_count, commit_id in enumerate(todo, start=1):
        if done_count % _READ_AHEAD == 1:
            ahead = todo[done_count - 1 : done_count - 1 + _READ_AHEAD]
            exporter.read_ahead([graph.commit(c) for c in ahead])
        commit = graph.commit(commit_id)
        parents = [ids.to_git[p] for p in commit.parents]
        try:
            sha = exporter.commit(commit_id, commit, parents)
        except GitMirrorError as exc:
            raise GitMirrorError(
                f"statevcs commit {to_hex(commit_id)} cannot be exported: {exc}. Refs in "
                f"{path} were not moved"
            ) from exc
        ids.add(commit_id, sha)
        if progress is not None:
            progress("exporting", done_count, len(todo))
    exporter.flush()
    ids.save()
    report.commits_exported = len(todo)
    report.mirror_commits = len(ids.to_git)

    for name, commit_id in wanted.items():
        sha = ids.to_git[commit_id]
        old = before.get(ref(name))
        if old == sha:
            continue
        if not git.refs.set_if_equals(ref(name), old, sha, message=b"statevcs export-git"):
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
    if not is_marked(git):
        # Only once its refs are written: a failed export leaves a foreign repository
        # as foreign as it was.
        _mark(git)
    if fresh and head is not None:
        git.refs.set_symbolic_ref(ref(HEAD), ref(head))
    if head_moves and head is not None and head in report.refs_updated:
        from dulwich import porcelain

        porcelain.reset(git, "hard", report.refs_updated[head].encode("ascii"))
        report.worktree_updated = True
    return head


def _export_refs(repo: Repo, branch: str | None) -> dict[str, ObjectId]:
    refs = {
        name: value
        for name, value in repo.refs.as_dict().items()
        if name.startswith((BRANCH_PREFIX, TAG_PREFIX))
    }
    if branch is None:
        return refs
    wanted = branch_ref(branch)
    if wanted not in refs:
        raise GitMirrorError(
            f"no branch named {branch!r} to export; list them with `statevcs branch`"
        )
    return {wanted: refs[wanted]}


def _default_head(repo: Repo, wanted: Mapping[str, ObjectId]) -> str:
    # The repository's stored default branch, not this handle's: a clone's HEAD is the
    # remote's, whichever branch one process happened to check out.
    head = repo.default_branch
    if head is not None and branch_ref(head) in wanted:
        return branch_ref(head)
    branches = sorted(n for n in wanted if n.startswith(BRANCH_PREFIX))
    return branches[0] if branches else branch_ref("main")


# --- the target ---------------------------------------------------------------------------


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


def _check_target(git: GitRepo, path: Path, force: bool) -> tuple[bool, bool]:
    """Refuse a target that is neither empty nor a mirror (unless forced); return
    ``(is_mirror, is_empty)``. Nothing is written here."""
    if is_marked(git):
        return True, False
    if not _has_refs(git):
        untracked = [] if git.bare else _worktree_changes(git)
        if not untracked:
            return False, True
        problem = f"has no commits but holds files ({listing(untracked)})"
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


def _mark(git: GitRepo) -> None:
    config = git.get_config()
    config.set((MIRROR_SECTION,), b"mirror", b"true")
    config.write_to_path()


def _has_refs(git: GitRepo) -> bool:
    return any(name.startswith(b"refs/") for name in git.refs.allkeys())


def _looks_like_mirror(git: GitRepo) -> bool:
    """A mirror written before mirrors were marked, or a clone or pushed copy of one."""
    if map_path(git).is_file():
        return True
    tips = branch_and_tag_commits(git)
    return bool(tips) and all(read_info(git, sha) is not None for sha in tips.values())


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
        if not mirror_paths_only or name in MIRROR_FILES or name.startswith("messages/"):
            names.add(name)
    return sorted(names)


# --- the id map ---------------------------------------------------------------------------


class _IdMap:
    """statevcs commit id <-> git sha, kept in a file inside the git folder."""

    def __init__(self, git: GitRepo) -> None:
        self.path = map_path(git)
        self.to_git: dict[ObjectId, ObjectID] = {}
        self.new: list[tuple[ObjectId, ObjectID]] = []
        self.existed = self.path.is_file()
        if self.existed:
            for line in self.path.read_bytes().splitlines():
                parts = line.split()
                if len(parts) == 2 and _GIT_SHA.fullmatch(parts[1]):
                    name = parts[0].decode("ascii", "replace")
                    if HEX_ID.fullmatch(name):
                        self.to_git[from_hex(name)] = oid(parts[1])

    def add(self, commit_id: ObjectId, sha: ObjectID) -> None:
        self.to_git[commit_id] = sha
        self.new.append((commit_id, sha))

    def save(self) -> None:
        if not self.new:
            return
        with self.path.open("a", encoding="ascii") as handle:
            handle.writelines(f"{to_hex(c)} {g.decode('ascii')}\n" for c, g in self.new)
        self.new.clear()


def _rebuild_map(git: GitRepo, ids: _IdMap) -> None:
    """Recover the id map from the authentic ``statevcs.json`` files of an existing mirror.

    A ``statevcs.json`` is authentic when its parents are the statevcs commits of the git
    commit's parents: a commit made with git tools keeps its parent's file, which then does
    not describe it.
    """
    heads = branch_and_tag_commits(git)
    found: dict[bytes, str] = {}
    for git_commit in parents_first(git, heads.values()):
        sha = git_commit.id
        info = read_info(git, sha)
        commit = info.get("commit") if info is not None else None
        if (
            info is not None
            and isinstance(commit, str)
            and HEX_ID.fullmatch(commit)
            and info.get("parents") == [found.get(p) for p in git_commit.parents]
        ):
            found[sha] = commit
            commit_id = from_hex(commit)
            if commit_id not in ids.to_git:
                ids.add(commit_id, sha)


# --- writing git objects ---------------------------------------------------------------------


def _git_author(author: str) -> bytes:
    match = _AUTHOR.match(author.strip())
    if match:
        name, email = match.group("name"), match.group("email")
    else:
        name, email = author, ""
    name = re.sub(r"[<>\n]+", " ", name).strip() or "unknown"
    return utf8(f"{name} <{email}>", "the commit author")


def _role_of(message: Any) -> str:
    role = message.get("role") if isinstance(message, dict) else None
    name = _ROLE.sub("-", str(role).lower()).strip("-")[:40] if role is not None else ""
    return name or "message"


def _map_key(map_ref: MapRef, order: tuple[int, ...]) -> tuple[bytes, tuple[int, ...]]:
    """A hashable key for a stored map (its id) or a small map kept inline (its encoding),
    with the key order its snapshot recorded (the file lists keys in that order)."""
    return (map_ref if isinstance(map_ref, bytes) else encode(map_ref)), order


def _utc(micros: int) -> datetime:
    try:
        # The same conversion as Repo's commits, so statevcs.json holds the time they show.
        return datetime.fromtimestamp(micros / 1_000_000, tz=UTC)
    except (ValueError, OverflowError, OSError) as exc:
        raise GitMirrorError(
            f"its timestamp ({micros} µs after 1970) is outside the years a mirror can hold "
            f"({exc}); the commit was not written by statevcs, run `statevcs fsck`"
        ) from None


@dataclass(frozen=True, slots=True)
class _Conversation:
    """A conversation written to the mirror: its message ids and git trees."""

    ids: list[ObjectId]
    tree_length: int
    """How many of ``ids`` the snapshot's prolly list holds (the rest is its tail)."""
    root: ObjectId
    folders: list[ObjectID]
    """The git tree of each ``messages/`` folder, in order."""
    sha: ObjectID | None
    """The ``messages/`` tree (``None`` for an empty conversation, which has none)."""


class _Exporter:
    """Builds git objects for statevcs commits, sharing blobs and trees between commits."""

    def __init__(self, repo: Repo, git: GitRepo, report: ExportReport, fresh: bool) -> None:
        self.repo = repo
        self.objects = repo.objects
        self.store = git.object_store
        self.report = report
        self.pending: list[Any] = []
        self.known: set[bytes] = set()
        """Objects written by this export or found in the mirror: each is looked up once."""
        self.check_store = not fresh
        """A fresh mirror holds nothing to look up."""
        self.message_blobs: dict[ObjectId, tuple[str, ObjectID]] = {}
        self.folder_entries: dict[tuple[int, ObjectId], bytes] = {}
        self.conversations: OrderedDict[tuple[ObjectId, tuple[ObjectId, ...]], _Conversation] = (
            OrderedDict()
        )
        self.commit_keys: dict[ObjectId, tuple[ObjectId, tuple[ObjectId, ...]]] = {}
        self.map_blobs: dict[tuple[tuple[bytes, tuple[int, ...]], str], ObjectID] = {}
        self.json = JSONSerializer()

    def add(self, type_num: int, data: bytes) -> ObjectID:
        """Write the git object of ``type_num`` holding ``data`` unless the mirror has it."""
        obj = raw_object(type_num, data)
        sha = oid(obj.sha)
        if sha in self.known:
            return sha
        self.known.add(sha)
        if not (self.check_store and sha in self.store):
            self.pending.append(obj)
            if len(self.pending) >= _FLUSH_EVERY:
                self.flush()
        return sha

    def read_ahead(self, commits: Sequence[CommitObject]) -> None:
        """Read the snapshots of ``commits`` and their messages outside the tree in one batch
        each (an export otherwise asks the store a few times per commit)."""
        try:
            snapshots = self.objects.load_many([c.snapshot for c in commits])
            tails = {
                i
                for snap in snapshots.values()
                if isinstance(snap, SnapshotObject)
                for i in snap.tail
            }
            self.objects.load_values([i for i in tails if i not in self.message_blobs])
        except StateVCSError:
            # A missing or damaged object: the commit that needs it reads it and says so.
            return

    def flush(self) -> None:
        if self.pending:
            write_pack(self.store, self.pending)
            self.report.objects_written += len(self.pending)
            self.pending = []

    def blob(self, data: bytes) -> ObjectID:
        return self.add(BLOB, data)

    def folder_entry(self, index: int, message_id: ObjectId) -> bytes:
        """The tree entry of message ``index`` in its folder, serialized once per export."""
        key = (index, message_id)
        found = self.folder_entries.get(key)
        if found is None:
            role, blob = self.message_blobs[message_id]
            found = tree_entry(FILE_ENTRY, message_file(index, role).encode(), blob)
            self.folder_entries[key] = found
        return found

    def messages_tree(self, snap: SnapshotObject, base: _Conversation | None) -> _Conversation:
        """The ``messages/`` tree of ``snap``, rewriting only the folders that differ from
        ``base`` (the first parent's conversation): O(folder size + folders) for an append."""
        key = (snap.messages, snap.tail)
        found = self.conversations.get(key)
        if found is not None:
            self.conversations.move_to_end(key)
            return found
        ids = self._message_ids(snap, base)
        size = MESSAGES_PER_FOLDER
        start = 0
        folders: list[ObjectID] = []
        if base is not None:
            start = prefix_length(base.ids, ids) // size
            folders = base.folders[:start]
        self._message_blobs(ids[start * size :])
        for first in range(start * size, len(ids), size):
            # Names in a folder have one width and sort by number: no sorting needed.
            entries = [
                self.folder_entry(index, ids[index])
                for index in range(first, min(first + size, len(ids)))
            ]
            folders.append(self.add(TREE, b"".join(entries)))
        sha: ObjectID | None = None
        if folders:
            sha = self.add(
                TREE,
                tree_data(
                    (TREE_ENTRY, message_folder(number * size).encode(), folder_sha)
                    for number, folder_sha in enumerate(folders)
                ),
            )
        found = self.conversations[key] = _Conversation(
            ids, len(ids) - len(snap.tail), snap.messages, folders, sha
        )
        if len(self.conversations) > _CONVERSATIONS_KEPT:
            self.conversations.popitem(last=False)
        return found

    def _message_ids(self, snap: SnapshotObject, base: _Conversation | None) -> list[ObjectId]:
        """Every message id of ``snap``, from ``base``'s ids and a diff of the prolly trees."""
        if base is None:
            return stored_messages(self.objects, snap).ids(self.objects)
        if snap.messages == base.root:
            return [*base.ids[: base.tree_length], *snap.tail]
        change = prolly.diff(self.objects, base.root, snap.messages)
        tree_ids = base.ids[: min(change.old_length, change.new_length)]
        for item in change.changes:
            if item.new is None:
                continue
            if item.index < len(tree_ids):
                tree_ids[item.index] = item.new
            else:
                tree_ids.append(item.new)
        if len(tree_ids) != change.new_length:
            # A damaged list; reading it whole raises the error that names it.
            return stored_messages(self.objects, snap).ids(self.objects)
        return [*tree_ids, *snap.tail]

    def _message_blobs(self, ids: Sequence[ObjectId]) -> None:
        """Write the blobs of the messages in ``ids`` not written yet in this export."""
        missing = [i for i in dict.fromkeys(ids) if i not in self.message_blobs]
        if not missing:
            return
        values = self.objects.load_values(missing)
        for object_id in missing:
            doc = values[object_id]
            message = doc.value if isinstance(doc, Doc) else doc.data
            self.message_blobs[object_id] = (
                _role_of(message),
                self.blob(dump_json(to_json(message))),
            )

    def state_blob(self, snapshot_id: ObjectId, snap: SnapshotObject) -> ObjectID:
        codec = snap.state_codec
        key = (_map_key(snap.state, snap.state_order), codec)
        found = self.map_blobs.get(key)
        if found is not None:
            return found
        raw = self.objects.read_state_bytes(snapshot_id)
        out = {name: self._state_value(data, codec) for name, data in raw.items()}
        try:
            data = dump_json(out)
        except GitMirrorError:
            # Too deep for pretty JSON: the stored bytes go in verbatim, which always works.
            out = {name: self._raw_marker(value, codec) for name, value in raw.items()}
            data = dump_json(out)
        sha = self.map_blobs[key] = self.blob(data)
        return sha

    def _state_value(self, data: bytes, codec: str) -> Any:
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

    def extras_blob(self, snap: SnapshotObject) -> ObjectID:
        key = (_map_key(snap.extras, snap.extras_order), "")
        found = self.map_blobs.get(key)
        if found is not None:
            return found
        values = read_values(self.objects, extras_entries(self.objects, snap), None)
        out = {name: to_json(value) for name, value in values.items()}
        sha = self.map_blobs[key] = self.blob(dump_json(out))
        return sha

    def commit(
        self, commit_id: ObjectId, commit: CommitObject, parents: Sequence[ObjectID]
    ) -> ObjectID:
        """Write the git commit of statevcs commit ``commit_id`` (its parents are written)."""
        from dulwich.objects import Commit as GitCommit

        snap = self.objects.load_snapshot(commit.snapshot)
        moment = _utc(commit.timestamp_us)
        info = {
            "format": MIRROR_FORMAT,
            "commit": to_hex(commit_id),
            "parents": [to_hex(p) for p in commit.parents],
            "snapshot": to_hex(commit.snapshot),
            "kind": snap.kind,
            "state_codec": snap.state_codec,
            # Large values' ids depend on how they were cut: import rebuilds them the same way.
            "chunker": self.objects.chunker.name,
            "author": commit.author,
            "timestamp": moment.isoformat(),
            "message": commit.message,
            # Stored metadata is canonical already; canonical() again makes the mirror's
            # sorted keys not depend on that.
            "metadata": to_json(canonical(commit.metadata)),
        }
        base = None
        if commit.parents:
            parent_key = self.commit_keys.get(commit.parents[0])
            base = self.conversations.get(parent_key) if parent_key is not None else None
        conversation = self.messages_tree(snap, base)
        self.commit_keys[commit_id] = (snap.messages, snap.tail)
        entries = [
            (FILE_ENTRY, b"state.json", self.state_blob(commit.snapshot, snap)),
            (FILE_ENTRY, b"extras.json", self.extras_blob(snap)),
            (FILE_ENTRY, b"statevcs.json", self.blob(dump_json(info, sort_keys=True))),
        ]
        if conversation.sha is not None:
            entries.append((TREE_ENTRY, b"messages", conversation.sha))
        git_commit = GitCommit()
        git_commit.tree = self.add(TREE, tree_data(entries))
        git_commit.parents = list(parents)
        git_commit.author = git_commit.committer = _git_author(commit.author)
        seconds = math.floor(moment.timestamp())
        git_commit.author_time = git_commit.commit_time = seconds
        git_commit.author_timezone = git_commit.commit_timezone = 0
        text = commit.message if commit.message.endswith("\n") else commit.message + "\n"
        git_commit.message = utf8(text, f"the message of commit {to_hex(commit_id)[:12]}")
        return self.add(COMMIT, git_commit.as_raw_string())
