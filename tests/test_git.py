"""The git mirror (statevcs.mirror.git), checked with dulwich and with the real ``git`` CLI."""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import statevcs
from statevcs import GitMirrorError
from statevcs.merge import same
from statevcs.mirror.git import MAP_FILE, export_git, from_json, import_git, layout, to_json

pytest.importorskip("dulwich")
needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="needs the git CLI")

T0 = datetime(2025, 1, 1, 12, 0, 0, 123456, tzinfo=UTC)


def git(*args: str | Path, cwd: Path | None = None) -> str:
    env = {"GIT_CONFIG_NOSYSTEM": "1", "HOME": str(cwd or Path.cwd()), "PATH": _path()}
    result = subprocess.run(
        ["git", *map(str, args)], cwd=cwd, capture_output=True, text=True, env=env, check=True
    )
    return result.stdout


def _path() -> str:
    import os

    return os.environ.get("PATH", "")


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        self.now += timedelta(seconds=61, microseconds=7)
        return self.now


def build(repo: statevcs.Repo, clock: Clock) -> dict[str, Any]:
    """A history with bytes, odd keys, a branch, a tag and a merge."""
    agent: dict[str, Any] = {
        "messages": [{"role": "user", "content": [{"text": "hi"}]}],
        "counter": 0,
        "marker_like": {"__bytes__": "not really bytes"},
    }
    repo.commit(agent, "start", metadata={"run": 1}, timestamp=clock())
    for n in range(1, 4):
        agent["messages"].append(
            {"role": "assistant", "content": [{"text": f"step {n}"}], "raw": b"\x00\xff" * n}
        )
        agent["counter"] = n
        repo.commit(agent, f"step {n}\n\nwith a body", timestamp=clock())
    repo.tag("v1")
    repo.branch("side", "main~2")
    repo.checkout(agent, "side")
    agent["messages"].append({"role": "user", "content": "side", 7: {"int": "keys"}})
    agent["side_only"] = [1.5, None, True]
    repo.commit(agent, "side work", author="Ada Lovelace <ada@example.com>", timestamp=clock())
    repo.checkout(agent, "main")
    repo.merge("main", "side", strategy="ours", timestamp=clock())
    repo.checkout(agent, "main")
    return agent


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def repo(tmp_path: Path, clock: Clock) -> statevcs.Repo:
    repo = statevcs.Repo.init(tmp_path / "repo", author="tester <t@example.com>")
    build(repo, clock)
    yield repo
    repo.close()


def all_commits(repo: statevcs.Repo) -> list[statevcs.Commit]:
    return list(repo.log_all())


# --- JSON mapping ------------------------------------------------------------------------

leaves = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
    st.binary(max_size=8),
)
documents = st.recursive(
    leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.text(max_size=10), inner, max_size=4),
        st.dictionaries(st.integers(-5, 5), inner, max_size=3),
        st.dictionaries(st.sampled_from(["__bytes__", "__map__", "__dict__", "__raw__"]), inner),
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(documents)
def test_json_mapping_round_trips_exactly(value: Any) -> None:
    encoded = to_json(value)
    text = json.dumps(encoded, allow_nan=False)
    assert same(from_json(json.loads(text)), value)


def test_json_markers() -> None:
    assert to_json(b"\x00") == {"__bytes__": "AA=="}
    assert to_json(math.inf) == {"__float__": "inf"}
    assert to_json({1: "a"}) == {"__map__": [[1, "a"]]}
    assert to_json({"__bytes__": "x"}) == {"__dict__": {"__bytes__": "x"}}
    with pytest.raises(GitMirrorError):
        to_json(object())


# --- export / import ---------------------------------------------------------------------


def test_round_trip_gives_identical_ids(repo: statevcs.Repo, tmp_path: Path) -> None:
    report = export_git(repo, tmp_path / "mirror")
    commits = all_commits(repo)
    assert report.commits_exported == report.mirror_commits == len(commits)
    assert set(report.refs_updated) == {"refs/heads/main", "refs/heads/side", "refs/tags/v1"}

    copy = statevcs.Repo.init("memory://")
    back = import_git(copy, tmp_path / "mirror")
    assert back.commits_imported == len(commits)
    assert copy.refs.as_hex() == repo.refs.as_hex()
    for commit in commits:
        again = copy.get_commit(commit.id)
        assert again == commit
        assert copy.show(commit.id) == repo.show(commit.id)
    assert copy.head_branch == "main"
    # A second import finds everything present.
    twice = import_git(copy, tmp_path / "mirror")
    assert (twice.commits_imported, twice.commits_existing) == (0, len(commits))
    assert twice.refs_updated == {}


