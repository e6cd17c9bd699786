"""The README's and the docs index's Python snippets run as pasted (the README's twice)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"


def test_the_docs_index_snippet_runs_as_pasted(tmp_path: Path) -> None:
    index = README.parent / "docs" / "index.md"
    blocks = re.findall(r"```python\n(.*?)```", index.read_text(encoding="utf-8"), re.S)
    done = subprocess.run(
        [sys.executable, "-c", blocks[0]],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "TMPDIR": str(tmp_path)},
    )
    assert done.returncode == 0, done.stderr


def test_the_readme_snippet_runs_as_pasted_and_again(tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    snippet = next(b for b in blocks if "Repo.init" in b)
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-c", snippet],
            capture_output=True,
            text=True,
            timeout=120,
            env={**os.environ, "TMPDIR": str(tmp_path)},
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("1 2\n")
        assert "5 commits" in done.stdout
