#!/usr/bin/env python3
"""The first call, cold: ``pisession usage daily --json`` beside ccusage (``ccusage pi daily
--json --offline``) and ``pisession ls --all --json`` beside Pi's ``SessionManager.listAll``
(``pi_bench.mjs --metric list_all``), whole processes in alternating pairs, a new catalog for
every pisession run.

    node benchmarks/make_sessions.mjs --only dir300 --dir300 1000 --out benchmarks/data/cold
    python benchmarks/cold_bench.py [--reps 5] [--only usage,ls] [--ccusage PATH]

The corpora (made on first use from ``benchmarks/data/cold/dir300``, hard links or copies):

- ``larger``: the 1,000 sessions (about 99 MB, four cwds) in one project folder of an agent
  dir, ``data/cold/agent-larger/sessions/--home-dev-projects--/``;
- ``small``: the same 1,000 sessions, each cut after the last whole line within its first 57 %
  (about 57 MB): Pi-written lines, fewer of them.

ccusage from npm (not into the repository), pinned:

    mkdir -p /tmp/ccusage && cd /tmp/ccusage && npm install ccusage@20.0.24 @ccusage/ccusage-linux-x64@20.0.24

Prints, per corpus and row, the medians of wall and CPU time (user + system of the process and
its children: the worker processes count) for both sides, their ratio, and the load average
before and after (a 2-core machine shared with other work moves wall times by 2× or more; CPU
time is the steadier figure, wall time the one users see).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data" / "cold"
PROJECT = "--home-dev-projects--"


def corpora() -> dict[str, Path]:
    source = DATA / "dir300"
    if not source.is_dir():
        subprocess.run(
            [
                "node",
                str(HERE / "make_sessions.mjs"),
                "--out",
                str(DATA),
                "--only",
                "dir300",
                "--dir300",
                "1000",
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    files = sorted(source.glob("*.jsonl"))
    out = {}
    for name, share in (("small", 0.57), ("larger", 1.0)):
        folder = DATA / f"agent-{name}" / "sessions" / PROJECT
        if not folder.is_dir():
            folder.mkdir(parents=True)
            for path in files:
                target = folder / path.name
                if share == 1.0:
                    try:
                        os.link(path, target)
                    except OSError:
                        shutil.copy2(path, target)
                else:
                    data = path.read_bytes()
                    cut = data.rfind(b"\n", 0, int(len(data) * share)) + 1
                    target.write_bytes(data[: cut or len(data)])
        out[name] = folder.parent.parent
    return out


def run(argv: list[str], env: dict[str, str]) -> tuple[float, float, bytes]:
    """Wall and CPU seconds (with children) of one whole process, and its stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    out = subprocess.run(argv, env=env, capture_output=True, check=True).stdout
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, out


def pisession_argv() -> list[str]:
    script = shutil.which("pisession", path=os.path.dirname(sys.executable))
    return [script] if script else [sys.executable, "-m", "pisession.cli"]


def pairs(
    ours: list[str], peer: list[str], env: dict[str, str], catalog: Path, reps: int
) -> dict[str, float]:
    wall: dict[str, list[float]] = {"ours": [], "peer": []}
    cpu: dict[str, list[float]] = {"ours": [], "peer": []}
    for _ in range(reps):
        for side, argv in (("peer", peer), ("ours", ours)):
            if side == "ours":
                for suffix in ("", "-wal", "-shm"):
                    Path(str(catalog) + suffix).unlink(missing_ok=True)
            w, c, _ = run(argv, env)
            wall[side].append(w)
            cpu[side].append(c)
    ratios = [o / p for o, p in zip(wall["ours"], wall["peer"], strict=True)]
    return {
        "ours_wall": statistics.median(wall["ours"]),
        "peer_wall": statistics.median(wall["peer"]),
        "ours_cpu": statistics.median(cpu["ours"]),
        "peer_cpu": statistics.median(cpu["peer"]),
        "ratio": statistics.median(ratios),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--only", default="usage,ls")
    parser.add_argument("--corpora", default="small,larger")
    parser.add_argument("--ccusage", default="/tmp/ccusage/node_modules/.bin/ccusage")
    args = parser.parse_args(argv)
    rows = set(args.only.split(","))
    print(f"load average before: {os.getloadavg()}", flush=True)
    print(f"{'corpus':<8}{'row':<7}{'ours s':>8}{'peer s':>8}{'ours cpu':>10}{'peer cpu':>10}{'ratio':>8}")
    for name, agent in corpora().items():
        if name not in args.corpora.split(","):
            continue
        with tempfile.TemporaryDirectory() as tmp:
            catalog = Path(tmp) / "catalog.sqlite3"
            env = {
                **os.environ,
                "PI_CODING_AGENT_DIR": str(agent),
                "PISESSION_CATALOG": str(catalog),
                "TZ": "UTC",
            }
            env.pop("PI_CODING_AGENT_SESSION_DIR", None)
            env.pop("PISESSION_WORKERS", None)
            measured = []
            if "usage" in rows:
                peer = [
                    args.ccusage,
                    "pi",
                    "daily",
                    "--json",
                    "--offline",
                    "--pi-path",
                    str(agent / "sessions"),
                ]
                ours = [*pisession_argv(), "usage", "daily", "--json", "--timezone", "UTC"]
                measured.append(("usage", pairs(ours, peer, env, catalog, args.reps)))
            if "ls" in rows:
                peer = [
                    "node",
                    str(HERE / "pi_bench.mjs"),
                    "--metric",
                    "list_all",
                    "--reps",
                    "1",
                    "--warmup",
                    "0",
                    "--agent-dir",
                    str(agent),
                ]
                ours = [*pisession_argv(), "ls", "--all", "--json"]
                measured.append(("ls", pairs(ours, peer, env, catalog, args.reps)))
            for row, m in measured:
                print(
                    f"{name:<8}{row:<7}{m['ours_wall']:>8.2f}{m['peer_wall']:>8.2f}{m['ours_cpu']:>10.2f}"
                    f"{m['peer_cpu']:>10.2f}{m['ratio']:>8.2f}",
                    flush=True,
                )
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
