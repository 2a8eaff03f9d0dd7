#!/usr/bin/env python3
"""pisession against the reference Pi SessionManager, side by side, on the same files.

    python benchmarks/run.py [--reps 7] [--metrics open,context_first,...] [--json OUT]
    python benchmarks/run.py --startup [--reps 21]

Needs node and the reference installed by ../shared/pi-oracle/setup.sh. Sessions are written
by the reference itself (benchmarks/make_sessions.mjs) into benchmarks/data/ on first use.
Each metric alternates one Pi sample (a fresh `node pi_bench.mjs --reps 1` process) and one
pisession sample, --reps times, and reports medians and the ratio pisession/Pi.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
DATA = HERE / "data"
sys.path.insert(0, str(HERE.parent))

import pisession  # noqa: E402
from pisession import SessionManager  # noqa: E402

# metric -> target ratio (pisession / Pi), from the performance issues (open and append: issue 14)
TARGETS = {
    "open": 0.4,
    "context_first": 1.0,
    "context_repeat": 0.1,
    "get_tree": 1.0,
    "get_branch": None,
    "append": 1.0,
    "append_batch": 1.0,
    "list": 1.0,
    "open_memory": None,
    "open_memory_200k": None,
    "plan_compaction": 1.0,
    # low-memory mode (SessionManager.open(path, low_memory=True)) against the same Pi rows
    "open_low_memory": None,
    "context_first_low": 1.0,
    "get_tree_low": 1.0,
    "open_memory_low": None,
    "open_memory_200k_low": None,
}
# the memory rows' targets are in multiples of the file's size (pisession's peak), not ratios to Pi
MEMORY_TARGETS = dict.fromkeys(
    ("open_memory", "open_memory_200k", "open_memory_low", "open_memory_200k_low"), 1.0
)
# Pi has one append path and one open: the low-memory rows compare with its only one
PI_METRIC = {
    "append_batch": "append",
    "open_memory_200k": "open_memory",
    "open_low_memory": "open",
    "context_first_low": "context_first",
    "get_tree_low": "get_tree",
    "open_memory_low": "open_memory",
    "open_memory_200k_low": "open_memory",
}
ON_200K = ("open_memory_200k", "open_memory_200k_low")
DEFAULT_ROWS = [m for m in TARGETS if m not in ON_200K and not m.endswith(("_low", "_low_memory"))]
SCALE_200K = DATA / "scale-200000.jsonl"


def ensure_data() -> None:
    if (DATA / "large.jsonl").exists() and (DATA / "dir300").is_dir():
        return
    subprocess.run(["node", str(HERE / "make_sessions.mjs"), "--out", str(DATA)], check=True)


def pi_sample(metric: str, extra: list[str]) -> dict:
    out = subprocess.run(
        ["node", str(HERE / "pi_bench.mjs"), "--data", str(DATA), "--metric", metric, "--reps", "1", *extra],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    metrics = json.loads(out)["metrics"]
    return metrics["scale"] if metric.startswith("scale_") else metrics[metric]


def timed(fn: Callable[[], object]) -> float:
    gc.collect()
    start = time.perf_counter()
    fn()
    return (time.perf_counter() - start) * 1000


def user(i: int) -> dict:
    return {"role": "user", "content": f"message {i}: " + "lorem ipsum " * 20, "timestamp": 1733234400000 + i}


def assistant(i: int) -> dict:
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": f"reply {i}: " + "dolor sit amet " * 20}],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "usage": {
            "input": 1200,
            "output": 350,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": 1550,
            "cost": {"input": 0.0036, "output": 0.00525, "cacheRead": 0, "cacheWrite": 0, "total": 0.00885},
        },
        "stopReason": "stop",
        "timestamp": 1733234400000 + i,
    }


def py_sample(metric: str, large: Path, branch_ids: list[str], list_cwd: str) -> float:
    """One pisession sample of ``metric`` in milliseconds (per call for per-call metrics)."""
    if metric == "open":
        return timed(lambda: SessionManager.open(large))
    if metric == "open_low_memory":
        return timed(lambda: SessionManager.open(large, low_memory=True))
    if metric == "context_first_low":
        manager = SessionManager.open(large, low_memory=True)
        return timed(manager.build_session_context)
    if metric == "get_tree_low":
        manager = SessionManager.open(large, low_memory=True)
        return timed(manager.get_tree)
    if metric == "context_first":
        manager = SessionManager.open(large)
        return timed(manager.build_session_context)
    if metric == "plan_compaction":
        manager = SessionManager.open(large)
        return timed(manager.plan_compaction)  # a fresh manager: the projection is built, not cached
    if metric == "context_repeat":
        manager = SessionManager.open(large)
        manager.build_session_context()
        return timed(manager.build_session_context)
    if metric == "get_tree":
        manager = SessionManager.open(large)
        return timed(manager.get_tree)  # the first call on a fresh manager builds the whole tree
    if metric == "get_branch":
        manager = SessionManager.open(large)
        return timed(lambda: [manager.get_branch(i) for i in branch_ids]) / len(branch_ids)
    if metric in ("append", "append_batch"):
        with tempfile.TemporaryDirectory() as tmp:
            copy = Path(tmp) / large.name
            shutil.copyfile(large, copy)
            manager = SessionManager.open(copy)
            messages = [user(i) if i % 2 == 0 else assistant(i) for i in range(3000)]

            def one_by_one() -> None:
                for message in messages:
                    manager.append_message(message)

            def batched() -> None:
                with manager.batch():
                    for message in messages:
                        manager.append_message(message)

            return timed(one_by_one if metric == "append" else batched) / len(messages)
    if metric == "list":
        return timed(lambda: SessionManager.list(list_cwd, str(DATA / "dir300")))
    if metric in MEMORY_TARGETS:
        return open_memory(SCALE_200K if metric in ON_200K else large, low_memory=metric.endswith("_low"))
    raise ValueError(metric)


# Peak resident memory of opening, as pi_bench.mjs measures Pi's (peak RSS minus the RSS before
# the open, in a fresh process with the library imported): VmHWM after the open minus VmRSS
# before it, the peak reset first (clear_refs 5) so that import's own peak does not count. A
# two-line session is opened first: modules imported on first use are then loaded before the
# measurement, as Node loads all of Pi's when it imports the session manager.
OPEN_MEMORY_CODE = """
import gc, os, sys, tempfile
import pisession

