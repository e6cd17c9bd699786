"""The in-memory store passes the store contract."""

from __future__ import annotations

import pytest

from statevcs.stores.memory import MemoryStore
from statevcs.testing import StoreContract


class TestMemoryStore(StoreContract):
    @pytest.fixture
    def store(self) -> MemoryStore:
        return MemoryStore()
