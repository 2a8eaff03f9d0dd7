"""``SessionManager.follow()``: woken by inotify where Linux has it, polling elsewhere or when
told not to, and closing its watch when the iteration ends. No timing assertions: a poll
interval far beyond the hang guard makes "woken by inotify" the only way to pass."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

import pisession
from pisession import SessionManager, _watch

REPO = str(Path(__file__).resolve().parents[1])
HANG_GUARD = 120.0  # seconds; only ever reached when something deadlocks

APPENDER = r"""
import sys, time
sys.path.insert(0, sys.argv[1])
from pisession import SessionManager
manager = SessionManager.open(sys.argv[2])
for i in range(int(sys.argv[3])):
    manager.append_message({"role": "user", "content": f"other-{i}", "timestamp": i})
    time.sleep(0.002)
print("done")
"""


def new_session(tmp_path: Path) -> str:
    manager = SessionManager.create("/project", tmp_path / "sessions")
    manager.append_message({"role": "user", "content": "start", "timestamp": 1})
    path = manager.get_session_file()
    assert path is not None
    manager.close()
    return path


def follow_other_process(path: str, count: int, **options: Any) -> list[str]:
    """The texts a follower thread saw while another process appended ``count`` messages."""
    manager = SessionManager.open(path)
    stop = threading.Event()
    seen: list[str] = []
    failure: list[BaseException] = []
    all_seen = threading.Event()

    def collect() -> None:
        try:
            for entry in manager.follow(stop=stop, **options):
                assert isinstance(entry, pisession.MessageEntry)
                seen.append(str(entry.message.content))
                if len(seen) == count:
                    all_seen.set()
        except BaseException as error:  # the test reports it
            failure.append(error)
            all_seen.set()

    follower = threading.Thread(target=collect, daemon=True)
    follower.start()
    child = subprocess.run(
        [sys.executable, "-c", APPENDER, REPO, path, str(count)], capture_output=True, timeout=HANG_GUARD
    )
    assert child.returncode == 0 and child.stdout.strip() == b"done"
    all_seen.wait(HANG_GUARD)
    stop.set()
    follower.join(HANG_GUARD)
    assert not follower.is_alive(), "follow() did not end when told to stop"
    assert not failure, failure
    assert manager.get_leaf_id() != manager.get_entries()[-1].id, "follow() moved the leaf"
    return seen


@pytest.mark.skipif(not _watch.inotify_available(), reason="inotify is Linux-only")
def test_follow_wakes_on_inotify(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Neither poll could find the entries within the hang guard: only inotify wakes the follower.
    monkeypatch.setattr(_watch, "NOTIFIED_POLL", 10 * HANG_GUARD)
    path = new_session(tmp_path)
    seen = follow_other_process(path, 40, poll_interval=10 * HANG_GUARD)
    assert seen == [f"other-{i}" for i in range(40)]


@pytest.mark.parametrize("how", ["notify-off", "no-inotify"])
def test_follow_polls_where_inotify_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    opened: list[str] = []
    if how == "no-inotify":
        monkeypatch.setattr(_watch, "open_watcher", lambda path: opened.append(path))  # returns None
    path = new_session(tmp_path)
    seen = follow_other_process(path, 40, poll_interval=0.005, notify=how != "notify-off")
    assert seen == [f"other-{i}" for i in range(40)]
    assert opened == ([path] if how == "no-inotify" else [])


@pytest.mark.skipif(not _watch.inotify_available(), reason="inotify is Linux-only")
@pytest.mark.parametrize("how", ["stop", "break"])
def test_follow_closes_its_watch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    watchers: list[_watch.FileWatcher] = []
    open_watcher = _watch.open_watcher

    def spy(path: str) -> _watch.FileWatcher | None:
        watcher = open_watcher(path)
        assert watcher is not None
        watchers.append(watcher)
        return watcher

    monkeypatch.setattr(_watch, "open_watcher", spy)
    path = new_session(tmp_path)
    manager = SessionManager.open(path)
    written = SessionManager.open(path).append_custom_entry("x")
    stop = threading.Event()
    follower = manager.follow(stop=stop)
    assert next(follower).id == written
    if how == "stop":
        stop.set()
        assert list(follower) == []
    else:
        follower.close()  # what a `break` out of the for loop does
    assert watchers and watchers[0]._fd is None, "the inotify descriptor was left open"
