"""The S3 store against a real SeaweedFS server: the store contract, conditional writes, gc."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from reliability.harness import count, start_worker

from statevcs import Repo
from statevcs.errors import RefConflict, RepositoryError, RepositoryExists, RepositoryNotFound
from statevcs.stores.s3 import S3Location, S3Store, parse_s3_url
from statevcs.testing import StoreContract

S3_GC_COMMITS = count("S3_GC_COMMITS", 30)


class TestS3Store(StoreContract):
    server_clock = True

    @pytest.fixture
    def store(self, s3_url: str) -> Iterator[S3Store]:
        store = S3Store.create(s3_url, config={}, head=None)  # the contract starts empty
        yield store
        store.close()


class TestS3StoreReusingDocumentReads(StoreContract):
    """The contract again, with read-only calls reusing a document read for up to 60 s: every
    handle in the process must still see every write made in the process at once."""

    server_clock = True

    @pytest.fixture
    def store(self, s3_url: str) -> Iterator[S3Store]:
        store = S3Store.create(s3_url + "&doc_ttl_ms=60000", config={}, head=None)
        yield store
        store.close()


# --- the server's conditional writes (the compare-and-swap rests on them) -------------------


def _client(url: str) -> Any:
    return S3Store(parse_s3_url(url))._client


def test_seaweedfs_honours_if_match_and_if_none_match_under_races(s3_url: str) -> None:
    client = _client(s3_url)
    key = parse_s3_url(s3_url).key("race")
    # SeaweedFS makes a loser of a contended conditional write wait up to a second: few rounds.
    for round_number in range(4):
        etag = client.put(key, f"base {round_number}".encode())
        won: list[str] = []
        created: list[int] = []
        barrier = threading.Barrier(4)

        def contend(
            n: int,
            etag: str = etag,
            round_number: int = round_number,
            barrier: threading.Barrier = barrier,
            won: list[str] = won,
            created: list[int] = created,
        ) -> None:
            barrier.wait()
            try:
                client.put(key, f"writer {n}".encode(), mode={"e_tag": etag})
                won.append(f"writer {n}")
            except client.Precondition:
                pass
            if client.create(f"{key}-new-{round_number}", f"{n}".encode()):
                created.append(n)

        threads = [threading.Thread(target=contend, args=(n,)) for n in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(won) == 1 and len(created) == 1
        assert client.get(key)[0] == won[0].encode()
        assert client.get(f"{key}-new-{round_number}")[0] == str(created[0]).encode()
    client.close()


# --- the URL ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        ("s3://", "bucket name is missing"),
        ("s3:///prefix", "bucket name is missing"),
        ("s3://ab/p", "not a valid bucket name"),
        ("s3://Bucket/p", "not a valid bucket name"),
        ("s3://192.168.0.1/p", "not a valid bucket name"),
        ("s3://user:pw@bucket/p", "holds credentials"),
        ("s3://bucket:9000/p", "credentials and ports"),
        ("s3://bucket/a//b", "segment ''"),
        ("s3://bucket/a/../b", "segment '..'"),
        ("s3://bucket/a b", "segment 'a b'"),
        ("s3://bucket/p?endpoint=http://x", "unknown parameter 'endpoint'"),
        ("s3://bucket/p?region=us-east-1&region=eu-west-1", "given twice"),
        ("s3://bucket/p?endpoint_url=ftp://x", "not an http(s)"),
        ("s3://bucket/p?endpoint_url=http://u:p@x", "credentials"),
        ("s3://bucket/p?endpoint_url=http://x:99999", "invalid port"),
        ("s3://bucket/p?region=US_EAST", "not a region"),
        ("s3://bucket/p?cache_mb=-1", "cache_mb"),
        ("s3://bucket/p?cache_mb=", "cache_mb"),
        ("s3://bucket/p?cache=", "cache="),
        ("s3://bucket/p?doc_ttl_ms=-1", "doc_ttl_ms"),
        ("s3://bucket/p?doc_ttl_ms=1.5", "doc_ttl_ms"),
        ("s3://bucket/p?doc_ttl_ms=60001", "doc_ttl_ms"),
        ("s3://bucket/p?doc_ttl_ms=" + "9" * 5000, "doc_ttl_ms"),
        ("s3://bucket/p?cache_mb=" + "9" * 5000, "cache_mb"),
        ("s3://bucket/p#frag", "fragment"),
        ("s3://bucket/p\n", "control character"),
        ("s3://bucket/p?x", "name=value pairs"),
    ],
)
def test_malformed_urls_are_refused_saying_what_is_wrong(url: str, problem: str) -> None:
    with pytest.raises(RepositoryError, match=re.escape(problem)):
        parse_s3_url(url)
    with pytest.raises(RepositoryError, match=re.escape(problem)):
        Repo.open(url)
    with pytest.raises(RepositoryError, match=re.escape(problem)):
        Repo.init(url)


def test_a_url_parses_to_its_parts_and_back() -> None:
    url = "s3://my-bucket/agents/prod?endpoint_url=http://127.0.0.1:8333&region=us-east-1"
    location = parse_s3_url(url)
    assert (location.bucket, location.prefix) == ("my-bucket", "agents/prod")
    assert (location.endpoint_url, location.region) == ("http://127.0.0.1:8333", "us-east-1")
    assert parse_s3_url(location.url) == location
    assert location.doc_ttl_ms is None
    reusing = parse_s3_url(url + "&doc_ttl_ms=250")
    assert reusing.doc_ttl_ms == 250 and reusing.url.endswith("&doc_ttl_ms=250")
    assert parse_s3_url(reusing.url) == reusing
    assert parse_s3_url("s3://my-bucket").prefix == ""
    assert parse_s3_url("s3://my-bucket/a/b/").key("x") == "a/b/x"
    with pytest.raises(TypeError, match="url"):
        parse_s3_url(b"s3://my-bucket")


@settings(max_examples=300)
@given(st.text(max_size=120))
def test_hostile_urls_raise_only_repository_errors(tail: str) -> None:
    for url in (tail, "s3://" + tail, "s3://bucket/" + tail, "s3://bucket/p?" + tail):
        try:
            location = parse_s3_url(url)
        except RepositoryError:
            continue
        assert parse_s3_url(location.url) == location


_SEGMENT = st.text(alphabet="abcXYZ019!_.*'()-", min_size=1, max_size=8).filter(
    lambda s: s not in (".", "..")
)


@given(
    st.from_regex(r"[a-z0-9][a-z0-9-]{1,20}[a-z0-9]", fullmatch=True),
    st.lists(_SEGMENT, max_size=4),
    st.sampled_from([None, "us-east-1", "eu-west-3"]),
    st.sampled_from([None, "http://127.0.0.1:8333", "https://s3.example.com"]),
)
def test_every_valid_url_round_trips(
    bucket: str, segments: list[str], region: str | None, endpoint: str | None
) -> None:
    location = S3Location(bucket, "/".join(segments), endpoint, region)
    assert parse_s3_url(location.url) == location


# --- repositories -------------------------------------------------------------------------------


def _bucket(url: str) -> dict[str, tuple[int, float]]:
    """Every key under the repository's prefix with its size and write time."""
    client = _client(url)
    location = parse_s3_url(url)
    try:
        return {k: (size, when) for k, size, when in client.listing(location.key("")[:-1] or "")}
    finally:
        client.close()


