"""A first build reads the new files in worker processes: the same rows, usage and skips as
reading them in this process, no worker left behind (not even when the parent is killed), and
the quick look at each line (:func:`_feed`) summing up a file exactly as the full parse does."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import pisession.catalog._refresh as refresh_module
from pisession._discovery import SessionSummary, feed_lines, list_all_sessions
from pisession.catalog import Catalog
from pisession.catalog._fastread import _exact as exact_lines
from pisession.catalog._fastread import read_lines
from pisession.catalog._workers import worker_count
from pisession.usage import usage_report
from tests.test_catalog import REPO, age, header, line, msg, sessions, write


def assistant(eid: str, text: str, cost: float, stamp: str = "2025-01-02T03:04:07.123Z") -> dict[str, Any]:
    entry = msg(eid, "assistant", [{"type": "text", "text": text}])
    entry["timestamp"] = stamp
    entry["message"].update(
        provider="openai",
        model="gpt-5",
        usage={
            "input": 10,
            "output": 5,
            "cacheRead": 1,
            "cacheWrite": 0,
            "totalTokens": 16,
            "cost": {"total": cost},
        },
    )
    return entry


def odd_folder(folder: Path) -> None:
    """Sessions with usage (a fork too), and the files a read must tell apart (foreign, damaged,
    long lines)."""
    sessions(folder, 6)
    for n in range(6):
        write(
            folder / f"usage{n}.jsonl",
            header(f"usage-{n}", stamp=f"2025-02-0{n + 1}T00:00:00.000Z"),
            msg("u", "user", f"question {n}"),
            assistant("a1", f"answer {n}", 0.25 + n, f"2025-02-0{n + 1}T23:59:59.999Z"),
            assistant("a2", "late", 0.5, "2025-02-01T24:00:00.000Z"),
            assistant("a3", "odd date", 0.5, "2025-02-30T10:00:00.000Z"),
            msg("t", "toolResult", [{"type": "text", "text": "ok"}]),
        )
    fork = header("fork-0", stamp="2025-02-07T00:00:00.000Z")
    fork["parentSession"] = str(folder / "usage0.jsonl")
    write(  # a fork: its copy of its parent's entry counts there only
        folder / "fork0.jsonl",
        fork,
        msg("u", "user", "question 0"),
        assistant("a1", "answer 0", 0.25, "2025-02-01T23:59:59.999Z"),
        assistant("a4", "its own", 0.75, "2025-02-07T01:00:00.000Z"),
    )
    write(folder / "notes.jsonl", tail=b"just some notes\n")
    write(folder / "damaged.jsonl", header("dmg"), msg("u", "user", "x"), tail=b'{"type":"message"\n')
    write(folder / "partial.jsonl", header("partial"), tail=b'{"type":"message","id":"x"')


def everything(database: Path, folder: Path) -> tuple[Any, ...]:
    with Catalog(database) as catalog:
        listed = catalog.list_all(str(folder))
        listed_json = catalog.list_all_json(str(folder))
        skipped = sorted((Path(s.path).name, s.reason) for s in catalog.last_report.skipped)
        report = usage_report("daily", session_dir=str(folder), timezone="UTC", catalog=catalog)
        found = catalog.search("question", all=True, session_dir=str(folder))
    return listed, listed_json, skipped, report, [h.session_id for h in found]


def test_workers_give_what_this_process_gives(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "sessions"
    odd_folder(folder)
    results = []
    for workers in ("1", "2"):
        monkeypatch.setenv("PISESSION_WORKERS", workers)
        results.append(everything(tmp_path / f"catalog-{workers}.sqlite3", folder))
    assert results[0] == results[1]
    assert results[1][0] == list_all_sessions(str(folder))
    assert not children()  # the workers are gone (and reaped) with the call


def test_the_workers_are_used_and_read_each_file_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "sessions"
    sessions(folder, 40)
    monkeypatch.setenv("PISESSION_WORKERS", "2")
    in_parent: list[str] = []
    read = refresh_module._read

    def counted(connection: Any, fts: bool, handle: Any, *rest: Any, **named: Any) -> Any:
        if os.getpid() == parent:
            in_parent.append(handle.name)
        return read(connection, fts, handle, *rest, **named)

    parent = os.getpid()
    monkeypatch.setattr(refresh_module, "_read", counted)
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))
        assert catalog.last_report.read == 40
    assert in_parent == []  # every file was read by a worker


def test_worker_count() -> None:
    assert worker_count(1) == 1
    assert worker_count(10) == 1  # too few files to pay for starting processes
    assert 1 <= worker_count(1000) <= (os.cpu_count() or 1)


def children() -> set[int]:
    """This process's child processes (Linux's /proc)."""
    found: set[int] = set()
    for task in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{task}/children") as handle:
            found.update(int(pid) for pid in handle.read().split())
    return found


def test_a_killed_parent_leaves_no_worker(tmp_path: Path) -> None:
    # the workers' results fill their pipes (the parent does not read them): the workers are
    # busy when the parent is killed, and must end all the same
    (path,) = sessions(tmp_path / "sessions", 1)
    script = (
        "import os, sys, time\n"
        "pids = []\n"
        "fork = os.fork\n"
        "def counted():\n"
        "    pid = fork()\n"
        "    if pid:\n"
        "        pids.append(pid)\n"
        "    return pid\n"
        "os.fork = counted\n"
        "import marshal\n"
        "from pisession.catalog._refresh import read_task, warm_up\n"
        "from pisession.catalog._workers import prefetched\n"
        "task = marshal.dumps((sys.argv[1], False, 0, None))\n"
        "with prefetched([task] * 5000, read_task, warm_up) as reads:\n"
        "    print(*pids, flush=True)\n"
        "    time.sleep(60)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "PISESSION_WORKERS": "2"}
    child = subprocess.Popen([sys.executable, "-c", script, str(path)], stdout=subprocess.PIPE, env=env)
    assert child.stdout is not None
    pids = [int(pid) for pid in child.stdout.readline().split()]
    assert len(pids) == 2
    time.sleep(0.5)
    assert all(_alive(pid) for pid in pids)  # blocked on their full pipes
    child.send_signal(signal.SIGKILL)
    child.wait()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(pid) for pid in pids):
        time.sleep(0.05)
    assert not any(_alive(pid) for pid in pids)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as handle:
            return handle.read().split(b") ")[-1][:1] not in (b"Z", b"X")
    except FileNotFoundError:
        return False


ODD_LINES = [
    b'{"type":"a","type":"message","message":{"role":"toolResult","content":"x"}}',
    b'{"type":"message","message":{"role":"toolResult","role":"user","content":"became a user"}}',
    b'{"type":"message","message":{"role":"toolResult","content":"a\x01b"}}',
    b'{"type":"message","message":{"role":"toolResult","content":"\\ud800"}}',
    b'{"type":"message","message":{"role":"toolResult","content":"\xff"},"n":123456789012345678901234567890}',
    b'{"type":"message","message":{"role":"toolResult","content":[' + b"[" * 2000 + b"]" * 2000 + b"]}}",
    b'{"type":"message","message":{"role":"toolResult","content":[' + b"[" * 600 + b"]" * 600 + b"]}}",
    b'{"type":"message","message":{"role":"toolResult","content":"x"},}',
    b'{"t\\u0079pe":"message","message":{"r\\u006fle":"assistant","content":"escaped keys"}}',
    b'{"type":"message","message":null}',
    b'{"type":"message","message":"text"}',
    b'{"type":"message","message":{"content":"no role"}}',
    b'{"type":"message","message":{"role":7}}',
    b'{"type":"message"}',
    b'{"type":"message","message":{"role":"custom","content":"x"}} ',
    b'{"type":"session_info","name":" named "}',
    b'{"type":"label","label":"x"}',
    b'{"type":["message"]}',
    b"[1, 2]",
    b"not json",
    b'\xef\xbb\xbf{"type":"message","message":{"role":"toolResult","content":"bom"}}',
    line(msg("t", "toolResult", [{"type": "text", "text": "tool text"}]))[:-1],
    line(msg("u", "user", "a question"))[:-1],
    b'{"type":"message","id":"a","message":{"role":"assistant","content":[{"type":"thinking","thinking":"t"},'
    b'{"type":"text","text":"shown"},{"text":"no type"},{"type":"text"},{"type":"toolCall","arguments":{}}],'
    b'"timestamp":1735787045000,"usage":{"input":1}}}',
    b'{"type":"message","message":{"role":"user","content":[{"type":"text","text":12345678901234567890123}]}}',
    b'{"type":"message","message":{"role":"user","content":[{"type":"text","text":1e400}]}}',
    b'{"type":"message","message":{"role":"user","content":["bare"]}}',
    b'{"type":"message","message":{"role":"user","content":7}}',
    b'{"type":"message","message":{"role":"user","content":{"type":"text","text":"object"}}}',
    b'{"type":"message","message":{"role":"user","content":null,"timestamp":5}}',
    b'{"type":"message","message":{"role":"user"},"timestamp":"2025-01-02T03:04:06.000Z"}',
    b'{"type":"message","id":{"an":"object"},"message":{"role":"user","content":"object id"}}',
    b'{"type":"message","id":123456789012345678901234567890,"message":{"role":"user","content":"big id"}}',
    b'{"type":"message","message":{"role":"user","content":"late","timestamp":123456789012345678901234567890}}',
    b'{"type":"message","message":{"role":"user","content":"neg","timestamp":-1e400}}',
    b'{"type":"message","message":{"role":"assistant","content":"str time",'
    b'"timestamp":"2025-01-02T03:04:06Z"}}',
    b'{"type":"message","timestamp":7,"message":{"role":"assistant","content":"number entry time"}}',
    b'{"type":"message","message":{"role":"user","content":"dup","content":"second"}}',
    b'{"type":"message","message":{"role":"user","content":"\\u00e9\\ud83d\\ude00 escapes"}}',
]


@pytest.mark.parametrize("index", [False, True])
def test_the_quick_look_sums_up_lines_as_the_full_parse(index: bool) -> None:
    lines = [line(header("h"))[:-1], *ODD_LINES, *reversed(ODD_LINES)]
    quick = SessionSummary(messages=[] if index else None)
    quick_rows = read_lines(quick, lines)
    full = SessionSummary(messages=[] if index else None)
    full_rows = exact_lines(full, lines)
    assert quick.message_count == full.message_count > 0
    assert [getattr(quick, name) for name in SessionSummary.__slots__] == [
        getattr(full, name) for name in SessionSummary.__slots__
    ]
    assert quick_rows == full_rows


def test_the_quick_look_leaves_a_file_without_header_foreign() -> None:
    lines = [line(msg("t", "toolResult", "x"))[:-1], line(header("late"))[:-1]]
    quick, full = SessionSummary(), SessionSummary()
    assert read_lines(quick, lines) == ([], 0)
    feed_lines(full, lines)
    assert quick.foreign and full.foreign and quick.header is None


def test_a_large_folder_through_the_command_line(tmp_path: Path) -> None:
    # the console script, past the size where the pool starts by itself: same JSON as the scan
    agent = tmp_path / "agent"
    folder = agent / "sessions" / "--project--"
    sessions(folder, 40)
    for path in folder.iterdir():
        age(path)
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "PI_CODING_AGENT_DIR": str(agent),
        "PISESSION_CATALOG": str(tmp_path / "catalog.sqlite3"),
        "TZ": "UTC",
    }
    env.pop("PISESSION_WORKERS", None)
    run = [sys.executable, "-m", "pisession.cli"]
    cold = subprocess.run([*run, "ls", "--all", "--json"], env=env, capture_output=True, check=True)
    scan = subprocess.run(
        [*run, "ls", "--all", "--json", "--no-catalog"], env=env, capture_output=True, check=True
    )
    assert cold.stdout == scan.stdout and cold.stderr == b""
    assert len(json.loads(cold.stdout)) == 40


def test_a_worker_that_dies_leaves_its_files_to_this_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "sessions"
    odd_folder(folder)
    sessions(folder, 40)
    monkeypatch.setenv("PISESSION_WORKERS", "2")
    parent = os.getpid()
    read = refresh_module.read_new_file

    def dying(path: str, index: bool, *rest: Any) -> Any:
        if os.getpid() != parent and path.endswith("s3.jsonl"):
            os._exit(1)  # killed in the middle of its share
        return read(path, index, *rest)

    monkeypatch.setattr(refresh_module, "read_new_file", dying)
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))
        assert catalog.last_error is None
        report = usage_report("daily", session_dir=str(folder), timezone="UTC", catalog=catalog)
    monkeypatch.setenv("PISESSION_WORKERS", "1")
    assert report == usage_report("daily", session_dir=str(folder), timezone="UTC", catalog=False)
    assert not children()


def test_a_first_build_leaves_the_readers_imports_to_its_workers(tmp_path: Path) -> None:
    # msgspec is imported by each worker as it starts (the workers' imports run at once), never
    # by the process that writes the catalog (no fork here: a fork's parent's ids are read with
    # it), nor orjson, pathlib or pickle (a result crosses its pipe as its length and bytes); the
    # report is the one a single process makes
    folder = tmp_path / "sessions"
    folder.mkdir()
    for n in range(40):
        stamp = f"2025-02-{n % 28 + 1:02d}T10:00:00.000Z"
        write(folder / f"u{n}.jsonl", header(f"u-{n}", stamp=stamp), assistant("a", "ok", 0.25 * n, stamp))
    script = (
        "import json, sys\n"
        "READERS = ('msgspec', 'typing_extensions', 'orjson', 'pathlib', 'pickle')\n"
        "from pisession.usage import usage_report\n"
        "made = usage_report('daily', session_dir=sys.argv[1], timezone='UTC')\n"
        "print(json.dumps(made.to_wire(), sort_keys=True))\n"
        "print(sorted(name for name in READERS if name in sys.modules))\n"
    )
    outputs = []
    for workers in ("2", "1"):
        env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "PISESSION_WORKERS": workers,
            "PISESSION_CATALOG": str(tmp_path / f"catalog-{workers}.sqlite3"),
        }
        command = [sys.executable, "-c", script, str(folder)]
        run = subprocess.run(command, env=env, capture_output=True, check=True)
        outputs.append(run.stdout.decode().splitlines())
    (in_workers, in_workers_imported), (alone, alone_imported) = outputs
    assert json.loads(in_workers) == json.loads(alone) and json.loads(alone)["daily"]
    assert in_workers_imported == "[]"
    assert "msgspec" in alone_imported  # (the single process reads with it)


def test_a_workers_msgspec_goes_without_typing_extensions() -> None:
    pytest.importorskip("typing_extensions")
    script = (
        "import sys\n"
        "from pisession.catalog._fastread import _decoders, import_for_worker\n"
        "import_for_worker()\n"
        "print('msgspec' in sys.modules, 'typing_extensions' in sys.modules, _decoders() is not None)\n"
        "import typing_extensions\n"  # not kept out for whatever comes next
        "print(typing_extensions.__name__)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, check=True)
    assert run.stdout.decode().split() == ["True", "False", "True", "typing_extensions"]


def test_a_msgspec_that_needs_typing_extensions_is_imported_with_it(tmp_path: Path) -> None:
    pytest.importorskip("typing_extensions")
    fake = tmp_path / "fake" / "msgspec"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("import typing_extensions\nWITH = typing_extensions.__name__\n")
    script = (
        "import sys\n"
        f"sys.path.insert(0, {str(fake.parent)!r})\n"
        "from pisession.catalog._fastread import import_for_worker\n"
        "import_for_worker()\n"
        "print('msgspec' in sys.modules)\n"  # the failed import left nothing behind
        "import msgspec\n"
        "print(msgspec.WITH)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, check=True)
    assert run.stdout.decode().split() == ["False", "typing_extensions"]


def test_a_read_for_usage_alone_imports_no_orjson(tmp_path: Path) -> None:
    # a worker of a first report parses each header with the json module (loads_for: importing
    # orjson costs more than that one line) and keeps no text: it never imports orjson
    path = write(
        tmp_path / "s.jsonl",
        header("s"),
        msg("u", "user", "a question"),
        assistant("a", "an answer", 0.5),
        msg("t", "toolResult", [{"type": "text", "text": "ok"}]),
    )
    script = (
        "import sys\n"
        "from pisession.catalog._refresh import read_new_file, warm_up\n"
        "from pisession.catalog._schema import LISTING, USAGE\n"
        "warm_up()\n"
        "read = read_new_file(sys.argv[1], False, LISTING)\n"
        "print(len(read.prepared.sums), read.summary.header['id'], 'orjson' in sys.modules)\n"
        "read = read_new_file(sys.argv[1], False, USAGE)\n"  # (a listing keeps the text)
        "print(read.summary.first_message, 'orjson' in sys.modules)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = subprocess.run([sys.executable, "-c", script, str(path)], env=env, capture_output=True, check=True)
    assert run.stdout.decode().split("\n")[:2] == ["1 s False", "a question True"]


def _odd_reader(task: bytes) -> bytes:
    if task.startswith(b"fail"):
        raise ValueError(task)
    size = int(task.rpartition(b"-")[2])
    return (task * (size // len(task) + 1))[:size]


def test_each_result_crosses_its_pipe_whole_and_in_order(monkeypatch: pytest.MonkeyPatch) -> None:
    # a result is framed by its length: empty ones, ones longer than a pipe holds and failed
    # reads (None: read again in this process) keep their place
    from pisession.catalog._workers import prefetched

    monkeypatch.setenv("PISESSION_WORKERS", "3")
    sizes = [0, 1, 9, 70_000, 200_000] * 8
    tasks = [f"{'fail' if n % 7 == 3 else 'p'}{n}-{size}".encode() for n, size in enumerate(sizes)]
    tasks += [b"p" * 100_000 + b"-9"]  # (a task longer than a pipe holds)
    with prefetched(tasks, _odd_reader, lambda: None) as results:
        got = list(results)
    assert got == [None if task.startswith(b"fail") else _odd_reader(task) for task in tasks]
    assert not children()


def _workers_when_statted(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many child processes there were as each refresh began to stat its files."""
    from pisession.catalog import _candidates

    seen: list[int] = []
    stat_files = _candidates.candidates

    def counted(*args: Any) -> Any:
        seen.append(len(children()))
        return stat_files(*args)

    monkeypatch.setattr(refresh_module, "candidates", counted)
    return seen


