"""The ``demo`` command: write a sample session with the library, then show its tree and context.

``write_demo_session(folder)`` is what it writes (a system prompt, tool calls, a branch with a
summary, a compaction, a context edit, labels, a name).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any

from pisession import SessionManager
from pisession.views import context_data

from . import sessions
from .commands import Commands
from .output import Style, emit
from .reading import print_context, print_tree

__all__ = ["write_demo_session"]


class _DemoClock:
    """Starts 40 minutes ago and moves a few seconds per reading, so the demo reads like a real session."""

    def __init__(self) -> None:
        self._now = time.time_ns() // 1_000_000 - 40 * 60 * 1000

    def now_ms(self) -> int:
        self._now += 4_700
        return self._now


def _demo_usage(tokens_in: int, tokens_out: int, cache_read: int = 0) -> dict[str, Any]:
    cost_in, cost_out, cost_cache = tokens_in * 3e-6, tokens_out * 15e-6, cache_read * 3e-7
    return {
        "input": tokens_in,
        "output": tokens_out,
        "cacheRead": cache_read,
        "cacheWrite": 0,
        "totalTokens": tokens_in + tokens_out + cache_read,
        "cost": {
            "input": round(cost_in, 6),
            "output": round(cost_out, 6),
            "cacheRead": round(cost_cache, 6),
            "cacheWrite": 0,
            "total": round(cost_in + cost_out + cost_cache, 6),
        },
    }


def _tool(name: str, description: str, **properties: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": description,
        "parameters": {
            "type": "object",
            "properties": {k: {"type": "string", "description": v} for k, v in properties.items()},
            "required": list(properties),
        },
    }


def write_demo_session(directory: str) -> str:
    """Write a sample session with the library and return its path (what ``pisession demo`` shows)."""
    clock = _DemoClock()
    cwd = os.path.join(os.path.expanduser("~"), "projects", "tinyparse")
    manager = SessionManager.create(cwd, directory, clock=clock)
    model = {"api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5"}

    def user(text: str) -> str:
        return manager.append_message({"role": "user", "content": text, "timestamp": clock.now_ms()})

    def assistant(
        blocks: list[dict[str, Any]], usage: dict[str, Any], stop: str = "stop", **override: str
    ) -> str:
        message = {
            "role": "assistant",
            "content": blocks,
            **model,
            **override,
            "usage": usage,
            "stopReason": stop,
            "timestamp": clock.now_ms(),
        }
        return manager.append_message(message)

    def result(call_id: str, tool: str, text: str, error: bool = False) -> str:
        return manager.append_message(
            {
                "role": "toolResult",
                "toolCallId": call_id,
                "toolName": tool,
                "content": [{"type": "text", "text": text}],
                "isError": error,
                "timestamp": clock.now_ms(),
            }
        )

    def call(call_id: str, tool: str, **arguments: str) -> dict[str, Any]:
        return {"type": "toolCall", "id": call_id, "name": tool, "arguments": arguments}

    with manager.batch():
        manager.append_model_change("anthropic", "claude-sonnet-4-5")
        manager.append_thinking_level_change("medium")
        manager.append_message(
            {
                "role": "system",
                "content": "You are Pi, a coding agent. Work in small verified steps and explain what you "
                "changed.",
                "sections": {
                    "environment": f"<env>cwd: {cwd}\nos: linux</env>",
                    "guidelines": "<guidelines>Run the tests before and after every edit.</guidelines>",
                },
                "toolsAdded": [
                    _tool("read", "Read a file", path="File to read"),
                    _tool("bash", "Run a shell command", command="Command line"),
                    _tool(
                        "edit",
                        "Replace text in a file",
                        path="File",
                        oldText="Exact text",
                        newText="Replacement",
                    ),
                ],
                "timestamp": clock.now_ms(),
            }
        )
        report = user("tests/test_parser.py::test_empty fails with an IndexError. Can you fix it?")
        assistant(
            [
                {"type": "thinking", "thinking": "Reproduce first, then read the parser."},
                call("call_1", "bash", command="pytest -q tests/test_parser.py"),
            ],
            _demo_usage(2100, 120),
            "toolUse",
        )
        result(
            "call_1",
            "bash",
            "F..\nFAILED tests/test_parser.py::test_empty - IndexError: list index "
            "out of range\n1 failed, 2 passed in 0.04s",
            error=True,
        )
        assistant(
            [call("call_2", "read", path="src/tinyparse/parser.py")], _demo_usage(2400, 60, 1800), "toolUse"
        )
        source = result(
            "call_2",
            "read",
            "def parse(text):\n    tokens = text.split()\n    head = tokens[0]\n"
            "    return Node(head, tokens[1:])\n" + "# ... 180 more lines ...\n",
        )
        assistant(
            [
                {
                    "type": "text",
                    "text": "`parse` reads `tokens[0]` without checking for empty input. "
                    "I'll return `None` for an empty string.",
                },
                call(
                    "call_3",
                    "edit",
                    path="src/tinyparse/parser.py",
                    oldText="    head = tokens[0]",
                    newText="    if not tokens:\n        return None\n    head = tokens[0]",
                ),
            ],
            _demo_usage(2700, 210, 2300),
            "toolUse",
        )
        result("call_3", "edit", "Edited src/tinyparse/parser.py (+2 lines)")
        manager.append_usage("title", "anthropic", "claude-haiku-4-5", _demo_usage(350, 12), "session title")
        first_fix = assistant(
            [{"type": "text", "text": 'Fixed: `parse("")` now returns `None`; all 3 tests pass.'}],
            _demo_usage(2900, 40, 2600),
        )
        manager.append_label_change(report, "bug report")
        # The user goes back to the point where the file had been read and asks for another fix:
        # Pi writes a branch summary of the path it leaves, as a child of the entry it goes back to.
        manager.branch_with_summary(
            source,
            "Tried returning None for empty input; the tests passed, but "
            "the user wants an exception instead.",
        )
        manager.append_model_change("openai", "gpt-5")
        openai = {"api": "openai-responses", "provider": "openai", "model": "gpt-5"}
        keep = user('Rather than returning None, raise ParseError("empty input"). Check the callers too.')
        assistant(
            [call("call_4", "bash", command="grep -rn 'parse(' src")],
            _demo_usage(3100, 80),
            "toolUse",
            **openai,
        )
        callers = result(
            "call_4",
            "bash",
            "src/tinyparse/cli.py:12:    tree = parse(args.text)\n"
            "src/tinyparse/api.py:40:    return parse(body)\n" + "vendor/...: match\n" * 250,
        )
        assistant(
            [
                call(
                    "call_5",
                    "edit",
                    path="src/tinyparse/parser.py",
                    oldText="    head = tokens[0]",
                    newText='    if not tokens:\n        raise ParseError("empty input")\n'
                    "    head = tokens[0]",
                )
            ],
            _demo_usage(3400, 150),
            "toolUse",
            **openai,
        )
        result("call_5", "edit", "Edited src/tinyparse/parser.py (+2 lines)")
        user("Good. Update test_empty to expect the exception, then run the whole suite.")
        assistant([call("call_6", "bash", command="pytest -q")], _demo_usage(3800, 90), "toolUse", **openai)
        result("call_6", "bash", "......\n6 passed in 0.11s")
        # The model context restarts from this summary plus everything from `keep` on.
        manager.append_compaction(
            "The user reported an IndexError in parse() on empty input. A first fix returned None; the user "
            "asked for ParseError instead, which parse() now raises.",
            keep,
            4200,
            usage=_demo_usage(4200, 180),
        )
        assistant(
            [{"type": "text", "text": "All 6 tests pass; `test_empty` now expects `ParseError`."}],
            _demo_usage(1200, 45),
            **openai,
        )
        # A context edit hides the long grep output from the model; the entry itself stays as written.
        manager.append_context_edit(callers, {"content": "[250 lines trimmed] callers: cli.py:12, api.py:40"})
        manager.append_label_change(first_fix, "first attempt")
        manager.append_session_info("Fix IndexError on empty input")
    path = manager.get_session_file()
    manager.close()
    assert path is not None
    return path


def cmd_demo(args: argparse.Namespace) -> int:
    if args.dir:
        directory = os.path.abspath(os.path.expanduser(args.dir))
        os.makedirs(directory, exist_ok=True)
    else:
        import tempfile

        directory = tempfile.mkdtemp(prefix="pisession-demo-")
    path = write_demo_session(directory)
    style = Style(sys.stdout)
    manager = sessions.load(path)
    emit(style("pisession demo", "bold") + f": wrote a sample Pi session to {path}")
    emit(
        style(
            "Below: its tree (one line per entry; ● the active branch, ○ an abandoned one), then what "
            "the model receives at the leaf.",
            "dim",
        )
    )
    emit()
    print_tree(manager, False, style)
    emit()
    print_context(context_data(manager), style, False)
    emit()
    emit(style("Try next:", "bold"))
    for hint in (
        f"pisession tree {path} --all",
        f"pisession stats {path}",
        f"pisession export {path} --format html -o demo.html",
        f"pisession validate {path}",
    ):
        emit(f"  {hint}")
    return 0


def register(commands: Commands) -> None:
    sub = commands.add(
        "demo",
        cmd_demo,
        "write a sample session and show it",
        "Write a sample session with pisession itself (system prompt, tool calls, a branch, a "
        "compaction, a context edit, labels, a name), then print its tree and the model context at "
        "its leaf. Needs nothing but pisession. Python: pisession.cli.demo.write_demo_session(DIR).",
        session=False,
    )
    sub.add_argument(
        "dir", metavar="DIR", nargs="?", help="folder to write the session to (default: a new temp folder)"
    )
