"""Fixtures of the reliability suite (helpers for child processes live in harness.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from statevcs import Repo


@pytest.fixture(params=["sqlite", "s3"])
def location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a test's repository goes (not created yet): a SQLite folder, then an S3 URL on
    the test SeaweedFS server (its credentials are in the environment, so workers inherit)."""
    if request.param == "s3":
        return str(request.getfixturevalue("s3_url"))
    return str(tmp_path / "repo")


@pytest.fixture
def repo_path(tmp_path: Path) -> Path:
    """A SQLite repository folder whose ``main`` has one commit, C0 (state ``x=1``)."""
    folder = tmp_path / "repo"
    with Repo.init(folder) as repo:
        repo.commit({"messages": [], "x": 1}, message="C0")
    return folder


@pytest.fixture
def small_repo(tmp_path: Path) -> Iterator[Repo]:
    """An open SQLite repository with two commits on ``main``."""
    with Repo.init(tmp_path / "repo") as repository:
        repository.commit({"messages": [], "a": 1}, message="one")
        repository.commit({"messages": [], "a": 2}, message="two")
        yield repository
