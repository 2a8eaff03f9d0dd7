"""The write machinery of SessionManager in its own module (``pisession._writer``): the file a
fork starts, and reading up to date before planning a write. Locking, batches and following
other writers are tested through the manager in test_locking.py, test_concurrency.py,
test_follow.py and test_write_safety.py."""

from __future__ import annotations

import json
from pathlib import Path

from pisession import SessionManager
from pisession._writer import SessionWriter, write_fork


def _session(tmp_path: Path) -> SessionManager:
    manager = SessionManager.create("/project", tmp_path / "sessions")
    manager.append_message({"role": "user", "content": "hello", "timestamp": 1})
    manager.append_message({"role": "user", "content": "again", "timestamp": 2})
    return manager


def test_the_manager_is_built_on_the_writer() -> None:
    assert issubclass(SessionManager, SessionWriter)


def test_write_fork_writes_a_new_session_that_names_its_parent(tmp_path: Path) -> None:
    source = _session(tmp_path)
    path = source.get_session_file()
    assert path is not None
    before = Path(path).read_bytes()
    target, directory, new_path, clock, ids = write_fork(
        path, tmp_path / "other", tmp_path / "forks", None, None, None, None, None
    )
    assert Path(path).read_bytes() == before
    assert directory == str(tmp_path / "forks") and Path(new_path).parent == tmp_path / "forks"
    lines = [json.loads(line) for line in Path(new_path).read_text(encoding="utf-8").splitlines()]
    assert lines[0]["type"] == "session" and lines[0]["parentSession"] == path
    assert lines[0]["cwd"] == target and lines[0]["id"] != source.get_session_id()
    assert [e["id"] for e in lines[1:]] == [e.id for e in source.get_entries()]
    assert clock.now_ms() > 0 and ids.entry_id(()) != ids.entry_id(())


def test_catch_up_reads_what_another_writer_appended_and_follows_it(tmp_path: Path) -> None:
    mine = _session(tmp_path)
    path = mine.get_session_file()
    assert path is not None
    theirs = SessionManager.open(path)
    appended = theirs.append_message({"role": "user", "content": "from elsewhere", "timestamp": 3})
    assert appended not in mine.snapshot()
    index, leaf = mine._catch_up()
    assert appended in index and leaf == appended == mine.get_leaf_id()
