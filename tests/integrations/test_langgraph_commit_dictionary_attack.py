"""The LangGraph saver on a repository whose checkpoint commits are compressed with the commit
dictionary, read by a new process (spawn) that never registered it: every checkpoint, listed
and fetched by id (through the lineage index), reads as the writing process saw it."""

from __future__ import annotations

import multiprocessing
from pathlib import Path
from typing import Any

import statevcs
from statevcs.compression import ZSTD_MAGIC
from statevcs.hashing import from_hex
from statevcs.integrations.langgraph import StateVCSSaver
from statevcs.objectdb import COMMIT_DICTIONARY_KEY

from .langgraph_support import chat_graph, config_of, plain, tuple_shape

TURNS = 40


def _answers(saver: StateVCSSaver) -> tuple[list[Any], list[Any]]:
    """Every checkpoint of thread ``t`` as listed, and as fetched by its id."""
    listed = [plain(tuple_shape(t)) for t in saver.list(config_of("t"))]
    ids = [row[1] for row in listed]
    fetched = [plain(tuple_shape(saver.get_tuple(config_of("t", "", i)))) for i in ids]
    return listed, fetched


def _read(path: str, answers: Any) -> None:
    with statevcs.Repo.open(path) as repo:
        answers.send(_answers(StateVCSSaver(repo)))


def test_checkpoints_read_the_same_from_a_new_process(tmp_path: Path) -> None:
    path = tmp_path / "repo"
    with statevcs.Repo.init(path) as repo:
        saver = StateVCSSaver(repo)
        app = chat_graph(saver)
        for turn in range(TURNS):
            app.invoke({"messages": [("user", f"hello {turn}")]}, config_of("t"))
        assert repo.store.config_get(COMMIT_DICTIONARY_KEY) is not None
        tips = [c.id for c in repo.log_all()]
        stored = repo.store.get_many([from_hex(i) for i in tips])
        assert sum(d[:4] == ZSTD_MAGIC for d in stored.values()) > TURNS
        expected = _answers(saver)
    context = multiprocessing.get_context("spawn")
    receiving, sending = context.Pipe(duplex=False)
    child = context.Process(target=_read, args=(str(path), sending))
    child.start()
    try:
        assert receiving.poll(180), f"the child process ended (exit code {child.exitcode})"
        found = receiving.recv()
    finally:
        child.join(60)
    assert len(expected[0]) > 2 * TURNS
    assert found == expected
    assert expected[0] == expected[1]
