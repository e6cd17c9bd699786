"""Helpers shared by the repository-level tests."""

from __future__ import annotations

from typing import Any

from statevcs import Repo


def message(i: int, size: int = 40) -> dict[str, Any]:
    role = "user" if i % 2 == 0 else "assistant"
    return {"role": role, "content": [{"text": f"message {i} " + "x" * size}]}


def object_count(repo: Repo) -> int:
    return sum(1 for _ in repo.store.iter_objects())
