"""The catalog's usage: per file, model and quarter hour, as Pi's breakdown counts it.

Written by the refresh from the whole lines it reads (:func:`usage_rows`, in the same write
transaction as the file's row, so a grown file adds only its new entries), and summed for a
report by :func:`usage_groups`: per file, model and local day, leaving out what a fork or
branched session copied from its parent (same entry id and timestamp as a usage entry of the
session its header's ``parentSession`` names, when that session was started earlier).

A read stores its entries' quarter-hour sums (``usage_sums``, what a report reads) and their
ids and timestamps packed in one value (``usage_ids``: what a fork's copies are told by). Only a
session that names a parent keeps a row per entry (``usage``): its sums are made at report time,
less its copies. One row per read instead of one per entry: a first report of a thousand
sessions stores some 1,000 rows, not 23,000.
"""

from __future__ import annotations

import functools
import json
import marshal
import os
import sqlite3
import zlib
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime, timedelta, timezone
from typing import Any

from .._attribution import usage_fields
from .._errors import CatalogError
from .._js import MISSING, js_date_ms
from .._load import parse_line
from .._paths import resolve_path
from ._range import read_range
from ._schema import (
    USAGE_COLUMNS,
    USAGE_SUMS_COLUMNS,
    columns_checksum,
    read_header,
    sql_text,
    text_of,
    usage_checksum,
)

UsageRow = tuple[str, str, int, str, Any, Any, Any, Any, Any]

# A line Pi counts holds the key "usage", unless the key is written with escapes ("\u0075sage"):
# an escaped letter of it is \u0061, \u0065, \u0067, \u0073 or \u0075 (JSON has no other escape
# for them), so such a line holds "\u00" (the shorter "\u" is searched for more slowly).
_MARKERS = (b'"usage"', b"\\u00")


@functools.cache
def _decoder() -> tuple[Callable[[bytes], Any], tuple[type[Exception], ...]] | None:
    """msgspec's decoder of the fields usage needs, and the errors it raises (None without
    msgspec). It validates the whole line but builds only those fields: an assistant message's
    content, most of its bytes, is skipped. Lines it cannot take as they are (invalid UTF-8, a
    ``message`` that is not an object, ...) go through the full JavaScript-exact parse."""
    try:
        import msgspec
    except ImportError:  # exercised by tests that hide it
        return None
    from typing import Any as AnyType

    fields = [(name, AnyType, MISSING) for name in ("role", "provider", "model", "responseModel", "usage")]
    message = msgspec.defstruct("_UsageMessage", fields, gc=False)
    entry = msgspec.defstruct(
        "_UsageEntry",
        [
            *((name, AnyType, MISSING) for name in ("type", "id", "timestamp", "provider", "model", "usage")),
            ("message", message | None, None),
        ],
        gc=False,
    )
    return msgspec.json.Decoder(entry).decode, (msgspec.DecodeError, msgspec.ValidationError, RecursionError)


def _as_entry(head: Any) -> dict[str, Any]:
    """The decoded fields as the wire dict :func:`usage_fields` reads (MISSING reads as absent)."""
    message = head.message
    return {
        "type": head.type,
        "id": head.id,
        "timestamp": head.timestamp,
        "provider": head.provider,
        "model": head.model,
        "usage": head.usage,
        "message": None
        if message is None
        else {
            "role": message.role,
            "provider": message.provider,
            "model": message.model,
            "responseModel": message.responseModel,
            "usage": message.usage,
        },
    }


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
_MS = timedelta(milliseconds=1)
_from_iso = datetime.fromisoformat


