"""A hostile look at the catalog's parts (files.lacks): whatever order the calls come in, which
part each first read left out, and however a file grows, a listing is the one read without a
catalog and a usage report (its rows and what it skipped) is the one read without a catalog."""

from __future__ import annotations

import marshal
import os
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from pisession._discovery import list_all_sessions
from pisession._js import js_date_ms
from pisession.catalog import Catalog
from pisession.catalog._schema import USAGE
from pisession.catalog._usage import timestamp_ms
from pisession.usage import usage_report
from tests.test_catalog import append, header, line, msg, write
from tests.test_catalog_fastread import HEADER, ODD_LINES
from tests.test_catalog_parts import lacks
from tests.test_catalog_workers import assistant, odd_folder


def report(folder: Path, catalog: Catalog | bool) -> tuple[Any, list[tuple[str, str]]]:
    made = usage_report("daily", session_dir=str(folder), timezone="UTC", catalog=catalog)
    return made.to_wire(), sorted((Path(s.path).name, s.reason) for s in made.skipped)


def listing(catalog: Catalog, folder: Path) -> None:
    assert catalog.list_all(str(folder)) == list_all_sessions(str(folder))


def reporting(catalog: Catalog, folder: Path) -> None:
    assert report(folder, catalog) == report(folder, False)


CALLS = {"listing": listing, "reporting": reporting}


def pending_then_session(folder: Path) -> tuple[Path, bytes]:
    """A file whose header is not written in full yet, after a damaged line."""
    folder.mkdir(parents=True, exist_ok=True)
    whole = line(header("late")) + line(msg("u", "user", "a question"))
    whole += line(assistant("a1", "an answer", 1.25, "2025-03-04T05:06:07.890Z"))
    path = folder / "late.jsonl"
    path.write_bytes(b"garbled line\n" + whole[:20])
    return path, whole[20:]


@pytest.mark.parametrize("first", sorted(CALLS))
@pytest.mark.parametrize("then", sorted(CALLS))
def test_a_pending_file_read_for_one_part_grows_into_a_whole_session(
    tmp_path: Path, workers: str, first: str, then: str
) -> None:
    folder = tmp_path / "sessions"
    odd_folder(folder)
    path, rest = pending_then_session(folder)
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        CALLS[first](catalog, folder)
        append(path, rest)
        CALLS[then](catalog, folder)
        listing(catalog, folder)
        reporting(catalog, folder)


@pytest.mark.parametrize("first", sorted(CALLS))
def test_a_session_with_damaged_lines_before_its_header(tmp_path: Path, workers: str, first: str) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    path, rest = pending_then_session(folder)
    append(path, rest)
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        CALLS[first](catalog, folder)
        listing(catalog, folder)
        reporting(catalog, folder)
        assert report(folder, catalog)[1]  # the damaged line is said


def test_damaged_lines_appended_to_a_row_lacking_usage_are_counted_when_it_is_read_for_usage(
    tmp_path: Path, workers: str
) -> None:
    folder = tmp_path / "sessions"
    odd_folder(folder)
    grown = folder / "usage2.jsonl"
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        listing(catalog, folder)
        append(grown, b"cut short {\n" + line(assistant("a8", "more", 2.0, "2025-02-03T01:00:00.000Z")))
        listing(catalog, folder)  # caught up from its end, still without usage
        append(grown, b"{not json either\n")
        reporting(catalog, folder)
        append(grown, b"\x00\xff\n" + line(assistant("a9", "more", 3.0, "2025-02-03T01:05:00.000Z")))
        reporting(catalog, folder)  # appended: the sums and the damaged count added to
        listing(catalog, folder)
        reporting(catalog, folder)


def test_a_fork_whose_parent_was_listed_only(tmp_path: Path, workers: str) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    first = assistant("a1", "one", 1.0, "2025-04-01T10:00:00.000Z")
    parent = write(folder / "parent.jsonl", header("parent"), msg("u", "user", "q"), first)
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        listing(catalog, folder)
        fork = {**header("fork", stamp="2025-04-01T11:00:00.000Z"), "parentSession": str(parent)}
        write(
            folder / "fork.jsonl",
            fork,
            msg("u", "user", "q"),
            first,
            assistant("a2", "two", 2.0, "2025-04-01T11:30:00.000Z"),
        )
        reporting(catalog, folder)  # the fork read usage-only, its parent read again in full
        assert set(lacks(tmp_path / "catalog.sqlite3").values()) == {0, 2}
        listing(catalog, folder)
        reporting(catalog, folder)


