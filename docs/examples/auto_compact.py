"""Automated compaction: when the model context at the leaf outgrows a budget, keep the last few
turns and replace everything before them with a summary, as Pi's auto-compaction does.

The summary here is made from the compacted messages themselves (first lines of the user turns,
the files the tools touched); a real script would ask a model for it. ``append_compaction``
stores the replayed system prompt and tools in the compaction entry, so nothing of the prompt is
lost when the system messages are compacted away.

    python docs/examples/auto_compact.py [SESSION_FILE] [--budget TOKENS] [--keep-turns N]

Without a file it builds a long sample session in a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Sequence

import pisession


def estimate_tokens(messages: Sequence[pisession.Message]) -> int:
    """Pi's estimate: characters / 4 (text, thinking, tool names and arguments)."""
    chars = 0
    for message in messages:
        wire = pisession.to_wire(message)
        content = wire.get("content")
        if isinstance(content, str):
            chars += len(content)
        for block in content if isinstance(content, list) else []:
            chars += len(str(block.get("text", block.get("thinking", ""))))
            if block.get("type") == "toolCall":
                chars += len(block.get("name", "")) + len(json.dumps(block.get("arguments", {})))
        chars += len(str(wire.get("summary", "")))
    return chars // 4


def make_sample(directory: str) -> str:
    manager = pisession.SessionManager.create("/work/project", directory)
    manager.append_message(
        {
            "role": "system",
            "content": "You are Pi, a coding agent.",
            "toolsAdded": [{"name": "read", "description": "Read a file", "parameters": {}}],
            "timestamp": int(time.time() * 1000),
        }
    )
    for turn in range(12):
        now = int(time.time() * 1000)
        manager.append_message(
            {
                "role": "user",
                "content": f"Turn {turn}: read module_{turn}.py and explain it.",
                "timestamp": now,
            }
        )
        manager.append_message(
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "toolCall",
                        "id": f"c{turn}",
                        "name": "read",
                        "arguments": {"path": f"src/module_{turn}.py"},
                    }
                ],
                "api": "anthropic-messages",
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "usage": {
                    "input": 900,
                    "output": 40,
                    "cacheRead": 0,
                    "cacheWrite": 0,
                    "totalTokens": 940,
                    "cost": {
                        "input": 0.0027,
                        "output": 0.0006,
                        "cacheRead": 0,
                        "cacheWrite": 0,
                        "total": 0.0033,
                    },
                },
                "stopReason": "toolUse",
                "timestamp": now + 1,
            }
        )
        manager.append_message(
            {
                "role": "toolResult",
                "toolCallId": f"c{turn}",
                "toolName": "read",
                "content": [{"type": "text", "text": "x = 1\n" * 300}],
                "isError": False,
                "timestamp": now + 2,
            }
        )
    path = manager.get_session_file()
    manager.close()
    assert path is not None
    return path


def summarize(entries: Sequence[pisession.Entry]) -> tuple[str, dict[str, list[str]]]:
    asks, read_files = [], []
    for entry in entries:
        if not isinstance(entry, pisession.MessageEntry):
            continue
        message = entry.message
        if isinstance(message, pisession.UserMessage) and isinstance(message.content, str):
            asks.append(message.content.splitlines()[0][:100])
        if isinstance(message, pisession.AssistantMessage):
            for block in message.content:
                if isinstance(block, pisession.ToolCall) and block.name == "read":
                    read_files.append(str(block.arguments.get("path")))
    summary = "## Earlier in this session\n" + "\n".join(f"- {ask}" for ask in asks)
    return summary, {"readFiles": sorted(set(read_files)), "modifiedFiles": []}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("session", nargs="?")
    parser.add_argument("--budget", type=int, default=2000, help="compact above this many tokens")
    parser.add_argument("--keep-turns", type=int, default=2, help="user turns to keep verbatim")
    args = parser.parse_args(argv)
    path = args.session or make_sample(tempfile.mkdtemp(prefix="pi-compact-"))

    manager = pisession.SessionManager.open(path)
    before = manager.build_session_context().messages
    tokens = estimate_tokens(before)
    print(f"{path}: {len(before)} messages, ~{tokens} tokens (budget {args.budget})")
    if tokens <= args.budget:
        print("within budget: nothing to do")
        return 0

    # Cut before the last N user turns of the active branch (after any earlier compaction).
    branch = manager.get_branch()
    start = max((i for i, e in enumerate(branch) if isinstance(e, pisession.CompactionEntry)), default=-1) + 1
    users = [
        i
        for i, e in enumerate(branch)
        if i >= start
        and isinstance(e, pisession.MessageEntry)
        and isinstance(e.message, pisession.UserMessage)
    ]
    if len(users) <= args.keep_turns:
        print("too few turns to compact")
        return 0
    cut = users[-args.keep_turns]
    summary, details = summarize(branch[start:cut])
    entry_id = manager.append_compaction(summary, branch[cut].id, tokens, details=details, from_hook=True)

    after = manager.build_session_context().messages
    print(
        f"compaction {entry_id}: keeps from {branch[cut].id}; "
        f"context now {len(after)} messages, ~{estimate_tokens(after)} tokens"
    )
    print(
        f"first message: {after[0].role}; system prompt kept: "
        f"{pisession.get_current_system_message(after) is not None}"
    )
    manager.close()
    return 0 if estimate_tokens(after) < tokens else 1


if __name__ == "__main__":
    sys.exit(main())