def test_a_first_build_forks_its_workers_before_it_stats_its_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # their imports run while it stats the files; a later build of a new folder forks its own
    # in its write pass, once it knows which files it reads
    first, second = tmp_path / "first", tmp_path / "second"
    sessions(first, 40)
    sessions(second, 40)
    monkeypatch.setenv("PISESSION_WORKERS", "2")
    seen = _workers_when_statted(monkeypatch)
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        assert catalog.list_all(str(first)) == list_all_sessions(str(first))
        assert catalog.list_all(str(second)) == list_all_sessions(str(second))
        assert catalog.last_report.read == 40
    assert seen == [2, 0]
    assert not children()


@pytest.mark.parametrize("why", ["too large", "no folder of sessions", "a write pass that fails"])
def test_workers_forked_for_a_first_build_that_reads_nothing_are_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, why: str
) -> None:
    folder = tmp_path / "sessions"
    sessions(folder, 40)
    monkeypatch.setenv("PISESSION_WORKERS", "2")
    seen = _workers_when_statted(monkeypatch)
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        connection = catalog._connect()
        if why == "too large":
            found, report = refresh_module.current(
                connection, catalog.fts, [str(folder)], None, None, max_size=10
            )
            assert found == [] and len(report.skipped) == 40
        elif why == "no folder of sessions":
            found, _ = refresh_module.current(connection, catalog.fts, [str(tmp_path / "none")], None, None)
            assert found == []
        else:

            def failing(*args: Any) -> Any:
                raise OSError("the disk went away")

            monkeypatch.setattr(refresh_module, "_write_pass", failing)
            with pytest.raises(OSError):
                refresh_module.current(connection, catalog.fts, [str(folder)], None, None)
        refresh_module.finish(connection)
    assert seen == ([0] if why == "no folder of sessions" else [2])
    assert not children()


