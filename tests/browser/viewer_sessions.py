"""Sessions for the viewer's browser tests and its load-time measurement (measure_load.py)."""

from __future__ import annotations

import hashlib
from datetime import datetime, timedelta, timezone
from typing import Any

_START = datetime(2026, 1, 5, 9, 0, tzinfo=timezone.utc)


def _usage(tokens_in: int, tokens_out: int) -> dict[str, Any]:
    cost_in, cost_out = tokens_in * 3e-6, tokens_out * 15e-6
    return {
        "input": tokens_in,
        "output": tokens_out,
        "cacheRead": tokens_in // 2,
        "cacheWrite": 0,
        "totalTokens": tokens_in + tokens_out,
        "cost": {
            "input": cost_in,
            "output": cost_out,
            "cacheRead": 0,
            "cacheWrite": 0,
            "total": cost_in + cost_out,
        },
    }


def big_session(count: int = 20_000) -> list[dict[str, Any]]:
    """A header and ``count`` entries: tool-using turns (bash, read, edit, write), a branch every
    400 entries, a label every 1,000, a compaction every 5,000, like a long working session."""
    entries: list[dict[str, Any]] = [
        {
            "type": "session",
            "version": 3,
            "id": "019b8c00-0000-7000-8000-000000020000",
            "timestamp": _START.isoformat().replace("+00:00", "Z"),
            "cwd": "/home/dev/big-project",
        }
    ]
    parent: str | None = None

    def add(kind: str, **fields: Any) -> str:
        nonlocal parent
        n = len(entries)
        when = _START + timedelta(seconds=n)
        entry_id = f"{n:08x}"
        entries.append(
            {
                "type": kind,
                "id": entry_id,
                "parentId": parent,
                "timestamp": when.isoformat(timespec="milliseconds").replace("+00:00", "Z"),
                **fields,
            }
        )
        parent = entry_id
        return entry_id

    def ms() -> int:
        return int((_START + timedelta(seconds=len(entries))).timestamp() * 1000)

    tools = ["bash", "read", "edit", "write"]
    turn = 0
    while len(entries) <= count:
        turn += 1
        n = len(entries)
        if n > 1 and n % 400 < 4:
            parent = entries[max(1, n - 30)]["id"]  # start a new branch from 30 entries back
        if n > 1 and n % 1000 < 4:
            add("label", targetId=entries[n - 1]["id"], label=f"checkpoint-{n // 1000}")
            continue
        if n > 100 and n % 5000 < 4:
            add(
                "compaction",
                summary=f"## Summary\n\nWork up to turn {turn}.",
                firstKeptEntryId=entries[n - 60]["id"],
                tokensBefore=150_000 + n,
            )
            continue
        add(
            "message",
            message={
                "role": "user",
                "content": f"Turn {turn}: fix **issue {turn}** in `src/mod{turn % 50}.py`",
                "timestamp": ms(),
            },
        )
        tool = tools[turn % 4]
        call_id = f"call_{turn}"
        arguments: dict[str, Any] = {
            "bash": {"command": f"pytest -q tests/test_mod{turn % 50}.py"},
            "read": {"path": f"src/mod{turn % 50}.py", "offset": 10, "limit": 40},
            "edit": {
                "path": f"src/mod{turn % 50}.py",
                "edits": [{"oldText": "x = 1\ny = 2", "newText": "x = 2\ny = 3"}],
            },
            "write": {"path": f"src/new{turn}.py", "content": "def f(x):\n    return x * 2  # doubled\n" * 3},
        }[tool]
        add(
            "message",
            message={
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": f"Look at mod{turn % 50} first."},
                    {"type": "toolCall", "id": call_id, "name": tool, "arguments": arguments},
                ],
                "api": "anthropic-messages",
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "usage": _usage(4000 + turn, 120),
                "stopReason": "toolUse",
                "timestamp": ms(),
            },
        )
        output = "\n".join(f"line {i}: value = {i * turn}" for i in range(30))
        add(
            "message",
            message={
                "role": "toolResult",
                "toolCallId": call_id,
                "toolName": tool,
                "content": [{"type": "text", "text": output}],
                "isError": turn % 17 == 0,
                "timestamp": ms(),
            },
        )
        add(
            "message",
            message={
                "role": "assistant",
                "content": [
                    {
                        "type": "text",
                        "text": f"Done with turn {turn}:\n\n- changed `mod{turn % 50}`\n- tests pass",
                    }
                ],
                "api": "anthropic-messages",
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "usage": _usage(4200 + turn, 60),
                "stopReason": "stop",
                "timestamp": ms(),
            },
        )
    return entries[: count + 1]


def huge_body_session(size: int = 40_000_000) -> list[dict[str, Any]]:
    """A short session whose one tool result holds ``size`` characters of log lines (varied, so
    they compress about as real output does), on the branch the session was left on, with a
    second branch beside it: opening the page draws the huge result, and switching branches
    draws it again."""
    line = 0
    parts: list[str] = []
    total = 0
    while total < size:
        text = f"{line:09d} {hashlib.sha256(str(line).encode()).hexdigest()[: line % 48 + 16]} ok\n"
        parts.append(text)
        total += len(text)
        line += 1
    body = "".join(parts)[:size]
    header = {
        "type": "session",
        "version": 3,
        "id": "019b8c00-0000-7000-8000-0000000b1600",
        "timestamp": "2026-01-05T09:00:00.000Z",
        "cwd": "/home/dev/big-output",
    }

    def message(n: int, parent: str | None, body: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "message",
            "id": f"{n:08x}",
            "parentId": parent,
            "timestamp": f"2026-01-05T09:00:{n:02d}.000Z",
            "message": {"timestamp": 1767603600000 + n * 1000, **body},
        }

    assistant = {"api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5"}
    return [
        header,
        message(1, None, {"role": "user", "content": "Read the build log."}),
        message(
            2,
            f"{1:08x}",
            {
                **assistant,
                "role": "assistant",
                "stopReason": "toolUse",
                "content": [
                    {"type": "toolCall", "id": "call_1", "name": "read", "arguments": {"path": "build.log"}}
                ],
            },
        ),
        message(
            3,
            f"{2:08x}",
            {
                "role": "toolResult",
                "toolCallId": "call_1",
                "toolName": "read",
                "isError": False,
                "content": [{"type": "text", "text": body}],
            },
        ),
        message(
            4, f"{3:08x}", {**assistant, "role": "assistant", "stopReason": "stop", "content": "It built."}
        ),
        message(5, f"{1:08x}", {"role": "user", "content": "Never mind, a short branch."}),
        message(6, f"{5:08x}", {**assistant, "role": "assistant", "stopReason": "stop", "content": "OK."}),
        message(7, f"{4:08x}", {"role": "user", "content": "Thanks."}),
    ]
