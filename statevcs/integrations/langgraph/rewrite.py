"""Rewrites of one namespace's checkpoint commits (planned here, applied by the saver).

Commits are content-addressed, so moving a commit onto another parent means a new commit for
it and for each of its descendants (sharing every snapshot). Two rewrites:

* :func:`without` drops checkpoints (``delete_for_runs``, ``prune``): the kept children of a
  dropped commit move onto its nearest kept ancestor;
* :class:`Replacement` puts a checkpoint id again: its old commit goes, the new one hangs
  under the parent it was put under, and the old commit's children move onto the new one,
  so each checkpoint's commit parent stays the checkpoint its ``parent_config`` names, as
  LangGraph's savers follow it (``get_delta_channel_history``). Only a parent-id cycle (a
  checkpoint put again under its own descendant) cannot be a commit graph: the child on
  that path moves onto the old commit's nearest kept ancestor instead.

Every checkpoint not put again or dropped stays, whatever moved around it; a commit left with
no child becomes a head. Rewritten commits get their ``max_id`` (the greatest id in their
history, see :func:`store.id_bound`) again, so ``list`` keeps its order and cost.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from ...commitfields import canonical_metadata
from ...hashing import ObjectId
from ...idindex import GAP_FIELD, INDEX_FIELD
from ...objects import CommitObject
from ...objects import decode as decode_object
from ...repo import Repo
from . import store

_NEW: ObjectId = b""
"""The key of the commit being put (its id is known only once its parent's is)."""


@dataclass
class Plan:
    """A namespace rewritten (objects not written yet)."""

    commits: dict[ObjectId, store.Stored]
    """Every commit of the namespace before the rewrite."""
    drop: set[ObjectId]
    """The commits whose checkpoints go."""
    objects: dict[ObjectId, bytes]
    """The new commits' encodings."""
    heads: dict[ObjectId, str]
    """The new heads -> their checkpoint ids."""
    image: dict[ObjectId, ObjectId]
    """Each kept commit (and ``b""``, the one put) -> its commit after the rewrite."""


def without(repo: Repo, heads: store.Heads, dropped: Callable[[store.Stored], bool]) -> Plan:
    """Plan the rewrite of a namespace without the checkpoints ``dropped`` selects."""
    commits = {s.commit_id: s for s in store.all_commits(repo, heads)}
    drop = {c for c, s in commits.items() if dropped(s)}
    if not drop:
        return Plan(commits, drop, {}, {}, {})
    parent_of = {c: _kept_ancestor(commits, drop, _first_parent(s)) for c, s in commits.items()}
    for commit_id in drop:
        del parent_of[commit_id]
    image, objects, new_heads = _rebuild(repo, commits, parent_of, None)
    return Plan(commits, drop, objects, new_heads, image)


@dataclass
class Replacement:
    """A checkpoint id put again: the old commits of that id, and where every commit goes."""

    commits: dict[ObjectId, store.Stored]
    olds: list[store.Stored]
    """The commits of the id (one, unless an older version of the saver left two)."""
    parent_of: dict[ObjectId, ObjectId | None]
    """Each kept commit (and ``b""``, the new one) -> its new parent (before the rewrite)."""

    @classmethod
    def prepare(
        cls, repo: Repo, heads: store.Heads, checkpoint_id: str, base: ObjectId | None
    ) -> Replacement:
        """Read the namespace and plan how ``checkpoint_id``'s commits give way to a new one
        on ``base`` (a commit of the namespace, or ``None`` for a root).

        Each commit goes onto the commit of the checkpoint its ``parent_config`` names (the
        new one for the id put again), else stays where it is (the new commit taking the old
        one's place, else the old one's nearest kept ancestor). A parent-id cycle gives way
        at an edge into the new commit first, else at an edge that is not a commit edge now.
        """
        commits = {s.commit_id: s for s in store.all_commits(repo, heads)}
        olds = [s for s in commits.values() if s.checkpoint_id == checkpoint_id]
        old_ids = {s.commit_id for s in olds}
        by_id: dict[str, ObjectId] = {checkpoint_id: _NEW}
        for commit_id, found in commits.items():
            if commit_id not in old_ids:
                by_id.setdefault(found.checkpoint_id, commit_id)
        choices: dict[ObjectId, list[ObjectId | None]] = {
            _NEW: [_kept_ancestor(commits, old_ids, base)]
        }
        for commit_id, found in commits.items():
            if commit_id in old_ids:
                continue
            options: list[ObjectId | None] = []
            named = found.parent_checkpoint_id
            if named is not None and named != found.checkpoint_id and named in by_id:
                options.append(by_id[named])
            parent = _first_parent(found)
            if parent in old_ids:
                options.append(_NEW)
            options.append(_kept_ancestor(commits, old_ids, parent))
            choices[commit_id] = list(dict.fromkeys(options))
        return cls(commits, olds, _acyclic(choices))

    def cut_folded(self, repo: Repo) -> store.Writes:
        """The old commits' pending writes carried by a child that leaves them for another
        commit than the new one (whose lead it would have stayed)."""
        writes: store.Writes = {}
        old_ids = {s.commit_id for s in self.olds}
        leaving = [
            found
            for commit_id, found in sorted(self.commits.items())
            if _first_parent(found) in old_ids and self.parent_of.get(commit_id) != _NEW
        ]
        for old in self.olds:
            for child in store.folding(leaving, old):
                writes = store.merge_writes(writes, store.folded_writes(repo, child))
        return writes

    def finish(self, repo: Repo, built: store.Built) -> Plan:
        """The rewrite with ``built`` (a commit on the planned parent) in the old commits'
        place."""
        commit = decode_object(built.commit_id, built.objects[built.commit_id], check_hash=False)
        assert isinstance(commit, CommitObject)
        image, objects, new_heads = _rebuild(repo, self.commits, self.parent_of, commit)
        # The commit itself is encoded again on its parent's image (with its max_id).
        objects.update({k: v for k, v in built.objects.items() if k != built.commit_id})
        return Plan(self.commits, {s.commit_id for s in self.olds}, objects, new_heads, image)


def _acyclic(
    choices: Mapping[ObjectId, list[ObjectId | None]],
) -> dict[ObjectId, ObjectId | None]:
    """Each key's first choice of parent, falling back along its list where that closes a
    cycle. The last choice of every key but ``b""`` is one of its ancestors in the (acyclic)
    commit graph and no last choice is ``b""``, so some edge of any cycle can fall back; a
    cycle gives way at an edge into ``b""`` first."""
    picked = dict.fromkeys(choices, 0)
    while True:
        parent_of = {k: choices[k][picked[k]] for k in choices}
        cycles = _cycles(parent_of)
        if not cycles:
            return parent_of
        for cycle in cycles:
            movable = [k for k in cycle if k != _NEW and picked[k] < len(choices[k]) - 1]
            into_new = [k for k in movable if parent_of[k] == _NEW]
            if not movable:
                raise AssertionError("a cycle of commit edges")
            picked[(into_new or movable)[0]] += 1


def _cycles(parent_of: Mapping[ObjectId, ObjectId | None]) -> list[list[ObjectId]]:
    """The cycles of a graph where each key has at most one parent."""
    state: dict[ObjectId, int] = {}  # 1: on the current path, 2: done
    found: list[list[ObjectId]] = []
    for start in parent_of:
        path: list[ObjectId] = []
        current: ObjectId | None = start
        while current is not None and current not in state:
            state[current] = 1
            path.append(current)
            current = parent_of.get(current)
        if current is not None and state[current] == 1:
            found.append(path[path.index(current) :])
        for key in path:
            state[key] = 2
    return found


def _first_parent(found: store.Stored) -> ObjectId | None:
    return found.commit.parents[0] if found.commit.parents else None


def _kept_ancestor(
    commits: Mapping[ObjectId, store.Stored], drop: set[ObjectId], commit_id: ObjectId | None
) -> ObjectId | None:
    """``commit_id`` or its nearest ancestor not in ``drop`` (``None``: none)."""
    while commit_id is not None and commit_id in drop:
        commit_id = _first_parent(commits[commit_id])
    return commit_id


def _id(
    commits: Mapping[ObjectId, store.Stored], key: ObjectId, new: CommitObject | None = None
) -> str:
    """The checkpoint id of ``key`` (``b""``: of ``new``)."""
    if key == _NEW:
        assert new is not None
        return str(new.metadata[store.INFO]["checkpoint_id"])
    return commits[key].checkpoint_id


def _rebuild(
    repo: Repo,
    commits: Mapping[ObjectId, store.Stored],
    parent_of: Mapping[ObjectId, ObjectId | None],
    new: CommitObject | None,
) -> tuple[dict[ObjectId, ObjectId], dict[ObjectId, bytes], dict[ObjectId, str]]:
    """Each commit of ``parent_of`` (an acyclic forest: key -> its new parent) on its new
    parent: the same commit when its parent did not change, else a new one sharing its
    snapshot. ``new`` is the commit under key ``b""``. Returns the images, the new commits'
    encodings and the heads (images that are no image's parent) with their checkpoint ids."""
    image: dict[ObjectId, ObjectId] = {}
    bounds: dict[ObjectId, str] = {}
    objects: dict[ObjectId, bytes] = {}
    for start in parent_of:
        # Iterative: a thread's history is longer than Python's recursion limit.
        chain: list[ObjectId] = []
        current: ObjectId | None = start
        while current is not None and current not in image:
            chain.append(current)
            current = parent_of[current]
            if len(chain) > len(parent_of):
                raise AssertionError("a rewrite planned a cycle")
        for key in reversed(chain):
            parent = parent_of[key]
            parents = (image[parent],) if parent is not None else ()
            if key == _NEW:
                assert new is not None
                commit = new
            else:
                commit = commits[key].commit
            info = dict(commit.metadata.get(store.INFO) or {})
            checkpoint_id = info["checkpoint_id"]
            bound = max(checkpoint_id, bounds[parent]) if parent is not None else checkpoint_id
            if key != _NEW and parents == commit.parents:
                image[key] = key
                bounds[key] = store.id_bound(commits[key])  # the same history: still true
                continue
            if key != _NEW and store.FOLDED in info:
                # Its parent's pending writes count only while it leads that parent's commit;
                # a child moved elsewhere had them saved for the parent by the caller.
                named = commits[key].parent_checkpoint_id
                before = commit.parents[:1]
                was = bool(before) and before[0] in commits and _id(commits, before[0]) == named
                if not (was and parent is not None and _id(commits, parent, new) == named):
                    del info[store.FOLDED]
            if parents != commit.parents:
                # A lineage index describes the history the commit had: a moved commit has
                # none (its children write a new one).
                info.pop(INDEX_FIELD, None)
                info.pop(GAP_FIELD, None)
            if bound > checkpoint_id:
                info["max_id"] = bound
            else:
                info.pop("max_id", None)
            moved = CommitObject(
                snapshot=commit.snapshot,
                parents=parents,
                author=commit.author,
                timestamp_us=commit.timestamp_us,
                message=commit.message,
                metadata=canonical_metadata({**commit.metadata, store.INFO: info}),
            )
            commit_id, encoded = repo.objects.encode_commit(moved)
            objects[commit_id] = encoded
            image[key] = commit_id
            bounds[key] = bound
    below = {image[p] for p in parent_of.values() if p is not None}
    heads: dict[ObjectId, str] = {}
    for key, commit_id in image.items():
        if commit_id not in below:
            found = new if key == _NEW else commits[key].commit
            assert found is not None
            heads[commit_id] = found.metadata[store.INFO]["checkpoint_id"]
    return image, objects, heads


__all__ = ["Plan", "Replacement", "without"]
