"""The documentation cannot rot: every Python block of README.md and docs/**/*.md runs, and the
site builds with ``mkdocs build --strict``.

A page's ```python blocks run top to bottom in one namespace (one process per page), in a fresh
working directory with ``TMPDIR`` pointing into pytest's temporary directory, so a page may use
what an earlier block on it defined and nothing leaks between pages. Pages that use S3 write the
literal URL below; it is replaced with a fresh bucket prefix on the test SeaweedFS server.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import statevcs

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
DOCS = ROOT / "docs"
PAGES = [README, *sorted(DOCS.rglob("*.md"))]

S3_LITERAL = "s3://my-bucket/agents?endpoint_url=http://127.0.0.1:8333&region=us-east-1"
"""What the docs write for an S3 repository; replaced by the ``s3_url`` fixture's URL."""

_FENCE = re.compile(r"^```(?:python|py)[ \t]*\n(.*?)^```[ \t]*$", re.S | re.M)

# Runs one page: each block is compiled with the page as its file name and its own line numbers,
# so a traceback points at the Markdown line that failed.
_RUNNER = """
import json as _json, sys as _sys
_page, _blocks = _json.loads(_sys.stdin.read())
for _line, _code in _blocks:
    exec(compile("\\n" * (_line - 1) + _code, _page, "exec"), globals())
"""


def python_blocks(text: str) -> list[tuple[int, str]]:
    """The page's ```python blocks as (line of the block's first code line, code)."""
    return [
        (text.count("\n", 0, match.start(1)) + 1, match.group(1)) for match in _FENCE.finditer(text)
    ]


def run_blocks(
    page: Path, blocks: list[tuple[int, str]], tmp_path: Path
) -> subprocess.CompletedProcess[str]:
    """Run blocks in a fresh process, in a temporary working directory and ``TMPDIR``."""
    cwd, scratch = tmp_path / "cwd", tmp_path / "tmp"
    cwd.mkdir(exist_ok=True)
    scratch.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, "-c", _RUNNER],
        input=json.dumps([str(page), blocks]),
        capture_output=True,
        text=True,
        timeout=180,
        cwd=cwd,
        env={**os.environ, "TMPDIR": str(scratch), "NO_COLOR": "1"},
    )


def _page_id(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


@pytest.mark.parametrize("page", [p for p in PAGES if "```python" in p.read_text()], ids=_page_id)
def test_every_python_block_of_the_page_runs(
    page: Path, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    text = page.read_text(encoding="utf-8")
    if S3_LITERAL in text:
        text = text.replace(S3_LITERAL, request.getfixturevalue("s3_url"))
    blocks = python_blocks(text)
    assert blocks, f"{_page_id(page)} mentions ```python but no block was found"
    done = run_blocks(page, blocks, tmp_path)
    assert done.returncode == 0, f"{_page_id(page)}: a block failed\n{done.stderr}"


def test_the_readme_quickstart_prints_what_it_says_and_runs_again(tmp_path: Path) -> None:
    first = python_blocks(README.read_text(encoding="utf-8"))[0]
    for _ in range(2):  # a second run in the same TMPDIR must not trip over the first's folder
        done = run_blocks(README, [first], tmp_path)
        assert done.returncode == 0, done.stderr
        assert done.stdout.startswith("1 2\n")
        assert "5 commits; inspect them: statevcs -C " in done.stdout


def test_each_readme_block_runs_on_its_own(tmp_path: Path, request: pytest.FixtureRequest) -> None:
    """A reader may paste any one block of the README: none needs an earlier one's names."""
    text = README.read_text(encoding="utf-8").replace(S3_LITERAL, request.getfixturevalue("s3_url"))
    for number, block in enumerate(python_blocks(text)):
        folder = tmp_path / f"block-{number}"
        folder.mkdir()
        done = run_blocks(README, [block], folder)
        assert done.returncode == 0, f"README block {number} alone failed\n{done.stderr}"


def test_block_lines_point_into_the_page() -> None:
    text = "# t\n\n```python\nx = 1\ny = 2\n```\n\n```bash\nls\n```\n```python\nz = 3\n```\n"
    blocks = python_blocks(text)
    assert blocks == [(4, "x = 1\ny = 2\n"), (12, "z = 3\n")]
    lines = text.splitlines()
    assert [lines[line - 1] for line, _ in blocks] == ["x = 1", "z = 3"]


def mkdocs_build(config: Path, site: Path) -> subprocess.CompletedProcess[str]:
    """``mkdocs build --strict`` as CI runs it (no ``-q``: it would hide warnings from --strict)."""
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(config), "-d", str(site)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=config.parent,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},  # Material's end-of-life banner
    )


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    done = mkdocs_build(ROOT / "mkdocs.yml", tmp_path / "site")
    assert done.returncode == 0, done.stderr
    assert not re.search(r"^WARNING", done.stderr, re.M), done.stderr
    cli_page = (tmp_path / "site" / "cli" / "index.html").read_text(encoding="utf-8")
    assert "export-git" in cli_page and "--grace" in cli_page
    documented = {
        anchor.rsplit(".", 1)[-1]
        for page in (tmp_path / "site" / "api").rglob("*.html")
        for anchor in re.findall(r'id="(statevcs\.[\w.]+)"', page.read_text(encoding="utf-8"))
    }
    public = set(statevcs.__all__) - {"__version__"}
    assert public <= documented, f"not in the API reference: {sorted(public - documented)}"


