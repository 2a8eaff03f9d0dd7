"""JSON text exactly as JavaScript's ``JSON.parse`` / ``JSON.stringify`` handle it.

Pi writes every session-file line with ``JSON.stringify(entry)`` and reads it back with
``JSON.parse(line)``.  A line pisession writes must be byte-identical to the line Pi would write
for the same value, and every line Pi can read must read the same here, so this module pins down
each place where Python's ``json`` differs from JavaScript:

``dumps(value)``
    Returns ``JSON.stringify(value)`` for JSON-like values (dict, list/tuple, str, int, float,
    bool, None and their subclasses):

    * compact separators; non-ASCII (U+2028/U+2029 included) written raw; ``"`` ``\\`` and
      ``\\b \\f \\n \\r \\t`` as short escapes, the other controls below U+0020 as ``\\u00xx``
      (lowercase), DEL raw;
    * lone surrogates (a Python ``str`` holds them after parsing ``"\\ud800"``) as lowercase
      ``\\udxxx`` escapes, as the well-formed ``JSON.stringify`` of ES2019 does; a high surrogate
      followed by a low one is the UTF-16 pair JavaScript would see, so it is written as the one
      character it encodes;
    * numbers in Number::toString form (``5.0`` -> ``5``, ``1e-05`` -> ``0.00001``,
      ``1e16`` -> ``10000000000000000``, ``1e21`` -> ``1e+21``, ``-0.0`` -> ``0``), NaN and
      infinities as ``null``.  An int is a double in JavaScript, so an int beyond +-2**53 is
      written as JavaScript prints the nearest double (``12345678901234567890`` ->
      ``12345678901234567000``), and one beyond the double range as ``null`` (Infinity);
    * object keys in JavaScript's property order: array-index keys (canonical integers below
      2**32 - 1) first in ascending numeric order, then the rest in insertion order.  Non-str
      keys become ``String(key)`` as in a JavaScript object literal (``1.0`` -> ``"1"``,
      ``True`` -> ``"true"``, ``None`` -> ``"null"``); keys that collide then keep the first
      key's position and the last value, as repeated assignment does in JavaScript.

    Other types raise ``TypeError``; circular or too deeply nested values raise ``ValueError``
    (JavaScript throws too, though its depth limit is higher).

``loads(text)``
    ``JSON.parse`` semantics: only JSON whitespace (space, tab, LF, CR) around the value; the
    ``NaN``/``Infinity`` literals Python's json accepts are rejected; a repeated key keeps its
    last value in the first key's position; escaped lone surrogates are accepted.  Every failure
    is a ``ValueError`` (``json.JSONDecodeError`` where the parser reports a position), never a
    ``RecursionError``.  Bytes are decoded by :func:`decode_utf8`.

    JavaScript parses every number as a double.  Integers are returned as Python ints while they
    lie in [-2**63, 2**64) -- the range orjson keeps exact, mirrored by the json fallback so the
    result does not depend on which parser ran -- and otherwise as the double JavaScript holds
    (``inf`` past the double range, where JavaScript holds Infinity).  An exact int beyond 2**53
    is more precise than JavaScript's value, but :func:`dumps` rounds it to the same double, so
    ``dumps(loads(line)) == JSON.stringify(JSON.parse(line))`` for every line both accept.

Depth: JavaScript parses nesting of any depth and stringifies a few thousand levels.
``loads`` stops at about 1000 levels (orjson at 1024, Python's recursion limit around 1000)
with a ``ValueError``; ``loads_deep`` reads any depth (used where a line must be kept: the
migration rewrite, forks). ``dumps`` writes up to 10,000 levels, more than JavaScript can:
past what its recursive walks reach it falls back to an encoder with an explicit stack, so
whatever Pi wrote and pisession read can be written back.

Speed.  The obvious design -- ``json.dumps``, then one regex over its output for anything that
may differ -- was measured and dropped: Python's regex engine scans an alternation of such
patterns several times slower than the C encoder writes the text, so the check alone cost
about six times ``json.dumps`` on a 2 KB entry.  Instead ``dumps`` walks the value (cost per
node, not per character: long strings are free) to find out whether it is *plain*, i.e. holds
nothing a fast encoder would write differently, and then:

* with orjson (one that has ``orjson.Fragment``): hands orjson the value itself, or a copy of
  just the containers on the way down to what needs care, with keys put in JavaScript's order
  and numbers pre-formatted as Fragments -- a fraction of the time of ``json.dumps``;
* without it: lets the C encoder of the json module write a plain value (the usual case), at
  about the cost of ``json.dumps``; anything else goes to a Python encoder that still hands
  every plain sub-container to the C encoder.

Surrogates are the one thing the walk does not look for: orjson refuses them (and the Python
encoder takes over), and the json route scans its output for them with a UTF-16 encode.
``loads`` uses orjson when it is importable and falls back to the json module when orjson is
absent or refuses the input (it refuses escaped lone surrogates, numbers that overflow to
infinity and nesting past 1024 levels, all of which JavaScript accepts).

orjson is imported the first time ``dumps``, ``dumps_bytes`` or ``loads`` runs, not with this
module: it imports dataclasses, inspect, uuid and datetime, which took longer than the rest of
``pisession tree``'s start-up. ``loads_for(size)`` parses a small text with the json module
alone while orjson is not imported yet (the same results).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from ._json_text import (
    _MAX_SAFE,
    _encode_str,
    _fix_surrogates,
    _js_float,
    _js_int,
    _not_serializable,
    _ordered_items,
)

# typing for type checkers only (they take TYPE_CHECKING for true): importing it at run time
# took 8 % of `pisession tree`'s start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NoReturn

__all__ = ["HAVE_ORJSON", "decode_utf8", "dumps", "dumps_bytes", "loads", "loads_for", "to_json_line"]

# --------------------------------------------------------------------------------------------
# What the fast encoders get right
# --------------------------------------------------------------------------------------------

# Keys already known to be str and not array-index-like.  Entries reuse a small vocabulary of
# keys, and a subset test on this set runs in C: much cheaper than looking at each key.
_PLAIN_KEYS: set[str] = set()
_PLAIN_KEYS_MAX = 4096  # bounds the memory held; past it keys are still checked, just slower


def _plain_keys(d: dict[Any, Any]) -> bool:
    if d.keys() <= _PLAIN_KEYS:
        return True
    for k in d:
        if type(k) is not str or "0" <= k[:1] <= "9":
            return False
    if len(_PLAIN_KEYS) < _PLAIN_KEYS_MAX and max(map(len, d)) <= 64:
        _PLAIN_KEYS.update(d)
    return True


# A value is "plain" when the json module and orjson write it exactly as JSON.stringify does,
# surrogates aside: every key is a str that cannot be an array index (it does not start with
# a digit), every int is within +-2**53, every float is one repr lays out as JavaScript does
# (not integral, 1e-4 <= |x| < 1e16), and every value is of an exact JSON type.  The three
# walkers below test that same condition inline (a call per node would cost more than the
# test); the tests check that they agree.


def _plain(o: dict[Any, Any] | list[Any] | tuple[Any, ...]) -> bool:
    if type(o) is dict:
        if not _plain_keys(o):
            return False
        o = o.values()  # type: ignore[assignment]
    for v in o:
        t = type(v)
        if t is str or v is None or t is bool:
            continue
        if t is int:
            if -_MAX_SAFE <= v <= _MAX_SAFE:
                continue
            return False
        if t is float:
            if (1e-4 <= v < 1e16 or -1e16 < v <= -1e-4) and not v.is_integer():
                continue
            return False
        if (t is dict or t is list or t is tuple) and _plain(v):
            continue
        return False
    return True


def _mark_plain(o: dict[Any, Any] | list[Any] | tuple[Any, ...], plain_ids: set[int]) -> bool:
    """_plain(o), also adding the id of every plain container within o to plain_ids.

    The Python encoder hands those containers to the C encoder whole, so only the containers
    on the way down to something that needs care are written in Python.
    """
    plain = True
    if isinstance(o, dict):
        plain = _plain_keys(o)
        values: Any = o.values()
    else:
        values = o
    for v in values:
        t = type(v)
        if t is str or v is None or t is bool:
            continue
        if t is int:
            if not -_MAX_SAFE <= v <= _MAX_SAFE:
                plain = False
        elif t is float:
            if not ((1e-4 <= v < 1e16 or -1e16 < v <= -1e-4) and not v.is_integer()):
                plain = False
        elif t is dict or t is list or t is tuple:
            if not _mark_plain(v, plain_ids):
                plain = False
        else:
            plain = False  # a subclass or a foreign type: the C encoder never sees its contents
    if plain and (type(o) is dict or type(o) is list or type(o) is tuple):
        plain_ids.add(id(o))
    return plain


# --------------------------------------------------------------------------------------------
# The encoders
# --------------------------------------------------------------------------------------------

# Floats of every layout repr uses in the plain range, every ASCII character, the line
# separators and an astral character: what the fast encoders must agree on.
_PROBE: dict[str, object] = {
    "floats": [
        0.0001,
        0.00012345,
        0.1,
        0.30000000000000004,
        1.5,
        -2.5,
        1234.5678,
        5e-4,
        123456789012345.67,
        999999999999999.9,
        1000000000000000.5,
        0.003702,
        -0.0001,
    ],
    "ints": [0, -1, 2**53, -(2**53), 1736937000000],
    "text": "".join(map(chr, range(128))) + "\u00e9\u2028\u2029\ufeff\U0001f600",
    "nested": {"a": [True, False, None, {}, []], "b": ()},
}


def _make_c_encoder() -> Callable[[object], str]:
    """The C encoder of the json module with JavaScript's separators, or the public API.

    Calling the C encoder (``json.encoder.c_make_encoder``) directly skips the per-call setup
    of ``json.dumps`` (a noticeable share on small entries).  It is a private interface, so it
    is used only if it exists and encodes the probe exactly as the public API does.
    """
    public: Callable[[object], str] = json.JSONEncoder(
        ensure_ascii=False,
        check_circular=False,  # the value has been walked already: it is not circular
        allow_nan=False,
        separators=(",", ":"),
        default=_not_serializable,
    ).encode
    make_encoder = getattr(json.encoder, "c_make_encoder", None)  # None without the C module
    if make_encoder is None:  # pragma: no cover - other Pythons
        return public
    try:
        c_encoder = make_encoder(None, _not_serializable, _encode_str, None, ":", ",", False, False, False)
    except TypeError:  # pragma: no cover - a changed private signature
        return public

    def encode(value: object) -> str:
        return "".join(c_encoder(value, 0))

    try:
        if encode(_PROBE) == public(_PROBE):
            return encode
    except Exception:  # pragma: no cover - a changed private signature
        pass
    return public  # pragma: no cover


_c_encode = _make_c_encoder()


def _make_orjson_encoder(_orjson: Any) -> tuple[Callable[[object], bytes] | None, Any]:
    """(orjson.dumps, orjson.Fragment) as far as they write the probe as JavaScript does.

    The probe guards against an orjson release that formats floats or escapes strings
    differently; Fragment (recent orjson releases) is what lets values that are not plain use orjson.
    """
    if _orjson is None:  # pragma: no cover - exercised only where orjson is not installed
        return None, None
    dumps_bytes: Callable[[object], bytes] = _orjson.dumps
    try:
        if dumps_bytes(_PROBE).decode() != _c_encode(_PROBE):  # pragma: no cover
            return None, None
    except Exception:  # pragma: no cover - an incompatible orjson
        return None, None
    fragment = getattr(_orjson, "Fragment", None)
    try:
        if (
            fragment is not None
            and dumps_bytes([fragment("1e+21"), {"a": fragment("0")}]) != b'[1e+21,{"a":0}]'
        ):
            fragment = None  # pragma: no cover
    except Exception:  # pragma: no cover
        fragment = None
    return dumps_bytes, fragment


# What orjson gives the encoders and `loads`, set by _use_orjson() when one of them first runs.
_orjson_ready = False
_orjson_dumps: Callable[[object], bytes] | None = None
_Fragment: Any = None
_OrjsonEncodeError: type[Exception] = TypeError
_STRICT = 0
_orjson_loads: Callable[[Any], object] | None = None
_OrjsonDecodeError: type[Exception] = ValueError


def _use_orjson() -> bool:
    """Import orjson (once) and set up what the encoders and ``loads`` take from it; whether
    it is installed."""
    global _orjson_ready, _orjson_dumps, _Fragment, _OrjsonEncodeError, _STRICT, _orjson_loads
    global _OrjsonDecodeError, HAVE_ORJSON
    if not _orjson_ready:
        try:
            import orjson
        except ImportError:  # exercised by tests that hide it
            orjson = None  # type: ignore[assignment]
        _orjson_dumps, _Fragment = _make_orjson_encoder(orjson)
        if orjson is not None:
            _OrjsonEncodeError = orjson.JSONEncodeError
            _STRICT = getattr(orjson, "OPT_STRICT_INTEGER", 0)
            _orjson_loads = orjson.loads
            _OrjsonDecodeError = orjson.JSONDecodeError
        HAVE_ORJSON = orjson is not None
        _orjson_ready = True
    return _orjson_loads is not None


if TYPE_CHECKING:
    HAVE_ORJSON: bool
    """Whether orjson is installed (asking imports it)."""
else:

    def __getattr__(name: str) -> Any:
        if name == "HAVE_ORJSON":
            return _use_orjson()
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _js_ready(o: Any) -> object:
    """A value orjson writes exactly as JSON.stringify writes o, surrogates aside.

    That is o itself when it is plain (the usual case: nothing is copied), else a copy of the
    containers on the way down to what needs care: keys in JavaScript's order and numbers
    pre-formatted as orjson Fragments.
    """
    t = type(o)
    if t is dict:
        new: Any = None
        if _plain_keys(o):
            items: Any = o.items()
        else:
            new = dict(_ordered_items(o))
            items = list(new.items())
        for k, v in items:
            r = _ready_item(v)
            if r is _SAME:
                continue
            if new is None:
                new = dict(o)
            new[k] = r
        return o if new is None else new
    if t is list or t is tuple:
        copy: list[Any] | None = None
        for i, v in enumerate(o):
            r = _ready_item(v)
            if r is _SAME:
                continue
            if copy is None:
                copy = list(o)
            copy[i] = r
        return o if copy is None else copy
    return _js_ready_other(o)


_SAME: Any = object()


def _ready_item(v: Any) -> object:
    """_js_ready for one member of a container: ``_SAME`` when orjson writes it as JS would."""
    t = type(v)
    if t is str or v is None or t is bool:
        return _SAME
    if t is int:
        return _SAME if -_MAX_SAFE <= v <= _MAX_SAFE else _Fragment(_js_int(v))
    if t is float:
        if (1e-4 <= v < 1e16 or -1e16 < v <= -1e-4) and not v.is_integer():
            return _SAME
        return _Fragment(_js_float(v))
    if t is dict or t is list or t is tuple:
        r = _js_ready(v)
        return _SAME if r is v else r
    return _js_ready_other(v)


def _js_ready_other(v: object) -> object:
    """_js_ready for any single value, including subclasses of the JSON types."""
    if isinstance(v, str):
        return str.__str__(v)
    if v is None or v is True or v is False:
        return v
    if isinstance(v, int):
        return v if type(v) is int and -_MAX_SAFE <= v <= _MAX_SAFE else _Fragment(_js_int(v))
    if isinstance(v, float):
        return _Fragment(_js_float(v))
    if isinstance(v, dict):
        return _js_ready(v if type(v) is dict else dict(v.items()))
    if isinstance(v, (list, tuple)):
        return _js_ready(v if type(v) in (list, tuple) else list(v))
    _not_serializable(v)


def _encode(o: object, parts: list[str], plain_ids: set[int]) -> None:
    # One function for every kind of value, so one Python frame per nesting level: this
    # encoder reaches nearly the depth the C encoder reaches.
    if isinstance(o, str):
        parts.append(_encode_str(o))
    elif o is None:
        parts.append("null")
    elif o is True:
        parts.append("true")
    elif o is False:
        parts.append("false")
    elif isinstance(o, int):
        parts.append(_js_int(o))
    elif isinstance(o, float):
        parts.append(_js_float(o))
    elif id(o) in plain_ids:  # the value holds o, so its id cannot be reused meanwhile
        parts.append(_c_encode(o))
    elif isinstance(o, dict):
        sep = "{"
        for k, v in _ordered_items(o):
            parts.append(sep)
            parts.append(_encode_str(k))
            parts.append(":")
            _encode(v, parts, plain_ids)
            sep = ","
        parts.append("}" if sep == "," else "{}")
    elif isinstance(o, (list, tuple)):
        sep = "["
        for v in o:
            parts.append(sep)
            _encode(v, parts, plain_ids)
            sep = ","
        parts.append("]" if sep == "," else "[]")
    else:
        _not_serializable(o)


def _python_dumps(value: object) -> str:
    plain_ids: set[int] = set()
    parts: list[str] = []
    try:
        if isinstance(value, (dict, list, tuple)):
            _mark_plain(value, plain_ids)
        _encode(value, parts, plain_ids)
    except RecursionError:
        return _deep_dumps(value)
    return _fix_surrogates("".join(parts))


_END: Any = object()
# JavaScript stringifies a few thousand levels (Node 20: 3,000 yes, 5,000 "Maximum call stack
# size exceeded"); past this depth, well beyond that, a value is refused like a circular one.
_MAX_DEPTH = 10_000


def _deep_dumps(value: object) -> str:
    """The encoder of ``_encode`` with an explicit stack instead of recursion, for values nested
    deeper than the recursive walks reach: whatever ``loads`` or ``loads_deep`` read (an entry
    Pi wrote 1,000 levels deep) can be written back. Slower, so only the fallback."""
    parts: list[str] = []
    on_path: set[int] = set()  # containers being written: meeting one again is a cycle
    stack: list[list[Any]] = []  # [items iterator, is a dict, id, nothing written yet]
    o = value
    while True:
        if isinstance(o, str):
            parts.append(_encode_str(o))
        elif o is None:
            parts.append("null")
        elif o is True:
            parts.append("true")
        elif o is False:
            parts.append("false")
        elif isinstance(o, int):
            parts.append(_js_int(o))
        elif isinstance(o, float):
            parts.append(_js_float(o))
        elif isinstance(o, (dict, list, tuple)):
            if id(o) in on_path or len(stack) >= _MAX_DEPTH:
                raise ValueError("value is circular or nested too deeply for JSON")
            on_path.add(id(o))
            is_dict = isinstance(o, dict)
            items = iter(_ordered_items(o)) if isinstance(o, dict) else iter(o)
            stack.append([items, is_dict, id(o), True])
        else:
            _not_serializable(o)
        while stack:
            frame = stack[-1]
            item = next(frame[0], _END)
            if item is _END:
                if frame[3]:
                    parts.append("{}" if frame[1] else "[]")
                else:
                    parts.append("}" if frame[1] else "]")
                on_path.discard(frame[2])
                stack.pop()
                continue
            parts.append(("{" if frame[1] else "[") if frame[3] else ",")
            frame[3] = False
            if frame[1]:
                parts.append(_encode_str(item[0]))
                parts.append(":")
                o = item[1]
            else:
                o = item
            break
        else:
            return _fix_surrogates("".join(parts))


# Where orjson's output can differ from JSON.stringify's: integral floats ("5.0", "-0.0"),
# exponents JavaScript writes out in full (orjson's e+16..e+20) or in fixed notation (e-6), and
# keys that look like array indices (JavaScript moves them to the front). Integers past 2**53
# make orjson raise (OPT_STRICT_INTEGER). A number in orjson's output always ends at one of
# , } ]. Each check is anchored on a literal the regex engine scans for in C (an alternation
# over the line measured 20-40 µs; anchoring on "e", common in prose, 2.3 µs; these ~3 µs in
# all on a 770-byte assistant entry); "+" is first looked for with find (memchr). Strings can
# match too: a false alarm only costs the careful path.
_INTEGRAL_FLOAT = re.compile(rb"\.0[,}\]]")
_PLUS_DIGIT = re.compile(rb"\+[0-9]")
_EXPONENT_PLUS = re.compile(rb"e\+")
_EXPONENT_MINUS_6 = re.compile(rb"e-6[,}\]]")
_MINUS_6 = re.compile(rb"-6[,}\]]")
_INDEX_KEY = re.compile(rb'"[0-9]+":')
_integral_float = _INTEGRAL_FLOAT.search
_index_key = _INDEX_KEY.search


def _suspect(out: bytes) -> bool:
    """Whether orjson's ``out`` may differ from what JSON.stringify writes."""
    return (
        _integral_float(out) is not None
        or _index_key(out) is not None
        or (
            out.find(b"+") >= 0
            and _PLUS_DIGIT.search(out) is not None
            and _EXPONENT_PLUS.search(out) is not None
        )
        or (_MINUS_6.search(out) is not None and _EXPONENT_MINUS_6.search(out) is not None)
    )


