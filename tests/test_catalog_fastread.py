"""The catalog's one-decode reading of a line agrees with the exact reading on every line.

:func:`pisession.catalog._fastread.read_lines` takes the lines whose types are plain through one
msgspec decode and hands the rest to the exact reading (``feed_lines`` + ``usage_rows``). These
tests feed both the same lines, odd ones among them, and compare everything they give.
"""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pisession._discovery import SessionSummary
from pisession.catalog import _fastread
from pisession.catalog._fastread import read_lines
from pisession.catalog._schema import LISTING, USAGE

HEADER = b'{"type":"session","version":3,"id":"s1","timestamp":"2025-04-01T10:00:00.000Z","cwd":"/p"}'


def _line(value: Any) -> bytes:
    return json.dumps(value, ensure_ascii=False).encode("utf-8", "surrogatepass")


def _assistant(**changes: Any) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "hm", "thinkingSignature": "sig"},
            {"type": "text", "text": "Hello"},
            {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a"}},
            {"type": "text", "text": "world"},
        ],
        "provider": "anthropic",
        "model": "claude-sonnet-4-5",
        "usage": {
            "input": 5,
            "output": 1106,
            "cacheRead": 15922,
            "cacheWrite": 1888,
            "totalTokens": 18921,
            "cost": {"input": 0.1, "total": 0.0284616},
        },
        "stopReason": "stop",
        "timestamp": 1743502550084,
    }
    entry: dict[str, Any] = {"type": "message", "id": "a1", "timestamp": "2025-04-01T10:16:01.869Z"}
    for key, value in changes.items():
        # m_KEY: a field of the message, u_KEY: of its usage, KEY: of the entry
        target = entry
        if key.startswith("m_"):
            key, target = key[2:], message
        elif key.startswith("u_"):
            key, target = key[2:], message["usage"] if isinstance(message.get("usage"), dict) else {}
        if value is _DROP:
            target.pop(key, None)
        else:
            target[key] = value
    entry["message"] = message
    return entry


_DROP = object()

