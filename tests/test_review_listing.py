"""Review findings for the catalog's kept JSON (``Catalog.list_all_json``) and ``Record``."""

from __future__ import annotations

import json
import sqlite3
import sys
import time
import traceback
from pathlib import Path
from typing import Any

import pytest

from pisession._discovery import list_all_sessions, rows_json
from pisession.catalog import Catalog
from tests.test_catalog import header, msg, write
from tests.test_catalog_json import deep_id_sessions


def _root(tmp_path: Path) -> Path:
    project = tmp_path / "sessions" / "--p--"
    project.mkdir(parents=True)
    write(project / "a.jsonl", header("a"), msg("u1", "user", "hello"))
    write(project / "b.jsonl", header("b"), msg("u1", "user", "second", ms=1735787046000))
    return tmp_path / "sessions"


@pytest.mark.parametrize(
    ("column", "value"),
    [
        # the kept JSON's columns
        ("wire_head", "text, not a blob"),
        ("wire_head", 7),
        ("all_text", 0),
        ("all_text", '"text, not a blob"'),
        ("modified", b"blob"),
        ("modified", "text"),
        # the picker fields and what tells a change (an edited database, as the above)
        ("name", 1),
        ("partial", "text"),
        ("first_message", 2.5),
        ("last_activity", "text"),
        ("size", b"blob"),
        ("checked_ns", "text"),
        ("head", None),
    ],
)
def test_a_column_of_another_type_is_damage_not_a_crash(tmp_path: Path, column: str, value: Any) -> None:
    """A row whose column holds another type (SQLite keeps any value in any column) raised
    TypeError or ValueError out of list_all_json and list_all, instead of the files being read."""
    root = _root(tmp_path)
    path = tmp_path / "catalog.sqlite3"
    expected = rows_json(list_all_sessions(str(root)))
    with Catalog(path) as catalog:
        assert catalog.list_all_json(str(root)) == expected
    connection = sqlite3.connect(path)
    with connection:
        connection.execute(f"UPDATE files SET {column} = ? WHERE path LIKE '%a.jsonl'", (value,))
    connection.close()
    for _ in range(2):
        with Catalog(path) as catalog:
            assert catalog.list_all_json(str(root)) == expected
    with Catalog(path) as catalog:
        assert catalog.list_all(str(root)) == list_all_sessions(str(root))
        assert catalog.last_error is None
    assert json.loads(expected)[0]["id"] == "b"


@pytest.mark.skipif(not hasattr(time, "tzset"), reason="time.tzset: POSIX only")
def test_a_header_time_in_local_time_follows_the_time_zone_of_the_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A header time without an offset is local time (as V8 reads it): the row's ``created``
    kept in the catalog's JSON was the zone's at the first read, served after the zone changed
    (list_all reads the header kept at each call, and was right)."""
    project = tmp_path / "sessions" / "--p--"
    project.mkdir(parents=True)
    write(project / "a.jsonl", header("local", stamp="2025-01-02T03:04:05"), msg("u1", "user", "hi"))
    _listed_alike_in_zones(tmp_path, monkeypatch, ("UTC", "Asia/Tokyo", "America/New_York"))


def test_a_header_nested_past_the_json_modules_reach_at_this_depth_is_still_listed(tmp_path: Path) -> None:
    """A header id nested about as deep as a line can be read: ``json.dumps`` of the header
    kept in the catalog (header_subset) raised RecursionError out of the refresh, so
    ``pisession ls --all --json`` with the catalog died with a traceback at ids 988 to 1,000
    deep, where ``--no-catalog`` printed the rows. Here the recursion limit stands in for the
    command's deeper stack."""
    root = str(deep_id_sessions(tmp_path, 600))
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(len(traceback.extract_stack()) + 560)
    try:
        expected = rows_json(list_all_sessions(root))
        assert b'"core"' in expected
        with Catalog(tmp_path / "catalog.sqlite3") as catalog:
            assert catalog.list_all_json(root) == expected  # cold
            assert catalog.list_all_json(root) == expected  # warm
    finally:
        sys.setrecursionlimit(limit)


