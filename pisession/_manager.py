"""``SessionManager``: Pi's session operations, in Python, safe across processes (SPEC §7–8).

The manager only orchestrates: the index (``_index``) holds the tree, the context builder
(``_context``) derives what the model sees, the store (``_store``) owns the file. Internally
everything is a wire dict, exactly what a line of the file holds; the public methods hand out
typed models (``_model``) and accept either form.

This module is Pi's API: the constructors and the operations, thin methods with Pi's names. The
class is built in four rooms, each the base of the next: ``_state`` (what a manager holds, and
loading a file into it), ``_reading`` (Pi's read methods), ``_writer`` (the write machinery:
the lock, syncing with other writers, transactions) and this one (docs/architecture.md).
"""

from __future__ import annotations

import builtins
import os
import re
from collections.abc import Callable, Mapping, Sequence

from ._context import current_system_message, project_leaf
from ._errors import EntryNotFoundError, InvalidSessionError, PisessionError
from ._js import MISSING, js_trim, js_truthy
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
)
from ._state import _session_options
from ._values import UNSET
from ._writer import SessionWriter, _entry, _ms_or_null, _put, _stamp, _wire, write_fork

# typing for type checkers only (they take TYPE_CHECKING for true): importing it at run time
# took 8 % of `pisession tree`'s start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, overload

    WireEntry = dict[str, Any]
    _WireEntries = list[WireEntry]

# The model classes, the codec and the typed context results are imported where they are used:
# reading a session and walking its tree (`pisession tree`) never creates a model object, and
# importing attrs and creating the model classes took longer than the rest of that command.
if TYPE_CHECKING:
    from ._model import (
        CompactionEntry,
        ContextEditReplacement,
        Message,
        Unset,
        Usage,
        UsageEntry,
        UserContent,
    )

if TYPE_CHECKING:
    from ._discovery import SessionInfo  # list() and list_all() import _discovery when called
    from ._ids import Clock, IdSource
    from .catalog import Catalog
    from .compaction._check import CompactionCheck
    from .compaction._cut import CompactionPreparation
    from .compaction._flows import Navigation, Summarizer
    from .compaction._tokens import CompactionSettings

__all__ = ["SessionManager"]


class SessionManager(SessionWriter):
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
        target, directory, path, clock, ids = write_fork(
            source_path, target_cwd, session_dir, id, clock, ids, lock_timeout, on_lock_wait
        )
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

    # ------------------------------------------------------------------ starting over

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
        self, context_window: int | None = None, settings: CompactionSettings | None = None
    ) -> CompactionCheck:
        """Whether Pi would compact this session on its own before the next prompt, with a model
        of ``context_window`` tokens: Pi's automatic check at the leaf, on the last assistant
        message of the context. Truthy when it would; ``tokens`` is the size it decided on::

            check = manager.needs_compaction()          # the model Pi would resume with
            check = manager.needs_compaction(200_000)   # a window of your choosing
            if check:
                manager.compact(summarize)

        Without ``context_window``, the window is that of the model Pi would use for this
        session (the branch's last model, else the settings' ``defaultProvider`` /
        ``defaultModel``, looked up in Pi's model registry with the user's ``models.json``:
        :mod:`pisession.models`), and, without ``settings``, the compaction settings are the
        user's for that model (Pi's ``settings.json`` of the session's cwd, as Pi trusts it);
        :class:`~pisession.ModelError` when no model is known or available.

        As Pi, it does not count an assistant message (or a usage) from before the latest
        compaction, so a session just compacted does not need compacting again; with context
        edits on the branch it counts the edited context. Entries other writers appended are
        read first, as :meth:`compact` reads them. Pi's recovery from a context-overflow error
        of the model is not part of it.
        """
        from .compaction import _check

        index, leaf_id = self._catch_up()
        if context_window is None:
            context_window, settings = self._model_window(settings)
        return _check.check(index, leaf_id, context_window, settings)

    def _model_window(self, settings: CompactionSettings | None) -> tuple[int, CompactionSettings | None]:
        """The context window of the model Pi would resume this session with, and ``settings``
        (else the user's compaction settings for that model)."""
        from .models import ModelRegistry, choose_model
        from .settings import PiSettings

        pi_settings = PiSettings.load(self.get_cwd())
        choice = choose_model(ModelRegistry.load(), pi_settings, self.get_branch())
        if settings is None:
            settings = pi_settings.compaction_settings(choice.model.key)
        return choice.model.context_window, settings

    def create_branched_session(self, leaf_id: str) -> str | None:
        """Replace this manager's session with a new one holding only the path to ``leaf_id``
        (labels re-created at the end). Returns the new file's path (None in memory)."""
        return self._replace_with_branch(leaf_id)

    # ------------------------------------------------------------------ closing

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


__all__ += ["PisessionError"]
