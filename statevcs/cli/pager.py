"""The pager: ``log``, ``show``, ``diff`` and ``reflog`` on a terminal go through one, as in git.

Which program: ``$STATEVCS_PAGER``, else ``$PAGER``, else ``less`` (when installed); an empty
value or ``cat`` means none. ``$GIT_PAGER`` is not read: it is often a diff highlighter that
expects git's patch format. ``less`` gets ``LESS=FRX`` unless ``$LESS`` is set, as git gives
it: one screen or less prints and quits (F), colors pass (R), the screen is not cleared (X).
Nothing is paged when stdout is not a terminal (a pipe, a file) or with ``--no-pager``.
The command runs through the shell, as git runs ``core.pager``; it comes from the user's
environment, never from a repository.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping

_running: subprocess.Popen[bytes] | None = None
_saved_stdout: int | None = None
_used = False


def pager_command(environ: Mapping[str, str]) -> str | None:
    """The pager to run under ``environ``, or ``None`` for no pager."""
    for variable in ("STATEVCS_PAGER", "PAGER"):
        value = environ.get(variable)
        if value is not None:
            value = value.strip()
            return None if value in ("", "cat") else value
    return "less" if shutil.which("less") else None


def start() -> bool:
    """Send stdout through the pager when it is a terminal; ``True`` if one is running."""
    global _running, _saved_stdout, _used
    if _running is not None:
        return True
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # click's test runner, a closed stdout
        return False
    if not os.isatty(fd):
        return False
    command = pager_command(os.environ)
    if command is None:
        return False
    environ = dict(os.environ)
    environ.setdefault("LESS", "FRX")
    environ.setdefault("LV", "-c")
    sys.stdout.flush()
    try:
        process = subprocess.Popen(command, shell=True, stdin=subprocess.PIPE, env=environ)
    except OSError:
        return False  # no shell to run it: print as if there were no pager
    assert process.stdin is not None
    _saved_stdout = os.dup(fd)
    os.dup2(process.stdin.fileno(), fd)
    process.stdin.close()
    _running = process
    _used = True
    return True


def stop(*, broken: bool = False) -> bool:
    """Close the pager's input and wait for it to quit; ``True`` if one was running.

    ``broken``: the pager went away early (q before the end); what is left is dropped.
    """
    global _running, _saved_stdout
    process, saved = _running, _saved_stdout
    if process is None or saved is None:
        return False
    _running = _saved_stdout = None
    fd = sys.stdout.fileno()
    if not broken:
        try:
            sys.stdout.flush()
        except (BrokenPipeError, OSError):
            broken = True
    if broken:
        # What the pager did not read must not reach the terminal at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, fd)
        os.close(devnull)
        os.close(saved)
    else:
        os.dup2(saved, fd)  # closes the pipe: the pager sees the end of its input
        os.close(saved)
    process.wait()
    return True


def used() -> bool:
    """Whether this process started a pager (its reader quitting early is then no error)."""
    return _used


__all__ = ["pager_command", "start", "stop", "used"]
