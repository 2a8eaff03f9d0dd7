"""The catalog's usage rows: one per entry that carries usage, as Pi's breakdown counts it.

Written by the refresh from the whole lines it reads (:func:`usage_rows`, in the same write
transaction as the file's row, so a grown file adds only its new entries), and summed for a
report by :func:`usage_groups`: per file, model and local day, leaving out what a fork or
branched session copied from its parent (same entry id and timestamp as a usage row of the
session its header's ``parentSession`` names, when that session was started earlier).
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Iterable
from typing import Any

from .._attribution import usage_item
from .._js import js_date_ms
from .._load import parse_line

UsageRow = tuple[str, str, int, str, Any, Any, Any, Any, Any]

# A line Pi counts holds the key "usage", unless the key is written with escapes ("\u0075sage").
_MARKERS = (b'"usage"', b"\\u")


def usage_rows(data: bytes, header: dict[str, Any] | None) -> tuple[list[UsageRow], int]:
    """The usage rows of the whole lines ``data``, and how many lines are damaged.

    A row is ``(entry id, timestamp, ms, model key, input, output, cache read, cache write,
    cost)``, NaN as None. An entry whose timestamp does not parse is dated by the header's (else
    1970-01-01), so it is counted somewhere rather than dropped. A damaged line (not a JSON
    object: cut short, garbled) is skipped as Pi skips it, and counted so the report can say so;
    only lines that may hold usage are parsed, the others are told by their first and last byte.
    """
    rows: list[UsageRow] = []
    damaged = 0
    fallback: int | None = None
    for line in data.split(b"\n"):  # Pi's open splits on "\n" only
        if _MARKERS[0] not in line and _MARKERS[1] not in line:
            if line and not (line[:1] == b"{" and line[-1:] == b"}"):
                stripped = line.strip()
                if stripped and not (stripped[:1] == b"{" and stripped[-1:] == b"}"):
                    damaged += 1
            continue
        entry = parse_line(line)
        if entry is None:
            damaged += 1
            continue
        item = usage_item(entry)
        if item is None:
            continue
        ms = js_date_ms(item.timestamp) if item.timestamp else None
        if ms is None:
            if fallback is None:
                stamp = (header or {}).get("timestamp")
                fallback = (js_date_ms(stamp) if isinstance(stamp, str) else None) or 0
            ms = fallback
        rows.append(
            (
                item.entry_id,
                item.timestamp,
                ms,
                item.model_key,
                _number(item.input),
                _number(item.output),
                _number(item.cache_read),
                _number(item.cache_write),
                _number(item.cost),
            )
        )
    return rows, damaged


def _number(value: float) -> float | None:
    return None if value != value else value  # SQLite has no NaN


def add_usage_rows(connection: sqlite3.Connection, file_id: int, rows: list[UsageRow], damaged: int) -> None:
    """Store a file's newly read usage rows (and count its newly read damaged lines)."""
    if rows:
        connection.executemany(
            "INSERT INTO usage (file_id, entry_id, ts, ms, model_key, input, output, cache_read, "
            "cache_write, cost) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [(file_id, *row) for row in rows],
        )
    if damaged:
        connection.execute(
            "INSERT INTO usage_damage VALUES (?, ?) "
            "ON CONFLICT (file_id) DO UPDATE SET lines = lines + excluded.lines",
            (file_id, damaged),
        )


def damaged_lines(connection: sqlite3.Connection) -> dict[int, int]:
    """Damaged lines per file id, for the files that have any."""
    return dict(connection.execute("SELECT file_id, lines FROM usage_damage").fetchall())


# One summed group: (file id, model key, day, input, output, cache read, cache write, cost,
# then how many of each of those five were NaN, first ms, last ms).
Group = tuple[int, str, str, Any, Any, Any, Any, Any, int, int, int, int, int, int, int]

_GROUPS = """
SELECT u.file_id, u.model_key, local_day(u.ms) AS day,
       SUM(u.input), SUM(u.output), SUM(u.cache_read), SUM(u.cache_write), SUM(u.cost),
       SUM(u.input IS NULL), SUM(u.output IS NULL), SUM(u.cache_read IS NULL),
       SUM(u.cache_write IS NULL), SUM(u.cost IS NULL), MIN(u.ms), MAX(u.ms)
FROM usage u JOIN temp.usage_scope s ON s.file_id = u.file_id
WHERE NOT EXISTS (
    SELECT 1 FROM usage v
    WHERE s.parent_id IS NOT NULL AND v.file_id = s.parent_id AND v.entry_id = u.entry_id AND v.ts = u.ts
)
GROUP BY u.file_id, u.model_key, day
"""


def usage_groups(
    connection: sqlite3.Connection,
    scope: Iterable[tuple[int, int | None]],
    local_day: Callable[[int], str],
) -> list[tuple[Any, ...]]:
    """Summed usage per (file, model, day) of the files ``scope`` names as ``(file id, parent
    file id or None)``; the rows a file shares with its parent are left out."""
    connection.create_function("local_day", 1, local_day, deterministic=True)
    connection.execute("CREATE TEMP TABLE IF NOT EXISTS usage_scope (file_id INTEGER PRIMARY KEY, parent_id)")
    connection.execute("DELETE FROM temp.usage_scope")
    connection.executemany("INSERT INTO temp.usage_scope VALUES (?, ?)", scope)
    try:
        return connection.execute(_GROUPS).fetchall()
    finally:
        connection.execute("DELETE FROM temp.usage_scope")


class UsageScan:
    """What :func:`scan_usage` found: summed ``groups`` (see :data:`Group`), the ``sessions`` they
    belong to (file id → (path, header)) and ``damaged`` lines per file id."""

    __slots__ = ("groups", "sessions", "damaged")

    def __init__(
        self,
        groups: list[tuple[Any, ...]],
        sessions: dict[int, tuple[str, dict[str, Any]]],
        damaged: dict[int, int],
    ) -> None:
        self.groups = groups
        self.sessions = sessions
        self.damaged = damaged


def scan_usage(
    connection: sqlite3.Connection, rows: Iterable[Any], local_day: Callable[[int], str]
) -> UsageScan:
    """Sum the usage of the session files ``rows`` (catalog ``files`` rows, up to date).

    A session's parent is the file its header's ``parentSession`` names, when that file is among
    ``rows`` and was started earlier (header time, then path, breaks ties and cycles): the
    entries a session shares with its parent were spent in the parent (or further up, where the
    parent in turn shares them), and count there only. A parent that is not among ``rows``
    (deleted, or in a folder not read) leaves the copies counted in the session that holds them.
    """
    sessions: dict[int, tuple[str, dict[str, Any]]] = {}
    for row in rows:
        if row.header:
            header = json.loads(row.header)
            if isinstance(header, dict):
                sessions[row.id] = (row.path, header)
    by_path = {path: file_id for file_id, (path, _) in sessions.items()}

    def started(file_id: int) -> tuple[int, str]:
        path, header = sessions[file_id]
        stamp = header.get("timestamp")
        return (js_date_ms(stamp) if isinstance(stamp, str) else None) or 0, path

    scope: list[tuple[int, int | None]] = []
    for file_id, (_, header) in sessions.items():
        parent = header.get("parentSession")
        parent_id = by_path.get(parent) if isinstance(parent, str) and parent else None
        if parent_id is not None and not started(parent_id) < started(file_id):
            parent_id = None
        scope.append((file_id, parent_id))
    damaged = {k: v for k, v in damaged_lines(connection).items() if k in sessions}
    return UsageScan(usage_groups(connection, scope, local_day), sessions, damaged)
