"""``SessionManager``: Pi's session operations, in Python, safe across processes (SPEC §7–8).

The manager only orchestrates: the index (``_index``) holds the tree, the context builder
(``_context``) derives what the model sees, the store (``_store``) owns the file. Internally
everything is a wire dict, exactly what a line of the file holds; the public methods hand out
typed models (``_model``) and accept either form.
"""

from __future__ import annotations

import _thread  # threading's RLock, without importing threading (start-up)
import builtins
import contextlib
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

from ._context import WireProjection, context_positions, current_system_message, project_leaf
from ._delivery import Delivery
from ._errors import (
    EntryNotFoundError,
    InvalidContextEditError,
    InvalidSessionError,
    PisessionError,
    SessionClosedError,
    SessionReadOnlyError,
    SessionReplacedError,
    UnwritableEntryError,
)
from ._index import TreeIndex
from ._js import MISSING, bulk, hashable, iso_from_ms, js_date_ms, js_to_number, js_trim, js_truthy
from ._json import dumps, dumps_bytes
from ._load import (
    CURRENT_SESSION_VERSION,
    Opaque,
    load_all_entries_from_file,
    migrate_session_entries,
    parse_raw,
    read_all_entries,
    unwritable,
    warn_not_written,
)
from ._paths import (
    HeaderScanLimitError,
    default_session_dir_path,
    find_most_recent_session,
    first_session_header,
    get_default_session_dir,
    header_cwd,
    normalize_path,
    paths_equal,
    read_session_header,
    resolve_path,
    session_file_name,
)
from ._results import EntryList, TreeNode
from ._store import SessionFile, make_private_dirs
from ._values import UNSET

# typing for type checkers only (they take TYPE_CHECKING for true): importing it at run time
# took 8 % of `pisession tree`'s start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeVar, overload

    from ._load import Record
    from ._results import TreeShape

    WireEntry = dict[str, Any]
    _WireEntries = list[WireEntry]
    _Records = list[Record]

# The model classes, the codec and the typed context results are imported where they are used:
# reading a session and walking its tree (`pisession tree`) never creates a model object, and
# importing attrs and creating the model classes took longer than the rest of that command.
if TYPE_CHECKING:
    from ._model import (
        CompactionEntry,
        ContextEditReplacement,
        CustomEntry,
        Entry,
        Message,
        SessionContext,
        SessionHeader,
        Unset,
        Usage,
        UsageEntry,
        UserContent,
    )
    from ._projection import SessionProjection

    # Under TYPE_CHECKING: a bound named by a string compiles code, the first compile of a
    # process (more than a millisecond of `pisession tree`).
    EntryT = TypeVar("EntryT", bound=Entry)

if TYPE_CHECKING:
    import threading

    from ._discovery import SessionInfo
    from ._ids import Clock, IdSource
    from ._lock import SessionLock  # imported by the session file that takes it (_store)
    from .compaction._check import CompactionCheck
    from .compaction._cut import CompactionPreparation
    from .compaction._flows import Navigation, Summarizer
    from .compaction._tokens import CompactionSettings

if TYPE_CHECKING:
    from .catalog import Catalog

if TYPE_CHECKING:
    from ._discovery import SessionInfo  # list() and list_all() import _discovery when called

__all__ = ["SessionManager"]

_EDITABLE_ROLES = ("user", "assistant", "toolResult")


def _wire(value: Any) -> Any:
    """A model object as plain JSON values; dicts and lists are taken as they are (a model
    object nested inside one is converted when the entry is serialised)."""
    if value is UNSET:
        return MISSING
    t = type(value)
    if t is dict or t is list or t is str or t is int or t is float or t is bool or value is None:
        return value
    from ._codec import to_wire

    return to_wire(value)


def _put(entry: WireEntry, key: str, value: Any) -> None:
    """Set a field unless it is undefined (left out by the caller), as JSON.stringify drops it."""
    if value is not UNSET and value is not MISSING:
        entry[key] = _wire(value)


def _is_conversation(entry: Mapping[str, Any]) -> bool:
    message = entry.get("message")
    return (
        entry.get("type") == "message"
        and isinstance(message, dict)
        and message.get("role") in ("user", "assistant")
    )


