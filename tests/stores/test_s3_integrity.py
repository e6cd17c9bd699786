"""The S3 store against damage and bloat (issue 17, section 5): ``fsck`` checks the bucket's
bytes, not a warm local cache, and long commit messages do not grow the repository document
(reflog notes are cut to the same bounded note on every store)."""

from __future__ import annotations

from typing import Any

import obstore
import obstore.store

from statevcs import Repo
from statevcs.hashing import to_hex
from statevcs.stores.base import REFLOG_NOTE_LIMIT
from statevcs.stores.s3 import DOCUMENT, parse_s3_url


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


def test_long_commit_messages_keep_the_repository_document_small(s3_url: str) -> None:
    subject = "é" * 300 + "x" * 999_000  # a 1 MB first line (a message holds at most 1 MiB)
    with Repo.init(s3_url) as repo:
        for turn in range(30):
            commit = repo.commit({"turn": turn}, message=f"{turn} {subject}\n\nbody")
        assert repo.get_commit(commit.id).message == f"29 {subject}\n\nbody"  # all of it
        notes = [entry.message for entry in repo.reflog("main")]
    bucket, prefix = _bucket(s3_url)
    document = bytes(obstore.get(bucket, f"{prefix}/{DOCUMENT}").bytes())
    # 30 commits, each logged for main and HEAD, with bounded notes: tens of kilobytes.
    assert len(document) < 100_000, len(document)
    assert all(len(note) <= REFLOG_NOTE_LIMIT for note in notes) and notes[0].endswith("…")


def test_reflog_shows_the_same_cut_note_on_every_store(repo: Repo) -> None:
    subject = "first line " + "ü" * 5000
    commit = repo.commit({"n": 1}, message=subject + "\nsecond line")
    cut = ("commit (initial): " + subject)[: REFLOG_NOTE_LIMIT - 1] + "…"
    assert [e.message for e in repo.reflog()] == [cut]
    assert [e.message for e in repo.reflog("main")] == [cut]
    assert repo.get_commit(commit.id).message == subject + "\nsecond line"
