"""The ``statevcs`` command line: git's habits (log, show, diff, branch, merge, ...) on agent state.

The repository is found as git finds one: the current folder or its nearest parent holding
``statevcs.sqlite3`` (or ``.statevcs/statevcs.sqlite3``); ``-C PATH`` runs as if started in
PATH, ``--repo URL`` (or ``$STATEVCS_REPO``) names one directly. Read commands take ``--json``.
Colors follow the terminal: none when piped or when ``NO_COLOR`` is set. Errors print one line,
``error: ...``, and exit 1 (2 for a command used wrongly); ``--debug`` shows the traceback.

Everything read from a repository (messages, authors, keys, ref names, metadata) is printed as
plain text through :func:`safe_text`, never as rich markup, with terminal control characters
shown as visible escapes.

One job per module: :mod:`.session` (finding the repository, the shared options, where output
prints), :mod:`.context` (what the click commands share, the error types), :mod:`.app` (the
group, error handling, :func:`main`), :mod:`.rendering` (safe text, JSON, commit headers,
messages, diffs) printed as :mod:`.styled` lines through :mod:`.console`, :mod:`.graph` (git's
``--graph`` order and drawing), :mod:`.revisions` (revisions explained in command-line terms),
:mod:`.reads` (what the hot read commands print), :mod:`.fastpath` (those commands piped,
without click or rich) and :mod:`.commands` (the click commands by area: history, refs,
maintenance, mirror, init). Commands use the ``Repo`` porcelain.
"""

from __future__ import annotations

import importlib
import sys

from .. import __version__

TYPE_CHECKING = False  # not typing's: `statevcs --version` would pay for importing it
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, NoReturn

    from .app import cli
    from .context import CommandError, cli_message, find_repository
    from .graph import graph_cells, graph_order, graph_rows
    from .rendering import message_lines, to_plain
    from .revisions import resolve, unborn_message
    from .safety import safe_text

# Loaded on first use: `statevcs --version` imports only click and the group (see app).
_EXPORTS = {
    "cli": ".app",
    "CommandError": ".context",
    "cli_message": ".context",
    "find_repository": ".context",
    "graph_cells": ".graph",
    "graph_order": ".graph",
    "graph_rows": ".graph",
    "message_lines": ".rendering",
    "safe_text": ".safety",
    "to_plain": ".rendering",
    "resolve": ".revisions",
    "unborn_message": ".revisions",
}


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Run the ``statevcs`` command line (the console script and ``python -m statevcs``)."""
    args = list(argv) if argv is not None else sys.argv[1:]
    if args == ["--version"]:
        # Answered before click loads: a script checking the version pays Python's start only.
        sys.stdout.write(f"statevcs, version {__version__}\n")
        sys.exit(0)
    from .fastpath import run as run_fast

    status = run_fast(args)  # a hot read command piped or redirected: no click, no rich
    if status is not None:
        sys.exit(status)
    from .app import main as run

    run(args)


def __getattr__(name: str) -> Any:
    """Load a public name's module the first time the name is asked for."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


__all__ = [
    "CommandError",
    "cli",
    "cli_message",
    "find_repository",
    "graph_cells",
    "graph_order",
    "graph_rows",
    "main",
    "message_lines",
    "resolve",
    "safe_text",
    "to_plain",
    "unborn_message",
]
