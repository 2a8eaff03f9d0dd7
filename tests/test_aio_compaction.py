"""``AsyncSessionManager`` offers what ``SessionManager`` offers: the same public methods with the
same parameters, and compaction and tree navigation with ``async def`` summarizers, awaited on the
event loop while the session lock is free."""

from __future__ import annotations

import asyncio
import inspect
import shutil
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any

import pytest

from pisession import CompactionEntry, SessionManager, to_wire
from pisession import compaction as c
from pisession.aio import AsyncSessionManager

CASES = Path(__file__).resolve().parent / "conformance" / "cases" / "compaction"
SPLIT = c.CompactionSettings(keep_recent_tokens=1000)
HANG_GUARD = 120.0  # seconds; only ever reached when something deadlocks


def run(coroutine: Coroutine[Any, Any, Any]) -> Any:
    return asyncio.run(asyncio.wait_for(coroutine, HANG_GUARD))


def copy_case(tmp_path: Path, name: str, as_name: str | None = None) -> Path:
    path = tmp_path / f"{as_name or name}.jsonl"
    shutil.copyfile(CASES / f"{name}.jsonl", path)
    return path


def public(cls: type) -> set[str]:
    return {name for name in dir(cls) if not name.startswith("_")}


def parameters(function: Any) -> list[tuple[str, Any, Any]]:
    signature = inspect.signature(function)
    return [
        (p.name, p.kind, p.default) for p in signature.parameters.values() if p.name not in ("self", "cls")
    ]


def test_every_public_method_of_the_sync_manager_is_offered_with_the_same_parameters() -> None:
    missing = public(SessionManager) - public(AsyncSessionManager)
    assert not missing, f"AsyncSessionManager lacks {sorted(missing)}"
    assert public(AsyncSessionManager) - public(SessionManager) == {"sync"}
    sync_manager = SessionManager.in_memory()
    async_manager = AsyncSessionManager(SessionManager.in_memory())
    for name in sorted(public(SessionManager)):
        assert parameters(getattr(async_manager, name)) == parameters(getattr(sync_manager, name)), name


@pytest.mark.parametrize(
    "name", ["plan_compaction", "needs_compaction", "compact", "navigate_tree", "refresh", "append_message"]
)
def test_what_may_touch_the_file_is_a_coroutine(tmp_path: Path, name: str) -> None:
    async def main() -> bool:
        async with await AsyncSessionManager.in_memory() as manager:
            return inspect.iscoroutinefunction(getattr(manager, name))

    assert run(main())


def test_compact_awaits_an_async_summarizer_on_the_loop_without_holding_the_lock(tmp_path: Path) -> None:
    path = copy_case(tmp_path, "coding")
    twin = copy_case(tmp_path, "coding", "twin")
    seen: list[tuple[str, bool]] = []

    async def main() -> CompactionEntry:
        loop_thread = threading.get_ident()
        async with (
            await AsyncSessionManager.open(path) as manager,
            await AsyncSessionManager.open(path) as other,
        ):

            async def summarize(request: c.SummaryRequest) -> str:
                seen.append((request.kind, threading.get_ident() == loop_thread))
                # Another manager writes meanwhile: it would wait forever for a held lock. The
                # branch moves without changing the plan (a side entry), so nothing is redone.
                await other.append_custom_entry("ext.tick", {"n": len(seen)})
                await asyncio.sleep(0)
                return f"summary of {request.kind}"

            return await manager.compact(summarize, settings=SPLIT)

    entry = run(main())
    assert seen == [("history", True), ("turn_prefix", True)]
    expected = SessionManager.open(twin).compact(lambda request: f"summary of {request.kind}", settings=SPLIT)
    assert (entry.summary, entry.first_kept_entry_id, entry.tokens_before, entry.details) == (
        expected.summary,
        expected.first_kept_entry_id,
        expected.tokens_before,
        expected.details,
    )
    assert path.read_text().count('"ext.tick"') == 2