def test_two_catalogs_on_one_database_with_different_parts(tmp_path: Path, workers: str) -> None:
    folder = tmp_path / "sessions"
    odd_folder(folder)
    database = tmp_path / "catalog.sqlite3"
    with Catalog(database) as lister, Catalog(database) as reporter:
        listing(lister, folder)
        reporting(reporter, folder)
        append(folder / "usage3.jsonl", line(assistant("b1", "x", 0.75, "2025-02-04T02:00:00.000Z")))
        reporting(reporter, folder)
        listing(lister, folder)
        append(folder / "usage3.jsonl", b"garbled\n")
        listing(lister, folder)
        reporting(reporter, folder)
        reporting(lister, folder)
        listing(reporter, folder)
        assert catalog_json(lister, folder) == catalog_json(Catalog(":memory:"), folder)


def catalog_json(catalog: Catalog, folder: Path) -> Any:
    return catalog.list_all_json(str(folder))


def test_a_search_first_then_a_report(tmp_path: Path, workers: str) -> None:
    folder = tmp_path / "sessions"
    odd_folder(folder)
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        assert catalog.search("question", all=True, session_dir=str(folder))
        assert USAGE in lacks(tmp_path / "catalog.sqlite3").values()
        reporting(catalog, folder)
        listing(catalog, folder)


def test_damaged_usage_rows_of_a_once_lacking_row_are_read_again(tmp_path: Path) -> None:
    folder = tmp_path / "sessions"
    odd_folder(folder)
    database = tmp_path / "catalog.sqlite3"
    with Catalog(database) as catalog:
        listing(catalog, folder)
        reporting(catalog, folder)
        with sqlite3.connect(database) as db:
            db.execute("UPDATE usage SET input = input + 1 WHERE rowid = (SELECT MIN(rowid) FROM usage)")
            db.execute(
                "UPDATE usage_sums SET cost = cost + 1 WHERE file_id = (SELECT MAX(file_id) FROM usage_sums)"
            )
            db.execute("UPDATE usage_damage SET lines = lines + 1")
        reporting(catalog, folder)
        listing(catalog, folder)
        reporting(catalog, folder)


