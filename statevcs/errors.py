"""The statevcs exception tree: every public failure is a :class:`StateVCSError`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any


class StateVCSError(Exception):
    """Base class of every error statevcs raises on purpose."""

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickling re-calls __init__ with the message alone by default, which fails for the
        # errors that take other arguments (a worker process's error would not come back).
        return (_rebuilt, (type(self), self.args, self.__dict__))


def _rebuilt(cls: type[StateVCSError], args: tuple[Any, ...], state: dict[str, Any]) -> Any:
    """An unpickled error: its message and attributes as they were, no __init__ run."""
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


# --- repository ---------------------------------------------------------------


class RepositoryError(StateVCSError):
    """A repository could not be created, opened or used."""


class RepositoryNotFound(RepositoryError):
    """No statevcs repository exists at the given location."""


class RepositoryExists(RepositoryError):
    """``Repo.init`` was asked to create a repository where one already exists."""


class StoreError(StateVCSError):
    """A storage backend failed (I/O error, unreachable server, locked database).

    For a failed write, :attr:`landed` says whether it took effect anyway: ``False`` (nothing
    was written), ``True``, or ``None`` when that is not known (a network failure hid the
    answer). ``Repo.commit`` also sets :attr:`commit_id`, the commit it was writing:
    after ``landed is None``, ask ``Repo.has_landed`` before committing again, so the retry
    never duplicates it.
    """

    def __init__(
        self, message: str = "", *, landed: bool | None = None, commit_id: str | None = None
    ) -> None:
        super().__init__(message)
        self.landed = landed
        self.commit_id = commit_id


# --- objects ------------------------------------------------------------------


class StaleCache(StoreError):
    """Another process garbage-collected the repository since this handle last looked.

    Raised inside a write, before anything is stored or moved: the writer drops its caches and
    rewrites every object it needs (statevcs does this itself; it only escapes after repeated
    collections during one commit).
    """

    def __init__(self, expected: int, actual: int) -> None:
        self.expected = expected
        self.actual = actual
        super().__init__(
            f"the repository was garbage-collected while this write was prepared (generation "
            f"{expected} -> {actual}); nothing was written: retry the operation",
            landed=False,
        )


class ForkedProcessError(StoreError):
    """An ``s3://`` repository was used in a process forked from one that had used S3.

    obstore runs every S3 request on one I/O runtime per process, started by the first
    request; ``fork()`` copies it without its threads, so in the child every request, on the
    parent's handle or a new one, would wait forever. Raised at once instead.
    """

    def __init__(self, url: str) -> None:
        self.url = url
        super().__init__(
            f"cannot use {url} in this process: it was forked from a process that had already "
            "used S3, and a forked copy of that process cannot make S3 requests (they would "
            "hang). Start worker processes with multiprocessing's 'spawn' or 'forkserver' "
            "start method, or use S3 only after the fork, in the children (open repositories "
            "in each worker, not while a preloaded app is imported: gunicorn --preload, "
            "Celery's prefork pool); see 'Forked processes' in docs/storage.md"
        )


class ObjectError(StateVCSError):
    """Base class for problems with stored objects."""


class MissingObject(ObjectError):
    """An object id is referenced but the object is not in the store."""

    def __init__(self, object_id: str, context: str = "") -> None:
        self.object_id = object_id
        where = f" ({context})" if context else ""
        super().__init__(
            f"object {object_id} is missing from the store{where}; "
            "run `statevcs fsck` to list damage and restore the object from a backup or mirror"
        )


class CorruptObject(ObjectError):
    """Stored bytes do not decode to a valid object, or do not hash to their id."""

    def __init__(self, object_id: str, reason: str) -> None:
        self.object_id = object_id
        self.reason = reason
        super().__init__(
            f"object {object_id} is corrupt: {reason}; "
            "run `statevcs fsck` and restore the object from a backup or git mirror"
        )


# --- values -------------------------------------------------------------------


class SerializationError(StateVCSError):
    """A value cannot be serialized or deserialized by the configured serializer."""

    def __init__(self, message: str, path: str | None = None) -> None:
        self.path = path
        super().__init__(message)


class UntrustedPayload(SerializationError):
    """A pickle payload is unsigned or its signature does not match the key."""


# --- refs and revisions ---------------------------------------------------------


class RefError(StateVCSError):
    """Base class for ref (branch, tag, HEAD) problems."""


class InvalidRefName(RefError):
    """A branch or tag name breaks git's ref-name rules."""

    def __init__(self, name: str, reason: str) -> None:
        self.name = name
        self.reason = reason
        super().__init__(
            f"invalid ref name {name!r}: {reason}; "
            "use letters, digits, '-', '_', '.' and '/' (see `git check-ref-format`)"
        )


