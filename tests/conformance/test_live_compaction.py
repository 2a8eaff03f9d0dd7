"""Live checks of compaction and tree navigation against the reference itself (skipped without
node and the installed package; ``PI_ORACLE`` points at another oracle.mjs).

The golden tests pin pisession to recorded runs; these run Pi's compaction and navigation on a
session pisession has just written, so a change in either writer shows up too.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from conftest import ORACLE, ORACLE_HOME
from test_compaction import Recorder, normalise, our_requests, pi_requests

from pisession import SessionManager
from pisession import compaction as c

LIVE_ORACLE = Path(os.environ.get("PI_ORACLE", str(ORACLE)))

pytestmark = pytest.mark.skipif(
    shutil.which("node") is None
    or not LIVE_ORACLE.exists()
    or not (ORACLE_HOME / "node_modules" / "@earendil-works" / "pi-coding-agent").exists(),
    reason="live oracle needs node and ../shared/pi-oracle/setup.sh (golden tests still run)",
)


def oracle(mode: str, path: Path, options: dict[str, Any]) -> dict[str, Any]:
    out = subprocess.run(
        ["node", str(LIVE_ORACLE), mode, str(path), "--options", json.dumps(options)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    return json.loads(out)  # type: ignore[no-any-return]


def write_session(directory: Path) -> tuple[SessionManager, list[str]]:
    manager = SessionManager.create("/project", directory)
    manager.append_message({"role": "system", "content": "You are Pi.", "timestamp": 1733234400000})
    ids = []
    for turn in range(5):
        ids.append(
            manager.append_message(
                {"role": "user", "content": f"turn {turn} 😀 " + "x" * 300, "timestamp": 1733234400001 + turn}
            )
        )
        ids.append(
            manager.append_message(
                {
                    "role": "assistant",
                    "content": [
                        {"type": "thinking", "thinking": "t" * 200, "thinkingSignature": "s"},
                        {"type": "text", "text": "reading"},
                        {
                            "type": "toolCall",
                            "id": f"c{turn}",
                            "name": "read",
                            "arguments": {"path": f"f{turn}.py"},
                        },
                    ],
                    "api": "anthropic-messages",
                    "provider": "anthropic",
                    "model": "m",
                    "usage": {
                        "input": 1000 * turn,
                        "output": 10,
                        "cacheRead": 0,
                        "cacheWrite": 0,
                        "totalTokens": 1000 * turn + 10,
                        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
                    },
                    "stopReason": "toolUse",
                    "timestamp": 1733234400100 + turn,
                }
            )
        )
        ids.append(
            manager.append_message(
                {
                    "role": "toolResult",
                    "toolCallId": f"c{turn}",
                    "toolName": "read",
                    "content": [{"type": "text", "text": "y" * 2500}],
                    "isError": False,
                    "timestamp": 1733234400200 + turn,
                }
            )
        )
        manager.append_custom_message_entry("ext.note", f"note {turn}", True)
        if turn == 2:
            manager.append_context_edit(ids[-1], {"content": "(elided)"})
    return manager, ids


def appended(before: str, path: Path) -> list[str]:
    return [line for line in path.read_text(encoding="utf-8")[len(before) :].split("\n") if line]


@pytest.mark.parametrize("keep", [400, 1500, 20000])
def test_compact_live(tmp_path: Path, keep: int) -> None:
    manager, _ = write_session(tmp_path / "s")
    path = Path(manager.get_session_file() or "")
    before = path.read_text(encoding="utf-8")
    expected = oracle("compact", path, {"settings": {"keepRecentTokens": keep}, "replies": ["A", "B"]})
    recorder = Recorder(["A", "B"])
    settings = c.CompactionSettings(keep_recent_tokens=keep)
    if not expected["ok"]:
        with pytest.raises(c_error(expected["error"])):
            manager.compact(recorder, settings=settings)
        return
    manager.compact(recorder, settings=settings)
    assert our_requests(recorder) == pi_requests(expected)
    assert normalise(appended(before, path)) == normalise(
        [line for line in expected["text"][len(before) :].split("\n") if line]
    )


def c_error(message: str) -> type[Exception]:
    from pisession import AlreadyCompactedError, NothingToCompactError

    return AlreadyCompactedError if message == "Already compacted" else NothingToCompactError


@pytest.mark.parametrize("target_index", [0, 3, 7, 12])
def test_navigate_live(tmp_path: Path, target_index: int) -> None:
    manager, ids = write_session(tmp_path / "s")
    path = Path(manager.get_session_file() or "")
    before = path.read_text(encoding="utf-8")
    options = {"target": ids[target_index], "summarize": True, "label": "here", "replies": ["BRANCH"]}
    expected = oracle("navigate", path, options)
    recorder = Recorder(["BRANCH"])
    nav = manager.navigate_tree(ids[target_index], summarize=recorder, label="here", context_window=200000)
    assert our_requests(recorder) == pi_requests(expected)
    assert nav.new_leaf_id == expected["newLeafId"]
    assert nav.editor_text == expected["editorText"]
    assert normalise(appended(before, path)) == normalise(
        [line for line in expected["text"][len(before) :].split("\n") if line]
    )
