"""asyncio extension backend: follow a session another process writes into, as Pi does (no
lock, one JSON line per write), and answer each new user message with a ``custom`` entry.

    python newcomer_async_backend.py SESSION [--turns N]

A subprocess plays Pi: it appends TURNS user/assistant pairs to SESSION. The backend follows the
file, appends ``custom`` entry ``newcomer-backend`` ``{"reactedTo": USER_ENTRY_ID}`` for each user
message, and stops once the writer has exited, after handling everything it wrote.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

import pisession
from pisession.aio import AsyncSessionManager

# Pi's way of appending: no lock, each entry's parent is Pi's own previous entry.
PI_WRITER = r"""
import json, os, secrets, sys, time
from datetime import datetime, timezone
path, turns = sys.argv[1], int(sys.argv[2])
with open(path, encoding="utf-8") as f:
    parent = [json.loads(line) for line in f if line.strip()][-1]["id"]
fd = os.open(path, os.O_WRONLY | os.O_APPEND)
def append(message):
    global parent
    entry = {"type": "message", "id": secrets.token_hex(4), "parentId": parent,
             "timestamp": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z",
             "message": message}
    os.write(fd, (json.dumps(entry, separators=(",", ":")) + "\n").encode())
    parent = entry["id"]
    print(entry["id"] if message["role"] == "user" else "", flush=True)
zero = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}}
for turn in range(turns):
    now = int(time.time() * 1000)
    append({"role": "user", "content": f"question {turn}", "timestamp": now})
    append({"role": "assistant", "content": [{"type": "text", "text": f"answer {turn}"}],
            "api": "openai-completions", "provider": "openai", "model": "gpt-4o", "usage": zero,
            "stopReason": "stop", "timestamp": now + 1})
    if turn % 5 == 0:
        time.sleep(0.02)
os.close(fd)
"""

CUSTOM_TYPE = "newcomer-backend"


async def run(path: str, turns: int) -> tuple[list[str], list[str]]:
    """Follow ``path`` while the writer runs; returns (user ids written, user ids reacted to).

    One manager follows, another writes: following does not move a manager's leaf, and a
    ``refresh(move_leaf=True)`` on the follower would take entries from its follow. The writer
    appends at the newest entry, so the session, reopened, resumes with the whole conversation.
    """
    reacted: list[str] = []
    async with await AsyncSessionManager.open(path) as reader, await AsyncSessionManager.open(path) as writer:
        stop = asyncio.Event()
        pi = await asyncio.create_subprocess_exec(
            sys.executable, "-c", PI_WRITER, path, str(turns), stdout=asyncio.subprocess.PIPE
        )

        async def stop_when_pi_exits() -> list[str]:
            out, _ = await pi.communicate()
            stop.set()  # the follow still delivers everything written before this
            return [line for line in out.decode().split() if line]

        written_task = asyncio.create_task(stop_when_pi_exits())
        async for entry in reader.follow(stop=stop):  # the writer's entries come too: not user messages
            if isinstance(entry, pisession.MessageEntry) and isinstance(entry.message, pisession.UserMessage):
                async with writer.transaction():
                    await writer.refresh(move_leaf=True)
                    await writer.append_custom_entry(CUSTOM_TYPE, {"reactedTo": entry.id})
                reacted.append(entry.id)
        written = await written_task
    return written, reacted


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="An asyncio backend reacting to user messages.")
    parser.add_argument("session")
    parser.add_argument("--turns", type=int, default=50)
    args = parser.parse_args(argv)
    written, reacted = asyncio.run(run(args.session, args.turns))

    session = pisession.SessionManager.open(args.session)
    stored = [
        entry.data["reactedTo"]
        for entry in session.get_entries_of_type(pisession.CustomEntry)
        if entry.custom_type == CUSTOM_TYPE and isinstance(entry.data, dict)
    ]
    ids = {entry.id for entry in session.get_entries()}
    parents_ok = all(entry.parent_id is None or entry.parent_id in ids for entry in session.get_entries())
    print(f"user messages written: {len(written)}; reacted to: {len(reacted)}; custom entries: {len(stored)}")
    print(f"every user message answered once: {sorted(stored) == sorted(written)}")
    # Reopened (as Pi resumes it), the leaf's branch holds the whole conversation.
    on_branch = {entry.id for entry in session.get_branch()}
    resumes_whole = all(user_id in on_branch for user_id in written)
    print(f"every parent exists: {parents_ok}")
    print(f"resumes with every user message on its branch: {resumes_whole}")
    print(json.dumps(session.get_custom_data(CUSTOM_TYPE, {}, branch=False)))
    return 0 if sorted(stored) == sorted(written) and parents_ok and resumes_whole else 1


if __name__ == "__main__":
    sys.exit(main())
