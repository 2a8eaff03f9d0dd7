"""JavaScript string semantics and wire conversion shared by the compaction modules.

Pi measures text in UTF-16 code units (``string.length``), cuts it without splitting a surrogate
pair (``sliceHead``) and joins text blocks with ``contentText``; the estimates, truncation
markers and prompts only match Pi's when these do.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .._codec import from_wire, to_wire
from .._js import js_join_item, js_len
from .._model import Message
from .._results import EntryList

__all__ = [
    "WireMessage",
    "js_len",
    "slice_head",
    "content_text",
    "js_sort",
    "wire",
    "wire_list",
    "messages_out",
]

WireMessage = dict[str, Any]


def _is_high(unit: int | None) -> bool:
    return unit is not None and 0xD800 <= unit <= 0xDBFF


def _is_low(unit: int | None) -> bool:
    return unit is not None and 0xDC00 <= unit <= 0xDFFF


def slice_head(text: str, max_units: int) -> str:
    """Pi's ``sliceHead``: at most ``max_units`` code units, never half of a surrogate pair."""
    end = max(0, max_units)
    if text.isascii():
        return text[:end]
    data = text.encode("utf-16-le", "surrogatepass")
    count = len(data) // 2

    def unit(i: int) -> int | None:
        return int.from_bytes(data[2 * i : 2 * i + 2], "little") if 0 <= i < count else None

    if _is_high(unit(end - 1)) and _is_low(unit(end)):
        end -= 1
    return data[: 2 * end].decode("utf-16-le", "surrogatepass")


def content_text(content: Any, separator: str = "\n") -> str:
    """pi-ai's ``contentText``: a string as is, else the text blocks joined."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return separator.join(
        js_join_item(block.get("text"))
        for block in content
        if isinstance(block, dict) and block.get("type") == "text"
    )


def js_sort(values: Iterable[str]) -> list[str]:
    """``Array.prototype.sort()`` on strings: by UTF-16 code units, not code points."""
    return sorted(values, key=lambda s: s.encode("utf-16-be", "surrogatepass"))


def wire(item: Any) -> dict[str, Any]:
    """A model object or mapping as a wire dict (camelCase keys, Pi's shape)."""
    return dict(item) if isinstance(item, Mapping) else to_wire(item)


def wire_list(items: Iterable[Any]) -> list[dict[str, Any]]:
    if isinstance(items, EntryList):
        # The manager's own entries: read the wire dicts underneath instead of typing and
        # converting each one back.
        index, positions = items._index, items._positions
        return [index.entry_at(p) for p in (range(len(index)) if positions is None else positions)]
    return [wire(item) for item in items]


def messages_out(messages: Iterable[WireMessage]) -> list[Message]:
    return [from_wire(m, Message) for m in messages]
