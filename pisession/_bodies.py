"""Entry bodies left in the session file rather than in memory (``low_memory=True``).

A low-memory open keeps, for each entry not read yet, where its line lies (offset, length) and
a hash of its bytes in three compact arrays, and one read-only descriptor on the file; the line
is read back (``os.pread``) and checked when the entry is first read. Pi only appends to a
version-3 file and pisession's own rewrites replace it by rename, so the descriptor still reads
the bytes that were scanned; a file truncated or rewritten in place gives
:class:`SessionChangedError`, never other bytes.

The hash is Python's own ``hash`` of the line: SipHash, 64 bits, keyed at random per process
(unless ``PYTHONHASHSEED`` fixes the key), so a writer cannot aim other bytes at it; and measured
faster than ``zlib.crc32`` (5.5 ms against 7.5 ms for the 17.4 MB benchmark file). The table
lives in one process only, so the key never has to match another's.
"""

from __future__ import annotations

import _thread
import contextlib
import os
import stat
from collections.abc import Iterator

from ._errors import InvalidSessionError, SessionChangedError
from ._load import _head_decoder, iter_line_lists, scan_raw

# typing for type checkers only (they take TYPE_CHECKING for true): importing it at run time
# took 8 % of `pisession tree`'s start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ._load import Record

__all__ = ["BodyFile", "BodyLines", "UNREAD", "lines_at", "last_line_start"]

_CHUNK = 1 << 16  # 64 KiB: a 1 MiB read buffer and its lines measured 0.1 x the file in peak RSS
_TAIL_STEP = 1 << 16
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)


