"""Differential test: revision expressions and reflogs against the ``git`` CLI.

How it works:

1. A statevcs repository gets a history through the public API (commits of fresh snapshots,
   branches, tags, remote-tracking refs, merges, resets, switches, a deleted and re-created
   branch, branches named like hashes), scripted and then seeded-random.
2. After every operation it is exported with ``export_git`` into a bare mirror, so every
   commit any ref or reflog ever named exists in git. The statevcs id -> git id map is read back
   from the ``statevcs.json`` file in each mirror commit's tree.
3. The mirror's own reflogs are dulwich's record of the exports, not of the operations, so a
   second git repository (the *replay*) borrows the mirror's objects (``objects/info/alternates``)
   and re-does every operation with the git CLI: each ref the operation moved, created or
   deleted goes through ``git update-ref`` (git itself decides whether ``HEAD``'s reflog also
   records it, as ``git commit``/``git reset`` do), and each switch is a ``git switch``. The
   replay runs with ``core.logAllRefUpdates=always`` because statevcs keeps a reflog for every
   ref, tags included.
4. Checked: the refs (mirror and replay) and every reflog (replay) match statevcs's; then
   several hundred revision expressions -- names, ``heads/x``, ``tags/x``, ``refs/...``,
   remote-tracking lookups, ``~n``, ``^n``, chains, ``x@{n}``, ``@{n}``, ``HEAD@{n}``, hash
   prefixes and full ids (written with git's ids on the git side) -- resolve to the same commit
   as ``git rev-parse --verify EXPR^{commit}`` or fail in both, and warn "ambiguous" in both or
   in neither.

``STATEVCS_DIFF_EXPRESSIONS`` (default 800) sets how many expressions are compared;
``STATEVCS_DIFF_RANDOM_OPS`` (default 40) how many random operations follow the script. Run with
``-s`` to see the agreement counts.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
import warnings
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

pytest.importorskip(
    "dulwich", reason="dulwich is not installed (pip install -e '.[git]'): no git mirror to test"
)

from statevcs import Repo, Snapshot
from statevcs.errors import MergeConflict, StateVCSError
from statevcs.mirror.git import export_git
from statevcs.revisions import AmbiguousRefWarning

pytestmark = [
    pytest.mark.skipif(
        shutil.which("git") is None, reason="the git CLI is not installed: nothing to compare with"
    ),
    pytest.mark.slow,
]

EXPRESSIONS = int(os.environ.get("STATEVCS_DIFF_EXPRESSIONS", "800"))
RANDOM_OPS = int(os.environ.get("STATEVCS_DIFF_RANDOM_OPS", "40"))
T0 = datetime(2024, 1, 1, tzinfo=UTC)
GIT_ENV = {
    **os.environ,
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_AUTHOR_NAME": "replay",
    "GIT_AUTHOR_EMAIL": "replay@localhost",
    "GIT_COMMITTER_NAME": "replay",
    "GIT_COMMITTER_EMAIL": "replay@localhost",
    "LC_ALL": "C",  # git's messages ("is ambiguous") in English
}


def git(cwd: Path, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args],
        cwd=cwd,
        env=GIT_ENV,
        input=stdin,
        capture_output=True,
        text=True,
        encoding="utf-8",
        check=False,
        timeout=120,
    )


def git_ok(cwd: Path, *args: str, stdin: str | None = None) -> str:
    result = git(cwd, *args, stdin=stdin)
    assert result.returncode == 0, f"git {' '.join(args)} failed: {result.stderr}"
    return result.stdout


@dataclass
class Twin:
    """A statevcs repository, its exported mirror, and a git repository replaying its operations."""

    repo: Repo
    mirror: Path
    replay: Path
    to_git: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    minute: int = 0
    ops: int = 0

    @classmethod
    def create(cls, root: Path) -> Twin:
        twin = cls(Repo.init(root / "statevcs"), root / "mirror.git", root / "replay")
        git_ok(root, "init", "-q", "-b", "main", str(twin.replay))
        git_ok(twin.replay, "config", "core.logAllRefUpdates", "always")
        return twin

    # --- keeping the three in step -------------------------------------------------------

    def _statevcs_refs(self) -> dict[str, str]:
        return self.repo.refs.as_hex()

    def _export(self) -> None:
        export_git(self.repo, self.mirror)
        alternates = self.replay / ".git" / "objects" / "info" / "alternates"
        if not alternates.exists():
            alternates.write_text(str((self.mirror / "objects").resolve()) + "\n")
        listing = git_ok(
            self.mirror,
            "cat-file",
            "--batch-all-objects",
            "--batch-check=%(objectname) %(objecttype)",
        )
        known = set(self.to_git.values())
        new = [
            line.split()[0]
            for line in listing.splitlines()
            if line.endswith(" commit") and line.split()[0] not in known
        ]
        if not new:
            return
        out = git_ok(
            self.mirror, "cat-file", "--batch", stdin="".join(f"{s}:statevcs.json\n" for s in new)
        )
        position = 0
        for sha in new:
            header_end = out.index("\n", position)
            size = int(out[position:header_end].split()[2])
            body = out[header_end + 1 : header_end + 1 + size]
            position = header_end + 1 + size + 1
            self.to_git[json.loads(body)["commit"]] = sha

    def apply(self, operation: str, action: object) -> None:
        """Run one statevcs operation, then mirror its ref changes into the replay with git."""
        before = self._statevcs_refs()
        head_before = self.repo.head_branch
        assert callable(action)
        action()
        self.ops += 1
        self._export()
        after = self._statevcs_refs()
        for name in sorted(set(before) | set(after)):
            old, new = before.get(name), after.get(name)
            if old == new:
                continue
            if new is None:
                git_ok(self.replay, "update-ref", "-m", operation, "-d", name)
            else:
                git_ok(self.replay, "update-ref", "-m", operation, name, self.to_git[new])
        head_after = self.repo.head_branch
        if head_after != head_before:
            assert head_after is not None
            git_ok(self.replay, "switch", "-q", "-f", head_after)

    # --- operations ------------------------------------------------------------------------

    def commit(self, label: str, branch: str | None = None) -> str:
        self.minute += 1
        moment = T0 + timedelta(minutes=self.minute)
        # A fresh snapshot each time: never synced, so it commits on the branch tip, and its one
        # key never conflicts in a merge.
        snapshot = Snapshot(kind="dict", state={f"k-{label}": label})
        made: list[str] = []
        self.apply(
            f"commit: {label}",
            lambda: made.append(
                self.repo.commit(snapshot, f"commit {label}", branch=branch, timestamp=moment).id
            ),
        )
        return made[0]

    def branch(self, name: str, start: str) -> None:
        self.apply(f"branch: {name}", lambda: self.repo.branch(name, start))

    def tag(self, name: str, rev: str) -> None:
        self.apply(f"tag: {name}", lambda: self.repo.tag(name, rev))

    def reset(self, branch: str, rev: str) -> None:
        self.apply(f"reset: {branch}", lambda: self.repo.reset(branch, rev))

    def merge(self, target: str, source: str) -> bool:
        self.minute += 1
        moment = T0 + timedelta(minutes=self.minute)
        try:
            self.apply(f"merge {source}", lambda: self.repo.merge(target, source, timestamp=moment))
        except MergeConflict:
            return False
        return True

    def switch(self, name: str) -> None:
        self.apply(f"switch: {name}", lambda: self.repo.switch(name))

    def delete_branch(self, name: str) -> None:
        self.apply(f"delete: {name}", lambda: self.repo.delete_branch(name))

    def set_ref(self, name: str, rev: str) -> None:
        commit_id = self.repo.resolve(rev)
        self.apply(f"set: {name}", lambda: self.repo.refs.set(name, bytes.fromhex(commit_id)))


def build_history(twin: Twin) -> dict[str, str]:
    """Scripted history, then seeded-random operations; return the commits worth naming."""
    labels: dict[str, str] = {}
    for label in ("a", "b", "c"):
        labels[label] = twin.commit(label)
    twin.branch("side", "main~1")
    labels["s1"] = twin.commit("s1", branch="side")
    labels["s2"] = twin.commit("s2", branch="side")
    assert twin.merge("main", "side")
    labels["d"] = twin.commit("d")
    twin.tag("v1", "main~1")
    twin.tag("v0", "main~3")
    # One name, two refs: a tag and a branch.
    twin.branch("dup", "main~2")
    twin.tag("dup", "side~1")
    # 'tags/v1' is refs/tags/v1 and refs/heads/tags/v1; 'heads/main' is refs/heads/main and
    # refs/heads/heads/main.
    twin.branch("tags/v1", "side")
    twin.branch("heads/main", "v0")
    twin.tag("side", "main~2")  # 'side' now means the tag; the branch is heads/side
    twin.set_ref("refs/remotes/origin/main", "main~1")
    twin.set_ref("refs/remotes/origin/HEAD", "v0")
    twin.set_ref("refs/remotes/side", "v1")
    twin.branch("at@x", "v1")
    twin.branch("fé/名", "refs/heads/side")
    twin.switch("side")
    labels["s3"] = twin.commit("s3")
    twin.reset("main", "main~2")  # not HEAD's branch: only main's reflog
    twin.reset("side", "refs/heads/side~1")  # HEAD's branch: HEAD's reflog too
    labels["s4"] = twin.commit("s4")
    twin.switch("main")
    labels["e"] = twin.commit("e")
    twin.merge("main", "refs/heads/side")
    twin.delete_branch("dup")
    twin.branch("dup", "v0")  # a fresh reflog
    # Branches named like hashes: a prefix of commit b (statevcs's and git's spelling), and b's
    # full id (both spellings), all pointing elsewhere.
    b_sv, b_git = labels["b"], twin.to_git[labels["b"]]
    for name in (b_sv[:8], b_git[:8], b_sv, b_git):
        twin.branch(name, "v1")

    rng = random.Random(8)
    branches = ["main", "side", "r0"]
    twin.branch("r0", "main~1")
    for step in range(RANDOM_OPS):
        choice = rng.random()
        head = twin.repo.head_branch or "main"
        commits = list(labels.values())
        if choice < 0.35:
            labels[f"x{step}"] = twin.commit(f"x{step}")
        elif choice < 0.5:
            labels[f"y{step}"] = twin.commit(f"y{step}", branch=rng.choice(branches))
        elif choice < 0.6:
            twin.reset(rng.choice(branches), rng.choice(commits))
        elif choice < 0.7:
            target = rng.choice(branches)
            twin.merge(target, "refs/heads/" + rng.choice([b for b in branches if b != target]))
        elif choice < 0.82:
            other = [b for b in branches if b != head]
            twin.switch(rng.choice(other))
        elif choice < 0.92:
            name = f"r{len(branches)}"
            twin.branch(name, rng.choice(commits))
            branches.append(name)
        else:
            twin.tag(f"t{step}", rng.choice(commits))
    return labels


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Twin]:
    twin = Twin.create(tmp_path_factory.mktemp("differential"))
    with warnings.catch_warnings():
        # Branches named with full commit ids make statevcs's own lookups by id warn (as git
        # would for a user typing the id); the expressions below check the warnings.
        warnings.simplefilter("ignore", AmbiguousRefWarning)
        twin.labels = build_history(twin)
    yield twin
    twin.repo.close()


# --- the repositories agree before any expression is compared ------------------------------


def git_refs(cwd: Path) -> dict[str, str]:
    out = git_ok(cwd, "for-each-ref", "--format=%(objectname) %(refname)")
    return {line.split(" ", 1)[1]: line.split(" ", 1)[0] for line in out.splitlines()}


def test_mirror_and_replay_hold_the_same_refs(twin: Twin) -> None:
    mapped = {name: twin.to_git[value] for name, value in twin.repo.refs.as_hex().items()}
    exported = {n: v for n, v in mapped.items() if n.startswith(("refs/heads/", "refs/tags/"))}
    assert git_refs(twin.mirror) == exported
    assert git_refs(twin.replay) == mapped
    head = git_ok(twin.replay, "symbolic-ref", "HEAD").strip()
    assert head == "refs/heads/" + (twin.repo.head_branch or "")


def git_reflog(cwd: Path, name: str) -> list[tuple[str | None, str | None]]:
    """A reflog file's (old, new) pairs, newest first; the null id becomes ``None``."""
    path = cwd / ".git" / "logs" / name
    if not path.exists():
        return []
    entries = []
    for line in path.read_text("utf-8").splitlines():
        old, new = line.split(" ")[:2]
        entries.append((None if set(old) == {"0"} else old, None if set(new) == {"0"} else new))
    return entries[::-1]


