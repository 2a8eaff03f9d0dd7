"""Naming and introspection (issue 31, item 8): distinct names for the two usage-row classes,
``help()`` on the async constructors, and leftover ``*.jsonl.lock`` files removed safely."""

from __future__ import annotations

import inspect
import os
import pydoc
import threading
from pathlib import Path

import pytest

import pisession
from pisession import SessionManager, UserMessage
from pisession.aio import AsyncSessionManager


def test_the_stats_and_report_classes_have_distinct_names_and_the_old_ones_warn() -> None:
    from pisession import stats, usage

    assert stats.StatsRow is not usage.ReportRow and stats.StatsTotals is not usage.ReportTotals
    for module, old, new in (
        (stats, "UsageRow", stats.StatsRow),
        (stats, "UsageTotals", stats.StatsTotals),
        (usage, "UsageRow", usage.ReportRow),
        (usage, "UsageTotals", usage.ReportTotals),
    ):
        with pytest.warns(DeprecationWarning, match=f"{old} is deprecated: use .*{new.__name__}"):
            assert getattr(module, old) is new
        assert old not in module.__all__ and new.__name__ in module.__all__
    with pytest.raises(AttributeError):
        _ = stats.NoSuchName  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", ["open", "create", "in_memory", "continue_recent", "fork_from"])
def test_help_on_an_async_constructor_shows_its_own_doc_and_return_type(name: str) -> None:
    constructor = getattr(AsyncSessionManager, name)
    assert inspect.iscoroutinefunction(constructor)
    signature = inspect.signature(constructor)
    assert signature.return_annotation == "AsyncSessionManager"
    sync = inspect.signature(getattr(SessionManager, name))
    assert list(signature.parameters) == list(sync.parameters)
    text = pydoc.render_doc(constructor, renderer=pydoc.plaintext)
    assert f"async {name}(" in text and "-> 'AsyncSessionManager'" in text
    assert f"await AsyncSessionManager.{name}(...)" in text
    assert constructor.__qualname__ == f"AsyncSessionManager.{name}"


def test_help_on_an_async_listing_says_it_is_awaited() -> None:
    text = pydoc.render_doc(AsyncSessionManager.list, renderer=pydoc.plaintext)
    assert "async list(" in text and "await AsyncSessionManager.list(...)" in text


def _written(folder: Path, n: int) -> list[Path]:
    paths = []
    for i in range(n):
        manager = SessionManager.create(str(folder), str(folder))
        manager.append_message(UserMessage(content=f"hi {i}"))
        path = manager.get_session_file()
        assert path is not None
        manager.close()
        paths.append(Path(path))
    return paths


def test_unused_lock_files_are_removed_and_held_ones_kept(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    project = root / "--work--"
    project.mkdir(parents=True)
    sessions = _written(project, 3)
    locks = sorted(project.glob("*.jsonl.lock"))
    assert len(locks) == 3  # what piles up beside Pi's sessions
    (project / "notes.jsonl.lock").write_text("not ours")  # not empty: never touched
    (project / "link.jsonl.lock").symlink_to(locks[0])  # a link: never touched
    holder = SessionManager.open(str(sessions[0]))
    with holder.transaction():  # holds the first session's lock
        removed = pisession.remove_unused_locks(root)
    assert sorted(removed) == [str(p) for p in locks[1:]]
    assert locks[0].exists() and not locks[1].exists() and not locks[2].exists()
    assert (project / "notes.jsonl.lock").exists() and (project / "link.jsonl.lock").is_symlink()
    holder.close()
    assert [p.read_text().count("\n") for p in sessions] == [2, 2, 2]  # sessions untouched


def test_a_writer_that_kept_the_removed_lock_open_locks_the_new_one(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    folder.mkdir()
    (path,) = _written(folder, 1)
    first = SessionManager.open(str(path))
    first.append_message(UserMessage(content="cached descriptor"))  # the lock's fd is now cached
    assert pisession.remove_unused_locks(folder) == [str(path) + ".lock"]
    second = SessionManager.open(str(path))
    entered = threading.Event()
    release = threading.Event()
    errors: list[BaseException] = []

    def hold() -> None:
        try:
            with second.transaction():
                entered.set()
                release.wait(10)
        except BaseException as error:  # pragma: no cover - reported below
            errors.append(error)

    thread = threading.Thread(target=hold)
    thread.start()
    assert entered.wait(10)
    # the first writer's cached lock file was unlinked: it must lock the file there now and wait
    done = threading.Event()

    def write() -> None:
        first.append_message(UserMessage(content="after"))
        done.set()

    writer = threading.Thread(target=write)
    writer.start()
    assert not done.wait(0.5)  # excluded by the second writer's lock on the new file
    release.set()
    thread.join(10)
    writer.join(10)
    assert done.is_set() and not errors
    assert os.path.exists(str(path) + ".lock")
    first.close()
    second.close()
