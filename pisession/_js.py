"""JavaScript semantics the reference relies on implicitly: truthiness, trim, Date parsing.

Pi is written in TypeScript and never validates what it reads, so its behaviour on odd input is
whatever these JavaScript primitives do. Reproducing them in one place keeps the rest honest.
"""

from __future__ import annotations

import contextlib
import gc
import math
import os
import re
import time
from collections.abc import Iterator

# typing for type checkers only (they take TYPE_CHECKING for true): importing it at run time
# took 8 % of `pisession tree`'s start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "JS_WHITESPACE",
    "js_trim",
    "js_truthy",
    "js_date_ms",
    "js_to_number",
    "js_join_item",
    "js_string",
    "js_number",
    "js_add",
    "js_greater",
    "js_property",
    "js_entries",
    "js_len",
    "MISSING",
    "bulk",
    "hashable",
    "iso_from_ms",
]


@contextlib.contextmanager
def bulk() -> Iterator[None]:
    """Pause the cyclic garbage collector while building many acyclic objects at once.

    Opening a 20,000-entry session allocates a few hundred thousand small objects; each
    generation-2 pass walks all of them again, which measured as 25-75% of open, tree and
    context time. Nothing built inside is cyclic, so nothing is lost by collecting later.
    """
    was_enabled = gc.isenabled()
    if was_enabled:
        gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class _Missing:
    """JavaScript's `undefined` for a key absent from a wire dict (distinct from JSON null)."""

    _instance: _Missing | None = None

    def __new__(cls) -> _Missing:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "MISSING"

    def __bool__(self) -> bool:
        return False


# One sentinel for "absent" everywhere, msgspec's head scanner included (its structs take it as
# their default): not msgspec's own UNSET, so that reading a small file needs no msgspec import.
MISSING: Any = _Missing()

