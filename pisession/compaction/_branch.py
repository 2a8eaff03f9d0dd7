"""What Pi summarizes when the leaf moves to another branch (``branch-summarization.js``).

Leaving a branch abandons the entries from the old leaf back to the deepest entry it shares
with the target; Pi summarizes those, newest first until a token budget is spent (stored summaries
squeeze in if they fit within 90% of it), with file operations collected from all of them.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from .._codec import from_wire
from .._context import project_entry
from .._index import TreeIndex
from .._js import MISSING, js_truthy
from .._model import Entry, Message
from .._session import is_path, not_a_session, read_index
from ._common import WireMessage, messages_out, wire_list
from ._files import FileOperations, add_details_wire, extract_file_ops_wire
from ._messages import branch_summary_message_wire, compaction_summary_message_wire, custom_message_wire
from ._tokens import estimate_tokens_wire

if TYPE_CHECKING:
    from .._session import HasSnapshot

__all__ = ["BranchPreparation", "collect_entries_for_branch_summary", "prepare_branch_entries"]


@attrs.frozen
class BranchPreparation:
    """Pi's ``BranchPreparation``: the messages that fit the budget, the files of all entries,
    and the estimated tokens of the messages kept."""

    messages: tuple[Message, ...]
    file_ops: FileOperations
    total_tokens: int


def _path_ids(index: TreeIndex, entry_id: Any) -> list[Any]:
    pos = index.position(entry_id) if js_truthy(entry_id) else None
    return [] if pos is None else [index.id_at(p) for p in index.path_positions(pos)]


def collect_wire(index: TreeIndex, old_leaf_id: Any, target_id: Any) -> tuple[list[dict[str, Any]], Any]:
    if not js_truthy(old_leaf_id):
        return [], None
    old_path = set()
    for entry_id in _path_ids(index, old_leaf_id):
        with contextlib.suppress(TypeError):
            old_path.add(entry_id)
    common: Any = None
    for entry_id in reversed(_path_ids(index, target_id)):
        with contextlib.suppress(TypeError):
            if entry_id in old_path:
                common = entry_id
                break
    entries: list[dict[str, Any]] = []
    seen: set[int] = set()
    current = old_leaf_id
    while js_truthy(current) and current != common:
        pos = index.position(current)
        if pos is None or pos in seen:  # seen: a parent cycle, where Pi would loop for ever
            break
        seen.add(pos)
        entry = index.entry_at(pos)
        entries.append(entry)
        current = entry.get("parentId")
    entries.reverse()
    return entries, common


def _message_of(entry: Mapping[str, Any], edit: Mapping[str, Any] | None) -> Any:
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        if isinstance(message, Mapping) and message.get("role") == "toolResult":
            return None  # the assistant's tool call already says what happened
        if edit is not None:
            projected = project_entry(entry, edit)
            return projected[0] if projected else None
        return message
    if kind == "custom_message":
        if edit is not None:
            projected = project_entry(entry, edit)
            return projected[0] if projected else None
        return custom_message_wire(
            entry.get("customType", MISSING),
            entry.get("content", MISSING),
            entry.get("display", MISSING),
            entry.get("details", MISSING),
            entry.get("timestamp", MISSING),
        )
    if kind == "branch_summary":
        return branch_summary_message_wire(
            entry.get("summary", MISSING), entry.get("fromId", MISSING), entry.get("timestamp", MISSING)
        )
    if kind == "compaction":
        return compaction_summary_message_wire(
            entry.get("summary", MISSING), entry.get("tokensBefore", MISSING), entry.get("timestamp", MISSING)
        )
    return None


def prepare_branch_wire(
    entries: Sequence[Mapping[str, Any]], token_budget: float = 0
) -> tuple[list[WireMessage], FileOperations, int]:
    ops = FileOperations()
    for entry in entries:
        # Only Pi's own summaries (not an extension's) carry file lists forward.
        if entry.get("type") == "branch_summary" and not js_truthy(entry.get("fromHook")):
            add_details_wire(entry.get("details"), ops)
    edits: dict[Any, Mapping[str, Any]] = {}
    for entry in entries:
        if entry.get("type") == "context_edit":
            with contextlib.suppress(TypeError):
                edits[entry.get("targetId", MISSING)] = entry
    messages: list[WireMessage] = []
    total = 0
    for entry in reversed(entries):
        edit = None
        with contextlib.suppress(TypeError):
            edit = edits.get(entry.get("id", MISSING))
        message = _message_of(entry, edit)
        if not isinstance(message, Mapping) or not js_truthy(message):
            continue
        extract_file_ops_wire(message, ops)
        tokens = estimate_tokens_wire(message)
        if token_budget > 0 and total + tokens > token_budget:
            if entry.get("type") in ("compaction", "branch_summary") and total < token_budget * 0.9:
                messages.append(dict(message))
                total += tokens
            break
        messages.append(dict(message))
        total += tokens
    messages.reverse()
    return messages, ops, total


# -- public ---------------------------------------------------------------------------------------


def collect_entries_for_branch_summary(
    manager_or_index: HasSnapshot | TreeIndex | str | os.PathLike[str],
    old_leaf_id: str | None,
    target_id: str,
) -> tuple[list[Entry], str | None]:
    """The entries abandoned when moving from ``old_leaf_id`` to ``target_id`` (oldest first,
    back to but excluding their deepest common ancestor) and that ancestor's id::

        entries, ancestor = collect_entries_for_branch_summary(manager, manager.get_leaf_id(), target)
    """
    if isinstance(manager_or_index, TreeIndex):
        index = manager_or_index
    elif isinstance(manager_or_index, (str, os.PathLike)) and is_path(manager_or_index):
        index = read_index(os.fspath(manager_or_index))
    else:
        snapshot = getattr(manager_or_index, "snapshot", None)
        found = snapshot() if callable(snapshot) else None
        if not isinstance(found, TreeIndex):
            raise not_a_session(manager_or_index, "collect_entries_for_branch_summary")
        index = found
    entries, common = collect_wire(index, old_leaf_id, target_id)
    return [from_wire(e) for e in entries], common  # type: ignore[misc]


def prepare_branch_entries(
    entries: Sequence[Entry | Mapping[str, Any]], token_budget: float = 0
) -> BranchPreparation:
    """Pi's ``prepareBranchEntries``: walk newest to oldest adding messages until
    ``token_budget`` (0 or less: no limit) is spent; file operations come from every entry::

        prepared = prepare_branch_entries(entries, 128000 - 16384)
    """
    messages, ops, total = prepare_branch_wire(wire_list(entries), token_budget)
    return BranchPreparation(tuple(messages_out(messages)), ops, total)
