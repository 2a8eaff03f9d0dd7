"""Bringing the ``files`` rows (and the search rows hanging off them) up to date with the folders.

How a file is brought up to date (not opened, its new lines parsed, read in full, or its rows
deleted) is told once, in :mod:`pisession.catalog`'s docstring: :func:`_unchanged`,
:func:`_grew`, :func:`_update` and :func:`_delete` do it.

Per file, the whole lines newly read reach the rows that hang off a ``files`` row through
:func:`add_entry_rows`, and leave through :func:`drop_entry_rows` (a file read again in full, or
gone): another kind of per-entry row is added and removed in those two places, inside the same
write transaction as the file's row.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sqlite3
import stat
import time
import zlib
from typing import Any

from .._discovery import (
    SessionInfo,
    SessionSummary,
    feed_lines,
    folder_names,
    root_files,
    row_json,
    split_cr,
)
from .._errors import CatalogError
from .._js import local_zone_key, local_zone_reads
from .._load import (
    MAX_LINE_BYTES,
    SkippedLine,
    iter_file_lines,
    iter_line_lists,
    open_regular,
    parse_line,
    warn_long_lines,
)
from .._record import Record, replace
from ._range import _EDGE, CheckedRange, read_range
from ._schema import (
    EVERY_PART,
    FILE_COLUMNS,
    FOREIGN,
    LISTING,
    PENDING,
    SESSION,
    USAGE,
    ProgressCallback,
    Row,
    header_subset,
    indexable,
    pack,
    pack_text,
    row_checksum,
    text_checksum,
    text_intact,
    unpack_text,
)

_PARTIAL_MAX = 1 << 16  # a longer unfinished last line is read again from the file, not stored
# A write lands in the mtime tick it happens in; the kernel's coarse clock lags by a few ms where
# times have sub-millisecond digits, file systems that keep whole seconds (FAT: two) lag by more.
_RACY_NS = 50_000_000
_RACY_COARSE_NS = 2_000_000_000
_CHECK_BLOCK = 1 << 20
_COMMIT_EVERY = 0.25  # seconds: short write transactions let other processes take turns
# Write passes before a call gives up on a catalog another process keeps rebuilding (and reads
# the files instead): the first catches up what changed, the others what a rebuild removed.
_ATTEMPTS = 4


class SkippedFile(Record):
    """A ``.jsonl`` file the catalog did not list, and why (not a session, unreadable...)."""

    path: str
    reason: str


class RefreshReport(Record):
    """What the last refresh did: files seen, read in full, read from their old end, removed."""

    files: int = 0
    read: int = 0
    appended: int = 0
    removed: int = 0
    skipped: tuple[SkippedFile, ...] = ()


class Candidate(Record):
    """A ``.jsonl`` name found in a folder, with the ``stat`` taken for this call (None: failed)."""

    path: str
    dir: str
    stat: os.stat_result | None


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except (OSError, ValueError):
        return None


def candidates(directories: list[str] | None, root: str | None) -> list[Candidate]:
    """The files Pi's list would read, in the order it reads them (which breaks ties)."""
    if directories is not None:
        return [
            Candidate(path, directory, _stat(path))
            for directory in directories
            for path in (os.path.join(directory, name) for name in folder_names(directory))
        ]
    assert root is not None
    out = [Candidate(path, folder, _stat(path)) for folder, path in root_files(root)]
    out.sort(
        key=lambda c: (float("-inf") if c.stat is None else c.stat.st_mtime, os.path.basename(c.path)),
        reverse=True,
    )
    return out


def stored_rows(
    connection: sqlite3.Connection, directories: list[str] | None, root: str | None
) -> dict[str, Row]:
    if directories is not None:
        rows: list[Any] = []
        for directory in directories:
            rows += connection.execute(
                f"SELECT {FILE_COLUMNS} FROM files WHERE dir = ?", (directory,)
            ).fetchall()
    else:
        assert root is not None
        prefix = os.path.join(root, "")
        rows = connection.execute(
            f"SELECT {FILE_COLUMNS} FROM files WHERE dir >= ? AND dir < ?",
            (prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)),
        ).fetchall()
        rows = [row for row in rows if os.path.dirname(row[2]) == root]
    return {row[1]: Row(*row) for row in rows}


