"""Reading session files and migrating old versions, exactly as Pi's loader does (SPEC §2–3).

Everything here works on wire dicts (the parsed JSON of each line). Lines are split on ``\\n``
only: Pi writes U+2028 and friends raw, so a generic line splitter would cut entries apart.
"""

from __future__ import annotations

import errno
import functools
import io
import os
import stat
import sys
import warnings
from collections.abc import Callable, Iterable, Iterator

from ._errors import InvalidSessionError, LineTooLongWarning, SessionNotWrittenWarning, SymlinkRefusedError
from ._js import MISSING, js_to_number, js_trim, js_truthy
from ._json import loads, loads_deep, loads_for

# typing for type checkers only (they take TYPE_CHECKING for true): importing it at run time
# took 8 % of `pisession tree`'s start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    WireEntry = dict[str, Any]

__all__ = [
    "CURRENT_SESSION_VERSION",
    "read_session_entries",
    "parse_session_entries",
    "load_entries_from_file",
    "migrate_session_entries",
    "is_session_header",
    "parse_line",
    "iter_file_lines",
    "iter_line_lists",
    "MAX_LINE_BYTES",
    "SkippedLine",
    "head_of",
    "scan_raw",
    "scan_records",
    "parse_raw",
    "open_regular",
    "Opaque",
    "read_all_entries",
    "warn_long_lines",
]

CURRENT_SESSION_VERSION = 3

_READ_CHUNK = 1 << 20


# Plain classes, not NamedTuples: making a NamedTuple compiles code, and the first compile of a
# process costs more than a millisecond of `pisession tree` (they are faster to build, too).
class _Role:
    __slots__ = ("role",)

    def __init__(self, role: Any) -> None:
        self.role = role


class _DictHead:
    __slots__ = ("type", "id", "parentId", "timestamp", "message", "targetId", "label", "name")

    def __init__(
        self,
        type: Any,
        id: Any,
        parentId: Any,
        timestamp: Any,
        message: _Role | None,
        targetId: Any,
        label: Any,
        name: Any,
    ) -> None:
        self.type = type
        self.id = id
        self.parentId = parentId
        self.timestamp = timestamp
        self.message = message
        self.targetId = targetId
        self.label = label
        self.name = name


if TYPE_CHECKING:
    Head = Any
    """What the index needs of an entry, as attributes named like the wire keys: ``type``,
    ``id``, ``parentId``, ``timestamp``, ``message.role`` (``message`` None when absent),
    ``targetId``, ``label``, ``name``; an absent key reads as MISSING."""

    Record = tuple[Head, bytes | int | None, WireEntry | None]
    """An entry as the index stores it: its head, and its raw line (in low-memory mode perhaps
    the line's number in the file's ``BodyFile``) or its parsed dict."""


def _role_of(entry: WireEntry) -> _Role | None:
    message = entry.get("message")
    return _Role(message.get("role", MISSING)) if isinstance(message, dict) else None


def head_of(entry: WireEntry) -> Head:
    get = entry.get
    return _DictHead(
        get("type", MISSING),
        get("id", MISSING),
        get("parentId", MISSING),
        get("timestamp", MISSING),
        _role_of(entry),
        get("targetId", MISSING),
        get("label", MISSING),
        get("name", MISSING),
    )


_KEEP_ALL = object()  # scan_records' skip_type by default: equal to no entry type


