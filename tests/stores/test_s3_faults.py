"""The S3 store under network faults: a fault-injecting proxy between statevcs and SeaweedFS.

Each test puts one targeted fault on one request (tests/faultproxy.py) and checks the promise
directly against the server, with a handle that has no cache: an acknowledged commit has all
its objects in the bucket, a write that landed is never reported as "nothing was written", and
a retry never writes a commit twice.
"""

from __future__ import annotations

import time
import urllib.parse
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from faultproxy import FaultProxy
from seaweedfs import BUCKET, REGION, SeaweedFS

from statevcs import Repo
from statevcs.errors import InvalidRevision, RepositoryError, StoreError
from statevcs.hashing import hash_bytes
from statevcs.stores.s3 import WRITES_KEPT, S3Store, parse_s3_url
from statevcs.stores.s3_retry import RetryPolicy

DOCUMENT = r"statevcs\.json$"
OBJECTS = r"/objects/"


@pytest.fixture
def proxy(seaweedfs: SeaweedFS) -> Iterator[FaultProxy]:
    with FaultProxy(seaweedfs.endpoint) as running:
        yield running


class Place:
    """One repository prefix, reached through the proxy or directly."""

    def __init__(self, server: SeaweedFS, proxy: FaultProxy, cache: Path) -> None:
        self.prefix = f"t/{uuid.uuid4().hex}"
        self.server = server
        self.proxy = proxy
        self.cache = cache

    def via(self, **params: str) -> str:
        """The URL through the proxy (its own cache folder: another machine)."""
        query = {"endpoint_url": self.proxy.endpoint, "region": REGION, "cache": str(self.cache)}
        return f"s3://{BUCKET}/{self.prefix}?" + urllib.parse.urlencode({**query, **params})

    @property
    def direct(self) -> str:
        """The URL straight to the server, with no cache: what is really in the bucket."""
        return self.server.url(self.prefix) + "&cache=none"


@pytest.fixture
def place(seaweedfs: SeaweedFS, proxy: FaultProxy, tmp_path: Path) -> Place:
    return Place(seaweedfs, proxy, tmp_path / "cache")


def turn(text: str) -> dict[str, str]:
    return {"role": "user", "content": text}


def contents(repo: Repo, rev: str = "main") -> list[str]:
    state: dict[str, Any] = {}
    repo.checkout(state, rev)
    return [m["content"] for m in state["messages"]]


def assert_whole(place: Place) -> None:
    """fsck finds nothing wrong, read straight from the server."""
    with Repo.open(place.direct) as repo:
        report = repo.fsck()
        assert report.problems == (), report.problems


# --- data loss and wrong answers ------------------------------------------------------------


def test_a_409_on_an_object_upload_never_acknowledges_a_commit_without_the_object(
    place: Place, proxy: FaultProxy
) -> None:
    Repo.init(place.direct).close()
    rule = proxy.rule("conflict", method="PUT", key=OBJECTS)
    with Repo.open(place.via()) as repo:
        commit = repo.commit({"messages": [turn("kept")]}, message="one")
    assert rule.fired == 1
    assert_whole(place)
    with Repo.open(place.direct) as cold:
        assert cold.get_commit("main").id == commit.id
        assert contents(cold) == ["kept"]


def test_a_commit_whose_answer_was_lost_is_recognised_after_another_writer_committed(
    place: Place, proxy: FaultProxy
) -> None:
    with Repo.init(place.direct) as setup:
        setup.commit({"messages": [turn("first")]}, message="first")
    other = Repo.open(place.direct)

    def another_host_commits() -> None:
        theirs: dict[str, Any] = {}
        other.checkout(theirs, "main")
        theirs["messages"].append(turn("theirs"))
        other.commit(theirs, message="theirs")

    # The document write lands, the answer is a 500; before obstore's retry (412), another
    # host commits on top of it.
    proxy.rule("error_after", method="PUT", key=DOCUMENT, then=another_host_commits)
    with Repo.open(place.via()) as repo:
        state: dict[str, Any] = {}
        repo.checkout(state, "main")
        state["messages"].append(turn("ours"))
        ours = repo.commit(state, message="ours")
    other.close()
    with Repo.open(place.direct) as cold:
        assert contents(cold) == ["first", "ours", "theirs"]
        assert [c.message for c in cold.log("main")] == ["theirs", "ours", "first"]
        assert cold.get_commit("main~1").id == ours.id
    assert_whole(place)