def test_every_reflog_matches_what_git_records_for_the_same_operations(twin: Twin) -> None:
    names = ["HEAD", *twin.repo.refs.as_hex()]
    compared = 0
    for name in names:
        ours = [
            (
                twin.to_git[r.old] if r.old else None,
                twin.to_git[r.new] if r.new else None,
            )
            for r in twin.repo.reflog(name)
        ]
        assert ours == git_reflog(twin.replay, name), name
        compared += len(ours)
    print(f"\nreflogs: {len(names)} refs, {compared} entries, all equal to git's ({twin.ops} ops)")


# --- revision expressions ------------------------------------------------------------------------


@dataclass(frozen=True)
class Expression:
    """The same revision written for statevcs (``ours``) and for git (``theirs``)."""

    ours: str
    theirs: str
    reflog: bool = False
    head: bool = False  # reads HEAD: the mirror's HEAD is not the handle's
    core: bool = False  # always compared; the others are sampled down to EXPRESSIONS

    @property
    def mirror_ok(self) -> bool:
        return not (self.reflog or self.head or "origin" in self.ours or "remotes" in self.ours)


SUFFIXES = [
    "",
    "~",
    "^",
    "~0",
    "^0",
    "~1",
    "~2",
    "~3",
    "^1",
    "^2",
    "^3",
    "^^",
    "~1^2",
    "^2~1",
    "~2^2^",
    "~5",
    "~40",
    "^^2",
    "~1~1",
    "~01",
    f"~{2**31 - 1}",
    f"~{2**31}",
]


