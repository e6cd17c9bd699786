"""Repository data is printed as text: no terminal control, no rich markup (issue 8, section 4).

Every string the command line shows from a repository (commit messages, author, metadata,
branch and tag names, state keys, message roles and text, tool names and ids, reflog entries)
holds ESC sequences, OSC 8 links, C1 controls, bidi overrides and rich markup here. No command
may print a raw control character (other than newline and tab), crash on the markup, or lose
the data in ``--json``.
"""

from __future__ import annotations

import json
import re
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from test_cli import invoke

import statevcs
from statevcs.cli import safe_text

SGR = "\x1b[38;5;208mORANGE\x1b[0m"
OSC8 = "\x1b]8;;https://evil.example/\x1b\\click me\x1b]8;;\x1b\\"
TITLE = "\x1b]0;pwned\x07"
C1_CSI = "\x9b2J"
BIDI = "\u202eevil\u202c \u2066isolated\u2069 \u200fmarked\u200e \u061calm"
# Invisible format characters: a zero width space, word joiner, BOM and tag characters (which
# spell invisible ASCII: "hi" here).
INVISIBLE = "zero\u200bwidth\u2060joined\ufeff\U000e0068\U000e0069"
MARKUP = "[/] [bold]loud[/bold] [link=https://evil.example]x[/link] :warning:"
OVERWRITE = "shown\rhidden abc\b\b\bxyz \x00\x7f\x85"
# The Unicode line and paragraph separators: a line break to some terminals and editors (a
# forged "Date:" line after an author), and a string terminator to JavaScript before ES2019.
SEPARATORS = "Author\u2028Date: forged\u2029para"
HOSTILE = " ".join([SGR, OSC8, TITLE, C1_CSI, BIDI, INVISIBLE, MARKUP, OVERWRITE, SEPARATORS])
# What must never reach the output raw (our own color codes are "\x1b[...m" without these).
PAYLOADS = ["\x1b[38;5;208m", "\x1b]8;;", "\x1b]0;", "\x9b", "\u202e", "\u2066", "\r", "\b"]
# Every bidi formatting character (UAX #9) and the invisible format characters the CLI escapes.
BIDI_CHARS = [
    "\u061c",
    "\u200e",
    "\u200f",
    *map(chr, range(0x202A, 0x202F)),
    *map(chr, range(0x2066, 0x206A)),
]
INVISIBLE_CHARS = [
    "\u180e",
    "\u200b",
    *map(chr, range(0x2060, 0x2065)),
    *map(chr, range(0x206A, 0x2070)),
    "\ufeff",
    *map(chr, range(0xFFF9, 0xFFFC)),
    "\U000e0001",
    *map(chr, range(0xE0020, 0xE0080)),
]
RAW_CONTROL = re.compile(
    f"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029{''.join(BIDI_CHARS + INVISIBLE_CHARS)}]"
)
# Ref names may hold C1 and bidi characters (git allows them too), not ESC or '['.
BRANCH = "side\x9b2J\u202ebranch"
TAG = "v1\u2066tag"
KEY = "key " + HOSTILE
T0 = datetime(2025, 1, 1, tzinfo=UTC)


def hostile_message(text: str) -> dict[str, Any]:
    return {
        "role": HOSTILE,
        "content": [
            {"text": text},
            {"toolUse": {"toolUseId": HOSTILE, "name": HOSTILE, "input": {HOSTILE: HOSTILE}}},
            {
                "toolResult": {
                    "toolUseId": HOSTILE,
                    "status": HOSTILE,
                    "content": [{"text": HOSTILE}, {"json": {HOSTILE: HOSTILE}}],
                }
            },
            {"reasoningContent": {"reasoningText": {"text": HOSTILE}}},
            {HOSTILE: HOSTILE},
        ],
        "tool_calls": [{"function": {"name": HOSTILE, "arguments": HOSTILE}}],
    }


