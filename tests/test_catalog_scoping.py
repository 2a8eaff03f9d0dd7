"""A folder the user names is listed and searched, "nothing found" says what was looked through,
truncated output says so, and the sessions that match can be listed with their hit counts."""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest

from pisession import SessionManager
from pisession._discovery import list_all_sessions
from pisession.catalog import Catalog, SessionMatch, search_sessions
from pisession.cli.main import main
from tests.test_catalog import header, msg, write


@pytest.fixture
def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Two projects' folders under Pi's sessions root; the word "ledger" in 5 messages of 3 sessions."""
    agent = tmp_path / "agent"
    root = agent / "sessions"
    one, two = root / "--alpha--", root / "--beta--"
    one.mkdir(parents=True)
    two.mkdir()
    write(
        one / "a1.jsonl",
        header("a1", cwd="/alpha"),
        msg("m1", "user", "the ledger is off", 1735787045001),
        msg("m2", "assistant", "ledger fixed", 1735787045002),
    )
    write(one / "a2.jsonl", header("a2", cwd="/alpha"), msg("m3", "user", "nothing here", 1735787045003))
    write(
        two / "b1.jsonl",
        header("b1", cwd="/beta"),
        msg("m4", "user", "ledger again", 1735787045004),
        msg("m5", "user", "and the ledger", 1735787045005),
    )
    write(two / "b2.jsonl", header("b2", cwd="/beta"), msg("m6", "user", "a ledger", 1735787045006))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR", raising=False)
    return agent


def test_a_sessions_root_named_as_a_folder_lists_its_projects_sessions(agent: Path, tmp_path: Path) -> None:
    root = str(agent / "sessions")
    everything = SessionManager.list_all()
    assert [info.id for info in everything] == ["b2", "b1", "a2", "a1"]
    assert SessionManager.list_all(root) == everything
    assert list_all_sessions(root) == everything
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        assert catalog.list_all(root) == everything
        assert {hit.session_id for hit in catalog.search("ledger", all=True, session_dir=root)} == {
            "a1",
            "b1",
            "b2",
        }


@pytest.mark.parametrize("fts", [True, False])
def test_a_search_in_a_named_folder_needs_no_all(agent: Path, tmp_path: Path, fts: bool) -> None:
    folder = str(agent / "sessions" / "--beta--")
    with Catalog(tmp_path / "catalog.sqlite3", fts=fts) as catalog:
        found = catalog.search("ledger", session_dir=folder, cwd=None)
        assert [hit.entry_id for hit in found] == ["m6", "m5", "m4"]
        assert catalog.search("ledger", session_dir=folder, cwd="/alpha") == []  # as list("/alpha", folder)
        assert [h.entry_id for h in catalog.search("ledger", session_dir=folder, cwd="/beta")] == [
            "m6",
            "m5",
            "m4",
        ]


@pytest.mark.parametrize("fts", [True, False])
def test_the_sessions_that_match_with_their_hit_counts(agent: Path, tmp_path: Path, fts: bool) -> None:
    with Catalog(tmp_path / "catalog.sqlite3", fts=fts) as catalog:
        matches = catalog.search_sessions("ledger", all=True)
        every_hit = catalog.search("ledger", all=True, limit=None)
        users = catalog.search_sessions("ledger", all=True, role="user")
    counted = collections.Counter(hit.session_id for hit in every_hit)
    assert [(m.session_id, m.hits) for m in matches] == [("b2", 1), ("b1", 2), ("a1", 2)]
    assert dict(counted) == {m.session_id: m.hits for m in matches}
    assert all(
        isinstance(m, SessionMatch) and m.session_path.endswith(f"{m.session_id}.jsonl") for m in matches
    )
    assert matches[0].newest is not None and matches[0].newest.timestamp() == 1735787045.006
    assert [(m.session_id, m.hits) for m in users] == [("b2", 1), ("b1", 2), ("a1", 1)]
    assert [m.to_wire() for m in search_sessions("ledger", all=True)] == [m.to_wire() for m in matches]


def test_the_cli_searches_a_named_folder_and_says_what_it_searched(
    agent: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = str(agent / "sessions" / "--beta--")
    assert main(["search", "ledger", "--session-dir", folder, "--json"]) == 0
    assert [hit["entryId"] for hit in json.loads(capsys.readouterr().out)] == ["m6", "m5", "m4"]
    assert main(["search", "zebra", "--session-dir", folder]) == 0
    assert capsys.readouterr().out.strip() == f"No messages match 'zebra' in the sessions in {folder}."
    assert main(["search", "zebra", "--all"]) == 0
    assert f"in every project's sessions ({agent / 'sessions'})" in capsys.readouterr().out


def test_truncated_search_output_says_how_many_there_are(
    agent: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["search", "ledger", "--all", "-n", "2"]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith("showing 2 of 5 matches (-n to see more), newest first")
    assert main(["search", "ledger", "--all", "-n", "5"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1].startswith("5 matches, newest first")


def test_the_cli_lists_the_sessions_that_match(agent: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["search", "ledger", "--all", "--sessions", "--json"]) == 0
    assert [(m["sessionId"], m["hits"]) for m in json.loads(capsys.readouterr().out)] == [
        ("b2", 1),
        ("b1", 2),
        ("a1", 2),
    ]
    assert main(["search", "ledger", "--all", "--sessions"]) == 0
    out = capsys.readouterr().out
    assert "3 sessions, 5 matching messages" in out and "b1.jsonl" in out


def test_ls_in_a_shared_folder_says_why_it_lists_nothing(
    agent: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = str(agent / "sessions" / "--beta--")
    assert main(["ls", "--session-dir", folder, "--cwd", "/alpha"]) == 0
    out = capsys.readouterr().out.strip()
    assert out.startswith(f"No sessions of /alpha in {folder} (2 of other folders there: --all lists them")
    assert main(["ls", "--all", "--session-dir", folder]) == 0
    assert "2 sessions" in capsys.readouterr().out
