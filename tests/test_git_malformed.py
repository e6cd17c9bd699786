"""Damaged, hand-broken and hostile git mirrors: import_git raises only StateVCSError, names the
commit and the problem, moves no ref and writes nothing outside the statevcs repository."""

from __future__ import annotations

import hashlib
import json
import shutil
import sys
import zlib
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import statevcs
from statevcs import GitMirrorError, StateVCSError
from statevcs.mirror.git import MAX_DEPTH, export_git, from_json, import_git, to_json

pytest.importorskip("dulwich")
from dulwich.objects import Blob, Commit, Tree
from dulwich.repo import Repo as GitRepo

T0 = datetime(2025, 1, 1, tzinfo=UTC)
Entries = dict[bytes, tuple[int, bytes]]
FILE, TREE, LINK, GITLINK = 0o100644, 0o040000, 0o120000, 0o160000


@pytest.fixture(scope="module")
def base_mirror(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small bare mirror: three commits on main (messages, state, extras, metadata)."""
    where = tmp_path_factory.mktemp("base")
    with statevcs.Repo.init(where / "repo", author="agent <agent@example.com>") as repo:
        agent: dict[str, Any] = {
            "messages": [{"role": "user", "content": [{"text": "hi"}]}],
            "counter": 0,
            "blob": "x" * 200,
        }
        for n in range(3):
            agent["counter"] = n
            agent["messages"].append({"role": "assistant", "content": f"reply {n}"})
            repo.commit(agent, f"step {n}", metadata={"n": n}, timestamp=T0 + timedelta(n))
        export_git(repo, where / "mirror.git")
    return where / "mirror.git"


# --- building broken mirrors with dulwich ------------------------------------------------------


def put(git: GitRepo, obj: Any) -> bytes:
    git.object_store.add_object(obj)
    sha: bytes = obj.id
    return sha


def blob(git: GitRepo, data: bytes) -> bytes:
    return put(git, Blob.from_string(data))


def tree(git: GitRepo, entries: Entries) -> bytes:
    new = Tree()
    for name, (mode, sha) in entries.items():
        new.add(name, mode, sha)
    return put(git, new)


def entries_of(git: GitRepo, tree_sha: bytes) -> Entries:
    return {e.path: (e.mode, e.sha) for e in git[tree_sha].iteritems()}


def commit(git: GitRepo, tree_sha: bytes, parents: list[bytes], message: bytes = b"x\n") -> bytes:
    new = Commit()
    new.tree = tree_sha
    new.parents = parents
    new.author = new.committer = b"Someone <s@example.com>"
    new.author_time = new.commit_time = 1_700_000_000
    new.author_timezone = new.commit_timezone = 0
    new.message = message
    return put(git, new)


def amend_tip(git: GitRepo, change: Callable[[GitRepo, Entries], None]) -> None:
    """Replace main's tip by a commit with the same parents and a changed tree."""
    tip = git[git.refs[b"refs/heads/main"]]
    entries = entries_of(git, tip.tree)
    change(git, entries)
    git.refs[b"refs/heads/main"] = commit(git, tree(git, entries), list(tip.parents))


def edit_json(name: bytes, edit: Callable[[Any], Any]) -> Callable[[GitRepo, Entries], None]:
    def change(git: GitRepo, entries: Entries) -> None:
        value = json.loads(git[entries[name][1]].data)
        entries[name] = (FILE, blob(git, json.dumps(edit(value)).encode()))

    return change


def edit_info(**fields: Any) -> Callable[[GitRepo, Entries], None]:
    def edit(info: dict[str, Any]) -> dict[str, Any]:
        for key, value in fields.items():
            if value is _DELETE:
                del info[key]
            else:
                info[key] = value
        return info

    return edit_json(b"statevcs.json", edit)


_DELETE = object()


def set_file(name: bytes, data: bytes) -> Callable[[GitRepo, Entries], None]:
    def change(git: GitRepo, entries: Entries) -> None:
        entries[name] = (FILE, blob(git, data))

    return change


def set_entry(
    name: bytes, mode: int, sha: bytes | None = None
) -> Callable[[GitRepo, Entries], None]:
    def change(git: GitRepo, entries: Entries) -> None:
        entries[name] = (mode, sha if sha is not None else blob(git, b"state.json.real"))

    return change


def drop(name: bytes) -> Callable[[GitRepo, Entries], None]:
    def change(git: GitRepo, entries: Entries) -> None:
        del entries[name]

    return change


def edit_message_folders(
    change: Callable[[GitRepo, Entries], None],
) -> Callable[[GitRepo, Entries], None]:
    """Change the entries of ``messages/`` (its folders ``0000``, ``0001``, ...)."""

    def outer(git: GitRepo, entries: Entries) -> None:
        inner = entries_of(git, entries[b"messages"][1])
        change(git, inner)
        entries[b"messages"] = (TREE, tree(git, inner))

    return outer


def edit_messages(change: Callable[[GitRepo, Entries], None]) -> Callable[[GitRepo, Entries], None]:
    """Change the message files of ``messages/0000`` (messages 0 to 99)."""

    def folder(git: GitRepo, entries: Entries) -> None:
        inner = entries_of(git, entries[b"0000"][1])
        change(git, inner)
        entries[b"0000"] = (TREE, tree(git, inner))

    return edit_message_folders(folder)


def split_folder(git: GitRepo, entries: Entries) -> None:
    """Move the last message of folder 0000 into folder 0001 as message 100."""
    inner = entries_of(git, entries[b"0000"][1])
    moved = inner.pop(b"000003-assistant.json")
    entries[b"0000"] = (TREE, tree(git, inner))
    entries[b"0001"] = (TREE, tree(git, {b"000100-assistant.json": moved}))


def append_a_repeated_number(git: GitRepo, entries: Entries) -> None:
    """The parent's folder plus one file sorting last ("1-…" after "000…") numbered 1 again:
    the import reads only the appended entries of such a folder, and must still see it."""
    entries.pop(b"000003-assistant.json")
    entries[b"1-again.json"] = entries[b"000001-assistant.json"]


def empty_folder(git: GitRepo, entries: Entries) -> None:
    entries[b"0000"] = (TREE, tree(git, {}))


def rename_message(old: bytes, new: bytes) -> Callable[[GitRepo, Entries], None]:
    def change(git: GitRepo, entries: Entries) -> None:
        entries[new] = entries.pop(old)

    return change


def state_value(value: Any) -> Callable[[GitRepo, Entries], None]:
    return edit_json(b"state.json", lambda state: {**state, "counter": value})


def message_file(data: bytes) -> Callable[[GitRepo, Entries], None]:
    return edit_messages(set_file(b"000002-assistant.json", data))


def json_nest(levels: int) -> Any:
    value: Any = []
    for _ in range(levels - 1):
        value = [value]
    return value


def deep(levels: int) -> str:
    return "[" * levels + "]" * levels


def deep_state(levels: int) -> Callable[[GitRepo, Entries], None]:
    """state.json whose counter is nested ``levels`` deep: fine for json, too deep for us."""
    return set_file(b"state.json", ('{"counter": ' + deep(levels) + "}").encode())


# Whole-mirror breakages that amend_tip cannot express.


def no_statevcs_json_in_an_ancestor(git: GitRepo) -> None:
    tip = git[git.refs[b"refs/heads/main"]]
    entries = entries_of(git, tip.tree)
    del entries[b"statevcs.json"]
    broken = commit(git, tree(git, entries), [tip.id], b"lost the file\n")
    git.refs[b"refs/heads/main"] = commit(git, tip.tree, [broken], b"put it back\n")


def missing_parent(git: GitRepo) -> None:
    tip = git[git.refs[b"refs/heads/main"]]
    git.refs[b"refs/heads/main"] = commit(git, tip.tree, [b"1" * 40])


def ref_to_missing_object(git: GitRepo) -> None:
    git.refs[b"refs/heads/ghost"] = b"2" * 40


def non_utf8_ref(git: GitRepo) -> None:
    path = Path(git.controldir()) / "refs" / "heads"
    (path / b"\xff-branch".decode("utf-8", "surrogateescape")).write_text(
        git.refs[b"refs/heads/main"].decode() + "\n"
    )


def damaged_object(git: GitRepo) -> None:
    bad = blob(git, b'{"counter": 1}\n')
    amend_tip(git, set_entry(b"state.json", FILE, bad))
    loose = Path(git.controldir()) / "objects" / bad[:2].decode() / bad[2:].decode()
    loose.chmod(0o644)
    loose.write_bytes(zlib.compress(b"blob 999\x00garbage"))


def not_a_mirror(git: GitRepo) -> None:
    for name in list(git.refs.allkeys()):
        if name.startswith(b"refs/"):
            del git.refs[name]
    readme = tree(git, {b"README.md": (FILE, blob(git, b"# a project\n"))})
    git.refs[b"refs/heads/main"] = commit(git, readme, [], b"my project\n")


def long_integer_digits(git: GitRepo) -> None:
    amend_tip(git, set_file(b"state.json", b'{"counter": ' + b"9" * 5000 + b"}"))


class Case:
    def __init__(
        self,
        name: str,
        breaks: Callable[[GitRepo], None],
        match: str,
        *,
        leaves_objects: bool = False,
    ) -> None:
        self.name = name
        self.breaks = breaks
        self.match = match
        self.leaves_objects = leaves_objects

    def __repr__(self) -> str:
        return self.name


def tip(name: str, change: Callable[[GitRepo, Entries], None], match: str, **kw: Any) -> Case:
    return Case(name, lambda git: amend_tip(git, change), match, **kw)


CASES = [
    Case("ordinary git repository", not_a_mirror, "not a statevcs mirror"),
    Case("statevcs.json missing in an ancestor", no_statevcs_json_in_an_ancestor, "no statevcs"),
    tip("statevcs.json not JSON", set_file(b"statevcs.json", b"{nope"), "not valid JSON"),
    tip("statevcs.json not UTF-8", set_file(b"statevcs.json", b'{"a": "\xff"}'), "UTF-8"),
    tip("statevcs.json a list", set_file(b"statevcs.json", b"[]"), "JSON object"),
    tip("statevcs.json nested deeply", set_file(b"statevcs.json", deep(100_000).encode()), "deep"),
    tip("format from the future", edit_info(format=99), "upgrade statevcs"),
    tip("format true", edit_info(format=True), "'format'"),
    tip("format missing", edit_info(format=_DELETE), "'format'"),
    tip("commit id not hex", edit_info(commit="zz" * 32), "'commit'"),
    tip("commit id a number", edit_info(commit=12), "'commit'"),
    tip("parents not a list", edit_info(parents="abc"), "'parents'"),
    tip("parents with a bad id", edit_info(parents=["0" * 63]), "'parents'"),
    tip("snapshot id null", edit_info(snapshot=None), "'snapshot'"),
    tip("timestamp not a time", edit_info(timestamp="yesterday"), "'timestamp'"),
    tip("timestamp a number", edit_info(timestamp=5), "'timestamp'"),
    tip("timestamp overflows", edit_info(timestamp="9999-12-31T23:59:59-23:59"), "'timestamp'"),
    tip("author a number", edit_info(author=5), "'author'"),
    tip("author a lone surrogate", edit_info(author="\ud800"), "'author'"),
    tip("kind an object", edit_info(kind={}), "'kind'"),
    tip("message over the size limit", edit_info(message="m" * (1024 * 1024 + 1)), "longer"),
    tip("metadata deeper than commits take", edit_info(metadata={"x": json_nest(70)}), "deeper"),
    tip("metadata not a finite number", edit_info(metadata={"x": {"__float__": "nan"}}), "finite"),
    tip("metadata a list", edit_info(metadata=[1, 2]), "'metadata'"),
    tip("metadata bad marker", edit_info(metadata={"x": {"__bytes__": 5}}), "__bytes__"),
    tip("metadata int too large", edit_info(metadata={"x": 2**70}), "cannot be stored"),
    tip("metadata map key a map", edit_info(metadata={"__map__": [[{"__map__": []}, 1]]}), "key"),
    tip("state.json missing", drop(b"state.json"), "state.json is missing"),
    tip("extras.json missing", drop(b"extras.json"), "extras.json is missing"),
    tip("state.json a list", set_file(b"state.json", b"[1]"), "state.json must hold"),
    tip("extras.json a string", set_file(b"extras.json", b'"x"'), "extras.json must hold"),
    tip("state.json not JSON", set_file(b"state.json", b"{"), "not valid JSON"),
    tip("state.json nested deeply", set_file(b"state.json", deep(50_000).encode()), "deep"),
    tip("state nested past MAX_DEPTH", deep_state(MAX_DEPTH + 100), "deep"),
    tip(
        "state __raw__ bad base64",
        state_value({"__raw__": {"codec": "json", "base64": "%%"}}),
        "base64",
    ),
    tip("state __raw__ a list", state_value({"__raw__": [1]}), "__raw__"),
    tip(
        "state __raw__ other codec",
        state_value({"__raw__": {"codec": "pickle", "base64": ""}}),
        "codec",
    ),
    tip(
        "state __raw__ not JSON",
        state_value({"__raw__": {"codec": "json", "base64": "/w=="}}),
        "UTF-8",
    ),
    tip("state bytes under JSON codec", state_value({"__bytes__": "AA=="}), "bytes"),
    tip("state under an unknown codec", edit_info(state_codec="zzz"), "unknown serializer"),
    Case("state int with 5000 digits", long_integer_digits, "not valid JSON"),
    tip("message not JSON", message_file(b"{"), "messages/0000/000002-assistant.json is not valid"),
    tip("message a list", message_file(b"[1]"), "must hold a JSON object"),
    tip("message bad float marker", message_file(b'{"x": {"__float__": "abc"}}'), "__float__"),
    tip("message bad map marker", message_file(b'{"x": {"__map__": [1]}}'), "__map__"),
    tip("message unhashable map key", message_file(b'{"x": {"__map__": [[{}, 1]]}}'), "key"),
    tip("message bad dict marker", message_file(b'{"x": {"__dict__": 3}}'), "__dict__"),
    tip("message int too large", message_file(b'{"x": 2361183241434822606848}'), "stored"),
    tip("message too deep to store", message_file(f'{{"x": {deep(600)}}}'.encode()), "deep"),
    tip(
        "message file badly named",
        edit_messages(rename_message(b"000000-user.json", b"abc.json")),
        "named like",
    ),
    tip(
        "message name not UTF-8",
        edit_messages(rename_message(b"000000-user.json", b"\xff-u.json")),
        "not UTF-8",
    ),
    tip(
        "message numbers with a gap",
        edit_messages(rename_message(b"000002-assistant.json", b"000009-a.json")),
        "without gaps",
    ),
    tip(
        "message numbers repeated",
        edit_messages(rename_message(b"000002-assistant.json", b"000001-a.json")),
        "number 1",
    ),
    tip(
        "message a submodule",
        edit_messages(set_entry(b"000002-assistant.json", GITLINK, b"3" * 40)),
        "submodule",
    ),
    tip(
        "message a folder", edit_messages(set_entry(b"000002-assistant.json", TREE, None)), "folder"
    ),
    tip("messages a file", set_entry(b"messages", FILE), "messages is a file"),
    tip(
        "message folder badly named",
        edit_message_folders(rename_message(b"0000", b"first")),
        "folders named by number",
    ),
    tip(
        "message folder a file",
        edit_message_folders(set_entry(b"0000", FILE)),
        "messages/0000 is a file",
    ),
    tip(
        "message folders with a gap",
        edit_message_folders(rename_message(b"0000", b"0001")),
        "messages/0001 must hold messages 100 to 199",
    ),
    tip(
        "message folder not full before the next",
        edit_message_folders(split_folder),
        "holds 3 messages where every folder but the last holds 100",
    ),
    tip(
        "message in the wrong folder",
        edit_messages(rename_message(b"000003-assistant.json", b"000103-assistant.json")),
        "messages/0000 must hold messages 0 to 99",
    ),
    tip(
        "message number repeated by an appended file",
        edit_messages(append_a_repeated_number),
        "two message files have number 1",
    ),
    tip(
        "message folder number repeated",
        edit_message_folders(lambda git, entries: entries.update({b"00": entries[b"0000"]})),
        "two message folders have number 0",
    ),
    tip(
        "message folder empty",
        edit_message_folders(empty_folder),
        "is empty",
    ),
    tip(
        "format 1 named over a format 2 tree",
        edit_info(format=1),
        "unexpected file messages/'0000'",
    ),
    tip("state.json a symlink", set_entry(b"state.json", LINK), "symbolic link"),
    tip("statevcs.json a submodule", set_entry(b"statevcs.json", GITLINK, b"4" * 40), "submodule"),
    tip(
        "extras.json missing object",
        set_entry(b"extras.json", FILE, b"5" * 40),
        "not in the mirror",
    ),
    Case("missing parent commit", missing_parent, "not in the mirror"),
    Case("ref to a missing object", ref_to_missing_object, "missing"),
    Case("ref name not UTF-8", non_utf8_ref, "ref named"),
    Case("damaged object", damaged_object, "damaged|not in the mirror"),
    tip("files changed under a recorded snapshot", state_value(99), "rebuild", leaves_objects=True),
    tip(
        "message changed under a recorded commit",
        edit_info(message="edited"),
        "rebuilds commit",
        leaves_objects=True,
    ),
]


def test_at_least_24_kinds_of_malformation() -> None:
    assert len(CASES) >= 24
    assert len({case.name for case in CASES}) == len(CASES)


def digest_tree(root: Path, skip: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*"))
        if p.is_file() and skip not in p.parents
    }


@pytest.fixture
def target(tmp_path: Path) -> Iterator[statevcs.Repo]:
    with statevcs.Repo.init(tmp_path / "target", author="me <me@example.com>") as repo:
        repo.commit({"mine": 1}, "my own history")
        repo.branch("keep")
        yield repo


@pytest.mark.parametrize("case", CASES, ids=repr)
def test_malformed_mirrors_raise_statevcs_errors_and_change_nothing(
    case: Case,
    base_mirror: Path,
    tmp_path: Path,
    target: statevcs.Repo,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mirror = tmp_path / "mirror.git"
    shutil.copytree(base_mirror, mirror)
    with GitRepo(str(mirror)) as git_repo:
        case.breaks(git_repo)
    refs, reflog, objects = target.refs.as_hex(), target.reflog("main"), target.stats().objects
    outside = digest_tree(tmp_path, tmp_path / "target")

    with pytest.raises(StateVCSError) as raised:
        import_git(target, mirror)
    assert isinstance(raised.value, GitMirrorError), repr(raised.value)
    message = str(raised.value)
    assert __import__("re").search(case.match, message), message
    assert target.refs.as_hex() == refs
    assert target.reflog("main") == reflog
    if not case.leaves_objects:
        assert target.stats().objects == objects
    assert digest_tree(tmp_path, tmp_path / "target") == outside
    # A fresh handle agrees: nothing is half-written.
    with statevcs.Repo.open(tmp_path / "target") as again:
        assert again.refs.as_hex() == refs
        assert again.fsck().ok


@pytest.mark.parametrize("batch", [1, 2])
def test_an_import_failing_after_it_stored_batches_moves_no_ref(
    batch: int,
    base_mirror: Path,
    tmp_path: Path,
    target: statevcs.Repo,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Imports store a transaction per _BATCH_COMMITS commits: with batches of 1 or 2, the
    # first commits are stored before the tip fails to rebuild. Refs move only at the end.
    monkeypatch.setattr("statevcs.mirror.git.import_._BATCH_COMMITS", batch)
    mirror = tmp_path / "mirror.git"
    shutil.copytree(base_mirror, mirror)
    with GitRepo(str(mirror)) as git_repo:
        amend_tip(git_repo, state_value(99))
    refs, reflog = target.refs.as_hex(), target.reflog("main")
    with pytest.raises(GitMirrorError, match="rebuild"):
        import_git(target, mirror)
    assert target.refs.as_hex() == refs and target.reflog("main") == reflog
    with statevcs.Repo.open(tmp_path / "target") as again:
        assert again.refs.as_hex() == refs
        assert again.fsck().ok
    # The same handle imports the repaired mirror afterwards, with every id as exported.
    shutil.rmtree(mirror)
    shutil.copytree(base_mirror, mirror)
    report = import_git(target, mirror)
    with GitRepo(str(mirror)) as git_repo:
        tip = git_repo[git_repo.refs[b"refs/heads/main"]]
        info = json.loads(
            git_repo[
                dict((e.path, e.sha) for e in git_repo[tip.tree].items())[b"statevcs.json"]
            ].data
        )
    assert "refs/heads/main" in report.refs_skipped  # the target's own main diverges
    assert len(list(target.log(info["commit"]))) == 3
    assert target.fsck().ok


def test_per_commit_errors_name_the_commit(base_mirror: Path, tmp_path: Path) -> None:
    mirror = tmp_path / "mirror.git"
    shutil.copytree(base_mirror, mirror)
    with GitRepo(str(mirror)) as git_repo:
        amend_tip(git_repo, set_file(b"state.json", b"[]"))
        sha = git_repo.refs[b"refs/heads/main"].decode()
    with pytest.raises(GitMirrorError, match=f"git commit {sha} cannot be imported"):
        import_git(statevcs.Repo.init("memory://"), mirror)


def test_huge_files_are_refused(
    base_mirror: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mirror = tmp_path / "mirror.git"
    shutil.copytree(base_mirror, mirror)
    with GitRepo(str(mirror)) as git_repo:
        amend_tip(git_repo, set_file(b"state.json", b'{"big": "' + b"x" * 5000 + b'"}'))
    monkeypatch.setattr("statevcs.mirror.git.layout.MAX_FILE_SIZE", 4096)
    repo = statevcs.Repo.init("memory://")
    with pytest.raises(GitMirrorError, match="MAX_FILE_SIZE"):
        import_git(repo, mirror)
    assert repo.refs.as_hex() == {}


def test_unknown_files_are_ignored_with_a_warning(base_mirror: Path, tmp_path: Path) -> None:
    mirror = tmp_path / "mirror.git"
    shutil.copytree(base_mirror, mirror)
    with GitRepo(str(mirror)) as git_repo:
        amend_tip(git_repo, set_file(b"README.md", b"notes\n"))
    repo = statevcs.Repo.init("memory://")
    report = import_git(repo, mirror)
    assert report.commits_imported == 3
    assert any("README.md" in w for w in report.warnings)


def test_a_long_history_imports_without_recursion(base_mirror: Path, tmp_path: Path) -> None:
    mirror = tmp_path / "mirror.git"
    shutil.copytree(base_mirror, mirror)
    length = 3_000
    with GitRepo(str(mirror)) as git_repo:
        head = git_repo.refs[b"refs/heads/main"]
        tree_sha = git_repo[head].tree
        for n in range(length):
            head = commit(git_repo, tree_sha, [head], f"git commit {n}\n".encode())
        git_repo.refs[b"refs/heads/main"] = head
    repo = statevcs.Repo.init("memory://")
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(400)  # far less than the history is long
    try:
        report = import_git(repo, mirror)
    finally:
        sys.setrecursionlimit(limit)
    assert (report.commits_imported, report.commits_from_git) == (length + 3, length)
    assert repo.get_commit("main").message == f"git commit {length - 1}"


# --- fuzzing statevcs.json and the JSON mapping ---------------------------------------------------

json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats() | st.text(max_size=6),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["__bytes__", "__float__", "__map__", "__dict__", "__raw__", "a"]),
            inner,
            max_size=2,
        )
    ),
    max_leaves=8,
)
fields = st.sampled_from(
    [
        "format",
        "commit",
        "parents",
        "snapshot",
        "kind",
        "state_codec",
        "author",
        "timestamp",
        "message",
        "metadata",
    ]
)


