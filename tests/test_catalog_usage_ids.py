"""The catalog keeps a row per usage entry only for sessions that name a parent; every other
session keeps its entries' ids and timestamps packed, one value per read (``usage_ids``): what a
fork's copies are told by. These check that the packed ids serve as the rows did."""

from __future__ import annotations

import marshal
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pisession.catalog import Catalog
from pisession.catalog._usage import entry_ids
from tests.test_catalog import append, header, line, msg, write
from tests.test_catalog_parts import report
from tests.test_catalog_workers import assistant


def family(folder: Path) -> tuple[Path, Path]:
    """A parent with two usage entries and a fork that copied the first and added its own."""
    folder.mkdir()
    parent = write(
        folder / "parent.jsonl",
        header("parent", stamp="2025-03-01T00:00:00.000Z"),
        msg("u", "user", "question"),
        assistant("a1", "answer", 1.5, "2025-03-01T10:00:00.000Z"),
        assistant("a2", "more", 2.5, "2025-03-01T11:00:00.000Z"),
    )
    fork_header = header("fork", stamp="2025-03-02T00:00:00.000Z")
    fork_header["parentSession"] = str(parent)
    fork = write(
        folder / "fork.jsonl",
        fork_header,
        msg("u", "user", "question"),
        assistant("a1", "answer", 1.5, "2025-03-01T10:00:00.000Z"),
        assistant("f1", "its own", 4.0, "2025-03-02T10:00:00.000Z"),
    )
    return parent, fork


def stored(database: Path) -> dict[str, Any]:
    with sqlite3.connect(database) as db:
        names = {file_id: Path(path).name for file_id, path in db.execute("SELECT id, path FROM files")}
        rows = db.execute("SELECT file_id, COUNT(*) FROM usage GROUP BY file_id").fetchall()
        ids = db.execute("SELECT file_id, COUNT(*) FROM usage_ids GROUP BY file_id").fetchall()
    return {
        "rows": {names[file_id]: count for file_id, count in rows},
        "ids": {names[file_id]: count for file_id, count in ids},
    }


def test_only_a_session_that_names_a_parent_keeps_a_row_per_entry(tmp_path: Path, workers: str) -> None:
    folder = tmp_path / "sessions"
    family(folder)
    expected = report(folder, False)
    database = tmp_path / "catalog.sqlite3"
    with Catalog(database) as catalog:
        assert report(folder, catalog) == expected
    assert stored(database) == {"rows": {"fork.jsonl": 2}, "ids": {"parent.jsonl": 1, "fork.jsonl": 1}}
    # the copy counts once, in the parent: 1.5 + 2.5 there, 4.0 in the fork
    assert [day["totalCost"] for day in expected["daily"]] == [4.0, 4.0]