ODD_LINES: list[bytes] = [
    _line(_assistant()),
    _line(_assistant(m_responseModel="claude-x")),
    _line(_assistant(m_responseModel=None)),
    _line(_assistant(m_provider=_DROP)),
    _line(_assistant(m_model=7)),
    _line(
        _assistant(m_usage={"input": 1.5, "output": 2, "cacheRead": 0, "cacheWrite": 0, "cost": {"total": 1}})
    ),
    _line(_assistant(m_usage={"input": 1, "output": 2, "cacheRead": 0, "cost": {"total": 1}})),
    _line(
        _assistant(
            m_usage={"input": 2**60, "output": 2, "cacheRead": 0, "cacheWrite": 0, "cost": {"total": 1}}
        )
    ),
    _line(
        _assistant(m_usage={"input": "3", "output": 2, "cacheRead": 0, "cacheWrite": 0, "cost": {"total": 1}})
    ),
    _line(_assistant(m_usage={"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "cost": None})),
    _line(_assistant(m_usage={"input": 1, "output": 2, "cacheRead": 0, "cacheWrite": 0, "cost": {}})),
    _line(
        _assistant(
            m_usage={"input": True, "output": 2, "cacheRead": 0, "cacheWrite": 0, "cost": {"total": 1}}
        )
    ),
    _line(_assistant(m_usage=None)),
    _line(_assistant(m_usage=0)),
    _line(_assistant(m_usage=_DROP)),
    _line(_assistant(m_timestamp="2025-04-01T10:16:01.869Z")),
    _line(_assistant(m_timestamp=True)),
    _line(_assistant(m_timestamp=-5)),
    _line(_assistant(m_timestamp=1.5e12)),
    _line(_assistant(m_timestamp=_DROP)),
    _line(_assistant(m_content=None)),
    _line(_assistant(m_content=_DROP)),
    _line(_assistant(m_content=5)),
    _line(_assistant(m_content="")),
    _line(_assistant(m_content=[])),
    _line(_assistant(m_content=["text", {"type": "text", "text": "x"}])),
    _line(_assistant(m_content=[{"type": "text", "text": None}, {"type": "text", "text": "y"}])),
    _line(_assistant(m_content=[{"type": "text", "text": 12}])),
    _line(_assistant(m_content=[{"type": "text"}])),
    _line(_assistant(m_content=[{"text": "no type"}])),
    _line(_assistant(m_role=5)),
    _line(_assistant(m_role="toolResult")),
    _line(_assistant(m_role="toolResult", m_usage=_DROP)),
    _line(_assistant(m_role="system", m_usage=_DROP)),
    _line(_assistant(m_role="user", m_usage=_DROP, m_content="first prompt")),
    _line(_assistant(m_role="user", m_usage=_DROP, m_content="second prompt")),
    _line(_assistant(m_role="user", m_usage=_DROP, m_content=[{"type": "text", "text": "list prompt"}])),
    _line(_assistant(m_role="user", m_content="user with usage")),
    _line(_assistant(id=5, timestamp=None)),
    _line(_assistant(timestamp="not a date")),
    _line(_assistant(timestamp="2026-02-30T10:00:00.000Z")),
    _line(_assistant(timestamp="2025-04-01T25:00:00.000Z")),
    _line(_assistant(timestamp="2025-04-01T10:00:00Z")),
    _line(_assistant(m_content=[{"type": "text", "text": "lone \ud800 surrogate"}])),
    _line(_assistant(m_content=[{"type": "text", "text": "esc \u001b[0m and \u2028"}])),
    _line(_assistant(m_content="line\rwith a CR")),
    _line({"type": "message"}),
    _line({"type": "message", "message": None}),
    _line({"type": "message", "message": "text"}),
    _line({"type": "message", "message": {"content": "no role"}}),
    _line({"type": "session_info", "name": "  My name  "}),
    _line({"type": "session_info", "name": 5}),
    _line({"type": "usage", "provider": "p", "model": "m", "usage": {"input": 1, "cost": {"total": 2}}}),
    _line({"type": "compaction", "summary": "s", "usage": {"input": 1, "output": 1, "cost": {"total": 2}}}),
    _line({"type": "label", "targetId": "x", "label": "l"}),
    _line({"type": 5}),
    _line({"no": "type"}),
    _line([1, 2]),
    b'{"type":"message","message":{"role":"assistant","content":"dup","content":"keys",'
    b'"provider":"p","model":"m","timestamp":1,"usage":{"input":1,"output":1,"cacheRead":0,'
    b'"cacheWrite":0,"cost":{"total":1}}}}',
    b'{"type":"usage","provider":"p","model":"m","\\u0075sage":{"input":1,"cost":{"total":2}}}',
    b'{"type":"message","message":{"role":"assistant","content":"e","provider":"p","model":"m",'
    b'"timestamp":1,"\\u0075sage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"cost":{"total":3}}}}',
    b'{"type":"message","message":{"role":"assistant","content":"nan","provider":"p","model":"m",'
    b'"timestamp":1,"usage":{"input":1,"output":1,"cacheRead":0,"cacheWrite":0,"cost":{"total":1e400}}}}',
    b'{"type":"message","message":{"role":"user","content":"bad \xff utf8","timestamp":1}}',
    b'{"type":"message","message":{"role":"user","content":"cut short',
    b"not json at all",
    b'{"type":"usage", garbage "usage"}',
    b"   ",
    b"",
    b'  {"type":"message","message":{"role":"user","content":"padded","timestamp":2}}  ',
    b"[" * 5000 + b"]" * 5000,
]


def _state(summary: SessionSummary) -> tuple[Any, ...]:
    return (
        summary.header,
        summary.foreign,
        summary.message_count,
        summary.first_message,
        tuple(summary.texts),
        summary.name,
        summary.last_activity,
    )


def _same_rows(quick: list[Any], exact: list[Any]) -> bool:
    def norm(value: Any) -> Any:
        if isinstance(value, float) and math.isnan(value):
            return "nan"
        return (type(value) if isinstance(value, (int, float)) else None, value)

    return [tuple(norm(v) for v in row) for row in quick] == [tuple(norm(v) for v in row) for row in exact]


def _both(batches: list[list[bytes]]) -> tuple[SessionSummary, SessionSummary, Any, Any]:
    quick, exact = SessionSummary(), SessionSummary()
    quick_rows: list[Any] = []
    exact_rows: list[Any] = []
    quick_bad = exact_bad = 0
    for batch in batches:
        rows, bad = read_lines(quick, batch)
        quick_rows += rows
        quick_bad += bad
        rows, bad = _fastread._exact(exact, batch)
        exact_rows += rows
        exact_bad += bad
    return quick, exact, (quick_rows, quick_bad), (exact_rows, exact_bad)


def _check(batches: list[list[bytes]]) -> None:
    quick, exact, (quick_rows, quick_bad), (exact_rows, exact_bad) = _both(batches)
    assert _state(quick) == _state(exact)
    assert _same_rows(quick_rows, exact_rows), (quick_rows, exact_rows)
    assert quick_bad == exact_bad
    _check_parts(batches, exact, exact_rows, exact_bad)


def _check_parts(batches: list[list[bytes]], exact: SessionSummary, exact_rows: Any, exact_bad: int) -> None:
    """A read that leaves a part out gives the rest as the exact reading does: without the usage
    rows, the whole listing; without the listing, every usage row and damaged line, and the
    header that tells a session."""
    listing_only, usage_only = SessionSummary(), SessionSummary()
    rows: list[Any] = []
    bad = 0
    for batch in batches:
        assert read_lines(listing_only, batch, lacks=USAGE) == ([], 0)
        found, damaged = read_lines(usage_only, batch, lacks=LISTING)
        rows += found
        bad += damaged
    assert _state(listing_only) == _state(exact)
    assert _same_rows(rows, exact_rows), (rows, exact_rows)
    assert bad == exact_bad
    assert (usage_only.header, usage_only.foreign) == (exact.header, exact.foreign)


def test_the_quick_way_takes_plain_lines() -> None:
    """Guard for the test itself: plain lines do go the quick way (not all to the exact one)."""
    calls = []
    original = _fastread._exact_line

    def counting(*args: Any) -> int:
        calls.append(args[1])
        return original(*args)

    lines = [
        HEADER,
        *[_line(_assistant()) for _ in range(5)],
        _line(_assistant(m_role="toolResult", m_usage=_DROP)),
    ]
    _fastread._exact_line = counting  # type: ignore[assignment]
    try:
        summary = SessionSummary()
        rows, _ = read_lines(summary, lines)
    finally:
        _fastread._exact_line = original  # type: ignore[assignment]
    assert calls == []
    assert len(rows) == 5 and summary.message_count == 6


@pytest.mark.parametrize("line", ODD_LINES, ids=range(len(ODD_LINES)))
def test_each_odd_line_reads_as_the_exact_reading_does(line: bytes) -> None:
    _check([[HEADER, _line(_assistant(m_role="user", m_usage=_DROP, m_content="before")), line, line]])


def test_plain_lines_read_for_usage_alone_are_decoded_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Guard for the tests: plain lines read for their usage alone do take the one call (the
    line-by-line reading is left to lines it cannot take)."""
    def refuse(*args: Any) -> Any:
        raise AssertionError("read line by line")

    monkeypatch.setattr(_fastread, "_usage_only", refuse)
    user = _line(_assistant(m_role="user", m_usage=_DROP))
    lines = [HEADER, *[_line(_assistant()) for _ in range(5)], user]
    rows, damaged = read_lines(SessionSummary(), lines, lacks=LISTING)
    assert len(rows) == 5 and damaged == 0


def test_lines_read_at_once_are_those_split_on_newlines_alone() -> None:
    # the decoder of many lines also splits at "\r" and passes over blank lines: a line holding
    # two entries across a "\r", beside a blank line, must not shift the entries onto the lines
    two = _line(_assistant()) + b"\r" + _line(_assistant(m_provider="q"))
    _check([[HEADER, two, b""]])
    _check([[HEADER, b"", two, _line(_assistant())]])
    _check([[HEADER, _line(_assistant()) + b"\r", b"  ", _line(_assistant())]])


@pytest.mark.parametrize("key", ["\\u0075sage", "u\\u0073age", "us\\u0061ge", "usa\\u0067e", "usag\\u0065"])
def test_a_usage_key_written_with_any_escaped_letter_is_counted(key: str) -> None:
    # the line is looked at only if it holds a mark: each letter's escape must carry it
    from pisession._attribution import usage_item
    from pisession._load import parse_line
    from pisession.catalog._usage import usage_rows

    line = (
        '{"type":"message","id":"e1","timestamp":"2026-01-02T03:04:05.006Z","message":{"role":"assistant",'
        f'"content":"x","provider":"p","model":"m","timestamp":1,"{key}":{{"input":1,"output":2,'
        '"cacheRead":0,"cacheWrite":0,"cost":{"total":0.5}}}}'
    ).encode()
    entry = parse_line(line)
    assert entry is not None and usage_item(entry) is not None  # Pi counts it
    rows, damaged = usage_rows([line], None)
    assert damaged == 0 and [row[4:] for row in rows] == [(1, 2, 0, 0, 0.5)]
    _check([[HEADER, line]])


def test_all_odd_lines_in_one_batch_and_split_over_batches() -> None:
    _check([[HEADER, *ODD_LINES]])
    _check([[HEADER], ODD_LINES[:20], ODD_LINES[20:]])
    _check([[b"", b"garbage", HEADER, *ODD_LINES[:10]], ODD_LINES[10:]])


def test_a_file_that_is_no_session_gives_nothing() -> None:
    _check([[b"garbage", _line(_assistant()), HEADER, *ODD_LINES]])
    _check([[b"", b"{not json"], [_line({"type": "label"}), HEADER]])


def test_a_header_with_no_timestamp_dates_undated_usage_at_zero() -> None:
    header = b'{"type":"session","version":3,"id":"s1","cwd":"/p"}'
    _check([[header, _line(_assistant(timestamp=_DROP)), _line(_assistant(timestamp="garbage"))]])


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**64), 2**64)
    | st.floats(allow_nan=False)
    | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)
_FIELDS = st.sampled_from(
    [
        "role",
        "content",
        "timestamp",
        "provider",
        "model",
        "responseModel",
        "usage",
        "input",
        "cacheWrite",
        "cost",
    ]
)


@settings(max_examples=300, deadline=None)
@given(
    changes=st.lists(st.tuples(st.sampled_from(["m_", "u_", ""]), _FIELDS, _JSON), max_size=3),
    more=st.lists(st.sampled_from(ODD_LINES), max_size=4),
)
def test_random_values_read_alike(changes: list[tuple[str, str, Any]], more: list[bytes]) -> None:
    entry = _assistant(**{prefix + field: value for prefix, field, value in changes})
    _check([[HEADER, _line(entry), *more, _line(entry)]])


_DIGITS = st.sampled_from("0123456789")


@settings(max_examples=500, deadline=None)
@given(
    parts=st.tuples(
        st.integers(0, 9999), st.integers(0, 13), st.integers(0, 32), st.integers(0, 25), st.integers(0, 61)
    ),
    seconds=st.text(_DIGITS | st.sampled_from(" +-٣x"), min_size=2, max_size=2),
    ms=st.text(_DIGITS | st.sampled_from(" +٣"), min_size=3, max_size=3),
)
def test_a_usage_time_is_what_javascript_reads(parts: tuple[int, ...], seconds: str, ms: str) -> None:
    from pisession._js import js_date_ms
    from pisession.catalog._usage import timestamp_ms

    year, month, day, hour, minute = parts
    stamp = f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}:{seconds}.{ms}Z"
    assert timestamp_ms(stamp) == js_date_ms(stamp)


def test_an_entry_cut_over_two_lines_is_two_damaged_lines_when_read_at_once() -> None:
    # the decoder of many lines reads a value across a newline, and two values on one line:
    # with as many values as lines, the entries must still not be taken for the lines
    whole = _line(_assistant()).decode()
    cut = whole.index('"message": ') + len('"message": ')
    first, second = whole[:cut].encode(), whole[cut:].encode()
    _check([[HEADER, first, second, b"{} {}"]])
    _check([[HEADER, first, second, b'{"type":"label"}{"type":"label"}', _line(_assistant())]])
    # (a line ending in a brace may still hold half an entry: {"a": {} / })
    _check([[HEADER, b'{"type":"message","x":{}', b'}', b"{} {}"]])
