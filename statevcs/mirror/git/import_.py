"""Import: a git mirror back into a statevcs repository, with identical ids.

Every commit is read and validated before anything is written. Snapshots are rebuilt through
``repo.objects.encode_snapshot(..., raw_state=True)`` (state stays the stored bytes the mirror
carries, so no serializer or pickle key is needed), commits through
``repo.objects.write_commit`` and refs move with ``repo.refs.set`` (compare-and-swap).
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from itertools import chain
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ...commitfields import canonical_metadata, check_text, timestamp_us
from ...errors import (
    GitMirrorError,
    InvalidRefName,
    MissingObject,
    RepositoryError,
    StateVCSError,
)
from ...hashing import ObjectId, from_hex, to_hex
from ...history import CommitGraph, is_ancestor
from ...objects import encode_doc
from ...plumbing import ObjectDatabase
from ...refs import BRANCH_PREFIX, branch_ref, check_ref_name
from ...repo import Repo
from ...serializers import JSONSerializer, serializer_for
from ...snapshot import MessageBase, Snapshot, StoredMessages, WrittenSnapshot
from ...structures.chunking import CHUNKERS, Chunker, chunker_for
from ...structures.prolly import prefix_length
from .jsonmap import from_json, parse_json
from .layout import (
    GITLINK_MODE,
    HEX_ID,
    KIND_MASK,
    MESSAGES_PER_FOLDER,
    MIRROR_FILES,
    MIRROR_FORMAT,
    READ_FORMATS,
    REGULAR_KIND,
    SYMLINK_MODE,
    TREE_MODE,
    git_blob,
    has_info_file,
    is_marked,
    listing,
    parents_first,
    parse_entries,
    preload,
    release,
    require_dulwich,
    show,
    symbolic_head,
    tree_data,
    tree_entries,
    utf8,
)
from .reports import ImportReport, Progress

if TYPE_CHECKING:
    from dulwich.objects import Commit as GitCommit
    from dulwich.objects import ObjectID
    from dulwich.repo import Repo as GitRepo

_MESSAGE_FILE = re.compile(r"([0-9]{1,12})-[^/]*\.json")
_KNOWN_ENTRIES = frozenset({b"messages", *(name.encode() for name in MIRROR_FILES)})


def import_git(
    repo: Repo, source: str | os.PathLike[str], *, progress: Progress | None = None
) -> ImportReport:
    """Read a git mirror written by :func:`~statevcs.mirror.git.export_git` into ``repo``.

    Commits exported from statevcs come back with identical snapshot and commit ids (checked:
    a mismatch raises :class:`GitMirrorError`). Commits made with git tools on top of a mirror
    (editing ``state.json``, say) become new statevcs commits with git's author, time and
    message. Branches and tags are created, or fast-forwarded; a ref that diverged from the
    mirror is left alone and listed in ``refs_skipped``.

    Every commit is read and validated before anything is written: a repository that is not a
    statevcs mirror, or a damaged or hand-broken one, raises :class:`GitMirrorError` naming the
    git commit and the problem, and leaves every ref as it was. ``progress``, when given, is
    called with ``("reading", commits read, commits)`` while commits are read and checked, then
    with ``("importing", commits written, commits to write)``.
    """
    require_dulwich()
    if not isinstance(repo, Repo):
        raise TypeError(f"repo must be a statevcs.Repo, not {type(repo).__name__}")
    if not isinstance(source, (str, os.PathLike)):
        raise TypeError(f"source must be a path (str or os.PathLike), not {type(source).__name__}")
    if progress is not None and not callable(progress):
        raise TypeError(f"progress must be callable or None, not {type(progress).__name__}")
    path = Path(source)
    report = ImportReport(source=str(path))
    git = _open_existing(path)
    try:
        refs = _import_refs(git, report)
        _check_is_mirror(git, path, refs)
        preload(git)
        importer = _Importer(repo, git, report)
        plans = _plan(repo, git, importer, refs, progress)
        to_svc = _write_commits(repo, importer, plans, report, progress)
        _move_refs(repo, path, refs, to_svc, report)
        _adopt_head(repo, git)
    finally:
        release(git)
        git.close()
    return report


@dataclass(frozen=True)
class _Info:
    """A validated ``statevcs.json``."""

    format: int
    """The layout of the commit's tree (see :data:`~statevcs.mirror.git.layout.READ_FORMATS`)."""
    commit: str
    parents: tuple[str, ...]
    snapshot: str
    kind: str
    codec: str
    chunker: Chunker
    author: str
    timestamp: datetime
    message: str
    metadata: dict[Any, Any]


