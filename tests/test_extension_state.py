"""Extension state kept in ``custom`` entries: the helpers that read it and the transactions that
make read-latest-then-append safe across processes and threads (SPEC §8)."""

from __future__ import annotations

import multiprocessing
import threading
from pathlib import Path
from typing import Any

import pytest

import pisession
from pisession import CustomEntry, MessageEntry, SessionManager, UnknownEntry

HANG_GUARD = 120.0  # seconds; only ever reached when something deadlocks


def new_session(tmp_path: Path) -> str:
    """A session file on disk (Pi writes it once it holds a user message)."""
    manager = SessionManager.create("/work/project", tmp_path)
    manager.append_message({"role": "user", "content": "hi", "timestamp": 1733234400000})
    path = manager.get_session_file()
    assert path is not None
    manager.close()
    return path


def increment(manager: SessionManager) -> None:
    """The read-modify-write a user writes: read the latest count, append the next."""
    count = manager.get_custom_data("counter", {"n": 0})["n"]
    manager.append_custom_entry("counter", {"n": count + 1})


def counts(path: str) -> list[int]:
    """The counter values in file order, after checking they all lie on one unbroken path."""
    manager = SessionManager.open(path)
    entries = manager.get_entries()
    ids = {e.id for e in entries}
    assert all(e.parent_id is None or e.parent_id in ids for e in entries)
    on_branch = manager.get_entries_of_type(CustomEntry, branch=True)
    everywhere = manager.get_entries_of_type(CustomEntry)
    assert on_branch == everywhere, "an increment started a side branch"
    return [e.data["n"] for e in everywhere if e.custom_type == "counter"]


# ---------------------------------------------------------------------------------------------
# helpers


def test_latest_custom_entry_is_the_newest_of_its_type_on_the_branch() -> None:
    manager = SessionManager.in_memory("/p")
    assert manager.get_latest_custom_entry("state") is None
    assert manager.get_custom_data("state") is None
    assert manager.get_custom_data("state", {"todos": []}) == {"todos": []}
    manager.append_message({"role": "user", "content": "hi", "timestamp": 1})
    first = manager.append_custom_entry("state", {"v": 1})
    manager.append_custom_entry("other", {"v": "other"})
    fork_point = manager.append_custom_entry("state", {"v": 2})
    manager.append_custom_entry("state", {"v": 3})
    latest = manager.get_latest_custom_entry("state")
    assert isinstance(latest, CustomEntry) and latest.data == {"v": 3}
    assert manager.get_custom_data("other") == {"v": "other"}
    # Another branch: the state is where that branch left it, not the newest in the file.
    manager.branch(first)
    manager.append_message({"role": "user", "content": "elsewhere", "timestamp": 2})
    assert manager.get_custom_data("state") == {"v": 1}
    assert manager.get_custom_data("other") is None
    manager.branch(fork_point)
    assert manager.get_custom_data("state") == {"v": 2}


def test_custom_data_of_an_entry_without_data_is_the_default() -> None:
    manager = SessionManager.in_memory("/p")
    manager.append_custom_entry("flag")  # no "data" key, as Pi writes it
    entry = manager.get_latest_custom_entry("flag")
    assert entry is not None and entry.data is pisession.UNSET
    assert manager.get_custom_data("flag", "default") == "default"
    manager.append_custom_entry("flag", None)  # "data": null is a value
    assert manager.get_custom_data("flag", "default") is None


def test_entries_of_type_in_file_order_or_on_the_branch() -> None:
    manager = SessionManager.in_memory("/p")
    root = manager.append_message({"role": "user", "content": "hi", "timestamp": 1})
    a = manager.append_custom_entry("x", 1)
    manager.append_thinking_level_change("high")
    manager.branch(root)
    b = manager.append_custom_entry("x", 2)
    customs = manager.get_entries_of_type(CustomEntry)
    assert [e.id for e in customs] == [a, b]
    assert [e.id for e in manager.get_entries_of_type(CustomEntry, branch=True)] == [b]
    assert [e.id for e in manager.get_entries_of_type(MessageEntry)] == [root]
    assert manager.get_entries_of_type(pisession.LabelEntry) == []


def test_entries_of_type_finds_entries_of_no_known_type() -> None:
    entries: list[dict[str, Any]] = [
        {"type": "message", "id": "m1", "parentId": None, "timestamp": "2024-12-03T14:00:00.000Z",
         "message": {"role": "user", "content": "hi", "timestamp": 1}},
        {"type": "future_kind", "id": "f1", "parentId": "m1", "timestamp": "2024-12-03T14:00:01.000Z"},
    ]  # fmt: skip
    manager = SessionManager.in_memory("/p", entries=entries)
    unknown = manager.get_entries_of_type(UnknownEntry)
    assert [e.id for e in unknown] == ["f1"]


# ---------------------------------------------------------------------------------------------
# transactions


