"""Building what the model sees: pure functions of an index and a leaf (SPEC §5–6).

They work on wire dicts, like the reference works on plain objects, and never modify an entry:
a message that needs a change (normalised content, a context edit) is copied first. Results for
a leaf are memoised on the index, whose entries never change, so an unchanged leaf is free.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping, Sequence

from ._index import TreeIndex
from ._js import MISSING, bulk, js_date_ms, js_entries, js_join_item, js_truthy

# typing for type checkers only (they take TYPE_CHECKING for true): importing it at run time
# took 8 % of `pisession tree`'s start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ._index import WireEntry

    WireMessage = dict[str, Any]

__all__ = [
    "WireProjection",
    "context_positions",
    "project_leaf",
    "entry_to_messages",
    "project_entry",
    "current_system_message",
    "wire_settings",
]

_EDITABLE_ROLES = frozenset({"user", "assistant", "toolResult", "custom"})
_BLOCK_ROLES = frozenset({"assistant", "toolResult"})


class WireProjection:
    """A leaf's projection in wire form: (position, messages) pairs plus settings."""

    __slots__ = ("entries", "messages", "thinking_level", "model")

    def __init__(
        self,
        entries: Sequence[tuple[int, Sequence[WireMessage]]],
        thinking_level: Any,
        model: dict[str, Any] | None,
    ) -> None:
        self.entries = entries
        self.messages: list[WireMessage] = [m for _, ms in entries for m in ms]
        self.thinking_level = thinking_level
        self.model = model


def context_positions(index: TreeIndex, leaf: int | None) -> list[int]:
    """Pi's ``buildContextEntries``: the path, cut at the latest compaction's kept region."""
    if leaf is None:
        return []
    compaction = index.latest_compaction_on_path(leaf)
    if compaction is None:
        return index.path_positions(leaf)
    path = index.path_positions(leaf)
    cut = path.index(compaction)
    first_kept = index.entry_at(compaction).get("firstKeptEntryId", MISSING)
    result = [compaction]
    start = None if first_kept is MISSING else _first_with_id(index, path, cut, first_kept)
    if start is not None:
        for pos in path[start:cut]:
            if not (index.type_at(pos) == "message" and _is_system_message(index.entry_at(pos))):
                result.append(pos)
    result.extend(path[cut + 1 :])
    return result


def _first_with_id(index: TreeIndex, path: list[int], cut: int, entry_id: Any) -> int | None:
    """Where in ``path[:cut]`` the first entry whose id equals ``entry_id`` is, or None."""
    if index.is_regular:
        # Ids are unique: the one entry holding it, if it lies on the path before the cut
        # (the path of a 20,000-entry session is not walked id by id).
        pos = index.position(entry_id)
        if pos is None:
            return None
        try:
            return path.index(pos, 0, cut)
        except ValueError:
            return None
    ids = index.ids()
    for i in range(cut):
        if ids[path[i]] == entry_id:
            return i
    return None


def _is_system_message(entry: WireEntry) -> bool:
    message = entry.get("message")
    return entry.get("type") == "message" and isinstance(message, dict) and message.get("role") == "system"


def wire_settings(index: TreeIndex, leaf: int | None) -> tuple[Any, dict[str, Any] | None]:
    """Thinking level and model in force at ``leaf`` (``"off"`` and None when nothing set them)."""
    if leaf is None:
        return "off", None
    thinking_pos, model_pos = index.settings_positions(leaf)
    thinking: Any = "off"
    if thinking_pos >= 0:
        thinking = index.entry_at(thinking_pos).get("thinkingLevel", MISSING)
    model: dict[str, Any] | None = None
    if model_pos >= 0:
        entry = index.entry_at(model_pos)
        if entry.get("type") == "model_change":
            provider, model_id = entry.get("provider", MISSING), entry.get("modelId", MISSING)
        else:
            message = entry["message"]
            provider, model_id = message.get("provider", MISSING), message.get("model", MISSING)
        model = {}
        if provider is not MISSING:
            model["provider"] = provider
        if model_id is not MISSING:
            model["modelId"] = model_id
    return thinking, model


def entry_to_messages(entry: Mapping[str, Any]) -> list[WireMessage]:
    """Pi's ``sessionEntryToContextMessages`` on a wire entry."""
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        if not isinstance(message, dict):
            return []
        role = message.get("role")
        if message.get("content") is None:
            # Hand-edited or old files can hold null content; Pi patches a copy, never the entry.
            if role == "system":
                return [{**message, "content": ""}]
            if role in ("user", "assistant", "toolResult"):
                return [{**message, "content": []}]
        return [message]
    if kind == "custom_message":
        content = entry.get("content")
        return [
            _without_missing(
                {
                    "role": "custom",
                    "customType": entry.get("customType", MISSING),
                    "content": [] if content is None else content,
                    "display": entry.get("display", MISSING),
                    "details": entry.get("details", MISSING),
                    "timestamp": js_date_ms(entry.get("timestamp", MISSING)),
                }
            )
        ]
    if kind == "branch_summary" and js_truthy(entry.get("summary")):
        return [
            _without_missing(
                {
                    "role": "branchSummary",
                    "summary": entry.get("summary"),
                    "fromId": entry.get("fromId", MISSING),
                    "timestamp": js_date_ms(entry.get("timestamp", MISSING)),
                }
            )
        ]
    if kind == "compaction":
        summary = _without_missing(
            {
                "role": "compactionSummary",
                "summary": entry.get("summary", MISSING),
                "tokensBefore": entry.get("tokensBefore", MISSING),
                "timestamp": js_date_ms(entry.get("timestamp", MISSING)),
            }
        )
        system = entry.get("systemMessage")
        return [system, summary] if isinstance(system, dict) and js_truthy(system) else [summary]
    return []