with tempfile.TemporaryDirectory() as tmp:
    warm = os.path.join(tmp, "warm.jsonl")
    with open(warm, "w") as f:
        f.write('{"type":"session","version":3,"id":"w","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}\\n')
        f.write('{"type":"message","id":"a1b2c3d4","parentId":null,"timestamp":"2026-01-01T00:00:01.000Z",'
                '"message":{"role":"user","content":"hi","timestamp":1}}\\n')
    pisession.SessionManager.open(warm).build_session_context()

def status(key):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    raise SystemExit("no " + key)

gc.collect()
try:
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
except OSError:
    pass
before = status("VmRSS")
manager = pisession.SessionManager.open(sys.argv[1], low_memory=sys.argv[2] == "low")
print(status("VmHWM") - before, status("VmRSS") - before)
"""


def open_memory(path: Path, *, low_memory: bool = False) -> float:
    mode = "low" if low_memory else "default"
    out = subprocess.run(
        [sys.executable, "-c", OPEN_MEMORY_CODE, str(path), mode], check=True, capture_output=True, text=True
    ).stdout
    return float(out.split()[0])


SCALE_PARTS = ("open", "context_first", "get_tree", "list")


def scale_table(reps: int) -> None:
    """Each cost at 2,000, 20,000 and 200,000 entries, both implementations."""
    files = sorted(DATA.glob("scale-*.jsonl"), key=lambda p: int(p.stem.split("-")[1]))
    print(f"\n{'entries':>8} {'MB':>6} " + " ".join(f"{p + ' py/pi (ms)':>26}" for p in SCALE_PARTS))
    for path in files:
        cells = []
        for part in SCALE_PARTS:
            ours, theirs = [], []
            for _ in range(max(1, reps // 2)):
                out = pi_sample(f"scale_{part}", ["--scale", str(path)])
                theirs.append(out[path.stem][part]["median_ms"])
                ours.append(scale_sample(part, path))
            a, b = statistics.median(ours), statistics.median(theirs)
            cells.append(f"{a:>10.1f} / {b:>8.1f} ({a / b:4.2f})")
        entries = path.stem.split("-")[1]
        print(
            f"{entries:>8} {path.stat().st_size / 1e6:>6.0f} " + " ".join(f"{c:>26}" for c in cells),
            flush=True,
        )


def scale_sample(part: str, path: Path) -> float:
    if part == "open":
        return timed(lambda: SessionManager.open(path))
    manager = SessionManager.open(path)
    if part == "context_first":
        return timed(manager.build_session_context)
    if part == "get_tree":
        return timed(manager.get_tree)
    with tempfile.TemporaryDirectory() as tmp:
        os.symlink(path, Path(tmp) / path.name)
        header = json.loads(path.open(encoding="utf-8").readline())
        return timed(lambda: SessionManager.list(header["cwd"], tmp))


def pi_value(metric: str, sample: dict) -> float:
    if metric in MEMORY_TARGETS:
        return float(sample["peak_rss_delta_bytes"])
    return float(sample["median_ms"])


# --------------------------------------------------------------------------- the catalog at scale

RARE_WORD = "zanzibar"  # only in the messages appended before the warm rows
COMMON_WORD = "invoice"  # in the generator's vocabulary: thousands of messages


def catalog_data(count: int) -> Path:
    root = DATA / f"catalog-{count}"
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
                str(count),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
        )
    return root


def subset_agent_dir(root: Path, files: list[Path], where: Path) -> Path:
    """An agent dir whose sessions/ holds symbolic links to ``files`` (same project folders)."""
    for path in files:
        folder = where / "sessions" / path.parent.name
        folder.mkdir(parents=True, exist_ok=True)
        (folder / path.name).symlink_to(path)
    return where


def pi_list_all(agent_dir: Path, reps: int) -> float:
    out = subprocess.run(
        [
            "node",
            str(HERE / "pi_bench.mjs"),
            "--metric",
            "list_all",
            "--agent-dir",
            str(agent_dir),
            "--reps",
            str(reps),
            "--warmup",
            "0",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return float(json.loads(out)["metrics"]["list_all"]["median_ms"])


def append_as_pi(path: Path, text: str) -> None:
    """One user message line as Pi's appendMessage writes it (no lock file left behind)."""
    with path.open("rb") as handle:
        handle.seek(max(0, path.stat().st_size - 65536))
        last = json.loads(handle.read().rstrip(b"\n").rsplit(b"\n", 1)[-1])
    now = time.time()
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(now)) + f".{int(now * 1000) % 1000:03d}Z"
    entry = {
        "type": "message",
        "id": os.urandom(4).hex(),
        "parentId": last.get("id"),
        "timestamp": stamp,
        "message": {"role": "user", "content": text, "timestamp": int(now * 1000)},
    }
    with path.open("ab") as handle:
        handle.write(json.dumps(entry, ensure_ascii=False, separators=(",", ":")).encode() + b"\n")


