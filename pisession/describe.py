"""One-line descriptions of entries and messages: what ``pisession tree``, ``ls`` and the exports show.

Each function takes an entry or message, typed (``MessageEntry``, ``UserMessage``, ...) or as its
JSON dict, and returns plain text; nothing here styles, truncates or escapes for a terminal (the
command line does that). Roles and entry types Pi does not know are described by their JSON::

    from pisession import SessionManager
    from pisession.describe import describe_entry, entry_kind

    manager = SessionManager.open("session.jsonl")
    for entry in manager.get_branch():
        print(entry.id, entry_kind(entry), describe_entry(entry)[:80])
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence

from ._js import hashable, js_date_ms
from ._localtime import local_time_text

# typing for type checkers only (they take TYPE_CHECKING for true): importing it at run time
# took 8 % of `pisession tree`'s start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal

    from ._model import Entry, Message, Usage
    from ._reading import SessionReader

__all__ = [
    "EntryLike",
    "MessageLike",
    "describe_entry",
    "describe_message",
    "entry_kind",
    "content_text",
    "tool_names",
    "usage_text",
    "one_line",
    "format_local_time",
    "local_time_text",
    "Note",
    "NoteKind",
    "SessionFacts",
]

# Friendlier names than the wire types; JSON output always carries the wire type itself.
_KIND_NAMES = {
    "thinking_level_change": "thinking level",
    "model_change": "model",
    "session_info": "name",
    "branch_summary": "branch summary",
    "custom_message": "custom message",
    "context_edit": "context edit",
}


if TYPE_CHECKING:
    EntryLike = Entry | Mapping[str, Any]
    """A typed entry or its JSON dict."""
    MessageLike = Message | Mapping[str, Any]
    """A typed message or its JSON dict."""
else:

    def __getattr__(name: str) -> Any:
        # The aliases are made on first use: EntryLike and MessageLike name the model classes,
        # so that describing JSON entries (`pisession tree`) does not create the classes, and
        # all three need typing. Hidden from type checkers, which would otherwise take every
        # attribute of this module for Any.
        if name == "NoteKind":
            from typing import Literal

            value = Literal["label", "edit", "keep", "orphan", "leaf"]  # NoteKind's, below
        elif name in ("EntryLike", "MessageLike"):
            from typing import Any

            from . import _model

            value = (_model.Entry if name == "EntryLike" else _model.Message) | Mapping[str, Any]
        else:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        globals()[name] = value
        return value


def _as_wire(value: Any) -> Any:
    if isinstance(value, Mapping) or value is None or isinstance(value, (str, int, float, list)):
        return value
    from ._codec import to_wire  # a model object: the codec is imported with the model

    return to_wire(value)



def _blocks(content: Any) -> list[Mapping[str, Any]]:
    if isinstance(content, list):
        return [b for b in content if isinstance(b, Mapping)]
    return []


def one_line(text: str, limit: int) -> str:
    """``text`` with runs of whitespace as one space, cut to ``limit`` characters with ``…``.

    >>> one_line("a  long\\ntext", 8)
    'a long …'
    """
    flat = " ".join(text.split())
    if limit <= 1:
        return flat[:limit]
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _compact_json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    except RecursionError:  # nested deeper than the json module goes: our encoder is iterative
        from ._json import dumps

        return dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def _num(value: Any) -> float:
    """A JSON number as a float (0 for anything else, as a sum should treat it)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return 0.0
    return float(value) if math.isfinite(value) else 0.0


def _int_text(value: float) -> str:
    return f"{round(value):,}"


def _cost_text(value: float) -> str:
    return f"${value:,.4f}"


def format_local_time(timestamp: Any, *, with_date: bool = True) -> str:
    """An entry's ISO timestamp in local time (``2025-12-02 10:00:04``); unparsable ones as written.

    ``format_local_time(entry.timestamp, with_date=False)`` gives ``10:00:04``.
    """
    ms = js_date_ms(timestamp) if isinstance(timestamp, str) else None
    if ms is None:
        return str(timestamp) if timestamp is not None else "?"
    return local_time_text(ms / 1000, "%Y-%m-%d %H:%M:%S" if with_date else "%H:%M:%S")


