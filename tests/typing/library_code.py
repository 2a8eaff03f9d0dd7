"""More user-style code, for the newer public modules: asyncio, compaction, export, stats,
validate, the catalog and Pi's settings. Like ``user_code.py`` it must pass ``mypy --strict``
(tests/test_typing.py and .ci/run) and it runs (tests/test_typing.py calls ``main``).
"""

from __future__ import annotations

import asyncio
import os
import sys

from pisession import CustomEntry, SessionManager, SettingsError, UserMessage
from pisession.aio import AsyncSessionManager
from pisession.catalog import Catalog
from pisession.compaction import (
    CompactionCheck,
    CompactionSettings,
    SummaryRequest,
    SummaryResult,
    estimate_tokens,
    format_plan,
)
from pisession.export import to_jsonl, to_markdown
from pisession.settings import (
    PiSettings,
    ResolvedSetting,
    SessionDirChoice,
    choose_session_dir,
    is_project_trusted,
    session_model,
)
from pisession.stats import session_stats
from pisession.usage import ReportRow, UsageReport, usage_report
from pisession.validate import validate_file


async def count_in_a_transaction(path: str) -> int:
    async with await AsyncSessionManager.open(path) as manager:
        async with manager.transaction():
            counter = manager.get_latest_custom_entry("counter")
            n = counter.data["n"] if counter is not None and isinstance(counter.data, dict) else 0
            await manager.append_custom_entry("counter", {"n": n + 1})
        entries: list[CustomEntry] = manager.get_entries_of_type(CustomEntry)
        return len(entries)


def summarize(request: SummaryRequest) -> str:
    return f"{request.kind}: {len(request.prompt)} characters"


def users_compaction_settings(manager: SessionManager) -> CompactionSettings:
    folder = manager.get_cwd()
    settings = PiSettings.load(folder, project_trusted=is_project_trusted(folder))
    for problem in settings.errors:
        print(problem.scope, problem.path, problem.message)
    try:
        return settings.compaction_settings(session_model(manager, settings))
    except SettingsError as error:
        print(error)
        return CompactionSettings()


def show_settings(folder: str) -> None:
    choice: SessionDirChoice = choose_session_dir(folder)
    folder_or_default: str | None = choice.path
    print(folder_or_default, choice.source)
    resolved: tuple[ResolvedSetting, ...] = PiSettings.load(folder, project_trusted=False).resolved("a/m")
    for setting in resolved:
        value: int | bool | None = setting.value
        print(setting.name, value, setting.source, setting.model_override, setting.error)
    settings = PiSettings.load(folder)
    reserve: int = settings.branch_summary_reserve_tokens
    skip: bool = settings.branch_summary_skip_prompt
    session_dir: str | None = settings.session_dir
    print(reserve, skip, session_dir, settings.compaction_enabled, settings.value("sessionDir"))


async def summarize_async(request: SummaryRequest) -> SummaryResult:
    await asyncio.sleep(0)
    return SummaryResult(f"{request.kind}: {len(request.prompt)} characters")


async def compact_when_pi_would(path: str, window: int) -> str | None:
    async with await AsyncSessionManager.open(path) as manager:
        check: CompactionCheck = await manager.needs_compaction(window)
        print(check.tokens, check.threshold, check.reason)
        if not check:
            return None
        entry = await manager.compact(summarize_async, settings=CompactionSettings(keep_recent_tokens=300))
        return entry.id


def main(folder: str) -> None:
    show_settings(folder)
    manager = SessionManager.create(folder, os.path.join(folder, "sessions"))
    for n in range(6):
        manager.append_message(UserMessage(content=f"question {n} " + "word " * 200))
    path = manager.get_session_file()
    assert path is not None
    tokens = sum(estimate_tokens(m) for m in manager.build_session_context().messages)
    budget: int = tokens  # token counts are ints for a type checker (issue 31)
    print(users_compaction_settings(manager), budget)
    plan = manager.plan_compaction(CompactionSettings(keep_recent_tokens=300))
    if plan is not None:
        before: int = plan.tokens_before
        print(before + budget)
    print(tokens, format_plan(plan))
    if plan is not None:
        entry = manager.compact(summarize, settings=CompactionSettings(keep_recent_tokens=300))
        print(entry.first_kept_entry_id, entry.tokens_before)
    print(asyncio.run(compact_when_pi_would(path, 2000)))
    print(len(to_markdown(manager)), len(to_jsonl(manager)))
    print(session_stats(manager))
    report = validate_file(path)
    print(report)
    print(asyncio.run(count_in_a_transaction(path)))
    with Catalog(os.path.join(folder, "catalog.sqlite3")) as catalog:
        for info in catalog.list(folder, os.path.join(folder, "sessions")):
            print(info.id, info.message_count)
        for hit in catalog.search("question", cwd=folder, session_dir=os.path.join(folder, "sessions")):
            print(hit.entry_id, hit.snippet)
        daily: UsageReport = usage_report(
            "daily", session_dir=os.path.join(folder, "sessions"), timezone="UTC", catalog=catalog
        )
        for row in daily.rows:
            day: ReportRow = row
            print(day.key, day.total_cost, day.models_used, [m.model_name for m in day.models])
        print(daily.totals.total_tokens, daily.to_wire()["totals"], [s.reason for s in daily.skipped])
        by_session = usage_report(
            "session", since="2026-01-01", catalog=False, session_dir=os.path.join(folder, "sessions")
        )
        print([(row.session_id, row.last_activity) for row in by_session.rows])


if __name__ == "__main__":
    main(sys.argv[1])
