#!/usr/bin/env python3
"""``pisession usage daily --json`` beside ccusage (``ccusage pi daily --json --offline``), whole
processes, on the same Pi-written sessions (``make_sessions.mjs --catalog 3000``; 1,000 and
the others are the first files of those, hard-linked into their own agent folders).

    python benchmarks/usage_bench.py [--reps 5] [--sizes 1000 3000]

ccusage comes from npm into ``benchmarks/.peers/`` (git-ignored), pinned:

    cd benchmarks/.peers && npm install ccusage@20.0.24 @ccusage/ccusage-linux-x64@20.0.24

Rows: ccusage (every call reads every file), pisession cold (a new catalog: the first build),
pisession warm (nothing changed since the last call), pisession warm after 10 sessions grew by
one line each. Also prints both tools' totals for the corpus (they differ: see docs).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
CCUSAGE = HERE / ".peers" / "node_modules" / ".bin" / "ccusage"
APPENDED_LINE = (
    '{{"type":"usage","id":"bench{n:03d}","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z",'
    '"kind":"bench","provider":"openai","model":"gpt-5","usage":{{"input":1,"output":1,"cacheRead":0,'
    '"cacheWrite":0,"totalTokens":2,"cost":{{"input":0,"output":0,"cacheRead":0,"cacheWrite":0,"total":0.001}}}}}}\n'
)


def corpus(count: int) -> Path:
    root = DATA / "catalog-3000"
    if not (root / "sessions").is_dir():
        subprocess.run(
            [
                "node",
                str(HERE / "make_sessions.mjs"),
                "--out",
                str(DATA),
                "--only",
                "catalog",
                "--catalog",
                "3000",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    files = sorted((root / "sessions").glob("*/*.jsonl"))
    if count >= len(files):
        return root
    subset = DATA / f"usage-{count}"
    if not (subset / "sessions").is_dir():
        for path in files[:count]:
            target = subset / "sessions" / path.parent.name / path.name
            target.parent.mkdir(parents=True, exist_ok=True)
            try:
                os.link(path, target)
            except OSError:
                shutil.copy2(path, target)
    return subset


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, bytes]:
    started = time.perf_counter()
    out = subprocess.run(argv, env=env, capture_output=True, check=True).stdout
    return (time.perf_counter() - started) * 1000, out


def pisession_argv() -> list[str]:
    script = shutil.which("pisession", path=os.path.dirname(sys.executable))
    return [script] if script else [sys.executable, "-m", "pisession.cli"]


def measure(agent: Path, reps: int) -> dict[str, object]:
    files = sorted((agent / "sessions").glob("*/*.jsonl"))
    ccusage = [str(CCUSAGE), "pi", "daily", "--json", "--offline", "--pi-path", str(agent / "sessions")]
    ours = [*pisession_argv(), "usage", "daily", "--json", "--timezone", "UTC"]
    with tempfile.TemporaryDirectory() as tmp:
        catalog = Path(tmp) / "catalog.sqlite3"
        env = {
            **os.environ,
            "PI_CODING_AGENT_DIR": str(agent),
            "PISESSION_CATALOG": str(catalog),
            "TZ": "UTC",
        }
        env.pop("PI_CODING_AGENT_SESSION_DIR", None)
        results: dict[str, list[float]] = {"ccusage": [], "cold": [], "warm": [], "grown": []}
        peer_out = ours_out = b""
        grown = files[:: max(1, len(files) // 10)][:10]
        sizes = {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in grown}
        try:
            for rep in range(reps):
                ms, peer_out = timed(ccusage, env)
                results["ccusage"].append(ms)
                for suffix in ("", "-wal", "-shm"):
                    Path(str(catalog) + suffix).unlink(missing_ok=True)
                results["cold"].append(timed(ours, env)[0])
                time.sleep(0.1)  # past the catalog's "written in the tick it was read" margin
                ms, ours_out = timed(ours, env)
                results["warm"].append(ms)
                for n, path in enumerate(grown):
                    with open(path, "a", encoding="utf-8") as handle:
                        handle.write(APPENDED_LINE.format(n=rep * 10 + n))
                results["grown"].append(timed(ours, env)[0])
        finally:
            for path, (size, mtime_ns) in sizes.items():
                os.truncate(path, size)
                os.utime(path, ns=(mtime_ns, mtime_ns))
    mb = sum(p.stat().st_size for p in files) / 1e6
    medians = {k: statistics.median(v) for k, v in results.items()}
    return {
        "sessions": len(files),
        "mb": mb,
        **medians,
        "peer": json.loads(peer_out),
        "ours": json.loads(ours_out),
    }


def main(argv: list[str] | None = None) -> int:
    # a SIGTERM must still run measure()'s clean-up (it takes the appended lines back out)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--sizes", type=int, nargs="+", default=[250, 500, 1000, 2000, 3000])
    args = parser.parse_args(argv)
    if not CCUSAGE.exists():
        print(f"ccusage is missing: {CCUSAGE} (see this script's docstring)", file=sys.stderr)
        return 2
    print(
        f"{'sessions':>8}{'MB':>6}{'ccusage':>10}{'cold':>9}{'warm':>8}{'grown':>8}"
        f"{'cold/cc':>9}{'warm/cc':>9}  (ms, medians)"
    )
    last: dict[str, object] = {}
    for size in args.sizes:
        row = measure(corpus(size), args.reps)
        cc = float(row["ccusage"])  # type: ignore[arg-type]
        print(
            f"{row['sessions']:>8}{row['mb']:>6.0f}{cc:>10.0f}{row['cold']:>9.0f}{row['warm']:>8.0f}{row['grown']:>8.0f}"
            f"{float(row['cold']) / cc:>9.2f}{float(row['warm']) / cc:>9.2f}",  # type: ignore[arg-type]
            flush=True,
        )
        last = row
    if last:
        peer, ours = last["peer"], last["ours"]
        assert isinstance(peer, dict) and isinstance(ours, dict)
        print(
            f"\ntotals on {last['sessions']} sessions: ccusage ${peer['totals']['totalCost']:.2f} "
            f"{peer['totals']['totalTokens']:,} tokens; pisession ${ours['totals']['totalCost']:.2f} "
            f"{ours['totals']['totalTokens']:,} tokens"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
