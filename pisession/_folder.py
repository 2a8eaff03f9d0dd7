"""Following every session of a folder, new files too, without writing anything.

One read-only view (:func:`~pisession.read_session`) per session file, each with its own
queue of undelivered entries: an entry leaves it only when it is handed over, so a follow that
ends early (``break``, an exception, a cancelled task) leaves the rest for the next follow or
refresh of the same follower, and every entry reaches the reader once, in its file's order.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import AsyncIterator, Iterator
from typing import NamedTuple

from ._errors import InvalidSessionError, PisessionError, SessionReplacedError
from ._manager import SessionManager
from ._read import read_session

# typing for type checkers only (they take TYPE_CHECKING for true)
TYPE_CHECKING = False
if TYPE_CHECKING:
    import asyncio
    import threading

    from ._model import Entry
    from ._watch import FileWatcher

__all__ = ["FolderEntry", "FolderFollower", "follow_folder"]

_STAGE = 256  # entries an asyncio follower types per view on its thread at a time


class FolderEntry(NamedTuple):
    """An entry another writer appended to the session file at ``path``."""

    path: str
    entry: Entry


class FolderFollower:
    """Every session of a folder, followed read-only: what Pi (or anyone) appends to a session
    file there, and the entries of session files created there later::

        with FolderFollower("~/.pi/agent/sessions") as sessions:
            for path, entry in sessions.follow():
                print(path, entry.type)

    Session files are the ``*.jsonl`` files in ``folder`` and, with ``recursive`` (the
    default), in its immediate subfolders (Pi's layout: one folder per working directory).
    Files there when the follower starts are followed from their end (``from_start=True``:
    their entries are delivered first); files that appear later, from their first entry.

    Nothing is ever written, created, locked or repaired: not the sessions, not the folder.
    A file that is empty or whose header line is still being written is taken once its header
    is whole; a last line still being written, once it is whole. A file that shrank, or was
    replaced by a rewrite of the same session, is read again (entries not seen before are
    delivered); a file replaced by another session is followed as a new file; a deleted file
    is dropped. A ``*.jsonl`` file that is not a session is skipped (looked at again when it
    changes).
    """

    def __init__(
        self, folder: str | os.PathLike[str], *, from_start: bool = False, recursive: bool = True
    ) -> None:
        self._folder = os.path.abspath(os.path.expanduser(os.fspath(folder)))
        if not os.path.isdir(self._folder):
            if os.path.exists(self._folder):
                raise NotADirectoryError(f"Not a folder: {self._folder}")
            raise FileNotFoundError(f"No such folder: {self._folder}")
        self._recursive = recursive
        self._views: dict[str, SessionManager] = {}
        self._skipped: dict[str, tuple[int, int]] = {}  # not a session when last looked at
        # Entries of a dropped view (its file deleted or replaced) not handed over yet: first.
        self._orphans: deque[FolderEntry] = deque()
        self._scan(from_start=from_start)

    @property
    def folder(self) -> str:
        return self._folder

    @property
    def paths(self) -> list[str]:
        """The session files followed now, in the order they were found."""
        return list(self._views)

    # finding files ----------------------------------------------------------------------------

    def _folders(self) -> list[str]:
        folders = [self._folder]
        if self._recursive:
            try:
                with os.scandir(self._folder) as items:
                    folders += sorted(i.path for i in items if i.is_dir() and not i.name.startswith("."))
            except OSError:
                pass
        return folders

    def _candidates(self) -> list[str]:
        found = []
        for folder in self._folders():
            try:
                with os.scandir(folder) as items:
                    names = sorted(
                        i.name
                        for i in items
                        if i.name.endswith(".jsonl") and not i.name.startswith(".") and i.is_file()
                    )
            except OSError:
                continue
            found += [os.path.join(folder, name) for name in names]
        return found

    def _scan(self, *, from_start: bool = True) -> None:
        """Open a view for each session file not followed yet."""
        for path in self._candidates():
            if path not in self._views:
                self._open(path, from_start=from_start)

    def _open(self, path: str, *, from_start: bool) -> None:
        try:
            info = os.stat(path)
        except OSError:
            return
        stamp = (info.st_size, info.st_mtime_ns)
        if self._skipped.get(path) == stamp:
            return
        try:
            view = read_session(path, allow_empty=True)
        except (PisessionError, OSError):
            self._skipped[path] = stamp
            return
        self._skipped.pop(path, None)
        if from_start:
            view._delivery.reset(0)  # every entry it holds is still to be delivered
        self._views[path] = view

    def _read(self, path: str, view: SessionManager) -> bool:
        """Absorb what was appended to one file; False if the file is followed no more."""
        try:
            view._stage(0, read=True)
        except SessionReplacedError:
            self._drop(path, view)
            self._open(path, from_start=True)
            return False
        except (InvalidSessionError, OSError):
            self._drop(path, view)  # deleted, or no longer a session
            return False
        return True

    def _drop(self, path: str, view: SessionManager) -> None:
        del self._views[path]
        while (entry := view._next_entry(False, read=False)) is not None:
            self._orphans.append(FolderEntry(path, entry))
        view.close()

    # handing over -----------------------------------------------------------------------------

    def _take(self) -> FolderEntry | None:
        if self._orphans:
            return self._orphans.popleft()
        for path, view in self._views.items():
            entry = view._next_entry(False, read=False)
            if entry is not None:
                return FolderEntry(path, entry)
        return None

    def _next(self, *, read: bool) -> FolderEntry | None:
        """The next undelivered entry, now delivered; with ``read``, the folder and its files
        are looked at for more when none is pending. One at a time, so a reader that stops
        takes no more than it got."""
        item = self._take()
        if item is None and read:
            self._read_all()
            item = self._take()
        return item

    def _read_all(self) -> None:
        self._scan()
        for path, view in list(self._views.items()):
            self._read(path, view)

    def refresh(self) -> list[FolderEntry]:
        """What was appended, and the entries of new session files, since the last look; each
        entry once (what a follow read but did not hand over comes here)."""
        self._read_all()
        items = []
        while (item := self._take()) is not None:
            items.append(item)
        return items

    def _watcher(self, notify: bool) -> FileWatcher | None:
        if not notify:
            return None
        from ._watch import open_folder_watcher

        watcher = open_folder_watcher(self._folder)
        if watcher is not None and self._recursive:
            for folder in self._folders()[1:]:
                watcher.add(folder)
        return watcher

    def follow(
        self, poll_interval: float = 0.25, *, stop: threading.Event | None = None, notify: bool = True
    ) -> Iterator[FolderEntry]:
        """Yield ``(path, entry)`` as entries are appended to the folder's sessions, and as
        new session files appear. Wakes as soon as something in the folder changes where
        inotify is available (Linux; ``notify=False`` turns it off), otherwise looks every
        ``poll_interval`` seconds. Runs until ``stop`` is set (it then reads everything once
        more, yields what came before, and ends) or forever."""
        import threading

        from . import _watch

        event = stop or threading.Event()
        watcher = self._watcher(notify)
        known = set(self._folders())
        try:
            drained = False
            while True:
                if not drained and event.is_set():
                    drained = True
                    self._read_all()
                item = self._next(read=not drained)
                if item is not None:
                    yield item
                    continue
                if drained:
                    return
                if watcher is None:
                    event.wait(poll_interval)
                    continue
                for folder in set(self._folders()) - known:  # a new project's folder
                    watcher.add(folder)
                    known.add(folder)
                watcher.wait(event, _watch.NOTIFIED_POLL)
        finally:
            if watcher is not None:
                watcher.close()

    async def afollow(
        self, poll_interval: float = 0.25, *, stop: asyncio.Event | None = None, notify: bool = True
    ) -> AsyncIterator[FolderEntry]:
        """:meth:`follow` for asyncio code::

            async for path, entry in FolderFollower(folder).afollow():
                print(path, entry.type)

        The files are read on a worker thread; an entry is taken on the event loop's thread
        right before it is yielded, so a task cancelled anywhere else loses none."""
        import asyncio

        from . import _watch

        loop = asyncio.get_running_loop()
        watcher = self._watcher(notify)
        changed = asyncio.Event()
        if watcher is not None:

            def on_readable() -> None:
                if watcher.drain():
                    changed.set()

            loop.add_reader(watcher.fileno(), on_readable)
        period = _watch.NOTIFIED_POLL if watcher is not None else poll_interval
        known = set(self._folders())
        try:
            drained = False
            while True:
                if not drained and stop is not None and stop.is_set():
                    drained = True
                    await asyncio.to_thread(self._stage_all, 0, True)
                item = self._pop_staged()
                if item is not None:
                    yield item
                    continue
                changed.clear()  # before reading: a change during the read wakes the next wait
                if await asyncio.to_thread(self._stage_all, _STAGE, not drained):
                    continue
                if drained:
                    return
                if watcher is not None:
                    for folder in set(self._folders()) - known:
                        watcher.add(folder)
                        known.add(folder)
                await _watch.wait_for_any(changed, stop, period)
        finally:
            if watcher is not None:
                loop.remove_reader(watcher.fileno())
                watcher.close()

    def _stage_all(self, limit: int, read: bool) -> bool:
        """On a worker thread: with ``read``, read the folder and every file; then type up to
        ``limit`` undelivered entries per file for the loop's thread to take; True if any is
        waiting."""
        if read:
            self._scan()
        waiting = False
        for path, view in list(self._views.items()):
            if not read or self._read(path, view):
                waiting = view._stage(limit, read=False) or waiting
        return waiting or bool(self._orphans)

    def _pop_staged(self) -> FolderEntry | None:
        if self._orphans:
            return self._orphans.popleft()
        for path, view in list(self._views.items()):
            entry = view._delivery.pop_staged(False)
            if entry is not None:
                return FolderEntry(path, entry)
        return None

    def close(self) -> None:
        """Release the views' descriptors."""
        for view in self._views.values():
            view.close()

    def __enter__(self) -> FolderFollower:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def follow_folder(
    folder: str | os.PathLike[str],
    poll_interval: float = 0.25,
    *,
    stop: threading.Event | None = None,
    notify: bool = True,
    from_start: bool = False,
    recursive: bool = True,
) -> Iterator[FolderEntry]:
    """Yield ``(path, entry)`` for every entry appended to a session of ``folder`` and every
    entry of a session file created there, never writing anything (see
    :class:`FolderFollower`, whose ``refresh()`` and ``afollow()`` this shortcut lacks)::

        for path, entry in follow_folder("~/.pi/agent/sessions"):
            print(path, entry.type)
    """
    with FolderFollower(folder, from_start=from_start, recursive=recursive) as follower:
        yield from follower.follow(poll_interval, stop=stop, notify=notify)
