"""Fixtures shared by the test modules."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from statevcs import Repo

# Timing deadlines make property tests flaky on a loaded machine; correctness is what they check.
settings.register_profile("statevcs", deadline=None)
settings.load_profile("statevcs")


@pytest.fixture(params=["memory", "sqlite"])
def repo(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Repo]:
    target = "memory://" if request.param == "memory" else tmp_path / "repo"
    with Repo.init(target) as repository:
        yield repository