def timestamp_ms(timestamp: str) -> int | None:
    """``new Date(timestamp).getTime()``: Pi's own form (``2026-11-03T00:20:00.008Z``) read by
    Python's parser in C, anything else (or anything it refuses) by :func:`js_date_ms`.

    Where the shape is Pi's (digits, and these separators, where Pi writes them), both read the
    same valid dates alike; Python refuses what is odd (hour 24, second 60, day 30 of February,
    year 0, and a ``Z`` before Python 3.11), and JavaScript's reading then decides."""
    if (
        len(timestamp) == 24
        and timestamp[23] == "Z"
        and timestamp[4] == "-"
        and timestamp[7] == "-"
        and timestamp[10] == "T"
        and timestamp[13] == ":"
        and timestamp[16] == ":"
        and timestamp[19] == "."
        and timestamp.isascii()
    ):
        try:
            return (_from_iso(timestamp) - _EPOCH) // _MS
        except ValueError:
            pass
    return js_date_ms(timestamp)


def usage_rows(data: bytes | Iterable[bytes], header: dict[str, Any] | None) -> tuple[list[UsageRow], int]:
    """The usage rows of the whole lines ``data`` (bytes, or its lines split on ``"\\n"``), and
    how many lines are damaged.

    A row is ``(entry id, timestamp, ms, kind and model key (:func:`kind_key`), input, output,
    cache read, cache write, cost)``, NaN as None. An entry whose timestamp does not parse is
    dated by the header's (else 1970-01-01), so it is counted somewhere rather than dropped. A
    damaged line (not a JSON object: cut short, garbled) is skipped as Pi skips it, and counted
    so the report can say so; only lines that may hold usage are parsed, the others are told by
    their first and last byte.
    """
    rows: list[UsageRow] = []
    damaged = 0
    fallback: int | None = None
    fast = _decoder()
    for line in data.split(b"\n") if isinstance(data, bytes) else data:  # Pi's open splits on "\n" only
        if _MARKERS[0] not in line and _MARKERS[1] not in line:
            if not (line[:1] == b"{" and line[-1:] == b"}") and unbraced(line):
                damaged += 1
            continue
        entry: dict[str, Any] | None = None
        if fast is not None:
            try:
                entry = _as_entry(fast[0](line))
            except fast[1]:
                entry = None
        if entry is None:
            entry = parse_line(line)
            if entry is None:
                damaged += 1
                continue
        fields = usage_fields(entry)
        if fields is None:
            continue
        entry_id, timestamp, key, tokens_in, tokens_out, cache_read, cache_write, cost = fields
        key = kind_key(entry["type"], key)
        ms = timestamp_ms(timestamp) if timestamp else None
        if ms is None:
            if fallback is None:
                stamp = (header or {}).get("timestamp")
                fallback = (js_date_ms(stamp) if isinstance(stamp, str) else None) or 0
            ms = fallback
        rows.append(
            (
                entry_id,
                timestamp,
                ms,
                key,
                _number(tokens_in),
                _number(tokens_out),
                _number(cache_read),
                _number(cache_write),
                _number(cost),
            )
        )
    return rows, damaged


def unbraced(line: bytes) -> bool:
    """Whether a line that holds no usage is damaged: not blank, and not an object's braces
    around (white space aside). Its first and last byte tell, without a parse: such a line
    carries nothing counted either way."""
    stripped = line.strip()
    return bool(stripped) and not (stripped[:1] == b"{" and stripped[-1:] == b"}")


def kind_key(kind: str, model_key: str) -> str:
    """The stored ``model_key``: the entry's type (``message``, ``usage``, ``compaction``,
    ``branch_summary``), a slash, Pi's key. The type has no slash, so the first one splits them
    (:func:`split_kind_key`); one column keeps the sums, the fork query and the checksums as
    they were, each now per kind."""
    return f"{kind}/{model_key}"


def split_kind_key(stored: str) -> tuple[str, str]:
    """``(kind, Pi's model key)`` of a stored ``model_key``."""
    kind, _, model_key = stored.partition("/")
    return kind, model_key


def _number(value: float) -> float | None:
    return None if value != value else value  # SQLite has no NaN


QUARTER_MS = 900_000
_SAFE = 2**53


def quarter_of(ms: int) -> int:
    return ms // QUARTER_MS


