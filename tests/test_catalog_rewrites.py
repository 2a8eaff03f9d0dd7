"""The catalog sees a session rewritten in place anywhere in the file, whatever its size and mtime say."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pisession._discovery import list_all_sessions
from pisession.catalog import Catalog
from tests.test_catalog import age, header, line, msg, write

SECRET = "sk-live-0123456789abcdef"
MASKED = "sk-live-XXXXXXXXXXXXXXXX"


def long_session(path: Path) -> Path:
    """A secret in a message far (more than 512 bytes) from both ends of the file."""
    padding = "lorem ipsum dolor sit amet " * 40
    return write(
        path,
        header("id-secret"),
        msg("u1", "user", padding),
        msg("u2", "user", f"my key is {SECRET} please keep it"),
        msg("u3", "user", padding),
    )


def rewrite_in_place(path: Path, old: str, new: str) -> None:
    data = path.read_bytes()
    assert len(old) == len(new) and data.count(old.encode()) == 1
    with open(path, "r+b") as handle:
        handle.write(data.replace(old.encode(), new.encode()))


@pytest.fixture
def catalog(tmp_path: Path) -> Catalog:
    return Catalog(tmp_path / "cache" / "catalog.sqlite3")


def texts(catalog: Catalog, folder: Path) -> list[str]:
    return [info.all_messages_text for info in catalog.list_all(str(folder))]


def test_a_same_size_rewrite_that_keeps_the_mtime_is_seen(tmp_path: Path, catalog: Catalog) -> None:
    """A redaction script masks a secret in place and puts the old mtime back (touch -r)."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    path = long_session(folder / "s.jsonl")
    assert any(SECRET in text for text in texts(catalog, folder))
    assert [hit.entry_id for hit in catalog.search("my key", all=True, session_dir=str(folder))] == ["u2"]
    before = path.stat()
    rewrite_in_place(path, SECRET, MASKED)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert (path.stat().st_size, path.stat().st_mtime_ns) == (before.st_size, before.st_mtime_ns)
    assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))
    assert not any(SECRET in text for text in texts(catalog, folder))
    assert catalog.search(SECRET, all=True, session_dir=str(folder)) == []
    assert [hit.entry_id for hit in catalog.search(MASKED, all=True, session_dir=str(folder))] == ["u2"]
    catalog.close()


def test_a_rewrite_in_the_middle_then_an_append_is_read_again(tmp_path: Path, catalog: Catalog) -> None:
    """First and last bytes unchanged, larger: not an append, since a byte in between changed."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    path = long_session(folder / "s.jsonl")
    catalog.search("my key", all=True, session_dir=str(folder))
    rewrite_in_place(path, SECRET, MASKED)
    with open(path, "ab") as handle:
        handle.write(line(msg("u4", "user", "appended after the redaction")))
    age(path)
    assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))
    assert (catalog.last_report.read, catalog.last_report.appended) == (1, 0)
    assert catalog.search(SECRET, all=True, session_dir=str(folder)) == []
    assert [hit.entry_id for hit in catalog.search(MASKED, all=True, session_dir=str(folder))] == ["u2"]
    assert [hit.entry_id for hit in catalog.search("redaction", all=True, session_dir=str(folder))] == ["u4"]
    catalog.close()


def test_a_plain_append_is_still_read_from_its_old_end(tmp_path: Path, catalog: Catalog) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    path = long_session(folder / "s.jsonl")
    catalog.list_all(str(folder))
    with open(path, "ab") as handle:
        handle.write(line(msg("u4", "user", "appended")))
    age(path)
    assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))
    assert (catalog.last_report.read, catalog.last_report.appended) == (0, 1)
    catalog.close()
