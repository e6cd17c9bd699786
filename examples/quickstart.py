"""statevcs quickstart: commit an agent's state every turn, travel back, branch, measure.

Run: ``python examples/quickstart.py [REPO_FOLDER]``. By default the repository goes into a new
temporary folder, which is kept so that you can look at it with the command line afterwards
(the last lines printed say how). It needs no network and no model: the "agent" is a plain dict
whose ``messages`` list is the conversation and whose other keys are state, exactly what
``repo.commit`` accepts.
"""

from __future__ import annotations

import shlex
import sys
import tempfile
from pathlib import Path
from typing import Any

import statevcs


def reply(question: str, turn: int) -> str:
    """A stand-in for a model call."""
    return f"(turn {turn}) Here is a considered answer to: {question} " + "details " * 40


def main(folder: Path) -> None:
    """Run the walkthrough in a new repository at ``folder``."""
    repo = statevcs.Repo.init(folder)
    print(f"repository: {repo.url}")

    agent: dict[str, Any] = {"messages": [], "city": "Lisbon", "budget_eur": 1200, "turn": 0}
    questions = [
        "Plan three days in Lisbon.",
        "Add a day trip to Sintra.",
        "Which museums are free on Sundays?",
        "Where should we eat near Alfama?",
        "How do we get to the airport?",
        "Summarise the plan.",
    ]
    # Forty turns: a conversation long enough for structural sharing to show in the stats.
    for turn in range(1, 41):
        question = questions[(turn - 1) % len(questions)]
        agent["messages"].append({"role": "user", "content": [{"text": question}]})
        agent["messages"].append(
            {"role": "assistant", "content": [{"text": reply(question, turn)}]}
        )
        agent["turn"] = turn
        repo.commit(agent, message=f"turn {turn}: {question}", metadata={"user_id": "u-123"})

    print("\n$ log (newest first)")
    for commit in repo.log("main", limit=4):
        print(f"  {commit.short_id}  {commit.timestamp:%H:%M:%S}  {commit.message}")

    restored = repo.checkout(agent, "main~3")
    print(f"\n$ checkout main~3 -> {restored.short_id} ({restored.message!r})")
    print(f"  the live dict now has {len(agent['messages'])} messages, turn={agent['turn']}")

    # Branch from the shared prefix and explore a what-if without touching main.
    repo.branch("cheaper", rev="main~3")
    repo.checkout(agent, "cheaper")
    agent["budget_eur"] = 600
    agent["messages"].append({"role": "user", "content": [{"text": "Make it cheaper."}]})
    agent["messages"].append(
        {"role": "assistant", "content": [{"text": reply("Make it cheaper.", 99)}]}
    )
    repo.commit(agent, message="what-if: half the budget")
    print("\n$ branches")
    for name, commit_id in repo.branches().items():
        print(f"  {name:<8} {commit_id[:12]}  {repo.get_commit(name).message}")

    # str(diff) starts with its own "diff main cheaper" line: it is the command shown.
    header, *body = str(repo.diff("main", "cheaper")).split("\n")
    print("\n$ " + header)
    print("\n".join("  " + line for line in body))

    stats = repo.stats()
    print("\n$ stats")
    print(f"  commits            {stats.commits}")
    print(f"  objects            {stats.objects}")
    print(f"  bytes stored       {stats.bytes_stored:,}")
    print(f"  copy-per-commit    {stats.naive_bytes:,}")
    print(f"  dedup ratio        {stats.dedup_ratio:.1f}x")
    report = repo.fsck()
    print(f"  fsck               {'ok' if report.ok else report.problems}")
    repo.close()
    print(f"\nThe repository stays in {folder}; inspect it with:")
    print(f"  statevcs -C {shlex.quote(str(folder))} log --graph")
    print("or browse it in your web browser (pip install 'statevcs[web]'):")
    print(f"  statevcs serve {shlex.quote(str(folder))} --open")


if __name__ == "__main__":
    if len(sys.argv) > 1:
        main(Path(sys.argv[1]))
    else:
        main(Path(tempfile.mkdtemp(prefix="statevcs-quickstart-")) / "history")
