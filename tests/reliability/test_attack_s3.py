"""Attacks on the S3 store against a real SeaweedFS server: many processes, gc, kills, damage.

The promise under attack: what was committed comes back exactly, nothing is silently lost or
overwritten, every failure is a ``StateVCSError`` (or a ``TypeError`` naming the argument),
bad input leaves the bucket unchanged. Tests marked ``xfail(strict=True)`` are defects found
here; the fix removes the marker.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.parse
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import obstore
import obstore.store
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from seaweedfs import BUCKET, REGION, SECRET_KEY, SeaweedFS

import statevcs
from statevcs import Repo
from statevcs.cli import cli
from statevcs.stores.s3 import _Cache

from .attack_s3_workers import state_digest

WORKERS = Path(__file__).with_name("attack_s3_workers.py")


# --- helpers ------------------------------------------------------------------------------


@pytest.fixture
def bucket(seaweedfs: SeaweedFS) -> Any:
    """Direct access to the test bucket (obstore, not statevcs): to tamper with and inspect."""
    return obstore.store.S3Store(
        BUCKET, endpoint=seaweedfs.endpoint, region=REGION, client_options={"allow_http": True}
    )


def prefix_of(url: str) -> str:
    """The key prefix of an ``s3://`` repository URL."""
    return urllib.parse.urlsplit(url).path.strip("/")


def with_params(url: str, **params: str) -> str:
    """``url`` with extra query parameters (``cache=...``: another machine's cache)."""
    return url + "&" + urllib.parse.urlencode(params)


def keys(bucket: Any, prefix: str) -> dict[str, bytes]:
    """Every key under ``prefix`` with its bytes."""
    found = [m["path"] for chunk in obstore.list(bucket, prefix + "/") for m in chunk]
    return {k: bytes(obstore.get(bucket, k).bytes()) for k in found}


def document(bucket: Any, prefix: str) -> dict[str, Any]:
    return json.loads(bytes(obstore.get(bucket, f"{prefix}/statevcs.json").bytes()))  # type: ignore[no-any-return]


def start(*args: object) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKERS), *map(str, args)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def finish(child: subprocess.Popen[str], timeout: float = 120) -> list[str]:
    out, err = child.communicate(timeout=timeout)
    assert child.returncode == 0, f"worker exited {child.returncode}:\n{out[-3000:]}\n{err[-3000:]}"
    return out.splitlines()


def restore_everything(url: str) -> None:
    """A cold handle (no local cache) restores every commit of every ref and reflog; fsck clean."""
    with Repo.open(with_params(url, cache="none")) as repo:
        refs = ["HEAD", *(f"refs/heads/{b}" for b in repo.branches())]
        commits = {c.id for c in repo.log_all()}
        for ref in refs:
            commits.update(e.new for e in repo.reflog(ref) if e.new is not None)
        for commit_id in commits:
            repo.checkout({}, commit_id)
        report = repo.fsck()
        assert report.problems == (), report.problems


# --- many processes on one repository -----------------------------------------------------


@pytest.mark.slow
def test_processes_on_one_branch_keep_every_message_exactly_once(
    s3_url: str, tmp_path: Path
) -> None:
    writers, each = 4, 10
    with Repo.init(s3_url) as repo:
        repo.commit({"messages": [{"role": "user", "content": "seed"}]}, message="seed")
    go = tmp_path / "go"
    children = [start("writer", s3_url, "main", f"w{n}", each, go) for n in range(writers)]
    go.touch()
    acked = [line.split()[1] for c in children for line in finish(c) if line.startswith("ack")]

    with Repo.open(with_params(s3_url, cache="none")) as repo:
        state: dict[str, Any] = {}
        repo.checkout(state, "main")
        contents = [m["content"] for m in state["messages"]]
        assert contents[0] == "seed"
        for n in range(writers):
            mine = [c for c in contents if c.startswith(f"w{n} ")]
            assert mine == [f"w{n} {i}" for i in range(each)], mine
        assert len(contents) == 1 + writers * each
        history = list(repo.log("main"))
        assert len(history) == 1 + writers * each
        assert all(len(c.parents) <= 1 for c in history)
        assert set(acked) <= {c.id for c in history}
        assert len(repo.reflog("main")) == 1 + writers * each
    restore_everything(s3_url)