class SessionManager:
    """A Pi session: an append-only tree of entries in a JSONL file (or only in memory).

    Open an existing session and read what the model sees::

        manager = SessionManager.open("~/.pi/agent/sessions/--work--/2024-..._0193....jsonl")
        context = manager.build_session_context()
        for message in context.messages:
            print(message.role)

    Every write holds the session's lock file and first reads what other writers appended, so
    several processes can append to one session. Read methods work on an immutable snapshot
    (:meth:`snapshot`) and can be called from any thread.

    Every constructor takes ``lock_timeout``, the seconds a write waits for the lock before
    :class:`LockTimeout` (None, the default, waits as long as another writer holds it: its
    batches are short, and an entry given up on would be lost to the caller), and
    ``on_lock_wait``, called once with a description of the holder ("process 4242 (pi ...)")
    after a second of waiting::

        manager = SessionManager.open(path, lock_timeout=10.0, on_lock_wait=print)

    The constructors that read a file (:meth:`open`, :meth:`continue_recent`,
    :meth:`fork_from`) take ``low_memory``: True keeps the file open and leaves each entry's
    line in it until the entry is read (0.45-0.75 × the file's size held after an open, where
    the default holds 1.6-1.9 ×). A line that the file no longer holds as it was when it was
    opened (the file truncated or rewritten in place) raises :class:`SessionChangedError` when
    it is read::

        manager = SessionManager.open(path, low_memory=True)

    See "Low-memory mode" in the reliability docs for what it trades.
    """

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

    # ------------------------------------------------------------------ constructors

    @classmethod
    def create(
        cls,
        cwd: str | os.PathLike[str],
        session_dir: str | os.PathLike[str] | None = None,
        *,
        id: str | None = None,
        parent_session: str | None = None,
        clock: Clock | None = None,
        ids: IdSource | None = None,
        lock_timeout: float | None = None,
        on_lock_wait: Callable[[str], None] | None = None,
    ) -> SessionManager:
        """A new session, written to ``session_dir`` (default: Pi's folder for ``cwd``) once it holds
        a user or assistant message::

            manager = SessionManager.create("/work/project")
            manager.append_message({"role": "user", "content": "hi", "timestamp": 1733234400000})

        :param cwd: the project's working folder: written in the header, and it picks Pi's default session
            folder.
        :param session_dir: the folder to write the session file in (default: Pi's folder for ``cwd``,
            ``~/.pi/agent/sessions/--<cwd>--``).
        :param id: the session id (default: a new one); checked against Pi's pattern before any folder is
            made.
        :param parent_session: the path written as the header's ``parentSession`` (the session this one came
            from).
        :param clock: where timestamps come from (default: the system clock; tests pass a fixed one).
        :param ids: where entry and session ids come from (default: random ones, as Pi makes them).
        :param lock_timeout: seconds a write waits for another writer's session lock before
            :class:`LockTimeout`; None waits as long as it is held.
        :param on_lock_wait: called once with a message naming the holder when a write has waited a second for
            the lock.
        """
        if id is not None:
            from ._ids import assert_valid_session_id

            assert_valid_session_id(id)  # before any folder is made or path formed
        directory = normalize_path(os.fspath(session_dir)) if session_dir else get_default_session_dir(cwd)
        options = _session_options(id, parent_session)
        return cls(
            os.fspath(cwd),
            directory,
            None,
            True,
            new_session=options,
            clock=clock,
            ids=ids,
            lock_timeout=lock_timeout,
            on_lock_wait=on_lock_wait,
        )

    @classmethod
    def open(
        cls,
        path: str | os.PathLike[str],
        session_dir: str | os.PathLike[str] | None = None,
        cwd_override: str | None = None,
        *,
        clock: Clock | None = None,
        ids: IdSource | None = None,
        lock_timeout: float | None = None,
        on_lock_wait: Callable[[str], None] | None = None,
        low_memory: bool = False,
    ) -> SessionManager:
        """Open a session file, migrating it if it is old (the file is then rewritten, as Pi does)::

            manager = SessionManager.open("session.jsonl")
            big = SessionManager.open("big.jsonl", low_memory=True)

        A missing file gives a new session that will be written to ``path``; an empty file gets a
        fresh header; a file that is not a session raises :class:`InvalidSessionError` and is left
        untouched.

        ``low_memory=True`` leaves each entry's line in the file until the entry is first read
        (the file stays open: one descriptor, shared by this manager and its snapshots, closed
        when the last of them is gone or by :meth:`close`); a line the file no longer holds as
        it was raises :class:`SessionChangedError` when read. The default holds every line.

        :param path: the session file (a missing one becomes a new session written there).
        :param session_dir: the folder for sessions this manager starts later (:meth:`new_session`,
            :meth:`create_branched_session`); default: the file's folder.
        :param cwd_override: the working folder to use instead of the one in the file's header.
        :param clock: where timestamps come from (default: the system clock; tests pass a fixed one).
        :param ids: where entry and session ids come from (default: random ones, as Pi makes them).
        :param lock_timeout: seconds a write waits for another writer's session lock before
            :class:`LockTimeout`; None waits as long as it is held.
        :param on_lock_wait: called once with a message naming the holder when a write has waited a second for
            the lock.
        :param low_memory: leave each entry's line in the file until it is first read (above).
        """
        resolved = resolve_path(os.fspath(path))
        if os.path.isdir(resolved):
            raise InvalidSessionError(f"Session path is a directory: {resolved}")
        header: dict[str, Any] | None = None
        if cwd_override is None and os.path.exists(resolved):
            try:
                header = read_session_header(resolved)
            except OSError as error:
                raise InvalidSessionError(f"Cannot read session file {resolved}: {error}") from error
            except HeaderScanLimitError:
                # As in Pi, the bounded scan only saves time: past it, the whole file decides.
                header = first_session_header(resolved)
            except Exception:
                header = None  # the full load below is authoritative
        cwd = cwd_override if cwd_override is not None else (header_cwd(header) if header else None)
        directory = normalize_path(os.fspath(session_dir)) if session_dir else os.path.dirname(resolved)
        return cls(
            cwd or os.getcwd(),
            directory,
            resolved,
            True,
            clock=clock,
            ids=ids,
            lock_timeout=lock_timeout,
            on_lock_wait=on_lock_wait,
            low_memory=low_memory,
        )

    @classmethod
    def in_memory(
        cls,
        cwd: str | os.PathLike[str] | None = None,
        *,
        id: str | None = None,
        parent_session: str | None = None,
        entries: Sequence[Any] | None = None,
        clock: Clock | None = None,
        ids: IdSource | None = None,
        lock_timeout: float | None = None,
        on_lock_wait: Callable[[str], None] | None = None,
    ) -> SessionManager:
        """A session that is never written to disk, optionally built from ``entries``
        (wire dicts or models, a header among them or not)::

            manager = SessionManager.in_memory("/work/project")
        """
        preloaded = [dict(_wire(e)) for e in entries] if entries else None
        options = _session_options(id, parent_session)
        return cls(
            os.fspath(cwd) if cwd is not None else os.getcwd(),
            "",
            None,
            False,
            new_session=options,
            preloaded=preloaded,
            clock=clock,
            ids=ids,
            lock_timeout=lock_timeout,
            on_lock_wait=on_lock_wait,
        )

    @classmethod
    def continue_recent(
        cls,
        cwd: str | os.PathLike[str],
        session_dir: str | os.PathLike[str] | None = None,
        *,
        clock: Clock | None = None,
        ids: IdSource | None = None,
        lock_timeout: float | None = None,
        on_lock_wait: Callable[[str], None] | None = None,
        low_memory: bool = False,
    ) -> SessionManager:
        """The most recently modified session of ``cwd``, or a new one when there is none::

            manager = SessionManager.continue_recent("/work/project", low_memory=True)

        ``low_memory``: as for :meth:`open`.

        :param cwd: the project whose most recently modified session is continued (or started).
        :param session_dir: the folder to look in (default: Pi's folder for ``cwd``); in any other folder only
            sessions whose header names ``cwd`` count.
        :param clock: where timestamps come from (default: the system clock; tests pass a fixed one).
        :param ids: where entry and session ids come from (default: random ones, as Pi makes them).
        :param lock_timeout: seconds a write waits for another writer's session lock before
            :class:`LockTimeout`; None waits as long as it is held.
        :param on_lock_wait: called once with a message naming the holder when a write has waited a second for
            the lock.
        :param low_memory: leave each entry's line in the file until it is first read (see :meth:`open`).
        """
        directory = normalize_path(os.fspath(session_dir)) if session_dir else get_default_session_dir(cwd)
        filter_cwd = session_dir is not None and not paths_equal(directory, default_session_dir_path(cwd))
        recent = find_most_recent_session(directory, os.fspath(cwd) if filter_cwd else None)
        return cls(
            os.fspath(cwd),
            directory,
            recent,
            True,
            clock=clock,
            ids=ids,
            lock_timeout=lock_timeout,
            on_lock_wait=on_lock_wait,
            low_memory=low_memory,
        )

    @classmethod
    def fork_from(
        cls,
        source_path: str | os.PathLike[str],
        target_cwd: str | os.PathLike[str],
        session_dir: str | os.PathLike[str] | None = None,
        *,
        id: str | None = None,
        clock: Clock | None = None,
        ids: IdSource | None = None,
        lock_timeout: float | None = None,
        on_lock_wait: Callable[[str], None] | None = None,
        low_memory: bool = False,
    ) -> SessionManager:
        """Copy a session (every entry) into a new session of ``target_cwd`` whose header's
        ``parentSession`` names the source::

            manager = SessionManager.fork_from("old.jsonl", "/work/other", low_memory=True)

        ``low_memory``: as for :meth:`open` (the copy is made line by line either way, and the
        new file is the one kept open).

        :param source_path: the session file to copy (every line Pi copies).
        :param target_cwd: the working folder of the new session: written in its header, and it picks Pi's
            default session folder.
        :param session_dir: the folder to write the new session in (default: Pi's folder for ``target_cwd``).
        :param id: the new session's id (default: a new one); checked against Pi's pattern.
        :param clock: where timestamps come from (default: the system clock; tests pass a fixed one).
        :param ids: where entry and session ids come from (default: random ones, as Pi makes them).
        :param lock_timeout: seconds to wait for the source's and the new file's locks before
            :class:`LockTimeout`; None waits as long as they are held.
        :param on_lock_wait: called once with a message naming the holder when a write has waited a second for
            the lock.
        :param low_memory: leave each entry's line in the file until it is first read (see :meth:`open`).
        """
        from ._ids import RandomIds, SystemClock, assert_valid_session_id

        if id is not None:
            assert_valid_session_id(id)  # before any folder is made or path formed
        source = resolve_path(os.fspath(source_path))
        target = resolve_path(os.fspath(target_cwd))
        # every line Pi copies, unparsed ones too
        entries = load_all_entries_from_file(source, lock_timeout=lock_timeout, on_lock_wait=on_lock_wait)
        if not entries:
            raise InvalidSessionError(f"Cannot fork: source session file is empty or invalid: {source}")
        directory = normalize_path(os.fspath(session_dir)) if session_dir else get_default_session_dir(target)
        if not os.path.exists(directory):
            make_private_dirs(directory)
        if id is not None:
            assert_valid_session_id(id)
        clock = clock or SystemClock()
        ids = ids or RandomIds()
        session_id = id if id is not None else ids.session_id(clock.now_ms())
        timestamp = iso_from_ms(clock.now_ms())
        path = os.path.join(directory, session_file_name(timestamp, session_id))
        header = {
            "type": "session",
            "version": CURRENT_SESSION_VERSION,
            "id": session_id,
            "timestamp": timestamp,
            "cwd": target,
            "parentSession": source,
        }
        store = SessionFile(path)
        with store.lock.hold(lock_timeout, on_lock_wait):
            store.create(_line(e) for e in [header, *(e for e in entries if e.get("type") != "session")])
        store.close()
        return cls(
            target,
            directory,
            path,
            True,
            clock=clock,
            ids=ids,
            lock_timeout=lock_timeout,
            on_lock_wait=on_lock_wait,
            low_memory=low_memory,
        )

    @classmethod
    def _read_low_memory(cls, path: str) -> SessionManager | None:
        """``read_session(path, low_memory=True)``: an in-memory manager whose entries' lines
        stay in the file, which is never written; None when the file is not a version-3
        session (``read_session`` then reads it in full, raising what it raises)."""
        from ._bodies import BodyLines

        file = SessionFile(path)
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
        manager._read_from = os.path.abspath(path)
        return manager

    @staticmethod
    def find_by_id(cwd: str, session_id: str, session_dir: str | None = None) -> str | None:
        """Path of the session with exactly this id in ``cwd``'s session folder (headers only).

        :param cwd: the project to look in: it picks Pi's default session folder.
        :param session_id: the whole session id (not a prefix), compared with each header's ``id``.
        :param session_dir: the folder to look in instead; in any folder but Pi's for ``cwd`` only sessions
            whose header names ``cwd`` count.
        """
        from ._paths import find_by_id

        return find_by_id(cwd, session_id, session_dir)

    @staticmethod
    def list(
        cwd: str,
        session_dir: str | None = None,
        on_progress: Callable[[int, int], None] | None = None,
        *,
        catalog: Catalog | bool = False,
    ) -> builtins.list[SessionInfo]:
        """Sessions of ``cwd`` as :class:`SessionInfo`, newest first (Pi's session picker)::

            for info in SessionManager.list("/work/project"):
                print(info.path, info.name or info.first_message)

        ``catalog=True`` (the default :class:`~pisession.catalog.Catalog`) or ``catalog=Catalog(path)``
        reads only the files that changed since the last call; the rows are the same.

        :param cwd: the project whose sessions are listed: those in Pi's session folder for it.
        :param session_dir: the folder to list instead; in any folder but Pi's for ``cwd`` only sessions whose
            header names ``cwd`` are listed.
        :param on_progress: called as ``on_progress(done, total)`` while the files are read.
        :param catalog: False reads every file; True uses the default catalog; a
            :class:`~pisession.catalog.Catalog` uses that one.
        """
        if catalog is not False:
            from .catalog import with_catalog

            return with_catalog(catalog, lambda own: own.list(cwd, session_dir, on_progress))
        from ._discovery import list_sessions

        return list_sessions(cwd, session_dir, on_progress)

    @staticmethod
    def list_all(
        session_dir: str | None = None,
        on_progress: Callable[[int, int], None] | None = None,
        *,
        catalog: Catalog | bool = False,
    ) -> builtins.list[SessionInfo]:
        """Sessions of every project (or of one folder), newest first (``catalog``: as in :meth:`list`).

        :param session_dir: a folder of session files to list whole, or a root of project folders (one holding
            no session file of its own) to list project by project; default: Pi's sessions root.
        :param on_progress: called as ``on_progress(done, total)`` while the files are read.
        :param catalog: False reads every file; True uses the default catalog; a
            :class:`~pisession.catalog.Catalog` uses that one.
        """
        if catalog is not False:
            from .catalog import with_catalog

            return with_catalog(catalog, lambda own: own.list_all(session_dir, on_progress))
        from ._discovery import list_all_sessions

        return list_all_sessions(session_dir, on_progress)

    # ------------------------------------------------------------------ loading

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

    def new_session(self, *, id: str | None = None, parent_session: str | None = None) -> str | None:
        """Start a fresh, empty session in the same folder (Pi's ``newSession``); returns its
        file path (None in memory). The new file is written once it has a conversation."""
        with self._mutex:
            self._new_session(_session_options(id, parent_session))
            return self._session_file

    def set_session_file(self, path: str | os.PathLike[str]) -> None:
        """Switch this manager to another session file (Pi's ``setSessionFile``)."""
        with self._mutex:
            if self._closed:
                self._refuse_write()  # opening may write (repair, migration)
            self._set_session_file(os.fspath(path))

    # ------------------------------------------------------------------ following other writers

    def refresh(self, *, move_leaf: bool = False) -> builtins.list[Entry]:
        """Read entries other writers (Pi included) appended since this manager last looked.

        Returns them typed, in file order, each once: what :meth:`follow` handed over is not
        returned again, and what a follow read but did not hand over is. This manager's own
        appends are not returned (they already are in its snapshot). The leaf stays where it
        is unless ``move_leaf``. A file that was replaced or shrank is read again from the
        start; only the entries it holds that this manager had not seen are returned.
        """
        with self._mutex:
            self._check_open()
            self._sync()
            index, delivery = self._index, self._delivery
            entries = []
            while (entry := delivery.take(index, False)) is not None:
                entries.append(entry)
            if move_leaf and entries:
                self._leaf_id = entries[-1].id
            return entries

    def follow(
        self,
        poll_interval: float = 0.25,
        *,
        stop: threading.Event | None = None,
        notify: bool = True,
        include_own: bool = False,
    ) -> Iterator[Entry]:
        """Yield entries as other writers append them::

            for entry in manager.follow():
                if entry.type == "message":
                    print(entry.message.role)

        Wakes as soon as the file changes where inotify is available (Linux; ``notify=False``
        turns it off), otherwise looks every ``poll_interval`` seconds. Runs until ``stop`` is
        set (or forever): once it is set, the follow reads the file to its end, yields what
        was appended before, and ends. The leaf does not move; the watch is closed when the
        iteration ends.

        Each entry is handed over once, to this follow, a later one or :meth:`refresh`: leave
        the loop early (``break``, an exception) and what was not yielded yet comes next time.
        This manager's own appends (from another thread, or in the loop's body) are skipped
        unless ``include_own`` is true; then those made while it follows are yielded too.
        """
        import threading

        from . import _watch  # ctypes and select: only for a follower

        event = stop or threading.Event()
        path = self._session_file
        watcher = _watch.open_watcher(path) if notify and path else None
        token = object()
        if include_own:
            self._delivery.own_followers.append(token)
        try:
            drained = False
            while True:
                if not drained and event.is_set():
                    # Stopped: read to the end once, hand over what came before, then end.
                    drained = True
                    with self._mutex:
                        self._check_open()
                        self._sync()
                entry = self._next_entry(include_own, read=not drained)
                if entry is not None:
                    yield entry
                elif drained:
                    return
                elif watcher is None:
                    event.wait(poll_interval)
                else:
                    watcher.wait(event, _watch.NOTIFIED_POLL)
        finally:
            if include_own:
                self._delivery.own_followers.remove(token)
            if watcher is not None:
                watcher.close()

    def _next_entry(self, include_own: bool, *, read: bool) -> Entry | None:
        """The next undelivered entry, now delivered; with ``read``, the file is read for more
        when none is pending. One at a time, so a reader that stops takes no more than it got."""
        with self._mutex:
            self._check_open()
            delivery = self._delivery
            entry = delivery.take(self._index, include_own)
            if entry is None and read and self._sync():
                entry = delivery.take(self._index, include_own)
            return entry

    def _stage(self, limit: int, *, read: bool) -> bool:
        """For an asyncio follower: type up to ``limit`` undelivered entries (reading the file
        first with ``read``) for it to take on its own thread; True if any is waiting."""
        with self._mutex:
            self._check_open()
            if read:
                self._sync()
            return self._delivery.stage(self._index, limit)

    def _check_open(self) -> None:
        if self._closed:  # reading on would reopen the file close() let go of
            raise SessionClosedError(f"Session manager was closed: {self._session_file or 'in memory'}")

    def _leaf_is_tip(self) -> bool:
        last = self._index.last_position()
        if last is None:
            return self._leaf_id is None
        return bool(self._leaf_id == self._index.id_at(last))

    def _sync(self, *, settle: bool = False) -> bool:
        """Absorb what other writers appended; True if the index changed. ``settle`` (before a
        write): wait for a line another writer is still writing (see ``read_new``)."""
        if not self._flushed or self._file is None:
            return False
        new = self._file.read_new(settle=settle)
        if new is None:
            self._reload()
            return True
        if not new:
            return False
        self._absorb(new)
        return True

    def _absorb(self, new: _Records) -> None:
        body = [r for r in new if r[0].type != "session"]
        bodies = self._file.bodies if self._file is not None else None
        if bodies is not None and bodies is not self._index.bodies:
            # Lines of the file as loaded, for an index built otherwise (migrated in memory).
            read = bodies.read
            body = [(h, read(raw, h.id), None) if type(raw) is int else (h, raw, e) for h, raw, e in body]
        self._index = self._index.append_records(body)
        if not self._has_conversation:
            self._has_conversation = any(
                r[0].type == "message"
                and r[0].message is not None
                and r[0].message.role in ("user", "assistant")
                for r in body
            )

    def _reload(self) -> None:
        assert self._file is not None
        self._file.confirm()  # lines the old descriptor wrote into a replaced file are rescued
        leaf = self._leaf_id
        was_tip = self._leaf_is_tip()
        previous = self._file
        self._file = SessionFile(previous.path)
        try:
            header, records, _ = self._load()
        except FileNotFoundError:
            raise InvalidSessionError(f"Session file disappeared: {self._file.path}") from None
        if header is None:
            raise InvalidSessionError(f"Session file is no longer a valid pi session: {self._file.path}")
        if header.get("id") != self._header.get("id"):
            # Another session was renamed over the path: keep the file we had (so every later
            # write fails the same way) rather than write into a stranger's session.
            self._file.close()
            self._file = previous
            raise SessionReplacedError(
                f"Session file {previous.path} now holds another session ({header.get('id')}, not "
                f"{self._header.get('id')}): nothing was written to it"
            )
        old, pending = self._index, self._delivery
        self._delivery = Delivery()  # a load resets what it finds; the pending ones are kept
        try:
            self._adopt_records(header, records, rewrite=False)
        finally:
            self._delivery = pending
        # Positions changed: what was pending stays pending, and what the old index did not
        # hold is new (our own appends are in it).
        pending.rebase(old, self._index)
        if not was_tip and leaf in self._index:
            self._leaf_id = leaf

    # ------------------------------------------------------------------ appending

    @contextlib.contextmanager
    def transaction(self, *, lock_timeout: float | None | Unset = UNSET) -> Iterator[SessionManager]:
        """Read the latest state and append from it, with no other writer in between::

            with manager.transaction():
                count = manager.get_custom_data("counter", {"n": 0})["n"]
                manager.append_custom_entry("counter", {"n": count + 1})

        The block holds the session lock (other processes, and other threads and managers of
        this process, wait for it) and first reads what others appended, moving the leaf onto
        entries that continue from it; reads inside the block therefore see the latest state and
        appends continue from it. Appends inside one lock also cost less (one lock, one read of
        the file). Blocks nest. An exception does not undo appends already made: the file is
        append-only, the lines are written as they are appended.

        A writer that takes no lock (Pi itself) is not held off; its lines are never cut or
        interleaved, and an append that finds one continues from it.

        ``lock_timeout`` overrides the manager's (seconds to wait for the lock, None: forever);
        waiting longer raises :class:`LockTimeout`.
        """
        with self._writing(lock_timeout):
            # The lock is not released until the block ends: only a writer that takes no lock
            # can append meanwhile, and SessionFile.append notices that from the write position.
            self._batch_depth += 1
            try:
                yield self
            finally:
                self._batch_depth -= 1

    def batch(
        self, *, lock_timeout: float | None | Unset = UNSET
    ) -> contextlib.AbstractContextManager[SessionManager]:
        """The same as :meth:`transaction`, by the name that says what it is also good for::

            with manager.batch(lock_timeout=10.0):
                for message in messages:
                    manager.append_message(message)
        """
        return self.transaction(lock_timeout=lock_timeout)

    @contextlib.contextmanager
    def _writing(self, lock_timeout: float | None | Unset = UNSET) -> Iterator[None]:
        """The mutex and the session lock held, and what other writers appended absorbed, once
        per holding: an operation's checks and the append that follows see the same file."""
        if not self._mutex.acquire(False):
            self._wait_for_mutex(lock_timeout)
        try:
            lock = self._begin_writing(lock_timeout)
            try:
                yield
            except BaseException:
                self._end_writing(lock, failing=True)
                raise
            self._end_writing(lock)
        finally:
            self._mutex.release()

    def _current_lock(self) -> SessionLock | None:
        return self._file.lock if self._persist and self._file is not None else None

    def _covered(self, lock: SessionLock | None) -> bool:
        """Whether the innermost holding on this thread holds ``lock`` and read its file. Not
        after the session was switched inside it (another lock), nor in a child forked inside
        it (the child's copy of the lock was reset, it holds nothing)."""
        held = self._held
        return bool(held) and held[-1] is lock and (lock is None or lock.is_locked)

    def _begin_writing(
        self, lock_timeout: float | None | Unset = UNSET, *, covered: bool | None = None
    ) -> SessionLock | None:
        """``_writing()``'s entry, with the mutex held (``_append`` calls it directly: a
        generator-based context manager costs more than the rest of its bookkeeping).
        ``covered``: ``_covered(lock)``, when the caller has just looked."""
        if self._closed or self._read_only is not None:
            self._refuse_write()
        lock = self._current_lock()
        if covered is None:
            covered = self._covered(lock)
        if lock is not None:
            lock.acquire(self._lock_timeout if lock_timeout is UNSET else lock_timeout, self._on_lock_wait)
        try:
            if self._flushed and not covered:
                self._sync_for_check()
        except BaseException:
            if lock is not None:
                lock.release()
            raise
        self._held.append(lock)
        return lock

    def _refuse_write(self) -> None:
        self._check_open()
        raise SessionReadOnlyError(f"Session {self._session_file} is read-only: {self._read_only}")

    def _end_writing(self, lock: SessionLock | None, *, failing: bool = False) -> None:
        try:
            self._held.pop()
            file = self._file
            if file is not None and file.unconfirmed and file.lock is lock and not self._covered(lock):
                # The outermost holding of this file: look once more whether a batch's lines
                # went into a file replaced meanwhile (they are then appended to the new one).
                # With none left unconfirmed (every append outside a batch) there is nothing to
                # look for.
                pending = True
                try:
                    if file.confirm() and not self._adopt_run(file.run_records):
                        self._reload_keeping_leaf(self._leaf_id)
                except PisessionError:
                    if pending and self._unconfirmed_since is not None:
                        self._forget_unconfirmed()
                    if not failing:  # the error that ends the block is the one to report
                        raise
        finally:
            # A child forked inside a holding has a reset lock that it does not hold.
            if lock is not None and lock.is_locked:
                lock.release()

    def _append(self, build: Callable[[Any, str, str], WireEntry], *, stamp_first: bool = False) -> WireEntry:
        mutex = self._mutex
        if not mutex.acquire(False):
            self._wait_for_mutex(UNSET)
        try:
            # _covered(_current_lock()), inline: this runs for every append of a batch.
            file = self._file
            lock = file.lock if self._persist and file is not None else None
            held = self._held
            if held and held[-1] is lock and (lock is None or lock.is_locked):
                # Inside batch() (or an operation's own holding) on this thread: the lock is
                # held and the file read; only the mutex, re-entered, guards this append. In a
                # batch the store checks the path now and then, not at every append.
                return self._append_locked(build, stamp_first, verified=not self._batch_depth)
            lock = self._begin_writing(covered=False)
            try:
                return self._append_locked(build, stamp_first, verified=True)
            finally:
                self._end_writing(lock)
        finally:
            mutex.release()

    def _wait_for_mutex(self, lock_timeout: float | None | Unset) -> None:
        """Another thread writes through this manager (a ``batch()`` perhaps): wait for it as
        for the session lock, which it holds."""
        timeout = self._lock_timeout if lock_timeout is UNSET else lock_timeout
        where = self._file.lock.path if self._file is not None else "in memory"
        from ._lock import wait_for_thread

        wait_for_thread(self._mutex, timeout, self._on_lock_wait, where)

    def _append_id(self, build: Callable[[Any, str, str], WireEntry], *, stamp_first: bool = False) -> str:
        return str(self._append(build, stamp_first=stamp_first)["id"])

    def _append_locked(
        self, build: Callable[[Any, str, str], WireEntry], stamp_first: bool, *, verified: bool
    ) -> WireEntry:
        # The append hot path (batch() runs it thousands of times): few calls, no head built.
        index = self._index
        if stamp_first:
            timestamp = iso_from_ms(self._clock.now_ms())
            entry_id = self._ids.entry_id(index.taken_ids())
        else:
            entry_id = self._ids.entry_id(index.taken_ids())
            timestamp = iso_from_ms(self._clock.now_ms())
        leaf = self._leaf_id
        entry = build(leaf, entry_id, timestamp)
        try:
            data = dumps_bytes(entry)
        except TypeError:  # a model object nested in a dict
            from ._codec import to_wire

            entry = to_wire(entry)
            data = dumps_bytes(entry)
        # Pi keeps the object it wrote; its JSON round trip is what Pi holds (array-index keys
        # first, numbers as doubles), so the index keeps the line and parses it when read.
        self._index = index.append_written(entry, data)
        delivery = self._delivery
        delivery.wrote(len(index))
        self._leaf_id = entry.get("id")
        had_conversation = self._has_conversation
        if not had_conversation:
            self._has_conversation = _is_conversation(entry)
        file = self._file
        if not verified and file is not None and not file.unconfirmed:
            # The state before the first line the store has not yet seen land at the path: if
            # the file turns out to be gone, every entry since then went nowhere.
            self._unconfirmed_since = (index, leaf, had_conversation)
        try:
            if self._persist and file is not None:
                if not self._flushed:
                    if self._has_conversation:
                        self._flush_all()
                # Outside a batch, _writing() has just read the file under this lock (and
                # checked it is still the same file); inside one, the store checks now and then.
                elif file.append(data + b"\n", verified=verified):
                    # A writer without the lock (Pi) appended between our look and our write, or
                    # the file was replaced. Lines that came before ours, read from the known
                    # offset, go before our entry; otherwise the file is read again.
                    between = file.between if verified else None
                    if between is not None:
                        self._index = index
                        delivery.truncate(len(index))
                        self._absorb(between)
                        self._index = self._index.append_written(entry, data)
                        delivery.wrote(len(self._index) - 1)
                    elif verified or not self._adopt_run(file.run_records):
                        self._reload_keeping_leaf(entry.get("id"))
        except InvalidSessionError:
            # The file disappeared: entries written since the path was last checked are lost.
            if not verified and self._unconfirmed_since is not None:
                self._forget_unconfirmed()
            else:
                self._index, self._leaf_id, self._has_conversation = index, leaf, had_conversation
                self._delivery.truncate(len(index))
            raise
        except BaseException:
            # An entry that was not written must not become the parent of later entries.
            self._index, self._leaf_id, self._has_conversation = index, leaf, had_conversation
            self._delivery.truncate(len(index))
            raise
        return entry

    def _adopt_run(self, records: _Records | None) -> bool:
        """A batch's check found another writer's lines among ours: take every line since the
        run of unchecked appends began (read from where it began, in file order) in place of
        re-reading the file. False when that cannot be done; the caller re-reads."""
        since = self._unconfirmed_since
        if records is None or since is None:
            return False
        mine, base = self._index, since[0]
        ours = {mine.id_at(p) for p in range(len(base), len(mine))}
        index = base.append_records([r for r in records if r[0].type != "session"])
        theirs = []
        for pos in range(len(base), len(index)):
            ident = index.id_at(pos)
            if not (hashable(ident) and ident in ours):
                theirs.append(pos)
        if len(index) - len(base) - len(theirs) != len(ours) or self._leaf_id not in index:
            return False  # not every line of ours is there: re-read
        self._index = index
        # Our lines moved among theirs: mark them again where they landed.
        delivery = self._delivery
        delivery.truncate(len(base))
        mine_now = set(range(len(base), len(index))).difference(theirs)
        for pos in sorted(mine_now):
            delivery.wrote(pos)
        if not self._has_conversation:
            self._has_conversation = index.has_conversation()
        return True

    def _forget_unconfirmed(self) -> None:
        assert self._unconfirmed_since is not None
        self._index, self._leaf_id, self._has_conversation = self._unconfirmed_since
        self._unconfirmed_since = None
        self._delivery.truncate(len(self._index))

    def _flush_all(self) -> None:
        """Pi writes nothing until the first user or assistant message, then everything."""
        assert self._file is not None
        lines = [_line(self._header), *(_line(e) for e in self._index.wire_entries())]
        self._file.create(lines)
        self._flushed = True

    def _reload_keeping_leaf(self, leaf: Any) -> None:
        self._reload()
        if leaf in self._index:
            self._leaf_id = leaf

    # -- the operations ------------------------------------------------------------------------

    def append_message(self, message: Message | Mapping[str, Any]) -> str:
        """Append a message (wire dict or model) as a child of the leaf; returns the entry id::

        manager.append_message({"role": "user", "content": "hello", "timestamp": 1733234400000})

        The message must have a string ``role`` (a role Pi does not know is kept as it is):
        anything else is a ``TypeError`` (not a message) or ``ValueError`` (no role), where Pi
        would write a line that no reader takes for a message.
        """
        wire_message = _wire(message)
        if type(wire_message) is not dict:
            raise TypeError(
                "append_message() takes a message: a model object such as UserMessage, or a dict with a "
                f"string 'role', not {type(message).__name__}"
            )
        if type(wire_message.get("role")) is not str:
            found = "not none" if "role" not in wire_message else f"not {wire_message['role']!r:.60}"
            raise ValueError(
                f"append_message(): a message needs a string 'role' ('user', 'assistant', ...), {found}"
            )

        def build(parent: Any, eid: str, ts: str) -> WireEntry:  # _entry, unrolled: the hot path
            if parent is MISSING:
                return {"type": "message", "id": eid, "timestamp": ts, "message": wire_message}
            return {
                "type": "message", "id": eid, "parentId": parent, "timestamp": ts, "message": wire_message
            }

        return self._append(build)["id"]  # type: ignore[no-any-return]  # the id we made: a str

    def append_thinking_level_change(self, thinking_level: str) -> str:
        """Record a thinking-level change (``"off"``, ``"low"``, ``"high"``, ...); returns the id."""
        return self._append_id(
            lambda parent, eid, ts: _entry(
                "thinking_level_change", eid, parent, ts, thinkingLevel=thinking_level
            )
        )

    def append_model_change(self, provider: str, model_id: str) -> str:
        """Record a model switch; returns the entry id."""
        return self._append_id(
            lambda parent, eid, ts: _entry(
                "model_change", eid, parent, ts, provider=provider, modelId=model_id
            )
        )

    def append_usage(
        self, kind: str, provider: str, model: str, usage: Usage | Mapping[str, Any], note: str | None = None
    ) -> UsageEntry:
        """Record usage outside the model context (e.g. ``kind="cache_warm"``); returns the entry.

        ``note`` is written only when it is non-empty, as in Pi.
        """
        wire_usage = _wire(usage)

        def build(parent: Any, eid: str, ts: str) -> WireEntry:
            entry = _entry(
                "usage", eid, parent, ts, kind=kind, provider=provider, model=model, usage=wire_usage
            )
            if js_truthy(note):
                entry["note"] = note
            return entry

        entry = self._append(build)
        return self.get_entry(entry["id"])  # type: ignore[return-value]

    def append_compaction(
        self,
        summary: str,
        first_kept_entry_id: str | None,
        tokens_before: int,
        details: Any = UNSET,
        from_hook: bool | Unset = UNSET,
        usage: Usage | Mapping[str, Any] | Unset = UNSET,
    ) -> str:
        """Append a compaction: the model context restarts from ``summary`` plus the entries from
        ``first_kept_entry_id`` on (``None`` keeps none). The replayed system prompt and tools are
        stored as the entry's ``systemMessage`` checkpoint. Returns the entry id."""

        def build(parent: Any, eid: str, ts: str) -> WireEntry:
            projection = project_leaf(self._index, self._index.resolve_leaf(self._leaf_id))
            system = current_system_message(projection.messages)
            entry = _entry(
                "compaction",
                eid,
                parent,
                ts,
                summary=summary,
                firstKeptEntryId=eid if first_kept_entry_id is None else first_kept_entry_id,
                tokensBefore=tokens_before,
            )
            _put(entry, "details", details)
            _put(entry, "usage", usage)
            _put(entry, "fromHook", from_hook)
            if system is not None:
                entry["systemMessage"] = {**system, "timestamp": _ms_or_null(ts)}
            return entry

        return self._append_id(build, stamp_first=True)

    def append_custom_entry(self, custom_type: str, data: Any = UNSET) -> str:
        """Persist extension state that stays out of the model context; returns the entry id.

        ``append_custom_entry("x")`` writes no ``data`` key, ``append_custom_entry("x", None)``
        writes ``"data": null``, as in Pi.
        """

        def build(parent: Any, eid: str, ts: str) -> WireEntry:
            entry: WireEntry = {"type": "custom", "customType": custom_type}
            _put(entry, "data", data)
            entry.update(_stamp(eid, parent, ts))
            return entry

        return self._append_id(build)

    if TYPE_CHECKING:

        @overload
        def append_custom_message_entry(
            self, custom_type: str, content: UserContent | Sequence[Mapping[str, Any]], display: bool
        ) -> str: ...
        @overload
        def append_custom_message_entry(
            self,
            custom_type: str,
            content: UserContent | Sequence[Mapping[str, Any]],
            display: bool,
            details: Any,
        ) -> str: ...

    def append_custom_message_entry(
        self,
        custom_type: str,
        content: UserContent | Sequence[Mapping[str, Any]],
        display: bool | Unset = UNSET,
        details: Any = UNSET,
    ) -> str:
        """Inject an extension message that the model sees (``display`` controls the TUI)::

            manager.append_custom_message_entry("my-ext.note", "Remember the deadline.", True)

        ``display`` is required, as in Pi; a call that leaves it out anyway (as JavaScript may)
        writes no ``display`` key, as Pi does, and the entry still reads as a
        :class:`CustomMessageEntry`.
        """
        wire_content = _wire(content)

        def build(parent: Any, eid: str, ts: str) -> WireEntry:
            entry: WireEntry = {"type": "custom_message", "customType": custom_type, "content": wire_content}
            _put(entry, "display", display)
            _put(entry, "details", details)
            entry.update(_stamp(eid, parent, ts))
            return entry

        return self._append_id(build)

    def append_session_info(self, name: str) -> str:
        """Name the session (runs of CR/LF become one space, then trimmed); returns the entry id."""
        clean = js_trim(re.sub(r"[\r\n]+", " ", name))
        return self._append_id(lambda parent, eid, ts: _entry("session_info", eid, parent, ts, name=clean))

    def set_session_name(self, name: str) -> str:
        """Alias of :meth:`append_session_info`."""
        return self.append_session_info(name)

    def append_context_edit(
        self, target_id: str, replacement: ContextEditReplacement | Mapping[str, Any] | None
    ) -> str:
        """Change what the model sees of an earlier entry on the active branch without touching it:
        ``None`` omits it, ``{"content": ...}`` replaces its content. Returns the entry id.

        Raises :class:`InvalidContextEditError` or :class:`EntryNotFoundError` as Pi would.
        """
        wire_replacement = _wire(replacement)
        with self._writing():
            normalized = self._check_context_edit(target_id, wire_replacement)
            return self._append_id(
                lambda parent, eid, ts: _entry(
                    "context_edit", eid, parent, ts, targetId=target_id, replacement=normalized
                )
            )

    def _sync_for_check(self) -> None:
        """Absorb other writers' entries; if one continues from our leaf, move the leaf to the
        newest such entry, so an append does not fork the conversation behind their back.
        Entries that do not descend from the leaf (another branch, a side entry) leave it."""
        before = len(self._index)
        if not self._sync(settle=True):
            return
        index = self._index
        if self._leaf_id is None:
            if before == 0 and len(index):  # we had nothing: take what the others wrote
                self._leaf_id = index.id_at(len(index) - 1)
            return
        leaf = index.position(self._leaf_id) if js_truthy(self._leaf_id) else None
        if leaf is None:
            return
        for pos in range(len(index) - 1, max(leaf, min(before, len(index)) - 1), -1):
            if _descends(index, pos, leaf):
                self._leaf_id = index.id_at(pos)
                return

    def _check_context_edit(self, target_id: str, replacement: Any) -> Any:
        if replacement is not None and not (
            isinstance(replacement, dict)
            and "content" in replacement
            and isinstance(replacement["content"], (str, list))
        ):
            raise InvalidContextEditError(
                "Context edit replacement must be null or contain string/array content", where=self._where()
            )
        target = self._index.get(target_id)
        if target is None:
            raise EntryNotFoundError(f"Entry {target_id} not found", where=self._where())
        if not any(e.get("id") == target_id for e in self._branch_wire(self._leaf_id)):
            raise InvalidContextEditError(
                f"Entry {target_id} is not on the active branch", where=self._where()
            )
        message = target.get("message")
        role = message.get("role") if isinstance(message, dict) else None
        editable = target.get("type") == "custom_message" or (
            target.get("type") == "message" and role in _EDITABLE_ROLES
        )
        if not editable:
            raise InvalidContextEditError(
                f"Entry {target_id} does not contribute editable model content", where=self._where()
            )
        target_role = role if target.get("type") == "message" else "custom"
        if (
            replacement is not None
            and target_role in ("assistant", "toolResult")
            and isinstance(replacement["content"], str)
        ):
            return {"content": [{"type": "text", "text": replacement["content"]}]}
        return replacement

    def append_label_change(self, target_id: str, label: str | Unset | None = UNSET) -> str:
        """Set (or, with no label or an empty one, clear) a bookmark label on an entry."""
        with self._writing():
            if target_id not in self._index:
                raise EntryNotFoundError(f"Entry {target_id} not found", where=self._where())

            def build(parent: Any, eid: str, ts: str) -> WireEntry:
                entry = _entry("label", eid, parent, ts, targetId=target_id)
                _put(entry, "label", label)
                return entry

            return self._append_id(build)

    def branch(self, branch_from_id: str) -> None:
        """Move the leaf to an earlier entry; the next append starts a new branch there."""
        with self._mutex:
            if branch_from_id not in self._index:
                raise EntryNotFoundError(f"Entry {branch_from_id} not found", where=self._where())
            self._leaf_id = branch_from_id

    def reset_leaf(self) -> None:
        """Move the leaf before the first entry: the next append is a new root."""
        with self._mutex:
            self._leaf_id = None

    def branch_with_summary(
        self,
        branch_from_id: str | None,
        summary: str,
        details: Any = UNSET,
        from_hook: Any = UNSET,
        usage: Any = UNSET,
    ) -> str:
        """Branch from ``branch_from_id`` (``None``: a new root) and record a summary of the path
        being left; returns the new ``branch_summary`` entry's id."""
        with self._writing():
            if branch_from_id is not None and branch_from_id not in self._index:
                raise EntryNotFoundError(f"Entry {branch_from_id} not found", where=self._where())
            from_id = self._leaf_id if self._leaf_id is not None else "root"
            previous_leaf = self._leaf_id
            self._leaf_id = branch_from_id

            def build(parent: Any, eid: str, ts: str) -> WireEntry:
                entry = _entry("branch_summary", eid, branch_from_id, ts, fromId=from_id, summary=summary)
                _put(entry, "details", details)
                _put(entry, "usage", usage)
                _put(entry, "fromHook", from_hook)
                return entry

            try:
                return self._append_id(build)
            except BaseException:
                self._leaf_id = previous_leaf
                raise

    # -- compaction and tree navigation (pisession.compaction) -----------------------------------

    def plan_compaction(
        self, settings: CompactionSettings | None = None, *, raise_if_nothing: bool = False
    ) -> CompactionPreparation | None:
        """What :meth:`compact` would do now (Pi's ``prepareCompaction`` on the current branch),
        without calling a summarizer or writing; None when there is nothing to compact, or with
        ``raise_if_nothing`` the reason, as :meth:`compact` raises it
        (:class:`NothingToCompactError` or :class:`AlreadyCompactedError`)::

            plan = manager.plan_compaction(CompactionSettings(keep_recent_tokens=8000))

        Entries other writers appended are read first, as :meth:`compact` reads them.
        """
        from .compaction import _flows as _compaction_flows  # loaded only by programs that compact

        return _compaction_flows.plan(self, settings, raise_if_nothing=raise_if_nothing)

    def compact(
        self,
        summarize: Summarizer,
        *,
        settings: CompactionSettings | None = None,
        custom_instructions: str | None = None,
        thinking_level: str | None = None,
    ) -> CompactionEntry:
        """Compact the current branch as Pi's ``/compact`` does: one summarizer call (two for a
        split turn) with Pi's prompts, then a ``compaction`` entry with the file lists::

            entry = manager.compact(lambda request: my_model(request.system_prompt, request.prompt))

        The plan is made on the file as it is (entries other writers appended are read first).
        The summarizer runs without the session lock; if another writer changed the branch
        meanwhile, the plan is made again and summarized again (up to three summaries, then
        :class:`BranchChangedError`): the entry written is the one Pi would write for the file
        as it is when it is written.

        Raises :class:`NothingToCompactError` or :class:`AlreadyCompactedError` as Pi does; an
        exception from ``summarize`` propagates and nothing is written. ``summarize`` is called
        synchronously (an ``async def`` needs :class:`pisession.aio.AsyncSessionManager`).
        """
        from .compaction import _flows as _compaction_flows

        return _compaction_flows.run(
            _compaction_flows.compaction_steps(self, settings, custom_instructions, thinking_level), summarize
        )

    def navigate_tree(
        self,
        target_id: str,
        *,
        summarize: Summarizer | None = None,
        custom_instructions: str | None = None,
        replace_instructions: bool = False,
        label: str | None = None,
        thinking_level: str | None = None,
        context_window: int = 128000,
        reserve_tokens: int = 16384,
    ) -> Navigation:
        """Move to another point of the tree as Pi's ``/tree`` does: with ``summarize``, the
        abandoned branch is summarized into a ``branch_summary`` entry at the target; a user or
        custom message target moves the leaf to its parent and returns its text::

            nav = manager.navigate_tree(entry_id, summarize=my_summarizer, label="retry")
            print(nav.new_leaf_id, nav.editor_text)

        Entries other writers appended are read first (so ``target_id`` may be one of theirs);
        if the branch being left changes while the summarizer runs, it is summarized again (up
        to three times, then :class:`BranchChangedError`).
        """
        from .compaction import _flows as _compaction_flows

        steps = _compaction_flows.navigation_steps(
            self,
            target_id,
            summarizing=summarize is not None,
            custom_instructions=custom_instructions,
            replace_instructions=replace_instructions,
            label=label,
            thinking_level=thinking_level,
            context_window=context_window,
            reserve_tokens=reserve_tokens,
        )
        return _compaction_flows.run(steps, summarize)

    def needs_compaction(
        self, context_window: int, settings: CompactionSettings | None = None
    ) -> CompactionCheck:
        """Whether Pi would compact this session on its own before the next prompt, with a model
        of ``context_window`` tokens: Pi's automatic check at the leaf, on the last assistant
        message of the context. Truthy when it would; ``tokens`` is the size it decided on::

            check = manager.needs_compaction(200_000)
            if check:
                manager.compact(summarize)

        As Pi, it does not count an assistant message (or a usage) from before the latest
        compaction, so a session just compacted does not need compacting again; with context
        edits on the branch it counts the edited context. Entries other writers appended are
        read first, as :meth:`compact` reads them. Pi's recovery from a context-overflow error
        of the model is not part of it.
        """
        from .compaction import _check

        index, leaf_id = self._catch_up()
        return _check.check(index, leaf_id, context_window, settings)

    def _catch_up(self) -> tuple[TreeIndex, Any]:
        """The index and leaf after reading what other writers appended, the leaf following
        entries that continue from it as it does before a write: what an operation that plans a
        write (a compaction, a navigation) must plan on."""
        with self._mutex:
            if not self._closed:
                self._sync_for_check()
            return self._index, self._leaf_id

    def create_branched_session(self, leaf_id: str) -> str | None:
        """Replace this manager's session with a new one holding only the path to ``leaf_id``
        (labels re-created at the end). Returns the new file's path (None in memory)."""
        with self._mutex:
            if self._closed:
                self._refuse_write()
            path = self._branch_wire(leaf_id)
            if not path:
                raise EntryNotFoundError(f"Entry {leaf_id} not found", where=self._where())
            previous_file = self._session_file
            kept: _WireEntries = []
            replacement: dict[Any, Any] = {}
            pending_labels: builtins.list[Any] = []
            parent_id: Any = None
            for entry in path:
                if entry.get("type") == "label":
                    pending_labels.append(entry.get("id"))
                    continue
                for label_id in pending_labels:
                    replacement[label_id] = entry.get("id")
                pending_labels.clear()
                copy = {**entry, "parentId": parent_id}
                if entry.get("type") == "compaction":
                    first = entry.get("firstKeptEntryId", MISSING)
                    if first != entry.get("id"):
                        first = replacement.get(first, first) if hashable(first) else first
                    if first is MISSING:
                        copy.pop("firstKeptEntryId", None)
                    else:
                        copy["firstKeptEntryId"] = first
                kept.append(copy)
                parent_id = entry.get("id")
            session_id = self._ids.session_id(self._clock.now_ms())
            timestamp = iso_from_ms(self._clock.now_ms())
            header: WireEntry = {
                "type": "session",
                "version": CURRENT_SESSION_VERSION,
                "id": session_id,
                "timestamp": timestamp,
                "cwd": self._cwd,
            }
            if self._persist and previous_file is not None:
                header["parentSession"] = previous_file
            kept_ids = {e.get("id") for e in kept if hashable(e.get("id"))}
            labels = [
                (target, label, self._index.label_timestamp(target))
                for target, label in self._index.labels().items()
                if target in kept_ids
            ]
            taken = set(kept_ids)
            label_entries: _WireEntries = []
            parent = kept[-1].get("id") if kept and js_truthy(kept[-1].get("id")) else None
            for target, label, label_ts in labels:
                entry = {"type": "label", "id": self._ids.entry_id(taken), "parentId": parent}
                _put(entry, "timestamp", label_ts if label_ts is not None else MISSING)
                entry.update(targetId=target, label=label)
                taken.add(entry["id"])
                label_entries.append(entry)
                parent = entry["id"]
            entries = [header, *kept, *label_entries]
            if not self._persist:
                self._header = header
                self._reindex(entries)
                return None
            new_file = os.path.join(self._session_dir, session_file_name(timestamp, session_id))
            index = TreeIndex.from_entries([*kept, *label_entries])
            store = SessionFile(new_file)
            # The new file is written before anything here changes: if that fails (disk full,
            # an entry that cannot be written), the manager stays on the session it had.
            flushed = index.has_conversation()
            if flushed:
                with store.lock.hold(self._lock_timeout, self._on_lock_wait):
                    store.create(_line(e) for e in entries)
                    if self._low_memory:  # the new file's lines stay in it; the copies go
                        _, records, _ = store.load_low_memory()
                        assert hasattr(records, "without_sessions")
                        index = TreeIndex.from_records(records.without_sessions(), store.bodies)
            self._leave_file()
            self._header = header
            self._index = index
            self._after_index()
            self._session_file = new_file
            self._file = store
            self._read_only = None  # a new file: what kept the old one from being written is gone
            self._flushed = flushed
            return new_file

    # ------------------------------------------------------------------ reading

    def snapshot(self) -> TreeIndex:
        """The current immutable index: later appends never change it. Picklable; a low-memory
        manager's snapshot reads its lines in when pickled or deep-copied, so the copy needs
        the file no more::

            data = pickle.dumps(manager.snapshot())
        """
        return self._index

    def is_persisted(self) -> bool:
        return self._persist

    def get_cwd(self) -> str:
        return self._cwd

    def get_session_dir(self) -> str:
        return self._session_dir

    def get_session_id(self) -> str:
        return str(self._header.get("id", ""))

    def get_session_file(self) -> str | None:
        return self._session_file

    def _where(self) -> str:
        """The session, as an error message names it."""
        return self._session_file or self._read_from or "an in-memory session"

    def uses_default_session_dir(self) -> bool:
        return (
            paths_equal(self._session_dir, default_session_dir_path(self._cwd))
            if self._session_dir
            else False
        )

    def get_header(self) -> SessionHeader | None:
        from ._codec import from_wire

        return from_wire(self._header) if self._header else None  # type: ignore[return-value]

    def get_entries(self) -> Sequence[Entry]:
        """Every entry in file order (header excluded), typed as each is read."""
        return EntryList(self._index)

    def get_entry_count(self) -> int:
        return len(self._index)

    def get_entry(self, entry_id: str) -> Entry | None:
        pos = self._index.position(entry_id)
        return None if pos is None else self._index.model_at(pos)

    def get_leaf_id(self) -> str | None:
        leaf = self._leaf_id
        return None if leaf is MISSING else leaf

    def get_leaf_entry(self) -> Entry | None:
        return None if self._leaf_id is None else self.get_entry(self._leaf_id)

    def get_children(self, parent_id: str) -> builtins.list[Entry]:
        index = self._index
        return [index.model_at(p) for p in index.children_positions(parent_id)]

    def get_label(self, entry_id: str) -> str | None:
        return self._index.label(entry_id)  # type: ignore[no-any-return]

    def get_session_name(self) -> str | None:
        return self._index.session_name()

    def get_branch(self, from_id: str | None = None) -> Sequence[Entry]:
        """The path from the root to ``from_id`` (default: the leaf), root first; unknown → empty.

        Like :meth:`get_entries`, a sequence of the snapshot's entries typed when read.
        """
        index = self._index
        start = from_id if from_id is not None else self._leaf_id
        pos = index.position(start) if js_truthy(start) else None
        return EntryList(index, index.path_positions(pos) if pos is not None else [])

    def get_entries_of_type(self, entry_type: type[EntryT], *, branch: bool = False) -> builtins.list[EntryT]:
        """The entries of one class in file order; ``branch=True``: only those on the path to
        the leaf, root first::

            for entry in manager.get_entries_of_type(pisession.CustomEntry):
                print(entry.custom_type, entry.data)
        """
        from ._model import UnknownEntry

        index = self._index  # one snapshot throughout, whatever other threads append meanwhile
        leaf = index.resolve_leaf(self._leaf_id)
        positions: Sequence[int] = index.path_positions(leaf) if branch else range(len(index))
        if not issubclass(entry_type, UnknownEntry):  # a known class: parse only its type's lines
            wire_type = entry_type.type
            positions = [p for p in positions if index.type_at(p) == wire_type]
        return [e for e in index.models_at(positions) if isinstance(e, entry_type)]

    def get_latest_custom_entry(self, custom_type: str, *, branch: bool = True) -> CustomEntry | None:
        """The newest ``custom`` entry of ``custom_type`` on the path to the leaf, or None: where
        an extension's state stands on the current branch, as Pi's extensions rebuild it from
        ``getBranch()``. ``branch=False``: the newest in the whole file, whichever branch holds it::

            entry = manager.get_latest_custom_entry("my-extension")
            state = entry.data if entry is not None else {}
        """
        from ._model import CustomEntry

        index = self._index
        positions = index.path_positions(index.resolve_leaf(self._leaf_id)) if branch else range(len(index))
        for pos in reversed(positions):
            if index.type_at(pos) == "custom":
                entry = index.model_at(pos)
                if isinstance(entry, CustomEntry) and entry.custom_type == custom_type:
                    return entry
        return None

    def get_custom_data(self, custom_type: str, default: Any = None, *, branch: bool = True) -> Any:
        """The ``data`` of :meth:`get_latest_custom_entry`, or ``default`` when there is no such
        entry or it has no ``data``::

            state = manager.get_custom_data("my-extension", {"todos": []})
        """
        entry = self.get_latest_custom_entry(custom_type, branch=branch)
        return default if entry is None or entry.data is UNSET else entry.data

    def _branch_wire(self, from_id: Any) -> _WireEntries:
        index = self._index
        pos = index.position(from_id) if js_truthy(from_id) else None
        return [index.entry_at(p) for p in index.path_positions(pos)] if pos is not None else []

    def get_tree(self) -> builtins.list[TreeNode]:
        """The whole session as a tree: roots (and orphans) with children sorted by time."""
        index = self._index
        cache = index.cache()
        key = ("tree", len(index))
        cached = cache.get(key)
        if cached is None:
            with bulk():
                # The shapes only: a node refers to the index, whose store holds this cache, and
                # that cycle would keep the store (a low-memory one's open file) alive until the
                # garbage collector's next full pass rather than until its last reader is gone.
                cached = tuple(_build_shapes(index))
            cache[key] = cached
        return [TreeNode(index, shape) for shape in cached]

    def _leaf_position(self) -> int | None:
        return self._index.resolve_leaf(self._leaf_id)

    def build_context_entries(self) -> builtins.list[Entry]:
        """The entries the model context is built from at the leaf (compaction-aware)."""
        index = self._index
        return index.models_at(context_positions(index, self._leaf_position()))

    def build_session_projection(self) -> SessionProjection:
        """The model context with, for each message, the entry it came from."""
        from ._projection import projection_from_wire

        index = self._index
        return projection_from_wire(index, self._wire_projection())

    def build_session_context(self) -> SessionContext:
        """What the model receives at the leaf: messages, thinking level, model."""
        index = self._index
        leaf = self._leaf_position()
        cache = index.cache()
        key = ("context", leaf) if index.is_regular else ("context", leaf, len(index))
        cached = cache.get(key)
        if cached is None:
            from ._projection import context_from_projection

            cached = context_from_projection(project_leaf(index, leaf))
            cache[key] = cached
        return cached

    def _wire_projection(self) -> WireProjection:
        return project_leaf(self._index, self._leaf_position())

    def __repr__(self) -> str:
        where = self._session_file or "in memory"
        return f"<SessionManager {self.get_session_id()} {where} entries={len(self._index)}>"

    def close(self) -> None:
        """Release file descriptors; the manager stays readable, and every later write raises
        :class:`SessionClosedError`. Waits for a write in progress in another thread (and for a
        ``batch()`` another thread holds) to end."""
        with self._mutex:
            self._closed = True
            if self._file is not None:
                self._file.close()
            # Low-memory mode: this manager and its snapshots stay readable, each later read
            # of a line opening the file for that read (the same file, checked).
            for bodies in {self._index.bodies, self._file.bodies if self._file is not None else None}:
                if bodies is not None:
                    bodies.release()

    def __enter__(self) -> SessionManager:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _version(header: Mapping[str, Any]) -> float:
    """The header's version as Pi compares it (``header.version ?? 1``, JS number coercion)."""
    version = header.get("version")
    return js_to_number(1 if version is None else version)