def _timed_reader(log: str) -> Any:
    """A reader whose task 0 takes a second; each task's number is logged as it starts, and
    its result is the number and the pid of the worker that read it."""

    def read(task: bytes) -> bytes:
        with open(log, "a") as out:
            out.write(task.decode() + "\n")
        if task == b"0":
            time.sleep(1.0)
        return task + b" " + str(os.getpid()).encode()

    return read


def test_a_worker_held_up_takes_fewer_tasks_and_the_rest_wait_within_bounds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # tickets go to whichever worker asks first: the one held up by task 0 takes no other while
    # the rest are read; and no more than _AHEAD tasks are handed out past the one awaited
    from pisession.catalog import _workers
    from pisession.catalog._workers import prefetched

    monkeypatch.setenv("PISESSION_WORKERS", "2")
    log = str(tmp_path / "started")
    tasks = [str(n).encode() for n in range(300)]
    started_before_first: list[int] = []
    readers: list[bytes] = []
    with prefetched(tasks, _timed_reader(log), lambda: None) as results:
        for n, result in enumerate(results):
            assert result is not None and result.split()[0] == tasks[n]
            if n == 0:
                with open(log) as handle:
                    started_before_first.append(len(handle.read().split()))
            readers.append(result.split()[1])
    assert started_before_first[0] <= _workers._AHEAD + 2
    slow = readers[0]
    # while held up it took none of the tickets out; who takes those issued after is the
    # scheduler's choice (on a loaded machine one worker may take them all)
    assert sum(1 for reader in readers[1 : _workers._AHEAD] if reader == slow) == 0
    assert not children()


