"""Fixtures shared by the test modules."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings
from seaweedfs import SeaweedFS, credentials

from statevcs import Repo

# Timing deadlines make property tests flaky on a loaded machine; correctness is what they check.
settings.register_profile("statevcs", deadline=None)
settings.load_profile("statevcs")


@pytest.fixture(scope="session")
def seaweedfs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SeaweedFS]:
    """A SeaweedFS S3 server for this test process (each xdist worker starts its own).

    Its credentials go into the environment, as a deployment's would, so child processes
    started by tests reach it too; the local object cache goes to a temporary folder.
    """
    os.environ.update(credentials())
    os.environ["STATEVCS_CACHE_DIR"] = str(tmp_path_factory.mktemp("statevcs-cache"))
    with SeaweedFS() as server:
        yield server


@pytest.fixture
def s3_url(seaweedfs: SeaweedFS) -> str:
    """A fresh repository URL (a unique prefix in the test bucket): nothing exists there yet."""
    return seaweedfs.url(f"t/{uuid.uuid4().hex}")


@pytest.fixture(params=["memory", "sqlite", "s3"])
def repo(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Repo]:
    if request.param == "s3":
        target: str | Path = request.getfixturevalue("s3_url")
    else:
        target = "memory://" if request.param == "memory" else tmp_path / "repo"
    with Repo.init(target) as repository:
        yield repository