def dumps_bytes(value: object) -> bytes:
    """``dumps`` encoded as UTF-8 (lone surrogates as their escapes), the append hot path.

    orjson writes most entries exactly as JavaScript does; its output is checked for the few
    constructs where they can differ, and only then does the careful walk run.
    """
    if not _orjson_ready:
        _use_orjson()
    if _orjson_dumps is not None and type(value) is dict:
        try:
            out: bytes = _orjson_dumps(value, option=_STRICT)  # type: ignore[call-arg]
        except Exception:  # non-str keys, surrogates, big ints, unknown types: the careful path decides
            pass
        else:
            if not _suspect(out):
                return out
    return dumps(value).encode("utf-8", "surrogatepass")


def dumps(value: object) -> str:
    """``JSON.stringify(value)`` for a JSON-like value, byte for byte."""
    if not _orjson_ready:
        _use_orjson()
    try:
        if isinstance(value, (dict, list, tuple)):
            if _Fragment is not None and _orjson_dumps is not None:
                try:
                    return _orjson_dumps(_js_ready(value)).decode()
                except _OrjsonEncodeError:  # surrogates, or nesting past orjson's limit
                    pass
            elif type(value) in (dict, list, tuple) and _plain(value):
                if _orjson_dumps is not None:
                    try:
                        return _orjson_dumps(value).decode()
                    except _OrjsonEncodeError:
                        pass
                return _fix_surrogates(_c_encode(value))
        return _python_dumps(value)
    except RecursionError:  # the walks that prepare a value for orjson recurse too
        return _deep_dumps(value)