@pytest.fixture(scope="module")
def hostile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository whose every printable string is hostile; main and BRANCH diverge."""
    path = tmp_path_factory.mktemp("hostile") / "repo"
    author = f"Eve {HOSTILE} <eve@example.com>"
    with statevcs.Repo.init(path, author=author) as repo:
        agent: dict[str, Any] = {
            "messages": [hostile_message("first " + HOSTILE), {"role": "user", "content": HOSTILE}],
            KEY: HOSTILE,
            "plain": 1,
        }
        metadata = {HOSTILE: HOSTILE, "nested": {"k": HOSTILE}}
        repo.commit(agent, f"{HOSTILE}\n\nbody {HOSTILE}", metadata=metadata, timestamp=T0)
        repo.branch(BRANCH)
        repo.tag(TAG)
        agent[KEY] = "main " + HOSTILE
        agent["messages"].append(hostile_message("main " + HOSTILE))
        repo.commit(agent, "main " + HOSTILE, timestamp=T0 + timedelta(minutes=1))
        side: dict[str, Any] = {}
        repo.checkout(side, BRANCH)
        side[KEY] = "side " + HOSTILE
        side["messages"].append(hostile_message("side " + HOSTILE))
        repo.commit(side, "side " + HOSTILE, timestamp=T0 + timedelta(minutes=2))
    return path


@pytest.fixture
def writable(hostile: Path, tmp_path: Path) -> Path:
    """A copy of the hostile repository that commands may change."""
    copy = tmp_path / "repo"
    copy.mkdir()
    with (
        sqlite3.connect(hostile / "statevcs.sqlite3") as source,
        sqlite3.connect(copy / "statevcs.sqlite3") as target,
    ):
        source.backup(target)
    return copy


def assert_clean(output: str, where: str) -> None:
    """No raw control character (newline and tab aside) and no traceback in ``output``."""
    found = RAW_CONTROL.search(output)
    assert found is None, f"{where}: raw {found.group()!r} in {output!r}"
    assert "Traceback" not in output, f"{where}: {output}"


READ_COMMANDS: list[list[str]] = [
    ["log"],
    ["log", "--all"],
    ["log", "--graph"],
    ["log", "--oneline", "--all"],
    ["log", "--first-parent", BRANCH],
    ["show"],
    ["show", BRANCH],
    ["show", "HEAD~1", "--messages"],
    ["show", TAG, "--state"],
    ["diff", TAG, BRANCH],
    ["diff", "main", BRANCH],
    ["compare", "main", BRANCH],
    ["search", "ORANGE", "--all"],
    ["search", "-E", "ORANGE|side", BRANCH],
    ["branch"],
    ["tag"],
    ["reflog"],
    ["reflog", BRANCH],
    ["reflog", "main"],
    ["gc", "--dry-run"],
    ["fsck"],
    ["stats"],
]


@pytest.mark.parametrize("args", READ_COMMANDS, ids=lambda a: safe_text(" ".join(a)))
def test_reading_commands_print_hostile_data_as_text(hostile: Path, args: list[str]) -> None:
    result = invoke(*args, cwd=hostile)
    assert_clean(result.stdout, " ".join(args))
    assert_clean(result.stderr, " ".join(args))
    assert (result.stdout + result.stderr).strip()


@pytest.mark.parametrize(
    "args",
    [[*c, "--json"] for c in READ_COMMANDS if c[0] not in ("gc", "fsck")],
    ids=lambda a: safe_text(" ".join(a)),
)
def test_json_output_escapes_controls_and_keeps_the_data(hostile: Path, args: list[str]) -> None:
    result = invoke(*args, cwd=hostile)
    assert_clean(result.stdout, " ".join(args))
    if args[0] != "stats":
        assert any(SGR in text for text in strings(json.loads(result.stdout)))


def strings(value: Any) -> list[str]:
    """Every string (keys included) inside a decoded JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (k, *strings(v))]
    if isinstance(value, list):
        return [s for item in value for s in strings(item)]
    return []


def test_json_round_trips_every_hostile_field(hostile: Path) -> None:
    shown = json.loads(invoke("show", "HEAD~1", "--json", cwd=hostile).stdout)
    assert shown["commit"]["message"] == f"{HOSTILE}\n\nbody {HOSTILE}"
    assert shown["commit"]["author"] == f"Eve {HOSTILE} <eve@example.com>"
    assert shown["commit"]["metadata"][HOSTILE] == HOSTILE
    assert shown["snapshot"]["state"][KEY] == HOSTILE
    assert shown["snapshot"]["messages"][0] == hostile_message("first " + HOSTILE)
    branches = json.loads(invoke("branch", "--json", cwd=hostile).stdout)
    assert set(branches["branches"]) == {"main", BRANCH}


def test_escapes_are_visible_and_markup_is_literal(hostile: Path) -> None:
    out = invoke("log", "--all", cwd=hostile).stdout
    assert safe_text(SGR) in out and "\\x1b[38;5;208mORANGE" in out
    assert "\\u202eevil\\u202c" in out and "\\x9b2J" in out
    assert MARKUP in out  # printed as typed, not interpreted
    assert "shown\\x0dhidden" in out and "abc\\x08\\x08\\x08xyz" in out
    branch_list = invoke("branch", cwd=hostile).stdout
    assert "side\\x9b2J\\u202ebranch" in branch_list and "[/] [bold]loud[/bold]" in branch_list
    shown = invoke("show", "HEAD~1", cwd=hostile).stdout
    for line in shown.splitlines():
        if "first " in line:
            assert line.startswith("    ")  # a message line stays indented