@pytest.mark.slow
def test_processes_on_separate_branches_end_with_exactly_their_own_messages(
    s3_url: str, tmp_path: Path
) -> None:
    writers, each = 4, 8
    with Repo.init(s3_url) as repo:
        base = {"messages": [{"role": "user", "content": f"shared {i} " * 50} for i in range(20)]}
        repo.commit(base, message="base")
        for n in range(writers):
            repo.branch(f"b{n}", "main")
    go = tmp_path / "go"
    children = [start("writer", s3_url, f"b{n}", f"w{n}", each, go) for n in range(writers)]
    go.touch()
    for child in children:
        finish(child)
    with Repo.open(with_params(s3_url, cache="none")) as repo:
        for n in range(writers):
            state: dict[str, Any] = {}
            repo.checkout(state, f"b{n}")
            assert state["messages"][:20] == base["messages"]
            assert [m["content"] for m in state["messages"][20:]] == [
                f"w{n} {i}" for i in range(each)
            ]
            assert len(repo.reflog(f"refs/heads/b{n}")) == 1 + each
    restore_everything(s3_url)


@pytest.mark.slow
def test_gc_looping_while_processes_commit_leaves_every_commit_restorable(
    s3_url: str, tmp_path: Path
) -> None:
    with Repo.init(s3_url) as repo:
        repo.commit({"messages": []}, message="seed")
    go, stop = tmp_path / "go", tmp_path / "stop"
    collector = start("gc-loop", s3_url, stop)
    assert collector.stdout is not None
    assert collector.stdout.readline() == "ready\n"
    writers = [start("writer", s3_url, "main", f"w{n}", 12, go) for n in range(2)]
    junk = start("churn", s3_url, 15, go)
    go.touch()
    for child in [*writers, junk]:
        finish(child)
    stop.touch()
    sweeps = finish(collector)[-1]
    assert int(sweeps.split()[1]) > 0
    with Repo.open(with_params(s3_url, cache="none")) as repo:
        state: dict[str, Any] = {}
        repo.checkout(state, "main")
        for n in range(2):
            assert [
                m["content"] for m in state["messages"] if m["content"].startswith(f"w{n}")
            ] == [f"w{n} {i}" for i in range(12)]
    restore_everything(s3_url)


def test_long_lived_handle_commits_after_another_machine_swept_its_objects(
    s3_url: str, tmp_path: Path
) -> None:
    machine_a = with_params(s3_url, cache=str(tmp_path / "a"))
    machine_b = with_params(s3_url, cache=str(tmp_path / "b"))
    content = {"messages": [{"role": "user", "content": f"turn {i} " * 40} for i in range(30)]}
    with Repo.init(machine_a) as setup:
        setup.commit({"messages": []}, message="root")
    handle = Repo.open(machine_a)
    try:
        state = json.loads(json.dumps(content))
        handle.commit(state, message="doomed", branch="tmp")
        handle.checkout(state, "tmp")  # every object now "known stored" to this handle
        with Repo.open(machine_b) as other:
            other.delete_branch("tmp")
            time.sleep(1.1)  # S3 LastModified has whole seconds
            assert other.gc("0s", expire_reflog="0s").deleted > 0
        again = json.loads(json.dumps(content))
        handle.commit(again, message="again", branch="again")
        state["messages"].append({"role": "user", "content": "more"})
        handle.commit(state, message="more", branch="again2")
    finally:
        handle.close()
    with Repo.open(with_params(s3_url, cache="none")) as cold:
        restored: dict[str, Any] = {}
        cold.checkout(restored, "again")
        assert restored == content
    restore_everything(s3_url)


def test_racing_inits_create_exactly_one_repository(s3_url: str, tmp_path: Path) -> None:
    go = tmp_path / "go"
    children = [start("init", s3_url, go) for _ in range(5)]
    time.sleep(0.5)
    go.touch()
    outcomes = [finish(c)[-1] for c in children]
    created = [o for o in outcomes if o.startswith("created")]
    assert len(created) == 1, outcomes
    assert sorted(o for o in outcomes if not o.startswith("created")) == ["RepositoryExists"] * 4
    with Repo.open(s3_url) as repo:
        assert [c.id for c in repo.log("main")] == [created[0].split()[1]]
    restore_everything(s3_url)


