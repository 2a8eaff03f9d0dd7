"""pisession._json against JavaScript's JSON.parse / JSON.stringify.

Fixed cases pin each rule; the live tests send hypothesis-generated values and texts to a Node
process and compare byte for byte.  Every dumps test runs through each encoder route (orjson
with Fragments, orjson for plain values only, the json C encoder, the Python encoder), because
which route runs depends on what is installed and on the value.
"""

from __future__ import annotations

import contextlib
import copy
import enum
import json
import math
import shutil
import subprocess
from collections import OrderedDict
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pisession import _json as J
from pisession._json import decode_utf8, dumps, loads

J._use_orjson()  # orjson is imported by the first dumps or loads: the encoder routes below need it set up

# --------------------------------------------------------------------------------------------
# Encoder routes
# --------------------------------------------------------------------------------------------

ROUTES = ["orjson-fragment", "orjson-plain", "json-c", "python"]


@contextlib.contextmanager
def route(name: str) -> Iterator[Callable[[object], str]]:
    """Force one encoder route (module globals are looked up at call time)."""
    saved = {k: getattr(J, k) for k in ("_Fragment", "_orjson_dumps")}
    try:
        if name == "orjson-fragment":
            if J._Fragment is None:
                pytest.skip("orjson with orjson.Fragment is not installed")
            yield J.dumps
        elif name == "orjson-plain":
            if J._orjson_dumps is None:
                pytest.skip("orjson is not installed")
            J._Fragment = None
            yield J.dumps
        elif name == "json-c":
            J._Fragment = None
            J._orjson_dumps = None
            yield J.dumps
        else:
            yield J._python_dumps
    finally:
        for k, v in saved.items():
            setattr(J, k, v)


def all_routes(value: object) -> dict[str, str]:
    out = {}
    for name in ROUTES:
        if name == "orjson-fragment" and J._Fragment is None:
            continue
        if name == "orjson-plain" and J._orjson_dumps is None:
            continue
        with route(name) as enc:
            out[name] = enc(value)
    return out


@pytest.fixture(params=ROUTES)
def enc(request: pytest.FixtureRequest) -> Iterator[Callable[[object], str]]:
    with route(request.param) as f:
        yield f


# --------------------------------------------------------------------------------------------
# dumps: fixed cases
# --------------------------------------------------------------------------------------------

NUMBERS = [
    (0, "0"),
    (-7, "-7"),
    (5.0, "5"),
    (-5.0, "-5"),
    (0.0, "0"),
    (-0.0, "0"),
    (0.5, "0.5"),
    (0.1 + 0.2, "0.30000000000000004"),
    (1e-4, "0.0001"),
    (1e-05, "0.00001"),
    (1.5e-05, "0.000015"),
    (3.75e-06, "0.00000375"),
    (1e-06, "0.000001"),
    (1e-07, "1e-7"),
    (1.5e-07, "1.5e-7"),
    (1e-10, "1e-10"),
    (5e-324, "5e-324"),
    (123456789012345.67, "123456789012345.67"),
    (1e15, "1000000000000000"),
    (1e16, "10000000000000000"),
    (2.0**60, "1152921504606847000"),
    (1e20, "100000000000000000000"),
    (1e21, "1e+21"),
    (-1e21, "-1e+21"),
    (1.23e22, "1.23e+22"),
    (1.7976931348623157e308, "1.7976931348623157e+308"),
    (float("nan"), "null"),
    (float("inf"), "null"),
    (float("-inf"), "null"),
    (2**53, "9007199254740992"),
    (-(2**53), "-9007199254740992"),
    (2**53 + 1, "9007199254740992"),  # the double nearest: ties to even
    (2**53 + 3, "9007199254740996"),
    (12345678901234567890, "12345678901234567000"),
    (-12345678901234567890, "-12345678901234567000"),
    (2**64, "18446744073709552000"),
    (10**21, "1e+21"),
    (10**22 + 1, "1e+22"),
    (10**400, "null"),
    (-(10**400), "null"),
    (True, "true"),
    (False, "false"),
    (None, "null"),
]


@pytest.mark.parametrize(("value", "expected"), NUMBERS, ids=[repr(v) for v, _ in NUMBERS])
def test_numbers(enc: Callable[[object], str], value: object, expected: str) -> None:
    assert enc(value) == expected
    assert enc([value]) == f"[{expected}]"
    assert enc({"k": value, "z": [value]}) == f'{{"k":{expected},"z":[{expected}]}}'