def _text_field(info: Mapping[str, Any], key: str) -> str:
    value = info.get(key)
    if not isinstance(value, str):
        raise GitMirrorError(f"statevcs.json: {key!r} must be a string, not {_kind(value)}")
    utf8(value, f"statevcs.json: {key!r}")
    return value


def _kind(value: Any) -> str:
    return "missing" if value is None else f"a {type(value).__name__}"


def _hex_field(value: Any, what: str) -> str:
    if not isinstance(value, str) or not HEX_ID.fullmatch(value):
        raise GitMirrorError(
            f"statevcs.json: {what} must be a 64-digit lowercase hex statevcs id, not {value!r:.80}"
        )
    return value


def _parse_info(data: bytes) -> _Info:
    info = parse_json(data, "statevcs.json")
    if not isinstance(info, dict):
        raise GitMirrorError(f"statevcs.json must hold a JSON object, not {_kind(info)}")
    version = info.get("format")
    if type(version) is not int or version not in READ_FORMATS:
        if type(version) is int and version > MIRROR_FORMAT:
            raise GitMirrorError(
                f"statevcs.json has mirror format {version}, newer than this statevcs reads "
                f"({MIRROR_FORMAT}); upgrade statevcs"
            )
        raise GitMirrorError(
            f"statevcs.json: 'format' must be one of {', '.join(map(str, READ_FORMATS))}, not "
            f"{info.get('format')!r:.40}"
        )
    parents = info.get("parents")
    if not isinstance(parents, list):
        raise GitMirrorError(f"statevcs.json: 'parents' must be a list, not {_kind(parents)}")
    stamp = _text_field(info, "timestamp")
    try:
        moment = datetime.fromisoformat(stamp)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        moment.astimezone(UTC)
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
        format=version,
        commit=_hex_field(info.get("commit"), "'commit'"),
        parents=tuple(_hex_field(p, "each of 'parents'") for p in parents),
        snapshot=_hex_field(info.get("snapshot"), "'snapshot'"),
        kind=_text_field(info, "kind"),
        codec=_text_field(info, "state_codec"),
        chunker=_chunker_field(info.get("chunker")),
        author=_text_field(info, "author"),
        timestamp=moment,
        message=_text_field(info, "message"),
        metadata=metadata,
    )


def _chunker_field(value: Any) -> Chunker:
    # Mirrors written before chunkers were recorded come from repositories that record none.
    if value is not None and not isinstance(value, str):
        raise GitMirrorError(f"statevcs.json: 'chunker' must be a string, not {_kind(value)}")
    try:
        return chunker_for(value)
    except RepositoryError as exc:
        raise GitMirrorError(f"statevcs.json: {exc}") from None


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
    kind = mode & KIND_MASK
    if folder and kind == TREE_MODE:
        return sha
    if not folder and kind == REGULAR_KIND:
        return sha
    found = {
        TREE_MODE: "a folder",
        SYMLINK_MODE: "a symbolic link",
        GITLINK_MODE: "a submodule",
        REGULAR_KIND: "a file",
    }.get(kind, f"an entry of mode {mode:o}")
    wanted = "a folder" if folder else "a regular file"
    raise GitMirrorError(f"{name} is {found}, not {wanted}; replace it with {wanted}")


