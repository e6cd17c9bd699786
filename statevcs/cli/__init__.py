"""The ``statevcs`` command line: git's habits (log, show, diff, branch, merge, ...) on agent state.

The repository is found as git finds one: the current folder or its nearest parent holding
``statevcs.sqlite3`` (or ``.statevcs/statevcs.sqlite3``); ``-C PATH`` runs as if started in
PATH, ``--repo URL`` (or ``$STATEVCS_REPO``) names one directly. Read commands take ``--json``.
Colors follow the terminal: none when piped or when ``NO_COLOR`` is set. Errors print one line,
``error: ...``, and exit 1 (2 for a command used wrongly); ``--debug`` shows the traceback.

Everything read from a repository (messages, authors, keys, ref names, metadata) is printed as
plain text through :func:`safe_text`, never as rich markup, with terminal control characters
shown as visible escapes.

One job per module: :mod:`.context` (finding the repository, the shared options, the error
types), :mod:`.app` (the group, error handling, :func:`main`), :mod:`.rendering` (safe text,
JSON, commit headers, messages, diffs), :mod:`.graph` (git's ``--graph`` order and drawing),
:mod:`.revisions` (revisions explained in command-line terms) and :mod:`.commands` (the commands
by area: history, refs, maintenance, mirror, init). Commands use the ``Repo`` porcelain.
"""

from __future__ import annotations

from .app import cli, main
from .context import CommandError, cli_message, find_repository
from .graph import graph_cells, graph_order, graph_rows
from .rendering import message_lines, safe_text, to_plain
from .revisions import resolve, unborn_message

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
