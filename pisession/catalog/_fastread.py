"""One decode per line for a catalog read: the listing's row and the usage rows together.

The exact reading of a line (:func:`pisession._discovery.feed_lines` for the listing's row,
:func:`pisession.catalog._usage.usage_rows` for the usage rows) parses every line twice, in full,
and walks the values with JavaScript's rules for every odd type. Nearly every line Pi writes has
plain types: this module decodes those once, with msgspec, into typed fields (a message's content
left undecoded unless its text is needed), and hands any other line to the exact reading. A line
takes the quick way only when msgspec accepts it with the types below, so the two ways agree on
it; a line it refuses (invalid UTF-8, a lone surrogate, an odd type, a number out of range) is
read the exact way, with nothing of it counted twice.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from itertools import repeat
from typing import Any

from .._discovery import SessionSummary, feed_lines, split_cr
from .._js import MISSING, js_date_ms
from .._json import loads_for
from ._schema import LISTING, USAGE
from ._usage import _MARKERS, _SAFE, UsageRow, kind_key, timestamp_ms, unbraced, usage_rows

# a line holds "usage" (or a key written with escapes, which may read "usage": the exact way decides)
_USAGE_MARK, _ESCAPE_MARK = _MARKERS


_Decoders = tuple[
    Callable[[bytes], Any], Callable[[Any], Any], tuple[type[Exception], ...], Callable[[Any], list[Any]]
]
# the message fields a read for usage alone decodes (no content, no time of its own)
_USAGE_FIELDS = ("role", "provider", "model", "responseModel")


def import_for_worker() -> None:
    """Import msgspec in a worker process (:mod:`._workers`), never in the caller's process.

    msgspec imports typing_extensions, where it is installed, only to read that module's types
    in its caller's annotations (10-20 ms of msgspec's import, which the workers wait for). A
    worker's reader has none, so its import of msgspec goes without it, unless this process had
    either already; if msgspec could not, it is imported as usual (by :func:`_decoders`)."""
    if "typing_extensions" in sys.modules or "msgspec" in sys.modules:
        return
    sys.modules["typing_extensions"] = None  # type: ignore[assignment] # an import of it fails
    try:
        import msgspec  # noqa: F401
    except ImportError:
        for name in [name for name in sys.modules if name.partition(".")[0] == "msgspec"]:
            del sys.modules[name]
    finally:
        del sys.modules["typing_extensions"]


@functools.cache
def _decoders() -> _Decoders | None:
    """(line decoder, content decoder, their errors, the decoder of many lines at once for a read
    of usage alone), or None without msgspec."""
    try:
        import msgspec
    except ImportError:  # exercised by tests that hide it
        return None
    from typing import Annotated
    from typing import Any as AnyType

    safe_int = Annotated[int, msgspec.Meta(ge=-_SAFE, le=_SAFE)]
    cost = msgspec.defstruct("_QuickCost", [("total", float)], gc=False)
    usage = msgspec.defstruct(
        "_QuickUsage",
        [*((name, safe_int) for name in ("input", "output", "cacheRead", "cacheWrite")), ("cost", cost)],
        gc=False,
    )
    message = msgspec.defstruct(
        "_QuickMessage",
        [
            *(
                (name, AnyType, MISSING)
                for name in ("role", "timestamp", "provider", "model", "responseModel")
            ),
            ("content", msgspec.Raw, None),  # read only where its text is listed
            ("usage", usage | None, None),
        ],
        gc=False,
    )
    entry = msgspec.defstruct(
        "_QuickEntry",
        [
            *((name, AnyType, MISSING) for name in ("type", "id", "timestamp", "usage")),
            ("message", message | None, None),
        ],
        gc=False,
    )
    block = msgspec.defstruct(
        "_QuickBlock", [("type", AnyType, MISSING), ("text", AnyType, MISSING)], gc=False
    )
    # for usage alone: the same fields less what only the listing reads (7 % less to decode)
    usage_message = msgspec.defstruct(
        "_QuickUsageMessage",
        [*((name, AnyType, MISSING) for name in _USAGE_FIELDS), ("usage", usage | None, None)],
        gc=False,
    )
    usage_entry = msgspec.defstruct(
        "_QuickUsageEntry",
        [
            *((name, AnyType, MISSING) for name in ("type", "id", "timestamp", "usage")),
            ("message", usage_message | None, None),
        ],
        gc=False,
    )
    lines = msgspec.json.Decoder(entry)
    content = msgspec.json.Decoder(str | list[block]).decode  # type: ignore[valid-type]
    errors = (msgspec.DecodeError, msgspec.ValidationError, RecursionError)
    return lines.decode, content, errors, msgspec.json.Decoder(usage_entry).decode_lines


def read_lines(
    summary: SessionSummary, lines: list[bytes], lacks: int = 0, joined: memoryview | None = None
) -> tuple[list[UsageRow], int]:
    """Feed ``lines`` (whole lines split on ``"\\n"``) to ``summary`` and return their usage rows
    and damaged-line count: what ``feed_lines(summary, split_cr(lines))`` followed by
    ``usage_rows(lines, summary.header)`` give, each line decoded once where its types allow.

    ``lacks`` leaves parts out (:data:`~._schema.USAGE`: no rows and no count are returned;
    :data:`~._schema.LISTING`: past the header, ``summary`` is left as it is and only the lines
    that may hold usage are decoded). ``joined``: the lines joined by ``"\\n"``, where the
    caller holds them so (a file read whole): not joined again."""
    decoders = _decoders()
    usage = not lacks & USAGE
    if decoders is None or summary.foreign or summary.messages is not None:
        if usage:
            return _exact(summary, lines)
        if not summary.foreign:
            feed_lines(summary, split_cr(lines))
        return [], 0
    decode, decode_content, errors, decode_lines = decoders
    rows: list[UsageRow] = []
    damaged = 0
    start = 0
    while summary.header is None:
        # up to the header, line by line: the first entry read decides whether this is a session
        # (no line before it carries usage, so reading them before the header is known is alike)
        if start == len(lines):
            return rows, damaged
        line = lines[start]
        start += 1
        # (orjson is imported where a file needs it, not for one line: see loads_for)
        feed_lines(summary, split_cr([line]), loads_for(len(line)))
        if summary.foreign:
            return [], 0  # the exact reading counts nothing of a batch that shows a foreign file
        if usage:
            damaged += usage_rows([line], None)[1]
    header = summary.header
    fallback: list[int] = []
    if lacks & LISTING:
        rest = lines[start:] if start else lines
        if joined is not None and start:
            joined = joined[sum(map(len, lines[:start])) + start :]
        if _usage_of_plain_lines(rest, header, rows, fallback, decode_lines, errors, joined):
            return rows, damaged
        return _usage_only(rest, header, rows, fallback, decode, errors, damaged)
    for line in lines[start:] if start else lines:
        if not line:
            continue
        if type(line) is bytes and b"\r" not in line:
            try:
                entry = decode(line)
            except errors:
                entry = None
            quick = entry is not None and _quick(
                summary, entry, line, header, rows, fallback, decode_content, errors, usage
            )
            if quick:
                continue
        if usage:
            damaged += _exact_line(summary, line, header, rows)
        else:
            feed_lines(summary, split_cr([line]))
    return rows, damaged


def _usage_of_plain_lines(
    lines: list[bytes],
    header: dict[str, Any],
    rows: list[UsageRow],
    fallback: list[int],
    decode_lines: Callable[[Any], list[Any]],
    errors: tuple[type[Exception], ...],
    joined: memoryview | None = None,
) -> bool:
    """:func:`_usage_only` of lines that all decode with plain types, decoded in one call (no
    line searched for a mark); False (nothing added) if one does not, or is not an object's
    braces alone: :func:`_usage_only` then reads them. ``joined``: as :func:`read_lines` takes it.

    The decoder of many lines reads a value across a newline, and two values on one line (a
    space or a ``"\\r"`` between them; inside a value a ``"\\r"`` is white space, to it and to
    Pi's reading of usage alike); with every line braced, no value crosses a newline (inside a
    value, ``}`` is never followed by ``{``), so as many values as lines are one per line.

    Lines that all decode hold no damaged line: each is a JSON object. A line whose entry and
    message have no ``usage`` key holds no usage (it is told by its key's decoded name, an
    escaped one too); the others are read as :func:`_usage_only` reads them."""
    if not lines:
        return False
    if joined is None and not all(type(line) is bytes for line in lines):
        return False
    braced = all(map(bytes.startswith, lines, repeat(b"{"))) and all(map(bytes.endswith, lines, repeat(b"}")))
    if not braced:
        return False
    try:
        entries = decode_lines(b"\n".join(lines) if joined is None else joined)
    except errors:
        return False
    if len(entries) != len(lines):  # a line of two values
        return False
    for line, entry in zip(lines, entries, strict=True):
        message = entry.message
        if entry.usage is MISSING:
            if message is None or message.usage is None:
                continue  # no usage here (the exact reading agrees: it is tested)
            if (
                entry.type == "message"
                and message.role == "assistant"
                and _usage_row(entry, message, header, rows, fallback)
            ):
                continue
        found, _ = usage_rows([line], header)  # (a line that decodes is no damaged line)
        rows.extend(found)
    return True


def _usage_only(
    lines: list[bytes],
    header: dict[str, Any],
    rows: list[UsageRow],
    fallback: list[int],
    decode: Callable[[bytes], Any],
    errors: tuple[type[Exception], ...],
    damaged: int,
) -> tuple[list[UsageRow], int]:
    """:func:`usage_rows` of lines past the header: a line that cannot hold usage is only told
    damaged or not (by its first and last byte), one that may is decoded once, its content
    skipped; what only the exact reading can tell goes to it."""
    for line in lines:
        if _USAGE_MARK not in line and _ESCAPE_MARK not in line:
            if not (line[:1] == b"{" and line[-1:] == b"}") and unbraced(line):
                damaged += 1
            continue
        if type(line) is bytes:
            try:
                entry = decode(line)
            except errors:
                entry = None
            if entry is not None and entry.type == "message":
                message = entry.message
                if message is not None:
                    role = message.role
                    if role == "user" or (role == "assistant" and message.usage is None):
                        continue  # no usage counted (the exact reading agrees: it is tested)
                    if role == "assistant" and _usage_row(entry, message, header, rows, fallback):
                        continue
        found, bad = usage_rows([line], header)
        rows.extend(found)
        damaged += bad
    return rows, damaged


def _usage_row(
    entry: Any, message: Any, header: dict[str, Any], rows: list[UsageRow], fallback: list[int]
) -> bool:
    """Add the usage row of an assistant message decoded with plain types; False (nothing
    added) where its model or provider is not text: the exact reading tells."""
    usage = message.usage
    model = message.responseModel
    if model is None or model is MISSING:
        model = message.model
    provider = message.provider
    if type(model) is not str or type(provider) is not str:
        return False
    entry_id = entry.id if type(entry.id) is str else ""
    timestamp = entry.timestamp if type(entry.timestamp) is str else ""
    ms = timestamp_ms(timestamp) if timestamp else None
    if ms is None:
        if not fallback:
            moment = header.get("timestamp")
            fallback.append((js_date_ms(moment) if isinstance(moment, str) else None) or 0)
        ms = fallback[0]
    rows.append(
        (
            entry_id,
            timestamp,
            ms,
            kind_key("message", f"{provider}/{model}"),
            usage.input,
            usage.output,
            usage.cacheRead,
            usage.cacheWrite,
            float(usage.cost.total),
        )
    )
    return True


def _quick(
    summary: SessionSummary,
    entry: Any,
    line: bytes,
    header: dict[str, Any],
    rows: list[UsageRow],
    fallback: list[int],
    decode_content: Callable[[Any], Any],
    errors: tuple[type[Exception], ...],
    usage: bool,
) -> bool:
    """Take one decoded line (its usage row too, with ``usage``); False (nothing taken) where
    only the exact reading can tell."""
    kind = entry.type
    if kind != "message":
        # only a session's name and usage are read from other entries: those go the exact way
        return not (
            kind == "session_info"
            or type(kind) is not str
            or (usage and (_USAGE_MARK in line or _ESCAPE_MARK in line))
        )
    message = entry.message
    if message is None:
        return False
    role = message.role
    if role != "user" and role != "assistant":
        if usage and message.usage is not None:
            return False  # a tool result's usage: the exact way
        summary.message_count += 1  # no text of it is listed (the search index reads it elsewhere)
        return True
    stamp = message.timestamp
    raw = message.content
    if raw is None or not (type(stamp) is int or type(stamp) is float):
        return False
    try:
        content = decode_content(raw)
    except errors:
        return False
    if type(content) is str:
        text = content
    else:
        parts = []
        for block in content:
            if block.type == "text":
                if type(block.text) is not str:
                    return False
                parts.append(block.text)
        text = " ".join(parts)
    if (
        usage
        and role == "assistant"
        and message.usage is not None
        and not _usage_row(entry, message, header, rows, fallback)
    ):
        return False
    summary.message_count += 1
    activity = float(stamp)
    base = summary.last_activity or 0.0
    summary.last_activity = activity if activity > base else base
    if text:
        summary.texts.append(text)
        if not summary.first_message and role == "user":
            summary.first_message = text
    return True


def _exact(summary: SessionSummary, lines: list[bytes]) -> tuple[list[UsageRow], int]:
    if summary.foreign:
        return [], 0
    feed_lines(summary, split_cr(lines))
    if summary.foreign:
        return [], 0
    return usage_rows(lines, summary.header)


def _exact_line(summary: SessionSummary, line: bytes, header: dict[str, Any], rows: list[UsageRow]) -> int:
    """Read one line the exact way; its usage rows join ``rows``; its damaged count is returned."""
    feed_lines(summary, split_cr([line]))
    found, damaged = usage_rows([line], header)
    rows.extend(found)
    return damaged