def _entry_name(raw_name: bytes, where: str) -> str:
    """A tree entry's name as text, refusing names that are not UTF-8."""
    try:
        return raw_name.decode("utf-8")
    except UnicodeDecodeError:
        raise GitMirrorError(
            f"{where} holds an entry whose name is not UTF-8 ({raw_name!r:.60}); message "
            "files are named like 000000-user.json"
        ) from None


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
        self.lists: dict[tuple[int, bytes], tuple[bytes, ...]] = {}
        self.folders: dict[tuple[int, bytes], tuple[bytes, ...]] = {}
        self.checked: dict[tuple[bytes, int, bytes], int] = {}
        self.last_folder: dict[str, tuple[bytes, dict[int, bytes]]] = {}
        """Per folder path, the last tree read there and its files by number."""
        self.folder_entries: dict[tuple[bytes, int, bytes], tuple[int, tuple[bytes, ...]]] = {}
        """Message file entries (name, mode, sha) checked already, with their numbers."""
        self.states: dict[tuple[bytes, str], dict[str, bytes]] = {}
        self.extras: dict[bytes, dict[str, Any]] = {}
        self.ignored: set[bytes] = set()
        self.encoders: dict[tuple[str, int], ObjectDatabase] = {}
        self.storage_format: int | None = None
        """The storage format the last recorded snapshot was rebuilt in."""
        self.chunker: Chunker | None = None
        """The chunker the last recorded snapshot was rebuilt with."""

    def encoder(self, chunker: Chunker, storage_format: int | None = None) -> ObjectDatabase:
        """The object database that encodes snapshots cut with ``chunker`` in a storage format.

        An exported commit comes back with its own ids only if its large values are cut as
        they were in the repository it came from, and its message tree is in the storage
        format it was (a mirror of a format-1 repository names format-1 snapshots).
        """
        own = self.repo.objects
        wanted = own.format if storage_format is None else storage_format
        if chunker is own.chunker and wanted == own.format:
            return own
        key = (chunker.name, wanted)
        found = self.encoders.get(key)
        if found is None:
            found = ObjectDatabase(self.repo.store, own.serializer, chunker=chunker)
            found.format = wanted
            self.encoders[key] = found
        return found

    def _json(self, sha: bytes, name: str) -> Any:
        return parse_json(git_blob(self.git, sha, name), name)

    def parts(self, entries: Mapping[bytes, tuple[int, bytes]], info: _Info) -> _Parts:
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
            folder = _file_entry(entries, "messages", folder=True)
            read = self._flat_messages if info.format == 1 else self._messages
            messages = read(folder)
        state = _file_entry(entries, "state.json")
        extras = _file_entry(entries, "extras.json")
        self._state(state, info.codec)
        self._extras(extras)
        return _Parts(messages, state, extras)

    def snapshot(self, parts: _Parts, kind: str, codec: str) -> Snapshot:
        """Return the snapshot of validated ``parts``."""
        return Snapshot.model_construct(
            kind=kind,
            messages=list(map(self.messages.__getitem__, parts.messages)),
            state=dict(self._state(parts.state, codec)),
            extras=dict(self._extras(parts.extras)),
        )

    def _messages(self, tree_sha: bytes) -> tuple[bytes, ...]:
        """The message blobs of a format 2 ``messages/`` tree: folders of numbered files.

        Each folder is read once (an append changes one folder), so a commit costs the
        folder list plus the folders that changed.
        """
        found = self.lists.get((2, tree_sha))
        if found is not None:
            return found
        folders: dict[int, tuple[bytes, ...]] = {}
        for raw_name, (mode, sha) in tree_entries(self.git, tree_sha).items():
            seen = self.folder_entries.get((raw_name, mode, sha))
            if seen is not None and seen[0] not in folders:
                # A folder entry checked in an earlier commit's messages/.
                folders[seen[0]] = seen[1]
                continue
            name = _entry_name(raw_name, "messages/")
            if not name.isdigit() or not name.isascii():
                raise GitMirrorError(
                    f"unexpected entry messages/{name!r:.60} in the mirror; messages/ holds "
                    "folders named by number (0000, 0001, ...) of files named like "
                    "000000-user.json"
                )
            number = int(name)
            if number in folders:
                raise GitMirrorError(f"two message folders have number {number} (messages/{name})")
            path = f"messages/{name}"
            folder = _file_entry({path.encode(): (mode, sha)}, path, folder=True)
            folders[number] = self._folder(folder, number, path)
            self.folder_entries[(raw_name, mode, sha)] = (number, folders[number])
        if sorted(folders) != list(range(len(folders))):
            found_numbers = listing([str(n) for n in sorted(folders)])
            raise GitMirrorError(
                f"message folders must be numbered 0 to {len(folders) - 1} without gaps; found "
                f"{found_numbers}"
            )
        size = MESSAGES_PER_FOLDER
        for number in range(len(folders) - 1):
            if len(folders[number]) != size:
                raise GitMirrorError(
                    f"message folder {number:04d} holds {len(folders[number])} messages where "
                    f"every folder but the last holds {size}: messages are numbered from 0 "
                    "without gaps, a hundred to a folder"
                )
        found = self.lists[(2, tree_sha)] = tuple(
            chain.from_iterable(folders[number] for number in range(len(folders)))
        )
        return found

    def _folder(self, tree_sha: bytes, number: int, where: str) -> tuple[bytes, ...]:
        """The message blobs of folder ``number`` of a format 2 ``messages/`` tree."""
        key = (number, tree_sha)
        found = self.folders.get(key)
        if found is not None:
            return found
        first = number * MESSAGES_PER_FOLDER
        numbered = self._numbered(tree_sha, where)
        if not numbered:
            raise GitMirrorError(f"the message folder {where} is empty; remove it")
        expected = list(range(first, first + len(numbered)))
        if sorted(numbered) != expected or len(numbered) > MESSAGES_PER_FOLDER:
            raise GitMirrorError(
                f"{where} must hold messages {first} to {first + MESSAGES_PER_FOLDER - 1} "
                f"(the last folder fewer), numbered without gaps; found "
                f"{listing([str(n) for n in sorted(numbered)])}"
            )
        found = self.folders[key] = tuple(numbered[n] for n in expected)
        return found

    def _numbered(self, tree_sha: bytes, where: str) -> dict[int, bytes]:
        """The message files of one folder by number, each parsed and checked once."""
        data = tree_data(self.git, tree_sha)
        numbered: dict[int, bytes] = {}
        new = data
        previous = self.last_folder.get(where)
        if previous is not None and len(data) > len(previous[0]) and data.startswith(previous[0]):
            # The folder the parent's commit had, with messages appended: only the new
            # entries are read (tree entries are self-delimiting, so the rest parses alone).
            numbered = dict(previous[1])
            new = data[len(previous[0]) :]
        for raw_name, mode, sha in parse_entries(new, tree_sha):
            checked = self.checked.get((raw_name, mode, sha))
            if checked is not None:
                # An entry seen in another folder tree (the one before this append):
                # checked and parsed already.
                if checked in numbered:
                    raise GitMirrorError(
                        f"two message files have number {checked} ({where}/{raw_name!r:.60})"
                    )
                numbered[checked] = sha
                continue
            name = _entry_name(raw_name, f"{where}/")
            match = _MESSAGE_FILE.fullmatch(name)
            if match is None:
                raise GitMirrorError(
                    f"unexpected file {where}/{name!r:.60} in the mirror; message files are "
                    "named like 000000-user.json"
                )
            path = f"{where}/{name}"
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
            self.checked[(raw_name, mode, sha)] = number
        self.last_folder[where] = (data, numbered)
        return numbered

    def _flat_messages(self, tree_sha: bytes) -> tuple[bytes, ...]:
        """The message blobs of a format 1 ``messages/`` tree: files numbered from 1."""
        found = self.lists.get((1, tree_sha))
        if found is not None:
            return found
        numbered = self._numbered(tree_sha, "messages")
        if sorted(numbered) != list(range(1, len(numbered) + 1)):
            raise GitMirrorError(
                f"message files must be numbered 1 to {len(numbered)} without gaps; found "
                f"{listing([str(n) for n in sorted(numbered)])}"
            )
        found = self.lists[(1, tree_sha)] = tuple(numbered[n] for n in sorted(numbered))
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

    def _state(self, sha: bytes, codec: str) -> dict[str, bytes]:
        found = self.states.get((sha, codec))
        if found is None:
            found = {
                key: self._state_value(key, value, codec)
                for key, value in self._object(sha, "state.json").items()
            }
            self.states[(sha, codec)] = found
        return found

    def _state_value(self, key: str, value: Any, codec: str) -> bytes:
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
            return data
        decoded = from_json(value, where)
        serializer = serializer_for(codec, self.repo.serializer)
        return serializer.serialize(decoded, f"state[{key!r}]")


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
    return bool(repo.objects.has_many([from_hex(commit_id)]))


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
                f"{name} in the mirror points to {show(sha)}, which is missing; delete the ref "
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
    repo: Repo,
    git: GitRepo,
    importer: _Importer,
    refs: Mapping[str, ObjectID],
    progress: Progress | None,
) -> list[_Planned]:
    """Read and validate every commit reachable from ``refs`` without writing anything."""
    plans: dict[bytes, _Planned] = {}
    commits = parents_first(git, refs.values())
    for git_commit in commits:
        sha = git_commit.id
        try:
            plans[sha] = _plan_one(repo, git, importer, git_commit, plans)
        except StateVCSError as exc:
            raise GitMirrorError(
                f"git commit {show(sha)} cannot be imported: {exc}. Nothing was imported"
            ) from exc
        if progress is not None:
            progress("reading", len(plans), len(commits))
    return list(plans.values())


