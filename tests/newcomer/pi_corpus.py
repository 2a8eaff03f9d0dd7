"""Sessions written by the real Pi 1.6.0 SessionManager (the pi-oracle), for the newcomer scripts.

    python tests/newcomer/pi_corpus.py one DIR [--turns N] [--cwd CWD] [--day D] [--writer W]
    python tests/newcomer/pi_corpus.py many SESSIONS_ROOT [--count N] [--writer W]

``one`` writes one session into DIR and prints its path; ``many`` writes COUNT sessions into
per-project folders under SESSIONS_ROOT (as Pi lays out ``~/.pi/agent/sessions``). The writer is
``pi`` (the real Pi 1.6.0 SessionManager through the pi-oracle: needs ``node`` and
``$PI_ORACLE``, default ../shared/pi-oracle/oracle.mjs beside the repository) or ``pisession``
(the same operations replayed through pisession, for machines without node).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
from typing import Any

ORACLE = os.environ.get(
    "PI_ORACLE",
    os.path.join(os.path.dirname(__file__), "..", "..", "..", "shared", "pi-oracle", "oracle.mjs"),
)
DAY_MS = 86_400_000
START = 1_764_576_000_000  # 2025-12-01T08:00:00Z
WORDS = ["parser", "invoice", "migration", "rounding", "timeout", "cache"]


def usage(tokens_in: int, tokens_out: int) -> dict[str, Any]:
    cin, cout = tokens_in * 3e-6, tokens_out * 15e-6
    return {
        "input": tokens_in,
        "output": tokens_out,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": tokens_in + tokens_out,
        "cost": {"input": cin, "output": cout, "cacheRead": 0, "cacheWrite": 0, "total": cin + cout},
    }


def ops_for(turns: int, clock: int, topic: str, model: str = "gpt-4o") -> list[dict[str, Any]]:
    ops: list[dict[str, Any]] = [{"op": "appendModelChange", "args": ["openai", model]}]
    for turn in range(turns):
        ts = clock + turn * 10
        ops.append(
            {
                "op": "appendMessage",
                "args": [
                    {
                        "role": "user",
                        "content": f"Turn {turn}: look at the {topic} in module_{turn}.py",
                        "timestamp": ts,
                    }
                ],
            }
        )
        ops.append(
            {
                "op": "appendMessage",
                "args": [
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
                        "api": "openai-completions",
                        "provider": "openai",
                        "model": model,
                        "usage": usage(900 + 550 * turn, 40),
                        "stopReason": "toolUse",
                        "timestamp": ts + 1,
                    }
                ],
            }
        )
        ops.append(
            {
                "op": "appendMessage",
                "args": [
                    {
                        "role": "toolResult",
                        "toolCallId": f"c{turn}",
                        "toolName": "read",
                        "content": [{"type": "text", "text": "x = 1\n" * 300}],
                        "isError": False,
                        "timestamp": ts + 2,
                    }
                ],
            }
        )
        ops.append(
            {
                "op": "appendMessage",
                "args": [
                    {
                        "role": "assistant",
                        "content": [{"type": "text", "text": f"The {topic} code is fine."}],
                        "api": "openai-completions",
                        "provider": "openai",
                        "model": model,
                        "usage": usage(1400 + 550 * turn, 60),
                        "stopReason": "stop",
                        "timestamp": ts + 3,
                    }
                ],
            }
        )
    return ops


class _StepClock:
    """The oracle's frozen clock: starts at ``start``, 1 ms per reading."""

    def __init__(self, start: int) -> None:
        self._next = itertools.count(start)

    def now_ms(self) -> int:
        return next(self._next)


def write_session(directory: str, cwd: str, turns: int, clock: int, topic: str, writer: str = "pi") -> str:
    os.makedirs(directory, exist_ok=True)
    if writer == "pisession":
        import pisession

        manager = pisession.SessionManager.create(cwd, directory, clock=_StepClock(clock))
        for op in ops_for(turns, clock, topic):
            method = re.sub(r"[A-Z]", lambda m: "_" + m.group(0).lower(), op["op"])
            getattr(manager, method)(*op["args"])
        written = manager.get_session_file()
        manager.close()
        assert written is not None
        return written
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as script:
        json.dump({"cwd": cwd, "clock": clock, "ops": ops_for(turns, clock, topic)}, script)
    try:
        out = subprocess.run(
            ["node", ORACLE, "ops", script.name, "--dir", directory],
            capture_output=True,
            text=True,
            check=True,
            timeout=120,
        ).stdout
    finally:
        os.unlink(script.name)
    path: str = json.loads(out)["file"]
    return path


def pi_folder(cwd: str) -> str:
    """Pi's per-project folder name: ``--<cwd with / \\ : replaced by ->--``."""
    return "--" + cwd.lstrip("/").replace("/", "-").replace("\\", "-").replace(":", "-") + "--"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("what", choices=["one", "many"])
    parser.add_argument("dir")
    parser.add_argument("--turns", type=int, default=12)
    parser.add_argument("--cwd", default="/work/project")
    parser.add_argument("--day", type=int, default=0)
    parser.add_argument("--count", type=int, default=30)
    parser.add_argument("--writer", choices=["pi", "pisession"], default="pi")
    args = parser.parse_args(argv)
    if args.what == "one":
        print(write_session(args.dir, args.cwd, args.turns, START + args.day * DAY_MS, "parser", args.writer))
        return 0
    projects = ["/home/me/shop", "/home/me/blog", "/home/me/tools"]
    for n in range(args.count):
        cwd = projects[n % len(projects)]
        write_session(
            os.path.join(args.dir, pi_folder(cwd)),
            cwd,
            1 + n % 4,
            START + (n % 5) * DAY_MS + n * 1000,
            WORDS[n % len(WORDS)],
            args.writer,
        )
    print(args.dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