def test_init_recognises_its_own_repository_when_the_answer_was_lost(
    place: Place, proxy: FaultProxy
) -> None:
    proxy.rule("error_after", method="PUT", key=DOCUMENT)
    with Repo.init(place.via()) as repo:
        repo.commit({"messages": [turn("first")]}, message="first")
    with Repo.open(place.direct) as cold:
        assert contents(cold) == ["first"]


# --- safe retries ---------------------------------------------------------------------------

FAST = {"backoff_ms": "5", "max_backoff_ms": "50"}
"""Short waits between retries, so the tests run fast (the defaults are for real servers)."""


def commit_once(place: Place, text: str, **params: str) -> str:
    """Commit one message on ``main`` through the proxy; return the commit id."""
    with Repo.open(place.via(**{**FAST, **params})) as repo:
        state: dict[str, Any] = {}
        if repo.branches():
            repo.checkout(state, "main")
        state.setdefault("messages", []).append(turn(text))
        return repo.commit(state, message=text).id


def one_fault_on_a_write(place: Place, proxy: FaultProxy, fault: str, key: str) -> None:
    """Commit through ``fault`` on the first PUT of ``key``: once, and whole."""
    with Repo.init(place.direct) as setup:
        setup.commit({"messages": [turn("first")]}, message="first")
    rule = proxy.rule(fault, method="PUT", key=key)
    commit_id = commit_once(place, "second")
    assert rule.fired == 1
    with Repo.open(place.direct) as cold:
        assert cold.get_commit("main").id == commit_id
        assert contents(cold) == ["first", "second"]
        assert [c.message for c in cold.log("main")] == ["second", "first"]
    assert_whole(place)


def test_an_object_key_holding_other_bytes_is_repaired_only_by_the_right_bytes(
    place: Place,
) -> None:
    store = S3Store.create(place.direct, config={}, head=None)
    try:
        data = b"the bytes this id names"
        object_id = hash_bytes(data)
        key = store._object_key(object_id)
        store._client.put(key, b"damaged")
        store.put_many({object_id: b"not the bytes of this id either"})
        assert store._client.get(key)[0] == b"damaged"  # unverifiable bytes replace nothing
        store.put_many({object_id: data})
        assert store._client.get(key)[0] == data
    finally:
        store.close()


@pytest.mark.parametrize("fault", ["error_after", "reset_before"])
def test_a_lost_answer_is_settled_after_more_writes_than_the_document_lists(
    place: Place, proxy: FaultProxy, fault: str
) -> None:
    with Repo.init(place.direct) as setup:
        setup.commit({"messages": [turn("first")]}, message="first")
    other = Repo.open(place.direct)

    def many_writes_elsewhere() -> None:
        for i in range(WRITES_KEPT + 6):  # config writes: main does not move
            other.config.set("test.counter", str(i))

    # Landed or not, the write is older than the document's list of writes when it is settled:
    # the branch's reflog tells (the entry is there, or an older one is and this one is not).
    proxy.rule(fault, method="PUT", key=DOCUMENT, then=many_writes_elsewhere)
    commit_id = commit_once(place, "second")
    other.close()
    with Repo.open(place.direct) as cold:
        assert cold.get_commit("main").id == commit_id
        assert contents(cold) == ["first", "second"]
        assert [c.message for c in cold.log("main")] == ["second", "first"]
    assert_whole(place)