def _plan_one(
    repo: Repo,
    git: GitRepo,
    importer: _Importer,
    git_commit: GitCommit,
    plans: Mapping[bytes, _Planned],
) -> _Planned:
    entries = tree_entries(git, git_commit.tree)
    if b"statevcs.json" not in entries:
        raise GitMirrorError(
            "it has no statevcs.json, so it is not part of a statevcs mirror; a commit made "
            "with git must keep the statevcs.json of its parent"
        )
    info = _parse_info(git_blob(git, _file_entry(entries, "statevcs.json"), "statevcs.json"))
    parents = tuple(git_commit.parents)
    parent_plans = [plans[p] for p in parents]
    authentic = all(p.authentic for p in parent_plans) and info.parents == tuple(
        p.info.commit for p in parent_plans
    )
    existing = authentic and _has_commit(repo, info.commit)
    plan = _Planned(git_commit.id, parents, info, authentic, existing, None)
    if existing:
        return plan
    plan.parts = importer.parts(entries, info)
    if authentic:
        _check_commit_fields(info.message, info.author, info.timestamp, info.metadata)
    else:
        plan.message = git_commit.message.decode("utf-8", "replace").rstrip("\n")
        plan.author = git_commit.author.decode("utf-8", "replace")
        try:
            plan.timestamp = datetime.fromtimestamp(git_commit.author_time, tz=UTC)
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