@functools.cache
def _head_decoder(
    stamp: object = None,
) -> tuple[Callable[[bytes], Head], tuple[type[Exception], ...]] | None:
    """msgspec's decoder of entry heads and the errors it raises, or None without msgspec.

    msgspec validates a whole line and extracts a few fields ~5x faster than a full parse, but
    importing it takes longer than reading a small file (``pisession tree``): it is imported
    the first time a line is scanned. ``stamp`` (low-memory mode): the ``timestamp`` every
    head gives instead of reading it (its string left in the file saves ~70 bytes an entry)."""
    try:
        import msgspec
    except ImportError:  # exercised by tests that hide it
        return None
    from typing import Any  # msgspec imports typing anyway

    # Built with defstruct: the annotations of classes made in a function would name locals
    # that msgspec cannot resolve. Heads hold scalars only: nothing for the collector (gc=False).
    message_head = msgspec.defstruct("_MessageHead", [("role", Any, MISSING)], gc=False)
    fields: list[tuple[str, Any, Any]] = [(name, Any, MISSING) for name in ("type", "id", "parentId")]
    if stamp is None:
        fields.append(("timestamp", Any, MISSING))
    fields.append(("message", message_head | None, None))
    fields += [(name, Any, MISSING) for name in ("targetId", "label", "name")]
    namespace = None if stamp is None else {"timestamp": property(lambda _head: stamp)}
    head = msgspec.defstruct("_EntryHead", fields, gc=False, namespace=namespace)
    # RecursionError: deep nesting, which the full parse decides
    return msgspec.json.Decoder(head).decode, (msgspec.DecodeError, msgspec.ValidationError, RecursionError)


def scan_raw(raw: bytes) -> tuple[Head, WireEntry | None] | None:
    """Validate one line and read its head without building the rest.

    Lines msgspec cannot take as they are (invalid UTF-8, escaped lone surrogates, a
    ``message`` that is not an object, ...) go through the full JavaScript-exact parse.
    """
    fast = _head_decoder()
    if fast is not None:
        decode, errors = fast
        try:
            return decode(raw), None
        except errors:
            pass
    entry = parse_line(raw)
    return None if entry is None else (head_of(entry), entry)


def scan_records(lines: Iterable[bytes], *, skip_type: object = _KEEP_ALL) -> Iterator[Record]:
    """:func:`scan_raw` of each line as a record, in one loop (the open path), leaving out
    lines that do not parse and entries whose ``type`` is ``skip_type``."""
    fast = _head_decoder()
    if fast is None:
        for line in lines:
            entry = parse_line(line)
            if entry is not None and entry.get("type", MISSING) != skip_type:
                yield head_of(entry), None, entry
        return
    decode, errors = fast
    for line in lines:
        try:
            head = decode(line)
        except errors:
            entry = parse_line(line)
            if entry is not None and entry.get("type", MISSING) != skip_type:
                yield head_of(entry), None, entry
            continue
        if head.type != skip_type:
            yield head, line, None


def parse_raw(raw: bytes) -> WireEntry | None:
    return parse_line(raw)


