"""Listers and searchers killed at random while a writer appends and a mutator deletes, renames,
replaces, truncates and rewrites session files in place: the catalog ends equal to a fresh scan and
to Pi's ``listAll``, and SQLite finds nothing wrong with the database."""

from __future__ import annotations

import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from conftest import ORACLE, needs_oracle

from pisession import to_wire
from pisession._discovery import list_all_sessions
from pisession.catalog import Catalog
from tests.test_catalog import REPO, header, line, msg

WORKER = """
import sys
from pisession.catalog import Catalog
database, folder, job = sys.argv[1:4]
while True:
    with Catalog(database, timeout=2) as catalog:
        if job == "list":
            catalog.list_all(folder)
        else:
            catalog.search("alpha", all=True, session_dir=folder, limit=None)
"""

WRITER = """
import json, os, random, sys, time
folder, count = sys.argv[1], int(sys.argv[2])
rng = random.Random(7)
for n in range(count):
    names = sorted(os.listdir(folder))
    if names:
        path = os.path.join(folder, rng.choice(names))
        message = {"role": "user", "content": f"alpha appended {n}", "timestamp": 1800000000000 + n}
        entry = {"type": "message", "id": f"w{n}", "parentId": None, "message": message}
        try:
            fd = os.open(path, os.O_WRONLY | os.O_APPEND)
        except OSError:
            continue
        os.write(fd, (json.dumps(entry) + "\\n").encode())
        os.close(fd)
    time.sleep(0.02)
"""


def session_bytes(sid: str, stamp: int) -> bytes:
    return line(header(sid)) + b"".join(
        line(msg(f"{sid}-{n}", "user", f"alpha beta {sid} message {n} " + "pad " * 60, stamp + n))
        for n in range(4)
    )


def age_all(folder: Path) -> None:
    """Old mtimes, so a reader trusts them (not written during its read) and must look further."""
    for path in folder.iterdir():
        try:
            stamp = int((time.time() - 86400) * 1e9) + hash(path.name) % 10**9
            os.utime(path, ns=(stamp, stamp))
        except FileNotFoundError:
            pass


def mutate(folder: Path, rng: random.Random, step: int) -> None:
    names = sorted(p.name for p in folder.iterdir())
    operation = rng.choice(["delete", "rename", "replace", "truncate", "rewrite", "rewrite", "create"])
    if not names or operation == "create":
        (folder / f"n{step}.jsonl").write_bytes(session_bytes(f"n{step}", 1700000000000 + step * 10))
        return
    path = folder / rng.choice(names)
    try:
        if operation == "delete" and len(names) > 3:
            path.unlink()
        elif operation == "rename":
            path.rename(folder / f"r{step}.jsonl")
        elif operation == "replace":
            fresh = folder / f".tmp{step}"
            fresh.write_bytes(session_bytes(f"p{step}", 1710000000000 + step * 10))
            fresh.rename(path)
        elif operation == "truncate":
            size = path.stat().st_size
            os.truncate(path, rng.randrange(size // 2, size))
        else:
            data = path.read_bytes()
            at = data.find(b"alpha beta", 600)
            if at >= 0:
                before = path.stat()
                with open(path, "r+b") as handle:
                    handle.seek(at)
                    handle.write(b"gamma beta")  # same size, in the middle
                    if rng.random() < 0.5:
                        handle.seek(0, os.SEEK_END)
                        handle.write(line(msg(f"x{step}", "user", f"delta {step}", 1720000000000 + step)))
                        return
                # as a redaction script that keeps the file's times does
                os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    except FileNotFoundError:
        pass


def start(database: Path, folder: Path, job: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-c", WORKER, str(database), str(folder), job],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def pi_list_all(folder: Path) -> Any:
    result = subprocess.run(
        ["node", str(ORACLE), "static", "listAll", json.dumps([str(folder)])],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return json.loads(result.stdout)["value"]


@needs_oracle
def test_killed_readers_and_a_busy_folder_leave_a_catalog_equal_to_pi(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    database = tmp_path / "catalog.sqlite3"
    for n in range(8):
        (folder / f"s{n}.jsonl").write_bytes(session_bytes(f"s{n}", 1690000000000 + n * 10))
    rng = random.Random(2026)
    writer = subprocess.Popen([sys.executable, "-c", WRITER, str(folder), "150"], cwd=REPO)
    workers = [start(database, folder, job) for job in ("list", "search", "list")]
    kills = 0
    try:
        for step in range(40):
            age_all(folder)
            time.sleep(rng.uniform(0.05, 0.15))  # the readers take the old mtimes in
            mutate(folder, rng, step)
            if step % 4 == 3:
                victim = rng.randrange(len(workers))
                workers[victim].send_signal(signal.SIGKILL)
                workers[victim].wait()
                kills += 1
                workers[victim] = start(database, folder, rng.choice(["list", "search"]))
    finally:
        for worker in workers:
            worker.send_signal(signal.SIGKILL)
            worker.wait()
        writer.kill()
        writer.wait()
    assert kills == 10
    scanned = list_all_sessions(str(folder))
    with Catalog(database) as catalog:
        listed = catalog.list_all(str(folder))
        assert catalog.last_error is None
        found = catalog.search("alpha", all=True, session_dir=str(folder), limit=None)
        gone = catalog.search("gamma", all=True, session_dir=str(folder), limit=None)
        added = catalog.search("delta", all=True, session_dir=str(folder), limit=None)
    assert listed == scanned
    assert [to_wire(info) for info in listed] == pi_list_all(folder)
    with Catalog(":memory:") as fresh:
        assert found == fresh.search("alpha", all=True, session_dir=str(folder), limit=None)
        assert gone == fresh.search("gamma", all=True, session_dir=str(folder), limit=None)
        assert added == fresh.search("delta", all=True, session_dir=str(folder), limit=None)
    with sqlite3.connect(database) as db:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        db.execute("INSERT INTO fts(fts, rank) VALUES ('integrity-check', 1)")
    db.close()
