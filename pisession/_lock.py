"""The inter-process lock on ``<session file>.lock`` that every write holds.

The protocol is filelock's on POSIX: an exclusive ``flock`` on the lock file, opened without
following symlinks. A ``filelock.FileLock`` held by another tool therefore excludes pisession and
the other way round. pisession does not go through ``filelock.FileLock.acquire`` on its hot path:
measured on the reference machine, filelock 4.3 spends about 300 µs per acquire/release (3.16:
about 55 µs), several times the whole budget of an append; a cached descriptor and one ``flock``
cost about 3 µs. Where ``fcntl`` is missing (Windows), ``filelock.FileLock`` is used as it is.

A session file with several names (hard links) has a lock file per name; its holder then also
``flock``s the session file itself, always after the lock file (one order, no deadlock), so
writers through different names exclude each other too.
"""

from __future__ import annotations

import _thread  # threading's locks, without importing threading (start-up of a read-only command)
import contextlib
import enum
import errno
import os
import time
import weakref
from collections.abc import Callable, Iterator
from types import TracebackType
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    import threading

__all__ = [
    "SessionLock",
    "LockTimeout",
    "SymlinkRefusedError",
    "LockFileAccessError",
    "session_lock",
    "remove_unused_locks",
]

try:
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

from ._errors import LockFileAccessError, PisessionError, SymlinkRefusedError


class LockTimeout(PisessionError, TimeoutError):
    """The session lock was held by someone else for longer than the timeout allowed.

    The message names the holder where it can be known (Linux: the process id from
    ``/proc/locks``, and its command line)."""


class _Default(enum.Enum):
    TIMEOUT = enum.auto()


OnWait = Callable[[str], None]
# How long a writer waits before ``on_wait`` is told (the command line then says it is waiting).
WAIT_NOTICE_SECONDS: Final = 1.0