@pytest.mark.parametrize("limit", [0, None])
def test_an_import_reads_the_same_with_or_without_inflating_the_packs_first(
    repo: statevcs.Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, limit: int | None
) -> None:
    # PRELOAD_LIMIT 0: every pack is "too large", so each object is read on its own.
    if limit is not None:
        monkeypatch.setattr("statevcs.mirror.git.layout.PRELOAD_LIMIT", limit)
    from dulwich.repo import Repo as GitRepo

    export_git(repo, tmp_path / "mirror")
    with GitRepo(str(tmp_path / "mirror")) as git:
        inflated = layout.preload(git)
        layout.release(git)
    assert (inflated == 0) == (limit == 0)
    copy = statevcs.Repo.init("memory://")
    import_git(copy, tmp_path / "mirror")
    assert copy.refs.as_hex() == repo.refs.as_hex()
    for commit in all_commits(repo):
        assert copy.show(commit.id) == repo.show(commit.id)


def test_non_json_state_round_trips_through_raw_markers(tmp_path: Path, clock: Clock) -> None:
    serializer = statevcs.MsgpackSerializer()
    repo = statevcs.Repo.init(tmp_path / "mp", serializer=serializer)
    state = {"when": T0, "tags": {"a", "b"}, "pair": (1, 2), "blob": b"\x01"}
    first = repo.commit(state, "rich values", timestamp=clock())
    export_git(repo, tmp_path / "mirror.git")
    from dulwich.repo import Repo as GitRepo

    with GitRepo(str(tmp_path / "mirror.git")) as mirror:
        tree = mirror[mirror[b"refs/heads/main"].tree]
        written = json.loads(mirror[tree[b"state.json"][1]].data)
    assert written["when"]["__raw__"]["codec"] == "msgpack"
    assert "datetime" in written["when"]["__raw__"]["repr"]
    # The importing repository needs no msgpack serializer: bytes are copied verbatim.
    with statevcs.Repo.init(tmp_path / "copy") as copy:
        import_git(copy, tmp_path / "mirror.git")
        assert copy.resolve("main") == first.id
    with statevcs.Repo.open(tmp_path / "copy", serializer=serializer) as reader:
        assert reader.show("main").state == state


def test_exports_are_incremental(repo: statevcs.Repo, tmp_path: Path, clock: Clock) -> None:
    target = tmp_path / "mirror"
    first = export_git(repo, target)
    assert first.objects_written > 0
    again = export_git(repo, target)
    assert (again.commits_exported, again.objects_written, again.refs_updated) == (0, 0, {})

    agent: dict[str, Any] = {}
    repo.checkout(agent, "main")
    for n in range(10):
        agent["messages"].append({"role": "user", "content": f"more {n}"})
        agent["counter"] = 100 + n
        repo.commit(agent, f"more {n}", timestamp=clock())
    objects_before = _git_objects(target)
    later = export_git(repo, target)
    assert later.commits_exported == 10
    # Each new commit adds at most: commit, root tree, messages tree, the one messages/
    # folder that changed, one message blob, state.json and statevcs.json. Unchanged
    # messages, folders and extras.json are reused.
    assert later.objects_written <= 10 * 7
    assert len(_git_objects(target) - objects_before) == later.objects_written
    assert later.refs_updated.keys() == {"refs/heads/main"}


def _git_objects(target: Path) -> set[bytes]:
    from dulwich.repo import Repo as GitRepo

    with GitRepo(str(target)) as mirror:
        return set(mirror.object_store)


def test_the_id_map_is_rebuilt_from_the_mirror(repo: statevcs.Repo, tmp_path: Path) -> None:
    target = tmp_path / "mirror"
    export_git(repo, target)
    (target / ".git" / MAP_FILE).unlink()
    again = export_git(repo, target)
    assert (again.commits_exported, again.objects_written) == (0, 0)
    assert (target / ".git" / MAP_FILE).is_file()


def test_single_branch_export(repo: statevcs.Repo, tmp_path: Path) -> None:
    report = export_git(repo, tmp_path / "side.git", branch="side")
    assert set(report.refs_updated) == {"refs/heads/side"}
    assert report.commits_exported == len(list(repo.log("side", all_parents=True)))
    with pytest.raises(GitMirrorError, match="no branch named"):
        export_git(repo, tmp_path / "other.git", branch="nope")


