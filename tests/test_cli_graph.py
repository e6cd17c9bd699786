"""``log --graph`` orders and draws history as ``git log --graph`` does (issue 8, section 5).

The differential tests build one history in statevcs, export it with ``export_git`` and
compare ``statevcs log --graph`` with ``git log --graph --format=%s --all`` on the mirror, row
by row: the graph characters and the message of each commit.
"""

from __future__ import annotations

import random
import re
import shutil
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from test_cli import invoke

from statevcs import Repo
from statevcs.cli import graph_order, graph_rows
from statevcs.mirror.git import export_git
from statevcs.snapshot import Snapshot

T0 = datetime(2025, 1, 1, tzinfo=UTC)
# "<12 hex> (decorations) " between the graph and the message of a commit row.
_ID_AND_REFS = re.compile(r"[0-9a-f]{12}(?: \([^)]*\))? ")

History = tuple[list[tuple[str, list[str]]], dict[str, str]]
"""Commits (message, parent messages) oldest first, and branch name -> message of its head."""

HISTORIES: dict[str, History] = {
    "linear": ([("a", []), ("b", ["a"]), ("c", ["b"]), ("d", ["c"])], {"main": "d"}),
    "branch and merge": (
        [
            ("a", []),
            ("b", ["a"]),
            ("f1", ["a"]),
            ("c", ["b"]),
            ("merge feature", ["c", "f1"]),
            ("d", ["merge feature"]),
        ],
        {"main": "d", "feature": "f1"},
    ),
    "two interleaved branches with merges": (
        [
            ("a", []),
            ("x1", ["a"]),
            ("y1", ["a"]),
            ("m1", ["a"]),
            ("x2", ["x1"]),
            ("merge x", ["m1", "x2"]),
            ("y2", ["y1"]),
            ("x3", ["x2"]),
            ("merge y", ["merge x", "y2"]),
            ("y3", ["y2"]),
            ("merge x again", ["merge y", "x3"]),
            ("m2", ["merge x again"]),
        ],
        {"main": "m2", "x": "x3", "y": "y3"},
    ),
    "criss-cross": (
        [
            ("a", []),
            ("b1", ["a"]),
            ("c1", ["a"]),
            ("b2 takes c1", ["b1", "c1"]),
            ("c2 takes b1", ["c1", "b1"]),
            ("b3", ["b2 takes c1"]),
            ("c3", ["c2 takes b1"]),
            ("merge both", ["b3", "c3"]),
        ],
        {"main": "merge both", "b": "b3", "c": "c3"},
    ),
    "merge of a merge": (
        [
            ("a", []),
            ("f1", ["a"]),
            ("g1", ["f1"]),
            ("f2", ["f1"]),
            ("feature takes g", ["f2", "g1"]),
            ("m1", ["a"]),
            ("main takes feature", ["m1", "feature takes g"]),
            ("d", ["main takes feature"]),
        ],
        {"main": "d", "feature": "feature takes g", "g": "g1"},
    ),
    "octopus and unrelated roots": (
        [
            ("a", []),
            ("p1", ["a"]),
            ("p2", ["a"]),
            ("p3", ["a"]),
            ("octopus", ["p1", "p2", "p3"]),
            ("lonely root", []),
            ("lonely tip", ["lonely root"]),
        ],
        {"main": "octopus", "p3": "p3", "orphan": "lonely tip"},
    ),
}


def build(path: Path, history: History) -> Repo:
    """Write ``history`` (one commit every 10 s) into a new repository at ``path``."""
    commits, heads = history
    repo = Repo.init(path)
    snapshot = repo.objects.write_snapshot(Snapshot(kind="dict", messages=[], state={}, extras={}))
    ids: dict[str, bytes] = {}
    for number, (message, parents) in enumerate(commits):
        ids[message] = repo.objects.write_commit(
            snapshot,
            [ids[p] for p in parents],
            message=message,
            author=repo.author,
            timestamp=T0 + timedelta(seconds=10 * number),
        )
    for branch, head in heads.items():
        repo.refs.set(f"refs/heads/{branch}", ids[head])
    return repo


def ours(path: Path, *args: str) -> list[str]:
    out = invoke("--repo", path, "log", "--graph", *args).stdout
    return [_ID_AND_REFS.sub("", line, count=1).rstrip() for line in out.splitlines()]


def gits(mirror: Path, *args: str) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(mirror), "log", "--graph", "--format=%s", *args],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [line.rstrip() for line in out.splitlines()]


needs_git = pytest.mark.skipif(
    shutil.which("git") is None, reason="the differential tests compare with the git CLI"
)


