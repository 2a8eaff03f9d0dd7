"""Several writers on one session file (SPEC §8): processes, threads, a lock-free writer like Pi.

Every check here is about file contents and ordering, never about time: the waits that exist
only give a broken lock the chance to show itself, and each has a generous hang guard.
"""

from __future__ import annotations

import itertools
import json
import os
import re
import resource
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ORACLE, needs_oracle, oracle_available

import pisession
from pisession import LockTimeout, SessionManager, _store
from pisession._lock import SessionLock

REPO = str(Path(__file__).resolve().parents[1])
HANG_GUARD = 120.0  # seconds; only ever reached when something deadlocks

# One script for every child process; the first argument picks the role.
WORKER = r'''
import json, os, secrets, sys, threading, time
sys.path.insert(0, REPO)
from pisession import SessionManager


def wait_for(path):
    deadline = time.monotonic() + 300  # the test died: do not linger
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            raise SystemExit(f"gave up waiting for {path}")
        time.sleep(0.001)


def message(text, i):
    return {"role": "user", "content": text, "timestamp": i}


def writer(path, go, name, count, batch=0):
    manager = SessionManager.open(path)
    wait_for(go)
    ids = []
    i = 0
    while i < count:
        if batch:
            with manager.batch():
                for _ in range(min(batch, count - i)):
                    ids.append(manager.append_message(message(f"{name}-{i}", i)))
                    i += 1
        else:
            ids.append(manager.append_message(message(f"{name}-{i}", i)))
            i += 1
    return {name: ids}


def threads(path, go, name, count, shared):
    managers = [SessionManager.open(path)] * 4 if shared else [SessionManager.open(path) for _ in range(4)]
    out = {}
    errors = []

    def run(k):
        try:
            ids = out.setdefault(f"{name}{k}", [])
            for i in range(count):
                ids.append(managers[k].append_message(message(f"{name}{k}-{i}", i)))
        except BaseException as error:  # reported to the test, which fails on it
            errors.append(repr(error))

    workers = [threading.Thread(target=run, args=(k,)) for k in range(4)]
    wait_for(go)
    for t in workers:
        t.start()
    for t in workers:
        t.join()
    if errors:
        raise SystemExit("thread failed: " + "; ".join(errors))
    return out


def raw_writer(path, go, name, count):
    """Pi's way: no lock, each line one write on an O_APPEND descriptor, parent = last id seen."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    reader = os.open(path, os.O_RDONLY)
    offset = 0
    last = None
    seen = set()
    ids = []
    wait_for(go)
    for i in range(count):
        size = os.fstat(reader).st_size
        data = os.pread(reader, size - offset, offset)
        end = data.rfind(b"\n")
        if end >= 0:
            for line in data[:end].split(b"\n"):
                entry = json.loads(line)
                if entry.get("type") != "session":
                    last = entry["id"]
                    seen.add(last)
            offset += end + 1
        eid = secrets.token_hex(4)
        while eid in seen:
            eid = secrets.token_hex(4)
        seen.add(eid)
        entry = {"type": "message", "id": eid, "parentId": last, "timestamp": "2024-12-03T14:00:00.000Z",
                 "message": message(f"{name}-{i}", i)}
        line = (json.dumps(entry, separators=(",", ":")) + "\n").encode()
        assert os.write(fd, line) == len(line)
        last = eid
        ids.append(eid)
    return {name: ids}


def reader(path, go, stop):
    """Opens the session again and again, and tails it with one long-lived manager."""
    wait_for(go)
    live = SessionManager.open(path)
    iterations = 0
    problems = []
    deadline = time.monotonic() + 300
    while (not os.path.exists(stop) or iterations < 3) and time.monotonic() < deadline:
        fresh = SessionManager.open(path)
        fresh.refresh()
        for entry in fresh.get_entries():
            if entry.parent_id is not None and fresh.get_entry(entry.parent_id) is None:
                problems.append(f"{entry.id}: parent {entry.parent_id} missing")
        live.refresh()
        iterations += 1
    live.refresh()
    return {"iterations": iterations, "problems": problems[:20],
            "live": [e.id for e in live.get_entries()]}


def follow_writer(path, count):
    manager = SessionManager.open(path)
    return [manager.append_message(message(f"follow-{i}", i)) for i in range(count)]


def append_one(path, marker, text):
    with open(marker, "w"):
        pass
    # Opening reads the file under the lock too: this already waits for a batch elsewhere.
    manager = SessionManager.open(path)
    return manager.append_message(message(text, 0))


def hold_filelock(path, locked, release, line_parent):
    """Hold filelock's lock; before letting go, write one line the way Pi does."""
    import filelock
    with filelock.FileLock(path + ".lock"):
        with open(locked, "w"):
            pass
        wait_for(release)
        time.sleep(0.3)  # give a lock that does not exclude the chance to write first
        entry = {"type": "message", "id": "f11e10c4", "parentId": line_parent,
                 "timestamp": "2024-12-03T14:00:00.000Z", "message": message("under-filelock", 0)}
        fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        os.write(fd, (json.dumps(entry, separators=(",", ":")) + "\n").encode())
        os.close(fd)
    return "released"


def try_filelock(path, timeout):
    import filelock
    try:
        with filelock.FileLock(path + ".lock", timeout=timeout):
            return "acquired"
    except filelock.Timeout:
        return "timeout"


def try_session_lock(path, timeout):
    from pisession import LockTimeout
    from pisession._lock import SessionLock
    try:
        with SessionLock(path + ".lock", timeout=timeout):
            return "acquired"
    except LockTimeout:
        return "timeout"


ROLES = {"writer": writer, "threads": threads, "raw": raw_writer, "reader": reader,
         "follow_writer": follow_writer, "append_one": append_one, "hold_filelock": hold_filelock,
         "try_filelock": try_filelock, "try_session_lock": try_session_lock}
result = ROLES[sys.argv[1]](*json.loads(sys.argv[2]))
print(json.dumps(result))
'''