def test_deleted_branches_leave_the_mirror(repo: statevcs.Repo, tmp_path: Path) -> None:
    export_git(repo, tmp_path / "m.git")
    repo.delete_branch("side")
    report = export_git(repo, tmp_path / "m.git")
    assert report.refs_deleted == ["refs/heads/side"]


def test_target_must_be_empty_or_git(repo: statevcs.Repo, tmp_path: Path) -> None:
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "file.txt").write_text("x")
    with pytest.raises(GitMirrorError, match="not a git repository"):
        export_git(repo, tmp_path / "full")
    with pytest.raises(GitMirrorError, match="not a git repository"):
        import_git(repo, tmp_path / "full")


def test_missing_dulwich_explains_the_extra(
    repo: statevcs.Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "dulwich", None)
    with pytest.raises(GitMirrorError, match=r"statevcs\[git\]"):
        export_git(repo, tmp_path / "m")


def test_a_repository_argument_that_is_not_a_repo_is_a_type_error(tmp_path: Path) -> None:
    with pytest.raises(TypeError, match=r"repo must be a statevcs\.Repo"):
        export_git(str(tmp_path / "repo"), tmp_path / "m.git")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"repo must be a statevcs\.Repo"):
        import_git(None, tmp_path / "m.git")  # type: ignore[arg-type]


def test_deep_messages_and_state_round_trip(tmp_path: Path, clock: Clock) -> None:
    repo = statevcs.Repo.init(tmp_path / "deep")
    nested: Any = "bottom"
    for _ in range(511):  # with the message itself, the 512 levels a commit accepts
        nested = [nested]
    message = {"role": "user", "content": nested}
    state: Any = "bottom"
    for _ in range(499):  # as deep as the JSON serializer stores (500 levels with the string)
        state = [state]
    first = repo.commit({"messages": [message], "nested": state}, "deep", timestamp=clock())
    export_git(repo, tmp_path / "deep.git")
    copy = statevcs.Repo.init("memory://")
    import_git(copy, tmp_path / "deep.git")
    assert copy.resolve("main") == first.id
    assert copy.show("main") == repo.show("main")
    # One level more is refused when committing, so no commit is too deep for the mirror.
    with pytest.raises(statevcs.StateVCSError, match="512"):
        repo.commit({"messages": [{"role": "user", "content": [nested]}]}, "deeper")


def _commit_with_metadata(
    repo: statevcs.Repo, metadata: dict[Any, Any], *, timestamp_us: int = 1_700_000_000
) -> str:
    """A commit as older statevcs versions (or a hostile writer) stored it on branch ``old``."""
    from statevcs.hashing import from_hex, to_hex
    from statevcs.objects import CommitObject, encode_with_id

    snapshot = repo.get_commit("main").snapshot_id
    obj = CommitObject(
        from_hex(snapshot), (), "old <old@example.com>", timestamp_us, "old", metadata
    )
    commit_id, data = encode_with_id(obj)
    repo.objects.put({commit_id: data})
    repo.refs.set("refs/heads/old", commit_id)
    return to_hex(commit_id)


def test_a_commit_time_no_datetime_holds_is_a_mirror_error(
    repo: statevcs.Repo, tmp_path: Path
) -> None:
    commit_id = _commit_with_metadata(repo, {}, timestamp_us=2**64 - 1)
    with pytest.raises(GitMirrorError, match=f"commit {commit_id} cannot be exported.*timestamp"):
        export_git(repo, tmp_path / "m.git")


def test_non_string_metadata_keys_export_exactly(repo: statevcs.Repo, tmp_path: Path) -> None:
    metadata = {1: "one", "b": {2: [3, {None: True}]}, "a": 1.5}
    commit_id = _commit_with_metadata(repo, metadata)
    export_git(repo, tmp_path / "m.git")
    from dulwich.repo import Repo as GitRepo

    with GitRepo(str(tmp_path / "m.git")) as mirror:
        tree = mirror[mirror[b"refs/heads/old"].tree]
        info = json.loads(mirror[tree[b"statevcs.json"][1]].data)
    assert info["commit"] == commit_id
    # As the commit stores it: canonical metadata, its keys sorted (same() sees key order).
    assert same(from_json(info["metadata"]), {1: "one", "a": 1.5, "b": {2: [3, {None: True}]}})
    # statevcs commits no longer accept such keys: the import says which commit and why
    # before writing anything.
    copy = statevcs.Repo.init("memory://")
    with pytest.raises(GitMirrorError, match=r"non-string key 1\b") as refused:
        import_git(copy, tmp_path / "m.git")
    assert _git_commit_of(tmp_path / "m.git", b"refs/heads/old") in str(refused.value)
    assert copy.refs.as_hex() == {}
    assert copy.stats().objects == 0


