"""Bringing the ``files`` rows (and the search rows hanging off them) up to date with the folders.

How a file is brought up to date (not opened, its new lines parsed, read in full, or its rows
deleted) is told once, in :mod:`pisession.catalog`'s docstring: :func:`._change.unchanged`,
:func:`._change.grew`, :func:`_update` and :func:`._entries.delete_file_rows` do it (when a file is unchanged
or only grew is :mod:`._change`'s rule).

Per file, the whole lines newly read reach the rows that hang off a ``files`` row through
:func:`._entries.add_entry_rows`, and leave through :func:`._entries.drop_entry_rows` (a file
read again in full, or gone).
"""

from __future__ import annotations

import contextlib
import functools
import marshal
import os
import sqlite3
import stat
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from .._discovery import (
    SessionSummary,
    feed_lines,
)
from .._errors import CatalogError
from .._js import local_zone_key, local_zone_reads
from .._load import (
    MAX_LINE_BYTES,
    SkippedLine,
    iter_line_lists,
    open_regular,
    warn_long_lines,
)
from .._record import Record, replace
from ._candidates import Candidate, candidates, names, stored_rows
from ._change import edges, file_crc, grew, same_row, unchanged
from ._entries import add_entry_rows, delete_file_rows, drop_entry_rows, index_lines, purge
from ._fileread import FileRead, from_pipe, to_pipe
from ._range import WHOLE_READ, CheckedRange, read_range
from ._rowjson import made_ahead
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
    pack,
    pack_text,
    row_checksum,
    text_checksum,
    text_intact,
    unpack_text,
)

if TYPE_CHECKING:
    from ._usage import PreparedUsage
    from ._workers import Workers

_PARTIAL_MAX = 1 << 16  # a longer unfinished last line is read again from the file, not stored
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


def current(
    connection: sqlite3.Connection,
    fts: bool,
    directories: list[str] | None,
    root: str | None,
    on_progress: ProgressCallback | None,
    index: bool = False,
    max_size: int | None = None,
    parts: int = EVERY_PART,
    after_commit: Callable[[], None] | None = None,
    new: NewCatalog | None = None,
) -> tuple[list[tuple[Candidate, Row]], RefreshReport]:
    """Refresh the rows of these folders (and with ``index`` their search rows): the candidates
    (in Pi's order) that have a row, and what was done. Files over ``max_size`` bytes are
    skipped unread (and named). Every row returned has the ``parts`` (:data:`~._schema.USAGE`,
    :data:`~._schema.LISTING`) asked for; a file read for the first time is read for those only.
    ``after_commit()`` runs after each commit between two of a write pass's transactions;
    ``new``: what :func:`new_catalog` found before the catalog was made.

    Returns inside a read transaction (end it with :func:`finish`): the rows returned and
    whatever the caller reads before it ends are one state of the database. Another process
    may rebuild the catalog between two of this refresh's commits, or catch a file up after
    them: rows are only ever read in one transaction with what is read beside them, so ids
    reused by a rebuild never pair one file's row with another's text or usage.
    """
    finish(connection)
    if new is not None:
        named, workers = new.named, new.workers
    else:
        named = names(directories, root)
        workers = _first_build_workers(connection, len(named))
    try:
        return _current(
            connection, fts, directories, root, on_progress, index, max_size, parts, named, workers,
            after_commit,
        )
    finally:
        if workers is not None:
            workers.close()


class NewCatalog(Record):
    """What a refresh of a catalog file not made yet finds before it is made (a few ms of SQL):
    the files' names, and the workers it forks for them (if there are enough)."""

    named: list[tuple[str, str]]
    workers: Workers | None


def new_catalog(directories: list[str] | None, root: str | None) -> NewCatalog:
    """The names of the files a first build of a new catalog reads, and its workers forked
    already; the caller hands it to :func:`current`, which ends the workers."""
    named = names(directories, root)
    return NewCatalog(named, _fork_workers(len(named)))


