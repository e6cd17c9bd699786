"""Looking after a repository: ``gc``, ``fsck``, ``stats``, ``upgrade`` and ``commit-graph``."""

from __future__ import annotations

from datetime import timedelta

import click

from ...durations import DURATION_HELP, InvalidDuration, parse_age, parse_duration
from ..context import current_state, json_option
from ..rendering import emit_json, first_line, human_bytes, safe_text, text

_NEVER = timedelta(days=1000 * 365)  # --prune=never: no object is that old


def _age(value: str, option: str) -> timedelta | None:
    try:
        return parse_age(value)
    except InvalidDuration as exc:
        raise click.BadParameter(str(exc), param_hint=option) from None


@click.command()
@click.option(
    "--grace",
    default=None,
    help=f"Keep unreachable objects younger than this (default 2w): {DURATION_HELP}.",
)
@click.option(
    "--prune",
    metavar="AGE",
    help="git's spelling of --grace: delete unreachable objects older than AGE "
    "(--prune=now: all of them; --prune=never: none).",
)
@click.option(
    "--expire-reflog",
    metavar="AGE",
    help="First drop reflog entries older than AGE (now, 30.days.ago, 2w, never), so that "
    "history left by reset or a deleted branch can be collected. Default: never.",
)
@click.option("--dry-run", is_flag=True, help="Only report what would be deleted.")
@json_option
def gc(
    grace: str | None, prune: str | None, expire_reflog: str | None, dry_run: bool, as_json: bool
) -> None:
    """Delete objects no ref or reflog reaches, once older than the grace period, and shrink
    the repository file by the space they took.

    AGE is a duration (2w, 3d12h, 0), git's 2.weeks.ago or '3 days ago', a date (2026-01-31),
    now or never.
    """
    from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    state = current_state()
    if grace is not None and prune is not None:
        raise click.UsageError("give --grace or --prune, not both (they mean the same)")
    if prune is not None:
        age = _age(prune, "--prune")
        period = _NEVER if age is None else age
        shown_grace = prune
    else:
        shown_grace = grace if grace is not None else "2w"
        try:
            period = parse_duration(shown_grace)
        except InvalidDuration as exc:
            raise click.BadParameter(str(exc), param_hint="--grace") from None
    expire = None if expire_reflog is None else _age(expire_reflog, "--expire-reflog")
    repo = state.repo()
    progress = Progress(
        SpinnerColumn(),
        TextColumn("{task.description}", markup=False),
        BarColumn(),
        TimeElapsedColumn(),
        console=state.console(stderr=True),
        transient=True,
        disable=as_json or not state.err.is_terminal,
    )
    with progress:
        task = progress.add_task("collecting garbage", total=None)

        def advance(phase: str, done: int, total: int) -> None:
            progress.update(task, description=safe_text(phase), completed=done, total=total)

        report = repo.gc(period, dry_run=dry_run, progress=advance, expire_reflog=expire)
    if as_json:
        emit_json(
            {
                "reachable": report.reachable,
                "unreachable": report.unreachable,
                "deleted": report.deleted,
                "deleted_bytes": report.deleted_bytes,
                "reclaimed_bytes": report.reclaimed_bytes,
                "kept_recent": report.kept_recent,
                "dry_run": report.dry_run,
                "grace_seconds": period.total_seconds(),
                "expire_reflog_seconds": None if expire is None else expire.total_seconds(),
            }
        )
        return
    verb = "would delete" if dry_run else "deleted"
    state.out.print(
        text(
            f"{report.reachable} objects reachable, {report.unreachable} unreachable; {verb} "
            f"{report.deleted} ({human_bytes(report.deleted_bytes)}), kept "
            f"{report.kept_recent} younger than {shown_grace}"
        )
    )
    if report.reclaimed_bytes:
        state.out.print(text(f"the repository shrank by {human_bytes(report.reclaimed_bytes)}"))


@click.command()
@json_option
def fsck(as_json: bool) -> None:
    """Check every object, ref and link; print each problem on its own line (exit 1 if any)."""
    state = current_state()
    report = state.repo().fsck()
    problems = [" ".join(p.split()) for p in report.problems]
    if as_json:
        emit_json(
            {
                "ok": report.ok,
                "objects_checked": report.objects_checked,
                "reachable": report.reachable,
                "dangling": report.dangling,
                "problems": problems,
            }
        )
    else:
        for problem in problems:
            click.echo(safe_text(problem))
        summary = (
            f"checked {report.objects_checked} objects: {report.reachable} reachable, "
            f"{report.dangling} dangling, {len(problems)} problems"
        )
        state.err.print(text(summary if problems else f"ok: {summary}"))
    if problems:
        click.get_current_context().exit(1)


