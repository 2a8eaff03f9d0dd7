"""The inter-process lock on ``<session file>.lock`` that every write holds.

The protocol is filelock's on POSIX: an exclusive ``flock`` on the lock file, opened without
following symlinks. A ``filelock.FileLock`` held by another tool therefore excludes pisession and
the other way round. pisession does not go through ``filelock.FileLock.acquire`` on its hot path:
measured on the reference machine, filelock 4.3 spends about 300 µs per acquire/release (3.16:
about 55 µs), several times the whole budget of an append; a cached descriptor and one ``flock``
cost about 3 µs. Where ``fcntl`` is missing (Windows), ``filelock.FileLock`` is used as it is.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
import time
import weakref
from types import TracebackType

__all__ = ["SessionLock", "LockTimeout", "SymlinkRefusedError"]

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

from ._errors import PisessionError, SymlinkRefusedError


class LockTimeout(PisessionError, TimeoutError):
    """The session lock was held by someone else for longer than the timeout allowed."""




_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)

# Every lock of this process, so a forked child can give each its own descriptor (checked by an
# at-fork hook rather than a getpid() per acquire).
_LOCKS: weakref.WeakSet[SessionLock] = weakref.WeakSet()


def _reset_locks_after_fork() -> None:
    for lock in list(_LOCKS):
        lock._after_fork()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_reset_locks_after_fork)


class SessionLock:
    """Re-entrant (per thread) exclusive lock on ``path``; ``with lock:`` holds it.

    Threads of one process exclude each other through an in-process lock before the ``flock``,
    so the one cached descriptor is never shared by two holders.
    """

    def __init__(self, path: str, timeout: float | None = None) -> None:
        self.path = path
        self.timeout = timeout
        self._thread_lock = threading.RLock()
        self._depth = 0
        self._fd: int | None = None
        self._fd_identity: tuple[int, int] | None = None  # (inode, device) _fd was opened on
        self._fallback: object | None = None
        _LOCKS.add(self)

    @property
    def is_locked(self) -> bool:
        return self._depth > 0

    def acquire(self) -> None:
        deadline = None if self.timeout is None else time.monotonic() + self.timeout
        if not self._thread_lock.acquire(timeout=-1 if self.timeout is None else self.timeout):
            raise LockTimeout(f"Timed out waiting for the session lock {self.path}")
        try:
            if self._depth == 0:
                self._lock_file(deadline)
            self._depth += 1
        except BaseException:
            self._thread_lock.release()
            raise

    def release(self) -> None:
        if self._depth == 0:
            raise RuntimeError("release of an unlocked SessionLock")
        self._depth -= 1
        try:
            if self._depth == 0:
                self._unlock_file()
        finally:
            self._thread_lock.release()

    def __enter__(self) -> SessionLock:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def close(self) -> None:
        """Drop the cached descriptor (the lock file itself stays, as filelock leaves it).

        Never waits: while another thread holds the lock, the descriptor stays open (it is
        shared by every manager of this file in the process) and is dropped on a later close.
        """
        if not self._thread_lock.acquire(blocking=False):
            return
        try:
            if self._depth == 0 and self._fd is not None:
                os.close(self._fd)
                self._fd = None
        finally:
            self._thread_lock.release()

    def __del__(self) -> None:
        fd = getattr(self, "_fd", None)
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)

    # -- the file lock itself ------------------------------------------------------------------

    def _lock_file(self, deadline: float | None) -> None:
        if fcntl is None:  # pragma: no cover - Windows
            import filelock

            lock = filelock.FileLock(
                self.path, timeout=-1 if deadline is None else max(0.0, deadline - time.monotonic())
            )
            lock.acquire()
            self._fallback = lock
            return
        while True:
            fd = self._descriptor()
            if deadline is None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            else:
                self._poll(fd, deadline)
            # Someone may have deleted or replaced the lock file between our open and our flock;
            # a lock on an unlinked inode excludes nobody, so check and retry on the new file.
            try:
                current = os.stat(self.path, follow_symlinks=False)
            except FileNotFoundError:
                current = None
            if current is not None and (current.st_ino, current.st_dev) == self._fd_identity:
                return
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
            self._fd = None

    def _poll(self, fd: int, deadline: float) -> None:
        assert fcntl is not None
        delay = 0.0005
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except OSError as error:
                if error.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise
            if time.monotonic() >= deadline:
                raise LockTimeout(f"Timed out waiting for the session lock {self.path}")
            time.sleep(delay)
            delay = min(delay * 2, 0.05)

    def _after_fork(self) -> None:
        # A forked child shares the parent's open file description, and flock locks on one
        # description do not exclude each other: the child needs its own descriptor.
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
        self._fd = None
        self._depth = 0
        self._thread_lock = threading.RLock()

    def _descriptor(self) -> int:
        if self._fd is None:
            # O_NOFOLLOW: a lock path planted as a symlink must not make us create or lock a
            # file elsewhere; opening it fails instead (ELOOP).
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT | _NOFOLLOW | _CLOEXEC, 0o600)
            except OSError as error:
                if error.errno == errno.ELOOP or (error.errno == errno.EMLINK and os.path.islink(self.path)):
                    raise SymlinkRefusedError(
                        error.errno, f"Lock file is a symbolic link, refusing to follow it: {self.path}"
                    ) from error
                raise
            info = os.fstat(fd)
            self._fd, self._fd_identity = fd, (info.st_ino, info.st_dev)
        return self._fd

    def _unlock_file(self) -> None:
        if self._fallback is not None:  # pragma: no cover - Windows
            self._fallback.release()  # type: ignore[attr-defined]
            self._fallback = None
            return
        if self._fd is not None and fcntl is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