def _git_commit_of(target: Path, ref: bytes) -> str:
    from dulwich.repo import Repo as GitRepo

    with GitRepo(str(target)) as mirror:
        return mirror.refs[ref].decode()


@needs_git
def test_mirrors_that_stringified_metadata_keys_fail_clearly(
    repo: statevcs.Repo, tmp_path: Path
) -> None:
    mirror = tmp_path / "m"
    _commit_with_metadata(repo, {"n": 1})
    export_git(repo, mirror, branch="old")
    # What older versions wrote for {1: "one"}: json.dumps turned the key into "1".
    info = json.loads((mirror / "statevcs.json").read_text())
    info["metadata"] = {"1": "one"}
    (mirror / "statevcs.json").write_text(json.dumps(info))
    git(
        "-C",
        mirror,
        "-c",
        "user.name=x",
        "-c",
        "user.email=x@example.com",
        "commit",
        "-q",
        "--amend",
        "-a",
        "--no-edit",
        cwd=tmp_path,
    )
    copy = statevcs.Repo.init("memory://")
    with pytest.raises(GitMirrorError, match=r"older statevcs.*non-string metadata keys"):
        import_git(copy, mirror)
    assert copy.refs.as_hex() == {}


def test_import_into_an_empty_repository_switches_to_the_mirrors_branch(
    repo: statevcs.Repo, tmp_path: Path
) -> None:
    export_git(repo, tmp_path / "side.git", branch="side")
    copy = statevcs.Repo.init("memory://")
    import_git(copy, tmp_path / "side.git")
    assert copy.default_branch == copy.head_branch == "side"
    # The default branch moved like every other move of it: in HEAD's reflog.
    assert "side" in copy.reflog("HEAD")[0].message
    # A repository whose default branch exists keeps it.
    export_git(repo, tmp_path / "all.git")
    import_git(copy, tmp_path / "all.git")
    assert copy.default_branch == "side"


def test_statevcs_mirror_marker(repo: statevcs.Repo, tmp_path: Path) -> None:
    from dulwich.repo import Repo as GitRepo

    export_git(repo, tmp_path / "m.git")
    with GitRepo(str(tmp_path / "m.git")) as mirror:
        assert mirror.get_config().get((b"statevcs",), b"mirror") == b"true"


def test_arguments_of_the_wrong_type_name_the_argument(repo: statevcs.Repo, tmp_path: Path) -> None:
    with pytest.raises(TypeError, match="target"):
        export_git(repo, 5)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="force"):
        export_git(repo, tmp_path / "m", force="yes")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="push"):
        export_git(repo, tmp_path / "m", push=b"x")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="source"):
        import_git(repo, None)  # type: ignore[arg-type]
    assert not (tmp_path / "m").exists()


# --- with the git CLI --------------------------------------------------------------------


@needs_git
def test_git_reads_the_mirror(repo: statevcs.Repo, tmp_path: Path) -> None:
    mirror = tmp_path / "mirror"
    export_git(repo, mirror)
    lines = git("-C", mirror, "log", "--oneline", "--all").splitlines()
    assert len(lines) == len(all_commits(repo))
    git("-C", mirror, "fsck", "--strict")  # check=True: a problem fails the test
    state = json.loads(git("-C", mirror, "show", "HEAD:state.json"))
    assert state == {k: to_json(v) for k, v in repo.show("main").state.items()}
    # The working tree follows main, so the two-argument and working-tree diffs agree.
    assert git("-C", mirror, "status", "--porcelain") == ""
    diff = git("-C", mirror, "diff", "HEAD~1", "--", "messages/")
    assert diff == git("-C", mirror, "diff", "HEAD~1", "HEAD", "--", "messages/")
    head = repo.get_commit("main")
    shown = git("-C", mirror, "log", "-1", "--format=%an <%ae>|%at|%P|%s", "main")
    author, seconds, parents, subject = shown.strip().split("|")
    assert author == head.author
    assert int(seconds) == int(head.timestamp.timestamp())
    assert len(parents.split()) == 2
    assert subject == head.message
    side_author = git("-C", mirror, "log", "-1", "--format=%an", "side").strip()
    assert side_author == "Ada Lovelace"


