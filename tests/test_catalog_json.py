"""``Catalog.list_all_json`` and ``pisession ls --all --json``: the rows' JSON kept in the catalog.

A warm listing copies each row's JSON as the catalog made it when the file was read. These tests
hold it to the rows the files give (Pi's ``listAll`` through the plain scan, encoded as
``ls --json`` prints rows) on odd sessions, cold and warm, after appends, and with damaged rows.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import pisession._discovery as discovery
from pisession import SessionManager
from pisession._discovery import list_all_sessions, list_sessions, rows_json
from pisession._json import loads as js_loads
from pisession.catalog import Catalog
from pisession.catalog._schema import pack_text, unpack_text
from pisession.cli import main
from pisession.cli import output as cli_output
from tests.test_catalog import age, append, header, line, msg, write


def _escaped(entry: dict[str, Any]) -> bytes:
    return json.dumps(entry).encode() + b"\n"


def _odd_sessions(root: Path) -> dict[str, Path]:
    """One project folder of sessions that take every path through the listing."""
    project = root / "--project--"
    other = root / "--other--"
    project.mkdir(parents=True)
    other.mkdir()
    files = {
        "plain": write(
            project / "a.jsonl",
            header("plain"),
            msg("u1", "user", "hello there"),
            msg("a1", "assistant", "hi"),
        ),
        "named": write(
            project / "b.jsonl",
            header("named"),
            msg("u1", "user", [{"type": "text", "text": 'multi\nline "quoted" \\ text\t'}]),
            {
                "type": "session_info",
                "id": "i1",
                "parentId": "u1",
                "timestamp": "2025-01-02T03:04:07.000Z",
                "name": " Named ",
            },
        ),
        "empty": write(project / "c.jsonl", header("empty")),
        # escaped in the file, as JSON.stringify writes it: Pi reads a lone surrogate
        "surrogate": write(
            project / "d.jsonl", header("surrogate"), tail=_escaped(msg("u1", "user", "lone \ud800 half"))
        ),
        "controls": write(
            project / "e.jsonl", header("controls"), msg("u1", "user", "del \x7f c1 \x85 esc \x1b[31m")
        ),
        "unfinished": write(
            project / "f.jsonl",
            header("unfinished"),
            msg("u1", "user", "first"),
            tail=line(msg("u2", "user", "second"))[:-1],
        ),
        "no_time": write(
            project / "g.jsonl",
            {"type": "session", "version": 3, "id": "no_time", "cwd": "/project"},
            msg("u1", "user", "no time anywhere", ms=None) | {"timestamp": "not a date"},
        ),
        "object_id": write(
            other / "h.jsonl",
            {**header("x"), "id": {"nested": [1, 2]}, "parentSession": "/elsewhere/p.jsonl"},
            msg("u1", "user", "✨ astral 😀 and\u2028separators"),
        ),
        "tie_a": write(other / "i.jsonl", header("tie_a"), msg("u1", "user", "same time", ms=1735787045999)),
        "tie_b": write(other / "j.jsonl", header("tie_b"), msg("u1", "user", "same time", ms=1735787045999)),
        "foreign": write(other / "k.jsonl", {"type": "not a session"}),
    }
    (other / "l.jsonl").write_bytes(b"")
    age(other / "l.jsonl")
    return files


def _expected(root: Path) -> bytes:
    return rows_json(list_all_sessions(str(root)))


def _cli_rows(root: Path) -> bytes:
    """What ``ls --all --json`` printed before the catalog kept JSON: the rows, encoded."""
    raw = io.BytesIO()
    stream = io.TextIOWrapper(raw, encoding="utf-8", errors="backslashreplace", newline="\n")
    with contextlib.redirect_stdout(stream):
        cli_output.emit_json_rows([info.to_wire() for info in list_all_sessions(str(root))])
        stream.flush()
    return raw.getvalue()


@pytest.fixture()
def root(tmp_path: Path) -> Path:
    _odd_sessions(tmp_path / "sessions")
    return tmp_path / "sessions"


def test_cold_and_warm_json_is_the_scans_rows(root: Path, tmp_path: Path) -> None:
    expected = _expected(root)
    assert json.loads(expected)  # every odd session is listed
    assert b"\\ud800" in expected and "\x85".encode() in expected
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        assert catalog.list_all_json(str(root)) == expected  # cold: built while read
        assert catalog.last_report.read == 12
        assert catalog.list_all_json(str(root)) == expected  # warm: copied
        assert catalog.last_report.read == 0
        assert catalog.last_error is None
        # the same rows as list_all, and the bytes the command line wrote from them
        assert rows_json(catalog.list_all(str(root))) == expected
    # with the control characters a terminal must not see escaped, as the command line writes
    assert _cli_rows(root) == cli_output.safe(expected.decode()).encode()


def test_a_warm_listing_formats_only_rows_that_depend_on_more_than_their_lines(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows made ahead are copied; the unfinished last line and the mtime-dated row are made
    at each call (their JSON depends on what the file does not hold in whole lines)."""
    expected = _expected(root)
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        catalog.list_all_json(str(root))
        made: list[str] = []
        original = discovery.row_json

        def counting(info: discovery.SessionInfo) -> bytes:
            made.append(str(info.id))
            return original(info)

        monkeypatch.setattr("pisession.catalog._list.row_json", counting)
        assert catalog.list_all_json(str(root)) == expected
        assert sorted(made) == ["no_time", "unfinished"]


