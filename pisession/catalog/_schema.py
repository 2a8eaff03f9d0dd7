"""The catalog's database: where it lives, opening it, its tables, and the row a file keeps.

Tables: ``catalog_meta`` (schema version and search mode), ``files`` (one row per ``.jsonl``
file: what was read of it and its picker row), ``messages`` (one row per message, for search) and,
with FTS5, ``fts`` (the messages' text, rowid = ``messages.id``), and for :mod:`pisession.usage`
(see ``_usage``) ``usage_sums``, ``usage_ids`` (each read's entry ids, packed), ``usage`` (one row
per entry that carries usage, of a session that names a parent) and ``usage_damage``. A database
whose meta does not match is rebuilt, only once the database is known to be ours
(:mod:`._location`), and never when a newer pisession made it.

The default file's name carries the schema and Unicode versions (:func:`default_catalog_path`):
installs on different Pythons or of different releases, used in turn, each keep their own catalog
instead of rebuilding one file on every call.
"""

from __future__ import annotations

import contextlib
import functools
import json
import marshal
import os
import sqlite3
import unicodedata
import zlib
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from .._discovery import SessionSummary
from .._errors import CatalogError
from .._record import Record
from ._location import APPLICATION_ID, cache_folder, claim_file, make_folder, named_path, unicode_key

ProgressCallback = Callable[[int, int], None]

# 7: the usage tables and the checked rows (row_crc, text_crc) together; 8: the text as JSON and
# the picker row's JSON made ahead (wire_head), the large columns last
# 9: the time zone a row's local times were read in; 10: the usage rows checked (a crc column)
# 11: a usage row's model_key starts with its entry's type ("compaction/Tools/summaries")
# 12: what a row was made without (lacks): a first call reads only the part it needs
SCHEMA_VERSION = 13
FILE_COLUMNS = (
    "id, path, dir, dev, ino, size, mtime_ns, ctime_ns, checked_ns, crc, parsed, indexed, head, tail, "
    "partial, status, header, message_count, first_message, name, last_activity, row_crc, zone, lacks"
)
# The parts of a ``files`` row a call may need (files.lacks: those a row was made without). A
# first build reads only what its call needs: a first report leaves the listing (its message
# text, most of the work per line), a first listing the usage rows; the next call that needs a
# part a row lacks fills it in (_refresh._fill).
USAGE, LISTING = 1, 2
EVERY_PART = USAGE | LISTING
PENDING, SESSION, FOREIGN = 0, 1, 2  # files.status: no header yet, a session, not a session
# The usage rows summed per file, model and quarter hour (a warm report reads these, not every
# entry's row): sums of the numbers, how many were NaN (stored NULL), first and last time.
USAGE_SUMS_TABLE = (
    "CREATE TABLE usage_sums (file_id INTEGER NOT NULL, model_key TEXT NOT NULL, quarter INTEGER NOT NULL, "
    "input, output, cache_read, cache_write, cost, nan_input INTEGER, nan_output INTEGER, "
    "nan_cache_read INTEGER, nan_cache_write INTEGER, nan_cost INTEGER, first_ms INTEGER, last_ms INTEGER, "
    "crc INTEGER, PRIMARY KEY (file_id, model_key, quarter)) WITHOUT ROWID"
)
# The columns a usage_sums row's checksum covers, in order (all but crc).
USAGE_SUMS_COLUMNS = (
    "file_id, model_key, quarter, input, output, cache_read, cache_write, cost, nan_input, nan_output, "
    "nan_cache_read, nan_cache_write, nan_cost, first_ms, last_ms"
)
USAGE_COLUMNS = "file_id, entry_id, ts, ms, model_key, input, output, cache_read, cache_write, cost"


def catalog_name() -> str:
    """The default catalog's file name: ``catalog-v<schema>-u<Unicode version>.sqlite3``."""
    return f"catalog-v{SCHEMA_VERSION}-u{unicodedata.unidata_version}.sqlite3"


def default_catalog_path() -> str:
    """``$PISESSION_CATALOG``, else ``$XDG_CACHE_HOME/pisession/catalog-v<schema>-u<Unicode>.sqlite3``
    (``~/.cache``): one file per version of the catalog's tables and of this Python's Unicode
    tables (which split the words), so two installs keep one each.

    Raises :class:`~pisession.CatalogError` when neither is set and there is no home folder
    (rather than a ``~`` folder in the current one).
    """
    return named_path() or os.path.join(cache_folder(), catalog_name())


