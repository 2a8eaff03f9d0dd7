"""Reading part of a session file in bounded chunks, for the catalog's refresh and its usage rows
(both read an unfinished last line; neither imports the other)."""

from __future__ import annotations

import zlib
from typing import Any

from .._load import SkippedLine, iter_file_lines, open_regular

__all__ = ["WHOLE_READ", "CheckedRange", "read_range"]

# A range this long is read in one call and split once (iter_line_lists reads it in one chunk
# too): its lines are then also the bytes read, joined
WHOLE_READ = 1 << 20
_EDGE = 512  # bytes compared at both ends of the old content before reading only the new end


class CheckedRange:
    """A file read from its position for at most ``length`` bytes, in the caller's chunks,
    keeping the CRC-32 of the bytes from ``crc_from`` on (starting from ``crc``) and the first
    and last ``_EDGE`` bytes read: what the catalog keeps of a file, never holding it whole."""

    def __init__(self, handle: Any, length: int, crc_from: int = 0, crc: int = 0) -> None:
        self.handle, self.left, self.crc_from, self.crc = handle, length, crc_from, crc
        self.total = 0
        self.head = b""
        self.tail = b""

    def read(self, n: int = -1) -> bytes:
        if self.left <= 0:
            return b""
        wanted = self.left if n < 0 else min(n, self.left)
        chunk: bytes = self.handle.read(wanted)
        if not chunk:
            self.left = 0
            return b""
        while len(chunk) < wanted:  # a raw file's read may be short (a signal, a network file)
            more = self.handle.read(wanted - len(chunk))
            if not more:
                break
            chunk += more
        at = self.total
        self.left -= len(chunk)
        self.total += len(chunk)
        if self.total > self.crc_from:
            self.crc = zlib.crc32(chunk[max(0, self.crc_from - at) :], self.crc)
        if len(self.head) < _EDGE:
            self.head += chunk[: _EDGE - len(self.head)]
        self.tail = (self.tail + chunk[-_EDGE:])[-_EDGE:]
        return chunk


def read_range(path: str, start: int, end: int) -> bytes:
    """The bytes of ``path`` from ``start`` to ``end`` (an unfinished last line), read in chunks:
    a line in them longer than MAX_LINE_BYTES is left out, unheld, as every reader skips it."""
    try:
        with open_regular(path) as handle:
            handle.seek(start)
            lines = list(iter_file_lines(CheckedRange(handle, max(0, end - start))))
    except OSError:
        return b""
    return b"\n".join(line for line in lines if type(line) is not SkippedLine)
