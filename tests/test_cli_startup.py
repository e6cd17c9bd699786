"""Start-up of the command line (issue 20): what the hot read commands load, and the fast path.

Piped or redirected, ``log``, ``show``, ``reflog``, ``status`` and ``branch`` run without click
or rich (:mod:`statevcs.cli.fastpath`). These tests hold the fast path to the click commands:
every option it takes is the click option of the same name and kind, it parses a command line
as click does (or leaves it to click), it prints the same bytes as the click path, and its
plain printing is what rich prints on a stream that is not a terminal. No timing here: the
numbers are benchmarks/bench_cli.py's.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import click
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rich.console import Console
from test_cli import _CLEAN_ENV, invoke, run
from test_cli_ux import ANSI, fake_pager, loaded, on_terminal, state_of

import statevcs
from statevcs.cli import cli
from statevcs.cli.console import PlainConsole, rich_terminal
from statevcs.cli.fastpath import (
    COMMANDS,
    COUNT,
    COUNTER,
    FLAG,
    GLOBAL_DEFAULTS,
    GLOBAL_ENVIRONMENT,
    GLOBAL_OPTIONS,
    VALUE,
    Option,
    parse,
)
from statevcs.cli.styled import Styled
from statevcs.repo import Repo

NOT_LOADED = ("click", "rich", "pydantic", "dulwich", "obstore", "langgraph", "strands")
"""Top-level packages a piped hot read command must not import."""


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository with a merge, a tag, a side branch and messages that need escaping."""
    path = tmp_path_factory.mktemp("startup") / "repo"
    with Repo.init(path) as repo:
        for n in range(1, 4):
            repo.commit(state_of(n * 2), f"turn {n}\n\nbody of turn {n}")
        repo.branch("side", "main~1")
        side = state_of(3)
        side["messages"].append({"role": "user", "content": "evil \x1b[31mred\u202e \t tab"})
        repo.checkout(side, "side")
        repo.commit(side, "side: \x1b]0;title\x07 é 漢字", metadata={"k": [1, 2]})
        repo.merge("main", "side", message="merge side")
        repo.tag("v1", "main~1")
    return path


def _click_params(args: list[str]) -> tuple[dict[str, Any], str, dict[str, Any]]:
    """What click hands the group and the command for ``args`` (nothing runs)."""
    group = cli.make_context("statevcs", list(args), resilient_parsing=False)
    rest = [*group._protected_args, *group.args]  # click keeps the command name here
    name, command, remaining = cli.resolve_command(group, rest)
    assert name is not None and command is not None
    sub = command.make_context(name, remaining, parent=group)
    return group.params, name, sub.params


# --- one source of truth: the fast path's options are click's -------------------------------


def _check_option(param: click.Parameter, option: Option) -> None:
    assert isinstance(param, click.Option)
    assert param.name == option.name
    if option.kind == FLAG:
        assert param.is_flag and not param.count
    elif option.kind == COUNTER:
        assert param.count
    elif option.kind == COUNT:
        assert isinstance(param.type, click.IntRange) and param.type.min == 0
        assert not param.is_flag and param.type.max is None
    else:
        assert option.kind == VALUE and not param.is_flag and not param.count
    if option.choices is not None:
        assert isinstance(param.type, click.Choice)
        assert set(option.choices) <= set(param.type.choices)
    elif option.kind == VALUE:
        assert not isinstance(param.type, click.Choice)


def _param_for(command: click.Command, spelling: str) -> click.Parameter:
    found = [p for p in command.params if spelling in (*p.opts, *p.secondary_opts)]
    assert len(found) == 1, f"{command.name}: no click option {spelling}"
    return found[0]


def test_every_fast_option_is_the_click_option_of_that_name_and_kind() -> None:
    for spelling, option in GLOBAL_OPTIONS.items():
        param = _param_for(cli, spelling)
        _check_option(param, option)
    for name, variable in GLOBAL_ENVIRONMENT.items():
        assert [p.envvar for p in cli.params if p.name == name] == [variable]
    for name, spec in COMMANDS.items():
        command = cli.commands[name]
        for spelling, option in spec.options.items():
            _check_option(_param_for(command, spelling), option)
        arguments = [p for p in command.params if isinstance(p, click.Argument)]
        # Their defaults (and the options') are held to click's by test_the_fast_parse_is_clicks.
        assert [a.name for a in arguments][: len(spec.arguments)] == [a for a, _ in spec.arguments]
        # A command's further arguments (branch NAME START) are click's alone.
        assert all(not a.required for a in arguments[len(spec.arguments) :])


