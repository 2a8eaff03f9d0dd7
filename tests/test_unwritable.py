"""An entry nested deeper than any writer goes (issue 22, point 10): Pi 1.6.0 reads it (V8's
JSON.parse has no depth limit) but cannot write it (JSON.stringify: "Maximum call stack size
exceeded"), so a fork fails in Pi. pisession says so with a typed error, writes no session, and
opens a file whose migration would copy it read-only; never a traceback."""

from __future__ import annotations

import json
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from conftest import ORACLE, needs_oracle

from pisession import SessionManager, SessionNotWrittenWarning, SessionReadOnlyError, UnwritableEntryError

DEPTH = 20_000
HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2024-12-03T14:00:00.000Z", "cwd": "/p"}
USER = {
    "type": "message",
    "id": "a1",
    "parentId": None,
    "timestamp": "2024-12-03T14:00:01.000Z",
    "message": {"role": "user", "content": "one", "timestamp": 1},
}
CLI = "import sys; from pisession.cli import main; sys.exit(main(sys.argv[1:]))"


def deep_session(path: Path, version: int = 3) -> Path:
    deep = (
        '{"type":"custom","customType":"x","data":'
        + "[" * DEPTH
        + "]" * DEPTH
        + ',"id":"d1","parentId":"a1",'
        '"timestamp":"2024-12-03T14:00:02.000Z"}'
    )
    header = json.dumps({**HEADER, "version": version}, separators=(",", ":"))
    path.write_text(header + "\n" + json.dumps(USER, separators=(",", ":")) + "\n" + deep + "\n")
    return path


def test_fork_from_refuses_it_and_writes_no_session(tmp_path: Path) -> None:
    source = deep_session(tmp_path / "deep.jsonl")
    before = source.read_bytes()
    out = tmp_path / "out"
    with pytest.raises(UnwritableEntryError, match="entry d1 cannot be written as JSON: it is nested deeper"):
        SessionManager.fork_from(str(source), "/elsewhere", str(out))
    assert isinstance(UnwritableEntryError("x"), ValueError)
    assert list(out.glob("*.jsonl")) == [] and source.read_bytes() == before


def test_the_fork_command_says_so_without_a_traceback(tmp_path: Path) -> None:
    source = deep_session(tmp_path / "deep.jsonl")
    result = subprocess.run(
        [
            sys.executable,
            "-c",
            CLI,
            "fork",
            str(source),
            "--cwd",
            str(tmp_path),
            "--session-dir",
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 1
    assert result.stderr.startswith("pisession: error: entry d1 cannot be written as JSON")
    assert "Traceback" not in result.stderr
    assert list((tmp_path / "o").glob("*.jsonl")) == []


def test_an_old_file_holding_one_opens_read_only_and_migrate_fails_clearly(tmp_path: Path) -> None:
    source = deep_session(tmp_path / "deep.jsonl", version=2)
    before = source.read_bytes()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        manager = SessionManager.open(source)
    assert any(
        issubclass(w.category, SessionNotWrittenWarning) and "entry d1" in str(w.message) for w in caught
    )
    assert [e.id for e in manager.get_entries()] == [
        "a1"
    ]  # the scanner leaves the deep line out, as documented
    with pytest.raises(SessionReadOnlyError):
        manager.append_message({"role": "user", "content": "x", "timestamp": 1})
    assert source.read_bytes() == before
    result = subprocess.run(
        [sys.executable, "-c", CLI, "migrate", str(source)], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 1 and "entry d1 cannot be written" in result.stderr
    assert "Traceback" not in result.stderr and source.read_bytes() == before


@needs_oracle
def test_pi_fails_to_fork_it_too(tmp_path: Path) -> None:
    source = deep_session(tmp_path / "deep.jsonl")
    (tmp_path / "pi").mkdir()
    result = subprocess.run(
        [
            "node",
            str(ORACLE),
            "static",
            "forkFrom",
            json.dumps([str(source), str(tmp_path), str(tmp_path / "pi")]),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert json.loads(result.stdout) == {"ok": False, "error": "Maximum call stack size exceeded"}