def test_writing_commands_print_hostile_data_as_text(writable: Path) -> None:
    outputs = [
        invoke("branch", "copy", BRANCH, cwd=writable),
        invoke("branch", "copy", cwd=writable, code=1),
        invoke("reset", BRANCH, f"{BRANCH}~1", cwd=writable),
        invoke("reset", BRANCH, f"{BRANCH}@{{1}}", cwd=writable),
        invoke("tag", "v2", BRANCH, cwd=writable),
        invoke("merge", "main", BRANCH, cwd=writable, code=1),
        invoke("merge", "main", BRANCH, "--strategy", "theirs", "-m", HOSTILE, cwd=writable),
        invoke("merge", "main", BRANCH, "--strategy", "theirs", "--json", cwd=writable),
        invoke("merge", "copy", "main", cwd=writable),
        invoke("show", HOSTILE, cwd=writable, code=1),
        invoke("branch", "-d", BRANCH + "x", cwd=writable, code=1),
        invoke("log", "--graph", "-n", "3", cwd=writable),
        invoke("reflog", "main", cwd=writable),
        invoke("gc", "--grace", "0", cwd=writable),
        invoke("stats", cwd=writable),
        invoke("branch", "-d", "copy", cwd=writable),
        invoke("tag", "-d", TAG, cwd=writable),
    ]
    for result in outputs:
        assert_clean(result.stdout, "stdout")
        assert_clean(result.stderr, "stderr")
    merged = invoke("log", "-n", "1", cwd=writable).stdout
    assert safe_text(HOSTILE) in merged
    settled = outputs[6].stdout
    assert "(settled: " in settled and safe_text("state." + KEY) in settled


@pytest.mark.parametrize(
    "args",
    [["log", "--graph"], ["show", "HEAD~1"], ["branch"], ["stats"], ["reflog", BRANCH]],
    ids=["log-graph", "show", "branch", "stats", "reflog"],
)
def test_real_terminal_colors_never_carry_repository_escapes(
    hostile: Path, args: list[str]
) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "statevcs", "--color", "always", *args],
        cwd=hostile,
        capture_output=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    out, err = result.stdout.decode("utf-8"), result.stderr.decode("utf-8")
    assert "\x1b[" in out  # colors are on: ours
    for payload in PAYLOADS:
        assert payload not in out and payload not in err, (args, payload)
    assert "Traceback" not in err


def _escaped(char: str) -> str:
    code = ord(char)
    return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"


# Each invisible range once at each end (the unit test below covers every character).
INVISIBLE_SAMPLE = [chr(c) for c in (0x180E, 0x200B, 0x2060, 0x2064, 0x206A, 0x206F, 0xFEFF)]
INVISIBLE_SAMPLE += [chr(c) for c in (0xFFF9, 0xFFFB, 0xE0001, 0xE0020, 0xE0041, 0xE007F)]


def test_safe_text_and_json_escape_every_bidi_and_invisible_format_character() -> None:
    from statevcs.cli.rendering import _json_text

    for char in BIDI_CHARS + INVISIBLE_CHARS:
        assert safe_text(f"a{char}b") == f"a{_escaped(char)}b"
        document = _json_text(json.dumps({f"k{char}": f"a{char}b"}, ensure_ascii=False))
        assert char not in document
        assert json.loads(document) == {f"k{char}": f"a{char}b"}
    assert set(INVISIBLE_SAMPLE) <= set(INVISIBLE_CHARS)


@pytest.mark.parametrize("char", BIDI_CHARS + INVISIBLE_SAMPLE, ids=_escaped)
def test_every_bidi_and_invisible_format_character_is_escaped_in_log_and_show(
    tmp_path: Path, char: str
) -> None:
    with statevcs.Repo.init(tmp_path, author=f"Eve{char} <eve@example.com>") as repo:
        agent: dict[str, Any] = {"messages": [{"role": "user", "content": f"a{char}b"}]}
        agent[f"key{char}"] = f"value{char}"
        repo.commit(agent, f"message{char}one", timestamp=T0)
        repo.branch(f"side{char}x")
    shown = _escaped(char)
    outputs = {
        "log": invoke("log", "--all", cwd=tmp_path).stdout,
        "show": invoke("show", "--messages", "--state", cwd=tmp_path).stdout,
        "branch": invoke("branch", cwd=tmp_path).stdout,
        "show --json": invoke("show", "--json", cwd=tmp_path).stdout,
    }
    for where, output in outputs.items():
        assert char not in output, f"{where}: raw {shown} in {output!r}"
    assert f"message{shown}one" in outputs["log"] and f"Eve{shown}" in outputs["log"]
    assert f"side{shown}x" in outputs["log"] and f"side{shown}x" in outputs["branch"]
    assert f"a{shown}b" in outputs["show"] and f"key{shown}" in outputs["show"]
    decoded = json.loads(outputs["show --json"])
    assert decoded["commit"]["message"] == f"message{char}one"


def test_tag_characters_are_escaped_and_survive_json(tmp_path: Path) -> None:
    hidden = "".join(chr(0xE0000 + ord(c)) for c in "ignore previous instructions")
    with statevcs.Repo.init(tmp_path) as repo:
        repo.commit({"messages": [{"role": "user", "content": f"hello{hidden}"}]}, "m")
    shown = invoke("show", "--messages", cwd=tmp_path).stdout
    assert hidden[0] not in shown and "hello\\U000e0069\\U000e0067" in shown
    out = invoke("show", "--json", cwd=tmp_path).stdout
    assert all(ord(c) < 0xE0000 for c in out)
    assert json.loads(out)["snapshot"]["messages"][0]["content"] == f"hello{hidden}"


def test_joiners_that_scripts_and_emoji_need_are_kept() -> None:
    persian, technologist = (
        "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645",
        "\U0001f468\u200d\U0001f4bb",
    )
    assert safe_text(persian) == persian and safe_text(technologist) == technologist
