"""The session lock's edges (issue 10, items 8-10): one lock per file whatever the spelling, a
public timeout that names the holder, and ``close()`` racing writes in other threads.

No timing assertions: a wait here only gives a broken lock the chance to show itself, and every
join has a hang guard.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pisession import LockTimeout, SessionClosedError, SessionExistsError, SessionManager, _store

REPO = str(Path(__file__).resolve().parents[1])
HANG_GUARD = 60.0  # seconds; only ever reached when something deadlocks

# Holds filelock's lock on argv[1] (so the holder is another tool, as in the wild) until its
# stdin closes; says "locked" once it holds it.
HOLDER = """
import sys, filelock
with filelock.FileLock(sys.argv[1]):
    print("locked", flush=True)
    sys.stdin.read()
"""


def user(text: str, ts: int = 1) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": ts}


def new_session(folder: Path) -> str:
    manager = SessionManager.create("/project", folder)
    manager.append_message(user("start"))
    path = manager.get_session_file()
    assert path is not None
    manager.close()
    return path


def contents(path: str) -> list[str]:
    return [json.loads(line)["message"]["content"] for line in Path(path).read_text().splitlines()[1:]]


@pytest.fixture
def held(request: pytest.FixtureRequest) -> Iterator[Any]:
    """``held(path)`` starts a process holding the session lock of ``path``; returns it."""
    children: list[subprocess.Popen[str]] = []

    def hold(path: str) -> subprocess.Popen[str]:
        child = subprocess.Popen(
            [sys.executable, "-c", HOLDER, path + ".lock"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        children.append(child)
        assert child.stdout is not None and child.stdout.readline() == "locked\n"
        return child

    yield hold
    for child in children:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(HANG_GUARD)


def in_thread(target: Any) -> tuple[threading.Thread, list[Any]]:
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append(target())
        except BaseException as error:  # the test inspects it
            outcome.append(error)

    thread = threading.Thread(target=run, daemon=True)  # daemon: a deadlock must not hang pytest
    thread.start()
    return thread, outcome


# ---------------------------------------------------------------------------------------------
# 8. One lock per session file, whatever the path that names it


def test_a_batch_and_an_append_through_a_symlinked_folder_do_not_deadlock(tmp_path: Path) -> None:
    real = tmp_path / "real"
    path = new_session(real)
    alias = tmp_path / "alias"
    alias.symlink_to(real, target_is_directory=True)
    through_real = SessionManager.open(path)
    through_alias = SessionManager.open(alias / os.path.basename(path))

    def batch_then_alias() -> str:
        with through_real.batch():
            through_real.append_message(user("in the batch"))
            return through_alias.append_message(user("through the alias"))

    thread, outcome = in_thread(batch_then_alias)
    thread.join(HANG_GUARD)
    assert not thread.is_alive(), "the thread waits on the lock it holds itself"
    assert isinstance(outcome[0], str)
    assert contents(path) == ["start", "in the batch", "through the alias"]


def test_a_session_not_yet_written_shares_its_lock_with_its_alias(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    alias = tmp_path / "alias"
    alias.symlink_to(tmp_path / "real", target_is_directory=True)
    first = SessionManager.create("/project", tmp_path / "real")
    path = first.get_session_file()
    assert path is not None and not os.path.exists(path)
    # Another new session that would be written at the same place, through the alias.
    second = SessionManager.open(alias / os.path.basename(path))

    def batch_then_alias() -> str:
        with first.batch():
            first.append_message(user("first"))  # the file is written now, inside the batch
            return second.append_message(user("second"))

    thread, outcome = in_thread(batch_then_alias)
    thread.join(HANG_GUARD)
    assert not thread.is_alive(), "the thread waits on the lock it holds itself"
    assert isinstance(outcome[0], SessionExistsError), outcome  # the place was taken meanwhile
    assert contents(path) == ["first"]


def test_two_names_of_a_hard_link_exclude_each_other_in_a_process(tmp_path: Path) -> None:
    path = new_session(tmp_path / "s")
    other = str(tmp_path / "s" / "hard-link.jsonl")
    os.link(path, other)
    one, two = SessionManager.open(path), SessionManager.open(other)
    order: list[str] = []

    with one.batch():
        one.append_message(user("batch-1"))
        thread, outcome = in_thread(lambda: two.append_message(user("other name")))
        thread.join(0.5)  # a lock that does not exclude lets it write now, inside the batch
        one.append_message(user("batch-2"))
        order.append("batch ended")
    thread.join(HANG_GUARD)
    assert isinstance(outcome[0], str), outcome
    assert contents(path) == ["start", "batch-1", "batch-2", "other name"]
    # The same thread re-enters through either name.
    with one.batch():
        two.append_message(user("same thread"))
    assert contents(other)[-1] == "same thread"


BATCH_HOLDER = """
import sys
from pisession import SessionManager
manager = SessionManager.open(sys.argv[1])
with manager.batch():
    manager.append_message({"role": "user", "content": "holder", "timestamp": 1})
    print("locked", flush=True)
    sys.stdin.read()
