"""The catalog with other people's files: never modify a database, file or folder that is not ours,
leave no deleted session's text in the database, and never serve a damaged or vanished row."""

from __future__ import annotations

import hashlib
import os
import sqlite3
from pathlib import Path

import pytest

import pisession.catalog._catalog as catalog_impl
from pisession import CatalogError
from pisession._discovery import list_all_sessions
from pisession.catalog import Catalog, default_catalog_path, with_catalog
from pisession.cli.main import main
from tests.test_catalog import append, header, line, msg, sessions, write

SECRET = "sk-live-do-not-keep-4f2a9c"
OTHER_UID = 54321
as_root = pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0, reason="needs root to chown")


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def foreign_database(path: Path, with_meta: bool) -> None:
    with sqlite3.connect(path) as theirs:
        theirs.execute("CREATE TABLE files (x)")
        theirs.execute("INSERT INTO files VALUES (42)")
        if with_meta:
            theirs.execute("CREATE TABLE catalog_meta (key TEXT PRIMARY KEY, value TEXT)")
            theirs.execute("INSERT INTO catalog_meta VALUES ('schema', '1')")
    theirs.close()


@pytest.mark.parametrize("with_meta", [False, True])
def test_a_foreign_database_is_not_changed_at_all(tmp_path: Path, with_meta: bool) -> None:
    folder = tmp_path / "sessions"
    sessions(folder, 2)
    database = tmp_path / "theirs.sqlite3"
    foreign_database(database, with_meta)
    before = digest(database)
    with Catalog(database) as mine:
        assert mine.list_all(str(folder)) == list_all_sessions(str(folder))
        assert mine.last_error is not None and "not a pisession catalog" in mine.last_error
        assert len(mine.search("invoice", all=True, session_dir=str(folder))) == 2
    assert digest(database) == before  # not converted to WAL, no table dropped
    assert not Path(f"{database}-wal").exists()
    with sqlite3.connect(database) as theirs:
        assert theirs.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        assert theirs.execute("SELECT x FROM files").fetchall() == [(42,)]
    theirs.close()


def test_the_catalog_is_created_private_and_marked_as_ours(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    sessions(folder, 1)
    database = tmp_path / "cache" / "catalog.sqlite3"
    with Catalog(database) as mine:
        mine.list_all(str(folder))
    assert database.stat().st_mode & 0o777 == 0o600
    assert (tmp_path / "cache").stat().st_mode & 0o077 == 0
    with sqlite3.connect(database) as db:
        assert db.execute("PRAGMA application_id").fetchone()[0] != 0
    db.close()


def test_a_catalog_path_that_is_a_symbolic_link_is_not_followed(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    sessions(folder, 2)
    target = tmp_path / "elsewhere.sqlite3"
    link = tmp_path / "catalog.sqlite3"
    link.symlink_to(target)  # dangling
    with Catalog(link) as mine:
        assert mine.list_all(str(folder)) == list_all_sessions(str(folder))
        assert mine.last_error is not None and "symbolic link" in mine.last_error
    assert not target.exists()


@as_root
def test_a_file_another_user_planted_is_not_written(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    sessions(folder, 2)
    planted = tmp_path / "catalog.sqlite3"
    planted.write_bytes(b"")
    os.chmod(planted, 0o666)
    os.chown(planted, OTHER_UID, OTHER_UID)
    with Catalog(planted) as mine:
        assert mine.list_all(str(folder)) == list_all_sessions(str(folder))
        assert mine.last_error is not None and "another user" in mine.last_error
    assert planted.read_bytes() == b""


@as_root
def test_root_does_not_leave_a_cache_folder_in_another_users_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "sessions"
    sessions(folder, 2)
    home = tmp_path / "home"
    (home / ".cache").mkdir(parents=True)
    os.chown(home, OTHER_UID, OTHER_UID)
    os.chown(home / ".cache", OTHER_UID, OTHER_UID)
    monkeypatch.delenv("PISESSION_CATALOG")
    monkeypatch.setenv("XDG_CACHE_HOME", str(home / ".cache"))
    with Catalog() as catalog:
        assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))
        assert catalog.last_error is not None and "another user" in catalog.last_error
    assert os.listdir(home / ".cache") == []


def test_no_home_folder_means_no_catalog_in_the_current_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "sessions"
    sessions(folder, 2)
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PISESSION_CATALOG")
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setattr(os.path, "expanduser", lambda path: path)  # as with no HOME and no passwd entry
    with pytest.raises(CatalogError, match="no home folder"):
        default_catalog_path()
    infos = with_catalog(True, lambda catalog: catalog.list_all(str(folder)))
    assert infos == list_all_sessions(str(folder))
    assert not (tmp_path / "~").exists()


def db_bytes(database: Path) -> bytes:
    return b"".join(
        Path(f"{database}{suffix}").read_bytes()
        for suffix in ("", "-wal")
        if Path(f"{database}{suffix}").exists()
    )


@pytest.mark.parametrize("fts", [True, False])
def test_a_deleted_sessions_text_is_not_left_in_the_database(tmp_path: Path, fts: bool) -> None:
    folder = tmp_path / "sessions"
    sessions(folder, 3)
    path = write(folder / "leak.jsonl", header("leak"), msg("k", "user", f"my api key is {SECRET} ok"))
    database = tmp_path / "catalog.sqlite3"
    with Catalog(database, fts=fts) as catalog:
        assert len(catalog.search("api key", all=True, session_dir=str(folder))) == 1
        assert SECRET.encode() in db_bytes(database)
        path.unlink()
        assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))
        assert catalog.search("api key", all=True, session_dir=str(folder)) == []
        assert SECRET.encode() not in db_bytes(database)