@needs_git
def test_diffable_message_files(repo: statevcs.Repo, tmp_path: Path, clock: Clock) -> None:
    mirror = tmp_path / "mirror"
    export_git(repo, mirror)
    agent: dict[str, Any] = {}
    repo.checkout(agent, "main")
    agent["messages"].append({"role": "assistant", "content": "a new reply"})
    repo.commit(agent, "reply", timestamp=clock())
    report = export_git(repo, mirror)
    assert report.worktree_updated
    last = len(agent["messages"]) - 1  # numbered from 0, like the CLI's [0]
    diff = git("-C", mirror, "diff", "HEAD~1", "--", "messages/")
    assert f"+++ b/messages/0000/{last:06d}-assistant.json" in diff
    assert '+  "content": "a new reply"' in diff
    assert (mirror / "messages" / "0000" / f"{last:06d}-assistant.json").is_file()


def test_an_export_refuses_to_move_a_mirror_with_local_edits(
    repo: statevcs.Repo, tmp_path: Path, clock: Clock
) -> None:
    mirror = tmp_path / "mirror"
    export_git(repo, mirror)
    original = (mirror / "state.json").read_text()
    (mirror / "state.json").write_text("{}\n")
    (mirror / "notes.txt").write_text("my own file, not one an export writes\n")
    _, main_before = _mirror_main(mirror)
    repo.commit({"fresh": 1}, "new", branch="main", timestamp=clock())
    for force in (False, True):
        with pytest.raises(GitMirrorError, match=r"local changes \(state\.json\)"):
            export_git(repo, mirror, force=force)
    assert _mirror_main(mirror)[1] == main_before
    assert (mirror / "state.json").read_text() == "{}\n"
    # Once the edit is gone the export goes through; the untracked notes.txt never mattered.
    (mirror / "state.json").write_text(original)
    report = export_git(repo, mirror)
    assert report.worktree_updated
    assert json.loads((mirror / "state.json").read_text()) == {"fresh": 1}
    assert (mirror / "notes.txt").is_file()


def _mirror_main(mirror: Path) -> tuple[bytes, bytes]:
    from dulwich.repo import Repo as GitRepo

    with GitRepo(str(mirror)) as git_repo:
        return git_repo.refs.get_symrefs()[b"HEAD"], git_repo.refs[b"refs/heads/main"]


def test_pickled_state_imports_without_the_key(tmp_path: Path, clock: Clock) -> None:
    repo = statevcs.Repo.init("memory://", serializer=statevcs.PickleSerializer(key="secret"))
    first = repo.commit({"obj": complex(1, 2)}, "pickled", timestamp=clock())
    export_git(repo, tmp_path / "p.git")
    copy = statevcs.Repo.init("memory://")
    import_git(copy, tmp_path / "p.git")
    assert copy.resolve("main") == first.id


@needs_git
def test_push_to_a_bare_remote(repo: statevcs.Repo, tmp_path: Path, clock: Clock) -> None:
    remote = tmp_path / "remote.git"
    git("init", "--bare", "-q", remote)
    report = export_git(repo, tmp_path / "mirror", push=str(remote))
    assert report.pushed == str(remote)
    assert all(status is None for status in report.push_refs.values())
    assert len(git("-C", remote, "log", "--oneline", "--all").splitlines()) == len(
        all_commits(repo)
    )
    git("-C", remote, "fsck", "--strict")
    assert "counter" in git("-C", remote, "show", "main:state.json")

    # A reset makes main non-fast-forward: rejected unless forced.
    repo.reset("main", "main~1")
    with pytest.raises(GitMirrorError, match="rejected"):
        export_git(repo, tmp_path / "mirror", push=remote.as_uri())
    export_git(repo, tmp_path / "mirror", push=remote.as_uri(), force=True)
    assert (
        git("-C", remote, "rev-parse", "main").strip()
        == git("-C", tmp_path / "mirror", "rev-parse", "main").strip()
    )


@needs_git
def test_push_to_a_missing_remote_fails_clearly(repo: statevcs.Repo, tmp_path: Path) -> None:
    with pytest.raises(GitMirrorError, match="push to"):
        export_git(repo, tmp_path / "mirror", push=str(tmp_path / "nowhere.git"))


