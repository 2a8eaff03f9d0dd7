"""A small file is read with the json module alone (issue 14, start-up): importing orjson takes
longer than parsing a small session without it. The two parsers must read every line alike:
which lines are dropped as malformed, every id, parent, type and value, and so everything the
commands print. ``loads`` (orjson, falling back to the json module where orjson refuses a line)
is the reference here; tests/test_json.py holds both to JavaScript's ``JSON.parse``."""

from __future__ import annotations

import contextlib
import io
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pisession._json as J
import pisession._load as L
from pisession.cli import main

CASES = sorted((Path(__file__).parent / "conformance" / "cases").glob("*.jsonl"))
Parser = Callable[[Any], object]


def canonical(value: object) -> str:
    """A parsed value as text that tells apart everything a parser could get wrong: types, key
    order, -0.0, infinities (``repr`` of each scalar). Without recursion: lines nest 1000 deep."""
    out = []
    stack = [value]
    while stack:
        v = stack.pop()
        t = type(v)
        if t is dict:
            out.append(f"{{{len(v)}")  # type: ignore[arg-type]
            for k, x in reversed(v.items()):  # type: ignore[attr-defined]
                stack += [x, ("key", k)]
        elif t is list:
            out.append(f"[{len(v)}")  # type: ignore[arg-type]
            stack.extend(reversed(v))  # type: ignore[call-overload]
        elif t is tuple:  # a key marker (JSON gives no tuples)
            out.append(f"key {v[1]!r}")  # type: ignore[index]
        else:
            out.append(f"{t.__name__} {v!r}")
    return "\n".join(out)


def outcome(parse: Parser, line: bytes) -> str:
    """What a parser makes of a line, comparable across parsers, or the fact that it was refused."""
    try:
        return canonical(parse(line))
    except ValueError:
        return "refused"


@contextlib.contextmanager
def reading_with(parse: Parser) -> Iterator[None]:
    """Files read with ``parse`` whatever their size."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(L, "loads_for", lambda size: parse)
        yield


def test_a_small_file_is_parsed_without_orjson_until_orjson_is_imported() -> None:
    J._use_orjson()  # as after any dumps: then orjson is there, and every size uses it
    assert J.loads_for(100) is J.loads
    J._orjson_ready = False  # as in a fresh process (the globals set stay valid)
    try:
        assert J.loads_for(100) is J.loads_plain
        assert J.loads_for(J._SMALL_TEXT - 1) is J.loads_plain
        assert J.loads_for(J._SMALL_TEXT) is J.loads
    finally:
        J._use_orjson()


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_every_conformance_file_reads_the_same_with_either_parser(case: Path) -> None:
    lines = case.read_bytes().split(b"\n")
    assert [outcome(J.loads_plain, line) for line in lines] == [outcome(J.loads, line) for line in lines]
    read = {}
    for parse in (J.loads, J.loads_plain):
        with reading_with(parse):
            entries, unterminated, size = L.read_entries(case)
        read[parse] = (canonical(entries), unterminated, size)
    assert read[J.loads_plain] == read[J.loads]


def run(args: list[str]) -> tuple[int | str, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status: int | str = main(args)
        except RecursionError:  # a deeply nested entry (v2_deep_entries) fails to print either way
            status = "RecursionError"
    return status, out.getvalue(), err.getvalue()


def version_1(case: Path) -> bool:
    # A version-1 file is migrated in memory with ids drawn afresh on every read.
    first = case.read_bytes().split(b"\n", 1)[0]
    try:
        version = json.loads(first).get("version")
    except (ValueError, AttributeError):
        return False
    return not isinstance(version, int) or version < 2


@pytest.mark.parametrize("case", [c for c in CASES if not version_1(c)], ids=lambda p: p.stem)
def test_tree_prints_the_same_through_either_parser(case: Path) -> None:
    for options in ([], ["--all"], ["--json"]):
        printed = {}
        for parse in (J.loads, J.loads_plain):
            with reading_with(parse):
                printed[parse] = run(["tree", *options, str(case)])
        assert printed[J.loads_plain] == printed[J.loads], options


# Lines a hostile or broken writer could leave: deep nesting around both parsers' limits (the json
# module's recursion limit near 1000 levels, orjson's 1024), lone and paired surrogate escapes,
# repeated keys, numbers past every range, non-object values, BOMs, invalid UTF-8, NaN and
# Infinity, whitespace JSON does not allow, truncation.
def nested(depth: int, inner: str) -> str:
    return '{"a":' * depth + inner + "}" * depth


fragments = st.sampled_from(
    [
        '"\\ud800"', '"\\udc00\\ud800"', '"\\ud83d\\ude00"', '"\ud800"', "1e400", "-1e400", "1e-400",
        "18446744073709551616", "-9223372036854775809", "9223372036854775807", "12345678901234567890123",
        "0.1", "-0", "-0.0", "5e-324", "NaN", "Infinity", "-Infinity", "true", "null", '"x"', "[]", "{}",
        "[1,]", "01", "1.", ".5", '"\\u00e9"', '"\\x41"', "'a'", '"tab\there"', "\u00a01", "\ufeff{}",
    ]
)  # fmt: skip


@st.composite
def hostile_lines(draw: st.DrawFn) -> bytes:
    kind = draw(st.sampled_from(["object", "deep", "value", "bytes"]))
    text: str
    if kind == "deep":  # whole: a cut or a stray byte would make both parsers refuse it early
        depth = draw(st.integers(min_value=985, max_value=1030))
        inner = draw(st.one_of(fragments, st.sampled_from(["1", '"x"', "[]", "0.5", "null"])))
        return nested(depth, inner).encode("utf-8", "surrogatepass")
    if kind == "value":
        text = draw(fragments)
    elif kind == "bytes":
        return draw(st.binary(max_size=40))
    else:
        names = st.sampled_from(["id", "type", "parentId", "a", "id", "\ud800", ""])
        keys = draw(st.lists(names, max_size=5))
        text = "{" + ",".join(f"{json.dumps(k)}:{draw(fragments)}" for k in keys) + "}"
    data = text.encode("utf-8", "surrogatepass")
    prefix = draw(st.sampled_from([b"", b"\xef\xbb\xbf", b" ", b"\t", b"\x0c", b"\xff"]))
    suffix = draw(st.sampled_from([b"", b" ", b"\r", b"\x00", b"}", b"\xed\xa0\x80"]))
    cut = draw(st.one_of(st.none(), st.integers(min_value=0, max_value=len(data))))
    return prefix + (data if cut is None else data[:cut]) + suffix


@settings(max_examples=400, deadline=None)
@given(st.lists(hostile_lines(), min_size=1, max_size=4))
def test_hostile_lines_parse_alike(lines: list[bytes]) -> None:
    for line in lines:
        assert outcome(J.loads_plain, line) == outcome(J.loads, line), line[:80]
        plain, reference = L.parse_line(line, J.loads_plain), L.parse_line(line)
        assert canonical(plain) == canonical(reference), line[:80]


@pytest.mark.parametrize("depth", [990, 1000, 1010, 1023, 1024, 1025, 1100])
def test_nesting_near_the_limits_reads_alike(depth: int) -> None:
    line = nested(depth, "1").encode()
    assert outcome(J.loads_plain, line) == outcome(J.loads, line)
