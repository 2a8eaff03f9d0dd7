"""Worker processes that never outlive the export that started them.

A worker of an export killed by SIGKILL (or SIGTERM, or the out-of-memory killer) would go on
reading sessions and writing temporaries into a folder whose lock is gone, for good, holding
its memory. So each worker, as it starts: asks Linux to kill it when its parent dies
(``PR_SET_PDEATHSIG``; its parent is the forkserver, which itself ends when the export's
process does), and watches from a thread that its parent is the one it started with and the
export's process still runs, and ends itself at once when not (every system, also where the
parent-death signal does not exist). An export that stops on an exception (Ctrl-C, SIGTERM
turned into one by the command line) kills its workers before it lets its lock go.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from typing import Any

from .._process import end_with_parent

__all__ = ["start", "stop", "alive"]

_WATCH_EVERY = 0.2  # seconds between a worker's checks that the export still runs


def alive(pid: int) -> bool:
    """Whether process ``pid`` runs (a zombie, dead and not yet reaped, does not)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
    except OSError:
        return True  # no /proc (macOS): os.kill's answer
    return fields[:1] != [b"Z"]


def _watch(parent: int, export: int) -> None:
    while os.getppid() == parent and alive(export):
        time.sleep(_WATCH_EVERY)
    os._exit(1)  # no clean-up to run: what it half wrote is a temporary the next export removes


def start(export: int) -> None:
    """Run first in each worker process (``export``: the exporting process's id)."""
    parent = os.getppid()
    end_with_parent()
    # the parent may have died before the signal was asked for
    if os.getppid() != parent or not alive(export):
        os._exit(1)
    threading.Thread(target=_watch, args=(parent, export), name="pisession-export-watch", daemon=True).start()


def stop(pool: Any) -> None:
    """Kill a ``ProcessPoolExecutor``'s workers now and wait for them (``shutdown`` alone waits
    for each one's session to be written, a minute for a large one)."""
    processes = list((getattr(pool, "_processes", None) or {}).values())
    for process in processes:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            process.kill()
    pool.shutdown(wait=True, cancel_futures=True)
    for process in processes:
        with contextlib.suppress(OSError, ValueError, AttributeError, AssertionError):
            process.join(5)