def test_a_read_then_append_outside_a_transaction_loses_an_update(tmp_path: Path) -> None:
    """Why transactions exist: two writers read the same count, both append count + 1."""
    path = new_session(tmp_path)
    first, second = SessionManager.open(path), SessionManager.open(path)
    count_first = first.get_custom_data("counter", {"n": 0})["n"]
    count_second = second.get_custom_data("counter", {"n": 0})["n"]
    second.append_custom_entry("counter", {"n": count_second + 1})
    first.append_custom_entry("counter", {"n": count_first + 1})
    assert counts(path) == [1, 1], "two increments, one count"


def test_a_transaction_reads_what_others_appended_before_it(tmp_path: Path) -> None:
    path = new_session(tmp_path)
    first, second = SessionManager.open(path), SessionManager.open(path)
    with second.transaction():
        increment(second)
    with first.transaction():  # first has not looked at the file since it opened it
        increment(first)
    assert counts(path) == [1, 2]


def test_batch_is_the_same_transaction(tmp_path: Path) -> None:
    path = new_session(tmp_path)
    first, second = SessionManager.open(path), SessionManager.open(path)
    with second.batch():
        increment(second)
    with first.batch():
        increment(first)
    assert counts(path) == [1, 2]


def test_transactions_nest_and_an_exception_keeps_what_was_appended(tmp_path: Path) -> None:
    path = new_session(tmp_path)
    manager = SessionManager.open(path)
    with pytest.raises(RuntimeError), manager.transaction() as inner:
        assert inner is manager
        with manager.transaction():
            increment(manager)
        increment(manager)
        raise RuntimeError("after two appends")
    assert counts(path) == [1, 2]  # append-only: nothing is undone
    with manager.transaction():  # and the lock was released
        increment(manager)
    assert counts(path) == [1, 2, 3]


def _count_in_process(path: str, go: Any, increments: int, use_transaction: bool) -> None:
    manager = SessionManager.open(path)
    go.wait(HANG_GUARD)
    for _ in range(increments):
        if use_transaction:
            with manager.transaction():
                increment(manager)
        else:
            manager.refresh(move_leaf=True)  # the best a reader can do without the lock
            increment(manager)
    manager.close()


def test_processes_incrementing_a_counter_lose_nothing(tmp_path: Path) -> None:
    """4 processes x 25 increments. Without the transaction (``use_transaction=False``) five runs
    of this test on a busy 2-core machine ended at 96, 53, 35, 99 and 100: a process read a count
    that another was about to append past."""
    path = new_session(tmp_path)
    context = multiprocessing.get_context("spawn")
    go = context.Barrier(4)  # all four open the session, then all start at once
    workers = [context.Process(target=_count_in_process, args=(path, go, 25, True)) for _ in range(4)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(HANG_GUARD)
    assert [w.exitcode for w in workers] == [0, 0, 0, 0]
    assert counts(path) == list(range(1, 101))


@pytest.mark.parametrize("shared", [False, True], ids=["own-managers", "one-shared-manager"])
def test_threads_incrementing_a_counter_lose_nothing(tmp_path: Path, shared: bool) -> None:
    path = new_session(tmp_path)
    managers = [SessionManager.open(path)] * 4 if shared else [SessionManager.open(path) for _ in range(4)]
    go = threading.Barrier(4)
    errors: list[BaseException] = []

    def run(manager: SessionManager) -> None:
        try:
            go.wait()
            for _ in range(25):
                with manager.transaction():
                    increment(manager)
        except BaseException as error:  # reported by the test
            errors.append(error)

    threads = [threading.Thread(target=run, args=(m,)) for m in managers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(HANG_GUARD)
    assert not errors
    assert counts(path) == list(range(1, 101))


def test_a_transaction_holds_other_threads_off_until_it_ends(tmp_path: Path) -> None:
    path = new_session(tmp_path)
    first, second = SessionManager.open(path), SessionManager.open(path)
    inside = threading.Event()
    done: list[str] = []

    def other() -> None:
        inside.wait(HANG_GUARD)
        with second.transaction():
            increment(second)
        done.append("other")

    thread = threading.Thread(target=other)
    thread.start()
    with first.transaction():
        inside.set()
        count = first.get_custom_data("counter", {"n": 0})["n"]
        thread.join(0.3)  # were the lock broken, the other thread would append now
        assert done == []
        first.append_custom_entry("counter", {"n": count + 1})
    thread.join(HANG_GUARD)
    assert done == ["other"]
    assert counts(path) == [1, 2]



def test_latest_custom_entry_in_the_whole_file() -> None:
    """Beside a Pi that never reads the backend's entries, each one ends a side branch."""
    manager = SessionManager.in_memory("/p")
    turn = manager.append_message({"role": "user", "content": "hi", "timestamp": 1})
    manager.append_custom_entry("audit", {"n": 1})
    manager.branch(turn)  # Pi's next entry hangs from its own last one
    manager.append_message({"role": "user", "content": "next", "timestamp": 2})
    assert manager.get_custom_data("audit") is None
    assert manager.get_custom_data("audit", branch=False) == {"n": 1}
    entry = manager.get_latest_custom_entry("audit", branch=False)
    assert entry is not None and entry.data == {"n": 1}
    assert manager.get_latest_custom_entry("other", branch=False) is None
