"""The abstract ``Store``: where objects, refs, reflogs and repository config live.

A backend implements the abstract methods; the contract suite in :mod:`statevcs.testing` checks
that it behaves like every other backend. Objects are immutable and keyed by id, so ``put_many``
is idempotent. Refs move only through :meth:`Store.set_ref`, an atomic compare-and-swap.
"""

from __future__ import annotations

import abc
import contextlib
import os
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from ..errors import RefError
from ..hashing import ObjectId


class _Any:
    """Sentinel type: "do not check the ref's current value"."""

    def __repr__(self) -> str:
        return "ANY"


ANY: Final = _Any()
"""Pass as ``expected`` to move a ref whatever its current value (no compare-and-swap)."""

Expected = ObjectId | None | _Any

RefsState = tuple[object, ...]
"""An opaque, comparable fingerprint of every ref and reflog (see :meth:`Store.refs_state`)."""


@dataclass(frozen=True, slots=True)
class StoredReflogEntry:
    """One movement of a ref: from ``old`` to ``new`` (``None`` = absent), when, and why."""

    old: ObjectId | None
    new: ObjectId | None
    timestamp: float
    message: str


@dataclass(frozen=True, slots=True)
class RefUpdate:
    """A compare-and-swap of one ref, with the reflog names that record it."""

    name: str
    new: ObjectId | None
    expected: Expected = ANY
    message: str = ""
    log_also: Sequence[str] = ()
    log: bool = True
    """``False``: move the ref without any reflog entry (for a fast-forward whose old value
    stays reachable from the new one, so the reflog would only repeat the history)."""


REFLOG_NOTE_LIMIT: Final = 256
"""The most characters a reflog note keeps: every store cuts a longer one the same way."""


def reflog_note(message: str) -> str:
    """``message`` as a reflog keeps it: a longer one is cut to :data:`REFLOG_NOTE_LIMIT`
    characters, the last an ellipsis (the full message stays in the commit).

    Notes live in data every writer reads and rewrites (S3's repository document): a commit
    message's megabyte first line must not go there twice per commit.
    """
    if len(message) <= REFLOG_NOTE_LIMIT:
        return message
    return message[: REFLOG_NOTE_LIMIT - 1] + "\u2026"


def check_batch(updates: Sequence[RefUpdate]) -> None:
    """Refuse a batch that names one ref twice (its outcome would depend on the order)."""
    names = [u.name for u in updates]
    if len(set(names)) != len(names):
        twice = sorted({n for n in names if names.count(n) > 1})
        raise RefError(
            f"a batch of ref updates may move each ref once, but it names {', '.join(twice)} "
            "more than once; combine the moves into one update"
        )


def logged_names(update: RefUpdate, head_target: str | None) -> list[str]:
    """Every reflog that records ``update``: its own, then :func:`also_logged` (none when
    ``update.log`` is false)."""
    if not update.log:
        return []
    return [update.name, *also_logged(update, head_target)]


def also_logged(update: RefUpdate, head_target: str | None) -> list[str]:
    """The other reflogs that record ``update``: its ``log_also``, plus ``HEAD`` when the ref
    moved is the branch ``HEAD`` points at (decided inside the write, so a concurrent switch
    cannot make the entry miss HEAD's reflog)."""
    names = list(update.log_also)
    if head_target is not None and update.name == head_target and "HEAD" not in names:
        names.insert(0, "HEAD")
    return names