def parse_line(line: bytes | str, parse: Callable[[bytes | str], object] = loads) -> WireEntry | None:
    """One line as Pi reads it: malformed, blank and non-object lines give None.

    Pi keeps truthy non-object values (a line holding ``5``) as entries without an id;
    pisession drops them like malformed lines, since nothing in Pi can write one. ``parse``:
    :func:`pisession._json.loads` or another function giving the same results.
    """
    try:
        value = parse(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


class Opaque:
    """A line Pi keeps as an entry though it is not an object: an array (``["note",1]``), a
    number, a string, ``true``. pisession does not index these, but a rewrite (migration, fork)
    must keep them where Pi keeps them. Read like an entry without fields (``get`` gives the
    default); ``id`` is the id Pi's v1 migration gives an array, which JSON never shows."""

    __slots__ = ("value", "id")

    def __init__(self, value: object) -> None:
        self.value = value
        self.id: Any = MISSING

    def get(self, key: str, default: Any = None) -> Any:
        return default

    def __repr__(self) -> str:
        return f"Opaque({self.value!r})"


def is_session_header(value: object) -> bool:
    return isinstance(value, dict) and value.get("type") == "session" and isinstance(value.get("id"), str)


def parse_session_entries(text: str) -> list[WireEntry]:
    """Pi's ``parseSessionEntries``: every parsable line of ``text``, header included, no validation."""
    entries: list[WireEntry] = []
    for line in js_trim(text).split("\n"):
        if not js_trim(line):
            continue
        entry = parse_line(line)
        if entry is not None:
            entries.append(entry)
    return entries


MAX_LINE_BYTES = 1 << 29
"""The longest line pisession reads: 512 MiB. Pi reads a whole session file into one string,
which V8 cannot make longer than 2**29 - 24 characters, so a longer line is one Pi cannot read
either; holding it would cost pisession about three times its size. Such a line is skipped like
a malformed one without ever being held whole (see :class:`SkippedLine`)."""

# What may begin a JSON text after JSON's own whitespace: a long line beginning otherwise can
# never parse, so it is skipped as soon as that is seen (a header followed by a run of NULs).
_JSON_WHITESPACE = b" \t\r"
_JSON_STARTS = frozenset(b'{["-0123456789tfn')


class SkippedLine(bytes):
    """A line read past and not held: longer than :data:`MAX_LINE_BYTES`, or longer than a read
    chunk and beginning with a byte no JSON text begins with. Its content is one NUL byte, so
    every parser rejects it like a malformed line, while ``len()`` gives its length in the file
    (byte offsets stay right); ``head`` holds its first bytes, for reports."""

    size: int
    head: bytes

    def __len__(self) -> int:
        return self.size


def skipped_line(size: int, head: bytes) -> SkippedLine:
    """The :class:`SkippedLine` of ``size`` bytes beginning with ``head``."""
    line = SkippedLine(b"\0")
    line.size = size
    line.head = head[:80]
    return line


def may_parse(start: bytes) -> bool:
    """Whether a line beginning with ``start`` may be a JSON text (a blank start: it may)."""
    rest = start.lstrip(_JSON_WHITESPACE)
    return not rest or rest[0] in _JSON_STARTS


def iter_file_lines(fileobj: Any) -> Iterator[bytes]:
    """Lines of a binary file split on ``\\n`` only, each without its terminator.

    The last element is the text after the final ``\\n`` (possibly empty), so a caller can tell a
    missing final newline from a complete file. A line longer than a read chunk is gathered in
    pieces and joined once (a 100 MB line costs one copy, not one per megabyte); one longer than
    :data:`MAX_LINE_BYTES`, or one that cannot parse, is a :class:`SkippedLine`.
    """
    for lines in iter_line_lists(fileobj):
        yield from lines


def iter_line_lists(fileobj: Any, limit: int = MAX_LINE_BYTES) -> Iterator[list[bytes]]:
    """:func:`iter_file_lines` a read chunk's lines at a time (the open path: a list per
    megabyte, not a Python step per line). Joined, the lists hold the same elements; only a
    list's first element may be a :class:`SkippedLine` (a chunk's other lines are shorter
    than a chunk)."""
    pieces: list[bytes] = []  # the line being gathered across chunks
    gathered = 0  # its length so far
    skipping: SkippedLine | None = None  # or the line being read past
    verdict: bool | None = None  # whether the line gathered can begin a JSON text, once known
    while True:
        chunk = fileobj.read(_READ_CHUNK)
        if not chunk:
            break
        lines = chunk.split(b"\n")  # the chunk itself when it holds no newline: no copy
        tail = lines.pop()
        if not lines:  # no newline in this chunk
            if skipping is not None:
                skipping.size += len(chunk)
                continue
            pieces.append(chunk)
            gathered += len(chunk)
            if verdict is None and len(pieces) > 1:  # a line of several chunks: can it parse?
                for piece in pieces if len(pieces) == 2 else pieces[-1:]:
                    rest = piece.lstrip(_JSON_WHITESPACE)
                    if rest:
                        verdict = rest[0] in _JSON_STARTS
                        break
            if gathered > limit or verdict is False:
                skipping = skipped_line(gathered, pieces[0])
                pieces.clear()
            continue
        if skipping is not None:  # the line read past ends here
            skipping.size += len(lines[0])
            lines[0] = skipping
            skipping = None
        elif pieces:  # the line gathered ends here: joined once
            end = len(lines[0])
            if gathered + end > limit:
                lines[0] = skipped_line(gathered + end, pieces[0])
            else:
                pieces.append(lines[0])
                lines[0] = b"".join(pieces)
            pieces.clear()
        verdict = None
        yield lines
        gathered = len(tail)
        if tail:
            pieces.append(tail)
    if skipping is not None:
        yield [skipping]
    else:
        yield [b"".join(pieces)]


def open_regular(path: str | os.PathLike[str], buffered: bool = True) -> Any:
    """Open a regular file for binary reading; OSError for anything else. ``buffered=False``
    gives the raw file (half the cost to open: for a caller that reads it in large pieces and
    takes a short read as it comes, as :class:`pisession.catalog._range.CheckedRange` does).

    O_NONBLOCK: a FIFO planted under a ``.jsonl`` name must not block discovery waiting for a
    writer (it has no effect on regular files). A folder, which opens read-only without an
    error, raises ``IsADirectoryError`` (EISDIR, as reading it would); anything else that is not
    a regular file ``OSError(EINVAL)``.
    """
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, "not a regular file", path)
        return os.fdopen(fd, "rb") if buffered else io.FileIO(fd, "r")
    except BaseException:
        os.close(fd)
        raise


