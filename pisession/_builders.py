"""The reference's pure context functions, taking typed entries (or wire dicts, or an index).

``leaf_id`` follows Pi: omitted → the last entry in file order, ``None`` → no entries at all,
an unknown id → the last entry.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from . import _context
from ._codec import from_wire, to_wire
from ._index import TreeIndex
from ._js import MISSING
from ._model import UNSET, CompactionEntry, Entry, Message, SessionContext, SystemMessage, Unset
from ._projection import SessionProjection, context_from_projection, projection_from_wire

__all__ = [
    "build_context_entries",
    "build_session_projection",
    "build_session_context",
    "session_entry_to_context_messages",
    "project_context_entry",
    "get_latest_compaction_entry",
    "get_current_system_message",
]

EntriesLike = TreeIndex | Iterable[Entry | Mapping[str, Any]]


def _wire(item: Any) -> dict[str, Any]:
    return dict(item) if isinstance(item, Mapping) else to_wire(item)


def _index(entries: EntriesLike) -> TreeIndex:
    if isinstance(entries, TreeIndex):
        return entries
    return TreeIndex.from_entries(e for e in (_wire(x) for x in entries) if e.get("type") != "session")


def _leaf(index: TreeIndex, leaf_id: str | None | Unset) -> int | None:
    return index.resolve_leaf(MISSING if leaf_id is UNSET else leaf_id)


def build_context_entries(entries: EntriesLike, leaf_id: str | None | Unset = UNSET) -> list[Entry]:
    """The entries the model context is built from: the path to the leaf, cut at its latest
    compaction (the compaction first, then the kept entries, then everything after it)."""
    index = _index(entries)
    return index.models_at(_context.context_positions(index, _leaf(index, leaf_id)))


def build_session_projection(entries: EntriesLike, leaf_id: str | None | Unset = UNSET) -> SessionProjection:
    """The model context with provenance: for each context entry, the messages it contributes."""
    index = _index(entries)
    return projection_from_wire(index, _context.project_leaf(index, _leaf(index, leaf_id)))


def build_session_context(entries: EntriesLike, leaf_id: str | None | Unset = UNSET) -> SessionContext:
    """What the model receives at ``leaf_id``::

    context = build_session_context(manager.get_entries(), leaf_id="a1b2c3d4")
    print(len(context.messages), context.thinking_level, context.model)
    """
    index = _index(entries)
    return context_from_projection(_context.project_leaf(index, _leaf(index, leaf_id)))


def _messages(wire: Sequence[Any]) -> list[Message]:
    return [from_wire(m, Message) for m in wire if isinstance(m, Mapping)]


def session_entry_to_context_messages(entry: Entry | Mapping[str, Any]) -> list[Message]:
    """The messages one entry contributes to the model context, before context edits."""
    return _messages(_context.entry_to_messages(_wire(entry)))


def project_context_entry(
    entry: Entry | Mapping[str, Any], edit: Entry | Mapping[str, Any] | None = None
) -> list[Message]:
    """An entry's messages with a context edit applied (``None``: unedited)."""
    return _messages(_context.project_entry(_wire(entry), None if edit is None else _wire(edit)))


def get_latest_compaction_entry(entries: Iterable[Entry | Mapping[str, Any]]) -> CompactionEntry | None:
    """The last compaction entry in the given order, or None."""
    latest = None
    for item in entries:
        wire = _wire(item)
        if wire.get("type") == "compaction":
            latest = item if not isinstance(item, Mapping) else wire
    if latest is None:
        return None
    return latest if not isinstance(latest, Mapping) else from_wire(latest)  # type: ignore[return-value]


def get_current_system_message(
    messages: Iterable[Message | Mapping[str, Any]], *, honour_replace: bool = True
) -> SystemMessage | None:
    """Replay every system message into the current prompt and tool set (None if there is none).

    A system message with ``replace: true`` starts a fresh baseline (the design seed's rule; Pi
    1.6.0 ignores the flag: pass ``honour_replace=False`` for its behaviour).
    """
    replayed = _context.current_system_message((_wire(m) for m in messages), honour_replace=honour_replace)
    return None if replayed is None else from_wire(replayed, Message)