@pytest.mark.parametrize(
    ("fault", "key"),
    [
        ("error_after", OBJECTS),
        ("slowdown", OBJECTS),
        ("slowdown", DOCUMENT),
        ("conflict", DOCUMENT),
    ],
)
def test_a_server_error_on_a_write_is_retried(
    place: Place, proxy: FaultProxy, fault: str, key: str
) -> None:
    one_fault_on_a_write(place, proxy, fault, key)


@pytest.mark.parametrize(
    ("fault", "key"),
    [
        ("reset_before", OBJECTS),
        ("reset_after", OBJECTS),
        ("reset_before", DOCUMENT),
        ("reset_after", DOCUMENT),
    ],
)
def test_a_reset_write_is_retried_and_counts_once(
    place: Place, proxy: FaultProxy, fault: str, key: str
) -> None:
    one_fault_on_a_write(place, proxy, fault, key)


def test_a_stalled_document_write_times_out_and_is_retried(place: Place, proxy: FaultProxy) -> None:
    with Repo.init(place.direct) as setup:
        setup.commit({"messages": [turn("first")]}, message="first")
    proxy.rule("stall", method="PUT", key=DOCUMENT)
    started = time.monotonic()
    commit_id = commit_once(place, "second", timeout_ms="700")
    assert time.monotonic() - started < 10
    with Repo.open(place.direct) as cold:
        assert cold.get_commit("main").id == commit_id
        assert contents(cold) == ["first", "second"]


def test_init_recognises_its_own_repository_after_a_reset(place: Place, proxy: FaultProxy) -> None:
    proxy.rule("reset_after", method="PUT", key=DOCUMENT)
    Repo.init(place.via(**FAST)).close()
    with Repo.open(place.direct) as cold:
        assert cold.default_branch == "main"


# --- honest errors --------------------------------------------------------------------------


def test_a_write_that_arrives_after_its_timeout_is_never_committed_twice(
    place: Place, proxy: FaultProxy
) -> None:
    with Repo.init(place.direct) as setup:
        setup.commit({"messages": [turn("first")]}, message="first")
    # Both copies of the document write reach the server a second late, long after the
    # client gave up on them: the documented check must still see to exactly one commit.
    proxy.rule("delay", method="PUT", key=DOCUMENT, times=2, delay=1.0)
    with Repo.open(place.via(**FAST, retries="1", timeout_ms="300")) as repo:
        state: dict[str, Any] = {}
        repo.checkout(state, "main")
        state["messages"].append(turn("second"))
        try:
            landed = repo.commit(state, message="second").id
        except StoreError as error:
            assert error.landed is None and error.commit_id is not None
            if repo.has_landed(error.commit_id, branch="main"):
                landed = error.commit_id
            else:
                landed = repo.commit(state, message="second").id
    time.sleep(1.5)  # every delayed copy has arrived by now
    with Repo.open(place.direct) as cold:
        assert contents(cold) == ["first", "second"]
        assert cold.get_commit("main").id == landed
    assert_whole(place)


@pytest.mark.parametrize("fault", ["reset_before", "error_before", "stall"])
def test_a_commit_that_cannot_reach_the_server_says_it_may_have_landed_and_how_to_ask(
    place: Place, proxy: FaultProxy, fault: str
) -> None:
    with Repo.init(place.direct) as setup:
        setup.commit({"messages": [turn("first")]}, message="first")
    proxy.rule(fault, method="PUT", key=DOCUMENT, times=1000)
    with Repo.open(place.via(**FAST, retries="2", timeout_ms="300")) as repo:
        state: dict[str, Any] = {}
        repo.checkout(state, "main")
        state["messages"].append(turn("second"))
        with pytest.raises(StoreError) as caught:
            repo.commit(state, message="second")
        error = caught.value
        assert error.landed is None
        assert error.commit_id is not None and len(error.commit_id) == 64
        text = str(error)
        assert error.commit_id in text and "has_landed" in text
        assert "credentials" not in text
        proxy.clear()
        assert repo.has_landed(error.commit_id, branch="main") is False
        retried = repo.commit(state, message="second")  # nothing landed: commit again
    with Repo.open(place.direct) as cold:
        assert contents(cold) == ["first", "second"]
        assert cold.get_commit("main").id == retried.id
    assert_whole(place)


