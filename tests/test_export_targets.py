"""`pisession export -o TARGET` and `pisession.export.write_text` (issue 22, point 3): a regular
file is replaced atomically; a device, a pipe or a link to a descriptor is written to as shell
redirection would, never replaced; what cannot be written to is refused, the path named.

Every test points at the system's devices only through a link in its own folder, so a writer
that replaced its target would replace the link, never /dev/null itself."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from pisession.cli import main
from pisession.export import write_text

HEADER = {
    "type": "session",
    "version": 3,
    "id": "01938cd2-1b00-7383-868d-05a8d6c6a856",
    "timestamp": "2024-12-03T14:00:00.000Z",
    "cwd": "/project",
}
USER = {
    "type": "message",
    "id": "aaaa0001",
    "parentId": None,
    "timestamp": "2024-12-03T14:00:01.000Z",
    "message": {"role": "user", "content": "export me", "timestamp": 1},
}
CLI = "import sys; from pisession.cli import main; sys.exit(main(sys.argv[1:]))"


@pytest.fixture
def session(tmp_path: Path) -> Path:
    path = tmp_path / "s.jsonl"
    path.write_text(json.dumps(HEADER) + "\n" + json.dumps(USER) + "\n", encoding="utf-8")
    return path


def _export(session: Path, target: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(["export", str(session), "--format", "jsonl", "-o", target])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_link_to_dev_null_stays_a_link_and_dev_null_a_device(
    session: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = os.stat("/dev/null")
    link = tmp_path / "null"
    link.symlink_to("/dev/null")
    code, _, err = _export(session, str(link), capsys)
    assert code == 0, err
    assert link.is_symlink() and os.readlink(link) == "/dev/null"
    after = os.stat("/dev/null")
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev
    assert stat.S_IMODE(after.st_mode) == stat.S_IMODE(before.st_mode)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_a_fifo_with_a_reader_gets_the_export_and_stays_a_fifo(
    session: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    code, _, err = _export(session, str(fifo), capsys)
    reader.join(timeout=30)
    assert code == 0, err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert received == [(json.dumps(USER, separators=(",", ":")) + "\n").encode()]


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs /proc/self/fd")
def test_proc_self_fd_of_a_pipe_is_written_to(session: Path) -> None:
    read_end, write_end = os.pipe()
    try:
        child = subprocess.Popen(
            [
                sys.executable,
                "-c",
                CLI,
                "export",
                str(session),
                "--format",
                "jsonl",
                "-o",
                f"/proc/self/fd/{write_end}",
            ],
            pass_fds=(write_end,),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        os.close(write_end)
        write_end = -1
        with os.fdopen(read_end, "rb") as pipe:
            read_end = -1
            content = pipe.read()
        _, err = child.communicate(timeout=60)
    finally:
        for fd in (read_end, write_end):
            if fd >= 0:
                os.close(fd)
    assert child.returncode == 0, err
    assert b"export me" in content


@pytest.mark.skipif(not os.path.exists("/dev/stdout"), reason="needs /dev/stdout")
def test_a_link_to_dev_stdout_writes_at_the_descriptors_position(session: Path, tmp_path: Path) -> None:
    link = tmp_path / "out"
    link.symlink_to("/dev/stdout")
    log = tmp_path / "log"
    log.write_bytes(b"kept\n")
    with open(log, "ab") as appending:
        result = subprocess.run(
            [sys.executable, "-c", CLI, "export", str(session), "--format", "jsonl", "-o", str(link)],
            stdout=appending,
            stderr=subprocess.PIPE,
            timeout=60,
        )
    assert result.returncode == 0, result.stderr
    assert link.is_symlink() and os.readlink(link) == "/dev/stdout"
    assert log.read_bytes().startswith(b"kept\n{")  # appended, as `>> log` asked


def test_dash_writes_to_stdout(session: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _export(session, "-", capsys)
    assert code == 0 and "export me" in out
    assert not (tmp_path / "-").exists()


def test_a_link_to_a_regular_file_is_kept_and_its_target_replaced(
    session: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    real = tmp_path / "real.jsonl"
    real.write_text("stale")
    link = tmp_path / "link.jsonl"
    link.symlink_to(real)
    code, _, err = _export(session, str(link), capsys)
    assert code == 0, err
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert "export me" in real.read_text()
    assert stat.S_IMODE(real.stat().st_mode) == 0o600


def test_a_dangling_link_is_refused(
    session: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    link = tmp_path / "dangling"
    link.symlink_to(tmp_path / "missing" / "file")
    code, _, err = _export(session, str(link), capsys)
    assert code == 1 and "dangling symbolic link" in err and str(link) in err
    assert link.is_symlink()


def test_a_folder_and_a_socket_are_refused(
    session: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "folder"
    folder.mkdir()
    code, _, err = _export(session, str(folder), capsys)
    assert code == 1 and "directory" in err.lower() and str(folder) in err
    assert folder.is_dir()
    path = tmp_path / "sock"
    server = socket.socket(socket.AF_UNIX)
    try:
        server.bind(str(path))
        code, _, err = _export(session, str(path), capsys)
    finally:
        server.close()
    assert code == 1 and "socket" in err and "Traceback" not in err
    assert stat.S_ISSOCK(os.lstat(path).st_mode)


def test_write_text_replaces_a_regular_file_atomically(tmp_path: Path) -> None:
    target = tmp_path / "out.md"
    target.write_text("stale")
    inode = target.stat().st_ino
    assert write_text(target, "new") == str(target)
    assert target.read_text() == "new"
    assert target.stat().st_ino != inode  # renamed into place, not rewritten in place
