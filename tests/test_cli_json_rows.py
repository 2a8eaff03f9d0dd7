"""``ls --json`` writes its rows with orjson: the bytes must be the ones the json module writes.

``emit_json_rows`` is compared with ``emit_json`` (``json.dumps(indent=2, ensure_ascii=False)``,
then control characters the terminal must not see escaped) on odd data: every C0 control, DEL
and the C1 controls, quotes and backslashes, U+2028/U+2029, astral characters, lone surrogates,
integers at and beyond 64 bits, floats, booleans, nulls, nested values, empty rows, no rows.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from typing import Any

import pytest

from pisession.cli import output

ODD_TEXT = "".join(chr(c) for c in range(0x00, 0xA1)) + '"\\/ é ✨ 😀 \u2028\u2029 \ue000 \ufeff end'

CASES: list[list[dict[str, Any]]] = [
    [],
    [{}],
    [{"path": "/p/a.jsonl", "id": "x", "cwd": "/p", "created": None, "messageCount": 0}],
    [{"firstMessage": ODD_TEXT, "allMessagesText": ODD_TEXT * 3, "name": "\x1b]52;c;aGk=\x07"}],
    [{"c1": "\x85\x9b31m", "del": "a\x7fb", "nbsp": "\xa0\xa9\xb0", "edge": "\u0080\u009f"}],
    [{"big": 2**63 - 1, "small": -(2**63), "top": 2**64 - 1, "t": True, "f": False}],
    [{"beyond": 2**64}, {"below": -(2**63) - 1}],  # json writes them; orjson cannot
    [{"float": 1e16, "nan": float("nan"), "half": 0.5}],  # json's repr, not orjson's
    [{"nested": {"id": [1, {"a": None}]}, "id": 42}],  # a header id that is not a string
    [{"surrogate": "a\ud800b"}],  # orjson refuses it
    [{"a": "x"}, {"b": "y\n\t\r\b\f"}, {"c": ""}],
]


class _Text(io.StringIO):
    """A text stream without a byte buffer under it."""

    encoding = "utf-8"


def _expected(rows: list[dict[str, Any]]) -> str:
    stream = _Text()
    old = sys.stdout
    sys.stdout = stream
    try:
        output.emit_json(rows)
    finally:
        sys.stdout = old
    return stream.getvalue()


@pytest.mark.parametrize("rows", CASES, ids=range(len(CASES)))
def test_rows_are_written_as_the_json_module_writes_them(rows: list[dict[str, Any]]) -> None:
    expected = _expected(rows)
    assert expected == output.safe(json.dumps(rows, indent=2, ensure_ascii=False)) + "\n"
    # through a text stream
    stream = _Text()
    old = sys.stdout
    sys.stdout = stream
    try:
        output.emit_json_rows(rows)
    finally:
        sys.stdout = old
    assert stream.getvalue() == expected
    # through the byte buffer under a UTF-8 text stream (the fast path)
    raw = io.BytesIO()
    text = io.TextIOWrapper(raw, encoding="utf-8", errors="surrogatepass", newline="\n")
    sys.stdout = text
    try:
        text.write("before ")
        output.emit_json_rows(rows)
        text.flush()
    finally:
        sys.stdout = old
    assert raw.getvalue() == ("before " + expected).encode("utf-8", "surrogatepass")


def test_only_rows_of_plain_values_go_to_orjson() -> None:
    pytest.importorskip("orjson")
    assert output._orjson_rows(CASES[3]) is not None
    assert output._orjson_rows(CASES[5]) is not None
    for rows in (CASES[6], CASES[7], CASES[8], CASES[9]):
        assert output._orjson_rows(rows) is None


def test_a_real_stdout_gets_the_same_bytes() -> None:
    """A child process writing to a pipe (the buffer path) against the json module's text."""
    rows = [row for case in CASES for row in case if "surrogate" not in row]
    program = (
        "import json, sys\n"
        "from pisession.cli import output\n"
        "rows = json.loads(sys.stdin.read())\n"
        "(output.emit_json if sys.argv[1] == 'json' else output.emit_json_rows)(rows)\n"
    )
    data = json.dumps(rows)
    ours, theirs = (
        subprocess.run(
            [sys.executable, "-c", program, how],
            input=data.encode(),
            capture_output=True,
            check=True,
            env={"PYTHONIOENCODING": "utf-8", "PATH": ""},
        ).stdout
        for how in ("rows", "json")
    )
    assert ours == theirs
    assert b"\\u007f" in ours and b"\\u0085" in ours and b"\xc2\xa0" in ours


def test_a_reader_that_stops_early_is_met_as_before() -> None:
    """``ls --json | head -c 100``: the exit status and stderr are the json path's."""
    program = (
        "import sys\n"
        "from pisession.cli import output\n"
        "rows = [{'text': 'x' * 1000, 'n': i} for i in range(3000)]\n"
        "(output.emit_json if sys.argv[1] == 'json' else output.emit_json_rows)(rows)\n"
    )
    outcomes = []
    for how in ("rows", "json"):
        child = subprocess.Popen(
            [sys.executable, "-c", program, how], stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        assert child.stdout is not None and child.stderr is not None
        child.stdout.read(100)
        child.stdout.close()
        err = child.stderr.read()
        outcomes.append((child.wait(timeout=60), err.count(b"BrokenPipeError") > 0))
    assert outcomes[0] == outcomes[1]
