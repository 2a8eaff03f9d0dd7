"""After a refresh that wrote, the catalog copies the write-ahead log into the database file in
a thread of its own while the caller reads (the checkpoint a closing connection makes then has
nothing left to copy); the thread is waited for before the next refresh and at close."""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import pisession.catalog._catalog as catalog_module
import pisession.catalog._refresh as refresh_module
from pisession._discovery import list_all_sessions
from pisession.catalog import Catalog
from tests.test_catalog import sessions


@pytest.mark.parametrize("name", ["catalog", "odd %41 ?x=1 #y"])
def test_a_refresh_that_wrote_is_checkpointed_before_the_catalog_closes(tmp_path: Path, name: str) -> None:
    folder = tmp_path / "sessions"
    sessions(folder, 40)
    (tmp_path / name).mkdir()
    database = tmp_path / name / "catalog.sqlite3"
    with Catalog(database) as catalog:
        catalog._connect()
        empty = os.path.getsize(database)  # the schema alone: the rows go to the log first
        assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))
        catalog._settle()
        # the rows are in the database file itself, the connection still open
        assert os.path.getsize(database) > empty + 40 * 1024
        wrote = os.path.getsize(database)
        assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))
        assert catalog._checkpoint is None  # a refresh that wrote nothing starts none
    assert os.path.getsize(database) == wrote
    assert not os.path.exists(f"{database}-wal")  # the last close took the log away
    assert sorted(os.listdir(tmp_path / name)) == ["catalog.sqlite3"]


def test_the_checkpoint_never_makes_a_catalog_that_is_gone(tmp_path: Path) -> None:
    gone = tmp_path / "gone.sqlite3"
    catalog_module._checkpoint(str(gone), 1.0)
    assert not gone.exists()


class SlowCheckpoint:
    """The catalog's checkpoint, held until :meth:`release` (a test sees its thread running),
    then 0.3 s long (what waits for it must wait)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.started = 0
        self.released = threading.Event()
        checkpoint = catalog_module._checkpoint

        def slow(path: str, timeout: float) -> None:
            self.started += 1
            self.released.wait(10)
            time.sleep(0.3)
            checkpoint(path, timeout)

        monkeypatch.setattr(catalog_module, "_checkpoint", slow)

    def release(self) -> None:
        self.released.set()


def threads_at_each_pass(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many threads this process has as each write pass begins (and forks its workers)."""
    counts: list[int] = []
    write_pass = refresh_module._write_pass

    def counted(*args: Any) -> None:
        counts.append(threading.active_count())
        write_pass(*args)

    monkeypatch.setattr(refresh_module, "_write_pass", counted)
    return counts


@contextlib.contextmanager
def forty_more_while_a_checkpoint_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Catalog, Path, SlowCheckpoint, list[int]]]:
    """A catalog that listed forty sessions (two workers), its checkpoint still running when
    forty more were written, then released: what refreshes next must wait for it. Gives the
    catalog, the folder, the checkpoint and the threads counted as each write pass began."""
    folder = tmp_path / "sessions"
    sessions(folder, 40)
    monkeypatch.setenv("PISESSION_WORKERS", "2")
    slow = SlowCheckpoint(monkeypatch)
    threads_at_fork = threads_at_each_pass(monkeypatch)
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        catalog.list_all(str(folder))
        assert catalog._checkpoint is not None and catalog._checkpoint.is_alive()
        forty_more(tmp_path, folder)
        slow.release()
        yield catalog, folder, slow, threads_at_fork


def forty_more(tmp_path: Path, folder: Path) -> None:
    """Forty new sessions in ``folder``: the next refresh reads them in workers."""
    sessions(tmp_path / "more", 40)
    for path in (tmp_path / "more").iterdir():
        path.rename(folder / f"more-{path.name}")


def test_a_checkpoint_still_running_is_waited_for_before_workers_are_forked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with forty_more_while_a_checkpoint_runs(tmp_path, monkeypatch) as (catalog, folder, _, threads_at_fork):
        assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))
        assert catalog.last_report.read == 40
    assert threads_at_fork == [1, 1]  # the second pass forked its workers with no thread beside it


