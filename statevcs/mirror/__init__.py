"""Mirrors of statevcs history in other version-control systems: the top layer of the package.

:mod:`statevcs.mirror.git` writes history into a git repository any git tool can read
(``export_git``) and reads it back with identical ids (``import_git``). Mirrors are written
against the porcelain of :class:`~statevcs.repo.Repo` and its plumbing containers
(``repo.objects``, ``repo.refs``) only.
"""
