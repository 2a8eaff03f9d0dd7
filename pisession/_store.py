"""One session file on disk: what has been read of it, and the careful ways to write it.

Appends go through one ``O_APPEND`` descriptor, one ``os.write`` per entry, so a line is never
interleaved with another writer's, even one that takes no lock (Pi itself). Reads after the first
start from the byte offset where the previous read stopped; a file that shrank or was replaced
(another inode at the path) is reported so the caller reloads it. Whole-file rewrites
(migration) go to a temporary file renamed into place, so a crash leaves the old file or the new.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import time
from collections.abc import Callable, Iterable, Iterator

from ._errors import (
    InvalidSessionError,
    SessionClosedError,
    SessionExistsError,
    SessionReadOnlyError,
    SessionReplacedError,
    SymlinkRefusedError,
)
from ._load import (
    MAX_LINE_BYTES,
    SkippedLine,
    is_session_header,
    iter_file_lines,
    iter_line_lists,
    may_parse,
    parse_line,
    scan_raw,
    scan_records,
    skipped_line,
    warn_long_lines,
)

# typing for type checkers only (they take TYPE_CHECKING for true): importing it at run time
# took 8 % of `pisession tree`'s start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ._bodies import BodyFile, BodyLines
    from ._load import Record
    from ._lock import SessionLock

    WireEntry = dict[str, Any]

__all__ = ["SessionFile", "ReadOnlySessionFile", "FILE_MODE", "DIR_MODE", "make_private_dirs"]

RECHECK_NS = 2_000_000  # inside a batch, look whether the file was replaced at most every 2 ms
# A partial last line is another writer's line still arriving (the kernel shows a long write
# page by page) while it grows; one that stays unchanged this long is a torn line a dead
# writer left, which the next write closes with a newline.
PARTIAL_QUIET_S = 0.25
PARTIAL_PATIENCE_S = 10.0  # a line still growing after this long is treated as torn all the same
FILE_MODE = 0o600  # sessions hold prompts and tool output
DIR_MODE = 0o700
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


def make_private_dirs(path: str) -> None:
    """Create ``path`` and its missing parents with mode 0700 (existing ones are left alone).

    ``os.makedirs`` applies its mode to the last folder only (Python >= 3.7): the parents it
    creates get the default mode, so each missing folder is made here one by one.
    """
    missing = []
    current = os.path.abspath(path)
    while not os.path.isdir(current):
        missing.append(current)
        parent = os.path.dirname(current)
        if parent == current:
            break
        current = parent
    for folder in reversed(missing):
        try:
            os.mkdir(folder, DIR_MODE)
        except FileExistsError:
            if not os.path.isdir(folder):
                raise


def _refuse_symlink(path: str, error: OSError) -> None:
    if error.errno == errno.ELOOP or (error.errno == errno.EMLINK and os.path.islink(path)):
        raise SymlinkRefusedError(
            error.errno, f"Session file is a symbolic link, pisession does not write through it: {path}"
        ) from error


class ScannedLines:
    """The entries of a file's lines, scanned each time they are iterated.

    Only the lines are held: a head lives while the index takes it in, so opening never holds
    the heads of every entry at once (about 200 bytes each; 40 MB for 200,000 entries).
    """

    __slots__ = ("lines",)

    def __init__(self, lines: list[bytes]) -> None:
        self.lines = lines

    def __iter__(self) -> Iterator[Record]:
        return scan_records(self.lines)

    def without_sessions(self) -> Iterator[Record]:
        """The entries but those of type ``session`` (what the index takes)."""
        return scan_records(self.lines, skip_type="session")


class SessionFile:
    """A session file plus our read position in it."""

    def __init__(self, path: str) -> None:
        self.path = path
        # Shared by every spelling of this file in the process (keyed by its identity here, once,
        # not per append): a symlinked folder or a hard link must not wait on its own holder.
        self.lock = self._new_lock(path)
        self.closed = False
        self._fd: int | None = None
        self._identity: tuple[int, int] | None = None
        # Lines appended (unverified, in a batch) since the path was last seen to name our file.
        self.unconfirmed: list[bytes] = []
        self._confirmed_at = 0
        self.offset = 0  # bytes of complete lines already parsed
        self.size = 0  # file size when last looked at
        self._unterminated = False  # the last line was parsed but has no "\n" after it yet
        self.session_id: str | None = None  # the header id of the file we read or wrote
        # After a write that another writer's lines preceded: those lines, read from the known
        # offset (None when they could not be read that way and the file must be re-read).
        self.between: list[Record] | None = None
        # Inside a batch: where the current run of unconfirmed lines began, and, after a check
        # found another writer's bytes among them, every line from there on (None: re-read).
        self._mark = 0
        self.run_records: list[Record] | None = None
        # Low-memory mode: the descriptor and line table of the file as loaded; lines others
        # append to that same file are referred to there too (see load_low_memory).
        self.bodies: BodyFile | None = None

    def _new_lock(self, path: str) -> SessionLock:
        from ._lock import session_lock  # start-up: reading a session in memory takes no lock

        return session_lock(path)

    # -- reading -----------------------------------------------------------------------------

    def reopened(self) -> SessionFile:
        """A new handle on the same path, nothing read yet (the file is read again)."""
        return SessionFile(self.path)

    def exists(self) -> bool:
        return os.path.exists(self.path)

    def load(self) -> tuple[WireEntry | None, Iterable[Record], bool]:
        """Read the whole file as Pi does: (header, the other entries, needs a final newline).

        The header is None (and nothing else returned) when the file is not a session. Entry
        bodies stay raw bytes until read; each line is scanned when the entries are iterated
        (see :class:`ScannedLines`). Nothing is written here.
        """
        fd, info = self._open_regular()
        header: WireEntry | None = None
        header_line = b""
        lines: list[bytes] = []
        consumed = -1  # every element but the last is followed by a newline
        batch: list[bytes] = []
        numbered = 0
        long_lines: list[tuple[int, int]] = []
        try:
            with os.fdopen(fd, "rb", closefd=False) as handle:
                for batch in iter_line_lists(handle):
                    first = batch[0]  # a skipped line begins a list (or is the last line)
                    if type(first) is SkippedLine and len(first) > MAX_LINE_BYTES:
                        long_lines.append((numbered + 1, len(first)))
                    numbered += len(batch)
                    consumed += sum(map(len, batch)) + len(batch)
                    start = 0
                    while header is None and start < len(batch):
                        line = batch[start]
                        start += 1
                        entry = parse_line(line) if line else None
                        if entry is None:
                            continue
                        if not is_session_header(entry):
                            return None, [], False
                        header, header_line = entry, line
                    lines.extend(filter(None, batch[start:] if start else batch))
        finally:
            os.close(fd)
        if header is None:
            return None, [], False
        if long_lines:
            warn_long_lines(self.path, long_lines)
        last = batch[-1] if batch else b""  # the text after the final newline
        pending = self._loaded(_identity(info), header, header_line, consumed, last)
        return header, ScannedLines(lines), pending

    def _open_regular(self) -> tuple[int, os.stat_result]:
        """A read-only descriptor on the path and its status; only a regular file is a session."""
        self._close()
        # O_NONBLOCK: opening a FIFO planted at the path must not wait for a writer.
        fd = os.open(self.path, os.O_RDONLY | _CLOEXEC | _NONBLOCK)
        try:
            info = os.fstat(fd)
            if stat.S_ISDIR(info.st_mode):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), self.path)
            if not stat.S_ISREG(info.st_mode):
                raise InvalidSessionError(f"Session path is not a regular file: {self.path}")
        except BaseException:
            os.close(fd)
            raise
        return fd, info

    def _loaded(
        self, identity: tuple[int, int], header: WireEntry, header_line: bytes, size: int, tail: bytes
    ) -> bool:
        """Remember what a load read, up to ``size`` bytes of which ``tail`` follows the last
        newline; True if the file lacks its final newline."""
        tail_parsed = tail is header_line or (tail != b"" and scan_raw(tail) is not None)
        self._identity = identity
        self.session_id = header["id"]
        self.size = size
        pending = tail != b""
        # An unfinished last line may still be growing: read it again next time (unless it is
        # one too long or malformed to ever read: never read again, and the next write starts
        # a line of its own, as after a complete line).
        skipped = type(tail) is SkippedLine
        self.offset = size - len(tail) if pending and not tail_parsed and not skipped else size
        # A complete entry without its "\n" (an editor's save, a writer killed just before the
        # newline): the next append must start a new line, or it would glue onto this one.
        self._unterminated = pending and (tail_parsed or skipped)
        return pending

    def load_low_memory(self) -> tuple[WireEntry | None, BodyLines | list[Record], bool]:
        """:meth:`load`, leaving the entry bodies in the file (``low_memory=True``): the file
        stays open (``self.bodies``), each line is scanned when the records are iterated, and a
        record's raw line is its number in ``self.bodies``. Nothing is written here."""
        from ._bodies import BodyFile, BodyLines, last_line_start, lines_at

        fd, info = self._open_regular()
        bodies = BodyFile(self.path, fd, _identity(info))  # owns fd from here on
        # Up to the size seen now: what another writer appends meanwhile is read as new later.
        size = info.st_size
        end = last_line_start(fd, size)
        tail = _read_tail(fd, end, size)  # the text after the last "\n"
        header: WireEntry | None = None
        header_line = b""
        start = end
        for offset, line in lines_at(fd, 0, end, self.path):
            entry = parse_line(line) if line else None
            if entry is None:
                continue
            if not is_session_header(entry):
                bodies.release()
                return None, [], False
            header, header_line, start = entry, line, offset + len(line) + 1
            break
        if header is None and tail:
            entry = parse_line(tail)
            if entry is not None and is_session_header(entry):
                header, header_line = entry, tail
        if header is None:
            bodies.release()
            return None, [], False
        pending = self._loaded(bodies.identity, header, header_line, size, tail)
        self.bodies = bodies
        return header, BodyLines(bodies, start, end, b"" if tail is header_line else tail), pending

    def read_new(self, *, settle: bool = False) -> list[Record] | None:
        """Entries appended since the last read; None when the file was replaced or shrank.

        ``settle`` (before a write): if the file ends with a partial line, wait while it grows
        for the rest of it, reading on from the known offset, rather than write into it.
        """
        records = self._read_new()
        if settle and records is not None and self.size > self.offset:
            self._settle(records)
        return records

    def _settle(self, records: list[Record]) -> None:
        """Wait for another writer's partial last line to end, absorbing what arrives; give up
        once it stops growing for ``PARTIAL_QUIET_S`` (a torn line: the write closes it)."""
        try:
            if time.time() - os.stat(self.path).st_mtime >= PARTIAL_QUIET_S:
                return  # nobody has written for a while: no line is arriving
        except OSError:
            return
        fd = self._fd
        if fd is None:
            return
        started = last_change = time.monotonic()
        delay = 0.0005
        while self.size > self.offset:
            now = time.monotonic()
            if now - last_change >= PARTIAL_QUIET_S or now - started >= PARTIAL_PATIENCE_S:
                return
            time.sleep(delay)
            delay = min(delay * 2, 0.01)
            size = os.fstat(fd).st_size
            if size == self.size:
                continue
            last_change = time.monotonic()
            # Only the bytes that arrived are looked at; the line is parsed once it is whole.
            if size < self.size or b"\n" in os.pread(fd, size - self.size, self.size):
                more = self._read_new()
                if more is None:
                    return  # replaced or shrunk meanwhile: the write path finds out and reloads
                records.extend(more)
            else:
                self.size = size

    def _read_new(self) -> list[Record] | None:
        try:
            info = os.stat(self.path)
        except FileNotFoundError:
            return None if self._identity is not None else []
        if self._identity is not None and (info.st_dev, info.st_ino) != self._identity:
            return None
        if info.st_size < self.offset:
            return None
        self.size = info.st_size
        if info.st_size == self.offset:
            return []
        self._unterminated = False  # someone wrote after it: the bytes from offset on tell the rest
        fd = self._descriptor() if self._identity is not None else None
        if fd is None:
            return None
        data = os.pread(fd, info.st_size - self.offset, self.offset)
        end = data.rfind(b"\n")
        if end < 0:
            return []
        start = self.offset
        self.offset += end + 1
        if self.unconfirmed:
            self._mark = -1  # read past the run's start: its lines can no longer be read from there
        bodies = self.bodies
        if bodies is not None and bodies.identity == self._identity:
            return _scan_lines(data[:end], start, bodies)  # others' lines stay in the file too
        return _scan_lines(data[:end])

    @property
    def has_partial_line(self) -> bool:
        """The file ends with bytes after the last newline (a torn or unfinished line)."""
        return self.size > self.offset or self._unterminated

    # -- writing -----------------------------------------------------------------------------

    def create(self, lines: Iterable[bytes]) -> None:
        """Write a new file, mode 0600, that appears complete or not at all: written and synced
        under a temporary name in the same folder, then linked to its name, which fails
        (``SessionExistsError``) rather than replace a file already there."""
        data = b"".join(lines)
        if os.path.lexists(self.path):
            raise SessionExistsError(f"Session file already exists: {self.path}")
        fd, temp = self._temp_file()
        try:
            _write_all(fd, data)
            os.fsync(fd)
            info = os.fstat(fd)
            try:
                os.link(temp, self.path)
            except FileExistsError as error:
                raise SessionExistsError(f"Session file already exists: {self.path}") from error
            except OSError as error:
                if error.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOSYS, errno.EMLINK):
                    raise
                # No hard links here (some FUSE and network file systems): a rename, after
                # checking again that nothing took the name (the lock keeps pisession out).
                if os.path.lexists(self.path):
                    raise SessionExistsError(f"Session file already exists: {self.path}") from error
                os.rename(temp, self.path)
        finally:
            os.close(fd)
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp)
        self._identity = (info.st_dev, info.st_ino)
        self.offset = self.size = len(data)
        self.session_id = _header_id(data)

    def _temp_file(self) -> tuple[int, str]:
        """A new private file beside the session, named after it (``.pisession-<tag>-*.tmp``)
        so that the session's next rewrite can recognise and delete one a killed process left."""
        import tempfile  # start-up: only writers pay for it

        directory = os.path.dirname(self.path) or "."
        return tempfile.mkstemp(prefix=_temp_prefix(self.path), suffix=".tmp", dir=directory)

    def remove_stale_temps(self) -> None:
        """Delete the temporary files of this session's killed rewrites. Called with the lock
        held, so no live rewrite of this session owns one."""
        directory = os.path.dirname(self.path) or "."
        prefix = _temp_prefix(self.path)
        with contextlib.suppress(OSError):
            for name in os.listdir(directory):
                if name.startswith(prefix) and name.endswith(".tmp"):
                    with contextlib.suppress(OSError):
                        os.unlink(os.path.join(directory, name))

    def append(self, data: bytes, *, verified: bool = False) -> bool:
        """Append whole lines with one write; a torn line left by a crash is closed first.

        True means the file holds more than the caller has read: another writer's lines landed
        next to ours, a torn line was closed, or the path named another file than the one we
        had open (replaced since we last looked, inside a batch); the caller should re-read it.

        ``verified``: the caller has just read the file under the lock (``read_new`` checks
        the path still names our file), and the write position tells whether anyone wrote
        beside us. Otherwise (inside a batch, where the lock stays held) both are looked at
        every ``RECHECK_NS`` and by :meth:`confirm` rather than per append (a ``stat`` and an
        ``lseek`` per append cost a fifth of it); lines written since the last look are kept
        until the next, so a file replaced meanwhile gets the ones it lacks.
        """
        fd = self._fd
        if fd is None:
            fd = self._descriptor()
            if fd is None:
                raise InvalidSessionError(f"Session file disappeared: {self.path}")
        if verified:
            interleaved = self._write_lines(fd, data, replaced=False)
            self.unconfirmed.clear()
            self._confirmed_at = time.monotonic_ns()
            return interleaved
        if not self.unconfirmed:
            self._mark = self.offset
        if self._unterminated or self.size > self.offset:
            self.run_records = None
            interleaved = self._write_lines(fd, data, replaced=False)
        else:  # the batch path, inline: it runs thousands of times
            self.offset = self.size = self.size + self._write_once(fd, data)
            interleaved = False
        self.unconfirmed.append(data)
        if time.monotonic_ns() - self._confirmed_at >= RECHECK_NS:
            return self.confirm() or interleaved
        return interleaved

    def confirm(self) -> bool:
        """Look whether the unconfirmed lines landed as we assumed: if the path names another
        file now, append the lines it lacks to it; if another writer's bytes came between
        ours, say so. True in either case: the caller should read the file again."""
        changed = False
        self.run_records = None
        if self.unconfirmed:
            try:
                fd = self._fd
                if (fd is None and self._identity is None) or self._replaced(fd):
                    self._rescue(self.unconfirmed)
                    changed = True
                elif fd is not None:
                    end = os.lseek(fd, 0, os.SEEK_CUR)
                    if end != self.size:
                        # With O_APPEND our position is the end of our last line: more bytes
                        # before it than we wrote mean a writer without the lock wrote between.
                        # Every line since the run of unconfirmed lines began (ours and
                        # theirs, in file order) is read from there, not the whole file.
                        changed = True
                        self.run_records = self._read_run(fd, end)
            except BaseException:
                self._confirmed_at = 0  # gone or unreadable: look again at the next append
                raise
            finally:
                self.unconfirmed.clear()
        self._confirmed_at = time.monotonic_ns()
        return changed

    def _read_run(self, fd: int, end: int) -> list[Record] | None:
        start = self._mark
        if start < 0 or start > end or self._unterminated:
            return None
        data = os.pread(fd, end - start, start)
        if len(data) != end - start or (data and not data.endswith(b"\n")):
            return None
        self.offset = self.size = end
        return _scan_lines(data[:-1]) if data else []

    def _rescue(self, lines: list[bytes]) -> None:
        """Append to the file now at the path those of ``lines`` whose entries it lacks (a
        copy of the old file made after some of them were written already holds those)."""
        fd = self._reopen()
        present: set[str] = set()  # the ids of our lines are strings we made
        header_seen = False
        with os.fdopen(os.dup(fd), "rb") as handle:
            for line in iter_file_lines(handle):
                if not header_seen and line:
                    header = parse_line(line)
                    if header is None:
                        continue
                    header_seen = True
                    if self.session_id is not None and (
                        not is_session_header(header) or header["id"] != self.session_id
                    ):
                        raise SessionReplacedError(
                            f"Session file {self.path} now holds another session "
                            f"({header.get('id')!r:.60}, not {self.session_id!r}): nothing was written to it"
                        )
                    continue
                scanned = scan_raw(line) if line else None
                if scanned is not None and type(scanned[0].id) is str:
                    present.add(scanned[0].id)
        missing = []
        for data in lines:
            for line in data.split(b"\n"):
                if not line:
                    continue
                scanned = scan_raw(line)
                if scanned is None or scanned[0].id not in present:
                    missing.append(line + b"\n")
        if missing:
            self._write_lines(fd, b"".join(missing), replaced=True)

    def _reopen(self) -> int:
        self._close()
        self._identity = None
        fd = self._descriptor()
        if fd is None:
            raise InvalidSessionError(f"Session file disappeared: {self.path}")
        self.offset = self.size = os.fstat(fd).st_size
        self._unterminated = self.size > 0 and os.pread(fd, 1, self.size - 1) != b"\n"
        return fd

    def _write_lines(self, fd: int, data: bytes, *, replaced: bool) -> bool:
        closing = self.has_partial_line
        payload = b"\n" + data if closing else data
        written = self._write_once(fd, payload)
        end = os.lseek(fd, 0, os.SEEK_CUR)
        self._unterminated = written < len(payload)
        # Closing someone else's unterminated line may have completed an entry we never read
        # (one whose writer died just before its "\n"): report it like an interleaved write so
        # the caller reads the file again instead of missing that entry.
        interleaved = closing or replaced or end - written != self.size
        self.between = None
        if interleaved and not replaced:
            self.between = self._read_between(fd, end - written + (1 if closing else 0))
        self.size = end
        if not interleaved or self.between is not None:
            self.offset = end
        return interleaved

    def _read_between(self, fd: int, start: int) -> list[Record] | None:
        """Other writers' lines between what we had read and our line (which begins at
        ``start``): complete lines are read from the known offset; anything else (our line
        glued onto a torn one) gives None, and the caller reads the whole file again."""
        if start < self.offset:
            return None
        gap = os.pread(fd, start - self.offset, self.offset) if start > self.offset else b""
        if len(gap) != start - self.offset or (gap and not gap.endswith(b"\n")):
            return None
        return _scan_lines(gap[:-1]) if gap else []

    def _write_once(self, fd: int, data: bytes) -> int:
        written = os.write(fd, data)
        if written != len(data):
            return self._finish_short_write(fd, data, written)
        return written

    def _finish_short_write(self, fd: int, data: bytes, written: int) -> int:
        """A write cut short (disk full, a file size limit): write the rest. If that fails too
        and only the final newline is missing, the entry is complete on disk for every reader:
        it counts as written, and the next write begins with the newline. Otherwise the torn
        line is left for the next write to close, and the entry is not in the file."""
        try:
            while written < len(data):
                more = os.write(fd, memoryview(data)[written:])
                if more <= 0:
                    raise OSError(errno.EIO, "write made no progress")
                written += more
            return written
        except OSError as error:
            if written == len(data) - 1 and data.endswith(b"\n"):
                self._unterminated = True
                return written
            self.size = os.fstat(fd).st_size
            raise OSError(
                error.errno, f"short write to {self.path}: {written} of {len(data)} bytes ({error.strerror})"
            ) from error

    def append_newline(self) -> None:
        fd = self._descriptor()
        if fd is None:
            raise InvalidSessionError(f"Session file disappeared: {self.path}")
        os.write(fd, b"\n")
        self._unterminated = False
        self.size = os.lseek(fd, 0, os.SEEK_CUR)

    def rewrite(self, lines: Iterable[bytes]) -> None:
        """Replace the file's content atomically: temp file in the same folder, then rename
        (temporary files an earlier, killed rewrite of this session left are deleted first)."""
        if os.path.islink(self.path):
            # Renaming over the link would replace it and leave its target as it was.
            raise SymlinkRefusedError(
                errno.ELOOP, f"Session file is a symbolic link, pisession does not rewrite it: {self.path}"
            )
        try:
            mode = os.stat(self.path).st_mode & 0o777
        except FileNotFoundError:
            mode = FILE_MODE
        self.remove_stale_temps()
        data = b"".join(lines)
        fd, temp = self._temp_file()

        def keep_mode_and_owner(fd: int) -> None:
            os.fchmod(fd, mode)
            _keep_owner(fd, self.path)

        replace_with_temp(self.path, data, fd, temp, prepare=keep_mode_and_owner)
        self._close()
        info = os.stat(self.path)
        self._identity = (info.st_dev, info.st_ino)
        self.offset = self.size = len(data)
        self._unterminated = False
        self.session_id = _header_id(data)

    def close(self) -> None:
        """Drop the descriptors; later writes raise :class:`SessionClosedError` (the descriptor
        is never reopened behind the caller's back: a number reused since could name another
        file)."""
        self.closed = True
        self._close()
        self.lock.close()

    def _close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _replaced(self, fd: int | None) -> bool:
        """Whether the path now names another file than ``fd`` (or nothing at all)."""
        try:
            current = os.stat(self.path, follow_symlinks=False)
        except FileNotFoundError:
            raise InvalidSessionError(f"Session file disappeared: {self.path}") from None
        # _descriptor() recorded the identity of the file fd was opened on.
        if self._identity is not None:
            mine = self._identity
        else:
            assert fd is not None
            mine = _identity(os.fstat(fd))
        return (current.st_dev, current.st_ino) != mine

    def _descriptor(self) -> int | None:
        if self._fd is None:
            if self.closed:
                raise SessionClosedError(f"Session file was closed: {self.path}")
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_APPEND | _CLOEXEC | _NOFOLLOW)
            except FileNotFoundError:
                return None
            except OSError as error:
                _refuse_symlink(self.path, error)
                raise
            info = os.fstat(fd)
            if self._identity is not None and (info.st_dev, info.st_ino) != self._identity:
                os.close(fd)
                return None
            self._identity = (info.st_dev, info.st_ino)
            self._fd = fd
        return self._fd

    def __del__(self) -> None:
        fd = getattr(self, "_fd", None)
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)


