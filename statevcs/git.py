"""Compatibility module: the git mirror now lives in :mod:`statevcs.mirror.git`.

Import from there (``from statevcs.mirror.git import export_git, import_git``); this module
only re-exports its public names and may be removed in a later release.
"""

from __future__ import annotations

from .mirror.git import (
    MAP_FILE,
    MAX_DEPTH,
    MAX_FILE_SIZE,
    MIRROR_FORMAT,
    MIRROR_SECTION,
    ExportReport,
    ImportReport,
    dump_json,
    export_git,
    from_json,
    import_git,
    to_json,
)

__all__ = [
    "MAP_FILE",
    "MAX_DEPTH",
    "MAX_FILE_SIZE",
    "MIRROR_FORMAT",
    "MIRROR_SECTION",
    "ExportReport",
    "ImportReport",
    "dump_json",
    "export_git",
    "from_json",
    "import_git",
    "to_json",
]