@click.command()
@json_option
def stats(as_json: bool) -> None:
    """Show storage use, deduplication and branch heads."""
    state = current_state()
    repo = state.repo()
    report = repo.stats()
    if as_json:
        emit_json(
            {
                "objects": report.objects,
                "bytes": report.bytes_stored,
                "commits": report.commits,
                "naive_bytes": report.naive_bytes,
                "dedup_ratio": round(report.dedup_ratio, 3),
                "branches": report.branches,
            }
        )
        return
    from rich import box  # rich's tables load only where a table is drawn
    from rich.table import Table

    table = Table(show_header=False, box=None, show_edge=False, pad_edge=False)
    table.add_column(style="bold")
    table.add_column(justify="right")
    table.add_row(text("objects"), text(f"{report.objects:,}"))
    table.add_row(
        text("stored"),
        text(f"{human_bytes(report.bytes_stored)} ({report.bytes_stored:,} B)"),
    )
    table.add_row(text("commits"), text(f"{report.commits:,}"))
    table.add_row(
        text("naive (copy per commit)"),
        text(f"{human_bytes(report.naive_bytes)} ({report.naive_bytes:,} B)"),
    )
    table.add_row(text("dedup ratio"), text(f"{report.dedup_ratio:.1f}x"))
    state.out.print(table)
    if report.commits and report.dedup_ratio < 1:
        state.out.print(
            text(
                (
                    "(a ratio below 1: on a history this short, the tree nodes and commits "
                    "statevcs writes cost more than the repeated state they save; it grows "
                    "with every commit that shares state with an earlier one)",
                    "dim",
                )
            )
        )
    if report.branches:
        state.out.print()
        heads = Table(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False, header_style="bold")
        heads.add_column("branch", style="green")
        heads.add_column("head", style="yellow")
        heads.add_column("message")
        for name, commit_id in sorted(report.branches.items()):
            heads.add_row(
                text(name),
                text(commit_id[:12]),
                text(first_line(repo.get_commit(commit_id).message)),
            )
        state.out.print(heads)


@click.command()
@json_option
def upgrade(as_json: bool) -> None:
    """Move the repository to storage format 2 in place (packed message leaves, compression).

    Every commit is written again with the same content; refs move in one step at the end, so
    the command is safe to interrupt and to run again. Old commit ids keep resolving.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    state = current_state()
    repo = state.repo()
    progress = Progress(
        TextColumn("rewriting commits"),
        BarColumn(),
        MofNCompleteColumn(),
        console=state.console(stderr=True),
        transient=True,
        disable=as_json or not state.err.is_terminal,
    )
    with progress:
        task = progress.add_task("upgrade", total=None)

        def advance(done: int, total: int) -> None:
            progress.update(task, completed=done, total=total)

        report = repo.upgrade(progress=advance)
    if as_json:
        emit_json(
            {
                "format_before": report.format_before,
                "format_after": report.format_after,
                "commits_rewritten": report.commits_rewritten,
                "refs_moved": {k: list(v) for k, v in report.refs_moved.items()},
                "upgrade_map": report.map_id,
            }
        )
        return
    if not report.commits_rewritten:
        state.out.print(text(f"already in storage format {report.format_after}; nothing to do"))
        return
    state.out.print(
        text(
            f"upgraded storage format {report.format_before} -> {report.format_after}: "
            f"{report.commits_rewritten} commits rewritten, {len(report.refs_moved)} refs moved"
        )
    )
    for name, (old, new) in sorted(report.refs_moved.items()):
        state.out.print(text(f"  {safe_text(name)}: {old[:12]} -> {new[:12]}"))
    state.out.print(
        text(
            (
                "old commit ids still resolve; the old objects stay until their reflog entries "
                "expire (statevcs gc --expire-reflog=now --prune=now frees them at once)",
                "dim",
            )
        )
    )


@click.group("commit-graph")
def commit_graph() -> None:
    """The persisted commit graph that makes walks and lookups by id fast (see
    docs/commit-graph.md). It is written by itself as commits land and by gc."""


@commit_graph.command("write")
@click.option("--rebuild", is_flag=True, help="Write it from scratch (one segment).")
@json_option
def commit_graph_write(rebuild: bool, as_json: bool) -> None:
    """Cover every commit a ref reaches in the commit graph."""
    state = current_state()
    report = state.repo().write_commit_graph(rebuild=rebuild)
    if as_json:
        emit_json({"added": report.added, "commits": report.commits, "segments": report.segments})
        return
    state.out.print(
        text(
            f"the commit graph covers {report.commits} commits ({report.added} new) in "
            f"{report.segments} segment{'s' if report.segments != 1 else ''}"
        )
    )


__all__ = ["commit_graph", "fsck", "gc", "stats", "upgrade"]
