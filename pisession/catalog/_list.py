"""Pi's picker rows (:class:`SessionInfo`) from the catalog's ``files`` rows, and their JSON."""

from __future__ import annotations

import contextlib
import sqlite3

from .._discovery import SessionInfo, feed_lines, newest_first, row_json
from .._errors import CatalogError
from .._json import loads_for
from .._paths import cwd_matches, header_cwd
from ._candidates import Candidate
from ._range import read_range
from ._schema import SESSION, Row, chunks, read_header, text_intact, unpack_text


def infos(
    connection: sqlite3.Connection, found: list[tuple[Candidate, Row]], text: bool
) -> list[SessionInfo]:
    """The picker rows of refreshed files (see :func:`current`), unsorted."""
    texts: dict[int, str] = {}
    if text:
        wanted = {row.id: c.path for c, row in found if row.status == SESSION and row.message_count}
        kept = _kept(connection, wanted)
        # orjson parses the kept JSON strings twice as fast as the json module, once it pays
        # for its import (a MiB of text)
        parse = loads_for(sum(len(stored.all_text) for stored in kept.values()))
        texts = {file_id: unpack_text(stored.all_text, parse) for file_id, stored in kept.items()}
    out = []
    for candidate, row in found:
        info = _info(candidate, row, texts.get(row.id))
        if info is not None:
            out.append(info)
    return out


def listed_json(
    connection: sqlite3.Connection,
    found: list[tuple[Candidate, Row]],
    mtimes: dict[str, float] | None,
    only_cwd: str | None = None,
) -> bytes:
    """What :func:`pisession._discovery.rows_json` makes of the sorted picker rows of refreshed
    files (with ``only_cwd``: those whose working folder it is), from the JSON kept in their
    rows: a row made ahead is copied as it is; another (an unfinished last line, no time but the
    file's) is made here. RecursionError as ``row_json``."""
    kept = _kept(connection, {row.id: c.path for c, row in found if row.status == SESSION})
    # (modified, path, the row's JSON in pieces): joined once, the text copied once
    items: list[tuple[float, str, tuple[bytes, ...]]] = []
    for candidate, row in found:
        stored = kept.get(row.id)
        head = None if stored is None or row.partial != b"" else stored.wire_head
        if stored is not None and head is not None and stored.modified is not None:
            if only_cwd is not None and not cwd_matches(_header_cwd(row), only_cwd):
                continue
            items.append((stored.modified, candidate.path, (head, stored.all_text, b"\n  }")))
            continue
        info = _info(candidate, row, None if stored is None else unpack_text(stored.all_text))
        if info is not None and (only_cwd is None or cwd_matches(info.cwd, only_cwd)):
            items.append((info.modified.timestamp(), info.path, (row_json(info),)))
    if not items:
        return b"[]\n"
    pieces = [b"["]
    for _, _, row_pieces in newest_first(items, _item_modified, _item_path, mtimes):
        pieces.append(b"\n")
        pieces.extend(row_pieces)
        pieces.append(b",")
    pieces[-1] = b"\n]\n"
    return b"".join(pieces)


def _header_cwd(row: Row) -> str | None:
    """The ``cwd`` of a row's :class:`SessionInfo` (the header's, when it is a string)."""
    header = read_header(row.header) if row.header is not None else None
    return header_cwd(header) if isinstance(header, dict) else None


def _item_modified(item: tuple[float, str, object]) -> float:
    return item[0]


def _item_path(item: tuple[float, str, object]) -> str:
    return item[1]


def _info(candidate: Candidate, row: Row, all_text: str | None) -> SessionInfo | None:
    assert candidate.stat is not None
    summary = row.summary(all_text)
    partial = row.partial
    if partial is None:
        partial = read_range(candidate.path, row.parsed, row.size)
    if partial:
        feed_lines(summary, partial)
    return summary.info(candidate.path, candidate.stat.st_mtime)


class _Kept:
    """A row's text columns, as :func:`_kept` reads them."""

    __slots__ = ("all_text", "modified", "wire_head")

    def __init__(self, all_text: bytes, modified: float | None, wire_head: bytes | None) -> None:
        self.all_text = all_text
        self.modified = modified
        self.wire_head = wire_head


def _kept(connection: sqlite3.Connection, paths: dict[int, str]) -> dict[int, _Kept]:
    """The text columns of these files' rows (id → path), each checked against its checksum.

    A row changed since the refresh (another process rebuilt the catalog) or damaged raises
    :class:`CatalogError`: the caller reads the files instead of serving wrong or empty text.
    """
    out: dict[int, _Kept] = {}
    for chunk in chunks(list(paths), 500):
        marks = ",".join("?" * len(chunk))
        for file_id, path, modified, wire_head, all_text, crc in connection.execute(
            f"SELECT id, path, modified, wire_head, all_text, text_crc FROM files WHERE id IN ({marks})",
            chunk,
        ):
            intact = text_intact(all_text, wire_head, modified, crc)
            if path != paths[file_id] or not intact:
                if path == paths[file_id]:
                    with contextlib.suppress(sqlite3.Error):  # read it again next time
                        connection.execute("UPDATE files SET row_crc = -1 WHERE id = ?", (file_id,))
                raise CatalogError(f"the catalog's row for {paths[file_id]} changed or is damaged")
            out[file_id] = _Kept(all_text, modified, wire_head)
    if len(out) != len(paths):
        missing = next(path for file_id, path in paths.items() if file_id not in out)
        raise CatalogError(f"the catalog's row for {missing} disappeared while it was read")
    return out
