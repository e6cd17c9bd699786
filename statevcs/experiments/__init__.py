"""Branching experiments: fork a run, replay its user turns against another agent, compare runs.

>>> from statevcs.experiments import compare, fork, replay, turns

* :func:`fork` -- a fresh agent restored at any revision, on a new branch sharing the prefix;
* :func:`replay` -- the user turns of ``A..B`` sent again to another agent (model, system prompt,
  tools, graph) on a new branch, one commit per turn naming its source commit;
* :func:`compare` -- two runs side by side, turn by turn (``statevcs compare A B``);
* :func:`turns` -- a run read as user turns, each with the commit that ends it.

A :class:`Driver` plugs a framework in; Strands and LangGraph ship one each. See
docs/experiments.md.
"""

from __future__ import annotations

from .comparison import Comparison, TurnComparison, TurnStatus, compare
from .runs import REPLAY_KEY, Driver, Fork, ReplayedTurn, ReplayResult, fork, replay
from .timeline import NotInHistory, Turn, parse_range, turn_commit, turns, turns_between

__all__ = [
    "REPLAY_KEY",
    "Comparison",
    "Driver",
    "Fork",
    "NotInHistory",
    "ReplayResult",
    "ReplayedTurn",
    "Turn",
    "TurnComparison",
    "TurnStatus",
    "compare",
    "fork",
    "parse_range",
    "replay",
    "turn_commit",
    "turns",
    "turns_between",
]