class Store(abc.ABC):
    """One repository's storage: an object store plus a ref store, behind one URL."""

    url: str = ""

    commit_graph_every: int = 64
    """How many commits a handle writes before it brings the persisted commit graph up to date
    (:mod:`statevcs.commitgraph`). A remote store asks sooner: there each commit the graph does
    not cover costs a reader one round trip."""

    commit_graph_data: bool = False
    """Whether the commit graph's segments carry their commits' bytes too, so that a cold
    ``log`` reads a few objects instead of every commit: worth the extra bytes where each read
    is a round trip (S3), not where reading a stretch of commits is one local query."""

    # --- objects --------------------------------------------------------------

    @abc.abstractmethod
    def get_many(self, ids: Iterable[ObjectId]) -> dict[ObjectId, bytes]:
        """Return the stored bytes of every id that exists; missing ids are left out."""

    @abc.abstractmethod
    def put_many(self, objects: Mapping[ObjectId, bytes]) -> int:
        """Store objects that are not stored yet; return how many were new."""

    def get_many_stored(self, ids: Iterable[ObjectId]) -> dict[ObjectId, bytes]:
        """Like :meth:`get_many`, but the bytes the store itself holds, past any local cache.

        What ``fsck`` re-hashes: a cache holds only bytes that were good when read, so it would
        hide damage done since. The default is :meth:`get_many` (a store without a cache).
        """
        return self.get_many(ids)

    def ancestry(self, starts: Iterable[ObjectId], limit: int) -> dict[ObjectId, bytes]:
        """Return the stored bytes of ``starts`` and of up to ``limit`` commits below them.

        A read-ahead hint for history walks: a backend that indexes commit parents answers with
        a whole stretch of history in one round trip. Callers still read parents from the
        bytes returned (the index is never trusted for content); anything missing is read
        later one object at a time. The default returns the starts only.
        """
        return self.get_many(starts)

    @abc.abstractmethod
    def has_many(self, ids: Iterable[ObjectId]) -> set[ObjectId]:
        """Return the subset of ``ids`` that exist."""

    @abc.abstractmethod
    def iter_objects(self, *, older_than: float | None = None) -> Iterator[tuple[ObjectId, int]]:
        """Yield ``(id, stored size)`` of every object, or those written before ``older_than``."""

    @abc.abstractmethod
    def ids_in_range(self, low: ObjectId, high: ObjectId, limit: int = 16) -> list[ObjectId]:
        """Return up to ``limit`` ids between ``low`` and ``high`` inclusive (hex-prefix lookup)."""

    @abc.abstractmethod
    def delete_many(self, ids: Iterable[ObjectId], *, if_refs: RefsState | None = None) -> int:
        """Delete objects (garbage collection only); return how many were deleted.

        Atomically with the deletion the gc generation is bumped (see :meth:`generation`), and,
        with ``if_refs`` given, nothing is deleted and
        :class:`~statevcs.errors.RefsChanged` is raised when refs or reflogs moved since
        :meth:`refs_state` returned it.
        """

    @abc.abstractmethod
    def generation(self) -> int:
        """Return the gc generation: a counter bumped by every deletion of objects.

        Writers remember it with their cache of stored ids and pass it to :meth:`update_refs`,
        which refuses the write if a collection happened since (the cache may name deleted
        objects).
        """

    @abc.abstractmethod
    def refs_state(self) -> RefsState:
        """Return a value that changes whenever any ref, symbolic ref or reflog changes."""

    def fence(self) -> None:
        """Return once no write begun before the call can still take effect.

        A store whose writes are over when their call returns (or raises) has nothing to do;
        a remote one makes sure a request still on its way can no longer land (asked before
        deciding a failed write did not land, see ``Repo.has_landed``).
        """
        return None

    # --- refs -------------------------------------------------------------------

    @abc.abstractmethod
    def get_ref(self, name: str) -> ObjectId | None:
        """Return the id a direct ref points to, or ``None``."""

    def get_refs(self, names: Sequence[str]) -> dict[str, ObjectId]:
        """Return what each existing direct ref among ``names`` points to (absent ones left out).

        One read where the store can (revision lookups try several spellings of one name).
        """
        found: dict[str, ObjectId] = {}
        for name in names:
            target = self.get_ref(name)
            if target is not None:
                found[name] = target
        return found

    @abc.abstractmethod
    def list_refs(self, prefix: str = "refs/") -> dict[str, ObjectId]:
        """Return every direct ref whose name starts with ``prefix``."""

    @abc.abstractmethod
    def get_symbolic(self, name: str) -> str | None:
        """Return the target ref name of a symbolic ref (``HEAD``), or ``None`` if it is direct."""

    @abc.abstractmethod
    def set_symbolic(self, name: str, target: str, message: str = "") -> None:
        """Make ``name`` a symbolic ref to ``target`` (``HEAD`` -> ``refs/heads/main``)."""

    @abc.abstractmethod
    def update_refs(
        self,
        updates: Sequence[RefUpdate],
        objects: Mapping[ObjectId, bytes] | None = None,
        *,
        generation: int | None = None,
    ) -> None:
        """Atomically store ``objects`` then apply every compare-and-swap, or none of them.

        Raises :class:`~statevcs.errors.RefConflict` (and changes no ref) when a ref's current
        value differs from its ``expected``, and :class:`~statevcs.errors.StaleCache` (writing
        nothing) when ``generation`` is given and differs from the store's gc generation.
        Objects stored before a conflict may remain; they are unreachable and removed by
        ``gc``. A ``new`` of ``None`` deletes the ref.
        """

    @abc.abstractmethod
    def reflog(self, name: str) -> list[StoredReflogEntry]:
        """Return the reflog of ``name``, newest first."""

    def reflog_names(self) -> list[str]:
        """Return every name that has reflog entries, its ref deleted or not (sorted).

        gc keeps what they name: a ref deleted without its reflog (plumbing, or a crash
        between the two) must not come back naming collected commits. The default lists
        ``HEAD`` and the live refs; stores that can list their reflogs override it.
        """
        return sorted({"HEAD", *self.list_refs("refs/")})

    @abc.abstractmethod
    def delete_reflog(self, name: str) -> None:
        """Forget the reflog of ``name`` (used when a branch is deleted)."""

    @abc.abstractmethod
    def expire_reflogs(self, older_than: float) -> int:
        """Delete reflog entries written before Unix time ``older_than``; return how many."""

    def reclaim_space(self) -> int:
        """Give the space of deleted objects back to the file system; return the bytes freed.

        ``gc`` calls it after deleting objects. Stores whose deletions free space by
        themselves (memory, S3) keep this default, which frees nothing more.
        """
        return 0

    # --- config -------------------------------------------------------------------

    @abc.abstractmethod
    def config_get(self, key: str) -> str | None:
        """Return a repository config value, or ``None``."""

    @abc.abstractmethod
    def config_set(self, key: str, value: str | None) -> None:
        """Set (or with ``None`` delete) a repository config value."""

    # --- convenience ---------------------------------------------------------------

    def set_ref(
        self,
        name: str,
        new: ObjectId | None,
        *,
        expected: Expected = ANY,
        message: str = "",
        log_also: Sequence[str] = (),
    ) -> None:
        """Compare-and-swap one ref (see :meth:`update_refs`)."""
        self.update_refs([RefUpdate(name, new, expected, message, tuple(log_also))])

    @property
    def identity(self) -> str:
        """A name for the repository this store opens: equal for every store on the same one.

        Handles on one repository share what they know about live objects by it. The default
        is unique to this store object (a ``memory://`` repository lives in one store).
        """
        token = self.__dict__.get("_identity")
        if token is None:
            token = self.__dict__["_identity"] = f"{type(self).__name__}:{os.urandom(16).hex()}"
        return str(token)

    def operation(self) -> contextlib.AbstractContextManager[None]:
        """Group the read-only calls of one porcelain operation (a checkout, resolving a
        revision): a store may serve them from one consistent read, as if read at the block's
        first call. Writes are unaffected. The default reads afresh every time."""
        return contextlib.nullcontext()

    def close(self) -> None:  # noqa: B027 - optional hook
        """Release connections and files; the store must not be used afterwards."""

    @staticmethod
    def now() -> float:
        """Return the current Unix time (a method so tests can control it)."""
        return time.time()


__all__ = [
    "ANY",
    "REFLOG_NOTE_LIMIT",
    "Expected",
    "RefUpdate",
    "RefsState",
    "Store",
    "StoredReflogEntry",
    "also_logged",
    "check_batch",
    "logged_names",
    "reflog_note",
]