_CHILDREN: list[subprocess.Popen[str]] = []


@pytest.fixture
def worker(tmp_path: Path) -> Iterator[Path]:
    script = tmp_path / "worker.py"
    script.write_text(f"REPO = {REPO!r}\n" + WORKER)
    yield script
    # A failed test must not leave its children running (they would wait for files forever).
    while _CHILDREN:
        child = _CHILDREN.pop()
        if child.poll() is None:
            child.kill()
            child.communicate()


def spawn(worker: Path, role: str, *args: Any) -> subprocess.Popen[str]:
    child = subprocess.Popen(
        [sys.executable, str(worker), role, json.dumps(list(args))],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    _CHILDREN.append(child)
    return child


def finish(process: subprocess.Popen[str]) -> Any:
    try:
        out, err = process.communicate(timeout=HANG_GUARD)
    except subprocess.TimeoutExpired:
        process.kill()
        out, err = process.communicate()
        pytest.fail(f"child {process.args[2:]} hung (deadlock?); stderr:\n{err[-3000:]}")
    assert process.returncode == 0, f"child {process.args[2:]} failed:\n{err[-3000:]}"
    return json.loads(out.strip().splitlines()[-1])


def wait_for_file(path: str, child: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + HANG_GUARD
    while not os.path.exists(path):
        if child.poll() is not None or time.monotonic() > deadline:
            child.kill()
            pytest.fail(f"child {child.args[2:]} never signalled: {child.communicate()[1][-2000:]}")
        time.sleep(0.01)


def run(worker: Path, role: str, *args: Any) -> Any:
    return finish(spawn(worker, role, *args))


def user(text: str, ts: int = 1) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": ts}


def new_session(tmp_path: Path, entries: int = 1) -> str:
    manager = SessionManager.create("/project", tmp_path / "sessions")
    for i in range(entries):
        manager.append_message(user(f"start-{i}", i))
    path = manager.get_session_file()
    assert path is not None
    manager.close()
    return path


def checked_entries(path: str) -> list[dict[str, Any]]:
    """The file's entries, asserting the invariants every concurrent run must keep."""
    raw = Path(path).read_bytes()
    assert raw.endswith(b"\n"), "file ends inside a line"
    lines = raw[:-1].split(b"\n")
    parsed = []
    for number, line in enumerate(lines):
        assert line, f"blank line {number}: a torn line was closed"
        try:
            parsed.append(json.loads(line))
        except ValueError:
            pytest.fail(f"line {number} is not valid JSON (torn or interleaved): {line[:200]!r}")
    header, entries = parsed[0], parsed[1:]
    assert header["type"] == "session"
    assert all(e["type"] != "session" for e in entries)
    seen: set[str] = set()
    for entry in entries:
        assert entry["id"] not in seen, f"id {entry['id']} written twice"
        parent = entry["parentId"]
        assert parent is None or parent in seen, (
            f"{entry['id']}: parent {parent} missing or later in the file"
        )
        seen.add(entry["id"])
    return entries


def assert_written_exactly_once(
    entries: list[dict[str, Any]], reported: dict[str, list[str]], before: int
) -> None:
    ids = [e["id"] for e in entries]
    written = [i for group in reported.values() for i in group]
    assert len(ids) == before + len(written)
    assert set(ids[before:]) | set(ids[:before]) == set(ids)
    assert set(written) == set(ids) - set(ids[:before])
    position = {eid: pos for pos, eid in enumerate(ids)}
    content = {e["id"]: e["message"]["content"] for e in entries}
    for name, group in reported.items():
        # Each writer's entries are in the file in the order it wrote them, with its own text.
        assert [position[i] for i in group] == sorted(position[i] for i in group)
        assert [content[i] for i in group] == [f"{name}-{k}" for k in range(len(group))]


def tree_shape(roots: list[Any], node_id: Any, children: Any) -> list[tuple[Any, Any]]:
    """A tree as (id, parent id) in depth-first order: flat, so that comparing it does not
    recurse (the tree of a stress run is thousands of levels deep)."""
    out: list[tuple[Any, Any]] = []
    stack = [(node, None) for node in reversed(roots)]
    while stack:
        node, parent = stack.pop()
        out.append((node_id(node), parent))
        stack.extend((child, node_id(node)) for child in reversed(children(node)))
    return out


def pisession_view(path: str) -> tuple[list[str], list[tuple[Any, Any]], str | None]:
    manager = SessionManager.open(path)
    ids = [e.id for e in manager.get_entries()]
    tree = tree_shape(manager.get_tree(), lambda n: n.entry.id, lambda n: n.children)
    return ids, tree, manager.get_leaf_id()


def _loads_deep(text: str) -> Any:
    """json.loads without recursion (the oracle's tree nests one level per entry)."""
    decoder = json.JSONDecoder()
    token = re.compile(r'\s*(?:([\[\]{},:])|("(?:[^"\\]|\\.)*")|(-?[0-9][0-9.eE+-]*|true|false|null))')
    stack: list[Any] = []
    keys: list[Any] = []
    pos = 0
    value: Any = None
    done = False
    while not done:
        match = token.match(text, pos)
        assert match, text[pos : pos + 50]
        pos = match.end()
        punct, string, literal = match.groups()
        produced = False
        if punct and punct in "[{":
            stack.append([] if punct == "[" else {})
            keys.append(None)
        elif punct and punct in "]}":
            value = stack.pop()
            keys.pop()
            produced = True
        elif punct:
            continue
        else:
            value = decoder.decode(string if string is not None else literal)
            if stack and isinstance(stack[-1], dict) and keys[-1] is None:
                keys[-1] = value
                continue
            produced = True
        if produced:
            if not stack:
                done = True
            elif isinstance(stack[-1], list):
                stack[-1].append(value)
            else:
                stack[-1][keys[-1]] = value
                keys[-1] = None
    return value


def oracle_view(path: str) -> tuple[list[str], list[tuple[Any, Any]], str | None]:
    def raise_stack() -> None:
        _, hard = resource.getrlimit(resource.RLIMIT_STACK)
        resource.setrlimit(resource.RLIMIT_STACK, (hard, hard))

    done = subprocess.run(
        ["node", "--stack-size=60000", str(ORACLE), "read", path],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
        preexec_fn=raise_stack,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = _loads_deep(done.stdout)
    assert result["ok"], result.get("error")
    dump = result["dump"]
    tree = tree_shape(dump["tree"], lambda n: n["id"], lambda n: n["children"])
    return [e["id"] for e in dump["entries"]], tree, dump["leafId"]


# ---------------------------------------------------------------------------------------------
# (a) 8 processes x 200 appends, one process reading all along


def test_eight_processes_append_while_a_reader_reloads(tmp_path: Path, worker: Path) -> None:
    path = new_session(tmp_path)
    go, stop = str(tmp_path / "go"), str(tmp_path / "stop")
    writers = [spawn(worker, "writer", path, go, f"w{k}", 200) for k in range(8)]
    reader = spawn(worker, "reader", path, go, stop)
    Path(go).touch()
    reported: dict[str, list[str]] = {}
    for process in writers:
        reported.update(finish(process))
    Path(stop).touch()
    seen = finish(reader)

    entries = checked_entries(path)
    assert_written_exactly_once(entries, reported, before=1)
    # Every writer holds the lock and first reads the others' entries: one single chain.
    for previous, entry in itertools.pairwise(entries):
        assert entry["parentId"] == previous["id"]
    assert seen["problems"] == []
    assert seen["live"] == [e["id"] for e in entries], "the tailing reader missed or doubled entries"
    ids, _, leaf = pisession_view(path)
    assert ids == [e["id"] for e in entries] and leaf == entries[-1]["id"]


# ---------------------------------------------------------------------------------------------
# (b) the issue-6 stress: processes, threads (shared and own managers), a lock-free writer

STRESS_COUNT = 500  # entries per process / thread, as the issue asks


def test_stress_processes_threads_and_a_lock_free_writer(tmp_path: Path, worker: Path) -> None:
    path = new_session(tmp_path, entries=2)
    go, stop = str(tmp_path / "go"), str(tmp_path / "stop")
    started = time.monotonic()
    children = [
        spawn(worker, "writer", path, go, f"p{k}", STRESS_COUNT, 10 if k == 7 else 0) for k in range(8)
    ]
    children.append(spawn(worker, "threads", path, go, "shared", STRESS_COUNT, True))
    children.append(spawn(worker, "threads", path, go, "own", STRESS_COUNT, False))
    children.append(spawn(worker, "raw", path, go, "pi", STRESS_COUNT))
    reader = spawn(worker, "reader", path, go, stop)
    Path(go).touch()
    reported: dict[str, list[str]] = {}
    for process in children:
        reported.update(finish(process))
    Path(stop).touch()
    seen = finish(reader)
    elapsed = time.monotonic() - started

    entries = checked_entries(path)
    assert_written_exactly_once(entries, reported, before=2)
    assert len(entries) == 2 + (8 + 4 + 4 + 1) * STRESS_COUNT
    assert seen["problems"] == []
    assert seen["live"] == [e["id"] for e in entries], "the tailing reader missed or doubled entries"
    ids, tree, leaf = pisession_view(path)
    assert ids == [e["id"] for e in entries] and leaf == entries[-1]["id"]
    print(f"stress: {len(entries)} entries, {seen['iterations']} reader passes, {elapsed:.1f}s")
    if oracle_available():
        assert oracle_view(path) == (ids, tree, leaf)


@needs_oracle
def test_oracle_reads_a_forked_concurrent_file_as_pisession_does(tmp_path: Path, worker: Path) -> None:
    # A smaller run with the lock-free writer, so the file certainly has branches.
    path = new_session(tmp_path)
    go = str(tmp_path / "go")
    children = [spawn(worker, "writer", path, go, f"p{k}", 150) for k in range(3)]
    children.append(spawn(worker, "raw", path, go, "pi", 300))
    Path(go).touch()
    for process in children:
        finish(process)
    checked_entries(path)
    assert oracle_view(path) == pisession_view(path)


# ---------------------------------------------------------------------------------------------
# (c) follow() sees what another process appends


def test_follow_sees_every_entry_another_process_appends_in_order(tmp_path: Path, worker: Path) -> None:
    path = new_session(tmp_path)
    manager = SessionManager.open(path)
    stop = threading.Event()
    seen: list[str] = []
    failure: list[BaseException] = []

    def follow() -> None:
        try:
            for entry in manager.follow(poll_interval=0.01, stop=stop):
                seen.append(entry.id)
        except BaseException as error:
            failure.append(error)

    thread = threading.Thread(target=follow, daemon=True)
    thread.start()
    written = run(worker, "follow_writer", path, 300)
    deadline = time.monotonic() + HANG_GUARD
    while len(seen) < len(written) and time.monotonic() < deadline and not failure:
        time.sleep(0.01)
    stop.set()
    thread.join(HANG_GUARD)
    assert not failure, failure
    assert seen == written
    assert manager.get_leaf_id() != written[-1], "follow() must not move the leaf"


# ---------------------------------------------------------------------------------------------
# (d) batch() holds the lock for the whole block


def test_batch_holds_the_lock_until_the_block_ends(tmp_path: Path, worker: Path) -> None:
    path = new_session(tmp_path)
    manager = SessionManager.open(path)
    marker = str(tmp_path / "trying")
    with manager.batch():
        inside = [manager.append_message(user("batch-0"))]
        # Another process, bounded by a timeout, cannot take the lock...
        assert run(worker, "try_session_lock", path, 0.3) == "timeout"
        assert run(worker, "try_filelock", path, 0.3) == "timeout"
        # ...and one that appends waits for the whole batch.
        other = spawn(worker, "append_one", path, marker, "outsider")
        wait_for_file(marker, other)
        time.sleep(0.3)  # were the lock broken, the outsider would write now
        for i in range(1, 5):
            inside.append(manager.append_message(user(f"batch-{i}")))
        assert "outsider" not in Path(path).read_text()
    outsider = finish(other)
    entries = checked_entries(path)
    assert [e["id"] for e in entries[-6:]] == [*inside, outsider]
    assert entries[-1]["parentId"] == inside[-1], "the outsider read the batch before appending"
    # The lock is free again.
    assert run(worker, "try_session_lock", path, 5) == "acquired"


def test_batch_first_reads_what_other_writers_appended(tmp_path: Path, worker: Path) -> None:
    """SPEC §8: a manager holding the lock first reads what others appended, batch or not."""
    path = new_session(tmp_path)
    manager = SessionManager.open(path)
    (elsewhere,) = run(worker, "follow_writer", path, 1)
    with manager.batch():
        mine = manager.append_message(user("in batch"))
    entries = checked_entries(path)
    assert [e["id"] for e in entries[-2:]] == [elsewhere, mine]
    assert entries[-1]["parentId"] == elsewhere, "the batch appended from a stale leaf"


# ---------------------------------------------------------------------------------------------
# (e) filelock interoperability


def test_a_filelock_held_elsewhere_blocks_pisession(tmp_path: Path, worker: Path) -> None:
    path = new_session(tmp_path)
    manager = SessionManager.open(path)
    tip = manager.get_leaf_id()
    locked, release = str(tmp_path / "locked"), str(tmp_path / "release")
    holder = spawn(worker, "hold_filelock", path, locked, release, tip)
    wait_for_file(locked, holder)
    with pytest.raises(LockTimeout), SessionLock(path + ".lock", timeout=0.2):
        pass
    result: list[str] = []
    appender = threading.Thread(target=lambda: result.append(manager.append_message(user("pisession"))))
    appender.start()
    Path(release).touch()
    assert finish(holder) == "released"
    appender.join(HANG_GUARD)
    assert result, "pisession's append never completed"
    entries = checked_entries(path)
    # The holder wrote its line while holding the lock; pisession waited, then read it first.
    assert [e["id"] for e in entries[-2:]] == ["f11e10c4", result[0]]
    assert entries[-1]["parentId"] == "f11e10c4"


def test_pisession_lock_blocks_filelock(tmp_path: Path, worker: Path) -> None:
    path = new_session(tmp_path)
    lock = SessionLock(path + ".lock")
    with lock:
        assert run(worker, "try_filelock", path, 0.2) == "timeout"
    assert run(worker, "try_filelock", path, 5) == "acquired"


# ---------------------------------------------------------------------------------------------
# Re-entrance within one process (found while writing the stress test)


def test_batch_survives_the_file_being_replaced_meanwhile(tmp_path: Path) -> None:
    """A re-read inside a batch (file replaced, or an interleaved lock-free writer) must not make
    the next append wait on the lock its own batch holds."""
    path = new_session(tmp_path)
    manager = SessionManager.open(path)
    outcome: list[Any] = []

    def body() -> None:
        with manager.batch():
            manager.append_message(user("one"))
            copy = path + ".copy"
            Path(copy).write_bytes(Path(path).read_bytes())
            os.replace(copy, path)
            manager.append_message(user("two"))
            manager.append_message(user("three"))
        outcome.append("done")

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    thread.join(30)
    assert outcome == ["done"], "append deadlocked on its own batch's lock"
    assert [e["message"]["content"] for e in checked_entries(path)[-3:]] == ["one", "two", "three"]


@pytest.mark.parametrize("recheck_ns", [0, 10**18], ids=["every-append", "at-batch-end"])
@pytest.mark.parametrize("copied", ["mid-batch", "before-batch"])
def test_lines_a_batch_wrote_into_a_replaced_file_reach_the_new_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, recheck_ns: int, copied: str
) -> None:
    """Inside a batch the path is looked at only now and then (and when the batch ends): lines
    written meanwhile into a file that was replaced are appended to the new file, each once."""
    monkeypatch.setattr(_store, "RECHECK_NS", recheck_ns)
    path = new_session(tmp_path)
    before = Path(path).read_bytes()
    manager = SessionManager.open(path)
    with manager.batch():
        first = [manager.append_message(user(f"a{i}")) for i in range(2)]
        copy = path + ".copy"
        Path(copy).write_bytes(Path(path).read_bytes() if copied == "mid-batch" else before)
        os.replace(copy, path)
        second = [manager.append_message(user(f"b{i}")) for i in range(2)]
    if copied == "mid-batch" or recheck_ns == 10**18:
        ids = [e["id"] for e in checked_entries(path)]
        # Copied after a0, a1 landed, or nothing was confirmed before the replacement: the new
        # file gets every batch entry it lacks, once, in order.
        assert ids[-4:] == first + second
    else:
        ids = [json.loads(line)["id"] for line in Path(path).read_bytes().splitlines()[1:]]
        # a0 and a1 were seen in the old file at the path before it was replaced by an older
        # copy: whoever replaced it dropped them, as it would have between two batches.
        assert ids[-2:] == second and not set(first) & set(ids)
    assert len(ids) == len(set(ids))
    assert [e.id for e in manager.get_entries()] == ids, "the manager re-read the new file"
    assert manager.get_leaf_id() == second[-1]


def test_two_managers_of_one_file_in_one_thread_do_not_deadlock(tmp_path: Path) -> None:
    path = new_session(tmp_path)
    first, second = SessionManager.open(path), SessionManager.open(path)
    outcome: list[Any] = []

    def body() -> None:
        with first.batch():
            a = first.append_message(user("first"))
            b = second.append_message(user("second"))
            c = first.append_message(user("first again"))
        outcome.append((a, b, c))

    thread = threading.Thread(target=body, daemon=True)
    thread.start()
    thread.join(30)
    assert outcome, "a second manager of the same file deadlocked against the first's batch"
    a, b, c = outcome[0]
    entries = checked_entries(path)
    assert [e["id"] for e in entries[-3:]] == [a, b, c]
    assert entries[-2]["parentId"] == a, "the second manager read the first's entry before appending"
    # Inside its batch the first manager does not re-read the file before each append (only
    # a lock-free writer could write meanwhile), so c may fork from a; it notices the
    # interleaved write and re-reads, so its view matches the file afterwards.
    assert entries[-1]["parentId"] in (a, b)
    assert [e.id for e in first.get_entries()] == [e["id"] for e in entries]


def test_threads_sharing_one_manager_keep_a_single_chain(tmp_path: Path) -> None:
    path = new_session(tmp_path)
    manager = SessionManager.open(path)
    errors: list[BaseException] = []

    def run_thread(k: int) -> None:
        try:
            for i in range(100):
                manager.append_message(user(f"t{k}-{i}"))
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=run_thread, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(HANG_GUARD)
    assert not errors
    entries = checked_entries(path)
    assert len(entries) == 401
    for previous, entry in itertools.pairwise(entries):
        assert entry["parentId"] == previous["id"]
    assert [e.id for e in manager.get_entries()] == [e["id"] for e in entries]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_forked_child_takes_its_own_lock(tmp_path: Path) -> None:
    """A child shares its parent's open descriptors, and flock does not exclude holders of one
    description: the child must open the lock file anew, or the parent's lock would not stop it."""
    lock = SessionLock(str(tmp_path / "s.jsonl.lock"), timeout=0.2)
    with lock:
        pass  # the descriptor is now cached
    with lock:
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child
            os.close(read)
            try:
                with lock:
                    outcome = b"acquired"
            except LockTimeout:
                outcome = b"timed out"
            os.write(write, outcome)
            os._exit(0)
        os.close(write)
        with os.fdopen(read, "rb") as pipe:
            outcome = pipe.read()
        os.waitpid(pid, 0)
    assert outcome == b"timed out"
    with lock:  # and the parent's lock still works after the child has gone
        pass


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_a_child_forked_inside_a_batch_waits_for_the_parents_lock(tmp_path: Path) -> None:
    path = new_session(tmp_path)
    manager = SessionManager.open(path)
    with manager.batch():
        manager.append_message(user("parent-1"))
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - runs in the child
            os.close(read)
            try:
                manager.append_message(user("child"))  # still inside the batch it inherited
                os.write(write, b"ok")
            except BaseException as error:  # reported to the parent
                os.write(write, repr(error).encode())
            os._exit(0)
        os.close(write)
        time.sleep(0.5)  # the child must wait for this batch, however long it lasts
        manager.append_message(user("parent-2"))
    with os.fdopen(read, "rb") as pipe:
        outcome = pipe.read()
    os.waitpid(pid, 0)
    assert outcome == b"ok"
    texts = [e["message"]["content"] for e in checked_entries(path)]
    assert texts[-3:] == ["parent-1", "parent-2", "child"]


def test_switching_session_inside_a_batch_takes_the_new_files_lock(tmp_path: Path) -> None:
    first, second = new_session(tmp_path / "a"), new_session(tmp_path / "b")
    manager = SessionManager.open(first)
    other = SessionManager.open(second)
    seen: list[bool] = []
    with manager.batch():
        manager.append_message(user("in first"))
        manager.set_session_file(second)
        original = _store.SessionFile.append

        def append(self: _store.SessionFile, data: bytes, *, verified: bool = False) -> bool:
            seen.append(self.lock.is_locked)
            return original(self, data, verified=verified)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(_store.SessionFile, "append", append)
            manager.append_message(user("in second"))
    assert seen == [True], "the second file was written without its lock"
    assert [e["message"]["content"] for e in checked_entries(second)][-1] == "in second"
    assert other.refresh()[-1].id == manager.get_leaf_id()


def test_switching_session_inside_a_batch_rescues_lines_of_a_replaced_first_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_store, "RECHECK_NS", 10**18)
    path = new_session(tmp_path)
    manager = SessionManager.open(path)
    with manager.batch():
        manager.append_message(user("b"))
        Path(path + ".copy").write_bytes(Path(path).read_bytes())
        os.replace(path + ".copy", path)
        c = manager.append_message(user("c"))  # into the replaced file's old inode
        manager.new_session()
    assert [e["id"] for e in checked_entries(path)][-1] == c


def test_a_file_deleted_during_a_batch_is_reported_and_its_unchecked_entries_forgotten(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_store, "RECHECK_NS", 10**18)
    path = new_session(tmp_path)
    manager = SessionManager.open(path)
    before = [e.id for e in manager.get_entries()]
    with pytest.raises(pisession.InvalidSessionError, match="disappeared"), manager.batch():
        manager.append_message(user("b"))
        os.unlink(path)
        manager.append_message(user("c"))
    # Neither entry is in any file at the path: the manager does not keep them as parents.
    assert [e.id for e in manager.get_entries()] == before
    with pytest.raises(pisession.InvalidSessionError, match="disappeared"):
        manager.append_message(user("d"))


def test_an_error_inside_a_batch_is_the_one_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_store, "RECHECK_NS", 10**18)
    path = new_session(tmp_path)
    manager = SessionManager.open(path)
    with pytest.raises(ZeroDivisionError), manager.batch():
        manager.append_message(user("b"))
        os.unlink(path)
        1 / 0  # noqa: B018


@pytest.mark.parametrize("recheck_ns", [0, 10**18], ids=["every-append", "at-batch-end"])
def test_a_lock_free_line_written_inside_a_batch_is_read_back(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, recheck_ns: int
) -> None:
    """Pi takes no lock: its line can land between two of a batch's. The batch notices (from
    the write position, now and then and when it ends) and the manager reads the file again."""
    monkeypatch.setattr(_store, "RECHECK_NS", recheck_ns)
    path = new_session(tmp_path)
    manager = SessionManager.open(path)
    with manager.batch():
        a = manager.append_message(user("a"))
        pi_line = {
            "type": "message",
            "id": "pi000001",
            "parentId": a,
            "timestamp": "2024-12-03T14:00:00.000Z",
            "message": user("from pi"),
        }
        with open(path, "ab") as handle:
            handle.write(json.dumps(pi_line, separators=(",", ":")).encode() + b"\n")
        b = manager.append_message(user("b"))
    ids = [e["id"] for e in checked_entries(path)]
    assert ids[-3:] == [a, "pi000001", b]
    assert [e.id for e in manager.get_entries()] == ids
    assert manager.get_leaf_id() == b and manager.get_entry(b).parent_id == a