@pytest.mark.parametrize("files", [40, 1])
def test_a_new_catalog_forks_its_workers_before_it_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, files: int
) -> None:
    # they import while the file and its tables are made; a folder of one file forks none
    import pisession.catalog._catalog as catalog_module

    folder = tmp_path / "sessions"
    sessions(folder, files)
    monkeypatch.setenv("PISESSION_WORKERS", "2")
    seen: list[int] = []
    connect = catalog_module.connect  # type: ignore[attr-defined]

    def counted(*args: Any) -> Any:
        seen.append(len(children()))
        return connect(*args)

    monkeypatch.setattr(catalog_module, "connect", counted)
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))
    assert seen == [2 if files > 1 else 0]
    assert not children()


def test_workers_forked_for_a_catalog_that_cannot_be_made_are_ended(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import sqlite3

    import pisession.catalog._catalog as catalog_module

    folder = tmp_path / "sessions"
    sessions(folder, 40)
    monkeypatch.setenv("PISESSION_WORKERS", "2")

    def failing(*args: Any) -> Any:
        assert len(children()) == 2
        raise sqlite3.OperationalError("unable to open database file")

    monkeypatch.setattr(catalog_module, "connect", failing)
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))  # read as Pi does
        assert catalog.last_error is not None
    assert not children()
