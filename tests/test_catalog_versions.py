"""Catalogs of several versions side by side: two installs (another release, another Python's
Unicode tables) each keep their own catalog instead of rebuilding one on every call, an older one
never destroys a newer one's, and a catalog nothing will use again leaves no session text behind."""

from __future__ import annotations

import os
import sqlite3
import time
import unicodedata
from pathlib import Path

import pytest

import pisession.catalog._schema as schema_module
from pisession._discovery import list_all_sessions
from pisession.catalog import Catalog, default_catalog_path
from pisession.catalog._location import APPLICATION_ID
from tests.test_catalog import header, msg, sessions, write

SECRET = "sk-live-never-keep-7c1e0b"
NEWER = (schema_module.SCHEMA_VERSION + 1, unicodedata.unidata_version)
OTHER_PYTHON = (schema_module.SCHEMA_VERSION, "99.0.0")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("PISESSION_CATALOG")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "pisession"


def as_install(monkeypatch: pytest.MonkeyPatch, version: tuple[int, str]) -> None:
    monkeypatch.setattr(schema_module, "SCHEMA_VERSION", version[0])
    monkeypatch.setattr(unicodedata, "unidata_version", version[1])


def with_a_secret(folder: Path) -> Path:
    sessions(folder, 3)
    return write(folder / "secret.jsonl", header("id-secret"), msg("p", "user", f"my password is {SECRET}"))


def holding(folder: Path, secret: str = SECRET) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.is_file() and secret.encode() in p.read_bytes())


@pytest.mark.parametrize("other", [NEWER, OTHER_PYTHON], ids=["release", "python"])
def test_two_installs_used_in_turn_keep_one_catalog_each(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch, other: tuple[int, str]
) -> None:
    folder = tmp_path / "sessions"
    sessions(folder, 4)
    mine = (schema_module.SCHEMA_VERSION, unicodedata.unidata_version)
    scanned = list_all_sessions(str(folder))
    paths = set()
    for turn in range(6):
        as_install(monkeypatch, mine if turn % 2 == 0 else other)
        with Catalog() as catalog:
            assert catalog.list_all(str(folder)) == scanned
            assert catalog.last_error is None and catalog.last_notice is None
            # each install built its catalog once: after that, nothing is read again
            assert catalog.last_report.read == (4 if turn < 2 else 0), turn
            paths.add(catalog.path)
        assert catalog.path == default_catalog_path()
    assert len(paths) == 2 and {Path(p).parent for p in paths} == {cache}


@pytest.mark.parametrize("newer", [NEWER, OTHER_PYTHON], ids=["release", "python"])
def test_an_older_install_never_rebuilds_a_newer_ones_named_catalog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, newer: tuple[int, str]
) -> None:
    folder = tmp_path / "sessions"
    sessions(folder, 3)
    database = tmp_path / "named.sqlite3"
    mine = (schema_module.SCHEMA_VERSION, unicodedata.unidata_version)
    if newer == OTHER_PYTHON:
        mine = (mine[0], "1.0.0")  # the same release on an older Python
    as_install(monkeypatch, newer)
    with Catalog(database) as catalog:
        catalog.list_all(str(folder))
    as_install(monkeypatch, mine)
    with Catalog(database) as catalog:
        assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))  # from the files
        assert catalog.last_error is not None and "newer pisession" in catalog.last_error
    with sqlite3.connect(database) as db:
        meta = dict(db.execute("SELECT key, value FROM catalog_meta").fetchall())
        assert (int(meta["schema"]), meta["unicode"]) == newer
        assert db.execute("SELECT count(*) FROM files").fetchone()[0] == 3
    db.close()
    as_install(monkeypatch, newer)
    with Catalog(database) as catalog:
        catalog.list_all(str(folder))
        assert catalog.last_error is None and catalog.last_report.read == 0


def test_a_named_catalog_of_an_older_schema_is_rebuilt_without_its_old_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "sessions"
    secret = with_a_secret(folder)
    database = tmp_path / "named.sqlite3"
    as_install(monkeypatch, (schema_module.SCHEMA_VERSION - 1, unicodedata.unidata_version))
    with Catalog(database) as catalog:
        catalog.search("password", all=True, session_dir=str(folder))
    assert holding(tmp_path) == ["named.sqlite3"]
    secret.unlink()
    monkeypatch.undo()
    monkeypatch.delenv("PISESSION_CATALOG", raising=False)
    with Catalog(database) as catalog:
        assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))
        assert catalog.last_error is None
        assert holding(tmp_path) == []  # the database nor its WAL, while it is open
    assert holding(tmp_path) == []