def _descends(index: TreeIndex, pos: int, ancestor: int) -> bool:
    """Whether ``ancestor`` lies on the path from ``pos`` to its root."""
    if pos == ancestor:
        return False
    if index.is_regular:
        # Parents precede children: stop as soon as the walk passes below the ancestor.
        while pos > ancestor:
            pos = index.parent_position(pos)
        return pos == ancestor
    return ancestor in index.path_positions(pos)



def _ms_or_null(iso: str) -> Any:
    value = js_date_ms(iso)
    return None if value is None else int(value)


def _stamp(entry_id: str, parent: Any, timestamp: str) -> WireEntry:
    """id, parentId, timestamp; an undefined leaf (after an id-less entry) omits parentId, as
    JSON.stringify drops Pi's undefined."""
    if parent is MISSING:
        return {"id": entry_id, "timestamp": timestamp}
    return {"id": entry_id, "parentId": parent, "timestamp": timestamp}


def _entry(entry_type: str, entry_id: str, parent: Any, timestamp: str, **fields: Any) -> WireEntry:
    if parent is MISSING:
        entry: WireEntry = {"type": entry_type, "id": entry_id, "timestamp": timestamp}
    else:
        entry = {"type": entry_type, "id": entry_id, "parentId": parent, "timestamp": timestamp}
    for key, value in fields.items():
        if value is not UNSET and value is not MISSING:
            entry[key] = _wire(value)
    return entry


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


