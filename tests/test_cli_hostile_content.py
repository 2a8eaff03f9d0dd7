"""The read commands on sessions whose content Pi accepts but no well-behaved writer produces
(text that is an object or a number, counts that are strings, odd roles, arguments that are an
array, summaries that are not strings): the generated corpus of
tests/conformance/generate_hostile.py, which Pi 1.6.0 opens and compacts. Every command answers
with exit code 0 and no traceback (issue 22, points 2 and 8)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pisession.cli import main

CORPUS = sorted((Path(__file__).parent / "conformance" / "cases" / "hostile").glob("*.jsonl"))
COMMANDS = [
    ["context"],
    ["context", "--json", "--full"],
    ["tree", "--all"],
    ["tree", "--json", "--all"],
    ["stats"],
    ["stats", "--json"],
    ["export", "--format", "md", "--all", "-o", "out.md"],
    ["export", "--format", "static-html", "-o", "out.html"],
    ["compact", "--plan"],
    ["compact", "--plan", "--json"],
    ["validate"],
]


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR", raising=False)
    monkeypatch.setenv("COLUMNS", "100")
    monkeypatch.chdir(tmp_path)


def test_the_corpus_is_there() -> None:
    assert len(CORPUS) >= 36


@pytest.mark.parametrize("command", COMMANDS, ids=[" ".join(c) for c in COMMANDS])
def test_read_commands_answer_on_every_hostile_session(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for case in CORPUS:
        before = case.read_bytes()
        code = main([*command, str(case)])
        out, err = capsys.readouterr()
        assert "Traceback" not in err, (case.name, err)
        if command[0] == "validate":
            assert code in (0, 1), (case.name, err)  # a finding is not a failure to answer
        else:
            assert code == 0, (case.name, err)
        if "--json" in command:
            json.loads(out)
        assert case.read_bytes() == before  # reading never writes