def our_database(path: Path, text: str, mark: bool = True, meta: dict[str, str] | None = None) -> None:
    with sqlite3.connect(path) as db:
        if mark:
            db.execute(f"PRAGMA application_id={APPLICATION_ID}")
        db.execute("CREATE TABLE catalog_meta (key TEXT PRIMARY KEY, value TEXT)")
        db.executemany("INSERT INTO catalog_meta VALUES (?, ?)", list((meta or {"schema": "9"}).items()))
        db.execute("CREATE TABLE files (id INTEGER PRIMARY KEY, path TEXT, all_text BLOB)")
        db.execute("CREATE TABLE messages (id INTEGER PRIMARY KEY, text TEXT)")
        db.execute("INSERT INTO messages (text) VALUES (?)", (text,))
    db.close()


def old(path: Path, days: float) -> None:
    stamp = time.time() - days * 86400
    os.utime(path, (stamp, stamp))


def test_the_previous_releases_catalogs_and_their_copies_aside_are_removed(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "sessions"
    sessions(folder, 2)
    cache.mkdir(parents=True)
    our_database(cache / "catalog.sqlite3", SECRET)  # the previous release's, upgraded from
    (cache / "catalog.sqlite3-wal").write_bytes(SECRET.encode() * 10)
    our_database(cache / "catalog.sqlite3.20261201-101010-4242.aside", SECRET)  # a damaged one
    # from before the catalogs were marked: moved aside as "not a pisession catalog"
    our_database(
        cache / "catalog.sqlite3.20261120-090000-77.aside", SECRET, False, {"schema": "4", "mode": "fts5"}
    )
    (cache / "catalog.sqlite3.20261120-090000-77.aside-wal").write_bytes(SECRET.encode())
    # not ours: kept as they are
    (cache / "catalog.sqlite3.20261121-090000-78.aside").write_bytes(SECRET.encode() * 100)
    foreign = cache / "catalog.sqlite3.20261122-090000-79.aside"
    our_database(foreign, SECRET, False, {"schema": "1", "mode": "theirs"})
    (cache / "notes.sqlite3").write_bytes(SECRET.encode())
    with Catalog() as catalog:
        assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))
    assert holding(cache) == sorted(
        [
            "catalog.sqlite3.20261121-090000-78.aside",
            "catalog.sqlite3.20261122-090000-79.aside",
            "notes.sqlite3",
        ]
    )
    assert not (cache / "catalog.sqlite3").exists()


def test_another_versions_catalog_unused_for_a_month_is_removed_unless_newer(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "sessions"
    sessions(folder, 2)
    cache.mkdir(parents=True)
    schema, unicode = schema_module.SCHEMA_VERSION, unicodedata.unidata_version
    names = {
        "stale older": f"catalog-v{schema - 1}-u{unicode}.sqlite3",
        "stale older python": f"catalog-v{schema}-u1.0.0.sqlite3",
        "recent older": f"catalog-v{schema - 1}-u1.0.0.sqlite3",
        "stale newer": f"catalog-v{schema + 1}-u{unicode}.sqlite3",
        "stale newer python": f"catalog-v{schema}-u999.0.0.sqlite3",
    }
    for what, name in names.items():
        our_database(cache / name, SECRET)
        if what.startswith("stale"):
            old(cache / name, 31)
    with Catalog() as catalog:
        catalog.list_all(str(folder))
    assert holding(cache) == sorted(
        names[what] for what in ("recent older", "stale newer", "stale newer python")
    )
    # the catalog in use is marked as used, so that another install leaves it be
    old(Path(default_catalog_path()), 40)
    with Catalog() as catalog:
        catalog.list_all(str(folder))
    assert time.time() - Path(default_catalog_path()).stat().st_mtime < 3600


def test_old_catalogs_are_kept_when_the_user_says_so(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "sessions"
    sessions(folder, 2)
    cache.mkdir(parents=True)
    our_database(cache / "catalog.sqlite3", SECRET)
    our_database(cache / "catalog.sqlite3.20261201-101010-4242.aside", SECRET)
    our_database(cache / "catalog-v1-u1.0.0.sqlite3", SECRET)
    old(cache / "catalog-v1-u1.0.0.sqlite3", 400)
    monkeypatch.setenv("PISESSION_KEEP_OLD_CATALOGS", "1")
    with Catalog() as catalog:
        catalog.list_all(str(folder))
    assert len(holding(cache)) == 3


def test_an_old_catalog_another_process_has_open_is_removed_later(
    tmp_path: Path, cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "sessions"
    sessions(folder, 2)
    cache.mkdir(parents=True)
    legacy = cache / "catalog.sqlite3"
    our_database(legacy, SECRET)
    (cache / "catalog.sqlite3-shm").write_bytes(bytes(32768))  # an older install reading it now
    with Catalog() as catalog:
        catalog.list_all(str(folder))
    assert legacy.exists()
    old(cache / "catalog.sqlite3-shm", 1)  # left by a process killed a day ago
    with Catalog() as catalog:
        catalog.list_all(str(folder))
    assert holding(cache) == [] and not legacy.exists()
    assert not (cache / "catalog.sqlite3-shm").exists()
