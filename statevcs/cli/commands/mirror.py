"""The git mirror: ``export-git`` and ``import-git`` (through :mod:`statevcs.mirror.git`).

The mirror needs dulwich (the ``git`` extra) only when one of these commands runs; without it
they say what to install.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ...mirror.git import export_git as write_mirror
from ...mirror.git import import_git as read_mirror
from ..context import State, current_state, json_option
from ..rendering import emit_json, plural, text

if TYPE_CHECKING:
    from ...mirror.git.reports import Progress


@contextmanager
def progress_bar(state: State, as_json: bool) -> Iterator[Progress | None]:
    """A progress bar on stderr when it is a terminal (gone when done), else nothing."""
    if as_json or not state.err.is_terminal:
        yield None
        return
    # rich's progress machinery only for the commands that show one.
    from rich import progress as bars

    bar = bars.Progress(
        bars.TextColumn("{task.description}", markup=False),
        bars.BarColumn(),
        bars.MofNCompleteColumn(),
        bars.TimeElapsedColumn(),
        console=state.console(stderr=True),
        transient=True,
    )
    with bar:
        task = bar.add_task("starting", total=None)

        def advance(what: str, done: int, total: int) -> None:
            bar.update(task, description=f"{what} commits", completed=done, total=total)

        yield advance


@click.command("export-git")
@click.argument("target", type=click.Path(path_type=Path))
@click.option("--branch", "branch_name", help="Export only this branch.")
@click.option("--push", "push_url", metavar="REMOTE_URL", help="Then push to this git remote.")
@click.option(
    "--force",
    is_flag=True,
    help="Export into a git repository that is not a statevcs mirror (never one with local "
    "changes), and let the push overwrite branches that were reset.",
)
@json_option
def export_git(
    target: Path, branch_name: str | None, push_url: str | None, force: bool, as_json: bool
) -> None:
    """Mirror history into the git repository TARGET (created if missing); optionally push."""
    state = current_state()
    with progress_bar(state, as_json) as progress:
        report = write_mirror(
            state.repo(), target, branch=branch_name, push=push_url, force=force, progress=progress
        )
    if as_json:
        emit_json(dataclasses.asdict(report))
        return
    out = state.out
    out.print(
        text(
            f"exported {plural(report.commits_exported, 'new commit')} "
            f"({plural(report.objects_written, 'git object')}) to {report.target}; "
            f"the mirror holds {plural(report.mirror_commits, 'commit')}"
        )
    )
    for name, sha in report.refs_updated.items():
        out.print(text(f"  {name} → git {sha[:7]}"))
    for name in report.refs_deleted:
        out.print(text((f"  {name} deleted", "red")))
    if report.pushed:
        out.print(text(f"pushed {plural(len(report.push_refs), 'ref')} to {report.pushed}"))
    if report.remote_head:
        out.print(text(f"remote HEAD -> {report.remote_head}"))
    for warning in report.warnings:
        state.err.print(text(("warning: " + warning, "yellow")))


@click.command("import-git")
@click.argument("source", type=click.Path(path_type=Path))
@json_option
def import_git(source: Path, as_json: bool) -> None:
    """Read a git mirror written by export-git back into this repository."""
    state = current_state()
    with progress_bar(state, as_json) as progress:
        report = read_mirror(state.repo(), source, progress=progress)
    if as_json:
        emit_json(dataclasses.asdict(report))
        return
    out = state.out
    out.print(
        text(
            f"imported {plural(report.commits_imported, 'commit')} from {report.source} "
            f"({report.commits_existing} already present, {report.commits_from_git} made "
            "with git)"
        )
    )
    for name, commit_id in report.refs_updated.items():
        out.print(text(f"  {name} → {commit_id[:12]}"))
    for name, reason in report.refs_skipped.items():
        state.err.print(text((f"warning: skipped {name}: {reason}", "yellow")))
    for warning in report.warnings:
        state.err.print(text(("warning: " + warning, "yellow")))


__all__ = ["export_git", "import_git"]