"""


def test_two_names_of_a_hard_link_exclude_each_other_across_processes(tmp_path: Path) -> None:
    path = new_session(tmp_path / "s")
    other = str(tmp_path / "s" / "hard-link.jsonl")
    os.link(path, other)
    holder = subprocess.Popen(
        [sys.executable, "-c", BATCH_HOLDER, path], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "locked\n"
        manager = SessionManager.open(other, lock_timeout=0.3)
        with pytest.raises(LockTimeout, match=f"held by process {holder.pid}"):
            manager.append_message(user("through the other name"))
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        holder.wait(HANG_GUARD)
    manager.append_message(user("after"))
    assert contents(path) == ["start", "holder", "after"]
    # Each process locked <its name>.lock; the session file's own flock made them exclude.
    assert os.path.exists(path + ".lock") and os.path.exists(other + ".lock")


def test_a_lock_is_not_shared_with_a_deleted_file_whose_inode_came_back(tmp_path: Path) -> None:
    first = new_session(tmp_path / "a")
    keep = SessionManager.open(first)  # keeps its lock object alive
    lock_of_first = keep._file.lock if keep._file is not None else None
    os.unlink(first)
    # Whatever inode the next file gets, a session at another path never takes first's lock file.
    for i in range(20):
        path = new_session(tmp_path / f"b{i}")
        manager = SessionManager.open(path)
        assert manager._file is not None and manager._file.lock.path == path + ".lock"
        assert manager._file.lock is not lock_of_first


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_a_lock_file_gone_since_the_last_append_is_not_locked_again(
    tmp_path: Path, held: Any, how: str
) -> None:
    """The manager keeps its lock file open between appends; once that file is deleted (or
    another renamed over it), its lock excludes nobody: the next append must lock the file now
    at the path, where another process holds the lock, and so wait for it."""
    path = new_session(tmp_path)
    manager = SessionManager.open(path, lock_timeout=0.3)
    manager.append_message(user("before"))  # the lock file is open now
    lock = Path(path + ".lock")
    if how == "deleted":
        lock.unlink()
    else:
        Path(path + ".other").write_bytes(b"")
        os.replace(path + ".other", lock)
    holder = held(path)
    with pytest.raises(LockTimeout, match=f"held by process {holder.pid}"):
        manager.append_message(user("must wait"))
    assert contents(path) == ["start", "before"]


# ---------------------------------------------------------------------------------------------
# 9. A lock timeout, and who holds the lock


def test_lock_timeout_on_open_names_the_holding_process(tmp_path: Path, held: Any) -> None:
    path = new_session(tmp_path)
    manager = SessionManager.open(path, lock_timeout=0.2)
    holder = held(path)
    with pytest.raises(LockTimeout, match=f"held by process {holder.pid}") as raised:
        manager.append_message(user("refused"))
    assert path + ".lock" in str(raised.value)
    with pytest.raises(LockTimeout), manager.batch():
        pass
    assert contents(path) == ["start"]
    assert manager.get_entry_count() == 1


def test_batch_lock_timeout_overrides_the_managers(tmp_path: Path, held: Any) -> None:
    path = new_session(tmp_path)
    manager = SessionManager.open(path)  # waits forever by default
    held(path)
    with pytest.raises(LockTimeout), manager.batch(lock_timeout=0.1):
        manager.append_message(user("never"))
    assert contents(path) == ["start"]


def test_on_lock_wait_hears_of_the_holder_once(tmp_path: Path, held: Any) -> None:
    path = new_session(tmp_path)
    heard: list[str] = []
    manager = SessionManager.open(path, lock_timeout=1.5, on_lock_wait=heard.append)
    holder = held(path)
    with pytest.raises(LockTimeout):
        manager.append_message(user("refused"))
    assert len(heard) == 1
    assert heard[0].startswith(f"process {holder.pid} (") and "python" in heard[0]  # its command line


def test_a_thread_of_this_process_holding_the_lock_is_named(tmp_path: Path) -> None:
    path = new_session(tmp_path)
    holder = SessionManager.open(path)
    waiter = SessionManager.open(path, lock_timeout=0.2)
    release = threading.Event()

    def hold() -> None:
        with holder.batch():
            release.wait(HANG_GUARD)

    thread = threading.Thread(target=hold, daemon=True)
    thread.start()
    try:
        while not (holder._file is not None and holder._file.lock.is_locked):
            thread.join(0.01)
        with pytest.raises(LockTimeout, match=f"another thread of this process \\({os.getpid()}\\)"):
            waiter.append_message(user("refused"))
    finally:
        release.set()
        thread.join(HANG_GUARD)
    waiter.append_message(user("after"))
    assert contents(path) == ["start", "after"]


def test_a_hung_batch_of_a_shared_manager_times_out_other_threads(tmp_path: Path) -> None:
    path = new_session(tmp_path)
    heard: list[str] = []
    shared = SessionManager.open(path, lock_timeout=1.2, on_lock_wait=heard.append)
    inside, release = threading.Event(), threading.Event()

    def hung_batch() -> None:
        with shared.batch():
            inside.set()
            release.wait(HANG_GUARD)

    thread = threading.Thread(target=hung_batch, daemon=True)
    thread.start()
    try:
        assert inside.wait(HANG_GUARD)
        with pytest.raises(LockTimeout, match="another thread of this process"):
            shared.append_message(user("refused"))
        busy = pytest.raises(LockTimeout, match="another thread of this process")
        with busy, shared.batch(lock_timeout=0.1):
            pass
    finally:
        release.set()
        thread.join(HANG_GUARD)
    assert heard == [f"another thread of this process ({os.getpid()})"]
    shared.append_message(user("after"))
    assert contents(path) == ["start", "after"]


def test_every_constructor_takes_a_lock_timeout(tmp_path: Path, held: Any) -> None:
    source = new_session(tmp_path / "source")
    with open(source, "rb+") as handle:  # a missing final newline: forking repairs it, locked
        handle.truncate(os.path.getsize(source) - 1)
    held(source)
    with pytest.raises(LockTimeout):
        SessionManager.fork_from(source, "/elsewhere", tmp_path / "forks", lock_timeout=0.1)
    assert not Path(source).read_bytes().endswith(b"\n")
    with pytest.raises(LockTimeout):
        SessionManager.open(source, lock_timeout=0.1)  # the repair needs the lock
    with pytest.raises(LockTimeout):
        SessionManager.continue_recent("/project", tmp_path / "source", lock_timeout=0.1)
    created = SessionManager.create("/project", tmp_path / "new", lock_timeout=0.1)
    created.append_message(user("free"))
    assert SessionManager.in_memory(lock_timeout=0.1).append_message(user("memory"))


def test_cli_lock_timeout_says_it_waits_then_gives_up(tmp_path: Path, held: Any) -> None:
    path = new_session(tmp_path)
    before = Path(path).read_bytes()
    holder = held(path)
    result = subprocess.run(
        [sys.executable, "-m", "pisession.cli", "--lock-timeout", "1.5", "name", path, "renamed"],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
        cwd=REPO,
    )
    assert result.returncode == 1
    lines = result.stderr.splitlines()
    assert lines[0].startswith(f"pisession: waiting for the session lock held by process {holder.pid} (")
    assert lines[1].startswith("pisession: error: Timed out after 1.5 s waiting for the session lock")
    assert len(lines) == 2 and Path(path).read_bytes() == before


# ---------------------------------------------------------------------------------------------
# 10. close() and writes in other threads


def test_writes_after_close_raise_a_typed_error(tmp_path: Path) -> None:
    path = new_session(tmp_path)
    manager = SessionManager.open(path)
    manager.close()
    for write in (
        lambda: manager.append_message(user("late")),
        lambda: manager.append_custom_entry("x"),
        lambda: manager.create_branched_session(manager.get_leaf_id() or ""),
    ):
        with pytest.raises(SessionClosedError, match=path):
            write()
    with pytest.raises(SessionClosedError), manager.batch():
        pass
    for reopen in (manager.refresh, lambda: manager.set_session_file(path)):
        with pytest.raises(SessionClosedError):
            reopen()
    assert contents(path) == ["start"]
    assert manager.get_entry_count() == 1  # still readable
    memory = SessionManager.in_memory()
    memory.close()
    with pytest.raises(SessionClosedError):
        memory.append_message(user("late"))


def test_close_inside_a_batch_stops_the_batchs_later_writes(tmp_path: Path) -> None:
    path = new_session(tmp_path)
    manager = SessionManager.open(path)
    with pytest.raises(SessionClosedError), manager.batch():
        manager.append_message(user("kept"))
        manager.close()
        manager.append_message(user("refused"))
    assert contents(path) == ["start", "kept"]


def test_close_waits_for_a_write_in_progress(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = new_session(tmp_path)
    manager = SessionManager.open(path)
    writing, proceed = threading.Event(), threading.Event()
    original = _store.SessionFile.append

    def slow_append(self: _store.SessionFile, data: bytes, *, verified: bool = False) -> bool:
        writing.set()
        proceed.wait(HANG_GUARD)
        return original(self, data, verified=verified)

    monkeypatch.setattr(_store.SessionFile, "append", slow_append)
    writer, written = in_thread(lambda: manager.append_message(user("in progress")))
    assert writing.wait(HANG_GUARD)
    closer, closed = in_thread(manager.close)
    closer.join(0.3)  # a close that does not wait closes the descriptor under the write now
    assert closer.is_alive(), "close() did not wait for the write in progress"
    proceed.set()
    writer.join(HANG_GUARD)
    closer.join(HANG_GUARD)
    assert isinstance(written[0], str), written
    assert closed == [None]
    assert contents(path) == ["start", "in progress"]
    with pytest.raises(SessionClosedError):
        manager.append_message(user("after close"))


def test_threads_appending_while_another_closes_see_only_typed_errors(tmp_path: Path) -> None:
    path = new_session(tmp_path)
    manager = SessionManager.open(path)
    results: dict[int, list[Any]] = {}

    def append_until_closed(k: int) -> None:
        mine = results.setdefault(k, [])
        for i in range(100_000):
            try:
                mine.append(manager.append_message(user(f"{k}-{i}")))
            except BaseException as error:
                mine.append(error)
                return

    workers = [threading.Thread(target=append_until_closed, args=(k,), daemon=True) for k in range(3)]
    for worker in workers:
        worker.start()
    while sum(len(r) for r in results.values()) < 150:
        workers[0].join(0.01)
    manager.close()
    for worker in workers:
        worker.join(HANG_GUARD)
        assert not worker.is_alive()
    ids = set()
    for outcome in results.values():
        assert isinstance(outcome[-1], SessionClosedError), outcome[-1]
        assert all(isinstance(x, str) for x in outcome[:-1])
        ids.update(outcome[:-1])
    on_disk = {json.loads(line)["id"] for line in Path(path).read_text().splitlines()[1:]}
    assert ids <= on_disk and len(on_disk) == len(ids) + 1  # every acknowledged entry, once
