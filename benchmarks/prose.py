"""Pseudo-English text for the benchmarks' messages: random words from a fixed vocabulary.

Each benchmark keeps its own random stream and vocabulary (so its figures stay comparable from
run to run); this module only holds the two steps they share.
"""

from __future__ import annotations

import random
import string
from collections.abc import Sequence


def vocabulary(rng: random.Random, size: int = 3000, longest: int = 9) -> list[str]:
    """``size`` random lowercase words of 2 to ``longest`` letters, drawn from ``rng``."""
    return [
        "".join(rng.choices(string.ascii_lowercase, k=rng.randint(2, longest))) for _ in range(size)
    ]


def text(rng: random.Random, words: Sequence[str], chars: int) -> str:
    """Words from ``words`` chosen by ``rng``, joined by spaces, about ``chars`` characters."""
    out: list[str] = []
    size = 0
    while size < chars:
        word = rng.choice(words)
        out.append(word)
        size += len(word) + 1
    return " ".join(out)
