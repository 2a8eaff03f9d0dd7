"""A hostile review of Pi's settings: files that are not files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")

LOAD = """
import json, sys
from pisession.settings import PiSettings, is_project_trusted
settings = PiSettings.load(sys.argv[1], sys.argv[2], project_trusted=True)
print(json.dumps([[e.scope, e.message] for e in settings.errors]))
try:
    print(json.dumps(is_project_trusted(sys.argv[1], sys.argv[2])))
except Exception as error:
    print(json.dumps(type(error).__name__))
"""


def load_in_a_child(project: Path, agent: Path) -> list[object]:
    # in a child process: a read that blocks must fail the test, not hang the suite
    done = subprocess.run(
        [sys.executable, "-c", LOAD, str(project), str(agent)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def test_a_fifo_for_a_settings_file_is_an_error_not_a_hang(tmp_path: Path) -> None:
    # Pi 1.6.0 itself blocks forever on such a file (readFileSync waits for a writer)
    agent, project = tmp_path / "agent", tmp_path / "project"
    (project / ".pi").mkdir(parents=True)
    agent.mkdir()
    os.mkfifo(agent / "settings.json")
    os.mkfifo(project / ".pi" / "settings.json")
    os.mkfifo(agent / "trust.json")
    errors, trusted = load_in_a_child(project, agent)
    assert [scope for scope, _ in errors] == ["global", "project"]
    assert all("not a regular file" in message for _, message in errors)
    assert trusted == "SettingsError"


def test_a_directory_or_dev_null_for_a_settings_file_reads_as_pi_reads_it(tmp_path: Path) -> None:
    agent, project = tmp_path / "agent", tmp_path / "project"
    (project / ".pi").mkdir(parents=True)
    (agent / "settings.json").mkdir(parents=True)  # Pi: EISDIR, recorded, not fatal
    (project / ".pi" / "settings.json").symlink_to(os.devnull)  # Pi: empty, no settings, no error
    errors, trusted = load_in_a_child(project, agent)
    assert [scope for scope, _ in errors] == ["global"]
    assert trusted is False
