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


# -- every entry once, whatever the reader does between items ------------------------------------


def appended_by_another(path: str, count: int, kind: str = "other") -> list[str]:
    """Ids of ``count`` custom entries another manager appended."""
    other = SessionManager.open(path)
    ids = [other.append_custom_entry(kind, {"n": n}) for n in range(count)]
    other.close()
    return ids


class Stop(Exception):
    pass


def texts(entries: list[pisession.Entry]) -> list[str]:
    return [str(e.message.content) for e in entries if isinstance(e, pisession.MessageEntry)]


@pytest.mark.parametrize("how", ["break", "raise"])
@pytest.mark.parametrize("then", ["refresh", "follow"])
def test_a_follow_left_early_leaves_the_rest(tmp_path: Path, how: str, then: str) -> None:
    path = new_session(tmp_path)
    reader = SessionManager.open(path)
    written = appended_by_another(path, 10)
    got: list[str] = []
    try:
        for entry in reader.follow(notify=False):
            got.append(entry.id)
            if how == "raise":
                raise Stop
            break
    except Stop:
        pass
    assert got == written[:1]
    if then == "refresh":
        rest = [e.id for e in reader.refresh()]
    else:
        stop = threading.Event()
        stop.set()  # reads to the end, hands over what is there, ends
        rest = [e.id for e in reader.follow(stop=stop, notify=False)]
    assert rest == written[1:]
    assert reader.refresh() == []


def test_refresh_and_follow_share_what_is_delivered(tmp_path: Path) -> None:
    path = new_session(tmp_path)
    reader = SessionManager.open(path)
    written = appended_by_another(path, 10)
    follower = reader.follow(notify=False)
    first = [next(follower).id for _ in range(3)]
    later = appended_by_another(path, 2)
    assert [e.id for e in reader.refresh()] == written[3:] + later
    follower.close()
    assert first == written[:3]
    stop = threading.Event()
    stop.set()
    assert list(reader.follow(stop=stop)) == []


def test_restarted_readers_get_every_entry_once_in_order(tmp_path: Path) -> None:
    """Another process appends 400 lines while a reader keeps giving up: on a timer (its stop
    set from another thread), after a few entries (a break), by raising, or refreshing."""
    import random

    path = new_session(tmp_path)
    reader = SessionManager.open(path)
    child = subprocess.Popen([sys.executable, "-c", APPENDER, REPO, path, "400"], stdout=subprocess.PIPE)
    rng = random.Random(22)
    got: list[str] = []
    after_the_writer = 0  # rounds once the writer is done: a lost entry never comes, give up
    try:
        while len(got) < 400 and after_the_writer < 20:
            if child.poll() is not None:
                after_the_writer += 1
            mode = rng.choice(["timer", "break", "raise", "refresh"])
            if mode == "refresh":
                got.extend(texts(reader.refresh()))
                continue
            stop = threading.Event()
            timer = threading.Timer(rng.choice([0.0, 0.001, 0.01]), stop.set)
            timer.start()
            limit = rng.randint(1, 5)
            try:
                for taken, entry in enumerate(reader.follow(poll_interval=0.001, stop=stop), 1):
                    assert isinstance(entry, pisession.MessageEntry)
                    got.append(str(entry.message.content))
                    if mode != "timer" and taken == limit:
                        if mode == "raise":
                            raise Stop
                        break
            except Stop:
                pass
            finally:
                timer.cancel()
    finally:
        out, _ = child.communicate(timeout=HANG_GUARD)
    assert out.strip() == b"done"
    got.extend(texts(reader.refresh()))
    assert got == [f"other-{i}" for i in range(400)]


# -- stopping drains; own appends ----------------------------------------------------------------


def test_a_stopped_follow_first_yields_what_was_written_before_the_stop(tmp_path: Path) -> None:
    path = new_session(tmp_path)
    reader = SessionManager.open(path)
    stop = threading.Event()
    seen: list[str] = []
    waiting = threading.Event()

    def follow() -> None:
        for entry in reader.follow(poll_interval=10 * HANG_GUARD, stop=stop, notify=False):
            seen.append(entry.id)
            if entry.id == ready:
                waiting.set()

    ready = appended_by_another(path, 1, "ready")[0]
    follower = threading.Thread(target=follow, daemon=True)
    follower.start()
    assert waiting.wait(HANG_GUARD)
    # The follower now sleeps for good (no inotify, a poll far beyond the guard): only the
    # stop wakes it, and it must then read the 50 entries itself.
    written = appended_by_another(path, 50)
    stop.set()
    follower.join(HANG_GUARD)
    assert not follower.is_alive()
    assert seen == [ready, *written]