def _first_build_workers(connection: sqlite3.Connection, files: int) -> Workers | None:
    """The workers a first build reads its files with, forked before it lists and stats them:
    they import what reading needs meanwhile (None: not a first build, or too few files)."""
    if connection.execute("SELECT 1 FROM files LIMIT 1").fetchone():
        return None  # (asked first: a warm call imports no worker code)
    return _fork_workers(files)


def _fork_workers(files: int) -> Workers | None:
    """Workers that read ``files`` new files (None: too few files, or none could start)."""
    from ._workers import Workers, worker_count

    return Workers.start(worker_count(files), read_task, warm_up)


def _current(
    connection: sqlite3.Connection,
    fts: bool,
    directories: list[str] | None,
    root: str | None,
    on_progress: ProgressCallback | None,
    index: bool,
    max_size: int | None,
    parts: int,
    named: list[tuple[str, str]],
    workers: Workers | None,
    after_commit: Callable[[], None] | None,
) -> tuple[list[tuple[Candidate, Row]], RefreshReport]:
    """:func:`current`, of the files ``named``, a first build's ``workers`` forked already."""
    if index:
        parts |= LISTING  # a search's hits are listed
    found = candidates(directories, root, named)
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
                    if not unchanged(rows.get(c.path), c.stat, parts) or (index and _unindexed(rows[c.path]))
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
            version = _data_version(connection)
            connection.execute("COMMIT")
            removed += len(stale)
            written: dict[str, Row | None] = {}
            _write_pass(
                connection,
                fts,
                stale,
                changed,
                _read_ahead(changed, rows, parts, index),
                index,
                parts,
                counts,
                skipped,
                unread,
                on_progress if attempt == 0 else None,
                len(found),
                written,
                workers,
                after_commit,
            )
            workers = None  # (ended by the pass)
            connection.execute("BEGIN")
            if _data_version(connection) == version:
                # no other connection committed since these rows were read: they, with what
                # this pass wrote, are the database's rows (a first build reads none again)
                rows = {path: row for path, row in {**rows, **written}.items() if row is not None}
                break
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


def _read_ahead(
    changed: list[Candidate], rows: dict[str, Row], parts: int, index: bool
) -> dict[str, tuple[int, tuple[int, int] | None]]:
    """The files a write pass may have read by worker processes, each with what :func:`_read`
    would make of it here (the parts a full read leaves out, or the fill): those with no row,
    and those whose row lacks a part the call needs."""
    ahead: dict[str, tuple[int, tuple[int, int] | None]] = {}
    for candidate in changed:
        row = rows.get(candidate.path)
        if row is None or (row.lacks & parts and row.intact()):
            ahead[candidate.path] = (_left_out(row, parts), _fillable(row, candidate.stat, parts, index))
    return ahead


def _left_out(row: Row | None, parts: int) -> int:
    """The parts a full read of a file leaves out: what its row went without (a new file:
    every part), less the ``parts`` asked for (rows only ever gain parts)."""
    return (EVERY_PART if row is None else row.lacks) & ~parts


def _fillable(
    row: Row | None, stats: os.stat_result | None, parts: int, index: bool
) -> tuple[int, int] | None:
    """(the parts, the row's ``parsed``) to fill in (:func:`_fill`) when the row lacks parts
    asked for and its file is as it was read; None: read it in full (a search's read also
    indexes every message, so it reads in full)."""
    if row is None or index or stats is None or not row.lacks & parts or not same_row(row, stats):
        return None
    return row.lacks & parts, row.parsed


def _unindexed(row: Row) -> bool:
    return row.indexed < row.parsed


def _usable(row: Row | None, index: bool, parts: int) -> bool:
    return row is not None and row.intact() and not (index and _unindexed(row)) and not row.lacks & parts


