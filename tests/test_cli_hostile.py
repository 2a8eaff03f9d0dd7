"""Hostile input to the command line (issue 10, items 13-17): a one-line error or a report, never
a traceback, a hang, a MemoryError or raw control characters on the terminal."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
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


# ---- issue 27, item 20: a closed stdout, a NUL byte in the session folder, an odd TZ, for
# every command


def _session_here(tmp_path: Path) -> tuple[str, str]:
    """A session of the current folder in Pi's default folder for it: (its id, an entry id)."""
    from pisession import AssistantMessage, SessionManager, TextContent, UserMessage

    manager = SessionManager.create(os.getcwd())
    manager.append_message(UserMessage(content="hi there", timestamp=1733234400000))
    entry_id = manager.append_message(
        AssistantMessage(
            content=[TextContent(text="hello")], api="x", provider="p", model="m", timestamp=1733234401000
        )
    )
    session_id = manager.get_session_id()
    manager.close()
    return session_id, entry_id


def _argv(command: str, tmp_path: Path, session: str, entry: str) -> list[str]:
    """One ordinary call of ``command``, its SESSION given as an id prefix (looked up in the
    session folder)."""
    prefix = session[:13]
    return {
        "demo": ["demo", str(tmp_path / "demo")],
        "ls": ["ls"],
        "tree": ["tree", prefix],
        "context": ["context", prefix],
        "tail": ["tail", "--interval", "0.05", prefix],
        "search": ["search", "hello"],
        "stats": ["stats", prefix],
        "validate": ["validate", prefix],
        "name": ["name", prefix, "a name"],
        "label": ["label", prefix, entry, "a label"],
        "edit": ["edit", "--omit", prefix, entry],
        "fork": ["fork", "--cwd", str(tmp_path / "other"), prefix],
        "extract": ["extract", "--leaf", entry, prefix],
        "migrate": ["migrate", prefix],
        "branch": ["branch", "--summary", "left behind", prefix, entry],
        "compact": ["compact", "--plan", prefix],
        "export": ["export", "--format", "md", prefix],
        "settings": ["settings"],
        "usage": ["usage"],
        "dataset": ["dataset", str(tmp_path / "out")],
        "models": ["models", "claude"],
        "import": ["import", "codex", str(CODEX_ROLLOUT)],
    }[command]


EVERY_COMMAND = [
    "demo", "ls", "tree", "context", "tail", "search", "stats", "validate", "name", "label", "edit",
    "fork", "extract", "migrate", "branch", "compact", "export", "settings", "usage", "dataset",
    "models", "import",
]  # fmt: skip


def test_every_command_is_tested() -> None:
    from pisession.cli.main import COMMANDS

    assert sorted(EVERY_COMMAND) == sorted(COMMANDS)


CODEX_ROLLOUT = (
    Path(__file__).parent
    / "data/importers/codex/rollout-2026-03-01T10-00-00-0199aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee.jsonl"
)
CHILD_PATH = {"PYTHONPATH": str(Path(__file__).resolve().parents[1])}


def _run_child(argv: list[str], *, timeout: float = 60, **env: str) -> tuple[int | None, str, str]:
    """The command in a child process: (exit status, None when it was still running at
    ``timeout``; stdout; stderr)."""
    args = [sys.executable, "-m", "pisession.cli", *argv]
    try:
        done = subprocess.run(
            args, capture_output=True, text=True, timeout=timeout, env={**os.environ, **CHILD_PATH, **env}
        )
    except subprocess.TimeoutExpired as expired:
        out = expired.stdout.decode() if isinstance(expired.stdout, bytes) else (expired.stdout or "")
        err = expired.stderr.decode() if isinstance(expired.stderr, bytes) else (expired.stderr or "")
        return None, out, err
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("command", EVERY_COMMAND)
def test_closed_stdout_is_a_broken_pipe_not_a_traceback(tmp_path: Path, command: str) -> None:
    # `pisession ls >&-`, a daemon without stdout: Python makes sys.stdout None
    session, entry = _session_here(tmp_path)
    (tmp_path / "other").mkdir()
    argv = _argv(command, tmp_path, session, entry)
    script = (
        "import os, sys\n"
        "os.close(1)\n"
        "sys.stdout = None\n"
        "from pisession.cli.main import console_main\n"
        f"sys.argv = ['pisession', *{argv!r}]\n"
        "sys.exit(console_main())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        timeout=120, env={**os.environ, **CHILD_PATH},
    )  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    assert done.returncode == 1, done.stderr  # as a closed pipe: the output could not be written
    if command == "dataset":  # the work was done before the summary could not be printed
        assert list((tmp_path / "out").rglob("*.parquet"))


