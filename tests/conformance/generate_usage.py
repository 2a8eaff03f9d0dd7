#!/usr/bin/env python3
"""Regenerate the usage report's conformance data from the reference implementation (pi-oracle).

    python tests/conformance/generate_usage.py

1. ``usage_corpus.mjs`` writes a corpus with Pi 1.6.0's own SessionManager (three projects,
   forks, a fork of a fork, a branched session, every kind of usage Pi counts); it is copied to
   ``cases/usage/corpus/`` with the temporary folder in ``parentSession`` replaced by ``$CORPUS``.
   Beside it, hand-written files: odd values (``cases/usage/odd_values.jsonl``), files on which
   Pi's breakdown throws (``cases/usage/throws/``), a damaged copy of a corpus file.
2. ``oracle.mjs usage FILE`` (Pi's ``getUsageCostBreakdown``) for every file: ``files``.
3. The expected report figures, from what the oracle reads: each corpus session is cut into one
   piece per day of its own entries (the day of the entry's timestamp in a time zone; entries with
   the same id and timestamp as in the session its header's ``parentSession`` names are copies and
   left out, which follows chains of forks), and the oracle's breakdown of each piece is recorded:
   ``pieces[zone][file][day]``. Summing pieces gives daily, monthly and per-session figures.

Needs ``node`` and the reference installed by ``../shared/pi-oracle/setup.sh``. Stdlib only.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent.parent
CASES = HERE / "cases" / "usage"
CORPUS = CASES / "corpus"
GOLDEN = HERE / "golden" / "usage.json"
ORACLE = Path(os.environ.get("PI_ORACLE", str(PROJECT.parent / "shared" / "pi-oracle" / "oracle.mjs")))
SEED_PRELOAD = HERE / "oracle_seed.mjs"
ZONES = ("UTC", "Asia/Tokyo", "America/Los_Angeles")
PLACEHOLDER = "$CORPUS"


def J(obj: Any) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def node_env(tmp: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_", "TAU_"))}
    env.update(TZ="UTC", TMPDIR=str(tmp), PI_ORACLE_SEED="usage-corpus")
    if "PI_ORACLE_HOME" in os.environ:
        env["PI_ORACLE_HOME"] = os.environ["PI_ORACLE_HOME"]
    return env


def oracle_usage(path: Path, tmp: Path) -> Any:
    proc = subprocess.run(
        ["node", str(ORACLE), "usage", str(path)], capture_output=True, env=node_env(tmp), check=False
    )
    if proc.returncode != 0:
        # Pi's breakdown throws on these (a usage without cost): record the message it dies with.
        lines = [ln for ln in proc.stderr.decode().splitlines() if "Error" in ln]
        return {"ok": False, "error": lines[0].strip() if lines else "exit status " + str(proc.returncode)}
    return json.loads(proc.stdout)


USAGE = {
    "input": 100,
    "output": 20,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 120,
    "cost": {"input": 0.0003, "output": 0.0003, "cacheRead": 0, "cacheWrite": 0, "total": 0.0006},
}


def _line(n: int, entry_type: str, **fields: Any) -> str:
    return J(
        {
            "type": entry_type,
            "id": f"odd{n:05d}",
            "parentId": f"odd{n - 1:05d}" if n else None,
            "timestamp": f"2026-11-20T10:00:{n:02d}.000Z",
            **fields,
        }
    )


def _assistant(n: int, provider: Any, model: Any, usage: Any, **extra: Any) -> str:
    message: dict[str, Any] = {"role": "assistant", "content": [], "api": "x"}
    if provider is not ...:
        message["provider"] = provider
    if model is not ...:
        message["model"] = model
    message.update(extra)
    if usage is not ...:
        message["usage"] = usage
    message["stopReason"] = "stop"
    message["timestamp"] = 1
    return _line(n, "message", message=message)


HEADER = J(
    {
        "type": "session",
        "version": 3,
        "id": "odd-values",
        "timestamp": "2026-11-20T10:00:00.000Z",
        "cwd": "/work/odd",
    }
)


def odd_values() -> str:
    """Values Pi adds without checking, where JavaScript gives a number (NaN included)."""
    no_cache_write = {k: v for k, v in USAGE.items() if k != "cacheWrite"}
    lines = [
        HEADER,
        _line(0, "message", message={"role": "user", "content": "hi", "timestamp": 1, "usage": USAGE}),
        _assistant(1, "p", "plain", USAGE),
        _assistant(2, "p", "plain", USAGE, responseModel="plain-2026"),
        _assistant(3, "p", "plain", USAGE, responseModel=None),
        _assistant(4, "p", "plain", USAGE, responseModel=""),
        _assistant(5, ..., "no-provider", USAGE),
        _assistant(6, "p", ..., USAGE),
        _assistant(7, None, 5, USAGE),
        _assistant(8, "p", ["a", None, 2.5], USAGE),
        _assistant(9, "p", {"id": "x"}, USAGE),
        _assistant(10, "p", "missing-cache-write", no_cache_write),
        _assistant(
            11,
            "p",
            "nulls",
            {**USAGE, "input": None, "cacheRead": None, "cost": {**USAGE["cost"], "total": None}},
        ),
        _assistant(12, "p", "booleans", {**USAGE, "input": True, "output": False, "cost": {"total": True}}),
        _assistant(13, "p", "no-usage", ...),
        _assistant(14, "p", "null-usage", None),
        _assistant(15, "p", "zero-usage", 0),
        _assistant(
            16, "p", "zeros", {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "cost": {"total": 0}}
        ),
        _assistant(17, "p", "negative", {**USAGE, "input": -500, "cost": {"total": -1}}),
        _assistant(18, "p", "float-tokens", {**USAGE, "input": 10.5, "output": 1e-7}),
        _assistant(19, "p", "cost-not-object", {**USAGE, "cost": 5}),
        _assistant(20, "p", "cost-list", {**USAGE, "cost": [1]}),
        _assistant(21, "p", "total-missing", {**USAGE, "cost": {"input": 1}}),
        _line(22, "usage", kind="subagent", provider="openai", model="gpt-5", usage=USAGE),
        _line(23, "usage", kind="weird", model="m", usage=USAGE),
        _line(24, "usage", kind="weird", provider="openai", model="gpt-5", usage=""),
        _line(25, "usage", kind="weird", provider="openai", model="gpt-5", usage=False),
        _line(26, "usage", kind="weird", provider="openai", model="gpt-5"),
        _line(
            27,
            "message",
            message={
                "role": "toolResult",
                "toolCallId": "c",
                "toolName": "t",
                "content": [],
                "isError": False,
                "timestamp": 1,
                "usage": USAGE,
            },
        ),
        _line(
            28,
            "message",
            message={
                "role": "toolResult",
                "toolCallId": "c",
                "toolName": "t",
                "content": [],
                "isError": False,
                "timestamp": 1,
                "usage": None,
            },
        ),
        _line(
            29,
            "message",
            message={
                "role": "toolResult",
                "toolCallId": "c",
                "toolName": "t",
                "content": [],
                "isError": False,
                "timestamp": 1,
            },
        ),
        _line(30, "compaction", summary="s", firstKeptEntryId="odd00001", tokensBefore=1, usage=USAGE),
        _line(31, "compaction", summary="s", firstKeptEntryId="odd00001", tokensBefore=1, usage=None),
        _line(32, "branch_summary", fromId="odd00001", summary="s", usage=USAGE),
        _line(33, "custom_message", customType="x", content="c", display=True, usage=USAGE),
        _line(34, "message", message="not an object"),
        _line(35, "message", message=["role", "assistant"]),
        "{not json",
        _assistant(36, "p", "plain", USAGE),
    ]
    return "\n".join(lines) + "\n"


THROWS = {
    "usage_without_cost": _assistant(1, "p", "m", {k: v for k, v in USAGE.items() if k != "cost"}),
    "usage_cost_null": _assistant(1, "p", "m", {**USAGE, "cost": None}),
    "usage_is_text": _line(1, "usage", kind="k", provider="p", model="m", usage="lots"),
    "usage_is_number": _line(1, "compaction", summary="s", firstKeptEntryId="x", tokensBefore=1, usage=7),
    "message_null": _line(1, "message", message=None),
    "message_missing": _line(1, "message"),
}


def throwing(name: str) -> str:
    # One counted entry beside the one Pi throws on: pisession keeps the first, leaves the second out.
    return "\n".join([HEADER, _assistant(0, "p", "kept", USAGE), THROWS[name]]) + "\n"


def day_of(timestamp: str, zone: str) -> str:
    moment = datetime.fromisoformat(timestamp.replace("Z", "+00:00"))
    return moment.astimezone(ZoneInfo(zone)).date().isoformat()


def pieces(corpus: Path, files: list[str], tmp: Path) -> dict[str, Any]:
    """Per zone, file and day: the oracle's breakdown of the session's own entries of that day."""
    lines_of = {f: (corpus / f).read_text(encoding="utf-8").split("\n") for f in files}
    parsed = {f: [json.loads(ln) for ln in lines if ln.strip()] for f, lines in lines_of.items()}
    by_path = {str(corpus / f): f for f in files}
    out: dict[str, Any] = {}
    for zone in ZONES:
        per_file: dict[str, Any] = {}
        for f in files:
            header, *entries = parsed[f]
            parent = by_path.get(str(header.get("parentSession", "")).replace(PLACEHOLDER, str(corpus)))
            inherited = {(e["id"], e["timestamp"]) for e in parsed[parent][1:]} if parent else set()
            days: dict[str, list[str]] = {}
            for entry in entries:
                if (entry["id"], entry["timestamp"]) in inherited:
                    continue
                days.setdefault(day_of(entry["timestamp"], zone), []).append(J(entry))
            per_day = {}
            for day, lines in sorted(days.items()):
                piece = tmp / "piece.jsonl"
                piece.write_text("\n".join([J(header), *lines]) + "\n", encoding="utf-8")
                per_day[day] = oracle_usage(piece, tmp)["breakdown"]
            per_file[f] = per_day
        out[zone] = per_file
    return out


def main() -> int:
    if shutil.which("node") is None:
        print("node is missing", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        built = tmp / "corpus"
        proc = subprocess.run(
            ["node", "--import", SEED_PRELOAD.as_uri(), str(HERE / "usage_corpus.mjs"), str(built)],
            capture_output=True,
            env=node_env(tmp),
            check=True,
        )
        files: list[str] = json.loads(proc.stdout)["files"]
        shutil.rmtree(CASES, ignore_errors=True)
        for f in files:
            target = CORPUS / f
            target.parent.mkdir(parents=True, exist_ok=True)
            text = (built / f).read_text(encoding="utf-8").replace(str(built), PLACEHOLDER)
            target.write_text(text, encoding="utf-8")
            os.utime(target, (0, (built / f).stat().st_mtime))
        # A damaged copy of a project-b session: a broken line in the middle, a cut last line.
        source = CORPUS / files[3]
        damaged_lines = source.read_text(encoding="utf-8").split("\n")
        damaged_lines.insert(3, '{"type":"message","id":')
        damaged = CASES / "damaged.jsonl"
        damaged.write_text("\n".join(damaged_lines).rstrip("\n")[:-7], encoding="utf-8")
        (CASES / "odd_values.jsonl").write_text(odd_values(), encoding="utf-8")
        for throw_name in THROWS:
            (CASES / "throws").mkdir(parents=True, exist_ok=True)
            (CASES / "throws" / f"{throw_name}.jsonl").write_text(throwing(throw_name), encoding="utf-8")

        every = [str(p.relative_to(CASES)) for p in sorted(CASES.rglob("*.jsonl"))]
        golden: dict[str, Any] = {
            "doc": "generate_usage.py: files = oracle.mjs usage FILE (paths relative to cases/usage); "
            "pieces[zone][file][day] = oracle.mjs usage on the file's own entries of that day",
            "corpus": files,
            "files": {f: oracle_usage(CASES / f, tmp) for f in every},
            "pieces": pieces(CORPUS, files, tmp),
        }
    GOLDEN.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN.write_text(json.dumps(golden, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN.relative_to(PROJECT)} and {len(every)} case files")
    return 0


if __name__ == "__main__":
    sys.exit(main())
