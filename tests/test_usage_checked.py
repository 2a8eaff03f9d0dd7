"""The catalog's usage rows are checked as its file rows are: a stored sum, entry or damaged-line
count that fails its checksum (a flipped bit SQLite's integrity check does not see) is never
reported; its file is read again and the report equals the files."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from pisession.catalog import Catalog
from pisession.usage import UsageReport, usage_report
from tests.test_usage import agent  # noqa: F401  (the fixture)


def report(catalog: Catalog | bool) -> UsageReport:
    return usage_report("session", timezone="UTC", catalog=catalog)


def the_files() -> UsageReport:
    return report(False)


def same(left: UsageReport, right: UsageReport) -> None:
    assert left.rows == right.rows
    assert left.totals == right.totals
    assert left.skipped == right.skipped


def damaged_then_reported(database: Path, sql: str) -> tuple[UsageReport, UsageReport]:
    with Catalog(database) as catalog:
        same(report(catalog), the_files())
    with sqlite3.connect(database) as db:
        assert db.execute(sql).rowcount >= 1
    db.close()
    with Catalog(database) as catalog:
        first = report(catalog)
        assert catalog.last_report.read >= 1  # the damaged file, read again
        again = report(catalog)
        assert catalog.last_report.read == 0  # and healed: its rows are whole again
    return first, again


@pytest.mark.usefixtures("agent")
@pytest.mark.parametrize(
    "sql",
    [
        "UPDATE usage_sums SET cost = cost + 2 WHERE file_id = {own}",
        "UPDATE usage_sums SET input = input + 1000",
        "UPDATE usage_sums SET nan_cost = 1 WHERE file_id = {own}",
        "UPDATE usage_sums SET last_ms = last_ms + 86400000",
    ],
    ids=["cost", "tokens", "nan", "time"],
)
def test_a_flipped_sum_is_never_reported(tmp_path: Path, sql: str) -> None:
    # a session that is no fork: its report reads its sums (a fork's, its entries)
    own = (
        "(SELECT MIN(file_id) FROM usage_sums s JOIN files f ON f.id = s.file_id "
        "WHERE f.header NOT LIKE '%parentSession%')"
    )
    sql = sql.format(own=own)
    first, again = damaged_then_reported(tmp_path / "catalog.sqlite3", sql)
    same(first, the_files())
    same(again, the_files())


@pytest.mark.usefixtures("agent")
def test_a_flipped_entry_of_a_fork_or_its_parent_is_never_reported(tmp_path: Path) -> None:
    # a fork's sums come from its entries, less those its parent holds too (told by its ids)
    database = tmp_path / "catalog.sqlite3"
    for sql in (
        "UPDATE usage SET cost = cost + 5 WHERE file_id IN (SELECT id FROM files WHERE header LIKE "
        "'%parentSession%')",
        "UPDATE usage SET entry_id = entry_id || 'x' WHERE file_id IN (SELECT f.id FROM files f WHERE "
        "EXISTS (SELECT 1 FROM files c WHERE c.header LIKE '%' || f.path || '%'))",
        # a parent's packed entry ids (every session keeps them; a fork also keeps its entries)
        "UPDATE usage_ids SET ids = CAST(ids || x'00' AS BLOB) WHERE file_id IN (SELECT f.id FROM files f "
        "WHERE EXISTS (SELECT 1 FROM files c WHERE c.header LIKE '%' || f.path || '%'))",
    ):
        first, again = damaged_then_reported(database, sql)
        same(first, the_files())
        same(again, the_files())


@pytest.mark.usefixtures("agent")
def test_a_flipped_count_of_damaged_lines_is_never_reported(tmp_path: Path) -> None:
    database = tmp_path / "catalog.sqlite3"
    with Catalog(database) as catalog:
        report(catalog)
    with sqlite3.connect(database) as db:
        file_id = db.execute("SELECT MIN(id) FROM files").fetchone()[0]
        db.execute("INSERT OR REPLACE INTO usage_damage (file_id, lines) VALUES (?, 7)", (file_id,))
    db.close()
    with Catalog(database) as catalog:
        same(report(catalog), the_files())