@settings(max_examples=60, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(field=fields, value=json_values)
def test_fuzzed_statevcs_json_raises_only_statevcs_errors(
    base_mirror: Path, tmp_path_factory: pytest.TempPathFactory, field: str, value: Any
) -> None:
    mirror = tmp_path_factory.mktemp("fuzz") / "mirror.git"
    shutil.copytree(base_mirror, mirror)
    with GitRepo(str(mirror)) as git_repo:
        amend_tip(git_repo, edit_info(**{field: value}))
    repo = statevcs.Repo.init("memory://")
    try:
        import_git(repo, mirror)
    except StateVCSError:
        assert repo.refs.as_hex() == {}


@settings(max_examples=300)
@given(json_values)
def test_from_json_raises_only_mirror_errors(value: Any) -> None:
    try:
        decoded = from_json(value)
    except GitMirrorError:
        return
    # Whatever decodes can be written back and decodes to the same thing.
    again = from_json(json.loads(json.dumps(to_json(decoded))))
    assert json.dumps(to_json(again), sort_keys=True) == json.dumps(
        to_json(decoded), sort_keys=True
    )


def test_deep_values_round_trip_without_recursion() -> None:
    value: Any = "leaf"
    for n in range(MAX_DEPTH - 1):
        value = [value] if n % 2 else {"k": value, 1: b"x"}
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(200)
    try:
        back = from_json(to_json(value))
    finally:
        sys.setrecursionlimit(limit)
    assert back == value
    with pytest.raises(GitMirrorError, match="deep"):
        to_json([value, [[[value]]]])
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    with pytest.raises(GitMirrorError, match="deep"):
        to_json(cyclic)