def test_a_session_read_again_does_not_leave_its_old_text(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    sessions(folder, 2)
    path = write(folder / "leak.jsonl", header("leak"), msg("k", "user", f"my api key is {SECRET} ok"))
    database = tmp_path / "catalog.sqlite3"
    with Catalog(database) as catalog:
        catalog.search("api key", all=True, session_dir=str(folder))
        write(path, header("leak"), msg("k", "user", "my api key is [redacted] ok"))
        assert len(catalog.search("redacted", all=True, session_dir=str(folder))) == 1
        assert SECRET.encode() not in db_bytes(database)


def test_a_damaged_row_is_never_served_as_a_sessions_text(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    sessions(folder, 3)
    database = tmp_path / "catalog.sqlite3"
    with Catalog(database) as catalog:
        catalog.list_all(str(folder))
    with sqlite3.connect(database) as db:
        db.execute("UPDATE files SET all_text = CAST('forged text' AS BLOB) WHERE path LIKE '%s1.jsonl'")
    db.close()
    with Catalog(database) as catalog:
        assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))
        assert catalog.last_error is not None and "damaged" in catalog.last_error


def test_rows_rebuilt_by_another_process_after_the_refresh_are_not_served_empty(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "sessions"
    sessions(folder, 3)
    database = tmp_path / "catalog.sqlite3"
    refreshed = catalog_impl.Catalog._current

    def then_rebuilt(self: Catalog, *args: object, **kwargs: object) -> object:
        found = refreshed(self, *args, **kwargs)  # type: ignore[arg-type]
        with sqlite3.connect(database, isolation_level=None) as other:
            other.execute("DELETE FROM files")
        other.close()
        return found

    monkeypatch.setattr(catalog_impl.Catalog, "_current", then_rebuilt)
    with Catalog(database) as catalog:
        infos = catalog.list_all(str(folder))
    assert infos == list_all_sessions(str(folder))
    assert all(info.all_messages_text for info in infos)


def default_location(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("PISESSION_CATALOG")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    database = Path(default_catalog_path())
    database.parent.mkdir(parents=True)
    return database


@pytest.mark.parametrize("content", ["garbage", "foreign"])
def test_an_unusable_catalog_at_the_default_location_is_moved_aside_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], content: str
) -> None:
    # not ours: someone's file, kept as it was
    folder = tmp_path / "sessions"
    sessions(folder, 3)
    database = default_location(tmp_path, monkeypatch)
    if content == "garbage":
        database.write_bytes(b"this is not a database" * 100)
    else:
        foreign_database(database, with_meta=True)
    original = database.read_bytes()
    assert main(["ls", "--all", "--session-dir", str(folder)]) == 0
    err = capsys.readouterr().err
    assert err.count("moved it to") == 1 and "not used" not in err
    aside = [p for p in database.parent.iterdir() if p.name.endswith(".aside")]
    assert len(aside) == 1 and aside[0].read_bytes() == original
    assert main(["ls", "--all", "--session-dir", str(folder)]) == 0
    assert capsys.readouterr().err == ""
    with Catalog() as catalog:
        assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))
        assert catalog.last_error is None and catalog.last_notice is None
    assert [p for p in database.parent.iterdir() if p.name.endswith(".aside")] == aside  # kept