def test_appended_lines_and_new_files_show_on_the_next_call(root: Path, tmp_path: Path) -> None:
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        catalog.list_all_json(str(root))
        append(
            root / "--project--" / "a.jsonl", line(msg("u2", "user", "a later question", ms=1900000000000))
        )
        append(root / "--project--" / "f.jsonl", b"\n")  # the unfinished line ends
        write(root / "--other--" / "m.jsonl", header("new"), msg("u1", "user", "brand new"))
        (root / "--other--" / "i.jsonl").unlink()
        data = catalog.list_all_json(str(root))
        assert catalog.last_report.appended == 2 and catalog.last_report.read == 1
    assert data == _expected(root)
    rows = json.loads(data)
    assert rows[0]["id"] == "plain" and rows[0]["messageCount"] == 3
    assert "a later question" in rows[0]["allMessagesText"]
    assert "tie_a" not in {row["id"] for row in rows if isinstance(row["id"], str)}


@pytest.mark.parametrize("column", ["wire_head", "all_text", "modified"])
def test_a_damaged_kept_row_is_never_served(root: Path, tmp_path: Path, column: str) -> None:
    path = tmp_path / "catalog.sqlite3"
    expected = _expected(root)
    with Catalog(path) as catalog:
        catalog.list_all_json(str(root))
    value = {
        "wire_head": b'  {\n    "path": "forged",\n    "allMessagesText": ',
        "all_text": b'"forged"',
        "modified": 4e9,
    }
    connection = sqlite3.connect(path)
    with connection:
        connection.execute(f"UPDATE files SET {column} = ? WHERE path LIKE '%a.jsonl'", (value[column],))
    connection.close()
    with Catalog(path) as catalog:
        assert catalog.list_all_json(str(root)) == expected  # the files were read instead
        assert catalog.last_error is not None and "damaged" in catalog.last_error
    with Catalog(path) as catalog:
        assert catalog.list_all_json(str(root)) == expected  # the row was read again
        assert catalog.last_error is None


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(codec=None, exclude_categories=())))
@example("\ud83d\ude00 a surrogate pair as two code points, \ud800 and \x7f \x85 \u2028")
def test_the_kept_text_is_the_json_string_ls_writes(text: str) -> None:
    """Any text, lone surrogates, controls and separators included, with orjson and without."""
    kept = pack_text(text)
    assert kept == json.dumps(text, ensure_ascii=False).encode("utf-8", "backslashreplace")
    # read back as JSON reads it: the same text, but for a surrogate pair held as two code points,
    # which JSON reads as the one character they encode (a text read from a file never holds one)
    as_json_reads = json.loads(json.dumps(text))
    assert unpack_text(kept) == as_json_reads
    assert unpack_text(kept, js_loads) == as_json_reads  # orjson, or the json module where it refuses


