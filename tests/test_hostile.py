"""Hostile input: bad session ids, planted symlinks, FIFOs, huge and deeply nested lines, broken
UTF-8, NaN, duplicate keys; and the permissions of what pisession creates.

Symlinks (a choice, SPEC §8 says only "not followed into another directory"): pisession reads a
session file through a symlink (open, list, load), but never writes through or over one: an
append to a symlinked session file and any use of a symlinked ``<file>.lock`` fail with
:class:`SymlinkRefusedError` (a PisessionError and an OSError); a newline repair or migration
that opening a symlinked session would need is not made (the session opens read-only, with a
``SessionNotWrittenWarning``); the link and its target stay as they were. A link may point
anywhere.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from conftest import ORACLE, needs_oracle

import pisession
from pisession import InvalidSessionIdError, PisessionError, SessionManager, load_entries_from_file
from pisession._lock import SymlinkRefusedError

REPO = str(Path(__file__).resolve().parents[1])
STAMP = "2024-12-03T14:00:00.000Z"
HEADER = {"type": "session", "version": 3, "id": "hostile", "timestamp": STAMP, "cwd": "/project"}


def line(value: dict[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode() + b"\n"


def message(eid: str, parent: str | None, content: Any = "x") -> dict[str, Any]:
    return {
        "type": "message",
        "id": eid,
        "parentId": parent,
        "timestamp": STAMP,
        "message": {"role": "user", "content": content, "timestamp": 1},
    }


def session_file(folder: Path, *body: bytes, name: str = "s.jsonl") -> Path:
    path = folder / name
    path.write_bytes(line(HEADER) + b"".join(body))
    return path


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 1}


def tree_listing(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*")) if folder.exists() else []


def mode(path: str | Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


# ---------------------------------------------------------------------------------------------
# Session ids

BAD_IDS = [
    "a/b",
    "../escape",
    "..",
    ".",
    "/abs",
    "a\\b",
    "x\x00y",
    "a\nb",
    "tab\there",
    "\x7f",
    "\x01x",
    "",
    "-lead",
    "trail-",
    "a b",
    "ü",
    "a:b",
    "..a",
    "a..",
    "a/..",
    "a/../b",
]


@pytest.mark.parametrize("bad", BAD_IDS)
def test_bad_session_ids_are_rejected(bad: str) -> None:
    with pytest.raises(InvalidSessionIdError):
        pisession.assert_valid_session_id(bad)
    with pytest.raises(InvalidSessionIdError):
        SessionManager.in_memory("/project", id=bad)


@pytest.mark.parametrize("bad", BAD_IDS)
def test_bad_session_ids_create_nothing(tmp_path: Path, bad: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Rejected before any path is formed: no folder, no file, nothing outside tmp_path."""
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    source = SessionManager.create("/project", tmp_path / "source")
    source.append_message(user("hi"))
    before = tree_listing(tmp_path)
    with pytest.raises(InvalidSessionIdError):
        SessionManager.create("/project", tmp_path / "new" / "dir", id=bad)
    with pytest.raises(InvalidSessionIdError):
        SessionManager.create("/elsewhere", id=bad)  # the default folder under PI_CODING_AGENT_DIR
    with pytest.raises(InvalidSessionIdError):
        SessionManager.fork_from(source.get_session_file() or "", "/target", tmp_path / "forks", id=bad)
    with pytest.raises(InvalidSessionIdError):
        source.new_session(id=bad)
    assert tree_listing(tmp_path) == before


# ---------------------------------------------------------------------------------------------
# Symlinks


def written(tmp_path: Path) -> tuple[SessionManager, str]:
    manager = SessionManager.create("/project", tmp_path / "sessions")
    manager.append_message(user("hi"))
    path = manager.get_session_file()
    assert path is not None
    return manager, path


