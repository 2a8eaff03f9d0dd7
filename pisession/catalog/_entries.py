"""The rows built from a file's entries (its messages, for search; its usage rows go with them):
added as its new lines are read and dropped as it is read again in full or deleted, inside the
write transaction of its ``files`` row (another kind of per-entry row is added and removed here).
"""

from __future__ import annotations

import contextlib
import sqlite3
from typing import Any

from .._discovery import SessionSummary, feed_lines, split_cr
from .._load import iter_file_lines
from ._range import CheckedRange
from ._schema import indexable, sql_text


def delete_file_rows(connection: sqlite3.Connection, fts: bool, path: str) -> int:
    found = connection.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()
    if found is None:
        return 0
    deleted = drop_entry_rows(connection, fts, found[0])
    connection.execute("DELETE FROM files WHERE id = ?", (found[0],))
    return deleted


def purge(connection: sqlite3.Connection, fts: bool) -> None:
    """Leave none of the deleted rows' text readable in the database or its WAL.

    Freed pages are zeroed (``secure_delete``), but FTS5 only marks a deleted row's words as
    deleted until its segments are merged: ``optimize`` merges them all (this SQLite has no
    FTS5 ``secure-delete``); the checkpoint then empties the WAL of the old pages. Both run only
    after a refresh that deleted rows.
    """
    if fts:
        connection.execute("INSERT INTO fts(fts) VALUES ('optimize')")
    with contextlib.suppress(sqlite3.Error):  # a reader holding the WAL: its frames are reused later
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def drop_entry_rows(connection: sqlite3.Connection, fts: bool, file_id: int) -> int:
    """Delete every row built from a file's entries (it is read again in full, or gone); how many."""
    # the usage and search rows' modules only where a file is read: a warm `ls` imports neither
    from ._usage import drop_usage_rows
    from ._words import index_text

    rows = connection.execute("SELECT id, text FROM messages WHERE file_id = ?", (file_id,)).fetchall()
    if fts:
        # a contentless index forgets a row given the words it was indexed with
        connection.executemany(
            "INSERT INTO fts (fts, rowid, text) VALUES ('delete', ?, ?)",
            [(message_id, index_text(text or "")) for message_id, text in rows],
        )
    connection.execute("DELETE FROM messages WHERE file_id = ?", (file_id,))
    drop_usage_rows(connection, file_id)
    return len(rows)


def add_entry_rows(
    connection: sqlite3.Connection,
    fts: bool,
    file_id: int,
    messages: list[tuple[object, float | None, str, str]],
) -> None:
    """Add the rows built from a file's newly read entries (its messages, for search)."""
    if messages:
        _add_messages(connection, fts, file_id, messages)


def index_lines(
    connection: sqlite3.Connection, fts: bool, file_id: int, handle: Any, start: int, end: int
) -> None:
    """Add the messages of the whole lines from ``start`` to ``end`` (after the header) to the
    search index, read in chunks (a line over MAX_LINE_BYTES is skipped unheld)."""
    collector = SessionSummary(messages=[])
    collector.header = {}  # lines after the header: every message counts
    handle.seek(start)
    feed_lines(collector, split_cr(iter_file_lines(CheckedRange(handle, end - start))))
    add_entry_rows(connection, fts, file_id, collector.messages or [])


def _add_messages(
    connection: sqlite3.Connection,
    fts: bool,
    file_id: int,
    messages: list[tuple[object, float | None, str, str]],
) -> None:
    first = (connection.execute("SELECT COALESCE(MAX(id), 0) FROM messages").fetchone()[0]) + 1
    rows: list[tuple[int, int, str | bytes | None, float | None, str, str]] = [
        (first + n, file_id, _stored_id(entry_id), ts, role, indexable(text))
        for n, (entry_id, ts, role, text) in enumerate(messages)
    ]
    connection.executemany(
        "INSERT INTO messages (id, file_id, entry_id, ts, role, text) VALUES (?, ?, ?, ?, ?, ?)", rows
    )
    if fts:
        from ._words import index_text

        connection.executemany(
            "INSERT INTO fts (rowid, text) VALUES (?, ?)", [(row[0], index_text(row[5])) for row in rows]
        )


def _stored_id(entry_id: object) -> str | bytes | None:
    """A message's entry id as the search rows hold it (one with a lone surrogate as its bytes:
    :func:`~._schema.sql_text`); None if it has none."""
    return sql_text(entry_id) if isinstance(entry_id, str) else None
