"""Search over the catalog's message rows: FTS5 when SQLite has it, else a scan of stored text."""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable
from datetime import datetime
from typing import Any, Literal

import attrs

from .._discovery import _from_ms, _iso, all_of
from .._errors import CatalogError
from .._paths import cwd_matches, header_cwd, list_folder
from ._refresh import RefreshReport, current
from ._schema import LISTING, SESSION, ProgressCallback, chunks, read_header, text_of
from ._words import excerpt, fts_query, matches, parse_snippet

Role = Literal["user", "assistant", "tool"]
_NO_LIMIT = 2**62  # a larger limit (SQLite's integers end at 2**63 - 1) is no limit


@attrs.frozen
class SearchHit:
    """One message that matched a search.

    ``snippet`` is a one-line excerpt; ``marks`` are the ``(start, end)`` character ranges of the
    matched words in it. ``entry_id`` can be passed on: ``pisession context PATH --leaf ID``,
    ``SessionManager.open(hit.session_path).branch(hit.entry_id)``.
    """

    session_path: str
    session_id: str
    entry_id: str | None
    time: datetime | None
    role: Role
    snippet: str
    marks: tuple[tuple[int, int], ...]

    def to_wire(self) -> dict[str, Any]:
        return {
            "sessionPath": self.session_path,
            "sessionId": self.session_id,
            "entryId": self.entry_id,
            "time": _iso(self.time),
            "role": self.role,
            "snippet": self.snippet,
            "marks": [list(mark) for mark in self.marks],
        }


def format_hit(hit: SearchHit, mark: Callable[[str], str] = lambda word: f"[{word}]") -> str:
    """One line for a hit: time, role, session id, entry id, snippet with each match passed to ``mark``.

    >>> format_hit(hit)  # doctest: +SKIP
    '2025-06-02 09:14  user       0197ab12  e3b0c442  … fix the [invoice] rounding …'
    """
    from .._localtime import local_time_text

    when = "????-??-?? ??:??" if hit.time is None else local_time_text(hit.time)
    pieces: list[str] = []
    at = 0
    for start, end in hit.marks:
        pieces.append(hit.snippet[at:start])
        pieces.append(mark(hit.snippet[start:end]))
        at = end
    pieces.append(hit.snippet[at:])
    return f"{when}  {hit.role:<9}  {hit.session_id[:8]:<8}  {(hit.entry_id or '-'):<8}  {''.join(pieces)}"


_PROBE: sqlite3.Connection | None = None


def check_fts_query(query: str, terms: list[list[str]]) -> None:
    """A query FTS5 rejects is the caller's mistake, not a reason to rebuild the catalog in memory."""
    global _PROBE
    if _PROBE is None:
        _PROBE = sqlite3.connect(":memory:", check_same_thread=False)
        _PROBE.execute("CREATE VIRTUAL TABLE probe USING fts5(text, content='', tokenize='ascii')")
    try:
        _PROBE.execute("SELECT rowid FROM probe WHERE probe MATCH ?", (fts_query(terms),)).fetchall()
    except sqlite3.Error as error:
        raise CatalogError(f"cannot search for {query!r}: {error}") from None


def hits(
    connection: sqlite3.Connection,
    fts: bool,
    scope: dict[int, tuple[str, str]],
    terms: list[list[str]],
    role: Role | None,
    limit: int | None,
) -> list[SearchHit]:
    """The messages of the files in ``scope`` (see :func:`scope`) that hold every term, newest first."""
    if not scope:
        return []
    fill_scope(connection, scope)
    where = "m.file_id IN (SELECT file_id FROM temp.scope)" + (" AND m.role = ?" if role else "")
    params: list[Any] = [role] if role else []
    order = "ORDER BY m.ts IS NULL, m.ts DESC, f.path, m.id"
    found: list[tuple[int, int, str | None, float | None, str, str]] = []
    if fts:
        query = fts_query(terms)
        rows = connection.execute(
            "SELECT m.id, m.file_id, m.entry_id, m.ts, m.role FROM fts "
            "JOIN messages m ON m.id = fts.rowid JOIN files f ON f.id = m.file_id "
            f"WHERE fts MATCH ? AND {where} {order}"
            + ("" if limit is None else f" LIMIT {min(limit, _NO_LIMIT)}"),
            [query, *params],
        ).fetchall()
        snippets: dict[int, str] = {}
        for chunk in chunks([row[0] for row in rows], 500):
            marks = ",".join("?" * len(chunk))
            for message_id, text in connection.execute(
                f"SELECT id, text FROM messages WHERE id IN ({marks})", chunk
            ):
                snippets[message_id] = excerpt(text or "", terms)
        found = [(*row, snippets.get(row[0], "")) for row in rows]
    else:
        cursor = connection.execute(
            "SELECT m.id, m.file_id, m.entry_id, m.ts, m.role, m.text FROM messages m "
            f"JOIN files f ON f.id = m.file_id WHERE {where} {order}",
            params,
        )
        for message_id, file_id, entry_id, ts, message_role, text in cursor:
            if not matches(text, terms):
                continue
            found.append((message_id, file_id, entry_id, ts, message_role, excerpt(text, terms)))
            if limit is not None and len(found) >= limit:
                break
        cursor.close()
    out = []
    for _, file_id, entry_id, ts, message_role, raw in found:
        path, session_id = scope[file_id]
        snippet, marked = parse_snippet(raw)
        out.append(
            SearchHit(
                session_path=path,
                session_id=session_id,
                entry_id=None if entry_id is None else text_of(entry_id),
                time=None if ts is None else _from_ms(ts),
                role=message_role,  # type: ignore[arg-type]
                snippet=snippet,
                marks=marked,
            )
        )
    return out