def content_text(content: Any) -> str:
    """Text of user, custom or tool-result content: a string, or its text blocks (images as ``[image]``).

    ``content_text(message.content)`` for a ``UserMessage``; typed blocks work as well as JSON.
    """
    if isinstance(content, str):
        return content
    if isinstance(content, (list, tuple)):
        content = [_as_wire(block) for block in content]
    parts = []
    for block in _blocks(content):
        kind = block.get("type")
        if kind == "text":
            parts.append(str(block.get("text", "")))
        elif kind == "image":
            parts.append(f"[image {block.get('mimeType', '')}]".replace(" ]", "]"))
    return " ".join(parts)


def _args_text(arguments: Any, limit: int = 60) -> str:
    if isinstance(arguments, Mapping):
        if len(arguments) == 1:
            (value,) = arguments.values()
            return one_line(value if isinstance(value, str) else _compact_json(value), limit)
        parts = []
        for key, value in arguments.items():
            shown = value if isinstance(value, str) else _compact_json(value)
            parts.append(f"{key}={one_line(shown, 24)}")
        return one_line(", ".join(parts), limit)
    return one_line(_compact_json(arguments), limit)


def _tool_calls(content: Any) -> list[str]:
    return [
        f"→ {block.get('name', '?')}({_args_text(block.get('arguments'))})"
        for block in _blocks(content)
        if block.get("type") == "toolCall"
    ]


def tool_names(tools: Any) -> list[str]:
    """Names of a system message's ``toolsAdded`` / ``toolsRemoved`` (``?`` for a nameless tool)."""
    names = []
    for tool in tools if isinstance(tools, (list, tuple)) else []:
        tool = _as_wire(tool)
        name = tool.get("name") if isinstance(tool, Mapping) else None
        names.append(str(name) if name is not None else "?")
    return names


def describe_message(message: MessageLike) -> str:
    """One message as text: ``describe_message(entry.message)``.

    Assistant turns show their text and tool calls (``→ bash(pytest -q)``), tool results their
    tool and output, system messages their prompt and section/tool changes. The message's own
    newlines are kept (the Markdown export and ``pisession context`` print them);
    ``one_line(describe_message(message), width)`` gives one line of a terminal's width.
    """
    wire = _as_wire(message)
    if not isinstance(wire, Mapping):
        return _compact_json(wire)
    return _describe_message(wire)


def _describe_message(message: Mapping[str, Any]) -> str:
    role = message.get("role")
    content = message.get("content")
    if role == "assistant":
        texts = [str(b.get("text", "")) for b in _blocks(content) if b.get("type") == "text"]
        parts = [t for t in texts if t.strip()] + _tool_calls(content)
        if not parts:
            thinking = [str(b.get("thinking", "")) for b in _blocks(content) if b.get("type") == "thinking"]
            if thinking:
                parts.append("(thinking) " + " ".join(thinking))
        if message.get("stopReason") in ("error", "aborted"):
            parts.append(
                f"[{message.get('stopReason')}: {message.get('errorMessage', '')}]".replace(": ]", "]")
            )
        return " ".join(parts)
    if role == "toolResult":
        mark = "✗ " if message.get("isError") is True else ""
        return f"{mark}{message.get('toolName', '?')}: {content_text(content)}"
    if role == "system":
        facts = []
        sections = message.get("sections")
        if isinstance(sections, Mapping) and sections:
            facts.append(f"{len(sections)} section{'s' if len(sections) != 1 else ''}")
        added = tool_names(message.get("toolsAdded"))
        removed = tool_names(message.get("toolsRemoved"))
        if added:
            facts.append("+tools " + ", ".join(added))
        if removed:
            facts.append("-tools " + ", ".join(removed))
        if message.get("replace") is True:
            facts.append("replace")
        text = content_text(content)
        return (text + (f" [{'; '.join(facts)}]" if facts else "")).strip()
    if role == "bashExecution":
        code = message.get("exitCode")
        outcome = (
            "cancelled" if message.get("cancelled") is True else f"exit {code}" if code is not None else ""
        )
        return f"$ {message.get('command', '')} → {outcome} {message.get('output', '')}".strip()
    if role == "custom":
        return f"[{message.get('customType', '?')}] {content_text(content)}"
    if role in ("branchSummary", "compactionSummary"):
        return str(message.get("summary", ""))
    if role == "user":
        return content_text(content)
    rest = {k: v for k, v in message.items() if k != "role"}
    return _compact_json(rest)


