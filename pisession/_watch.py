"""Waking up when a session file changes: inotify on Linux, through ctypes (no dependency).

The watch is on the file's folder, not on the file: a file that does not exist yet, or that is
replaced by a rename (a rewrite, a migration), is still seen. Events for other names in the
folder are read and dropped. Where inotify is missing (macOS, Windows, a libc without it, a
process out of watches) :func:`open_watcher` returns None and the caller polls.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import struct
import sys
import threading
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio

__all__ = ["FileWatcher", "open_watcher", "open_folder_watcher", "inotify_available", "wait_for_any"]

_IN_MODIFY = 0x00000002
_IN_ATTRIB = 0x00000004  # truncation through ftruncate reports as IN_MODIFY; a chmod as this
_IN_MOVED_FROM = 0x00000040
_IN_MOVED_TO = 0x00000080
_IN_CREATE = 0x00000100
_IN_DELETE = 0x00000200
_IN_Q_OVERFLOW = 0x00004000
_IN_IGNORED = 0x00008000  # the watched folder is gone
_IN_NONBLOCK = os.O_NONBLOCK
_IN_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_MASK = _IN_MODIFY | _IN_ATTRIB | _IN_MOVED_FROM | _IN_MOVED_TO | _IN_CREATE | _IN_DELETE
_EVENT = struct.Struct("iIII")  # wd, mask, cookie, len; then len bytes of NUL-padded name

# With inotify a follower still looks this often, in case a change was not reported (a file on
# a network file system written from another machine).
NOTIFIED_POLL = 5.0
# A threading.Event has no descriptor to wait on beside the watch: how often a blocked
# follower looks whether it was told to stop.
STOP_CHECK = 0.05


def _load_libc() -> ctypes.CDLL | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        init, add = libc.inotify_init1, libc.inotify_add_watch
    except (OSError, AttributeError):
        return None
    init.argtypes, init.restype = [ctypes.c_int], ctypes.c_int
    add.argtypes, add.restype = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint32], ctypes.c_int
    return libc


_LIBC = _load_libc()


def inotify_available() -> bool:
    """Whether this platform's libc offers inotify."""
    return _LIBC is not None


class FileWatcher:
    """An inotify descriptor watching one file's folder; :meth:`fileno` becomes readable when
    something happens there, :meth:`drain` then says whether it concerned the file."""

    def __init__(self, fd: int, name: bytes | None) -> None:
        self._fd: int | None = fd
        self._name = name  # None: every name in the watched folders concerns the caller

    def fileno(self) -> int:
        if self._fd is None:
            raise ValueError("watcher is closed")
        return self._fd

    def drain(self) -> bool:
        """Read every pending event; True if one may concern the file (an overflow may)."""
        fd = self.fileno()
        relevant = False
        while True:
            try:
                data = os.read(fd, 65536)
            except BlockingIOError:
                return relevant
            except InterruptedError:
                continue
            if not data:
                return relevant
            offset = 0
            while offset + _EVENT.size <= len(data):
                _, mask, _, length = _EVENT.unpack_from(data, offset)
                name = data[offset + _EVENT.size : offset + _EVENT.size + length].rstrip(b"\0")
                offset += _EVENT.size + length
                if mask & (_IN_Q_OVERFLOW | _IN_IGNORED) or self._name is None or name == self._name:
                    relevant = True

    def wait(self, stop: threading.Event, timeout: float) -> None:
        """Block until the file may have changed (events queued since the last wait count, so
        a change made while the caller was reading is not missed), ``stop`` is set, or
        ``timeout`` seconds have passed."""
        poller = select.poll()
        poller.register(self.fileno(), select.POLLIN)
        deadline = time.monotonic() + timeout
        while not stop.is_set():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            if poller.poll(min(remaining, STOP_CHECK) * 1000) and self.drain():
                return

    def add(self, folder: str) -> bool:
        """Watch one more folder (a folder watcher's new subfolder); False if refused."""
        assert _LIBC is not None
        return int(_LIBC.inotify_add_watch(self.fileno(), os.fsencode(folder), _MASK)) >= 0

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None

    def __del__(self) -> None:
        self.close()


def open_watcher(path: str) -> FileWatcher | None:
    """A watcher for ``path`` (which need not exist yet), or None where inotify is unavailable
    or refuses (no such folder, the per-user limit of watches reached, ...)."""
    if _LIBC is None:
        return None
    fd = int(_LIBC.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC))
    if fd < 0:
        return None
    folder, name = os.path.split(os.path.abspath(path))
    if int(_LIBC.inotify_add_watch(fd, os.fsencode(folder), _MASK)) < 0:
        os.close(fd)  # whatever the reason (ENOENT, ENOSPC, EACCES, ...), polling still works
        return None
    return FileWatcher(fd, os.fsencode(name))


def open_folder_watcher(folder: str) -> FileWatcher | None:
    """A watcher for any change in ``folder`` (more folders with :meth:`FileWatcher.add`), or
    None where inotify is unavailable or refuses."""
    if _LIBC is None:
        return None
    fd = int(_LIBC.inotify_init1(_IN_NONBLOCK | _IN_CLOEXEC))
    if fd < 0:
        return None
    if int(_LIBC.inotify_add_watch(fd, os.fsencode(folder), _MASK)) < 0:
        os.close(fd)
        return None
    return FileWatcher(fd, None)


async def wait_for_any(changed: asyncio.Event, stop: asyncio.Event | None, timeout: float) -> None:
    """Until ``changed`` or ``stop`` is set, or ``timeout`` seconds have passed (what an async
    follower waits on between looks at its file or folder)."""
    import asyncio

    waiters = [asyncio.ensure_future(changed.wait())]
    if stop is not None:
        waiters.append(asyncio.ensure_future(stop.wait()))
    try:
        await asyncio.wait(waiters, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for waiter in waiters:
            waiter.cancel()