_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)

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

    def __init__(self, path: str, timeout: float | None = None, *, session_path: str | None = None) -> None:
        self.path = path
        self.timeout = timeout
        # The session file the lock guards: as root, the lock file is given that file's owner.
        self.session_path = session_path
        # The session file has other names (hard links), each with its own <name>.lock: a
        # process writing through another name takes another lock file, so the holder also
        # flocks the session file itself (nobody else flocks it: Pi takes no lock at all).
        self.shares_inode = False
        self._inode_fd: int | None = None
        self._thread_lock = _thread.RLock()
        self._depth = 0
        self._fd: int | None = None
        self._fallback: object | None = None
        _LOCKS.add(self)

    @property
    def is_locked(self) -> bool:
        return self._depth > 0

    def acquire(
        self, timeout: float | None | _Default = _Default.TIMEOUT, on_wait: OnWait | None = None
    ) -> None:
        """Take the lock, waiting at most ``timeout`` seconds (None: forever; left out: the
        lock's own ``timeout``), else :class:`LockTimeout`. ``on_wait`` is called once, with a
        description of the holder, when the wait has lasted ``WAIT_NOTICE_SECONDS``."""
        if timeout is _Default.TIMEOUT:
            timeout = self.timeout
        if self._thread_lock.acquire(blocking=False):
            start = deadline = None  # the uncontended path: no clock read
        else:
            start = time.monotonic()
            deadline = None if timeout is None else start + timeout
            wait_for_thread(self._thread_lock, timeout, on_wait, self.path, start)
            on_wait = None if time.monotonic() - start >= WAIT_NOTICE_SECONDS else on_wait
        try:
            if self._depth == 0:
                if start is None and timeout is not None:
                    start = time.monotonic()
                    deadline = start + timeout
                self._lock_file(deadline, on_wait, start)
            self._depth += 1
        except BaseException:
            self._thread_lock.release()
            raise

    @contextlib.contextmanager
    def hold(
        self, timeout: float | None | _Default = _Default.TIMEOUT, on_wait: OnWait | None = None
    ) -> Iterator[None]:
        """``with lock.hold(5.0):`` is ``with lock:`` with :meth:`acquire`'s arguments."""
        self.acquire(timeout, on_wait)
        try:
            yield
        finally:
            self.release()

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
            if self._depth == 0:
                for fd in (self._fd, self._inode_fd):
                    if fd is not None:
                        os.close(fd)
                self._fd = self._inode_fd = None
        finally:
            self._thread_lock.release()

    def __del__(self) -> None:
        for fd in (getattr(self, "_fd", None), getattr(self, "_inode_fd", None)):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)

    # -- the file lock itself ------------------------------------------------------------------

    def _lock_file(self, deadline: float | None, on_wait: OnWait | None, start: float | None) -> None:
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
            if deadline is None and on_wait is None:
                fcntl.flock(fd, fcntl.LOCK_EX)
            else:
                self._poll(fd, deadline, on_wait, start)
                on_wait = None  # told once per acquire
            # Someone may have deleted the lock file, or renamed another over it, since we opened
            # it: a lock on an unlinked inode excludes nobody, so retry on the file now there.
            # The descriptor's link count says so without resolving the path again (an fstat
            # costs half a stat of the path, on every append).
            if os.fstat(fd).st_nlink > 0:
                break
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)
            self._fd = None
        if self.shares_inode:
            try:
                self._lock_inode(deadline, on_wait, start)
            except BaseException:
                fcntl.flock(fd, fcntl.LOCK_UN)
                raise

    def _lock_inode(self, deadline: float | None, on_wait: OnWait | None, start: float | None) -> None:
        assert fcntl is not None and self.session_path is not None
        if self._inode_fd is None:
            try:
                self._inode_fd = os.open(self.session_path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | _NONBLOCK)
            except OSError:
                return  # gone or unreadable: the writes that follow report it
        if deadline is None and on_wait is None:
            fcntl.flock(self._inode_fd, fcntl.LOCK_EX)
        else:
            self._poll(self._inode_fd, deadline, on_wait, start)

    def _poll(self, fd: int, deadline: float | None, on_wait: OnWait | None, start: float | None) -> None:
        assert fcntl is not None
        delay = 0.0005
        start = time.monotonic() if start is None else start
        notice = start + WAIT_NOTICE_SECONDS if on_wait is not None else None
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except OSError as error:
                if error.errno not in (errno.EAGAIN, errno.EACCES, errno.EWOULDBLOCK):
                    raise
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                raise LockTimeout(
                    f"Timed out after {deadline - start:g} s waiting for the session lock {self.path}, "
                    f"held by {describe_holder(fd)}"
                )
            if notice is not None and now >= notice:
                assert on_wait is not None
                on_wait(describe_holder(fd))
                notice = None
                if deadline is None:  # told: nothing left to watch the clock for
                    fcntl.flock(fd, fcntl.LOCK_EX)
                    return
            time.sleep(delay)
            delay = min(delay * 2, 0.05)

    def _after_fork(self) -> None:
        # A forked child shares the parent's open file description, and flock locks on one
        # description do not exclude each other: the child needs its own descriptor.
        for fd in (self._fd, self._inode_fd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._fd = self._inode_fd = None
        self._depth = 0
        self._thread_lock = _thread.RLock()

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
                if error.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
                    raise _access_error(self.path, error) from error
                raise
            info = os.fstat(fd)
            if self.session_path is not None and os.geteuid() == 0:
                _give_owner(fd, info, self.session_path)
            self._fd = fd
        return self._fd

    def _unlock_file(self) -> None:
        if self._fallback is not None:  # pragma: no cover - Windows
            self._fallback.release()  # type: ignore[attr-defined]
            self._fallback = None
            return
        if self._inode_fd is not None and fcntl is not None:
            fcntl.flock(self._inode_fd, fcntl.LOCK_UN)
        if self._fd is not None and fcntl is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)


