"""Minimal reproducers of defects the reliability suite found, one test per behaviour."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest

import statevcs
from statevcs import Repo, Snapshot
from statevcs.mirror.git import export_git

from .test_hostile_repos import Planter, _deep_array


@pytest.mark.parametrize(
    ("argument", "call"),
    [
        ("rev", lambda r: r.branch("x", None)),
        ("a", lambda r: r.diff(None, "HEAD")),
        ("b", lambda r: r.diff("HEAD", 5)),
        ("a", lambda r: r.merge_base(None, "HEAD")),
        ("b", lambda r: r.merge_base("HEAD", 5)),
        ("branch", lambda r: r.merge(None, "HEAD")),
        ("rev", lambda r: r.merge("main", None)),
        ("ancestor", lambda r: r.is_ancestor(None, "HEAD")),
        ("descendant", lambda r: r.is_ancestor("HEAD", 5)),
    ],
)
def test_type_error_names_the_argument_the_caller_passed(
    small_repo: Repo, argument: str, call: Any
) -> None:
    with pytest.raises(TypeError, match=rf"\b{argument} must\b"):
        call(small_repo)


def test_export_git_to_a_path_with_a_nul_character_raises_a_statevcs_error(
    small_repo: Repo, tmp_path: Path
) -> None:
    with pytest.raises(statevcs.StateVCSError):
        export_git(small_repo, str(tmp_path / "mirror") + "\x00x")


def test_config_get_with_a_lone_surrogate_raises_a_statevcs_error(small_repo: Repo) -> None:
    with pytest.raises((statevcs.StateVCSError, TypeError)):
        small_repo.config.get("\ud800")


@pytest.mark.parametrize(("key", "value"), [("core.format", None), ("core.format", "")])
def test_config_set_cannot_make_the_repository_unopenable(
    small_repo: Repo, key: str, value: str | None
) -> None:
    with contextlib.suppress(statevcs.StateVCSError):
        small_repo.config.set(key, value)
    assert small_repo.path is not None
    Repo.open(small_repo.path).close()


def test_config_set_of_the_gc_generation_cannot_break_commits(small_repo: Repo) -> None:
    with contextlib.suppress(statevcs.StateVCSError):
        small_repo.config.set("gc.generation", "x")
    with contextlib.suppress(statevcs.StateVCSError):
        small_repo.commit({"a": 3}, message="three")
    assert small_repo.path is not None
    with Repo.open(small_repo.path) as fresh:
        fresh.commit({"a": 4}, message="four")


@pytest.mark.parametrize("depth", [600, 1000])
def test_deep_commit_metadata_in_a_stored_commit_raises_a_statevcs_error(
    small_repo: Repo, depth: int
) -> None:
    plant = Planter(small_repo)
    plant.commit("deep", plant.snapshot(), metadata=b"\x81\xa1k" + _deep_array(depth))
    for call in (lambda: list(small_repo.log("deep")), lambda: small_repo.get_commit("deep")):
        with contextlib.suppress(statevcs.StateVCSError):
            call()


@pytest.mark.parametrize("depth", [600, 1000])
def test_deep_repeated_message_in_a_stored_snapshot_raises_a_statevcs_error(
    small_repo: Repo, depth: int
) -> None:
    plant = Planter(small_repo)
    doc = plant.put(b"\x92\xa3doc" + _deep_array(depth))
    plant.commit("deep", plant.snapshot(tail=[doc, doc]))
    with contextlib.suppress(statevcs.StateVCSError):
        small_repo.show("deep")


@pytest.mark.parametrize("depth", [600, 1000])
def test_deep_inline_extras_in_a_stored_snapshot_raise_a_statevcs_error(
    small_repo: Repo, depth: int
) -> None:
    plant = Planter(small_repo)
    plant.commit("deep", plant.snapshot(extras=b"\x92\x91\xa4last\x91\x91" + _deep_array(depth)))
    for call in (lambda: small_repo.show("deep"), lambda: small_repo.checkout(Snapshot(), "deep")):
        with contextlib.suppress(statevcs.StateVCSError):
            call()


@pytest.mark.parametrize("timestamp", [2**62, -(2**62), 2**64 - 1])
def test_stored_commit_timestamp_out_of_range_raises_a_statevcs_error(
    small_repo: Repo, timestamp: int
) -> None:
    plant = Planter(small_repo)
    plant.commit("future", plant.snapshot(), timestamp=timestamp)
    for call in (
        lambda: list(small_repo.log("future")),
        lambda: small_repo.get_commit("future"),
        lambda: small_repo.checkout({}, "future"),
    ):
        with contextlib.suppress(statevcs.StateVCSError):
            call()