class ReadOnlySessionFile(SessionFile):
    """A session file a read-only view follows (``read_session``): read, never written.

    The descriptor is opened read-only (a file the user may not write is still followed), and
    every write raises :class:`SessionReadOnlyError` before touching anything: no repair, no
    header, no lock file, no temporary file.
    """

    def _new_lock(self, path: str) -> SessionLock:
        # Never taken; not even the lock module is imported (start-up of the reading commands).
        return _NoLock(path + ".lock")  # type: ignore[return-value]

    def reopened(self) -> ReadOnlySessionFile:
        return ReadOnlySessionFile(self.path)

    def _descriptor(self) -> int | None:
        if self._fd is None:
            if self.closed:
                raise SessionClosedError(f"Session file was closed: {self.path}")
            try:
                fd = os.open(self.path, os.O_RDONLY | _CLOEXEC | _NONBLOCK)
            except FileNotFoundError:
                return None
            info = os.fstat(fd)
            if self._identity is not None and (info.st_dev, info.st_ino) != self._identity:
                os.close(fd)
                return None
            self._identity = (info.st_dev, info.st_ino)
            self._fd = fd
        return self._fd

    def _read_new(self) -> list[Record] | None:
        try:
            return super()._read_new()
        finally:
            # A follower of a folder holds a view per session: no descriptor stays open between
            # reads (reopening checks it is the same file).
            self._close()

    def _refuse(self, *args: object, **kwargs: object) -> Any:
        raise SessionReadOnlyError(f"Session {self.path} is followed read-only: it is never written")

    create = append = append_newline = rewrite = remove_stale_temps = _refuse


