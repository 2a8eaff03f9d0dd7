"""Names Pi cannot open (not UTF-8) are skipped as Pi skips them, and a search limit past SQLite's
integers is no limit: neither ends in a traceback nor abandons the catalog."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import ORACLE, oracle_available

from pisession import SessionManager, to_wire
from pisession.catalog import Catalog
from pisession.cli.main import main
from tests.test_catalog import header, msg, write

pytestmark = pytest.mark.skipif(
    os.name != "posix", reason="names that are not UTF-8 need a POSIX file system"
)


def pi_list_all(agent: Path, *args: str) -> Any:
    result = subprocess.run(
        ["node", str(ORACLE), "static", "listAll", json.dumps(list(args))],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
        env={**os.environ, "PI_CODING_AGENT_DIR": str(agent)},
    )
    return json.loads(result.stdout)["value"]


@pytest.fixture
def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    agent = tmp_path / "agent"
    project = agent / "sessions" / "--project--"
    project.mkdir(parents=True)
    write(project / "good.jsonl", header("good"), msg("g", "user", "hello from a good name"))
    raw = os.fsencode(project)
    write(
        Path(os.fsdecode(raw + b"/bad\xff.jsonl")), header("bad"), msg("b", "user", "hello from a bad name")
    )
    odd = os.fsdecode(os.fsencode(agent / "sessions") + b"/--odd\xfe--")
    os.mkdir(odd)
    write(Path(odd) / "inside.jsonl", header("inside"), msg("i", "user", "hello from a bad folder"))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    return agent


def test_files_and_folders_whose_names_are_not_utf8_are_skipped(agent: Path, tmp_path: Path) -> None:
    project = str(agent / "sessions" / "--project--")
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        everything = catalog.list_all()
        one = catalog.list_all(project)
        assert catalog.last_error is None
        hits = catalog.search("hello", all=True)
    assert [info.id for info in everything] == [info.id for info in one] == ["good"]
    assert [hit.session_id for hit in hits] == ["good"]
    assert SessionManager.list_all() == everything
    assert SessionManager.list_all(project) == one
    bad_folder = os.fsdecode(os.fsencode(agent / "sessions") + b"/--odd\xfe--")
    assert SessionManager.list_all(bad_folder) == []
    if oracle_available():
        assert [to_wire(info) for info in everything] == pi_list_all(agent)
        assert [to_wire(info) for info in one] == pi_list_all(agent, project)


def test_the_cli_lists_and_searches_past_names_that_are_not_utf8(
    agent: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["ls", "--all"]) == 0
    assert main(["ls", "--all", "--json"]) == 0
    assert main(["search", "hello", "--all"]) == 0
    out, err = capsys.readouterr()
    assert "good.jsonl" in out and "bad" not in out and "not used" not in err


def test_a_search_limit_past_sqlites_integers_is_no_limit(
    agent: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["search", "hello", "--all", "-n", "99999999999999999999", "--json"]) == 0
    out, err = capsys.readouterr()
    assert [hit["sessionId"] for hit in json.loads(out)] == ["good"]
    assert "not used" not in err
    with Catalog() as catalog:
        assert len(catalog.search("hello", all=True, limit=10**30)) == 1
        assert catalog.last_error is None