def _write_pass(
    connection: sqlite3.Connection,
    fts: bool,
    stale: list[str],
    changed: list[Candidate],
    ahead: dict[str, tuple[int, tuple[int, int] | None]],
    index: bool,
    parts: int,
    counts: dict[str, int],
    skipped: list[SkippedFile],
    unread: set[str],
    on_progress: ProgressCallback | None,
    total: int,
    written: dict[str, Row | None],
    workers: Workers | None = None,
    after_commit: Callable[[], None] | None = None,
) -> None:
    """Delete the rows of files gone and catch the changed files up, in short write transactions
    (each file's row as written, or None, goes in ``written``, as a read of it would give it);
    the files in ``ahead`` (no row when this pass began, or a row lacking a part the call
    needs: see :func:`_read_ahead`) are read by worker processes when there are enough of them
    (:mod:`._workers`; ``workers``: forked already, ended here)."""
    done = total - len(changed)
    if on_progress is not None and changed:
        on_progress(done, total)
    dropped = 0  # search rows deleted: their words must then be purged from the index
    tasks = [marshal.dumps((c.path, index, *ahead[c.path])) for c in changed if c.path in ahead]
    if tasks or workers is not None:
        from ._workers import prefetched

        pending: contextlib.AbstractContextManager[Iterator[bytes | None]]
        pending = prefetched(tasks, read_task, warm_up, workers)
    else:  # nothing new to read (a warm call's changed files): no worker code imported
        pending = contextlib.nullcontext(iter(()))
    with pending as reads:
        started = time.monotonic()
        connection.execute("BEGIN IMMEDIATE")
        try:
            for path in stale:
                dropped += delete_file_rows(connection, fts, path)
                written[path] = None
            rowless = _no_rows(connection)
            version = _data_version(connection)
            for candidate in changed:
                if time.monotonic() - started > _COMMIT_EVERY:
                    _take_turns(connection)
                    if after_commit is not None:
                        after_commit()
                    started = time.monotonic()
                    # a first build's rows are still all this pass's, unless another process wrote
                    rowless = rowless and _data_version(connection) == version
                piped = next(reads) if candidate.path in ahead else None
                done_ahead = None if piped is None else from_pipe(piped)
                row, outcome, deleted = _update(connection, fts, candidate, index, parts, done_ahead, rowless)
                written[candidate.path] = row
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
        purge(connection, fts)


def _take_turns(connection: sqlite3.Connection) -> None:
    """End this write transaction and begin the next: other processes may write between."""
    connection.execute("COMMIT")
    connection.execute("BEGIN IMMEDIATE")


def _data_version(connection: sqlite3.Connection) -> int:
    """SQLite's count of the commits other connections made that this one has seen (its own
    commits leave it as it is), as of the transaction it is in."""
    return int(connection.execute("PRAGMA data_version").fetchone()[0])


def _no_rows(connection: sqlite3.Connection) -> bool:
    """Whether the catalog has no file rows and no usage (a first build): in the write transaction
    that asked, a file then has a row only once this pass writes it, so none is looked up (each
    path comes once in a pass), and a new row's id has no usage to drop (a damaged catalog's)."""
    return bool(
        connection.execute(
            "SELECT NOT EXISTS (SELECT 1 FROM files) AND NOT EXISTS (SELECT 1 FROM usage_ids) "
            "AND NOT EXISTS (SELECT 1 FROM usage_sums) AND NOT EXISTS (SELECT 1 FROM usage) "
            "AND NOT EXISTS (SELECT 1 FROM usage_damage)"
        ).fetchone()[0]
    )


def read_new_file(
    path: str, index: bool, lacks: int = 0, fill: tuple[int, int] | None = None, zone: str | None = None
) -> FileRead | str:
    """Read a file in full (less the parts ``lacks``), or the lines its row covers for the parts
    it lacks (``fill``), as :func:`_update` would read it with no row or a row lacking a part it
    needs; or why it cannot be read (run in a worker process: it touches no database).

    A session that names no parent keeps its usage sums and ids (made here), not its rows: a
    third of what would be sent back. ``zone``: :func:`local_zone_key`'s, known already."""
    try:
        handle = open_regular(path, buffered=False)  # (read in large pieces only: CheckedRange)
    except OSError as error:
        return f"cannot be read: {error.strerror or error}"
    with handle:
        read = _read(None, False, handle, None, index, path, EVERY_PART & ~lacks, fill, zone, forks_rows=True)
    assert isinstance(read, FileRead)
    return read


# (the pid of a worker process, its time zone's key): a worker's time zone is its parent's when
# it forked, for its life (6 µs a file to ask again)
_worker_zone: list[Any] = []


