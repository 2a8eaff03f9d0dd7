"""Automated compaction, as Pi's auto-compaction does it: when the context at the leaf nears the
model's window, cut where Pi would cut, summarize what comes before, and write the compaction
entry Pi would write.

The summary comes from a summarizer: by default a stand-in made from the prompt itself (the
first lines of the user turns Pi quotes); pass ``--command`` to use any command line that reads
the prompt on stdin (for example ``llm -s "$PISESSION_SYSTEM_PROMPT"``).

    python docs/examples/auto_compact.py [SESSION_FILE] [--window TOKENS] [--keep TOKENS] [--command CMD]

Without a file it builds a long sample session in a temporary folder.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections.abc import Sequence

import pisession
from pisession.compaction import (
    CompactionSettings,
    SummaryRequest,
    command_summarizer,
    estimate_tokens,
    format_plan,
)


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
                    "input": 900 + 550 * turn,
                    "output": 40,
                    "cacheRead": 0,
                    "cacheWrite": 0,
                    "totalTokens": 940 + 550 * turn,
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



def offline_summary(request: SummaryRequest) -> str:
    """A stand-in for a model: the user turns quoted in Pi's prompt, one line each."""
    quoted = (line for line in request.prompt.splitlines() if line.startswith("[User]: "))
    asks = [line[len("[User]: ") :][:100] for line in quoted]
    return "## Goal\n" + "\n".join(f"- {ask}" for ask in asks)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("session", nargs="?")
    parser.add_argument("--window", type=int, default=8000, help="the model's context window")
    parser.add_argument("--reserve", type=int, default=2000, help="compact above window - reserve")
    parser.add_argument("--keep", type=int, default=1500, help="recent tokens kept verbatim")
    parser.add_argument("--command", help="summarizer command (prompt on stdin)")
    args = parser.parse_args(argv)
    path = args.session or make_sample(tempfile.mkdtemp(prefix="pi-compact-"))
    settings = CompactionSettings(reserve_tokens=args.reserve, keep_recent_tokens=args.keep)

    manager = pisession.SessionManager.open(path)
    # Pi's own check: it counts the context as Pi does, and not from a reply older than the
    # latest compaction, so a session this script has just compacted is left alone next run.
    check = manager.needs_compaction(args.window, settings)
    print(f"{path}: ~{check.tokens} tokens in context (window {args.window}, reserve {args.reserve})")
    if not check:
        print(f"nothing to do ({check.reason})")
        return 0

    plan = manager.plan_compaction(settings)
    if plan is None:
        print("nothing to compact")
        return 0
    print(format_plan(plan))
    summarize = command_summarizer(args.command) if args.command else offline_summary
    entry = manager.compact(summarize, settings=settings)

    # The usages recorded before the cut describe the old context: estimate what is left, as Pi does.
    after = sum(estimate_tokens(m) for m in manager.build_session_context().messages)
    print(f"compaction {entry.id}: keeps from {entry.first_kept_entry_id}; context now ~{after} tokens")
    # The compaction entry stores the replayed system prompt and tools (its systemMessage).
    kept = manager.build_session_context().messages
    system_kept = pisession.get_current_system_message(kept) is not None
    print(f"first message: {kept[0].role}; system prompt kept: {system_kept}")
    again = manager.needs_compaction(args.window, settings)
    print(f"the next run: {'compact again' if again else 'nothing to do'} ({again.reason})")
    manager.close()
    return 0 if not again else 1


if __name__ == "__main__":
    sys.exit(main())