def test_number_subclasses(enc: Callable[[object], str]) -> None:
    class Color(enum.IntEnum):
        RED = 1

    class F(float):
        def __repr__(self) -> str:
            return "F!"

    assert enc([Color.RED, F(2.0), F(1e-5), {"k": Color.RED}]) == '[1,2,0.00001,{"k":1}]'


STRINGS = [
    ("plain", '"plain"'),
    ('q"b\\s/', '"q\\"b\\\\s/"'),
    ("\b\f\n\r\t", '"\\b\\f\\n\\r\\t"'),
    ("\x00\x01\x0b\x1f", '"\\u0000\\u0001\\u000b\\u001f"'),
    ("\x7f\x80\x9f", '"\x7f\x80\x9f"'),
    ("\u2028\u2029", '"\u2028\u2029"'),
    ("é日本😀\ufeff", '"é日本😀\ufeff"'),
    ("\ud800", '"\\ud800"'),
    ("\udfff", '"\\udfff"'),
    ("a\udc00\ud800b", '"a\\udc00\\ud800b"'),
    ("\ud83d\ude00", '"😀"'),  # a pair in JavaScript's UTF-16: one character
    ("\ud83d\ud83d\ude00\ude00", '"\\ud83d😀\\ude00"'),
]


@pytest.mark.parametrize(("value", "expected"), STRINGS, ids=[ascii(v) for v, _ in STRINGS])
def test_strings(enc: Callable[[object], str], value: str, expected: str) -> None:
    assert enc(value) == expected
    assert enc([value]) == f"[{expected}]"
    assert enc({value: 1}) == f"{{{expected}:1}}"


def test_surrogates_beside_other_fixes(enc: Callable[[object], str]) -> None:
    assert enc({"1": "\ud800", "a": [5.0, "\udc00"]}) == '{"1":"\\ud800","a":[5,"\\udc00"]}'


def test_key_order(enc: Callable[[object], str]) -> None:
    value = {
        "b": 1,
        "4294967295": 2,  # 2**32 - 1: not an array index
        "4294967294": 3,
        "01": 4,
        "-1": 5,
        "10": 6,
        "2": 7,
        "0": 8,
        "1.5": 9,
        "": 10,
        "9007199254740993": 11,
        "\u0661": 12,  # ARABIC-INDIC DIGIT ONE: a digit to Python, not to JavaScript
    }
    assert enc(value) == (
        '{"0":8,"2":7,"10":6,"4294967294":3,"b":1,"4294967295":2,"01":4,"-1":5,'
        '"1.5":9,"":10,"9007199254740993":11,"\u0661":12}'
    )
    assert enc([{"z": 1, "3": {"y": 2, "1": 3}}]) == '[{"3":{"1":3,"y":2},"z":1}]'


def test_non_str_keys_become_js_strings(enc: Callable[[object], str]) -> None:
    assert enc({True: 1, None: 2, 1.5: 3, 2.0: 4, -0.0: 5, 10**21: 6}) == (
        '{"0":5,"2":4,"true":1,"null":2,"1.5":3,"1e+21":6}'
    )
    assert enc({float("nan"): 1, float("inf"): 2, 2**53 + 1: 3}) == (
        '{"NaN":1,"Infinity":2,"9007199254740992":3}'
    )
    # 1 and "1" are one key in JavaScript: first position, last value
    assert enc({"a": 0, 1: "x", "b": 0, "1": "y"}) == '{"1":"y","a":0,"b":0}'


def test_containers(enc: Callable[[object], str]) -> None:
    assert enc({}) == "{}"
    assert enc([]) == "[]"
    assert enc(()) == "[]"
    assert enc((1, (2.5, []), {"a": ()})) == '[1,[2.5,[]],{"a":[]}]'
    assert enc(OrderedDict([("b", 1.0), ("a", 2)])) == '{"b":1,"a":2}'

    class L(list[Any]):
        pass

    class S(str):
        def __str__(self) -> str:
            return "wrong"

    assert enc(L([S("x"), {S("k"): 1.0}])) == '["x",{"k":1}]'


def test_unsupported_values_raise_type_error(enc: Callable[[object], str]) -> None:
    for bad in ({1, 2}, object(), b"bytes", [1, {"a": {2}}], {"a": 1j}, {(1, 2): 3}):
        with pytest.raises(TypeError):
            enc(bad)


