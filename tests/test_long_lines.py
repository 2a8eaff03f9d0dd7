"""What one line may cost (issue 22, points 8 and 10): a line longer than MAX_LINE_BYTES, or a
long one that cannot begin a JSON text (a header followed by a run of NUL bytes), is read past
in chunks and skipped like a malformed line, never held whole; byte offsets stay exact; the
validate report says what was skipped. Every read command, listing and search (the catalog)
included, completes under a memory cap, or says it ran out of memory: never a MemoryError
traceback or a crash."""

from __future__ import annotations

import io
import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from pisession import SessionManager, read_session
from pisession._load import MAX_LINE_BYTES, SkippedLine, iter_file_lines, iter_line_lists

HEADER = {"type": "session", "version": 3, "id": "s1", "timestamp": "2024-12-03T14:00:00.000Z", "cwd": "/p"}
USER = {
    "type": "message",
    "id": "a1",
    "parentId": None,
    "timestamp": "2024-12-03T14:00:01.000Z",
    "message": {"role": "user", "content": "one", "timestamp": 1},
}
START = (json.dumps(HEADER) + "\n" + json.dumps(USER) + "\n").encode()
CAP = 900 << 20  # address space for the child: the old reader needed twice the line and more


def test_lines_keep_their_lengths_and_long_ones_are_skipped_unheld() -> None:
    rng = random.Random(7)
    for _ in range(3000):
        data = bytes(rng.choice(b"ab\n{\x00 ") for _ in range(rng.randint(0, 60)))
        limit = rng.randint(1, 30)
        got = [line for lines in iter_line_lists(_Chunks(data, rng.randint(1, 8)), limit) for line in lines]
        want = data.split(b"\n")
        assert [len(line) for line in got] == [len(line) for line in want]
        for line, expected in zip(got, want, strict=True):
            if type(line) is SkippedLine:
                start = expected.lstrip(b" \t\r")
                assert len(expected) > limit or (start and start[0] not in b'{["-0123456789tfn')
                assert expected.startswith(line.head) and bytes(line) == b"\0"
            else:
                assert line == expected


class _Chunks(io.RawIOBase):
    """A file whose reads return at most ``size`` bytes (as the reader's chunks would)."""

    def __init__(self, data: bytes, size: int) -> None:
        self.data, self.size, self.at = data, size, 0

    def read(self, n: int = -1) -> bytes:
        chunk = self.data[self.at : self.at + self.size]
        self.at += len(chunk)
        return chunk


