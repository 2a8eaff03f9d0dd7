"""Crash consistency: torn last lines, and a writer killed with SIGKILL mid-stream."""

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

from pisession import SessionManager, _store
from pisession._lock import SessionLock

REPO = str(Path(__file__).resolve().parents[1])
HANG_GUARD = 120.0


@pytest.fixture(autouse=True)
def _torn_lines_are_not_waited_for(monkeypatch: pytest.MonkeyPatch) -> None:
    """The torn lines here are written by the test itself, whose writer is done: no line is
    still arriving, so the wait for one (0.25 s per torn file, see test_write_safety.py) would
    only slow these byte-by-byte loops down."""
    monkeypatch.setattr(_store, "PARTIAL_QUIET_S", 0.0)


def user(text: str, ts: int = 1) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": ts}


def written_session(tmp_path: Path) -> bytes:
    """A session written by pisession whose last lines hold multi-byte UTF-8 and U+2028."""
    manager = SessionManager.create("/project", tmp_path / "source")
    manager.append_message(user("first"))
    manager.append_model_change("anthropic", "claude")
    manager.append_message(user("naïve café — ünïcödé \u2028 line separator, emoji 🎉", 2))
    manager.append_custom_entry("state", {"k": [1, 2.5, None, "ß"], "nested": {"x": "\u2029"}})
    path = manager.get_session_file()
    assert path is not None
    return Path(path).read_bytes()


def complete_entries(data: bytes) -> list[dict[str, Any]]:
    """What a reader must recover: every line present in full (with or without its "\\n")."""
    out = []
    for line in data.split(b"\n"):
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if value.get("type") != "session":
            out.append(value)
    return out


def line_starts(data: bytes) -> list[int]:
    starts = [0]
    starts.extend(i + 1 for i, byte in enumerate(data) if byte == 0x0A and i + 1 < len(data))
    return starts


def test_truncated_at_every_byte_of_the_last_two_lines(tmp_path: Path) -> None:
    full = written_session(tmp_path)
    starts = line_starts(full)
    path = tmp_path / "cut.jsonl"
    for cut in range(starts[-2], len(full) + 1):
        data = full[:cut]
        expected = complete_entries(data)
        path.write_bytes(data)
        manager = SessionManager.open(path)
        assert [e.id for e in manager.get_entries()] == [e["id"] for e in expected], cut
        assert manager.get_leaf_id() == expected[-1]["id"]

        new_id = manager.append_message(user("after the crash", 3))
        manager.close()
        after = path.read_bytes()
        assert after.startswith(data)
        lines = after.split(b"\n")
        assert lines[-1] == b"", "the file ends with a newline"
        last = json.loads(lines[-2])
        assert last["id"] == new_id and last["parentId"] == expected[-1]["id"], cut
        # Only the torn line itself may be unreadable, and it is closed before the new line.
        bad = [line for line in lines[:-1] if not _valid(line)]
        torn = data[data.rfind(b"\n") + 1 :]
        assert bad == ([torn] if torn and not _valid(torn) else []), cut
        reopened = SessionManager.open(path)
        assert [e.id for e in reopened.get_entries()] == [*(e["id"] for e in expected), new_id]


def test_a_torn_line_appearing_under_an_open_manager_is_closed_by_its_next_append(tmp_path: Path) -> None:
    """Another writer died mid-line while this manager had the file open."""
    full = written_session(tmp_path)
    starts = line_starts(full)
    path = tmp_path / "torn.jsonl"
    head, last_line = full[: starts[-1]], full[starts[-1] :]
    assert last_line.endswith(b"\n")
    for cut in range(0, len(last_line)):  # the whole line with its newline is no tear
        path.write_bytes(head)
        manager = SessionManager.open(path)
        leaf = manager.get_leaf_id()
        with open(path, "ab") as handle:
            handle.write(last_line[:cut])
        new_id = manager.append_message(user("next", 4))
        lines = path.read_bytes().split(b"\n")
        assert lines[-1] == b""
        last = json.loads(lines[-2])
        assert last["id"] == new_id and last["parentId"] == leaf, cut
        expected = [e["id"] for e in complete_entries(path.read_bytes())]
        # The manager's view is the file's, including an entry whose writer died just before
        # writing its "\n" (our newline completed it).
        assert [e.id for e in manager.get_entries()] == expected, cut
        assert [e.id for e in SessionManager.open(path).get_entries()] == expected
        manager.close()


def test_a_file_saved_without_its_final_newline_meanwhile_is_not_glued_onto(tmp_path: Path) -> None:
    full = written_session(tmp_path)
    path = tmp_path / "edited.jsonl"
    path.write_bytes(full)
    manager = SessionManager.open(path)
    # An editor rewrites the file without the final newline (a new inode at the path).
    temp = tmp_path / "edited.tmp"
    temp.write_bytes(full.rstrip(b"\n"))
    os.replace(temp, path)
    new_id = manager.append_message(user("after the edit"))
    expected = [e["id"] for e in complete_entries(full)]
    assert [e["id"] for e in complete_entries(path.read_bytes())] == [*expected, new_id]
    assert [e.id for e in manager.get_entries()] == [*expected, new_id]


def test_a_newline_another_writer_added_meanwhile_is_not_doubled(tmp_path: Path) -> None:
    full = written_session(tmp_path)
    path = tmp_path / "edited.jsonl"
    path.write_bytes(full)
    first = SessionManager.open(path)
    temp = tmp_path / "edited.tmp"
    temp.write_bytes(full.rstrip(b"\n"))
    os.replace(temp, path)
    first.refresh()  # re-reads the replaced file, which lacks its final newline
    second = SessionManager.open(path)  # repairs the newline, then appends
    theirs = second.append_message(user("second"))
    mine = first.append_message(user("first"))
    data = path.read_bytes()
    assert b"\n\n" not in data, "a blank line: the newline was written twice"
    expected = [e["id"] for e in complete_entries(full)]
    assert [e["id"] for e in complete_entries(data)] == [*expected, theirs, mine]
    assert [e.id for e in first.get_entries()] == [*expected, theirs, mine]