def _run_until_killed(url: str, seed: str, delay: float) -> list[tuple[str, str]]:
    child = start("commit-loop", url, seed)
    assert child.stdout is not None
    assert child.stdout.readline() == "ready\n"
    time.sleep(delay)
    child.send_signal(signal.SIGKILL)
    rest, _ = child.communicate(timeout=30)
    assert child.returncode == -signal.SIGKILL
    return [(line.split()[0], line.split()[1]) for line in rest.split("\n")[:-1]]


@pytest.mark.slow
@pytest.mark.skipif(os.name != "posix", reason="SIGKILL needs a POSIX system")
def test_sigkill_mid_commit_loses_no_acknowledged_commit_and_survivors_go_on(
    s3_url: str, tmp_path: Path
) -> None:
    with Repo.init(s3_url) as repo:
        repo.commit({"messages": []}, message="seed")
    go = tmp_path / "go"
    survivor = start("writer", s3_url, "main", "survivor", 15, go)
    go.touch()
    acknowledged: list[tuple[str, str]] = []
    for kill in range(5):
        acknowledged += _run_until_killed(s3_url, f"k{kill}", 0.05 + 0.07 * kill)
    finish(survivor)
    assert acknowledged
    with Repo.open(with_params(s3_url, cache="none")) as repo:
        for commit_id, expected in acknowledged:
            snap = repo.show(commit_id)
            assert state_digest({"messages": snap.messages, **snap.state}) == expected
        history = {c.id for c in repo.log("main")}
        assert {c for c, _ in acknowledged} <= history
        state: dict[str, Any] = {}
        repo.checkout(state, "main")
        survivors = [m["content"] for m in state["messages"] if m["content"].startswith("surv")]
        assert survivors == [f"survivor {i}" for i in range(15)]
        assert repo.fsck().problems == ()
        time.sleep(1.1)
        repo.gc("0s")
        after = repo.fsck()
        assert after.problems == () and after.dangling == 0
    restore_everything(s3_url)


# --- damaged or foreign repository documents ----------------------------------------------


def _committed(url: str) -> None:
    with Repo.init(url) as repo:
        state: dict[str, Any] = {"messages": [{"role": "user", "content": "hi"}]}
        repo.commit(state, message="one")
        state["messages"].append({"role": "assistant", "content": "hello"})
        repo.commit(state, message="two")


def _use(url: str) -> None:
    """Everything a reader and a writer would do first; must fail only with StateVCSError."""
    with Repo.open(url) as repo:
        state: dict[str, Any] = {}
        repo.checkout(state, "main")
        repo.reflog("main")
        list(repo.log("main"))
        state["messages"].append({"role": "user", "content": "three"})
        repo.commit(state, message="three")


def _damage(doc: dict[str, Any], how: str) -> bytes | None:
    main_log = doc["logs"]["refs/heads/main"]
    if how == "format 2":
        doc["statevcs"] = 2
    elif how == "format true":
        doc["statevcs"] = True
    elif how == "huge serial":
        doc["generation"] = 10**30
    elif how == "serial as text":
        doc["refs_serial"] = "1"
    elif how == "refs not an object":
        doc["refs"] = ["refs/heads/main"]
    elif how == "ref holds a number":
        doc["refs"]["refs/heads/main"] = 5
    elif how == "ref to a missing object":
        doc["refs"]["refs/heads/main"] = "ab" * 32
    elif how == "reflog chunk missing":
        main_log["chunks"].append("cd" * 32)
    elif how == "reflog is a list":
        doc["logs"]["refs/heads/main"] = []
    elif how == "config value a number":
        doc["config"]["core.format"] = 7
    elif how == "core.format 99":
        doc["config"]["core.format"] = "99"
    elif how == "lease not a lease":
        doc["sweep"] = "held"
    elif how == "huge reflog timestamp":
        main_log["recent"][0][2] = 10**400
    elif how == "NaN reflog timestamp":
        main_log["recent"][0][2] = float("nan")
    elif how == "huge lease end":
        doc["sweep"] = {"token": "t", "until": 10**400}
    elif how == "deeply nested":
        body = json.dumps(doc).encode()
        return body[:-1] + b',"x":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    elif how == "truncated":
        return json.dumps(doc).encode()[:60]
    elif how == "not JSON":
        return b"\xff\xfe\x00garbage"
    elif how == "JSON list":
        return b"[1, 2, 3]"
    else:  # pragma: no cover
        raise AssertionError(how)
    return None


