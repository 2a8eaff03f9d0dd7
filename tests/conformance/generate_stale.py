"""Golden data for compaction and navigation on a session another writer (Pi) appended to after
pisession opened it, recorded from the reference (Pi 1.6.0 via the oracle).

    python tests/conformance/generate_stale.py   # needs node and ../shared/pi-oracle/setup.sh

For each case: a copy of ``cases/compaction/<case>.jsonl`` is opened by Pi's own
``SessionManager.open`` (``pi_append.mjs``), which appends a turn as Pi writes it; the oracle then
compacts, and navigates, *that* file. ``golden/compaction/stale.json`` holds the appended lines
and the oracle's results: pisession, opened before Pi appended, must write what Pi writes for the
file as it is when the entry is written. Ids are seeded and the clocks frozen: a rerun gives the
same bytes.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases" / "compaction"
GOLDEN = HERE / "golden" / "compaction" / "stale.json"
SEED_PRELOAD = HERE / "oracle_seed.mjs"
PI_APPEND = HERE / "pi_append.mjs"
ORACLE = Path(os.environ.get("PI_ORACLE", HERE.parents[2].parent / "shared" / "pi-oracle" / "oracle.mjs"))
if not ORACLE.exists():
    ORACLE = Path("/work/shared/pi-oracle/oracle.mjs")
CLOCK = 1733300000000
USAGE = {
    "input": 9000,
    "output": 400,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 9400,
    "cost": {"input": 0.027, "output": 0.006, "cacheRead": 0, "cacheWrite": 0, "total": 0.033},
}

# What Pi appends meanwhile: a new turn that reads and writes files (it moves the cut, the token
# count and the file lists), and an extension's state entry.
APPENDED: list[dict[str, Any]] = [
    {
        "message": {
            "role": "user",
            "content": "Also rename helper() in util.py " + "please " * 60,
            "timestamp": CLOCK,
        }
    },
    {
        "message": {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Renaming it now. " * 30},
                {"type": "toolCall", "id": "late1", "name": "edit", "arguments": {"path": "util.py"}},
            ],
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "usage": USAGE,
            "stopReason": "toolUse",
            "timestamp": CLOCK + 1,
        }
    },
    {
        "message": {
            "role": "toolResult",
            "toolCallId": "late1",
            "toolName": "edit",
            "content": [{"type": "text", "text": "edited util.py " + "ok " * 200}],
            "isError": False,
            "timestamp": CLOCK + 2,
        }
    },
    {"custom": ["ext.state", {"step": 2}]},
]
# keepRecentTokens 1000: Pi cuts where it would have cut before, but counts and summarizes more;
# 2000: the new turn moves the cut.
CASE_SETTINGS = [("coding", {"keepRecentTokens": 1000}), ("coding", {"keepRecentTokens": 2000})]
# What the tests compare (the dumps of the whole session are left out).
KEPT = ("ok", "error", "preparation", "requests", "collected", "summary", "newLeafId", "editorText", "noop")


def trimmed(result: dict[str, Any], file_before: str) -> dict[str, Any]:
    """The oracle's result without its dump, and only the lines it wrote."""
    out = {k: result[k] for k in KEPT if k in result}
    assert result["text"].startswith(file_before)
    out["written"] = result["text"][len(file_before) :]
    return out


def node(seed: str, *argv: str) -> Any:
    env = {**os.environ, "TZ": "UTC", "PI_ORACLE_SEED": seed}
    out = subprocess.run(
        ["node", "--import", SEED_PRELOAD.as_uri(), *argv],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        timeout=300,
    ).stdout
    return json.loads(out)


def main() -> None:
    records = []
    with tempfile.TemporaryDirectory() as tmp:
        for case, settings in CASE_SETTINGS:
            path = Path(tmp) / f"{case}.jsonl"
            shutil.copyfile(CASES / f"{case}.jsonl", path)
            before = path.read_text(encoding="utf-8")
            ids = node(f"stale:{case}", str(PI_APPEND), str(path), json.dumps(APPENDED), str(CLOCK))
            appended = path.read_text(encoding="utf-8")[len(before) :]
            options = {"settings": settings, "replies": ["EARLIER", "PREFIX"], "clock": CLOCK + 1000}
            compact = node(
                f"stale-compact:{case}", str(ORACLE), "compact", str(path), "--options", json.dumps(options)
            )
            compact = trimmed(compact, before + appended)
            navigations = []
            original = [json.loads(line) for line in before.splitlines()[1:]]
            for target in (ids[0], original[10]["id"]):  # one of Pi's new entries, one it left behind
                nav_options = {
                    "target": target,
                    "summarize": True,
                    "label": "back",
                    "replies": ["LEFT"],
                    "clock": CLOCK + 2000,
                }
                result = node(
                    f"stale-nav:{case}",
                    str(ORACLE),
                    "navigate",
                    str(path),
                    "--options",
                    json.dumps(nav_options),
                )
                navigations.append({"options": nav_options, "result": trimmed(result, before + appended)})
            records.append(
                {
                    "case": case,
                    "appendedIds": ids,
                    "appended": appended,
                    "compact": {"options": options, "result": compact},
                    "navigate": navigations,
                }
            )
    GOLDEN.write_text(json.dumps(records, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN.relative_to(HERE)}: {len(records)} cases")


if __name__ == "__main__":
    main()
