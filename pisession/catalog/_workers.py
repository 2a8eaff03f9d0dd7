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
instead of before the first fork in this process, which has no use for them. A first build
forks its workers before it knows its files (:meth:`Workers.start`), so that they import while
it lists the folders; each is then handed its share of the tasks, through a pipe of its own.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterator
from typing import Any

from .._process import end_with_parent

# A task or a result crosses a pipe as its length (8 bytes, little-endian) and its bytes; this
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


def _frame(data: bytes) -> bytes:
    return len(data).to_bytes(8, "little") + data


def _frames(data: bytes) -> Iterator[bytes]:
    at = 0
    while at < len(data):
        length = int.from_bytes(data[at : at + 8], "little")
        yield data[at + 8 : at + 8 + length]
        at += 8 + length


class Workers:
    """Worker processes, each with a pipe that hands it its tasks and one it writes its results
    to: forked by :meth:`start` (before the tasks are known), given their tasks once by
    :meth:`results`, ended by :meth:`close`."""

    def __init__(self, workers: list[tuple[int, int, Any]]) -> None:
        self._workers = workers  # (pid, its tasks' pipe's writing end, its results' pipe)

    @classmethod
    def start(
        cls, count: int, read: Callable[[bytes], bytes], warm_up: Callable[[], None]
    ) -> Workers | None:
        """``count`` workers that run ``warm_up()``, then ``read(task)`` for each task they are
        given; None where fewer than two can start (a thread, a limit, a sandbox)."""
        if count <= 1 or not _forkable():
            return None
        parent = os.getpid()
        workers: list[tuple[int, int, Any]] = []
        for _ in range(count):
            try:
                tasks_in, tasks_out = os.pipe()
            except OSError:  # no more files here
                break
            try:
                results_in, results_out = os.pipe()
            except OSError:
                os.close(tasks_in)
                os.close(tasks_out)
                break
            try:
                pid = os.fork()
            except OSError:  # no more processes here
                for fd in (tasks_in, tasks_out, results_in, results_out):
                    os.close(fd)
                break
            if pid == 0:  # pragma: no cover - the child (its work is checked through the parent)
                try:
                    os.close(tasks_out)
                    os.close(results_in)
                    for _, earlier_tasks, earlier_results in workers:
                        os.close(earlier_tasks)
                        earlier_results.close()
                    _serve(tasks_in, results_out, read, warm_up, parent)
                finally:
                    os._exit(0)
            os.close(tasks_in)
            os.close(results_out)
            workers.append((pid, tasks_out, open(results_in, "rb")))  # noqa: SIM115 - closed below
        made = cls(workers)
        if len(workers) < count:
            made.close()
            return None
        return made

    def results(self, tasks: list[bytes]) -> Iterator[bytes | None]:
        """What ``read(task)`` gave for each of ``tasks``, in order (None: read it here): worker
        ``k`` of ``n`` reads tasks ``k``, ``k + n``, ... in order, so reading the pipes in turn
        gives the results in order. Called once."""
        count = len(self._workers)
        failed: set[int] = set()
        for k, (_, tasks_out, _) in enumerate(self._workers):
            try:
                with open(tasks_out, "wb", closefd=True) as out:
                    out.write(b"".join(_frame(task) for task in tasks[k::count]))
            except OSError:  # the worker is gone: this process reads its files
                failed.add(k)
        self._workers = [(pid, -1, pipe) for pid, _, pipe in self._workers]
        for n in range(len(tasks)):
            k = n % count
            if k in failed:
                yield None
                continue
            pipe = self._workers[k][2]
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

    def close(self) -> None:
        """End the workers (one still writing ends as its pipe closes) and reap them."""
        for pid, tasks_out, pipe in self._workers:
            if tasks_out >= 0:
                with contextlib.suppress(OSError):
                    os.close(tasks_out)
            pipe.close()
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.waitpid(pid, 0)
        self._workers = []


def _serve(
    tasks_in: int, results_out: int, read: Callable[[bytes], bytes], warm_up: Callable[[], None], parent: int
) -> None:  # pragma: no cover - the child
    """A worker's life: import, take its tasks (all of them: its parent writes them at once),
    write each result as it is read."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    warm_up()
    with open(tasks_in, "rb") as source:
        tasks = list(_frames(source.read()))
    with open(results_out, "wb") as out:
        for n, task in enumerate(tasks):
            try:
                result = read(task)
            except Exception:  # read again in the parent, which then raises it
                out.write(_FAILED.to_bytes(8, "little"))
            else:
                out.write(len(result).to_bytes(8, "little"))
                out.write(result)
            out.flush()
            if n == 0:
                _tie_to_parent(parent)


@contextlib.contextmanager
def prefetched(
    tasks: list[bytes],
    read: Callable[[bytes], bytes],
    warm_up: Callable[[], None],
    started: Workers | None = None,
) -> Iterator[Iterator[bytes | None]]:
    """One result per task, in order: the bytes ``read(task)`` gave in a worker or None (read it
    in this process: too few files for workers, a worker that failed, or no process could
    start). ``warm_up()`` runs in each worker before its first read. ``started``: workers
    forked already (see :meth:`Workers.start`), used if there are enough tasks, ended either way.

    A full pipe stops its worker until this process reads on (memory stays bounded), and a
    parent gone closes the pipe (the worker's next write fails: it ends).
    """
    workers = started
    try:
        if workers is not None and worker_count(len(tasks)) <= 1:
            workers.close()
            workers = None
        if workers is None and worker_count(len(tasks)) > 1:
            workers = Workers.start(worker_count(len(tasks)), read, warm_up)
        yield iter([None] * len(tasks)) if workers is None else workers.results(tasks)
    finally:
        if workers is not None:
            workers.close()