@pytest.mark.parametrize(
    "how",
    [
        "format 2",
        "format true",
        "serial as text",
        "huge serial",
        "refs not an object",
        "ref holds a number",
        "ref to a missing object",
        "reflog chunk missing",
        "reflog is a list",
        "config value a number",
        "core.format 99",
        "lease not a lease",
        "truncated",
        "not JSON",
        "JSON list",
        "huge reflog timestamp",
        "NaN reflog timestamp",
        "huge lease end",
        "deeply nested",
    ],
)
def test_damaged_document_fails_with_a_statevcs_error_and_is_left_alone(
    s3_url: str, bucket: Any, how: str
) -> None:
    _committed(s3_url)
    prefix = prefix_of(s3_url)
    doc = document(bucket, prefix)
    body = _damage(doc, how)
    if body is None:
        body = json.dumps(doc).encode()
    obstore.put(bucket, f"{prefix}/statevcs.json", body)
    before = keys(bucket, prefix)
    with pytest.raises(statevcs.StateVCSError):
        _use(with_params(s3_url, cache="none"))
    assert keys(bucket, prefix) == before


def test_open_on_an_empty_prefix_or_foreign_keys_is_refused_and_writes_nothing(
    seaweedfs: SeaweedFS, bucket: Any
) -> None:
    empty = seaweedfs.url(f"t/{uuid.uuid4().hex}")
    with pytest.raises(statevcs.RepositoryNotFound):
        Repo.open(empty)
    assert keys(bucket, prefix_of(empty)) == {}
    foreign = seaweedfs.url(f"t/{uuid.uuid4().hex}")
    obstore.put(bucket, f"{prefix_of(foreign)}/statevcs.json", b'{"hello": "world"}')
    obstore.put(bucket, f"{prefix_of(foreign)}/objects/zz", b"junk")
    before = keys(bucket, prefix_of(foreign))
    with pytest.raises(statevcs.StateVCSError):
        Repo.open(foreign)
    with pytest.raises(statevcs.RepositoryExists):
        Repo.init(foreign)
    assert keys(bucket, prefix_of(foreign)) == before


def test_junk_objects_under_a_new_repository_are_reported_and_never_read_as_content(
    s3_url: str, bucket: Any
) -> None:
    prefix = prefix_of(s3_url)
    obstore.put(bucket, f"{prefix}/objects/not-an-id", b"junk")
    obstore.put(bucket, f"{prefix}/objects/{'ab' * 32}", b"junk")
    with Repo.init(s3_url) as repo:
        state: dict[str, Any] = {"messages": [{"role": "user", "content": "real"}]}
        repo.commit(state, message="real")
        report = repo.fsck()
        assert any("ab" * 32 in p for p in report.problems)
        with pytest.raises(statevcs.StateVCSError):
            repo.show("abababab")
        restored: dict[str, Any] = {}
        repo.checkout(restored, "main")
        assert restored == state


def test_bad_state_leaves_the_bucket_unchanged(s3_url: str, bucket: Any) -> None:
    _committed(s3_url)
    before = keys(bucket, prefix_of(s3_url))
    with Repo.open(s3_url) as repo:
        state: dict[str, Any] = {}
        repo.checkout(state, "main")
        state["messages"].append({"role": "user", "content": "ok"})
        state["bad"] = object()
        with pytest.raises((statevcs.StateVCSError, TypeError)):
            repo.commit(state, message="bad")
    assert keys(bucket, prefix_of(s3_url)) == before


# --- tampered objects and local caches ----------------------------------------------------


def _tamper_all_objects(bucket: Any, prefix: str) -> dict[str, bytes]:
    saved = {k: v for k, v in keys(bucket, prefix).items() if "/objects/" in k}
    for key, data in saved.items():
        obstore.put(bucket, key, data[:-1] + bytes([data[-1] ^ 1]))
    return saved


@pytest.mark.parametrize("cache", ["none", "fresh"])
def test_tampered_object_raises_corrupt_object_never_wrong_content(
    s3_url: str, bucket: Any, tmp_path: Path, cache: str
) -> None:
    _committed(s3_url)
    _tamper_all_objects(bucket, prefix_of(s3_url))
    url = with_params(s3_url, cache="none" if cache == "none" else str(tmp_path / "cold"))
    with Repo.open(url) as repo:
        with pytest.raises(statevcs.CorruptObject):
            repo.checkout({}, "main")
        with pytest.raises(statevcs.CorruptObject):
            repo.show("main")
        assert repo.fsck().problems