def test_circular_and_too_deep_raise_value_error() -> None:
    a: list[Any] = [1.5]
    a.append(a)
    d: dict[str, Any] = {"x": 0.0}
    d["self"] = d
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    for value in (a, d, deep):
        for name in ROUTES:
            with contextlib.suppress(pytest.skip.Exception), route(name) as enc, pytest.raises(ValueError):
                enc(value)


def test_moderate_nesting_works_on_every_route() -> None:
    # deeper than orjson's 254 levels: orjson refuses, the json encoder takes over
    deep: Any = [1.0]
    for _ in range(200):
        deep = {"a": [deep]}
    expected = '{"a":[' * 200 + "[1]" + "]}" * 200
    assert set(all_routes(deep).values()) == {expected}


def test_dumps_does_not_mutate_its_argument() -> None:
    value = {"b": [5.0, {"2": 1e-7, "1": 2**60}], "0": {"x": (1.0,)}, 3: "k"}
    before = copy.deepcopy(value)
    assert all_routes(value)
    assert value == before and list(value) == list(before)
    assert list(value["b"][1]) == ["2", "1"]  # type: ignore[index]


def test_typical_entry_takes_the_fast_path() -> None:
    entry = {
        "type": "message",
        "id": "a1b2c3d4",
        "parentId": None,
        "timestamp": "2025-01-15T10:30:00.000Z",
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": "héllo — world\n" * 50}],
            "usage": {"input": 1234, "cost": {"input": 0.003702, "total": 0.0120}},
            "timestamp": 1736937000000,
        },
    }
    assert J._plain(entry)
    assert J._js_ready(entry) is entry  # nothing copied
    cost: dict[str, Any] = entry["message"]["usage"]["cost"]  # type: ignore[index]
    cost["cacheWrite"] = 0.0
    assert not J._plain(entry)
    ready = J._js_ready(entry)
    assert ready is not entry and ready["message"]["content"] is entry["message"]["content"]  # type: ignore[index]
    python_json = json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
    assert python_json.endswith('"cacheWrite":0.0}},"timestamp":1736937000000}}')
    assert set(all_routes(entry).values()) == {python_json.replace('"cacheWrite":0.0}', '"cacheWrite":0}')}


# --------------------------------------------------------------------------------------------
# loads: fixed cases
# --------------------------------------------------------------------------------------------

LOADERS: dict[str, Callable[[Any], Any]] = {"loads": loads, "json-module": J._loads_json}


@pytest.fixture(params=list(LOADERS))
def load(request: pytest.FixtureRequest) -> Callable[[Any], Any]:
    return LOADERS[request.param]


@pytest.mark.parametrize(
    "text",
    [
        "NaN",
        "-NaN",
        "Infinity",
        "-Infinity",
        "[1,NaN]",
        '{"a":Infinity}',
        "",
        " ",
        "[1,]",
        '{"a":1,}',
        "01",
        "1.",
        ".5",
        "+1",
        "0x10",
        "'a'",
        '"\\x41"',
        '"a\x00"',
        '"tab\there"',
        "\ufeff1",
        "\x0c1",
        "1\x0b",
        "\xa01",
        "1\u2028",
        "[1] [2]",
        "nul",
        "True",
        "// c\n1",
        '"\\ud800',
    ],
)
def test_loads_rejects(load: Callable[[Any], Any], text: str) -> None:
    with pytest.raises(ValueError):
        load(text)


def test_loads_accepts(load: Callable[[Any], Any]) -> None:
    assert load(' \t\r\n{"a" : [ 1 , 2.5 , "x" ] }\n') == {"a": [1, 2.5, "x"]}
    assert load('"\\ud800"') == "\ud800"
    assert load('"\\udc00\\ud800"') == "\udc00\ud800"
    assert load('"\\ud83d\\ude00"') == "😀"
    assert load('"\x7f\u2028\ufeff"') == "\x7f\u2028\ufeff"
    assert load('"\ud800"') == "\ud800"  # a raw surrogate in a str, as a JS string may hold
    assert load("-0") == 0 and load("1E2") == 100.0 and load("1e-400") == 0.0
    assert math.copysign(1, load("-0.0")) == -1
    assert load('{"__proto__":1}') == {"__proto__": 1}


