"""The session catalog: the same rows as Pi's list, read incrementally, and search over message text."""

from __future__ import annotations

import itertools
import json
import os
import sqlite3
import subprocess
import sys
import time
import unicodedata
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pisession.catalog._change as change_module
import pisession.catalog._refresh as refresh_module
from pisession import CatalogError, SessionManager, to_wire
from pisession._discovery import list_all_sessions, list_sessions
from pisession.catalog import Catalog, RefreshReport, SearchHit, default_catalog_path, format_hit, search
from pisession.catalog._schema import SCHEMA_VERSION

REPO = str(Path(__file__).resolve().parents[1])
_OLD = itertools.count(int((time.time() - 10 * 86400) * 1e9), 1_000_000_000)


def header(sid: str, cwd: str = "/project", stamp: str = "2025-01-02T03:04:05.678Z") -> dict[str, Any]:
    return {"type": "session", "version": 3, "id": sid, "timestamp": stamp, "cwd": cwd}


def msg(eid: str, role: str, text: Any, ms: int | None = 1735787045000) -> dict[str, Any]:
    message: dict[str, Any] = {"role": role, "content": text}
    if ms is not None:
        message["timestamp"] = ms
    if role == "toolResult":
        message.update(toolCallId="c1", toolName="bash", isError=False)
    return {
        "type": "message",
        "id": eid,
        "parentId": None,
        "timestamp": "2025-01-02T03:04:06.000Z",
        "message": message,
    }


def line(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass") + b"\n"


def write(path: Path, *entries: Any, tail: bytes = b"") -> Path:
    path.write_bytes(b"".join(line(e) for e in entries) + tail)
    age(path)
    return path


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as handle:
        handle.write(data)
    age(path)


def age(path: Path) -> None:
    """A distinct mtime well in the past: the catalog trusts it (not written during a read)."""
    stamp = next(_OLD)
    os.utime(path, ns=(stamp, stamp))


def sessions(folder: Path, count: int = 4) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    out = []
    for n in range(count):
        out.append(
            write(
                folder / f"s{n}.jsonl",
                header(f"id-{n}", stamp=f"2025-01-0{n + 1}T00:00:00.000Z"),
                msg(f"u{n}", "user", f"please fix the invoice rounding number {n}", 1735787045000 + n),
                msg(
                    f"a{n}",
                    "assistant",
                    [{"type": "text", "text": f"fixed the ledger {n}"}],
                    1735787046000 + n,
                ),
                msg(
                    f"t{n}",
                    "toolResult",
                    [{"type": "text", "text": "pytest passed: 12 tests"}],
                    1735787047000 + n,
                ),
            )
        )
    return out


@pytest.fixture
def catalog(tmp_path: Path) -> Any:
    with Catalog(tmp_path / "cache" / "catalog.sqlite3") as opened:
        yield opened


def same_as_scan(catalog: Catalog, folder: Path) -> None:
    assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))
    assert catalog.last_error is None


# --------------------------------------------------------------------------- the rows


