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


def test_files_nested_thousands_of_levels_deep_still_resolve(tmp_path: Path) -> None:
    # Pi's merge recurses where both files hold an object; pisession makes it level by level
    # as it is read, so no Python stack limit is reached (Pi's own stack takes ~10,000 levels).
    from pisession.settings import PiSettings

    agent, project = tmp_path / "agent", tmp_path / "project"
    (project / ".pi").mkdir(parents=True)
    agent.mkdir()
    deep = '{"a": ' * 5000 + "1" + "}" * 5000
    (agent / "settings.json").write_text('{"deep": ' + deep + ', "compaction": {"keepRecentTokens": 7}}')
    (project / ".pi" / "settings.json").write_text(
        '{"deep": ' + deep + ', "__proto__": {"sessionDir": "/elsewhere"}}'
    )
    settings = PiSettings.load(str(project), str(agent), project_trusted=True)
    assert settings.errors == ()
    assert settings.compaction_settings().keep_recent_tokens == 7
    assert settings.session_dir == "/elsewhere"
    assert settings.value(*(["deep"] + ["a"] * 5000)) == 1


def test_a_nul_byte_in_a_settings_path_reads_as_no_file(tmp_path: Path) -> None:
    # Pi's existsSync is false for such a path: no settings, no error (ours: no ValueError)
    from pisession.settings import PiSettings, is_project_trusted

    settings = PiSettings.load(str(tmp_path / "a\0b"), str(tmp_path / "c\0d"))
    assert (settings.errors, settings.session_dir, settings.compaction_settings().keep_recent_tokens) == (
        (),
        None,
        20000,
    )
    assert is_project_trusted(str(tmp_path), str(tmp_path / "c\0d")) is False
