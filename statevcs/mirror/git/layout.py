"""What a git mirror holds, and reading it from a git repository with dulwich.

The export writes and the import reads this layout: one git commit per statevcs commit, whose
tree holds ``messages/FFFF/NNNNNN-role.json`` (format 2: numbered from 0, a hundred to a
folder, so a new message rewrites one folder and the folder list rather than a tree naming every
message; format 1, still read, had ``messages/NNNNNN-role.json`` numbered from 1),
``state.json``, ``extras.json`` and ``statevcs.json``; the git config section that marks a
mirror; and the file in the git folder that maps statevcs commit ids to git shas. Readers here
turn every problem of a possibly damaged or hostile repository into
:class:`~statevcs.errors.GitMirrorError`.
"""

from __future__ import annotations

import hashlib
import re
import weakref
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from ...errors import GitMirrorError
from ...history import topological_order
from ...refs import BRANCH_PREFIX, HEAD, TAG_PREFIX
from .jsonmap import parse_json

if TYPE_CHECKING:
    from dulwich.objects import Commit as GitCommit
    from dulwich.objects import ObjectID
    from dulwich.refs import Ref
    from dulwich.repo import Repo as GitRepo

MIRROR_FORMAT = 2
"""The version of the layout an export writes, recorded in every ``statevcs.json``."""
READ_FORMATS = (1, 2)
"""The layouts an import reads: 1 (one flat ``messages/`` folder numbered from 1) and 2."""
MESSAGES_PER_FOLDER = 100
"""Messages in each ``messages/`` folder of format 2: folder ``0000`` holds messages 0-99."""
MAP_FILE = "statevcs-map"
"""The file in the git folder mapping statevcs commit ids to git shas (one pair a line)."""
MIRROR_SECTION = b"statevcs"
"""The git config section marking a statevcs mirror: ``[statevcs] mirror = true``."""
MAX_FILE_SIZE = 512 * 1024 * 1024
"""Largest file :func:`~statevcs.mirror.git.import_git` reads from a mirror (bytes); larger
ones are refused. Raise it here (``statevcs.mirror.git.layout.MAX_FILE_SIZE``) for a genuine
mirror with larger files."""

FILE_MODE = 0o100644
TREE_MODE = 0o040000
SYMLINK_MODE = 0o120000
GITLINK_MODE = 0o160000
REGULAR_KIND = 0o100000
KIND_MASK = 0o170000
INFO_FILE = "statevcs.json"
MIRROR_FILES = (INFO_FILE, "state.json", "extras.json")
"""The files at the top of every mirror commit's tree (``messages/`` too when not empty)."""
HEX_ID = re.compile(r"[0-9a-f]{64}")
"""A full statevcs id as ``statevcs.json`` and the id map write it."""

_T = TypeVar("_T")
_R = TypeVar("_R")


def require_dulwich() -> None:
    """Raise :class:`GitMirrorError` saying how to install dulwich when it is missing."""
    try:
        import dulwich
    except ImportError:
        raise GitMirrorError(
            "the git mirror needs dulwich: install it with pip install 'statevcs[git]'"
        ) from None
    del dulwich


def oid(sha: bytes) -> ObjectID:
    """Type a hex git sha as dulwich's ``ObjectID``."""
    return cast("ObjectID", sha)


def ref(name: str | bytes) -> Ref:
    """Type a ref name as dulwich's ``Ref``."""
    return cast("Ref", name.encode() if isinstance(name, str) else name)


def show(sha: bytes) -> str:
    """A git sha (or any bytes a damaged repository holds) as text for messages."""
    return sha.decode("ascii", "replace")


def listing(paths: Sequence[str]) -> str:
    """The first five of ``paths`` for a message, and how many more there are."""
    shown = ", ".join(paths[:5])
    return shown + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")


