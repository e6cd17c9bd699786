"""Storage format 2 across processes: dictionaries trained by racing writers (forked and
spawned), gc running meanwhile, and readers in fresh processes that know no dictionary yet."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from statevcs import Repo
from statevcs.compression import frame_dictionary
from statevcs.objectdb import DICTIONARY_KEY, DICTIONARY_PREFIX

from . import format2_workers as workers
from .harness import count

WRITERS = 3
COMMITS = count("FORMAT2_COMMITS", 12)
PER_COMMIT = 4


def _run(context: str, target: object, *args: object) -> multiprocessing.process.BaseProcess:
    process = multiprocessing.get_context(context).Process(target=target, args=args)
    process.start()
    return process


def _race(location: str, context: str, with_gc: bool) -> None:
    with Repo.init(location) as repo:
        repo.commit({"messages": []}, message="root")
    processes = [
        _run(context, workers.write, location, n, COMMITS, PER_COMMIT) for n in range(WRITERS)
    ]
    if with_gc:
        processes.append(_run(context, workers.collect, location, 6))
    for process in processes:
        process.join(120)
        assert process.exitcode == 0, f"a {context} worker failed ({process.exitcode})"
    # Read back in a spawned process: it starts with no dictionary registered.
    reader = _run("spawn", workers.read_all, location, WRITERS, COMMITS, PER_COMMIT)
    reader.join(120)
    assert reader.exitcode == 0, "a fresh process could not read what was committed"
    with Repo.open(location) as repo:
        assert repo.store.config_get(DICTIONARY_KEY), "no dictionary was trained"
        used = _dictionaries_used(repo)
        assert used, "no object was compressed with a dictionary"
        for dict_id in used:  # every dictionary a frame names is findable by every reader
            assert repo.store.config_get(f"{DICTIONARY_PREFIX}{dict_id:08x}"), f"{dict_id:08x}"


def _dictionaries_used(repo: Repo) -> set[int]:
    ids = [object_id for object_id, _size in repo.store.iter_objects()]
    found = repo.store.get_many(ids)
    return {frame_dictionary(data) for data in found.values()} - {0}


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_writers_training_at_once_on_sqlite(tmp_path: Path, context: str) -> None:
    _race(str(tmp_path / "repo"), context, with_gc=True)


def test_writers_training_at_once_on_s3(s3_url: str) -> None:
    _race(s3_url, "spawn", with_gc=True)


def test_racing_writers_without_gc_keep_every_dictionary(tmp_path: Path) -> None:
    """Writers that each trained a dictionary: none is lost (no gc to blame here)."""
    location = str(tmp_path / "repo")
    _race(location, "fork", with_gc=False)
    with Repo.open(location) as repo:
        assert len(_dictionaries_used(repo)) >= 1
