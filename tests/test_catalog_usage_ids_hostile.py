"""A hostile look at the packed usage ids (``usage_ids``, schema 13): a fork's copies are told by
its parent's packed (entry id, timestamp) pairs, and only a session that names a parent keeps a
row per entry. The expected totals are written out by hand (the report without a catalog reads
through one in memory, so it would share any fault of the catalog's own)."""

from __future__ import annotations

import marshal
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from pisession.catalog import Catalog
from pisession.catalog._schema import usage_checksum
from tests.test_catalog import header, line, msg, write
from tests.test_catalog_parts import report
from tests.test_catalog_workers import assistant

DAY1 = "2025-03-01T10:00:00.000Z"
DAY1_LATER = "2025-03-01T11:00:00.000Z"
DAY2 = "2025-03-02T10:00:00.000Z"


def forked(sid: str, parent: Path | str, stamp: str = "2025-03-01T12:00:00.000Z") -> dict[str, Any]:
    return {**header(sid, stamp=stamp), "parentSession": str(parent)}


def daily(made: Any) -> dict[str, float]:
    return {day["date"]: day["totalCost"] for day in made["daily"]}


def file_id(database: Path, path: Path) -> int:
    with sqlite3.connect(database) as db:
        return int(db.execute("SELECT id FROM files WHERE path = ?", (str(path),)).fetchone()[0])


# ----------------------------------------------------------------- packed ids with a right checksum

# What marshal reads back from a value whose checksum holds but that no read wrote: each must be
# taken as damaged (its file read again), never trusted, never a traceback.
_FORGED = {
    "numbers": [1, 2],
    "triples": [("a1", DAY1, "x")],
    "bytes": [(b"a1", DAY1.encode())],
    "containers": [({}, [])],
    "lists": [["a1", DAY1]],
    "text": "a1",
    "mapping": {"a1": DAY1},
    "pairs of numbers": [(1, 2)],
}


@pytest.mark.parametrize("unfinished", [False, True], ids=["whole-line", "unfinished-line"])
@pytest.mark.parametrize("forged", list(_FORGED), ids=list(_FORGED))
def test_forged_packed_ids_with_a_right_checksum_are_read_again(
    tmp_path: Path, forged: str, unfinished: bool
) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    copied = assistant("a1", "answer", 1.0, DAY1)
    parent = write(folder / "parent.jsonl", header("parent"), msg("u", "user", "q"), copied)
    if unfinished:  # the copy on the fork's unfinished last line
        write(folder / "fork.jsonl", forked("fork", parent), tail=line(copied)[:-1])
        expected = {"2025-03-01": 1.0}
    else:
        write(folder / "fork.jsonl", forked("fork", parent), copied, assistant("f1", "own", 2.0, DAY2))
        expected = {"2025-03-01": 1.0, "2025-03-02": 2.0}
    database = tmp_path / "catalog.sqlite3"
    with Catalog(database) as catalog:
        assert daily(report(folder, catalog)) == expected
        parent_id = file_id(database, parent)
        packed = marshal.dumps(_FORGED[forged], 2)
        with sqlite3.connect(database) as db:
            db.execute(
                "UPDATE usage_ids SET ids = ?, crc = ? WHERE file_id = ?",
                (packed, usage_checksum(parent_id, packed), parent_id),
            )
        assert daily(report(folder, catalog)) == expected
        assert catalog.last_report.read == 1  # the parent, read again
        assert daily(report(folder, catalog)) == expected
        assert catalog.last_report.read == 0