@needs_git
def test_commits_made_with_git_import_as_new_commits(repo: statevcs.Repo, tmp_path: Path) -> None:
    mirror = tmp_path / "mirror"
    export_git(repo, mirror)
    state = json.loads((mirror / "state.json").read_text())
    state["counter"] = 42
    (mirror / "state.json").write_text(json.dumps(state, indent=2))
    git("-C", mirror, "add", "state.json")
    git(
        "-C",
        mirror,
        "-c",
        "user.name=Grace",
        "-c",
        "user.email=grace@example.com",
        "commit",
        "-q",
        "-m",
        "edited in git",
    )
    before = repo.resolve("main")
    report = import_git(repo, mirror)
    assert (report.commits_imported, report.commits_from_git) == (1, 1)
    head = repo.get_commit("main")
    assert head.parents == (before,)
    assert head.message == "edited in git"
    assert head.author == "Grace <grace@example.com>"
    assert repo.show("main").state["counter"] == 42
    assert repo.show("main").messages == repo.show(before).messages


@needs_git
def test_diverged_refs_are_skipped_on_import(
    repo: statevcs.Repo, tmp_path: Path, clock: Clock
) -> None:
    export_git(repo, tmp_path / "m.git")
    repo.reset("main", "main~1")
    agent: dict[str, Any] = {}
    repo.checkout(agent, "main")
    agent["other"] = True
    repo.commit(agent, "diverge", branch="main", timestamp=clock())
    report = import_git(repo, tmp_path / "m.git")
    assert list(report.refs_skipped) == ["refs/heads/main"]
    assert repo.get_commit("main").message == "diverge"


def test_large_values_round_trip_with_identical_ids_across_chunkers(
    tmp_path: Path, clock: Clock
) -> None:
    from statevcs.objects import Chunked, encode_doc
    from statevcs.structures.chunking import CHUNKER_KEY, GEAR_1

    # A repository created before chunkers were recorded cuts with gear-1; a new one with
    # fastcdc-2020-small-values (state values from 8 KiB on). Its exported commits still come
    # back with their own ids.
    old = statevcs.Repo.init(tmp_path / "old")
    old.store.config_set(CHUNKER_KEY, None)
    old = statevcs.Repo.open(tmp_path / "old")
    assert old.objects.chunker is GEAR_1
    big = "".join(f"{i:07d} " for i in range(30_000))
    agent: dict[str, Any] = {"messages": [{"role": "user", "content": [{"text": big}]}]}
    agent["notes"] = big[:20_000]  # whole under gear-1, chunked under the new default
    old.commit(agent, "large", timestamp=clock())
    agent["messages"].append({"role": "assistant", "content": [{"text": big + "!"}]})
    old.commit(agent, "larger", timestamp=clock())
    export_git(old, tmp_path / "mirror")
    info = json.loads(git("-C", tmp_path / "mirror", "show", "main:statevcs.json"))
    assert info["chunker"] == "gear-1"

    new = statevcs.Repo.init("memory://")
    assert new.objects.chunker.name == "fastcdc-2020-small-values"
    import_git(new, tmp_path / "mirror")
    for commit in all_commits(old):
        assert new.get_commit(commit.id) == commit
        assert new.show(commit.id) == old.show(commit.id)
    # New commits in the new repository are cut its own way.
    fresh = {"messages": [{"role": "user", "content": [{"text": big + "?"}]}]}
    fresh["notes"] = big[:20_000] + "?"
    again = new.commit(fresh, "again", timestamp=clock())
    assert new.show(again.id).messages == fresh["messages"]
    assert new.show(again.id).state == {"notes": fresh["notes"]}
    out: dict[bytes, bytes] = {}
    new.objects.chunker.chunk(encode_doc(fresh["messages"][0]), out)
    assert new.store.has_many(out) == set(out)
    # The ~20 KB notes are chunked now (the old repository stored them whole).
    sizes = [new.objects.load(i) for i, _ in new.store.iter_objects()]
    assert any(isinstance(obj, Chunked) and 20_000 < obj.size < 21_000 for obj in sizes)


def test_a_mirror_naming_an_unknown_chunker_is_refused(repo: statevcs.Repo, tmp_path: Path) -> None:
    mirror = tmp_path / "mirror"
    export_git(repo, mirror)
    info = json.loads((mirror / "statevcs.json").read_text())
    info["chunker"] = "fastcdc-2031"
    (mirror / "statevcs.json").write_text(json.dumps(info, sort_keys=True))
    git("-C", mirror, "add", "statevcs.json")
    git("-C", mirror, "-c", "user.name=G", "-c", "user.email=g@x", "commit", "-q", "-m", "x")
    with pytest.raises(GitMirrorError, match="fastcdc-2031"):
        import_git(statevcs.Repo.init("memory://"), mirror)