def test_object_repaired_in_the_bucket_reads_again_on_a_machine_that_saw_it_damaged(
    s3_url: str, bucket: Any, tmp_path: Path
) -> None:
    _committed(s3_url)
    saved = _tamper_all_objects(bucket, prefix_of(s3_url))
    machine = with_params(s3_url, cache=str(tmp_path / "machine"))
    with Repo.open(machine) as repo, pytest.raises(statevcs.CorruptObject):
        repo.checkout({}, "main")
    for key, data in saved.items():  # restored from a backup, as the error message says
        obstore.put(bucket, key, data)
    with Repo.open(machine) as repo:
        state: dict[str, Any] = {}
        repo.checkout(state, "main")
        assert [m["content"] for m in state["messages"]] == ["hi", "hello"]
        assert repo.fsck().problems == ()


def test_fsck_reports_objects_missing_from_the_bucket_even_with_a_warm_cache(
    s3_url: str, bucket: Any, tmp_path: Path
) -> None:
    machine = with_params(s3_url, cache=str(tmp_path / "machine"))
    _committed(machine)
    prefix = prefix_of(s3_url)
    obstore.delete(bucket, [k for k in keys(bucket, prefix) if "/objects/" in k])
    with Repo.open(machine) as repo:
        assert repo.fsck().problems != ()


def _collected_on_machine_b(s3_url: str, tmp_path: Path) -> tuple[Repo, bytes, bytes]:
    """Machine A commits on ``tmp`` (its cache holds the objects); machine B deletes ``tmp``
    and collects them. Returns A's still-open handle, the commit id and its snapshot id."""
    machine_a = with_params(s3_url, cache=str(tmp_path / "a"))
    with Repo.init(machine_a) as setup:
        setup.commit({"messages": []}, message="root")
    handle = Repo.open(machine_a)
    doomed = {"messages": [{"role": "user", "content": "doomed " * 30}]}
    commit = handle.commit(doomed, message="doomed", branch="tmp")
    with Repo.open(with_params(s3_url, cache=str(tmp_path / "b"))) as other:
        other.delete_branch("tmp")
        time.sleep(1.1)  # S3 LastModified has whole seconds
        assert other.gc("0s", expire_reflog="0s").deleted > 0
    return handle, bytes.fromhex(commit.id), bytes.fromhex(commit.snapshot_id)


def test_ref_move_to_a_commit_another_machine_collected_raises_missing_object(
    s3_url: str, tmp_path: Path
) -> None:
    handle, commit_id, _ = _collected_on_machine_b(s3_url, tmp_path)
    try:
        with pytest.raises(statevcs.MissingObject):
            handle.refs.move("refs/heads/revived", commit_id, None, "revive")
    finally:
        handle.close()
    restore_everything(s3_url)


def test_commit_on_a_parent_another_machine_collected_is_refused(
    s3_url: str, tmp_path: Path
) -> None:
    handle, commit_id, snapshot_id = _collected_on_machine_b(s3_url, tmp_path)
    handle.close()
    with Repo.open(with_params(s3_url, cache=str(tmp_path / "a"))) as fresh:
        assert fresh.objects.missing_below(commit_id) != []
        with pytest.raises(statevcs.MissingObject):
            new = fresh.objects.write_commit(
                snapshot_id,
                [commit_id],
                message="on top",
                author="a",
                timestamp=datetime.now(UTC),
            )
            fresh.refs.set("refs/heads/on-top", new)
    restore_everything(s3_url)


def test_new_repository_at_a_deleted_ones_prefix_does_not_trust_the_old_cache(
    s3_url: str, bucket: Any, tmp_path: Path
) -> None:
    machine = with_params(s3_url, cache=str(tmp_path / "machine"))
    content = {"messages": [{"role": "user", "content": "same content " * 20}]}
    with Repo.init(machine) as repo:
        repo.commit(json.loads(json.dumps(content)), message="old")
        repo.checkout({}, "main")
    prefix = prefix_of(s3_url)
    obstore.delete(bucket, list(keys(bucket, prefix)))
    with Repo.init(machine) as repo:
        repo.commit(json.loads(json.dumps(content)), message="new")
    with Repo.open(with_params(s3_url, cache="none")) as cold:
        restored: dict[str, Any] = {}
        cold.checkout(restored, "main")
        assert restored == content
    restore_everything(s3_url)


# --- URLs, credentials and the command line -----------------------------------------------


