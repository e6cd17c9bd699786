"""MkDocs hook: pages generated from the code at build time, so they cannot go stale.

* ``<!-- generated: cli-reference -->`` (in ``cli.md``) becomes the reference of the ``statevcs``
  command line, read from the click commands themselves: usage, arguments, options, help.
* ``<!-- generated: error-tree -->`` (in ``api/errors.md``) becomes the ``StateVCSError`` tree,
  walked from the loaded classes; each entry is a cross-reference, so an error the API reference
  does not document fails ``mkdocs build --strict``.

The rendered API pages also lose the Sphinx roles (``:class:``, ``:func:``, ...) the docstrings
use, which mkdocstrings would otherwise print as text.
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import re
from typing import Any

import click

CLI_MARKER = "<!-- generated: cli-reference -->"
ERRORS_MARKER = "<!-- generated: error-tree -->"

# Modules that define errors outside statevcs.errors; the optional ones are loaded when present.
_ERROR_MODULES = (
    "statevcs",
    "statevcs.durations",
    "statevcs.mirror.git",
    "statevcs.integrations.strands.testing",
    "statevcs.integrations.langgraph",
    "statevcs.stores.s3",
)

_ROLE = re.compile(r":(?:class|func|meth|attr|mod|exc|data|obj|const):(?=<code>)")


def _escape(text: str) -> str:
    """Markdown-safe inline text (click help may hold ``*``, ``_``, ``<`` or backticks)."""
    return re.sub(r"([\\*_<>\[\]])", r"\\\1", text)


def _help_text(text: str | None) -> str:
    """Click help as Markdown: ``\\b`` paragraphs (kept as typed) become text blocks."""
    if not text:
        return ""
    out: list[str] = []
    for paragraph in inspect.cleandoc(text).split("\n\n"):
        if paragraph.startswith("\b"):
            out.append("```text\n" + paragraph.lstrip("\b").strip("\n") + "\n```")
        else:
            out.append(" ".join(line.strip() for line in paragraph.splitlines()))
    return "\n\n".join(out)


def _params(command: click.Command, ctx: click.Context) -> str:
    arguments = [p for p in command.params if isinstance(p, click.Argument)]
    options = [p for p in command.params if not isinstance(p, click.Argument)]
    lines: list[str] = []
    if arguments:
        lines += ["", "Arguments:", ""]
        for argument in arguments:
            need = "required" if argument.required else "optional"
            many = ", repeatable" if argument.nargs == -1 else ""
            lines.append(f"- `{argument.make_metavar(ctx)}` ({need}{many})")
    records = [(o, o.get_help_record(ctx)) for o in options]
    shown = [(o, r) for o, r in records if r is not None]
    if shown:
        lines += ["", "Options:", ""]
        for _, (names, help_text) in shown:
            lines.append(f"- `{names}`" + (f": {_escape(help_text)}" if help_text else ""))
    return "\n".join(lines)


def cli_reference() -> str:
    """The ``statevcs`` command line's reference, as Markdown, from its click definitions."""
    from statevcs.cli.app import cli

    root = click.Context(cli, info_name="statevcs")
    parts = [
        "### Global options",
        "",
        _help_text(cli.help),
        "",
        "```text\n" + cli.get_usage(root) + "\n```",
        _params(cli, root),
        "",
        _help_text(cli.epilog),
        "",
        "### Commands",
        "",
        "| command | what it does |",
        "| --- | --- |",
    ]
    commands = list(cli.commands.items())
    for name, command in commands:
        summary = command.get_short_help_str(limit=200).replace("|", "\\|")
        parts.append(f"| [`{name}`](#statevcs-{name}) | {summary} |")
    for name, command in commands:
        ctx = click.Context(command, info_name=name, parent=root)
        parts += [
            "",
            f"#### `statevcs {name}` {{#statevcs-{name}}}",
            "",
            _help_text(command.help),
            "",
            "```text\n" + command.get_usage(ctx) + "\n```",
            _params(command, ctx),
        ]
        if command.epilog:
            parts += ["", _help_text(command.epilog)]
        for sub_name, sub in getattr(command, "commands", {}).items():  # a group's commands
            sub_ctx = click.Context(sub, info_name=sub_name, parent=ctx)
            anchor = f"statevcs-{name}-{sub_name}"
            parts += [
                "",
                f"##### `statevcs {name} {sub_name}` {{#{anchor}}}",
                "",
                _help_text(sub.help),
                "",
                "```text\n" + sub.get_usage(sub_ctx) + "\n```",
                _params(sub, sub_ctx),
            ]
    return "\n".join(parts) + "\n"


def error_classes() -> list[type[BaseException]]:
    """Every ``StateVCSError`` subclass the package defines, depth first in definition order."""
    for name in _ERROR_MODULES:
        if importlib.util.find_spec(name) is not None:
            importlib.import_module(name)
    from statevcs.errors import StateVCSError

    found: list[type[BaseException]] = []

    def walk(cls: type[BaseException]) -> None:
        if cls.__module__.startswith("statevcs") and cls not in found:
            found.append(cls)
            for sub in cls.__subclasses__():
                walk(sub)

    walk(StateVCSError)
    return found


def _public_path(cls: type[BaseException]) -> str:
    """Where the API reference documents the class (its defining module, as mkdocstrings does)."""
    return f"{cls.__module__}.{cls.__qualname__}"


def error_tree() -> str:
    """The ``StateVCSError`` tree as nested Markdown bullets of cross-references."""
    from statevcs.errors import StateVCSError

    classes = set(error_classes())
    lines: list[str] = []

    def walk(cls: type[BaseException], depth: int) -> None:
        doc = (inspect.getdoc(cls) or "").split("\n\n")[0].replace("\n", " ")
        doc = re.sub(r":\w+:`~?([^`]+)`", r"`\1`", doc)
        lines.append(f"{'    ' * depth}- [`{cls.__name__}`][{_public_path(cls)}]: {doc}")
        for sub in cls.__subclasses__():
            if sub in classes:
                walk(sub, depth + 1)

    walk(StateVCSError, 0)
    return "\n".join(lines) + "\n"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Replace the generation markers of a page with their generated Markdown."""
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_reference())
    if ERRORS_MARKER in markdown:
        markdown = markdown.replace(ERRORS_MARKER, error_tree())
    return markdown


def on_page_content(html: str, page: Any, config: Any, files: Any) -> str:
    """Drop the Sphinx roles docstrings use (``:class:`Repo``` reads as ``Repo``)."""
    if page.file.src_uri.startswith("api/"):
        html = _ROLE.sub("", html)
    return html