class _NoLock:
    """The lock of a file that is never written: it names its path (for messages) and is never
    held."""

    is_locked = False

    def __init__(self, path: str) -> None:
        self.path = path

    def close(self) -> None:
        pass

    def _refuse(self, *args: object, **kwargs: object) -> Any:
        raise SessionReadOnlyError(f"{self.path} is never taken: the session is followed read-only")

    acquire = hold = release = _refuse


def _keep_owner(fd: int, path: str) -> None:
    """Root rewriting a user's session gives the new file the old one's owner and group, so the
    user (and Pi running as the user) can still append to it."""
    if os.geteuid() != 0:
        return
    try:
        old = os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return
    info = os.fstat(fd)
    if (info.st_uid, info.st_gid) != (old.st_uid, old.st_gid):
        os.fchown(fd, old.st_uid, old.st_gid)


def _header_id(data: bytes) -> str | None:
    """The header id of the file content ``data`` (its first line)."""
    cut = data.find(b"\n")
    header = parse_line(data if cut < 0 else data[:cut])
    return header["id"] if header is not None and is_session_header(header) else None


def _scan_lines(data: bytes, start: int = 0, bodies: BodyFile | None = None) -> list[Record]:
    """The records of complete lines ``data`` (found at offset ``start``); with ``bodies``, a
    line is referred to by its number there rather than kept."""
    records: list[Record] = []
    at = start
    for line in data.split(b"\n"):
        if line:
            scanned = scan_raw(line)
            if scanned is not None:
                head, parsed = scanned
                if bodies is not None:
                    records.append((head, bodies.add(at, line), None))
                else:
                    records.append((head, line if parsed is None else None, parsed))
        at += len(line) + 1
    return records


