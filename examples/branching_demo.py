"""Build a small statevcs repository with three branches, for trying the command line.

A trip-planning agent (a plain dict: ``messages`` in Strands' format plus state keys) plans a
Lisbon trip on ``main``, explores a cheaper plan on ``budget``, and a reviewer approves the plan
on ``review``, which is merged back into ``main``. Timestamps and the author are fixed, so the
commit ids are the same on every run.

    python examples/branching_demo.py demo-repo
    statevcs -C demo-repo log --graph
    statevcs -C demo-repo show main --messages
    statevcs -C demo-repo diff main budget

Without a folder argument it creates the repository in a new temporary folder (kept, and
printed), never in the current directory.
"""

from __future__ import annotations

import shlex
import sys
import tempfile
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import statevcs

START = datetime(2025, 3, 14, 9, 0, tzinfo=UTC)
AUTHOR = "trip-agent <agent@example.com>"


def text(role: str, words: str) -> dict[str, Any]:
    """A Strands-style message with one text block."""
    return {"role": role, "content": [{"text": words}]}


def tool_use(tool_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    """An assistant message calling a tool."""
    return {
        "role": "assistant",
        "content": [{"toolUse": {"toolUseId": tool_id, "name": name, "input": arguments}}],
    }


def tool_result(tool_id: str, result: str) -> dict[str, Any]:
    """The user-side message carrying a tool's result."""
    return {
        "role": "user",
        "content": [
            {
                "toolResult": {
                    "toolUseId": tool_id,
                    "status": "success",
                    "content": [{"text": result}],
                }
            }
        ],
    }


def build(path: Path) -> statevcs.Repo:
    """Create the demo repository at ``path`` and return it (open)."""
    repo = statevcs.Repo.init(path, author=AUTHOR)
    clock = iter(START + timedelta(minutes=7 * n) for n in range(100))
    agent: dict[str, Any] = {
        "messages": [text("user", "Plan a 3-day trip to Lisbon in May for two, about 1200 EUR.")],
        "destination": "Lisbon",
        "days": 3,
        "budget_eur": 1200,
    }
    repo.commit(agent, "user asks for a Lisbon trip", timestamp=next(clock))

    agent["messages"] += [
        tool_use("t1", "search_flights", origin="BER", destination="LIS", month="2025-05"),
        tool_result("t1", "BER-LIS return from 212 EUR per person (TAP, direct)"),
    ]
    agent["flights"] = {"carrier": "TAP", "price_eur": 424}
    repo.commit(agent, "agent searches flights", timestamp=next(clock))

    agent["messages"].append(
        text("assistant", "Day 1 Alfama and the castle, day 2 Belém, day 3 a trip to Sintra.")
    )
    agent["itinerary"] = ["Alfama + Castelo", "Belém", "Sintra"]
    repo.commit(agent, "agent drafts the itinerary", timestamp=next(clock))
    repo.tag("draft-1")

    # A cheaper variant, explored on its own branch from the same point.
    repo.branch("budget")
    repo.checkout(agent, "budget")
    agent["messages"].append(text("user", "Can we do it for 800 EUR instead?"))
    agent["budget_eur"] = 800
    repo.commit(agent, "user asks for a cheaper plan", timestamp=next(clock))
    agent["messages"] += [
        tool_use("t2", "search_hotels", city="Lisbon", max_price_eur=60, nights=2),
        tool_result("t2", "Hostel Alfama Patio: 54 EUR per night, double room"),
        text(
            "assistant", "Switching to a hostel in Alfama and dropping Sintra keeps it at 790 EUR."
        ),
    ]
    agent["itinerary"] = ["Alfama + Castelo", "Belém"]
    agent["hotel"] = {"name": "Hostel Alfama Patio", "price_eur": 54}
    repo.commit(agent, "agent finds a hostel and trims the plan", timestamp=next(clock))

    # Meanwhile main goes on with the original plan.
    repo.checkout(agent, "main")
    repo.branch("review")
    agent["messages"].append(text("user", "Great, please book a hotel near Chiado."))
    repo.commit(agent, "user asks to book a hotel", timestamp=next(clock))
    agent["messages"] += [
        tool_use("t3", "book_hotel", city="Lisbon", area="Chiado", nights=2),
        tool_result("t3", "Booked Hotel Chiado Lux, 2 nights, 310 EUR (ref HX-4471)"),
        text("assistant", "Booked Hotel Chiado Lux for two nights (310 EUR)."),
    ]
    agent["hotel"] = {"name": "Hotel Chiado Lux", "price_eur": 155, "booking": "HX-4471"}
    repo.commit(agent, "agent books the hotel", timestamp=next(clock))

    # A reviewer approves the draft on its own branch: state only, no new messages.
    reviewer: dict[str, Any] = {}
    repo.checkout(reviewer, "review")
    reviewer["approved_by"] = "ana@example.com"
    reviewer["notes"] = "Fine, but keep a rain plan for Sintra."
    repo.commit(reviewer, "reviewer approves the itinerary", timestamp=next(clock))

    # The reviewer's messages are a prefix of main's and the state keys do not overlap: a
    # clean structural merge.
    repo.merge("main", "review", timestamp=next(clock), message="Merge review into main")
    repo.checkout(agent, "main")
    return repo


def main(argv: list[str]) -> int:
    """Create the repository named on the command line (default: in a new temporary folder)."""
    chosen = len(argv) > 1
    if chosen:
        path = Path(argv[1])
    else:
        path = Path(tempfile.mkdtemp(prefix="statevcs-demo-")) / "demo-repo"
    with build(path) as repo:
        print(f"created {path} with branches {', '.join(sorted(repo.branches()))}")
    if not chosen:  # a folder you named needs no reminder (and scripts read this one line)
        where = shlex.quote(str(path))
        print("inspect it with:")
        print(f"  statevcs -C {where} log --graph")
        print(f"  statevcs -C {where} diff main budget")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