def _move_refs(
    repo: Repo,
    path: Path,
    refs: Mapping[str, ObjectID],
    to_svc: Mapping[bytes, ObjectId],
    report: ImportReport,
) -> None:
    """Create the mirror's branches and tags, or fast-forward them; skip ones that diverged."""
    current = repo.refs.as_dict()
    graph = CommitGraph(repo.objects)
    moves: list[tuple[str, ObjectId, ObjectId | None]] = []
    for name, sha in sorted(refs.items()):
        new = to_svc[sha]
        old = current.get(name)
        if old == new:
            continue
        if old is not None and not (
            # On ids, not revisions: a branch may be named like a commit id.
            name.startswith(BRANCH_PREFIX) and is_ancestor(graph, old, new)
        ):
            report.refs_skipped[name] = (
                f"{name} is at {to_hex(old)[:12]} here and at {to_hex(new)[:12]} in the mirror, "
                "which do not fast-forward; merge or reset it yourself"
            )
            continue
        moves.append((name, new, old))
    for name, new, old in moves:
        repo.refs.set(name, new, expected=old, message=f"import-git: {path}")
        report.refs_updated[name] = to_hex(new)


def _check_is_mirror(git: GitRepo, path: Path, refs: Mapping[str, ObjectID]) -> None:
    """Refuse an ordinary git repository before reading its history."""
    advice = (
        "import-git reads only git repositories written by `statevcs export-git` "
        "(statevcs.mirror.git.export_git); export one with it"
    )
    if not refs:
        if is_marked(git):
            return
        raise GitMirrorError(
            f"{path} is not a statevcs mirror: it has no branches or tags. {advice}"
        )
    if not any(has_info_file(git, sha) for sha in refs.values()):
        raise GitMirrorError(
            f"{path} is not a statevcs mirror: no branch or tag has a statevcs.json. {advice}"
        )


