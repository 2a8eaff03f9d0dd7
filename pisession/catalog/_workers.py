"""Reading the files a first build needs in worker processes, while this process writes the rows.

A cold catalog (a new user, a fresh container, a CI job) reads every session once; parsing is
CPU-bound, so it uses every core: the files that have no row yet (or a row lacking a part the
call needs) are read in full by a pool of worker processes (the refresh's reader, handed in,
which touches no database), in the order the refresh stores them, and the refresh writes each
result as it comes, in its own short transactions. Everything else a refresh does (catching a
grown file up, checking a changed one, a row another process wrote meanwhile) stays in this
process, unchanged.

Bounded: a task is handed out (a ticket) only while fewer than :data:`_AHEAD` results wait to
be written, so memory does not grow with the number of files. The workers never outlive this
process: they are forked before the write lock is taken (no database handle used), end when
the tickets end or their results' pipe closes, ask the
kernel to end them when their parent dies (Linux, from their first result on), ignore Ctrl-C
(the parent's to handle), and are ended (and reaped) when the reading ends, on an error too. A
process with other threads (a library caller's) reads in one process: a fork could copy a held
lock.

Each worker imports what reading needs itself, as it starts (the caller's ``warm_up``): those
imports (msgspec's took 0.04-0.06 s of a cold report's start) then run on every core at once,
instead of before the first fork in this process, which has no use for them. A first build
forks its workers before it knows its files (:meth:`Workers.start`), so that they import while
it lists the folders; each is then handed the tasks, and takes them one at a time as it is
ready for the next (see :class:`Workers`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterator

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


def _widen(fd: int) -> None:
    """Let a pipe hold a MiB where the system allows (Linux): every task is written to each
    worker at once, before it reads them (1,000 tasks: about 100 KiB)."""
    try:
        import fcntl

        fcntl.fcntl(fd, fcntl.F_SETPIPE_SZ, 1 << 20)
    except (ImportError, AttributeError, OSError):  # another system, or a lower limit
        pass


def _frame(data: bytes) -> bytes:
    return len(data).to_bytes(8, "little") + data


def _frames(data: bytes) -> Iterator[bytes]:
    at = 0
    while at < len(data):
        length = int.from_bytes(data[at : at + 8], "little")
        yield data[at + 8 : at + 8 + length]
        at += 8 + length


class Workers:
    """Worker processes, forked by :meth:`start` (before the tasks are known), given the tasks by
    :meth:`results`, ended by :meth:`close`.

    Each worker is handed every task (through a pipe of its own, at once), then takes tickets
    (a task's number, 4 bytes) from one pipe all of them read: a ticket goes to whichever worker
    asks first, so a worker held up by large files takes fewer and all of them end together (a
    share fixed in advance left one core idle for the last tenth of a first build). A result
    comes back on the worker's own pipe with its number; this process hands them on in order,
    and issues a ticket for each result it hands on, at most :data:`_AHEAD` of them ahead of
    the one it waits for: what waits in memory stays bounded."""

    def __init__(self, workers: list[tuple[int, int, int]], tickets: int) -> None:
        self._workers = workers  # (pid, its tasks' pipe's writing end, its results' reading end)
        self._tickets = tickets  # the tickets' pipe's writing end (-1: closed)

    @classmethod
    def start(
        cls, count: int, read: Callable[[bytes], bytes], warm_up: Callable[[], None]
    ) -> Workers | None:
        """``count`` workers that run ``warm_up()``, then ``read(task)`` for each task they are
        given; None where fewer than two can start (a thread, a limit, a sandbox)."""
        if count <= 1 or not _forkable():
            return None
        try:
            tickets_in, tickets_out = os.pipe()
        except OSError:  # no more files here
            return None
        parent = os.getpid()
        workers: list[tuple[int, int, int]] = []
        for _ in range(count):
            try:
                tasks_in, tasks_out = os.pipe()
            except OSError:
                break
            try:
                results_in, results_out = os.pipe()
            except OSError:
                os.close(tasks_in)
                os.close(tasks_out)
                break
            _widen(tasks_out)  # (every task written at once, before the worker reads them)
            try:
                pid = os.fork()
            except OSError:  # no more processes here
                for fd in (tasks_in, tasks_out, results_in, results_out):
                    os.close(fd)
                break
            if pid == 0:  # pragma: no cover - the child (its work is checked through the parent)
                try:
                    for fd in (tasks_out, results_in, tickets_out):
                        os.close(fd)
                    for _, earlier_tasks, earlier_results in workers:
                        os.close(earlier_tasks)
                        os.close(earlier_results)
                    _serve(tasks_in, tickets_in, results_out, read, warm_up, parent)
                finally:
                    os._exit(0)
            os.close(tasks_in)
            os.close(results_out)
            workers.append((pid, tasks_out, results_in))
        os.close(tickets_in)
        made = cls(workers, tickets_out)
        if len(workers) < count:
            made.close()
            return None
        return made

    def results(self, tasks: list[bytes]) -> Iterator[bytes | None]:
        """What ``read(task)`` gave for each of ``tasks``, in order (None: read it here: the
        task failed, or a worker died, after which no task is handed out). Called once."""
        import select

        for _, tasks_out, _ in self._workers:
            with contextlib.suppress(OSError):  # a worker gone: told by its results' pipe
                _write_all(tasks_out, b"".join(_frame(task) for task in tasks))
            os.close(tasks_out)
        self._workers = [(pid, -1, results_in) for pid, _, results_in in self._workers]
        issued = 0
        done: dict[int, bytes | None] = {}
        live = {results_in for _, _, results_in in self._workers}
        for n in range(len(tasks)):
            # keep _AHEAD tickets out past the one awaited (all, at the end, then no more)
            wanted = min(len(tasks), n + _AHEAD)
            if self._tickets >= 0 and issued < wanted:
                try:
                    tickets = b"".join(t.to_bytes(4, "little") for t in range(issued, wanted))
                    _write_all(self._tickets, tickets)
                    issued = wanted
                except OSError:  # every worker is gone
                    self._end_tickets()
                if issued == len(tasks):
                    self._end_tickets()  # (each worker then ends after its last result)
            while n not in done and n < issued and live:
                for ready in select.select(list(live), [], [])[0]:
                    message = _message(ready)
                    if message is None:  # the worker ended; if it died, it took a ticket along
                        live.discard(ready)
                        self._end_tickets()
                    else:
                        done[message[0]] = message[1]
            yield done.pop(n, None)

    def _end_tickets(self) -> None:
        if self._tickets >= 0:
            with contextlib.suppress(OSError):
                os.close(self._tickets)
            self._tickets = -1

    def close(self) -> None:
        """End the workers (one still writing ends as its pipe closes) and reap them."""
        self._end_tickets()
        for pid, tasks_out, results_in in self._workers:
            for fd in (tasks_out, results_in):
                if fd >= 0:
                    with contextlib.suppress(OSError):
                        os.close(fd)
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.waitpid(pid, 0)
        self._workers = []


# Tickets out past the result awaited: results waiting in memory for their turn (a worker's
# results also wait in its pipe, up to 64 KiB)
_AHEAD = 64


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _read_exactly(fd: int, size: int) -> bytes | None:
    """``size`` bytes from ``fd``; None if it ends first."""
    parts = []
    got = 0
    while got < size:
        more = os.read(fd, size - got)
        if not more:
            return None
        parts.append(more)
        got += len(more)
    return parts[0] if len(parts) == 1 else b"".join(parts)


def _message(fd: int) -> tuple[int, bytes | None] | None:
    """The next (task number, result or None: it failed) a worker wrote; None: it wrote no more
    (ended, or died, perhaps in the middle of one)."""
    try:
        header = _read_exactly(fd, 12)
        if header is None:
            return None
        length = int.from_bytes(header[4:], "little")
        if length == _FAILED:
            return int.from_bytes(header[:4], "little"), None
        result = _read_exactly(fd, length) if length else b""
    except OSError:
        return None
    return None if result is None else (int.from_bytes(header[:4], "little"), result)


def _serve(
    tasks_in: int,
    tickets_in: int,
    results_out: int,
    read: Callable[[bytes], bytes],
    warm_up: Callable[[], None],
    parent: int,
) -> None:  # pragma: no cover - the child
    """A worker's life: import, take every task (its parent writes them at once), then read the
    task of each ticket it takes and write the result with the task's number, until the tickets
    end (4 bytes a ticket, written whole: a pipe's read of 4 bytes never splits one)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    warm_up()
    with open(tasks_in, "rb") as source:
        tasks = list(_frames(source.read()))
    first = True
    while True:
        ticket = os.read(tickets_in, 4)
        if len(ticket) < 4:  # no more tickets
            return
        n = int.from_bytes(ticket, "little")
        try:
            result = read(tasks[n])
        except Exception:  # read again in the parent, which then raises it
            _write_all(results_out, ticket + _FAILED.to_bytes(8, "little"))
        else:
            _write_all(results_out, ticket + len(result).to_bytes(8, "little") + result)
        if first:
            _tie_to_parent(parent)
            first = False


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

    No task is handed out past :data:`_AHEAD` results waiting (memory stays bounded), and a
    parent gone closes the pipes (the worker's next write fails: it ends).
    """
    workers = started
    try:
        count = worker_count(len(tasks))
        if workers is not None and count <= 1:
            workers.close()
            workers = None
        if workers is None:
            workers = Workers.start(count, read, warm_up)  # (None for a count of 1)
        yield iter([None] * len(tasks)) if workers is None else workers.results(tasks)
    finally:
        if workers is not None:
            workers.close()
