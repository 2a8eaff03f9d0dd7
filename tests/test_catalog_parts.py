"""A first call reads only the part of each new file it needs: a first report leaves the listing
out, a first listing the usage rows. Whatever order the calls come in, each gives what the files
say (the listing Pi's, the report the one read without a catalog); the next call that needs a
part a row lacks reads that file again in full, once; a row that has what a call needs is caught
up from its old end as before, and keeps lacking what it lacked.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

from pisession._discovery import list_all_sessions
from pisession.catalog import Catalog
from pisession.catalog._schema import LISTING, USAGE, USAGE_COLUMNS, USAGE_SUMS_COLUMNS, usage_checksum
from pisession.usage import usage_report
from tests.test_catalog_workers import assistant, odd_folder


def report(folder: Path, catalog: Catalog | bool) -> Any:
    return usage_report("daily", session_dir=str(folder), timezone="UTC", catalog=catalog).to_wire()


def lacks(database: Path) -> dict[str, int]:
    with sqlite3.connect(database) as db:
        return {Path(path).name: lacks for path, lacks in db.execute("SELECT path, lacks FROM files")}


def test_a_first_report_leaves_the_listing_to_the_first_listing(tmp_path: Path, workers: str) -> None:
    folder = tmp_path / "sessions"
    odd_folder(folder)
    expected = report(folder, False)
    database = tmp_path / "catalog.sqlite3"
    with Catalog(database) as catalog:
        assert report(folder, catalog) == expected
        made = lacks(database)
        sessions = {name for name, lacked in made.items() if lacked == LISTING}
        assert sessions >= {"s0.jsonl", "usage0.jsonl", "damaged.jsonl", "partial.jsonl"}
        assert made["notes.jsonl"] == 0  # no session: nothing to lack
        assert report(folder, catalog) == expected
        assert catalog.last_report.read == 0  # warm: the rows have what a report needs
        assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))
        assert catalog.last_report.read == len(sessions)  # each filled in, once
        assert set(lacks(database).values()) == {0}
        assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))
        assert catalog.last_report.read == 0
        assert report(folder, catalog) == expected
        assert catalog.last_report.read == 0


def test_a_first_listing_leaves_the_usage_rows_to_the_first_report(tmp_path: Path, workers: str) -> None:
    folder = tmp_path / "sessions"
    odd_folder(folder)
    expected = report(folder, False)
    database = tmp_path / "catalog.sqlite3"
    with Catalog(database) as catalog:
        assert catalog.list_all_json(str(folder)) == Catalog(":memory:").list_all_json(str(folder))
        assert USAGE in lacks(database).values()
        with sqlite3.connect(database) as db:
            assert db.execute("SELECT COUNT(*) FROM usage").fetchone() == (0,)
            assert db.execute("SELECT COUNT(*) FROM usage_sums").fetchone() == (0,)
        assert catalog.search("question", all=True, session_dir=str(folder))  # a search needs no usage
        assert catalog.last_report.read == 0
        assert report(folder, catalog) == expected
        assert catalog.last_report.read > 0
        assert set(lacks(database).values()) == {0}
        assert report(folder, catalog) == expected
        assert catalog.last_report.read == 0


def test_a_grown_file_is_caught_up_from_its_end_and_keeps_lacking_what_it_lacked(
    tmp_path: Path, workers: str
) -> None:
    folder = tmp_path / "sessions"
    odd_folder(folder)
    grown = folder / "usage0.jsonl"
    database = tmp_path / "catalog.sqlite3"
    with Catalog(database) as catalog:
        catalog.list_all(str(folder))
        with open(grown, "ab") as handle:
            handle.write(
                b'{"type":"message","id":"x1","parentId":null,"timestamp":"2025-02-03T00:00:00.000Z",'
                b'"message":{"role":"user","content":"more","timestamp":1738540800000}}\n'
            )
        assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))
        assert (catalog.last_report.read, catalog.last_report.appended) == (0, 1)
        assert lacks(database)["usage0.jsonl"] == USAGE
        assert report(folder, catalog) == report(folder, False)
        assert lacks(database)["usage0.jsonl"] == 0


def test_a_report_row_grown_is_caught_up_for_usage_alone(tmp_path: Path, workers: str) -> None:
    folder = tmp_path / "sessions"
    odd_folder(folder)
    grown = folder / "usage1.jsonl"
    database = tmp_path / "catalog.sqlite3"
    with Catalog(database) as catalog:
        report(folder, catalog)
        with open(grown, "ab") as handle:
            handle.write(
                json.dumps(assistant("a9", "added", 1.5, "2025-02-05T10:00:00.000Z")).encode() + b"\n"
            )
        assert report(folder, catalog) == report(folder, False)
        assert (catalog.last_report.read, catalog.last_report.appended) == (0, 1)
        assert lacks(database)["usage1.jsonl"] == LISTING
        assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))
        assert lacks(database)["usage1.jsonl"] == 0


def test_a_call_needing_both_parts_makes_whole_rows(tmp_path: Path, workers: str) -> None:
    folder = tmp_path / "sessions"
    odd_folder(folder)
    database = tmp_path / "catalog.sqlite3"
    with Catalog(database) as catalog:
        catalog.refresh(str(folder))
        assert set(lacks(database).values()) == {0}
        assert report(folder, catalog) == report(folder, False)
        assert catalog.last_report.read == 0
        assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))
        assert catalog.last_report.read == 0


def test_a_lacking_row_is_read_again_whole_not_lacking_the_other_part(tmp_path: Path) -> None:
    # Two processes alternating a listing and a report on a new catalog must not take turns
    # replacing each other's rows: a row read again for the part it lacks gets every part.
    folder = tmp_path / "sessions"
    odd_folder(folder)
    database = tmp_path / "catalog.sqlite3"
    with Catalog(database) as listing, Catalog(database) as reporting:
        listing.list_all(str(folder))
        report(folder, reporting)
        assert set(lacks(database).values()) == {0}
        report(folder, reporting)
        listing.list_all(str(folder))
        assert listing.last_report.read == reporting.last_report.read == 0


def test_the_checksums_made_ahead_are_the_ones_sqlite_makes(tmp_path: Path, workers: str) -> None:
    # A new file's usage rows, sums and packed ids are checksummed where it is read, before its
    # row has an id: each must equal the checksum SQLite's own function gives for the row as stored.
    folder = tmp_path / "sessions"
    odd_folder(folder)
    database = tmp_path / "catalog.sqlite3"
    with Catalog(database) as catalog:
        report(folder, catalog)
    connection = sqlite3.connect(database)
    connection.create_function("usage_crc", -1, usage_checksum)
    try:
        rows = connection.execute(f"SELECT crc, usage_crc({USAGE_COLUMNS}) FROM usage").fetchall()
        sums = connection.execute(f"SELECT crc, usage_crc({USAGE_SUMS_COLUMNS}) FROM usage_sums").fetchall()
        ids = connection.execute("SELECT crc, usage_crc(file_id, ids) FROM usage_ids").fetchall()
    finally:
        connection.close()
    assert rows and sums and ids  # (the rows: the fork's)
    assert all(stored == made for stored, made in rows)
    assert all(stored == made for stored, made in sums)
    assert all(stored == made for stored, made in ids)


def test_a_lacking_part_is_filled_in_and_the_part_the_row_had_is_kept(tmp_path: Path, workers: str) -> None:
    # The second call reads the lines a row covers for the part it lacks, alone: the usage rows
    # a report wrote stay as they were written when a listing fills the listing in, and the
    # other way round; the rows then serve both, warm.
    folder = tmp_path / "sessions"
    odd_folder(folder)
    expected = report(folder, False)
    database = tmp_path / "catalog.sqlite3"

    def stored() -> tuple[list[Any], list[Any]]:
        with sqlite3.connect(database) as db:
            usage = db.execute("SELECT rowid, * FROM usage ORDER BY rowid").fetchall()
            files = db.execute("SELECT id, path, parsed, crc, header FROM files ORDER BY id").fetchall()
        return usage, files

    with Catalog(database) as catalog:
        report(folder, catalog)
        before = stored()
        assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))
        assert stored() == before  # the same usage rows and files rows, not written again
        assert set(lacks(database).values()) == {0}
        assert report(folder, catalog) == expected
        assert catalog.last_report.read == 0
    other = tmp_path / "other.sqlite3"
    with Catalog(other) as catalog:
        listed = catalog.list_all_json(str(folder))
        with sqlite3.connect(other) as db:
            texts = db.execute(
                "SELECT id, all_text, wire_head, first_message FROM files ORDER BY id"
            ).fetchall()
        assert report(folder, catalog) == expected
        with sqlite3.connect(other) as db:
            assert (
                db.execute("SELECT id, all_text, wire_head, first_message FROM files ORDER BY id").fetchall()
                == texts
            )
        assert catalog.list_all_json(str(folder)) == listed
        assert catalog.last_report.read == 0