def current(
    connection: sqlite3.Connection,
    fts: bool,
    directories: list[str] | None,
    root: str | None,
    on_progress: ProgressCallback | None,
    index: bool = False,
    max_size: int | None = None,
    parts: int = EVERY_PART,
) -> tuple[list[tuple[Candidate, Row]], RefreshReport]:
    """Refresh the rows of these folders (and with ``index`` their search rows): the candidates
    (in Pi's order) that have a row, and what was done. Files over ``max_size`` bytes are
    skipped unread (and named). Every row returned has the ``parts`` (:data:`~._schema.USAGE`,
    :data:`~._schema.LISTING`) asked for; a file read for the first time is read for those only.

    Returns inside a read transaction (end it with :func:`finish`): the rows returned and
    whatever the caller reads before it ends are one state of the database. Another process
    may rebuild the catalog between two of this refresh's commits, or catch a file up after
    them: rows are only ever read in one transaction with what is read beside them, so ids
    reused by a rebuild never pair one file's row with another's text or usage.
    """
    finish(connection)
    if index:
        parts |= LISTING  # a search's hits are listed
    found = candidates(directories, root)
    skipped: list[SkippedFile] = []
    readable = []
    for candidate in found:
        # decided without the write lock, so a folder holding a FIFO or a broken link costs none
        if candidate.stat is None or not stat.S_ISREG(candidate.stat.st_mode):
            why = "cannot be read" if candidate.stat is None else "not a regular file"
            skipped.append(SkippedFile(candidate.path, why))
        elif max_size is not None and candidate.stat.st_size > max_size:
            skipped.append(SkippedFile(candidate.path, f"larger than {max_size:,} bytes: not read"))
        else:
            readable.append(candidate)
    counts = {"read": 0, "appended": 0}
    removed = 0
    unread: set[str] = set()  # files a write pass could not read: they have no row, rightly
    connection.execute("BEGIN")
    try:
        for attempt in range(_ATTEMPTS):
            rows = stored_rows(connection, directories, root)
            if attempt == 0:
                seen = {c.path for c in readable}
                stale = [path for path in rows if path not in seen]
                changed = [
                    c
                    for c in readable
                    if not _unchanged(c, rows.get(c.path), parts) or (index and _unindexed(rows[c.path]))
                ]
            else:
                # Rows written since this call's own write pass are another process's newer
                # reads of the same files: taken as they are. Only a row that is missing (a
                # rebuild under way) or damaged is caught up again.
                stale = []
                changed = [
                    c
                    for c in readable
                    if c.path not in unread and not _usable(rows.get(c.path), index, parts)
                ]
            if not changed and not stale:
                break
            connection.execute("COMMIT")
            removed += len(stale)
            _write_pass(
                connection,
                fts,
                stale,
                changed,
                {c.path for c in changed if c.path not in rows},
                index,
                parts,
                counts,
                skipped,
                unread,
                on_progress if attempt == 0 else None,
                len(found),
            )
            connection.execute("BEGIN")
        else:
            raise CatalogError("the catalog kept changing while it was read (another process rebuilding it)")
    except BaseException:
        finish(connection)
        raise
    out = []
    for candidate in readable:
        row = rows.get(candidate.path)
        if row is None:
            continue
        if row.status == FOREIGN or (row.status == PENDING and not _partial_header(row, candidate.path)):
            if not any(s.path == candidate.path for s in skipped):
                skipped.append(SkippedFile(candidate.path, "not a Pi session (no session header)"))
            continue
        out.append((candidate, row))
    report = RefreshReport(
        files=len(found),
        read=counts["read"],
        appended=counts["appended"],
        removed=removed,
        skipped=tuple(skipped),
    )
    return out, report


def finish(connection: sqlite3.Connection) -> None:
    """End the read transaction :func:`current` left open (keeping what was written in it)."""
    if connection.in_transaction:
        try:
            connection.execute("COMMIT")
        except sqlite3.Error:
            with contextlib.suppress(sqlite3.Error):
                connection.execute("ROLLBACK")


def _unindexed(row: Row) -> bool:
    return row.indexed < row.parsed


def _usable(row: Row | None, index: bool, parts: int) -> bool:
    return row is not None and row.intact() and not (index and _unindexed(row)) and not row.lacks & parts