ACCEPTED = [
    ["log"],
    ["log", "-n", "3"],
    ["log", "-n3", "--oneline"],
    ["log", "-3", "main"],
    ["log", "--max-count=2", "--first-parent", "side"],
    ["log", "main", "--graph", "--all", "--json"],
    ["log", "--", "main"],
    ["log", "-n", "0"],
    ["-P", "log"],
    ["--no-pager", "--color", "never", "log", "--oneline"],
    ["--color=auto", "--serializer=msgpack", "log"],
    ["-C", ".", "log"],
    ["--repo", "x", "--repo", "y", "log"],
    ["--debug", "reflog", "-n", "2", "main"],
    ["reflog", "-2"],
    ["reflog", "--json"],
    ["show"],
    ["show", "main~1", "--messages"],
    ["show", "--state", "--json", "v1"],
    ["status"],
    ["status", "--json"],
    ["branch"],
    ["branch", "-v", "--verbose"],
    ["branch", "--json"],
]

LEFT_TO_CLICK = [
    [],
    ["--help"],
    ["log", "--help"],
    ["log", "-h"],
    ["--version", "log"],
    ["log", "-n"],
    ["log", "-n", "x"],
    ["log", "-n", "-1"],
    ["log", "--max-count", "+2"],
    ["log", "--onelin"],
    ["log", "--oneline=yes"],
    ["log", "a", "b"],
    ["--color", "always", "log"],
    ["--color", "sometimes", "log"],
    ["-C", "s3://bucket/p", "log"],
    ["diff"],
    ["branch", "new"],
    ["branch", "-d", "side"],
    ["show", "a", "b"],
    ["status", "x"],
    ["lg"],
]


@pytest.mark.parametrize("args", ACCEPTED, ids=" ".join)
def test_the_fast_parse_is_clicks(args: list[str]) -> None:
    parsed = parse(args, {})
    assert parsed is not None
    params = {**parsed.params, **COMMANDS[parsed.command].implied}
    assert (parsed.options, parsed.command, params) == _click_params(args)


@pytest.mark.parametrize("args", LEFT_TO_CLICK, ids=" ".join)
def test_help_errors_and_the_rest_are_left_to_click(args: list[str]) -> None:
    assert parse(args, {}) is None


def test_the_environment_options_are_read_as_click_reads_them() -> None:
    environ = {"STATEVCS_REPO": "memory://", "STATEVCS_SERIALIZER": "msgpack"}
    parsed = parse(["log"], environ)
    assert parsed is not None and parsed.options["repo_url"] == "memory://"
    assert parsed.options["serializer"] == "msgpack"
    empty = parse(["log"], {"STATEVCS_REPO": "", "STATEVCS_SERIALIZER": ""})
    assert empty is not None and empty.options == GLOBAL_DEFAULTS
    assert parse(["log"], {"STATEVCS_SERIALIZER": "yaml"}) is None  # click says why


TOKENS = st.sampled_from(
    [
        "log", "show", "reflog", "status", "branch", "diff", "main", "HEAD~1", "-", "--",
        "-n", "-n2", "-2", "--max-count", "--max-count=1", "3", "0", "-1", "x", "--oneline",
        "--graph", "--all", "--first-parent", "--json", "--json=1", "--messages", "--state",
        "-v", "-vv", "--verbose", "-C", ".", "--repo", "--color", "never", "always",
        "--serializer", "json", "-P", "--no-pager", "--debug", "--help", "-h", "--bogus", "",
    ]
)  # fmt: skip


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(TOKENS, max_size=7))
def test_any_command_line_the_fast_path_takes_click_reads_the_same(args: list[str]) -> None:
    parsed = parse(args, {})
    if parsed is not None:
        params = {**parsed.params, **COMMANDS[parsed.command].implied}
        assert (parsed.options, parsed.command, params) == _click_params(args)


# --- the same bytes -------------------------------------------------------------------------

