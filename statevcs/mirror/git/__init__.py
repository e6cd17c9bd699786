"""Mirror statevcs history into a git repository any git tool can read, and read it back.

Each statevcs commit becomes a git commit with the same author, time, message and parent shape.
Its tree holds one pretty-printed JSON file per message, numbered from 0 and a hundred to a
folder (``messages/0000/000000-user.json``), the state (``state.json``), the extras
(``extras.json``) and ``statevcs.json`` (mirror format, ids, snapshot kind, state codec and the
exact commit fields), so :func:`import_git` rebuilds identical snapshot and commit ids. It also
reads mirrors of format 1 (one flat ``messages/`` folder numbered from 1). Exports are
incremental: a map of statevcs ids to git shas, stored in the git repository (``statevcs-map``
in its git folder), lets a second export write only new commits.

One statevcs commit always gives one git commit, whichever process exports it: ``statevcs.json``
is written with sorted keys (metadata included), and message, state and extras files keep the
key order of the stored values, which is part of their content (it decides their ids).

A git repository written by :func:`export_git` is marked as a mirror in its git config
(``[statevcs] mirror = true``); an export refuses any other non-empty git repository unless
forced, and never touches a working tree that has local changes.

Values JSON cannot hold exactly are written as one-key marker objects (see
:mod:`~statevcs.mirror.git.jsonmap`), and state written by a non-JSON serializer (msgpack,
pickle) as ``{"__raw__": {"codec": ..., "base64": ...}}`` holding the stored bytes (plus a
``repr`` preview for people when the value can be decoded).

Like dulwich's porcelain, the entry points are functions taking a repository::

    from statevcs.mirror.git import export_git, import_git

    export_git(repo, "mirror", push="/srv/git/agents.git")
    import_git(other_repo, "mirror")

One module per job: :mod:`~statevcs.mirror.git.jsonmap` (values to JSON and back),
:mod:`~statevcs.mirror.git.layout` (what a mirror holds and reading it from git),
:mod:`~statevcs.mirror.git.export` (+ :mod:`~statevcs.mirror.git.packs` and
:mod:`~statevcs.mirror.git.push`) and
:mod:`~statevcs.mirror.git.import_`. Needs the ``git`` extra (dulwich):
``pip install 'statevcs[git]'``.
"""

from __future__ import annotations

from .export import export_git
from .import_ import import_git
from .jsonmap import MAX_DEPTH, dump_json, from_json, to_json
from .layout import MAP_FILE, MAX_FILE_SIZE, MIRROR_FORMAT, MIRROR_SECTION, READ_FORMATS
from .reports import ExportReport, ImportReport, Progress

__all__ = [
    "MAP_FILE",
    "MAX_DEPTH",
    "MAX_FILE_SIZE",
    "MIRROR_FORMAT",
    "MIRROR_SECTION",
    "READ_FORMATS",
    "ExportReport",
    "ImportReport",
    "Progress",
    "dump_json",
    "export_git",
    "from_json",
    "import_git",
    "to_json",
]