@pytest.mark.skipif(not hasattr(time, "tzset"), reason="time.tzset: POSIX only")
def test_rows_lacking_a_part_read_again_in_another_zone(
    tmp_path: Path, workers: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = tmp_path / "sessions"
    folder.mkdir()
    local = assistant("a1", "local", 1.0, "2025-05-01T23:30:00")  # no offset: local time
    write(
        folder / "zone.jsonl",
        header("zone", stamp="2025-05-01T22:00:00"),
        msg("u", "user", "q", ms=None) | {"timestamp": "2025-05-01T23:00:00"},
        local,
    )
    database = tmp_path / "catalog.sqlite3"
    try:
        for zone, call in [
            ("UTC", listing),
            ("Asia/Tokyo", reporting),
            ("America/New_York", listing),
            ("UTC", reporting),
            ("Asia/Tokyo", listing),
            ("America/New_York", reporting),
        ]:
            monkeypatch.setenv("TZ", zone)
            time.tzset()
            with Catalog(database) as catalog:
                call(catalog, folder)
                append(folder / "zone.jsonl", line(assistant(f"z{zone}", "more", 0.5, "2025-05-01T23:59:00")))
                listing(catalog, folder)
                reporting(catalog, folder)
    finally:
        monkeypatch.undo()
        time.tzset()


ODD_TIME = st.builds(
    "".join,
    st.tuples(
        st.sampled_from(["2025", "0000", "9999", "2024", "1970", "+002", "20a5", "\u0662\u0660\u0662\u0665"]),
        st.sampled_from(["-", "/"]),
        st.sampled_from(["01", "02", "12", "13", "00", "1a", "\u06601"]),
        st.just("-"),
        st.sampled_from(["01", "28", "29", "30", "31", "32", "00", " 1"]),
        st.sampled_from(["T", "t", " "]),
        st.sampled_from(["00", "23", "24", "25", "99", "-1", "1\u0663"]),
        st.just(":"),
        st.sampled_from(["00", "59", "60", "99", "5", "+1", "\u06659", " 1"]),
        st.just(":"),
        st.sampled_from(["00", "59", "60", "61", "-0", "\u06659", "1 "]),
        st.just("."),
        st.sampled_from(["000", "999", "1000"[:3], "-01", "+01", "1e2", "\u0665\u0665\u0665", " 12", "12 "]),
        st.sampled_from(["Z", "z", "+", " "]),
    ),
)


@settings(max_examples=200, deadline=None)
@given(ODD_TIME)
def test_the_quick_time_reading_reads_odd_times_as_javascript_does(text: str) -> None:
    assert timestamp_ms(text) == js_date_ms(text)
    assert timestamp_ms(text) == js_date_ms(text)  # and again, alike


@pytest.mark.parametrize(
    "text",
    [
        "2025-02-01T24:00:00.000Z",
        "2025-02-29T10:00:00.000Z",
        "2024-02-29T23:59:59.999Z",
        "0000-01-01T00:00:00.000Z",
        "2025-12-31T23:59:60.000Z",
        "2025-12-31T23:60:00.000Z",
        "2025-12-31T23:5:00.0000Z",
        "2025-12-31T23:59:0.0000Z",
        "2025-12-31T23:-1:00.000Z",
        "2025-12-31T23:59:-1.000Z",
        "2025-12-31T23:59:00.-01Z",
        "2025-12-31T23:59:00.+01Z",
        "2025-12-31T23:59:00. 01Z",
        "2025-12-31T23:59:00.\u0661\u0662\u0663Z",
        "2025-12-31T2\u0663:59:00.000Z",
        "2025-12-31t23:59:00.000Z",
        "2025-12-31 23:59:00.000Z",
        "+02025-12-31T23:59:00.000Z",
    ],
)
def test_odd_times_of_pis_length(text: str) -> None:
    assert timestamp_ms(text) == js_date_ms(text)


@pytest.mark.parametrize("size", [0, 70_000], ids=["short", "over-the-kept-length"])
@pytest.mark.parametrize("first", sorted(CALLS))
def test_an_unfinished_last_line_with_usage(tmp_path: Path, workers: str, first: str, size: int) -> None:
    folder = tmp_path / "sessions"
    odd_folder(folder)
    last = line(assistant("p1", "x" * size, 4.0, "2025-02-06T06:00:00.000Z"))[:-1]
    path = write(folder / "open.jsonl", header("open"), msg("u", "user", "q"), tail=last)
    fork = {**header("fork", stamp="2025-02-07T00:00:00.000Z"), "parentSession": str(path)}
    write(folder / "fork.jsonl", fork, tail=last)
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        CALLS[first](catalog, folder)
        listing(catalog, folder)
        reporting(catalog, folder)
        append(path, b"\n" + line(assistant("p2", "y", 1.0, "2025-02-06T06:01:00.000Z"))[:-1])
        CALLS[first](catalog, folder)
        reporting(catalog, folder)
        listing(catalog, folder)


def test_one_folders_listing_after_a_report(tmp_path: Path, workers: str) -> None:
    sessions_root = tmp_path / "sessions"
    folder = sessions_root / "--project--"
    odd_folder(folder)
    with Catalog(tmp_path / "catalog.sqlite3") as catalog, Catalog(":memory:") as fresh:
        reporting(catalog, sessions_root)
        listed = catalog.list("/project", str(folder))
        assert [info.path for info in listed] == [info.path for info in fresh.list("/project", str(folder))]
        assert listed == fresh.list("/project", str(folder))
        reporting(catalog, sessions_root)
        assert catalog.list_json("/project", str(folder)) == fresh.list_json("/project", str(folder))
        hits = catalog.search("question", all=True, session_dir=str(sessions_root))
        assert [h.session_id for h in hits] == [
            h.session_id for h in fresh.search("question", all=True, session_dir=str(sessions_root))
        ]


@pytest.mark.parametrize("first", sorted(CALLS))
def test_a_header_without_its_newline_after_a_damaged_line(tmp_path: Path, workers: str, first: str) -> None:
    folder = tmp_path / "sessions"
    odd_folder(folder)
    path = folder / "open.jsonl"
    path.write_bytes(b"garbled line\n" + line(header("open"))[:-1])
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        CALLS[first](catalog, folder)
        listing(catalog, folder)
        reporting(catalog, folder)
        append(path, b"\n" + line(assistant("a1", "x", 1.0, "2025-02-06T06:00:00.000Z")))
        CALLS[first](catalog, folder)
        listing(catalog, folder)
        reporting(catalog, folder)


@pytest.mark.parametrize("grow", [False, True], ids=["as-is", "grown-between"])
@pytest.mark.parametrize("outer", sorted(CALLS))
def test_another_catalog_writes_the_rows_between_a_calls_look_and_its_write_pass(
    tmp_path: Path, workers: str, outer: str, grow: bool
) -> None:
    """The other catalog makes the rows (with the other part) after this call decided which files
    are new and read them ahead for its own part only."""
    folder = tmp_path / "sessions"
    odd_folder(folder)
    database = tmp_path / "catalog.sqlite3"
    with Catalog(database) as mine, Catalog(database) as other:
        done = []

        def meanwhile(_done: int, _total: int) -> None:
            if not done:
                done.append(1)
                (listing if outer == "reporting" else reporting)(other, folder)
                if grow:
                    append(
                        folder / "usage4.jsonl",
                        line(assistant("g1", "grown", 2.5, "2025-02-05T03:00:00.000Z")),
                    )
                    append(folder / "s1.jsonl", b"garbled\n")

        if outer == "reporting":
            made = usage_report(
                "daily", session_dir=str(folder), timezone="UTC", catalog=mine, on_progress=meanwhile
            )
            assert done
            if not grow:
                assert (
                    made.to_wire(),
                    sorted((Path(s.path).name, s.reason) for s in made.skipped),
                ) == report(folder, False)
        else:
            listed = mine.list_all(str(folder), meanwhile)
            assert done
            if not grow:
                assert listed == list_all_sessions(str(folder))
        for catalog in (mine, other):
            listing(catalog, folder)
            reporting(catalog, folder)


@pytest.mark.parametrize("order", [("listing", "reporting"), ("reporting", "listing")])
def test_the_parts_without_msgspec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, order: tuple[str, str]
) -> None:
    import pisession.catalog._fastread as fastread

    monkeypatch.setenv("PISESSION_WORKERS", "1")
    monkeypatch.setattr(fastread, "_decoders", lambda: None)
    folder = tmp_path / "sessions"
    odd_folder(folder)
    path, rest = pending_then_session(folder)
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        for name in order:
            CALLS[name](catalog, folder)
        append(path, rest)
        append(
            folder / "usage5.jsonl",
            b"garbled\n" + line(assistant("n1", "x", 1.0, "2025-02-06T07:00:00.000Z")),
        )
        for name in order:
            CALLS[name](catalog, folder)
        listing(catalog, folder)
        reporting(catalog, folder)