def read_task(task: bytes) -> bytes:
    """:func:`read_new_file` of a task made by :func:`_write_pass`, for the pipe (a worker's)."""
    path, index, lacks, fill = marshal.loads(task)
    zone = _worker_zone[1] if _worker_zone and _worker_zone[0] == os.getpid() else None
    return to_pipe(read_new_file(path, index, lacks, fill, zone))


def warm_up() -> None:
    """Import and build what :func:`read_new_file` uses: run by each worker process as it
    starts (:mod:`._workers`), never in the caller's process."""
    from ._fastread import _decoders, import_for_worker
    from ._usage import _decoder, ids_encoder

    import_for_worker()

    _decoder()
    ids_encoder()
    _decoders()
    _worker_zone[:] = [os.getpid(), local_zone_key()]


def _update(
    connection: sqlite3.Connection,
    fts: bool,
    candidate: Candidate,
    index: bool,
    parts: int = EVERY_PART,
    prefetched: FileRead | str | None = None,
    rowless: bool = False,
) -> tuple[Row | None, str, int]:
    """Catch one file up inside the caller's write transaction: (its row, what was done, how many
    search rows were deleted).

    With ``index``, its messages also reach the search index (listing alone leaves that to
    the first search: the index is most of a first build's cost). ``prefetched``: the file read
    in full by :func:`read_new_file` (a worker process), used if the file still has no row, or
    its row still lacks a part of ``parts`` and had every part the read has. ``rowless``: the
    catalog had no file rows and no usage when this write transaction began (:func:`_no_rows`).
    """
    path = candidate.path
    found = (
        None
        if rowless
        else connection.execute(f"SELECT {FILE_COLUMNS} FROM files WHERE path = ?", (path,)).fetchone()
    )
    old = None if found is None else Row(*found)
    deleted = 0
    if old is not None and not old.intact():
        deleted = delete_file_rows(connection, fts, path)  # damaged: read the file again, from scratch
        old = None
    if isinstance(prefetched, FileRead) and prefetched.filled and not _fills(old, prefetched):
        prefetched = None  # the row or the file changed since: read here
    if prefetched is not None and (
        old is None
        or (
            old.lacks & parts
            and (isinstance(prefetched, str) or prefetched.filled or not prefetched.lacks & ~old.lacks)
        )
    ):
        if isinstance(prefetched, str):
            deleted += 0 if old is None else delete_file_rows(connection, fts, path)
            return None, prefetched, deleted
        read = prefetched
    else:
        try:
            handle = open_regular(path)
        except OSError as error:
            deleted += 0 if old is None else delete_file_rows(connection, fts, path)
            return None, f"cannot be read: {error.strerror or error}", deleted
        with handle:
            outcome = _read(connection, fts, handle, old, index, path, parts)
        if isinstance(outcome, Row):
            return outcome, "", deleted
        read = outcome
    if read.long_lines:
        warn_long_lines(path, read.long_lines, at_bytes=not read.numbered, listed=True)
    if read.filled:
        assert old is not None
        return _fill(connection, old, read), "read", deleted
    return _store(connection, fts, candidate, old, read, index, deleted, rowless)


def _fills(old: Row | None, read: FileRead) -> bool:
    """Whether ``read`` (of a row's lines, for parts it lacked) fills ``old`` in: the row still
    lacks those parts and covers those lines, of the file as it was read."""
    return (
        old is not None
        and old.lacks & read.filled == read.filled
        and old.parsed == read.total
        and same_row(old, read.stats)
    )