@pytest.mark.parametrize("target", ["directory", "missing file in it", "existing file in it"])
def test_a_symlinked_lock_file_is_not_followed(tmp_path: Path, target: str) -> None:
    manager, path = written(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    pointee = {
        "directory": other,
        "missing file in it": other / "x.lock",
        "existing file in it": other / "y.lock",
    }[target]
    if target == "existing file in it":
        pointee.write_bytes(b"")
    before_other = tree_listing(other)
    lock = Path(path + ".lock")
    lock.unlink(missing_ok=True)
    lock.symlink_to(pointee)
    content = Path(path).read_bytes()
    with pytest.raises(SymlinkRefusedError, match="symbolic link"):
        manager.append_message(user("refused"))
    assert isinstance(SymlinkRefusedError(40, "x"), PisessionError)
    # Reading needs no lock; writing through a fresh manager is refused the same way.
    reader = SessionManager.open(path)
    assert reader.get_entry_count() == 1
    with pytest.raises(SymlinkRefusedError):
        reader.append_custom_entry("refused too")
    assert Path(path).read_bytes() == content
    assert tree_listing(other) == before_other and os.path.islink(lock)
    assert manager.get_entry_count() == 1, "the refused entry is not kept in memory"


def test_a_lock_symlink_planted_before_the_first_write(tmp_path: Path) -> None:
    manager = SessionManager.create("/project", tmp_path / "sessions")
    path = manager.get_session_file()
    assert path is not None
    other = tmp_path / "other"
    other.mkdir()
    os.symlink(other / "planted.lock", path + ".lock")
    with pytest.raises(SymlinkRefusedError):
        manager.append_message(user("hi"))
    assert not os.path.exists(path) and tree_listing(other) == []


def test_a_symlinked_session_file_is_read_but_never_written_through(tmp_path: Path) -> None:
    _, real = written(tmp_path)
    other = tmp_path / "other"
    other.mkdir()
    target = other / "real.jsonl"
    os.replace(real, target)
    os.symlink(target, real)
    content = target.read_bytes()
    manager = SessionManager.open(real)  # reading follows the link
    assert [e.message.content for e in manager.get_entries()] == ["hi"]  # type: ignore[union-attr]
    with pytest.raises(SymlinkRefusedError, match="symbolic link"):
        manager.append_message(user("through the link"))
    assert target.read_bytes() == content and os.path.islink(real)
    assert sorted(os.listdir(other)) == ["real.jsonl"]
    assert manager.get_entry_count() == 1
    assert [i.path for i in SessionManager.list("/project", str(tmp_path / "sessions"))] == [real]


def test_a_symlinked_old_session_is_not_migrated_over_the_link(tmp_path: Path) -> None:
    other = tmp_path / "other"
    other.mkdir()
    target = other / "v1.jsonl"
    target.write_bytes(V1)
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    with pytest.warns(pisession.SessionNotWrittenWarning, match="symbolic link"):
        manager = SessionManager.open(link)  # read-only, migrated in memory (tests/test_permissions.py)
    with pytest.raises(pisession.SessionReadOnlyError):
        manager.append_custom_entry("refused")
    assert target.read_bytes() == V1 and link.is_symlink()
    assert [e.get("type") for e in load_entries_from_file(link)] == ["session", "message", "message"]


# ---------------------------------------------------------------------------------------------
# Huge and deep lines


def huge_line_session(folder: Path, megabytes: int) -> Path:
    path = folder / "huge.jsonl"
    chunk = b"x" * (1 << 20)
    with open(path, "wb") as handle:
        handle.write(line(HEADER))
        handle.write(
            b'{"type":"message","id":"big","parentId":null,"timestamp":"'
            + STAMP.encode()
            + b'","message":{"role":"user","timestamp":1,"content":"'
        )
        for _ in range(megabytes):
            handle.write(chunk)
        handle.write(b'"}}\n')
        handle.write(line(message("after", "big", "small")))
    return path


@pytest.mark.parametrize("megabytes", [20, 100])
def test_a_single_huge_line_loads(tmp_path: Path, megabytes: int) -> None:
    path = huge_line_session(tmp_path, megabytes)
    started = time.monotonic()
    manager = SessionManager.open(path)
    elapsed = time.monotonic() - started
    assert [e.id for e in manager.get_entries()] == ["big", "after"]
    content = manager.get_entry("big").message.content  # type: ignore[union-attr]
    assert len(content) == megabytes << 20
    assert [m.content for m in manager.build_session_context().messages][1] == "small"
    manager.append_message(user("appended"))
    infos = SessionManager.list("/project", str(tmp_path))
    assert len(infos) == 1 and infos[0].message_count == 3
    print(f"{megabytes} MB line: open {elapsed:.2f}s")


DEPTH = 100_000


@pytest.mark.parametrize(
    "deep",
    [
        b'{"type":"message","id":"deep","parentId":"a","timestamp":"'
        + STAMP.encode()
        + b'","message":{"role":"user","timestamp":1,"content":'
        + b"[" * DEPTH
        + b"]" * DEPTH
        + b"}}",
        b'{"type":"custom","customType":"x","data":'
        + b'{"k":' * DEPTH
        + b"1"
        + b"}" * DEPTH
        + b',"id":"deep","parentId":"a","timestamp":"'
        + STAMP.encode()
        + b'"}',
        b'{"type":"message","id":"deep","parentId":"a","timestamp":"'
        + STAMP.encode()
        + b'","message":'
        + b'{"role":' * DEPTH
        + b"1"
        + b"}" * DEPTH
        + b"}",
        b"[" * DEPTH + b"]" * DEPTH,
        b'{"a":' * DEPTH + b"1" + b"}" * DEPTH,
    ],
    ids=["content", "custom-data", "message", "array", "object"],
)
def test_deeply_nested_json_does_not_crash(tmp_path: Path, deep: bytes) -> None:
    path = session_file(tmp_path, line(message("a", None)), deep + b"\n", line(message("b", "deep")))
    manager = SessionManager.open(path)
    ids = [e.id for e in manager.get_entries()]
    assert ids in (["a", "b"], ["a", "deep", "b"])  # the deep line is skipped or parsed
    manager.get_tree()
    manager.build_session_context()
    assert [e["id"] for e in load_entries_from_file(path)[1:]] == ids
    assert len(SessionManager.list("/project", str(tmp_path))) == 1
    # The same line arriving while a manager tails the file.
    with open(path, "ab") as handle:
        handle.write(deep + b"\n" + line(message("c", "b")))
    assert [e.id for e in manager.refresh()][-1] == "c"


# ---------------------------------------------------------------------------------------------
# What JSON.parse would do (SPEC §2)


def test_invalid_utf8_decodes_to_replacement_characters(tmp_path: Path) -> None:
    raw = (
        b'{"type":"message","id":"a","parentId":null,"timestamp":"'
        + STAMP.encode()
        + b'","message":{"role":"user","content":"x\xffy\xe2\x82z\xc3","timestamp":1}}\n'
    )
    path = session_file(tmp_path, raw)
    manager = SessionManager.open(path)
    assert manager.get_entry("a").message.content == "x\ufffdy\ufffdz\ufffd"  # type: ignore[union-attr]
    assert Path(path).read_bytes().endswith(raw), "reading does not rewrite the bytes"


@pytest.mark.parametrize("literal", [b"NaN", b"Infinity", b"-Infinity", b"nan", b"inf"])
def test_nan_and_infinity_lines_are_skipped(tmp_path: Path, literal: bytes) -> None:
    bad = (
        b'{"type":"message","id":"bad","parentId":"a","timestamp":"'
        + STAMP.encode()
        + b'","message":{"role":"user","content":"x","timestamp":'
        + literal
        + b"}}\n"
    )
    path = session_file(tmp_path, line(message("a", None)), bad, line(message("b", "a")))
    manager = SessionManager.open(path)
    assert [e.id for e in manager.get_entries()] == ["a", "b"]
    assert [e["id"] for e in load_entries_from_file(path)[1:]] == ["a", "b"]


def test_duplicate_keys_keep_the_last_value(tmp_path: Path) -> None:
    raw = (
        b'{"type":"message","id":"first","parentId":null,"id":"a","timestamp":"'
        + STAMP.encode()
        + b'","message":{"role":"user","content":"one","timestamp":1,"content":"two"}}\n'
    )
    path = session_file(tmp_path, raw)
    manager = SessionManager.open(path)
    assert [e.id for e in manager.get_entries()] == ["a"]
    assert manager.get_entry("a").message.content == "two"  # type: ignore[union-attr]
    assert list(load_entries_from_file(path)[1]) == ["type", "id", "parentId", "timestamp", "message"]


@needs_oracle
def test_hostile_lines_read_as_pi_reads_them(tmp_path: Path) -> None:
    body = [
        line(message("a", None)),
        b'{"type":"message","id":"u8","parentId":"a","timestamp":"'
        + STAMP.encode()
        + b'","message":{"role":"user","content":"x\xffy\xe2\x82z","timestamp":1}}\n',
        b'{"type":"message","id":"nan","parentId":"u8","timestamp":"'
        + STAMP.encode()
        + b'","message":{"role":"user","content":"x","timestamp":NaN}}\n',
        b'{"type":"message","id":"d1","parentId":"u8","id":"dup","timestamp":"'
        + STAMP.encode()
        + b'","message":{"role":"user","content":"one","timestamp":1,"content":"two"}}\n',
        b"   \n",
        b"\xff\xfe garbage\n",
        line(message("z", "dup", "\u2028 and \u2029 raw")),
    ]
    path = session_file(tmp_path, *body)
    done = subprocess.run(
        ["node", str(ORACLE), "read", str(path)], capture_output=True, text=True, timeout=120
    )
    dump = json.loads(done.stdout)["dump"]
    manager = SessionManager.open(path)
    assert [pisession.to_wire(e) for e in manager.get_entries()] == dump["entries"]
    assert manager.get_leaf_id() == dump["leafId"]


# ---------------------------------------------------------------------------------------------
# Odd things in a sessions folder

ODD_FOLDER = r"""
import json, os, sys
sys.path.insert(0, REPO)
from pisession import SessionManager, load_entries_from_file, PisessionError

folder, fifo = sys.argv[1], sys.argv[2]
out = {}
out["list"] = sorted(i.path for i in SessionManager.list("/project", folder))
out["list_all"] = sorted(i.path for i in SessionManager.list_all(folder))
out["find"] = SessionManager.find_by_id("/project", "hostile", folder)
out["find_missing"] = SessionManager.find_by_id("/project", "nope", folder)
out["recent"] = SessionManager.continue_recent("/project", folder).get_session_file()
out["load_fifo"] = load_entries_from_file(fifo)
for cwd_override in (None, "/x"):
    try:
        SessionManager.open(fifo, cwd_override=cwd_override)
        out[f"open_fifo_{cwd_override}"] = "opened"
    except PisessionError as error:
        out[f"open_fifo_{cwd_override}"] = type(error).__name__
print(json.dumps(out))
"""


def test_a_folder_of_odd_files_lists_without_failing_or_hanging(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    good = session_file(folder, line(message("a", None, "hello")), name="good.jsonl")
    (folder / "x.jsonl").mkdir()  # a directory
    fifo = folder / "y.jsonl"
    os.mkfifo(fifo)  # opening it for reading would wait for a writer forever
    (folder / "z.jsonl").symlink_to(folder / "nowhere")  # broken symlink
    (folder / "loop.jsonl").symlink_to(folder / "loop.jsonl")  # ELOOP
    (folder / "notes.jsonl").write_text("just some notes\n")
    (folder / "empty.jsonl").write_bytes(b"")
    (folder / "binary.jsonl").write_bytes(bytes(range(256)) * 10)
    (folder / "entry-first.jsonl").write_bytes(line(message("q", None)) + line(HEADER))
    (folder / "big-header.jsonl").write_bytes(
        line({**HEADER, "id": "big", "pad": "p" * (2 << 20)}) + line(message("b", None))
    )
    (folder / "readme.txt").write_text("not a session")
    future = time.time() + 3600
    os.utime(fifo, (future, future))  # the newest "session": continue_recent looks at it first
    script = tmp_path / "odd.py"
    script.write_text(f"REPO = {REPO!r}\n" + ODD_FOLDER)
    try:
        done = subprocess.run(
            [sys.executable, str(script), str(folder), str(fifo)], capture_output=True, text=True, timeout=20
        )  # takes < 1 s
    except subprocess.TimeoutExpired:
        pytest.fail("discovery or open hung on a FIFO named *.jsonl")
    assert done.returncode == 0, done.stderr[-3000:]
    out = json.loads(done.stdout)
    # The reference's list reads whole files, with no 1 MiB header bound (golden fn.json, list):
    # the session with the huge header is listed; find_by_id reads headers only, bounded.
    assert out["list"] == out["list_all"] == sorted([str(good), str(folder / "big-header.jsonl")])
    assert out["find"] == str(good) and out["find_missing"] is None
    # Pi's findMostRecentSession gives up (a new session) when any stat fails, e.g. on the broken
    # symlink; SPEC §2 says unreadable files are skipped. Either way: no hang, no error.
    assert out["recent"] == str(good) or not os.path.exists(out["recent"])
    assert out["load_fifo"] == []
    assert out["open_fifo_None"] == out["open_fifo_/x"] == "InvalidSessionError"


# ---------------------------------------------------------------------------------------------
# Permissions of what pisession creates

V1 = (
    b'{"type":"session","id":"old","timestamp":"2024-12-03T14:00:00.000Z","cwd":"/project"}\n'
    b'{"type":"message","timestamp":"2024-12-03T14:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}\n'
    b'{"type":"message","timestamp":"2024-12-03T14:00:02.000Z","message":{"role":"hookMessage","content":"h","timestamp":2}}\n'
)


def test_new_sessions_and_folders_are_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old_umask = os.umask(0o022)
    try:
        nested = tmp_path / "a" / "b" / "c"
        manager = SessionManager.create("/project", nested)
        manager.append_message(user("hi"))
        path = manager.get_session_file() or ""
        assert mode(path) == 0o600 and mode(path + ".lock") == 0o600
        for folder in (tmp_path / "a", tmp_path / "a" / "b", nested):
            assert mode(folder) == 0o700, folder

        forks = tmp_path / "f" / "g"
        fork = SessionManager.fork_from(path, "/elsewhere", forks)
        assert mode(fork.get_session_file() or "") == 0o600
        assert mode(tmp_path / "f") == mode(forks) == 0o700

        branched = manager.create_branched_session(manager.get_leaf_id() or "")
        assert branched is not None and mode(branched) == 0o600

        monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
        directory = pisession.get_default_session_dir("/some/project")
        assert directory == str(tmp_path / "agent" / "sessions" / "--some-project--")
        for folder in (tmp_path / "agent", tmp_path / "agent" / "sessions", Path(directory)):
            assert mode(folder) == 0o700, folder
        default = SessionManager.create("/other/project")
        default.append_message(user("hi"))
        assert mode(default.get_session_file() or "") == 0o600
        assert mode(os.path.dirname(default.get_session_file() or "")) == 0o700
    finally:
        os.umask(old_umask)


def test_an_empty_session_file_gets_its_header_privately(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    os.chmod(path, 0o600)
    SessionManager.open(path)
    assert mode(path) == 0o600 and json.loads(path.read_bytes())["type"] == "session"
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".pisession-")] == []