def test_duplicate_keys_keep_last_value_in_first_position(load: Callable[[Any], Any]) -> None:
    value = load('{"a":1,"b":2,"a":3,"c":4,"a":5}')
    assert value == {"a": 5, "b": 2, "c": 4} and list(value) == ["a", "b", "c"]
    assert dumps(load('{"b":1,"1":2,"b":3}')) == '{"1":2,"b":3}'


def test_big_numbers(load: Callable[[Any], Any]) -> None:
    for text, value in [
        ("9007199254740993", 9007199254740993),
        ("-9223372036854775808", -(2**63)),
        ("18446744073709551615", 2**64 - 1),
        ("18446744073709551616", 1.8446744073709552e19),
        ("-9223372036854775809", -9.223372036854776e18),
        ("123456789012345678901234567890", 1.2345678901234568e29),
        ("1" + "0" * 5000, math.inf),
        ("-1" + "0" * 5000, -math.inf),
        ("1e400", math.inf),
        ("1.7976931348623159e308", math.inf),
    ]:
        got = load(text)
        assert got == value and type(got) is type(value), text
    assert dumps(load("12345678901234567890")) == "12345678901234567000"
    assert dumps(load("[1e400,-1" + "0" * 5000 + "]")) == "[null,null]"


def test_deep_nesting_is_a_value_error(load: Callable[[Any], Any]) -> None:
    for depth in (1100, 100_000):
        with pytest.raises(ValueError):
            load("[" * depth + "]" * depth)
    assert load("[" * 200 + "]" * 200) is not None


def test_loads_bytes() -> None:
    assert loads(b'{"a":"\xc3\xa9"}') == {"a": "é"}
    assert loads(bytearray(b"[1]")) == [1]
    assert loads(memoryview(b"[2]")) == [2]
    # invalid UTF-8 inside a string: replaced, as Node's decoder does, then parsed
    assert loads(b'["\xff\xf0\x9f\x98", "\xed\xa0\x80"]') == ["\ufffd\ufffd", "\ufffd\ufffd\ufffd"]
    assert loads(b'"\\ud800"') == "\ud800"
    with pytest.raises(ValueError):
        loads(b"\xef\xbb\xbf[1]")  # Buffer.toString keeps the BOM, JSON.parse rejects it
    with pytest.raises(ValueError):
        loads(b"[1]\xff")


def test_loads_rejects_non_text() -> None:
    for bad in (123, None, [b"[]"]):
        with pytest.raises(TypeError):
            loads(bad)  # type: ignore[arg-type]


def test_decode_utf8() -> None:
    assert decode_utf8(b"\xf0\x9f\x98") == "\ufffd"  # truncated: one replacement
    assert decode_utf8(b"\xf0\x9f\x98A") == "\ufffdA"
    assert decode_utf8(b"\xed\xa0\x80") == "\ufffd" * 3  # an encoded surrogate
    assert decode_utf8(b"\xc0\xaf") == "\ufffd" * 2  # overlong
    assert decode_utf8(b"\xf4\x90\x80\x80") == "\ufffd" * 4  # beyond U+10FFFF
    assert decode_utf8(b"\xe2\x82") == "\ufffd"
    assert decode_utf8(b"\xef\xbb\xbfx") == "\ufeffx"  # BOM kept, like readFileSync(, "utf8")
    assert decode_utf8(bytearray(b"\xc3\xa9")) == "é"


def test_without_orjson(monkeypatch: pytest.MonkeyPatch) -> None:
    """The module as it is imported where orjson is not installed."""
    import importlib.util
    import sys

    monkeypatch.setitem(sys.modules, "orjson", None)  # makes "import orjson" fail
    vars(J).pop("HAVE_ORJSON")  # set when orjson was imported; a reload keeps the old namespace
    try:
        importlib.reload(J)
        assert J.HAVE_ORJSON is False and J._Fragment is None and J._orjson_dumps is None
        assert (
            J.dumps({"b": [5.0, 1e-5, "\ud800"], "1": 2**60})
            == '{"1":1152921504606847000,"b":[5,0.00001,"\\ud800"]}'
        )
        assert J.loads('{"a":"\\ud800","a":18446744073709551616}') == {"a": 1.8446744073709552e19}
        assert J.loads(b'["\xff"]') == ["\ufffd"]
        for bad in ("NaN", "[Infinity]", "[" * 5000 + "]" * 5000):
            with pytest.raises(ValueError):
                J.loads(bad)
    finally:
        monkeypatch.undo()
        importlib.reload(J)
        J._use_orjson()
    assert J.HAVE_ORJSON is (importlib.util.find_spec("orjson") is not None)


