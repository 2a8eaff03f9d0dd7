"""An asyncio extension backend: follows a session and keeps its state in ``custom`` entries.

Pi is simulated by another task with its own manager, writing a user message, a tool call and
its result per turn. The backend follows the file with ``async for`` (woken by inotify on Linux,
by polling elsewhere) and, for each tool call, updates its state in a transaction. Nothing here
blocks the event loop: file I/O and lock waits run on each manager's own thread.

Run it as it is (it writes to a temporary folder) or give it a folder::

    python docs/examples/async_backend.py [SESSION_DIR]
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time

import pisession
from pisession.aio import AsyncSessionManager

TURNS = 10
NO_USAGE = {
    "input": 0,
    "output": 0,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 0,
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
}


async def run_pi(path: str, finished: asyncio.Event) -> None:
    async with await AsyncSessionManager.open(path) as pi:
        for turn in range(TURNS):
            now = int(time.time() * 1000)
            await pi.append_message({"role": "user", "content": f"Step {turn}", "timestamp": now})
            await pi.append_message(
                {
                    "role": "assistant",
                    "content": [{"type": "toolCall", "id": f"call_{turn}", "name": "bash", "arguments": {}}],
                    "api": "anthropic-messages",
                    "provider": "anthropic",
                    "model": "claude-sonnet-4-5",
                    "usage": NO_USAGE,
                    "stopReason": "toolUse",
                    "timestamp": now + 1,
                }
            )
            await pi.append_message(
                {
                    "role": "toolResult",
                    "toolCallId": f"call_{turn}",
                    "toolName": "bash",
                    "content": [{"type": "text", "text": "ok"}],
                    "isError": False,
                    "timestamp": now + 2,
                }
            )
            await asyncio.sleep(0.005)
    finished.set()


async def backend(path: str, finished: asyncio.Event) -> list[str]:
    """Audits every tool call; returns the ids of the calls it saw."""
    seen: list[str] = []
    async with await AsyncSessionManager.open(path) as reader, await AsyncSessionManager.open(path) as writer:

        async def handle(entry: pisession.Entry) -> None:
            if isinstance(entry, pisession.MessageEntry) and isinstance(
                entry.message, pisession.AssistantMessage
            ):
                for block in entry.message.content or ():
                    if isinstance(block, pisession.ToolCall):
                        seen.append(block.id)
                        async with writer.transaction():
                            await writer.refresh(move_leaf=True)  # continue the conversation
                            calls = list(writer.get_custom_data("tool-audit", {"calls": []})["calls"])
                            await writer.append_custom_entry("tool-audit", {"calls": [*calls, block.id]})

        async for entry in reader.follow(poll_interval=0.01, stop=finished):
            await handle(entry)
        for entry in await reader.refresh():  # whatever Pi wrote after our last look
            await handle(entry)
    return seen


async def main() -> int:
    directory = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="pi-async-")
    start = await AsyncSessionManager.create("/work/project", directory)
    await start.append_message({"role": "user", "content": "Let's start.", "timestamp": 1733234400000})
    path = start.get_session_file()
    assert path is not None
    await start.close()

    finished = asyncio.Event()
    seen, _ = await asyncio.gather(backend(path, finished), run_pi(path, finished))

    session = await AsyncSessionManager.open(path)
    entries = session.get_entries()
    ids = {e.id for e in entries}
    parents_ok = all(e.parent_id is None or e.parent_id in ids for e in entries)
    audited = session.get_custom_data("tool-audit", {"calls": []}, branch=False)["calls"]
    once = sorted(audited) == sorted(seen) == sorted(f"call_{turn}" for turn in range(TURNS))
    print(f"session file: {path}")
    print(f"tool calls seen: {len(seen)}; audited: {len(audited)}")
    print(f"every tool call audited once: {once}")
    print(f"every parent exists: {parents_ok}")
    messages = len(session.build_session_context().messages)
    print(f"model context at the leaf: {messages} messages (custom entries are not part of it)")
    await session.close()
    return 0 if once and parents_ok and messages == 1 + 3 * TURNS else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