_URL_PIECES = st.sampled_from(
    [
        "s3://",
        "S3://",
        "statevcs-test",
        "Bucket",
        "a",
        "/",
        "//",
        "..",
        ".",
        "?",
        "&",
        "=",
        "#",
        "@",
        ":",
        "%2F",
        "%00",
        "\x00",
        "\n",
        " ",
        "é",
        "endpoint_url=",
        "http://127.0.0.1:1",
        "http://user:hunter2@h:1",
        "region=",
        "us-east-1",
        "cache=",
        "cache_mb=",
        "-1",
        "99999999999",
        "none",
        "prefix",
    ]
)


@settings(max_examples=150, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pieces=st.lists(_URL_PIECES, max_size=12), tail=st.text(max_size=12))
def test_hostile_url_raises_only_repository_error(
    seaweedfs: SeaweedFS, pieces: list[str], tail: str
) -> None:
    url = "s3://" + "".join(pieces) + tail
    if "endpoint_url" not in url:
        url += ("&" if "?" in url else "?") + "endpoint_url=http://127.0.0.1:1"
    try:
        Repo.open(url).close()
    except (statevcs.StateVCSError, TypeError) as exc:
        assert SECRET_KEY not in str(exc)
        assert "hunter2" not in str(exc)


def test_url_of_the_wrong_type_raises_type_error_naming_it() -> None:
    with pytest.raises(TypeError, match="path"):
        Repo.open(b"s3://statevcs-test/p")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="path"):
        Repo.init(None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "url",
    [
        "s3://AKIAEXAMPLE:hunter2@statevcs-test/p",
        "s3://statevcs-test/p?endpoint_url=http://user:hunter2@127.0.0.1:1",
        "s3://statevcs-test/p?endpoint_url=http%3A%2F%2Fuser%3Ahunter2%40127.0.0.1%3A1",
        "s3://statevcs-test/p?endpoint_url=http://user:hun@ter2@127.0.0.1:1",
        "s3://AKIAEXAMPLE:hunter2@statevcs-test/" + "p" * 300,
    ],
)
def test_rejected_url_never_echoes_credentials_written_into_it(url: str) -> None:
    with pytest.raises(statevcs.RepositoryError) as caught:
        Repo.open(url)
    assert "hunter2" not in str(caught.value)
    result = CliRunner().invoke(cli, ["--repo", url, "log"])
    assert result.exit_code != 0
    assert "hunter2" not in result.output


