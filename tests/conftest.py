"""Fixtures shared by the test modules."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from statevcs import Repo


@pytest.fixture(params=["memory", "sqlite"])
def repo(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Repo]:
    target = "memory://" if request.param == "memory" else tmp_path / "repo"
    with Repo.init(target) as repository:
        yield repository
