"""A write pass keeps the rows it wrote (``written``): when no other connection committed since
the rows were read, the refresh returns them instead of reading them all again (a first build's
last step), and they are the rows a read of the database gives, each value of its type."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

import pisession.catalog._refresh as refresh_module
from pisession.catalog import Catalog
from pisession.catalog._refresh import current, finish, stored_rows
from pisession.catalog._schema import EVERY_PART, LISTING, USAGE, connect
from tests.test_catalog_fileread import folder_of_every_kind, typed


def typed_rows(found: Any) -> dict[str, Any]:
    return {candidate.path: typed(list(row.__dict__.items())) for candidate, row in found}


@pytest.mark.parametrize("parts", [USAGE, LISTING, EVERY_PART], ids=["usage", "listing", "both"])
@pytest.mark.parametrize("index", [False, True], ids=["", "indexed"])
def test_the_rows_a_pass_wrote_are_the_databases(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parts: int, index: bool, workers: str
) -> None:
    folder = tmp_path / "sessions"
    folder_of_every_kind(folder)
    reads = []

    def counted(*args: Any) -> Any:
        reads.append(1)
        return stored_rows(*args)

    monkeypatch.setattr(refresh_module, "stored_rows", counted)
    fts = Catalog(":memory:").fts
    connection, _ = connect(str(tmp_path / "catalog.sqlite3"), 5.0, fts, False)
    try:
        found, report = current(connection, fts, [str(folder)], None, None, index=index, parts=parts)
        assert report.read == len(list(folder.iterdir())) and len(found) > 10
        assert len(reads) == 1  # the rows were not read again
        kept = typed_rows(found)
        # (in the read transaction the refresh returned in)
        read_back = stored_rows(connection, [str(folder)], None)
        assert {path: typed(list(read_back[path].__dict__.items())) for path in kept} == kept
        finish(connection)
        current(connection, fts, [str(folder)], None, None, index=index, parts=parts)
        assert len(reads) == 2  # nothing to write: read once, as before
    finally:
        finish(connection)
        connection.close()


def test_a_commit_by_another_connection_during_the_pass_has_the_rows_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "sessions"
    folder_of_every_kind(folder)
    database = tmp_path / "catalog.sqlite3"
    reads = []
    write_pass = refresh_module._write_pass

    def counted(*args: Any) -> Any:
        reads.append(1)
        return stored_rows(*args)

    def then_another_writes(connection: sqlite3.Connection, *args: Any) -> None:
        write_pass(connection, *args)
        if len(reads) == 1:  # after the first pass's last commit
            with sqlite3.connect(database) as other:
                other.execute("UPDATE files SET row_crc = -1 WHERE path LIKE '%s0.jsonl'")
            other.close()

    monkeypatch.setattr(refresh_module, "stored_rows", counted)
    monkeypatch.setattr(refresh_module, "_write_pass", then_another_writes)
    with Catalog(database) as catalog:
        listed = catalog.list_all(str(folder))
        # the rows were read again, the damaged one found and its file read once more (that
        # second pass was alone: its rows are taken as written)
        assert len(reads) == 2 and catalog.last_report.read == len(list(folder.iterdir())) + 1
    monkeypatch.setattr(refresh_module, "_write_pass", write_pass)
    with Catalog(database) as catalog:
        assert catalog.list_all(str(folder)) == listed and catalog.last_report.read == 0