def _write_pass(
    connection: sqlite3.Connection,
    fts: bool,
    stale: list[str],
    changed: list[Candidate],
    new: set[str],
    index: bool,
    parts: int,
    counts: dict[str, int],
    skipped: list[SkippedFile],
    unread: set[str],
    on_progress: ProgressCallback | None,
    total: int,
) -> None:
    """Delete the rows of files gone and catch the changed files up, in short write transactions;
    the files in ``new`` (no row when this pass began) are read by worker processes when there
    are enough of them (:mod:`._workers`)."""
    from ._workers import prefetched

    done = total - len(changed)
    if on_progress is not None and changed:
        on_progress(done, total)
    dropped = 0  # search rows deleted: their words must then be purged from the index
    paths = [c.path for c in changed if c.path in new]
    read = functools.partial(read_new_file, lacks=EVERY_PART & ~parts)
    with prefetched(paths, index, read, warm_up) as reads:
        started = time.monotonic()
        connection.execute("BEGIN IMMEDIATE")
        try:
            for path in stale:
                dropped += _delete(connection, fts, path)
            for candidate in changed:
                if time.monotonic() - started > _COMMIT_EVERY:
                    connection.execute("COMMIT")
                    connection.execute("BEGIN IMMEDIATE")
                    started = time.monotonic()
                ahead = next(reads) if candidate.path in new else None
                row, outcome, deleted = _update(connection, fts, candidate, index, parts, ahead)
                dropped += deleted
                if row is None:
                    unread.add(candidate.path)
                if outcome in counts:
                    counts[outcome] += 1
                elif outcome and not any(s.path == candidate.path for s in skipped):
                    skipped.append(SkippedFile(candidate.path, outcome))
                done += 1
                if on_progress is not None:
                    on_progress(done, total)
            connection.execute("COMMIT")
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise
    if dropped:
        _purge(connection, fts)


def _delete(connection: sqlite3.Connection, fts: bool, path: str) -> int:
    found = connection.execute("SELECT id FROM files WHERE path = ?", (path,)).fetchone()
    if found is None:
        return 0
    deleted = drop_entry_rows(connection, fts, found[0])
    connection.execute("DELETE FROM files WHERE id = ?", (found[0],))
    return deleted


def _purge(connection: sqlite3.Connection, fts: bool) -> None:
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