def follow_while_appending(path: str, include_own: bool) -> tuple[list[str], list[str], list[str]]:
    """What a follower thread saw while the main thread appended 20 entries through the same
    manager and 20 through another, alternately: (seen, own ids, other ids)."""
    reader = SessionManager.open(path)
    other = SessionManager.open(path)
    stop = threading.Event()
    seen: list[str] = []
    started = threading.Event()
    ready = other.append_custom_entry("ready")

    def follow() -> None:
        for entry in reader.follow(poll_interval=0.001, stop=stop, include_own=include_own):
            seen.append(entry.id)
            if entry.id == ready:
                started.set()  # the follow is under way: the appends below happen while it runs

    follower = threading.Thread(target=follow, daemon=True)
    follower.start()
    assert started.wait(HANG_GUARD)
    mine, theirs = [], []
    for n in range(20):
        mine.append(reader.append_custom_entry("mine", {"n": n}))
        theirs.append(other.append_custom_entry("theirs", {"n": n}))
    stop.set()
    follower.join(HANG_GUARD)
    assert not follower.is_alive()
    assert seen[0] == ready
    return seen[1:], mine, theirs


@pytest.mark.parametrize("include_own", [False, True])
def test_own_appends_are_followed_only_when_asked_for(tmp_path: Path, include_own: bool) -> None:
    seen, mine, theirs = follow_while_appending(new_session(tmp_path), include_own)
    if include_own:
        assert seen == [i for pair in zip(mine, theirs, strict=True) for i in pair]
    else:
        assert seen == theirs


def test_appends_in_the_loop_body_are_not_followed(tmp_path: Path) -> None:
    path = new_session(tmp_path)
    reader = SessionManager.open(path)
    written = appended_by_another(path, 10)
    stop = threading.Event()
    stop.set()
    seen = []
    for entry in reader.follow(stop=stop):
        seen.append(entry.id)
        reader.append_custom_entry("reply", {"to": entry.id})
    assert seen == written
    assert reader.refresh() == []


def test_a_reread_file_reports_others_entries_not_ours(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another writer's line lands between our look and our write, and the store cannot read
    it from where it stopped: the manager reads the whole file again. What it then reports as
    new is the other's entry, never its own append."""
    from pisession import _store

    path = new_session(tmp_path)
    reader = SessionManager.open(path)
    theirs: list[str] = []
    write_lines = _store.SessionFile._write_lines
    other = SessionManager.open(path)

    def interleaved(self: _store.SessionFile, fd: int, data: bytes, *, replaced: bool) -> bool:
        if not theirs:  # another writer, just before ours
            theirs.append("")
            theirs[0] = other.append_custom_entry("theirs")
        return write_lines(self, fd, data, replaced=replaced)

    monkeypatch.setattr(_store.SessionFile, "_write_lines", interleaved)
    monkeypatch.setattr(_store.SessionFile, "_read_between", lambda self, fd, start: None)
    mine = reader.append_custom_entry("mine")
    monkeypatch.undo()
    assert [e.id for e in reader.get_entries()][-2:] == [theirs[0], mine]
    assert [e.id for e in reader.refresh()] == theirs


def test_what_was_pending_survives_a_replaced_file(tmp_path: Path) -> None:
    path = new_session(tmp_path)
    reader = SessionManager.open(path)
    written = appended_by_another(path, 4)
    follower = reader.follow(notify=False)
    assert next(follower).id == written[0]
    follower.close()
    # A tool rewrites the session into a new file renamed over the old one, with one more line.
    copy = Path(path + ".new")
    copy.write_bytes(Path(path).read_bytes())
    later = SessionManager.open(str(copy)).append_custom_entry("later")
    copy.replace(path)
    assert [e.id for e in reader.refresh()] == [*written[1:], later]