def test_a_plain_summarizer_runs_off_the_loop(tmp_path: Path) -> None:
    path = copy_case(tmp_path, "coding")
    threads: list[int] = []

    def summarize(request: c.SummaryRequest) -> str:
        threads.append(threading.get_ident())
        return "plain"

    async def main() -> int:
        async with await AsyncSessionManager.open(path) as manager:
            await manager.compact(summarize, settings=SPLIT)
        return threading.get_ident()

    loop_thread = run(main())
    assert threads and loop_thread not in threads


def test_other_tasks_write_while_the_summarizer_awaits(tmp_path: Path) -> None:
    path = copy_case(tmp_path, "coding")

    async def main() -> None:
        async with await AsyncSessionManager.open(path) as manager:
            release = asyncio.Event()
            asked = asyncio.Event()

            async def summarize(request: c.SummaryRequest) -> str:
                asked.set()
                await release.wait()
                return "s"

            compaction = asyncio.ensure_future(manager.compact(summarize, settings=SPLIT))
            await asked.wait()
            await manager.append_custom_entry("ext.state", {"during": True})  # not held up
            release.set()
            await compaction

    run(main())
    lines = path.read_text().splitlines()
    assert '"during":true' in lines[-2] and '"type":"compaction"' in lines[-1]


def test_navigate_tree_awaits_an_async_summarizer(tmp_path: Path) -> None:
    path = copy_case(tmp_path, "tree")
    twin = copy_case(tmp_path, "tree", "twin")
    target = SessionManager.open(twin).get_entries()[3].id

    async def summarize(request: c.SummaryRequest) -> c.SummaryResult:
        await asyncio.sleep(0)
        return c.SummaryResult("left behind")

    async def main() -> c.Navigation:
        async with await AsyncSessionManager.open(path) as manager:
            return await manager.navigate_tree(target, summarize=summarize, label="back")

    nav = run(main())
    expected = SessionManager.open(twin).navigate_tree(
        target, summarize=lambda r: "left behind", label="back"
    )
    assert (nav.new_leaf_id, nav.editor_text) == (expected.new_leaf_id, expected.editor_text)
    assert nav.summary_entry is not None and expected.summary_entry is not None
    assert nav.summary_entry.summary == expected.summary_entry.summary


def test_a_compaction_cancelled_while_summarizing_writes_nothing(tmp_path: Path) -> None:
    path = copy_case(tmp_path, "coding")
    before = path.read_text()

    async def main() -> list[str]:
        async with await AsyncSessionManager.open(path) as manager:
            asked = asyncio.Event()

            async def summarize(request: c.SummaryRequest) -> str:
                asked.set()
                await asyncio.Event().wait()  # a model that never answers
                return "never"

            task = asyncio.ensure_future(manager.compact(summarize, settings=SPLIT))
            await asked.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert path.read_text() == before
            # The manager goes on working.
            entry = await manager.compact(lambda request: "later", settings=SPLIT)
            return [to_wire(entry)["summary"]]

    assert run(main())[0].startswith("later")


def test_async_errors_are_the_sync_errors(tmp_path: Path) -> None:
    path = copy_case(tmp_path, "compacted")

    async def summarize(request: c.SummaryRequest) -> str:
        return ""

    async def main() -> None:
        async with await AsyncSessionManager.open(path) as manager:
            with pytest.raises(c.AlreadyCompactedError):
                await manager.compact(summarize)
            assert await manager.plan_compaction() is None
            with pytest.raises(c.AlreadyCompactedError):
                await manager.plan_compaction(raise_if_nothing=True)
            with pytest.raises(c.EmptySummaryError):
                await manager.navigate_tree(manager.get_entries()[2].id, summarize=summarize)

    run(main())


def test_closing_the_manager_while_the_summarizer_runs_writes_nothing(tmp_path: Path) -> None:
    from pisession import SessionClosedError

    path = copy_case(tmp_path, "coding")
    before = path.read_text()

    async def main() -> None:
        manager = await AsyncSessionManager.open(path)

        async def summarize(request: c.SummaryRequest) -> str:
            await manager.close()
            return "too late"

        with pytest.raises(SessionClosedError):
            await manager.compact(summarize, settings=SPLIT)

    run(main())
    assert path.read_text() == before
