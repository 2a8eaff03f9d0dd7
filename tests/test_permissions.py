"""Owners, permissions and symlinks of what opening and writing touch (issue 10, items 11-12).

- Root writing a user's session leaves the lock file and a rewritten session file to that user.
- A lock file this user cannot open is a :class:`LockFileAccessError` naming its owner.
- A session that opening would have to write (newline repair, migration, header) but cannot
  (a symbolic link, never written through; a read-only folder or file) is opened read-only in
  memory with a :class:`SessionNotWrittenWarning`, as Pi would read it; later writes raise
  :class:`SessionReadOnlyError`. Pi writes through the link (checked with the oracle below).

The permission tests fork a child that runs as ``nobody`` (they need root to set that up).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ORACLE, needs_oracle

from pisession import (
    LockFileAccessError,
    PisessionError,
    SessionManager,
    SessionNotWrittenWarning,
    SessionReadOnlyError,
    load_entries_from_file,
)

NOBODY = 65534
REPO = str(Path(__file__).resolve().parents[1])
as_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root")

HEADER = {"type": "session", "version": 3, "id": "perm", "timestamp": "2024-12-03T14:00:00.000Z", "cwd": "/p"}
V1 = (
    b'{"type":"session","id":"old","timestamp":"2024-12-03T14:00:00.000Z","cwd":"/project"}\n'
    b'{"type":"message","timestamp":"2024-12-03T14:00:01.000Z","message":{"role":"user","content":"hi","timestamp":1}}\n'
    b'{"type":"message","timestamp":"2024-12-03T14:00:02.000Z","message":{"role":"user","content":"yo","timestamp":2}}\n'
)


def line(value: dict[str, Any]) -> bytes:
    return json.dumps(value, separators=(",", ":")).encode() + b"\n"


def message(eid: str, parent: str | None, text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": eid,
        "parentId": parent,
        "timestamp": "2024-12-03T14:00:01.000Z",
        "message": {"role": "user", "content": text, "timestamp": 1},
    }


UNTERMINATED = line(HEADER) + line(message("a", None, "one")) + line(message("b", "a", "two"))[:-1]


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": 1}


def owner(path: str | Path) -> tuple[int, int]:
    info = os.stat(path, follow_symlinks=False)
    return info.st_uid, info.st_gid


@pytest.fixture
def shared() -> Iterator[Path]:
    """A folder ``nobody`` can reach (pytest's tmp_path is private to root)."""
    folder = Path(tempfile.mkdtemp(prefix="pisession-perm-"))
    os.chmod(folder, 0o755)
    try:
        yield folder
    finally:
        for sub in folder.rglob("*"):
            if sub.is_dir() and not sub.is_symlink():
                os.chmod(sub, 0o755)
        shutil.rmtree(folder)


def as_nobody(path: Path) -> dict[str, Any]:
    """Open ``path`` and append to it in a child process running as nobody; what happened.

    A fork, not a new interpreter: this one lives under /root, which nobody cannot enter."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        os.close(read)
        try:
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            out = open_and_append(path)
        except BaseException as error:
            out = {"child": repr(error)}
        os.write(write, json.dumps(out).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        data = pipe.read()
    os.waitpid(pid, 0)
    out = dict(json.loads(data))
    assert "child" not in out, out
    return out


def open_and_append(path: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            manager = SessionManager.open(path)
        except Exception as error:
            return {"open": f"{type(error).__name__}: {error}"}
    out["warnings"] = [f"{w.category.__name__}: {w.message}" for w in caught]
    out["entries"] = [e.message.content for e in manager.get_entries()]  # type: ignore[union-attr]
    header = manager.get_header()
    out["version"] = header.version if header is not None else None
    try:
        manager.append_message(user("new"))
        out["append"] = "ok"
    except Exception as error:
        out["append"] = f"{type(error).__name__}: {error}"
    return out


# ---------------------------------------------------------------------------------------------
# 11. Root leaves the session to its owner


@as_root
def test_root_appending_leaves_the_lock_file_to_the_sessions_owner(shared: Path) -> None:
    path = shared / "s.jsonl"
    path.write_bytes(line(HEADER) + line(message("a", None, "one")))
    os.chown(path, NOBODY, NOBODY)
    SessionManager.open(path).append_message(user("as root"))
    assert owner(str(path) + ".lock") == (NOBODY, NOBODY)
    assert owner(path) == (NOBODY, NOBODY)
    # A lock file an older run left to root is given back at root's next write.
    os.chown(str(path) + ".lock", 0, 0)
    SessionManager.open(path).append_message(user("as root again"))
    assert owner(str(path) + ".lock") == (NOBODY, NOBODY)
    # And the owner can write again.
    out = as_nobody(path)
    assert out["append"] == "ok" and out["entries"] == ["one", "as root", "as root again"]


@as_root
def test_root_migrating_keeps_the_files_owner_and_mode(shared: Path) -> None:
    path = shared / "old.jsonl"
    path.write_bytes(V1)
    os.chown(path, NOBODY, NOBODY)
    os.chmod(path, 0o640)
    manager = SessionManager.open(path)
    assert manager.get_header() is not None and manager.get_header().version == 3  # type: ignore[union-attr]
    assert b'"version":3' in path.read_bytes().splitlines()[0]
    assert owner(path) == (NOBODY, NOBODY) and (os.stat(path).st_mode & 0o777) == 0o640
    assert owner(str(path) + ".lock") == (NOBODY, NOBODY)
    out = as_nobody(path)
    assert out["append"] == "ok" and out["warnings"] == []


@as_root
def test_a_lock_file_the_user_cannot_open_is_a_typed_error_naming_its_owner(shared: Path) -> None:
    path = shared / "s.jsonl"
    content = line(HEADER) + line(message("a", None, "one"))
    path.write_bytes(content)
    os.chown(path, NOBODY, NOBODY)
    lock = Path(str(path) + ".lock")
    lock.touch(0o600)  # what a root write left before this fix
    out = as_nobody(path)
    assert out["append"].startswith(f"LockFileAccessError: Cannot open the session lock file {lock}: ")
    assert "owned by uid 0, mode 0600" in out["append"] and f"runs as uid {NOBODY}" in out["append"]
    assert path.read_bytes() == content
    assert issubclass(LockFileAccessError, PisessionError)
    assert issubclass(LockFileAccessError, PermissionError)


# ---------------------------------------------------------------------------------------------
# 12. Symbolic links and read-only places: read as Pi would, write nothing, say so


def linked(tmp_path: Path, content: bytes) -> tuple[Path, Path]:
    (tmp_path / "other").mkdir()
    target = tmp_path / "other" / "target.jsonl"
    target.write_bytes(content)
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    return link, target


def test_fork_from_does_not_repair_a_symlinked_source(tmp_path: Path) -> None:
    link, target = linked(tmp_path, UNTERMINATED)
    with pytest.warns(SessionNotWrittenWarning, match="symbolic link"):
        fork = SessionManager.fork_from(link, "/elsewhere", tmp_path / "forks")
    assert target.read_bytes() == UNTERMINATED and link.is_symlink()
    assert [e.message.content for e in fork.get_entries()] == ["one", "two"]  # type: ignore[union-attr]
    with pytest.warns(SessionNotWrittenWarning):
        assert [e.get("id") for e in load_entries_from_file(link)] == ["perm", "a", "b"]
    assert target.read_bytes() == UNTERMINATED


def test_fork_from_repairs_its_source_under_the_lock(tmp_path: Path) -> None:
    source = tmp_path / "s.jsonl"
    source.write_bytes(UNTERMINATED)
    opened = SessionManager.open(source)  # repairs it
    assert source.read_bytes() == UNTERMINATED + b"\n"
    source.write_bytes(UNTERMINATED)
    # The same thread holding the source's lock re-enters it; a second repair adds no blank line.
    with opened.batch(), warnings.catch_warnings():
        warnings.simplefilter("error")
        SessionManager.fork_from(source, "/elsewhere", tmp_path / "forks")
        assert source.read_bytes() == UNTERMINATED + b"\n"
        assert load_entries_from_file(source)[-1]["id"] == "b"
    assert source.read_bytes() == UNTERMINATED + b"\n"


@pytest.mark.parametrize("content", [UNTERMINATED, V1, b""], ids=["unterminated", "version 1", "empty"])
def test_a_symlinked_session_that_needs_a_write_opens_read_only(tmp_path: Path, content: bytes) -> None:
    link, target = linked(tmp_path, content)
    with pytest.warns(SessionNotWrittenWarning, match=f"{link}: .* symbolic link, never written through"):
        manager = SessionManager.open(link)
    if content:
        assert [e.message.content for e in manager.get_entries()] == (  # type: ignore[union-attr]
            ["one", "two"] if content is UNTERMINATED else ["hi", "yo"]
        )
    assert manager.get_header() is not None and manager.get_header().version == 3  # type: ignore[union-attr]
    with pytest.raises(SessionReadOnlyError, match="symbolic link"):
        manager.append_message(user("refused"))
    assert target.read_bytes() == content and link.is_symlink()
    assert sorted(os.listdir(tmp_path / "other")) == ["target.jsonl"]


@needs_oracle
def test_pi_writes_through_the_link_pisession_reads_what_pi_would_hold(tmp_path: Path) -> None:
    link, target = linked(tmp_path, V1)
    script = tmp_path / "pi.mjs"
    module = (
        Path.home()
        / ".cache/pi-oracle/node_modules/@earendil-works/pi-coding-agent/dist/core/session-manager.js"
    )
    script.write_text(
        f'import {{ SessionManager }} from "{module}";\n'
        "const sm = SessionManager.open(process.argv[2]);\n"
        "console.log(JSON.stringify(sm.getEntries().map(e => [e.type, e.message.content])));\n"
    )
    assert ORACLE.exists()
    with pytest.warns(SessionNotWrittenWarning):
        manager = SessionManager.open(link)
    ours = [[e.type, e.message.content] for e in manager.get_entries()]  # type: ignore[union-attr]
    pi = subprocess.run(["node", str(script), str(link)], capture_output=True, text=True, timeout=120)
    assert json.loads(pi.stdout) == ours
    # Pi migrated the target through the link (pisession refuses to): the link is still a link.
    assert link.is_symlink() and target.read_bytes() != V1
    assert b'"version":3' in target.read_bytes().splitlines()[0]


@as_root
def test_an_old_session_in_a_read_only_folder_opens_read_only(shared: Path) -> None:
    folder = shared / "ro"
    folder.mkdir()
    path = folder / "old.jsonl"
    path.write_bytes(V1)
    os.chown(path, NOBODY, NOBODY)  # the file is writable (Pi rewrites it in place), the folder not
    os.chmod(folder, 0o555)
    out = as_nobody(path)
    assert out["entries"] == ["hi", "yo"] and out["version"] == 3
    assert len(out["warnings"]) == 1 and out["warnings"][0].startswith(
        f"SessionNotWrittenWarning: {path}: the migration to version 3 was not written ("
    )
    assert "Cannot create the session lock file" in out["warnings"][0]
    assert out["append"].startswith("SessionReadOnlyError: ")
    assert path.read_bytes() == V1 and sorted(os.listdir(folder)) == ["old.jsonl"]


@as_root
def test_a_read_only_file_that_needs_its_newline_opens_read_only(shared: Path) -> None:
    path = shared / "s.jsonl"
    path.write_bytes(UNTERMINATED)
    os.chmod(shared, 0o777)
    os.chown(path, NOBODY, NOBODY)
    os.chmod(path, 0o444)
    out = as_nobody(path)
    assert out["entries"] == ["one", "two"]
    assert len(out["warnings"]) == 1 and "the final newline was not written" in out["warnings"][0]
    assert out["append"].startswith("SessionReadOnlyError: ")
    assert path.read_bytes() == UNTERMINATED


def test_cli_migrate_of_a_symlink_is_a_one_line_error(tmp_path: Path) -> None:
    link, target = linked(tmp_path, V1)
    result = subprocess.run(
        [sys.executable, "-m", "pisession.cli", "migrate", str(link)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=REPO,
    )
    assert result.returncode == 1
    assert result.stderr.startswith(f"pisession: error: {link}: the migration to version 3 was not written")
    assert len(result.stderr.splitlines()) == 1 and target.read_bytes() == V1