def _variants(ours: str, theirs: str, suffixes: list[str], **flags: bool) -> list[Expression]:
    return [Expression(ours + s, theirs + s, core=not s, **flags) for s in suffixes]


def expressions(twin: Twin) -> list[Expression]:
    repo = twin.repo
    labels = twin.labels
    # Branches named like hashes mean different things in the two id spaces: they are compared
    # below as pairs spelled with each side's ids.
    hashlike = re.compile(r"^[0-9a-f]{4,}$")
    branches = [b for b in repo.branches() if not hashlike.match(b)]
    tags = list(repo.tags())
    names = {
        *branches,
        *tags,
        *(f"heads/{b}" for b in branches),
        *(f"tags/{t}" for t in tags),
        *(f"refs/heads/{b}" for b in branches),
        *(f"refs/tags/{t}" for t in tags),
        "origin",
        "origin/main",
        "remotes/origin/main",
        "refs/remotes/origin/HEAD",
        "remotes/side",
        "refs/remotes/side",
        "nope",
        "heads/nope",
        "refs/nope",
        "refs/main",
        "tags/main",
        "heads/v1",
        "refs/heads",
        "heads",
        "remotes/origin",
    }
    cases: list[Expression] = []
    for name in sorted(names):
        cases += _variants(name, name, SUFFIXES)
    for head_name in ("HEAD", "@"):
        cases += _variants(head_name, head_name, SUFFIXES, head=True)

    # Hashes, spelled with each side's ids.
    def matches(prefix: str, ids: list[str]) -> int:
        return sum(1 for i in ids if i.startswith(prefix))

    sv_ids, git_ids = list(twin.to_git), list(twin.to_git.values())
    for ours, theirs in sorted((sv, twin.to_git[sv]) for sv in labels.values()):
        cases += _variants(ours, theirs, ["", "~1", "^2"])
        for length in (4, 5, 7, 12):
            # A short prefix may be unique among one side's ids and shared on the other; such a
            # pair says nothing about the rules, so it is compared only when both sides agree
            # on whether it is ambiguous.
            here, there = matches(ours[:length], sv_ids), matches(theirs[:length], git_ids)
            if (here == 1) == (there == 1):
                cases += _variants(ours[:length], theirs[:length], SUFFIXES[:8])
        cases += _variants(ours.upper()[:10], theirs.upper()[:10], ["", "~1"])
    b_sv, b_git = labels["b"], twin.to_git[labels["b"]]
    for length in (8, 9, len(b_sv)):  # the branch wins / no branch / the full id wins
        git_length = min(length, len(b_git))
        cases += _variants(b_sv[:length], b_git[:git_length], ["", "~1", "^0"])
        for n in range(3):
            cases += _variants(
                f"{b_sv[:length]}@{{{n}}}", f"{b_git[:git_length]}@{{{n}}}", ["", "~1"], reflog=True
            )
    cases += _variants("deadbeef00", "deadbeef00", ["", "~1"])
    # Reflog selectors.
    for name in sorted({"HEAD", "", *names}):
        count = _reflog_length(twin, name)
        reads_head = name in ("HEAD", "")
        for n in [*range(count + 2), 99_999_999]:
            text = f"{name}@{{{n}}}"
            cases += _variants(text, text, ["", "~1", "^2", "^"], reflog=True, head=reads_head)
    unique = list(dict.fromkeys(cases))
    core = [case for case in unique if case.core]
    rest = [case for case in unique if not case.core]
    sampled = random.Random(2024).sample(rest, max(0, min(len(rest), EXPRESSIONS - len(core))))
    return core + sampled