def utf8(text: str, what: str) -> bytes:
    """``text`` as UTF-8, or :class:`GitMirrorError` naming ``what`` (lone surrogates)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise GitMirrorError(f"{what} cannot be written as UTF-8 ({exc})") from None


def message_folder(index: int) -> str:
    """The ``messages/`` folder of message ``index`` (from 0) in format 2: ``0000``, ``0001``."""
    return f"{index // MESSAGES_PER_FOLDER:04d}"


def message_file(index: int, role: str) -> str:
    """The file name of message ``index`` (from 0) in format 2: ``000042-user.json``."""
    return f"{index:06d}-{role}.json"


# --- git objects ---------------------------------------------------------------------


def _read(sha: bytes, what: str, read: Callable[[Any], _R]) -> _R:
    """``read(sha)`` from the mirror's object store; a missing or damaged object raises
    :class:`GitMirrorError` saying what to do."""
    try:
        return read(oid(sha))
    except KeyError:
        raise GitMirrorError(
            f"{what} {show(sha)} is not in the mirror's object store (a shallow or partial "
            "copy?); import from a complete mirror (git fetch --unshallow)"
        ) from None
    except Exception as exc:  # dulwich reports damaged objects with many unrelated types
        raise GitMirrorError(
            f"{what} {show(sha)} in the mirror is damaged ({exc}); run `git fsck` in the mirror"
        ) from None


PRELOAD_LIMIT = 64 * 1024 * 1024
"""Largest total size of packs (compressed bytes) :func:`preload` inflates in one pass."""

_preloaded: weakref.WeakKeyDictionary[Any, dict[bytes, tuple[int, bytes]]] = (
    weakref.WeakKeyDictionary()
)


def preload(git: GitRepo, limit: int | None = None) -> int:
    """Inflate every object of the mirror's packs in one pass, for the reads that follow.

    An import reads thousands of small objects; looking each one up in a pack costs more than
    the object itself, while one pass over the pack resolves each delta once. Each object's
    sha is computed from its content as it is inflated (so a damaged object never matches its
    name and is read again, and refused, one at a time). Packs over ``limit`` bytes in all
    (default :data:`PRELOAD_LIMIT`), or any trouble reading them, leave the reads one at a
    time; returns the objects inflated.
    """
    from dulwich.pack import UnpackedObjectIterator

    store = git.object_store
    found: dict[bytes, tuple[int, bytes]] = {}
    try:
        packs = list(getattr(store, "packs", ()))
        if sum(len(pack.data) for pack in packs) > (PRELOAD_LIMIT if limit is None else limit):
            return 0
        for pack in packs:
            deltas = False
            for unpacked in pack.data.iter_unpacked():
                # An export writes whole objects: one pass inflates each once.
                if unpacked.pack_type_num not in _TYPE_NAMES:
                    deltas = True
                    continue
                _keep(found, unpacked)
            if deltas:  # after `git gc`: resolve each delta chain once
                walker = UnpackedObjectIterator.for_pack_data(
                    pack.data, resolve_ext_ref=pack.resolve_ext_ref
                )
                for unpacked in walker:
                    _keep(found, unpacked)
    except Exception:  # damaged packs are reported object by object, by the ordinary reads
        return 0
    _preloaded[store] = found
    return len(found)


def release(git: GitRepo) -> None:
    """Drop what :func:`preload` inflated and nobody read (at the end of an import)."""
    _preloaded.pop(git.object_store, None)


def _keep(found: dict[bytes, tuple[int, bytes]], unpacked: Any) -> None:
    if unpacked.obj_type_num in _TYPE_NAMES and unpacked.obj_chunks is not None:
        data = b"".join(unpacked.obj_chunks)
        found[unpacked.sha().hex().encode()] = (unpacked.obj_type_num, data)


def _take(git: GitRepo, sha: bytes) -> tuple[int, bytes] | None:
    """A preloaded object, handed out once (the importer keeps what it parsed)."""
    found = _preloaded.get(git.object_store)
    return None if found is None else found.pop(sha, None)


def git_object(git: GitRepo, sha: bytes, kind: type[_T], what: str) -> _T:
    """Read one git object of type ``kind``; missing, damaged or other objects raise."""
    taken = _take(git, sha)
    if taken is not None:
        from dulwich.objects import ShaFile

        try:
            obj: Any = ShaFile.from_raw_string(taken[0], taken[1], sha=cast("ObjectID", sha))
        except Exception as exc:  # dulwich reports malformed objects with many types
            raise GitMirrorError(
                f"{what} {show(sha)} in the mirror is damaged ({exc}); run `git fsck` in it"
            ) from None
    else:
        obj = _read(sha, what, git.object_store.__getitem__)
    if not isinstance(obj, kind):
        raise GitMirrorError(
            f"{show(sha)} in the mirror is a {obj.type_name.decode()}, not a {what}"
        )
    return obj


def git_commit(git: GitRepo, sha: bytes) -> GitCommit:
    """Read the git commit ``sha``."""
    from dulwich.objects import Commit

    return git_object(git, sha, Commit, "commit")


_TYPE_NAMES = {1: "commit", 2: "tree", 3: "blob", 4: "tag"}


def _raw_object(git: GitRepo, sha: bytes, type_num: int, what: str) -> bytes:
    """The content of one git object of type ``type_num``, without building a dulwich object
    (an import reads thousands of small trees and blobs)."""
    taken = _take(git, sha)
    if taken is not None:
        # Its sha was computed from its content while the pack was inflated.
        found, data = taken
        kind = _TYPE_NAMES[found]
        if found != type_num:
            raise GitMirrorError(f"{show(sha)} in the mirror is a {kind}, not a {what}")
        return data
    found, data = _read(sha, what, git.object_store.get_raw)
    kind = _TYPE_NAMES.get(found, f"object of type {found}")
    data = bytes(data)
    # dulwich checks neither a loose object's stated size nor any object's sha here.
    header = f"{kind} {len(data)}\x00".encode()
    if hashlib.sha1(header + data).hexdigest().encode() != sha:
        raise GitMirrorError(
            f"{what} {show(sha)} in the mirror is damaged (its content does not hash to its "
            "name); run `git fsck` in the mirror"
        )
    if found != type_num:
        raise GitMirrorError(f"{show(sha)} in the mirror is a {kind}, not a {what}")
    return data


def git_blob(git: GitRepo, sha: bytes, name: str) -> bytes:
    """Read the content of file ``name`` (blob ``sha``), refusing files over the size limit."""
    data = _raw_object(git, sha, 3, f"file {name}")
    if len(data) > MAX_FILE_SIZE:
        raise GitMirrorError(
            f"{name} is {len(data):,} bytes, more than the {MAX_FILE_SIZE:,} an import reads "
            "(statevcs.mirror.git.layout.MAX_FILE_SIZE); raise that limit if the file is genuine"
        )
    return data


def tree_data(git: GitRepo, tree_sha: bytes) -> bytes:
    """The content of the git tree ``tree_sha``, checked to be one."""
    return _raw_object(git, tree_sha, 2, "tree")


def parse_entries(data: bytes, tree_sha: bytes) -> list[tuple[bytes, int, bytes]]:
    """The ``(name, mode, sha)`` entries of tree content ``data`` (or of a run of its entries)."""
    from dulwich.objects import parse_tree

    try:
        return list(parse_tree(data, 20))
    except Exception as exc:  # dulwich reports damaged trees with several types
        raise GitMirrorError(
            f"tree {show(tree_sha)} in the mirror is damaged ({exc}); run `git fsck` in it"
        ) from None


def tree_entries(git: GitRepo, tree_sha: bytes) -> dict[bytes, tuple[int, bytes]]:
    """The entries of a git tree: name -> (mode, sha)."""
    entries = parse_entries(tree_data(git, tree_sha), tree_sha)
    return {name: (mode, sha) for name, mode, sha in entries}


class GitHistory:
    """Parents of git commits, each read once, for :func:`statevcs.history.topological_order`."""

    def __init__(self, git: GitRepo) -> None:
        self._git = git
        self._commits: dict[bytes, GitCommit] = {}

    def commit(self, sha: bytes) -> GitCommit:
        """Return the git commit ``sha``."""
        found = self._commits.get(sha)
        if found is None:
            found = self._commits[sha] = git_commit(self._git, sha)
        return found

    def parents(self, sha: bytes, /) -> Sequence[bytes]:
        """Return the parents of git commit ``sha``."""
        return self.commit(sha).parents


def parents_first(git: GitRepo, starts: Iterable[bytes]) -> list[GitCommit]:
    """git commits reachable from ``starts``, parents before children."""
    history = GitHistory(git)
    return [history.commit(sha) for sha in topological_order(history, starts)]


# --- refs and the mirror mark ----------------------------------------------------------


def is_marked(git: GitRepo) -> bool:
    """Whether the git config says ``[statevcs] mirror = true``."""
    try:
        value = git.get_config().get((MIRROR_SECTION,), b"mirror")
    except KeyError:
        return False
    return value.strip().lower() in (b"true", b"yes", b"on", b"1")


def symbolic_head(git: GitRepo) -> bytes | None:
    """The ref a git repository's ``HEAD`` names, or ``None`` when it is detached."""
    symrefs = git.refs.get_symrefs()
    target = symrefs.get(ref(HEAD))
    return target if isinstance(target, bytes) else None


def branch_and_tag_commits(git: GitRepo) -> dict[str, ObjectID]:
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


def read_info(git: GitRepo, commit_sha: bytes) -> dict[str, Any] | None:
    """The ``statevcs.json`` object of a commit, or ``None`` whatever is wrong with it."""
    try:
        found = tree_entries(git, git_commit(git, commit_sha).tree)
        entry = found.get(INFO_FILE.encode())
        if entry is None or entry[0] & KIND_MASK != REGULAR_KIND:
            return None
        info = parse_json(git_blob(git, entry[1], INFO_FILE), INFO_FILE)
    except GitMirrorError:
        return None
    return info if isinstance(info, dict) and "format" in info else None


def has_info_file(git: GitRepo, commit_sha: bytes) -> bool:
    """Whether a commit's tree has a ``statevcs.json`` entry at all (valid or not)."""
    try:
        return INFO_FILE.encode() in tree_entries(git, git_commit(git, commit_sha).tree)
    except GitMirrorError:
        return True  # damaged, not foreign: let the commit-by-commit check name the problem


def map_path(git: GitRepo) -> Path:
    """Where the id map of a mirror lives (inside its git folder)."""
    return Path(git.controldir()) / MAP_FILE