def entry_kind(entry: EntryLike) -> str:
    """What the tree calls an entry: a message's role (``user``, ``toolResult``), else a short
    name for its type (``model``, ``branch summary``, ``compaction``)."""
    wire = _as_wire(entry)
    kind = wire.get("type")
    if kind == "message":
        message = wire.get("message")
        role = message.get("role") if isinstance(message, Mapping) else None
        return str(role) if role is not None else "message"
    return _KIND_NAMES.get(str(kind), str(kind))


def usage_text(usage: Usage | Mapping[str, Any] | None) -> str:
    """``"1,234 tokens, $0.0123"`` for a ``Usage`` (or its JSON); ``""`` for anything else."""
    wire = _as_wire(usage)
    if not isinstance(wire, Mapping):
        return ""
    cost = wire.get("cost")
    total = _num(cost.get("total")) if isinstance(cost, Mapping) else 0.0
    return f"{_int_text(_num(wire.get('totalTokens')))} tokens, {_cost_text(total)}"


def describe_entry(entry: EntryLike) -> str:
    """One entry as a line of text (the tree's text column): ``describe_entry(manager.get_entry(id))``."""
    return _describe_entry(_as_wire(entry))


def _describe_entry(entry: Mapping[str, Any]) -> str:
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        return _describe_message(message) if isinstance(message, Mapping) else _compact_json(message)
    if kind == "model_change":
        return f"{entry.get('provider')}/{entry.get('modelId')}"
    if kind == "thinking_level_change":
        return str(entry.get("thinkingLevel"))
    if kind == "usage":
        note = f" - {entry['note']}" if entry.get("note") else ""
        model = f"{entry.get('provider')}/{entry.get('model')}"
        return f"{entry.get('kind')} · {model} · {usage_text(entry.get('usage'))}{note}"
    if kind == "compaction":
        first = entry.get("firstKeptEntryId")
        keeps = "keeps nothing" if first == entry.get("id") else f"keeps from {first}"
        tokens = _int_text(_num(entry.get("tokensBefore")))
        return f"── context restarts here ({keeps}; {tokens} tokens before): {entry.get('summary', '')}"
    if kind == "context_edit":
        replacement = entry.get("replacement")
        if replacement is None:
            return f"omit {entry.get('targetId')} from the context"
        content = replacement.get("content") if isinstance(replacement, Mapping) else replacement
        return f"replace {entry.get('targetId')} with: {content_text(content)}"
    if kind == "branch_summary":
        return f"↩ left {entry.get('fromId')}: {entry.get('summary', '')}"
    if kind == "custom":
        data = f" {_compact_json(entry['data'])}" if "data" in entry else ""
        return f"{entry.get('customType')}{data}"
    if kind == "custom_message":
        hidden = "" if entry.get("display") is not False else " (not displayed)"
        return f"[{entry.get('customType')}]{hidden} {content_text(entry.get('content'))}"
    if kind == "label":
        label = entry.get("label")
        return (
            f"{entry.get('targetId')} ← {label!r}" if label else f"clear the label of {entry.get('targetId')}"
        )
    if kind == "session_info":
        return f"{entry.get('name')!r}"
    rest = {k: v for k, v in entry.items() if k not in ("type", "id", "parentId", "timestamp")}
    return _compact_json(rest)


