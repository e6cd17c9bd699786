"""Smoke test of the peer benchmark: the command runs on a tiny workload and prints every row.

No timing is asserted (performance claims come from the full run in docs/benchmarks.md); this
keeps the script from rotting as statevcs, LangGraph and Strands change under it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "peers.py"

SYSTEMS = (
    "statevcs repo.commit (dict)",
    "LangGraph SqliteSaver (add_messages)",
    "LangGraph SqliteSaver (DeltaChannel)",
    "LangGraph StateVCSSaver (add_messages)",
    "LangGraph StateVCSSaver (DeltaChannel)",
    "Strands SnapshotSessionManager",
    "Strands StateVCSSessionManager",
    "JSON file per turn",
    "OpenAI Agents SQLiteSession",
    "OpenAI Agents StateVCSSession",
    "Pydantic AI JSON history file per turn",
    "Pydantic AI AgentHistory",
    "Pydantic AI harness SqliteStepStore",
    "Pydantic AI harness StateVCSStepStore",
    "Google ADK SqliteSessionService",
    "Google ADK StateVCSSessionService",
)


def _saver_exists() -> bool:
    """Whether ``StateVCSSaver`` imports (the benchmark prints "not available yet" otherwise)."""
    try:
        from statevcs.integrations.langgraph import StateVCSSaver  # noqa: F401
    except ImportError:
        return False
    return True


SAVER_EXISTS = _saver_exists()
SIZE = re.compile(r"^[\d,.]+ (B|KB|MB|GB)$")
DURATION = re.compile(r"^[\d,.]+ ms$")


def run(tmp_path: Path, *args: str, script: Path = SCRIPT) -> subprocess.CompletedProcess[str]:
    """Run a benchmark script in ``tmp_path`` with its scratch folder as ``TMPDIR``."""
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    return subprocess.run(
        [sys.executable, str(script), *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "TMPDIR": str(scratch)},
        cwd=tmp_path,
    )


def table_rows(output: str, title: str) -> dict[str, list[str]]:
    """The cells of the Markdown table under the heading starting with ``title``, by system."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(title))
    rows: dict[str, list[str]] = {}
    for line in lines[start + 2 :]:
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [cell.strip() for cell in line.strip("|").split("|")]
        if cells[0] != "system" and not set(cells[0]) <= {"-"}:
            rows[cells[0]] = cells
    return rows


@pytest.fixture(scope="module")
def smoke(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[subprocess.CompletedProcess[str], Path]:
    tmp_path = tmp_path_factory.mktemp("peers")
    return run(
        tmp_path, "--turns", "12", "--forks", "1", "--sizes", "20", "--samples", "1"
    ), tmp_path


def test_every_system_gets_a_row_with_figures(
    smoke: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    result, _ = smoke
    assert result.returncode == 0, result.stdout + result.stderr
    rows = table_rows(result.stdout, "## W1:")
    assert list(rows) == list(SYSTEMS)
    for name, cells in rows.items():
        if "StateVCSSaver" in name and not SAVER_EXISTS:
            assert cells[1] == "not available yet", cells
            continue
        bytes_closed, _wal, persist_early, persist_late = cells[1:5]
        assert SIZE.match(bytes_closed), cells
        assert DURATION.match(persist_early) and DURATION.match(persist_late), cells
        restore_latest, restore_10, fork_bytes = cells[-3:]
        assert DURATION.match(restore_latest) and DURATION.match(restore_10), cells
        assert SIZE.match(fork_bytes), cells
    w3 = table_rows(result.stdout, "## W3:")
    assert list(w3) == list(SYSTEMS)


def test_ratios_targets_and_machine_are_printed(
    smoke: tuple[subprocess.CompletedProcess[str], Path],
) -> None:
    result, _ = smoke
    assert result.stdout.startswith("# Peer benchmark")
    assert "machine: " in result.stdout and "langgraph 1." in result.stdout
    ratios = table_rows(result.stdout, "## Ratios")
    assert "LangGraph SqliteSaver (add_messages)" in ratios
    assert "Strands SnapshotSessionManager" in ratios
    assert "## Issue 11 targets" in result.stdout
    assert "## Issue 21 targets" in result.stdout
    assert "Google ADK SqliteSessionService" in ratios
    if SAVER_EXISTS:
        assert "[met]" in result.stdout or "[MISSED]" in result.stdout


def test_scratch_files_are_removed(smoke: tuple[subprocess.CompletedProcess[str], Path]) -> None:
    _, tmp_path = smoke
    assert list((tmp_path / "scratch").iterdir()) == []
    assert [path.name for path in tmp_path.iterdir()] == ["scratch"]


def test_too_few_turns_is_refused(tmp_path: Path) -> None:
    result = run(tmp_path, "--turns", "5")
    assert result.returncode == 2
    assert "--turns must be at least 10" in result.stderr


def test_the_lookup_benchmark_prints_its_table_and_leaves_no_files(tmp_path: Path) -> None:
    result = run(
        tmp_path,
        "--turns",
        "12",
        "--lookups",
        "2",
        script=ROOT / "benchmarks" / "bench_langgraph_lookup.py",
    )
    scratch = tmp_path / "scratch"
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith("| ")][1:]
    assert len(rows) == 6
    for row in rows:
        assert re.fullmatch(r"[\d.]+", row.rstrip(" |").rsplit("|", 1)[1].strip()), row
    assert list(scratch.iterdir()) == []
    assert [path.name for path in tmp_path.iterdir()] == ["scratch"]


def test_chunking_benchmark_prints_every_row(tmp_path: Path) -> None:
    result = run(tmp_path, "--quick", script=ROOT / "benchmarks" / "bench_chunking.py")
    assert result.returncode == 0, result.stderr
    rows = [line.split() for line in result.stdout.splitlines()]
    throughput = [row for row in rows if row[:2] == ["1", "MB"] and row[2] in ("random", "base64")]
    assert len(throughput) == 2 and all(float(row[3].replace(",", "")) > 0 for row in throughput)
    commits = {row[2]: row for row in rows if row[:2] == ["1", "MB"] and "KB" in row}
    assert set(commits) == {"fastcdc-2020", "gear-1"}


def test_the_list_benchmark_prints_its_table_and_leaves_no_files(tmp_path: Path) -> None:
    result = run(
        tmp_path,
        "--sizes",
        "12",
        "40",
        "--repeat",
        "2",
        script=ROOT / "benchmarks" / "bench_langgraph_list.py",
    )
    scratch = tmp_path / "scratch"
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith("| ")][1:]
    assert [row.split("|")[1].strip() for row in rows] == ["12", "40"]
    for row in rows:
        cells = [cell.strip() for cell in row.strip(" |").split("|")[1:]]
        assert len(cells) == 6 and all(re.fullmatch(r"[\d.]+", cell) for cell in cells), row
    assert list(scratch.iterdir()) == []
    assert [path.name for path in tmp_path.iterdir()] == ["scratch"]