def read_entries(path: str | os.PathLike[str]) -> tuple[list[WireEntry], bool, int]:
    """Parse a session file without writing to it.

    Returns the parsed entries (header first, or ``[]`` when the file is not a session), whether
    the last line lacks its newline, and the number of bytes read.
    """
    with open_regular(path) as handle:
        entries, last, size = read_entries_from(handle, os.fspath(path))
    return entries, last != b"", size


def read_entries_from(handle: Any, path: str) -> tuple[list[WireEntry], bytes, int]:
    """:func:`read_entries` of an open file: the entries (``[]`` when it is not a session), the
    text after the last newline (a line without its newline, or ``b""``), and the bytes read."""
    entries: list[WireEntry] = []
    size = 0
    last = b""
    long_lines: list[tuple[int, int]] = []
    parse = loads_for(os.fstat(handle.fileno()).st_size)  # a small file: no orjson import
    for number, line in enumerate(iter_file_lines(handle), start=1):
        size += len(line) + 1
        last = line
        if type(line) is SkippedLine and len(line) > MAX_LINE_BYTES:
            long_lines.append((number, len(line)))
        entry = parse_line(line, parse) if line else None
        if entry is not None:
            entries.append(entry)
    size -= 1  # the final element carries no newline
    if long_lines and entries and is_session_header(entries[0]):
        warn_long_lines(path, long_lines)
    if not entries or not is_session_header(entries[0]):
        return [], last, max(size, 0)
    return entries, last, size