def _read_tail(fd: int, start: int, size: int) -> bytes:
    """The bytes ``start`` to ``size`` of the file, a last line without its newline: as a
    :class:`SkippedLine` when it is too long or malformed to read (never held whole)."""
    if size - start <= 1 << 20:
        return os.pread(fd, size - start, start)
    first = os.pread(fd, 1 << 20, start)
    if size - start > MAX_LINE_BYTES or not may_parse(first):
        return skipped_line(size - start, first)
    return os.pread(fd, size - start, start)


def _temp_prefix(path: str) -> str:
    """``.pisession-`` and a short digest of the session's file name: a fixed length whatever
    the name's, and the same for every rewrite of that session."""
    import hashlib  # start-up: only writers pay for it

    tag = hashlib.sha256(os.path.basename(path).encode("utf-8", "surrogateescape")).hexdigest()[:16]
    return f".pisession-{tag}-"


def _identity(info: os.stat_result) -> tuple[int, int]:
    return (info.st_dev, info.st_ino)


def replace_with_temp(
    target: str, data: bytes, fd: int, temp: str, *, prepare: Callable[[int], None] | None = None
) -> None:
    """Write ``data`` to the temporary file ``temp`` (open as ``fd``, in ``target``'s folder),
    sync it and rename it over ``target``: a reader sees the old file or the new one, never a
    part. ``prepare(fd)`` runs first (mode, owner). On any failure the temporary file goes."""
    try:
        if prepare is not None:
            prepare(fd)
        _write_all(fd, data)
        os.fsync(fd)
        os.close(fd)
        fd = -1
        os.replace(temp, target)
    except BaseException:
        if fd >= 0:
            os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]
