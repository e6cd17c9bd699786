"""What every command runs with: the repository it finds, the shared options, the error types.

The repository is found as git finds one: the current folder or its nearest parent holding
``statevcs.sqlite3`` (or ``.statevcs/statevcs.sqlite3``); ``-C PATH`` runs as if started in
PATH, ``--repo URL`` (or ``$STATEVCS_REPO``) names one directly.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, TypeVar

import click

from ..errors import RepositoryNotFound
from ..hashing import from_hex
from ..stores.registry import shown_location
from ..stores.sqlite import DB_FILENAME
from .safety import one_line, suggest

if TYPE_CHECKING:
    from rich.console import Console

    from ..repo import Repo
    from ..serializers import StateSerializer

# The repository, its serializers and rich load when a command first needs them, not at
# start-up: `statevcs --version` and `--help` never do.

HIDDEN_FOLDER = ".statevcs"
"""A project folder may keep its repository in this subfolder."""

REV_EPILOG = (
    "REV is HEAD, a branch or tag name, a commit id prefix (4+ hex digits), with suffixes ~N "
    "(first parents back), ^N (N-th parent) or NAME@{N} (reflog); see `statevcs --help`."
)
"""The revision reminder at the end of every command's help that takes one."""


# --- repository discovery -------------------------------------------------------------


def find_repository(start: Path) -> Path:
    """Return the statevcs repository folder at ``start`` or its nearest parent.

    A repository folder holds ``statevcs.sqlite3``; a project folder may instead hold one in
    ``.statevcs/``. Raises :class:`RepositoryNotFound` when none is found up to the root.
    """
    start = start.resolve()
    for folder in (start, *start.parents):
        if (folder / DB_FILENAME).is_file():
            return folder
        if (folder / HIDDEN_FOLDER / DB_FILENAME).is_file():
            return folder / HIDDEN_FOLDER
    raise RepositoryNotFound(
        f"not a statevcs repository (or any parent up to /): {start}; create one with "
        "`statevcs init`, or name one with -C PATH or --repo PATH"
    )


def _holds_database(location: Path) -> bool:
    return location.is_file() or (location / DB_FILENAME).exists()


def snapshot_codec(repo: Repo, snapshot_id: str) -> str:
    """The name of the serializer a snapshot's state values were written with."""
    return repo.objects.load_snapshot(from_hex(snapshot_id)).state_codec


