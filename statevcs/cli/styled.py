"""A line of styled text without rich: what the renderers build, printed plain or through rich.

:class:`Styled` holds ``(text, style)`` parts. Printed where no colour applies (a pipe, a file)
it is its plain text, written without importing rich; printed by a rich console it becomes a
``rich.text.Text`` with the same parts and styles (rich's ``__rich__`` protocol), so a terminal
shows it exactly as it showed the ``Text`` the renderers built before.
"""

from __future__ import annotations

TYPE_CHECKING = False  # not typing's: the command line's fast path does not import typing
if TYPE_CHECKING:
    from rich.text import Text


class Styled:
    """Text in parts, each with a rich style name (``""`` for none); append-only."""

    __slots__ = ("parts",)

    def __init__(self, text: str = "", style: str = "") -> None:
        self.parts: list[tuple[str, str]] = [(text, style)] if text else []

    def append(self, text: str, style: str = "") -> Styled:
        """Add ``text`` in ``style``; returns this line (as rich's ``Text.append`` does)."""
        if not isinstance(text, str):
            raise TypeError(f"text must be a str, not {type(text).__name__}")
        if text:
            self.parts.append((text, style))
        return self

    def append_text(self, other: Styled) -> Styled:
        """Add every part of ``other``; returns this line."""
        if not isinstance(other, Styled):
            raise TypeError(f"other must be a Styled line, not {type(other).__name__}")
        self.parts.extend(other.parts)
        return self

    @property
    def plain(self) -> str:
        """The text without its styles."""
        return "".join(text for text, _ in self.parts)

    def __str__(self) -> str:
        return self.plain

    def __repr__(self) -> str:
        return f"Styled({self.parts!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Styled) and self.parts == other.parts

    __hash__ = None  # type: ignore[assignment]  # mutable, like rich's Text

    def __rich__(self) -> Text:
        """This line as a rich ``Text`` (rich calls this when a console prints the line)."""
        from rich.text import Text

        line = Text()
        for text, style in self.parts:
            line.append(text, style=style or None)
        return line


__all__ = ["Styled"]
