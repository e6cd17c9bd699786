"""Pushing an exported mirror to a git remote, and leaving the remote's ``HEAD`` usable."""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import TYPE_CHECKING

from ...errors import GitMirrorError
from ...refs import HEAD
from .layout import ref, symbolic_head
from .reports import ExportReport

if TYPE_CHECKING:
    from dulwich.repo import Repo as GitRepo


def push_refs(
    git: GitRepo, remote: str, refs: Sequence[str], force: bool, report: ExportReport
) -> None:
    """Push ``refs`` of the mirror ``git`` to ``remote``, recording each ref's fate in ``report``.

    A remote that rejects any ref raises :class:`GitMirrorError` (``force`` allows non
    fast-forward updates).
    """
    from dulwich import porcelain

    out = io.BytesIO()
    try:
        result = porcelain.push(
            git,
            remote,
            [r.encode() for r in refs],
            outstream=out,
            errstream=out,
            force=force,
        )
    except porcelain.DivergedBranches as exc:
        raise GitMirrorError(
            f"the remote {remote} rejected a non fast-forward update (a branch was reset or "
            "rewritten); the mirror was exported locally. Pass --force (force=True) to "
            "overwrite the remote's branches"
        ) from exc
    except Exception as exc:  # dulwich raises many unrelated types (protocol, OS, HTTP)
        detail = str(exc) or type(exc).__name__
        raise GitMirrorError(
            f"push to {remote} failed: {detail}; check the URL (a bare repository path, "
            "file://, ssh:// or https://) and that the remote exists"
        ) from exc
    report.pushed = remote
    statuses = getattr(result, "ref_status", None) or {}
    for name in refs:
        status = statuses.get(name.encode())
        report.push_refs[name] = status.decode() if isinstance(status, bytes) else status
    rejected = {r: s for r, s in report.push_refs.items() if s is not None}
    if rejected:
        listing = ", ".join(f"{r} ({s})" for r, s in sorted(rejected.items()))
        raise GitMirrorError(
            f"the remote {remote} rejected {listing}; the mirror was exported locally. "
            "Pass --force (force=True) to overwrite branches that were reset"
        )


def fix_remote_head(remote: str, default: str, report: ExportReport) -> None:
    """Point a pushed remote's ``HEAD`` at ``default`` when it names no existing branch.

    ``git init --bare`` leaves ``HEAD`` on a branch that may never be pushed, and then
    ``git clone`` checks nothing out. The git protocol cannot move a remote's ``HEAD``, so
    only a remote on this machine is fixed; for others the report says what to run.
    """
    from dulwich.client import LocalGitClient, get_transport_and_path
    from dulwich.repo import Repo as GitRepo

    try:
        client, remote_path = get_transport_and_path(remote)
    except Exception:  # an unparsable URL already failed the push; nothing more to do here
        return
    if not isinstance(client, LocalGitClient):
        from dulwich import porcelain

        try:
            advertised = porcelain.ls_remote(remote).refs
        except Exception:  # the push went through; a failed look is no reason to fail now
            return
        if ref(HEAD) not in advertised:
            report.warnings.append(
                f"the remote's HEAD names no branch, so `git clone {remote}` checks nothing "
                f"out; run `git symbolic-ref HEAD {default}` in the remote repository"
            )
        return
    with GitRepo(remote_path) as remote_git:
        target = symbolic_head(remote_git)
        names = remote_git.refs.allkeys()
        if target is not None and target in names:
            return
        if ref(default) not in names:
            return
        remote_git.refs.set_symbolic_ref(ref(HEAD), ref(default))
        report.remote_head = default