def test_a_grown_parents_new_entries_are_told_as_copies_too(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    parent, fork = family(folder)
    database = tmp_path / "catalog.sqlite3"
    with Catalog(database) as catalog:
        report(folder, catalog)
        append(parent, line(assistant("a3", "later", 8.0, "2025-03-02T12:00:00.000Z")))
        append(fork, line(assistant("a3", "later", 8.0, "2025-03-02T12:00:00.000Z")))
        assert report(folder, catalog) == report(folder, False)
        assert catalog.last_report.appended == 2
    assert stored(database)["ids"] == {"parent.jsonl": 2, "fork.jsonl": 2}  # one value per read
    with sqlite3.connect(database) as db:
        (parent_id,) = db.execute("SELECT id FROM files WHERE path = ?", (str(parent),)).fetchone()
        assert entry_ids(db, [parent_id])[parent_id] == [
            ("a1", "2025-03-01T10:00:00.000Z"),
            ("a2", "2025-03-01T11:00:00.000Z"),
            ("a3", "2025-03-02T12:00:00.000Z"),
        ]


def test_a_parents_damaged_ids_are_read_again_not_trusted(tmp_path: Path, workers: str) -> None:
    # ids that do not name the copy, with the checksum of the ids that did: trusted, the copy
    # would count twice (in the fork as well)
    folder = tmp_path / "sessions"
    parent, _ = family(folder)
    expected = report(folder, False)
    database = tmp_path / "catalog.sqlite3"
    with Catalog(database) as catalog:
        report(folder, catalog)
        with sqlite3.connect(database) as db:
            db.execute(
                "UPDATE usage_ids SET ids = ? WHERE file_id = (SELECT id FROM files WHERE path = ?)",
                (marshal.dumps([], 2), str(parent)),
            )
        assert report(folder, catalog) == expected
        assert report(folder, catalog) == expected
    assert stored(database)["ids"] == {"parent.jsonl": 1, "fork.jsonl": 1}


def test_a_fork_of_a_fork_leaves_out_what_each_copied(tmp_path: Path, workers: str) -> None:
    folder = tmp_path / "sessions"
    _, fork = family(folder)
    grandchild_header = header("grandchild", stamp="2025-03-03T00:00:00.000Z")
    grandchild_header["parentSession"] = str(fork)
    write(
        folder / "grandchild.jsonl",
        grandchild_header,
        msg("u", "user", "question"),
        assistant("a1", "answer", 1.5, "2025-03-01T10:00:00.000Z"),
        assistant("f1", "its own", 4.0, "2025-03-02T10:00:00.000Z"),
        assistant("g1", "mine", 16.0, "2025-03-03T10:00:00.000Z"),
    )
    expected = report(folder, False)
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        assert report(folder, catalog) == expected
        assert report(folder, catalog) == expected  # warm
    assert [day["totalCost"] for day in expected["daily"]] == [4.0, 4.0, 16.0]


def test_a_copy_on_a_forks_unfinished_last_line_counts_in_its_parent(tmp_path: Path, workers: str) -> None:
    # (the report without a catalog reads through one in memory: the totals are written out)
    folder = tmp_path / "sessions"
    folder.mkdir()
    first = assistant("a1", "one", 1.0, "2025-04-01T10:00:00.000Z")
    parent = write(folder / "parent.jsonl", header("parent"), msg("u", "user", "q"), first)
    fork = {**header("fork", stamp="2025-04-01T11:00:00.000Z"), "parentSession": str(parent)}
    write(folder / "fork.jsonl", fork, msg("u", "user", "q"), tail=line(first)[:-1])
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        for made in (report(folder, False), report(folder, catalog), report(folder, catalog)):
            assert made["totals"]["totalCost"] == 1.0


def test_sums_a_damaged_catalog_left_under_a_new_files_id_are_not_added_to(tmp_path: Path) -> None:
    # SQLite gives a new row the id after the largest: the id of the file deleted last comes
    # again. Sums left under it (a damaged or hand-edited catalog: a deletion takes them along)
    # are replaced by the new file's, never added to.
    folder = tmp_path / "sessions"
    family(folder)
    database = tmp_path / "catalog.sqlite3"
    with Catalog(database) as catalog:
        report(folder, catalog)
        with sqlite3.connect(database) as db:
            gone_id, gone = db.execute("SELECT id, path FROM files ORDER BY id DESC LIMIT 1").fetchone()
            kept = db.execute("SELECT * FROM usage_sums WHERE file_id = ?", (gone_id,)).fetchall()
        assert kept
        Path(gone).unlink()
        report(folder, catalog)
        with sqlite3.connect(database) as db:
            db.executemany(f"INSERT INTO usage_sums VALUES ({', '.join('?' * 16)})", kept)  # checksums hold
        fresh = header("new", stamp="2025-03-06T00:00:00.000Z")
        write(folder / "new.jsonl", fresh, assistant("n", "y", 64.0, "2025-03-06T10:00:00.000Z"))
        made = report(folder, catalog)
        with sqlite3.connect(database) as db:
            assert db.execute("SELECT id FROM files WHERE path LIKE '%new.jsonl'").fetchone()[0] == gone_id
    assert made == report(folder, False)


def _sums_one_by_one(rows: list[Any]) -> dict[tuple[str, int], list[Any]]:
    """The quarter-hour sums as JavaScript adds them, value by value (the reference)."""
    out: dict[tuple[str, int], list[Any]] = {}
    for row in rows:
        ms = row[2]
        sums = out.setdefault((row[3], ms // 900_000), [0, 0, 0, 0, 0.0, 0, 0, 0, 0, 0, ms, ms])
        for i in range(5):
            value = row[4 + i]
            if value is None:
                sums[5 + i] += 1
            else:
                total = sums[i] + value
                sums[i] = float(total) if type(total) is int and not -(2**53) <= total <= 2**53 else total
        sums[10], sums[11] = min(sums[10], ms), max(sums[11], ms)
    return out


_TOKENS = st.one_of(
    st.integers(0, 10**6),
    st.integers(-(2**53) - 5, 2**53 + 5),
    st.sampled_from([2**53, 2**53 - 1, -(2**53), 2**52 + 1]),
    st.floats(allow_nan=False, width=64),
    st.none(),
)


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 3 * 900_000),
            st.sampled_from(["message/p/m", "usage/p/n"]),
            _TOKENS,
            _TOKENS,
            _TOKENS,
            _TOKENS,
            st.one_of(st.floats(allow_nan=False, width=64), st.none(), st.just(-0.0)),
        ),
        max_size=40,
    )
)
def test_the_quarter_hour_sums_are_those_of_adding_each_value(values: list[Any]) -> None:
    from pisession.catalog._usage import _sums

    rows = [("e", "t", ms, key, *numbers) for ms, key, *numbers in values]
    assert repr(_sums(rows)) == repr(_sums_one_by_one(rows))  # (repr: -0.0 and int/float apart)


@pytest.mark.parametrize(
    "tokens",
    [
        [1, 2, 3],  # whole and safe: summed a column at a time
        [2**52, 2**52],  # exactly 2**53: still whole
        [2**52, 2**52, 1],  # past 2**53 on the last value: a double from there
        [2**53, 5, -5],  # past it on the way only (a negative value): a double all the same
        [0, -1, 1, 0],
    ],
)
def test_the_sums_of_whole_token_counts_are_those_of_adding_each_value(tokens: list[int]) -> None:
    from pisession.catalog._usage import _sums

    costs = [0.1, 0.2, 0.30000000000000004, 1e-17][: len(tokens)]
    pairs = enumerate(zip(tokens, costs, strict=True))
    rows = [("e", "t", 1000 * n, "message/p/m", value, 1, value, 0, cost) for n, (value, cost) in pairs]
    assert repr(_sums(rows)) == repr(_sums_one_by_one(rows))