def names_parent(header: dict[str, Any] | None) -> bool:
    """Whether a session's header names a parent (``parentSession``, as :func:`scan_usage`
    follows it): such a session keeps a usage row per entry, its copies told at report time."""
    parent = None if header is None else header.get("parentSession")
    return isinstance(parent, str) and bool(parent)


def _stored_row(row: UsageRow) -> tuple[Any, ...]:
    """A usage row as the ``usage`` table holds it (its texts by :func:`sql_text`)."""
    if row[0].isascii() and row[1].isascii() and row[3].isascii():
        return row
    return (sql_text(row[0]), sql_text(row[1]), row[2], sql_text(row[3]), *row[4:])


@functools.cache
def ids_encoder() -> Callable[[Any], bytes] | None:
    """msgspec's JSON encoder (None without msgspec): eight times faster than the json module's."""
    try:
        import msgspec
    except ImportError:  # exercised by tests that hide it
        return None
    return msgspec.json.Encoder().encode


def _pack_ids(rows: list[UsageRow]) -> bytes:
    """The (entry id, timestamp) pairs of ``rows``, packed as JSON, which :func:`entry_ids` reads
    back the same (a lone surrogate, which msgspec does not encode, escaped by the json module;
    a string parsed from JSON never holds a high surrogate before a low one: the parse joins
    them). Not marshal, whose reading makes a list or tuple as long as a value declares before
    reading its items: a forged value of a few bytes would cost gigabytes."""
    pairs = [(row[0], row[1]) for row in rows]
    encode = ids_encoder()
    if encode is not None:
        try:
            return encode(pairs)
        except UnicodeEncodeError:
            pass
    return json.dumps(pairs, separators=(",", ":")).encode("ascii")


class PreparedUsage:
    """What storing a file's usage rows needs that does not depend on its row's id, made where
    the file is read (a worker process, for a new file): the quarter-hour sums and the entries'
    packed ids, each with its checksum part (see :func:`~._schema.columns_checksum`), and, if
    the session names a parent (``forked``), each row's checksum part (None otherwise)."""

    __slots__ = ("row_checksums", "sums", "ids", "ids_checksum")

    def __init__(self, rows: list[UsageRow], forked: bool) -> None:
        self.row_checksums = [columns_checksum(_stored_row(row)) for row in rows] if forked else None
        sums = ((sql_text(key), quarter, *values) for (key, quarter), values in _sums(rows).items())
        self.sums = [(*stored, columns_checksum(stored)) for stored in sums]
        self.ids = _pack_ids(rows)
        self.ids_checksum = columns_checksum((self.ids,))


def add_usage_rows(
    connection: sqlite3.Connection,
    file_id: int,
    rows: list[UsageRow],
    damaged: int,
    prepared: PreparedUsage | None,
    appended: bool = False,
    fresh: bool = False,
) -> None:
    """Store a file's newly read usage (``prepared`` from its rows, None if it has none): add the
    rows to its quarter-hour sums, their ids to its packed ids (and the rows themselves, for a
    session that names a parent), and count its newly read damaged lines.

    ``rows`` may be left out (empty) where they are not stored one by one, except for a read
    from the file's old end (``appended``): its rows are added to what the file has. A read of
    the whole file replaces whatever is stored under its id: a deletion takes a file's usage
    along, so any left there (the id of the file deleted last comes again) is a damaged
    catalog's, not this file's. ``fresh``: nothing is stored under the id (a new row in a
    catalog that had no rows and no usage when the write transaction began): no drop."""
    if not appended and not fresh:
        drop_usage_rows(connection, file_id)
    if prepared is not None:
        file_key = marshal.dumps(file_id, 2)  # _schema.with_file_id, its first step once per file
        crc32 = zlib.crc32
        if prepared.row_checksums is not None:
            connection.executemany(
                f"INSERT INTO usage ({USAGE_COLUMNS}, crc) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [
                    (file_id, *_stored_row(row), crc32(file_key, crc))
                    for row, crc in zip(rows, prepared.row_checksums, strict=True)
                ],
            )
        connection.execute(
            "INSERT INTO usage_ids (file_id, ids, crc) VALUES (?, ?, ?)",
            (file_id, prepared.ids, crc32(file_key, prepared.ids_checksum)),
        )
        if appended and connection.execute(
            "SELECT 1 FROM usage_sums WHERE file_id = ? LIMIT 1", (file_id,)
        ).fetchone():
            _add_sums(connection, file_id, rows)
        else:  # a file with no sums yet (new, or read in full) takes them as made
            connection.executemany(
                f"INSERT INTO usage_sums ({USAGE_SUMS_COLUMNS}, crc) VALUES ({', '.join('?' * 16)})",
                [(file_id, *row[:-1], crc32(file_key, row[-1])) for row in prepared.sums],
            )
    _add_damaged(connection, file_id, damaged)