def test_a_run_of_nuls_after_the_header_is_skipped_and_offsets_stay_right(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(START + b"\0" * (3 << 20) + b"\n" + json.dumps({**USER, "id": "b1"}).encode() + b"\n")
    lines = list(iter_file_lines(io.BufferedReader(io.FileIO(path))))
    assert type(lines[2]) is SkippedLine and len(lines[2]) == 3 << 20
    for low_memory in (False, True):
        manager = SessionManager.open(path, low_memory=low_memory)
        assert [e.id for e in manager.get_entries()][:2] == ["a1", "b1"]
        manager.append_message({"role": "user", "content": "after", "timestamp": 2})
        manager.close()
        assert [e.id for e in read_session(path, low_memory=low_memory).get_entries()][:2] == ["a1", "b1"]


def _sparse(path: Path, first: bytes) -> Path:
    with open(path, "wb") as handle:
        handle.write(START + first)
        handle.truncate(len(START) + len(first) + MAX_LINE_BYTES + (64 << 20))  # no newline: one line
    return path


def _capped(tmp_path: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    code = (
        "import resource, sys\n"
        f"resource.setrlimit(resource.RLIMIT_AS, ({CAP}, {CAP}))\n"
        "from pisession.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    env = {
        **os.environ,
        "PI_CODING_AGENT_DIR": str(tmp_path / "agent"),
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
    }
    env.pop("PI_CODING_AGENT_SESSION_DIR", None)
    return subprocess.run(
        [sys.executable, "-c", code, *argv],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
    )


needs_cap = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="RLIMIT_AS and sparse files as Linux has them"
)


@needs_cap
@pytest.mark.parametrize(("kind", "first"), [("nuls", b""), ("brace", b"{")])
def test_read_commands_complete_under_a_memory_cap(tmp_path: Path, kind: str, first: bytes) -> None:
    path = _sparse(tmp_path / f"{kind}.jsonl", first)
    for command in (["tree"], ["context"], ["stats"]):
        result = _capped(tmp_path, *command, str(path))
        assert result.returncode == 0, (command, result.stderr[-2000:])
        assert "Traceback" not in result.stderr
        assert result.stderr == (
            f"pisession: warning: {path}: line 3 ({len(first) + MAX_LINE_BYTES + (64 << 20):,} bytes) longer "
            "than pisession reads (512 MiB): skipped like a malformed line (Pi cannot read the file either)\n"
        )
    result = _capped(tmp_path, "validate", str(path))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "line 3: error: a line of 603,979,7" in result.stdout  # 512 MiB + 64 MiB (+1), skipped unread
    assert "longer than pisession reads (512 MiB)" in result.stdout


@needs_cap
def test_listing_and_search_complete_or_say_they_ran_out_of_memory(tmp_path: Path) -> None:
    # the catalog reads a file in chunks too: listing and search complete under the cap, the
    # session listed without its line over the limit (Pi's list dies on it: docs/differences.md)
    folder = tmp_path / "agent" / "sessions" / "--p--"
    folder.mkdir(parents=True)
    _sparse(folder / "big.jsonl", b"{")  # the long line is the last, unfinished
    whole = _sparse(folder / "whole.jsonl", b"{")  # ... and finished, then followed by a message
    later = {**USER, "id": "b1", "parentId": "a1", "message": {**USER["message"], "content": "two"}}
    with open(whole, "ab") as handle:
        handle.write(b"\n" + json.dumps(later).encode() + b"\n")
    long = MAX_LINE_BYTES + (64 << 20) + 1
    for command in (["ls", "--all"], ["search", "one", "--all"]):
        result = _capped(tmp_path, *command)
        assert result.returncode == 0, (command, result.stderr[-2000:])
        assert "Traceback" not in result.stderr and "out of memory" not in result.stderr
        assert result.stdout.count(" s1 ") == 2, result.stdout  # both sessions, both hits of "one"
    listed = json.loads(_capped(tmp_path, "ls", "--all", "--json").stdout)
    assert sorted(row["messageCount"] for row in listed) == [1, 2]
    assert "two" in json.dumps(listed)  # the line after the long one was read
    # a long line appended later is said by its byte offset (the catalog reads only the new end)
    size = whole.stat().st_size
    with open(whole, "r+b") as handle:
        handle.truncate(size + long)
        handle.seek(size + long)
        handle.write(b"\n" + json.dumps({**later, "id": "c1", "parentId": "b1"}).encode() + b"\n")
    result = _capped(tmp_path, "ls", "--all", "--json")
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stderr == (
        f"pisession: warning: {whole}: the line at byte {size:,} ({long:,} bytes) longer than pisession "
        "reads (512 MiB): skipped like a malformed line (Pi's session list fails on it)\n"
    )
    assert sorted(row["messageCount"] for row in json.loads(result.stdout)) == [1, 3]
    assert _capped(tmp_path, "ls", "--all").stderr == ""  # said once, when read


def test_the_catalog_reads_in_chunks_as_the_file_was_read_whole(tmp_path: Path) -> None:
    """Lines across read chunks, lone "\\r"s and "\\r\\n"s, an unfinished last line: the catalog's
    rows and usage (entry ids, sums) are those of the file read whole, full and appended."""
    import sqlite3

    from pisession._discovery import list_all_sessions
    from pisession.catalog import Catalog
    from pisession.catalog._usage import _sums, entry_ids, usage_rows

    rng = random.Random(3)
    folder = tmp_path / "s"
    folder.mkdir()
    path = folder / "a.jsonl"
    parts = [START]
    for n in range(40):
        cost = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0.5}
        usage = {"input": n, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": n + 1, "cost": cost}
        text = [{"type": "text", "text": "w" * rng.choice([10, 300_000, 700_000, 1_500_000])}]
        message = {"role": "assistant", "content": text, "usage": usage, "provider": "p", "model": "m"}
        entry = {**USER, "id": f"m{n}", "message": {**message, "timestamp": n}}
        # a lone "\\r" ends a line for the list (Pi's readline), not for usage (Pi's open)
        parts.append(json.dumps(entry).encode() + rng.choice([b"\n", b"\r\n", b"\n\r"]))
    data = b"".join(parts)
    with Catalog(tmp_path / "c.sqlite3") as catalog:
        for end in (len(data) // 3, len(data) // 3 + 5, len(data) - 7, len(data)):
            with open(path, "ab") as handle:
                handle.write(data[handle.tell() : end])
            catalog.refresh(str(folder))  # every part: a listing alone leaves the usage rows out
            assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))
            assert [h.entry_id for h in catalog.search("one", all=True, session_dir=str(folder))] == ["a1"]
        connection = sqlite3.connect(tmp_path / "c.sqlite3")
        file_id, parsed = connection.execute("SELECT id, parsed FROM files").fetchone()
        ids = entry_ids(connection, [file_id])[file_id]
        sums = connection.execute(
            "SELECT model_key, quarter, input, output, cache_read, cache_write, cost, nan_input, nan_output, "
            "nan_cache_read, nan_cache_write, nan_cost, first_ms, last_ms FROM usage_sums"
        ).fetchall()
        connection.close()
    rows = usage_rows(data, HEADER)[0]
    assert parsed == len(data)
    assert ids == [(row[0], row[1]) for row in rows]
    assert sorted(sums) == sorted((*key, *values) for key, values in _sums(rows).items())
