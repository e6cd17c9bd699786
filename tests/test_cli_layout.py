"""The command line is written against the Repo porcelain (issue 9).

It never reaches into the storage backend (``repo.store``, ``repo.db``), never uses another
module's private names, and never calls the ``Repo`` members that are on their way out.
"""

from __future__ import annotations

import ast
from pathlib import Path

import statevcs.cli

PACKAGE = Path(statevcs.cli.__file__).parent
# Storage internals and the Repo members that moved to repo.objects / repo.refs / repo.config.
LEAVING = {
    "db",
    "store",
    "read_snapshot",
    "snapshot_codec",
    "write_snapshot",
    "write_commit",
    "set_ref",
    "config_get",
    "config_set",
}


def sources() -> list[Path]:
    found = sorted(PACKAGE.rglob("*.py"))
    assert len(found) > 5, found  # the package, not a single module
    return found


def offending(path: Path, root: Path = PACKAGE) -> list[str]:
    """What ``path`` uses of storage internals, leaving members or private names."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[str] = []
    for node in ast.walk(tree):
        where = f"{path.relative_to(root)}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Attribute):
            owner = node.value.id if isinstance(node.value, ast.Name) else None
            private = node.attr.startswith("_") and not node.attr.startswith("__")
            if node.attr in LEAVING or (private and owner not in ("self", "cls")):
                found.append(f"{where} .{node.attr}")
        elif isinstance(node, ast.ImportFrom):
            found += [
                f"{where} import {a.name}"
                for a in node.names
                if a.name.startswith("_") and not a.name.startswith("__")
            ]
    return found


def test_commands_use_porcelain_and_public_names_only() -> None:
    problems = [problem for path in sources() for problem in offending(path)]
    assert problems == []


def test_the_layout_check_sees_what_it_looks_for(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text(
        "from ..repo import _commit_from\n"
        "def f(repo):\n"
        "    repo.store.get_ref('HEAD')\n"
        "    repo._head_value()\n"
        "    return repo.write_commit()\n",
        encoding="utf-8",
    )
    found = offending(sample, tmp_path)
    assert sorted(p.split(" ", 1)[1] for p in found) == [
        "._head_value",
        ".store",
        ".write_commit",
        "import _commit_from",
    ]


def test_the_group_runs_every_command_module() -> None:
    assert set(statevcs.cli.cli.commands) == {
        "init",
        "status",
        "log",
        "show",
        "diff",
        "compare",
        "search",
        "reflog",
        "branch",
        "tag",
        "switch",
        "reset",
        "merge",
        "gc",
        "fsck",
        "stats",
        "upgrade",
        "export-git",
        "import-git",
        "mcp",
        "serve",
    }