def _index(
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
    rows: list[tuple[int, int, str | None, float | None, str, str]] = [
        (first + n, file_id, entry_id if isinstance(entry_id, str) else None, ts, role, indexable(text))
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


class FileRead(Record):
    """What reading a file (in full, or from its old end) gave, before any of it is stored: made
    in this process or, for a file with no row yet, in a worker process (so it pickles)."""

    stats: os.stat_result
    checked_ns: int
    zone: str
    zone_read: bool  # a date was read in the local time zone
    start: int
    appended: bool
    summary: SessionSummary
    total: int
    crc: int
    head: bytes
    tail: bytes
    cut: int
    partial: bytes | None
    usage: list[Any]
    prepared: Any  # _usage.PreparedUsage of usage, or None
    damaged: int
    long_lines: list[tuple[int, int]]
    numbered: bool
    lacks: int  # the parts not read (see _schema.USAGE)
    all_text: bytes  # the row's text and JSON made ahead (in the worker, for a new file)
    modified: float | None
    wire_head: bytes | None


def read_new_file(path: str, index: bool, lacks: int = 0) -> FileRead | str:
    """Read a file that has no row, in full (less the parts ``lacks``): what :func:`_update`
    would read of it, or why it cannot be read (run in a worker process: it touches no
    database)."""
    try:
        handle = open_regular(path)
    except OSError as error:
        return f"cannot be read: {error.strerror or error}"
    with handle:
        read = _read(None, False, handle, None, index, path, EVERY_PART & ~lacks)
    assert isinstance(read, FileRead)
    return read


def warm_up() -> None:
    """Import and build what :func:`read_new_file` uses, before worker processes are forked
    (each would otherwise import it again)."""
    from ._fastread import _decoders
    from ._usage import _decoder

    _decoder()
    _decoders()
    parse_line(b"{}")


def _update(
    connection: sqlite3.Connection,
    fts: bool,
    candidate: Candidate,
    index: bool,
    parts: int = EVERY_PART,
    prefetched: FileRead | str | None = None,
) -> tuple[Row | None, str, int]:
    """Catch one file up inside the caller's write transaction: (its row, what was done, how many
    search rows were deleted).

    With ``index``, its messages also reach the search index (listing alone leaves that to
    the first search: the index is most of a first build's cost). ``prefetched``: the file read
    in full by :func:`read_new_file` (a worker process), used if the file still has no row.
    """
    path = candidate.path
    found = connection.execute(f"SELECT {FILE_COLUMNS} FROM files WHERE path = ?", (path,)).fetchone()
    old = None if found is None else Row(*found)
    deleted = 0
    if old is not None and not old.intact():
        deleted = _delete(connection, fts, path)  # damaged: read the file again, from scratch
        old = None
    if old is None and prefetched is not None:
        if isinstance(prefetched, str):
            return None, prefetched, deleted
        read = prefetched
    else:
        try:
            handle = open_regular(path)
        except OSError as error:
            deleted += 0 if old is None else _delete(connection, fts, path)
            return None, f"cannot be read: {error.strerror or error}", deleted
        with handle:
            outcome = _read(connection, fts, handle, old, index, path, parts)
        if isinstance(outcome, Row):
            return outcome, "", deleted
        read = outcome
    if read.long_lines:
        warn_long_lines(path, read.long_lines, at_bytes=not read.numbered, listed=True)
    return _store(connection, fts, candidate, old, read, index, deleted)


def _read(
    connection: sqlite3.Connection | None,
    fts: bool,
    handle: Any,
    old: Row | None,
    index: bool,
    path: str,
    parts: int,
) -> FileRead | Row:
    """Read an open file as :func:`_update` needs it: its row, when it is as it was read (caught
    up in the search index with ``index``) and has the ``parts`` asked for, else what reading it
    (in full, or from its old end) gave. Touches no database when ``old`` is None.

    A read leaves out what the file's row already went without (a new file: every part not
    asked for), unless it is asked for: then the file is read again in full."""
    zone = local_zone_key()
    checked_ns = time.time_ns()
    stats = os.fstat(handle.fileno())
    size = stats.st_size
    lacking = old is not None and bool(old.lacks & parts)  # a part asked for: read in full
    fresh = old is not None and not lacking and _same(old, stats)  # another process may have caught it up
    # written in the tick it was read in: unchanged if its bytes are (far cheaper than parsing)
    if (
        old is not None
        and not lacking
        and not fresh
        and _same(old, stats, racy_too=True)
        and file_crc(handle, size + 1) == old.crc
    ):
        assert connection is not None
        connection.execute("UPDATE files SET checked_ns = ? WHERE id = ?", (checked_ns, old.id))
        old = replace(old, checked_ns=checked_ns)
        fresh = True
    if fresh:
        assert old is not None and connection is not None
        if index and old.indexed < old.parsed:
            _index(connection, fts, old.id, handle, old.indexed, old.parsed)
            connection.execute("UPDATE files SET indexed = parsed WHERE id = ?", (old.id,))
            old = replace(old, indexed=old.parsed)
        return old
    start = 0
    summary = SessionSummary(messages=[] if index else None)
    # what was read before in another zone's local time is read again, in this one
    appended = old is not None and not lacking and old.zone in (None, zone) and _grew(old, stats, handle)
    zone_reads = local_zone_reads()
    if appended:
        assert old is not None and connection is not None
        kept = connection.execute(
            "SELECT all_text, wire_head, modified, text_crc FROM files WHERE id = ?", (old.id,)
        ).fetchone()
        # text that fails its checksum is not carried on: the file is read again in full
        appended = text_intact(*kept)
    if appended:
        assert old is not None and connection is not None
        start = old.parsed
        summary = old.summary(unpack_text(kept[0]))
        summary.messages = [] if index else None
        if index and old.indexed < old.parsed:
            _index(connection, fts, old.id, handle, old.indexed, old.parsed)
    # an appended read adds to what the row has, and lacks what it lacks
    lacks = old.lacks if appended and old is not None else (EVERY_PART if old is None else old.lacks) & ~parts
    handle.seek(start)
    # read in chunks, whole lines parsed as they come: a file costs its longest line (at most
    # MAX_LINE_BYTES, a longer one is read past unheld), not its size
    crc_from, crc = (0, 0) if start == 0 or old is None else (old.size - start, old.crc)
    reader = CheckedRange(handle, size - start, crc_from, crc)
    from ._fastread import read_lines
    from ._usage import PreparedUsage

    usage: list[Any] = []
    damaged = 0
    offset = 0  # where the next line begins in what is read
    numbered = start == 0  # a full read knows line numbers; an appended one, byte offsets
    long_lines: list[tuple[int, int]] = []
    lines_read = 0

    def take(lines: list[bytes]) -> None:
        nonlocal offset, damaged, lines_read
        for line in lines:
            lines_read += 1
            if type(line) is SkippedLine and len(line) > MAX_LINE_BYTES:
                long_lines.append((lines_read if numbered else start + offset, len(line)))
            offset += len(line) + 1
        found, bad = read_lines(summary, lines, lacks)
        usage.extend(found)
        damaged += bad

    waiting: list[bytes] | None = None
    for lines in iter_line_lists(reader):
        if waiting is not None:
            take(waiting)
        waiting = lines
    assert waiting is not None and len(waiting) == 1  # the text after the last "\n"
    last = waiting[0]
    partial: bytes | None
    if type(last) is SkippedLine:  # not held: kept aside unread, as a long unfinished line is
        if len(last) > MAX_LINE_BYTES:
            long_lines.append((lines_read + 1 if numbered else start + offset, len(last)))
        cut, partial = offset, None
    else:
        ended = last.rfind(b"\r") + 1  # Pi's readline also ends a line at a lone "\r"
        if ended:
            offset -= 1  # take() counts a "\n" after each line: this part has none
            take([last[:ended]])
        cut, partial = offset, last[ended:]
    all_text = pack_text(" ".join(summary.texts))
    modified, wire_head = (None, None) if lacks & LISTING else _made_ahead(summary, path, partial)
    summary.texts = []  # kept as all_text: not sent twice from a worker
    return FileRead(
        stats=stats,
        checked_ns=checked_ns,
        zone=zone,
        zone_read=local_zone_reads() != zone_reads,
        start=start,
        appended=appended,
        summary=summary,
        total=reader.total,
        crc=reader.crc,
        head=reader.head,
        tail=reader.tail,
        cut=cut,
        partial=partial,
        usage=usage,
        prepared=PreparedUsage(usage) if usage else None,
        damaged=damaged,
        long_lines=long_lines,
        numbered=numbered,
        lacks=lacks,
        all_text=all_text,
        modified=modified,
        wire_head=wire_head,
    )


def _store(
    connection: sqlite3.Connection,
    fts: bool,
    candidate: Candidate,
    old: Row | None,
    read: FileRead,
    index: bool,
    deleted: int,
) -> tuple[Row | None, str, int]:
    """Write what :func:`_read` gave as the file's row (and its usage and search rows)."""
    path = candidate.path
    stats, checked_ns, zone, start = read.stats, read.checked_ns, read.zone, read.start
    appended, summary, cut, partial = read.appended, read.summary, read.cut, read.partial
    usage, damaged = read.usage, read.damaged
    size = start + read.total
    if summary.foreign:
        partial = b""
    status = FOREIGN if summary.foreign else SESSION if summary.header is not None else PENDING
    # what is no session has no usage rows and lists as it reads whatever was left out; a file
    # whose header is not written yet keeps the count of the damaged lines before it (they are
    # not read again when it grows into a session), or says it lacks them
    lacks = read.lacks if status == SESSION else read.lacks & USAGE if status == PENDING else 0
    head, tail = _edges(read.head, read.tail, read.total, start, old if appended else None)
    if index or status != SESSION:
        indexed = start + cut  # a file that is no session has nothing to index
    else:
        indexed = old.indexed if appended and old is not None else 0
    all_text, modified, wire_head = read.all_text, read.modified, read.wire_head
    # a date read in local time (the row made ahead included: it is made while reading)
    local = read.zone_read or (appended and old is not None and old.zone is not None)
    values = (
        path,
        candidate.dir,
        stats.st_dev,
        stats.st_ino,
        size,
        stats.st_mtime_ns,
        stats.st_ctime_ns,
        checked_ns,
        read.crc,
        start + cut,
        indexed,
        head,
        tail,
        None if partial is None or len(partial) > _PARTIAL_MAX else partial,
        status,
        None if summary.header is None else header_subset(summary.header),
        summary.message_count,
        pack(summary.first_message),
        None if summary.name is None else pack(summary.name),
        summary.last_activity,
    )
    stored = (
        *values,
        row_checksum(*values[13:20], lacks),
        zone if local else None,
        lacks,
        modified,
        text_checksum(all_text, wire_head, modified),
        wire_head,
        all_text,
    )
    if old is None:
        cursor = connection.execute(
            "INSERT INTO files (path, dir, dev, ino, size, mtime_ns, ctime_ns, checked_ns, crc, parsed, "
            "indexed, head, tail, partial, status, header, message_count, first_message, name, "
            "last_activity, row_crc, zone, lacks, modified, text_crc, wire_head, all_text) "
            f"VALUES ({', '.join('?' * 27)})",
            stored,
        )
        file_id = cursor.lastrowid
        assert file_id is not None
    else:
        file_id = old.id
        if not appended:
            deleted += drop_entry_rows(connection, fts, file_id)
        connection.execute(
            "UPDATE files SET path = ?, dir = ?, dev = ?, ino = ?, size = ?, mtime_ns = ?, ctime_ns = ?, "
            "checked_ns = ?, crc = ?, parsed = ?, indexed = ?, "
            "head = ?, tail = ?, partial = ?, status = ?, header = ?, message_count = ?, "
            "first_message = ?, name = ?, last_activity = ?, row_crc = ?, zone = ?, lacks = ?, modified = ?, "
            "text_crc = ?, wire_head = ?, all_text = ? WHERE id = ?",
            (*stored, file_id),
        )
    if summary.messages and status == SESSION:
        add_entry_rows(connection, fts, file_id, summary.messages)
    if status != FOREIGN and not lacks & USAGE:
        from ._usage import add_usage_rows

        add_usage_rows(connection, file_id, usage, damaged, read.prepared)
    row = Row(file_id, *values, stored[20], stored[21], stored[22])
    return row, "appended" if appended else "read", deleted


def _made_ahead(
    summary: SessionSummary, path: str, partial: bytes | None
) -> tuple[float | None, bytes | None]:
    """The picker row's ``modified`` (POSIX time) and its JSON up to the message text, as
    :func:`pisession._discovery.row_json` writes them: what a listing copies as it is. (None,
    None) where the row depends on more than the whole lines read (an unfinished last line, or
    no time but the file's mtime) or is not a session's. (A time read in the local time zone
    holds in that zone: the row keeps it, and is read again in another.)"""
    if partial != b"":
        return None, None
    info = summary.info(path, None)  # a header time in local time: the row keeps the zone
    if info is None:
        return None, None
    info = replace(info, all_messages_text="")
    try:
        row = _plain_row_json(info) or row_json(info)
    except RecursionError:  # a header id nested deeper than the json module goes
        return None, None
    empty_text = b'"allMessagesText": ""\n  }'
    assert row.endswith(empty_text)
    return info.modified.timestamp(), row[: -len(empty_text) + len(b'"allMessagesText": ')]


def _plain_row_json(info: SessionInfo) -> bytes | None:
    """:func:`row_json`'s bytes written by orjson (the json module's encoder with ``indent`` is
    pure Python: most of a row's cost), where they are the same: a row of text, safe integers
    and nulls (orjson refuses lone surrogates); None for anything else, or without orjson."""
    wire = info.to_wire()
    for value in wire.values():
        kind = type(value)
        if not (kind is str or value is None or (kind is int and -(2**63) <= value < 2**64)):
            return None
    try:
        import orjson
    except ImportError:  # pragma: no cover - a dependency, optional at run time
        return None
    try:
        return orjson.dumps([wire], option=orjson.OPT_INDENT_2)[2:-2]
    except TypeError:
        return None


# ----------------------------------------------------------------------------------- change detection


def _partial_header(row: Row, path: str) -> bool:
    """Whether the unfinished last line of a file with no whole line yet is a session header."""
    partial = row.partial if row.partial is not None else read_range(path, row.parsed, row.size)
    summary = SessionSummary()
    feed_lines(summary, partial)
    return summary.header is not None


def _unchanged(candidate: Candidate, row: Row | None, parts: int) -> bool:
    return (
        row is not None
        and candidate.stat is not None
        and not row.lacks & parts
        and row.intact()
        and _same(row, candidate.stat)
    )


def settled(mtime_ns: int, checked_ns: int) -> bool:
    """Whether a file last written at ``mtime_ns`` was written clearly before it was read at
    ``checked_ns`` (see ``_RACY_NS``); the dataset's manifest follows the same rule."""
    margin = _RACY_COARSE_NS if mtime_ns % 1_000_000 == 0 else _RACY_NS
    return mtime_ns < checked_ns - margin


def same_file(
    stats: os.stat_result,
    dev: int,
    ino: int,
    size: int,
    mtime_ns: int,
    ctime_ns: int,
    checked_ns: int,
    *,
    racy_too: bool = False,
) -> bool:
    """The file is as it was when it was read at ``checked_ns`` (with that device, inode, size,
    mtime and ctime), and was not written too close to that read to tell: the change rule of the
    catalog and of the dataset's manifest.

    A file written in the same timestamp tick as (or after) the read might have changed without
    its size or mtime changing ("racily clean", as git calls it): ``racy_too`` leaves that to the
    caller, who compares its bytes (:func:`file_crc`) with the checksum of those it read.
    """
    return (
        (racy_too or settled(stats.st_mtime_ns, checked_ns))
        and stat.S_ISREG(stats.st_mode)
        and dev == stats.st_dev
        and ino == stats.st_ino
        and size == stats.st_size
        and mtime_ns == stats.st_mtime_ns
        # a rewrite that puts the old mtime back (touch -r, a redaction script) still moves ctime
        and ctime_ns == stats.st_ctime_ns
    )


def _same(row: Row, stats: os.stat_result, racy_too: bool = False) -> bool:
    """:func:`same_file` for a row; a file whose dates were read in local time and another time
    zone than this one's is read again."""
    return same_file(
        stats, row.dev, row.ino, row.size, row.mtime_ns, row.ctime_ns, row.checked_ns, racy_too=racy_too
    ) and (
        # (the zone key is a repr: built only for a row read in local time, not for every row listed)
        row.zone is None or row.zone == local_zone_key()
    )


def _grew(row: Row, stats: os.stat_result, handle: Any) -> bool:
    """Same file, larger, and the bytes it had are still there: only its new end needs parsing.

    "Still there" is checked on every byte (the checksum of what was read before), not only at
    the edges: a line rewritten in the middle and then appended to must be read again. Checking
    costs a read of the old bytes, a small part of what parsing them again would.
    """
    if (row.dev, row.ino) != (stats.st_dev, stats.st_ino) or stats.st_size <= row.size:
        return False
    handle.seek(0)
    if handle.read(len(row.head)) != row.head:
        return False
    handle.seek(row.size - len(row.tail))
    if handle.read(len(row.tail)) != row.tail:
        return False
    handle.seek(0)
    crc = 0
    left = row.size
    while left > 0:
        block = handle.read(min(left, _CHECK_BLOCK))
        if not block:
            return False
        crc = zlib.crc32(block, crc)
        left -= len(block)
    return crc == row.crc


def file_crc(handle: Any, limit: int) -> int:
    """The CRC-32 of at most ``limit`` bytes read from ``handle``'s position, block by block."""
    crc = 0
    while limit > 0:
        block = handle.read(min(limit, _CHECK_BLOCK))
        if not block:
            break
        crc = zlib.crc32(block, crc)
        limit -= len(block)
    return crc


def _edges(head: bytes, tail: bytes, length: int, start: int, old: Row | None) -> tuple[bytes, bytes]:
    """The first and last bytes of the file's content as now read (``length`` bytes from
    ``start``, of which ``head`` and ``tail`` are the first and last ``_EDGE``)."""
    if old is None or start == 0:
        return head, tail
    if length >= _EDGE:
        return old.head, tail
    return old.head, (old.tail + head[old.size - start :])[-_EDGE:]  # head: all that was read
