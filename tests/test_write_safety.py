"""Write safety (issue 10): what a rewrite keeps, new files that appear whole, failures that
change nothing, another session swapped in, another writer's half line, a cut newline.

The migration's byte-for-byte agreement with Pi on lines pisession does not index is checked
against golden data (conformance read cases ``v1_unparsed_lines``, ``v2_unparsed_lines``,
``v1_number_line``, ``v2_deep_entries``); these tests cover the write paths around it.
"""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import pytest

import pisession
from pisession import PisessionError, SessionManager, _store
from pisession._store import SessionFile
from pisession.cli import main

REPO = str(Path(__file__).resolve().parents[1])


class ERR:
    SessionReplacedError: Any = getattr(pisession, "SessionReplacedError", PisessionError)
STAMP = "2024-12-03T14:00:00.000Z"


def line(value: dict[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def header(sid: str = "0193a0b0-0000-7000-8000-00000000abcd", version: int = 3) -> bytes:
    return line({"type": "session", "version": version, "id": sid, "timestamp": STAMP, "cwd": "/project"})


def message(eid: str, parent: str | None, text: str = "x", role: str = "user") -> bytes:
    body: dict[str, Any] = {"role": role, "content": text, "timestamp": 1}
    if role == "assistant":
        body["content"] = [{"type": "text", "text": text}]
    return line({"type": "message", "id": eid, "parentId": parent, "timestamp": STAMP, "message": body})


def deep_json(depth: int) -> str:
    """A value nested ``depth`` levels as JSON.stringify writes it (built without recursion)."""
    opening = "".join("[" if level % 2 else '{"k":' for level in reversed(range(depth)))
    closing = "".join("]" if level % 2 else "}" for level in range(depth))
    return opening + '"bottom"' + closing


def deep_entry(eid: str, parent: str, depth: int) -> bytes:
    head = f'{{"type":"custom","id":"{eid}","parentId":"{parent}","timestamp":"{STAMP}","customType":"deep"'
    return (head + ',"data":' + deep_json(depth) + "}\n").encode()


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 1}


def valid_lines(data: bytes) -> list[dict[str, Any]]:
    """Every line of ``data``: each must be a JSON object, none blank, the file ends with "\\n"."""
    assert data.endswith(b"\n")
    out = []
    for raw in data[:-1].split(b"\n"):
        assert raw, "a blank line"
        value = json.loads(raw)
        assert isinstance(value, dict), raw[:80]
        out.append(value)
    return out


def session_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.jsonl"))


# ------------------------------------------------------------------ 2. deep entries are written


DEPTHS = (600, 1000)  # past the recursive encoder's reach, within the line scanner's


def deep_session(path: Path, version: int = 3) -> list[bytes]:
    lines = [
        header(version=version),
        message("a0000001", None, "question"),
        deep_entry("d0000600", "a0000001", DEPTHS[0]),
        deep_entry("d0001000", "d0000600", DEPTHS[1]),
        message("a0000002", "d0001000", "answer", role="assistant"),
    ]
    path.write_bytes(b"".join(lines))
    return lines


def test_deep_entries_survive_fork_from_and_create_branched_session(tmp_path: Path) -> None:
    source = tmp_path / "deep.jsonl"
    lines = deep_session(source)
    fork = SessionManager.fork_from(source, "/elsewhere", tmp_path / "forks")
    fork_lines = Path(fork.get_session_file() or "").read_bytes().splitlines(keepends=True)
    # Pi writes JSON.stringify(JSON.parse(line)): for these lines (Pi's own form) the same bytes.
    assert fork_lines[1:] == lines[1:]

    manager = SessionManager.open(source)
    new_path = manager.create_branched_session("a0000002")
    assert new_path is not None
    assert Path(new_path).read_bytes().splitlines(keepends=True)[1:] == lines[1:]
    assert manager.get_entry("d0001000") is not None


def test_deep_entries_survive_the_migration_rewrite(tmp_path: Path) -> None:
    path = tmp_path / "deep-v2.jsonl"
    lines = deep_session(path, version=2)
    SessionManager.open(path)
    after = path.read_bytes().splitlines(keepends=True)
    assert json.loads(after[0])["version"] == 3
    assert after[1:] == lines[1:]


def test_the_cli_migrates_forks_and_extracts_deep_entries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    path = tmp_path / "deep-cli.jsonl"
    lines = deep_session(path, version=2)
    assert main(["migrate", str(path)]) == 0
    assert path.read_bytes().splitlines(keepends=True)[1:] == lines[1:]
    assert main(["fork", str(path), "--cwd", str(tmp_path / "target")]) == 0
    assert main(["extract", str(path), "--leaf", "a0000002"]) == 0
    made = [p for p in (tmp_path / "agent").rglob("*.jsonl")] + [
        p for p in session_files(tmp_path) if p != path
    ]
    assert len(made) == 2
    for new in made:
        assert new.read_bytes().splitlines(keepends=True)[1:] == lines[1:], new


def test_a_fork_keeps_lines_pi_keeps_that_pisession_does_not_index(tmp_path: Path) -> None:
    source = tmp_path / "odd.jsonl"
    odd = [b'["note",1]\n', deep_entry("d0001200", "a0000001", 1200), b"7\n"]
    source.write_bytes(header() + message("a0000001", None) + b"".join(odd) + message("a0000002", "d0001200"))
    fork = SessionManager.fork_from(source, "/elsewhere", tmp_path / "forks")
    copied = Path(fork.get_session_file() or "").read_bytes().splitlines(keepends=True)
    assert copied[2:5] == odd


# ------------------------------------------------------------------ 3. whole files or none


KILL_MID_WRITE = """
import os, signal, sys
sys.path.insert(0, {repo!r})
real_write = os.write
def write(fd, data):
    if len(data) > 20000:  # the new session file: half of it, then die
        real_write(fd, bytes(data[: len(data) // 2]))
        os.kill(os.getpid(), signal.SIGKILL)
    return real_write(fd, data)
os.write = write
"""


def run_killed(code: str) -> None:
    script = textwrap.dedent(KILL_MID_WRITE.format(repo=REPO)) + textwrap.dedent(code)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()


def big_session(path: Path, count: int = 300) -> None:
    parts = [header(), message("b0000000", None, "q" * 100)]
    parts += [message(f"b{i:07d}", f"b{i - 1:07d}", "x" * 100) for i in range(1, count)]
    path.write_bytes(b"".join(parts))


@pytest.mark.parametrize("how", ["fork_from", "create_branched_session", "cli fork", "cli extract"])
def test_a_new_session_killed_mid_write_never_appears(tmp_path: Path, how: str) -> None:
    source = tmp_path / "source" / "big.jsonl"
    source.parent.mkdir()
    big_session(source)
    out = tmp_path / "out"
    out.mkdir()
    code = {
        "fork_from": f"""
            from pisession import SessionManager
            SessionManager.fork_from({str(source)!r}, "/elsewhere", {str(out)!r})
        """,
        "create_branched_session": f"""
            from pisession import SessionManager
            SessionManager.open({str(source)!r}, {str(out)!r}).create_branched_session("b0000299")
        """,
        "cli fork": f"""
            from pisession.cli import main
            main(["fork", {str(source)!r}, "--cwd", "/elsewhere", "--session-dir", {str(out)!r}])
        """,
        "cli extract": f"""
            from pisession.cli import main
            main(["extract", {str(source)!r}, "--leaf", "b0000299", "--session-dir", {str(out)!r}])
        """,
    }[how]
    run_killed(code)
    assert session_files(out) == [], "a partial session file is visible"
    assert len(SessionManager.open(source).get_entries()) == 300


def test_the_temporary_file_of_a_killed_migration_goes_at_the_next_open(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    parts = [header(version=2), message("c0000000", None, "q")]
    parts += [message(f"c{i:07d}", f"c{i - 1:07d}", "y" * 200) for i in range(1, 200)]
    before = b"".join(parts)
    path.write_bytes(before)
    run_killed(f"""
        from pisession import SessionManager
        SessionManager.open({str(path)!r})
    """)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.glob(".pisession-*.tmp")] != []
    SessionManager.open(path)
    assert json.loads(path.read_bytes().splitlines()[0])["version"] == 3
    assert list(tmp_path.glob(".pisession-*.tmp")) == []


def test_create_never_replaces_a_file_that_appeared_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "new.jsonl"
    store = SessionFile(str(target))
    real_fsync = os.fsync

    def someone_else_creates(fd: int) -> None:
        real_fsync(fd)
        target.write_bytes(b"theirs\n")

    monkeypatch.setattr(os, "fsync", someone_else_creates)
    with pytest.raises(FileExistsError):
        store.create([header()])
    assert target.read_bytes() == b"theirs\n"
    assert list(tmp_path.glob(".pisession-*")) == []


# ------------------------------------------------------------------ 4. a failed branch changes nothing


def conversation(tmp_path: Path) -> tuple[SessionManager, str]:
    manager = SessionManager.create("/project", tmp_path / "sessions")
    first = manager.append_message(user("one"))
    manager.append_message(user("two"))
    return manager, first


def test_a_failed_create_branched_session_leaves_the_manager_where_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager, first = conversation(tmp_path)
    path, leaf, session_id = manager.get_session_file(), manager.get_leaf_id(), manager.get_session_id()

    def disk_full(fd: int, data: bytes) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    with monkeypatch.context() as patch:
        patch.setattr(_store, "_write_all", disk_full)
        with pytest.raises(OSError):
            manager.create_branched_session(first)
    now = (manager.get_session_file(), manager.get_leaf_id(), manager.get_session_id())
    assert now == (path, leaf, session_id)
    assert session_files(tmp_path / "sessions") == [Path(path or "")]
    new_id = manager.append_message(user("three"))
    assert [e["id"] for e in valid_lines(Path(path or "").read_bytes())[1:]][-1] == new_id


# ------------------------------------------------------------------ 5. another session swapped in


def other_session(tmp_path: Path) -> Path:
    other = tmp_path / "other.jsonl"
    other.write_bytes(header("0193a0b0-0000-7000-8000-0000000000ff") + message("f0000001", None, "theirs"))
    return other


def test_a_session_renamed_over_the_path_is_not_written_to(tmp_path: Path) -> None:
    manager, _ = conversation(tmp_path)
    path = Path(manager.get_session_file() or "")
    theirs = other_session(tmp_path).read_bytes()
    os.replace(tmp_path / "other.jsonl", path)
    for _ in range(2):  # and again: the manager does not adopt the stranger's file
        with pytest.raises(ERR.SessionReplacedError, match="another session"):
            manager.append_message(user("mine"))
    assert path.read_bytes() == theirs
    assert isinstance(ERR.SessionReplacedError("x"), PisessionError)


def test_a_session_renamed_over_the_path_during_a_batch_is_not_written_to(tmp_path: Path) -> None:
    manager, _ = conversation(tmp_path)
    path = Path(manager.get_session_file() or "")
    theirs = other_session(tmp_path).read_bytes()
    with pytest.raises(ERR.SessionReplacedError), manager.batch():
        manager.append_message(user("before"))
        os.replace(tmp_path / "other.jsonl", path)
        for i in range(5):
            manager.append_message(user(f"during {i}"))
    assert path.read_bytes() == theirs


# ------------------------------------------------------------------ 6. another writer's half line


class Reloads:
    """Counts whole-file reads of open managers (SessionFile.load)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        real = SessionFile.load

        def load(store: SessionFile) -> Any:
            self.count += 1
            return real(store)

        monkeypatch.setattr(SessionFile, "load", load)


def test_a_line_still_being_written_is_waited_for_not_split(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager, _ = conversation(tmp_path)
    path = Path(manager.get_session_file() or "")
    theirs = message("e0000001", manager.get_leaf_id(), "z" * 50_000)
    with open(path, "ab") as handle:
        handle.write(theirs[:20_000])
    reloads = Reloads(monkeypatch)

    def finish() -> None:
        time.sleep(0.05)
        with open(path, "ab") as handle:
            handle.write(theirs[20_000:])

    writer = threading.Thread(target=finish)
    writer.start()
    mine = manager.append_message(user("mine"))
    writer.join()
    entries = valid_lines(path.read_bytes())
    assert [e["id"] for e in entries[-2:]] == ["e0000001", mine]
    assert manager.get_entry("e0000001") is not None
    assert reloads.count == 0


def test_open_waits_for_a_line_still_being_written_instead_of_repairing_it(tmp_path: Path) -> None:
    path = tmp_path / "arriving.jsonl"
    theirs = message("e0000002", "e0000001", "z" * 50_000)
    path.write_bytes(header() + message("e0000001", None) + theirs[:20_000])

    def finish() -> None:
        time.sleep(0.05)
        with open(path, "ab") as handle:
            handle.write(theirs[20_000:])

    writer = threading.Thread(target=finish)
    writer.start()
    manager = SessionManager.open(path)
    writer.join()
    assert [e["id"] for e in valid_lines(path.read_bytes())[1:]] == ["e0000001", "e0000002"]
    assert manager.get_leaf_id() == "e0000002"


LOCK_FREE_WRITER = """
import json, os, sys, time
path, count, size = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
fd = os.open(path, os.O_WRONLY | os.O_APPEND)
for i in range(count):
    entry = {"type": "custom", "id": f"p{i:07d}", "parentId": None, "timestamp": "2024-12-03T14:00:00.000Z",
             "customType": "pi", "data": "p" * size}
    os.write(fd, json.dumps(entry, separators=(",", ":")).encode() + b"\\n")  # one write, as Pi does
"""


def test_appends_beside_a_lock_free_writer_of_long_lines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager, _ = conversation(tmp_path)
    path = Path(manager.get_session_file() or "")
    reloads = Reloads(monkeypatch)
    writer = subprocess.Popen([sys.executable, "-c", LOCK_FREE_WRITER, str(path), "40", str(4 << 20)])
    mine = []
    try:
        while writer.poll() is None:
            mine.append(manager.append_message(user("mine")))
    finally:
        writer.wait(timeout=120)
    assert writer.returncode == 0
    mine.append(manager.append_message(user("last")))
    entries = valid_lines(path.read_bytes())
    ids = [e.get("id") for e in entries[1:]]
    assert sum(1 for i in ids if str(i).startswith("p")) == 40
    assert [i for i in ids if i in set(mine)] == mine
    assert reloads.count == 0
    assert len(manager.get_entries()) == len(entries) - 1


def test_a_batch_beside_a_lock_free_writer_reads_on_from_where_it_was(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager, _ = conversation(tmp_path)
    path = Path(manager.get_session_file() or "")
    reloads = Reloads(monkeypatch)
    writer = subprocess.Popen([sys.executable, "-c", LOCK_FREE_WRITER, str(path), "300", str(64 << 10)])
    mine = []
    try:
        with manager.batch():
            while writer.poll() is None:
                mine.append(manager.append_message(user("mine")))
                time.sleep(0.0005)
    finally:
        writer.wait(timeout=120)
    assert writer.returncode == 0
    mine.append(manager.append_message(user("last")))
    entries = valid_lines(path.read_bytes())
    ids = [e.get("id") for e in entries[1:]]
    assert sum(1 for i in ids if str(i).startswith("p")) == 300
    assert [i for i in ids if i in set(mine)] == mine
    assert reloads.count == 0
    assert [e.id for e in manager.get_entries()] == ids


# ------------------------------------------------------------------ 7. a cut final newline


@pytest.mark.parametrize("then", ["the rest fails", "the rest is written"])
def test_an_entry_cut_before_its_newline_is_confirmed_or_absent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, then: str
) -> None:
    manager, _ = conversation(tmp_path)
    path = Path(manager.get_session_file() or "")
    real_write = os.write
    calls = {"n": 0}

    def short(fd: int, data: Any) -> int:
        calls["n"] += 1
        if calls["n"] == 1:
            return real_write(fd, bytes(data)[:-1])  # all but the final "\n"
        if calls["n"] == 2 and then == "the rest fails":
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_write(fd, data)

    with monkeypatch.context() as patch:
        patch.setattr(os, "write", short)
        try:
            cut: str | None = manager.append_message(user("cut"))
        except OSError:
            cut = None
    after = manager.append_message(user("after"))
    entries = valid_lines(path.read_bytes())[1:]
    contents = [e["message"]["content"] for e in entries]
    if cut is None:
        assert "cut" not in contents
    else:
        assert contents.count("cut") == 1 and manager.get_entry(cut) is not None
        assert entries[-1]["id"] == after and entries[-1]["parentId"] == cut
    assert [e.id for e in SessionManager.open(path).get_entries()] == [e["id"] for e in entries]


# ------------------------------------------------------------------ 18. headers past the scan limit


@pytest.mark.parametrize("where", ["a header over 1 MiB", "a header after 1 MiB of junk"])
def test_open_uses_the_header_cwd_beyond_the_scan_limit(tmp_path: Path, where: str) -> None:
    """Pi falls back to a full load (its test "opens compatible sessions beyond the discovery
    scan limit"); the oracle's SessionManager.open(...).getCwd() gives "/from/header" for both."""
    path = tmp_path / "big.jsonl"
    head = {"type": "session", "version": 3, "id": "big-header", "timestamp": STAMP, "cwd": "/from/header"}
    if where == "a header over 1 MiB":
        data = line({**head, "pad": "x" * (1 << 20)})
    else:
        data = (b"#" * 1000 + b"\n") * 1100 + line(head)
    path.write_bytes(data + message("a0000001", None, "hi"))
    manager = SessionManager.open(path, tmp_path / "sessions")
    assert manager.get_cwd() == "/from/header"
    assert manager.get_header().cwd == "/from/header"  # type: ignore[union-attr]