def _valid(line: bytes) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


# ---------------------------------------------------------------------------------------------
# SIGKILL in the middle of a stream of appends

KILLED_WRITER = r"""
import sys
sys.path.insert(0, REPO)
from pisession import SessionManager

path, batch = sys.argv[1], sys.argv[2] == "batch"
manager = SessionManager.open(path)


def one(i):
    # Now and then a large line, so the kill can land inside a write.
    filler = "x" * (1_000_000 if i % 5 == 4 else 100)
    manager.append_message({"role": "user", "content": f"{i}:{filler}", "timestamp": i})


i = 0
if batch:
    with manager.batch():  # killed while holding the lock
        while True:
            one(i)
            i += 1
while True:
    one(i)
    i += 1
"""


@pytest.mark.parametrize("mode", ["append", "batch", "append-again"])
def test_writer_killed_mid_stream_leaves_a_loadable_file_and_a_free_lock(tmp_path: Path, mode: str) -> None:
    manager = SessionManager.create("/project", tmp_path / "sessions")
    manager.append_message(user("seed", 0))
    path = manager.get_session_file()
    assert path is not None
    manager.close()
    script = tmp_path / "writer.py"
    script.write_text(f"REPO = {REPO!r}\n" + KILLED_WRITER)
    child = subprocess.Popen(
        [sys.executable, str(script), path, "batch" if mode == "batch" else "append"],
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + HANG_GUARD
        # Wait until the stream is well under way (and past a few large lines).
        lines, offset = 0, 0
        with open(path, "rb") as handle:
            while lines < 25 + (7 if mode == "append-again" else 0):
                assert child.poll() is None, child.communicate()[1]
                assert time.monotonic() < deadline, "writer made no progress"
                handle.seek(offset)
                fresh = handle.read()
                offset += len(fresh)
                lines += fresh.count(b"\n")
                time.sleep(0.002)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait()
    assert child.returncode == -signal.SIGKILL

    # The kernel dropped the dead writer's flock: the lock is free at once.
    with SessionLock(path + ".lock", timeout=5):
        pass

    data = Path(path).read_bytes()
    lines = data.split(b"\n")
    complete = lines[:-1]
    assert all(_valid(line) for line in complete), "only the line being written may be torn"
    texts = [e["message"]["content"] for e in complete_entries(data)]
    assert texts[0] == "seed"
    numbers = [int(text.split(":", 1)[0]) for text in texts[1:]]
    # Every entry the writer finished is there, in order; at most the one being written is not.
    assert numbers == list(range(len(numbers)))
    assert len(numbers) >= 23  # 25 lines were seen: the header, the seed and 23 appends

    reader = SessionManager.open(path)
    ids = [e.id for e in reader.get_entries()]
    assert len(ids) == len(texts)
    other = SessionManager.open(path)
    new_id = other.append_message(user("survivor"))
    final = SessionManager.open(path)
    assert [e.id for e in final.get_entries()] == [*ids, new_id]
    assert final.get_entry(new_id).parent_id == ids[-1]  # type: ignore[union-attr]


# ---------------------------------------------------------------------------------------------
# Migration rewrites: a temporary file renamed into place

V1 = (
    b'{"type":"session","id":"old","timestamp":"2024-12-03T14:00:00.000Z","cwd":"/project"}\n'
    b'{"type":"message","timestamp":"2024-12-03T14:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}\n'
    b'{"type":"message","timestamp":"2024-12-03T14:00:02.000Z","message":{"role":"hookMessage","content":"h","timestamp":2}}\n'
)


def leftovers(folder: Path) -> list[str]:
    return [p.name for p in folder.iterdir() if p.name.startswith(".pisession-") or p.name.endswith(".tmp")]


def test_a_migration_goes_through_a_temporary_file_and_a_rename(tmp_path: Path) -> None:
    path = tmp_path / "v1.jsonl"
    path.write_bytes(V1)
    os.chmod(path, 0o600)
    old = tmp_path / "old-inode"
    os.link(path, old)  # a second name keeps the old inode alive, and shows it was not edited in place
    inode = path.stat().st_ino
    manager = SessionManager.open(path)
    assert path.stat().st_ino != inode
    assert old.read_bytes() == V1
    assert leftovers(tmp_path) == []
    assert os.stat(path).st_mode & 0o777 == 0o600
    lines = [json.loads(raw) for raw in path.read_bytes().splitlines()]
    assert lines[0]["version"] == 3
    assert [e["parentId"] for e in lines[1:]] == [None, lines[1]["id"]]
    assert lines[2]["message"]["role"] == "custom"
    assert [e.id for e in manager.get_entries()] == [lines[1]["id"], lines[2]["id"]]


def test_a_crash_before_the_rename_leaves_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "v1.jsonl"
    path.write_bytes(V1)
    inode = path.stat().st_ino

    def crash(*args: Any, **kwargs: Any) -> None:
        raise OSError("simulated crash before the rename")

    with monkeypatch.context() as patch:
        patch.setattr(os, "replace", crash)
        with pytest.raises(OSError, match="simulated crash"):
            SessionManager.open(path)
    assert path.read_bytes() == V1 and path.stat().st_ino == inode
    assert leftovers(tmp_path) == []
    # Nothing was half done: the next open migrates as if the crash never happened.
    assert SessionManager.open(path).get_header().version == 3  # type: ignore[union-attr]