def test_have_orjson() -> None:
    try:
        import orjson  # noqa: F401
    except ImportError:
        assert J.HAVE_ORJSON is False
    else:
        assert J.HAVE_ORJSON is True


# --------------------------------------------------------------------------------------------
# Strategies
# --------------------------------------------------------------------------------------------

SPECIAL_FLOATS = [
    0.0, -0.0, 5.0, 1e-4, 1e-5, 1e-6, 1e-7, 1.5e-7, 1e-9, 1e15, 1e16, 2.0**53, 2.0**60, 1e20, 1e21,
    1.23e22, 5e-324, 2.2250738585072014e-308, 1.7976931348623157e308, 0.1 + 0.2, 123456789012345.67,
    math.nan, math.inf, -math.inf,
]  # fmt: skip

floats = st.one_of(
    st.floats(),
    st.floats(1e-10, 1e-3).map(lambda x: x * (-1) ** int(x * 1e12)),
    st.floats(1e14, 1e22),
    st.sampled_from(SPECIAL_FLOATS),
    st.builds(lambda m, e: float(f"{m}e{e}"), st.integers(-(10**17), 10**17), st.integers(-30, 30)),
    st.builds(
        lambda m, e, s: s * m * 10.0**e, st.integers(1, 10**6), st.integers(-12, 20), st.sampled_from([1, -1])
    ),
)
ints = st.one_of(
    st.integers(),
    st.integers(-(2**54), 2**54),
    st.builds(lambda d, s: s * (2**53 + d), st.integers(-3, 3), st.sampled_from([1, -1])),
    st.integers(-(10**25), 10**25),
    st.sampled_from([2**63 - 1, 2**63, 2**64 - 1, 2**64, 10**21, 10**308, 10**309, 10**400]),
)
SPECIAL_CHARS = '\u2028\u2029\x7f\x00\x1f\x08\x0c\n\r\t"\\/\ud800\udbff\udc00\udfff\ud83d\ude00é😀\ufeff'
chars = st.one_of(st.characters(), st.characters(categories=["Cs"]), st.sampled_from(SPECIAL_CHARS))
surrogate_heavy = st.lists(
    st.one_of(
        st.sampled_from(["\ud800", "\udbff", "\udc00", "\udfff", "\ud83d", "\ude00", "a", "\u2028"]), chars
    ),
    max_size=6,
).map("".join)
strings = st.one_of(st.text(chars, max_size=12), surrogate_heavy)
keys = st.one_of(
    strings,
    st.integers(0, 2**33).map(str),
    st.sampled_from(
        ["0", "01", "00", "-1", "-0", "4294967294", "4294967295", "1.5", "1e3", "", "__proto__", " 1"]
    ),
)
scalars = st.one_of(st.none(), st.booleans(), ints, floats, strings)
values = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.lists(children, max_size=5),
        st.lists(children, max_size=3).map(tuple),
        st.dictionaries(keys, children, max_size=6),
    ),
    max_leaves=25,
)


# --------------------------------------------------------------------------------------------
# Agreement between the internal walkers and routes (no Node needed)
# --------------------------------------------------------------------------------------------


