"""What reading a session file for the catalog gave (:class:`FileRead`), and how a read made in
a worker process crosses its pipe (:func:`to_pipe`, :func:`from_pipe`).

A pickle of a read cost about 40 µs to make in the worker and as much to read back in the
writing process, per file (it rebuilds the stat result, the summary and the prepared usage
through their reduce methods): a tenth of a cold report's writing process. marshal writes the
same plain values (the stat result's, the summary's and the prepared usage's fields in order)
and reads them back in a few µs; a read holding a value marshal cannot write goes as a pickle.
"""

from __future__ import annotations

import functools
import marshal
import os
from typing import TYPE_CHECKING, Any

from .._discovery import SessionSummary
from .._record import Record

if TYPE_CHECKING:
    from ._usage import PreparedUsage

__all__ = ["FileRead", "from_pipe", "to_pipe"]


class FileRead(Record):
    """What reading a file (in full, or from its old end) gave, before any of it is stored: made
    in this process or, for a file with no row yet, in a worker process (see :func:`to_pipe`)."""

    stats: os.stat_result
    checked_ns: int
    zone: str
    zone_read: bool  # a date was read in the local time zone
    start: int
    appended: bool
    summary: SessionSummary
    total: int
    crc: int
    head: bytes
    tail: bytes
    cut: int
    partial: bytes | None
    usage: list[Any]
    prepared: Any  # _usage.PreparedUsage of usage, or None
    damaged: int
    long_lines: list[tuple[int, int]]
    numbered: bool
    lacks: int  # the parts not read (see _schema.USAGE)
    filled: int  # the parts a row lacked that this read of its lines fills in (0: not such a read)
    all_text: bytes  # the row's text and JSON made ahead (in the worker, for a new file)
    modified: float | None
    wire_head: bytes | None


_FIELDS = FileRead._record_fields
_STATS, _SUMMARY, _PREPARED = (_FIELDS.index(name) for name in ("stats", "summary", "prepared"))
_MARSHALLED, _PICKLED = b"M", b"P"


def to_pipe(read: FileRead | str) -> bytes:
    """``read`` (or why a file could not be read) as bytes for :func:`from_pipe`."""
    if isinstance(read, FileRead):
        values = [getattr(read, name) for name in _FIELDS]
        values[_STATS] = read.stats.__reduce__()[1]  # (its fields, its named fields)
        values[_SUMMARY] = tuple(getattr(read.summary, name) for name in SessionSummary.__slots__)
        if read.prepared is not None:
            values[_PREPARED] = tuple(getattr(read.prepared, name) for name in read.prepared.__slots__)
        try:
            return _MARSHALLED + marshal.dumps(tuple(values), 2)  # (no shared references: faster both ways)
        except ValueError:  # a value of a type marshal does not write
            pass
    import pickle  # (a listing that reads no file in workers does not import it)

    return _PICKLED + pickle.dumps(read, protocol=pickle.HIGHEST_PROTOCOL)


@functools.cache
def _prepared_usage() -> type[PreparedUsage]:
    """The usage module's class, imported once (an import statement costs 3 µs a file; at the
    top, it would bring the usage module into a listing)."""
    from ._usage import PreparedUsage

    return PreparedUsage


def from_pipe(data: bytes) -> FileRead | str:
    """What :func:`to_pipe` was given (made in this process's own worker: trusted bytes)."""
    if data[:1] == _PICKLED:
        import pickle

        read: FileRead | str = pickle.loads(memoryview(data)[1:])
        return read
    values = list(marshal.loads(memoryview(data)[1:]))
    values[_STATS] = os.stat_result(*values[_STATS])
    summary = SessionSummary.__new__(SessionSummary)
    for name, value in zip(SessionSummary.__slots__, values[_SUMMARY], strict=True):
        setattr(summary, name, value)
    values[_SUMMARY] = summary
    if values[_PREPARED] is not None:
        PreparedUsage = _prepared_usage()
        prepared = PreparedUsage.__new__(PreparedUsage)
        for name, value in zip(PreparedUsage.__slots__, values[_PREPARED], strict=True):
            setattr(prepared, name, value)
        values[_PREPARED] = prepared
    return FileRead(*values)
