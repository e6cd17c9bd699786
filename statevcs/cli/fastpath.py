"""The hot read commands without click: ``log``, ``show``, ``reflog``, ``status``, ``branch``.

click and rich cost more start-up than the rest of a read command together. When the output
is not a terminal (a pipe, a file: scripts, agents, ``| grep``), :func:`run` parses the
command line itself and calls the same functions the click commands call (:mod:`.reads`),
printing the same bytes. It takes only plain spellings of the options below, each checked
against the click command's own by the tests (:data:`GLOBAL_OPTIONS`, :data:`COMMANDS`);
anything else (``--help``, an unknown or malformed option, a terminal, ``--color always``) is
left to click, and so is every failure: the command's output is held back until it succeeds,
and a command that fails, warns, or would write notes to a terminal runs again under click,
which reports it as always. The read commands change nothing, so running one twice is safe.
"""

from __future__ import annotations

import io
import os
import re
import sys
import warnings
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from .console import is_tty, rich_terminal

FLAG, VALUE, COUNT, COUNTER = "flag", "value", "count", "counter"
"""How an option takes its value: a flag (``True``), a string, a count ``>= 0`` (``-n 3``),
or a repeatable counter (``-vv`` is 2)."""


class Option(NamedTuple):
    """One option the fast path accepts: the click parameter's name, its kind, and for a
    value option the values click's ``Choice`` allows (``None``: any string)."""

    name: str
    kind: str
    choices: tuple[str, ...] | None = None


class Command(NamedTuple):
    """What the fast path accepts of one command: its options by spelling, its positional
    arguments with their defaults, the function of :mod:`.reads` that runs it, and the values
    click gives the command's other parameters on the command lines the fast path takes."""

    options: Mapping[str, Option]
    arguments: tuple[tuple[str, str | None], ...]
    run: str
    implied: Mapping[str, Any] = {}


GLOBAL_OPTIONS: dict[str, Option] = {
    "-C": Option("chdir", VALUE),
    "--repo": Option("repo_url", VALUE),
    "--serializer": Option("serializer", VALUE, ("auto", "json", "msgpack", "pickle")),
    # --color always forces rich's colours: click's path draws them.
    "--color": Option("color", VALUE, ("auto", "never")),
    "--no-pager": Option("no_pager", FLAG),
    "-P": Option("no_pager", FLAG),
    "--debug": Option("debug", FLAG),
}
"""The group's options the fast path takes (before the command name, as click takes them)."""

GLOBAL_ENVIRONMENT = {"repo_url": "STATEVCS_REPO", "serializer": "STATEVCS_SERIALIZER"}
"""The group's options that click also reads from the environment."""

GLOBAL_DEFAULTS: dict[str, Any] = {
    "chdir": None,
    "repo_url": None,
    "serializer": "auto",
    "color": "auto",
    "no_pager": False,
    "debug": False,
}

_JSON = {"--json": Option("as_json", FLAG)}
_COUNT = {"-n": Option("limit", COUNT), "--max-count": Option("limit", COUNT)}

COMMANDS: dict[str, Command] = {
    "log": Command(
        {
            "--graph": Option("graph", FLAG),
            "--all": Option("all_refs", FLAG),
            **_COUNT,
            "--oneline": Option("one_line", FLAG),
            "--first-parent": Option("first_parent", FLAG),
            **_JSON,
        },
        (("rev", None),),
        "log",
    ),
    "show": Command(
        {
            "--messages": Option("only_messages", FLAG),
            "--state": Option("only_state", FLAG),
            **_JSON,
        },
        (("rev", "HEAD"),),
        "show",
    ),
    "reflog": Command({**_COUNT, **_JSON}, (("ref", "HEAD"),), "reflog"),
    "status": Command(_JSON, (), "status"),
    # Only the listing: creating or deleting a branch is click's.
    "branch": Command(
        {"-v": Option("verbose", COUNTER), "--verbose": Option("verbose", COUNTER), **_JSON},
        (),
        "branches",
        {"name": None, "start": None, "delete": None, "force": False},
    ),
}
"""The commands the fast path runs, with the options of each it takes."""

_DEFAULTS: dict[str, Any] = {FLAG: False, VALUE: None, COUNT: None, COUNTER: 0}


class Parsed(NamedTuple):
    """A command line the fast path can run: the group's options, the command, its options."""

    options: dict[str, Any]
    command: str
    params: dict[str, Any]


def git_counts(args: list[str]) -> list[str]:
    """Accept git's ``log -3`` shorthand for ``log -n 3`` (also for reflog)."""
    out: list[str] = []
    counting = False
    for arg in args:
        if counting and re.fullmatch(r"-[0-9]+", arg):
            out += ["-n", arg[1:]]
            continue
        if arg == "--":
            counting = False
        elif arg in ("log", "reflog") and out[-1:] not in (["-C"], ["--repo"]):
            counting = True
        out.append(arg)
    return out


