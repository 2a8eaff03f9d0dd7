"""Pi's picker rows (:class:`SessionInfo`) from the catalog's ``files`` rows."""

from __future__ import annotations

import sqlite3
import zlib

from .._discovery import SessionInfo, feed_lines
from .._errors import CatalogError
from ._refresh import Candidate, read_range
from ._schema import SESSION, Row, chunks, unpack


def infos(
    connection: sqlite3.Connection, found: list[tuple[Candidate, Row]], text: bool
) -> list[SessionInfo]:
    """The picker rows of refreshed files (see :func:`current`), unsorted."""
    texts: dict[int, str] = {}
    if text:
        wanted = {row.id: c.path for c, row in found if row.status == SESSION and row.message_count}
        texts = _texts(connection, wanted)
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


def _texts(connection: sqlite3.Connection, paths: dict[int, str]) -> dict[int, str]:
    """The stored message text of these files (id → path), each checked against its checksum.

    A row changed since the refresh (another process rebuilt the catalog) or damaged raises
    :class:`CatalogError`: the caller reads the files instead of serving wrong or empty text.
    """
    out: dict[int, str] = {}
    for chunk in chunks(list(paths), 500):
        marks = ",".join("?" * len(chunk))
        for file_id, path, blob, crc in connection.execute(
            f"SELECT id, path, all_text, text_crc FROM files WHERE id IN ({marks})", chunk
        ):
            if path != paths[file_id] or blob is None or zlib.crc32(blob) != crc:
                raise CatalogError(f"the catalog's row for {paths[file_id]} changed or is damaged")
            out[file_id] = unpack(blob)
    if len(out) != len(paths):
        missing = next(path for file_id, path in paths.items() if file_id not in out)
        raise CatalogError(f"the catalog's row for {missing} disappeared while it was read")
    return out
