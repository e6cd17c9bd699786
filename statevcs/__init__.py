"""statevcs: git for agent state — content-addressed, deduplicated, branchable history.

>>> import statevcs
>>> repo = statevcs.Repo.init("memory://")
>>> state = {"messages": [{"role": "user", "content": "hi"}], "counter": 1}
>>> first = repo.commit(state, message="turn 1")
>>> state["counter"] = 2
>>> _ = repo.commit(state, message="turn 2")
>>> _ = repo.checkout(state, "main~1")
>>> state["counter"]
1
"""

from __future__ import annotations

import importlib

# Not typing.TYPE_CHECKING: importing typing costs `statevcs --version` a third of its time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from .adapters import (
        ADAPTERS,
        Adapter,
        AdapterRegistry,
        IncrementalAdapter,
        register_adapter,
        tracked_messages,
        transient,
        transient_clear,
        transient_keys,
        unregister_adapter,
    )
    from .diff import MessageChange, MessagesDiff, OrderChange, SnapshotDiff, ValueChange
    from .durations import InvalidDuration
    from .errors import (
        AmbiguousRevision,
        CorruptObject,
        DetachedHead,
        ForkedProcessError,
        GitMirrorError,
        InvalidRefName,
        InvalidRevision,
        MergeConflict,
        MissingObject,
        ObjectError,
        RefConflict,
        RefError,
        RefExists,
        RefNotFound,
        RefsChanged,
        RepositoryError,
        RepositoryExists,
        RepositoryNotFound,
        RevisionError,
        SerializationError,
        StaleCache,
        StateVCSError,
        StoreError,
        UnknownRevision,
        UnsupportedObject,
        UntrustedPayload,
    )
    from .gc import FsckReport, GCReport, StatsReport
    from .repo import Commit, OnConflict, ReflogEntry, Repo
    from .revisions import AmbiguousRefWarning
    from .serializers import JSONSerializer, MsgpackSerializer, PickleSerializer, StateSerializer
    from .snapshot import Snapshot
    from .tracking import TrackedMessages

__version__ = "0.1.0"

# The public names load on first use (PEP 562), so that `statevcs --version` and the command
# line's light commands do not pay for pydantic, the snapshot model and every store at start-up.
_EXPORTS: dict[str, str] = {
    "ADAPTERS": ".adapters",
    "Adapter": ".adapters",
    "AdapterRegistry": ".adapters",
    "IncrementalAdapter": ".adapters",
    "register_adapter": ".adapters",
    "tracked_messages": ".adapters",
    "transient": ".adapters",
    "transient_clear": ".adapters",
    "transient_keys": ".adapters",
    "unregister_adapter": ".adapters",
    "MessageChange": ".diff",
    "MessagesDiff": ".diff",
    "OrderChange": ".diff",
    "SnapshotDiff": ".diff",
    "ValueChange": ".diff",
    "InvalidDuration": ".durations",
    "AmbiguousRevision": ".errors",
    "CorruptObject": ".errors",
    "DetachedHead": ".errors",
    "ForkedProcessError": ".errors",
    "GitMirrorError": ".errors",
    "InvalidRefName": ".errors",
    "InvalidRevision": ".errors",
    "MergeConflict": ".errors",
    "MissingObject": ".errors",
    "ObjectError": ".errors",
    "RefConflict": ".errors",
    "RefError": ".errors",
    "RefExists": ".errors",
    "RefNotFound": ".errors",
    "RefsChanged": ".errors",
    "RepositoryError": ".errors",
    "RepositoryExists": ".errors",
    "RepositoryNotFound": ".errors",
    "RevisionError": ".errors",
    "SerializationError": ".errors",
    "StaleCache": ".errors",
    "StateVCSError": ".errors",
    "StoreError": ".errors",
    "UnknownRevision": ".errors",
    "UnsupportedObject": ".errors",
    "UntrustedPayload": ".errors",
    "FsckReport": ".gc",
    "GCReport": ".gc",
    "StatsReport": ".gc",
    "Commit": ".repo",
    "OnConflict": ".repo",
    "ReflogEntry": ".repo",
    "Repo": ".repo",
    "AmbiguousRefWarning": ".revisions",
    "JSONSerializer": ".serializers",
    "MsgpackSerializer": ".serializers",
    "PickleSerializer": ".serializers",
    "StateSerializer": ".serializers",
    "Snapshot": ".snapshot",
    "TrackedMessages": ".tracking",
}


def __getattr__(name: str) -> Any:
    """Load a public name's module the first time the name is asked for."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'statevcs' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


__all__ = [
    "ADAPTERS",
    "Adapter",
    "AdapterRegistry",
    "AmbiguousRefWarning",
    "AmbiguousRevision",
    "Commit",
    "CorruptObject",
    "DetachedHead",
    "ForkedProcessError",
    "FsckReport",
    "GCReport",
    "GitMirrorError",
    "IncrementalAdapter",
    "InvalidDuration",
    "InvalidRefName",
    "InvalidRevision",
    "JSONSerializer",
    "MergeConflict",
    "MessageChange",
    "MessagesDiff",
    "MissingObject",
    "MsgpackSerializer",
    "ObjectError",
    "OnConflict",
    "OrderChange",
    "PickleSerializer",
    "RefConflict",
    "RefError",
    "RefExists",
    "RefNotFound",
    "ReflogEntry",
    "RefsChanged",
    "Repo",
    "StatsReport",
    "RepositoryError",
    "RepositoryExists",
    "RepositoryNotFound",
    "RevisionError",
    "SerializationError",
    "Snapshot",
    "SnapshotDiff",
    "StaleCache",
    "StateSerializer",
    "StateVCSError",
    "StoreError",
    "TrackedMessages",
    "UnknownRevision",
    "UnsupportedObject",
    "UntrustedPayload",
    "ValueChange",
    "__version__",
    "register_adapter",
    "tracked_messages",
    "transient",
    "transient_clear",
    "transient_keys",
    "unregister_adapter",
]