def test_rows_equal_the_scan_for_sessions_and_odd_files(tmp_path: Path, catalog: Catalog) -> None:
    folder = tmp_path / "sessions"
    sessions(folder, 3)
    write(
        folder / "named.jsonl",
        header("named"),
        msg("u", "user", "hi"),
        {"type": "session_info", "name": " N "},
    )
    write(
        folder / "cr.jsonl",
        tail=line(header("cr"))[:-1] + b"\r" + line(msg("u", "user", "cr line"))[:-1] + b"\r",
    )
    write(folder / "partial.jsonl", header("partial"), tail=b'{"type":"message","id":"x"')
    write(folder / "unfinished-header.jsonl", tail=line(header("late"))[:-1])
    write(folder / "surrogate.jsonl", header("sur"), msg("u", "user", "lone \ud800 surrogate"))
    escaped = json.dumps(msg("u", "user", "escaped \ud800 surrogate \u0000 nul")).encode() + b"\n"
    write(folder / "escaped.jsonl", header("esc"), tail=escaped)
    write(folder / "null-content.jsonl", header("nc"), msg("u", "user", None))
    write(folder / "no-times.jsonl", {"type": "session", "id": "nt"}, msg("u", "user", "x", None))
    write(folder / "notes.jsonl", tail=b"just some notes\n")
    write(folder / "entry-first.jsonl", msg("q", "user", "q"), header("late"))
    (folder / "binary.jsonl").write_bytes(bytes(range(256)) * 10)
    (folder / "empty.jsonl").write_bytes(b"")
    age(folder / "binary.jsonl")
    age(folder / "empty.jsonl")
    (folder / "dir.jsonl").mkdir()
    os.mkfifo(folder / "fifo.jsonl")
    (folder / "broken.jsonl").symlink_to(folder / "nowhere")
    for attempt in ("cold", "warm"):
        assert catalog.list_all(str(folder)) == list_all_sessions(str(folder)), attempt
        assert catalog.list("/project", str(folder)) == list_sessions("/project", str(folder)), attempt
        assert catalog.list("/elsewhere", str(folder)) == list_sessions("/elsewhere", str(folder)) == []
    skipped = {Path(s.path).name for s in catalog.last_report.skipped}
    assert {"notes.jsonl", "entry-first.jsonl", "binary.jsonl", "empty.jsonl", "fifo.jsonl"} <= skipped
    assert {"dir.jsonl", "broken.jsonl"} <= skipped
    assert not skipped & {"s0.jsonl", "named.jsonl", "partial.jsonl", "unfinished-header.jsonl"}
    assert catalog.last_report.read == 0 and catalog.last_report.appended == 0
    found = catalog.search("surrogate", all=True, session_dir=str(folder))
    assert [h.session_id for h in found] == ["esc", "sur"]
    # the second call wrote nothing: the FIFO, the folder and the broken link need no write lock
    holder = sqlite3.connect(catalog.path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))
        assert catalog.last_error is None
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_unchanged_files_are_not_opened(
    tmp_path: Path, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "sessions"
    sessions(folder, 5)
    first = catalog.list_all(str(folder))
    assert catalog.last_report == RefreshReport(files=5, read=5)
    with sqlite3.connect(catalog.path) as db:
        assert db.execute("SELECT COUNT(*) FROM messages").fetchone() == (0,)  # the first search indexes
    calls: list[tuple[int, int]] = []
    found = catalog.search(
        "invoice", all=True, session_dir=str(folder), on_progress=lambda *a: calls.append(a)
    )
    assert len(found) == 5 and calls == [(0, 5), (1, 5), (2, 5), (3, 5), (4, 5), (5, 5)]  # indexing them
    assert catalog.last_report == RefreshReport(files=5)
    with sqlite3.connect(catalog.path) as db:
        assert db.execute("SELECT COUNT(*) FROM messages").fetchone() == (15,)
    opened: list[str] = []
    real = refresh_module.open_regular
    monkeypatch.setattr(refresh_module, "open_regular", lambda p: opened.append(p) or real(p))
    assert catalog.list_all(str(folder)) == first
    assert opened == []


def test_a_file_that_grew_is_read_from_its_old_end(tmp_path: Path, catalog: Catalog) -> None:
    folder = tmp_path / "sessions"
    path = sessions(folder, 3)[1]
    catalog.list_all(str(folder))
    append(
        path,
        line(msg("u9", "user", "a later question", 1799999999000))
        + line({"type": "session_info", "name": "x"}),
    )
    same_as_scan(catalog, folder)
    assert (catalog.last_report.read, catalog.last_report.appended) == (0, 1)
    assert catalog.list_all(str(folder))[0].path == str(path)
    # an unfinished line is kept aside, then completed by the next write
    whole = line(msg("u10", "user", "finished later", 1800000000000))
    append(path, whole[:20])
    same_as_scan(catalog, folder)
    append(path, whole[20:])
    same_as_scan(catalog, folder)
    assert catalog.last_report.appended == 1
    assert [h.entry_id for h in catalog.search("finished", all=True, session_dir=str(folder))] == ["u10"]
    # listing leaves the search index behind; a search after another append catches up both parts
    append(path, line(msg("u11", "user", "zebra crossing", 1800000001000)))
    same_as_scan(catalog, folder)
    append(path, line(msg("u12", "assistant", [{"type": "text", "text": "zebra again"}], 1800000002000)))
    assert [h.entry_id for h in catalog.search("zebra", all=True, session_dir=str(folder))] == ["u12", "u11"]
    assert catalog.last_report.appended == 1
    with Catalog(":memory:") as fresh:
        for word in ("the", "invoice", "zebra"):
            assert catalog.search(word, all=True, session_dir=str(folder), limit=None) == fresh.search(
                word, all=True, session_dir=str(folder), limit=None
            )


def test_a_file_rewritten_in_place_is_read_again(tmp_path: Path, catalog: Catalog) -> None:
    """Pi rewrites a migrated file with writeFileSync: same inode, longer, different first line."""
    folder = tmp_path / "sessions"
    path = sessions(folder, 2)[0]
    catalog.list_all(str(folder))
    inode = path.stat().st_ino
    text = path.read_bytes().replace(b'"version": 3', b'"version": 3, "migrated": true')
    with open(path, "r+b") as handle:
        handle.write(text + line(msg("m", "user", "more")))
    age(path)
    assert path.stat().st_ino == inode
    same_as_scan(catalog, folder)
    assert (catalog.last_report.read, catalog.last_report.appended) == (1, 0)


def test_truncated_replaced_and_deleted_files(tmp_path: Path, catalog: Catalog) -> None:
    folder = tmp_path / "sessions"
    first, second, third, _ = sessions(folder, 4)
    catalog.list_all(str(folder))
    catalog.search("invoice", all=True, session_dir=str(folder))
    os.truncate(first, len(line(header("id-0", stamp="2025-01-01T00:00:00.000Z"))) + 10)
    age(first)
    same_as_scan(catalog, folder)
    assert catalog.last_report.read == 1
    # replaced by a file of the same size under the same name (a new inode)
    replacement = second.read_bytes().replace(b"invoice", b"receipt")
    spare = folder / "spare.tmp"
    spare.write_bytes(replacement)
    os.replace(spare, second)
    age(second)
    same_as_scan(catalog, folder)
    third.unlink()
    same_as_scan(catalog, folder)
    assert catalog.last_report.removed == 1
    found = {Path(h.session_path).name for h in catalog.search("invoice", all=True, session_dir=str(folder))}
    assert found == {"s3.jsonl"}  # s0 lost it to the truncation, s1 was replaced, s2 deleted
    assert {
        Path(h.session_path).name for h in catalog.search("receipt", all=True, session_dir=str(folder))
    } == {"s1.jsonl"}


def test_a_file_written_just_after_it_was_read_is_read_again(
    tmp_path: Path, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Same size, same mtime tick: only the time of the read tells (git's "racily clean" files)."""
    monkeypatch.setattr(change_module, "_RACY_NS", 10**12)  # "just after", however slow this machine is
    monkeypatch.setattr(change_module, "_RACY_COARSE_NS", 10**12)
    folder = tmp_path / "sessions"
    folder.mkdir()
    path = folder / "s.jsonl"
    path.write_bytes(line(header("a")) + line(msg("u", "user", "aaaa")))
    catalog.list_all(str(folder))
    stamp = path.stat().st_mtime_ns
    path.write_bytes(line(header("a")) + line(msg("u", "user", "bbbb")))
    os.utime(path, ns=(stamp, stamp))
    same_as_scan(catalog, folder)
    assert catalog.list_all(str(folder))[0].first_message == "bbbb"
    assert catalog.last_report.read == 0  # still "just after", but its bytes were compared, not parsed


def test_a_foreign_file_is_skipped_until_it_becomes_a_session(tmp_path: Path, catalog: Catalog) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    path = write(folder / "x.jsonl", {"type": "not-a-session"})
    assert catalog.list_all(str(folder)) == []
    assert [s.path for s in catalog.last_report.skipped] == [str(path)]
    append(path, line(header("late")))  # still foreign: the first entry decides
    same_as_scan(catalog, folder)
    write(path, header("now"), msg("u", "user", "hello"))
    same_as_scan(catalog, folder)
    assert [info.id for info in catalog.list_all(str(folder))] == ["now"]


def test_session_manager_list_with_a_catalog(
    tmp_path: Path, catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    folder = tmp_path / "agent" / "sessions" / "--project--"
    sessions(folder, 3)
    sessions(tmp_path / "agent" / "sessions" / "--other--", 2)
    assert SessionManager.list("/project", catalog=catalog) == SessionManager.list("/project")
    assert SessionManager.list_all(catalog=catalog) == SessionManager.list_all()
    assert SessionManager.list_all(catalog=True) == SessionManager.list_all()  # the default catalog
    assert os.stat(os.environ["PISESSION_CATALOG"]).st_mode & 0o077 == 0  # it holds the sessions' text
    calls: list[tuple[int, int]] = []
    SessionManager.list_all(catalog=catalog, on_progress=lambda a, b: calls.append((a, b)))
    assert calls == []  # nothing to read
    append(folder / "s0.jsonl", line(msg("x", "user", "x")))
    SessionManager.list_all(catalog=catalog, on_progress=lambda a, b: calls.append((a, b)))
    assert calls == [(4, 5), (5, 5)]


# --------------------------------------------------------------------------- a catalog that fails


def test_a_corrupt_database_falls_back_to_the_files(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    sessions(folder, 3)
    database = tmp_path / "catalog.sqlite3"
    database.write_bytes(b"this is not a database" * 100)
    with Catalog(database) as broken:
        assert broken.list_all(str(folder)) == list_all_sessions(str(folder))
        assert broken.last_error is not None and "not an SQLite database" in broken.last_error
        hits = broken.search("invoice", all=True, session_dir=str(folder))
        assert len(hits) == 3
    assert database.read_bytes() == b"this is not a database" * 100


def test_someone_elses_database_is_left_alone(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    sessions(folder, 2)
    database = tmp_path / "theirs.sqlite3"
    with sqlite3.connect(database) as theirs:
        theirs.execute("CREATE TABLE files (x)")
        theirs.execute("INSERT INTO files VALUES (42)")
    with Catalog(database) as mine:
        assert mine.list_all(str(folder)) == list_all_sessions(str(folder))
        assert mine.last_error is not None and "not a pisession catalog" in mine.last_error
    with sqlite3.connect(database) as theirs:
        assert theirs.execute("SELECT x FROM files").fetchall() == [(42,)]


def test_a_locked_database_falls_back_to_the_files(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    sessions(folder, 3)
    database = tmp_path / "catalog.sqlite3"
    with Catalog(database) as first:
        first.list_all(str(folder))
    append(folder / "s1.jsonl", line(msg("n", "user", "new")))
    holder = sqlite3.connect(database, isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with Catalog(database, timeout=0.05) as waiting:
            assert waiting.list_all(str(folder)) == list_all_sessions(str(folder))
            assert waiting.last_error is not None and "locked" in waiting.last_error
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_a_read_only_database_falls_back_to_the_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "sessions"
    sessions(folder, 3)
    database = tmp_path / "catalog.sqlite3"
    with Catalog(database) as first:
        first.list_all(str(folder))
    append(folder / "s1.jsonl", line(msg("n", "user", "new")))
    real = sqlite3.connect
    monkeypatch.setattr(
        sqlite3, "connect", lambda path, **kw: real(f"file:{path}?mode=ro", uri=True, **kw)
    )
    with Catalog(database) as read_only:
        assert read_only.list_all(str(folder)) == list_all_sessions(str(folder))
        assert read_only.last_error is not None and "readonly" in read_only.last_error.replace("-", "")


def test_a_cache_folder_that_cannot_be_made_falls_back(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    sessions(folder, 2)
    (tmp_path / "file").write_text("x")
    with Catalog(tmp_path / "file" / "sub" / "catalog.sqlite3") as nowhere:
        assert nowhere.list_all(str(folder)) == list_all_sessions(str(folder))
        assert nowhere.last_error is not None


def test_the_catalog_never_lives_in_pis_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.delenv("PISESSION_CATALOG")
    # one file per version of the catalog's tables and of this Python's Unicode tables
    name = f"catalog-v{SCHEMA_VERSION}-u{unicodedata.unidata_version}.sqlite3"
    assert default_catalog_path() == str(tmp_path / "xdg" / "pisession" / name)
    inside = tmp_path / "agent" / "sessions" / "--p--" / "catalog.sqlite3"
    with pytest.raises(CatalogError, match="inside Pi's data"):
        Catalog(inside)
    monkeypatch.setenv("PISESSION_CATALOG", str(inside))
    sessions(tmp_path / "agent" / "sessions" / "--p--", 2)
    assert SessionManager.list_all(catalog=True) == SessionManager.list_all()
    assert not inside.exists()


# --------------------------------------------------------------------------- several processes

REFRESHER = """
import sys, time
sys.path.insert(0, {repo!r})
from pisession.catalog import Catalog
from pisession._discovery import list_all_sessions
folder, database, rounds = sys.argv[1], sys.argv[2], int(sys.argv[3])
with Catalog(database, timeout=30) as catalog:
    for _ in range(rounds):
        catalog.list_all(folder)
        catalog.search("invoice", all=True, session_dir=folder)
        assert catalog.last_error is None, catalog.last_error
print("ok")
"""


def test_several_processes_refreshing_at_once(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    paths = sessions(folder, 12)
    database = tmp_path / "catalog.sqlite3"
    script = tmp_path / "refresh.py"
    script.write_text(REFRESHER.format(repo=REPO))
    workers = [
        subprocess.Popen(
            [sys.executable, str(script), str(folder), str(database), "15"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    for n in range(30):
        append(paths[n % len(paths)], line(msg(f"x{n}", "user", f"invoice follow-up {n}", 1800000000000 + n)))
        time.sleep(0.01)
    for worker in workers:
        out, err = worker.communicate(timeout=120)
        assert worker.returncode == 0, err[-3000:]
        assert out.strip() == "ok"
    with Catalog(database) as catalog:
        same_as_scan(catalog, folder)
        hits = catalog.search("invoice", all=True, session_dir=str(folder), limit=None)
    with Catalog(":memory:") as fresh:
        expected = fresh.search("invoice", all=True, session_dir=str(folder), limit=None)
    assert hits == expected  # no search row written twice or lost
    assert len(hits) == 12 + 30


# --------------------------------------------------------------------------- random folders

_TEXT = st.text(alphabet=st.sampled_from('ab cé\u03a3\n\r"\\_1'), max_size=12)
_ENTRY = st.one_of(
    st.builds(lambda t, ms: msg("e", "user", t, ms), _TEXT, st.one_of(st.none(), st.integers(0, 2**41))),
    st.builds(lambda t: msg("e", "assistant", [{"type": "text", "text": t}]), _TEXT),
    st.builds(lambda t: msg("e", "toolResult", [{"type": "text", "text": t}]), _TEXT),
    st.builds(lambda t: {"type": "session_info", "name": t}, _TEXT),
    st.just({"type": "label"}),
)
_CHUNK = st.one_of(
    st.lists(_ENTRY, max_size=3).map(lambda es: b"".join(line(e) for e in es)),
    st.sampled_from([b"\n", b"\r", b"garbage\n", b"{", b'"}\n', line(header("h"))]),
)
_OP = st.tuples(
    st.sampled_from(["create", "append", "truncate", "replace", "delete"]),
    st.integers(0, 3),
    _CHUNK,
    st.integers(0, 200),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ops=st.lists(_OP, min_size=1, max_size=12), fts=st.booleans())
def test_random_folders_and_writes_list_like_the_scan(
    tmp_path_factory: Any, ops: list[Any], fts: bool
) -> None:
    base = tmp_path_factory.mktemp("random")
    folder = base / "sessions"
    folder.mkdir()
    with Catalog(base / "catalog.sqlite3", fts=fts) as catalog:
        for kind, which, chunk, cut in ops:
            path = folder / f"f{which}.jsonl"
            exists = path.exists()
            if kind == "create" or not exists:
                write(path, header(f"id{which}", stamp="2025-03-01T00:00:00.000Z"), tail=chunk)
            elif kind == "append":
                append(path, chunk)
            elif kind == "truncate":
                os.truncate(path, min(cut, path.stat().st_size))
                age(path)
            elif kind == "replace":
                spare = folder / "spare"
                spare.write_bytes(path.read_bytes()[:cut] + chunk)
                os.replace(spare, path)
                age(path)
            else:
                path.unlink()
            same_as_scan(catalog, folder)
            with Catalog(":memory:", fts=not fts) as other:
                for word in ("a", "b", "cé", "\u03c3"):
                    ours = catalog.search(word, all=True, session_dir=str(folder), limit=None)
                    theirs = other.search(word, all=True, session_dir=str(folder), limit=None)
                    assert [(h.session_path, h.entry_id, h.time, h.role) for h in ours] == [
                        (h.session_path, h.entry_id, h.time, h.role) for h in theirs
                    ]


# --------------------------------------------------------------------------- search


def search_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "sessions"
    folder.mkdir()
    write(
        folder / "a.jsonl",
        header("sess-a"),
        msg("a1", "user", "The invoice total is off by one cent", 1000),
        msg(
            "a2",
            "assistant",
            [{"type": "text", "text": "Rounding: use banker's rounding for the invoice"}],
            2000,
        ),
        msg("a3", "toolResult", [{"type": "text", "text": "FAILED test_invoicing - off by one"}], 3000),
    )
    write(
        folder / "b.jsonl",
        header("sess-b", cwd="/other"),
        msg("b1", "user", "Warum ist die Größe falsch? INVOICE!", 5000),
        msg("b2", "assistant", [{"type": "text", "text": "off-by-one in the loop"}], 4000),
    )
    return folder


@pytest.mark.parametrize("fts", [True, False], ids=["fts5", "plain"])
def test_search_finds_whole_words_newest_first(tmp_path: Path, fts: bool) -> None:
    folder = search_folder(tmp_path)
    with Catalog(tmp_path / "c.sqlite3", fts=fts) as catalog:
        hits = catalog.search("invoice", all=True, session_dir=str(folder))
        assert [(h.entry_id, h.role) for h in hits] == [("b1", "user"), ("a2", "assistant"), ("a1", "user")]
        assert hits[0] == SearchHit(
            session_path=str(folder / "b.jsonl"),
            session_id="sess-b",
            entry_id="b1",
            time=hits[0].time,
            role="user",
            snippet="Warum ist die Größe falsch? INVOICE!",
            marks=((28, 35),),
        )
        assert hits[0].time is not None and hits[0].time.timestamp() == 5.0
        # words, not substrings: "invoicing" is another word
        assert "a3" not in [h.entry_id for h in hits]
        assert [h.entry_id for h in catalog.search("off by one", all=True, session_dir=str(folder))] == [
            "b2",
            "a3",
            "a1",
        ]
        assert [h.entry_id for h in catalog.search('"by one cent"', all=True, session_dir=str(folder))] == [
            "a1"
        ]
        assert [h.entry_id for h in catalog.search("größe", all=True, session_dir=str(folder))] == ["b1"]
        assert [
            h.entry_id for h in catalog.search("off", all=True, session_dir=str(folder), role="tool")
        ] == ["a3"]
        assert len(catalog.search("off", all=True, session_dir=str(folder), limit=2)) == 2
        # a folder other than cwd's own keeps only sessions whose header names cwd, as list does
        assert {h.session_id for h in catalog.search("off", cwd="/other", session_dir=str(folder))} == {
            "sess-b"
        }
        assert catalog.search("nothing-like-this", all=True, session_dir=str(folder)) == []


def test_a_hit_points_at_its_entry(tmp_path: Path) -> None:
    folder = search_folder(tmp_path)
    hit = search("rounding", all=True, session_dir=str(folder), catalog=Catalog(tmp_path / "c.sqlite3"))[0]
    manager = SessionManager.open(hit.session_path)
    entry = manager.get_entry(hit.entry_id or "")
    assert entry is not None and "banker's rounding" in json.dumps(to_wire(entry), ensure_ascii=False)
    assert hit.snippet[hit.marks[0][0] : hit.marks[0][1]] == "Rounding"
    assert format_hit(hit).endswith("[Rounding]: use banker's [rounding] for the invoice")
    assert hit.to_wire()["entryId"] == "a2"


def test_bad_queries_are_errors(tmp_path: Path) -> None:
    with Catalog(tmp_path / "c.sqlite3") as catalog:
        for query in ("", "  ", "---"):
            with pytest.raises(CatalogError, match="no words"):
                catalog.search(query, all=True, session_dir=str(tmp_path))
        with pytest.raises(CatalogError, match="limit"):
            catalog.search("x", limit=0)
        with pytest.raises(CatalogError, match="role"):
            catalog.search("x", role="system")  # type: ignore[arg-type]
        assert catalog.last_error is None


# --------------------------------------------------------------------------- command line


def test_cli_search_and_ls(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from pisession.cli import main

    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    folder = search_folder(tmp_path)
    assert main(["search", "invoice", "--all", "--session-dir", str(folder)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert "sess-b" in out[0] and "b1" in out[0] and "[INVOICE]" not in out[0] and "INVOICE" in out[0]
    assert out[-1].startswith("3 matches, newest first") and out[-1].endswith(
        f"{folder / 'b.jsonl'} --leaf b1"
    )
    assert (
        main(["search", "invoice", "--all", "--session-dir", str(folder), "--role", "assistant", "--json"])
        == 0
    )
    assert [h["entryId"] for h in json.loads(capsys.readouterr().out)] == ["a2"]
    assert main(["search", "   ", "--all"]) == 1
    assert "no words" in capsys.readouterr().err
    assert main(["ls", "--all", "--session-dir", str(folder), "--json"]) == 0
    with_catalog = capsys.readouterr().out
    assert main(["ls", "--all", "--session-dir", str(folder), "--json", "--no-catalog"]) == 0
    assert capsys.readouterr().out == with_catalog
    monkeypatch.setenv("PISESSION_CATALOG", str(tmp_path / "agent" / "catalog.sqlite3"))  # inside Pi's data
    assert main(["ls", "--all", "--session-dir", str(folder)]) == 0
    captured = capsys.readouterr()
    assert "session catalog not used" in captured.err and "inside Pi's data" in captured.err
    assert not (tmp_path / "agent" / "catalog.sqlite3").exists()
    text = captured.out
    assert main(["search", "invoice", "--all", "--session-dir", str(folder), "--json"]) == 0
    assert len(json.loads(capsys.readouterr().out)) == 3
    assert main(["ls", "--all", "--session-dir", str(folder), "--no-catalog"]) == 0
    assert capsys.readouterr().out == text


def test_cli_search_prints_the_library_search(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from pisession.catalog import Catalog, format_hit, search
    from pisession.cli import main

    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.setenv("NO_COLOR", "1")
    folder = search_folder(tmp_path)
    hits = search("invoice", all=True, session_dir=str(folder), catalog=Catalog(tmp_path / "c.sqlite3"))
    assert hits
    assert main(["search", "invoice", "--all", "--session-dir", str(folder), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == [hit.to_wire() for hit in hits]
    assert main(["search", "invoice", "--all", "--session-dir", str(folder)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[: len(hits)] == [format_hit(hit, lambda word: word) for hit in hits]


def test_a_search_that_reaches_its_limit_counts_every_match_in_the_same_refresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``last_total`` is what ``search_sessions`` counts, from the scope the search refreshed:
    ``pisession search`` says "showing N of M" without bringing the folders up to date twice."""
    folder = tmp_path / "sessions" / "--p--"
    sessions(folder, count=4)
    refreshes: list[object] = []
    real_current = refresh_module.current

    def counting(*args: Any, **kwargs: Any) -> Any:
        refreshes.append(args)
        return real_current(*args, **kwargs)

    monkeypatch.setattr("pisession.catalog._search.current", counting)
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        everything = catalog.search("invoice", all=True, session_dir=str(tmp_path / "sessions"), limit=None)
        assert catalog.last_total == len(everything) >= 4
        refreshes.clear()
        first = catalog.search("invoice", all=True, session_dir=str(tmp_path / "sessions"), limit=2)
        assert len(first) == 2 and len(refreshes) == 1
        counted = catalog.search_sessions("invoice", all=True, session_dir=str(tmp_path / "sessions"))
        assert catalog.last_total == sum(match.hits for match in counted) == len(everything)
        catalog.search("nothing-like-this", all=True, session_dir=str(tmp_path / "sessions"), limit=2)
        assert catalog.last_total == 0


@pytest.mark.parametrize("fts", [True, False], ids=["fts5", "scan"])
def test_a_message_whose_id_holds_a_lone_surrogate_is_found_with_its_id(tmp_path: Path, fts: bool) -> None:
    # JSON's "\ud800", which Pi reads: SQLite's UTF-8 text cannot hold it (a search raised
    # UnicodeEncodeError while indexing); the hit gives the id as the file has it
    folder = tmp_path / "sessions"
    folder.mkdir()
    odd = "u\ud800x"
    (folder / "s.jsonl").write_text(
        line(header("lone")).decode()
        + json.dumps(msg(odd, "user", "a lonely question"))
        + "\n"
        + json.dumps(msg("u2", "user", "a plain question"))
        + "\n",
        encoding="utf-8",
        errors="surrogatepass",
    )
    age(folder / "s.jsonl")
    with Catalog(tmp_path / "catalog.sqlite3", fts=fts) as catalog:
        for _ in ("cold", "warm"):
            hits = catalog.search("question", all=True, session_dir=str(folder))
            assert sorted(h.entry_id or "" for h in hits) == sorted([odd, "u2"])
            assert catalog.last_error is None