OUTPUTS = [
    ["log"],
    ["log", "--oneline"],
    ["log", "-2", "--json"],
    ["log", "--graph", "--all"],
    ["log", "--graph", "--first-parent", "-n", "3"],
    ["log", "side", "--oneline"],
    ["show"],
    ["show", "side"],
    ["show", "v1", "--messages"],
    ["show", "main~1", "--state"],
    ["show", "side", "--json"],
    ["reflog"],
    ["reflog", "-n", "2", "side"],
    ["reflog", "--json"],
    ["status"],
    ["status", "--json"],
    ["branch"],
    ["branch", "--json"],
    ["--color", "never", "log", "-1"],
]


@pytest.mark.parametrize("args", OUTPUTS, ids=" ".join)
def test_the_fast_path_prints_what_the_click_command_prints(
    history: Path, args: list[str], tmp_path: Path
) -> None:
    fast = run(*args, cwd=history)
    slow = invoke(*args, cwd=history)
    assert fast.stdout == slow.stdout
    assert fast.stderr == slow.stderr == ""
    # ...and it was the fast path that printed it (click's path never loaded).
    found = loaded(list(args), history, tmp_path)
    assert "statevcs.cli.fastpath" in found and "statevcs.cli.app" not in found


def test_piped_hot_commands_load_neither_click_nor_rich(history: Path, tmp_path: Path) -> None:
    hot = (["log", "-n", "10"], ["log", "--graph", "--all"], ["reflog"], ["status"], ["branch"])
    for args in (*hot, ["branch", "-v", "--json"], ["status", "--json"], ["show", "--messages"]):
        found = loaded(args, history, tmp_path)
        assert "statevcs.cli.fastpath" in found
        heavy = {m for m in found if m.split(".")[0] in NOT_LOADED}
        assert heavy == set(), (args, sorted(heavy))
        assert not {"statevcs.diff", "statevcs.search", "statevcs.mirror", "pickle"} & found
        assert "statevcs.cli.app" not in found  # it ran on the fast path, not after it
    # show draws its state table with rich, and only that; it reads without pydantic.
    found = loaded(["show"], history, tmp_path)
    assert "click" not in found and "rich.table" in found
    assert "rich.progress" not in found and "pydantic" not in found


def test_import_statevcs_cli_loads_nothing_heavy() -> None:
    code = "import sys, statevcs.cli, statevcs.cli.fastpath; print(' '.join(sorted(sys.modules)))"
    found = set(
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
        ).stdout.split()
    )
    assert not {m for m in found if m.split(".")[0] in NOT_LOADED}
    assert "statevcs.repo" not in found and "zstandard" not in found


def test_a_failing_command_is_reported_by_click(history: Path) -> None:
    for args in (["log", "nope"], ["show", "main~40"], ["log", "-n", "x"], ["-C", "/nope", "log"]):
        fast = run(*args, cwd=history, code=None)
        slow = invoke(*args, cwd=history, code=None)
        assert fast.returncode == slow.exit_code != 0
        assert fast.stderr.startswith("error: ") and fast.stdout == ""
        assert fast.stderr == slow.stderr
    assert "Usage: statevcs log" in run("log", "--help", cwd=history).stdout


def test_a_warning_is_printed_by_click(history: Path, tmp_path: Path) -> None:
    with Repo.open(history) as repo:
        repo.tag("side", "main")  # 'side' now names a branch and a tag
    try:
        fast = run("log", "--oneline", "side", cwd=history)
        assert fast.stderr.startswith("warning: ")
        assert fast.stdout == invoke("log", "--oneline", "side", cwd=history).stdout
    finally:
        with Repo.open(history) as repo:
            repo.delete_tag("side")


def test_a_closed_pipe_ends_the_fast_path_quietly(tmp_path: Path) -> None:
    path = tmp_path / "long"
    with Repo.init(path) as repo:
        state: dict[str, Any] = {"n": 0}
        for n in range(300):
            state["n"] = n
            repo.commit(state, f"commit {n} " + "x" * 200)
    shell = f"'{sys.executable}' -m statevcs log | head -1; echo status ${{PIPESTATUS[0]}}"
    environment = {k: v for k, v in os.environ.items() if k not in _CLEAN_ENV}
    result = subprocess.run(
        ["bash", "-c", shell], cwd=path, capture_output=True, text=True, timeout=60,
        env=environment,
    )  # fmt: skip
    assert result.stdout.startswith("commit ") and result.stderr == ""
    # As on click's path: the reader went away, exit status 1 and nothing on stderr.
    assert result.stdout.rstrip().endswith(("status 0", "status 1"))


