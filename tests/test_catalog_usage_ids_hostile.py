"""A hostile look at the packed usage ids (``usage_ids``, schema 13): a fork's copies are told by
its parent's packed (entry id, timestamp) pairs, and only a session that names a parent keeps a
row per entry. The expected totals are written out by hand (the report without a catalog reads
through one in memory, so it would share any fault of the catalog's own)."""

from __future__ import annotations

import json
import marshal
import sqlite3
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from pisession._attribution import copied_entry_ids
from pisession.catalog import Catalog
from pisession.catalog._schema import usage_checksum
from pisession.catalog._usage import UsageDamaged, entry_ids
from pisession.usage import usage_report
from tests.test_catalog import age, append, header, line, msg, write
from tests.test_catalog_parts import report
from tests.test_catalog_workers import assistant

DAY1 = "2025-03-01T10:00:00.000Z"
DAY1_LATER = "2025-03-01T11:00:00.000Z"
DAY2 = "2025-03-02T10:00:00.000Z"


def forked(sid: str, parent: Path | str, stamp: str = "2025-03-01T12:00:00.000Z") -> dict[str, Any]:
    return {**header(sid, stamp=stamp), "parentSession": str(parent)}


def escaped(path: Path, *entries: Any, tail: bytes = b"") -> Path:
    """Write ``entries`` as JSON lines with every non-ASCII character escaped (a lone surrogate
    as ``\\ud800``, as JavaScript's JSON.stringify writes it)."""
    path.write_bytes(b"".join(json.dumps(entry).encode() + b"\n" for entry in entries) + tail)
    age(path)
    return path


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


def test_packed_ids_that_declare_a_huge_list_are_not_allocated(tmp_path: Path) -> None:
    # marshal makes a list of the length a value declares before reading its items: 2**26 items
    # (half a GiB) in a few bytes; a forged tuple of 2**31 took 16 GiB. The packed ids are read
    # by a parser whose memory follows what the value holds.
    folder = tmp_path / "sessions"
    folder.mkdir()
    parent = write(folder / "parent.jsonl", header("parent"), assistant("a1", "answer", 1.0, DAY1))
    write(folder / "fork.jsonl", forked("fork", parent), assistant("a1", "answer", 1.0, DAY1))
    database = tmp_path / "catalog.sqlite3"
    with Catalog(database) as catalog:
        report(folder, catalog)
    parent_id = file_id(database, parent)
    forged = b"[" + (2**26).to_bytes(4, "little") + b")\x02\xda\x02a1\xda\x01x"
    with sqlite3.connect(database) as db:
        db.execute(
            "UPDATE usage_ids SET ids = ?, crc = ? WHERE file_id = ?",
            (forged, usage_checksum(parent_id, forged), parent_id),
        )
        tracemalloc.start()
        try:
            with pytest.raises(UsageDamaged):
                entry_ids(db, [parent_id])
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peak < 2**24
    with Catalog(database) as catalog:
        assert daily(report(folder, catalog)) == {"2025-03-01": 1.0}


# ----------------------------------------------------------------------------- lone surrogates


@pytest.mark.parametrize("where", ["entry id", "timestamp", "model"])
def test_a_lone_surrogate_in_a_forks_copies_is_counted_once(tmp_path: Path, where: str, workers: str) -> None:
    # Pi reads "\ud800" in a session's JSON as a lone surrogate, which SQLite's UTF-8 cannot
    # hold: the report raised UnicodeEncodeError (a traceback from `pisession usage`)
    folder = tmp_path / "sessions"
    folder.mkdir()
    copied = assistant("a1", "answer", 1.0, DAY1)
    if where == "entry id":
        copied["id"] = "a\ud800"
    elif where == "timestamp":
        copied["timestamp"] = "2025-03-01T10:00:00.000Z\udc00"  # not Pi's form: read as JavaScript reads it
    else:
        copied["message"]["model"] = "gpt-\ud800"
    own = assistant("f1", "own", 2.0, DAY2)
    own["message"]["model"] = copied["message"]["model"]
    parent = escaped(folder / "parent.jsonl", header("parent"), copied)
    escaped(folder / "fork.jsonl", forked("fork", parent), copied, own)
    escaped(folder / "unfinished.jsonl", forked("unfinished", parent), tail=json.dumps(copied).encode())
    # a timestamp JavaScript cannot read dates the entry by its session's header
    day1 = {"2025-01-02": 1.0} if where == "timestamp" else {"2025-03-01": 1.0}
    database = tmp_path / "catalog.sqlite3"
    with Catalog(database) as catalog:
        for _ in range(2):  # a first report, then a warm one
            made = report(folder, catalog)
            assert daily(made) == {**day1, "2025-03-02": 2.0}
            if where == "model":
                assert {model for day in made["daily"] for model in day["modelsUsed"]} == {
                    "openai/gpt-\ud800"
                }


