#!/usr/bin/env python3
"""``pisession dataset`` against DuckDB's JSON-to-Parquet copy, on the catalog benchmark's sessions.

    python benchmarks/dataset.py [--sessions 1000 3000] [--reps 3]
    python benchmarks/dataset.py --folder benchmarks/data/dir300 [--reps 3]   # one folder of sessions

For each size N (benchmarks/data/catalog-N, written by Pi through make_sessions.mjs on first use,
as ``run.py --catalog N`` does), alternating fresh processes, medians of ``--reps``:

- ``duckdb copy``: ``COPY (SELECT * FROM read_json_auto('DIR/*/*.jsonl', union_by_name = true,
  ignore_errors = true)) TO 'x.parquet'`` (one file, none of the tree's columns);
- ``full export``: ``write_parquet(OUT)`` into a new folder, the cold case: a new OUT (target, issue
  33: at most 1x the copy; it was 2x);
- ``full export, 1 process``: the same with ``workers=1``: its CPU time and peak RSS are the
  whole export's (worker processes are the forkserver's children, whose usage the parent's
  ``wait4`` does not see);
- ``re-export, 10 appended``: one user line appended (as Pi appends it) to 10 sessions, then
  ``write_parquet(OUT)`` again (target: at most 0.1x the full export); the appended files are
  restored afterwards (size and mtime);
- ``full export, CLI`` and ``re-export, CLI``: the same two as ``pisession dataset OUT
  --session-dir DIR`` (``python -m pisession.cli``), what a user runs: its start-up imports the
  command line too, and its exit skips the interpreter's last garbage collection;

each as the whole process's wall time, with the time the call itself took (in-process) and the
process's peak resident set size (``ru_maxrss``). Memory: the peak of a full export should follow
the largest session, not the folder: compare the rows of two sizes (the largest file is printed).
The machine's load moves these numbers: check ``cat /proc/loadavg`` and compare back-to-back runs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from run import append_as_pi, catalog_data  # noqa: E402

DUCKDB = """
import sys, time, duckdb
duckdb.sql("SET enable_progress_bar = false")
start = time.perf_counter()
duckdb.sql(
    "COPY (SELECT * FROM read_json_auto('" + sys.argv[1] + "', union_by_name = true, "
    "ignore_errors = true)) TO '" + sys.argv[2] + "'"
)
print(time.perf_counter() - start)
"""

OURS = """
import os, sys, time
from pisession.dataset import write_parquet
workers = int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2] else None
folder = sys.argv[3] if len(sys.argv) > 3 else None
start = time.perf_counter()
report = write_parquet(sys.argv[1], workers=workers, session_dir=folder)
print(time.perf_counter() - start, report.written, report.unchanged)
"""


def child(code: str, *args: str, env: dict[str, str] | None = None) -> tuple[float, float, float, float, str]:
    """(wall seconds, in-process seconds, CPU seconds (user + system, its worker processes
    included), peak RSS in MB of its largest process, rest of the output) of one fresh process."""
    with tempfile.TemporaryFile() as stdout, tempfile.TemporaryFile() as stderr:
        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-c", code, *args], stdout=stdout, stderr=stderr, env=env)
        _, status, usage = os.wait4(proc.pid, 0)  # files, not pipes: a full pipe would block the child
        wall = time.perf_counter() - start
        stdout.seek(0)
        stderr.seek(0)
        out, err = stdout.read().decode(), stderr.read().decode()
    if status != 0:
        raise RuntimeError(err)
    first, *rest = out.split()
    return wall, float(first), usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, " ".join(rest)


def command(args: list[str], env: dict[str, str]) -> tuple[float, float, float]:
    """(wall seconds, CPU seconds, peak RSS in MB) of one fresh process running ``args``."""
    start = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise RuntimeError(f"{args} exited with status {status}")
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def measure(
    count: int, reps: int, folder: Path | None = None
) -> dict[str, list[tuple[float, float, float, float]]]:
    """``folder``: one folder of sessions (``make_sessions.mjs --only dir300 --dir300 1000``)
    instead of the catalog of ``count`` sessions."""
    if folder is None:
        root = catalog_data(count)
        sessions = root / "sessions"
        files = sorted(sessions.glob("*/*.jsonl"))
        pattern, extra = f"{sessions}/*/*.jsonl", []
    else:
        root = sessions = folder
        files = sorted(folder.glob("*.jsonl"))
        pattern, extra = f"{folder}/*.jsonl", [str(folder)]
    total = sum(p.stat().st_size for p in files)
    largest = max(p.stat().st_size for p in files)
    print(
        f"\n{len(files)} sessions, {total / 1e6:.0f} MB, largest {largest / 1e6:.2f} MB ({root}); "
        f"load {Path('/proc/loadavg').read_text().split()[:3]}",
        flush=True,
    )
    env = {**os.environ, "PI_CODING_AGENT_DIR": str(root)}
    cli = [sys.executable, "-m", "pisession.cli", "dataset", "--session-dir", str(sessions)]
    env.pop("PI_CODING_AGENT_SESSION_DIR", None)
    rows: dict[str, list[tuple[float, float, float, float]]] = {
        "duckdb copy": [],
        "full export": [],
        "full export, 1 process": [],
        "re-export": [],
        "full export, CLI": [],
        "re-export, CLI": [],
    }
    appended = files[:: max(1, len(files) // 10)][:10]
    originals = {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in appended}
    with tempfile.TemporaryDirectory() as tmp:
        try:
            for rep in range(reps):
                target = Path(tmp) / "x.parquet"
                wall, inner, cpu, rss, _ = child(DUCKDB, pattern, str(target))
                rows["duckdb copy"].append((wall, inner, cpu, rss))
                target.unlink()
                out = Path(tmp) / f"out-{rep}"
                wall, inner, cpu, rss, done = child(OURS, str(out), "", *extra, env=env)
                rows["full export"].append((wall, inner, cpu, rss))
                assert done.split()[0] == str(len(files)), done
                # all in one process: its CPU time and peak RSS are the whole export's (worker
                # processes are the forkserver's children: their rusage does not reach here)
                alone = Path(tmp) / f"alone-{rep}"
                wall, inner, cpu, rss, done = child(OURS, str(alone), "1", *extra, env=env)
                rows["full export, 1 process"].append((wall, inner, cpu, rss))
                shutil.rmtree(alone)
                for path in appended:
                    append_as_pi(path, f"dataset benchmark follow-up {rep}")
                time.sleep(0.1)  # past the racily-clean window of the appended files
                wall, inner, cpu, rss, done = child(OURS, str(out), "", *extra, env=env)
                rows["re-export"].append((wall, inner, cpu, rss))
                assert done.split()[0] == str(len(appended)), done
                shutil.rmtree(out)
                # the command line: the same full export, then appends, then the re-export
                for name in ("full export, CLI", "re-export, CLI"):
                    if name.startswith("re-export"):
                        for path in appended:
                            append_as_pi(path, f"dataset benchmark CLI follow-up {rep}")
                        time.sleep(0.1)
                    wall, cpu, rss = command([*cli, str(out)], env)
                    rows[name].append((wall, float("nan"), cpu, rss))
                shutil.rmtree(out)
        finally:
            for path, (size, mtime_ns) in originals.items():
                os.truncate(path, size)
                os.utime(path, ns=(mtime_ns, mtime_ns))
    return rows


def report(count: int, rows: dict[str, list[tuple[float, float, float, float]]]) -> dict[str, float]:
    medians = {
        name: tuple(statistics.median(s[i] for s in samples) for i in range(4))
        for name, samples in rows.items()
    }
    copy, full = medians["duckdb copy"][0], medians["full export"][0]
    copy_cpu, full_cpu = medians["duckdb copy"][2], medians["full export, 1 process"][2]
    cli_full = medians["full export, CLI"][0]
    targets = {
        "full export": (full / copy, 1.0, "x duckdb copy"),
        "re-export": (medians["re-export"][0] / full, 0.1, "x full export"),
        "full export, CLI": (cli_full / copy, 1.0, "x duckdb copy"),
        "re-export, CLI": (medians["re-export, CLI"][0] / cli_full, 0.1, "x full export, CLI"),
    }
    print(f"{'row':<30}{'process s':>10}{'call s':>9}{'CPU s':>8}{'peak RSS MB':>13}{'ratio':>9}  target")
    for name, (wall, inner, cpu, rss) in medians.items():
        ratio, target, unit = targets.get(name, (None, None, ""))
        extra = (
            ""
            if ratio is None or target is None
            else f"{ratio:>9.3f}  <= {target} {unit} {'ok' if ratio <= target else 'MISS'}"
        )
        label = name + (", 10 appended" if name.startswith("re-export") else "")
        print(f"{label:<30}{wall:>10.2f}{inner:>9.2f}{cpu:>8.2f}{rss:>13.0f}{extra}")
    print(
        f"CPU time, full export in 1 process / duckdb copy: {full_cpu / copy_cpu:.3f} (load moves it least)"
    )
    return {
        f"{name} {field}": medians[name][i]
        for name in medians
        for i, field in enumerate(("wall", "call", "cpu", "rss"))
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sessions", type=int, nargs="+", default=[1000, 3000])
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--json", metavar="OUT", help="also write the medians as JSON")
    parser.add_argument(
        "--folder",
        type=Path,
        nargs="+",
        default=[],
        help="one folder of sessions each (make_sessions.mjs --only dir300 --dir300 1000), not --sessions",
    )
    args = parser.parse_args(argv)
    results: dict[str, dict[str, float]] = {}
    for folder in args.folder:
        results[str(folder)] = report(0, measure(0, args.reps, folder))
    for count in [] if args.folder else args.sessions:
        results[str(count)] = report(count, measure(count, args.reps))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
