#!/usr/bin/env python3
"""Regenerate the golden data of the dataset tests (tests/test_dataset.py) from the reference.

    python tests/conformance/generate_dataset.py

Writes golden/dataset.json:

- ``usage``: ``oracle.mjs usage`` (Pi's ``getUsageCostBreakdown``) of every read case that the
  reference opens (the read dumps themselves are already in golden/read/);
- ``family``: a parent session, a session branched from it with ``createBranchedSession`` that
  then goes on, and a branch of that branch (a fork of a fork), all written by Pi through an op
  script: the files (``$DIR`` for the folder), the op results, and for each file the oracle's
  ``read`` (entry ids, leaf, branch, context entries, number of context messages) and ``usage``.

Needs node and the reference installed by ../shared/pi-oracle/setup.sh (as generate.py does).
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from generate import (
    CASES,
    GOLDEN_READ,
    HERE,
    T0,
    Ctx,
    Sandbox,
    Script,
    assistant,
    oracle,
    say,
    text,
    tool_call,
    tool_result,
    usage,
    user,
    write_json,
)

OUT = HERE / "golden" / "dataset.json"


def _summary(dump: dict[str, Any]) -> dict[str, Any]:
    return {
        "entries": [e.get("id") for e in dump["entries"]],
        "leafId": dump["leafId"],
        "branch": dump["branch"],
        "contextEntries": dump["current"]["contextEntries"],
        "contextMessages": len(dump["current"]["context"]["messages"]),
        "labels": dump["labels"],
    }


def family_script() -> Script:
    s = Script(
        "a parent with tool calls, usage entries and a compaction; a createBranchedSession of it that goes "
        "on (its copies must not count twice); a branch of that branch"
    )
    q1 = s("appendMessage", user("read the config", T0 + 1))
    call = s(
        "appendMessage",
        assistant(
            [text("reading"), tool_call("call-1", "read", {"path": "config.toml"})],
            T0 + 2,
            stop="toolUse",
            u=usage(1000, 200, cache_read=500),
        ),
    )
    s("appendMessage", tool_result("call-1", "read", "[server]\nport = 80", T0 + 3))
    s("appendMessage", say("port 80", T0 + 4, u=usage(1100, 50, cache_write=300)))
    s("appendLabelChange", q1, "start")
    s("appendUsage", "summary", "openai", "gpt-5-mini", usage(400, 40))
    s(
        "appendMessage",
        assistant(
            [tool_call("call-2", "bash", {"command": "false"})],
            T0 + 5,
            stop="toolUse",
            model="claude-opus-4-1",
            responseModel="claude-opus-4-1-20250805",
            u=usage(900, 30),
        ),
    )
    s("appendMessage", tool_result("call-2", "bash", "exit 1", T0 + 6, is_error=True))
    kept = s("appendMessage", user("and now?", T0 + 7))
    s("appendMessage", say("done", T0 + 8, u=usage(1200, 60)))
    s("appendCompaction", "what happened so far", kept, 5000, None, False, usage(3000, 300))
    s("appendMessage", user("more", T0 + 9))
    leaf = s("appendMessage", say("more done", T0 + 10, u=usage(700, 70)))
    del call
    s("createBranchedSession", leaf)  # the manager now writes the branched session
    s("appendMessage", user("in the fork", T0 + 11))
    fork_leaf = s("appendMessage", say("fork answer", T0 + 12, u=usage(800, 80)))
    s("createBranchedSession", fork_leaf)  # and now a branch of the branch
    s("appendMessage", user("in the grandchild", T0 + 13))
    s("appendMessage", say("grandchild answer", T0 + 14, u=usage(600, 60)))
    return s


def family(root: Path) -> dict[str, Any]:
    ctx = Ctx(root, "dataset-family")
    script = family_script()
    out, _, sb = ctx.run_ops(script)
    files = {p.name: p.read_text(encoding="utf-8") for p in sorted(sb.dir.glob("*.jsonl"))}
    reads: dict[str, Any] = {}
    usages: dict[str, Any] = {}
    for name in files:
        path = str(sb.dir / name)
        reads[name] = _summary(json.loads(oracle(sb, "dataset-family", "read", path))["dump"])
        usages[name] = json.loads(oracle(sb, "dataset-family", "usage", path))["breakdown"]
    texts = {name: sb.placeholders(t) for name, t in files.items()}
    return {
        "doc": script.doc,
        "script": script.data,
        "results": json.loads(sb.placeholders(json.dumps(out["results"]))),
        "files": texts,
        "read": reads,
        "usage": usages,
    }


def case_usage(root: Path) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for golden in sorted(GOLDEN_READ.glob("*.json")):
        if not json.loads(golden.read_text(encoding="utf-8")).get("ok"):
            continue
        sb = Sandbox(root, f"usage-{golden.stem}")
        try:
            result = json.loads(oracle(sb, golden.stem, "usage", str(CASES / f"{golden.stem}.jsonl")))
        except RuntimeError:  # Pi's breakdown throws on a usage without cost (see _attribution)
            out[golden.stem] = {"error": "the reference throws"}
            continue
        out[golden.stem] = result.get("breakdown") if result.get("ok") else {"error": result.get("error")}
    return out


def main() -> int:
    sys.setrecursionlimit(20_000)  # golden read files with entries nested 1,200 levels
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        data = {"family": family(root), "usage": case_usage(root)}
    write_json(OUT, data)
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