@pytest.mark.skipif(not hasattr(time, "tzset"), reason="time.tzset: POSIX only")
def test_a_message_time_in_local_time_follows_the_time_zone_of_the_call(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The row's ``modified`` comes from a message's entry time without an offset (local time):
    the catalog keeps last_activity as computed at the read, so a row read in another zone is
    read again (the usage rows too)."""
    project = tmp_path / "sessions" / "--p--"
    project.mkdir(parents=True)
    entry = msg("u1", "user", "hi", ms=None) | {"timestamp": "2025-01-02T03:04:06"}
    write(project / "a.jsonl", header("zone"), entry)
    _listed_alike_in_zones(tmp_path, monkeypatch, ("UTC", "Asia/Tokyo"))


def _listed_alike_in_zones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, zones: tuple[str, ...]) -> None:
    """The catalog's JSON of ``tmp_path/sessions`` is the scan's in each time zone in turn (one
    catalog, kept from one zone to the next)."""
    root = str(tmp_path / "sessions")
    try:
        for zone in zones:
            monkeypatch.setenv("TZ", zone)
            time.tzset()
            with Catalog(tmp_path / "catalog.sqlite3") as catalog:
                assert catalog.list_all_json(root) == rows_json(list_all_sessions(root)), zone
    finally:
        monkeypatch.undo()
        time.tzset()


@pytest.mark.skipif(not hasattr(time, "tzset"), reason="time.tzset: POSIX only")
def test_a_usage_time_in_local_time_is_counted_on_the_day_of_the_calls_zone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A usage entry's time without an offset is local time: the catalog's usage rows, read in
    one zone, are read again in another, so the report is the one the files give there."""
    from pisession.usage import usage_report

    project = tmp_path / "sessions" / "--p--"
    project.mkdir(parents=True)
    cost = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 1.5}
    usage = {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 15, "cost": cost}
    entry = {
        "type": "usage", "id": "u1", "parentId": None, "timestamp": "2025-01-02T03:00:00",
        "kind": "subagent", "provider": "openai", "model": "gpt-5", "usage": usage,
    }  # fmt: skip
    write(project / "a.jsonl", header("zone"), entry)
    days: dict[str, list[str]] = {}
    root = tmp_path / "sessions"
    try:
        for zone in ("UTC", "Asia/Tokyo", "UTC"):
            monkeypatch.setenv("TZ", zone)
            time.tzset()
            with Catalog(tmp_path / "catalog.sqlite3") as catalog:
                kept = usage_report("daily", timezone="UTC", session_dir=root, catalog=catalog)
            read = usage_report("daily", timezone="UTC", session_dir=root, catalog=False)
            assert kept.to_wire() == read.to_wire(), zone
            days.setdefault(zone, []).append(kept.to_wire()["daily"][0]["date"])
    finally:
        monkeypatch.undo()
        time.tzset()
    assert days == {"UTC": ["2025-01-02", "2025-01-02"], "Asia/Tokyo": ["2025-01-01"]}


# What Pi's list prints for a session whose header and message times carry no offset, asked of
# the oracle under three time zones (`TZ=... node oracle.mjs list DIR --cwd /p`, 2026-12-04):
# (created, modified).
PI_IN_ZONES = {
    "UTC": ("2025-01-02T03:04:05.000Z", "2025-01-02T03:04:06.000Z"),
    "Asia/Tokyo": ("2025-01-01T18:04:05.000Z", "2025-01-01T18:04:06.000Z"),
    "America/New_York": ("2025-01-02T08:04:05.000Z", "2025-01-02T08:04:06.000Z"),
}


@pytest.mark.skipif(not hasattr(time, "tzset"), reason="time.tzset: POSIX only")
def test_local_times_list_as_pi_lists_them_in_each_zone_through_one_catalog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "--p--"
    folder.mkdir()
    entry = msg("u1", "user", "hi", ms=None) | {"timestamp": "2025-01-02T03:04:06"}
    write(folder / "a.jsonl", header("local", cwd="/p", stamp="2025-01-02T03:04:05"), entry)
    try:
        for zone, wanted in PI_IN_ZONES.items():
            monkeypatch.setenv("TZ", zone)
            time.tzset()
            with Catalog(tmp_path / "catalog.sqlite3") as catalog:
                rows = json.loads(catalog.list_json("/p", str(folder)))
            assert [(row["created"], row["modified"]) for row in rows] == [wanted], zone
    finally:
        monkeypatch.undo()
        time.tzset()