@dataclass
class State:
    """Options shared by every command, and the lazily opened repository."""

    repo_url: str | None
    debug: bool
    color: str
    serializer: str
    paging: bool = True
    _repo: Repo | None = None
    _out: Console | None = None
    _err: Console | None = None
    _paged: bool = False

    def _console(self, stderr: bool) -> Console:
        from rich.console import Console

        # Through the pager stdout is a pipe, yet a terminal reads it: color as on one.
        paged = self._paged and not stderr and self.color == "auto"
        force = True if self.color == "always" or paged else None
        # markup=False and emoji=False: a plain string is printed as it is, never parsed.
        return Console(
            stderr=stderr,
            highlight=False,
            markup=False,
            emoji=False,
            soft_wrap=True,
            force_terminal=force,
            no_color=True if self.color == "never" else None,
        )

    @property
    def out(self) -> Console:
        """The console for results (stdout)."""
        if self._out is None:
            self._out = self._console(stderr=False)
        return self._out

    @property
    def err(self) -> Console:
        """The console for notes and progress (stderr)."""
        if self._err is None:
            self._err = self._console(stderr=True)
        return self._err

    def page(self) -> None:
        """Send what follows on stdout through the pager, on a terminal (see :mod:`.pager`)."""
        from . import pager

        if self.paging and self._out is None and not self._paged:
            self._paged = pager.start()

    def repo(self) -> Repo:
        """Open (once) the repository these options name."""
        from ..repo import Repo

        if self._repo is None:
            location: str | Path = (
                self.repo_url if self.repo_url is not None else find_repository(Path.cwd())
            )
            if str(location) == "memory://":
                # A throwaway repository: each command starts from an empty one.
                self._repo = Repo.init("memory://", serializer=self._serializer())
                return self._repo
            try:
                self._repo = Repo.open(location, serializer=self._serializer())
            except RepositoryNotFound:
                if _holds_database(Path(location)):
                    raise  # a file that is not a statevcs database: the library says which
                shown = shown_location(str(location), limit=1000)
                raise CommandError(
                    f"not a statevcs repository: {shown}; create one with "
                    f"{suggest('init', shown)}, or name an existing one with -C PATH"
                ) from None
        return self._repo

    def _serializer(self) -> StateSerializer:
        from ..serializers import JSONSerializer, MsgpackSerializer, PickleSerializer

        if self.serializer == "msgpack":
            return MsgpackSerializer()
        if self.serializer == "pickle":
            key = os.environ.get("STATEVCS_PICKLE_KEY")
            if not key:
                raise CommandError(
                    "--serializer pickle needs the signing key in $STATEVCS_PICKLE_KEY"
                )
            return PickleSerializer(key)
        return JSONSerializer()

    def reading(self, snapshot_ids: Iterable[str]) -> Repo:
        """Return the repository, opened so that it decodes the state of these snapshots.

        With ``--serializer auto`` the repository opens with JSON; when a snapshot to read
        holds msgpack state it is opened again with msgpack (which reads JSON snapshots too).
        """
        from ..repo import Repo
        from ..serializers import MsgpackSerializer

        repo = self.repo()
        if self.serializer != "auto" or repo.serializer.name == MsgpackSerializer.name:
            return repo
        # Absolute: a folder given as ./s3:/x must not come back as the URL-like "s3:/x".
        location: Path | str = repo.path.absolute() if repo.path is not None else repo.url
        if location == "memory://":
            return repo  # memory:// is new for each command: there is nothing to decode
        if any(snapshot_codec(repo, s) == MsgpackSerializer.name for s in snapshot_ids):
            repo.close()
            self._repo = None
            self._repo = Repo.open(location, serializer=MsgpackSerializer())
            return self._repo
        return repo

    def close(self) -> None:
        """Close the repository if a command opened it, and wait for the pager."""
        from . import pager

        if self._paged:
            self._paged = False
            pager.stop()
        if self._repo is not None:
            self._repo.close()
            self._repo = None


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


# Advice written for Python callers, as the command line says it; the commands give more
# precise messages where they know the context, these cover what reaches the handler.
_CLI_ADVICE: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"open it with statevcs\.Repo\.open\([^)]*\)"), "use it with `statevcs -C PATH`"),
    (
        re.compile(r"create one with statevcs\.Repo\.init\([^)]*\)(?: or `statevcs init`)?"),
        "create one with `statevcs init PATH`",
    ),
    (re.compile(r"list branches with repo\.branches\(\)"), "list branches with `statevcs branch`"),
    (re.compile(r"list tags with repo\.tags\(\)"), "list tags with `statevcs tag`"),
    (
        re.compile(r"create it with repo\.branch\(\.\.\.\)"),
        "create it with `statevcs branch NAME REV`",
    ),
    (re.compile(r"pass force=True to move it"), "pass -f to move it"),
    (re.compile(r"check out another branch first"), "switch to another branch first"),
    (
        re.compile(
            r"Choose a side with strategy='ours' or 'theirs' \(`--strategy ours\|theirs` on the "
            r"command line\)(?:; a per-key resolver callable can settle state keys)?"
        ),
        "Choose a side with `--strategy ours` or `--strategy theirs`",
    ),
    (
        re.compile(r"open the repository with serializer=statevcs\.MsgpackSerializer\([^;]*"),
        "run with `--serializer msgpack`",
    ),
    (
        re.compile(r"open the repository with serializer=statevcs\.PickleSerializer\([^;]*"),
        "run with `--serializer pickle` and its signing key in $STATEVCS_PICKLE_KEY",
    ),
)


def cli_message(exc: BaseException) -> str:
    """Return an exception's message with advice for Python callers given as CLI advice."""
    message = str(exc) or type(exc).__name__
    for pattern, replacement in _CLI_ADVICE:
        message = pattern.sub(replacement, message)
    return message


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