def _add_sums(connection: sqlite3.Connection, file_id: int, rows: list[UsageRow]) -> None:
    """Add a grown file's new rows to the sums it has, one row at a time, in file order: the
    sums are then those a read of the whole file makes (a batch summed first and then added
    would round its doubles in another order)."""
    added = [
        (
            sql_text(row[3]),
            quarter_of(row[2]),
            *(0 if value is None else 0 + value for value in row[4:8]),
            0.0 if row[8] is None else 0.0 + row[8],  # as _sums starts (-0.0 adds as 0.0)
            *(int(value is None) for value in row[4:9]),
            row[2],
            row[2],
        )
        for row in rows
    ]
    connection.executemany(
        f"INSERT INTO usage_sums ({USAGE_SUMS_COLUMNS}) VALUES ({', '.join('?' * 15)}) "
        "ON CONFLICT (file_id, model_key, quarter) DO UPDATE SET "
        "input = input + excluded.input, output = output + excluded.output, "
        "cache_read = cache_read + excluded.cache_read, "
        "cache_write = cache_write + excluded.cache_write, "
        "cost = cost + excluded.cost, nan_input = nan_input + excluded.nan_input, "
        "nan_output = nan_output + excluded.nan_output, "
        "nan_cache_read = nan_cache_read + excluded.nan_cache_read, "
        "nan_cache_write = nan_cache_write + excluded.nan_cache_write, "
        "nan_cost = nan_cost + excluded.nan_cost, "
        "first_ms = MIN(first_ms, excluded.first_ms), last_ms = MAX(last_ms, excluded.last_ms)",
        [(file_id, *row) for row in added],
    )
    # the checksum of each sum as SQLite added it up (an integer sum past 2**63 is a double)
    connection.executemany(
        f"UPDATE usage_sums SET crc = usage_crc({USAGE_SUMS_COLUMNS}) "
        "WHERE file_id = ? AND model_key = ? AND quarter = ?",
        [(file_id, *key) for key in dict.fromkeys(row[:2] for row in added)],
    )


def _add_damaged(connection: sqlite3.Connection, file_id: int, damaged: int) -> None:
    if damaged:
        connection.execute(
            "INSERT INTO usage_damage (file_id, lines) VALUES (?, ?) "
            "ON CONFLICT (file_id) DO UPDATE SET lines = lines + excluded.lines",
            (file_id, damaged),
        )
        connection.execute(
            "UPDATE usage_damage SET crc = usage_crc(file_id, lines) WHERE file_id = ?", (file_id,)
        )