def to_json_line(value: Any) -> str:
    """One value as Pi's ``JSON.stringify`` writes it (key order, number format), no newline.

    ``to_json_line(to_wire(entry))`` is the line a session file holds for ``entry``.

    :param value: a JSON value: dicts, lists, strings, numbers, booleans, None (e.g. ``to_wire(entry)``).
    """
    return dumps(value)


# --------------------------------------------------------------------------------------------
# loads
# --------------------------------------------------------------------------------------------


def decode_utf8(data: bytes | bytearray | memoryview) -> str:
    """Decode UTF-8 as Node's ``buffer.toString("utf8")`` and ``TextDecoder`` do.

    Both follow the WHATWG decoder: each maximal invalid subsequence becomes one U+FFFD, which
    is what Python's ``errors="replace"`` produces too (checked byte for byte against Node in
    the tests).  A leading BOM is kept as U+FEFF, as ``readFileSync(path, "utf8")`` -- what Pi
    reads session files with -- keeps it (``TextDecoder`` would drop it).
    """
    return bytes(data).decode("utf-8", "replace")


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"JSON.parse does not accept {name}")


def _parse_int(s: str) -> int | float:
    # Same numbers as orjson: exact in [-2**63, 2**64), the JavaScript double beyond (float()
    # also sidesteps int()'s 4300-digit limit, where JavaScript would hold Infinity).
    if len(s) < 19:
        return int(s)
    if len(s) <= 21:
        n = int(s)
        if -(2**63) <= n < 2**64:
            return n
    return float(s)


