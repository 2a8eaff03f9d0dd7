"""Who spent what: Pi's ``getUsageCostBreakdown``, one item per entry that carries usage.

Pure functions of wire dicts (the parsed JSON of a session's lines): no files, no catalog. Summing
one session's items by ``model_key`` gives Pi's per-session breakdown (its ``/session`` view)::

    items = usage_items(entries)
    cost = sum(item.cost for item in items if item.model_key == "anthropic/claude-sonnet-4-5")

Which entries count, and under which key, as Pi 1.6.0 decides (``core/usage-totals.ts``):

- an assistant message: ``provider/(responseModel ?? model)``, its ``usage``;
- a ``usage`` entry: ``provider/model``;
- a tool result message with a usage, a compaction or a branch summary with a usage:
  ``Tools/summaries``.

Every branch counts: the entries are the whole file, not a path. Odd values are read as
JavaScript reads them, since Pi adds them with ``+=`` and never checks: a missing number is
``NaN`` (and turns Pi's total for that model into ``NaN``), ``null`` is 0, ``true``/``false`` are
1/0. Two cases differ, documented on the "Usage and cost" page:

- text or a container where a number belongs: JavaScript would concatenate it into a string;
  pisession reads it as ``NaN``;
- a usage whose ``cost`` is missing or null, or a message that is null: Pi's breakdown throws
  (its ``/session`` fails); pisession leaves that entry out;
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import Any, Final, final

from ._js import MISSING, js_string, js_truthy
from ._record import Record

__all__ = ["UsageItem", "usage_items", "usage_item", "usage_fields", "copied_entry_ids", "TOOLS_KEY"]

TOOLS_KEY: Final = "Tools/summaries"
"""The key Pi files tool-result, compaction and branch-summary usage under."""

_NAN: Final = math.nan
_MAX_SAFE: Final = 2**53


@final
class UsageItem(Record):
    """One entry's usage, as Pi's breakdown counts it.

    ``timestamp`` is the entry's ISO timestamp as written (``""`` when it has none);
    ``entry_id`` its id (``""`` for a version-1 entry, which has none). The four token counts and
    ``cost`` (``usage.cost.total``) are numbers as JavaScript adds them: ``NaN`` where Pi's sum
    would be ``NaN``.
    """

    entry_id: str
    timestamp: str
    model_key: str
    input: int | float
    output: int | float
    cache_read: int | float
    cache_write: int | float
    cost: float

    @property
    def tokens(self) -> int | float:
        """input + output + cache read + cache write, as Pi counts a row's tokens."""
        return self.input + self.output + self.cache_read + self.cache_write


def _js_addend(value: object) -> int | float:
    """What ``total += value`` adds to a number in JavaScript (text and containers: see the
    module's note)."""
    if type(value) is float:
        return value
    if type(value) is int:
        if -_MAX_SAFE <= value <= _MAX_SAFE:
            return value
        try:
            return float(value)  # the double JSON.parse gives (SQLite's integers end at 2**63 anyway)
        except OverflowError:
            return math.inf if value > 0 else -math.inf
    if value is None:
        return 0
    if value is True:
        return 1
    if value is False:
        return 0
    return _NAN


# (entry id, timestamp, model key, input, output, cache read, cache write, cost): a UsageItem's
# fields, for callers that store them without making an object per entry (the catalog).
UsageFields = tuple[str, str, str, "int | float", "int | float", "int | float", "int | float", float]


def _fields(entry: Mapping[str, Any], key: str, usage: Any) -> UsageFields | None:
    if not js_truthy(usage):
        return None
    if not isinstance(usage, Mapping):
        return None  # `usage.cost.total` throws in Pi
    cost = usage.get("cost", MISSING)
    if cost is None or cost is MISSING:
        return None  # `usage.cost.total` throws in Pi
    total = cost.get("total", MISSING) if isinstance(cost, Mapping) else MISSING
    entry_id = entry.get("id")
    timestamp = entry.get("timestamp")
    return (
        entry_id if isinstance(entry_id, str) else "",
        timestamp if isinstance(timestamp, str) else "",
        key,
        _js_addend(usage.get("input", MISSING)),
        _js_addend(usage.get("output", MISSING)),
        _js_addend(usage.get("cacheRead", MISSING)),
        _js_addend(usage.get("cacheWrite", MISSING)),
        float(_js_addend(total)),
    )


def usage_fields(entry: Mapping[str, Any]) -> UsageFields | None:
    """The fields of :func:`usage_item`'s item as a tuple, or None (no object made)."""
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message", MISSING)
        if not isinstance(message, Mapping):
            return None  # null: Pi throws; text or a list: no role, nothing counted
        role = message.get("role")
        if role == "assistant":
            model = message.get("responseModel", MISSING)
            if model is None or model is MISSING:
                model = message.get("model", MISSING)
            key = f"{js_string(message.get('provider', MISSING))}/{js_string(model)}"
            return _fields(entry, key, message.get("usage", MISSING))
        if role == "toolResult":
            return _fields(entry, TOOLS_KEY, message.get("usage", MISSING))
        return None
    if kind == "usage":
        key = f"{js_string(entry.get('provider', MISSING))}/{js_string(entry.get('model', MISSING))}"
        return _fields(entry, key, entry.get("usage", MISSING))
    if kind == "compaction" or kind == "branch_summary":
        return _fields(entry, TOOLS_KEY, entry.get("usage", MISSING))
    return None


def usage_item(entry: Mapping[str, Any]) -> UsageItem | None:
    """The usage one entry carries under Pi's rules, or None."""
    fields = usage_fields(entry)
    return None if fields is None else UsageItem(*fields)


def usage_items(entries: Iterable[Mapping[str, Any]]) -> list[UsageItem]:
    """Every usage Pi's breakdown counts in one session's entries (all branches, file order).

    ``entries``: the session's wire dicts; a header or a line that is not an object is ignored::

        for item in usage_items(read_session_entries("session.jsonl")):
            print(item.timestamp, item.model_key, item.cost)
    """
    items: list[UsageItem] = []
    for entry in entries:
        if isinstance(entry, Mapping):
            item = usage_item(entry)
            if item is not None:
                items.append(item)
    return items


def _identity(entry: Mapping[str, Any]) -> tuple[str, str] | None:
    entry_id = entry.get("id")
    timestamp = entry.get("timestamp")
    if entry.get("type") == "session" or not isinstance(timestamp, str):
        return None
    return (entry_id, timestamp) if isinstance(entry_id, str) and entry_id else None


def copied_entry_ids(
    entries: Iterable[Mapping[str, Any]], parent_entries: Iterable[Mapping[str, Any]]
) -> frozenset[str]:
    """Ids of ``entries`` that a fork or branched session copied from its parent session: the same
    id and timestamp appear in ``parent_entries`` (``forkFrom`` and ``createBranchedSession``
    keep both). Headers and entries without an id never match::

        copies = copied_entry_ids(fork_entries, parent_entries)
        own = [item for item in usage_items(fork_entries) if item.entry_id not in copies]
    """
    parent = {identity for e in parent_entries if isinstance(e, Mapping) and (identity := _identity(e))}
    return frozenset(
        identity[0] for e in entries if isinstance(e, Mapping) and (identity := _identity(e)) in parent
    )
