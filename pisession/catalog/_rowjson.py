"""A listing's row made while its file is read: the ``modified`` time and the JSON up to the
message text that ``pisession ls --json`` prints, kept in the ``files`` row so that a warm
listing copies bytes (made in the worker process that reads a new file)."""

from __future__ import annotations

from .._discovery import SessionInfo, SessionSummary, row_json
from .._record import replace


def made_ahead(
    summary: SessionSummary, path: str, partial: bytes | None
) -> tuple[float | None, bytes | None]:
    """The picker row's ``modified`` (POSIX time) and its JSON up to the message text, as
    :func:`pisession._discovery.row_json` writes them: what a listing copies as it is. (None,
    None) where the row depends on more than the whole lines read (an unfinished last line, or
    no time but the file's mtime) or is not a session's. (A time read in the local time zone
    holds in that zone: the row keeps it, and is read again in another.)"""
    if partial != b"":
        return None, None
    info = summary.info(path, None)  # a header time in local time: the row keeps the zone
    if info is None:
        return None, None
    info = replace(info, all_messages_text="")
    try:
        row = plain_row_json(info) or row_json(info)
    except RecursionError:  # a header id nested deeper than the json module goes
        return None, None
    empty_text = b'"allMessagesText": ""\n  }'
    assert row.endswith(empty_text)
    return info.modified.timestamp(), row[: -len(empty_text) + len(b'"allMessagesText": ')]


def plain_row_json(info: SessionInfo) -> bytes | None:
    """:func:`row_json`'s bytes written by orjson (the json module's encoder with ``indent`` is
    pure Python: most of a row's cost), where they are the same: a row of text, safe integers
    and nulls (orjson refuses lone surrogates); None for anything else, or without orjson."""
    wire = info.to_wire()
    for value in wire.values():
        kind = type(value)
        if not (kind is str or value is None or (kind is int and -(2**63) <= value < 2**64)):
            return None
    try:
        import orjson
    except ImportError:  # pragma: no cover - a dependency, optional at run time
        return None
    try:
        return orjson.dumps([wire], option=orjson.OPT_INDENT_2)[2:-2]
    except TypeError:
        return None
