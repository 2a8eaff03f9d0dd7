"""Extension state kept in ``custom`` entries, updated by several processes at once.

Each of four processes increments a counter 25 times: it reads the latest ``counter`` entry on
the branch and appends the next value. Done in a transaction, no increment is lost; done without
one, two processes read the same value and one increment disappears (run it: the count varies).

Run it as it is (it writes to a temporary folder) or give it a folder::

    python docs/examples/extension_state.py [SESSION_DIR]
"""

from __future__ import annotations

import multiprocessing
import sys
import tempfile
from typing import Any

import pisession

PROCESSES, INCREMENTS = 4, 25


def increment(manager: pisession.SessionManager) -> None:
    count = manager.get_custom_data("counter", {"n": 0})["n"]
    manager.append_custom_entry("counter", {"n": count + 1})


def worker(path: str, start: Any, use_transaction: bool) -> None:
    manager = pisession.SessionManager.open(path)
    start.wait()  # every process has opened the session: they now run at the same time
    for _ in range(INCREMENTS):
        if use_transaction:
            with manager.transaction():  # the lock is held and the latest state read first
                increment(manager)
        else:
            manager.refresh(move_leaf=True)  # as up to date as a reader can be without the lock
            increment(manager)
    manager.close()


def run(directory: str, use_transaction: bool) -> int:
    """The counter's final value after every process is done."""
    session = pisession.SessionManager.create("/work/project", directory)
    session.append_message({"role": "user", "content": "count with me", "timestamp": 1733234400000})
    path = session.get_session_file()
    assert path is not None
    session.close()
    context = multiprocessing.get_context("spawn")
    start = context.Barrier(PROCESSES)
    processes = [
        context.Process(target=worker, args=(path, start, use_transaction)) for _ in range(PROCESSES)
    ]
    for process in processes:
        process.start()
    for process in processes:
        process.join()
    final = pisession.SessionManager.open(path)
    entry = final.get_latest_custom_entry("counter")
    assert entry is not None
    written = len(final.get_entries_of_type(pisession.CustomEntry))
    print(f"{'with' if use_transaction else 'without'} transactions: {entry.data['n']} of "
          f"{PROCESSES * INCREMENTS} increments kept ({written} counter entries written)")
    return int(entry.data["n"])


def main() -> int:
    directory = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="pi-state-")
    kept = run(directory, use_transaction=True)
    run(directory, use_transaction=False)
    return 0 if kept == PROCESSES * INCREMENTS else 1


if __name__ == "__main__":
    sys.exit(main())