class _Unread:
    """A timestamp a low-memory open left in the file (read back when siblings are sorted)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "UNREAD"


UNREAD: Any = _Unread()


class BodyFile:
    """One session file's descriptor and where each referenced line lies in it.

    Shared by every snapshot (index store) of the file as it was loaded; a line is referred to
    by its number here. The descriptor is closed when the last store and manager referring to
    this object are gone, or by :meth:`release` (the manager's ``close()``): later reads then
    open the path for each read and check it is still the same file (device and inode).
    """

    __slots__ = ("path", "identity", "_fd", "_lock", "offsets", "lengths", "hashes")

    def __init__(self, path: str, fd: int, identity: tuple[int, int]) -> None:
        self.path = path
        self.identity = identity
        self._fd = fd
        from array import array  # start-up: the index imports this module; only this needs array

        self._lock = _thread.allocate_lock()  # release() must not close the number a read is using
        self.offsets = array("q")
        self.lengths = array("q")
        self.hashes = array("q")

    def add(self, offset: int, line: bytes) -> int:
        """Refer to ``line`` (without its newline), found at ``offset``; returns its number."""
        number = len(self.offsets)
        self.offsets.append(offset)
        self.lengths.append(len(line))
        self.hashes.append(hash(line))
        return number

    def read(self, number: int, entry_id: object) -> bytes:
        """The line ``number`` refers to, as it was scanned; :class:`SessionChangedError` if the
        file no longer holds it (``entry_id`` names the entry in the message)."""
        offset = self.offsets[number]
        length = self.lengths[number]
        try:
            with self._lock:
                if self._fd >= 0:
                    data = os.pread(self._fd, length + 1, offset)
                else:
                    data = self._read_reopened(length + 1, offset, entry_id)
        except OSError as error:
            raise self._changed(entry_id, f"it cannot be read: {error}") from error
        if len(data) != length + 1:
            raise self._changed(entry_id, "the file is shorter than when it was opened")
        if data[length] != 10:  # "\n"
            raise self._changed(entry_id, "its line no longer ends where it did")
        line = data[:length]
        if hash(line) != self.hashes[number]:
            raise self._changed(entry_id, "its line holds other bytes than when it was opened")
        return line

    def _read_reopened(self, size: int, offset: int, entry_id: object) -> bytes:
        try:
            fd = os.open(self.path, os.O_RDONLY | _CLOEXEC | _NONBLOCK)
        except FileNotFoundError:
            raise self._changed(entry_id, "the file is gone") from None
        try:
            info = os.fstat(fd)
            if not stat.S_ISREG(info.st_mode) or (info.st_dev, info.st_ino) != self.identity:
                raise self._changed(entry_id, "another file is at its path now")
            return os.pread(fd, size, offset)
        finally:
            os.close(fd)

    def _changed(self, entry_id: object, why: str) -> SessionChangedError:
        return SessionChangedError(
            f"{self.path}: entry {entry_id!r:.60} cannot be read as it was when the session was "
            f"opened with low_memory=True ({why}): the file was truncated, rewritten in place or "
            "replaced; open it again to read it as it is now"
        )

    def release(self) -> None:
        """Close the descriptor now; later reads open the path for each read."""
        with self._lock:
            fd, self._fd = self._fd, -1
        if fd >= 0:
            os.close(fd)

    def __del__(self) -> None:
        fd = getattr(self, "_fd", -1)
        if fd >= 0:
            with contextlib.suppress(OSError):
                os.close(fd)

    def __reduce__(self) -> Any:
        raise TypeError(
            f"a low-memory session's open file ({self.path}) cannot be pickled; pickle a "
            "snapshot instead (manager.snapshot(): its entries are read into it)"
        )


class BodyLines:
    """The entries of a file opened with ``low_memory=True``, scanned from the file each time
    they are iterated (as :class:`~pisession._store.ScannedLines` scans its lines): a record's
    raw line is its number in ``bodies``; a last line without its newline is kept as bytes."""

    __slots__ = ("bodies", "start", "end", "tail")

    def __init__(self, bodies: BodyFile, start: int, end: int, tail: bytes) -> None:
        self.bodies = bodies
        self.start = start
        self.end = end
        self.tail = tail

    def __iter__(self) -> Iterator[Record]:
        return self._scan(_KEEP_ALL, implicit=False)

    def without_sessions(self) -> Iterator[Record]:
        """The entries but those of type ``session``, for a new index to take every one of in
        order (``TreeIndex.from_records``). On a fresh line table each line's number is then its
        position in the index, and the raw line is None: no int object per entry. Heads leave
        the timestamp in the file too (``UNREAD``; labels, which need it, keep theirs)."""
        return self._scan("session", implicit=not self.bodies.offsets)

    def with_lines(self) -> Iterator[Record]:
        """Every record with its line read back as bytes (for a migration in memory)."""
        read = self.bodies.read
        for head, raw, entry in self:
            yield head, read(raw, head.id) if isinstance(raw, int) else raw, entry

    def _scan(self, skip_type: object, *, implicit: bool) -> Iterator[Record]:
        bodies = self.bodies
        offsets, lengths, hashes = bodies.offsets, bodies.lengths, bodies.hashes
        add_offset, add_length, add_hash = offsets.append, lengths.append, hashes.append
        scan = scan_raw
        stampless = _head_decoder(UNREAD) if implicit else None
        decode, errors = stampless if stampless is not None else (None, ())
        for offset, line in lines_at(bodies._fd, self.start, self.end, bodies.path):
            if not line:
                continue
            head: Any = None
            if decode is not None:
                try:
                    head = decode(line)
                except errors:
                    head = None
                else:
                    if head.type == "label":  # its timestamp is the label's
                        head = None
            if head is None:
                scanned = scan(line)
                if scanned is None:
                    continue
                head = scanned[0]
            if head.type == skip_type:
                continue
            # bodies.add, inline: one line of every entry of the file takes this step
            number = len(offsets)
            add_offset(offset)
            add_length(len(line))
            add_hash(hash(line))
            yield head, None if implicit else number, None
        tail = self.tail
        if tail:
            scanned = scan(tail)
            if scanned is not None and scanned[0].type != skip_type:
                head, entry = scanned
                yield head, None if entry is not None else tail, entry


_KEEP_ALL = object()


def lines_at(fd: int, start: int, end: int, path: str) -> Iterator[tuple[int, bytes]]:
    """The lines of the file's bytes ``start`` to ``end`` (which a newline ends), each with its
    offset, read 64 KiB at a time and split as :func:`iter_line_lists` splits them (a long line
    gathered and joined once, or read past as a :class:`SkippedLine`)."""
    reader = _Pread(fd, start, end, path)
    at = start
    for lines in iter_line_lists(reader):
        if reader.done:  # the text after the last newline: none, where a newline ends the range
            if lines != [b""]:
                raise InvalidSessionError(f"Session file {path} changed while it was being read")
            return
        for line in lines:
            yield at, line
            at += len(line) + 1


class _Pread:
    """The file's bytes ``start`` to ``end`` as a file object hands them out, ``_CHUNK`` at a
    time whatever size is asked for; ``done`` once the range has been read to its end."""

    __slots__ = ("fd", "pos", "end", "path", "done")

    def __init__(self, fd: int, start: int, end: int, path: str) -> None:
        self.fd, self.pos, self.end, self.path = fd, start, end, path
        self.done = False

    def read(self, size: int = -1) -> bytes:
        if self.pos >= self.end:
            self.done = True
            return b""
        chunk = os.pread(self.fd, min(_CHUNK, self.end - self.pos), self.pos)
        if not chunk:
            raise InvalidSessionError(f"Session file {self.path} shrank while it was being read")
        self.pos += len(chunk)
        return chunk


def last_line_start(fd: int, size: int) -> int:
    """Where the text after the file's last newline begins (0 when it has none)."""
    pos = size
    while pos > 0:
        step = min(_TAIL_STEP, pos)
        block = os.pread(fd, step, pos - step)
        cut = block.rfind(b"\n")
        if cut >= 0:
            return pos - step + cut + 1
        pos -= step
    return 0
