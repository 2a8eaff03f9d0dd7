"""Live checks against the reference itself (skipped without node and the installed package).

The golden tests already pin pisession to recorded reference output; these ask the reference
directly about files pisession writes, so a regression in the writer shows up even for
sessions no golden file covers.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from _dump import assert_same, dump
from conftest import ORACLE, needs_oracle

from pisession import SessionManager


def oracle_read(path: Path) -> dict[str, Any]:
    out = subprocess.run(
        ["node", str(ORACLE), "read", str(path), "--all-leaves"],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    return json.loads(out)


def write_session(directory: Path) -> SessionManager:
    manager = SessionManager.create("/project", directory)
    manager.append_message(
        {
            "role": "system",
            "content": "You are Pi.",
            "sections": {"env": "<env/>"},
            "toolsAdded": [{"name": "read", "description": "Read a file", "parameters": {"type": "object"}}],
            "timestamp": 1733234400000,
        }
    )
    first = manager.append_message(
        {"role": "user", "content": "Fix the bug\u2028please", "timestamp": 1733234400001}
    )
    reply = manager.append_message(
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "look first", "thinkingSignature": "sig"},
                {
                    "type": "toolCall",
                    "id": "call_1",
                    "name": "read",
                    "arguments": {"path": "a.py", "2": 1, "1": 0},
                },
            ],
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "usage": {
                "input": 10,
                "output": 5,
                "cacheRead": 0,
                "cacheWrite": 0,
                "totalTokens": 15,
                "cost": {
                    "input": 0.000018,
                    "output": 1e-7,
                    "cacheRead": 0,
                    "cacheWrite": 0,
                    "total": 0.0000181,
                },
            },
            "stopReason": "toolUse",
            "timestamp": 1733234400002,
        }
    )
    result = manager.append_message(
        {
            "role": "toolResult",
            "toolCallId": "call_1",
            "toolName": "read",
            "content": [{"type": "text", "text": "print('hi')\n"}],
            "isError": False,
            "timestamp": 1733234400003,
        }
    )
    manager.append_thinking_level_change("high")
    manager.append_model_change("openai", "gpt-5")
    manager.append_label_change(first, "start")
    manager.append_context_edit(result, {"content": "(elided)"})
    manager.append_compaction("Summary of the fix.", reply, 1234, {"readFiles": ["a.py"]})
    manager.append_custom_entry("ext", {"n": 1})
    manager.append_custom_message_entry("ext", "note for the model", True)
    manager.branch_with_summary(first, "Tried another way.")
    manager.append_message({"role": "user", "content": "another way", "timestamp": 1733234400004})
    manager.append_session_info("Bug fix\nsession")
    manager.append_usage(
        "cache_warm",
        "anthropic",
        "claude-sonnet-4-5",
        {
            "input": 1,
            "output": 0,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": 1,
            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
        },
        "warm",
    )
    return manager


@needs_oracle
def test_reference_reads_a_pisession_file_as_pisession_does(tmp_path: Path) -> None:
    manager = write_session(tmp_path)
    path = Path(manager.get_session_file() or "")
    before = path.read_bytes()
    expected = oracle_read(path)
    assert expected["ok"], expected
    assert expected["fileAfterOpen"] == before.decode("utf-8"), "Pi had to repair or migrate our file"
    ours = dump(SessionManager.open(path), all_leaves=True)
    for key, want in expected["dump"].items():
        if key == "leaves":
            for leaf, view in want.items():
                assert_same(ours["leaves"][leaf], view, f"leaf {leaf}")
        else:
            assert_same(ours[key], want, key)


@needs_oracle
def test_lines_pisession_writes_are_json_stringify_output(tmp_path: Path) -> None:
    """Every line is byte-identical to JSON.stringify(JSON.parse(line)) in Node."""
    manager = write_session(tmp_path)
    path = Path(manager.get_session_file() or "")
    script = (
        "const fs=require('fs');"
        "const lines=fs.readFileSync(process.argv[1],'utf8').split('\\n').filter(Boolean);"
        "process.stdout.write(JSON.stringify(lines.map(l=>JSON.stringify(JSON.parse(l))===l)))"
    )
    out = subprocess.run(["node", "-e", script, str(path)], capture_output=True, text=True, check=True).stdout
    lines = [line for line in path.read_text(encoding="utf-8").split("\n") if line]  # not splitlines: U+2028
    assert json.loads(out) == [True] * len(lines)