def scope(
    connection: sqlite3.Connection,
    fts: bool,
    cwd: str | None,
    all: bool,
    session_dir: str | None,
    on_progress: ProgressCallback | None,
    after_commit: Callable[[], None] | None = None,
) -> tuple[dict[int, tuple[str, str]], RefreshReport]:
    """file id → (path, session id) of the sessions a search covers (see :meth:`Catalog.search`;
    ``after_commit``: see :func:`~._refresh.current`)."""
    filter_cwd: str | None = None
    directories: list[str] | None
    root: str | None = None
    if all or (session_dir and cwd is None):
        directories, root = all_of(session_dir)
    else:
        directory, filter_cwd = list_folder(os.getcwd() if cwd is None else cwd, session_dir, create=False)
        directories = [directory]
    found, report = current(
        connection, fts, directories, root, on_progress, index=True, parts=LISTING, after_commit=after_commit
    )
    out: dict[int, tuple[str, str]] = {}
    for candidate, row in found:
        if row.status != SESSION or row.header is None:
            continue
        header = read_header(row.header)
        if filter_cwd is not None and not cwd_matches(header_cwd(header), filter_cwd):
            continue
        session_id = header.get("id")
        out[row.id] = (candidate.path, session_id if isinstance(session_id, str) else str(session_id))
    return out, report


@attrs.frozen
class SessionMatch:
    """A session holding messages that match a search: how many, and when the newest was sent."""

    session_path: str
    session_id: str
    hits: int
    newest: datetime | None

    def to_wire(self) -> dict[str, Any]:
        return {
            "sessionPath": self.session_path,
            "sessionId": self.session_id,
            "hits": self.hits,
            "newest": _iso(self.newest),
        }


def session_matches(
    connection: sqlite3.Connection,
    fts: bool,
    scope: dict[int, tuple[str, str]],
    terms: list[list[str]],
    role: Role | None,
) -> list[SessionMatch]:
    """The sessions in ``scope`` with messages holding every term, counted in the database (FTS5)
    without building a hit or a snippet; the session with the newest matching message first."""
    if not scope:
        return []
    fill_scope(connection, scope)
    where = "m.file_id IN (SELECT file_id FROM temp.scope)" + (" AND m.role = ?" if role else "")
    params: list[Any] = [role] if role else []
    counts: dict[int, list[Any]] = {}
    if fts:
        rows = connection.execute(
            "SELECT m.file_id, count(*), max(m.ts) FROM fts JOIN messages m ON m.id = fts.rowid "
            f"WHERE fts MATCH ? AND {where} GROUP BY m.file_id",
            [fts_query(terms), *params],
        ).fetchall()
        counts = {file_id: [hits, newest] for file_id, hits, newest in rows}
    else:
        cursor = connection.execute(f"SELECT m.file_id, m.ts, m.text FROM messages m WHERE {where}", params)
        for file_id, ts, text in cursor:
            if not matches(text, terms):
                continue
            seen = counts.setdefault(file_id, [0, None])
            seen[0] += 1
            if ts is not None and (seen[1] is None or ts > seen[1]):
                seen[1] = ts
        cursor.close()
    ordered = sorted(
        counts.items(), key=lambda item: (item[1][1] is None, -(item[1][1] or 0), scope[item[0]][0])
    )
    return [
        SessionMatch(
            session_path=scope[file_id][0],
            session_id=scope[file_id][1],
            hits=hits,
            newest=None if newest is None else _from_ms(newest),
        )
        for file_id, (hits, newest) in ordered
    ]


def fill_scope(connection: sqlite3.Connection, scope: dict[int, tuple[str, str]]) -> None:
    connection.execute("CREATE TEMP TABLE IF NOT EXISTS scope (file_id INTEGER PRIMARY KEY)")
    connection.execute("DELETE FROM temp.scope")
    connection.executemany("INSERT INTO temp.scope VALUES (?)", [(file_id,) for file_id in scope])