def test_a_catalog_that_cannot_be_used_still_gives_the_rows(root: Path, tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with Catalog(blocker / "catalog.sqlite3") as catalog:
        assert catalog.list_all_json(str(root)) == _expected(root)
        assert catalog.last_error is not None


def test_no_sessions_is_an_empty_list(tmp_path: Path) -> None:
    (tmp_path / "sessions" / "--p--").mkdir(parents=True)
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        assert catalog.list_all_json(str(tmp_path / "sessions")) == b"[]\n"


def deep_id_sessions(tmp_path: Path, depth: int) -> Path:
    """A sessions root holding a session whose header id is a list nested ``depth`` deep, and a
    plain one."""
    folder = tmp_path / "sessions" / "--p--"
    folder.mkdir(parents=True)
    deep = "[" * depth + '"core"' + "]" * depth
    text = json.dumps(header("deep")).replace('"id": "deep"', f'"id": {deep}')
    (folder / "deep.jsonl").write_bytes(text.encode() + b"\n" + line(msg("u1", "user", "deep id")))
    age(folder / "deep.jsonl")
    write(folder / "plain.jsonl", header("plain"), msg("u1", "user", "plain"))
    return tmp_path / "sessions"


def test_a_header_id_nested_deeper_than_json_goes_is_listed_as_before(tmp_path: Path) -> None:
    """json.dumps(indent=2) recurses: an id nested 700 deep parses but cannot be formatted so."""
    deep_id_sessions(tmp_path, 700)
    expected = _expected(tmp_path / "sessions")
    assert b'"core"' in expected
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        assert catalog.list_all_json(str(tmp_path / "sessions")) == expected
        assert catalog.list_all_json(str(tmp_path / "sessions")) == expected


def test_the_command_prints_the_scans_rows(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfdbinary: Any
) -> None:
    monkeypatch.setenv("PISESSION_CATALOG", str(tmp_path / "catalog.sqlite3"))
    for _ in range(2):  # cold, then warm
        assert main(["ls", "--all", "--json", "--session-dir", str(root)]) == 0
        catalog_out = capfdbinary.readouterr().out
        assert main(["ls", "--all", "--json", "--no-catalog", "--session-dir", str(root)]) == 0
        assert capfdbinary.readouterr().out == catalog_out
    # the C1 and DEL characters of one session are escaped for the terminal, as every command does
    assert b"\\u0085" in catalog_out and b"\\u007f" in catalog_out and b"\x85" not in catalog_out
    assert json.loads(catalog_out)[0]["id"] is not None


def test_a_session_manager_written_session_lists_alike(tmp_path: Path) -> None:
    root = tmp_path / "sessions"
    manager = SessionManager.create("/work/project", str(root / "--work-project--"))
    manager.append_message({"role": "user", "content": "from the manager", "timestamp": 1735787045000})
    manager.set_session_name("A name")
    os.utime(str(manager.get_session_file()), ns=(1, 1))
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        cold = catalog.list_all_json(str(root))
        assert catalog.list_all_json(str(root)) == cold == _expected(root)
    assert json.loads(cold)[0]["name"] == "A name"


def test_one_folders_json_is_the_scans_rows(root: Path, tmp_path: Path) -> None:
    """``list_json(cwd, folder)``: a folder shared by several working folders keeps cwd's."""
    folder = root / "--project--"
    write(folder / "z.jsonl", header("elsewhere", cwd="/elsewhere"), msg("u1", "user", "other cwd"))
    write(folder / "y.jsonl", header("unfinished-elsewhere", cwd="/elsewhere"), tail=b'{"type": "mess')
    for cwd in ("/project", "/elsewhere", "/nowhere"):
        expected = rows_json(list_sessions(cwd, str(folder)))
        with Catalog(tmp_path / "catalog.sqlite3") as catalog:
            assert catalog.list_json(cwd, str(folder)) == expected  # cold for the first cwd
            assert catalog.list_json(cwd, str(folder)) == expected
        ids = {row["id"] for row in json.loads(expected)}
        assert ("plain" in ids) == (cwd == "/project") and ("elsewhere" in ids) == (cwd == "/elsewhere")


def test_the_command_prints_one_folders_rows(
    root: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfdbinary: Any
) -> None:
    monkeypatch.setenv("PISESSION_CATALOG", str(tmp_path / "catalog.sqlite3"))
    folder = str(root / "--project--")
    for _ in range(2):
        assert main(["ls", "--json", "--cwd", "/project", "--session-dir", folder]) == 0
        catalog_out = capfdbinary.readouterr().out
        assert main(["ls", "--json", "--cwd", "/project", "--session-dir", folder, "--no-catalog"]) == 0
        assert capfdbinary.readouterr().out == catalog_out
    assert len(json.loads(catalog_out)) == 7


@pytest.mark.parametrize(
    "header",
    [
        {"type": "session", "id": "s1", "cwd": "/p", "timestamp": "2025-01-01T00:00:00.000Z"},
        {"id": "é\u2028\"\\\n\x00 ☃", "cwd": "\ud800 lone", "parentSession": "/x/y.jsonl"},
        {"id": "s", "cwd": None, "timestamp": 5, "parentSession": ["a"]},
        {"cwd": "/only"},
        {},
    ],
)
def test_a_headers_kept_subset_is_what_json_dumps_writes(header: dict[str, Any]) -> None:
    from pisession.catalog._schema import header_subset

    keys = ("id", "cwd", "parentSession", "timestamp")
    assert header_subset(header) == json.dumps({key: header[key] for key in keys if key in header})