def test_credentials_from_the_environment_never_appear_in_messages_or_repr(
    s3_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    _committed(s3_url)
    with Repo.open(s3_url) as repo:
        assert SECRET_KEY not in repr(repo) + repr(repo.store) + repo.url
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret-4711")
    with pytest.raises(statevcs.StoreError) as caught:
        Repo.open(with_params(s3_url, cache="none"))
    assert "wrong-secret-4711" not in str(caught.value)
    assert SECRET_KEY not in str(caught.value)


def test_cli_reads_an_s3_repository_given_with_repo(s3_url: str) -> None:
    _committed(s3_url)
    result = CliRunner().invoke(cli, ["--repo", s3_url, "log"])
    assert result.exit_code == 0, result.output
    assert "two" in result.output and "one" in result.output


def test_cli_reads_an_s3_repository_given_with_dash_c(s3_url: str, tmp_path: Path) -> None:
    _committed(s3_url)
    result = CliRunner().invoke(cli, ["-C", s3_url, "log"])
    assert result.exit_code == 0, result.output
    assert "two" in result.output
    # -C on the command line wins over $STATEVCS_REPO, as any option over its variable.
    result = CliRunner(env={"STATEVCS_REPO": str(tmp_path / "elsewhere")}).invoke(
        cli, ["-C", s3_url, "log"]
    )
    assert result.exit_code == 0, result.output
    assert "two" in result.output
    # Two repositories named on one command line are a mistake, not a silent choice.
    result = CliRunner().invoke(cli, ["-C", s3_url, "--repo", str(tmp_path), "log"])
    assert result.exit_code == 2
    assert "give one of them" in result.output


def test_cli_on_a_damaged_document_prints_an_error_not_a_traceback(
    s3_url: str, bucket: Any
) -> None:
    _committed(s3_url)
    prefix = prefix_of(s3_url)
    obstore.put(bucket, f"{prefix}/statevcs.json", b'{"statevcs": 1, "refs": 5}')
    result = CliRunner().invoke(cli, ["--repo", s3_url, "log"])
    assert result.exit_code != 0
    assert "Traceback" not in result.output
    assert result.output.startswith("error:")


@pytest.fixture
def two_machines(s3_url: str, tmp_path: Path) -> Iterator[tuple[str, str]]:
    yield (
        with_params(s3_url, cache=str(tmp_path / "a")),
        with_params(s3_url, cache=str(tmp_path / "b")),
    )


def test_two_machines_see_each_others_commits_and_conflict_by_the_rules(
    two_machines: tuple[str, str],
) -> None:
    a_url, b_url = two_machines
    with Repo.init(a_url) as a, Repo.open(b_url) as b:
        mine: dict[str, Any] = {"messages": [{"role": "user", "content": "a1"}]}
        a.commit(mine, message="a1")
        theirs: dict[str, Any] = {}
        b.checkout(theirs, "main")
        theirs["messages"].append({"role": "assistant", "content": "b1"})
        b.commit(theirs, message="b1")
        mine["messages"].append({"role": "user", "content": "a2"})
        with pytest.raises(statevcs.RefConflict):
            a.commit(mine, message="a2")
        a.checkout(mine, "main")
        assert [m["content"] for m in mine["messages"]] == ["a1", "b1"]
        mine["messages"].append({"role": "user", "content": "a2"})
        a.commit(mine, message="a2")
        b.checkout(theirs, "main")
        assert [m["content"] for m in theirs["messages"]] == ["a1", "b1", "a2"]


# --- the gc sweep lease across hosts with different clocks --------------------------------


def test_a_live_lease_from_a_collector_whose_clock_is_behind_is_not_taken_over(
    s3_url: str, bucket: Any
) -> None:
    _committed(s3_url)
    prefix = prefix_of(s3_url)
    doc = document(bucket, prefix)
    generation = doc["generation"]
    # A collector whose clock is 100 s behind this one: by wall clocks its lease ended long
    # ago. Writers time the lease themselves from when they first see this version of it.
    doc["sweep"] = {"token": "slow-clock", "until": time.time() - 100, "for": 1.5}
    obstore.put(bucket, f"{prefix}/statevcs.json", json.dumps(doc).encode())
    with Repo.open(s3_url) as repo:
        state: dict[str, Any] = {}
        repo.checkout(state, "main")
        state["messages"].append({"role": "user", "content": "after the lease"})
        started = time.monotonic()
        repo.commit(state, message="after")
        assert time.monotonic() - started >= 1.4
    after = document(bucket, prefix)
    assert after["sweep"] is None and after["generation"] == generation + 1


def test_gc_renews_its_lease_before_each_delete_and_releases_it(s3_url: str, bucket: Any) -> None:
    with Repo.init(s3_url) as repo:
        repo.commit({"messages": [{"role": "user", "content": "kept"}]}, message="kept")
        repo.commit({"messages": [{"role": "user", "content": "gone " * 50}]}, branch="tmp")
        repo.delete_branch("tmp")
        time.sleep(1.1)  # S3 LastModified has whole seconds
        serial = document(bucket, prefix_of(s3_url))["serial"]
        assert repo.gc("0s", expire_reflog="0s").deleted > 0
        after = document(bucket, prefix_of(s3_url))
        # take + renew before the object delete + renew before the chunk delete + release,
        # and the reflog expiry before them.
        assert after["serial"] - serial >= 4
        assert after["sweep"] is None
        assert repo.fsck().problems == ()


def test_a_cache_file_from_before_entries_were_verified_is_emptied_not_trusted(
    tmp_path: Path,
) -> None:
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE cache (key BLOB PRIMARY KEY, data BLOB NOT NULL, used REAL NOT NULL)"
        )
        db.execute("INSERT INTO cache VALUES (?, ?, ?)", (b"o" + b"\0" * 32, b"junk", 0.0))
    cache = _Cache(path, 1 << 20)
    try:
        assert cache.get_seen([b"o" + b"\0" * 32]) == {}
        cache.put({b"o" + b"\1" * 32: b"bytes"}, seen=3)
        cache.mark_seen([b"o" + b"\1" * 32], 2)  # never moves a tag back
        assert cache.get_seen([b"o" + b"\1" * 32]) == {b"o" + b"\1" * 32: (b"bytes", 3)}
    finally:
        cache.close()