@pytest.mark.parametrize("call", ["search", "search_sessions"])
def test_a_search_waits_for_the_checkpoint_before_its_refresh_forks_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, call: str
) -> None:
    # a search's refresh (the first builds the whole index) forks workers as a listing's does:
    # with the listing's checkpoint still running beside it, it read every file in one process;
    # what it writes is checkpointed behind too
    limit: dict[str, dict[str, Any]] = {"search": {"limit": None}, "search_sessions": {}}
    with forty_more_while_a_checkpoint_runs(tmp_path, monkeypatch) as (catalog, folder, slow, at_fork):
        found = getattr(catalog, call)("invoice", all=True, session_dir=str(folder), **limit[call])
        assert len(found) == 80 and catalog.last_report.read == 40
        assert slow.started == 2  # the search's writes are checkpointed behind too
    assert at_fork == [1, 1]  # the search's pass forked its workers with no thread beside it


def test_a_fork_waits_for_a_checkpoint_still_running(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a library caller's fork (multiprocessing's, say) after a listing: a child forked while the
    # thread is inside SQLite could start with a lock held (its allocator's, its file table's)
    folder = tmp_path / "sessions"
    sessions(folder, 4)
    slow = SlowCheckpoint(monkeypatch)
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        catalog.list_all(str(folder))
        thread = catalog._checkpoint
        assert thread is not None and thread.is_alive()
        slow.release()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            os._exit(0)
        alive_at_fork = thread.is_alive()
        os.waitpid(pid, 0)
    assert not alive_at_fork


def test_a_thread_that_cannot_start_leaves_the_checkpoint_to_the_close(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a process at its limit of threads (RLIMIT_NPROC, a container's pids limit): the listing
    # still gives its rows, and the catalog still closes (its last connection checkpoints)
    folder = tmp_path / "sessions"
    sessions(folder, 4)
    start = threading.Thread.start

    def refused(self: threading.Thread) -> None:
        if self.name == "pisession-catalog-checkpoint":
            raise RuntimeError("can't start new thread")
        start(self)

    monkeypatch.setattr(threading.Thread, "start", refused)
    database = tmp_path / "catalog.sqlite3"
    with Catalog(database) as catalog:
        assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))
        assert catalog.last_error is None and catalog.last_report.read == 4
        sessions(folder, 5)  # one more file: a second refresh that writes
        assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))
    assert not os.path.exists(f"{database}-wal")


def test_checkpoints_asked_for_while_one_runs_are_made_once_after_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a refresh asks after each of its commits: one request made while a checkpoint runs is
    # never lost (the thread checkpoints again), and any number of them costs one more
    runs: list[float] = []
    hold = threading.Event()

    def held(path: str, timeout: float) -> None:
        runs.append(time.monotonic())
        hold.wait(10)

    monkeypatch.setattr(catalog_module, "_checkpoint", held)
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        catalog._connect()
        catalog._checkpoint_behind()
        for _ in range(3):
            asked = time.monotonic()
            catalog._checkpoint_behind()
        assert threading.active_count() == 2  # one thread, still in its first checkpoint
        hold.set()
        catalog._settle()
        assert len(runs) == 2 and runs[1] >= asked
        catalog._checkpoint_behind()  # the thread is gone: a new one
        catalog._settle()
        assert len(runs) == 3


@pytest.mark.parametrize("call", ["list_all", "search", "search_sessions"])
def test_a_first_build_checkpoints_behind_its_commits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, call: str
) -> None:
    # its last checkpoint then copies only what its last commits wrote; and it copies all of it
    import sqlite3

    folder = tmp_path / "sessions"
    sessions(folder, 40)
    database = tmp_path / "catalog.sqlite3"
    monkeypatch.setattr(refresh_module, "_COMMIT_EVERY", -1.0)  # a transaction per file
    frames: list[tuple[int, int, int]] = []

    def recorded(path: str, timeout: float) -> None:
        with sqlite3.connect(path, timeout=timeout) as connection:
            frames.append(connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone())
        connection.close()

    monkeypatch.setattr(catalog_module, "_checkpoint", recorded)
    with Catalog(database) as catalog:
        if call == "list_all":
            assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))
        else:
            assert getattr(catalog, call)("hello", all=True, session_dir=str(folder)) is not None
        catalog._settle()
        assert len(frames) >= 2
        busy, log, copied = frames[-1]
        assert busy == 0 and copied == log  # the last one copied the whole log...
        with sqlite3.connect(database) as connection:
            # ...and nothing was written after it
            assert connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone() == (0, log, log)
        connection.close()
