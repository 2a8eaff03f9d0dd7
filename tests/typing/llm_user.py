"""A user's code with the built-in summarizer: type-checked as a user's project is (.ci/run)."""

from __future__ import annotations

from pisession import SessionManager
from pisession.aio import AsyncSessionManager
from pisession.llm import AsyncPiSummarizer, PiSummarizer


def sync(manager: SessionManager) -> None:
    summarizer = PiSummarizer.for_session(manager)
    manager.compact(summarizer, settings=summarizer.compaction_settings())
    manager.navigate_tree("x", summarize=summarizer, context_window=summarizer.model.context_window)
    if summarizer.needs_compaction(manager):
        pass


async def asynchronous(manager: SessionManager) -> None:
    summarizer = AsyncPiSummarizer.for_session(manager)
    await AsyncSessionManager(manager).compact(summarizer)