def _fill(connection: sqlite3.Connection, old: Row, read: FileRead) -> Row:
    """Write the parts ``read`` filled in to the row ``old`` lacked them in; the rest of the row
    (what the file is, how far it was read, its other part) stays as it was."""
    lacks = old.lacks & ~read.filled
    zone = read.zone if read.zone_read or old.zone is not None else None
    row = old
    if read.filled & LISTING:
        summary = read.summary
        row = replace(
            row,
            message_count=summary.message_count,
            first_message=pack(summary.first_message),
            name=None if summary.name is None else pack(summary.name),
            last_activity=summary.last_activity,
        )
        connection.execute(
            "UPDATE files SET message_count = ?, first_message = ?, name = ?, last_activity = ?, "
            "modified = ?, text_crc = ?, wire_head = ?, all_text = ? WHERE id = ?",
            (
                row.message_count,
                row.first_message,
                row.name,
                row.last_activity,
                read.modified,
                text_checksum(read.all_text, read.wire_head, read.modified),
                read.wire_head,
                read.all_text,
                old.id,
            ),
        )
    if read.filled & USAGE:  # (a row lacking them has no usage rows: none to drop)
        from ._usage import add_usage_rows

        add_usage_rows(connection, old.id, read.usage, read.damaged, read.prepared)
    row = replace(row, zone=zone, lacks=lacks)
    row = replace(row, row_crc=row.checksum())
    connection.execute(
        "UPDATE files SET row_crc = ?, zone = ?, lacks = ? WHERE id = ?", (row.row_crc, zone, lacks, old.id)
    )
    return row


def _read(
    connection: sqlite3.Connection | None,
    fts: bool,
    handle: Any,
    old: Row | None,
    index: bool,
    path: str,
    parts: int,
    fill: tuple[int, int] | None = None,
    zone: str | None = None,
    forks_rows: bool = False,
) -> FileRead | Row:
    """Read an open file as :func:`_update` needs it: its row, when it is as it was read (caught
    up in the search index with ``index``) and has the ``parts`` asked for, else what reading it
    (in full, or from its old end) gave. Touches no database when ``old`` is None.

    A read leaves out what the file's row already went without (a new file: every part not
    asked for). A row that lacks a part asked for, of a file unchanged since, has that part
    filled in: ``fill`` (the parts, and the row's ``parsed``) reads the lines the row covers
    for those parts alone (see :func:`_fill`); a changed one is read again in full.
    ``zone``: :func:`local_zone_key`'s, known already; ``forks_rows``: usage rows are kept in the
    read only for a session that names a parent (see :func:`read_new_file`)."""
    if zone is None:
        zone = local_zone_key()
    checked_ns = time.time_ns()
    stats = os.fstat(handle.fileno())
    size = stats.st_size
    lacking = old is not None and bool(old.lacks & parts)  # a part asked for: filled, or read in full
    if fill is None:
        fill = _fillable(old, stats, parts, index)
    fresh = old is not None and not lacking and same_row(old, stats)  # another process may have caught it up
    # written in the tick it was read in: unchanged if its bytes are (far cheaper than parsing)
    if (
        old is not None
        and not lacking
        and not fresh
        and same_row(old, stats, racy_too=True)
        and file_crc(handle, size + 1) == old.crc
    ):
        assert connection is not None
        connection.execute("UPDATE files SET checked_ns = ? WHERE id = ?", (checked_ns, old.id))
        old = replace(old, checked_ns=checked_ns)
        fresh = True
    if fresh:
        assert old is not None and connection is not None
        if index and old.indexed < old.parsed:
            index_lines(connection, fts, old.id, handle, old.indexed, old.parsed)
            connection.execute("UPDATE files SET indexed = parsed WHERE id = ?", (old.id,))
            old = replace(old, indexed=old.parsed)
        return old
    start = 0
    summary = SessionSummary(messages=[] if index else None)
    # what was read before in another zone's local time is read again, in this one
    appended = old is not None and not lacking and old.zone in (None, zone) and grew(old, stats, handle)
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
            index_lines(connection, fts, old.id, handle, old.indexed, old.parsed)
    # an appended read adds to what the row has, and lacks what it lacks
    lacks = old.lacks if appended and old is not None else _left_out(old, parts)
    end = size
    if fill is not None:  # the row's lines, read for the parts it lacks alone
        start, appended, end, lacks = 0, False, fill[1], EVERY_PART & ~fill[0]
    if start or old is not None:  # (a file opened for a read of it alone is at its start)
        handle.seek(start)
    # read in chunks, whole lines parsed as they come: a file costs its longest line (at most
    # MAX_LINE_BYTES, a longer one is read past unheld), not its size
    crc_from, crc = (0, 0) if start == 0 or old is None else (old.size - start, old.crc)
    reader = CheckedRange(handle, end - start, crc_from, crc)
    read_lines, PreparedUsage, names_parent = _readers()
    usage: list[Any] = []
    damaged = 0
    offset = 0  # where the next line begins in what is read
    numbered = start == 0  # a full read knows line numbers; an appended one, byte offsets
    long_lines: list[tuple[int, int]] = []
    lines_read = 0

    def take(lines: list[bytes], joined: memoryview | None = None) -> None:
        nonlocal offset, damaged, lines_read
        first = lines[0]  # (of a list, only the first line may be one read past: iter_line_lists)
        if type(first) is SkippedLine and len(first) > MAX_LINE_BYTES:
            long_lines.append((lines_read + 1 if numbered else start + offset, len(first)))
        lines_read += len(lines)
        offset += sum(map(len, lines)) + len(lines)
        found, bad = read_lines(summary, lines, lacks, joined)
        usage.extend(found)
        damaged += bad

    if end - start <= WHOLE_READ:  # one read, one split, the lines kept joined as read
        data = reader.read()
        lines = data.split(b"\n")
        last = lines.pop()  # the text after the last "\n"
        if lines:
            take(lines, memoryview(data)[: len(data) - len(last) - 1])
    else:
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
    # (a row read in part has the unfinished last line it had: nothing past it if none)
    made_partial = partial if fill is None else b"" if size == end else None
    modified, wire_head = (None, None) if lacks & LISTING else made_ahead(summary, path, made_partial)
    summary.texts = []  # kept as all_text: not sent twice from a worker
    prepared = PreparedUsage(usage, names_parent(summary.header)) if usage else None
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
        usage=[] if forks_rows and prepared is not None and prepared.row_checksums is None else usage,
        prepared=prepared,
        damaged=damaged,
        long_lines=long_lines,
        numbered=numbered,
        lacks=lacks,
        filled=0 if fill is None else fill[0],
        all_text=all_text,
        modified=modified,
        wire_head=wire_head,
    )