def catalog_rows(agent_dir: Path, reps: int, appended: list[Path] | None) -> dict[str, float]:
    """Cold build, warm list after appending to ``appended``, and search, for one agent dir."""
    from pisession.catalog import Catalog

    os.environ["PI_CODING_AGENT_DIR"] = str(agent_dir)
    out: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        database = Path(tmp) / "catalog.sqlite3"
        with Catalog(database) as catalog:
            out["cold"] = timed(catalog.list_all)
            out["index"] = timed(lambda: catalog.search(COMMON_WORD, all=True))  # builds the search index
            out["db_mb"] = database.stat().st_size / 1e6
        out["scan"] = statistics.median(timed(SessionManager.list_all) for _ in range(max(1, reps // 3)))
        warm, warm_text, cli = [], [], []
        for rep in range(reps):
            for path in appended or []:
                append_as_pi(path, f"{RARE_WORD} follow-up {rep}")
            with Catalog(database) as catalog:
                warm.append(timed(lambda: catalog.list_all(text=False)))
                warm_text.append(timed(catalog.list_all))
            env = {**os.environ, "PISESSION_CATALOG": str(database)}
            start = time.perf_counter()
            subprocess.run(
                [str(Path(sys.executable).parent / "pisession"), "ls", "--all"],
                check=True,
                stdout=subprocess.DEVNULL,
                env=env,
            )
            cli.append((time.perf_counter() - start) * 1000)
        out["warm"] = statistics.median(warm)
        out["warm_text"] = statistics.median(warm_text)
        out["cli_ls_all"] = statistics.median(cli)
        with Catalog(database) as catalog:
            catalog.list_all(text=False)
            for word in (RARE_WORD, COMMON_WORD):
                out[f"search_{word}"] = statistics.median(
                    timed(lambda w=word: catalog.search(w, all=True)) for _ in range(reps)
                )
                out[f"hits_{word}"] = len(catalog.search(word, all=True, limit=None))
    return out


def catalog_table(count: int, reps: int) -> None:
    """The catalog against Pi's listAll over ``count`` generated sessions, and how both grow."""
    root = catalog_data(count)
    files = sorted((root / "sessions").glob("*/*.jsonl"))
    total = sum(p.stat().st_size for p in files)
    sizes = {}
    appended = files[:: max(1, len(files) // 10)][:10]
    originals = {p: (p.stat().st_size, p.stat().st_mtime_ns) for p in appended}
    print(f"\ncatalog: {len(files)} sessions, {total / 1e6:.0f} MB ({root})", flush=True)
    try:
        pi = pi_list_all(root, max(1, reps // 3))
        ours = catalog_rows(root, reps, appended)
    finally:
        for path, (size, mtime_ns) in originals.items():
            os.truncate(path, size)
            os.utime(path, ns=(mtime_ns, mtime_ns))
    rows = [
        ("Pi listAll", pi, None),
        ("pisession list_all (scan)", ours["scan"], None),
        ("catalog cold build (list rows)", ours["cold"], None),
        ("first search (indexes every message)", ours["index"], None),
        ("catalog warm list_all, 10 appended (no text)", ours["warm"], 0.05),
        ("catalog warm list_all, 10 appended (with text)", ours["warm_text"], None),
        ("pisession ls --all, 10 appended (process)", ours["cli_ls_all"], 0.05),
        (
            f"search rare word ({ours[f'hits_{RARE_WORD}']:.0f} hits, top 50)",
            ours[f"search_{RARE_WORD}"],
            None,
        ),
        (
            f"search common word ({ours[f'hits_{COMMON_WORD}']:.0f} hits, top 50)",
            ours[f"search_{COMMON_WORD}"],
            None,
        ),
    ]
    print(f"{'row':<52}{'ms':>11}{'x Pi listAll':>14}{'target':>8}")
    for label, value, target in rows:
        ratio = value / pi
        mark = "" if target is None else ("ok" if ratio <= target else "MISS")
        print(
            f"{label:<52}{value:>11.1f}{ratio:>14.3f}{'' if target is None else target:>8} {mark}", flush=True
        )
    print(f"catalog database: {ours['db_mb']:.0f} MB for {total / 1e6:.0f} MB of sessions")
    print(
        f"\n{'sessions':>8}{'MB':>7}{'Pi listAll':>12}{'scan':>9}{'cold':>9}{'index':>9}"
        f"{'warm':>8}{'search':>8}  (ms)"
    )
    for share in (8, 4, 2, 1):
        subset = files[: max(1, len(files) // share)]
        with tempfile.TemporaryDirectory() as tmp:
            agent = subset_agent_dir(root, subset, Path(tmp))
            pi_ms = pi_list_all(agent, 1)
            row = catalog_rows(agent, 1, None) if share != 1 else ours
        sizes[len(subset)] = row
        mb = sum(p.stat().st_size for p in subset) / 1e6
        print(
            f"{len(subset):>8}{mb:>7.0f}{pi_ms:>12.0f}{row['scan']:>9.0f}{row['cold']:>9.0f}{row['index']:>9.0f}"
            f"{row['warm']:>8.1f}"
            f"{row[f'search_{COMMON_WORD}']:>8.1f}",
            flush=True,
        )


# --------------------------------------------------------------------------- start-up

STARTUP_TARGETS = {"import pisession": None, "pisession tree": 3.0}


def startup_table(reps: int) -> None:
    """Wall time of fresh processes, each as a ratio to ``python -c pass`` timed in the same run
    (alternating, medians): the machine's load moves all three alike. Bytecode is written and
    used as in an installed package (the first, untimed round writes it)."""
    from pisession.cli.demo import write_demo_session

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    script = Path(sys.executable).with_name("pisession")  # the console script, as users run it
    with tempfile.TemporaryDirectory() as tmp:
        demo = write_demo_session(tmp)
        tree = [str(script)] if script.exists() else [sys.executable, "-m", "pisession.cli"]
        commands = {
            "python -c pass": [sys.executable, "-c", "pass"],
            "import pisession": [sys.executable, "-c", "import pisession"],
            "pisession tree": [*tree, "tree", demo],
        }
        times: dict[str, list[float]] = {name: [] for name in commands}
        for round_ in range(reps + 1):
            for name, command in commands.items():
                start = time.perf_counter()
                subprocess.run(command, env=env, check=True, stdout=subprocess.DEVNULL)
                if round_:
                    times[name].append((time.perf_counter() - start) * 1000)
    base = statistics.median(times["python -c pass"])
    print(f"{'start-up':<18}{'median':>10}{'x python -c pass':>18}{'target':>8}")
    for name, samples in times.items():
        a = statistics.median(samples)
        target = STARTUP_TARGETS.get(name)
        mark = "" if target is None else ("ok" if a / base <= target else "MISS")
        print(f"{name:<18}{a:>7.1f} ms{a / base:>18.2f}{'' if target is None else target:>8} {mark}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--metrics", default=",".join(DEFAULT_ROWS))
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument(
        "--scale", action="store_true", help="also show how costs grow from 2,000 to 200,000 entries"
    )
    parser.add_argument(
        "--catalog",
        type=int,
        metavar="N",
        help="only the session catalog rows, over N generated sessions (3000: about 1 GB)",
    )
    parser.add_argument(
        "--startup",
        action="store_true",
        help="only the start-up rows: `import pisession` and `pisession tree` against `python -c pass`",
    )
    args = parser.parse_args(argv)
    if args.startup:
        startup_table(max(args.reps, 15))
        return 0
    if args.catalog:
        catalog_table(args.catalog, args.reps)
        return 0
    ensure_data()
    large = DATA / "large.jsonl"
    ids = [json.loads(line).get("id") for line in large.open(encoding="utf-8") if line.strip()][1:]
    rng = random.Random(1)
    branch_ids = [rng.choice(ids) for _ in range(1000)]
    ids_file = DATA / "branch_ids.txt"
    ids_file.write_text("\n".join(branch_ids) + "\n")
    counts: dict[str, int] = {}
    for line in (DATA / "dir300").glob("*.jsonl"):
        cwd = json.loads(line.open(encoding="utf-8").readline()).get("cwd")
        counts[cwd] = counts.get(cwd, 0) + 1
    list_cwd = max(counts, key=lambda c: counts[c])
    extra = ["--branch-ids", str(ids_file), "--list-cwd", list_cwd]

    results = {}
    print(f"{'metric':<21}{'pisession':>14}{'Pi 1.6.0':>14}{'ratio':>8}{'target':>8}")
    for metric in args.metrics.split(","):
        ours, theirs = [], []
        pi_extra = [*extra, "--large", str(SCALE_200K)] if metric in ON_200K else extra
        for _ in range(args.reps):
            theirs.append(pi_value(metric, pi_sample(PI_METRIC.get(metric, metric), pi_extra)))
            ours.append(py_sample(metric, large, branch_ids, list_cwd))
        a, b = statistics.median(ours), statistics.median(theirs)
        ratio = a / b if b else float("inf")
        target = TARGETS.get(metric)
        results[metric] = {
            "pisession": ours,
            "pi": theirs,
            "median_pisession": a,
            "median_pi": b,
            "ratio": ratio,
            "target": target,
        }
        unit = "MB" if metric in MEMORY_TARGETS else "ms"
        scale = 1 / 1e6 if metric in MEMORY_TARGETS else 1
        mark = "" if target is None else ("ok" if ratio <= target else "MISS")
        if metric in MEMORY_TARGETS:
            size = (SCALE_200K if metric in ON_200K else large).stat().st_size
            times = a / size
            results[metric]["file_bytes"] = size
            results[metric]["x_file"] = times
            mark = f"{times:.2f} x file ({'ok' if times <= MEMORY_TARGETS[metric] else 'MISS'} <= 1.0)"
        print(
            f"{metric:<21}{a * scale:>11.4f} {unit}{b * scale:>11.4f} {unit}{ratio:>8.3f}"
            f"{'' if target is None else target:>8} {mark}",
            flush=True,
        )
    if args.scale:
        scale_table(args.reps)
    size = large.stat().st_size
    if args.json:
        meta = {
            "python": platform.python_version(),
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
            "pisession": pisession.__version__,
            "file_bytes": size,
        }
        args.json.write_text(json.dumps({"meta": meta, "results": results}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