def wait_for_thread(
    lock: threading.RLock | threading.Lock,
    timeout: float | None,
    on_wait: OnWait | None,
    path: str,
    start: float | None = None,
) -> None:
    """Acquire ``lock``, which another thread of this process holds: at most ``timeout``
    seconds (else :class:`LockTimeout` about the session lock ``path``), telling ``on_wait``
    after ``WAIT_NOTICE_SECONDS``."""
    start = time.monotonic() if start is None else start
    deadline = None if timeout is None else start + timeout
    notice = start + WAIT_NOTICE_SECONDS if on_wait is not None else None
    holder = f"another thread of this process ({os.getpid()})"
    while True:
        until = min((t for t in (deadline, notice) if t is not None), default=None)
        wait = -1.0 if until is None else max(0.0, until - time.monotonic())
        if lock.acquire(timeout=wait):
            return
        now = time.monotonic()
        if deadline is not None and now >= deadline:
            raise LockTimeout(
                f"Timed out after {deadline - start:g} s waiting for the session lock {path}, "
                f"held by {holder}"
            )
        if notice is not None and now >= notice:
            assert on_wait is not None
            on_wait(holder)
            notice = None


def _give_owner(fd: int, info: os.stat_result, session_path: str) -> None:
    """Root writing a user's session leaves the lock file to that user: a root-owned 0600 lock
    file would lock the owner (and Pi's tools running as the owner) out of their session."""
    try:
        owner = os.stat(session_path, follow_symlinks=False)
    except OSError:
        return  # a new session: it will be root's too
    if (info.st_uid, info.st_gid) != (owner.st_uid, owner.st_gid):
        with contextlib.suppress(OSError):  # a file system without owners (or a user namespace)
            os.fchown(fd, owner.st_uid, owner.st_gid)


def _access_error(path: str, error: OSError) -> LockFileAccessError:
    try:
        info = os.stat(path, follow_symlinks=False)
    except OSError:
        return LockFileAccessError(
            error.errno,
            f"Cannot create the session lock file {path}: {error.strerror} "
            "(its folder is not writable by this user); writing the session needs it",
        )
    return LockFileAccessError(
        error.errno,
        f"Cannot open the session lock file {path}: {error.strerror} (owned by uid {info.st_uid}, "
        f"mode {info.st_mode & 0o7777:04o}, this process runs as uid {os.geteuid()}); a write as another "
        "user (root?) may have left it: give it the session file's owner",
    )


def describe_holder(fd: int) -> str:
    """Who holds the ``flock`` on ``fd``'s file: "process 1234 (cmdline)" where ``/proc/locks``
    tells (Linux), else "another process". Read only while waiting: it costs nothing otherwise."""
    try:
        info = os.fstat(fd)
        wanted = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
        with open("/proc/locks", encoding="ascii", errors="replace") as handle:
            pids = [
                fields[4]
                for fields in (line.split() for line in handle)
                if len(fields) > 5 and fields[1] == "FLOCK" and fields[5] == wanted and fields[3] == "WRITE"
            ]
    except (OSError, ValueError):
        pids = []
    pids = [pid for pid in pids if pid.isdigit() and pid != "0"]
    if not pids:
        return "another process"
    pid = pids[0]
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            raw = handle.read(200).decode("utf-8", "replace")
    except OSError:
        raw = ""
    # One line, and nothing a terminal would act on: it is shown to the user as it is.
    command = " ".join("".join(c if c.isprintable() else " " for c in raw).split())
    if len(command) > 80:
        command = command[:77] + "..."
    return f"process {pid} ({command})" if command else f"process {pid}"


# -- one lock object per session file and process ---------------------------------------------

# Every SessionFile of one session shares one SessionLock: a manager that re-reads its file (a
# new SessionFile) inside a batch, or a second manager of the same file used by the same thread,
# re-enters the lock it already holds instead of waiting on itself (flock locks taken through two
# descriptors exclude each other even within one process). A session is recognised by its lock
# path, by the file's identity (device, inode: another spelling through a symlinked folder, a
# hard link) and by its folder's identity and name (a file not written yet).
_BY_SESSION: weakref.WeakValueDictionary[object, SessionLock] = weakref.WeakValueDictionary()
_BY_SESSION_GUARD = _thread.allocate_lock()