_INSERT_FILE = (
    "INSERT INTO files (path, dir, dev, ino, size, mtime_ns, ctime_ns, checked_ns, crc, parsed, "
    "indexed, head, tail, partial, status, header, message_count, first_message, name, "
    "last_activity, row_crc, zone, lacks, modified, text_crc, wire_head, all_text) "
    f"VALUES ({', '.join('?' * 27)})"
)


@functools.cache
def _usage_writer() -> Callable[..., None]:
    """:func:`._usage.add_usage_rows`, imported once (see :func:`_readers`)."""
    from ._usage import add_usage_rows

    return add_usage_rows


@functools.cache
def _readers() -> tuple[Callable[..., tuple[list[Any], int]], type[PreparedUsage], Callable[[Any], bool]]:
    """What :func:`_read` reads with, imported once (an import statement in a function costs
    3 µs a file; at the top, it would bring the usage module into a listing)."""
    from ._fastread import read_lines
    from ._usage import PreparedUsage, names_parent

    return read_lines, PreparedUsage, names_parent


def _store(
    connection: sqlite3.Connection,
    fts: bool,
    candidate: Candidate,
    old: Row | None,
    read: FileRead,
    index: bool,
    deleted: int,
    rowless: bool = False,
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
    head, tail = edges(read.head, read.tail, read.total, start, old if appended else None)
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
        cursor = connection.execute(_INSERT_FILE, stored)
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
        # a new row's id in a first build has no usage under it (see _no_rows): none to drop
        _usage_writer()(connection, file_id, usage, damaged, read.prepared, appended, old is None and rowless)
    row = Row(file_id, *values, stored[20], stored[21], stored[22])
    return row, "appended" if appended else "read", deleted


# ----------------------------------------------------------------------------------- change detection


def _partial_header(row: Row, path: str) -> bool:
    """Whether the unfinished last line of a file with no whole line yet is a session header."""
    partial = row.partial if row.partial is not None else read_range(path, row.parsed, row.size)
    summary = SessionSummary()
    feed_lines(summary, partial)
    return summary.header is not None
