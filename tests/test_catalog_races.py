"""The catalog read while another process writes it: a listing, a search or a usage report reads
one state of the database, whatever another process rebuilt or caught up between its refresh and
its reads."""

from __future__ import annotations

import json
import math
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import pisession.catalog._catalog as catalog_impl
import pisession.catalog._refresh as refresh_module
from pisession._discovery import list_all_sessions
from pisession.catalog import Catalog
from pisession.usage import usage_report
from tests.test_catalog import REPO, header, msg, sessions, write


def rebuilt_by_another_process(database: Path) -> None:
    """What another process's rebuild leaves: no rows (the next rows it writes reuse the ids)."""
    with sqlite3.connect(database, isolation_level=None) as other:
        for table in ("files", "messages", "usage", "usage_sums", "usage_damage"):
            other.execute(f"DELETE FROM {table}")
    other.close()


def test_a_rebuild_between_two_commits_of_a_refresh_never_mixes_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The refresh commits between files; another process rebuilding the catalog then empties it,
    # and the next files' rows get the ids the first ones had. Their texts must not be swapped.
    folder = tmp_path / "sessions"
    sessions(folder, 4)
    database = tmp_path / "catalog.sqlite3"
    update = refresh_module._update
    calls = 0

    def with_a_rebuild_after_the_first_file(connection: sqlite3.Connection, *args: Any) -> Any:
        nonlocal calls
        calls += 1
        if calls == 2:  # between the first file's commit and the second's transaction
            connection.execute("COMMIT")
            rebuilt_by_another_process(database)
            connection.execute("BEGIN IMMEDIATE")
        return update(connection, *args)

    monkeypatch.setattr(refresh_module, "_update", with_a_rebuild_after_the_first_file)
    with Catalog(database) as catalog:
        listed = catalog.list_all(str(folder))
    assert calls >= 4
    assert listed == list_all_sessions(str(folder))