def test_the_experiments_benchmark_prints_its_table_and_leaves_no_files(tmp_path: Path) -> None:
    script = ROOT / "benchmarks" / "bench_experiments.py"
    result = run(tmp_path, "--turns", "10", "--commits", "12", "--repeat", "1", script=script)
    scratch = tmp_path / "scratch"
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith("| ")][2:]
    assert [row.split("|")[1].strip() for row in rows] == [
        "compare",
        "search text",
        "search regex",
        "search text, no match",
    ]
    assert "10 turns, 5 diverged" in rows[0]
    assert list(scratch.iterdir()) == []


@pytest.mark.slow  # about 8 s of CPU: some 30 short processes
def test_the_cli_benchmark_prints_every_row_and_leaves_no_files(tmp_path: Path) -> None:
    result = run(
        tmp_path,
        "--quick",
        "--runs",
        "1",
        "--commits",
        "20",
        script=ROOT / "benchmarks" / "bench_cli.py",
    )
    scratch = tmp_path / "scratch"
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for row in ("--version", "log -n 10 (10 commits)", "show (", "reflog (", "status ("):
        line = next(line for line in out.splitlines() if line.startswith(row))
        assert line.endswith("x") and len(line.split()) >= 5, line
    assert "reclaimed_bytes" in out
    assert list(scratch.iterdir()) == []


def test_the_mirror_benchmark_prints_a_row_per_length_and_leaves_no_files(tmp_path: Path) -> None:
    pytest.importorskip("dulwich")
    result = run(tmp_path, "--sizes", "3", "6", script=ROOT / "benchmarks" / "bench_mirror.py")
    scratch = tmp_path / "scratch"
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith("| ")][2:]
    assert [row.split("|")[1].strip() for row in rows] == ["3", "6"]
    for row in rows:
        cells = [cell.strip() for cell in row.strip(" |").split("|")]
        assert all(re.fullmatch(r"[\d.]+ s \([\d.]+ s\)", cells[i]) for i in (1, 3)), row
        assert all(re.fullmatch(r"[\d.]+ MiB|—", cell) for cell in cells[5:]), row
    assert list(scratch.iterdir()) == []
    assert [path.name for path in tmp_path.iterdir()] == ["scratch"]


def test_the_serve_benchmark_prints_every_request_and_leaves_no_files(tmp_path: Path) -> None:
    pytest.importorskip("starlette")
    result = run(tmp_path, "--quick", "--runs", "1", script=ROOT / "benchmarks" / "bench_serve.py")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    for row in ("graph, first page", "commit, first 50 messages", "search, every branch"):
        line = next(line for line in lines if line.startswith(row))
        assert re.fullmatch(r"[\d.]+ [\d.]+ [\d,]+", " ".join(line[len(row) :].split())), line
    for row in ("graph: first paint", "commit page"):
        line = next(line for line in lines if line.startswith(row))
        assert len(line[len(row) :].split()) == 4, line
    assert list((tmp_path / "scratch").iterdir()) == []