def _build_regular_shapes(
    index: TreeIndex, parts: tuple[list[int], Sequence[Any], dict[Any, int | list[int]]]
) -> list[TreeShape]:
    """The tree of a regular index: children come after their parents in the file, so one
    pass from the end builds every node after its children, with no stack and no recursion."""
    n = len(index)
    roots, ids, children_by_parent_id = parts
    built: list[Any] = [None] * n
    leaf: tuple[TreeShape, ...] = ()
    pos = n
    # One C-level pass finds every entry's children; the loop then only builds shapes.
    for kids in reversed(list(map(children_by_parent_id.get, ids[:n]))):
        pos -= 1
        if kids is None:
            built[pos] = (pos, leaf)
        elif isinstance(kids, int):  # one child
            built[pos] = (pos, (built[kids],) if kids < n else leaf)
        else:
            built[pos] = (pos, tuple([built[c] for c in index.sort_children(kids)]))
    return [built[r] for r in roots]


def _build_shapes(index: TreeIndex) -> list[TreeShape]:
    parts = index.regular_tree_parts()
    if parts is not None:
        return _build_regular_shapes(index, parts)
    roots, children = index.tree_order()
    built: dict[int, TreeShape] = {}
    # Irregular files (forward references, duplicate ids): children before parents, without
    # recursion, and never through a node already on the way down (a duplicated id can make a
    # node its own ancestor).
    on_stack: set[int] = set()
    for root in roots:
        stack: list[tuple[int, bool]] = [(root, False)]
        while stack:
            pos, expanded = stack.pop()
            if pos in built and not expanded:
                continue
            if not expanded:
                if pos in on_stack:
                    continue
                on_stack.add(pos)
                stack.append((pos, True))
                for child in children.get(pos, ()):
                    if child not in built and child not in on_stack:
                        stack.append((child, False))
                continue
            on_stack.discard(pos)
            built[pos] = (pos, tuple(built[c] for c in children.get(pos, ()) if c in built))
    return [built[r] for r in roots if r in built]


__all__ += ["PisessionError"]