def _sums(rows: list[UsageRow]) -> dict[tuple[str, int], list[Any]]:
    """Rows summed per (model key, quarter): five sums (NaN left out), five NaN counts, first and
    last ms, in file order."""
    out: dict[tuple[str, int], list[Any]] = {}
    safe = _SAFE
    for _, _, ms, model_key, tokens_in, tokens_out, cache_read, cache_write, cost in rows:
        key = (model_key, ms // QUARTER_MS)
        sums = out.get(key)
        if sums is None:
            sums = out[key] = [0, 0, 0, 0, 0.0, 0, 0, 0, 0, 0, ms, ms]
        elif ms < sums[10]:
            sums[10] = ms
        elif ms > sums[11]:
            sums[11] = ms
        if (
            type(tokens_in) is int
            and type(tokens_out) is int
            and type(cache_read) is int
            and type(cache_write) is int
            and cost is not None
        ):
            # whole token counts (nearly every row): the loop below, its four sums at once
            a, b = sums[0] + tokens_in, sums[1] + tokens_out
            c, d = sums[2] + cache_read, sums[3] + cache_write
            if -safe <= a <= safe and -safe <= b <= safe and -safe <= c <= safe and -safe <= d <= safe:
                sums[0], sums[1], sums[2], sums[3] = a, b, c, d
                sums[4] += cost
                continue
        for i, value in enumerate((tokens_in, tokens_out, cache_read, cache_write, cost)):
            if value is None:
                sums[5 + i] += 1
            else:
                total = sums[i] + value
                # past 2**53 JavaScript's sum is a double, and SQLite's integers end at 2**63
                sums[i] = float(total) if type(total) is int and not -safe <= total <= safe else total
    return out


def drop_usage_rows(connection: sqlite3.Connection, file_id: int) -> None:
    """Delete a file's usage rows (it is read again in full, or gone)."""
    connection.execute("DELETE FROM usage WHERE file_id = ?", (file_id,))
    connection.execute("DELETE FROM usage_ids WHERE file_id = ?", (file_id,))
    connection.execute("DELETE FROM usage_sums WHERE file_id = ?", (file_id,))
    connection.execute("DELETE FROM usage_damage WHERE file_id = ?", (file_id,))


class UsageDamaged(CatalogError):
    """Usage rows that fail their checksum: their files are to be read again."""

    def __init__(self, file_ids: Iterable[int], paths: Iterable[str] = ()) -> None:
        self.file_ids = frozenset(file_ids)
        self.paths = tuple(paths)
        super().__init__(f"the catalog's usage rows of {len(self.file_ids)} file(s) are damaged")


def damaged_lines(connection: sqlite3.Connection, file_ids: Iterable[int]) -> dict[int, int]:
    """Damaged lines per file id, for the files ``file_ids`` that have any (checked)."""
    wanted = set(file_ids)
    out: dict[int, int] = {}
    bad: list[int] = []
    for file_id, lines, crc in connection.execute("SELECT file_id, lines, crc FROM usage_damage"):
        if file_id in wanted:
            if usage_checksum(file_id, lines) != crc or type(lines) is not int:
                bad.append(file_id)
            out[file_id] = lines
    if bad:
        raise UsageDamaged(bad)
    return out


def _qualified(alias: str, columns: str) -> str:
    return ", ".join(f"{alias}.{column.strip()}" for column in columns.split(","))


# A summed group: (file id, model key, quarter, input, output, cache read, cache write, cost,
# then how many of each of those five were NaN, first ms, last ms); read with its checksum.
_OWN_SUMS = f"""
SELECT {_qualified("s", USAGE_SUMS_COLUMNS)}, s.crc
FROM usage_sums s JOIN temp.usage_scope c ON c.file_id = s.file_id
WHERE c.parent_id IS NULL
"""
# A session with a parent: its entries, less those that have the same id and timestamp there
# (an entry with no id is never a copy: copied_entry_ids; none of them is in parent_entries);
# last, how many of the entries summed fail their checksum. ({{0}}: how integers are summed.)
_FORK_SUMS = f"""
SELECT u.file_id, u.model_key, (u.ms - (u.ms < 0) * 899999) / 900000 AS quarter,
       SUM({{0}}u.input), SUM({{0}}u.output), SUM({{0}}u.cache_read), SUM({{0}}u.cache_write), SUM(u.cost),
       SUM(u.input IS NULL), SUM(u.output IS NULL), SUM(u.cache_read IS NULL),
       SUM(u.cache_write IS NULL), SUM(u.cost IS NULL), MIN(u.ms), MAX(u.ms),
       SUM(u.crc IS NOT usage_crc({_qualified("u", USAGE_COLUMNS)}))
FROM usage u JOIN temp.usage_scope c ON c.file_id = u.file_id
WHERE c.parent_id IS NOT NULL AND NOT EXISTS (
    SELECT 1 FROM temp.parent_entries v
    WHERE v.file_id = c.parent_id AND v.entry_id = u.entry_id AND v.ts = u.ts
)
GROUP BY u.file_id, u.model_key, quarter
"""


def _is_pair(value: object) -> bool:
    """Whether ``value`` is an (entry id, timestamp) pair as :func:`_pack_ids` packs it."""
    return type(value) is list and len(value) == 2 and type(value[0]) is str and type(value[1]) is str


def entry_ids(connection: sqlite3.Connection, file_ids: Iterable[int]) -> dict[int, list[tuple[str, str]]]:
    """The (entry id, timestamp) of every usage entry of the sessions ``file_ids``, in file
    order, checked: :class:`UsageDamaged` names those whose packed ids fail (a damaged one would
    let a fork's copy count twice)."""
    out: dict[int, list[tuple[str, str]]] = {}
    bad: list[int] = []
    for file_id in file_ids:
        ids: list[tuple[str, str]] = []
        for packed, crc in connection.execute(
            "SELECT ids, crc FROM usage_ids WHERE file_id = ? ORDER BY rowid", (file_id,)
        ):
            try:
                if type(packed) is not bytes or usage_checksum(file_id, packed) != crc:
                    raise ValueError("fails its checksum")
                pairs = json.loads(packed)
                # a checksum tells damage, not what wrote the value: its shape is checked too
                if type(pairs) is not list or not all(map(_is_pair, pairs)):
                    raise ValueError("not (entry id, timestamp) pairs")
                ids += map(tuple, pairs)
            except (ValueError, RecursionError):
                bad.append(file_id)
                break
        out[file_id] = ids
    if bad:
        raise UsageDamaged(bad)
    return out


def usage_groups(
    connection: sqlite3.Connection,
    scope: Iterable[tuple[int, int | None]],
    parents: Mapping[int, Iterable[tuple[str, str]]],
) -> list[tuple[Any, ...]]:
    """Summed usage per (file, model, quarter hour) of the files ``scope`` names as ``(file id,
    parent file id or None)``; the rows a file shares with its parent are left out (``parents``:
    the (entry id, timestamp) pairs each parent's copies are told by, see :func:`scan_usage`).
    Every row read is checked: :class:`UsageDamaged` names the files whose rows fail."""
    connection.execute("CREATE TEMP TABLE IF NOT EXISTS usage_scope (file_id INTEGER PRIMARY KEY, parent_id)")
    connection.execute(
        "CREATE TEMP TABLE IF NOT EXISTS parent_entries (file_id INTEGER, entry_id TEXT, ts TEXT)"
    )
    connection.execute("CREATE INDEX IF NOT EXISTS temp.parent_entry ON parent_entries(file_id, entry_id)")
    scope = list(scope)
    connection.execute("DELETE FROM temp.usage_scope")
    connection.execute("DELETE FROM temp.parent_entries")
    connection.executemany("INSERT INTO temp.usage_scope VALUES (?, ?)", scope)
    try:
        groups: list[tuple[Any, ...]] = []
        damaged: set[int] = set()
        connection.executemany(
            "INSERT INTO temp.parent_entries VALUES (?, ?, ?)",
            (
                (file_id, sql_text(entry_id), sql_text(ts))
                for file_id, ids in parents.items()
                for entry_id, ts in ids
            ),
        )
        for row in connection.execute(_OWN_SUMS):
            if usage_checksum(*row[:-1]) != row[-1]:
                damaged.add(row[0])
            groups.append(_group(row[:-1]))
        try:  # a SUM of NaNs only is NULL: read as 0
            forks = connection.execute(_FORK_SUMS.format("")).fetchall()
        except sqlite3.OperationalError as error:
            if "overflow" not in str(error):
                raise
            # integers whose sum passes 2**63: summed as doubles, as JavaScript sums them anyway
            forks = connection.execute(_FORK_SUMS.format("1.0 * ")).fetchall()
        for row in forks:
            if row[-1]:
                damaged.add(row[0])
            groups.append(_group(row[:-1]))
        if damaged:
            raise UsageDamaged(damaged)
        return groups
    finally:
        connection.execute("DELETE FROM temp.usage_scope")
        connection.execute("DELETE FROM temp.parent_entries")


def _group(row: tuple[Any, ...]) -> tuple[Any, ...]:
    """A summed group as read, its model key as the report reads it (see :func:`sql_text`)."""
    return row if type(row[1]) is str else (row[0], text_of(row[1]), *row[2:])


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


def scan_usage(connection: sqlite3.Connection, rows: Iterable[Any]) -> UsageScan:
    """Sum the usage of the session files ``rows`` (catalog ``files`` rows, up to date).

    A session's parent is the file its header's ``parentSession`` names, when that file is among
    ``rows`` (a cycle of such links is cut where a session names a later one): the
    entries a session shares with its parent were spent in the parent (or further up, where the
    parent in turn shares them), and count there only. A parent that is not among ``rows``
    (deleted, or in a folder not read) leaves the copies counted in the session that holds them.
    """
    sessions: dict[int, tuple[str, dict[str, Any]]] = {}
    for row in rows:
        if row.header:
            header = read_header(row.header)
            if isinstance(header, dict):
                sessions[row.id] = (row.path, header)
    find_parent = _parent_finder(sessions)

    def started(file_id: int) -> tuple[int, str]:
        path, header = sessions[file_id]
        stamp = header.get("timestamp")
        return (js_date_ms(stamp) if isinstance(stamp, str) else None) or 0, path

    links: dict[int, int] = {}
    for file_id, (_, header) in sessions.items():
        parent_id = find_parent(header["parentSession"]) if names_parent(header) else None
        if parent_id is not None and parent_id != file_id:
            links[file_id] = parent_id
    # A cycle of parentSession links (only hand-made files have one) is cut where a session
    # names one started later than itself; any other link is followed, whatever the header
    # times say (a fork made in its parent's millisecond, a header time that does not parse).
    for file_id in _in_cycles(links):
        if not started(links[file_id]) < started(file_id):
            del links[file_id]
    scope: list[tuple[int, int | None]] = [(file_id, links.get(file_id)) for file_id in sessions]
    # every check is made before any raises: the caller reads the files it names again, once,
    # so a file named only by a later check would be left damaged
    failed: set[int] = set()
    damaged: dict[int, int] = {}
    groups: list[tuple[Any, ...]] = []
    # the usage on each file's unfinished last line: Pi reads it when it parses, so it counts in
    # its file, and a fork's copy of it (whole or unfinished too) is a copy
    unfinished = {
        row.id: _unfinished_rows(row, sessions[row.id][1])
        for row in rows
        if row.id in sessions and row.size > row.parsed
    }
    try:
        damaged = damaged_lines(connection, sessions)
    except UsageDamaged as error:
        failed.update(error.file_ids)
    # each parent's entries, read (and checked) once: its stored ids and its unfinished line's
    # (a fork with no rows of its own past its parent's still has them checked: the copy on its
    # unfinished last line is told by them too)
    parents: dict[int, list[tuple[str, str]]] = {}
    try:
        parents = entry_ids(connection, dict.fromkeys(links.values()))
    except UsageDamaged as error:
        failed.update(error.file_ids)
    # what a fork's entry is a copy of: an entry of its parent, one with an id (an entry with
    # no id is never a copy: copied_entry_ids)
    copies: dict[int, set[tuple[str, str]]] = {}
    for parent_id, ids in parents.items():
        ids += ((entry[0], entry[1]) for entry in unfinished.get(parent_id, ()))
        copies[parent_id] = {pair for pair in ids if pair[0]}
    try:
        groups = usage_groups(connection, scope, copies)
    except UsageDamaged as error:
        failed.update(error.file_ids)
    if failed:
        raise UsageDamaged(failed, [sessions[file_id][0] for file_id in failed if file_id in sessions])
    for row in rows:
        if row.id in unfinished:
            parent_id = links.get(row.id)
            told_by = set() if parent_id is None else copies[parent_id]
            groups += _unfinished_line(row, unfinished[row.id], told_by)
    return UsageScan(groups, sessions, damaged)


def _in_cycles(links: dict[int, int]) -> list[int]:
    """The sessions that lie on a cycle of ``links`` (each session names at most one parent)."""
    state: dict[int, int] = {}  # 1: on the walk being made, 2: done
    on_cycles: list[int] = []
    for start in links:
        walk: list[int] = []
        node: int | None = start
        while node is not None and node not in state:
            state[node] = 1
            walk.append(node)
            node = links.get(node)
        if node is not None and state[node] == 1:  # the walk came back to itself
            on_cycles.extend(walk[walk.index(node) :])
        for visited in walk:
            state[visited] = 2
    return on_cycles


def _parent_finder(sessions: dict[int, tuple[str, dict[str, Any]]]) -> Callable[[str], int | None]:
    """``parentSession`` → the file id of the session it names, or None.

    Pi writes the parent's path as it was then: absolute for ``forkFrom`` (symbolic links kept),
    as the session folder was given for a branched session (relative when that folder was), and
    the report may read the folder by another name (relative, or through a link). So the path is
    matched as written, then resolved against the current folder, then with links resolved; each
    step is taken only for the parents the previous ones did not find."""
    by_path = {path: file_id for file_id, (path, _) in sessions.items()}
    resolved: dict[str, int] | None = None
    real: dict[str, int] | None = None
    folders: dict[str, str] = {}

    def find(parent: str) -> int | None:
        nonlocal resolved, real
        found = by_path.get(parent)
        if found is not None:
            return found
        try:
            if resolved is None:
                resolved = {resolve_path(path): file_id for path, file_id in by_path.items()}
            found = resolved.get(resolve_path(parent))
            if found is not None:
                return found
            if real is None:
                real = {_real(path, folders): file_id for path, file_id in by_path.items()}
            return real.get(_real(parent, folders))
        except (OSError, ValueError):  # a path the system cannot take (a NUL byte, too long)
            return None

    return find


def _real(path: str, folders: dict[str, str]) -> str:
    """The path with its folder's links resolved (one ``realpath`` per folder, not per file)."""
    folder, name = os.path.split(path)
    real = folders.get(folder)
    if real is None:
        real = folders[folder] = os.path.realpath(folder or ".")
    return os.path.join(real, name)


def _unfinished_rows(row: Any, header: dict[str, Any]) -> list[UsageRow]:
    """The usage rows of a file's last line when it lacks its newline (the catalog keeps such a
    line aside until it is finished)."""
    partial = row.partial
    if partial is None:  # too long to keep: read it from the file (a line over 512 MiB: not)
        partial = read_range(row.path, row.parsed, row.size)
    return usage_rows(bytes(partial), header)[0]


def _unfinished_line(row: Any, found: list[UsageRow], copies: set[tuple[str, str]]) -> list[tuple[Any, ...]]:
    """The usage ``found`` on a file's unfinished last line (:func:`_unfinished_rows`): Pi reads
    it, so it counts, unless it is a copy of its parent's (``copies``: the parent's entries that
    have an id, see :func:`scan_usage`)."""
    groups = []
    for entry_id, timestamp, ms, key, *numbers in found:
        if (entry_id, timestamp) in copies:
            continue
        nans = [1 if value is None else 0 for value in numbers]
        groups.append((row.id, key, quarter_of(ms), *(value or 0 for value in numbers), *nans, ms, ms))
    return groups