def _without_missing(message: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in message.items() if v is not MISSING}


def project_entry(entry: Mapping[str, Any], edit: Mapping[str, Any] | None = None) -> list[WireMessage]:
    """Pi's ``projectContextEntry``: an entry's messages with its latest context edit applied."""
    messages = entry_to_messages(entry)
    if edit is None:
        return messages
    replacement = edit.get("replacement", MISSING)
    if replacement is None:
        return []
    content = replacement.get("content", MISSING) if isinstance(replacement, dict) else MISSING
    projected = []
    for message in messages:
        role = message.get("role") if isinstance(message, dict) else None
        if type(role) is not str or role not in _EDITABLE_ROLES:  # a file's role may be any JSON
            projected.append(message)
            continue
        new_content = (
            [{"type": "text", "text": content}]
            if role in _BLOCK_ROLES and isinstance(content, str)
            else content
        )
        copy = {**message, "content": new_content}
        if new_content is MISSING:
            del copy["content"]
        projected.append(copy)
    return projected


def project_leaf(index: TreeIndex, leaf: int | None) -> WireProjection:
    """Pi's ``buildSessionProjection`` for a resolved leaf position, memoised per index."""
    cache = index.cache()
    key = ("projection", leaf) if index.is_regular else ("projection", leaf, len(index))
    cached = cache.get(key)
    if cached is not None:
        return cached  # type: ignore[no-any-return]
    with bulk():
        projection = _project(index, leaf)
    cache[key] = projection
    return projection


def _project(index: TreeIndex, leaf: int | None) -> WireProjection:
    positions = context_positions(index, leaf)
    entry_at = index.entry_at
    edits: dict[Any, WireEntry] = {}
    for pos in positions:
        if index.type_at(pos) == "context_edit":
            entry = entry_at(pos)
            target = entry.get("targetId", MISSING)
            with contextlib.suppress(TypeError):  # an unhashable targetId names nothing
                edits[target] = entry
    pairs: list[tuple[int, Sequence[WireMessage]]] = []
    for i, pos in enumerate(positions):
        entry = entry_at(pos)
        if i > 0 and entry.get("type") == "compaction":
            # An older compaction inside the kept range: only the newest one, at index 0,
            # contributes its checkpoint and summary.
            pairs.append((pos, ()))
            continue
        edit = None
        if edits:
            with contextlib.suppress(TypeError):  # an unhashable id is nobody's edit target
                edit = edits.get(entry.get("id", MISSING))
        pairs.append((pos, project_entry(entry, edit) if edit is not None else entry_to_messages(entry)))
    thinking, model = wire_settings(index, leaf)
    return WireProjection(pairs, thinking, model)


def current_system_message(messages: Iterable[Any], *, honour_replace: bool = True) -> WireMessage | None:
    """Replay every system message into one (Pi's ``getCurrentSystemMessage``), wire form.

    With ``honour_replace`` (the default, following the design seed), a system message with
    ``replace: true`` first discards all earlier content, sections and tools; the reference
    1.6.0 ignores the flag (``honour_replace=False``).
    """
    content: list[str] = []
    sections: dict[Any, Any] = {}
    tools: dict[Any, Any] = {}
    timestamp: Any = MISSING
    for message in messages:
        if not isinstance(message, dict) or message.get("role") != "system":
            continue
        if honour_replace and message.get("replace") is True:
            content.clear()
            sections.clear()
            tools.clear()
            timestamp = MISSING
        if timestamp is MISSING or timestamp is None:
            timestamp = message.get("timestamp", MISSING)
        text = _content_text(message.get("content"))
        if text:
            content.append(text)
        # Object.entries: an array or a string of sections replays by index, as in Pi.
        for name, value in js_entries(message.get("sections")):
            if value is None:
                sections.pop(name, None)
            else:
                sections[name] = value
        for tool in _as_list(message.get("toolsRemoved")):
            tools.pop(_tool_name(tool), None)
        for tool in _as_list(message.get("toolsAdded")):
            tools[_tool_name(tool)] = tool
    if timestamp is MISSING and not tools:
        return None
    result: WireMessage = {"role": "system", "content": "\n\n".join(content)}
    if sections:
        result["sections"] = sections
    if tools:
        result["toolsAdded"] = list(tools.values())
    result["timestamp"] = 0 if timestamp is MISSING or timestamp is None else timestamp
    return result


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            js_join_item(block.get("text", MISSING))
            for block in content
            if isinstance(block, dict) and block.get("type") == "text"
        )
    return ""


def _as_list(value: Any) -> list[Any]:
    """What Pi's ``for (const tool of value ?? [])`` visits: an array's items, a string's
    characters (each a nameless tool); Pi throws on other values, here they hold nothing."""
    if isinstance(value, str):
        return list(value)
    return value if isinstance(value, list) else []


def _tool_name(tool: Any) -> Any:
    if isinstance(tool, dict):
        name = tool.get("name", MISSING)
        try:
            hash(name)
        except TypeError:
            return ("<unhashable>", id(name))
        return name
    return MISSING
