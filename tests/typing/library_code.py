"""More user-style code, for the newer public modules: asyncio, compaction, export, stats,
validate and the catalog. Like ``user_code.py`` it must pass ``mypy --strict`` (tests/test_typing.py
and .ci/run) and it runs (tests/test_typing.py calls ``main``).
"""

from __future__ import annotations

import asyncio
import os
import sys

from pisession import CustomEntry, SessionManager, UserMessage
from pisession.aio import AsyncSessionManager
from pisession.catalog import Catalog
from pisession.compaction import CompactionSettings, SummaryRequest, estimate_tokens, format_plan
from pisession.export import to_jsonl, to_markdown
from pisession.stats import session_stats
from pisession.usage import UsageReport, UsageRow, usage_report
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


def main(folder: str) -> None:
    manager = SessionManager.create(folder, os.path.join(folder, "sessions"))
    for n in range(6):
        manager.append_message(UserMessage(content=f"question {n} " + "word " * 200))
    path = manager.get_session_file()
    assert path is not None
    tokens = sum(estimate_tokens(m) for m in manager.build_session_context().messages)
    plan = manager.plan_compaction(CompactionSettings(keep_recent_tokens=300))
    print(tokens, format_plan(plan))
    if plan is not None:
        entry = manager.compact(summarize, settings=CompactionSettings(keep_recent_tokens=300))
        print(entry.first_kept_entry_id, entry.tokens_before)
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
            day: UsageRow = row
            print(day.key, day.total_cost, day.models_used, [m.model_name for m in day.models])
        print(daily.totals.total_tokens, daily.to_wire()["totals"], [s.reason for s in daily.skipped])
        by_session = usage_report(
            "session", since="2026-01-01", catalog=False, session_dir=os.path.join(folder, "sessions")
        )
        print([(row.session_id, row.last_activity) for row in by_session.rows])


if __name__ == "__main__":
    main(sys.argv[1])