def same(a: object, b: object) -> bool:
    """Strict equality: same types, same key order, NaN equals NaN, -0.0 differs from 0.0."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        assert isinstance(b, float)
        return (math.isnan(a) and math.isnan(b)) or (a == b and math.copysign(1, a) == math.copysign(1, b))
    if isinstance(a, dict):
        assert isinstance(b, dict)
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple))
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return a == b


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.one_of(st.lists(values, max_size=4), st.dictionaries(keys, values, max_size=4)))
def test_walkers_and_routes_agree(value: Any) -> None:
    plain = J._plain(value)
    ids: set[int] = set()
    assert J._mark_plain(value, ids) is plain
    assert (id(value) in ids) is plain
    if J._Fragment is not None:
        assert (J._js_ready(value) is value) is plain
    before = copy.deepcopy(value)
    assert len(set(all_routes(value).values())) == 1
    assert same(value, before)


# --------------------------------------------------------------------------------------------
# Live cross-check against Node
# --------------------------------------------------------------------------------------------

NODE_SCRIPT = r"""
const rl = require('readline').createInterface({ input: process.stdin });
function dec(t) {
  if (t === null || typeof t !== 'object') return t;
  if ('f' in t) return Number(t.f);
  if ('i' in t) return Number(t.i);
  if ('a' in t) return t.a.map(dec);
  const o = {};
  for (const [k, v] of t.o) {  // own data properties, even for "__proto__"
    Object.defineProperty(o, k, { value: dec(v), enumerable: true, writable: true, configurable: true });
  }
  return o;
}
function attempt(f) { try { return [f()]; } catch (e) { return []; } }
rl.on('line', (line) => {
  const [kind, items] = JSON.parse(line);
  let out;
  if (kind === 'stringify') out = items.map((t) => JSON.stringify(dec(t)));
  else if (kind === 'parse') out = items.map((s) => attempt(() => JSON.stringify(JSON.parse(s))));
  else if (kind === 'parse-bytes') {
    out = items.map((h) => attempt(() => JSON.stringify(JSON.parse(Buffer.from(h, 'hex').toString('utf8')))));
  } else if (kind === 'utf8') {
    out = items.map((h) => {
      const b = Buffer.from(h, 'hex');
      return [b.toString('utf8'), new TextDecoder('utf-8', { ignoreBOM: true }).decode(b)];
    });
  }
  process.stdout.write(JSON.stringify(out) + '\n');
});
"""


class Node:
    def __init__(self) -> None:
        # bytes, not text mode: no newline translation, the lines are exactly what node wrote
        self.proc = subprocess.Popen(
            ["node", "-e", NODE_SCRIPT], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )

    def ask(self, kind: str, items: list[Any]) -> list[Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        # ensure_ascii: lone surrogates travel as \ud800 escapes, which JSON.parse accepts
        self.proc.stdin.write(json.dumps([kind, items], ensure_ascii=True).encode() + b"\n")
        self.proc.stdin.flush()
        answer = self.proc.stdout.readline()
        assert answer, "node exited"
        result: list[Any] = json.loads(answer.decode("utf-8"))
        assert len(result) == len(items)
        return result

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


@pytest.fixture(scope="module")
def node() -> Iterator[Node]:
    if shutil.which("node") is None:
        pytest.skip("node is not on PATH: the live cross-check against JavaScript needs it")
    n = Node()
    yield n
    n.close()


def to_js(v: object) -> object:
    """A lossless description of v that the Node script turns into the JavaScript value."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return {"i": str(v)}  # Number("...") rounds to the nearest double, as JS source would
    if isinstance(v, float):
        text = repr(v).replace("inf", "Infinity").replace("nan", "NaN")
        return {"f": text}  # repr is the shortest text that reads back as the same double
    if isinstance(v, (list, tuple)):
        return {"a": [to_js(x) for x in v]}
    assert isinstance(v, dict)
    return {"o": [[k, to_js(x)] for k, x in v.items()]}


def test_node_transport_sanity(node: Node) -> None:
    """The harness itself: if this fails, the live tests below prove nothing."""
    assert node.ask("stringify", [to_js({"b": 5.0, "1": [1e-5, "\ud800\u2028"], "__proto__": 2**60})]) == [
        '{"1":[0.00001,"\\ud800\u2028"],"b":5,"__proto__":1152921504606847000}'
    ]
    assert node.ask("parse", ["NaN", '{"a":1,"a":2}']) == [[], ['{"a":2}']]


def leaves(v: object) -> Iterator[object]:
    if isinstance(v, dict):
        v = list(v.values())
    if isinstance(v, (list, tuple)):
        for x in v:
            yield from leaves(x)
    else:
        yield v


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(values, min_size=1, max_size=8))
def test_dumps_matches_node(node: Node, batch: list[Any]) -> None:
    # Each leaf also alone in small containers: a single leaf that needs care makes the whole
    # value leave the fast paths, so this is what tests the fast paths leaf by leaf.
    batch = batch + [c for x in batch for leaf in leaves(x) for c in ([leaf], {"k": leaf})]
    expected = node.ask("stringify", [to_js(v) for v in batch])
    for value, js in zip(batch, expected, strict=True):
        for name, got in all_routes(value).items():
            assert got == js, (name, value)


