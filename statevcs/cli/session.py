"""What every command runs with, free of click: the repository it finds and the shared options.

The repository is found as git finds one: the current folder or its nearest parent holding
``statevcs.sqlite3`` (or ``.statevcs/statevcs.sqlite3``); ``-C PATH`` runs as if started in
PATH, ``--repo URL`` (or ``$STATEVCS_REPO``) names one directly. The click commands
(:mod:`.context`) and the fast path (:mod:`.fastpath`) share :class:`State`.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import RepositoryNotFound
from ..hashing import from_hex
from ..stores.registry import shown_location
from ..stores.sqlite import DB_FILENAME
from .console import PlainConsole, Printer, is_tty, rich_terminal
from .safety import suggest

if TYPE_CHECKING:
    from rich.console import Console

    from ..repo import Repo
    from ..serializers import StateSerializer

# The repository, its serializers and rich load when a command first needs them, not at
# start-up: `statevcs --version` and `--help` never do, and output that is not a terminal never
# loads rich (see .console).

HIDDEN_FOLDER = ".statevcs"
"""A project folder may keep its repository in this subfolder."""


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
    _out: Printer | None = None
    _err: Printer | None = None
    _consoles: dict[bool, Console] = field(default_factory=dict)
    _paged: bool = False

    def console(self, stderr: bool = False) -> Console:
        """The rich console for stdout (or stderr): what tables and progress bars draw on."""
        console = self._consoles.get(stderr)
        if console is None:
            from rich.console import Console

            # Through the pager stdout is a pipe, yet a terminal reads it: color as on one.
            paged = self._paged and not stderr and self.color == "auto"
            force = True if self.color == "always" or paged else None
            # markup=False and emoji=False: a plain string is printed as it is, never parsed.
            console = self._consoles[stderr] = Console(
                stderr=stderr,
                highlight=False,
                markup=False,
                emoji=False,
                soft_wrap=True,
                force_terminal=force,
                no_color=True if self.color == "never" else None,
            )
        return console

    def _printer(self, stderr: bool) -> Printer:
        forced = self.color == "always" or (self._paged and not stderr and self.color == "auto")
        stream = sys.stderr if stderr else sys.stdout
        if forced or rich_terminal(stream, os.environ):
            return self.console(stderr)
        # Not a terminal for rich either: it would print the plain text, and so do we.
        return PlainConsole(stderr, lambda: self.console(stderr))

    @property
    def out(self) -> Printer:
        """Where results print (stdout): rich on a terminal, plain text elsewhere."""
        if self._out is None:
            self._out = self._printer(stderr=False)
        return self._out

    @property
    def err(self) -> Printer:
        """Where notes print (stderr): rich on a terminal, plain text elsewhere."""
        if self._err is None:
            self._err = self._printer(stderr=True)
        return self._err

    def page(self) -> None:
        """Send what follows on stdout through the pager, on a terminal (see :mod:`.pager`)."""
        if self.paging and self._out is None and not self._paged and is_tty(sys.stdout):
            from . import pager  # subprocess and shutil load only for a terminal

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
                from .context import CommandError

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
                from .context import CommandError

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
        if self._paged:
            from . import pager

            self._paged = False
            pager.stop()
        if self._repo is not None:
            self._repo.close()
            self._repo = None


__all__ = ["HIDDEN_FOLDER", "State", "find_repository", "snapshot_codec"]
