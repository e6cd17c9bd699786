"""``fastcdc-2020-small-values`` through the integrations: LangGraph channel values and pending
writes, and Strands agent state, around 8 KiB, 64 KiB, 128 KiB and 1 MiB read back exactly (as
LangGraph's ``InMemorySaver`` gives them back; as the agent's own snapshot had them)."""

from __future__ import annotations

import copy
import random
from pathlib import Path
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver
from strands import Agent
from support import langgraph_checkpoint

import statevcs
from statevcs.integrations.langgraph import StateVCSSaver
from statevcs.integrations.strands.testing import Reply, ScriptedModel
from statevcs.objects import Chunked

from .conftest import snapshot_data

SIZES = [8_180, 8_191, 8_192, 8_193, 8_200, 65_535, 65_536, 65_537, 131_072, 131_073, 1_048_577]


def _text(rng: random.Random, size: int) -> str:
    return "".join(rng.choice("abcdefgh ijk\n") for _ in range(size))


def _repo(where: str, tmp_path: Path) -> statevcs.Repo:
    return statevcs.Repo.init("memory://" if where == "memory" else tmp_path / "repo")


def _chunked(repo: statevcs.Repo) -> int:
    return sum(isinstance(repo.objects.load(i), Chunked) for i, _ in repo.store.iter_objects())


def _typed(value: Any) -> Any:
    """``value`` with every container and leaf type spelled out (equal values of other types
    compare unequal)."""
    if isinstance(value, dict):
        return ("dict", [(k, _typed(v)) for k, v in value.items()])
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [_typed(v) for v in value])
    return (type(value).__name__, value)


@pytest.mark.parametrize("where", ["memory", "sqlite"])
def test_langgraph_values_and_writes_at_the_thresholds_read_back_as_in_memory(
    where: str, tmp_path: Path
) -> None:
    rng = random.Random(3)
    repo = _repo(where, tmp_path)
    ours, theirs = StateVCSSaver(repo), InMemorySaver()
    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    ours_config, theirs_config = config, config
    for step, size in enumerate(SIZES):
        values = {
            "text": _text(rng, size),
            "raw": _text(rng, size).encode(),
            "doc": {"z": _text(rng, size // 2), "a": [1, 2.5, None, _text(rng, size // 3)]},
        }
        checkpoint = langgraph_checkpoint(
            f"1ef{step:05d}-0000-0000-0000-000000000000", values, step + 1
        )
        versions = {k: step + 1 for k in values}
        ours_config = ours.put(ours_config, copy.deepcopy(checkpoint), {"step": step}, versions)
        theirs_config = theirs.put(theirs_config, copy.deepcopy(checkpoint), {}, versions)
        writes = [("text", _text(rng, size)), ("raw", b"x" * size), ("doc", {"q": [size]})]
        ours.put_writes(ours_config, copy.deepcopy(writes), "task")
        theirs.put_writes(theirs_config, copy.deepcopy(writes), "task")
    got = {t.checkpoint["id"]: t for t in ours.list(config)}
    want = {t.checkpoint["id"]: t for t in theirs.list(config)}
    assert got.keys() == want.keys() and len(got) == len(SIZES)
    for cid, expected in want.items():
        values = got[cid].checkpoint["channel_values"]
        wanted = expected.checkpoint["channel_values"]
        # Channel order is not kept (as before small values); each value is, exactly.
        assert {k: _typed(v) for k, v in values.items()} == {
            k: _typed(v) for k, v in wanted.items()
        }
        assert _typed(got[cid].pending_writes) == _typed(expected.pending_writes)
    assert _chunked(repo) > 2 * len(SIZES)  # values from 8 KiB on are chunked
    assert repo.fsck().problems == ()
    repo.close()


@pytest.mark.parametrize("where", ["memory", "sqlite"])
def test_strands_agent_state_at_the_thresholds_reads_back_exactly(
    where: str, tmp_path: Path
) -> None:
    rng = random.Random(1)
    repo = _repo(where, tmp_path)
    replies = [Reply(_text(rng, 9_000)), Reply("ok"), Reply(_text(rng, 70_000)), Reply("done")]
    agent = Agent(
        model=ScriptedModel(replies, response_ids=True), callback_handler=None, system_prompt="p"
    )
    commits = []
    for turn, size in enumerate([8_190, 8_200, 65_540, 1_048_600]):
        agent.state.set("notes", _text(rng, size))
        agent.state.set("nested", {"z": _text(rng, size // 2), "a": [1, None, True]})
        agent(f"turn {turn}")
        commits.append((repo.commit(agent, message=f"turn {turn}").id, snapshot_data(agent)))
    for commit_id, data in commits:
        other = Agent(model=ScriptedModel([]), callback_handler=None)
        repo.checkout(other, commit_id)
        restored = snapshot_data(other)
        assert restored == data
        assert list(restored["state"]["nested"]) == ["z", "a"]
        assert _typed(restored["messages"]) == _typed(data["messages"])
    assert _chunked(repo) >= len(commits)
    assert repo.fsck().problems == ()
    repo.close()
