"""What a :class:`~pisession.SessionManager` holds, and how a file becomes it (SPEC §7).

``SessionState`` is the bottom of the manager's three rooms: its state (the header, the
immutable index, the leaf, the file, the locks it holds) and the loading of a file into that
state: repair, migration, a low-memory load, a read-only open. ``SessionReader`` (``_reading``)
reads the state, ``SessionWriter`` (``_writer``) changes it safely across processes, and
``SessionManager`` (``_manager``) is Pi's API over both.
"""

from __future__ import annotations

import _thread  # threading's RLock, without importing threading (start-up)
import builtins
import contextlib
import errno
import os
from collections.abc import Callable, Iterable, Mapping

from ._context import project_leaf
from ._delivery import Delivery
from ._errors import InvalidSessionError, PisessionError, SessionClosedError, UnwritableEntryError
from ._index import TreeIndex
from ._js import MISSING, bulk, iso_from_ms, js_to_number
from ._json import dumps
from ._load import (
    CURRENT_SESSION_VERSION,
    Opaque,
    migrate_session_entries,
    parse_line,
    parse_raw,
    read_all_entries,
    read_entries_from,
    unwritable,
    warn_not_written,
)
from ._paths import normalize_path, resolve_path, session_file_name
from ._store import ReadOnlySessionFile, SessionFile, make_private_dirs
from ._values import UNSET

# typing for type checkers only (they take TYPE_CHECKING for true): importing it at run time
# took 8 % of `pisession tree`'s start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from typing_extensions import Self

    from ._ids import Clock, IdSource
    from ._load import Record
    from ._lock import SessionLock  # imported by the session file that takes it (_store)

    WireEntry = dict[str, Any]
    _WireEntries = list[WireEntry]

__all__ = ["SessionState"]


