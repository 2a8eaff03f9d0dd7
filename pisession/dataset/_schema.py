"""The five tables' Arrow schemas, and turning a session's column lists into Arrow tables.

Every file of a table is written with exactly its schema, so an engine reading a folder never
has to reconcile two files' types (a table with no rows has them all the same).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

import pyarrow as pa

from ..catalog._usage import timestamp_ms
from ._rows import COLUMNS

__all__ = ["SCHEMAS", "PROJECT", "to_table", "string_array"]

_TIME = pa.timestamp("ms", tz="UTC")


def _field(name: str, kind: pa.DataType, doc: str, *, nullable: bool = True) -> pa.Field:
    return pa.field(name, kind, nullable=nullable, metadata={"description": doc})


_SESSION_ID = _field("session_id", pa.string(), "the session's id (its header's `id`)", nullable=False)
_ENTRY_ID = _field("entry_id", pa.string(), "the entry's `id`")
_ON_BRANCH = "on the path from the root to the session's leaf (Pi's active branch when it opens the file)"

SCHEMAS: dict[str, pa.Schema] = {
    "sessions": pa.schema(
        [
            _SESSION_ID,
            _field("session_file", pa.string(), "absolute path of the session file", nullable=False),
            _field(
                "folder",
                pa.string(),
                "name of the folder holding the session file (Pi's `--<cwd>--`, or a `sessionDir`'s name)",
                nullable=False,
            ),
            _field("cwd", pa.string(), "the header's working folder"),
            _field("created", _TIME, "the header's timestamp"),
            _field(
                "parent_session",
                pa.string(),
                "the header's `parentSession`: the file this one was forked from",
            ),
            _field("name", pa.string(), "the session's name (the latest `session_info` entry)"),
            _field("entry_count", pa.int64(), "entries after the header", nullable=False),
            _field("leaf_id", pa.string(), "id of the leaf: the last entry in file order"),
        ]
    ),
    "entries": pa.schema(
        [
            _SESSION_ID,
            _ENTRY_ID,
            _field("parent_id", pa.string(), "the entry's `parentId` (null for a root)"),
            _field("type", pa.string(), "the entry's `type`: message, compaction, label, ..."),
            _field("timestamp", _TIME, "the entry's timestamp"),
            _field("on_leaf_branch", pa.bool_(), _ON_BRANCH, nullable=False),
            _field(
                "in_context",
                pa.bool_(),
                "among the entries Pi builds the model's context from at the leaf",
                nullable=False,
            ),
            _field(
                "copied",
                pa.bool_(),
                "a fork's copy of an entry of its parent session (same id and timestamp there)",
                nullable=False,
            ),
            _field("label", pa.string(), "the entry's label, as resolved at the end of the file"),
            _field("json", pa.string(), "the line as Pi wrote it", nullable=False),
        ]
    ),
    "messages": pa.schema(
        [
            _SESSION_ID,
            _ENTRY_ID,
            _field(
                "message_index",
                pa.int32(),
                "0, or 1 for a compaction's summary after the system message it carries",
                nullable=False,
            ),
            _field(
                "role", pa.string(), "user, assistant, toolResult, system, custom, compactionSummary, ..."
            ),
            _field("timestamp", _TIME, "the message's own timestamp"),
            _field("text", pa.string(), "the text content joined with newlines (a summary's summary)"),
            _field("provider", pa.string(), "an assistant message's provider"),
            _field("model", pa.string(), "an assistant message's model"),
            _field("stop_reason", pa.string(), "an assistant message's stopReason"),
            _field("on_leaf_branch", pa.bool_(), _ON_BRANCH, nullable=False),
            _field(
                "in_context",
                pa.bool_(),
                "one of the messages of Pi's context at the leaf (`build_session_context().messages`)",
                nullable=False,
            ),
            _field(
                "context_index",
                pa.int32(),
                "the message's position in that context (0 first; null when not in it)",
            ),
            _field(
                "context_text",
                pa.string(),
                "the text the context holds instead, when a context edit replaced this message's content",
            ),
        ]
    ),
    "tool_calls": pa.schema(
        [
            _SESSION_ID,
            _field("entry_id", pa.string(), "id of the assistant message entry holding the call"),
            _field("timestamp", _TIME, "that entry's timestamp"),
            _field("tool_call_id", pa.string(), "the call's `id`"),
            _field("name", pa.string(), "the tool's name"),
            _field("arguments", pa.string(), "the call's arguments as JSON text"),
            _field("on_leaf_branch", pa.bool_(), _ON_BRANCH, nullable=False),
            _field("is_error", pa.bool_(), "the matching tool result's `isError` (null: no result)"),
            _field("result_text", pa.string(), "the matching tool result's text"),
            _field("result_entry_id", pa.string(), "id of the matching tool result's entry"),
        ]
    ),
    "usage": pa.schema(
        [
            _SESSION_ID,
            _ENTRY_ID,
            _field("timestamp", _TIME, "the entry's timestamp"),
            _field(
                "model_key",
                pa.string(),
                "`provider/model` as Pi's usage breakdown keys it, or `Tools/summaries`",
                nullable=False,
            ),
            _field("input", pa.int64(), "input tokens"),
            _field("output", pa.int64(), "output tokens (reasoning included)"),
            _field("cache_read", pa.int64(), "tokens read from the prompt cache"),
            _field("cache_write", pa.int64(), "tokens written to the prompt cache"),
            _field("cost", pa.float64(), "`usage.cost.total`, in dollars"),
            _field(
                "counted",
                pa.bool_(),
                "false for a fork's copy: the usage counts in the session that first wrote it",
                nullable=False,
            ),
        ]
    ),
}

PROJECT = _field(
    "project",
    pa.string(),
    "the session's project: its header's `cwd` (the session folder's name when the header has none), "
    "the Hive partition",
    nullable=False,
)

assert {t: tuple(s.names) for t, s in SCHEMAS.items()} == COLUMNS

_SURROGATE = re.compile("[\ud800-\udfff]")


def _clean(value: Any) -> Any:
    """A string Arrow can hold: a lone surrogate (an escaped one in the JSON) becomes U+FFFD, and
    bytes that are not UTF-8 are decoded as Pi's reader decodes them."""
    if isinstance(value, str):
        return _SURROGATE.sub("\ufffd", value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return value


def _times(values: list[Any]) -> pa.Array:
    """Timestamps from ISO text (entries, headers: as JavaScript's ``Date`` reads it) or Unix
    milliseconds (messages). Read in Python, not by Arrow's cast, whose compute module took
    28 ms to import (a seventh of the call that re-exports ten small sessions) for a column of a few
    hundred values."""
    if not any(isinstance(v, str) for v in values):
        return pa.array(values, _TIME)
    return pa.array([timestamp_ms(v) if isinstance(v, str) else v for v in values], _TIME)


def string_array(values: list[Any]) -> pa.Array:
    """A string column of ``values`` (text, UTF-8 bytes, None), each as :func:`_clean` makes it
    where Arrow cannot hold it as it is."""
    try:
        if values and isinstance(values[0], bytes):
            values = [v.decode("utf-8") if isinstance(v, bytes) else v for v in values]
        return pa.array(values, pa.string())
    except (pa.ArrowInvalid, UnicodeError):
        return pa.array([_clean(v) for v in values], pa.string())


def _converter(kind: pa.DataType) -> Callable[[list[Any]], pa.Array]:
    if kind == _TIME:
        return _times
    if pa.types.is_string(kind):
        return string_array
    return functools.partial(pa.array, type=kind)


# Each column's conversion, chosen once: comparing Arrow types for every column of every
# session cost as much as converting a small session's values.
_CONVERTERS = {
    table: tuple((field.name, _converter(field.type)) for field in schema)
    for table, schema in SCHEMAS.items()
}


def to_table(table: str, columns: dict[str, list[Any]]) -> pa.Table:
    """The Arrow table of one table's column lists, with its schema."""
    return pa.Table.from_arrays(
        [convert(columns[name]) for name, convert in _CONVERTERS[table]], schema=SCHEMAS[table]
    )