def test_open_where_there_is_no_repository_says_so_and_writes_nothing(s3_url: str) -> None:
    with pytest.raises(RepositoryNotFound, match="not a statevcs repository"):
        Repo.open(s3_url)
    assert _bucket(s3_url) == {}


def test_two_racing_inits_create_one_repository(s3_url: str) -> None:
    outcomes: list[str] = []
    barrier = threading.Barrier(6)

    def init() -> None:
        barrier.wait()
        try:
            Repo.init(s3_url).close()
            outcomes.append("created")
        except RepositoryExists:
            outcomes.append("exists")

    threads = [threading.Thread(target=init) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes) == ["created"] + ["exists"] * 5
    with Repo.open(s3_url) as repo:
        assert repo.default_branch == "main"
        assert repo.url == parse_s3_url(s3_url).url


def test_a_refused_commit_leaves_the_bucket_unchanged(s3_url: str) -> None:
    with Repo.init(s3_url) as repo, Repo.open(s3_url) as other:
        state: dict[str, Any] = {"messages": [], "x": 1}
        repo.commit(state, message="C0")
        theirs: dict[str, Any] = {}
        other.checkout(theirs, "main")
        state["x"] = 2
        repo.commit(state, message="C1")
        before = _bucket(s3_url)
        theirs["x"] = 3
        with pytest.raises(RefConflict):
            other.commit(theirs, message="stale")
        with pytest.raises(TypeError):
            repo.commit(state, message=3)  # type: ignore[arg-type]
        assert _bucket(s3_url) == before


def test_objects_cross_the_network_once_per_machine(s3_url: str) -> None:
    with Repo.init(s3_url) as repo:
        messages = [{"role": "user", "content": f"turn {i}"} for i in range(50)]
        commit = repo.commit({"messages": messages}, message="fifty")
    with Repo.open(s3_url) as cold:
        client = cold.store._client  # type: ignore[attr-defined]
        gets: list[str] = []
        original = client.get

        def counted(key: str, **options: Any) -> Any:
            gets.append(key)
            return original(key, **options)

        client.get = counted
        assert cold.show(commit.id).messages == messages
        assert not [k for k in gets if "/objects/" in k]  # the writer's uploads are cached
    with Repo.open(s3_url + "&cache=none") as uncached:
        client = uncached.store._client  # type: ignore[attr-defined]
        gets.clear()
        original = client.get
        client.get = counted
        assert uncached.show(commit.id).messages == messages
        # From the bucket: the commit, its snapshot, the tree's packed leaves (several
        # messages each, format 2) and the open tail's messages; far fewer than 50 GETs.
        assert 0 < len([k for k in gets if "/objects/" in k]) < 25