def test_closed_stdout_from_the_shell(tmp_path: Path) -> None:
    _session_here(tmp_path)
    done = subprocess.run(
        f"{sys.executable} -m pisession.cli ls >&-",
        shell=True, capture_output=True, text=True, timeout=60,
        env={**os.environ, **CHILD_PATH},
    )  # fmt: skip
    assert (done.returncode, done.stderr) == (1, "")


def test_closed_stderr_and_stdin_are_not_a_traceback(tmp_path: Path) -> None:
    _session_here(tmp_path)
    done = subprocess.run(
        f"{sys.executable} -m pisession.cli ls --json <&- 2>&-",
        shell=True, capture_output=True, text=True, timeout=60,
        env={**os.environ, **CHILD_PATH},
    )  # fmt: skip
    assert done.returncode == 0
    assert len(json.loads(done.stdout)) == 1


@pytest.mark.parametrize("command", EVERY_COMMAND)
@pytest.mark.parametrize("where", ["variable", "setting", "flag", "agent"])
def test_a_nul_byte_in_the_session_folder_is_a_clear_error(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
    where: str,
) -> None:
    # Pi's getSessionDir() hands such a folder on (file:///a%00b is "/a\0b" for it too); the
    # file system refuses it, so every command that reads the session folder says so.
    session, entry = _session_here(tmp_path)
    (tmp_path / "other").mkdir()
    argv = _argv(command, tmp_path, session, entry)
    if where == "variable":
        monkeypatch.setenv("PI_CODING_AGENT_SESSION_DIR", f"file://{tmp_path}/a%00b")
    elif where == "agent":  # Pi's default folders are under the agent folder
        monkeypatch.setenv("PI_CODING_AGENT_DIR", f"file://{tmp_path}/a%00b")
    elif where == "setting":
        (tmp_path / "agent" / "settings.json").write_text(json.dumps({"sessionDir": f"{tmp_path}/a\0b"}))
    elif command in ("demo", "settings", "models"):
        pytest.skip(f"{command} has no --session-dir")
    else:
        argv = [argv[0], "--session-dir", f"file://{tmp_path}/a%00b", *argv[1:]]
    code, out, err = run(capsys, *argv)
    if command in ("demo", "settings", "models"):  # none reads the session folder
        assert code == 0, err
        assert "Traceback" not in err
        return
    assert code != 0
    if command == "validate":  # reports each SESSION it was given, in its report
        assert "holds a NUL byte" in out, out
        return
    assert out == ""
    assert "holds a NUL byte" in err and err.startswith("pisession: error: "), err
    assert err.count("\n") == 1


@pytest.fixture
def odd_zone(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Iterator[str]:
    import time

    zone = request.param
    monkeypatch.setenv("TZ", zone)
    time.tzset()
    yield zone
    monkeypatch.undo()
    time.tzset()


@pytest.mark.parametrize("odd_zone", ["UTC+24", "UTC-30", "UTC+99"], indirect=True)
@pytest.mark.parametrize("command", EVERY_COMMAND)
def test_a_24_hour_time_zone_shows_times_as_node_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], odd_zone: str, command: str
) -> None:
    # The C library (and Node, measured: TZ=UTC+24 node -e 'new Date(...).getHours()') takes
    # such a TZ as a whole day off UTC; Python's datetime.astimezone() refuses an offset of 24 h.
    session, entry = _session_here(tmp_path)
    (tmp_path / "other").mkdir()
    argv = _argv(command, tmp_path, session, entry)
    if command == "tail":  # follows until stopped: run it in a child and stop it
        code, out, err = _run_child(argv, timeout=8, TZ=odd_zone)
        assert "Traceback" not in err, err
        assert "hello" in out
        return
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    day = "2024-12-02" if odd_zone == "UTC+24" or odd_zone == "UTC+99" else "2024-12-04"
    if command in ("ls", "search"):
        assert day in out  # the session's time, a day off UTC's 2024-12-03 as Node shows it


@pytest.mark.skipif(shutil.which("node") is None, reason="no node: Node's reading of TZ not checked")
@pytest.mark.parametrize("zone", ["UTC+24", "UTC-30", "UTC+99"])
def test_node_reads_a_24_hour_zone_as_the_c_library_does(zone: str) -> None:
    # What the test above relies on: Node (Pi's runtime) and Python's time.localtime agree.
    script = "const d = new Date(1733234400000); console.log(JSON.stringify([d.getDate(), d.getHours()]))"
    done = subprocess.run(
        ["node", "-e", script], capture_output=True, text=True, timeout=60, env={**os.environ, "TZ": zone}
    )
    probe = "import time, json; t = time.localtime(1733234400); print(json.dumps([t.tm_mday, t.tm_hour]))"
    env = {**os.environ, "TZ": zone}
    ours = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, env=env)
    assert json.loads(done.stdout) == json.loads(ours.stdout) == [2 if "+" in zone else 4, 14]
