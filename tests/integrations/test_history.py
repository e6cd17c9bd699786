"""The history tools' shared helpers (``statevcs.integrations.history``)."""

from __future__ import annotations

import statevcs
from statevcs.integrations import history


def test_next_tag_numbers_after_the_highest_and_ignores_other_names(
    repo: statevcs.Repo,
) -> None:
    commit = repo.commit({"messages": []}, message="base")
    folder = f"{history.CHECKPOINTS_PREFIX}/main"
    assert history.next_tag(repo, history.CHECKPOINTS_PREFIX, "main") == f"{folder}/1"
    # Digits int() refuses ("²", "٣") or that are not a plain number are no tags of its own.
    for rest in ("1", "4", "²", "٣", "7a", "0x9"):
        repo.tag(f"{folder}/{rest}", commit.id)
    assert history.next_tag(repo, history.CHECKPOINTS_PREFIX, "main") == f"{folder}/5"