@settings(max_examples=40, deadline=None)
# found by a CI run: a quarter's float costs, part read before the file grew, part after
@example(lines=[5, 0, 0, 0, 0, 0, 0], cuts=[0, 625], calls=["listing", "reporting"], garbage_first=False)
@given(
    lines=st.lists(st.sampled_from(range(len(ODD_LINES))), min_size=1, max_size=12),
    cuts=st.lists(st.integers(0, 2000), min_size=1, max_size=3),
    calls=st.lists(st.sampled_from(sorted(CALLS)), min_size=2, max_size=4),
    garbage_first=st.booleans(),
)
def test_a_file_grown_in_pieces_under_any_calls(
    tmp_path_factory: pytest.TempPathFactory,
    lines: list[int],
    cuts: list[int],
    calls: list[str],
    garbage_first: bool,
) -> None:
    """Odd lines written in pieces cut anywhere (inside the header too), each piece followed by a
    call for one part: every call gives what reading the files without a catalog gives."""
    tmp_path = tmp_path_factory.mktemp("grown")
    folder = tmp_path / "sessions"
    folder.mkdir()
    whole = (
        (b"not json\n" if garbage_first else b"")
        + b"\n".join([HEADER, *(ODD_LINES[n] for n in lines)])
        + b"\n"
    )
    ends = sorted({min(cut, len(whole)) for cut in cuts} | {len(whole)})
    path = folder / "grown.jsonl"
    path.write_bytes(b"")
    written = 0
    before = os.environ.get("PISESSION_WORKERS")
    os.environ["PISESSION_WORKERS"] = "1"  # (hypothesis runs a function-scoped fixture once only)
    try:
        with Catalog(tmp_path / "catalog.sqlite3") as catalog:
            for step, end in enumerate(ends):
                append(path, whole[written:end])
                written = end
                CALLS[calls[step % len(calls)]](catalog, folder)
            for name in calls:
                CALLS[name](catalog, folder)
    finally:
        if before is None:
            del os.environ["PISESSION_WORKERS"]
        else:
            os.environ["PISESSION_WORKERS"] = before


def test_a_damaged_parent_row_is_caught_for_a_forks_unfinished_last_line(tmp_path: Path) -> None:
    """The fork's only usage is a copy of its parent's on a last line without its newline: the
    parent's ids it is told by are checked too (else the copy counts twice)."""
    folder = tmp_path / "sessions"
    folder.mkdir()
    first = assistant("a1", "one", 1.0, "2025-04-01T10:00:00.000Z")
    parent = write(folder / "parent.jsonl", header("parent"), msg("u", "user", "q"), first)
    fork = {**header("fork", stamp="2025-04-01T11:00:00.000Z"), "parentSession": str(parent)}
    write(folder / "fork.jsonl", fork, msg("u", "user", "q"), tail=line(first)[:-1])
    database = tmp_path / "catalog.sqlite3"
    with Catalog(database) as catalog:
        listing(catalog, folder)
        reporting(catalog, folder)
        with sqlite3.connect(database) as db:  # the parent's packed ids, their checksum kept
            packed = marshal.dumps([("flipped", "2025-04-01T10:00:00.000Z")], 2)
            assert db.execute("UPDATE usage_ids SET ids = ?", (packed,)).rowcount == 1
        reporting(catalog, folder)
        assert report(folder, catalog)[0]["totals"]["totalCost"] == 1.0  # (the direct one reads in memory)
        listing(catalog, folder)
