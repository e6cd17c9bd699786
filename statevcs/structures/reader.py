"""The read interface structures need: load decoded objects by id."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from ..hashing import ObjectId
from ..objects import StoredObject


class ObjectReader(Protocol):
    """Loads decoded, hash-verified objects; raises ``MissingObject`` for absent ids."""

    def load(self, object_id: ObjectId) -> StoredObject:
        """Return the decoded object named ``object_id``."""
        ...

    def load_many(self, ids: Iterable[ObjectId]) -> dict[ObjectId, StoredObject]:
        """Return every named object, keyed by id."""
        ...

    def remember(self, object_id: ObjectId, obj: StoredObject) -> None:
        """Cache a freshly built object so the next commit need not read it back."""
        ...
