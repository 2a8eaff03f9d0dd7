"""JavaScript's text for numbers, object keys and strings: the pieces of ``JSON.stringify`` that
Python's ``json`` writes differently (``_json`` explains each; its encoders use these).
"""

from __future__ import annotations

import functools
import json
import re

# typing for type checkers only (they take TYPE_CHECKING for true): importing it at run time
# took 8 % of `pisession tree`'s start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NoReturn

__all__: list[str] = []  # private to _json and _js

_MAX_SAFE = 2**53
_MAX_INDEX = 2**32 - 2  # the largest array index; 2**32 - 1 is an ordinary key in JavaScript

_encode_str = json.encoder.encode_basestring  # C version where available; non-ASCII stays raw


def _not_serializable(o: object) -> NoReturn:
    raise TypeError(f"Object of type {type(o).__name__} is not JSON serializable")


def _js_float(x: float) -> str:
    """Number::toString(x): the same shortest digits as repr, laid out the JavaScript way."""
    r = float.__repr__(x)
    if "e" not in r:
        if r.endswith(".0"):
            r = r[:-2]
            return "0" if r == "-0" else r
        if r[-1] in "fn":  # inf, -inf, nan
            return "null"
        return r  # repr uses fixed notation only for 1e-4 <= |x| < 1e16: same as JavaScript
    mantissa, exp = r.split("e")
    sign = ""
    if mantissa[0] == "-":
        sign = "-"
        mantissa = mantissa[1:]
    digits = mantissa.replace(".", "")
    k = len(digits)
    n = int(exp) + 1  # x = 0.digits * 10**n
    if k <= n <= 21:
        return sign + digits + "0" * (n - k)
    if 0 < n <= 21:
        return sign + digits[:n] + "." + digits[n:]
    if -6 < n <= 0:
        return sign + "0." + "0" * -n + digits
    e = n - 1
    es = f"e+{e}" if e >= 0 else f"e-{-e}"
    if k == 1:
        return sign + digits + es
    return sign + digits[0] + "." + digits[1:] + es


def _js_int(n: int) -> str:
    if -_MAX_SAFE <= n <= _MAX_SAFE:
        return int.__repr__(n)
    try:
        return _js_float(float(n))  # int -> float rounds to nearest, ties to even, like JS
    except OverflowError:
        return "null"  # Infinity in JavaScript


def _js_key(k: object) -> str:
    """String(k) for the non-str keys the json module also accepts."""
    if isinstance(k, str):
        return str.__str__(k)  # an exact str, whatever a subclass's __str__ says
    if k is True:
        return "true"
    if k is False:
        return "false"
    if k is None:
        return "null"
    if isinstance(k, int):
        if -_MAX_SAFE <= k <= _MAX_SAFE:
            return int.__repr__(k)
        try:
            return _js_float(float(k))
        except OverflowError:
            return "-Infinity" if k < 0 else "Infinity"
    if isinstance(k, float):
        if k != k:
            return "NaN"
        if k in (float("inf"), float("-inf")):
            return "Infinity" if k > 0 else "-Infinity"
        return _js_float(k)
    raise TypeError(f"keys must be str, int, float, bool or None, not {type(k).__name__}")


def _index_of(k: str) -> int:
    """The array index k names, or -1 if JavaScript treats k as an ordinary property name."""
    if k.isdigit() and k.isascii() and (k[0] != "0" or k == "0") and len(k) <= 10:
        i = int(k)
        if i <= _MAX_INDEX:
            return i
    return -1


def _ordered_items(d: dict[Any, Any]) -> list[tuple[str, Any]]:
    """d's items with JavaScript's keys (exact str), in JavaScript's property order."""
    source: dict[Any, Any] = d
    for k in d:
        if type(k) is not str:
            source = {}
            for k2, v in d.items():
                source[_js_key(k2)] = v  # a collision keeps the first position, the last value
            break
    items: list[tuple[str, Any]] = []
    indexed: list[tuple[int, str, Any]] = []
    for k, v in source.items():
        if "0" <= k[:1] <= "9":
            i = _index_of(k)
            if i >= 0:
                indexed.append((i, k, v))
                continue
        items.append((k, v))
    if indexed:
        indexed.sort(key=lambda t: t[0])
        items[:0] = [(k, v) for _, k, v in indexed]
    return items


@functools.cache
def _surrogates() -> re.Pattern[str]:
    # compiled on first use: its character ranges make it the costliest pattern to compile, and
    # only text with lone surrogates needs it
    return re.compile("[\ud800-\udbff][\udc00-\udfff]|[\ud800-\udfff]")


def _fix_surrogate(m: re.Match[str]) -> str:
    s = m.group()
    if len(s) == 2:  # a UTF-16 pair in JavaScript: one astral character
        return chr(0x10000 + ((ord(s[0]) - 0xD800) << 10) + (ord(s[1]) - 0xDC00))
    return f"\\u{ord(s):04x}"


def _fix_surrogates(out: str) -> str:
    """Write the surrogates of encoder output as JavaScript does.

    Raw surrogates can only stand inside strings in JSON text, so the whole text can be fixed
    at once.  Encoding to UTF-16 is the fastest scan for them (a regex is ten times slower).
    """
    if out.isascii():
        return out
    try:
        out.encode("utf-16-le")
    except UnicodeEncodeError:
        return _surrogates().sub(_fix_surrogate, out)
    return out