_json_decode = json.JSONDecoder(parse_constant=_reject_constant, parse_int=_parse_int).decode


def _as_str(text: object) -> str:
    if isinstance(text, str):
        return text
    if isinstance(text, (bytes, bytearray, memoryview)):
        return decode_utf8(text)
    raise TypeError(f"the JSON text must be str or bytes, not {type(text).__name__}")


def _loads_json(text: str) -> object:
    try:
        return _json_decode(text)
    except RecursionError:
        raise ValueError("JSON nested too deeply to parse") from None


def loads(text: str | bytes | bytearray | memoryview) -> object:
    """``JSON.parse(text)``; raises ValueError for anything JSON.parse rejects."""
    if _orjson_loads is not None or (not _orjson_ready and _use_orjson()):
        try:
            return _orjson_loads(text)  # type: ignore[misc]
        except _OrjsonDecodeError:
            pass
    return _loads_json(_as_str(text))


def loads_plain(text: str | bytes | bytearray | memoryview) -> object:
    """``loads`` with the json module alone: the same results, about twice the time per byte.

    Only a text nested deeper than the json module reads (about 1000 levels) goes to ``loads``,
    since orjson reads up to 1024."""
    try:
        return _json_decode(_as_str(text))
    except RecursionError:
        return loads(text)


