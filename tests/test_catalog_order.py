"""Sessions tied on ``modified`` come in Pi's order (``localeCompare`` of their names, after the
mtime for a sessions root), with and without the catalog; golden order from the oracle
(tests/conformance/generate_collation.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pisession import SessionManager
from pisession._collation import collation_key
from pisession.catalog import Catalog
from pisession.cli.main import main

GOLDEN = json.loads((Path(__file__).parent / "conformance" / "golden" / "list_order.json").read_text("utf-8"))


def session(sid: str) -> str:
    header = {
        "type": "session",
        "version": 3,
        "id": sid,
        "timestamp": "2025-01-02T03:04:05.678Z",
        "cwd": "/p",
    }
    message = {
        "type": "message",
        "id": "m",
        "parentId": None,
        "timestamp": "2025-01-02T03:04:06.000Z",
        "message": {"role": "user", "content": "same time", "timestamp": 1735787046000},
    }
    return json.dumps(header) + "\n" + json.dumps(message) + "\n"


@pytest.fixture
def root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    agent = tmp_path / "agent"
    for file in GOLDEN["files"]:
        path = agent / "sessions" / file["folder"] / file["name"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(session(file["id"]))
        os.utime(path, (file["mtime"], file["mtime"]))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    return agent / "sessions"


def relative(root: Path, infos: list[Any]) -> list[str]:
    return [os.path.relpath(info.path, root) for info in infos]


def test_ties_are_ordered_as_pi_orders_them_without_a_catalog(root: Path) -> None:
    assert relative(root, SessionManager.list_all()) == GOLDEN["root"]
    assert relative(root, SessionManager.list_all(str(root / "--one--"))) == GOLDEN["one"]
    assert relative(root, SessionManager.list("/p", str(root / "--one--"))) == GOLDEN["one"]


def test_ties_are_ordered_as_pi_orders_them_through_the_catalog(root: Path, tmp_path: Path) -> None:
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        for _ in range(2):  # cold, then warm
            assert relative(root, catalog.list_all()) == GOLDEN["root"]
            assert relative(root, catalog.list_all(str(root / "--one--"))) == GOLDEN["one"]
            assert relative(root, catalog.list("/p", str(root / "--one--"))) == GOLDEN["one"]


def test_ls_all_json_is_in_pis_order(root: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for extra in ([], ["--no-catalog"]):
        assert main(["ls", "--all", "--json", *extra]) == 0
        listed = json.loads(capsys.readouterr().out)
        assert [os.path.relpath(info["path"], root) for info in listed] == GOLDEN["root"]


def test_the_collation_key_orders_as_locale_compare() -> None:
    """The cases named in the issue: case is weighed after the letter, accents after the letter,
    and '_' comes before '-' (punctuation before digits before letters)."""
    ordered = sorted(["b", "A", "a", "B", "é", "e", "f", "-", "_", "1"], key=collation_key)
    assert ordered == ["_", "-", "1", "a", "A", "b", "B", "e", "é", "f"]