def _reflog_length(twin: Twin, name: str) -> int:
    """How many entries ``name@{n}`` has to choose from (a guess is enough: past it both fail)."""
    candidates = [name] if name else ["refs/heads/" + (twin.repo.head_branch or "main")]
    if name not in ("HEAD", "") and not name.startswith("refs/"):
        candidates = [f"refs/tags/{name}", f"refs/heads/{name}", f"refs/{name}"]
    for full in candidates:
        if full == "HEAD" or full in twin.repo.refs.as_hex():
            return len(twin.repo.reflog(full))
    return 0


@dataclass
class Outcome:
    commit: str | None
    warned: bool


def ours(twin: Twin, text: str) -> Outcome:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            commit = twin.to_git[twin.repo.resolve(text)]
        except StateVCSError:
            commit = None
    return Outcome(commit, any(issubclass(w.category, AmbiguousRefWarning) for w in caught))


def theirs(cwd: Path, text: str) -> Outcome:
    # ``^0`` peels to a commit (and prefers commits among hash-prefix matches) like
    # ``^{commit}``, without its closing brace: git 2.39 re-reads ``main@{2}^2^{commit}`` as
    # a date-based reflog selector when ``^2`` fails, and answers with the oldest entry.
    result = git(cwd, "rev-parse", "--verify", text + "^0")
    commit = result.stdout.strip() if result.returncode == 0 else None
    return Outcome(commit, "is ambiguous" in result.stderr)