def _take(
    options: Mapping[str, Option], found: dict[str, Any], args: list[str], index: int
) -> int | None:
    """Read the option at ``args[index]`` into ``found``; the next index, or ``None`` when
    click would read it differently (or refuse it)."""
    arg = args[index]
    spelling, equals, attached = arg.partition("=") if arg.startswith("--") else (arg, "", "")
    if not arg.startswith("--") and len(arg) > 2:  # -n3: a short option's attached value
        spelling, equals, attached = arg[:2], "=", arg[2:]
    option = options.get(spelling)
    if option is None:
        return None
    if option.kind in (FLAG, COUNTER):
        if equals:
            return None
        found[option.name] = True if option.kind == FLAG else found[option.name] + 1
        return index + 1
    if equals:
        value, after = attached, index + 1
    elif index + 1 < len(args):
        value, after = args[index + 1], index + 2
    else:
        return None
    if option.kind == COUNT:
        if not (value.isascii() and value.isdigit()):
            return None  # click's IntRange decides what else it takes, and says why not
        found[option.name] = int(value)
    elif option.choices is not None and value not in option.choices:
        return None
    else:
        found[option.name] = value
    return after


def parse(args: list[str], environ: Mapping[str, str]) -> Parsed | None:
    """Parse a command line as click would, or ``None`` when it is not one for the fast path."""
    args = git_counts(list(args))
    options = dict(GLOBAL_DEFAULTS)
    for name, variable in GLOBAL_ENVIRONMENT.items():
        value = environ.get(variable)
        if value:  # click ignores an empty variable
            choices = GLOBAL_OPTIONS["--serializer"].choices or ()
            if name == "serializer" and value not in choices:
                return None
            options[name] = value
    index = 0
    while index < len(args) and args[index].startswith("-") and args[index] != "-":
        taken = _take(GLOBAL_OPTIONS, options, args, index)
        if taken is None:
            return None
        index = taken
    if index >= len(args) or args[index] not in COMMANDS:
        return None
    if options["chdir"] is not None:
        from ..stores.registry import scheme_of

        if scheme_of(options["chdir"]) is not None:
            return None  # -C URL acts as --repo: click's path sorts that out
    name = args[index]
    command = COMMANDS[name]
    params: dict[str, Any] = {o.name: _DEFAULTS[o.kind] for o in command.options.values()}
    positional: list[str] = []
    index += 1
    while index < len(args):
        arg = args[index]
        if arg == "--":
            positional += args[index + 1 :]
            break
        if arg.startswith("-") and arg != "-":
            taken = _take(command.options, params, args, index)
            if taken is None:
                return None
            index = taken
        else:
            positional.append(arg)
            index += 1
    if len(positional) > len(command.arguments):
        return None
    for position, (argument, default) in enumerate(command.arguments):
        params[argument] = positional[position] if position < len(positional) else default
    return Parsed(options, name, params)


def run(args: list[str]) -> int | None:
    """Run a hot read command without click; its exit status, or ``None`` for click's path."""
    parsed = parse(args, os.environ)
    # A terminal gets the pager and rich's colours (even one rich is told is none: the pager
    # starts on any terminal), so click's path; so does output rich would colour anyway.
    if parsed is None or is_tty(sys.stdout) or rich_terminal(sys.stdout, os.environ):
        return None
    from ..stores.registry import check_path
    from . import reads
    from .session import State

    options = parsed.options
    chdir = options["chdir"]
    command: Callable[..., None] = getattr(reads, COMMANDS[parsed.command].run)
    before = os.getcwd() if chdir is not None else None
    out, err = io.StringIO(), io.StringIO()
    stdout, stderr = sys.stdout, sys.stderr
    state = State(
        repo_url=options["repo_url"],
        debug=options["debug"],
        color=options["color"],
        serializer=options["serializer"],
        paging=not options["no_pager"],
    )
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", UserWarning)
            sys.stdout, sys.stderr = out, err
            try:
                if chdir is not None:
                    check_path(chdir)
                    os.chdir(chdir)
                command(state, **parsed.params)
            finally:
                sys.stdout, sys.stderr = stdout, stderr
                state.close()
    except KeyboardInterrupt:
        sys.stderr.write("\nAborted!\n")  # as click says it
        return 1
    except Exception:  # click's path runs it again and reports the failure as it always does
        ran = False
    else:
        warned = any(issubclass(w.category, UserWarning) for w in caught)
        # Notes for a terminal are drawn by rich, on click's path.
        ran = not warned and not (err.getvalue() and rich_terminal(stderr, os.environ))
    if not ran:
        if before is not None:
            os.chdir(before)
        return None
    return _write(out.getvalue(), err.getvalue())


def _write(out: str, err: str) -> int:
    """Print what the command printed; a reader gone early (``| head``) ends it quietly."""
    try:
        if err:
            sys.stderr.write(err)
            sys.stderr.flush()
        sys.stdout.write(out)
        sys.stdout.flush()
    except BrokenPipeError:
        # As click's path: nothing more reaches the closed pipe, exit status 1.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 1
    return 0


__all__ = [
    "COMMANDS",
    "GLOBAL_DEFAULTS",
    "GLOBAL_ENVIRONMENT",
    "GLOBAL_OPTIONS",
    "Command",
    "Option",
    "Parsed",
    "git_counts",
    "parse",
    "run",
]