class RefNotFound(RefError):
    """A named branch or tag does not exist."""


class RefExists(RefError):
    """A branch or tag with that name already exists."""


class RefConflict(RefError):
    """Another writer moved a ref since the caller read it (compare-and-swap failed)."""

    def __init__(
        self, ref: str, expected: str | None, actual: str | None, hint: str | None = None
    ) -> None:
        self.ref = ref
        self.expected = expected
        self.actual = actual
        advice = hint or "re-read the ref (or check out again) and retry"
        seen = (
            ""
            if expected is None and actual is None
            else f": expected {expected or '(none)'}, found {actual or '(none)'}"
        )
        super().__init__(f"ref {ref} moved concurrently{seen}; {advice}")


class RefsChanged(RefError):
    """A ref or reflog moved while garbage collection was marking; gc marks again and retries."""


class DetachedHead(RefError):
    """A commit was attempted while detached from any branch."""


class RevisionError(StateVCSError):
    """Base class for revision-expression problems."""


class InvalidRevision(RevisionError):
    """A revision expression is syntactically invalid."""


class UnknownRevision(RevisionError):
    """A revision expression names nothing in this repository."""


class AmbiguousRevision(RevisionError):
    """A revision expression matches more than one object or ref."""

    def __init__(self, revision: str, candidates: Iterable[str]) -> None:
        self.revision = revision
        self.candidates = sorted(candidates)
        listing = ", ".join(self.candidates)
        super().__init__(
            f"revision {revision!r} is ambiguous; candidates: {listing}. "
            "Use a longer hash prefix or a full ref name (refs/heads/..., refs/tags/...)"
        )


# --- adapters and merges ------------------------------------------------------


class UnsupportedObject(StateVCSError):
    """No adapter knows how to capture or restore this kind of object."""


class MergeConflict(StateVCSError):
    """A merge found changes it cannot combine without a strategy.

    ``keys`` lists conflicting state keys, ``extras_keys`` conflicting extras keys;
    ``messages`` says the conversations diverged and ``kind`` that the snapshot kind did.
    """

    def __init__(
        self,
        message: str,
        keys: Iterable[str] = (),
        *,
        extras_keys: Iterable[str] = (),
        messages: bool = False,
        kind: bool = False,
    ) -> None:
        self.keys = sorted(keys)
        self.extras_keys = sorted(extras_keys)
        self.messages = messages
        self.kind = kind
        super().__init__(message)


class GitMirrorError(StateVCSError):
    """Exporting to, importing from or pushing a git mirror failed."""


def install_hint(extra: str) -> str:
    """How to install the optional dependencies of ``extra``, said the same way everywhere.

    statevcs is installed from a clone (it is not on PyPI yet), so the hint is pip's editable
    install of that extra.
    """
    return f"install the `{extra}` extra: python -m pip install -e '.[{extra}]' in a statevcs clone"


class MissingExtra(ModuleNotFoundError):
    """An integration or backend was imported without the extra that brings its framework.

    A :class:`ModuleNotFoundError` (so ``except ImportError`` keeps working) whose message names
    the extra to install.
    """

    def __init__(self, what: str, module: str, extra: str) -> None:
        super().__init__(f"{what} needs the {module} package: {install_hint(extra)}", name=module)
        self.extra = extra


def require_module(what: str, module: str, extra: str) -> None:
    """Raise :class:`MissingExtra` for ``what`` unless ``module`` can be imported."""
    import importlib.util

    try:
        found = importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        raise MissingExtra(what, module, extra)


__all__ = [
    "AmbiguousRevision",
    "CorruptObject",
    "DetachedHead",
    "GitMirrorError",
    "InvalidRefName",
    "InvalidRevision",
    "MergeConflict",
    "MissingExtra",
    "MissingObject",
    "ObjectError",
    "RefConflict",
    "RefError",
    "RefExists",
    "RefNotFound",
    "RefsChanged",
    "RepositoryError",
    "RepositoryExists",
    "RepositoryNotFound",
    "RevisionError",
    "SerializationError",
    "StaleCache",
    "StateVCSError",
    "StoreError",
    "UnknownRevision",
    "UnsupportedObject",
    "install_hint",
    "require_module",
    "UntrustedPayload",
]