def test_the_commit_graph_benchmark_prints_every_table(tmp_path: Path) -> None:
    result = run(
        tmp_path,
        "--commits",
        "30",
        "--turns",
        "12",
        script=ROOT / "benchmarks" / "bench_graph.py",
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for title in (
        "### SQLite",
        "### LangGraph",
        "### S3 (SeaweedFS) cold log",
        "### S3 round",
        "### S3 (SeaweedFS) get_state of turn 10",
    ):
        assert title in out, out
    assert "| StateVCSSaver, lineage index |" in out
    resolve = next(line for line in out.splitlines() if line.startswith("| resolve main~20"))
    assert resolve.count("|") == 5


def test_the_restore_parts_benchmark_prints_both_tables(tmp_path: Path) -> None:
    result = run(
        tmp_path,
        "--turns",
        "10",
        "--rounds",
        "1",
        script=ROOT / "benchmarks" / "bench_restore_parts.py",
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "### LangGraph get_state of turn 10" in out and "### Strands restore of turn 10" in out
    assert "| - find the commit (lineage index) |" in out
    assert "| - read the snapshot (core) |" in out
    assert list((tmp_path / "scratch").iterdir()) == []


def test_the_session_reads_benchmark_prints_its_table_and_leaves_no_files(tmp_path: Path) -> None:
    script = ROOT / "benchmarks" / "bench_session_reads.py"
    result = run(tmp_path, "--turns", "12", "--repeat", "1", script=script)
    scratch = tmp_path / "scratch"
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith("| ")][1:]
    cells = [[cell.strip() for cell in row.strip(" |").split("|")] for row in rows]
    assert [row[1] for row in cells] == [
        *["24", "24", "20", "20", "24", "24"],  # OpenAI Agents
        *["24", "24", "24"],  # Pydantic AI
        *["24", "24", "20", "20", "24"],  # Google ADK
    ]
    assert all(re.fullmatch(r"[\d.]+", value) for row in cells for value in row[2:]), rows
    assert list(scratch.iterdir()) == []
    assert [path.name for path in tmp_path.iterdir()] == ["scratch"]


def test_the_workloads_benchmark_prints_every_workload(tmp_path: Path) -> None:
    result = run(tmp_path, "--quick", script=ROOT / "benchmarks" / "bench_workloads.py")
    assert result.returncode == 0, result.stderr
    rows = [line.split(" | ") for line in result.stdout.splitlines() if line.startswith("| ")]
    body = {(row[0].lstrip("| "), row[1]): row for row in rows[1:]}
    assert set(body) == {
        ("chat", "fastcdc-2020-small-values"),
        ("tool calls", "fastcdc-2020-small-values"),
        ("tiny events", "fastcdc-2020-small-values"),
        ("to-do list", "fastcdc-2020"),
        ("to-do list", "fastcdc-2020-small-values"),
    }
    for row in body.values():
        assert all(float(cell.rstrip("x |")) > 0 for cell in row[2:]), row
    # The to-do list stores less a turn with small chunks for values.
    old, new = body["to-do list", "fastcdc-2020"], body["to-do list", "fastcdc-2020-small-values"]
    assert float(new[4]) < float(old[4]) / 2
    assert [path.name for path in tmp_path.iterdir()] == ["scratch"]
    assert list((tmp_path / "scratch").iterdir()) == []


def test_the_langgraph_bytes_benchmark_prints_every_kind_and_leaves_no_files(
    tmp_path: Path,
) -> None:
    script = ROOT / "benchmarks" / "bench_langgraph_bytes.py"
    result = run(tmp_path, "--quick", script=script)
    assert result.returncode == 0, result.stderr
    rows = {
        row[0].lstrip("| "): row[1:]
        for row in (line.split(" | ") for line in result.stdout.splitlines())
        if row[0].startswith("| ")
    }
    assert {"commit", "snapshot", "leaf", "zdict", "**all objects**"} <= set(rows)
    plain, compressed = (float(cell.strip(" |").replace(",", "")) for cell in rows["commit"][:2])
    assert compressed < plain * 0.6  # the commit dictionary's whole point
    assert [path.name for path in tmp_path.iterdir()] == ["scratch"]
    assert list((tmp_path / "scratch").iterdir()) == []


def test_the_checkout_parts_benchmark_prints_every_stage_for_both_trees(tmp_path: Path) -> None:
    old = tmp_path / "old"
    shutil.copytree(ROOT / "statevcs", old / "statevcs")
    script = ROOT / "benchmarks" / "bench_checkout_parts.py"
    result = run(tmp_path, "--quick", "--against", str(old), script=script)
    assert result.returncode == 0, result.stderr
    rows = {
        cells[0]: cells[1:]
        for line in result.stdout.splitlines()
        if line.startswith("| ") and (cells := [c.strip() for c in line.strip("|").split("|")])
    }
    assert rows.pop("stage") == ["old ms", "new ms", "new / old"]
    stages = ["open", "checkout", "- tree (prolly.leaves)", "- messages", "- the rest", "close"]
    assert list(rows) == [
        *stages,
        "open + checkout + close",
        "checkout / JSON",
        "open + checkout + close / JSON",
    ]
    for label, cells in rows.items():
        figures = [c.removesuffix("x") for c in cells]
        assert all(float(f) >= 0 for f in figures), (label, cells)
    assert list((tmp_path / "scratch").iterdir()) == []
