"""The write machinery of :class:`~pisession.SessionManager` (SPEC §8): safe across processes.

Every write holds the manager's mutex and the session's lock file, and first absorbs what other
writers appended (``_sync``), moving the leaf onto entries that continue from it; an append then
writes one line. ``transaction()`` / ``batch()`` hold the lock over many appends, checking the
file's identity now and then (``_adopt_run`` takes another writer's lines that landed among a
batch's own). ``refresh()`` and ``follow()`` hand over what others appended, each entry once.
The operations themselves (Pi's ``appendMessage``, ``branch``, ...) are in ``_manager``.
"""

from __future__ import annotations

import builtins
import contextlib
import os
from collections.abc import Callable, Iterator, Mapping

from ._delivery import Delivery
from ._errors import (
    EntryNotFoundError,
    InvalidContextEditError,
    InvalidSessionError,
    PisessionError,
    SessionReadOnlyError,
    SessionReplacedError,
)
from ._index import TreeIndex
from ._js import MISSING, hashable, iso_from_ms, js_date_ms, js_truthy
from ._json import dumps_bytes
from ._load import CURRENT_SESSION_VERSION, load_all_entries_from_file
from ._paths import get_default_session_dir, normalize_path, resolve_path, session_file_name
from ._reading import SessionReader
from ._state import _line
from ._store import SessionFile, make_private_dirs
from ._values import UNSET

# typing for type checkers only (they take TYPE_CHECKING for true): importing it at run time
# took 8 % of `pisession tree`'s start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import threading
    from typing import Any

    from typing_extensions import Self

    from ._ids import Clock, IdSource
    from ._load import Record
    from ._lock import SessionLock  # imported by the session file that takes it (_store)
    from ._model import Entry, Unset

    WireEntry = dict[str, Any]
    _WireEntries = list[WireEntry]
    _Records = list[Record]

__all__ = ["SessionWriter", "write_fork"]


_EDITABLE_ROLES = ("user", "assistant", "toolResult")


class SessionWriter(SessionReader):
    """Following other writers, and appending under the lock: the write half of
    :class:`~pisession.SessionManager`."""

    # following other writers ------------------------------------------------------------------

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
        path = self._followed_path()
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

    def _followed_path(self) -> str | None:
        """The file whose changes a follower waits for: the session's, or the one a read-only
        view (``read_session``) follows."""
        return self._file.path if self._file is not None else self._session_file

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
        self._file = previous.reopened()
        awaiting = not self._header  # a read-only view of a file that had no header yet
        try:
            header, records, _ = self._load()
        except FileNotFoundError:
            raise InvalidSessionError(f"Session file disappeared: {self._file.path}") from None
        if header is None:
            if awaiting:
                return  # still empty, or its header line is still being written
            raise InvalidSessionError(f"Session file is no longer a valid pi session: {self._file.path}")
        if awaiting:
            cwd = header.get("cwd")
            if isinstance(cwd, str) and cwd:
                self._cwd = resolve_path(cwd)
        elif header.get("id") != self._header.get("id"):
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

    # appending --------------------------------------------------------------------------------

    @contextlib.contextmanager
    def transaction(self, *, lock_timeout: float | None | Unset = UNSET) -> Iterator[Self]:
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
    ) -> contextlib.AbstractContextManager[Self]:
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

    def _catch_up(self) -> tuple[TreeIndex, Any]:
        """The index and leaf after reading what other writers appended, the leaf following
        entries that continue from it as it does before a write: what an operation that plans a
        write (a compaction, a navigation) must plan on."""
        with self._mutex:
            if not self._closed:
                self._sync_for_check()
            return self._index, self._leaf_id

    def _replace_with_branch(self, leaf_id: str) -> str | None:
        """Replace the session with a new one holding only the path to ``leaf_id``
        (:meth:`~pisession.SessionManager.create_branched_session`)."""
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


def write_fork(
    source_path: str | os.PathLike[str],
    target_cwd: str | os.PathLike[str],
    session_dir: str | os.PathLike[str] | None,
    id: str | None,
    clock: Clock | None,
    ids: IdSource | None,
    lock_timeout: float | None,
    on_lock_wait: Callable[[str], None] | None,
) -> tuple[str, str, str, Clock, IdSource]:
    """:meth:`~pisession.SessionManager.fork_from`'s new file, written: the target cwd, the
    folder, the new file's path, and the clock and id source that made it."""
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
    return target, directory, path, clock, ids


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
