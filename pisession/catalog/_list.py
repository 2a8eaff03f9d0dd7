"""Pi's picker rows (:class:`SessionInfo`) from the catalog's ``files`` rows."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

from .._discovery import SessionInfo, feed_lines
from ._refresh import Candidate, read_range
from ._schema import SESSION, Row, chunks, unpack


def infos(
    connection: sqlite3.Connection, found: list[tuple[Candidate, Row]], text: bool
) -> list[SessionInfo]:
    """The picker rows of refreshed files (see :func:`current`), unsorted."""
    texts: dict[int, str] = {}
    if text:
        texts = _texts(
            connection, [row.id for _, row in found if row.status == SESSION and row.message_count]
        )
    out = []
    for candidate, row in found:
        assert candidate.stat is not None
        summary = row.summary(texts.get(row.id))
        partial = row.partial
        if partial is None:
            partial = read_range(candidate.path, row.parsed, row.size)
        if partial:
            feed_lines(summary, partial)
        info = summary.info(candidate.path, candidate.stat.st_mtime)
        if info is not None:
            out.append(info)
    return out


def _texts(connection: sqlite3.Connection, ids: Sequence[int]) -> dict[int, str]:
    out: dict[int, str] = {}
    for chunk in chunks(ids, 500):
        marks = ",".join("?" * len(chunk))
        for file_id, blob in connection.execute(
            f"SELECT id, all_text FROM files WHERE id IN ({marks})", chunk
        ):
            out[file_id] = unpack(blob)
    return out