def _write_commits(
    repo: Repo,
    importer: _Importer,
    plans: Sequence[_Planned],
    report: ImportReport,
    progress: Progress | None,
) -> dict[bytes, ObjectId]:
    """Write the planned commits; return git sha -> statevcs commit id."""
    to_write = sum(1 for plan in plans if not plan.existing and plan.parts is not None)
    to_svc: dict[bytes, ObjectId] = {}
    lists: dict[bytes, tuple[StoredMessages, tuple[bytes, ...]]] = {}
    batch = _Batch(repo)
    for plan in plans:
        info = plan.info
        if plan.existing or plan.parts is None:
            to_svc[plan.sha] = from_hex(info.commit)
            report.commits_existing += 1
            continue
        try:
            try:
                to_svc[plan.sha] = _write_one(repo, importer, plan, lists, to_svc, batch)
            except MissingObject:
                # The encoder read an object of this batch that its caches no longer hold:
                # store the batch, then the same commit reads it from the store.
                batch.flush()
                to_svc[plan.sha] = _write_one(repo, importer, plan, lists, to_svc, batch)
            if batch.commits >= _BATCH_COMMITS:
                batch.flush()
        except StateVCSError as exc:
            raise GitMirrorError(
                f"git commit {show(plan.sha)} cannot be imported: {exc}. No ref was changed"
            ) from exc
        report.commits_imported += 1
        if not plan.authentic:
            report.commits_from_git += 1
        if progress is not None:
            progress("importing", report.commits_imported, to_write)
    try:
        batch.flush()
    except StateVCSError as exc:
        raise GitMirrorError(f"the import could not be stored: {exc}. No ref was changed") from exc
    return to_svc


_BATCH_COMMITS = 256
"""Commits whose objects an import stores in one ``put`` (one SQLite transaction)."""


class _Batch:
    """Objects of imported commits not stored yet: one store write per many commits.

    A commit's parent is in the same or an earlier batch, and refs move only after the last
    batch is stored, so no ref ever names a missing object.
    """

    def __init__(self, repo: Repo) -> None:
        self.repo = repo
        self.objects: dict[ObjectId, bytes] = {}
        self.commits = 0

    def add(self, objects: Mapping[ObjectId, bytes], commit: tuple[ObjectId, bytes]) -> None:
        """Queue one commit and the objects it needs."""
        self.objects.update(objects)
        self.objects[commit[0]] = commit[1]
        self.commits += 1

    def flush(self) -> None:
        """Store what is queued (one transaction)."""
        if self.objects:
            self.repo.objects.put(self.objects)
        self.objects = {}
        self.commits = 0


