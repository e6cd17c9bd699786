"""The S3 store against damage (issue 17, section 5): ``fsck`` checks the bucket's bytes, not a
warm local cache."""

from __future__ import annotations

from typing import Any

import obstore
import obstore.store

from statevcs import Repo
from statevcs.hashing import to_hex
from statevcs.stores.s3 import parse_s3_url


def _bucket(url: str) -> tuple[Any, str]:
    """An obstore client of the URL's bucket (not statevcs's) and the repository's prefix."""
    location = parse_s3_url(url)
    assert location.endpoint_url is not None
    store = obstore.store.S3Store(
        location.bucket,
        endpoint=location.endpoint_url,
        region=location.region,
        client_options={"allow_http": True},
    )
    return store, location.prefix


def test_fsck_reports_objects_damaged_in_the_bucket_even_with_a_warm_cache(s3_url: str) -> None:
    with Repo.init(s3_url) as repo:
        for turn in range(3):
            messages = [{"role": "user", "content": f"turn {n} " + "x" * 300} for n in range(turn)]
            repo.commit({"messages": messages, "turn": turn}, message=f"turn {turn}")
        assert repo.fsck().ok
        # This machine has read (and cached) every object: a warm cache.
        ids = [object_id for object_id, _ in repo.store.iter_objects()]
        assert len(repo.store.get_many(ids)) == len(ids) > 5
    bucket, prefix = _bucket(s3_url)
    for object_id in ids:
        key = f"{prefix}/objects/{to_hex(object_id)}"
        original = bytes(obstore.get(bucket, key).bytes())
        obstore.put(bucket, key, original[:-1] + bytes([original[-1] ^ 1]))
    with Repo.open(s3_url) as warm:
        report = warm.fsck()
        assert not report.ok
        for object_id in ids:
            assert any(to_hex(object_id) in problem for problem in report.problems), to_hex(
                object_id
            )
    with Repo.open(s3_url + "&cache=none") as cold:
        assert set(cold.fsck().problems) >= set(report.problems)
