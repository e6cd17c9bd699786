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
from .diff import MessageChange, MessagesDiff, SnapshotDiff, ValueChange
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