def _file_key(session_path: str) -> tuple[int, int] | None:
    try:
        info = os.stat(session_path, follow_symlinks=False)
    except OSError:
        return None
    return (info.st_dev, info.st_ino)


def _folder_key(session_path: str) -> tuple[int, int, str] | None:
    try:
        folder = os.stat(os.path.dirname(session_path) or ".")
    except OSError:
        return None
    return (folder.st_dev, folder.st_ino, os.path.basename(session_path))


def session_lock(session_path: str) -> SessionLock:
    """The process's one lock object for the session file at ``session_path``.

    Its lock file is ``<path>.lock`` of the spelling first used in this process; another
    spelling of the same file (an alias folder, a hard link) shares it. A spelling seen before
    costs no system call; an identity found again is checked against the lock's own file first
    (inode numbers are reused once a file is deleted).
    """
    path_key = session_path + ".lock"
    with _BY_SESSION_GUARD:
        lock = _BY_SESSION.get(path_key)
        if lock is not None:
            return lock
        try:
            info: os.stat_result | None = os.stat(session_path, follow_symlinks=False)
        except OSError:
            info = None
        keys: list[object] = [path_key]
        identities: list[tuple[object, Callable[[str], object]]] = []
        if info is not None:
            identities.append(((info.st_dev, info.st_ino), _file_key))
        folder = _folder_key(session_path)
        if folder is not None:
            identities.append((folder, _folder_key))
        for key, make_key in identities:
            keys.append(key)
            found = _BY_SESSION.get(key)
            if lock is None and found is not None and make_key(found.session_path or "") == key:
                lock = found
        if lock is None:
            lock = SessionLock(path_key, session_path=session_path)
        if info is not None and info.st_nlink > 1:
            lock.shares_inode = True
        for key in keys:
            _BY_SESSION[key] = lock
        return lock


def remove_unused_locks(folder: str | os.PathLike[str]) -> list[str]:
    """Delete the ``*.jsonl.lock`` files nobody holds in ``folder`` (and, for a sessions root
    such as ``~/.pi/agent/sessions``, in each project folder in it); returns their paths.

    A lock file stays beside its session after every write (see ``docs/troubleshooting.md``).
    Each one is removed only while this call holds its ``flock`` (taken without waiting: a lock
    someone holds is left alone), and only if the path still names the file locked: a writer
    that opened it meanwhile finds, once it gets the lock, that the file is gone (its link count
    is 0) and locks the new one the next write creates, as every pisession writer checks. Pi
    takes no lock on session files, so nothing of Pi's is affected. Symbolic links, non-empty
    files and anything not named ``*.jsonl.lock`` are never touched. POSIX only (elsewhere:
    nothing is removed)."""
    if fcntl is None:  # pragma: no cover - Windows: filelock's own protocol, left to it
        return []
    top = os.fspath(folder)
    folders = [top]
    with contextlib.suppress(OSError), os.scandir(top) as entries:
        folders += [entry.path for entry in entries if entry.is_dir(follow_symlinks=False)]
    removed: list[str] = []
    for where in folders:
        try:
            with os.scandir(where) as entries:
                names = [
                    e.path
                    for e in entries
                    if e.name.endswith(".jsonl.lock") and e.is_file(follow_symlinks=False)
                ]
        except OSError:
            continue
        removed += [path for path in sorted(names) if _remove_if_unused(path)]
    return removed


def _remove_if_unused(path: str) -> bool:
    assert fcntl is not None
    try:
        fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _CLOEXEC | _NONBLOCK)
    except OSError:
        return False
    try:
        info = os.fstat(fd)
        if info.st_size != 0 or info.st_nlink == 0:
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # held: in use
        try:
            now = os.lstat(path)
            if (now.st_dev, now.st_ino) != (info.st_dev, info.st_ino):
                return False  # replaced meanwhile: not the file locked
            os.unlink(path)
            return True
        except OSError:
            return False
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
