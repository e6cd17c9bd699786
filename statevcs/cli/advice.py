"""Library messages in command-line terms: advice for Python callers said as CLI advice."""

from __future__ import annotations

import re

# Advice written for Python callers, as the command line says it; the commands give more
# precise messages where they know the context, these cover what reaches the handler.
# Compiled on first use (re caches them): every command loads this, few print an error.
_CLI_ADVICE: tuple[tuple[str, str], ...] = (
    (r"open it with statevcs\.Repo\.open\([^)]*\)", "use it with `statevcs -C PATH`"),
    (
        r"create one with statevcs\.Repo\.init\([^)]*\)(?: or `statevcs init`)?",
        "create one with `statevcs init PATH`",
    ),
    (r"list branches with repo\.branches\(\)", "list branches with `statevcs branch`"),
    (r"list tags with repo\.tags\(\)", "list tags with `statevcs tag`"),
    (
        r"create it with repo\.branch\(\.\.\.\)",
        "create it with `statevcs branch NAME REV`",
    ),
    (r"pass force=True to move it", "pass -f to move it"),
    (r"check out another branch first", "switch to another branch first"),
    (
        (
            r"Choose a side with strategy='ours' or 'theirs' \(`--strategy ours\|theirs` on the "
            r"command line\)(?:; a per-key resolver callable can settle state keys)?"
        ),
        "Choose a side with `--strategy ours` or `--strategy theirs`",
    ),
    (
        r"open the repository with serializer=statevcs\.MsgpackSerializer\([^;]*",
        "run with `--serializer msgpack`",
    ),
    (
        r"open the repository with serializer=statevcs\.PickleSerializer\([^;]*",
        "run with `--serializer pickle` and its signing key in $STATEVCS_PICKLE_KEY",
    ),
)


def cli_message(exc: BaseException) -> str:
    """Return an exception's message with advice for Python callers given as CLI advice."""
    message = str(exc) or type(exc).__name__
    for pattern, replacement in _CLI_ADVICE:
        message = re.sub(pattern, replacement, message)
    return message


__all__ = ["cli_message"]