def test_gc_deletes_only_unreachable_objects_and_a_dead_collectors_lease_expires(
    s3_url: str,
) -> None:
    with Repo.init(s3_url) as repo:
        repo.commit({"messages": [{"role": "user", "content": "kept"}]}, message="main")
        repo.commit({"messages": [{"role": "user", "content": "dropped"}]}, branch="tmp")
        repo.delete_branch("tmp")
        repo.store.expire_reflogs(repo.store.now() + 1)
        report = repo.gc("0")
        assert report.deleted > 0
        assert repo.fsck().problems == () and repo.fsck().dangling == 0
        store = repo.store
        assert isinstance(store, S3Store)
        # A collector that died holding its lease: writers wait for it to expire, then take it
        # over and move the generation on (caches that may name its deletions are refused).
        doc = store._read()
        data = doc.copy()
        data["sweep"] = {"token": "dead", "until": time.time() + 0.5}
        store._try_write(doc, data)
        generation = doc.generation
        started = time.monotonic()
        repo.commit({"messages": [{"role": "user", "content": "after"}]}, message="after")
        assert time.monotonic() - started >= 0.3
        assert store.generation() == generation + 1
        assert repo.fsck().problems == ()


def test_the_command_line_opens_an_s3_repository(s3_url: str) -> None:
    with Repo.init(s3_url) as repo:
        repo.commit({"messages": [], "x": 1}, message="first on s3")
    done = subprocess.run(
        [sys.executable, "-m", "statevcs", "--repo", s3_url, "log"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    assert "first on s3" in done.stdout
    missing = s3_url.replace("/t/", "/none/")
    done = subprocess.run(
        [sys.executable, "-m", "statevcs", "--repo", missing, "log"],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert done.returncode == 1 and "not a statevcs repository" in done.stderr


# --- many hosts, one history (processes with separate caches) ----------------------------


def test_a_gc_loop_on_another_host_never_leaves_a_ref_to_a_missing_object(
    s3_url: str, tmp_path: Path
) -> None:
    stop = tmp_path / "stop"
    blobs = ["a" * 300, "b" * 300]
    env = {**os.environ, "STATEVCS_CACHE_DIR": str(tmp_path / "gc-cache")}
    with Repo.init(s3_url) as a:
        a.commit({"messages": []}, message="root")
        collector = start_worker("gc-loop", s3_url, stop, stdout=subprocess.PIPE, env=env)
        assert collector.stdout is not None
        assert collector.stdout.readline() == "ready\n"
        try:
            for i in range(S3_GC_COMMITS):
                # The previous commit's content becomes unreachable, the collector deletes it,
                # and the next commit but one reuses exactly that content.
                if "live" in a.branches():
                    a.delete_branch("live")
                state = {"messages": [{"role": "user", "content": f"c{i % 2}"}], "b": blobs[i % 2]}
                commit = a.commit(state, message=f"c {i}", branch="live")
                with Repo.open(s3_url + "&cache=none") as cold:
                    assert cold.show(commit.id).state == {"b": blobs[i % 2]}
        finally:
            stop.touch()
            out = collector.communicate(timeout=120)[0]
        assert collector.returncode == 0
        assert a.fsck().problems == ()
    print(f"\nS3: {S3_GC_COMMITS} commits against a gc loop ({out.strip()})")


# --- document reads: one per operation, a window only when asked for ---------------------------


def _count_document_reads(repo: Repo) -> list[str]:
    """Record each GET of ``statevcs.json`` by ``repo``'s store (the request still goes out)."""
    store = repo.store
    client = store._client  # type: ignore[attr-defined]
    reads: list[str] = []
    original = client.get

    def counted(key: str, **options: Any) -> Any:
        if key.endswith("statevcs.json"):
            reads.append(key)
        return original(key, **options)

    client.get = counted
    return reads


def _commit_from_another_process(url: str, cache: Path, message: str) -> str:
    """Commit on ``main`` from a new process with its own cache (another host); its id."""
    code = (
        "import sys, statevcs\n"
        "with statevcs.Repo.open(sys.argv[1]) as repo:\n"
        "    state = {}\n"
        "    repo.checkout(state, 'main')\n"
        "    state['messages'].append({'role': 'user', 'content': sys.argv[2]})\n"
        "    print(repo.commit(state, message=sys.argv[2]).id)\n"
    )
    env = {**os.environ, "STATEVCS_CACHE_DIR": str(cache)}
    done = subprocess.run(
        [sys.executable, "-c", code, url, message],
        capture_output=True, text=True, check=False, timeout=120, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_read_only_calls_of_one_operation_share_one_document_read(s3_url: str) -> None:
    with Repo.init(s3_url) as repo:
        state: dict[str, Any] = {"messages": []}
        for n in range(12):
            state["messages"].append({"role": "user", "content": f"turn {n}"})
            repo.commit(state, message=f"turn {n}")
        expected = [c.message for c in repo.log("main")]
    with Repo.open(s3_url) as warm:
        warm.checkout({}, "main~10")  # fills this machine's cache
    with Repo.open(s3_url) as fresh:
        reads = _count_document_reads(fresh)
        fresh.checkout({}, "main~10")
        assert len(reads) == 1  # Repo makes a checkout one operation: one document read
        reads.clear()
        fresh.store.refs_state()
        fresh.store.refs_state()
        assert len(reads) == 2  # outside an operation, each read-only call reads afresh
        reads.clear()
        with fresh.store.operation():
            checked_out: dict[str, Any] = {}
            fresh.checkout(checked_out, "main~10")
            assert [c.message for c in fresh.log("main")] == expected
        assert len(reads) == 1
        assert [m["content"] for m in checked_out["messages"]] == ["turn 0", "turn 1"]


def test_an_operation_sees_its_own_writes_and_a_stale_read_only_conflicts(s3_url: str) -> None:
    with Repo.init(s3_url) as ours, Repo.open(s3_url) as theirs:
        first = ours.commit({"messages": []}, message="first")
        with ours.store.operation():
            assert ours.resolve("main") == first.id
            other = theirs.commit({"messages": [], "by": "them"}, message="theirs")
            # One operation reads as of its first read: the other handle's commit came later.
            assert ours.resolve("main") == first.id
            with pytest.raises(RefConflict) as conflict:
                ours.commit({"messages": [], "by": "us"}, message="fresh dict on a stale tip")
            assert conflict.value.actual == other.id  # nothing of theirs is lost
            # The conflict read the document afresh: the operation now sees that version.
            assert ours.resolve("main") == other.id
            mine = ours.commit({"messages": [], "by": "us"}, message="on their tip")
            assert ours.resolve("main") == mine.id  # its own write, at once
        assert theirs.resolve("main") == mine.id
        assert [c.message for c in theirs.log("main")] == ["on their tip", "theirs", "first"]


def test_a_reuse_window_never_hides_a_write_made_in_this_process(
    s3_url: str, tmp_path: Path
) -> None:
    url = s3_url + "&doc_ttl_ms=60000"
    with Repo.init(url) as first, Repo.open(url) as second:
        base = first.commit({"messages": []}, message="base")
        reads = _count_document_reads(second)
        assert second.resolve("main") == base.id  # a write in this process since it last read
        assert second.resolve("main") == base.id
        assert second.resolve("main") == base.id
        assert len(reads) == 1  # read once, reused since
        ours = first.commit({"messages": [], "n": 1}, message="from this process")
        assert second.resolve("main") == ours.id  # another handle here: seen at once
        assert len(reads) == 2

        # Another host's commit may stay unseen for the window, but a write never acts on it.
        theirs = _commit_from_another_process(url, tmp_path / "host-b", "from another host")
        assert second.resolve("main") == ours.id
        with pytest.raises(RefConflict) as conflict:
            second.commit({"messages": [], "n": 2}, message="fresh dict on a stale tip")
        assert conflict.value.actual == theirs
        assert second.resolve("main") == theirs  # the refused write read the document afresh
        with Repo.open(s3_url) as strict:
            assert [c.message for c in strict.log("main")] == [
                "from another host",
                "from this process",
                "base",
            ]
            assert strict.fsck().ok


def test_the_newest_document_read_never_goes_back(s3_url: str) -> None:
    with Repo.init(s3_url) as repo, Repo.open(s3_url) as collector:
        repo.commit({"messages": [{"role": "user", "content": "dropped"}]}, branch="tmp")
        repo.commit({"messages": []}, message="kept")
        store: Any = repo.store
        old = store._doc
        installs = store._installs
        collector.delete_branch("tmp")
        collector.gc("0", expire_reflog="0")
        assert store.generation() == old.generation + 1  # a fresh read saw the collection
        # A response to a read sent before that (a slow request) arrives last: ignored.
        store._install(old, installs, time.monotonic(), 0)
        assert store._doc.generation == old.generation + 1
        assert store._seen_generations()[0] == old.generation + 1
