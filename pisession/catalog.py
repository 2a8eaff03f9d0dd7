"""The session catalog: Pi's session list and full-text search without reading every file each time.

Pi's picker (``SessionManager.list``) reads every session in full on every call. The catalog keeps
what it reads in one SQLite database (standard library ``sqlite3``, WAL mode) in a cache folder
outside Pi's data, and on each call reads only what changed since::

    from pisession.catalog import Catalog

    with Catalog() as catalog:
        for info in catalog.list_all():
            print(info.modified, info.first_message)
        for hit in catalog.search("invoice rounding", all=True):
            print(hit.session_path, hit.entry_id, hit.snippet)

How a file is brought up to date (SPEC §7 defines the rows, :mod:`pisession._discovery` builds them):

- its identity (device, inode), size and mtime are unchanged: not opened;
- same identity, larger, and the bytes it had before are still there (first and last 512 bytes
  compared): only the new lines are read, from the end of the last whole line read before;
- anything else (new, replaced, truncated, rewritten in place): read in full;
- gone: its row and search rows are deleted.

Listing keeps the picker rows; the search rows (each message's text in an FTS5 index, most of a
first build's cost) are caught up by the first search after a change, from where they stopped.
A file that is not a session, or cannot be read, is skipped and named in :class:`RefreshReport`.
A database that cannot be used (locked past the timeout, corrupt, read-only, not ours) never
gives wrong rows: :meth:`Catalog.list` then reads the files as Pi does, and
:meth:`Catalog.search` builds a throwaway catalog in memory. Several processes may refresh one
catalog at once: each file is brought up to date inside a write transaction that first re-reads
its row, so a file another process just caught up is not read twice.
"""

from __future__ import annotations

import builtins
import contextlib
import functools
import json
import os
import re
import sqlite3
import stat
import time
import unicodedata
import zlib
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timezone
from typing import Any, Literal, TypeVar

import attrs

from ._discovery import SessionInfo, SessionSummary, _sorted, feed_lines
from ._errors import CatalogError
from ._load import open_regular
from ._paths import (
    cwd_matches,
    default_session_dir_path,
    get_agent_dir,
    get_default_session_dir,
    get_sessions_dir,
    normalize_path,
    paths_equal,
    resolve_path,
)

__all__ = [
    "Catalog",
    "RefreshReport",
    "SkippedFile",
    "SearchHit",
    "Role",
    "search",
    "with_catalog",
    "format_hit",
    "default_catalog_path",
    "fts5_available",
    "ENV_CATALOG",
]

ENV_CATALOG = "PISESSION_CATALOG"
"""Environment variable naming the catalog's database file (default: see :func:`default_catalog_path`)."""

Role = Literal["user", "assistant", "tool"]
ProgressCallback = Callable[[int, int], None]
_T = TypeVar("_T")

_SCHEMA_VERSION = 4
_EDGE = 512  # bytes compared at both ends of the old content before reading only the new end
_PARTIAL_MAX = 1 << 16  # a longer unfinished last line is read again from the file, not stored
# A write lands in the mtime tick it happens in; the kernel's coarse clock lags by a few ms where
# times have sub-millisecond digits, file systems that keep whole seconds (FAT: two) lag by more.
_RACY_NS = 50_000_000
_RACY_COARSE_NS = 2_000_000_000
_COMMIT_EVERY = 0.25  # seconds: short write transactions let other processes take turns
_MARK_OPEN, _MARK_CLOSE = "\x02", "\x03"
_SNIPPET_TOKENS = 16


def default_catalog_path() -> str:
    """``$PISESSION_CATALOG``, else ``$XDG_CACHE_HOME/pisession/catalog.sqlite3`` (``~/.cache``)."""
    env = os.environ.get(ENV_CATALOG)
    if env:
        return os.path.abspath(normalize_path(env))
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(os.path.abspath(cache), "pisession", "catalog.sqlite3")


@functools.cache
def fts5_available() -> bool:
    """Whether this Python's SQLite has FTS5 (else search scans the stored text)."""
    try:
        connection = sqlite3.connect(":memory:")
        try:
            connection.execute("CREATE VIRTUAL TABLE probe USING fts5(text)")
        finally:
            connection.close()
    except sqlite3.Error:
        return False
    return True


@attrs.frozen
class SkippedFile:
    """A ``.jsonl`` file the catalog did not list, and why (not a session, unreadable...)."""

    path: str
    reason: str


@attrs.frozen
class RefreshReport:
    """What the last refresh did: files seen, read in full, read from their old end, removed."""

    files: int = 0
    read: int = 0
    appended: int = 0
    removed: int = 0
    skipped: tuple[SkippedFile, ...] = ()


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
            "time": None if self.time is None else _iso(self.time),
            "role": self.role,
            "snippet": self.snippet,
            "marks": [list(mark) for mark in self.marks],
        }