def test_a_broken_link_fails_the_strict_build(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "index.md").write_text("# Home\n\n[gone](missing.md)\n")
    (tmp_path / "mkdocs.yml").write_text("site_name: t\n")
    done = mkdocs_build(tmp_path / "mkdocs.yml", tmp_path / "site")
    assert done.returncode != 0
    assert "missing.md" in done.stderr


def test_the_cli_reference_covers_every_command() -> None:
    sys.path.insert(0, str(DOCS / "hooks"))
    try:
        import generated
    finally:
        sys.path.remove(str(DOCS / "hooks"))
    from statevcs.cli.app import cli

    reference = generated.cli_reference()
    for name, command in cli.commands.items():
        assert f"#### `statevcs {name}`" in reference
        for param in command.params:
            for option in getattr(param, "opts", []):
                if option.startswith("-"):
                    assert option in reference, (name, option)
    assert generated.CLI_MARKER in (DOCS / "cli.md").read_text(encoding="utf-8")


def recipe(page: Path, name: str) -> str:
    """The ```bash block right after ``<!-- recipe: NAME -->`` on ``page``, exactly as printed."""
    text = page.read_text(encoding="utf-8")
    match = re.search(
        rf"^<!-- recipe: {re.escape(name)} -->\n```bash\n(.*?)^```$", text, re.S | re.M
    )
    assert match, f"{page.name} has no recipe {name!r}"
    return match.group(1)


def stop_group(group: int, grace: float = 30.0) -> None:
    """Stop every process of ``group``: SIGTERM, then SIGKILL what is left after ``grace``."""
    try:
        os.killpg(group, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline:
            os.killpg(group, 0)  # raises once the group is empty
            time.sleep(0.2)
        os.killpg(group, signal.SIGKILL)
    except ProcessLookupError:
        pass


def test_the_local_s3_recipe_runs_as_printed(tmp_path: Path) -> None:
    """docs/storage.md's local S3 server: started, a repository created on it and read back."""
    script = recipe(DOCS / "storage.md", "local-s3")
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    # The recipe leaves the server running, as a user's shell would: its own process group
    # lets the test stop it afterwards.
    process = subprocess.Popen(
        ["bash", "-c", script],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = process.communicate(timeout=120)
    finally:
        stop_group(process.pid)
    assert process.returncode == 0, err
    assert "Initialized empty statevcs repository in s3://my-bucket/agents" in out
    assert "branch main has no commits yet" in err + out
    assert (tmp_path / "weed-data").is_dir()