def read_session_entries(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The file's entries as JSON dicts, header first, as written (not migrated); nothing written.

    Raises `InvalidSessionError` for a folder, a FIFO or device, an empty file or one
    whose first JSON object is not a session header; ``OSError`` if the file cannot be read::

        entries = read_session_entries("session.jsonl")
        print(entries[0]["version"], len(entries) - 1)
    """
    name = os.fspath(path)
    try:
        entries, _, _ = read_entries(name)
    except IsADirectoryError:
        raise InvalidSessionError(f"{name} is a directory, not a session file") from None
    except OSError as error:
        if error.errno == errno.EINVAL:
            raise InvalidSessionError(f"{name} is not a regular file") from None
        raise
    if not entries:
        empty = os.path.getsize(name) == 0
        reason = "the file is empty" if empty else "its first JSON line is not a session header"
        raise InvalidSessionError(f"{name} is not a Pi session ({reason})")
    return entries


def read_all_entries(path: str | os.PathLike[str]) -> tuple[list[Any], bool]:
    """Every line Pi keeps, as Pi's ``loadEntriesFromFile`` reads them, for a rewrite: objects
    of any depth as dicts, other truthy JSON values as :class:`Opaque`. Returns them (header
    first; ``[]`` when the file is not a session) and whether the last line lacks its newline.
    Nothing is written.
    """
    entries: list[Any] = []
    last = b""
    with open_regular(path) as handle:
        for line in iter_file_lines(handle):
            last = line
            if not line:
                continue
            try:
                value = loads_deep(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                entries.append(value)
            elif js_truthy(value):  # Pi skips the falsy ones (0, false, null, "")
                entries.append(Opaque(value))
    if not entries or not is_session_header(entries[0]):
        return [], False
    return entries, last != b""


def load_entries_from_file(
    path: str | os.PathLike[str],
    *,
    lock_timeout: float | None = None,
    on_lock_wait: Callable[[str], None] | None = None,
) -> list[WireEntry]:
    """Pi's ``loadEntriesFromFile``: parse a session file, repairing a missing final newline::

        entries = load_entries_from_file("session.jsonl")  # header first; [] if not a session

    A missing file or a file that is not a session gives ``[]`` and is left untouched. The
    repair is made under the session lock (``lock_timeout``, ``on_lock_wait`` as for
    :meth:`SessionManager.open`); a symbolic link or a file that cannot be written is not
    repaired, and :class:`SessionNotWrittenWarning` says so (the entries are returned all the same).
    """
    if not os.path.exists(path):
        return []
    try:
        entries, needs_newline, _ = read_entries(path)
    except OSError as error:
        if error.errno in (errno.EINVAL, errno.EISDIR):  # a FIFO, device or folder: not a session
            return []
        raise
    if entries and needs_newline:
        append_newline(path, lock_timeout=lock_timeout, on_lock_wait=on_lock_wait)
    return entries


def load_all_entries_from_file(
    path: str | os.PathLike[str],
    *,
    lock_timeout: float | None = None,
    on_lock_wait: Callable[[str], None] | None = None,
) -> list[Any]:
    """:func:`load_entries_from_file` keeping every line Pi keeps (see :func:`read_all_entries`),
    for a copy of the file (a fork)."""
    if not os.path.exists(path):
        return []
    try:
        entries, needs_newline = read_all_entries(path)
    except OSError as error:
        if error.errno in (errno.EINVAL, errno.EISDIR):
            return []
        raise
    if entries and needs_newline:
        append_newline(path, lock_timeout=lock_timeout, on_lock_wait=on_lock_wait)
    return entries


def append_newline(
    path: str | os.PathLike[str],
    *,
    lock_timeout: float | None = None,
    on_lock_wait: Callable[[str], None] | None = None,
) -> None:
    """Pi's newline repair (``appendFileSync(path, "\\n")``), made under the session lock,
    never through a symbolic link, and only if the file still ends without one."""
    path = os.fspath(path)
    if os.path.islink(path):
        warn_not_written(path, "the final newline", "it is a symbolic link, never written through")
        return
    try:
        from ._lock import session_lock  # start-up: only a repair takes the lock

        with session_lock(path).hold(lock_timeout, on_lock_wait):
            fd = os.open(path, os.O_RDWR | os.O_APPEND | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
            try:
                size = os.fstat(fd).st_size
                if size and os.pread(fd, 1, size - 1) != b"\n":
                    os.write(fd, b"\n")
            finally:
                os.close(fd)
    except OSError as error:
        if not unwritable(error):
            raise
        warn_not_written(path, "the final newline", str(error))


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def unwritable(error: OSError) -> bool:
    """Whether ``error`` says the file cannot (may not) be written: a symbolic link, no
    permission, a read-only file system."""
    refused = isinstance(error, (SymlinkRefusedError, PermissionError))
    return refused or error.errno in (errno.EROFS, errno.ELOOP)


def warn_long_lines(
    path: str, lines: list[tuple[int, int]], *, at_bytes: bool = False, listed: bool = False
) -> None:
    """Say, as a :class:`LineTooLongWarning`, which lines (number, or with ``at_bytes`` byte
    offset; length) of ``path`` were longer than :data:`MAX_LINE_BYTES` and skipped; ``listed``:
    by the catalog, which lists the session without them."""
    frame = sys._getframe(0)
    level = 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
        level += 1
    which = ", ".join(
        f"the line at byte {number:,} ({size:,} bytes)" if at_bytes else f"line {number} ({size:,} bytes)"
        for number, size in lines[:3]
    )
    pi = "Pi's session list fails on it" if listed else "Pi cannot read the file either"
    warnings.warn(
        f"{path}: {which}{', ...' if len(lines) > 3 else ''} longer than pisession reads "
        f"({MAX_LINE_BYTES >> 20} MiB): skipped like a malformed line ({pi})",
        LineTooLongWarning,
        stacklevel=level,
    )


def warn_not_written(path: str, what: str, reason: str) -> None:
    """Say, as a :class:`SessionNotWrittenWarning` pointing at the caller's code, that a write
    opening ``path`` needed was not made."""
    frame = sys._getframe(0)
    level = 1
    while frame.f_back is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame = frame.f_back
        level += 1
    warnings.warn(
        f"{path}: {what} was not written ({reason}); the session is read as Pi would have it, "
        "and the file is left as it was",
        SessionNotWrittenWarning,
        stacklevel=level,
    )


def migrate_session_entries(entries: list[Any], *, new_id: Callable[[], str] | None = None) -> bool:
    """Bring entries to the current version in place, as Pi does; True if anything changed.

    ``entries`` may hold :class:`Opaque` lines besides the dicts: v1→v2 gives an array an id
    (never written, but the next entry's ``parentId``) and, as Pi's strict-mode code does,
    fails on a number, string or ``true`` (``InvalidSessionError`` here).

    Mirrors the reference step by step, including its quirks: every ``session`` entry gets the
    new version, ids assigned during v1→v2 are not collision-checked against each other, and
    ``firstKeptEntryIndex`` resolves against the list as it is being rewritten.
    """
    header = next((e for e in entries if e.get("type") == "session"), None)  # Opaque: no type
    raw_version = header.get("version") if header is not None else None
    version = js_to_number(1 if raw_version is None else raw_version)
    if version >= CURRENT_SESSION_VERSION:
        return False
    if version < 2:
        import secrets  # start-up: only a version 1 file needs it

        _migrate_v1_to_v2(entries, new_id or (lambda: secrets.token_hex(4)))
    if version < 3:
        _migrate_v2_to_v3(entries)
    return True


def _migrate_v1_to_v2(entries: list[Any], new_id: Callable[[], str]) -> None:
    previous_id: str | None = None
    for entry in entries:
        if entry.get("type") == "session":
            entry["version"] = 2
            continue
        if isinstance(entry, Opaque):
            if not isinstance(entry.value, list):
                raise InvalidSessionError(
                    f"Cannot migrate a version 1 session holding a line that is a "
                    f"{type(entry.value).__name__}, not an object: {entry.value!r:.40} "
                    "(Pi cannot open it either)"
                )
            entry.id = previous_id = new_id()
            continue
        entry["id"] = new_id()
        entry["parentId"] = previous_id
        previous_id = entry["id"]
        if entry.get("type") == "compaction":
            index = entry.get("firstKeptEntryIndex")
            if isinstance(index, (int, float)) and not isinstance(index, bool):
                target = _js_array_get(entries, index)
                if isinstance(target, Opaque):
                    if target.id is MISSING:
                        entry.pop("firstKeptEntryId", None)
                    else:
                        entry["firstKeptEntryId"] = target.id
                elif target is not None and target.get("type") != "session":
                    if "id" in target:
                        entry["firstKeptEntryId"] = target["id"]
                    else:  # a later entry has no id yet: JS assigns undefined, which JSON omits
                        entry.pop("firstKeptEntryId", None)
                del entry["firstKeptEntryIndex"]


def _js_array_get(entries: list[Any], index: float) -> Any:
    if index != index or index < 0 or index != int(index) or index >= len(entries):
        return None
    return entries[int(index)]


def _migrate_v2_to_v3(entries: Iterable[Any]) -> None:
    for entry in entries:
        kind = entry.get("type")
        if kind == "session":
            entry["version"] = 3
        elif kind == "message":
            message = entry.get("message")
            if isinstance(message, dict) and message.get("role") == "hookMessage":
                message["role"] = "custom"