def is_movable_default(path: str) -> bool:
    """Whether ``path`` is the catalog's own default location (not one the user named)."""
    if named_path() is not None:
        return False
    try:
        return path == os.path.join(cache_folder(), catalog_name())
    except CatalogError:
        return False


def version() -> tuple[int, str]:
    """This pisession's catalog version: (schema, Unicode version)."""
    return SCHEMA_VERSION, unicodedata.unidata_version


@functools.cache
def fts5_available() -> bool:
    """Whether this Python's SQLite has FTS5 (else search scans the stored text)."""
    try:
        connection = sqlite3.connect(":memory:")
        try:
            connection.execute("CREATE VIRTUAL TABLE probe USING fts5(text, content='', tokenize='ascii')")
        finally:
            connection.close()
    except sqlite3.Error:
        return False
    return True


def connect(path: str, timeout: float, fts: bool, movable: bool) -> tuple[sqlite3.Connection, str | None]:
    """Open (creating it if needed) the catalog at ``path`` with the tables for ``fts``; the
    notice, if a file that was not ours was moved aside (only when ``movable``)."""
    notice = None
    if path != ":memory:":
        make_folder(os.path.dirname(path))
        notice = claim_file(path, movable)
    connection = sqlite3.connect(path, timeout=timeout, isolation_level=None)
    try:
        # the usage rows' checksums, where SQLite sums them (see _usage)
        connection.create_function("usage_crc", -1, usage_checksum, deterministic=True)
        # a deleted session's text must not stay readable in freed pages
        connection.execute("PRAGMA secure_delete=ON")
        if path != ":memory:":
            _mark_ours(connection, path)
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=NORMAL")
        _ensure_schema(connection, path, fts)
    except BaseException:
        connection.close()
        raise
    return connection, notice


def _application_id(connection: sqlite3.Connection) -> int:
    return int(connection.execute("PRAGMA application_id").fetchone()[0])


def _mark_ours(connection: sqlite3.Connection, path: str) -> None:
    """Write our application id into a new, empty database, before anything else writes to it.

    In rollback mode, so it lands in the main file's header, where :func:`claim_file` reads it.
    """
    if _application_id(connection) == APPLICATION_ID:
        return
    connection.execute("BEGIN IMMEDIATE")
    try:
        if _application_id(connection) != APPLICATION_ID:
            if connection.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]:
                raise CatalogError(f"{path} is an SQLite database that is not a pisession catalog")
            connection.execute(f"PRAGMA application_id={APPLICATION_ID}")
        connection.execute("COMMIT")
    except BaseException:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise


def _ensure_schema(connection: sqlite3.Connection, path: str, fts: bool) -> None:
    mode = "fts5" if fts else "plain"
    if _schema_ok(connection, mode):
        return
    connection.execute("BEGIN IMMEDIATE")
    rebuilt = False
    try:
        if not _schema_ok(connection, mode):
            if path != ":memory:" and _application_id(connection) != APPLICATION_ID:
                raise CatalogError(f"{path} is an SQLite database that is not a pisession catalog")
            _refuse_newer(connection, path)
            # an old catalog's tables (none in a new file: nothing then to vacuum away below)
            rebuilt = connection.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] > 0
            for table in (
                *("usage_sums", "usage_damage", "usage", "usage_ids"),
                *("fts", "messages", "files", "catalog_meta"),
            ):
                connection.execute(f"DROP TABLE IF EXISTS {table}")
            connection.execute("CREATE TABLE catalog_meta (key TEXT PRIMARY KEY, value TEXT)")
            connection.execute(
                "CREATE TABLE files (id INTEGER PRIMARY KEY, path TEXT UNIQUE NOT NULL, "
                "dir TEXT NOT NULL, dev INTEGER, ino INTEGER, size INTEGER, mtime_ns INTEGER, "
                "ctime_ns INTEGER, checked_ns INTEGER, crc INTEGER, parsed INTEGER, indexed INTEGER, "
                "head BLOB, tail BLOB, partial BLOB, status INTEGER, header TEXT, message_count INTEGER, "
                "first_message BLOB, name BLOB, last_activity REAL, row_crc INTEGER, zone TEXT, "
                "lacks INTEGER, "
                "modified REAL, text_crc INTEGER, wire_head BLOB, all_text BLOB)"
            )
            connection.execute("CREATE INDEX files_dir ON files(dir)")
            connection.execute(
                "CREATE TABLE messages (id INTEGER PRIMARY KEY, file_id INTEGER NOT NULL, entry_id TEXT, "
                "ts REAL, role TEXT, text TEXT)"
            )
            connection.execute("CREATE INDEX messages_file ON messages(file_id)")
            # untyped number columns: whole token counts stay integers; NULL stands for NaN
            connection.execute(
                "CREATE TABLE usage (file_id INTEGER NOT NULL, entry_id TEXT, ts TEXT, ms INTEGER, "
                "model_key TEXT, input, output, cache_read, cache_write, cost, crc INTEGER)"
            )
            connection.execute("CREATE INDEX usage_entry ON usage(file_id, entry_id)")
            connection.execute("CREATE TABLE usage_ids (file_id INTEGER NOT NULL, ids BLOB, crc INTEGER)")
            connection.execute("CREATE INDEX usage_ids_file ON usage_ids(file_id)")
            connection.execute(
                "CREATE TABLE usage_damage (file_id INTEGER PRIMARY KEY, lines INTEGER, crc INTEGER)"
            )
            connection.execute(USAGE_SUMS_TABLE)
            if fts:
                # the words come pre-split by _words.index_text; the message text is in messages
                connection.execute("CREATE VIRTUAL TABLE fts USING fts5(text, content='', tokenize='ascii')")
            connection.executemany(
                "INSERT INTO catalog_meta VALUES (?, ?)",
                [("schema", str(SCHEMA_VERSION)), ("mode", mode), ("unicode", unicodedata.unidata_version)],
            )
        connection.execute("COMMIT")
    except BaseException:
        if connection.in_transaction:
            connection.execute("ROLLBACK")
        raise
    if rebuilt and path != ":memory:":
        # the old tables' text: their pages were zeroed as they were freed (secure_delete);
        # VACUUM also rewrites what an older release freed without, the checkpoint empties the WAL
        with contextlib.suppress(sqlite3.Error):
            connection.execute("VACUUM")
        with contextlib.suppress(sqlite3.Error):
            connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _refuse_newer(connection: sqlite3.Connection, path: str) -> None:
    """A catalog a newer pisession made (a higher schema, or the same with a newer Python's
    Unicode tables) is never rebuilt by this one: it would take it from that install."""
    try:
        meta = dict(connection.execute("SELECT key, value FROM catalog_meta").fetchall())
    except sqlite3.OperationalError:
        return  # no meta: not a catalog any pisession finished making
    schema, unicode = meta.get("schema"), meta.get("unicode")
    if not isinstance(schema, str) or not schema.isdigit():
        return
    theirs = (int(schema), unicode_key(unicode if isinstance(unicode, str) else ""))
    if theirs > (SCHEMA_VERSION, unicode_key(unicodedata.unidata_version)):
        raise CatalogError(
            f"{path} is the catalog of a newer pisession (schema {schema}, Unicode {unicode}): "
            "not changing it (give this one another file with PISESSION_CATALOG)"
        )


def _schema_ok(connection: sqlite3.Connection, mode: str) -> bool:
    try:
        meta = dict(connection.execute("SELECT key, value FROM catalog_meta").fetchall())
    except sqlite3.OperationalError as error:
        if "no such table" in str(error):
            return False
        raise
    # another Python's Unicode tables may split words differently from those the index was built with
    return (
        meta.get("schema") == str(SCHEMA_VERSION)
        and meta.get("mode") == mode
        and meta.get("unicode") == unicodedata.unidata_version
    )


# ----------------------------------------------------------------------------------- stored values


