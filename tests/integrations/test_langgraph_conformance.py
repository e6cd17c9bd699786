"""LangGraph's own conformance suite: base 5/5 and extended 3/3, on SQLite and memory."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import (
    BASE_CAPABILITIES,
    EXTENDED_CAPABILITIES,
)

import statevcs
from statevcs.integrations.langgraph import StateVCSSaver


@pytest.mark.parametrize("kind", ["sqlite", "memory"])
def test_conformance_full(kind: str, tmp_path: Path) -> None:
    opened: list[statevcs.Repo] = []

    @checkpointer_test(name=f"StateVCSSaver[{kind}]")
    async def factory() -> AsyncIterator[StateVCSSaver]:
        url = str(tmp_path / f"repo{len(opened)}") if kind == "sqlite" else "memory://"
        repo = statevcs.Repo.init(url)
        opened.append(repo)
        yield StateVCSSaver(repo)
        repo.close()

    report = asyncio.run(validate(factory))
    failures = {name: r.failures for name, r in report.results.items() if r.failures}
    assert not failures
    for capability in BASE_CAPABILITIES | EXTENDED_CAPABILITIES:
        result = report.results[capability.value]
        assert result.detected, f"{capability.value} not detected"
        assert result.passed is True, f"{capability.value}: {result}"
        assert result.tests_skipped == 0 and result.tests_passed > 0
    assert report.conformance_level() == "FULL"
    assert len(opened) == 8