def test_a_lone_surrogate_in_a_grown_sessions_model_is_summed(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    first = assistant("a1", "one", 1.0, DAY1)
    first["message"]["model"] = "m\udfff"
    session = escaped(folder / "session.jsonl", header("session"), first)
    database = tmp_path / "catalog.sqlite3"
    with Catalog(database) as catalog:
        assert daily(report(folder, catalog)) == {"2025-03-01": 1.0}
        later = assistant("a2", "two", 2.0, DAY1_LATER)
        later["message"]["model"] = "m\udfff"
        append(session, json.dumps(later).encode() + b"\n")
        made = report(folder, catalog)
        assert catalog.last_report.appended == 1
        assert daily(made) == {"2025-03-01": 3.0}
        assert made["daily"][0]["modelBreakdowns"][0]["modelName"] == "openai/m\udfff"


# ----------------------------------------------------- copies of a parent's unfinished last line


def test_a_copy_of_the_parents_unfinished_last_line_counts_in_the_parent_only(
    tmp_path: Path, workers: str
) -> None:
    # Pi reads a last line without its newline when it parses: it is an entry of the parent
    # (the conformance data's rule: a copy has an id and timestamp of an entry of the parent)
    folder = tmp_path / "sessions"
    folder.mkdir()
    first = assistant("a1", "one", 1.0, DAY1)
    second = assistant("a2", "two", 2.0, DAY1_LATER)
    parent = write(folder / "parent.jsonl", header("parent"), first, tail=line(second)[:-1])
    write(folder / "fork.jsonl", forked("fork", parent), first, second, assistant("f1", "own", 4.0, DAY2))
    write(folder / "both.jsonl", forked("both", parent), first, tail=line(second)[:-1])
    expected = {"2025-03-01": 3.0, "2025-03-02": 4.0}
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        assert daily(report(folder, catalog)) == expected
        assert daily(report(folder, catalog)) == expected  # warm
        append(parent, b"\n")  # the line finished: the same entries
        assert daily(report(folder, catalog)) == expected
    assert daily(report(folder, False)) == expected


def test_a_copy_of_a_middle_forks_unfinished_last_line_counts_once(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    first = assistant("a1", "one", 1.0, DAY1)
    middle_own = assistant("m1", "middle", 2.0, DAY1_LATER)
    parent = write(folder / "parent.jsonl", header("parent"), first)
    middle = write(folder / "middle.jsonl", forked("middle", parent), first, tail=line(middle_own)[:-1])
    write(
        folder / "grandchild.jsonl",
        forked("grandchild", middle, stamp="2025-03-01T13:00:00.000Z"),
        first,
        middle_own,
        assistant("g1", "mine", 8.0, DAY2),
    )
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        assert daily(report(folder, catalog)) == {"2025-03-01": 3.0, "2025-03-02": 8.0}


# ------------------------------------------------------- rows a damaged catalog left under an id


def test_rows_a_damaged_catalog_left_under_a_new_files_id_are_replaced(tmp_path: Path) -> None:
    # SQLite gives a new row the id after the largest, so the id of the file deleted last comes
    # again. Rows left under it (a deletion takes them along: only a damaged or hand-edited
    # catalog keeps them, their checksums holding) are not the new file's: its read in full
    # replaces them, as it replaces the sums.
    folder = tmp_path / "sessions"
    folder.mkdir()
    parent = write(folder / "parent.jsonl", header("parent"), assistant("a1", "one", 1.0, DAY1))
    gone = write(
        folder / "gone.jsonl",
        forked("gone", parent),
        assistant("f1", "stale", 16.0, DAY2),
        assistant("f2", "stale", 32.0, DAY2),
    )
    database = tmp_path / "catalog.sqlite3"
    tables = ("usage", "usage_ids", "usage_damage")
    with Catalog(database) as catalog:
        assert daily(report(folder, catalog)) == {"2025-03-01": 1.0, "2025-03-02": 48.0}
        gone_id = file_id(database, gone)
        with sqlite3.connect(database) as db:
            kept = {
                table: db.execute(f"SELECT * FROM {table} WHERE file_id = ?", (gone_id,)).fetchall()
                for table in tables
            }
        assert kept["usage"] and kept["usage_ids"]
        gone.unlink()
        report(folder, catalog)
        with sqlite3.connect(database) as db:
            for table, rows in kept.items():
                for row in rows:
                    db.execute(f"INSERT INTO {table} VALUES ({', '.join('?' * len(row))})", row)
        # a new fork, under the id the deleted one had; and a fork of it whose own entry has the
        # id and timestamp of one of the deleted file's
        fresh = write(folder / "fresh.jsonl", forked("fresh", parent), assistant("n1", "new", 2.0, DAY2))
        report(folder, catalog)
        assert file_id(database, fresh) == gone_id
        write(
            folder / "later.jsonl",
            forked("later", fresh, stamp="2025-03-02T12:00:00.000Z"),
            assistant("f1", "stale", 4.0, DAY2),
        )
        made = report(folder, catalog)
    assert daily(made) == {"2025-03-01": 1.0, "2025-03-02": 6.0}


@pytest.mark.parametrize("table", ["usage", "usage_ids", "usage_sums", "usage_damage"])
def test_usage_a_damaged_catalog_left_with_no_file_rows_is_not_the_new_files(
    tmp_path: Path, table: str, workers: str
) -> None:
    # A first build (no file rows) skips the drop of a new row's usage only where the catalog
    # holds no usage either: rows left in any usage table with every file row gone (a damaged
    # or hand-edited catalog, their checksums holding) are dropped as the ids come again.
    folder = tmp_path / "sessions"
    folder.mkdir()
    parent = write(
        folder / "a.jsonl",
        header("a"),
        assistant("a1", "one", 1.0, DAY1),
        assistant("a2", "two", 4.0, DAY2),
        tail=b"{broken\n",
    )
    copies = (assistant("a1", "one", 1.0, DAY1), assistant("a2", "two", 4.0, DAY2))
    write(folder / "b.jsonl", forked("b", parent), *copies, assistant("b1", "three", 2.0, DAY2))
    database = tmp_path / "catalog.sqlite3"

    def skipped(catalog: Catalog) -> list[tuple[str, str]]:
        made = usage_report("daily", session_dir=str(folder), catalog=catalog)
        return [(Path(source.path).name, source.reason) for source in made.skipped]

    with Catalog(database) as catalog:
        assert daily(report(folder, catalog)) == {"2025-03-01": 1.0, "2025-03-02": 6.0}
        assert skipped(catalog) == [("a.jsonl", "1 damaged line not read")]
        with sqlite3.connect(database) as db:
            kept = db.execute(f"SELECT * FROM {table}").fetchall()
            assert kept
            db.execute("DELETE FROM files")
            for other in ("usage", "usage_ids", "usage_sums", "usage_damage"):
                db.execute(f"DELETE FROM {other}")
            db.executemany(f"INSERT INTO {table} VALUES ({', '.join('?' * len(kept[0]))})", kept)
        # the parent no longer holds a2 (nor its damaged line): the fork's a2 is its own now
        write(folder / "a.jsonl", header("a"), assistant("a1", "one", 1.0, DAY1))
        assert daily(report(folder, catalog)) == {"2025-03-01": 1.0, "2025-03-02": 6.0}
        assert skipped(catalog) == []


# -------------------------------------------------------------------- what held (written-out totals)


def test_a_parent_that_appears_after_its_fork_was_cached_takes_the_copies(
    tmp_path: Path, workers: str
) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    copied = assistant("a1", "one", 1.0, DAY1)
    parent = folder / "parent.jsonl"
    write(folder / "fork.jsonl", forked("fork", parent), copied, assistant("f1", "own", 2.0, DAY2))
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        # no parent: the fork is the only record of the copy, which counts there
        assert daily(report(folder, catalog)) == {"2025-03-01": 1.0, "2025-03-02": 2.0}
        write(parent, header("parent"), copied, assistant("a2", "two", 4.0, DAY1_LATER))
        assert daily(report(folder, catalog)) == {"2025-03-01": 5.0, "2025-03-02": 2.0}
        assert catalog.last_report.read == 1  # the parent only: the fork kept its rows
        parent.unlink()
        assert daily(report(folder, catalog)) == {"2025-03-01": 1.0, "2025-03-02": 2.0}


def test_a_pending_file_that_becomes_a_fork_keeps_a_row_per_entry(tmp_path: Path, workers: str) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    copied = assistant("a1", "one", 1.0, DAY1)
    parent = write(folder / "parent.jsonl", header("parent"), copied)
    whole = line(forked("fork", parent))
    fork = write(folder / "fork.jsonl", tail=whole[:20])  # its header being written
    database = tmp_path / "catalog.sqlite3"
    with Catalog(database) as catalog:
        assert daily(report(folder, catalog)) == {"2025-03-01": 1.0}
        append(fork, whole[20:] + line(copied) + line(assistant("f1", "own", 2.0, DAY2)))
        assert daily(report(folder, catalog)) == {"2025-03-01": 1.0, "2025-03-02": 2.0}
        assert catalog.last_report.appended == 1
    with sqlite3.connect(database) as db:
        assert db.execute(
            "SELECT COUNT(*) FROM usage WHERE file_id = ?", (file_id(database, fork),)
        ).fetchone() == (2,)


def test_a_first_listing_then_a_report_fills_a_forks_rows_in(tmp_path: Path, workers: str) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    copied = assistant("a1", "one", 1.0, DAY1)
    parent = write(folder / "parent.jsonl", header("parent"), copied)
    fork = write(folder / "fork.jsonl", forked("fork", parent), copied, assistant("f1", "own", 2.0, DAY2))
    expected = {"2025-03-01": 1.0, "2025-03-02": 2.0}
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        catalog.list_all(str(folder))
        assert daily(report(folder, catalog)) == expected
        assert catalog.last_report.read == 2  # each filled in
        append(parent, line(assistant("a2", "two", 4.0, DAY1_LATER)))
        append(fork, line(assistant("a2", "two", 4.0, DAY1_LATER)))
        assert daily(report(folder, catalog)) == {"2025-03-01": 5.0, "2025-03-02": 2.0}
        assert catalog.last_report.appended == 2


def test_a_fork_naming_itself_or_a_cycle_counts_each_entry_once(tmp_path: Path, workers: str) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    shared = assistant("a1", "one", 1.0, DAY1)
    own = folder / "own.jsonl"
    write(own, forked("own", own), shared, assistant("o1", "own", 2.0, DAY2))
    first, second = folder / "first.jsonl", folder / "second.jsonl"
    # a cycle: cut where a session names one started later (second names first: kept)
    write(first, forked("first", second, stamp="2025-03-01T00:00:00.000Z"), shared)
    write(
        second,
        forked("second", first, stamp="2025-03-01T01:00:00.000Z"),
        shared,
        assistant("s", "s", 4.0, DAY2),
    )
    expected = {"2025-03-01": 2.0, "2025-03-02": 6.0}  # own: 1 + 2; first: 1; second: 4
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        assert daily(report(folder, catalog)) == expected
        assert daily(report(folder, catalog)) == expected


@pytest.mark.parametrize("value", [None, "text", 7, b"[]"], ids=["null", "text", "number", "wrong-checksum"])
def test_a_parents_packed_ids_of_another_type_are_read_again(tmp_path: Path, value: Any) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    copied = assistant("a1", "one", 1.0, DAY1)
    parent = write(folder / "parent.jsonl", header("parent"), copied)
    write(folder / "fork.jsonl", forked("fork", parent), copied, assistant("f1", "own", 2.0, DAY2))
    database = tmp_path / "catalog.sqlite3"
    expected = {"2025-03-01": 1.0, "2025-03-02": 2.0}
    with Catalog(database) as catalog:
        assert daily(report(folder, catalog)) == expected
        with sqlite3.connect(database) as db:
            db.execute("UPDATE usage_ids SET ids = ? WHERE file_id = ?", (value, file_id(database, parent)))
        assert daily(report(folder, catalog)) == expected
        assert catalog.last_report.read == 1


def test_two_catalogs_on_one_database_tell_the_copies_alike(tmp_path: Path, workers: str) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    copied = assistant("a1", "one", 1.0, DAY1)
    parent = write(folder / "parent.jsonl", header("parent"), copied)
    fork = write(folder / "fork.jsonl", forked("fork", parent), copied)
    database = tmp_path / "catalog.sqlite3"
    with Catalog(database) as one, Catalog(database) as other:
        assert daily(report(folder, one)) == {"2025-03-01": 1.0}
        append(parent, line(assistant("a2", "two", 2.0, DAY2)))
        assert daily(report(folder, other)) == {"2025-03-01": 1.0, "2025-03-02": 2.0}
        append(fork, line(assistant("a2", "two", 2.0, DAY2)) + line(assistant("f1", "own", 4.0, DAY2)))
        assert daily(report(folder, one)) == {"2025-03-01": 1.0, "2025-03-02": 6.0}
        assert daily(report(folder, other)) == {"2025-03-01": 1.0, "2025-03-02": 6.0}
        assert other.last_report.read == other.last_report.appended == 0


def test_entries_without_an_id_are_never_copies(tmp_path: Path, workers: str) -> None:
    # copied_entry_ids: "entries without an id never match"; the catalog took two entries with
    # no id and the same timestamp for the same entry, and left the fork's out
    folder = tmp_path / "sessions"
    folder.mkdir()
    theirs = assistant("", "one", 1.0, DAY1)
    del theirs["id"]
    mine = assistant("", "two", 2.0, DAY1)
    del mine["id"]
    parent = write(folder / "parent.jsonl", header("parent"), theirs)
    fork_entries = [forked("fork", parent), mine]
    write(folder / "fork.jsonl", *fork_entries)
    write(folder / "unfinished.jsonl", forked("unfinished", parent), tail=line(mine)[:-1])
    assert copied_entry_ids(fork_entries, [header("parent"), theirs]) == frozenset()
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        assert daily(report(folder, catalog)) == {"2025-03-01": 5.0}
        assert daily(report(folder, catalog)) == {"2025-03-01": 5.0}
