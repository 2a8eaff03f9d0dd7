"""The four scripts a newcomer wrote from the docs alone (issue 21) run on generated sessions:
written by the real Pi 1.6.0 SessionManager through the oracle (skipped without node), and the
same operations replayed through pisession (always)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pi_corpus
import pytest
from conftest import ORACLE_HOME, oracle_available

HERE = Path(__file__).resolve().parent
WRITERS = [
    pytest.param(
        "pi", marks=pytest.mark.skipif(not oracle_available(), reason="needs node and the pi-oracle")
    ),
    "pisession",
]


@pytest.fixture(autouse=True)
def _oracle_home(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_ORACLE_HOME", str(ORACLE_HOME))  # the scripts' HOME is a temporary one


def run(script: str, tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "HOME": str(tmp_path / "home"),
        "PI_CODING_AGENT_DIR": str(tmp_path / "home" / "agent"),
        "TMPDIR": str(tmp_path),
    }
    env.pop("PI_CODING_AGENT_SESSION_DIR", None)
    env.pop("PISESSION_CATALOG", None)
    return subprocess.run(
        [sys.executable, str(HERE / script), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=240,
    )


def settings(tmp_path: Path, values: dict[str, object]) -> None:
    agent = tmp_path / "home" / "agent"
    agent.mkdir(parents=True, exist_ok=True)
    (agent / "settings.json").write_text(json.dumps(values))


def validate(path: str) -> None:
    from pisession.cli import main

    assert main(["validate", path]) == 0


@pytest.mark.parametrize("writer", WRITERS)
def test_auto_compact_compacts_once(tmp_path: Path, writer: str) -> None:
    settings(tmp_path, {"compaction": {"reserveTokens": 2000, "keepRecentTokens": 1500}})
    path = pi_corpus.write_session(
        str(tmp_path / "s"), "/work/project", 12, pi_corpus.START, "parser", writer
    )
    first = run("newcomer_auto_compact.py", tmp_path, path, "--window", "8000")
    assert first.returncode == 3, first.stdout + first.stderr
    assert "above_threshold" in first.stdout and "compacted: " in first.stdout
    second = run("newcomer_auto_compact.py", tmp_path, path, "--window", "8000")
    assert second.returncode == 0, second.stdout + second.stderr
    assert "before_compaction" in second.stdout and "nothing to do" in second.stdout
    validate(path)


@pytest.mark.parametrize("writer", WRITERS)
def test_async_backend_answers_every_user_message_once(tmp_path: Path, writer: str) -> None:
    path = pi_corpus.write_session(str(tmp_path / "s"), "/work/project", 2, pi_corpus.START, "parser", writer)
    result = run("newcomer_async_backend.py", tmp_path, path, "--turns", "40")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "user messages written: 40; reacted to: 40; custom entries: 40" in result.stdout
    assert "every parent exists: True" in result.stdout
    assert "resumes with every user message on its branch: True" in result.stdout
    validate(path)


@pytest.mark.parametrize("writer", WRITERS)
def test_analytics_over_a_settings_session_dir(tmp_path: Path, writer: str) -> None:
    root = tmp_path / "pi-sessions"
    settings(tmp_path, {"sessionDir": str(root)})
    assert pi_corpus.main(["many", str(root), "--count", "12", "--writer", writer]) == 0
    result = run("newcomer_analytics.py", tmp_path, "invoice")
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"session folder: {root} (global)" in result.stdout
    assert "12 sessions in 3 projects" in result.stdout
    # "invoice" is WORDS[1]: sessions 1 and 7, both in /home/me/blog, 2 and 4 turns, 2 hits a turn
    assert "sessions mentioning 'invoice': 2" in result.stdout
    assert "8 hits" in result.stdout and "4 hits" in result.stdout
    assert "/home/me/blog: 4 sessions" in result.stdout


@pytest.mark.parametrize("writer", WRITERS)
def test_fork_and_navigate(tmp_path: Path, writer: str) -> None:
    path = pi_corpus.write_session(str(tmp_path / "s"), "/work/project", 4, pi_corpus.START, "parser", writer)
    result = run(
        "newcomer_fork_navigate.py", tmp_path, path, "--cwd", "/work/v2", "--session-dir", str(tmp_path / "f")
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"(parent {path})" in result.stdout
    assert "editor text: 'Turn 2: look at the parser in module_2.py'" in result.stdout
    assert "label 'retry'" in result.stdout
    assert "branchSummary: The user explored a different conversation branch" in result.stdout
    (fork,) = (tmp_path / "f").glob("*.jsonl")
    validate(str(fork))
