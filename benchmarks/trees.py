"""Two statevcs trees in one process, for interleaved A/B benchmarks (``--against DIR``).

Each tree is imported as a set of modules of its own; :func:`install` makes one of them the
loaded ``statevcs`` (so lazy imports by name inside it find its own modules) before a call.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any


def _own(name: str) -> bool:
    return name == "statevcs" or name.startswith("statevcs.")


def loaded() -> dict[str, Any]:
    """The ``statevcs`` modules loaded now (a call may have imported more of its tree)."""
    return {name: module for name, module in sys.modules.items() if _own(name)}


def install(modules: dict[str, Any]) -> None:
    """Make ``modules`` the loaded ``statevcs`` (lazy imports by name find them too)."""
    for name in [n for n in sys.modules if _own(n)]:
        del sys.modules[name]
    sys.modules.update(modules)


def load_tree(root: str | None, *imports: str) -> dict[str, Any]:
    """Import ``statevcs`` and ``imports`` from ``root`` (``None``: as installed) as modules
    of their own, and return them by name."""
    install({})
    if root is not None:
        sys.path.insert(0, root)
    try:
        for name in ("statevcs", *imports):
            importlib.import_module(name)
    finally:
        if root is not None:
            sys.path.remove(root)
    return loaded()
