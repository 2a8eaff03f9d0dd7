"""``pisession.aio``: the asyncio manager, its transactions, and ``follow()`` woken by inotify or
by polling. Every wait has a generous hang guard; nothing here measures time."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sys
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest

import pisession
from pisession import CustomEntry, SessionClosedError, SessionManager, _watch, aio
from pisession.aio import AsyncSessionManager

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


def run(coroutine: Coroutine[Any, Any, Any]) -> Any:
    return asyncio.run(asyncio.wait_for(coroutine, HANG_GUARD))


def user(text: str, ts: int = 1) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": ts}


def new_session(tmp_path: Path) -> str:
    manager = SessionManager.create("/project", tmp_path / "sessions")
    manager.append_message(user("start"))
    path = manager.get_session_file()
    assert path is not None
    manager.close()
    return path


def assert_one_chain(path: str) -> list[str]:
    """Every entry once, each parent the entry before it; returns the message texts."""
    entries = [json.loads(line) for line in Path(path).read_text().splitlines()[1:]]
    ids = [e["id"] for e in entries]
    assert len(set(ids)) == len(ids)
    assert [e["parentId"] for e in entries] == [None, *ids[:-1]]
    return [e["message"]["content"] for e in entries if e["type"] == "message"]


def test_tasks_appending_concurrently_through_one_manager(tmp_path: Path) -> None:
    path = new_session(tmp_path)

    async def main() -> list[str]:
        async with await AsyncSessionManager.open(path) as manager:

            async def task(k: int) -> list[str]:
                return [await manager.append_message(user(f"t{k}-{i}", i)) for i in range(25)]

            written = await asyncio.gather(*(task(k) for k in range(8)))
            assert manager.get_entry_count() == 1 + 200
            return [entry_id for ids in written for entry_id in ids]

    written = run(main())
    texts = assert_one_chain(path)
    assert sorted(texts[1:]) == sorted(f"t{k}-{i}" for k in range(8) for i in range(25))
    ids = [e.id for e in SessionManager.open(path).get_entries()]
    assert sorted(ids[1:]) == sorted(written)


def test_tasks_with_their_own_managers_append_every_entry_once(tmp_path: Path) -> None:
    path = new_session(tmp_path)

    async def main() -> None:
        managers = [await AsyncSessionManager.open(path) for _ in range(4)]

        async def task(k: int) -> None:
            for i in range(25):
                await managers[k].append_message(user(f"m{k}-{i}", i))

        await asyncio.gather(*(task(k) for k in range(4)))
        for manager in managers:
            await manager.close()

    run(main())
    texts = assert_one_chain(path)  # each append first read the others': no stale parent
    assert sorted(texts[1:]) == sorted(f"m{k}-{i}" for k in range(4) for i in range(25))


@pytest.mark.parametrize("managers", [1, 4], ids=["one-manager", "four-managers"])
def test_tasks_incrementing_in_transactions_lose_nothing(tmp_path: Path, managers: int) -> None:
    path = new_session(tmp_path)

    async def main() -> None:
        pool = [await AsyncSessionManager.open(path) for _ in range(managers)]

        async def task(manager: AsyncSessionManager) -> None:
            for _ in range(10):
                async with manager.transaction():
                    count = manager.get_custom_data("counter", {"n": 0})["n"]
                    await asyncio.sleep(0)  # other tasks run here, and must not write
                    await manager.append_custom_entry("counter", {"n": count + 1})

        await asyncio.gather(*(task(pool[k % managers]) for k in range(8)))
        for manager in pool:
            await manager.close()

    run(main())
    final = SessionManager.open(path)
    assert [e.data["n"] for e in final.get_entries_of_type(CustomEntry, branch=True)] == list(range(1, 81))


def test_without_a_transaction_tasks_lose_increments(tmp_path: Path) -> None:
    """The test above, minus the transaction: every task reads 0 before any appends."""
    path = new_session(tmp_path)

    async def main() -> Any:
        async with await AsyncSessionManager.open(path) as manager:

            async def task() -> None:
                count = manager.get_custom_data("counter", {"n": 0})["n"]
                await asyncio.sleep(0)
                await manager.append_custom_entry("counter", {"n": count + 1})

            await asyncio.gather(*(task() for _ in range(8)))
            return manager.get_custom_data("counter")

    assert run(main()) == {"n": 1}


def test_a_transaction_waits_for_the_lock_without_blocking_the_loop(tmp_path: Path) -> None:
    path = new_session(tmp_path)
    holder = SessionManager.open(path)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with holder.transaction():
            held.set()
            release.wait(HANG_GUARD)
            holder.append_custom_entry("holder")

    thread = threading.Thread(target=hold)
    thread.start()
    held.wait(HANG_GUARD)

    async def main() -> int:
        manager = await AsyncSessionManager.open(path)
        append = asyncio.ensure_future(manager.append_custom_entry("async"))
        ticks = 0
        while ticks < 20:  # the loop runs while the append waits for the lock
            await asyncio.sleep(0.001)
            ticks += 1
            assert not append.done()
        release.set()
        await append
        await manager.close()
        return ticks

    assert run(main()) == 20
    thread.join(HANG_GUARD)
    types = [e.custom_type for e in SessionManager.open(path).get_entries_of_type(CustomEntry, branch=True)]
    assert types == ["holder", "async"], "the async append read the holder's entry first"


def test_a_transaction_cancelled_while_waiting_for_the_lock_releases_it(tmp_path: Path) -> None:
    path = new_session(tmp_path)
    holder = SessionManager.open(path)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with holder.transaction():
            held.set()
            release.wait(HANG_GUARD)

    thread = threading.Thread(target=hold)
    thread.start()
    held.wait(HANG_GUARD)

    async def main() -> None:
        manager = await AsyncSessionManager.open(path)

        async def enter() -> None:
            async with manager.transaction():
                raise AssertionError("the cancelled transaction ran its body")

        waiting = asyncio.ensure_future(enter())
        await asyncio.sleep(0.05)
        waiting.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiting
        release.set()
        # The manager's thread took the lock after the cancel and let it go again: both the
        # manager and another thread can write.
        await manager.append_custom_entry("after")
        other = threading.Thread(target=lambda: SessionManager.open(path).append_custom_entry("other"))
        other.start()
        await asyncio.to_thread(other.join, HANG_GUARD)
        assert not other.is_alive(), "the session lock was left held"
        await manager.close()

    run(main())
    thread.join(HANG_GUARD)
    types = [e.custom_type for e in SessionManager.open(path).get_entries_of_type(CustomEntry)]
    assert types == ["after", "other"]


def test_transactions_nest_and_an_exception_ends_them(tmp_path: Path) -> None:
    path = new_session(tmp_path)

    async def main() -> None:
        manager = await AsyncSessionManager.open(path)
        with pytest.raises(KeyError):
            async with manager.transaction() as inner:
                assert inner is manager
                async with manager.transaction():
                    await manager.append_custom_entry("one")
                await manager.append_custom_entry("two")
                raise KeyError("boom")
        # Released: a write from another task goes through, and so does another manager's.
        other = await AsyncSessionManager.open(path)
        await asyncio.gather(manager.append_custom_entry("three"), other.append_custom_entry("four"))
        await other.close()
        await manager.close()

    run(main())
    types = [e.custom_type for e in SessionManager.open(path).get_entries_of_type(CustomEntry)]
    assert types[:2] == ["one", "two"] and sorted(types[2:]) == ["four", "three"]


def follow_other_process(path: str, count: int, **options: Any) -> list[str]:
    """The texts a follower saw while another process appended ``count`` messages."""

    async def main() -> list[str]:
        manager = await AsyncSessionManager.open(path)
        seen: list[str] = []

        async def collect() -> None:
            async for entry in manager.follow(**options):
                assert isinstance(entry, pisession.MessageEntry)
                assert isinstance(entry.message, pisession.UserMessage)
                seen.append(str(entry.message.content))
                if len(seen) == count:
                    return

        follower = asyncio.ensure_future(collect())
        await asyncio.sleep(0.01)
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-c", APPENDER, REPO, path, str(count), stdout=asyncio.subprocess.PIPE
        )
        out, _ = await child.communicate()
        assert child.returncode == 0 and out.strip() == b"done"
        await follower
        assert manager.get_leaf_id() != manager.get_entries()[-1].id, "follow() moved the leaf"
        await manager.close()
        return seen

    return run(main())  # type: ignore[no-any-return]


@pytest.mark.skipif(not _watch.inotify_available(), reason="inotify is Linux-only")
def test_follow_wakes_on_inotify(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # No poll could find the entries within the hang guard: only inotify wakes the follower.
    monkeypatch.setattr(_watch, "NOTIFIED_POLL", 10 * HANG_GUARD)
    path = new_session(tmp_path)
    seen = follow_other_process(path, 40, poll_interval=10 * HANG_GUARD)
    assert seen == [f"other-{i}" for i in range(40)]


@pytest.mark.parametrize("how", ["notify-off", "no-inotify"])
def test_follow_polls_where_inotify_is_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    opened: list[Any] = []
    if how == "no-inotify":
        monkeypatch.setattr(aio, "open_watcher", lambda path: opened.append(path))  # returns None
    path = new_session(tmp_path)
    seen = follow_other_process(path, 40, poll_interval=0.005, notify=how != "notify-off")
    assert seen == [f"other-{i}" for i in range(40)]
    assert opened == ([path] if how == "no-inotify" else [])


@pytest.mark.skipif(not _watch.inotify_available(), reason="inotify is Linux-only")
@pytest.mark.parametrize("how", ["cancel", "stop"])
def test_follow_stops_cleanly(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str) -> None:
    watchers: list[_watch.FileWatcher] = []

    def spy(path: str) -> _watch.FileWatcher | None:
        watcher = _watch.open_watcher(path)
        assert watcher is not None
        watchers.append(watcher)
        return watcher

    monkeypatch.setattr(aio, "open_watcher", spy)
    path = new_session(tmp_path)

    async def main() -> list[str]:
        manager = await AsyncSessionManager.open(path)
        writer = await AsyncSessionManager.open(path)
        stop = asyncio.Event()
        seen: list[str] = []
        got_one = asyncio.Event()

        async def collect() -> None:
            async for entry in manager.follow(stop=stop):
                seen.append(entry.id)
                got_one.set()

        follower = asyncio.ensure_future(collect())
        seen_id = await writer.append_custom_entry("x")
        await got_one.wait()
        if how == "cancel":
            follower.cancel()
            with pytest.raises(asyncio.CancelledError):
                await follower
        else:
            stop.set()
            await follower
        fd = watchers[0]._fd
        assert fd is None, "the inotify descriptor was left open"
        await writer.close()
        await manager.close()
        return [seen_id, *seen]

    first, *seen = run(main())
    assert seen == [first]


def test_constructors_and_listing(tmp_path: Path) -> None:
    sessions = tmp_path / "sessions"

    async def main() -> None:
        created = await AsyncSessionManager.create("/project", sessions, id="s-one")
        await created.append_message(user("hi"))
        await created.append_message(
            {"role": "assistant", "content": [{"type": "text", "text": "hello"}], "timestamp": 2}
        )
        path = created.get_session_file()
        assert path is not None and created.get_session_id() == "s-one"
        await created.close()

        listed = await AsyncSessionManager.list("/project", str(sessions))
        assert [info.id for info in listed] == ["s-one"]
        assert [info.id for info in await AsyncSessionManager.list_all(str(sessions))] == ["s-one"]
        assert await AsyncSessionManager.find_by_id("/project", "s-one", str(sessions)) == path

        recent = await AsyncSessionManager.continue_recent("/project", sessions)
        assert recent.get_session_file() == path and len(recent.get_entries()) == 2
        await recent.close()

        forked = await AsyncSessionManager.fork_from(path, "/elsewhere", tmp_path / "forks")
        header = forked.get_header()
        assert header is not None and header.parent_session == path
        assert [e.id for e in forked.get_entries()] == [e.id for e in recent.get_entries()]
        await forked.close()

        memory = await AsyncSessionManager.in_memory("/project")
        first = await memory.append_message(user("one"))
        await memory.append_message(user("two"))
        await memory.branch(first)
        assert memory.get_leaf_id() == first
        assert not memory.is_persisted() and memory.sync.get_leaf_id() == first
        context = memory.build_session_context()
        assert [m.role for m in context.messages] == ["user"]

    run(main())


def test_methods_read_on_the_class_show_their_parameters_and_can_be_called() -> None:
    """help(AsyncSessionManager.append_message) names the parameters, and the class's attribute is
    called with the manager first, as a plain method is."""
    import inspect
    import pydoc

    for name in ("append_message", "get_leaf_id", "branch", "build_session_context"):
        assert inspect.signature(getattr(AsyncSessionManager, name)) == inspect.signature(
            getattr(SessionManager, name)
        ), name
    text = pydoc.render_doc(AsyncSessionManager.append_message, renderer=pydoc.plaintext)
    assert "append_message(self, message" in text and "child of the leaf" in text

    async def main() -> None:
        memory = await AsyncSessionManager.in_memory("/project")
        first = await AsyncSessionManager.append_message(memory, user("one"))
        assert AsyncSessionManager.get_leaf_id(memory) == first == memory.get_leaf_id()

    run(main())


def test_writes_after_close_raise_a_typed_error(tmp_path: Path) -> None:
    path = new_session(tmp_path)

    async def main() -> None:
        manager = await AsyncSessionManager.open(path)
        await manager.close()
        with pytest.raises(SessionClosedError):
            await manager.append_custom_entry("after-close")
        await manager.close()  # closing twice is harmless

    run(main())
    assert SessionManager.open(path).get_entries_of_type(CustomEntry) == []


def test_closing_inside_a_transaction_stops_its_later_writes(tmp_path: Path) -> None:
    path = new_session(tmp_path)

    async def main() -> None:
        manager = await AsyncSessionManager.open(path)
        async with manager.transaction():
            await manager.append_custom_entry("before-close")
            await manager.close()
            with pytest.raises(SessionClosedError):
                await manager.append_custom_entry("after-close")
        await manager.close()

    run(main())
    types = [e.custom_type for e in SessionManager.open(path).get_entries_of_type(CustomEntry)]
    assert types == ["before-close"]


def test_a_task_cancelled_inside_a_transaction_ends_it(tmp_path: Path) -> None:
    path = new_session(tmp_path)

    async def main() -> None:
        manager = await AsyncSessionManager.open(path)
        inside = asyncio.Event()

        async def body() -> None:
            async with manager.transaction():
                await manager.append_custom_entry("inside")
                inside.set()
                await asyncio.sleep(10 * HANG_GUARD)

        task = asyncio.ensure_future(body())
        await inside.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        # Another task of the manager, and another thread, can write again.
        await manager.append_custom_entry("after")
        other = threading.Thread(target=lambda: SessionManager.open(path).append_custom_entry("other"))
        other.start()
        await asyncio.to_thread(other.join, HANG_GUARD)
        assert not other.is_alive(), "the session lock was left held"
        await manager.close()

    run(main())
    types = [e.custom_type for e in SessionManager.open(path).get_entries_of_type(CustomEntry)]
    assert types == ["inside", "after", "other"]


@pytest.mark.skipif(not _watch.inotify_available(), reason="inotify is Linux-only")
def test_the_watcher_reports_changes_to_its_file_only(tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    watcher = _watch.open_watcher(str(path))  # the file need not exist yet
    assert watcher is not None
    try:
        assert watcher.drain() is False
        (tmp_path / "other.jsonl").write_text("x\n")
        assert watcher.drain() is False
        path.write_text("created\n")
        assert watcher.drain() is True
        assert watcher.drain() is False  # drained
        with path.open("a") as handle:
            handle.write("appended\n")
        assert watcher.drain() is True
        (tmp_path / "copy").write_text("replaced\n")
        (tmp_path / "copy").rename(path)
        assert watcher.drain() is True
    finally:
        watcher.close()
    with pytest.raises(ValueError):
        watcher.fileno()


def test_no_watcher_where_inotify_cannot_watch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _watch.open_watcher(str(tmp_path / "no-such-folder" / "s.jsonl")) is None
    monkeypatch.setattr(_watch, "_LIBC", None)  # as on macOS or Windows
    assert not _watch.inotify_available()
    assert _watch.open_watcher(str(tmp_path / "s.jsonl")) is None


def test_a_cancelled_call_happens_entirely_or_not_at_all(tmp_path: Path) -> None:
    path = new_session(tmp_path)
    holder = SessionManager.open(path)
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with holder.transaction():
            held.set()
            release.wait(HANG_GUARD)

    thread = threading.Thread(target=hold)
    thread.start()
    held.wait(HANG_GUARD)

    async def main() -> None:
        manager = await AsyncSessionManager.open(path)
        started = asyncio.ensure_future(manager.append_custom_entry("started"))  # waits for the lock
        queued = asyncio.ensure_future(manager.append_custom_entry("queued"))  # waits its turn
        await asyncio.sleep(0.05)
        started.cancel()
        queued.cancel()
        release.set()
        for task in (started, queued):
            with pytest.raises(asyncio.CancelledError):
                await task
        await manager.append_custom_entry("last")
        await manager.close()

    run(main())
    thread.join(HANG_GUARD)
    types = [e.custom_type for e in SessionManager.open(path).get_entries_of_type(CustomEntry)]
    assert types == ["started", "last"]


# -- follow(): every entry once, stopping drains, own appends --------------------------------------


def appended_by_another(path: str, count: int, kind: str = "other") -> list[str]:
    other = SessionManager.open(path)
    ids = [other.append_custom_entry(kind, {"n": n}) for n in range(count)]
    other.close()
    return ids


def already_set() -> asyncio.Event:
    stop = asyncio.Event()
    stop.set()
    return stop


@pytest.mark.parametrize("how", ["break", "raise", "cancel"])
def test_a_follow_left_early_leaves_the_rest(tmp_path: Path, how: str) -> None:
    path = new_session(tmp_path)
    written: list[str] = []

    async def main() -> tuple[list[str], list[str], list[str]]:
        manager = await AsyncSessionManager.open(path)
        written[:] = await asyncio.to_thread(appended_by_another, path, 10)
        got: list[str] = []
        holding = asyncio.Event()

        async def consume() -> None:
            async for entry in manager.follow(notify=False):
                got.append(entry.id)
                if how == "break":
                    break
                if how == "raise":
                    raise KeyError(entry.id)
                holding.set()
                await asyncio.sleep(10 * HANG_GUARD)  # cancelled here, an entry in hand

        task = asyncio.ensure_future(consume())
        if how == "cancel":
            await holding.wait()
            task.cancel()
        with contextlib.suppress(KeyError, asyncio.CancelledError):
            await task
        rest = [e.id for e in await manager.refresh()]
        again = [e.id for e in await manager.refresh()]
        await manager.close()
        return got, rest, again

    got, rest, again = run(main())
    assert got == written[:1]
    assert rest == written[1:]
    assert again == []


def test_a_follow_continues_where_another_left(tmp_path: Path) -> None:
    path = new_session(tmp_path)
    written: list[str] = []

    async def main() -> list[str]:
        manager = await AsyncSessionManager.open(path)
        written[:] = await asyncio.to_thread(appended_by_another, path, 10)
        got: list[str] = []
        for limit in (1, 3, 2):
            taken = 0
            async for entry in manager.follow(notify=False):
                got.append(entry.id)
                taken += 1
                if taken == limit:
                    break
        # Four read in and not handed over yet, three more in the file: a stopped follow
        # yields both.
        written.extend(await asyncio.to_thread(appended_by_another, path, 3))
        async for entry in manager.follow(stop=already_set()):
            got.append(entry.id)
        await manager.close()
        return got

    assert run(main()) == written


def test_a_cancelled_refresh_gives_its_entries_back(tmp_path: Path) -> None:
    path = new_session(tmp_path)
    written: list[str] = []

    async def main() -> list[str]:
        manager = await AsyncSessionManager.open(path)
        written[:] = await asyncio.to_thread(appended_by_another, path, 5)
        took, release = threading.Event(), threading.Event()
        real = manager.sync.refresh

        def slow_refresh(*, move_leaf: bool = False) -> list[pisession.Entry]:
            entries = real(move_leaf=move_leaf)  # taken from the queue...
            took.set()
            release.wait(HANG_GUARD)  # ...and the caller is cancelled before it gets them
            return entries

        manager.sync.refresh = slow_refresh  # type: ignore[method-assign]
        task = asyncio.ensure_future(manager.refresh())
        await asyncio.to_thread(took.wait, HANG_GUARD)
        task.cancel()
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        del manager.sync.refresh
        got = [e.id for e in await manager.refresh()]
        await manager.close()
        return got

    assert run(main()) == written


def test_restarted_followers_get_every_entry_once_in_order(tmp_path: Path) -> None:
    """Another process appends 400 lines while readers keep giving up: on a timeout (which
    cancels the follow wherever it is), after a few entries, or refreshing instead."""
    import random

    path = new_session(tmp_path)

    async def main() -> list[str]:
        manager = await AsyncSessionManager.open(path)
        child = await asyncio.create_subprocess_exec(
            sys.executable, "-c", APPENDER, REPO, path, "400", stdout=asyncio.subprocess.PIPE
        )
        rng = random.Random(22)
        got: list[str] = []

        def texts(entries: list[pisession.Entry]) -> list[str]:
            return [str(e.message.content) for e in entries if isinstance(e, pisession.MessageEntry)]

        async def follow_some(limit: int) -> None:
            async for entry in manager.follow(poll_interval=0.001):
                got.extend(texts([entry]))
                if len(got) % limit == 0:
                    return

        after_the_writer = 0  # rounds once the writer is done: a lost entry never comes
        while len(got) < 400 and after_the_writer < 20:
            if child.returncode is not None:
                after_the_writer += 1
            mode = rng.choice(["timeout", "limit", "refresh"])
            if mode == "refresh":
                got.extend(texts(await manager.refresh()))
                continue
            limit = rng.randint(1, 5) if mode == "limit" else 10**9
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(follow_some(limit), rng.choice([0.0, 0.001, 0.01]))
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(child.wait()), 0)
        out, _ = await child.communicate()
        assert out.strip() == b"done"
        got.extend(texts(await manager.refresh()))
        await manager.close()
        return got

    assert run(main()) == [f"other-{i}" for i in range(400)]


def test_a_stopped_follow_first_yields_what_was_written_before_the_stop(tmp_path: Path) -> None:
    path = new_session(tmp_path)

    async def main() -> tuple[list[str], list[str]]:
        manager = await AsyncSessionManager.open(path)
        stop = asyncio.Event()
        seen: list[str] = []
        started = asyncio.Event()
        ready = await asyncio.to_thread(appended_by_another, path, 1, "ready")

        async def follow() -> None:
            # No inotify and a poll far beyond the guard: only the stop wakes it.
            async for entry in manager.follow(poll_interval=10 * HANG_GUARD, stop=stop, notify=False):
                seen.append(entry.id)
                started.set()

        task = asyncio.ensure_future(follow())
        await started.wait()
        written = await asyncio.to_thread(appended_by_another, path, 50)
        stop.set()
        await task
        await manager.close()
        return seen, ready + written

    seen, expected = run(main())
    assert seen == expected


@pytest.mark.parametrize("include_own", [False, True])
def test_own_appends_are_followed_only_when_asked_for(tmp_path: Path, include_own: bool) -> None:
    path = new_session(tmp_path)

    async def main() -> tuple[list[str], list[str]]:
        manager = await AsyncSessionManager.open(path)
        other = await AsyncSessionManager.open(path)
        stop = asyncio.Event()
        seen: list[str] = []
        started = asyncio.Event()
        ready = await other.append_custom_entry("ready")

        async def follow() -> None:
            async for entry in manager.follow(poll_interval=0.001, stop=stop, include_own=include_own):
                seen.append(entry.id)
                started.set()

        task = asyncio.ensure_future(follow())
        await started.wait()
        expected = []
        for n in range(20):
            mine = await manager.append_custom_entry("mine", {"n": n})  # another task, one manager
            if include_own:
                expected.append(mine)
            expected.append(await other.append_custom_entry("theirs", {"n": n}))
        stop.set()
        await task
        await other.close()
        await manager.close()
        return seen, [ready, *expected]

    seen, expected = run(main())
    assert seen == expected


def test_appends_in_the_loop_body_are_not_followed(tmp_path: Path) -> None:
    path = new_session(tmp_path)
    written: list[str] = []

    async def main() -> tuple[list[str], list[pisession.Entry]]:
        manager = await AsyncSessionManager.open(path)
        written[:] = await asyncio.to_thread(appended_by_another, path, 10)
        seen = []
        async for entry in manager.follow(stop=already_set()):
            seen.append(entry.id)
            await manager.append_custom_entry("reply", {"to": entry.id})
        left = await manager.refresh()
        await manager.close()
        return seen, left

    assert run(main()) == (written, [])


# -- two managers of one file ------------------------------------------------------------------


def test_a_write_through_a_second_manager_inside_a_transaction_completes(tmp_path: Path) -> None:
    """As with two SessionManagers used on one thread: the second's writes happen inside the
    first's transaction (which holds the lock), and the file ends up the same."""

    def shape(path: str) -> list[tuple[str, str | None]]:
        entries = SessionManager.open(path).get_entries_of_type(CustomEntry)
        kinds = {e.id: e.custom_type for e in entries}
        return [(e.custom_type, kinds.get(e.parent_id or "")) for e in entries]

    sync_path = new_session(tmp_path / "sync")
    first, second = SessionManager.open(sync_path), SessionManager.open(sync_path)
    with first.transaction():
        first.append_custom_entry("first")
        second.append_custom_entry("second")
        with second.transaction():
            second.append_custom_entry("nested")
        second.refresh()
        first.append_custom_entry("first-again")
    second.append_custom_entry("after")

    path = new_session(tmp_path / "async")

    async def main() -> None:
        first = await AsyncSessionManager.open(path)
        second = await AsyncSessionManager.open(path)
        async with first.transaction():
            await first.append_custom_entry("first")
            await second.append_custom_entry("second")
            async with second.transaction():
                await second.append_custom_entry("nested")
            await second.refresh()
            await first.append_custom_entry("first-again")
        await second.append_custom_entry("after")
        await first.close()
        await second.close()

    asyncio.run(asyncio.wait_for(main(), 10))  # a hang fails here, not at the suite's guard
    assert shape(path) == shape(sync_path)
    assert [kind for kind, _ in shape(path)] == ["first", "second", "nested", "first-again", "after"]


def test_other_tasks_wait_for_another_managers_transaction(tmp_path: Path) -> None:
    """A write from a task outside the transaction, through the second manager, waits for
    the transaction to end (on the event loop: its thread is free meanwhile)."""
    path = new_session(tmp_path)

    async def main() -> None:
        first = await AsyncSessionManager.open(path)
        second = await AsyncSessionManager.open(path)
        go = asyncio.Event()

        async def write_outside() -> str:
            await go.wait()
            return await second.append_custom_entry("outside")

        outside = asyncio.ensure_future(write_outside())  # started outside: not in the transaction
        async with first.transaction():
            go.set()
            await asyncio.sleep(0)
            await first.append_custom_entry("inside")
            await asyncio.sleep(0.01)
            assert not outside.done()
            assert [e.custom_type for e in await second.refresh()] == ["inside"]  # its thread is free
            await second.append_custom_entry("inside-too")
        await outside
        await first.close()
        await second.close()

    asyncio.run(asyncio.wait_for(main(), 10))
    types = [e.custom_type for e in SessionManager.open(path).get_entries_of_type(CustomEntry)]
    assert types == ["inside", "inside-too", "outside"]