def pack(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")  # Pi's files may hold lone surrogates (\\ud800)


def unpack(blob: bytes | None) -> str:
    return "" if blob is None else bytes(blob).decode("utf-8", "surrogatepass")


def pack_text(text: str) -> bytes:
    """A session's message text as it is kept: its JSON string, as ``pisession ls --json`` writes
    it (:func:`pisession._discovery.rows_json`), so that a listing copies it without a parse.
    orjson writes the same bytes several times faster than the json module for text that is
    not ASCII; it refuses a surrogate, which the json module writes and UTF-8 escapes."""
    if not text:  # (a read for usage alone keeps none: no import of orjson for it)
        return b'""'
    try:
        import orjson
    except ImportError:  # pragma: no cover - orjson is a dependency, but optional at run time
        pass
    else:
        with contextlib.suppress(TypeError):
            return bytes(orjson.dumps(text))
    return json.dumps(text, ensure_ascii=False).encode("utf-8", "backslashreplace")


def unpack_text(blob: bytes | None, parse: Callable[[bytes], object] = json.loads) -> str:
    """The text :func:`pack_text` kept (``parse``: a JSON parser, e.g. :func:`pisession._json.loads`)."""
    return "" if blob is None else str(parse(blob))


def text_checksum(all_text: bytes | None, wire_head: bytes | None, modified: float | None) -> int:
    """A checksum of a row's text columns (those a listing reads apart from the others)."""
    crc = zlib.crc32(repr(None if modified is None else float(modified)).encode())
    for blob in (wire_head, all_text):
        crc = zlib.crc32(b"-" if blob is None else b"+%d:" % len(blob), crc)
        if blob is not None:
            crc = zlib.crc32(blob, crc)
    return crc


def text_intact(all_text: object, wire_head: object, modified: object, crc: object) -> bool:
    """Whether a row's text columns are of their types and match their checksum (a column of
    another type, from a database edited by hand, is damage too, not a TypeError)."""
    return (
        type(all_text) is bytes
        and (wire_head is None or type(wire_head) is bytes)
        and (modified is None or type(modified) is float)
        and text_checksum(all_text, wire_head, modified) == crc
    )


def usage_checksum(
    file_id: int | float | str | bytes | None, *values: int | float | str | bytes | None
) -> int:
    """A checksum of a usage row's columns (``usage``, ``usage_sums``, ``usage_damage``), its
    file id first: a flipped sum is read again from its file, never reported. Registered as the
    SQL function ``usage_crc``, so that sums SQLite adds up are checked as SQLite stored them."""
    return with_file_id(file_id, columns_checksum(values))


def columns_checksum(values: tuple[Any, ...]) -> int:
    """The part of :func:`usage_checksum` that does not depend on the file id: made where the
    file is read (a worker process), before its row has an id."""
    # The columns are untyped: SQLite gives back each value as it was written (-0.0 too).
    # marshal's version 2 (before references) writes the same bytes for the same values on any
    # Python 3, four times faster than repr: a warm report checks every sum it reads.
    return zlib.crc32(marshal.dumps(values, 2))


def with_file_id(file_id: int | float | str | bytes | None, checksum: int) -> int:
    """:func:`usage_checksum` from :func:`columns_checksum`'s part and the row's file id."""
    return zlib.crc32(marshal.dumps(file_id, 2), checksum)


def sql_text(text: str) -> str | bytes:
    """A string as SQLite can hold it: as it is, or, holding a lone surrogate (JSON's ``\\ud800``,
    which Pi reads and UTF-8 cannot encode), its bytes with the surrogates passed, a BLOB (which
    SQLite never finds equal to a TEXT). So two strings stored are equal only if they were."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass")
    return text


def text_of(value: str | bytes) -> str:
    """A string :func:`sql_text` stored, read back."""
    return value.decode("utf-8", "surrogatepass") if isinstance(value, bytes) else value


def indexable(text: str) -> str:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-8", "replace").decode("utf-8")
    return text


def chunks(items: Sequence[Any], size: int) -> Iterable[list[Any]]:
    for start in range(0, len(items), size):
        yield list(items[start : start + size])


class Row(Record):
    """A ``files`` row: how far the file was read, how to tell it changed, and its picker row."""

    id: int
    path: str
    dir: str
    dev: int
    ino: int
    size: int
    mtime_ns: int
    ctime_ns: int
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
    row_crc: int
    zone: str | None
    """``_js.local_zone_key()`` when reading the file read a date in local time (a date-time
    without an offset: what the row holds is true in that zone only), else None."""
    lacks: int
    """The parts (:data:`USAGE`, :data:`LISTING`) this row was made without: a call that needs
    one of them fills it in."""

    def intact(self) -> bool:
        """Whether what this row serves (its picker fields) is what was written, and its columns
        are of their types (a database edited by hand: the file is read again, not a TypeError)."""
        return _sound(tuple(map(type, self.__dict__.values()))) and self.checksum() == self.row_crc

    def checksum(self) -> int:
        """The :func:`row_checksum` of this row's fields (``row_crc`` is what was stored)."""
        return row_checksum(
            self.partial,
            self.status,
            self.header,
            self.message_count,
            self.first_message,
            self.name,
            self.last_activity,
            self.lacks,
        )

    def summary(self, all_text: str | None) -> SessionSummary:
        summary = SessionSummary()
        if self.status == SESSION and self.header is not None:
            summary.header = read_header(self.header)
        summary.foreign = self.status == FOREIGN
        summary.message_count = self.message_count
        summary.first_message = unpack(self.first_message)
        summary.name = None if self.name is None else unpack(self.name)
        summary.last_activity = self.last_activity
        if all_text:
            summary.texts = [all_text]
        return summary


_INT: frozenset[type] = frozenset({int})
_BLOB: frozenset[type] = frozenset({bytes, type(None)})
_TEXT: frozenset[type] = frozenset({str, type(None)})
_REAL: frozenset[type] = frozenset({float, type(None)})
# the types of a Row's fields as this module writes them (SQLite keeps any value in any column):
# id, path, dir, dev, ino, size, mtime_ns, ctime_ns, checked_ns, crc, parsed, indexed, head,
# tail, partial, status, header, message_count, first_message, name, last_activity, row_crc, zone,
# lacks
_ROW_TYPES: tuple[frozenset[type], ...] = (
    *[_INT, frozenset({str}), frozenset({str})],
    *[_INT] * 9,
    *[frozenset({bytes}), frozenset({bytes}), _BLOB, _INT, _TEXT, _INT, _BLOB, _BLOB, _REAL, _INT, _TEXT],
    _INT,
)


@functools.lru_cache(maxsize=256)
def _sound(types: tuple[type, ...]) -> bool:
    """Whether a Row's fields (their types, in order) are of the types their columns are written
    with; the few combinations rows have are remembered."""
    return len(types) == len(_ROW_TYPES) and all(
        kind in allowed for kind, allowed in zip(types, _ROW_TYPES, strict=True)
    )


def row_checksum(
    partial: bytes | None,
    status: int,
    header: str | None,
    message_count: int,
    first_message: bytes | None,
    name: bytes | None,
    last_activity: float | None,
    lacks: int,
) -> int:
    """A checksum of a row's picker fields and of the parts it lacks: a damaged row is read
    again, never served."""
    # SQLite gives a REAL column back as a float, whatever was stored
    fields = (status, header, message_count, None if last_activity is None else float(last_activity))
    # (a row with every part keeps the checksum it had before the column)
    crc = zlib.crc32(repr((*fields, lacks) if lacks else fields).encode("utf-8", "surrogatepass"))
    for blob in (partial, first_message, name):
        crc = zlib.crc32(b"-" if blob is None else b"+%d:" % len(blob) + bytes(blob), crc)
    return crc


def header_subset(header: dict[str, Any]) -> str:
    # Only what a picker row reads; a key's absence matters (new Date(undefined) is NaN).
    subset = {key: header[key] for key in _HEADER_KEYS if key in header}
    if all(type(value) is str for value in subset.values()):
        # json.dumps's text, a third of its time (it builds an encoder at every call)
        return "{" + ", ".join(f'"{key}": {_quoted(value)}' for key, value in subset.items()) + "}"
    try:
        return json.dumps(subset)
    except RecursionError:  # an id nested about as deep as a line can be read (a hostile file)
        from .._json import dumps  # JSON.stringify's, which goes any depth

        return dumps(subset)


_HEADER_KEYS = ("id", "cwd", "parentSession", "timestamp")
_quoted = json.encoder.encode_basestring_ascii  # json.dumps's, ensure_ascii as by default


def read_header(text: str) -> Any:
    """A header kept by :func:`header_subset`, read back (at any depth)."""
    try:
        return json.loads(text)
    except RecursionError:
        from .._json import loads_deep

        return loads_deep(text)
