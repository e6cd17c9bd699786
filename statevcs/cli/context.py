"""What every click command runs with: the shared options (:class:`State`), the error types.

The repository is found as git finds one: the current folder or its nearest parent holding
``statevcs.sqlite3`` (or ``.statevcs/statevcs.sqlite3``); ``-C PATH`` runs as if started in
PATH, ``--repo URL`` (or ``$STATEVCS_REPO``) names one directly.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import IO, Any, TypeVar

import click

from .advice import cli_message
from .safety import one_line
from .session import HIDDEN_FOLDER, State, find_repository, snapshot_codec

REV_EPILOG = (
    "REV is HEAD, a branch or tag name, a commit id prefix (4+ hex digits), with suffixes ~N "
    "(first parents back), ^N (N-th parent) or NAME@{N} (reflog); see `statevcs --help`."
)
"""The revision reminder at the end of every command's help that takes one."""


def current_state() -> State:
    """The options of the command being run."""
    state = click.get_current_context().find_object(State)
    if state is None:  # pragma: no cover - every command runs under the group
        raise click.UsageError("internal error: command run outside the statevcs group")
    return state


def server_state(repo: str | None) -> State:
    """The options of a command serving a repository (``mcp``, ``serve``): REPO or --repo, and
    msgpack state unless a serializer was named (a server reads every snapshot; msgpack decodes
    JSON state too)."""
    state = current_state()
    if repo is not None:
        if state.repo_url is not None and state.repo_url != repo:
            raise click.UsageError("give the repository as REPO or --repo, not both")
        state.repo_url = repo
    if state.serializer == "auto":
        state.serializer = "msgpack"
    return state


_F = TypeVar("_F", bound=Callable[..., Any])


def json_option(func: _F) -> _F:
    """The ``--json`` flag every command that prints something takes."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON for scripts.")(func)


# --- errors -------------------------------------------------------------------------------


class CommandError(click.ClickException):
    """A failure reported as one ``error: ...`` line on stderr, with exit status 1."""

    exit_code = 1

    def show(self, file: IO[Any] | None = None) -> None:
        """Print the message as one safe line."""
        click.echo("error: " + one_line(self.message), err=True, file=file)


class CommandUsageError(click.UsageError):
    """A command used wrongly: ``error: ...`` and a pointer to its help, exit status 2."""

    def show(self, file: IO[Any] | None = None) -> None:
        """Print the message and where to find the command's help, on one line."""
        where = self.ctx.command_path if self.ctx is not None else "statevcs"
        message = one_line(self.format_message()).rstrip(".")
        click.echo(f"error: {message} (see `{where} --help`)", err=True, file=file)


def usage_error(exc: click.UsageError) -> CommandUsageError:
    """``exc`` as a :class:`CommandUsageError` with the same message and context (status 2).

    click gives every usage error exit status 2, a class attribute since click 8.5.
    """
    return CommandUsageError(exc.format_message(), exc.ctx)


__all__ = [
    "HIDDEN_FOLDER",
    "REV_EPILOG",
    "CommandError",
    "CommandUsageError",
    "State",
    "cli_message",
    "current_state",
    "find_repository",
    "json_option",
    "snapshot_codec",
    "usage_error",
]
