"""When a file is as the catalog read it, and when it only grew: the catalog's change rule (and
the dataset's manifest's, which compares files the same way).

A file is unchanged when its device, inode, size, mtime and ctime are those recorded and it was
written clearly before it was read (:func:`same_file`); it only grew when it is larger and the
bytes it had are still there, every one of them (:func:`grew`).
"""

from __future__ import annotations

import os
import stat
import zlib
from typing import Any

from .._js import local_zone_key
from ._range import _EDGE

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._schema import Row

# A write lands in the mtime tick it happens in; the kernel's coarse clock lags by a few ms where
# times have sub-millisecond digits, file systems that keep whole seconds (FAT: two) lag by more.
_RACY_NS = 50_000_000
_RACY_COARSE_NS = 2_000_000_000
_CHECK_BLOCK = 1 << 20


def settled(mtime_ns: int, checked_ns: int) -> bool:
    """Whether a file last written at ``mtime_ns`` was written clearly before it was read at
    ``checked_ns`` (see ``_RACY_NS``); the dataset's manifest follows the same rule."""
    margin = _RACY_COARSE_NS if mtime_ns % 1_000_000 == 0 else _RACY_NS
    return mtime_ns < checked_ns - margin


def same_file(
    stats: os.stat_result,
    dev: int,
    ino: int,
    size: int,
    mtime_ns: int,
    ctime_ns: int,
    checked_ns: int,
    *,
    racy_too: bool = False,
) -> bool:
    """The file is as it was when it was read at ``checked_ns`` (with that device, inode, size,
    mtime and ctime), and was not written too close to that read to tell: the change rule of the
    catalog and of the dataset's manifest.

    A file written in the same timestamp tick as (or after) the read might have changed without
    its size or mtime changing ("racily clean", as git calls it): ``racy_too`` leaves that to the
    caller, who compares its bytes (:func:`file_crc`) with the checksum of those it read.
    """
    return (
        (racy_too or settled(stats.st_mtime_ns, checked_ns))
        and stat.S_ISREG(stats.st_mode)
        and dev == stats.st_dev
        and ino == stats.st_ino
        and size == stats.st_size
        and mtime_ns == stats.st_mtime_ns
        # a rewrite that puts the old mtime back (touch -r, a redaction script) still moves ctime
        and ctime_ns == stats.st_ctime_ns
    )


def same_row(row: Row, stats: os.stat_result, racy_too: bool = False) -> bool:
    """:func:`same_file` for a row; a file whose dates were read in local time and another time
    zone than this one's is read again."""
    return same_file(
        stats, row.dev, row.ino, row.size, row.mtime_ns, row.ctime_ns, row.checked_ns, racy_too=racy_too
    ) and (
        # (the zone key is a repr: built only for a row read in local time, not for every row listed)
        row.zone is None or row.zone == local_zone_key()
    )


def unchanged(row: Row | None, stats: os.stat_result | None, parts: int) -> bool:
    """Whether a file (``stats``, None: gone) is as its row read it, and the row intact with the
    ``parts`` asked for: the file is not opened."""
    return (
        row is not None
        and stats is not None
        and not row.lacks & parts
        and row.intact()
        and same_row(row, stats)
    )


def grew(row: Row, stats: os.stat_result, handle: Any) -> bool:
    """Same file, larger, and the bytes it had are still there: only its new end needs parsing.

    "Still there" is checked on every byte (the checksum of what was read before), not only at
    the edges: a line rewritten in the middle and then appended to must be read again. Checking
    costs a read of the old bytes, a small part of what parsing them again would.
    """
    if (row.dev, row.ino) != (stats.st_dev, stats.st_ino) or stats.st_size <= row.size:
        return False
    handle.seek(0)
    if handle.read(len(row.head)) != row.head:
        return False
    handle.seek(row.size - len(row.tail))
    if handle.read(len(row.tail)) != row.tail:
        return False
    handle.seek(0)
    crc = 0
    left = row.size
    while left > 0:
        block = handle.read(min(left, _CHECK_BLOCK))
        if not block:
            return False
        crc = zlib.crc32(block, crc)
        left -= len(block)
    return crc == row.crc


def file_crc(handle: Any, limit: int) -> int:
    """The CRC-32 of at most ``limit`` bytes read from ``handle``'s position, block by block."""
    crc = 0
    while limit > 0:
        block = handle.read(min(limit, _CHECK_BLOCK))
        if not block:
            break
        crc = zlib.crc32(block, crc)
        limit -= len(block)
    return crc


def edges(head: bytes, tail: bytes, length: int, start: int, old: Row | None) -> tuple[bytes, bytes]:
    """The first and last bytes of the file's content as now read (``length`` bytes from
    ``start``, of which ``head`` and ``tail`` are the first and last ``_EDGE``)."""
    if old is None or start == 0:
        return head, tail
    if length >= _EDGE:
        return old.head, tail
    return old.head, (old.tail + head[old.size - start :])[-_EDGE:]  # head: all that was read