def damaged_default_catalog(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    folder = tmp_path / "sessions"
    sessions(folder, 3)
    write(folder / "secret.jsonl", header("id-secret"), msg("p", "user", f"my password is {SECRET}"))
    database = default_location(tmp_path, monkeypatch)
    with Catalog() as good:
        good.list_all(str(folder))
    data = bytearray(database.read_bytes())
    assert SECRET.encode() in data
    data[100:4096] = b"\xff" * (4096 - 100)  # the schema page, header (and our mark) kept
    database.write_bytes(bytes(data))
    return folder, database


def holding(folder: Path, secret: str) -> list[str]:
    return sorted(p.name for p in folder.rglob("*") if p.is_file() and secret.encode() in p.read_bytes())


def test_a_damaged_catalog_at_the_default_location_is_removed_with_its_text(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, database = damaged_default_catalog(tmp_path, monkeypatch)
    assert main(["ls", "--all", "--session-dir", str(folder)]) == 0
    err = capsys.readouterr().err
    assert err.count("removed it and started a new one") == 1
    assert not [p for p in database.parent.iterdir() if ".aside" in p.name]
    for path in folder.iterdir():
        path.unlink()  # the sessions deleted: no copy of their text stays in the cache
    with Catalog() as catalog:
        assert catalog.list_all(str(folder)) == []
    assert holding(database.parent, SECRET) == []
    assert main(["ls", "--all", "--session-dir", str(folder)]) == 0
    assert capsys.readouterr().err == ""


def test_a_damaged_catalog_is_kept_aside_when_the_user_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder, database = damaged_default_catalog(tmp_path, monkeypatch)
    original = database.read_bytes()
    monkeypatch.setenv("PISESSION_KEEP_OLD_CATALOGS", "1")
    assert main(["ls", "--all", "--session-dir", str(folder)]) == 0
    assert capsys.readouterr().err.count("moved it to") == 1
    aside = [p for p in database.parent.iterdir() if p.name.endswith(".aside")]
    assert len(aside) == 1 and aside[0].read_bytes() == original


def test_an_unusable_catalog_at_a_named_path_is_left_alone(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    sessions(folder, 2)
    database = tmp_path / "named.sqlite3"
    database.write_bytes(b"this is not a database" * 100)
    for _ in range(2):
        with Catalog(database) as catalog:
            assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))
            assert catalog.last_error is not None and "not touching it" in catalog.last_error
    assert database.read_bytes() == b"this is not a database" * 100
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith("named")] == ["named.sqlite3"]


def test_a_damaged_picker_row_is_read_again_from_the_file(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    sessions(folder, 3)
    database = tmp_path / "catalog.sqlite3"
    with Catalog(database) as catalog:
        catalog.list_all(str(folder))
    with sqlite3.connect(database) as db:
        db.execute("UPDATE files SET first_message = CAST('forged' AS BLOB) WHERE path LIKE '%s1.jsonl'")
        db.execute("UPDATE files SET message_count = 99 WHERE path LIKE '%s2.jsonl'")
    db.close()
    with Catalog(database) as catalog:
        assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))
        assert catalog.last_report.read == 2


def test_a_damaged_text_is_read_again_on_the_next_call(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    sessions(folder, 3)
    database = tmp_path / "catalog.sqlite3"
    with Catalog(database) as catalog:
        catalog.list_all(str(folder))
    with sqlite3.connect(database) as db:
        db.execute("UPDATE files SET all_text = CAST('forged text' AS BLOB) WHERE path LIKE '%s1.jsonl'")
    db.close()
    with Catalog(database) as catalog:
        assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))  # the files, this time
        assert catalog.last_error is not None
    with Catalog(database) as catalog:
        assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))
        assert catalog.last_error is None and catalog.last_report.read == 1


def test_a_damaged_text_is_not_carried_on_when_its_file_grows(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    paths = sessions(folder, 2)
    database = tmp_path / "catalog.sqlite3"
    with Catalog(database) as catalog:
        catalog.list_all(str(folder))
    with sqlite3.connect(database) as db:
        db.execute("UPDATE files SET all_text = CAST('\"forged text\"' AS BLOB) WHERE path LIKE '%s1.jsonl'")
    db.close()
    append(paths[1], line(msg("x", "user", "appended")))  # read from its old end: the kept text is reused
    with Catalog(database) as catalog:
        assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))
        assert catalog.last_error is None