# Texts for loads: valid JSON written in several ways, then sometimes damaged.
JUNK = [
    " ", "\t", "\n", "\r", "\x0b", "\x0c", "\xa0", "\ufeff", "\u2028", ",", "]", "}", "[", "{", ":",
    '"', "\\", "0", "-", "+", "e", "E", ".", "NaN", "Infinity", "-Infinity", "\x00", "\x1f", "\ud800",
    "\\ud800", "\\udc00", "\\u12", "\\x", "/*", "true", "nul", "01", "1e400", "9" * 25,
]  # fmt: skip


def render(value: object, style: int) -> str:
    if style == 0:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    if style == 1:
        return json.dumps(value, ensure_ascii=True, indent=1)
    return json.dumps(value, ensure_ascii=False)  # ", " and ": ", NaN and Infinity as such


@st.composite
def json_texts(draw: st.DrawFn) -> str:
    choice = draw(st.integers(0, 3))
    if choice == 0:  # a number literal, valid or nearly
        text = draw(
            st.from_regex(r"-?(0|[1-9][0-9]{0,30})(\.[0-9]{1,20})?([eE][-+]?[0-9]{1,3})?", fullmatch=True)
        )
    else:
        text = render(draw(values), draw(st.integers(0, 2)))
    for _ in range(draw(st.integers(0, 2))):
        if not text or draw(st.booleans()):
            at = draw(st.integers(0, len(text)))
            text = text[:at] + draw(st.sampled_from(JUNK)) + text[at:]
        else:
            at = draw(st.integers(0, len(text) - 1))
            text = text[:at] + text[at + draw(st.integers(1, 3)) :]
    return text


def dumps_of_loads(text: str | bytes) -> list[str]:
    try:
        return [dumps(loads(text))]
    except ValueError:
        return []


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(json_texts(), min_size=1, max_size=10))
def test_loads_matches_node(node: Node, texts: list[str]) -> None:
    expected = node.ask("parse", texts)
    for text, js in zip(texts, expected, strict=True):
        assert dumps_of_loads(text) == js, text
        try:
            via_json = [dumps(J._loads_json(text))]
        except ValueError:
            via_json = []
        assert via_json == js, text


@settings(max_examples=60, deadline=None)
@given(st.lists(json_texts(), min_size=1, max_size=10))
def test_orjson_and_json_module_read_alike(texts: list[str]) -> None:
    if not J.HAVE_ORJSON:
        pytest.skip("orjson is not installed")
    import orjson

    for text in texts:
        try:
            fast = orjson.loads(text)
        except orjson.JSONDecodeError:
            continue
        assert same(fast, J._loads_json(text)), text


BAD_UTF8 = [
    b"\xf0\x9f\x98", b"\xed\xa0\x80", b"\xc0\xaf", b"\xf4\x90\x80\x80", b"\xe2\x82", b"\x80", b"\xff",
    b"\xfe", b"\xc3\xa9", b"\xe2\x82\xac", b"\xf0\x9f\x98\x80", b"\xef\xbb\xbf", b"\xe0\x80\x80",
    b"\xe0\xa0", b"\xf0\x80", b"\xf5", b"\xc2", b"\xed\x9f\xbf", b"\xee\x80\x80", b"a", b'"', b"\\",
]  # fmt: skip
byte_strings = st.one_of(
    st.binary(max_size=12), st.lists(st.sampled_from(BAD_UTF8), max_size=8).map(b"".join)
)


@settings(max_examples=60, deadline=None)
@given(st.lists(byte_strings, min_size=1, max_size=20))
def test_decode_utf8_matches_node(node: Node, batch: list[bytes]) -> None:
    expected = node.ask("utf8", [b.hex() for b in batch])
    for data, (buffer_text, decoder_text) in zip(batch, expected, strict=True):
        assert decode_utf8(data) == buffer_text == decoder_text, data


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(json_texts(), byte_strings), min_size=1, max_size=10))
def test_loads_bytes_matches_node(node: Node, pairs: list[tuple[str, bytes]]) -> None:
    lines = []
    for text, junk in pairs:  # invalid UTF-8 inside a string, or anywhere
        raw = text.encode("utf-8", "surrogatepass")
        at = raw.find(b'"') + 1 if b'"' in raw else len(raw) // 2
        lines.append(raw[:at] + junk + raw[at:])
    expected = node.ask("parse-bytes", [line.hex() for line in lines])
    for line, js in zip(lines, expected, strict=True):
        assert dumps_of_loads(line) == js, line
