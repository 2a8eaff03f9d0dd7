"""Following without writing (issue 31, item 4): ``read_session(path)`` views that refresh and
follow, and ``FolderFollower`` / ``follow_folder`` over every session of a folder. The reader
never writes, creates, locks or repairs anything: each test that reads compares the folder's
bytes, names and mtimes with what the writers alone made of it."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import ORACLE, needs_oracle

import pisession
from pisession import (
    FolderEntry,
    FolderFollower,
    InvalidSessionError,
    SessionReplacedError,
    follow_folder,
    read_session,
)
from pisession.aio import AsyncSessionManager

REPO = str(Path(__file__).resolve().parents[1])
HANG_GUARD = 120.0  # seconds; only ever reached when something deadlocks

HEADER = {
    "type": "session",
    "version": 3,
    "id": "0191a000-0000-7000-8000-000000000001",
    "timestamp": "2026-01-01T00:00:00.000Z",
    "cwd": "/project",
}


def header(session_id: str = HEADER["id"]) -> bytes:
    return json.dumps({**HEADER, "id": session_id}).encode() + b"\n"


def line(n: int, kind: str = "x") -> bytes:
    """A custom entry as Pi writes one (a writer that takes no lock)."""
    entry = {
        "type": "custom",
        "customType": kind,
        "data": {"n": n},
        "id": f"{n:08x}",
        "parentId": None if n == 0 else f"{n - 1:08x}",
        "timestamp": "2026-01-01T00:00:00.000Z",
    }
    return json.dumps(entry).encode() + b"\n"


def ids(entries: list[pisession.Entry]) -> list[str]:
    return [e.id for e in entries]


def expected(first: int, end: int) -> list[str]:
    return [f"{n:08x}" for n in range(first, end)]


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as handle:
        handle.write(data)


def snapshot(folder: Path) -> dict[str, tuple[bytes, int]]:
    return {
        str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else b"", p.stat().st_mtime_ns)
        for p in sorted(folder.rglob("*"))
    }


def session(tmp_path: Path, lines: int = 2) -> Path:
    path = tmp_path / "s.jsonl"
    path.write_bytes(header() + b"".join(line(n) for n in range(lines)))
    return path


# -- a read-only view follows ---------------------------------------------------------------------


@pytest.mark.parametrize("low_memory", [False, True])
def test_refresh_returns_what_another_writer_appended_once(tmp_path: Path, low_memory: bool) -> None:
    path = session(tmp_path)
    view = read_session(path, low_memory=low_memory)
    assert view.refresh() == []
    append(path, line(2) + line(3))
    before = snapshot(tmp_path)
    assert ids(view.refresh()) == expected(2, 4)
    assert view.refresh() == []
    assert ids(view.get_entries()) == expected(0, 4)
    append(path, line(4))
    stop = threading.Event()
    stop.set()  # reads to the end, hands over what is there, ends
    assert ids(list(view.follow(stop=stop))) == expected(4, 5)
    before = {**before, "s.jsonl": (path.read_bytes(), path.stat().st_mtime_ns)}
    view.close()
    assert snapshot(tmp_path) == before
    assert not list(tmp_path.glob("*.lock"))


def test_a_torn_last_line_is_delivered_once_it_is_whole(tmp_path: Path) -> None:
    path = session(tmp_path)
    append(path, line(2)[:20])
    view = read_session(path)  # opened while the line is arriving: not an entry yet
    assert ids(view.get_entries()) == expected(0, 2)
    assert view.refresh() == []
    append(path, line(2)[20:-1])
    assert view.refresh() == []
    append(path, b"\n" + line(3))
    assert ids(view.refresh()) == expected(2, 4)
    assert view.refresh() == []
    assert path.read_bytes() == header() + b"".join(line(n) for n in range(4))


@pytest.mark.parametrize("how", ["break", "raise"])
def test_a_follow_left_early_leaves_the_rest(tmp_path: Path, how: str) -> None:
    path = session(tmp_path)
    view = read_session(path)
    append(path, b"".join(line(n) for n in range(2, 12)))
    got: list[str] = []
    try:
        for entry in view.follow(notify=False):
            got.append(entry.id)
            if how == "raise":
                raise KeyError(entry.id)
            break
    except KeyError:
        pass
    assert got == expected(2, 3)
    assert ids(view.refresh()) == expected(3, 12)


def test_a_shrunk_file_is_read_again(tmp_path: Path) -> None:
    path = session(tmp_path, 4)
    view = read_session(path)
    # Rewritten shorter (the same session), then one more line: only that one is new.
    path.write_bytes(header() + line(0) + line(4))
    assert ids(view.refresh()) == expected(4, 5)
    assert view.refresh() == []


def test_a_replaced_or_deleted_file_is_a_clear_error(tmp_path: Path) -> None:
    path = session(tmp_path)
    view = read_session(path)
    replacement = tmp_path / "other.jsonl"
    replacement.write_bytes(header("0191a000-0000-7000-8000-0000000000ff") + line(7))
    replacement.replace(path)
    with pytest.raises(SessionReplacedError):
        view.refresh()
    path = session(tmp_path)
    view = read_session(path)
    path.unlink()
    with pytest.raises(InvalidSessionError, match="disappeared"):
        view.refresh()


def test_an_empty_file_is_refused_unless_allowed(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"")
    with pytest.raises(InvalidSessionError, match="empty"):
        read_session(path)
    view = read_session(path, allow_empty=True)
    assert view.get_header() is None and view.refresh() == []
    append(path, header()[:30])  # Pi writing the header
    assert view.refresh() == [] and view.get_header() is None
    append(path, header()[30:] + line(0) + line(1)[:10])
    assert ids(view.refresh()) == expected(0, 1)
    header_now = view.get_header()
    assert header_now is not None and header_now.id == HEADER["id"]
    assert view.get_cwd() == "/project"
    append(path, line(1)[10:])
    assert ids(view.refresh()) == expected(1, 2)
    assert path.read_bytes() == header() + line(0) + line(1)
    assert not list(tmp_path.glob("*.lock"))


def test_a_header_only_file_is_followed(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(header())
    view = read_session(path)
    assert view.get_entries() == []
    append(path, line(0))
    assert ids(view.refresh()) == expected(0, 1)


AWKWARD = {
    "empty.jsonl": b"",
    "header-only.jsonl": header(),
    "no-final-newline.jsonl": header() + line(0)[:-1],
    "torn.jsonl": header() + line(0) + line(1)[:15],
    "version-1.jsonl": json.dumps(
        {"type": "session", "id": "v1", "timestamp": "2026-01-01T00:00:00.000Z", "cwd": "/p"}
    ).encode()
    + b"\n"
    + json.dumps(
        {
            "type": "message",
            "timestamp": "2026-01-01T00:00:00.000Z",
            "message": {"role": "user", "content": "hi", "timestamp": 1},
        }
    ).encode()
    + b"\n",
    "not-a-session.jsonl": b'{"hello": 1}\n',
    "read-only.jsonl": header() + line(0),
}


def awkward_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "sessions"
    (folder / "--project--").mkdir(parents=True)
    for name, data in AWKWARD.items():
        (folder / "--project--" / name).write_bytes(data)
    (folder / "--project--" / "read-only.jsonl").chmod(0o400)
    return folder


def test_reading_and_following_awkward_files_writes_nothing(tmp_path: Path) -> None:
    folder = awkward_folder(tmp_path)
    before = snapshot(folder)
    stop = threading.Event()
    stop.set()
    for path in sorted((folder / "--project--").iterdir()):
        for low_memory in (False, True):
            try:
                view = read_session(path, allow_empty=True, low_memory=low_memory)
            except InvalidSessionError:
                assert path.name == "not-a-session.jsonl"
                continue
            view.refresh()
            list(view.follow(stop=stop))
            view.append_custom_entry("in-memory")  # appends stay in memory
            view.refresh()
            view.close()
    with FolderFollower(folder, from_start=True) as follower:
        events = follower.refresh()
        events += list(follower.follow(stop=stop))
    assert snapshot(folder) == before
    assert not list(folder.rglob("*.lock")) and not list(folder.rglob(".pisession-*"))
    names = sorted({Path(e.path).name for e in events})
    assert names == ["no-final-newline.jsonl", "read-only.jsonl", "torn.jsonl", "version-1.jsonl"]


# -- another process appends ----------------------------------------------------------------------

APPENDER = r"""
import sys, time, json
path, start, count = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
for n in range(start, start + count):
    entry = {"type": "custom", "customType": "x", "data": {"n": n}, "id": f"{n:08x}",
             "parentId": f"{n - 1:08x}", "timestamp": "2026-01-01T00:00:00.000Z"}
    data = (json.dumps(entry) + "\n").encode()
    with open(path, "ab", buffering=0) as f:  # Pi's appendFileSync, here torn in two writes
        f.write(data[: len(data) // 2])
        time.sleep(0.0005)
        f.write(data[len(data) // 2 :])
print("done")
"""


def test_a_view_follows_another_process_every_entry_once_in_order(tmp_path: Path) -> None:
    path = session(tmp_path)
    view = read_session(path)
    seen: list[str] = []

    def collect(stop: threading.Event, limit: int | None) -> None:
        for entry in view.follow(poll_interval=0.001, stop=stop):
            seen.append(entry.id)
            if limit is not None and len(seen) % limit == 0:
                break  # a reader that keeps giving up and coming back

    child = subprocess.Popen([sys.executable, "-c", APPENDER, str(path), "2", "300"], stdout=subprocess.PIPE)
    try:
        while child.poll() is None:
            stop = threading.Event()
            timer = threading.Timer(0.01, stop.set)
            timer.start()
            try:
                collect(stop, 7)
            finally:
                timer.cancel()
    finally:
        out, _ = child.communicate(timeout=HANG_GUARD)
    assert out.strip() == b"done"
    stop = threading.Event()
    stop.set()
    collect(stop, None)
    assert seen == expected(2, 302)


def test_an_async_view_loses_nothing_to_cancellation(tmp_path: Path) -> None:
    path = session(tmp_path)
    manager = AsyncSessionManager(read_session(path))

    async def main() -> list[str]:
        got: list[str] = []
        append(path, b"".join(line(n) for n in range(2, 42)))

        async def consume() -> None:
            async for entry in manager.follow(notify=False):
                got.append(entry.id)
                if len(got) % 5 == 0:
                    await asyncio.sleep(3600)  # cancelled here

        for _ in range(12):
            task = asyncio.ensure_future(consume())
            await asyncio.sleep(0.05)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        got.extend(ids(await manager.refresh()))
        await manager.close()
        return got

    assert asyncio.run(main()) == expected(2, 42)


# -- every session of a folder --------------------------------------------------------------------


def test_a_folder_follower_sees_appends_and_new_files(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    (folder / "--a--").mkdir(parents=True)
    old = folder / "--a--" / "old.jsonl"
    old.write_bytes(header() + line(0))
    follower = FolderFollower(folder)
    assert follower.refresh() == []  # files there at the start: followed from their end
    append(old, line(1))
    new = folder / "--b--" / "new.jsonl"  # a new project's folder, then Pi creating a session
    new.parent.mkdir()
    new.write_bytes(b"")
    flat = folder / "flat.jsonl"
    flat.write_bytes(header("0191a000-0000-7000-8000-000000000002") + line(0, "flat"))
    (folder / "notes.txt").write_text("not a session")
    events = follower.refresh()
    assert [(Path(p).name, e.id) for p, e in events] == [
        ("old.jsonl", "00000001"),
        ("flat.jsonl", "00000000"),
    ]
    assert all(isinstance(e, FolderEntry) for e in events)
    append(new, header("0191a000-0000-7000-8000-000000000003") + line(0) + line(1))
    old.unlink()  # a deleted session is dropped
    stop = threading.Event()
    stop.set()
    got = [(Path(p).name, e.id) for p, e in follower.follow(stop=stop)]
    assert got == [("new.jsonl", "00000000"), ("new.jsonl", "00000001")]
    assert str(old) not in follower.paths
    follower.close()
    assert not list(folder.rglob("*.lock"))


@pytest.mark.parametrize("notify", [True, False])
def test_follow_folder_every_entry_once_while_another_process_writes(tmp_path: Path, notify: bool) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    path = folder / "s.jsonl"
    path.write_bytes(header() + line(0))
    stop = threading.Event()
    seen: list[str] = []
    failure: list[BaseException] = []
    done = threading.Event()

    def collect() -> None:
        try:
            for item in follow_folder(folder, poll_interval=0.001, stop=stop, notify=notify):
                seen.append(item.entry.id)
                if len(seen) == 200:
                    done.set()
        except BaseException as error:
            failure.append(error)
            done.set()

    thread = threading.Thread(target=collect, daemon=True)
    thread.start()
    child = subprocess.run(
        [sys.executable, "-c", APPENDER, str(path), "1", "200"], capture_output=True, timeout=HANG_GUARD
    )
    assert child.stdout.strip() == b"done"
    done.wait(HANG_GUARD)
    stop.set()
    thread.join(HANG_GUARD)
    assert not thread.is_alive() and not failure, failure
    assert seen == expected(1, 201)


def test_a_folder_follower_left_early_leaves_the_rest(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    follower = FolderFollower(folder)
    (folder / "a.jsonl").write_bytes(header() + b"".join(line(n) for n in range(5)))
    got = []
    for _, entry in follower.follow(notify=False):
        got.append(entry.id)
        if len(got) == 2:
            break
    assert got == expected(0, 2)
    assert [e.id for _, e in follower.refresh()] == expected(2, 5)


@pytest.mark.parametrize("how", ["deleted", "replaced"])
def test_what_a_follow_left_survives_its_file_going(tmp_path: Path, how: str) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    follower = FolderFollower(folder)
    path = folder / "a.jsonl"
    path.write_bytes(header() + b"".join(line(n) for n in range(5)))
    for _, entry in follower.follow(notify=False):
        assert entry.id == expected(0, 1)[0]
        break
    if how == "deleted":
        path.unlink()
        assert [e.id for _, e in follower.refresh()] == expected(1, 5)
    else:
        other = folder / "b.tmp"
        other.write_bytes(header("0191a000-0000-7000-8000-0000000000ff") + line(9))
        other.replace(path)
        assert [e.id for _, e in follower.refresh()] == [*expected(1, 5), "00000009"]
    assert follower.refresh() == []


def test_afollow_loses_nothing_to_cancellation(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    follower = FolderFollower(folder)

    async def main() -> list[str]:
        got: list[str] = []
        (folder / "a.jsonl").write_bytes(header() + b"".join(line(n) for n in range(30)))

        async def consume() -> None:
            async for _, entry in follower.afollow(poll_interval=0.01):
                got.append(entry.id)
                if len(got) % 4 == 0:
                    await asyncio.sleep(3600)

        for _ in range(10):
            task = asyncio.ensure_future(consume())
            await asyncio.sleep(0.05)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
        got.extend(e.id for _, e in follower.refresh())
        return got

    assert asyncio.run(main()) == expected(0, 30)


def test_a_missing_folder_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="No such folder"):
        FolderFollower(tmp_path / "nowhere")
    (tmp_path / "file").write_text("")
    with pytest.raises(NotADirectoryError):
        FolderFollower(tmp_path / "file")


@needs_oracle
def test_pi_creating_a_session_in_a_followed_folder(tmp_path: Path) -> None:
    """Pi's own writer (1.6.0, through the oracle) creates a session while the folder is
    followed: the follower hands over each of Pi's entries once, and writes nothing."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    follower = FolderFollower(folder)
    script = tmp_path / "ops.json"
    assistant = {
        "role": "assistant",
        "content": [{"type": "text", "text": "hello"}],
        "api": "x",
        "provider": "p",
        "model": "m",
        "stopReason": "stop",
        "timestamp": 2,
        "usage": {
            "input": 1,
            "output": 1,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": 2,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
        },
    }
    script.write_text(
        json.dumps(
            {
                "cwd": "/project",
                "ops": [
                    {"op": "appendMessage", "args": [{"role": "user", "content": "hi", "timestamp": 1}]},
                    {"op": "appendMessage", "args": [assistant]},
                    {"op": "appendLabelChange", "args": ["$0", "start"]},
                ],
            }
        )
    )
    result = subprocess.run(
        ["node", str(ORACLE), "ops", str(script), "--dir", str(folder)],
        capture_output=True,
        text=True,
        timeout=HANG_GUARD,
        check=True,
    )
    out = json.loads(result.stdout)
    files = list(folder.rglob("*"))
    assert [str(f) for f in files] == [out["file"]]
    before = snapshot(folder)
    events = follower.refresh()
    written = [json.loads(x) for x in Path(out["file"]).read_text().splitlines()[1:]]
    assert [(p, e.id) for p, e in events] == [(out["file"], w["id"]) for w in written]
    assert [e.type for _, e in events] == ["message", "message", "label"]
    assert follower.refresh() == []
    follower.close()
    assert snapshot(folder) == before


# -- pisession tail -------------------------------------------------------------------------------


def test_tail_follows_an_unfinished_last_line_without_writing(tmp_path: Path) -> None:
    """`pisession tail` follows through a read-only view: a line still being written is shown
    once whole (it used to refuse the file), and nothing is written or locked."""
    import signal

    folder = tmp_path / "sessions"
    folder.mkdir()
    path = folder / "s.jsonl"
    path.write_bytes(header() + line(0) + line(1)[:12])
    code = "import sys; from pisession.cli import main; sys.exit(main(sys.argv[1:]))"
    process = subprocess.Popen(
        [sys.executable, "-c", code, "tail", str(path), "--interval", "0.05", "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": REPO},
    )
    try:
        assert process.stdout is not None
        assert json.loads(process.stdout.readline())["id"] == "00000000"
        append(path, line(1)[12:])
        assert json.loads(process.stdout.readline())["id"] == "00000001"
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=HANG_GUARD) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert path.read_bytes() == header() + line(0) + line(1)
    assert sorted(p.name for p in folder.iterdir()) == ["s.jsonl"]
