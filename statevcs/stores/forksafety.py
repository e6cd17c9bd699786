"""Stores across ``fork()``: what a forked child may use of what its parent opened.

``fork()`` copies a process's memory but only the thread that called it. Two things a store
relies on do not survive that:

- obstore's I/O runtime (tokio), one per process, started by the first S3 request. In a child
  its worker threads are gone: every S3 request there, on the parent's handle or on a new one,
  would wait forever. :func:`enter_s3` refuses at once with
  :class:`~statevcs.errors.ForkedProcessError` in a process forked from one that used S3.
- SQLite's record of the locks the process holds on a database file, shared by every
  connection to that file in the process. A child that inherits it believes it holds locks it
  does not, even on a connection it opens itself, so its parent may checkpoint and delete the
  write-ahead log under the child's commits (SQLite's "How To Corrupt", 2.6). Handles passed
  to :func:`track` close their connection just before a fork and reopen it on next use, in
  both processes, so the child's connections take real locks.
- Locks held by other threads. A forked child has only the forking thread: a lock another
  thread held at the fork (a ``Repo`` in the middle of a commit, a store in a write) stays held
  in the child for ever, and the child's first call on that handle would wait for ever. Each
  tracked handle takes its lock before the fork (waiting for the operation in progress) and
  releases it after, in both processes: repositories first (an operation holds its
  repository's lock, then its store's), then stores, each kind in one fixed order.

Forks made through ``os.fork`` (multiprocessing, gunicorn, Celery's billiard) run the hooks
below; for S3, the pid check in :func:`s3_runtime_inherited` also catches a fork made in C.
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import Protocol

from ..errors import ForkedProcessError


class ForkAware(Protocol):
    """A handle that must let go of a resource before a fork and take it up again after."""

    def _before_fork(self) -> None:
        """Called in the forking thread just before ``fork()``; must not raise."""

    def _after_fork(self, *, in_child: bool) -> None:
        """Called in the parent and in the child just after ``fork()``; must not raise."""


# Repositories' handles (their locks are taken first), then stores'.
_handles: tuple[weakref.WeakSet[ForkAware], weakref.WeakSet[ForkAware]] = (
    weakref.WeakSet(),
    weakref.WeakSet(),
)
# The handles each forking thread prepared, held strongly from before its fork until after.
_prepared: dict[int, list[ForkAware]] = {}

# The process whose obstore runtime has run (set at the first S3 use), and whether this
# process was forked from one where it had.
_runtime_pid: int | None = None
_runtime_inherited = False


def track(handle: ForkAware, *, outer: bool = False) -> None:
    """Call ``handle``'s fork hooks around every fork while it is alive.

    ``outer`` handles (repositories, whose operations take their store's lock inside their
    own) are prepared before the others, so a fork never waits for a lock in reverse order.
    """
    _handles[0 if outer else 1].add(handle)


def s3_runtime_inherited() -> bool:
    """Whether this process was forked from one that had made S3 requests."""
    return _runtime_inherited or _runtime_pid not in (None, os.getpid())


def enter_s3(url: str) -> None:
    """Note that this process makes S3 requests for ``url``.

    Raises :class:`~statevcs.errors.ForkedProcessError` if it was forked from a process that
    had made some: they would hang here.
    """
    global _runtime_pid
    if s3_runtime_inherited():
        raise ForkedProcessError(url)
    if _runtime_pid is None:
        _runtime_pid = os.getpid()


def _prepare() -> None:
    prepared = _prepared.setdefault(threading.get_ident(), [])
    # One order for every forking thread (two forking at once must not each hold a lock the
    # other waits for): outer handles first, each kind by id.
    for handles in _handles:
        for handle in sorted(handles, key=id):
            handle._before_fork()
            prepared.append(handle)


def _resume(*, in_child: bool) -> None:
    global _runtime_inherited
    if in_child and _runtime_pid is not None:
        _runtime_inherited = True
    for handle in reversed(_prepared.pop(threading.get_ident(), [])):
        handle._after_fork(in_child=in_child)


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork()
    os.register_at_fork(
        before=_prepare,
        after_in_parent=lambda: _resume(in_child=False),
        after_in_child=lambda: _resume(in_child=True),
    )


__all__ = ["ForkAware", "enter_s3", "s3_runtime_inherited", "track"]
