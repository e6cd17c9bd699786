"""Experiments across history: ``compare`` two runs turn by turn, ``search`` messages."""

from __future__ import annotations

import click

from ...experiments import Turn, compare
from ..context import REV_EPILOG, current_state, json_option
from ..rendering import emit_json, plural, preview, text
from ..revisions import resolve

_STATUS_STYLES = {"same": "dim", "diverged": "bold yellow", "only_a": "red", "only_b": "green"}


def _reply(turn: Turn | None, width: int) -> str:
    """The turn's last message, as one line of at most ``width`` characters."""
    if turn is None:
        return "(no such turn)"
    return preview(turn.messages[-1], width) if len(turn.messages) > 1 else "(no reply)"


def _cut(line: str, width: int) -> str:
    return line if len(line) <= width else line[: width - 1] + "…"


@click.command(epilog=REV_EPILOG)
@click.argument("a")
@click.argument("b")
@click.option("--messages", "with_messages", is_flag=True, help="With --json: every message.")
@json_option
def compare_command(a: str, b: str, with_messages: bool, as_json: bool) -> None:
    """Compare runs A and B turn by turn: which turns diverged, replies, tools, state."""
    state = current_state()
    repo = state.repo()
    resolve(repo, a)
    resolve(repo, b)
    result = compare(repo, a, b)
    if as_json:
        emit_json(result.to_dict(messages=with_messages))
        return
    out = state.out
    out.print(
        text(
            ("compare ", "bold"),
            (f"A {a} ({result.a_commit[:12]})", "red"),
            (" ↔ ", "bold"),
            (f"B {b} ({result.b_commit[:12]})", "green"),
        )
    )
    base = result.merge_base[:12] if result.merge_base else "none"
    diverged = result.diverged
    summary = f"merge base {base}; {result.common_prefix} messages in common; " + (
        f"{plural(len(diverged), 'turn')} differ (first: turn {diverged[0]})"
        if diverged
        else "no turn differs"
    )
    out.print(text(summary))
    width = max(40, state.console().width - 12)  # the terminal's width, as rich measures it
    for turn in result.turns:
        prompts = dict.fromkeys(" ".join(t.text.split()) for t in (turn.a, turn.b) if t)
        line = text(
            (f"{turn.index:>4}  ", "bold"), (f"{turn.status:<10}", _STATUS_STYLES[turn.status])
        )
        # Both prompts when the runs were asked different things.
        line.append_text(text(_cut(" ≠ ".join(prompts), width - 4)))
        out.print(line)
        if turn.status == "same":
            continue
        out.print(text(("      A: ", "red"), _reply(turn.a, width)))
        out.print(text(("      B: ", "green"), _reply(turn.b, width)))
        notes = [
            f"tools only in {side}: {', '.join(names)}"
            for side, names in (("A", turn.tools_only_a), ("B", turn.tools_only_b))
            if names
        ]
        if turn.state:
            notes.append("state differs: " + ", ".join(c.key for c in turn.state))
        if turn.extras:
            notes.append("extras differ: " + ", ".join(c.key for c in turn.extras))
        notes.extend(f"{c.field} key order differs" for c in turn.order)
        if notes:
            out.print(text(("      " + "; ".join(notes), "dim")))


@click.command(epilog=REV_EPILOG)
@click.argument("pattern")
@click.argument("rev", required=False)
@click.option("--all", "all_refs", is_flag=True, help="Search the history of every ref.")
@click.option("-E", "--regex", is_flag=True, help="PATTERN is a regular expression.")
@click.option("-i", "--ignore-case", is_flag=True, help="Match without regard to case.")
@click.option("-n", "--max-count", "limit", type=click.IntRange(min=0), help="At most N messages.")
@json_option
def search(
    pattern: str,
    rev: str | None,
    all_refs: bool,
    regex: bool,
    ignore_case: bool,
    limit: int | None,
    as_json: bool,
) -> None:
    """Find the messages containing PATTERN in REV's history (default HEAD), and who added them."""
    state = current_state()
    repo = state.repo()
    if all_refs and rev is not None:
        raise click.UsageError("give REV or --all, not both")
    if rev is not None:
        resolve(repo, rev)
    result = repo.search(
        pattern,
        rev=rev or "HEAD",
        all_refs=all_refs,
        regex=regex,
        ignore_case=ignore_case,
        limit=limit,
    )
    if as_json:
        emit_json(result.to_dict())
        return
    out = state.out
    for match in result.messages:
        newest = match.introduced[0]
        line = text((newest.commit[:12], "yellow"), (f" [{newest.position}] ", "dim"))
        line.append_text(text((f"{match.role or '?'}: ", "bold")))
        line.append_text(text(" ".join(match.snippet.split())))
        if len(match.introduced) > 1:
            line.append_text(text((f"  (+{len(match.introduced) - 1} more commits)", "dim")))
        out.print(line)
    state.err.print(
        text(
            (
                f"{plural(len(result.messages), 'message')} matched in "
                f"{plural(len(result.commits), 'commit')}; searched "
                f"{plural(result.messages_searched, 'message')} of "
                f"{plural(result.commits_searched, 'commit')}",
                "dim",
            )
        )
    )


compare_command.name = "compare"

__all__ = ["compare_command", "search"]