@pytest.fixture(scope="module", params=sorted(HISTORIES))
def mirrored(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository holding one of HISTORIES, with its git mirror beside it in ``mirror``."""
    root = tmp_path_factory.mktemp("graph")
    with build(root / "repo", HISTORIES[request.param]) as repo:
        export_git(repo, root / "mirror")
    return root


@needs_git
def test_graph_matches_git_log_graph(mirrored: Path) -> None:
    assert ours(mirrored / "repo") == gits(mirrored / "mirror", "--all")


@needs_git
@pytest.mark.parametrize(
    ("our_args", "git_args"),
    [
        (["--first-parent"], ["--first-parent", "--all"]),
        (["-n", "4"], ["-n", "4", "--all"]),
        (["main"], ["main"]),
        (["-n", "3", "main"], ["-n", "3", "main"]),
    ],
    ids=["first-parent", "limit", "one-branch", "one-branch-limit"],
)
def test_graph_options_match_git(mirrored: Path, our_args: list[str], git_args: list[str]) -> None:
    assert ours(mirrored / "repo", *our_args) == gits(mirrored / "mirror", *git_args)


def random_history(rng: random.Random, size: int) -> History:
    """Branches forking anywhere and merging (sometimes three ways) into each other."""
    commits: list[tuple[str, list[str]]] = [("c0", [])]
    heads = {"main": "c0"}
    for number in range(1, size):
        name = f"c{number}"
        into = rng.choice(sorted(heads))
        roll = rng.random()
        if roll < 0.2 and len(heads) < 5:
            commits.append((name, [rng.choice(commits)[0]]))
            heads[f"b{number}"] = name
            continue
        others = [b for b in sorted(heads) if b != into]
        if roll < 0.45 and others:
            merged = rng.sample(others, k=min(len(others), 2 if rng.random() < 0.15 else 1))
            parents = list(dict.fromkeys([heads[into], *(heads[b] for b in merged)]))
            commits.append((name, parents))
            if rng.random() < 0.5 and merged[0] != "main":
                del heads[merged[0]]
        else:
            commits.append((name, [heads[into]]))
        heads[into] = name
    return commits, heads


@needs_git
@pytest.mark.parametrize("seed", range(12))
def test_random_histories_match_git(seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    with build(tmp_path / "repo", random_history(rng, rng.randint(5, 40))) as repo:
        export_git(repo, tmp_path / "mirror")
    assert ours(tmp_path / "repo") == gits(tmp_path / "mirror", "--all")
    assert ours(tmp_path / "repo", "--first-parent") == gits(
        tmp_path / "mirror", "--first-parent", "--all"
    )


# --- the layout functions without git ------------------------------------------------------


def test_a_merge_opens_a_column_for_its_second_parent() -> None:
    order = graph_order({"M": ["b", "r"], "r": ["a"], "b": ["a"], "a": []}, ["M"])
    assert order == ["M", "r", "b", "a"]  # the second parent's line first, as git shows it
    rows = graph_rows([(c, {"M": ["b", "r"], "r": ["a"], "b": ["a"], "a": []}[c]) for c in order])
    assert rows == [
        ("*   ", "M"),
        ("|\\", None),
        ("| * ", "r"),
        ("* | ", "b"),
        ("|/", None),
        ("* ", "a"),
    ]


def test_a_merge_never_crosses_another_branchs_lane() -> None:
    # x's line is open to the right while M merges r: r gets a new column right of M.
    parents = {"x": ["a"], "M": ["b", "r"], "r": ["a"], "b": ["a"], "a": []}
    rows = [row for row, _ in graph_rows([(c, parents[c]) for c in ["x", "M", "r", "b", "a"]])]
    # (what git 2.39 prints for this history)
    assert rows == ["* ", "| *   ", "| |\\", "| | * ", "| |/", "|/|", "| * ", "|/", "* "]


def test_graph_order_keeps_a_branch_together_whatever_the_dates() -> None:
    # git's --date-order would interleave f1 and m1 by time; --topo-order keeps f's commits
    # together after the merge.
    parents = {"M": ["m2", "f2"], "m2": ["m1"], "f2": ["f1"], "m1": ["a"], "f1": ["a"], "a": []}
    assert graph_order(parents, ["M"]) == ["M", "f2", "f1", "m2", "m1", "a"]


def test_graph_order_starts_from_the_tips_in_the_given_order() -> None:
    parents = {"t1": ["a"], "t2": ["a"], "a": []}
    assert graph_order(parents, ["t2", "t1"]) == ["t2", "t1", "a"]
    assert graph_order(parents, ["t1", "t2", "a"]) == ["t1", "t2", "a"]


def test_octopus_merge_rows() -> None:
    parents = {"o": ["a", "b", "c"], "a": [], "b": [], "c": []}
    rows = graph_rows([(c, parents[c]) for c in graph_order(parents, ["o"])])
    assert rows[0] == ("*-.   ", "o") and rows[1] == ("|\\ \\", None)
    assert [c for _, c in rows if c] == ["o", "c", "b", "a"]


def test_parents_cut_off_keep_their_lines_open() -> None:
    rows = graph_rows([("M", ["b", "r"])])
    assert rows == [("*   ", "M"), ("|\\", None)]
