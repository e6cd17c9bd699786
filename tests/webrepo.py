"""A repository for the history browser's tests: branches, a merge, tool calls, an image, a
long branch (more commits than one graph page) and hostile text everywhere the browser shows it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import statevcs

HOSTILE_HTML = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>'
"""Markup that would run a script if any of it were ever parsed as HTML."""
HOSTILE_LINK = '[click me](javascript:window.__pwned=3) <a href="javascript:window.__pwned=4">x</a>'
HOSTILE_CONTROLS = "red \x1b[31m bell \x07 rtl \u202eevil\u202c tag \U000e0041 nul \x00 end"
HOSTILE_BRANCH = '"><img/src=x/onerror=window.__pwned=5>'
"""A valid branch name (git's rules allow ``<``, ``>`` and quotes) that is also markup."""
HOSTILE_TAG = "<script>window.__pwned=6</script>"
HOSTILE_AUTHOR = "Mallory <script>window.__pwned=7</script> \u202eroot"
HOSTILE_METADATA = {
    "<b>key</b>": "<iframe src=javascript:window.__pwned=8>",
    "url": "javascript:window.__pwned=9",
    "controls": "\x1b]8;;http://evil\x07link\x1b]8;;\x07",
}
LONG_BRANCH_COMMITS = 130
"""Commits on the ``long`` branch (the oldest tip, so drawn last): more than one graph page."""
COMMITS = LONG_BRANCH_COMMITS + 7
"""Commits in the repository."""
PNG = b"\x89PNG\r\n\x1a\n" + bytes(200)


def _turn(n: int, answer: str) -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": [{"text": f"question {n}: weather in Lisbon?"}]},
        {
            "role": "assistant",
            "content": [
                {"text": f"Let me check ({n})."},
                {"toolUse": {"toolUseId": f"t{n}", "name": "weather", "input": {"city": "Lisbon"}}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "toolResult": {
                        "toolUseId": f"t{n}",
                        "status": "success",
                        "content": [{"text": f"sunny, {20 + n} degrees"}],
                    }
                }
            ],
        },
        {"role": "assistant", "content": [{"text": f"{answer} {n}"}]},
    ]


def build(path: Path) -> None:
    """Write the browser tests' repository at ``path`` (SQLite)."""
    with statevcs.Repo.init(path) as repo:
        messages: list[dict[str, Any]] = []
        for n in range(1, 4):
            messages = messages + _turn(n, "It is sunny in Lisbon")
            repo.commit({"messages": messages, "city": "Lisbon", "turn": n}, f"turn {n}")
        repo.branch("long", "main~2")
        long = messages[:4]
        for n in range(LONG_BRANCH_COMMITS):
            long = [*long, {"role": "user", "content": f"long step {n}"}]
            repo.commit({"messages": long, "step": n}, f"long step {n}", branch="long")
        repo.branch("experiment", "main~1")
        base = messages[:8]
        for n in (3, 4):
            base = base + _turn(n, "Umbrella weather (zebra) in Lisbon")
            repo.commit(
                {"messages": base, "city": "Lisbon", "turn": n, "model": "other"},
                f"experiment turn {n}",
                branch="experiment",
            )
        image = {
            "role": "user",
            "content": [
                {"text": "What is in this picture?"},
                {"image": {"format": "png", "source": {"bytes": PNG}}},
            ],
        }
        hostile = [
            *messages,
            image,
            {"role": "assistant", "content": [{"text": HOSTILE_HTML}]},
            {"role": "assistant", "content": [{"text": HOSTILE_LINK}]},
            {"role": "<b>system</b>", "content": HOSTILE_CONTROLS},
        ]
        repo.branch(HOSTILE_BRANCH, "main")
        repo.commit(
            {"messages": hostile, HOSTILE_HTML: HOSTILE_CONTROLS, "turn": 4},
            f"hostile {HOSTILE_HTML}\n\nbody {HOSTILE_LINK} {HOSTILE_CONTROLS}",
            branch=HOSTILE_BRANCH,
            metadata=HOSTILE_METADATA,
        )
        repo.tag(HOSTILE_TAG, HOSTILE_BRANCH)
    with statevcs.Repo.open(path, author=HOSTILE_AUTHOR) as repo:
        repo.commit(
            {"messages": [*messages, {"role": "user", "content": "by mallory"}]},
            "a commit by a hostile author",
            branch="main",
        )


__all__ = [
    "HOSTILE_AUTHOR",
    "HOSTILE_BRANCH",
    "HOSTILE_CONTROLS",
    "HOSTILE_HTML",
    "HOSTILE_LINK",
    "HOSTILE_METADATA",
    "HOSTILE_TAG",
    "COMMITS",
    "LONG_BRANCH_COMMITS",
    "build",
]