def test_a_rebuild_between_a_refresh_and_its_reads_is_not_seen(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The listing, its JSON and a search read the state their refresh left, not a rebuild that
    # gave the same files other ids (and no fall back to the files is needed for it).
    folder = tmp_path / "sessions"
    sessions(folder, 4)
    database = tmp_path / "catalog.sqlite3"
    with Catalog(database) as catalog:
        catalog.search("invoice", all=True, session_dir=str(folder))
    refreshed = catalog_impl.Catalog._current

    def then_rebuilt_with_other_ids(self: Catalog, *args: Any, **kwargs: Any) -> Any:
        found = refreshed(self, *args, **kwargs)
        rebuild_with_other_ids(database, folder)
        return found

    monkeypatch.setattr(catalog_impl.Catalog, "_current", then_rebuilt_with_other_ids)
    scanned = list_all_sessions(str(folder))
    with Catalog(database) as catalog:
        assert catalog.list_all(str(folder)) == scanned
        assert catalog.last_error is None
        assert json.loads(catalog.list_all_json(str(folder))) == [info.to_wire() for info in scanned]
        assert catalog.last_error is None


def rebuild_with_other_ids(database: Path, folder: Path) -> None:
    rebuilt_by_another_process(database)
    with sqlite3.connect(database, isolation_level=None) as other:
        other.execute("INSERT INTO files (path, dir) VALUES ('/elsewhere/x.jsonl', '/elsewhere')")
    other.close()
    with Catalog(database) as another:
        another.search("invoice", all=True, session_dir=str(folder))


def test_a_search_reads_the_state_its_refresh_left(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "sessions"
    sessions(folder, 4)
    database = tmp_path / "catalog.sqlite3"
    with Catalog(database) as catalog:
        wanted = catalog.search("invoice", all=True, session_dir=str(folder), limit=None)
    from pisession.catalog import _search

    scope = _search.scope
    rebuilding = False

    def then_rebuilt_with_other_ids(*args: Any, **kwargs: Any) -> Any:
        nonlocal rebuilding
        found = scope(*args, **kwargs)
        if not rebuilding:
            rebuilding = True
            rebuild_with_other_ids(database, folder)
        return found

    monkeypatch.setattr(_search, "scope", then_rebuilt_with_other_ids)
    with Catalog(database) as catalog:
        assert catalog.search("invoice", all=True, session_dir=str(folder), limit=None) == wanted
        assert catalog.last_error is None
    assert len(wanted) == 4


REBUILDER = """
import sqlite3, sys
import pisession.catalog._refresh as refresh
from pisession.catalog import Catalog
refresh._COMMIT_EVERY = 0.0  # a commit after every file: more chances to interleave
database, folder = sys.argv[1], sys.argv[2]
while True:
    # a rebuild: every row deleted at once, then written again file by file (committing between)
    with sqlite3.connect(database, isolation_level=None, timeout=5) as db:
        db.execute("BEGIN IMMEDIATE")
        for table in ("files", "messages", "usage", "usage_sums", "usage_damage"):
            db.execute(f"DELETE FROM {table}")
        db.execute("COMMIT")
    db.close()
    with Catalog(database, timeout=5) as catalog:
        catalog.list_all(folder)
"""


def test_listings_racing_a_rebuilding_process_equal_the_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(refresh_module, "_COMMIT_EVERY", 0.0)
    folder = tmp_path / "sessions"
    folder.mkdir()
    for n in range(12):
        write(
            folder / f"s{n:02}.jsonl",
            header(f"id-{n}", stamp=f"2025-01-{n + 1:02}T00:00:00.000Z"),
            *[
                msg(f"m{n}-{k}", "user", f"session {n} message {k} " + "word " * (n * 40), 1735787045000 + k)
                for k in range(6)
            ],
        )
    database = tmp_path / "shared.sqlite3"
    scanned = list_all_sessions(str(folder))
    with Catalog(database) as catalog:
        assert catalog.list_all(str(folder)) == scanned
    as_json = json.dumps([info.to_wire() for info in scanned], indent=2, ensure_ascii=False) + "\n"
    with Catalog(":memory:") as fresh:
        found = fresh.search("message", all=True, session_dir=str(folder), limit=None)
    rebuilder = subprocess.Popen([sys.executable, "-c", REBUILDER, str(database), str(folder)], cwd=REPO)
    try:
        for n in range(150):
            with Catalog(database, timeout=5) as catalog:
                if n % 3 == 0:
                    assert catalog.list_all(str(folder)) == scanned, f"call {n}"
                elif n % 3 == 1:
                    assert catalog.list_all_json(str(folder)).decode() == as_json, f"call {n}"
                else:
                    hits = catalog.search("message", all=True, session_dir=str(folder), limit=None)
                    assert hits == found, f"call {n}"
            assert rebuilder.poll() is None
    finally:
        rebuilder.kill()
        rebuilder.wait()


def usage_line(entry_id: str, cost: float) -> bytes:
    entry = {
        "type": "usage",
        "id": entry_id,
        "parentId": None,
        "timestamp": "2026-11-03T09:00:00.000Z",
        "kind": "k",
        "provider": "p",
        "model": "m",
        "usage": {"input": 5, "output": 5, "cacheRead": 0, "cacheWrite": 0, "cost": {"total": cost}},
    }
    return json.dumps(entry).encode()


def test_a_line_another_process_catches_up_during_a_report_counts_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The report's refresh sees the last line unfinished ($2.00 of the $3.00); a writer finishes
    # it and another process catches the file up before the report sums: still $3.00.
    folder = tmp_path / "sessions"
    folder.mkdir()
    path = write(folder / "s.jsonl", header("id-s"))
    with open(path, "ab") as handle:
        handle.write(usage_line("u1", 1.0) + b"\n" + usage_line("u2", 2.0))
    database = tmp_path / "catalog.sqlite3"
    refreshed = catalog_impl.Catalog._current
    caught_up = False

    def then_caught_up_elsewhere(self: Catalog, *args: Any, **kwargs: Any) -> Any:
        nonlocal caught_up
        found = refreshed(self, *args, **kwargs)
        if not caught_up:
            caught_up = True
            with open(path, "ab") as handle:
                handle.write(b"\n")
            with Catalog(database) as other:
                monkeypatch.setattr(catalog_impl.Catalog, "_current", refreshed)
                # a report's refresh (a full one would read the usage-only row again, in full)
                usage_report("daily", timezone="UTC", session_dir=str(folder), catalog=other)
                assert other.last_report.appended == 1
                monkeypatch.setattr(catalog_impl.Catalog, "_current", then_caught_up_elsewhere)
        return found

    monkeypatch.setattr(catalog_impl.Catalog, "_current", then_caught_up_elsewhere)
    with Catalog(database) as catalog:
        report = usage_report("daily", timezone="UTC", session_dir=str(folder), catalog=catalog)
    assert caught_up
    assert math.isclose(report.totals.total_cost, 3.0, rel_tol=1e-12)
    files = usage_report("daily", timezone="UTC", session_dir=str(folder), catalog=False)
    assert math.isclose(files.totals.total_cost, 3.0, rel_tol=1e-12)


def test_rows_another_catalog_writes_between_two_commits_of_a_first_build_are_looked_up(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A first build looks no row up while the catalog has none; another process may write rows
    # between two of its write transactions: the next one must look them up, not add them again.
    folder = tmp_path / "sessions"
    sessions(folder, 6)
    database = tmp_path / "catalog.sqlite3"
    monkeypatch.setattr(refresh_module, "_COMMIT_EVERY", -1.0)  # a transaction per file
    other = Catalog(database)
    original = refresh_module._take_turns
    calls = []

    def between_two_commits(connection: sqlite3.Connection) -> None:
        calls.append(1)
        connection.execute("COMMIT")
        if len(calls) == 1:  # the first file is written: the other catalog writes every row
            other.refresh(str(folder))
        connection.execute("BEGIN IMMEDIATE")

    monkeypatch.setattr(refresh_module, "_take_turns", between_two_commits)
    with Catalog(database) as catalog, other:
        assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))
        assert len(calls) >= 2
        assert catalog.last_error is None  # (not a fall-back to a catalog in memory)
        monkeypatch.setattr(refresh_module, "_take_turns", original)
        with sqlite3.connect(database) as db:
            assert db.execute("SELECT COUNT(*), COUNT(DISTINCT path) FROM files").fetchone() == (6, 6)
        assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))


def test_a_first_build_alone_looks_no_row_up_across_its_transactions(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Guard for the test above: with no other writer between its transactions, a first build
    # knows every row is its own (no lookup, no usage to drop) from the first file to the last
    folder = tmp_path / "sessions"
    sessions(folder, 6)
    monkeypatch.setattr(refresh_module, "_COMMIT_EVERY", -1.0)  # a transaction per file
    update = refresh_module._update
    rowless: list[bool] = []

    def recorded(*args: Any) -> Any:
        rowless.append(args[-1])
        return update(*args)

    monkeypatch.setattr(refresh_module, "_update", recorded)
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))
    assert rowless == [True] * 6
