"""A worker process's tie to its parent: the kernel ends it when the parent dies (Linux)."""

from __future__ import annotations

import contextlib
import signal
import sys

_PR_SET_PDEATHSIG = 1


def end_with_parent() -> None:
    """Ask Linux to SIGKILL this process when its parent dies (nothing elsewhere: the caller
    checks ``os.getppid()`` after, for a parent that died before the request took hold)."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(signal.SIGKILL), 0, 0, 0)
