"""Where the command line prints: rich's console on a terminal, plain writes everywhere else.

Printed to a pipe or a file, rich writes the plain text of what it is given (no colour, no
wrapping: the consoles soft-wrap). :class:`PlainConsole` writes that same text itself, so a
command whose output is not a terminal never imports rich (about half of start-up); anything
else than a :class:`~.styled.Styled` line or a string (a table) goes to the rich console it
stands for. :func:`rich_terminal` is rich's own test of "is this a terminal".
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from typing import IO, TYPE_CHECKING, Any, Protocol

from .styled import Styled

if TYPE_CHECKING:
    from rich.console import Console

# rich drops these from every string it prints (rich.control.strip_control_codes): bell,
# backspace, vertical tab, form feed, carriage return.
_RICH_STRIPS = dict.fromkeys((7, 8, 11, 12, 13))


class Printer(Protocol):
    """What a command prints with: a rich ``Console`` or a :class:`PlainConsole`."""

    def print(self, *objects: Any, end: str = "\n") -> None:
        """Print ``objects`` separated by spaces, then ``end``."""

    @property
    def is_terminal(self) -> bool:
        """Whether the output goes to a terminal (progress bars show only there)."""


def rich_terminal(stream: IO[str], environ: Mapping[str, str]) -> bool:
    """Whether rich treats ``stream`` as a terminal (colours, styles) when nothing forces it.

    Mirrors ``rich.console.Console.is_terminal`` for a console without ``force_terminal``:
    ``TTY_COMPATIBLE`` (0 or 1) decides, then ``FORCE_COLOR`` (set and not empty: a terminal),
    then the stream's ``isatty()``. A test holds this to rich's answer.
    """
    compatible = environ.get("TTY_COMPATIBLE", "")
    if compatible in ("0", "1"):
        return compatible == "1"
    force = environ.get("FORCE_COLOR")
    if force is not None:
        return force != ""
    isatty = getattr(stream, "isatty", None)
    try:
        return False if isatty is None else bool(isatty())
    except ValueError:  # a closed stream, as rich answers
        return False


def is_tty(stream: object) -> bool:
    """Whether ``stream`` is a terminal (where the pager starts), whatever rich is told."""
    try:
        return bool(stream.isatty())  # type: ignore[attr-defined]
    except (AttributeError, OSError, ValueError):
        return False


class PlainConsole:
    """Prints :class:`Styled` lines and strings as plain text, byte for byte as rich would on
    a stream that is not a terminal; hands anything else to the rich console it stands for."""

    def __init__(self, stderr: bool, rich_console: Callable[[], Console]) -> None:
        self.stderr = stderr
        self._rich_console = rich_console

    @property
    def is_terminal(self) -> bool:
        """Never: a plain console is only used where rich would not see a terminal."""
        return False

    def print(self, *objects: Any, end: str = "\n") -> None:
        """Print ``objects`` separated by spaces, then ``end`` (a table goes through rich)."""
        plain = all(isinstance(o, (Styled, str)) for o in objects)
        shown = " ".join(o.plain if isinstance(o, Styled) else o for o in objects) if plain else ""
        if not plain or "\t" in shown:
            # A table, or a tab (rich expands it; the renderers escape every tab): rich prints.
            self._rich_console().print(*objects, end=end)
            return
        stream = sys.stderr if self.stderr else sys.stdout
        stream.write(shown.translate(_RICH_STRIPS) + end)
        stream.flush()


__all__ = ["PlainConsole", "Printer", "is_tty", "rich_terminal"]