def test_on_a_terminal_rich_draws_the_same_text_in_colour(history: Path) -> None:
    for args in (["log"], ["log", "--graph", "--all"], ["status"], ["branch"], ["reflog"]):
        code, screen = on_terminal(["--no-pager", *args], history, {})
        assert code == 0, screen
        assert "\x1b[" in screen  # rich's colours: the fast path stays off terminals
        piped = run(*args, cwd=history).stdout
        assert ANSI.sub("", screen).replace("\r\n", "\n") == piped
        forced = run("--color", "always", *args, cwd=history, env={"COLUMNS": "100"}).stdout
        assert forced == screen.replace("\r\n", "\n")


def test_a_terminal_gets_the_pager_even_when_rich_is_told_it_is_none(
    history: Path, tmp_path: Path
) -> None:
    pager, out = fake_pager(tmp_path)
    for environ in ({"TTY_COMPATIBLE": "0"}, {"FORCE_COLOR": ""}):
        out.unlink(missing_ok=True)
        code, screen = on_terminal(["log", "--oneline"], history, {"PAGER": pager, **environ})
        assert code == 0 and "[fake pager read" in screen, screen
        assert "merge side" in ANSI.sub("", out.read_text(encoding="utf-8"))


# --- plain printing is rich's, where rich sees no terminal -------------------------------


def _console(buffer: io.StringIO) -> Console:
    """A console as the command line makes one (State.console), writing to ``buffer``."""
    return Console(
        file=buffer, highlight=False, markup=False, emoji=False, soft_wrap=True, width=80
    )


def _rich_prints(*objects: Any) -> str:
    buffer = io.StringIO()
    _console(buffer).print(*objects)
    return buffer.getvalue()


def _plain_prints(*objects: Any) -> str:
    buffer, stdout = io.StringIO(), sys.stdout
    sys.stdout = buffer
    try:
        # What it cannot print plainly (a tab, a table) goes to the rich console it stands for.
        PlainConsole(stderr=False, rich_console=lambda: _console(buffer)).print(*objects)
    finally:
        sys.stdout = stdout
    return buffer.getvalue()


STYLES = st.sampled_from(["", "bold", "yellow", "bold cyan", "dim italic", "red"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.text(max_size=120), STYLES), max_size=6), st.booleans())
def test_plain_printing_is_what_rich_prints_off_a_terminal(
    parts: list[tuple[str, str]], as_text: bool
) -> None:
    line = Styled()
    for text, style in parts:
        line.append(text, style)
    shown: Any = line.plain if as_text else line
    assert _plain_prints(shown) == _rich_prints(shown)
    assert _plain_prints() == _rich_prints() == "\n"


def test_a_styled_line_is_rich_text_with_the_same_styles() -> None:
    line = Styled("commit ", "yellow").append("x").append_text(Styled(" (main)", "bold"))
    text = line.__rich__()
    assert text.plain == line.plain == str(line) == "commit x (main)"
    assert [(s.start, s.end, str(s.style)) for s in text.spans] == [
        (0, 7, "yellow"),
        (8, 15, "bold"),
    ]
    with pytest.raises(TypeError, match="text"):
        Styled().append(3)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="other"):
        Styled().append_text("x")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "environ",
    [
        {},
        {"FORCE_COLOR": "1"},
        {"FORCE_COLOR": ""},
        {"TTY_COMPATIBLE": "1"},
        {"TTY_COMPATIBLE": "0", "FORCE_COLOR": "1"},
        {"TTY_COMPATIBLE": "2"},
        {"NO_COLOR": "1"},
    ],
)
def test_rich_terminal_is_richs_own_answer(environ: dict[str, str]) -> None:
    for stream in (io.StringIO(), sys.__stdout__):
        assert stream is not None
        console = Console(file=stream, _environ=environ)
        assert rich_terminal(stream, environ) == console.is_terminal


def test_version_is_answered_before_anything_loads(tmp_path: Path) -> None:
    found = loaded(["--version"], tmp_path, tmp_path)
    assert "statevcs.cli.fastpath" not in found and "click" not in found
    assert run("--version", cwd=tmp_path).stdout == f"statevcs, version {statevcs.__version__}\n"
