"""The ``statevcs`` group and entry point: global options, error handling, ``main``.

Errors print one line, ``error: ...``, and exit 1 (2 for a command used wrongly); ``--debug``
shows the traceback. Library warnings print as ``warning: ...``.
"""

from __future__ import annotations

import os
import sys
import traceback
import warnings
from collections.abc import Sequence
from typing import Any, NoReturn

import click

from .. import __version__
from ..errors import StateVCSError
from ..stores.registry import check_path, scheme_of
from . import pager
from .commands import LazyCommands
from .context import CommandError, CommandUsageError, State, cli_message, usage_error
from .fastpath import git_counts
from .safety import one_line, safe_text

REVISION_HELP = """\
\b
Revisions (REV, START, A, B):
  HEAD, @        the newest commit of the current branch
  NAME           a branch or tag (also refs/heads/NAME, refs/tags/NAME)
  1a2b3c4d       a commit id, or a unique prefix of it (4 hex digits or more)
  REV~N          N generations back along first parents (REV~ is REV~1)
  REV^N          the N-th parent of a merge (REV^ is REV^1, REV^0 is REV)
  NAME@{N}       where NAME pointed N moves ago (see `statevcs reflog NAME`);
                 @{N} is the same for the current branch
  Suffixes chain: main~2^2, budget@{1}~3.
"""
"""The revision syntax, shown by ``statevcs --help``."""


def _show_warnings(caught: Sequence[warnings.WarningMessage]) -> None:
    """Print the library's warnings (an ambiguous name, ...) as git does: ``warning: ...``."""
    shown: set[str] = set()
    for warning in caught:
        if not issubclass(warning.category, UserWarning):
            continue
        message = one_line(str(warning.message))
        if message not in shown:
            shown.add(message)
            click.echo(f"warning: {message}", err=True)


class _Group(click.Group):
    """Reports every failure as ``error: ...`` on stderr: exit 1, or 2 for a usage mistake."""

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Accept git's ``log -3`` for ``log -n 3`` before click parses the arguments."""
        return super().parse_args(ctx, git_counts(args))

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        """Parse the group's own options, reporting mistakes in the statevcs style."""
        try:
            return super().make_context(info_name, args, parent, **extra)
        except click.UsageError as exc:
            if isinstance(exc, (CommandUsageError, click.exceptions.NoArgsIsHelpError)):
                raise
            raise usage_error(exc) from None

    def invoke(self, ctx: click.Context) -> Any:
        """Run the command; turn any failure into one ``error:`` line (never a traceback)."""
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", UserWarning)
            try:
                return self._invoke(ctx)
            finally:
                _show_warnings(caught)

    def _invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except (BrokenPipeError, SystemExit):
            # rich answers a broken pipe with SystemExit(1) (Console.on_broken_pipe). When the
            # reader was our pager, q before the end is no error, as in git.
            if pager.used():
                pager.stop(broken=True)
                ctx.exit(0)
            raise
        except (click.exceptions.Exit, click.exceptions.Abort):
            raise
        except click.UsageError as exc:
            if isinstance(exc, (CommandUsageError, click.exceptions.NoArgsIsHelpError)):
                raise
            raise usage_error(exc) from None
        except click.ClickException:
            raise
        except Exception as exc:  # the command line never shows a traceback
            state = ctx.find_object(State)
            if state is not None and state.debug:
                click.echo(safe_text(traceback.format_exc(), keep="\n"), err=True)
            if isinstance(exc, (StateVCSError, TypeError, OSError, UnicodeError)):
                raise CommandError(cli_message(exc)) from None
            raise CommandError(
                f"internal error ({type(exc).__name__}: {exc}); run again with --debug to see "
                "where, and report it"
            ) from None


@click.group(
    cls=_Group,
    commands=LazyCommands(),
    context_settings={"help_option_names": ["-h", "--help"]},
    epilog=REVISION_HELP,
)
@click.option(
    "-C",
    "chdir",
    # Not a click.Path: that would fold an s3:// URL's '//' into one slash.
    help="Run as if statevcs was started in PATH; a repository URL (s3://...) acts as --repo.",
    metavar="PATH",
)
@click.option(
    "--repo",
    "repo_url",
    envvar="STATEVCS_REPO",
    help="Repository location: a folder path or URL (memory://). Default: found like git.",
    metavar="URL",
)
@click.option(
    "--serializer",
    type=click.Choice(["auto", "json", "msgpack", "pickle"]),
    default="auto",
    envvar="STATEVCS_SERIALIZER",
    show_default=True,
    help="State serializer to open the repository with (pickle reads $STATEVCS_PICKLE_KEY).",
)
@click.option(
    "--color",
    type=click.Choice(["auto", "always", "never"]),
    default="auto",
    show_default=True,
    help="Colored output (auto: only on a terminal, never with NO_COLOR set).",
)
@click.option(
    "--no-pager",
    "-P",
    "no_pager",
    is_flag=True,
    help="Do not pipe log, show, diff and reflog into a pager ($STATEVCS_PAGER, $PAGER, less).",
)
@click.option("--debug", is_flag=True, help="Show tracebacks of errors.")
# The version is the package's own constant: importlib.metadata costs start-up time.
@click.version_option(version=__version__, prog_name="statevcs")
@click.pass_context
def cli(
    ctx: click.Context,
    chdir: str | None,
    repo_url: str | None,
    serializer: str,
    color: str,
    no_pager: bool,
    debug: bool,
) -> None:
    """Version control for AI agent state: git's commands on conversations and state."""
    if chdir is not None and scheme_of(chdir) is not None:
        if repo_url is not None and ctx.get_parameter_source("repo_url") in (
            click.core.ParameterSource.COMMANDLINE,
            click.core.ParameterSource.PROMPT,
        ):
            raise click.BadParameter(
                "-C names the repository URL and so does --repo; give one of them",
                param_hint="-C",
            )
        repo_url, chdir = chdir, None
    if chdir is not None:
        check_path(chdir)  # "-C s3:/bucket/p" is a mistyped URL, not a folder to enter
        try:
            os.chdir(chdir)
        except OSError as exc:
            raise click.BadParameter(
                f"cannot change to {chdir}: {exc.strerror}", param_hint="-C"
            ) from None
    state = State(
        repo_url=repo_url, debug=debug, color=color, serializer=serializer, paging=not no_pager
    )
    ctx.obj = state
    ctx.call_on_close(state.close)


def main(argv: Sequence[str] | None = None) -> NoReturn:
    """Run the ``statevcs`` command line (the console script and ``python -m statevcs``)."""
    args = list(argv) if argv is not None else sys.argv[1:]
    try:
        cli.main(args=args, prog_name="statevcs")
    except BrokenPipeError:
        # The reader went away (`statevcs log | head`, or q in the pager): stop quietly.
        pager.stop(broken=True)
        if pager.used():
            sys.exit(0)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        sys.exit(1)
    finally:
        pager.stop()  # wait for the reader, as git does, before the shell prompt comes back
    sys.exit(0)  # pragma: no cover - click's main exits itself


__all__ = ["REVISION_HELP", "cli", "main"]