def _rebuild(
    importer: _Importer, info: _Info, snapshot: Snapshot, base: MessageBase | None
) -> WrittenSnapshot:
    """Rebuild an exported snapshot with its recorded id, in the storage format it had.

    The format the previous commit matched is tried first; the other one is built from
    scratch (its parent's tree is in another format, or cut another way), so a mirror of a
    format-1 repository imports with identical ids into any repository. Likewise the chunker
    the previous commit matched, then the recorded one, then the others this version knows:
    a repository records its own chunker for every commit it exports, also for commits it
    imported from another repository's mirror, whose values keep the cuts they were made with.
    """
    first = importer.storage_format or importer.repo.objects.format
    chunkers = [importer.chunker or info.chunker, info.chunker, *CHUNKERS.values()]
    recorded = ""
    for number, chunker in enumerate(dict.fromkeys(chunkers)):
        for storage_format in (first, *(f for f in (2, 1) if f != first)):
            encoder = importer.encoder(chunker, storage_format)
            # Only the encoder that wrote the parent knows its objects (queued, not stored).
            splice = not number and storage_format == first
            written = encoder.encode_snapshot(
                snapshot, state_codec=info.codec, base=base if splice else None, raw_state=True
            )
            snapshot_id = to_hex(written.snapshot_id)
            if chunker is info.chunker:
                recorded = snapshot_id  # what the error names: the recorded chunker's rebuild
            if snapshot_id == info.snapshot:
                importer.storage_format = storage_format
                importer.chunker = chunker
                return written
    raise GitMirrorError(
        f"its files rebuild snapshot {recorded[:12]}, not the recorded "
        f"{info.snapshot[:12]}: they were changed without a new commit, or were written by "
        "an incompatible statevcs; make a new git commit for the change instead"
    )


def _write_one(
    repo: Repo,
    importer: _Importer,
    plan: _Planned,
    lists: dict[bytes, tuple[StoredMessages, tuple[bytes, ...]]],
    to_svc: Mapping[bytes, ObjectId],
    batch: _Batch,
) -> ObjectId:
    info, parts = plan.info, plan.parts
    assert parts is not None
    snapshot = importer.snapshot(parts, info.kind, info.codec)
    base = None
    first = plan.git_parents[0] if plan.git_parents else None
    if first is not None and first in lists:
        previous, previous_blobs = lists[first]
        base = MessageBase(previous=previous, keep=prefix_length(parts.messages, previous_blobs))
    # The mirror holds already-serialized state bytes (maybe pickled with a key this process
    # lacks), so they are written verbatim; messages shared with the parent are not re-encoded.
    # A commit made with git tools is a new commit of this repository: cut as it cuts.
    if plan.authentic:
        written = _rebuild(importer, info, snapshot, base)
    else:
        written = repo.objects.encode_snapshot(
            snapshot, state_codec=info.codec, base=base, raw_state=True
        )
    parents = [to_svc[p] for p in plan.git_parents]

    if plan.authentic:
        commit_id, encoded = repo.objects.build_commit(
            written.snapshot_id,
            parents,
            message=info.message,
            author=info.author,
            timestamp=info.timestamp,
            metadata=info.metadata,
        )
        if to_hex(commit_id) != info.commit:
            raise GitMirrorError(
                f"it rebuilds commit {to_hex(commit_id)[:12]}, not the recorded "
                f"{info.commit[:12]}: statevcs.json was edited, or the mirror was written by an "
                "older statevcs that wrote non-string metadata keys as strings (such commits "
                "cannot be read back exactly; export them again from the original repository)"
            )
    else:
        assert plan.timestamp is not None
        commit_id, encoded = repo.objects.build_commit(
            written.snapshot_id,
            parents,
            message=plan.message,
            author=plan.author,
            timestamp=plan.timestamp,
            metadata={"git": {"sha": show(plan.sha)}},
        )
    batch.add(written.objects, (commit_id, encoded))
    lists[plan.sha] = (written.messages, parts.messages)
    return commit_id


def _adopt_head(repo: Repo, git: GitRepo) -> None:
    """Make the mirror's ``HEAD`` branch the default branch of a repository that had none."""
    current = repo.default_branch
    if current is not None and repo.refs.get(branch_ref(current)) is not None:
        return
    target = symbolic_head(git)
    if target is None:
        return
    name = target.decode("utf-8", "replace")
    if name.startswith(BRANCH_PREFIX) and repo.refs.get(name) is not None:
        # switch() records the move in HEAD's reflog, as every move of the default branch is.
        repo.switch(name[len(BRANCH_PREFIX) :])
