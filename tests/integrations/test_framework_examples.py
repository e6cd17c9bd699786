"""examples/frameworks_one_repo.py runs offline, prints what it claims and leaves a repository."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("pydantic_ai")
pytest.importorskip("google.adk")

from statevcs import Repo

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "frameworks_one_repo.py"


def test_the_two_framework_example_runs_and_leaves_both_histories(tmp_path: Path) -> None:
    folder = tmp_path / "repo"
    out = subprocess.run(
        [sys.executable, str(EXAMPLE), str(folder)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    assert "pydantic-ai: What is 40 + 1? -> That makes 41." in out
    assert "pydantic-ai: the fork holds 8 messages" in out
    assert "adk: rewound, answer '5'" in out
    assert "adk: fork s1-alt answers '6' after 6 events" in out
    assert "fsck ok: True" in out
    with Repo.open(folder) as repo:
        assert set(repo.branches()) == {
            "pydantic/calc",
            "pydantic/calc-retry",
            "adk/calc/sessions/ana/s1",
            "adk/calc/sessions/ana/s1-alt",
        }
        assert repo.merge_base("pydantic/calc", "pydantic/calc-retry") == repo.resolve(
            "pydantic/calc~1"
        )
