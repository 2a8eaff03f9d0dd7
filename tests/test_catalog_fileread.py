"""A worker's read crosses its pipe as marshal's bytes (:mod:`pisession.catalog._fileread`):
what comes out is what went in, field by field, for every kind of file a first build reads; a
read holding a value marshal cannot write goes as a pickle."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from pisession._discovery import SessionSummary
from pisession._record import replace
from pisession.catalog._fileread import FileRead, from_pipe, to_pipe
from pisession.catalog._refresh import read_new_file
from pisession.catalog._schema import LISTING, USAGE
from tests.test_catalog import header, write
from tests.test_catalog_workers import assistant, odd_folder

_STAT_FIELDS = ("st_mode", "st_ino", "st_dev", "st_size", "st_mtime_ns", "st_ctime_ns", "st_mtime")


def fields(read: FileRead | str) -> Any:
    """Every value of ``read``, its summary's, prepared usage's and stat result's with their types
    (a read's own equality compares the summary by identity, a stat result by its tuple alone)."""
    if isinstance(read, str):
        return read
    out = []
    for name in FileRead._record_fields:
        value = getattr(read, name)
        if name == "stats":
            value = [(field, getattr(value, field)) for field in _STAT_FIELDS]
        elif name == "summary":
            value = [(slot, getattr(value, slot)) for slot in SessionSummary.__slots__]
        elif name == "prepared" and value is not None:
            value = [(slot, getattr(value, slot)) for slot in value.__slots__]
        out.append((name, typed(value)))
    return out


def typed(value: Any) -> Any:
    """``value`` with the type of each part beside it (1 == 1.0 and [] == () would hide a change)."""
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, [typed(item) for item in value])
    if isinstance(value, dict):
        return ("dict", [(typed(key), typed(item)) for key, item in value.items()])
    return (type(value).__name__, value if value == value else "nan")


def folder_of_every_kind(folder: Path) -> None:
    odd_folder(folder)
    # a fork (its rows are sent), a lone surrogate, a NaN cost, an unfinished last line
    surrogate = assistant("s1", "\ud800 text", 0.5)
    surrogate["message"]["model"] = "model-\udc00"
    nan = assistant("n1", "nan", 0.0)
    nan["message"]["usage"]["cost"]["total"] = float("nan")
    odd = folder / "odd.jsonl"
    odd.write_bytes(
        b"".join(
            json.dumps(entry, allow_nan=True).encode("utf-8", "surrogatepass") + b"\n"
            for entry in ({**header("odd"), "parentSession": "/x/p.jsonl"}, surrogate, nan)
        )
        + b'{"type":"message","id":"unfinished"'
    )
    many = (assistant(f"a{n}", "x" * 3000, 0.01 * n) for n in range(200))
    write(folder / "big.jsonl", header("big"), *many)
    # dated by its entry alone: its last activity is a whole number of ms
    dated = {"type": "message", "id": "u1", "parentId": None, "timestamp": "2025-01-02T03:04:05.000Z"}
    write(folder / "dated.jsonl", header("dated"), {**dated, "message": {"role": "user", "content": "hi"}})


@pytest.mark.parametrize("lacks", [0, USAGE, LISTING], ids=["every-part", "listing-only", "usage-only"])
@pytest.mark.parametrize("index", [False, True])
def test_a_read_comes_out_of_the_pipe_as_it_went_in(tmp_path: Path, lacks: int, index: bool) -> None:
    folder = tmp_path / "sessions"
    folder_of_every_kind(folder)
    paths = sorted(str(path) for path in folder.iterdir())
    assert len(paths) > 12
    marshalled = 0
    for path in [*paths, str(tmp_path / "gone.jsonl")]:
        read = read_new_file(path, index, lacks)
        piped = to_pipe(read)
        marshalled += piped[:1] == b"M"
        assert fields(from_pipe(piped)) == fields(read), os.path.basename(path)
    assert marshalled == len(paths)  # every read went as marshal's bytes (not the error text)


class _Text(str):
    """A str subclass: marshal refuses it."""


def test_a_read_marshal_refuses_goes_as_a_pickle(tmp_path: Path) -> None:
    path = write(tmp_path / "s.jsonl", header("s"), assistant("a1", "one", 1.0))
    read = read_new_file(str(path), False)
    assert isinstance(read, FileRead)
    odd = replace(read, zone=_Text(read.zone))
    piped = to_pipe(odd)
    assert piped[:1] == b"P"
    back = from_pipe(piped)
    assert isinstance(back, FileRead) and type(back.zone) is _Text and fields(back) == fields(odd)


@pytest.mark.parametrize("lacks", [0, USAGE, LISTING], ids=["every-part", "listing-only", "usage-only"])
@pytest.mark.parametrize("index", [False, True])
def test_a_file_read_in_one_call_reads_as_in_chunks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, lacks: int, index: bool
) -> None:
    """A file up to ``WHOLE_READ`` long is read in one call, its lines split once and decoded
    from the bytes read; what it gives is what the reading in chunks gives, field by field."""
    from pisession.catalog import _refresh

    folder = tmp_path / "sessions"
    folder_of_every_kind(folder)
    # Pi's reading also ends a line at a lone "\r": one in an entry's white space cuts it in two
    cut = json.dumps(assistant("c2", "cut", 0.5)).replace(', "message"', ',\r"message"')
    (folder / "cr.jsonl").write_bytes(
        b"\n".join(
            [
                json.dumps(header("cr")).encode() + b"\r",
                json.dumps(assistant("c1", "a\rb", 0.5)).encode(),
                cut.encode(),
                json.dumps(assistant("c3", "after", 0.5)).encode(),
                b"\r",
            ]
        )
    )
    (folder / "blank.jsonl").write_bytes(
        b"\n\n  \n".join(json.dumps(entry).encode() for entry in (header("blank"), assistant("b1", "x", 0.5)))
    )
    (folder / "empty.jsonl").write_bytes(b"")
    paths = sorted(str(path) for path in folder.iterdir())

    def read_all() -> list[Any]:
        reads = [read_new_file(path, index, lacks) for path in paths]
        return [fields(replace(read, checked_ns=0)) for read in reads if isinstance(read, FileRead)]

    whole = read_all()
    monkeypatch.setattr(_refresh, "WHOLE_READ", -1)  # every file in chunks
    assert read_all() == whole


class _ShortReads:
    """A raw file whose every read gives at most 7 bytes (a raw read may come back short)."""

    def __init__(self, data: bytes) -> None:
        self.data, self.at = data, 0

    def read(self, size: int = -1) -> bytes:
        size = len(self.data) - self.at if size < 0 else size
        chunk = self.data[self.at : self.at + min(size, 7)]
        self.at += len(chunk)
        return chunk


def test_a_range_read_in_short_pieces_is_read_whole() -> None:
    import zlib

    from pisession.catalog._range import CheckedRange

    data = bytes(range(256)) * 9
    reader = CheckedRange(_ShortReads(data), len(data) - 5)
    assert reader.read() == data[:-5]
    assert reader.read() == b""
    assert (reader.total, reader.crc) == (len(data) - 5, zlib.crc32(data[:-5]))
    assert (reader.head, reader.tail) == (data[:512], data[-5 - 512 : -5])