_SMALL_TEXT = 1 << 20


def loads_for(size: int) -> Callable[[str | bytes | bytearray | memoryview], object]:
    """The ``loads`` to parse ``size`` bytes of text with (a file's lines): ``loads``, except
    that below a MiB and while orjson is not imported yet, :func:`loads_plain`. Importing
    orjson takes longer than parsing a MiB without it (13 ms against about 4 ms more parsing
    on the machine of docs/performance.md), and a command that reads one small session
    (``pisession tree``) needs nothing else from it."""
    return loads_plain if size < _SMALL_TEXT and not _orjson_ready else loads


_WS = re.compile(r"[ \t\n\r]*")
_NUMBER = re.compile(r"(-?(?:0|[1-9][0-9]*))(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_scanstring = json.decoder.scanstring  # type: ignore[attr-defined]


def _skip_ws(s: str, i: int) -> int:
    match = _WS.match(s, i)
    return match.end() if match else i


def _syntax(text: str, pos: int) -> NoReturn:
    raise json.JSONDecodeError("JSON.parse rejects this text", text, pos)


def loads_deep(text: str | bytes | bytearray | memoryview) -> object:
    """``loads`` without its depth limit: JSON.parse reads nesting of any depth, and a line Pi
    keeps must not be lost because it is deep. Falls back to a parser with an explicit stack
    (same results as ``loads``: numbers, duplicate keys, escapes) only when ``loads`` fails."""
    try:
        return loads(text)
    except ValueError:
        pass
    s = _as_str(text)
    skip = _skip_ws
    n = len(s)
    i = skip(s, 0)
    stack: list[list[Any]] = []  # [container, pending key (None in an array)]
    while True:
        c = s[i] if i < n else ""
        value: Any
        if c == "{" or c == "[":
            i = skip(s, i + 1)
            if i < n and s[i] == ("}" if c == "{" else "]"):
                value = {} if c == "{" else []
                i += 1
            elif c == "[":
                stack.append([[], None])
                continue
            else:
                if i >= n or s[i] != '"':
                    _syntax(s, i)
                key, i = _scanstring(s, i + 1, True)
                i = skip(s, i)
                if i >= n or s[i] != ":":
                    _syntax(s, i)
                i = skip(s, i + 1)
                stack.append([{}, key])
                continue
        elif c == '"':
            value, i = _scanstring(s, i + 1, True)
        elif s.startswith("true", i):
            value, i = True, i + 4
        elif s.startswith("false", i):
            value, i = False, i + 5
        elif s.startswith("null", i):
            value, i = None, i + 4
        else:
            number = _NUMBER.match(s, i)
            if number is None:
                _syntax(s, i)
            integer, frac, exp = number.groups()
            value = float(number.group()) if frac or exp else _parse_int(integer)
            i = number.end()
        while True:  # hand the finished value to its container, closing those it completes
            i = skip(s, i)
            if not stack:
                if i != n:
                    _syntax(s, i)
                return value
            frame = stack[-1]
            container = frame[0]
            if frame[1] is not None:
                container[frame[1]] = value  # a repeated key keeps its first place, as in JS
                if i < n and s[i] == ",":
                    i = skip(s, i + 1)
                    if i >= n or s[i] != '"':
                        _syntax(s, i)
                    frame[1], i = _scanstring(s, i + 1, True)
                    i = skip(s, i)
                    if i >= n or s[i] != ":":
                        _syntax(s, i)
                    i = skip(s, i + 1)
                    break
                if i < n and s[i] == "}":
                    stack.pop()
                    value = container
                    i += 1
                    continue
                _syntax(s, i)
            container.append(value)
            if i < n and s[i] == ",":
                i = skip(s, i + 1)
                break
            if i < n and s[i] == "]":
                stack.pop()
                value = container
                i += 1
                continue
            _syntax(s, i)