def compare(twin: Twin, cwd: Path, cases: list[Expression], where: str) -> list[str]:
    disagreements = []
    resolved = warned = 0
    for case in cases:
        a, b = ours(twin, case.ours), theirs(cwd, case.theirs)
        resolved += a.commit is not None
        warned += a.warned
        if a.commit != b.commit:
            disagreements.append(f"{case.ours!r}: statevcs {a.commit}, git {b.commit}")
        elif a.commit is not None and a.warned != b.warned:
            disagreements.append(f"{case.ours!r}: warning statevcs {a.warned}, git {b.warned}")
    print(
        f"\n{where}: {len(cases) - len(disagreements)}/{len(cases)} expressions agree "
        f"({resolved} resolve, {warned} with an ambiguity warning, "
        f"{sum(case.reflog for case in cases)} reflog selectors)"
    )
    return disagreements


def test_revision_expressions_agree_with_git_on_the_replay(twin: Twin) -> None:
    disagreements = compare(twin, twin.replay, expressions(twin), "replay")
    assert disagreements == [], "\n".join(disagreements)


def test_revision_expressions_agree_with_git_on_the_exported_mirror(twin: Twin) -> None:
    cases = [case for case in expressions(twin) if case.mirror_ok]
    assert compare(twin, twin.mirror, cases, "mirror") == []


def test_the_expressions_cover_what_git_users_write(twin: Twin) -> None:
    cases = expressions(twin)
    texts = {case.ours for case in cases}
    for needed in ("dup", "tags/v1", "heads/main", "origin", "@{1}", "HEAD@{1}", "side@{0}"):
        assert needed in texts
    assert sum(case.reflog for case in cases) >= 100
    assert len(cases) >= min(EXPRESSIONS, 500)