def _iso(moment: datetime) -> str:
    moment = moment.astimezone(timezone.utc)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{moment.microsecond // 1000:03d}Z"


def format_hit(hit: SearchHit, mark: Callable[[str], str] = lambda word: f"[{word}]") -> str:
    """One line for a hit: time, role, session id, entry id, snippet with each match passed to ``mark``.

    >>> format_hit(hit)  # doctest: +SKIP
    '2025-06-02 09:14  user       0197ab12  e3b0c442  … fix the [invoice] rounding …'
    """
    when = "????-??-?? ??:??" if hit.time is None else f"{hit.time.astimezone():%Y-%m-%d %H:%M}"
    pieces: list[str] = []
    at = 0
    for start, end in hit.marks:
        pieces.append(hit.snippet[at:start])
        pieces.append(mark(hit.snippet[start:end]))
        at = end
    pieces.append(hit.snippet[at:])
    return f"{when}  {hit.role:<9}  {hit.session_id[:8]:<8}  {(hit.entry_id or '-'):<8}  {''.join(pieces)}"


# ----------------------------------------------------------------------------------- words
# The plain scan tokenizes as FTS5's unicode61 tokenizer (remove_diacritics 0) does, closely enough
# that both find the same messages: letters, digits, marks and private-use characters make words,
# everything else separates them; words compare lower-cased.


def _is_word_char(char: str) -> bool:
    category = unicodedata.category(char)
    return category[0] in "LNM" or category == "Co"


_WORD_CACHE: dict[str, bool] = {}


def _words(text: str) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    start = -1
    cache = _WORD_CACHE
    for index, char in enumerate(text):
        if char < "\x80":
            word = char.isalnum()
        else:
            known = cache.get(char)
            word = cache.setdefault(char, _is_word_char(char)) if known is None else known
        if word:
            if start < 0:
                start = index
        elif start >= 0:
            spans.append((start, index))
            start = -1
    if start >= 0:
        spans.append((start, len(text)))
    return spans


def _fold(word: str) -> str:
    return "".join(c if len(c.lower()) != 1 else c.lower() for c in word)


def _terms(query: str) -> list[list[str]]:
    terms = []
    for part in query.split():
        words = [_fold(part[a:b]) for a, b in _words(part)]
        if words:
            terms.append(words)
    if not terms:
        raise CatalogError(f"search query {query!r} has no words to look for")
    return terms


def _fts_query(terms: list[list[str]]) -> str:
    return " AND ".join('"' + " ".join(words).replace('"', '""') + '"' for words in terms)


def _match(text: str, terms: list[list[str]]) -> list[tuple[int, int]] | None:
    """Spans of the words of every phrase found in ``text``, or None when one is missing."""
    lowered = text.lower()
    for term in terms:
        for word in term:
            # lower() and the per-character fold agree on ASCII, so a missing ASCII word rules the text out
            if word.isascii() and word not in lowered:
                return None
    spans = _words(text)
    words = [_fold(text[a:b]) for a, b in spans]
    found: list[tuple[int, int]] = []
    for term in terms:
        size = len(term)
        hits = [i for i in range(len(words) - size + 1) if words[i : i + size] == term]
        if not hits:
            return None
        for i in hits:
            found.extend(spans[i : i + size])
    return sorted(set(found))


def _plain_snippet(text: str, found: list[tuple[int, int]]) -> str:
    spans = _words(text)
    first = next(i for i, span in enumerate(spans) if span == found[0])
    lo = 0 if len(spans) <= _SNIPPET_TOKENS else max(0, first - _SNIPPET_TOKENS // 4)
    hi = min(len(spans), lo + _SNIPPET_TOKENS)
    start = spans[lo][0] if lo else 0
    end = spans[hi - 1][1] if hi < len(spans) else len(text)
    marked = set(found)
    out = ["…" if lo else ""]
    at = start
    for span in spans[lo:hi]:
        if span in marked:
            out += [text[at : span[0]], _MARK_OPEN, text[span[0] : span[1]], _MARK_CLOSE]
            at = span[1]
    out.append(text[at:end])
    if hi < len(spans):
        out.append("…")
    return "".join(out)


_SPACES = re.compile(r"\s+")


def _parse_snippet(raw: str) -> tuple[str, tuple[tuple[int, int], ...]]:
    raw = _SPACES.sub(" ", raw).strip()
    text: list[str] = []
    marks: list[tuple[int, int]] = []
    length = 0
    start = -1
    for piece in re.split(f"([{_MARK_OPEN}{_MARK_CLOSE}])", raw):
        if piece == _MARK_OPEN:
            start = length
        elif piece == _MARK_CLOSE:
            if start >= 0 and length > start:
                marks.append((start, length))
            start = -1
        else:
            text.append(piece)
            length += len(piece)
    return "".join(text), tuple(marks)


# ----------------------------------------------------------------------------------- storage


def _pack(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")  # Pi's files may hold lone surrogates (\\ud800)


def _unpack(blob: bytes | None) -> str:
    return "" if blob is None else bytes(blob).decode("utf-8", "surrogatepass")


def _indexable(text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


_FILE_COLUMNS = (
    "id, path, dir, dev, ino, size, mtime_ns, checked_ns, crc, parsed, indexed, head, tail, partial, "
    "status, header, message_count, first_message, name, last_activity"
)
_PENDING, _SESSION, _FOREIGN = 0, 1, 2


@attrs.define
class _Row:
    id: int
    path: str
    dir: str
    dev: int
    ino: int
    size: int
    mtime_ns: int
    checked_ns: int
    crc: int
    parsed: int
    indexed: int
    head: bytes
    tail: bytes
    partial: bytes | None
    status: int
    header: str | None
    message_count: int
    first_message: bytes | None
    name: bytes | None
    last_activity: float | None

    def summary(self, all_text: str | None) -> SessionSummary:
        summary = SessionSummary()
        if self.status == _SESSION and self.header is not None:
            summary.header = json.loads(self.header)
        summary.foreign = self.status == _FOREIGN
        summary.message_count = self.message_count
        summary.first_message = _unpack(self.first_message)
        summary.name = None if self.name is None else _unpack(self.name)
        summary.last_activity = self.last_activity
        if all_text:
            summary.texts = [all_text]
        return summary


def _header_subset(header: dict[str, Any]) -> str:
    # Only what a picker row reads; a key's absence matters (new Date(undefined) is NaN).
    return json.dumps(
        {key: header[key] for key in ("id", "cwd", "parentSession", "timestamp") if key in header}
    )


@attrs.frozen
class _Candidate:
    """A ``.jsonl`` name found in a folder, with the ``stat`` taken for this call (None: failed)."""

    path: str
    dir: str
    stat: os.stat_result | None


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except (OSError, ValueError):
        return None


class Catalog:
    """A session catalog in one SQLite file (default :func:`default_catalog_path`).

    ``fts=None`` uses FTS5 when SQLite has it; ``fts=False`` always scans stored text (a catalog
    made one way is rebuilt when opened the other way). ``timeout`` is how long to wait for
    another process's write transaction before falling back to reading the files.

    >>> with Catalog() as catalog:  # doctest: +SKIP
    ...     infos = catalog.list("/home/me/project")
    """

    def __init__(
        self, path: str | os.PathLike[str] | None = None, *, timeout: float = 10.0, fts: bool | None = None
    ) -> None:
        self.path = default_catalog_path() if path is None else os.fspath(path)
        if self.path != ":memory:":
            self.path = os.path.abspath(normalize_path(self.path))
            _refuse_pi_data(self.path)
        self.timeout = timeout
        self.fts = fts5_available() if fts is None else fts
        self.last_report = RefreshReport()
        self.last_error: str | None = None
        self._connection: sqlite3.Connection | None = None

    # ------------------------------------------------------------------ lifetime

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the database connection (the next call opens it again)."""
        if self._connection is not None:
            self._connection.close()
            self._connection = None

    def _connect(self) -> sqlite3.Connection:
        if self._connection is not None:
            return self._connection
        if self.path != ":memory:":
            os.makedirs(os.path.dirname(self.path), mode=0o700, exist_ok=True)
            # the catalog holds the sessions' text: as private as Pi's own folder (SQLite gives its
            # -wal and -shm files the database's mode)
            with contextlib.suppress(FileExistsError):
                os.close(os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
        connection = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
        try:
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
            self._ensure_schema(connection)
        except BaseException:
            connection.close()
            raise
        self._connection = connection
        return connection

    def _ensure_schema(self, connection: sqlite3.Connection) -> None:
        mode = "fts5" if self.fts else "plain"
        if self._schema_ok(connection, mode):
            return
        connection.execute("BEGIN IMMEDIATE")
        try:
            if not self._schema_ok(connection, mode):
                tables = {
                    row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")
                }
                if tables and "catalog_meta" not in tables:
                    raise CatalogError(f"{self.path} is an SQLite database that is not a pisession catalog")
                for table in ("fts", "messages", "files", "catalog_meta"):
                    connection.execute(f"DROP TABLE IF EXISTS {table}")
                connection.execute("CREATE TABLE catalog_meta (key TEXT PRIMARY KEY, value TEXT)")
                connection.execute(
                    "CREATE TABLE files (id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, "
                    "dir TEXT NOT NULL, dev INTEGER, ino INTEGER, size INTEGER, mtime_ns INTEGER, "
                    "checked_ns INTEGER, crc INTEGER, parsed INTEGER, indexed INTEGER, head BLOB, "
                    "tail BLOB, partial BLOB, status INTEGER, header TEXT, message_count INTEGER, "
                    "first_message BLOB, name BLOB, last_activity REAL, all_text BLOB)"
                )
                connection.execute("CREATE INDEX files_dir ON files(dir)")
                text_column = "" if self.fts else ", text TEXT"
                connection.execute(
                    "CREATE TABLE messages (id INTEGER PRIMARY KEY, file_id INTEGER NOT NULL, entry_id TEXT, "
                    f"ts REAL, role TEXT{text_column})"
                )
                connection.execute("CREATE INDEX messages_file ON messages(file_id)")
                if self.fts:
                    connection.execute(
                        "CREATE VIRTUAL TABLE fts USING fts5(text, tokenize='unicode61 remove_diacritics 0')"
                    )
                connection.executemany(
                    "INSERT INTO catalog_meta VALUES (?, ?)",
                    [("schema", str(_SCHEMA_VERSION)), ("mode", mode)],
                )
            connection.execute("COMMIT")
        except BaseException:
            connection.execute("ROLLBACK")
            raise

    @staticmethod
    def _schema_ok(connection: sqlite3.Connection, mode: str) -> bool:
        try:
            meta = dict(connection.execute("SELECT key, value FROM catalog_meta").fetchall())
        except sqlite3.OperationalError as error:
            if "no such table" in str(error):
                return False
            raise
        return meta.get("schema") == str(_SCHEMA_VERSION) and meta.get("mode") == mode

    # ------------------------------------------------------------------ listing

    def list(
        self,
        cwd: str,
        session_dir: str | None = None,
        on_progress: ProgressCallback | None = None,
        *,
        text: bool = True,
    ) -> builtins.list[SessionInfo]:
        """Exactly :meth:`SessionManager.list`'s rows, from the catalog.

        ``text=False`` leaves ``all_messages_text`` empty (faster when it is not shown).
        Falls back to reading the files when the database cannot be used (see ``last_error``).
        """
        directory = normalize_path(session_dir) if session_dir else get_default_session_dir(cwd)
        filter_cwd = session_dir is not None and not paths_equal(directory, default_session_dir_path(cwd))
        try:
            infos = self._list([directory], None, on_progress, text)
        except (sqlite3.Error, OSError, CatalogError) as error:
            self._failed(error)
            from ._discovery import list_sessions

            infos = list_sessions(cwd, session_dir, on_progress)
            return infos if text else [attrs.evolve(info, all_messages_text="") for info in infos]
        if filter_cwd:
            resolved_cwd = resolve_path(cwd)
            infos = [info for info in infos if cwd_matches(info.cwd, resolved_cwd)]
        return _sorted(infos)

    def list_all(
        self,
        session_dir: str | None = None,
        on_progress: ProgressCallback | None = None,
        *,
        text: bool = True,
    ) -> builtins.list[SessionInfo]:
        """Exactly :meth:`SessionManager.list_all`'s rows, from the catalog (see :meth:`list`)."""
        try:
            if session_dir:
                infos = self._list([normalize_path(session_dir)], None, on_progress, text)
            else:
                infos = self._list(None, get_sessions_dir(), on_progress, text)
        except (sqlite3.Error, OSError, CatalogError) as error:
            self._failed(error)
            from ._discovery import list_all_sessions

            infos = list_all_sessions(session_dir, on_progress)
            return infos if text else [attrs.evolve(info, all_messages_text="") for info in infos]
        return _sorted(infos)

    def refresh(self, session_dir: str | None = None) -> RefreshReport:
        """Bring one folder (default: every project's folders) up to date; raises on database errors."""
        if session_dir:
            self._current([normalize_path(session_dir)], None, None)
        else:
            self._current(None, get_sessions_dir(), None)
        return self.last_report

    def _failed(self, error: BaseException) -> None:
        self.last_error = f"{self.path}: {error}"
        self.close()

    def _list(
        self,
        directories: builtins.list[str] | None,
        root: str | None,
        on_progress: ProgressCallback | None,
        text: bool,
    ) -> builtins.list[SessionInfo]:
        current = self._current(directories, root, on_progress)
        texts: dict[int, str] = {}
        if text:
            texts = self._texts(
                [row.id for _, row in current if row.status == _SESSION and row.message_count]
            )
        infos = []
        for candidate, row in current:
            assert candidate.stat is not None
            summary = row.summary(texts.get(row.id))
            partial = row.partial
            if partial is None:
                partial = _read_range(candidate.path, row.parsed, row.size)
            if partial:
                feed_lines(summary, partial)
            info = summary.info(candidate.path, candidate.stat.st_mtime)
            if info is not None:
                infos.append(info)
        return infos

    def _texts(self, ids: Sequence[int]) -> dict[int, str]:
        connection = self._connect()
        out: dict[int, str] = {}
        for chunk in _chunks(ids, 500):
            marks = ",".join("?" * len(chunk))
            for file_id, blob in connection.execute(
                f"SELECT id, all_text FROM files WHERE id IN ({marks})", chunk
            ):
                out[file_id] = _unpack(blob)
        return out

    # ------------------------------------------------------------------ refreshing

    def _candidates(
        self, directories: builtins.list[str] | None, root: str | None
    ) -> builtins.list[_Candidate]:
        """The files Pi's list would read, in the order it reads them (which breaks ties)."""
        out: builtins.list[_Candidate] = []
        if directories is not None:
            for directory in directories:
                try:
                    names = sorted((n for n in os.listdir(directory) if n.endswith(".jsonl")), reverse=True)
                except OSError:
                    continue
                for name in names:
                    path = os.path.join(directory, name)
                    out.append(_Candidate(path, directory, _stat(path)))
            return out
        assert root is not None
        try:
            folders = [os.path.join(root, e.name) for e in os.scandir(root) if e.is_dir() or e.is_symlink()]
        except OSError:
            return []
        for folder in folders:
            try:
                names = [n for n in os.listdir(folder) if n.endswith(".jsonl")]
            except OSError:
                continue
            for name in names:
                path = os.path.join(folder, name)
                out.append(_Candidate(path, folder, _stat(path)))
        out.sort(
            key=lambda c: (float("-inf") if c.stat is None else c.stat.st_mtime, os.path.basename(c.path)),
            reverse=True,
        )
        return out

    def _rows(self, directories: builtins.list[str] | None, root: str | None) -> dict[str, _Row]:
        connection = self._connect()
        if directories is not None:
            rows: builtins.list[Any] = []
            for directory in directories:
                rows += connection.execute(
                    f"SELECT {_FILE_COLUMNS} FROM files WHERE dir = ?", (directory,)
                ).fetchall()
        else:
            assert root is not None
            prefix = os.path.join(root, "")
            rows = connection.execute(
                f"SELECT {_FILE_COLUMNS} FROM files WHERE dir >= ? AND dir < ?",
                (prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)),
            ).fetchall()
            rows = [row for row in rows if os.path.dirname(row[2]) == root]
        return {row[1]: _Row(*row) for row in rows}

    def _current(
        self,
        directories: builtins.list[str] | None,
        root: str | None,
        on_progress: ProgressCallback | None,
        index: bool = False,
    ) -> builtins.list[tuple[_Candidate, _Row]]:
        """Refresh the rows of these folders (and with ``index`` their search rows); the candidates
        (in Pi's order) that have a row."""
        candidates = self._candidates(directories, root)
        rows = self._rows(directories, root)
        skipped: builtins.list[SkippedFile] = []
        readable = []
        for candidate in candidates:
            # decided without the write lock, so a folder holding a FIFO or a broken link costs none
            if candidate.stat is None or not stat.S_ISREG(candidate.stat.st_mode):
                why = "cannot be read" if candidate.stat is None else "not a regular file"
                skipped.append(SkippedFile(candidate.path, why))
            else:
                readable.append(candidate)
        seen = {c.path for c in readable}
        stale = [path for path in rows if path not in seen]
        changed = [
            c
            for c in readable
            if not _unchanged(c, rows.get(c.path)) or (index and rows[c.path].indexed < rows[c.path].parsed)
        ]
        counts = {"read": 0, "appended": 0}
        total = len(candidates)
        done = total - len(changed)
        if on_progress is not None and changed:
            on_progress(done, total)
        if changed or stale:
            connection = self._connect()
            started = time.monotonic()
            connection.execute("BEGIN IMMEDIATE")
            try:
                for path in stale:
                    self._delete(connection, path)
                for candidate in changed:
                    if time.monotonic() - started > _COMMIT_EVERY:
                        connection.execute("COMMIT")
                        connection.execute("BEGIN IMMEDIATE")
                        started = time.monotonic()
                    row, outcome = self._update(connection, candidate, index)
                    if row is None:
                        rows.pop(candidate.path, None)
                    else:
                        rows[candidate.path] = row
                    if outcome in counts:
                        counts[outcome] += 1
                    elif outcome:
                        skipped.append(SkippedFile(candidate.path, outcome))
                    done += 1
                    if on_progress is not None:
                        on_progress(done, total)
                connection.execute("COMMIT")
            except BaseException:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                raise
        out = []
        for candidate in readable:
            row = rows.get(candidate.path)
            if row is None:
                continue
            if row.status == _FOREIGN or (
                row.status == _PENDING and not _partial_header(row, candidate.path)
            ):
                if not any(s.path == candidate.path for s in skipped):
                    skipped.append(SkippedFile(candidate.path, "not a Pi session (no session header)"))
                continue
            out.append((candidate, row))
        self.last_report = RefreshReport(
            files=total,
            read=counts["read"],
            appended=counts["appended"],
            removed=len(stale),
            skipped=tuple(skipped),
        )
        return out

    def _delete(self, connection: sqlite3.Connection, path: str) -> None:
        found = connection.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()
        if found is None:
            return
        self._drop_messages(connection, found[0])
        connection.execute("DELETE FROM files WHERE id = ?", (found[0],))

    def _drop_messages(self, connection: sqlite3.Connection, file_id: int) -> None:
        if self.fts:
            connection.execute(
                "DELETE FROM fts WHERE rowid IN (SELECT id FROM messages WHERE file_id = ?)", (file_id,)
            )
        connection.execute("DELETE FROM messages WHERE file_id = ?", (file_id,))

    def _update(
        self, connection: sqlite3.Connection, candidate: _Candidate, index: bool
    ) -> tuple[_Row | None, str]:
        """Catch one file up inside the caller's write transaction: (its row, what was done).

        With ``index``, its messages also reach the search index (listing alone leaves that to
        the first search: the index is most of a first build's cost).
        """
        path = candidate.path
        found = connection.execute(f"SELECT {_FILE_COLUMNS} FROM files WHERE path = ?", (path,)).fetchone()
        old = None if found is None else _Row(*found)
        try:
            handle = open_regular(path)
        except OSError as error:
            if old is not None:
                self._delete(connection, path)
            return None, f"cannot be read: {error.strerror or error}"
        with handle:
            checked_ns = time.time_ns()
            stats = os.fstat(handle.fileno())
            size = stats.st_size
            current = old is not None and _same(old, stats)  # another process may have just caught it up
            # written in the tick it was read in: unchanged if its bytes are (far cheaper than parsing)
            if (
                old is not None
                and not current
                and _same(old, stats, racy_too=True)
                and zlib.crc32(handle.read(size + 1)) == old.crc
            ):
                connection.execute("UPDATE files SET checked_ns = ? WHERE id = ?", (checked_ns, old.id))
                old = attrs.evolve(old, checked_ns=checked_ns)
                current = True
            if current:
                assert old is not None
                if index and old.indexed < old.parsed:
                    handle.seek(old.indexed)
                    self._index(connection, old.id, handle.read(old.parsed - old.indexed))
                    connection.execute("UPDATE files SET indexed = parsed WHERE id = ?", (old.id,))
                    old = attrs.evolve(old, indexed=old.parsed)
                return old, ""
            start = 0
            summary = SessionSummary(messages=[] if index else None)
            appended = old is not None and _grew(old, stats, handle)
            if appended:
                assert old is not None
                start = old.parsed
                all_text = connection.execute(
                    "SELECT all_text FROM files WHERE id = ?", (old.id,)
                ).fetchone()[0]
                summary = old.summary(_unpack(all_text))
                summary.messages = [] if index else None
                if index and old.indexed < old.parsed:
                    handle.seek(old.indexed)
                    self._index(connection, old.id, handle.read(old.parsed - old.indexed))
            handle.seek(start)
            data = handle.read(size - start)
        size = start + len(data)
        cut = max(data.rfind(b"\n"), data.rfind(b"\r")) + 1
        partial = data[cut:]
        if not summary.foreign:
            feed_lines(summary, data[:cut])
        if summary.foreign:
            partial = b""
        status = _FOREIGN if summary.foreign else _SESSION if summary.header is not None else _PENDING
        head, tail = _edges(data, start, old if appended else None)
        if index or status != _SESSION:
            indexed = start + cut  # a file that is no session has nothing to index
        else:
            indexed = old.indexed if appended and old is not None else 0
        values = (
            path,
            candidate.dir,
            stats.st_dev,
            stats.st_ino,
            size,
            stats.st_mtime_ns,
            checked_ns,
            zlib.crc32(data) if start == 0 else zlib.crc32(data[old.size - start :], old.crc),  # type: ignore[union-attr]
            start + cut,
            indexed,
            head,
            tail,
            partial if len(partial) <= _PARTIAL_MAX else None,
            status,
            None if summary.header is None else _header_subset(summary.header),
            summary.message_count,
            _pack(summary.first_message),
            None if summary.name is None else _pack(summary.name),
            summary.last_activity,
            _pack(" ".join(summary.texts)),
        )
        if old is None:
            cursor = connection.execute(
                "INSERT INTO files (path, dir, dev, ino, size, mtime_ns, checked_ns, crc, parsed, indexed, "
                "head, tail, partial, status, header, message_count, first_message, name, last_activity, "
                "all_text) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                values,
            )
            file_id = cursor.lastrowid
            assert file_id is not None
        else:
            file_id = old.id
            if not appended:
                self._drop_messages(connection, file_id)
            connection.execute(
                "UPDATE files SET path = ?, dir = ?, dev = ?, ino = ?, size = ?, mtime_ns = ?, "
                "checked_ns = ?, crc = ?, parsed = ?, indexed = ?, "
                "head = ?, tail = ?, partial = ?, status = ?, header = ?, message_count = ?, "
                "first_message = ?, name = ?, last_activity = ?, all_text = ? WHERE id = ?",
                (*values, file_id),
            )
        if summary.messages and status == _SESSION:
            self._add_messages(connection, file_id, summary.messages)
        row = _Row(file_id, *values[:-1])
        return row, "appended" if appended else "read"

    def _index(self, connection: sqlite3.Connection, file_id: int, data: bytes) -> None:
        """Add the messages of whole lines ``data`` (after the header) to the search index."""
        collector = SessionSummary(messages=[])
        collector.header = {}  # lines after the header: every message counts
        feed_lines(collector, data)
        if collector.messages:
            self._add_messages(connection, file_id, collector.messages)

    def _add_messages(
        self,
        connection: sqlite3.Connection,
        file_id: int,
        messages: builtins.list[tuple[object, float | None, str, str]],
    ) -> None:
        first = (connection.execute("SELECT COALESCE(MAX(id), 0) FROM messages").fetchone()[0]) + 1
        rows: builtins.list[tuple[int, int, str | None, float | None, str, str]] = [
            (first + n, file_id, entry_id if isinstance(entry_id, str) else None, ts, role, _indexable(text))
            for n, (entry_id, ts, role, text) in enumerate(messages)
        ]
        if self.fts:
            connection.executemany(
                "INSERT INTO messages (id, file_id, entry_id, ts, role) VALUES (?, ?, ?, ?, ?)",
                [row[:5] for row in rows],
            )
            connection.executemany(
                "INSERT INTO fts (rowid, text) VALUES (?, ?)", [(row[0], row[5]) for row in rows]
            )
        else:
            connection.executemany(
                "INSERT INTO messages (id, file_id, entry_id, ts, role, text) VALUES (?, ?, ?, ?, ?, ?)", rows
            )

    # ------------------------------------------------------------------ search

    def search(
        self,
        query: str,
        *,
        cwd: str | None = None,
        all: bool = False,
        role: Role | None = None,
        limit: int | None = 50,
        session_dir: str | None = None,
        on_progress: ProgressCallback | None = None,
    ) -> builtins.list[SearchHit]:
        """Messages whose text holds every word of ``query`` (quoted: as a phrase), newest first.

        Searches the sessions :meth:`list` gives for ``cwd`` (default: the current folder), or
        with ``all=True`` those :meth:`list_all` gives. ``role`` keeps only ``"user"``,
        ``"assistant"`` or ``"tool"`` (tool results) messages. Words are matched whole and
        case-insensitively. A database that cannot be used is replaced by one in memory.
        ``on_progress(done, total)`` follows the files read (the first search indexes them all).

        >>> Catalog().search("rounding error", all=True, role="user", limit=5)  # doctest: +SKIP
        """
        terms = _terms(query)
        if role not in (None, "user", "assistant", "tool"):
            raise CatalogError(f"unknown role {role!r}: use user, assistant or tool")
        if limit is not None and limit < 1:
            raise CatalogError(f"limit must be at least 1, not {limit}")
        if self.fts:
            _check_fts_query(query, terms)
        try:
            return self._search(terms, cwd, all, role, limit, session_dir, on_progress)
        except (sqlite3.Error, OSError, CatalogError) as error:
            if self.path == ":memory:":
                raise
            self._failed(error)
            with Catalog(":memory:", fts=self.fts) as scratch:
                return scratch._search(terms, cwd, all, role, limit, session_dir, on_progress)

    def _search(
        self,
        terms: builtins.list[builtins.list[str]],
        cwd: str | None,
        all: bool,
        role: Role | None,
        limit: int | None,
        session_dir: str | None,
        on_progress: ProgressCallback | None,
    ) -> builtins.list[SearchHit]:
        scope = self._scope(cwd, all, session_dir, on_progress)
        if not scope:
            return []
        connection = self._connect()
        connection.execute("CREATE TEMP TABLE IF NOT EXISTS scope (file_id INTEGER PRIMARY KEY)")
        connection.execute("DELETE FROM temp.scope")
        connection.executemany("INSERT INTO temp.scope VALUES (?)", [(file_id,) for file_id in scope])
        where = "m.file_id IN (SELECT file_id FROM temp.scope)" + (" AND m.role = ?" if role else "")
        params: builtins.list[Any] = [role] if role else []
        order = "ORDER BY m.ts IS NULL, m.ts DESC, f.path, m.id"
        found: builtins.list[tuple[int, int, str | None, float | None, str, str]] = []
        if self.fts:
            query = _fts_query(terms)
            rows = connection.execute(
                "SELECT m.id, m.file_id, m.entry_id, m.ts, m.role FROM fts "
                "JOIN messages m ON m.id = fts.rowid JOIN files f ON f.id = m.file_id "
                f"WHERE fts MATCH ? AND {where} {order}" + ("" if limit is None else f" LIMIT {int(limit)}"),
                [query, *params],
            ).fetchall()
            snippets: dict[int, str] = {}
            for chunk in _chunks([row[0] for row in rows], 500):
                marks = ",".join("?" * len(chunk))
                snippets.update(
                    connection.execute(
                        "SELECT rowid, snippet(fts, 0, ?, ?, '…', ?) "
                        f"FROM fts WHERE fts MATCH ? AND rowid IN ({marks})",
                        [_MARK_OPEN, _MARK_CLOSE, _SNIPPET_TOKENS, query, *chunk],
                    ).fetchall()
                )
            found = [(*row, snippets.get(row[0], "")) for row in rows]
        else:
            cursor = connection.execute(
                "SELECT m.id, m.file_id, m.entry_id, m.ts, m.role, m.text FROM messages m "
                f"JOIN files f ON f.id = m.file_id WHERE {where} {order}",
                params,
            )
            for message_id, file_id, entry_id, ts, message_role, text in cursor:
                spans = _match(text, terms)
                if spans is None:
                    continue
                found.append((message_id, file_id, entry_id, ts, message_role, _plain_snippet(text, spans)))
                if limit is not None and len(found) >= limit:
                    break
            cursor.close()
        hits = []
        for _, file_id, entry_id, ts, message_role, raw in found:
            path, session_id = scope[file_id]
            snippet, marked = _parse_snippet(raw)
            hits.append(
                SearchHit(
                    session_path=path,
                    session_id=session_id,
                    entry_id=entry_id,
                    time=None if ts is None else _from_ms(ts),
                    role=message_role,  # type: ignore[arg-type]
                    snippet=snippet,
                    marks=marked,
                )
            )
        return hits

    def _scope(
        self, cwd: str | None, all: bool, session_dir: str | None, on_progress: ProgressCallback | None
    ) -> dict[int, tuple[str, str]]:
        """file id → (path, session id) of the sessions a search covers."""
        filter_cwd: str | None = None
        if all:
            if session_dir:
                current = self._current([normalize_path(session_dir)], None, on_progress, index=True)
            else:
                current = self._current(None, get_sessions_dir(), on_progress, index=True)
        else:
            cwd = os.getcwd() if cwd is None else cwd
            if session_dir:
                directory = normalize_path(session_dir)
                if not paths_equal(directory, default_session_dir_path(cwd)):
                    filter_cwd = resolve_path(cwd)
            else:
                directory = default_session_dir_path(cwd)
            current = self._current([directory], None, on_progress, index=True)
        scope: dict[int, tuple[str, str]] = {}
        for candidate, row in current:
            if row.status != _SESSION or row.header is None:
                continue
            header = json.loads(row.header)
            if filter_cwd is not None:
                header_cwd = header.get("cwd")
                if not cwd_matches(header_cwd if isinstance(header_cwd, str) else "", filter_cwd):
                    continue
            session_id = header.get("id")
            scope[row.id] = (candidate.path, session_id if isinstance(session_id, str) else str(session_id))
        return scope


# ----------------------------------------------------------------------------------- helpers


_PROBE: sqlite3.Connection | None = None


def _check_fts_query(query: str, terms: list[list[str]]) -> None:
    """A query FTS5 rejects is the caller's mistake, not a reason to rebuild the catalog in memory."""
    global _PROBE
    if _PROBE is None:
        _PROBE = sqlite3.connect(":memory:", check_same_thread=False)
        _PROBE.execute(
            "CREATE VIRTUAL TABLE probe USING fts5(text, tokenize='unicode61 remove_diacritics 0')"
        )
    try:
        _PROBE.execute("SELECT rowid FROM probe WHERE probe MATCH ?", (_fts_query(terms),)).fetchall()
    except sqlite3.Error as error:
        raise CatalogError(f"cannot search for {query!r}: {error}") from None


def _chunks(items: Sequence[Any], size: int) -> Iterable[list[Any]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


def _from_ms(ms: float) -> datetime | None:
    try:
        return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None


def _partial_header(row: _Row, path: str) -> bool:
    """Whether the unfinished last line of a file with no whole line yet is a session header."""
    partial = row.partial if row.partial is not None else _read_range(path, row.parsed, row.size)
    summary = SessionSummary()
    feed_lines(summary, partial)
    return summary.header is not None


def _unchanged(candidate: _Candidate, row: _Row | None) -> bool:
    return row is not None and candidate.stat is not None and _same(row, candidate.stat)


def _same(row: _Row, stats: os.stat_result, racy_too: bool = False) -> bool:
    """The file is as it was read, and was not written too close to that read to tell.

    A file written in the same timestamp tick as (or after) the read might have changed without
    its size or mtime changing ("racily clean", as git calls it): its bytes are compared again.
    """
    margin = _RACY_COARSE_NS if stats.st_mtime_ns % 1_000_000 == 0 else _RACY_NS
    return (
        (racy_too or stats.st_mtime_ns < row.checked_ns - margin)
        and stat.S_ISREG(stats.st_mode)
        and row.dev == stats.st_dev
        and row.ino == stats.st_ino
        and row.size == stats.st_size
        and row.mtime_ns == stats.st_mtime_ns
    )


def _grew(row: _Row, stats: os.stat_result, handle: Any) -> bool:
    """Same file, larger, and the bytes it had are still there: only its new end needs reading."""
    if (row.dev, row.ino) != (stats.st_dev, stats.st_ino) or stats.st_size <= row.size:
        return False
    handle.seek(0)
    if handle.read(len(row.head)) != row.head:
        return False
    handle.seek(row.size - len(row.tail))
    return bool(handle.read(len(row.tail)) == row.tail)


def _edges(data: bytes, start: int, old: _Row | None) -> tuple[bytes, bytes]:
    """The first and last bytes of the file's content as now read (``data`` starts at ``start``)."""
    if old is None or start == 0:
        return data[:_EDGE], data[-_EDGE:]
    if len(data) >= _EDGE:
        return old.head, data[-_EDGE:]
    return old.head, (old.tail + data[old.size - start :])[-_EDGE:]


def _read_range(path: str, start: int, end: int) -> bytes:
    try:
        with open_regular(path) as handle:
            handle.seek(start)
            return bytes(handle.read(max(0, end - start)))
    except OSError:
        return b""


def _refuse_pi_data(path: str) -> None:
    target = os.path.realpath(path)
    for guarded in (get_agent_dir(), get_sessions_dir()):
        root = os.path.realpath(resolve_path(guarded))
        if target == root or target.startswith(os.path.join(root, "")):
            raise CatalogError(f"the catalog {path} must not be inside Pi's data folder {root}")


# ----------------------------------------------------------------------------------- module API


def search(
    query: str,
    *,
    cwd: str | None = None,
    all: bool = False,
    role: Role | None = None,
    limit: int | None = 50,
    session_dir: str | None = None,
    on_progress: ProgressCallback | None = None,
    catalog: Catalog | None = None,
) -> list[SearchHit]:
    """Search message text across sessions with the default catalog (or ``catalog``), newest first.

    The arguments are :meth:`Catalog.search`'s.

    >>> from pisession.catalog import search
    >>> for hit in search("timeout", all=True, role="user"):  # doctest: +SKIP
    ...     print(hit.session_path, hit.entry_id, hit.snippet)
    """
    own = Catalog() if catalog is None else catalog
    try:
        return own.search(
            query, cwd=cwd, all=all, role=role, limit=limit, session_dir=session_dir, on_progress=on_progress
        )
    finally:
        if catalog is None:
            own.close()


def with_catalog(catalog: Catalog | bool, call: Callable[[Catalog], _T]) -> _T:
    """Run ``call`` with ``catalog``, or with the default catalog (opened and closed here) for True.

    A default catalog that cannot be used (``$PISESSION_CATALOG`` inside Pi's data) gives an
    in-memory one, so callers still get the rows.
    """
    if isinstance(catalog, Catalog):
        return call(catalog)
    try:
        own = Catalog()
    except CatalogError:
        own = Catalog(":memory:")
    with own:
        return call(own)