if TYPE_CHECKING:
    NoteKind = Literal["label", "edit", "keep", "orphan", "leaf"]  # made by __getattr__ at run time


class Note:
    """A remark shown beside an entry: its label, a context edit of it, a compaction boundary,
    a missing parent, or the leaf mark: ``Note("label", "[start]")``, immutable.

    A plain class, as :class:`pisession.views.TreeRow`: a dataclass needs dataclasses (and
    inspect) imported, a NamedTuple compiles code when it is made, and the first compile of a
    process costs more than a millisecond of ``pisession tree``.
    """

    __slots__ = ("_kind", "_text")
    __match_args__ = ("kind", "text")

    def __init__(self, kind: NoteKind, text: str) -> None:
        self._kind = kind
        self._text = text

    @property
    def kind(self) -> NoteKind:
        return self._kind

    @property
    def text(self) -> str:
        return self._text

    def __repr__(self) -> str:
        return f"Note(kind={self._kind!r}, text={self._text!r})"

    def __eq__(self, other: object) -> bool:
        if type(other) is not Note:
            return NotImplemented
        return (self._kind, self._text) == (other._kind, other._text)

    def __hash__(self) -> int:
        return hash((self._kind, self._text))


class SessionFacts:
    """What the tree and the exports show beside each entry of one snapshot of a session.

    ``SessionFacts(manager).notes(entry_json, manager.get_label(entry_id))`` lists the entry's
    notes; ``active_ids`` is the set of ids on the path from the root to the leaf.
    """

    def __init__(self, manager: SessionReader) -> None:
        index = manager.snapshot()
        self.entries: Sequence[dict[str, Any]] = index.wire_entries()
        self.leaf_id: str | None = manager.get_leaf_id()
        leaf = index.resolve_leaf(self.leaf_id) if self.leaf_id is not None else None
        # Ids of any JSON type, as Pi compares them; an object or array id (unhashable) never matches.
        self.active_ids: frozenset[Any] = frozenset(
            i for i in (index.entry_at(p).get("id") for p in index.path_positions(leaf)) if hashable(i)
        )
        self.ids: frozenset[str] = frozenset(e["id"] for e in self.entries if isinstance(e.get("id"), str))
        self.edits: dict[str, dict[str, Any]] = {}
        self.kept_from: dict[str, str] = {}
        for entry in self.entries:
            kind = entry.get("type")
            if kind == "context_edit" and isinstance(entry.get("targetId"), str):
                self.edits[entry["targetId"]] = entry
            elif (
                kind == "compaction"
                and isinstance(entry.get("firstKeptEntryId"), str)
                and entry["firstKeptEntryId"] != entry.get("id")
            ):
                self.kept_from[entry["firstKeptEntryId"]] = str(entry.get("id"))

    def is_active(self, entry: Mapping[str, Any]) -> bool:
        """Whether the entry lies on the path from the root to the leaf."""
        entry_id = entry.get("id")
        return hashable(entry_id) and entry_id in self.active_ids

    def notes(self, entry: Mapping[str, Any], label: str | None) -> list[Note]:
        """The notes of one entry (its JSON), in display order."""
        entry_id = entry.get("id")
        notes: list[Note] = []
        if label:
            notes.append(Note("label", f"[{label}]"))
        edit = self.edits.get(entry_id) if isinstance(entry_id, str) else None
        if edit is not None:
            verb = "omitted" if edit.get("replacement") is None else "replaced"
            notes.append(Note("edit", f"✎ {verb} by {edit.get('id')}"))
        if isinstance(entry_id, str) and entry_id in self.kept_from:
            notes.append(Note("keep", f"◆ compaction {self.kept_from[entry_id]} keeps from here"))
        parent = entry.get("parentId")
        if parent is not None and parent != entry_id and not (isinstance(parent, str) and parent in self.ids):
            notes.append(Note("orphan", f"(orphan: parent {parent} not found)"))
        if entry_id is not None and entry_id == self.leaf_id:
            notes.append(Note("leaf", "← leaf"))
        return notes
