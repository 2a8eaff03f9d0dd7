"""``low_memory=True``: entry lines stay in the file, read back (and checked) when first read.

The reading itself is checked against the default mode on the conformance cases
(tests/conformance/test_read.py) and on random files (tests/test_fuzz.py, and below); here:
what happens when the file changes under a low-memory manager, how long its descriptor lives,
pickling, appends, refresh, migration and the constructors that make new files.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import gc
import json
import os
import pickle
import resource
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_fuzz import HEADER, HEADER_LINE, dump_line, entries, json_values

import pisession
from pisession import SessionChangedError, SessionManager, read_session, to_wire
from pisession.aio import AsyncSessionManager

STAMP = "2024-12-03T14:00:00.000Z"


def message(entry_id: str, parent: str | None, text: str, role: str = "user") -> dict[str, Any]:
    body: dict[str, Any] = {"role": role, "content": text, "timestamp": 1733234400000}
    if role == "assistant":
        body["content"] = [{"type": "text", "text": text}]
    return {"type": "message", "id": entry_id, "parentId": parent, "timestamp": STAMP, "message": body}


def line(entry: dict[str, Any]) -> bytes:
    return json.dumps(entry, separators=(",", ":")).encode() + b"\n"


def chain(count: int, prefix: str = "e") -> list[dict[str, Any]]:
    out, parent = [], None
    for i in range(count):
        entry_id = f"{prefix}{i:07x}"
        out.append(message(entry_id, parent, f"text {i} " * 5, "user" if i % 2 == 0 else "assistant"))
        parent = entry_id
    return out


def compaction(entry_id: str, parent: str, first_kept: str) -> dict[str, Any]:
    return {
        "type": "compaction",
        "id": entry_id,
        "parentId": parent,
        "timestamp": STAMP,
        "summary": "earlier work",
        "firstKeptEntryId": first_kept,
        "tokensBefore": 1000,
    }


@pytest.fixture
def session(tmp_path: Path) -> Path:
    """20 messages, a compaction keeping the last 2, then 5 more: the context holds 8 entries,
    so the first 18 are never parsed at open."""
    body = chain(20)
    body.append(compaction("c0000000", body[-1]["id"], body[-2]["id"]))
    parent = "c0000000"
    for i in range(5):
        body.append(message(f"f{i:07x}", parent, f"after {i}"))
        parent = body[-1]["id"]
    path = tmp_path / "session.jsonl"
    path.write_bytes(HEADER_LINE + b"".join(map(line, body)))
    return path


def open_fds() -> set[str]:
    """This process's descriptors, as "number -> what it names" (the listing's own left out)."""
    found = set()
    for name in os.listdir("/proc/self/fd"):
        with contextlib.suppress(FileNotFoundError):  # the descriptor listdir itself used
            found.add(f"{name} -> {os.readlink(f'/proc/self/fd/{name}')}")
    return found


def view(manager: SessionManager) -> dict[str, Any]:
    """Everything a reader sees, as JSON values."""
    snap = manager.snapshot()
    return {
        "header": to_wire(manager.get_header()),
        "entries": [snap.entry_at(p) for p in range(len(snap))],
        "typed": [to_wire(e) for e in manager.get_entries()],
        "leaf": manager.get_leaf_id(),
        "tree": to_wire(manager.get_tree()),
        "branch": [to_wire(e) for e in manager.get_branch()],
        "context": to_wire(manager.build_session_context()),
        "name": manager.get_session_name(),
        "labels": snap.labels(),
    }


def unread_ids(manager: SessionManager) -> list[str]:
    """Ids of the entries whose lines were left in the file (not parsed yet)."""
    snap = manager.snapshot()
    store = snap._store  # what is in memory is the point of these tests
    return [snap.id_at(p) for p in range(len(snap)) if not isinstance(store.items[p], (dict, bytes))]


def append_from_another_process(path: Path, appended: list[dict[str, Any]]) -> None:
    """As Pi appends: no lock, one write per line."""
    code = (
        "import sys\n"
        "with open(sys.argv[1], 'ab') as f:\n"
        "    for text in sys.argv[2:]: f.write(text.encode() + b'\\n')"
    )
    lines = [line(e).decode().rstrip("\n") for e in appended]
    subprocess.run([sys.executable, "-c", code, str(path), *lines], check=True)


# -- reading is the same --------------------------------------------------------------------------


def test_lines_are_left_in_the_file_and_read_back_when_read(session: Path) -> None:
    low = SessionManager.open(session, low_memory=True)
    unread = unread_ids(low)
    assert unread == [f"e{i:07x}" for i in range(18)], "only the context was parsed at open"
    assert view(low) == view(SessionManager.open(session))
    assert unread_ids(low) == [], "what was read stays parsed"


def test_the_default_mode_keeps_the_lines_in_memory(session: Path) -> None:
    manager = SessionManager.open(session)
    assert manager.snapshot().bodies is None and unread_ids(manager) == []


def test_random_files_read_the_same_in_both_modes(tmp_path: Path) -> None:
    one = json_values.map(dump_line) | entries.map(dump_line) | st.binary(max_size=20)
    lines = st.lists(one, max_size=12)
    counter = iter(range(10**6))

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck), database=None)
    @given(lines, st.booleans())
    def check(body: list[bytes], final_newline: bool) -> None:
        path = tmp_path / f"case{next(counter)}.jsonl"
        data = HEADER_LINE + b"\n".join(body) + (b"\n" if final_newline else b"")
        path.write_bytes(data)
        default = view(SessionManager.open(path))
        path.write_bytes(data)  # the default open may have repaired the final newline
        assert view(SessionManager.open(path, low_memory=True)) == default
        path.write_bytes(data)
        assert view(read_session(path, low_memory=True)) == view(read_session(path))

    check()


def test_siblings_are_ordered_by_timestamps_read_back_from_the_file(tmp_path: Path) -> None:
    root = message("r0000000", None, "root")
    kids = [message(f"k{i:07x}", "r0000000", f"kid {i}") for i in range(3)]
    for kid, stamp in zip(kids, ["2024-12-03T14:00:03.000Z", "2024-12-03T14:00:01.000Z", "bad"], strict=True):
        kid["timestamp"] = stamp
    path = tmp_path / "s.jsonl"
    path.write_bytes(HEADER_LINE + b"".join(map(line, [root, *kids, message("z0000000", "k0000000", "z")])))
    low = SessionManager.open(path, low_memory=True)
    assert "k0000001" in unread_ids(low)
    assert low.snapshot().timestamp_at(1) == "2024-12-03T14:00:03.000Z"
    default = SessionManager.open(path)
    assert low.get_tree()[0].children[0].entry.id == "k0000001", "sorted by time"
    assert to_wire(low.get_tree()) == to_wire(default.get_tree())
    copied = pickle.loads(pickle.dumps(SessionManager.open(path, low_memory=True).snapshot()))
    assert copied.tree_order() == default.snapshot().tree_order()


def test_a_line_longer_than_a_read_chunk_is_read_whole(tmp_path: Path) -> None:
    big = message("b0000000", None, "x" * 300_000)
    small = message("s0000000", "b0000000", "y")
    path = tmp_path / "s.jsonl"
    path.write_bytes(HEADER_LINE + line(big) + line(small) + line(message("t0000000", "s0000000", "z")))
    low = SessionManager.open(path, low_memory=True)
    assert view(low) == view(SessionManager.open(path))


# -- the file changing under the manager ---------------------------------------------------------


def test_a_truncated_file_raises_the_typed_error_naming_file_and_entry(session: Path) -> None:
    low = SessionManager.open(session, low_memory=True)
    context = to_wire(low.build_session_context())
    data = session.read_bytes()
    session.write_bytes(data[: len(HEADER_LINE) + 300])  # truncated in place: the same inode
    with pytest.raises(SessionChangedError) as raised:
        low.get_entries()[10].id  # noqa: B018
    assert str(session) in str(raised.value) and "e000000a" in str(raised.value)
    assert isinstance(raised.value, pisession.InvalidSessionError)
    assert to_wire(low.build_session_context()) == context, "what was parsed at open stays readable"
    assert low.get_entries()[0].id == "e0000000", "a line the file still holds reads"


def test_a_file_rewritten_in_place_never_gives_other_data(session: Path) -> None:
    low = SessionManager.open(session, low_memory=True)
    data = session.read_bytes()
    # Same length, same offsets, one character changed inside entry 5's text.
    start = data.index(b'"e0000005"')
    at = data.index(b"text 5", start)
    with open(session, "r+b") as handle:
        handle.seek(at)
        handle.write(b"TEXT")
    with pytest.raises(SessionChangedError, match="e0000005"):
        low.get_entry("e0000005")
    assert low.get_entry("e0000004").message.content == "text 4 " * 5  # type: ignore[union-attr]


def test_lines_shifted_by_an_in_place_rewrite_are_detected(session: Path) -> None:
    low = SessionManager.open(session, low_memory=True)
    data = session.read_bytes()
    with open(session, "r+b") as handle:  # one byte less before every entry line
        handle.write(data.replace(b'"cwd":"/project"', b'"cwd":"/projec"'))
    for entry_id in unread_ids(low):
        with pytest.raises(SessionChangedError):
            low.get_entry(entry_id)


def test_a_file_replaced_by_rename_still_reads_the_original(session: Path, tmp_path: Path) -> None:
    low = SessionManager.open(session, low_memory=True)
    expected = view(SessionManager.open(session))
    other = tmp_path / "other.jsonl"
    other.write_bytes(HEADER_LINE + line(message("zzzzzzzz", None, "another")))
    os.replace(other, session)  # as pisession's own rewrites (and editors' saves) do
    assert view(low) == expected


def test_lines_another_process_appends_are_left_in_the_file_too(session: Path) -> None:
    low = SessionManager.open(session, low_memory=True)
    parents = ["f0000004", "p0000000", "p0000001"]
    appended = [message(f"p{i:07x}", parents[i], f"from pi {i}") for i in range(3)]
    append_from_another_process(session, appended)
    new = low.refresh(move_leaf=True)
    assert [e.id for e in new] == ["p0000000", "p0000001", "p0000002"]  # refresh reads what it returns
    low2 = SessionManager.open(session, low_memory=True)
    assert len(low2.refresh()) == 0
    # an append reads others' new lines first (not their bodies: refresh() returns them later)
    append_from_another_process(session, [message("q0000000", "p0000002", "later")])
    low2.append_message({"role": "user", "content": "mine", "timestamp": 1})
    assert "q0000000" in unread_ids(low2)
    assert view(low2) == view(SessionManager.open(session))
    assert [e.id for e in low2.refresh()] == ["q0000000"]


# -- appends ---------------------------------------------------------------------------------------


def test_appends_in_low_memory_mode(session: Path) -> None:
    low = SessionManager.open(session, low_memory=True)
    first = low.append_message({"role": "user", "content": "one", "timestamp": 1})
    with low.batch():
        for i in range(5):
            low.append_message({"role": "user", "content": f"batched {i}", "timestamp": 2})
    assert low.get_entry(first).message.content == "one"  # type: ignore[union-attr]
    assert view(low) == view(SessionManager.open(session))
    assert view(SessionManager.open(session, low_memory=True)) == view(SessionManager.open(session))


def test_a_transaction_sees_others_lines_and_appends_after_them(session: Path) -> None:
    low = SessionManager.open(session, low_memory=True)
    with open(session, "ab") as handle:
        handle.write(line(message("p0000000", "f0000004", "from pi")))
    with low.transaction():
        assert low.get_leaf_id() == "p0000000"
        new = low.append_message({"role": "user", "content": "after pi", "timestamp": 3})
    assert [e.id for e in low.get_branch()][-2:] == ["p0000000", new]
    assert view(low) == view(SessionManager.open(session))


# -- descriptors ----------------------------------------------------------------------------------


def test_one_descriptor_per_loaded_file_closed_with_the_last_reader(session: Path) -> None:
    gc.collect()
    before = open_fds()
    low = SessionManager.open(session, low_memory=True)
    assert len(open_fds() - before) == 1
    snap = low.snapshot()
    entries_view = low.get_entries()
    del low
    gc.collect()
    assert len(open_fds() - before) == 1, "the snapshots still read through it"
    assert entries_view[3].id == "e0000003"
    del entries_view
    assert len(open_fds() - before) == 1
    assert snap.entry_at(4)["id"] == "e0000004"
    del snap
    assert open_fds() - before == set(), "closed when the last reader is gone (no cycle: at once)"


def test_close_releases_the_descriptor_and_reads_reopen_the_same_file(session: Path, tmp_path: Path) -> None:
    gc.collect()
    before = open_fds()
    with SessionManager.open(session, low_memory=True) as low:
        snap = low.snapshot()
    assert open_fds() - before == set(), "close() releases it, though a snapshot is alive"
    assert low.get_entry("e0000001").id == "e0000001"  # the manager stays readable
    assert snap.entry_at(2)["id"] == "e0000002"
    assert open_fds() - before == set(), "a read after close does not keep the file open"
    other = tmp_path / "other.jsonl"
    shutil.copyfile(session, other)
    os.replace(other, session)  # same bytes, another file: not the one that was opened
    with pytest.raises(SessionChangedError, match="another file"):
        snap.entry_at(3)
    session.unlink()
    with pytest.raises(SessionChangedError, match="gone"):
        low.get_entry("e0000005")


def test_opening_and_dropping_2000_managers_leaks_no_descriptor(session: Path) -> None:
    gc.collect()
    before = open_fds()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(len(before) + 64, hard), hard))
    try:
        for i in range(2000):
            manager = SessionManager.open(session, low_memory=True)
            if i % 2:
                manager.close()
            assert manager.get_entries()[i % 26].id
            if i % 3 == 0:
                read_session(session, low_memory=True).get_tree()
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    del manager
    assert open_fds() - before == set()


def test_a_file_that_is_not_a_session_leaves_no_descriptor(tmp_path: Path) -> None:
    path = tmp_path / "notes.jsonl"
    path.write_bytes(b'{"hello":"world"}\n')
    gc.collect()
    before = open_fds()
    with pytest.raises(pisession.InvalidSessionError):
        SessionManager.open(path, low_memory=True)
    assert open_fds() - before == set()


# -- pickling ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("how", ["pickle", "deepcopy"])
def test_a_pickled_snapshot_holds_its_entries(session: Path, how: str) -> None:
    low = SessionManager.open(session, low_memory=True)
    snap = low.snapshot()
    expected = [SessionManager.open(session).snapshot().entry_at(p) for p in range(len(snap))]
    copied = pickle.loads(pickle.dumps(snap)) if how == "pickle" else copy.deepcopy(snap)
    assert copied.bodies is None
    session.write_bytes(b"")  # whatever happens to the file now
    assert [copied.entry_at(p) for p in range(len(copied))] == expected


def test_the_open_file_itself_cannot_be_pickled(session: Path) -> None:
    bodies = SessionManager.open(session, low_memory=True).snapshot().bodies
    with pytest.raises(TypeError, match="pickle a snapshot"):
        pickle.dumps(bodies)


# -- files that are rewritten or made ------------------------------------------------------------


def test_a_migrated_file_is_read_from_its_rewritten_version(tmp_path: Path) -> None:
    path = tmp_path / "old.jsonl"
    header = {**HEADER, "version": 2}
    body = chain(6)
    body[1]["message"]["role"] = "hookMessage"
    body[1]["message"]["customType"] = "x"
    path.write_bytes(line(header) + b"".join(map(line, body)))
    low = SessionManager.open(path, low_memory=True)
    info = path.stat()
    assert low.snapshot().bodies is not None
    assert low.snapshot().bodies.identity == (info.st_dev, info.st_ino)  # type: ignore[union-attr]
    assert json.loads(path.read_bytes().split(b"\n")[0])["version"] == 3
    assert view(low) == view(SessionManager.open(path))
    assert low.get_entries()[1].message.role == "custom"  # type: ignore[union-attr]


def test_an_old_file_that_cannot_be_rewritten_is_migrated_in_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "old.jsonl"
    path.write_bytes(line({**HEADER, "version": 2}) + b"".join(map(line, chain(4))))

    def refuse(self: Any, lines: Any) -> None:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr("pisession._store.SessionFile.rewrite", refuse)
    with pytest.warns(pisession.SessionNotWrittenWarning):
        low = SessionManager.open(path, low_memory=True)
    assert low.snapshot().bodies is None, "held in memory, migrated"
    # Lines another writer appends to the file as loaded are read in for that index.
    append_from_another_process(path, [message("p0000000", "e0000003", "from pi")])
    assert [e.id for e in low.refresh(move_leaf=True)] == ["p0000000"]
    assert unread_ids(low) == []
    with pytest.warns(pisession.SessionNotWrittenWarning):
        assert view(low) == view(SessionManager.open(path))


def test_fork_and_branched_session_keep_the_new_file_open(session: Path, tmp_path: Path) -> None:
    forked = SessionManager.fork_from(session, "/elsewhere", tmp_path / "forks", low_memory=True)
    new_file = forked.get_session_file()
    assert new_file is not None and forked.snapshot().bodies is not None
    assert forked.snapshot().bodies.path == new_file  # type: ignore[union-attr]
    assert view(forked) == view(SessionManager.open(new_file))
    low = SessionManager.open(session, low_memory=True)
    branched = low.create_branched_session("e0000009")
    assert branched is not None
    bodies = low.snapshot().bodies
    assert bodies is not None and bodies.path == branched
    assert unread_ids(low), "the copied path's lines stay in the new file"
    assert view(low) == view(SessionManager.open(branched))


def test_read_session_low_memory_never_writes(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    data = HEADER_LINE + b"".join(map(line, chain(5)))[:-1]  # no final newline
    path.write_bytes(data)
    low = read_session(path, low_memory=True)
    assert low.snapshot().bodies is not None
    low.append_message({"role": "user", "content": "memory only", "timestamp": 1})
    assert view(low)["entries"][:5] == view(read_session(path))["entries"]
    assert path.read_bytes() == data


def test_async_constructors_take_low_memory(session: Path) -> None:
    async def run() -> dict[str, Any]:
        async with await AsyncSessionManager.open(session, low_memory=True) as manager:
            assert manager.snapshot().bodies is not None
            return view(manager.sync)

    assert asyncio.run(run()) == view(SessionManager.open(session))


def test_continue_recent_takes_low_memory(session: Path) -> None:
    manager = SessionManager.continue_recent("/project", session.parent, low_memory=True)
    assert manager.get_session_file() == str(session)
    assert manager.snapshot().bodies is not None


def test_a_label_on_an_array_target_is_no_label_in_either_mode(tmp_path: Path) -> None:
    # Found by the random-files test above: labels() keyed such a label by the array's object id,
    # so two opens of one file never compared equal.
    label = {"type": "label", "id": "l0000000", "parentId": "r0000000",
             "timestamp": "2024-12-03T14:00:02.000Z", "targetId": ["r0000000"], "label": "x"}
    path = tmp_path / "s.jsonl"
    path.write_bytes(HEADER_LINE + line(message("r0000000", None, "root")) + line(label))
    for low_memory in (False, True):
        assert SessionManager.open(path, low_memory=low_memory).snapshot().labels() == {}
    assert view(SessionManager.open(path, low_memory=True)) == view(SessionManager.open(path))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    data=st.binary(max_size=200).map(lambda b: b.replace(b"\xff", b"\n") + b"\n"),
    chunk=st.sampled_from([3, 8]),
)
def test_the_low_memory_reader_splits_lines_as_the_default_one(
    data: bytes, chunk: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import io

    from pisession import _bodies, _load

    monkeypatch.setattr(_bodies, "_CHUNK", chunk)
    monkeypatch.setattr(_load, "_READ_CHUNK", chunk)
    path = tmp_path / "lines.bin"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        low = list(_bodies.lines_at(fd, 0, len(data), str(path)))
    finally:
        os.close(fd)
    default = list(_load.iter_file_lines(io.BytesIO(data)))[:-1]
    assert [(type(line), len(line), bytes(line)) for _, line in low] == [
        (type(line), len(line), bytes(line)) for line in default
    ]
    offsets = [0]
    for line in default[:-1]:
        offsets.append(offsets[-1] + len(line) + 1)
    assert [at for at, _ in low] == offsets