def test_a_commit_whose_objects_cannot_be_stored_says_nothing_was_written(
    place: Place, proxy: FaultProxy
) -> None:
    with Repo.init(place.direct) as setup:
        setup.commit({"messages": [turn("first")]}, message="first")
    proxy.rule("reset_before", method="PUT", key=OBJECTS, times=1000)
    with Repo.open(place.via(**FAST, retries="2")) as repo:
        state: dict[str, Any] = {}
        repo.checkout(state, "main")
        state["messages"].append(turn("second"))
        with pytest.raises(StoreError) as caught:
            repo.commit(state, message="second")
        assert caught.value.landed is False
        assert "did not land" in str(caught.value)
        assert "credentials" not in str(caught.value)
    with Repo.open(place.direct) as cold:
        assert contents(cold) == ["first"]


def test_has_landed_finds_a_commit_on_its_branch_only(repo: Repo) -> None:
    first = repo.commit({"messages": [turn("one")]}, message="one")
    second = repo.commit({"messages": [turn("one"), turn("two")]}, message="two")
    assert repo.has_landed(first.id) and repo.has_landed(second.id)  # HEAD's branch: main
    aside = repo.commit({"messages": [turn("aside")]}, message="aside", branch="aside")
    assert not repo.has_landed(aside.id, branch="main")
    assert repo.has_landed(aside.id, branch="aside")
    assert not repo.has_landed("0" * 64, branch="main")
    repo.reset("main", first.id)  # moved away since: it still landed
    assert repo.has_landed(second.id, branch="main")
    with pytest.raises(TypeError, match="commit_id"):
        repo.has_landed(3)  # type: ignore[arg-type]
    with pytest.raises(InvalidRevision, match="64"):
        repo.has_landed(first.id[:12])


# --- the options ----------------------------------------------------------------------------


def test_retry_options_parse_round_trip_and_refuse_bad_values() -> None:
    url = (
        "s3://bucket/p?retries=3&backoff_ms=10&max_backoff_ms=100&timeout_ms=2000"
        "&connect_timeout_ms=500"
    )
    location = parse_s3_url(url)
    assert location.policy == RetryPolicy(3, 10, 100, 2000, 500)
    assert parse_s3_url(location.url) == location
    assert parse_s3_url("s3://bucket/p").policy == RetryPolicy()
    assert parse_s3_url("s3://bucket/p?retries=0").policy.retries == 0
    for bad in (
        "retries=-1",
        "retries=101",
        "timeout_ms=5",
        "backoff_ms=x",
        "timeout_ms=1e3",
        "connect_timeout_ms=",
        "max_backoff_ms=0",
        "retries=" + "9" * 5000,
    ):
        name = bad.split("=")[0]
        with pytest.raises(RepositoryError, match=name):
            parse_s3_url(f"s3://bucket/p?{bad}")


def test_the_waits_between_retries_grow_stay_capped_and_never_vanish() -> None:
    policy = RetryPolicy(retries=8, backoff_ms=10, max_backoff_ms=200)
    for _ in range(50):
        waits = list(policy.waits())
        assert len(waits) == 8
        ceilings = [min(0.01 * 2**i, 0.2) for i in range(8)]
        assert all(c / 2 <= w <= c for w, c in zip(waits, ceilings, strict=True))
    assert list(RetryPolicy(retries=0).waits()) == []


def test_a_stalled_read_is_bounded_by_the_timeout(place: Place, proxy: FaultProxy) -> None:
    with Repo.init(place.direct) as setup:
        setup.commit({"messages": [turn("first")]}, message="first")
    proxy.rule("stall", method="GET", key=DOCUMENT, times=1000)
    started = time.monotonic()
    with pytest.raises(StoreError, match="timed out") as caught:
        Repo.open(place.via(**FAST, retries="1", timeout_ms="300"))
    assert time.monotonic() - started < 5
    assert "credentials" not in str(caught.value)
