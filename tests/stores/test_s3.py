"""The S3 store against a real SeaweedFS server: the store contract, conditional writes, gc."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from statevcs.stores.s3 import S3Store
from statevcs.testing import StoreContract


class TestS3Store(StoreContract):
    server_clock = True

    @pytest.fixture
    def store(self, s3_url: str) -> Iterator[S3Store]:
        store = S3Store.create(s3_url, config={}, head=None)  # the contract starts empty
        yield store
        store.close()