# String.prototype.trim strips WhiteSpace and LineTerminator; Python's str.strip() differs
# (it strips \x1c-\x1f and \x85 but not \ufeff), so the set is spelled out.
JS_WHITESPACE = (
    "\t\n\x0b\x0c\r \xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def js_trim(text: str) -> str:
    return text.strip(JS_WHITESPACE)


def js_truthy(value: object) -> bool:
    """`Boolean(value)` in JavaScript: empty containers are truthy, NaN is falsy."""
    if value is None or value is False or value is MISSING:
        return False
    if value is True:
        return True
    if isinstance(value, (int, float)):
        return value != 0 and not (isinstance(value, float) and math.isnan(value))
    if isinstance(value, str):
        return value != ""
    return True


def js_to_number(value: object) -> float:
    """`Number(value)` for the JSON values a file can hold (and `undefined`, as MISSING)."""
    if value is None:
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        return _string_to_number(value)
    if isinstance(value, list):
        return _string_to_number(js_string(value))  # an array's primitive is its join
    return math.nan  # undefined, and an object ("[object Object]")


_DECIMAL = re.compile(r"[+-]?(?:Infinity|(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)", re.ASCII)
_RADIX = re.compile(r"0(?:[xX][0-9a-fA-F]+|[oO][0-7]+|[bB][01]+)", re.ASCII)


def _string_to_number(value: str) -> float:
    text = js_trim(value)
    if text == "":
        return 0.0
    if _DECIMAL.fullmatch(text):
        return float(text.replace("Infinity", "inf"))
    if _RADIX.fullmatch(text):
        return float(int(text[2:], {"x": 16, "o": 8, "b": 2}[text[1].lower()]))
    return math.nan


def js_string(value: object) -> str:
    """`String(value)` (what a template literal or `+ ""` makes of a JSON value or undefined)."""
    if value is None:
        return "null"
    if value is MISSING:
        return "undefined"
    return js_join_item(value)


def js_number(value: float) -> int | float:
    """A JavaScript number as Python holds it: an int while the double is an exact integer (what
    JSON.stringify prints without a fraction), else the float (NaN, infinities, fractions)."""
    if isinstance(value, int):
        return value if -_SAFE <= value <= _SAFE else js_number(float(value))
    if math.isfinite(value) and value == math.floor(value) and abs(value) < 1e21:
        return int(value)
    return value


_SAFE = 2**53


def js_add(left: object, right: object) -> Any:
    """JavaScript's `left + right`: numbers add as doubles, and a string on either side after
    ToPrimitive (an array joins, an object is "[object Object]") makes it a concatenation."""
    if type(left) is int and type(right) is int:
        total = left + right
        if -_SAFE <= total <= _SAFE:
            return total
    a, b = _primitive(left), _primitive(right)
    if isinstance(a, str) or isinstance(b, str):
        return js_string(a) + js_string(b)
    return js_number(js_to_number(a) + js_to_number(b))


def js_greater(left: object, right: object) -> bool:
    """JavaScript's `left > right`: two strings compare by UTF-16 code units, anything else as
    numbers (NaN compares false)."""
    if type(left) is int and type(right) is int:
        return left > right
    a, b = _primitive(left), _primitive(right)
    if isinstance(a, str) and isinstance(b, str):
        return a.encode("utf-16-be", "surrogatepass") > b.encode("utf-16-be", "surrogatepass")
    x, y = js_to_number(a), js_to_number(b)
    return x > y  # a NaN on either side is false, as in JavaScript


def _primitive(value: object) -> object:
    return js_string(value) if isinstance(value, (list, dict)) else value


def js_property(value: object, key: str) -> Any:
    """`value[key]` on a JSON value (``length`` of a string counts UTF-16 units), MISSING for
    undefined. Where JavaScript throws (a property of null or undefined) this is MISSING too:
    the callers decide what Pi's crash becomes."""
    if isinstance(value, dict):
        return value.get(key, MISSING)
    if key == "length":
        if isinstance(value, str):
            return js_len(value)
        if isinstance(value, list):
            return len(value)
    return MISSING


def js_entries(value: object) -> list[tuple[str, Any]]:
    """``Object.entries(value)``: an object's properties in JavaScript's order, an array's or a
    string's (UTF-16 units) by index, nothing for a number or boolean. JavaScript throws on null
    and undefined; here they have no entries."""
    if isinstance(value, dict):
        from ._json_text import _ordered_items  # JavaScript's property order

        return _ordered_items(value)
    if isinstance(value, list):
        return [(str(i), v) for i, v in enumerate(value)]
    if isinstance(value, str):
        units = value.encode("utf-16-le", "surrogatepass")
        return [
            (str(i // 2), units[i : i + 2].decode("utf-16-le", "surrogatepass"))
            for i in range(0, len(units), 2)
        ]
    return []


def js_len(text: str) -> int:
    """``text.length``: UTF-16 code units, so an emoji counts 2."""
    if text.isascii():
        return len(text)
    return len(text.encode("utf-16-le", "surrogatepass")) // 2


_ISO_DATE = re.compile(
    r"(?P<year>[+-]\d{6}|\d{4})(?:-(?P<month>\d{2})(?:-(?P<day>\d{2}))?)?"
    r"(?:[T ](?P<hour>\d{2}):(?P<minute>\d{2})(?::(?P<second>\d{2})(?:[.,](?P<frac>\d+))?)?"
    r"(?P<tz>Z|[+-]\d{2}:?\d{2})?)?",
    re.ASCII,
)


def js_join_item(value: object) -> str:
    """How ``Array.prototype.join`` writes one element: null/undefined as "", the rest as String()."""
    if value is None or value is MISSING:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        from ._json import dumps  # JavaScript's number formatting

        return (
            dumps(value)
            if math.isfinite(value)
            else ("NaN" if value != value else ("Infinity" if value > 0 else "-Infinity"))
        )
    if isinstance(value, list):
        return ",".join(js_join_item(v) for v in value)
    return "[object Object]"


def js_date_ms(value: object) -> int | None:
    """`new Date(value).getTime()` for the timestamps Pi writes; None where JavaScript gives NaN.

    Covers the ISO 8601 forms V8 accepts (date-only is UTC, a date-time without an offset is
    local time). V8's legacy free-form parser ("Dec 3 2024") is not reproduced: such strings
    give None here.
    """
    if value is None:
        return 0  # new Date(null) is the epoch; an absent value (MISSING) is NaN
    if isinstance(value, bool):
        return 1 if value else 0
    if isinstance(value, (int, float)):
        if math.isnan(value) or abs(value) > 8.64e15:
            return None
        return math.trunc(value)
    if not isinstance(value, str):
        return None
    match = _ISO_DATE.fullmatch(value)
    if match is None:
        return _legacy_date_ms(value)
    if match["year"] == "-000000":
        return None  # ECMAScript: minus zero is not a year
    year = int(match["year"])
    month = int(match["month"] or 1)
    day = int(match["day"] or 1)
    hour = int(match["hour"] or 0)
    minute = int(match["minute"] or 0)
    second = int(match["second"] or 0)
    frac = match["frac"]
    millis = int((frac + "00")[:3]) if frac else 0
    if " " in value and match["hour"] is not None and "T" not in value and match["tz"] is None:
        pass  # V8's legacy parser reads "YYYY-MM-DD HH:MM" as local time, like the ISO form
    if not (1 <= month <= 12 and 1 <= day <= 31 and hour <= 24 and minute <= 59 and second <= 59):
        return None
    if hour == 24 and (minute or second or millis):
        return None
    if day > _days_in_month(year if 1 <= year <= 9999 else 2000, month):
        return None
    days = _days_from_civil(year, month, day)
    ms = ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000 + millis
    tz = match["tz"]
    if tz is None and match["hour"] is not None:
        ms -= _local_offset_ms(ms)
    elif tz and tz != "Z":
        sign = 1 if tz[0] == "+" else -1
        digits = tz[1:].replace(":", "")
        ms -= sign * (int(digits[:2]) * 60 + int(digits[2:])) * 60_000
    if abs(ms) > 8.64e15:
        return None
    return ms


def _days_in_month(year: int, month: int) -> int:
    # calendar.monthrange's answer, without importing calendar (and locale) at start-up
    if month == 2:
        return 29 if year % 4 == 0 and (year % 100 != 0 or year % 400 == 0) else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _legacy_date_ms(value: str) -> int | None:
    """The RFC 2822 forms (``Tue, 03 Dec 2024 14:00:06 GMT``) of V8's fallback parser."""
    import email.utils  # only for dates in this rare form: it costs more than the rest of _js

    parsed = email.utils.parsedate_tz(value)
    if parsed is None:
        return None
    year, month, day, hour, minute, second = parsed[:6]
    days = _days_from_civil(year, month, day)
    ms = ((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000
    offset = parsed[9]
    return ms - (offset * 1000 if offset is not None else _local_offset_ms(ms))


def _days_from_civil(year: int, month: int, day: int) -> int:
    year -= month <= 2
    era = year // 400  # Python's // floors: the C original's `year - 399` for negatives is built in
    yoe = year - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    doe = yoe * 365 + yoe // 4 - yoe // 100 + doy
    return era * 146097 + doe - 719468


_local_zone_reads = [0]


def local_zone_reads() -> int:
    """How many times a date was read in the local time zone (a date-time without an offset):
    a value made from such a date holds only in the zone it was made in."""
    return _local_zone_reads[0]


def local_zone_key() -> str:
    """The local time zone that a date without an offset is read in, as a string to compare:
    ``$TZ`` and what the time module holds since the last ``time.tzset()``."""
    return repr((os.environ.get("TZ"), time.tzname, time.timezone, time.altzone, time.daylight))


def _local_offset_ms(utc_guess_ms: int) -> int:
    _local_zone_reads[0] += 1
    seconds = utc_guess_ms / 1000
    try:
        local = time.localtime(seconds)
    except (OverflowError, OSError, ValueError):
        return 0
    return int(local.tm_gmtoff or 0) * 1000


def hashable(value: Any) -> bool:
    """Whether a value read from a file can key a dict or set: ids, parents and targets are
    usually strings, but a hand-edited file may hold a JSON object or array there (Pi's Map
    takes any value)."""
    try:
        hash(value)
    except TypeError:
        return False
    return True


_last_second: list[tuple[int, str]] = [(-1, "")]
_last_ms: list[tuple[int, str]] = [(-1, "")]


def _iso_seconds_extended(second: int) -> str:
    """``toISOString`` up to the seconds for any time JavaScript's dates hold: year 0 and
    negative years (proleptic Gregorian), and years past 9999 as ``+010000`` / ``-000001``."""
    days, rest = divmod(second, 86400)
    # Howard Hinnant's civil_from_days
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    day = doy - (153 * mp + 2) // 5 + 1
    month = mp + 3 if mp < 10 else mp - 9
    year = yoe + era * 400 + (1 if month <= 2 else 0)
    shown = f"{year:04d}" if 0 <= year <= 9999 else f"{'-' if year < 0 else '+'}{abs(year):06d}"
    hour, rest = divmod(rest, 3600)
    return f"{shown}-{month:02d}-{day:02d}T{hour:02d}:{rest // 60:02d}:{rest % 60:02d}"


def iso_from_ms(ms: int) -> str:
    """JavaScript's ``new Date(ms).toISOString()``: always milliseconds and ``Z``."""
    known = _last_ms[0]  # one tuple read: another thread may replace it meanwhile
    if known[0] == ms:  # a burst of appends often shares the millisecond
        return known[1]
    second = ms // 1000
    cached = _last_second[0]
    if cached[0] != second:  # and the second: format that once
        from datetime import datetime, timezone  # start-up: a reader never formats a time

        try:
            moment = datetime.fromtimestamp(second, tz=timezone.utc)
            cached = (second, f"{moment.year:04d}-{moment:%m-%dT%H:%M:%S}")  # %Y: no zeros before 1000
        except (ValueError, OverflowError, OSError):  # outside Python's years 1 to 9999
            cached = (second, _iso_seconds_extended(second))
        _last_second[0] = cached
    text = f"{cached[1]}.{ms % 1000:03d}Z"
    _last_ms[0] = (ms, text)
    return text
