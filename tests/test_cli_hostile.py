"""Hostile input to the command line (issue 10, items 13-17): a one-line error or a report, never
a traceback, a hang, a MemoryError or raw control characters on the terminal."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from pisession._json import loads as js_loads
from pisession.cli import main

HEADER = {
    "type": "session",
    "version": 3,
    "id": "01938cd2-1b00-7383-868d-05a8d6c6a856",
    "timestamp": "2024-12-03T14:00:00.000Z",
    "cwd": "/project",
}
ZERO_USAGE = {
    "input": 0,
    "output": 0,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 0,
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
}


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR", raising=False)
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.chdir(tmp_path)


def write(path: Path, *entries: object) -> Path:
    path.write_text("".join(json.dumps(e) + "\n" for e in entries), encoding="utf-8")
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def message(entry_id: object, parent: object, role: str = "user", **extra: object) -> dict[str, object]:
    body: dict[str, object] = {"role": role, "content": "hi", "timestamp": 1, **extra}
    if role == "assistant":
        body["content"] = [{"type": "text", "text": ""}]
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": "2024-12-03T14:00:01.000Z",
        "message": body,
    }


# ---- 13: stats on an aborted request (all-zero usage)


def test_stats_on_all_zero_usage(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    aborted = message(
        "a1", "u1", "assistant", provider="anthropic", model="m", usage=ZERO_USAGE, stopReason="aborted"
    )
    path = write(tmp_path / "s.jsonl", HEADER, message("u1", None), aborted)
    code, out, err = run(capsys, "stats", str(path))
    assert (code, err) == (0, "")
    assert "1 assistant messages" in out
    assert "total" in out and "$0.0000" in out
    code, out, _ = run(capsys, "stats", str(path), "--json")
    data = json.loads(out)
    assert (code, data["total"]["calls"], data["byModel"]) == (0, 1, [])


# ---- 14: validate never blocks, never runs out of memory or recursion


def run_cli(*argv: str, stdin: object = subprocess.DEVNULL) -> subprocess.CompletedProcess[str]:
    code = "import sys; from pisession.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, *argv],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=stdin,  # type: ignore[arg-type]
    )


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this platform")
def test_validate_a_fifo_does_not_block(tmp_path: Path) -> None:
    fifo = tmp_path / "planted.jsonl"
    os.mkfifo(fifo)
    result = run_cli("validate", str(fifo))
    assert result.returncode == 1
    assert "not a regular file" in result.stdout
    assert "Traceback" not in result.stderr


def test_validate_piped_stdin_and_dev_zero(tmp_path: Path) -> None:
    if not os.path.exists("/dev/zero"):
        pytest.skip("no /dev/zero")
    read, write_end = os.pipe()  # a writer that never writes nor closes
    try:
        result = run_cli("validate", "/dev/stdin", "/dev/zero", "--json", stdin=read)
    finally:
        os.close(read)
        os.close(write_end)
    reports = json.loads(result.stdout)
    assert result.returncode == 1
    assert [r["ok"] for r in reports] == [False, False]
    assert all("not a regular file" in r["problems"][0]["message"] for r in reports)


def test_validate_a_100k_deep_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path / "deep.jsonl", HEADER, message("u1", None))
    with path.open("a") as handle:
        handle.write("[" * 100_000 + "]" * 100_000 + "\n")
        handle.write('{"a":' * 100_000 + "1" + "}" * 100_000 + "\n")
    code, out, err = run(capsys, "validate", str(path))
    assert (code, err) == (1, "")
    assert "line 3: error: " in out and "line 4: error: " in out
    assert "nested too deeply" in out


# ---- 15: ids, parents and targets that are JSON objects or arrays


def test_unhashable_ids(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(
        tmp_path / "s.jsonl",
        HEADER,
        message("u1", None),
        message({"x": 1}, "u1", "assistant", provider="p", model="m"),
        message("u2", ["u1"]),
        message("u3", "u1"),
        {"type": "label", "id": "l1", "parentId": "u3", "timestamp": "t", "targetId": {"t": 1}, "label": "x"},
        {
            "type": "context_edit",
            "id": "e1",
            "parentId": "l1",
            "timestamp": "t",
            "targetId": [1],
            "replacement": None,
        },
    )
    for argv in (
        ["tree"],
        ["tree", "--all"],
        ["tree", "--json"],
        ["context"],
        ["stats"],
        ["export", "--format", "md", "--all"],
        ["export", "--format", "html", "--all"],
        ["export", "--format", "jsonl", "--all"],
        ["export", "--format", "pi-jsonl"],
    ):
        code, out, err = run(capsys, argv[0], str(path), *argv[1:])
        assert (code, err) == (0, ""), argv
        assert out
    code, out, err = run(capsys, "validate", str(path))
    assert code == 1 and err == ""
    assert 'orphan: the parent ["u1"] of entry u2' in out or "orphan: the parent ['u1'] of entry u2" in out
    assert "label l1: targetId" in out and "context_edit e1: targetId" in out


# ---- 16: a header id that is not a string


def test_a_non_string_header_id_does_not_break_ls_or_lookup(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    for i, odd in enumerate([42, 4.5, None, {"a": 1}, [1], True]):
        write(folder / f"odd{i}.jsonl", {**HEADER, "id": odd}, message("u1", None))
    write(folder / "good.jsonl", HEADER, message("u1", None))
    code, out, err = run(capsys, "ls", "--session-dir", str(folder), "--cwd", "/project")
    assert (code, err) == (0, "")
    assert "7 sessions" in out and "01938cd2" in out and '{"a":1}' in out
    code, out, err = run(capsys, "tree", "01938cd2", "--session-dir", str(folder))
    assert (code, err) == (0, "")
    code, out, err = run(capsys, "ls", "--all", "--session-dir", str(folder))
    assert (code, err) == (0, "")


# ---- 17: control characters from the session never reach the terminal raw


HOSTILE = "\x1b]52;c;cHduZWQ=\x07\x1b]0;title\x07\x1b[2J\x9b31m\x90q\x9c\rgone\x08\x7f"


def assert_clean(text: str) -> None:
    bad = [c for c in text if (ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F]
    assert not bad, bad


def test_control_characters_are_shown_escaped(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tool = {
        "type": "message",
        "id": "t1",
        "parentId": "a1",
        "timestamp": "2024-12-03T14:00:02.000Z",
        "message": {
            "role": "toolResult",
            "toolCallId": "c1",
            "toolName": "bash" + HOSTILE,
            "content": [{"type": "text", "text": "out" + HOSTILE}],
            "isError": False,
            "timestamp": 2,
        },
    }
    name = {"type": "session_info", "id": "n1", "parentId": "t1", "timestamp": "t", "name": "n" + HOSTILE}
    user = message("u1", None)
    user["message"]["content"] = "ask" + HOSTILE  # type: ignore[index]
    folder = tmp_path / "sessions"
    folder.mkdir()
    path = write(
        folder / "s.jsonl",
        {**HEADER, "cwd": "/p" + HOSTILE},
        user,
        message("a1", "u1", "assistant", provider="p" + HOSTILE, model="m"),
        tool,
        name,
    )
    for argv in (
        ["tree", str(path)],
        ["tree", str(path), "--json"],
        ["context", str(path)],
        ["context", str(path), "--full"],
        ["context", str(path), "--json"],
        ["stats", str(path)],
        ["validate", str(path)],
        ["export", str(path), "--format", "md"],
        ["export", str(path), "--format", "html", "--all"],
        ["export", str(path), "--format", "jsonl"],
        ["ls", "--session-dir", str(folder), "--cwd", "/p" + HOSTILE],
        ["ls", "--session-dir", str(folder), "--all"],
        ["label", str(path), "u1" + HOSTILE, "x"],
    ):
        code, out, err = run(capsys, *argv)
        assert code in (0, 1), argv
        assert_clean(out)
        assert_clean(err)
        if argv[-1] == "--json" or argv[-1] == "jsonl":
            for line in out.splitlines() if argv[-1] == "jsonl" else [out]:
                json.loads(line)  # escaped as JSON escapes: still valid JSON
    code, out, _ = run(capsys, "tree", str(path))
    assert "\\u001b]52;c;" in out  # visible, not executed
    code, out, _ = run(capsys, "ls", "--session-dir", str(folder), "--all")
    assert "n\\u001b" in out


def test_tail_shows_control_characters_escaped(tmp_path: Path) -> None:
    user = message("u1", None)
    user["message"]["content"] = "ask" + HOSTILE  # type: ignore[index]
    path = write(tmp_path / "s.jsonl", HEADER, user)
    code = (
        "import sys, threading, _thread; from pisession.cli import main\n"
        "threading.Timer(1.5, _thread.interrupt_main).start()\n"
        "sys.exit(main(sys.argv[1:]))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code, "tail", str(path)], capture_output=True, text=True, timeout=60
    )
    assert "ask\\u001b]52" in result.stdout
    assert_clean(result.stdout)


def test_exports_are_written_private(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path / "s.jsonl", HEADER, message("u1", None))
    old = os.umask(0)
    try:
        for fmt in ("md", "html", "jsonl", "pi-jsonl"):
            target = tmp_path / f"out.{fmt}"
            target.write_text("stale")
            target.chmod(0o666)
            code, _, err = run(capsys, "export", str(path), "--format", fmt, "-o", str(target))
            assert code == 0, err
            assert stat.S_IMODE(target.stat().st_mode) == 0o600, fmt
            assert target.read_text() != "stale"
    finally:
        os.umask(old)


DEEP_CASE = Path(__file__).parent / "conformance" / "cases" / "v2_deep_entries.jsonl"


@pytest.mark.parametrize(
    "argv",
    [
        ["tree"],
        ["tree", "--json"],
        ["tree", "--all"],
        ["context", "--json"],
        ["stats", "--json"],
        ["export", "--format", "md"],
        ["export", "--format", "html"],
        ["export", "--format", "static-html"],
        ["validate", "--json"],
    ],
    ids=" ".join,
)
def test_entries_nested_deeper_than_the_json_module_goes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    """Pi reads lines nested past the json module's limit (about 1,000 levels): every command
    shows them (JSON through the non-recursive encoder), none raises RecursionError."""
    path = tmp_path / "deep.jsonl"
    path.write_bytes(DEEP_CASE.read_bytes())
    code, out, err = run(capsys, argv[0], str(path), *argv[1:])
    assert code == 0, err
    assert out and "Traceback" not in out + err
    if "--json" in argv:
        js_loads(out)  # the json module could not read it back either
    assert path.read_bytes() == DEEP_CASE.read_bytes()


def test_validate_warns_that_pi_reads_an_entry_without_parent_id_as_a_root(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # OpenClaw writes entries without parentId; Pi 1.6.0 reads each as a root (checked with the
    # oracle: the branch of the entry after it is [it, the entry after it]).
    orphan = message("b1", None)
    del orphan["parentId"]
    path = write(tmp_path / "s.jsonl", HEADER, message("a1", None), orphan, message("c1", "b1"))
    code, out, _ = run(capsys, "validate", str(path))
    assert code == 0, out
    assert "line 3: warning: entry b1 has no parentId: Pi reads it as a root" in out and "error" not in out
    from pisession import read_session

    assert [e.id for e in read_session(path).get_branch()] == ["b1", "c1"]
