"""Reading the files a first build needs in worker processes, while this process writes the rows.

A cold catalog (a new user, a fresh container, a CI job) reads every session once; parsing is
CPU-bound, so it uses every core: the files that have no row yet (or a row lacking a part the
call needs) are read in full by a pool of worker processes (the refresh's reader, handed in,
which touches no database), in the order the refresh stores them, and the refresh writes each
result as it comes, in its own short transactions. Everything else a refresh does (catching a
grown file up, checking a changed one, a row another process wrote meanwhile) stays in this
process, unchanged.

Bounded: a worker whose results wait in its pipe (64 KiB on Linux) waits too, so memory does
not grow with the number of files. The workers never outlive this process: they are forked
before the write lock is taken (no database handle used), end when their pipe closes, ask the
kernel to end them when their parent dies (Linux, from their first result on), ignore Ctrl-C
(the parent's to handle), and are ended (and reaped) when the reading ends, on an error too. A
process with other threads (a library caller's) reads in one process: a fork could copy a held
lock.

Each worker imports what reading needs itself, as it starts (the caller's ``warm_up``): those
imports (msgspec's took 0.04-0.06 s of a cold report's start) then run on every core at once,
instead of before the first fork in this process, which has no use for them.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterator
from typing import Any

from .._process import end_with_parent

# A file's result crosses its pipe as its length (8 bytes, little-endian) and its bytes; this
# length says the reader failed (read the file in this process). The reader comes from the
# caller: the refresh imports this module, not the other way round.
_FAILED = (1 << 64) - 1


# Files to read before worker processes pay for themselves (a fork, and a result sent per file).
PARALLEL_FROM = 32


def worker_count(files: int) -> int:
    """How many worker processes read ``files`` new files: every core this process may use
    (``$PISESSION_WORKERS`` overrides; 1 reads them in this process)."""
    wanted = os.environ.get("PISESSION_WORKERS", "")
    if wanted.isdigit():
        count = int(wanted)
    else:
        if files < PARALLEL_FROM:
            return 1
        try:
            count = len(os.sched_getaffinity(0))
        except (AttributeError, OSError):
            count = os.cpu_count() or 1
    return max(1, min(count, files, 32))


def _tie_to_parent(parent: int) -> None:
    """Have the kernel end this worker when its parent dies. Asked once its first result is
    written (the request imports ctypes: 5 ms the first result would wait for); until then a
    parent gone ends it at that write, its pipe closed."""
    end_with_parent()
    if os.getppid() != parent:  # the parent died before the request above took hold
        os._exit(1)


def _forkable() -> bool:
    """Whether this process can fork workers safely: a POSIX system, and no other thread that
    could hold a lock the child would need (a library caller's threads: then one process)."""
    if not hasattr(os, "fork"):
        return False
    threading = sys.modules.get("threading")
    return threading is None or threading.active_count() == 1


@contextlib.contextmanager
def prefetched(
    paths: list[str],
    index: bool,
    read: Callable[[str, bool], bytes],
    warm_up: Callable[[], None],
) -> Iterator[Iterator[bytes | None]]:
    """One result per path of ``paths``, in order: the bytes ``read(path, index)`` gave in a
    worker or None (read it in this process: too few files for workers, a worker that failed, or
    no process could start). ``warm_up()`` runs in each worker before its first read.

    Worker ``k`` of ``n`` reads paths ``k``, ``k + n``, ... in order and writes each result to
    its own pipe, so reading the pipes in turn gives the results in order; a full pipe stops
    its worker until this process reads on (memory stays bounded), and a parent gone closes
    the pipe (the worker's next write fails: it ends).
    """
    count = worker_count(len(paths)) if _forkable() else 1
    if count <= 1:
        yield iter([None] * len(paths))
        return
    parent = os.getpid()
    workers: list[tuple[int, Any]] = []
    try:
        for k in range(count):
            try:
                readable, writable = os.pipe()
            except OSError:  # no more files here: this process reads them all
                break
            try:
                pid = os.fork()
            except OSError:  # no more processes here (a limit, a sandbox): this process reads them all
                os.close(readable)
                os.close(writable)
                break
            if pid == 0:  # pragma: no cover - the child (its work is checked through the parent)
                try:
                    os.close(readable)
                    for _, earlier in workers:
                        earlier.close()
                    signal.signal(signal.SIGINT, signal.SIG_IGN)
                    warm_up()
                    with open(writable, "wb") as out:
                        for n, path in enumerate(paths[k::count]):
                            try:
                                result = read(path, index)
                            except Exception:  # read again in the parent, which then raises it
                                out.write(_FAILED.to_bytes(8, "little"))
                            else:
                                out.write(len(result).to_bytes(8, "little"))
                                out.write(result)
                            out.flush()
                            if n == 0:
                                _tie_to_parent(parent)
                finally:
                    os._exit(0)
            os.close(writable)
            workers.append((pid, open(readable, "rb")))  # noqa: SIM115 - closed below
        yield _results(workers, len(paths)) if len(workers) == count else iter([None] * len(paths))
    finally:
        for pid, pipe in workers:
            pipe.close()  # a worker still writing then ends
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.waitpid(pid, 0)


def _results(workers: list[tuple[int, Any]], total: int) -> Iterator[bytes | None]:
    failed: set[int] = set()
    for n in range(total):
        k = n % len(workers)
        if k in failed:
            yield None
            continue
        pipe = workers[k][1]
        try:
            header = pipe.read(8)
            length = int.from_bytes(header, "little")
            result = None if length == _FAILED else pipe.read(length)
        except OSError:
            header, result = b"", None
        if len(header) < 8 or (result is not None and len(result) < length):
            # the worker died (killed, out of memory): this process reads its files
            failed.add(k)
            result = None
        yield result