class SessionState:
    """A session's state and its loading; the base of :class:`~pisession.SessionManager`."""

    def __init__(
        self,
        cwd: str,
        session_dir: str,
        session_file: str | None,
        persist: bool,
        *,
        new_session: Mapping[str, Any] | None = None,
        preloaded: _WireEntries | None = None,
        clock: Clock | None = None,
        ids: IdSource | None = None,
        lock_timeout: float | None = None,
        on_lock_wait: Callable[[str], None] | None = None,
        low_memory: bool = False,
    ) -> None:
        """Use the constructors (:meth:`create`, :meth:`open`, :meth:`in_memory`, ...) instead."""
        self._low_memory = low_memory
        # The default clock and id source are made when first used (`_clock`, `_ids`): reading a
        # session needs neither, nor the protocols and registry of _ids (start-up).
        self._clock_given = clock
        self._ids_given = ids
        self._mutex = _thread.RLock()
        self._lock_timeout = lock_timeout
        self._on_lock_wait = on_lock_wait
        self._closed = False
        # Why the file cannot be written (opening it needed a write that could not be made).
        self._read_only: str | None = None
        self._cwd = resolve_path(cwd)
        self._session_dir = normalize_path(session_dir) if session_dir else ""
        self._persist = persist
        self._file: SessionFile | None = None
        self._session_file: str | None = None
        self._read_from: str | None = None  # the file read_session read (errors name it)
        self._header: WireEntry = {}
        self._index = TreeIndex()
        self._leaf_id: Any = None
        self._flushed = False
        self._has_conversation = False
        self._batch_depth = 0
        # The locks of the _writing() holdings this thread is inside, innermost last; each was
        # taken, and its file read, when the holding began.
        self._held: list[SessionLock | None] = []
        self._unconfirmed_since: tuple[TreeIndex, Any, bool] | None = None
        self._delivery = Delivery()  # others' entries refresh() and follow() have not handed over
        if persist and self._session_dir and not os.path.exists(self._session_dir):
            make_private_dirs(self._session_dir)
        if session_file:
            self._set_session_file(session_file)
        elif preloaded:
            self._load_preloaded(preloaded, new_session)
        else:
            self._new_session(new_session)

    # loading ----------------------------------------------------------------------------------

    @classmethod
    def _read_low_memory(cls, path: str) -> Self | None:
        """``read_session(path, low_memory=True)``: an in-memory manager whose entries' lines
        stay in the file, which is never written; None when the file is not a version-3
        session (``read_session`` then reads it in full, raising what it raises)."""
        from ._bodies import BodyLines

        file = ReadOnlySessionFile(path)
        try:
            header, records, _ = file.load_low_memory()
        except (OSError, InvalidSessionError):
            return None
        if header is None or _version(header) < CURRENT_SESSION_VERSION:
            if file.bodies is not None:
                file.bodies.release()
            return None
        cwd = header.get("cwd")
        manager = cls(cwd if isinstance(cwd, str) and cwd else os.getcwd(), "", None, False, low_memory=True)
        manager._header = header
        body = records.without_sessions() if isinstance(records, BodyLines) else records
        manager._index = TreeIndex.from_records(body, file.bodies)
        manager._after_index()
        project_leaf(manager._index, manager._index.resolve_leaf(manager._leaf_id))
        manager._follow_read_only(file, path)
        return manager

    @classmethod
    def _read_view(cls, path: str, *, allow_empty: bool = False) -> Self:
        """``read_session(path)``: an in-memory manager holding the file's entries (an old
        version migrated in memory), following the file read-only from where it read it.

        Read as ``read_session_entries`` reads (a small file with the json module alone: the
        reading commands start fast), from one descriptor whose file is the one followed."""
        file = ReadOnlySessionFile(path)
        try:
            fd, info = file._open_regular()
        except IsADirectoryError:
            raise InvalidSessionError(f"{path} is a directory, not a session file") from None
        except OSError as error:
            if error.errno == errno.EINVAL:
                raise InvalidSessionError(f"{path} is not a regular file") from None
            raise
        with os.fdopen(fd, "rb") as handle:
            entries, tail, size = read_entries_from(handle, path)
        if not entries:
            # Pi creating the file: empty for an instant, or its header line not yet whole.
            arriving = size == 0 or (b"\n" not in _read_start(path, size) if size < 1 << 20 else False)
            if not (allow_empty and arriving):
                reason = "the file is empty" if size == 0 else "its first JSON line is not a session header"
                raise InvalidSessionError(f"{path} is not a Pi session ({reason})")
            manager = cls(os.getcwd(), "", None, False)
            manager._header = {}  # taken from the file when it arrives (see _reload)
            manager._index = TreeIndex()
            manager._after_index()
            manager._follow_read_only(file, path)
            return manager
        header = entries[0]
        # The header is the last line and has no newline: it is the tail, read once.
        header_line = tail if len(entries) == 1 and tail and parse_line(tail) == header else b""
        file._loaded((info.st_dev, info.st_ino), header, header_line, size, tail)
        cwd = header.get("cwd")
        cwd = cwd if isinstance(cwd, str) and cwd else os.getcwd()
        manager = cls(cwd, "", None, False, preloaded=entries)
        manager._follow_read_only(file, path)
        return manager

    def _follow_read_only(self, file: ReadOnlySessionFile, path: str) -> None:
        """Read what others append to ``file`` (refresh, follow), never writing it; appends
        stay in memory."""
        self._file = file
        self._flushed = True  # what this manager holds is in the file: read on from there
        self._read_from = os.path.abspath(path)  # errors name the file, not "an in-memory session"

    def _leave_file(self) -> None:
        """Before another file becomes the session's: lines a batch wrote into this one since
        the path was last checked reach the file now at its path if it was replaced."""
        if self._file is not None:
            with contextlib.suppress(PisessionError):  # gone: nothing left to add them to
                self._file.confirm()

    def _set_session_file(self, path: str) -> None:
        self._leave_file()
        self._read_only = None
        self._session_file = resolve_path(path)
        self._file = SessionFile(self._session_file)
        if os.path.exists(self._session_file):
            with bulk():
                self._load_file(locked=False)
        else:
            self._new_session(None)
            self._session_file = resolve_path(path)
            self._file = SessionFile(self._session_file)

    def _load_file(self, *, locked: bool) -> None:
        assert self._file is not None
        try:
            header, records, needs_newline = self._load()
        except IsADirectoryError as error:
            raise InvalidSessionError(f"Session path is a directory: {self._file.path}") from error
        needs_write = (
            needs_newline
            or (header is None and os.path.getsize(self._file.path) == 0)
            or (header is not None and _version(header) < CURRENT_SESSION_VERSION)
        )
        if needs_write and not locked:
            # Opening writes only to repair, migrate or initialise; only then is the lock taken
            # (and the file read again under it), so reading a session leaves no trace.
            try:
                with self._file.lock.hold(self._lock_timeout, self._on_lock_wait):
                    self._load_file(locked=True)
            except OSError as error:
                if not unwritable(error):
                    raise
                self._open_read_only(header, records, error)
            except UnwritableEntryError as error:  # Pi fails to open it; pisession reads it
                self._open_read_only(header, records, error)
            return
        if header is None:
            if os.path.getsize(self._file.path) > 0:
                raise InvalidSessionError(f"Session file is not a valid pi session: {self._file.path}")
            path = self._file.path
            self._new_session(None)
            self._session_file = path
            self._file = SessionFile(path)
            self._file.rewrite([_line(self._header)])
            self._flushed = True
            return
        if needs_newline:
            if self._file.size > self._file.offset:
                # An unfinished last line still growing is another writer's line arriving:
                # wait for its end rather than put a newline into it (Pi's loader would).
                records = [*records, *(self._file.read_new(settle=True) or ())]
            if self._file.has_partial_line:
                self._file.append_newline()
                self._file.offset = self._file.size
        self._adopt_records(header, records, rewrite=True)
        if self._low_memory and self._index.bodies is None and self._file.bodies is not None:
            # Migrated: the rewritten file is the one to keep open (and to read lines from).
            header, records, _ = self._load()
            if header is not None:
                self._adopt_records(header, records, rewrite=False)
        self._flushed = True
        # Entry bodies are parsed lazily; the ones the current context needs are parsed now,
        # while the file is hot, so the first build_session_context() costs nothing more.
        project_leaf(self._index, self._index.resolve_leaf(self._leaf_id))

    def _load(self) -> tuple[WireEntry | None, Iterable[Record], bool]:
        assert self._file is not None
        return self._file.load_low_memory() if self._low_memory else self._file.load()

    def _open_read_only(
        self, header: WireEntry | None, records: Iterable[Record], error: OSError | UnwritableEntryError
    ) -> None:
        """Pi would have written the file on opening it; pisession cannot (or, through a symbolic
        link, will not): hold what Pi would hold in memory, write nothing, ever, and say so."""
        path = self._file.path if self._file is not None else ""
        if header is None:
            what = "the header of the empty file"
            self._new_session(None)
            self._session_file = path
            self._file = SessionFile(path)
        else:
            old = _version(header) < CURRENT_SESSION_VERSION
            what = f"the migration to version {CURRENT_SESSION_VERSION}" if old else "the final newline"
            self._adopt_records(header, records, rewrite=False)
            self._flushed = True
        reason = "it is a symbolic link, never written through" if os.path.islink(path) else str(error)
        self._read_only = f"{what} could not be written when it was opened ({reason})"
        warn_not_written(path, what, reason)

    def _load_preloaded(self, entries: _WireEntries, options: Mapping[str, Any] | None) -> None:
        header = next((e for e in entries if e.get("type") == "session"), None)
        if header is None:
            self._new_session(options)
            self._reindex([self._header, *entries])
        else:
            self._adopt(entries, rewrite=False)

    def _adopt_records(self, header: WireEntry, records: Iterable[Record], *, rewrite: bool) -> None:
        """Take a scanned file as the session's content; old versions are migrated first."""
        if _version(header) >= CURRENT_SESSION_VERSION:
            self._header = header
            body = (
                records.without_sessions()  # a ScannedLines, or a low-memory load's BodyLines
                if hasattr(records, "without_sessions")
                else (r for r in records if r[0].type != "session")
            )
            bodies = self._file.bodies if self._file is not None else None
            self._index = TreeIndex.from_records(body, bodies)
            self._after_index()
            return
        if hasattr(records, "with_lines"):  # low-memory, migrated in memory: the lines are read in
            records = records.with_lines()
        entries: builtins.list[Any] = []
        if rewrite and self._persist and self._file is not None:
            # The rewrite keeps every line Pi keeps, also those the index leaves out (JSON that
            # is not an object, nesting deeper than the line scanner reads): re-read them all.
            entries, _ = read_all_entries(self._file.path)
        if not entries:
            entries = [header]
            for _, raw, entry in records:  # (a low-memory file's come with their lines: above)
                line = raw if isinstance(raw, bytes) else b""
                entries.append(entry if entry is not None else parse_raw(line) or {})
        self._adopt(entries, rewrite=rewrite)

    def _adopt(self, entries: builtins.list[Any], *, rewrite: bool) -> None:
        """Take ``entries`` (header first) as the session's content, migrating them first."""
        # Pi draws these ids against an empty set: no collision check among them.
        migrated = migrate_session_entries(entries, new_id=lambda: self._ids.entry_id(()))
        if migrated and rewrite and self._persist and self._file is not None:
            self._file.rewrite(_line(e) for e in entries)
        self._reindex(entries)

    def _reindex(self, entries: builtins.list[Any]) -> None:
        body = [e for e in entries if type(e) is not Opaque and e.get("type") != "session"]
        header = next((e for e in entries if e.get("type") == "session"), None)
        if header is not None:
            self._header = header
        self._index = TreeIndex.from_entries(body)
        self._after_index()

    def _after_index(self) -> None:
        index = self._index
        last = index.last_position()
        # An id-less last entry leaves the leaf undefined (MISSING): Pi then builds the context
        # of the last entry, while get_leaf_id() reports None.
        self._leaf_id = None if last is None else index.id_at(last)
        self._has_conversation = index.has_conversation()
        self._delivery.reset(len(index))

    @property
    def _clock(self) -> Clock:
        clock = self._clock_given
        if clock is None:
            from ._ids import SystemClock

            clock = self._clock_given = SystemClock()
        return clock

    @property
    def _ids(self) -> IdSource:
        ids = self._ids_given
        if ids is None:
            from ._ids import RandomIds

            ids = self._ids_given = RandomIds()
        return ids

    def _new_session(self, options: Mapping[str, Any] | None) -> None:
        session_id = options.get("id") if options else None
        if session_id is not None:
            from ._ids import assert_valid_session_id

            assert_valid_session_id(session_id)
        else:
            session_id = self._ids.session_id(self._clock.now_ms())
        timestamp = iso_from_ms(self._clock.now_ms())
        header: WireEntry = {
            "type": "session",
            "version": CURRENT_SESSION_VERSION,
            "id": session_id,
            "timestamp": timestamp,
            "cwd": self._cwd,
        }
        parent = options.get("parentSession", MISSING) if options else MISSING
        if parent is not MISSING and parent is not UNSET:
            header["parentSession"] = parent
        self._header = header
        self._index = TreeIndex()
        self._delivery.reset(0)
        self._leaf_id = None
        self._flushed = False
        self._has_conversation = False
        if self._persist:
            self._leave_file()
            self._read_only = None
            self._session_file = os.path.join(self._session_dir, session_file_name(timestamp, session_id))
            self._file = SessionFile(self._session_file)

    # where and whether ------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:  # reading on would reopen the file close() let go of
            raise SessionClosedError(f"Session manager was closed: {self._session_file or 'in memory'}")

    def _where(self) -> str:
        """The session, as an error message names it."""
        return self._session_file or self._read_from or "an in-memory session"


def _version(header: Mapping[str, Any]) -> float:
    """The header's version as Pi compares it (``header.version ?? 1``, JS number coercion)."""
    version = header.get("version")
    return js_to_number(1 if version is None else version)


def _line(entry: Mapping[str, Any] | Opaque) -> bytes:
    value = entry.value if type(entry) is Opaque else entry
    try:
        text = dumps(value)
    except ValueError as error:  # deeper than any writer goes (or circular): JSON.stringify fails too
        name = value.get("id") if isinstance(value, Mapping) else None
        what = f"entry {name}" if isinstance(name, str) else "an entry"
        raise UnwritableEntryError(
            f"{what} cannot be written as JSON: it is nested deeper than 10,000 levels or holds "
            "itself (Pi 1.6.0 fails on it too: Maximum call stack size exceeded)"
        ) from error
    return (text + "\n").encode("utf-8", "surrogatepass")


def _session_options(session_id: str | None, parent_session: str | None) -> dict[str, Any]:
    options: dict[str, Any] = {}
    if session_id is not None:
        options["id"] = session_id
    if parent_session is not None:
        options["parentSession"] = parent_session
    return options


def _read_start(path: str, size: int) -> bytes:
    with open(path, "rb") as handle:
        return handle.read(size)
