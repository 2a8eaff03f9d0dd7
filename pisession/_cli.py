"""The ``pisession`` command: a thin shell over the library, in the style of sqlite-utils.

Each command is one or two library calls plus formatting; ``pisession COMMAND --help`` explains
it and ``docs/cli.md`` shows each beside its Python equivalent. Read-only commands load the file
without the manager's write path (no newline repair, no migration rewrite, no lock file), so they
never change what they read; editing commands first try the edit on an in-memory copy, so an edit
Pi would reject leaves the file byte for byte as it was.
"""

from __future__ import annotations

import argparse
import contextlib
import html
import json
import math
import os
import re
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Any, ClassVar, NoReturn, TextIO

from . import (
    CURRENT_SESSION_VERSION,
    UNSET,
    PisessionError,
    SessionInfo,
    SessionManager,
    TreeNode,
    __version__,
    get_current_system_message,
    migrate_session_entries,
    to_wire,
)
from ._js import js_date_ms
from ._json import dumps as wire_dumps
from ._load import parse_line, read_entries
from ._paths import HeaderScanLimitError, default_session_dir_path, read_session_header

__all__ = ["main"]

ENV_SESSION_DIR = "PI_CODING_AGENT_SESSION_DIR"
Wire = dict[str, Any]


class CliError(Exception):
    """A user mistake: reported as one ``pisession: error: ...`` line, exit ``code``."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


# =========================================================================== output helpers


class _Style:
    """ANSI styling, on only for a terminal (and never with ``NO_COLOR`` or ``TERM=dumb``)."""

    _CODES: ClassVar[dict[str, str]] = {
        "bold": "1",
        "dim": "2",
        "red": "31",
        "green": "32",
        "yellow": "33",
        "blue": "34",
        "magenta": "35",
        "cyan": "36",
    }

    def __init__(self, stream: TextIO) -> None:
        isatty = getattr(stream, "isatty", None)
        self.enabled = bool(
            isatty is not None
            and isatty()
            and "NO_COLOR" not in os.environ
            and os.environ.get("TERM") != "dumb"
        )

    def __call__(self, text: str, *styles: str) -> str:
        if not self.enabled or not styles or not text:
            return text
        codes = ";".join(self._CODES[s] for s in styles)
        return f"\033[{codes}m{text}\033[0m"


def _emit(line: str = "") -> None:
    sys.stdout.write(line + "\n")


def _json_default(value: Any) -> Any:
    return None if value is UNSET else to_wire(value)


def _emit_json(value: Any) -> None:
    _emit(json.dumps(value, indent=2, ensure_ascii=False, default=_json_default))


def _emit_wire(value: Any) -> None:
    """One line of Pi's own JSON (``JSON.stringify``): what the session file holds."""
    _emit(wire_dumps(value))


def _note(message: str) -> None:
    sys.stderr.write(f"pisession: {message}\n")


def _width() -> int:
    return max(60, shutil.get_terminal_size((120, 24)).columns)


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    if limit <= 1:
        return flat[:limit]
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _compact_json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
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


def _local_time(iso: Any, with_date: bool = True) -> str:
    ms = js_date_ms(iso) if isinstance(iso, str) else None
    if ms is None:
        return str(iso) if iso is not None else "?"
    moment = datetime.fromtimestamp(ms / 1000).astimezone()
    return f"{moment:%Y-%m-%d %H:%M:%S}" if with_date else f"{moment:%H:%M:%S}"


def _home_short(path: str) -> str:
    home = os.path.expanduser("~")
    return "~" + path[len(home) :] if home not in ("", "/") and path.startswith(home + os.sep) else path


# =========================================================================== describing entries

# Friendlier names than the wire types; --json output always carries the wire type itself.
_KIND_NAMES = {
    "thinking_level_change": "thinking level",
    "model_change": "model",
    "session_info": "name",
    "branch_summary": "branch summary",
    "custom_message": "custom message",
    "context_edit": "context edit",
}
_KIND_STYLES: dict[str, tuple[str, ...]] = {
    "user": ("bold",),
    "assistant": ("blue",),
    "toolResult": ("dim",),
    "system": ("cyan",),
    "compaction": ("yellow", "bold"),
    "branch summary": ("magenta", "bold"),
    "context edit": ("red",),
    "label": ("cyan",),
    "usage": ("dim",),
}
_KIND_WIDTH = 14


def _blocks(content: Any) -> list[Mapping[str, Any]]:
    if isinstance(content, list):
        return [b for b in content if isinstance(b, Mapping)]
    return []


def _content_text(content: Any) -> str:
    """Text of user/custom/tool content: a string, or its text blocks (images as ``[image]``)."""
    if isinstance(content, str):
        return content
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
            return _one_line(value if isinstance(value, str) else _compact_json(value), limit)
        parts = []
        for key, value in arguments.items():
            shown = value if isinstance(value, str) else _compact_json(value)
            parts.append(f"{key}={_one_line(shown, 24)}")
        return _one_line(", ".join(parts), limit)
    return _one_line(_compact_json(arguments), limit)


def _tool_calls(content: Any) -> list[str]:
    return [
        f"→ {block.get('name', '?')}({_args_text(block.get('arguments'))})"
        for block in _blocks(content)
        if block.get("type") == "toolCall"
    ]


def _tools_named(tools: Any) -> list[str]:
    names = []
    for tool in tools if isinstance(tools, list) else []:
        name = tool.get("name") if isinstance(tool, Mapping) else None
        names.append(str(name) if name is not None else "?")
    return names


def _message_text(message: Mapping[str, Any]) -> str:
    """One message as a line of text (roles Pi does not know show their JSON)."""
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
        return f"{mark}{message.get('toolName', '?')}: {_content_text(content)}"
    if role == "system":
        facts = []
        sections = message.get("sections")
        if isinstance(sections, Mapping) and sections:
            facts.append(f"{len(sections)} section{'s' if len(sections) != 1 else ''}")
        added = _tools_named(message.get("toolsAdded"))
        removed = _tools_named(message.get("toolsRemoved"))
        if added:
            facts.append("+tools " + ", ".join(added))
        if removed:
            facts.append("-tools " + ", ".join(removed))
        if message.get("replace") is True:
            facts.append("replace")
        text = _content_text(content)
        return (text + (f" [{'; '.join(facts)}]" if facts else "")).strip()
    if role == "bashExecution":
        code = message.get("exitCode")
        outcome = (
            "cancelled" if message.get("cancelled") is True else f"exit {code}" if code is not None else ""
        )
        return f"$ {message.get('command', '')} → {outcome} {message.get('output', '')}".strip()
    if role == "custom":
        return f"[{message.get('customType', '?')}] {_content_text(content)}"
    if role in ("branchSummary", "compactionSummary"):
        return str(message.get("summary", ""))
    if role == "user":
        return _content_text(content)
    rest = {k: v for k, v in message.items() if k != "role"}
    return _compact_json(rest)


def _entry_kind(entry: Mapping[str, Any]) -> str:
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        role = message.get("role") if isinstance(message, Mapping) else None
        return str(role) if role is not None else "message"
    return _KIND_NAMES.get(str(kind), str(kind))


def _usage_text(usage: Any) -> str:
    if not isinstance(usage, Mapping):
        return ""
    cost = usage.get("cost")
    total = _num(cost.get("total")) if isinstance(cost, Mapping) else 0.0
    return f"{_int_text(_num(usage.get('totalTokens')))} tokens, {_cost_text(total)}"


def _entry_text(entry: Mapping[str, Any]) -> str:
    kind = entry.get("type")
    if kind == "message":
        message = entry.get("message")
        return _message_text(message) if isinstance(message, Mapping) else _compact_json(message)
    if kind == "model_change":
        return f"{entry.get('provider')}/{entry.get('modelId')}"
    if kind == "thinking_level_change":
        return str(entry.get("thinkingLevel"))
    if kind == "usage":
        note = f" - {entry['note']}" if entry.get("note") else ""
        model = f"{entry.get('provider')}/{entry.get('model')}"
        return f"{entry.get('kind')} · {model} · {_usage_text(entry.get('usage'))}{note}"
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
        return f"replace {entry.get('targetId')} with: {_content_text(content)}"
    if kind == "branch_summary":
        return f"↩ left {entry.get('fromId')}: {entry.get('summary', '')}"
    if kind == "custom":
        data = f" {_compact_json(entry['data'])}" if "data" in entry else ""
        return f"{entry.get('customType')}{data}"
    if kind == "custom_message":
        hidden = "" if entry.get("display") is not False else " (not displayed)"
        return f"[{entry.get('customType')}]{hidden} {_content_text(entry.get('content'))}"
    if kind == "label":
        label = entry.get("label")
        return (
            f"{entry.get('targetId')} ← {label!r}" if label else f"clear the label of {entry.get('targetId')}"
        )
    if kind == "session_info":
        return f"{entry.get('name')!r}"
    rest = {k: v for k, v in entry.items() if k not in ("type", "id", "parentId", "timestamp")}
    return _compact_json(rest)


class _Facts:
    """What the tree and export show beside an entry: labels, edits, compaction boundaries."""

    def __init__(self, manager: SessionManager) -> None:
        self.manager = manager
        index = manager.snapshot()
        self.entries = index.wire_entries()
        self.leaf_id = manager.get_leaf_id()
        leaf = index.resolve_leaf(self.leaf_id) if self.leaf_id is not None else None
        self.active_ids = {index.entry_at(p).get("id") for p in index.path_positions(leaf)}
        self.ids = {e.get("id") for e in self.entries if isinstance(e.get("id"), str)}
        self.edits: dict[str, Wire] = {}
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

    def notes(self, entry: Mapping[str, Any], label: Any) -> list[tuple[str, tuple[str, ...]]]:
        entry_id = entry.get("id")
        notes: list[tuple[str, tuple[str, ...]]] = []
        if label:
            notes.append((f"[{label}]", ("cyan", "bold")))
        edit = self.edits.get(entry_id) if isinstance(entry_id, str) else None
        if edit is not None:
            verb = "omitted" if edit.get("replacement") is None else "replaced"
            notes.append((f"✎ {verb} by {edit.get('id')}", ("red",)))
        if isinstance(entry_id, str) and entry_id in self.kept_from:
            notes.append((f"◆ compaction {self.kept_from[entry_id]} keeps from here", ("yellow",)))
        parent = entry.get("parentId")
        if parent is not None and parent != entry_id and parent not in self.ids:
            notes.append((f"(orphan: parent {parent} not found)", ("red",)))
        if entry_id is not None and entry_id == self.leaf_id:
            notes.append(("← leaf", ("green", "bold")))
        return notes


def _entry_line(
    entry: Mapping[str, Any],
    style: _Style,
    *,
    prefix: str = "",
    notes: Sequence[tuple[str, tuple[str, ...]]] = (),
    dim: bool = False,
    width: int | None = None,
) -> str:
    width = width or _width()
    kind = _entry_kind(entry)
    entry_id = str(entry.get("id", "?"))
    note_text = "".join(" " + text for text, _ in notes)
    head = f"{prefix}{entry_id}  {kind:<{_KIND_WIDTH}} "
    room = max(20, width - len(head) - len(note_text))
    text = _one_line(_entry_text(entry), room)
    kind_styles = ("dim",) if dim else _KIND_STYLES.get(kind, ())
    line = (
        prefix
        + style(entry_id, "dim" if dim else "yellow")
        + "  "
        + style(f"{kind:<{_KIND_WIDTH}}", *kind_styles)
        + " "
        + (style(text, "dim") if dim else text)
    )
    for note, styles in notes:
        line += " " + style(note, *styles)
    return line


# =========================================================================== loading sessions


def _session_dir(args: argparse.Namespace) -> str | None:
    """Explicit ``--session-dir`` > ``$PI_CODING_AGENT_SESSION_DIR`` > Pi's default (None)."""
    explicit = getattr(args, "session_dir", None)
    if explicit:
        return os.path.expanduser(str(explicit))
    env = os.environ.get(ENV_SESSION_DIR)
    return os.path.expanduser(env) if env else None


def _looks_like_path(arg: str) -> bool:
    return "/" in arg or "\\" in arg or arg.endswith(".jsonl") or os.path.isfile(arg)


def _list_local(cwd: str, session_dir: str | None) -> list[SessionInfo]:
    # Pi's own default folder is created by list(); a read-only command must not create it.
    directory = session_dir or default_session_dir_path(cwd)
    if not os.path.isdir(directory):
        return []
    return SessionManager.list(cwd, directory)


def _pick(arg: str, infos: Sequence[SessionInfo], where: str) -> str | None:
    exact = [info for info in infos if info.id == arg]
    if exact:
        return exact[0].path
    matches = [info for info in infos if info.id.startswith(arg)]
    if len(matches) > 1:
        shown = ", ".join(info.id for info in matches[:5]) + (" ..." if len(matches) > 5 else "")
        raise CliError(
            f"ambiguous session id prefix {arg!r}: {len(matches)} sessions {where} match ({shown})"
        )
    return matches[0].path if matches else None


def _resolve(args: argparse.Namespace, arg: str | None = None) -> str:
    """The file a SESSION argument names: a path, else a session id or unique id prefix, looked up
    in the cwd's session folder first and then in every project's (as Pi's ``--session`` does)."""
    value = arg if arg is not None else str(args.session)
    if not value:
        raise CliError("empty SESSION argument")
    if _looks_like_path(value):
        path = os.path.abspath(os.path.expanduser(value))
        if not os.path.exists(path):
            raise CliError(f"no such file: {value}")
        if os.path.isdir(path):
            raise CliError(f"{value} is a directory, not a session file")
        return path
    session_dir = _session_dir(args)
    cwd = os.getcwd()
    found = _pick(value, _list_local(cwd, session_dir), "of this folder")
    if found is None:
        everywhere = SessionManager.list_all(session_dir) if _sessions_root_exists(session_dir) else []
        found = _pick(value, everywhere, "in all projects")
    if found is None:
        where = session_dir or default_session_dir_path(cwd)
        raise CliError(
            f"no session file or session id matching {value!r} (looked in {where} and all projects)"
        )
    return found


def _sessions_root_exists(session_dir: str | None) -> bool:
    if session_dir:
        return os.path.isdir(session_dir)
    return os.path.isdir(os.path.dirname(default_session_dir_path(os.getcwd())))


def _read(path: str) -> list[Wire]:
    """The file's entries (header first) without writing anything, or a clear error."""
    try:
        entries, _, _ = read_entries(path)
    except IsADirectoryError:
        raise CliError(f"{path} is a directory, not a session file") from None
    if not entries:
        empty = os.path.getsize(path) == 0
        reason = "the file is empty" if empty else "its first JSON line is not a session header"
        raise CliError(f"{path} is not a Pi session ({reason})")
    return entries


def _load(path: str, *, quiet: bool = False) -> SessionManager:
    """A read-only view of a session: an in-memory manager, migrated in memory if the file is old."""
    entries = _read(path)
    header = entries[0]
    version = header.get("version")
    if not quiet and (version is None or (isinstance(version, (int, float)) and version < 2)):
        _note(
            f"note: {path} is a version-1 session, migrated in memory only: its entry ids are "
            "assigned now and change on every run (`pisession migrate` rewrites the file)"
        )
    cwd = header.get("cwd")
    return SessionManager.in_memory(cwd if isinstance(cwd, str) and cwd else os.getcwd(), entries=entries)


def _wire_branch(manager: SessionManager) -> list[Wire]:
    index = manager.snapshot()
    leaf_id = manager.get_leaf_id()
    leaf = index.resolve_leaf(leaf_id) if leaf_id is not None else None
    return [index.entry_at(p) for p in index.path_positions(leaf)]


# =========================================================================== tree


def _visible_children(node: TreeNode, hidden: Callable[[Wire], bool]) -> list[TreeNode]:
    out: list[TreeNode] = []
    stack = list(reversed(node.children))
    while stack:
        child = stack.pop()
        if hidden(child.wire_entry):
            stack.extend(reversed(child.children))
        else:
            out.append(child)
    return out


def _visible_roots(roots: Sequence[TreeNode], hidden: Callable[[Wire], bool]) -> list[TreeNode]:
    out: list[TreeNode] = []
    stack = list(reversed(roots))
    while stack:
        node = stack.pop()
        if hidden(node.wire_entry):
            stack.extend(reversed(node.children))
        else:
            out.append(node)
    return out


def _tree_rows(
    manager: SessionManager, show_all: bool
) -> Iterator[tuple[TreeNode, str, int, list[TreeNode]]]:
    """(node, graph prefix, depth, visible children) in display order, without recursion.

    A run of single children stays in one column; only a branch point indents, like
    ``git log --graph``, so a 100,000-entry conversation is 100,000 aligned lines.
    """

    def hidden(entry: Wire) -> bool:
        return not show_all and entry.get("type") == "usage"

    roots = _visible_roots(manager.get_tree(), hidden)
    stack: list[tuple[TreeNode, str, str, int]] = []
    if len(roots) == 1:
        stack.append((roots[0], "", "", 0))
    else:
        for i in reversed(range(len(roots))):
            last = i == len(roots) - 1
            stack.append((roots[i], "└─ " if last else "├─ ", "   " if last else "│  ", 1))
    while stack:
        node, first, cont, depth = stack.pop()
        kids = _visible_children(node, hidden)
        yield node, first, depth, kids
        if len(kids) == 1:
            stack.append((kids[0], cont, cont, depth))
        else:
            for i in reversed(range(len(kids))):
                last = i == len(kids) - 1
                stack.append(
                    (kids[i], cont + ("└─ " if last else "├─ "), cont + ("   " if last else "│  "), depth + 1)
                )


def _print_tree(manager: SessionManager, show_all: bool, style: _Style) -> None:
    facts = _Facts(manager)
    width = _width()
    shown = 0
    branch_points = 0
    for node, prefix, _depth, kids in _tree_rows(manager, show_all):
        entry = node.wire_entry
        on_path = entry.get("id") in facts.active_ids
        mark = style("●", "green") if on_path else style("○", "dim")
        _emit(
            _entry_line(
                entry,
                style,
                prefix=prefix + mark + " ",
                notes=facts.notes(entry, node.label),
                dim=not on_path,
                width=width + (len(mark) - 1),
            )
        )
        shown += 1
        branch_points += len(kids) > 1
    total = len(facts.entries)
    usage = sum(1 for e in facts.entries if e.get("type") == "usage")
    parts = [
        f"{total:,} entries",
        f"{branch_points} branch point{'s' if branch_points != 1 else ''}",
        f"leaf {facts.leaf_id}",
    ]
    if usage and not show_all:
        parts.append(f"{usage} usage entr{'ies' if usage != 1 else 'y'} hidden (--all shows them)")
    unreachable = total - shown - (0 if show_all else usage)
    if unreachable > 0:
        parts.append(f"{unreachable} not reachable from a root (parentId cycle? see `pisession validate`)")
    _emit(style("● active branch  ○ other branches  ·  " + " · ".join(parts), "dim"))


def _tree_json(manager: SessionManager) -> dict[str, Any]:
    facts = _Facts(manager)
    nodes = []
    for node, _prefix, depth, kids in _tree_rows(manager, True):
        entry = node.wire_entry
        item: dict[str, Any] = {
            "id": entry.get("id"),
            "parentId": entry.get("parentId"),
            "type": entry.get("type"),
            "depth": depth,
            "active": entry.get("id") in facts.active_ids,
            "children": [k.wire_entry.get("id") for k in kids],
            "text": _entry_text(entry),
        }
        if node.label is not None:
            item["label"] = node.label
            item["labelTimestamp"] = node.label_timestamp
        item["entry"] = entry
        nodes.append(item)
    header = manager.get_header()
    return {
        "sessionId": header.id if header else None,
        "leafId": facts.leaf_id,
        "name": manager.get_session_name(),
        "entryCount": len(facts.entries),
        "cycles": [list(c) for c in manager.snapshot().cycles],
        "nodes": nodes,
    }


def cmd_tree(args: argparse.Namespace) -> int:
    manager = _load(_resolve(args))
    if args.json:
        _emit_json(_tree_json(manager))
        return 0
    _print_tree(manager, args.all, _Style(sys.stdout))
    return 0


# =========================================================================== context


def _message_size(message: Mapping[str, Any]) -> tuple[int, int]:
    """(characters, images) the way Pi estimates tokens: text, thinking, tool names and arguments."""
    chars = 0
    images = 0
    role = message.get("role")
    content = message.get("content")
    if isinstance(content, str):
        chars += len(content)
    for block in _blocks(content):
        kind = block.get("type")
        if kind == "text":
            chars += len(str(block.get("text", "")))
        elif kind == "thinking":
            chars += len(str(block.get("thinking", "")))
        elif kind == "toolCall":
            chars += len(str(block.get("name", ""))) + len(_compact_json(block.get("arguments", {})))
        elif kind == "image":
            images += 1
    if role in ("branchSummary", "compactionSummary"):
        chars += len(str(message.get("summary", "")))
    elif role == "bashExecution":
        chars += len(str(message.get("command", ""))) + len(str(message.get("output", "")))
    return chars, images


def _system_size(system: Mapping[str, Any] | None) -> int:
    if system is None:
        return 0
    chars = len(_content_text(system.get("content")))
    sections = system.get("sections")
    if isinstance(sections, Mapping):
        chars += sum(len(v) for v in sections.values() if isinstance(v, str))
    tools = system.get("toolsAdded")
    if isinstance(tools, list) and tools:
        chars += len(_compact_json(tools))
    return chars


def _context_data(manager: SessionManager) -> dict[str, Any]:
    context = manager.build_session_context()
    # Typed str, but UNSET when a thinking_level_change entry has no level (reported as a library bug).
    thinking: Any = context.thinking_level
    if thinking is UNSET:
        thinking = None
    messages = [to_wire(m) for m in context.messages]
    replayed = get_current_system_message(messages)
    system = to_wire(replayed) if replayed is not None else None
    chars = 0
    images = 0
    for message in messages:
        if message.get("role") == "system":
            continue  # counted once, replayed, below
        c, i = _message_size(message)
        chars += c
        images += i
    chars += _system_size(system)
    tokens = math.ceil(chars / 4) + images * 1200
    return {
        "leafId": manager.get_leaf_id(),
        "model": to_wire(context.model) if context.model is not None else None,
        "thinkingLevel": thinking,
        "system": system,
        "messages": messages,
        "totals": {"messages": len(messages), "characters": chars, "images": images, "approxTokens": tokens},
    }


def _print_context(manager: SessionManager, data: Mapping[str, Any], style: _Style, full: bool) -> None:
    width = _width()
    model = data["model"]
    model_text = f"{model.get('provider')}/{model.get('modelId')}" if isinstance(model, Mapping) else "(none)"
    system = data["system"]
    messages: list[Wire] = data["messages"]
    system_count = sum(1 for m in messages if m.get("role") == "system")
    _emit(
        style("System prompt", "bold")
        + style(
            f"  (replayed from {system_count} system message{'s' if system_count != 1 else ''})"
            if system is not None
            else "  (none)",
            "dim",
        )
    )
    if system is not None:
        text = _content_text(system.get("content"))
        lines = text.splitlines() or [""]
        limit = len(lines) if full else 6
        for line in lines[:limit]:
            _emit("  │ " + (line if full else _one_line(line, width - 4)))
        if len(lines) > limit:
            _emit(style(f"  │ … {len(lines) - limit} more lines (--full shows them)", "dim"))
        sections = system.get("sections")
        if isinstance(sections, Mapping):
            for name, value in sections.items():
                body = value if isinstance(value, str) else ""
                if full:
                    _emit(f"  § {name}")
                    for line in body.splitlines():
                        _emit("    " + line)
                else:
                    _emit(f"  § {name}: " + style(_one_line(body, width - len(name) - 6), "dim"))
        tools = _tools_named(system.get("toolsAdded"))
        _emit(style(f"Tools ({len(tools)})", "bold") + (": " + ", ".join(tools) if tools else ""))
    _emit()
    _emit(
        style(f"Messages at leaf {data['leafId']}", "bold")
        + style(f"  (model {model_text}, thinking {data['thinkingLevel']})", "dim")
    )
    number_width = len(str(len(messages)))
    for i, message in enumerate(messages, start=1):
        role = str(message.get("role", "?"))
        head = f"  {i:>{number_width}}  {role:<17} "
        if full and role != "system":
            _emit(head.rstrip())
            for line in _message_text(message).splitlines() or [""]:
                _emit("      " + line)
            continue
        text = "(system prompt, replayed above)" if role == "system" else _message_text(message)
        _emit(
            f"  {i:>{number_width}}  "
            + style(f"{role:<17}", *_KIND_STYLES.get(role, ()))
            + " "
            + _one_line(text, max(20, width - len(head)))
        )
    totals = data["totals"]
    _emit(
        style(
            f"Total: {totals['messages']} messages · {totals['characters']:,} characters"
            + (f" · {totals['images']} images" if totals["images"] else "")
            + f" · ~{totals['approxTokens']:,} tokens (characters / 4)",
            "bold",
        )
    )


def cmd_context(args: argparse.Namespace) -> int:
    manager = _load(_resolve(args))
    if args.leaf is not None:
        manager.branch(args.leaf)
    data = _context_data(manager)
    if args.json:
        _emit_json(data)
    else:
        _print_context(manager, data, _Style(sys.stdout), args.full)
    return 0


# =========================================================================== ls


def _short_ids(ids: Sequence[str], minimum: int = 8) -> dict[str, str]:
    """The shortest prefix (at least ``minimum``) that tells each id from the others, as git does."""
    ordered = sorted(set(ids))
    out: dict[str, str] = {}
    for i, value in enumerate(ordered):
        common = 0
        for other in (ordered[i - 1] if i else None, ordered[i + 1] if i + 1 < len(ordered) else None):
            if other is None:
                continue
            n = 0
            while n < min(len(value), len(other)) and value[n] == other[n]:
                n += 1
            common = max(common, n)
        out[value] = value[: max(minimum, common + 1)]
    return out


def _progress(stream: TextIO) -> Callable[[int, int], None] | None:
    if not (hasattr(stream, "isatty") and stream.isatty()):
        return None
    started = time.monotonic()

    def report(loaded: int, total: int) -> None:
        if total < 50 or time.monotonic() - started < 0.2:
            return
        if loaded == total:
            stream.write("\r\033[K")
        elif loaded % 10 == 0:
            stream.write(f"\rpisession: scanning sessions {loaded}/{total}")
        stream.flush()

    return report


def cmd_ls(args: argparse.Namespace) -> int:
    session_dir = _session_dir(args)
    cwd = os.path.abspath(os.path.expanduser(args.cwd)) if args.cwd else os.getcwd()
    progress = _progress(sys.stderr)
    catalog = None if args.no_catalog else _catalog()
    if args.all:
        if not _sessions_root_exists(session_dir):
            infos = []
        elif catalog is not None:
            infos = catalog.list_all(session_dir, progress, text=args.json)
        else:
            infos = SessionManager.list_all(session_dir, progress)
    else:
        directory = session_dir or default_session_dir_path(cwd)
        if not os.path.isdir(directory):
            infos = []
        elif catalog is not None:
            infos = catalog.list(cwd, directory, progress, text=args.json)
        else:
            infos = SessionManager.list(cwd, directory, progress)
    if catalog is not None:
        _catalog_done(catalog)
    if args.json:
        _emit_json([info.to_wire() for info in infos])
        return 0
    style = _Style(sys.stdout)
    if not infos:
        where = "any project" if args.all else (session_dir or default_session_dir_path(cwd))
        _emit(f"No sessions found in {where}.")
        return 0
    short = _short_ids([info.id for info in infos])
    id_width = max(len(s) for s in short.values())
    width = _width()
    count_width = max(4, *(len(str(info.message_count)) for info in infos))
    head = f"{'MODIFIED':<16}  {'MSGS':>{count_width}}  {'ID':<{id_width}}  "
    cwd_width = 0
    if args.all:
        cwd_width = min(30, max(len(_home_short(info.cwd)) for info in infos))
        head += f"{'CWD':<{cwd_width}}  "
    _emit(style(head + "NAME / FIRST MESSAGE", "bold"))
    for info in infos:
        line = (
            f"{info.modified.astimezone():%Y-%m-%d %H:%M}  {info.message_count:>{count_width}}  "
            + style(f"{short[info.id]:<{id_width}}", "yellow")
            + "  "
        )
        plain = len(head)
        if args.all:
            line += f"{_one_line(_home_short(info.cwd), cwd_width):<{cwd_width}}  "
        room = max(20, width - plain)
        title = (
            style(_one_line(info.name, room), "bold") if info.name else _one_line(info.first_message, room)
        )
        _emit(line + title)
    _emit(style(f"{len(infos)} session{'s' if len(infos) != 1 else ''}, newest first", "dim"))
    return 0


# =========================================================================== search


def _catalog(in_memory: bool = False) -> Any:
    """The default session catalog (``$PISESSION_CATALOG``); listing falls back to the files itself.

    When it is refused (``$PISESSION_CATALOG`` inside Pi's data): None, or with ``in_memory`` a
    throwaway catalog (search needs one).
    """
    from .catalog import Catalog

    try:
        return Catalog()
    except PisessionError as error:
        _note(f"session catalog not used ({error})")
        return Catalog(":memory:") if in_memory else None


def _catalog_done(catalog: Any) -> None:
    if catalog.last_error:
        _note(f"session catalog not used ({catalog.last_error}); read the session files instead")
    catalog.close()


def cmd_search(args: argparse.Namespace) -> int:
    from .catalog import format_hit

    cwd = os.path.abspath(os.path.expanduser(args.cwd)) if args.cwd else os.getcwd()
    catalog = _catalog(in_memory=True)
    try:
        hits = catalog.search(
            args.query,
            cwd=cwd,
            all=args.all,
            role=args.role,
            limit=args.limit,
            session_dir=_session_dir(args),
            on_progress=_progress(sys.stderr),
        )
    finally:
        _catalog_done(catalog)
    if args.json:
        _emit_json([hit.to_wire() for hit in hits])
        return 0
    if not hits:
        _emit(f"No messages match {args.query!r}.")
        return 0
    style = _Style(sys.stdout)
    for hit in hits:
        _emit(format_hit(hit, lambda word: style(word, "bold")))
    first = hits[0]
    where = f" --leaf {first.entry_id}" if first.entry_id else ""
    _emit(
        style(
            f"{len(hits)} match{'es' if len(hits) != 1 else ''}, newest first · pisession context "
            f"{first.session_path}{where}",
            "dim",
        )
    )
    return 0


# =========================================================================== tail


def _wait_for_whole_lines(path: str, interval: float, patience: float = 5.0) -> None:
    """Opening repairs a missing final newline; wait for a writer to finish its line instead."""
    deadline = time.monotonic() + patience
    while True:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            if size == 0:
                raise CliError(f"{path} is not a Pi session (the file is empty)")
            handle.seek(size - 1)
            if handle.read(1) == b"\n":
                return
        if time.monotonic() >= deadline:
            raise CliError(
                f"{path} ends with an unfinished line; tail never modifies a file "
                "(`pisession migrate` repairs it as Pi would)"
            )
        time.sleep(min(interval, 0.25))


def _check_current_version(path: str) -> None:
    try:
        header = read_session_header(path)
    except HeaderScanLimitError:
        header = None
    if not header:
        _read(path)  # raises the precise not-a-session error
        return
    version = header.get("version")
    if (
        not isinstance(version, (int, float))
        or isinstance(version, bool)
        or version < CURRENT_SESSION_VERSION
    ):
        raise CliError(
            f"{path} is an old (version {version}) session; opening it to follow would rewrite it "
            "(run `pisession migrate` first)"
        )


def cmd_tail(args: argparse.Namespace) -> int:
    if args.interval <= 0:
        raise CliError("--interval must be positive", 2)
    path = _resolve(args)
    _check_current_version(path)
    _wait_for_whole_lines(path, args.interval)
    manager = SessionManager.open(path)
    style = _Style(sys.stdout)
    width = _width()

    def show(entry: Wire) -> None:
        if args.json:
            _emit_wire(entry)
        else:
            stamp = style(_local_time(entry.get("timestamp"), with_date=False), "dim")
            _emit(stamp + "  " + _entry_line(entry, style, width=width - 10))
        sys.stdout.flush()

    try:
        if args.lines > 0:
            for entry in list(manager.snapshot().wire_entries())[-args.lines :]:
                show(entry)
        for typed in manager.follow(args.interval):
            show(to_wire(typed))
    except KeyboardInterrupt:
        return 0
    finally:
        manager.close()
    return 0  # pragma: no cover - follow() only ends by an interrupt


# =========================================================================== stats


_TOKEN_KEYS = ("input", "output", "cacheRead", "cacheWrite")


def _add_usage(row: dict[str, float], usage: Mapping[str, Any]) -> None:
    row["calls"] += 1
    for key in _TOKEN_KEYS:
        row[key] += _num(usage.get(key))
    row["tokens"] = sum(row[key] for key in _TOKEN_KEYS)
    cost = usage.get("cost")
    if isinstance(cost, Mapping):
        row["cost"] += _num(cost.get("total"))


def _new_row() -> dict[str, float]:
    return dict.fromkeys(("calls", *_TOKEN_KEYS, "tokens", "cost"), 0.0)


def _stats_data(manager: SessionManager) -> dict[str, Any]:
    """Pi's ``getSessionStats`` and ``getUsageCostBreakdown`` (core/usage-totals.js), over every
    entry of every branch: what was billed, compacted history included."""
    by_model: dict[str, dict[str, float]] = {}
    by_source: dict[str, dict[str, float]] = {}
    total = _new_row()
    counts = dict.fromkeys(("user", "assistant", "toolResults", "toolCalls", "total"), 0)
    entries = manager.snapshot().wire_entries()
    for entry in entries:
        kind = entry.get("type")
        message = entry.get("message") if kind == "message" else None
        usage: Any = None
        key = source = ""
        if isinstance(message, Mapping):
            counts["total"] += 1
            role = message.get("role")
            if role == "user":
                counts["user"] += 1
            elif role == "assistant":
                counts["assistant"] += 1
                counts["toolCalls"] += sum(
                    1 for b in _blocks(message.get("content")) if b.get("type") == "toolCall"
                )
                model = message.get("responseModel") or message.get("model")
                usage, key, source = (
                    message.get("usage"),
                    f"{message.get('provider')}/{model}",
                    "assistant messages",
                )
            elif role == "toolResult":
                counts["toolResults"] += 1
                usage, key, source = message.get("usage"), "Tools/summaries", "tool results"
        elif kind == "usage":
            usage, key = entry.get("usage"), f"{entry.get('provider')}/{entry.get('model')}"
            source = f"usage entries ({entry.get('kind')})"
        elif kind in ("compaction", "branch_summary"):
            usage, key = entry.get("usage"), "Tools/summaries"
            source = "compactions" if kind == "compaction" else "branch summaries"
        if not isinstance(usage, Mapping):
            continue
        _add_usage(by_model.setdefault(key, _new_row()), usage)
        _add_usage(by_source.setdefault(source, _new_row()), usage)
        _add_usage(total, usage)

    def shaped(row: Mapping[str, float]) -> dict[str, Any]:
        return {k: (round(v, 10) if k == "cost" else int(v)) for k, v in row.items()}

    header = manager.get_header()
    models = sorted(
        ((key, row) for key, row in by_model.items() if row["cost"] > 0 or row["tokens"] > 0),
        key=lambda item: -item[1]["cost"],
    )
    return {
        "sessionId": header.id if header else None,
        "entries": len(entries),
        "messages": counts,
        "byModel": [{"model": key, **shaped(row)} for key, row in models],
        "bySource": [{"source": key, **shaped(row)} for key, row in by_source.items()],
        "total": shaped(total),
    }


def _print_stats(data: Mapping[str, Any], style: _Style) -> None:
    columns = ("calls", "input", "output", "cacheRead", "cacheWrite", "tokens")
    titles = ("calls", "input", "output", "cache read", "cache write", "tokens", "cost")

    def table(title: str, rows: list[tuple[str, Mapping[str, Any]]]) -> None:
        name_width = max([len(title), *(len(name) for name, _ in rows)])
        cells = [[_int_text(row[c]) for c in columns] + [_cost_text(row["cost"])] for _, row in rows]
        widths = [max(len(t), *(len(c[i]) for c in cells)) for i, t in enumerate(titles)]
        head = "  ".join(f"{t:>{w}}" for t, w in zip(titles, widths, strict=True))
        _emit(style(f"{title:<{name_width}}  {head}", "bold"))
        for (name, _), cell in zip(rows, cells, strict=True):
            _emit(
                f"{name:<{name_width}}  " + "  ".join(f"{c:>{w}}" for c, w in zip(cell, widths, strict=True))
            )

    counts = data["messages"]
    _emit(
        f"Session {data['sessionId']}: {data['entries']:,} entries; {counts['user']:,} user and "
        f"{counts['assistant']:,} assistant messages, {counts['toolCalls']:,} tool calls (all branches)"
    )
    total = data["total"]
    if not total["calls"]:
        _emit("No usage recorded.")
        return
    _emit()
    table("model", [(r["model"], r) for r in data["byModel"]])
    _emit()
    table("source", [(r["source"], r) for r in data["bySource"]] + [("total", total)])
    _emit(style("tokens = input + output + cache read + cache write, as Pi counts them", "dim"))


def cmd_stats(args: argparse.Namespace) -> int:
    manager = _load(_resolve(args))
    data = _stats_data(manager)
    if args.json:
        _emit_json(data)
    else:
        _print_stats(data, _Style(sys.stdout))
    return 0


# =========================================================================== validate


def _reject_constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not JSON")


def _validate_file(path: str, session_dir_args: argparse.Namespace) -> dict[str, Any]:
    problems: list[dict[str, Any]] = []

    def add(severity: str, line: int | None, message: str) -> None:
        problems.append({"severity": severity, "line": line, "message": message})

    result: dict[str, Any] = {"path": path, "problems": problems}
    try:
        path = _resolve(session_dir_args, path)
        result["path"] = path
        with open(path, "rb") as handle:
            data = handle.read()
    except CliError as error:
        add("error", None, str(error))
        return result
    except OSError as error:
        add("error", None, f"cannot read: {error.strerror or error}")
        return result
    raw_lines = data.split(b"\n")
    if raw_lines and raw_lines[-1] == b"":
        raw_lines.pop()
    elif data:
        add(
            "warning",
            len(raw_lines),
            "the last line has no final newline (Pi appends one when it opens the file)",
        )
    parsed: list[tuple[int, Wire]] = []
    bad_utf8: list[int] = []
    for number, raw in enumerate(raw_lines, start=1):
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            text = raw.decode("utf-8", "replace")
            bad_utf8.append(number)
        if not raw:
            continue
        entry = parse_line(raw)  # the loader's own reading of a line: Pi's JSON.parse
        if entry is not None:
            parsed.append((number, entry))
            continue
        if not text.strip():
            continue
        snippet = _one_line(text, 60)
        try:
            json.loads(text, parse_constant=_reject_constant)
            add("error", number, f"a JSON value that is not an object (Pi skips it): {snippet}")
        except ValueError:
            unfinished = number == len(raw_lines) and not data.endswith(b"\n")
            what = "unfinished last line" if unfinished else "not valid JSON"
            if raw.startswith(b"\xef\xbb\xbf"):
                what += ", starting with a byte-order mark"
            add("error", number, f"{what} (Pi skips it): {snippet}")
    if bad_utf8:
        lines = ", ".join(str(n) for n in bad_utf8[:5]) + (", ..." if len(bad_utf8) > 5 else "")
        add(
            "warning",
            bad_utf8[0],
            f"invalid UTF-8 on {len(bad_utf8)} line(s) ({lines}); Pi reads it as U+FFFD",
        )
    if not parsed:
        add(
            "error",
            None,
            "not a Pi session: " + ("the file is empty" if not data.strip() else "no JSON object in it"),
        )
        return result
    first_line, header = parsed[0]
    if header.get("type") != "session" or not isinstance(header.get("id"), str):
        add("error", first_line, "not a Pi session: the first JSON object is not a session header")
        return result
    version = header.get("version")
    result["sessionId"] = header["id"]
    result["version"] = version
    entries = [entry for _, entry in parsed]
    if migrate_session_entries(entries):
        add(
            "warning",
            first_line,
            f"old session version {version!r}: Pi migrates and rewrites the file on open",
        )
    elif version != CURRENT_SESSION_VERSION:
        add("warning", first_line, f"session version {version!r} is not one Pi 1.6.0 writes")
    lines_of: dict[Any, int] = {}
    body: list[tuple[int, Wire]] = []
    for number, entry in parsed[1:]:
        if entry.get("type") == "session":
            add("warning", number, "a second session header (Pi reads it as an entry of an unknown type)")
        body.append((number, entry))
    for number, entry in body:
        entry_id = entry.get("id")
        if not isinstance(entry_id, str) or not entry_id:
            add("error", number, f"entry without a string id: {_one_line(_compact_json(entry), 60)}")
            continue
        if entry_id in lines_of:
            add("error", number, f"duplicate id {entry_id} (first at line {lines_of[entry_id]})")
        else:
            lines_of[entry_id] = number
    for number, entry in body:
        entry_id = entry.get("id")
        if not isinstance(entry_id, str) or not entry_id:
            continue
        parent = entry.get("parentId", ...)
        if parent is ...:
            add("error", number, f"entry {entry_id} has no parentId")
        elif parent is not None and parent != entry_id and parent not in lines_of:
            add("error", number, f"orphan: the parent {parent} of entry {entry_id} does not exist")
        kind = entry.get("type")
        if kind == "compaction":
            first = entry.get("firstKeptEntryId")
            if not isinstance(first, str):
                add("error", number, f"compaction {entry_id} has no firstKeptEntryId")
            elif first != entry_id and first not in lines_of:
                add(
                    "error",
                    number,
                    f"compaction {entry_id}: firstKeptEntryId {first} does not exist "
                    "(the context keeps nothing from before the compaction)",
                )
        elif kind in ("label", "context_edit"):
            target = entry.get("targetId")
            if target not in lines_of:
                add("error", number, f"{kind} {entry_id}: targetId {target} does not exist")
            if kind == "context_edit" and "replacement" not in entry:
                add("warning", number, f"context_edit {entry_id} has no replacement")
        elif kind == "branch_summary":
            source = entry.get("fromId")
            if source != "root" and source not in lines_of:
                add("warning", number, f"branch_summary {entry_id}: fromId {source} does not exist")
    manager = SessionManager.in_memory(os.getcwd(), entries=entries)
    for cycle in manager.snapshot().cycles:
        where = min((lines_of.get(i, 0) for i in cycle), default=None)
        loop = " → ".join(str(i) for i in [*cycle, cycle[0]])
        add("error", where or None, f"parentId cycle: {loop}")
    problems.sort(key=lambda p: (p["line"] is None, p["line"] or 0))
    result["entries"] = len(body)
    return result


def cmd_validate(args: argparse.Namespace) -> int:
    results = [_validate_file(path, args) for path in args.session]
    failed = any(p["severity"] == "error" for r in results for p in r["problems"])
    for r in results:
        r["ok"] = not any(p["severity"] == "error" for p in r["problems"])
    if args.json:
        _emit_json(results)
        return 1 if failed else 0
    style = _Style(sys.stdout)
    for r in results:
        errors = sum(1 for p in r["problems"] if p["severity"] == "error")
        warnings = len(r["problems"]) - errors
        if not r["problems"]:
            _emit(
                f"{r['path']}: "
                + style("OK", "green", "bold")
                + f" ({r.get('entries', 0):,} entries, version {r.get('version')})"
            )
            continue
        summary = ", ".join(
            part
            for part in (
                f"{errors} error{'s' if errors != 1 else ''}" if errors else "",
                f"{warnings} warning{'s' if warnings != 1 else ''}" if warnings else "",
            )
            if part
        )
        _emit(f"{r['path']}: " + style(summary, "red" if errors else "yellow", "bold"))
        for p in r["problems"]:
            where = f"line {p['line']}: " if p["line"] is not None else ""
            severity = style(p["severity"], "red" if p["severity"] == "error" else "yellow")
            _emit(f"  {where}{severity}: {p['message']}")
    return 1 if failed else 0


# =========================================================================== editing commands


def _edit(
    args: argparse.Namespace, operation: Callable[[SessionManager], Any]
) -> tuple[str, SessionManager, Any]:
    """Run ``operation`` on an in-memory copy first (a rejected edit then never touches the file,
    not even with the migration or newline repair that opening does), then on the file itself."""
    path = _resolve(args)
    operation(_load(path, quiet=True))
    manager = SessionManager.open(path, _session_dir(args))
    try:
        result = operation(manager)
    except BaseException:
        manager.close()
        raise
    return path, manager, result


def _report_entry(args: argparse.Namespace, manager: SessionManager, entry_id: str, message: str) -> int:
    try:
        if args.json:
            entry = manager.get_entry(entry_id)
            _emit_wire(to_wire(entry) if entry is not None else None)
        else:
            _emit(message)
    finally:
        manager.close()
    return 0


def cmd_name(args: argparse.Namespace) -> int:
    _, manager, entry_id = _edit(args, lambda m: m.append_session_info(args.text))
    name = manager.get_session_name()
    text = f"Named the session {name!r}" if name else "Cleared the session name"
    return _report_entry(args, manager, entry_id, f"{text} (entry {entry_id}).")


def cmd_label(args: argparse.Namespace) -> int:
    def operation(m: SessionManager) -> str:
        return (
            m.append_label_change(args.id, args.text)
            if args.text is not None
            else m.append_label_change(args.id)
        )

    _, manager, entry_id = _edit(args, operation)
    text = f"Labelled {args.id} {args.text!r}" if args.text else f"Cleared the label of {args.id}"
    return _report_entry(args, manager, entry_id, f"{text} (entry {entry_id}).")


def cmd_branch(args: argparse.Namespace) -> int:
    if args.summary is None:
        raise CliError(
            "branch needs --summary TEXT: Pi does not store the leaf in the file (it resumes at the last "
            "entry), so moving it alone would write nothing. To look at that point use "
            f"`pisession context SESSION --leaf {args.id}`; to make it a session of its own, "
            f"`pisession extract SESSION --leaf {args.id}`.",
            2,
        )
    _, manager, entry_id = _edit(args, lambda m: m.branch_with_summary(args.id, args.summary))
    return _report_entry(
        args,
        manager,
        entry_id,
        f"Branched from {args.id} with a summary of the path left behind (entry {entry_id}); "
        "Pi resumes the session there.",
    )


def cmd_edit(args: argparse.Namespace) -> int:
    replacement = None if args.omit else {"content": args.text}
    _, manager, entry_id = _edit(args, lambda m: m.append_context_edit(args.id, replacement))
    what = "omitted from" if args.omit else "replaced in"
    return _report_entry(
        args,
        manager,
        entry_id,
        f"{args.id} is now {what} the model context (context edit {entry_id}); "
        "the entry itself is unchanged.",
    )


def cmd_compact(args: argparse.Namespace) -> int:
    def operation(m: SessionManager) -> str:
        if args.keep_from not in {e.get("id") for e in _wire_branch(m)}:
            if m.get_entry(args.keep_from) is None:
                raise CliError(f"entry {args.keep_from} not found")
            raise CliError(
                f"entry {args.keep_from} is not on the active branch: a compaction keeping it "
                "would keep nothing"
            )
        tokens = args.tokens_before
        if tokens is None:
            tokens = _context_data(m)["totals"]["approxTokens"]
        return m.append_compaction(args.summary, args.keep_from, tokens)

    _, manager, entry_id = _edit(args, operation)
    entry = manager.get_entry(entry_id)
    tokens = getattr(entry, "tokens_before", "?")
    return _report_entry(
        args,
        manager,
        entry_id,
        f"Compacted (entry {entry_id}): the model context now starts with the summary, "
        f"then {args.keep_from} onwards ({tokens} tokens before).",
    )


def cmd_fork(args: argparse.Namespace) -> int:
    source = _resolve(args)
    _read(source)  # a clear error for a non-session, before fork_from reads it
    target = os.path.abspath(os.path.expanduser(args.cwd))
    manager = SessionManager.fork_from(source, target, _session_dir(args))
    try:
        path = manager.get_session_file()
        if args.json:
            _emit_json(
                {
                    "path": path,
                    "id": manager.get_session_id(),
                    "cwd": manager.get_cwd(),
                    "parentSession": source,
                }
            )
        else:
            _emit(f"Forked into {path}")
            _emit(f"  session {manager.get_session_id()} for {manager.get_cwd()} (parent: {source})")
    finally:
        manager.close()
    return 0


def _has_conversation(entries: Iterable[Mapping[str, Any]]) -> bool:
    for entry in entries:
        message = entry.get("message")
        if (
            entry.get("type") == "message"
            and isinstance(message, Mapping)
            and message.get("role") in ("user", "assistant")
        ):
            return True
    return False


def cmd_extract(args: argparse.Namespace) -> int:
    def operation(m: SessionManager) -> str | None:
        if m.get_entry(args.leaf) is None:
            raise CliError(f"entry {args.leaf} not found")
        index = m.snapshot()
        path = [index.entry_at(p) for p in index.path_positions(index.position(args.leaf))]
        if not _has_conversation(path):
            raise CliError(
                f"the path to {args.leaf} holds no user or assistant message; Pi would not write "
                "such a session, so nothing was extracted"
            )
        return m.create_branched_session(args.leaf)

    _, manager, new_path = _edit(args, operation)
    try:
        if args.json:
            _emit_json(
                {"path": new_path, "id": manager.get_session_id(), "entries": manager.get_entry_count()}
            )
        else:
            _emit(f"Extracted the path to {args.leaf} into {new_path}")
            _emit(f"  session {manager.get_session_id()}: {manager.get_entry_count()} entries")
    finally:
        manager.close()
    return 0


def cmd_migrate(args: argparse.Namespace) -> int:
    path = _resolve(args)
    entries = _read(path)
    version = entries[0].get("version")
    with open(path, "rb") as handle:
        before = handle.read()
    manager = SessionManager.open(path, _session_dir(args))
    manager.close()
    with open(path, "rb") as handle:
        after = handle.read()
    changed = before != after
    if changed and after != before + b"\n":
        what = f"migrated from version {version if version is not None else 1} to {CURRENT_SESSION_VERSION}"
    elif changed:
        what = "repaired the missing final newline"
    else:
        what = f"already version {version}: unchanged"
    if args.json:
        _emit_json(
            {"path": path, "changed": changed, "fromVersion": version, "toVersion": CURRENT_SESSION_VERSION}
        )
    else:
        _emit(f"{path}: {what}")
    return 0


# =========================================================================== export


class _Run:
    """A straight stretch of the tree: entries from a root or a branch point to the next one."""

    def __init__(self, entries: list[Wire], parent: Wire | None, index: int, count: int) -> None:
        self.entries = entries
        self.parent = parent
        self.index = index
        self.count = count


def _runs(manager: SessionManager) -> list[_Run]:
    runs: list[_Run] = []
    roots: Sequence[TreeNode] = manager.get_tree()
    stack: list[tuple[TreeNode, Wire | None, int, int]] = [
        (roots[i], None, i, len(roots)) for i in reversed(range(len(roots)))
    ]
    while stack:
        node, parent, position, count = stack.pop()
        entries: list[Wire] = []
        current = node
        while True:
            entries.append(current.wire_entry)
            if len(current.children) != 1:
                break
            current = current.children[0]
        kids = current.children
        for i in reversed(range(len(kids))):
            stack.append((kids[i], current.wire_entry, i, len(kids)))
        runs.append(_Run(entries, parent, position, count))
    return runs


def _export_title(manager: SessionManager) -> str:
    name = manager.get_session_name()
    if name:
        return name
    for entry in manager.snapshot().wire_entries():
        message = entry.get("message")
        if entry.get("type") == "message" and isinstance(message, Mapping) and message.get("role") == "user":
            text = _content_text(message.get("content")).strip()
            if text:
                return _one_line(text, 80)
    header = manager.get_header()
    return f"Pi session {header.id if header else ''}".strip()


def _fence(text: str, info: str = "") -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def _pretty_json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, indent=2)
    except (TypeError, ValueError):
        return repr(value)


# Entries shown as a block of their own in exports; the others (model and thinking-level changes,
# labels, names, custom state, usage, context edits, unknown types) as one line.
_FULL_ENTRIES = ("message", "compaction", "branch_summary", "custom_message")
_ROLE_TITLES = {
    "user": "User",
    "assistant": "Assistant",
    "toolResult": "Tool result",
    "system": "System prompt",
    "bashExecution": "Shell command",
    "custom": "Extension message",
    "branchSummary": "Branch summary",
    "compactionSummary": "Compaction summary",
}


def _title(entry: Mapping[str, Any]) -> str:
    kind = entry.get("type")
    if kind == "compaction":
        return "Compaction"
    if kind == "branch_summary":
        return "Branch summary"
    if kind == "custom_message":
        return f"Extension message ({entry.get('customType')})"
    message = entry.get("message")
    role = message.get("role") if isinstance(message, Mapping) else None
    title = _ROLE_TITLES.get(str(role), str(role))
    if role == "toolResult" and isinstance(message, Mapping):
        title += f" ({message.get('toolName')})"
    return title


def _code_span(text: str) -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or longest else ""
    return f"{ticks}{pad}{text}{pad}{ticks}" if text else ""


def _markdown_entry(entry: Wire, facts: _Facts, label: Any) -> list[str]:
    kind = entry.get("type")
    entry_id = entry.get("id")
    when = _local_time(entry.get("timestamp"))
    marks = "".join(f" · {text}" for text, _ in facts.notes(entry, label) if not text.startswith("←"))
    if entry_id == facts.leaf_id:
        marks += " · **leaf**"
    stamp = f"<sub>`{entry_id}` · {when}{marks}</sub>"
    if kind not in _FULL_ENTRIES:
        return [f"- *{_entry_kind(entry)}* {_code_span(_one_line(_entry_text(entry), 200))} {stamp}", ""]
    out = [f"### {_title(entry)}", "", stamp, ""]
    message = entry.get("message")
    if kind == "message" and isinstance(message, Mapping):
        role = message.get("role")
        content = message.get("content")
        if role == "assistant":
            for block in _blocks(content):
                btype = block.get("type")
                if btype == "text":
                    out += [str(block.get("text", "")), ""]
                elif btype == "thinking":
                    thought = str(block.get("thinking", ""))
                    out += ["> *Thinking*", ">"] + ["> " + line for line in thought.splitlines()] + [""]
                elif btype == "toolCall":
                    out += [
                        f"**Tool call** `{block.get('name')}`",
                        "",
                        _fence(_pretty_json(block.get("arguments")), "json"),
                        "",
                    ]
            usage = _usage_text(message.get("usage"))
            out += [
                f"<sub>{message.get('provider')}/{message.get('model')}"
                + (f" · {usage}" if usage else "")
                + "</sub>",
                "",
            ]
        elif role == "toolResult":
            if message.get("isError") is True:
                out += ["**The tool reported an error:**", ""]
            out += [_fence(_content_text(content)), ""]
        elif role == "system":
            out += [_fence(_content_text(content)), ""]
            sections = message.get("sections")
            if isinstance(sections, Mapping):
                for name, value in sections.items():
                    out += [f"**§ {name}**" + (" (deleted)" if value is None else ""), ""]
                    if isinstance(value, str):
                        out += [_fence(value), ""]
            added = _tools_named(message.get("toolsAdded"))
            removed = _tools_named(message.get("toolsRemoved"))
            if added:
                out += ["Tools added: " + ", ".join(f"`{t}`" for t in added), ""]
            if removed:
                out += ["Tools removed: " + ", ".join(f"`{t}`" for t in removed), ""]
        elif role == "bashExecution":
            out += [_fence(f"$ {message.get('command', '')}\n{message.get('output', '')}", "console"), ""]
        elif role in ("user", "custom"):
            text = _content_text(content)
            out += [text if text.strip() else "*(no text)*", ""]
        else:
            out += [_message_text(message), ""]
    elif kind == "compaction":
        out += [
            f"> **Context compacted** ({_int_text(_num(entry.get('tokensBefore')))} tokens before; "
            f"keeps from `{entry.get('firstKeptEntryId')}`)",
            ">",
        ]
        out += ["> " + line for line in str(entry.get("summary", "")).splitlines()] + [""]
    elif kind == "branch_summary":
        out += [f"> **Branch summary** (left `{entry.get('fromId')}`)", ">"]
        out += ["> " + line for line in str(entry.get("summary", "")).splitlines()] + [""]
    elif kind == "custom_message":
        out += [_content_text(entry.get("content")), ""]
    else:
        out += [_entry_text(entry), ""]
    return out


def _export_markdown(manager: SessionManager, all_branches: bool) -> str:
    facts = _Facts(manager)
    header = manager.get_header()
    out = [f"# {_export_title(manager)}", ""]
    out += [
        f"- Session: `{header.id if header else ''}`",
        f"- Working directory: `{manager.get_cwd()}`",
        f"- Created: {_local_time(header.timestamp if header else None)}",
        f"- Leaf: `{facts.leaf_id}`",
        f"- Shown: {'every branch' if all_branches else 'the active branch'}",
        "",
    ]
    context = manager.build_session_context()
    system = get_current_system_message(context.messages)
    if system is not None:
        wire = to_wire(system)
        tools = _tools_named(wire.get("toolsAdded"))
        out += ["## System prompt at the leaf", "", _fence(_content_text(wire.get("content"))), ""]
        if tools:
            out += ["Tools: " + ", ".join(f"`{t}`" for t in tools), ""]
    if all_branches:
        for number, run in enumerate(_runs(manager), start=1):
            active = any(e.get("id") in facts.active_ids for e in run.entries[-1:])
            if run.parent is None:
                title = f"## Branch {number}: from the root" + (
                    f" ({run.index + 1} of {run.count})" if run.count > 1 else ""
                )
            else:
                title = (
                    f"## Branch {number}: after `{run.parent.get('id')}` ({run.index + 1} of {run.count}) "
                    f"— {_one_line(_entry_text(run.parent), 50)}"
                )
            out += [title + (" *(active)*" if active else ""), ""]
            for entry in run.entries:
                out += _markdown_entry(entry, facts, manager.get_label(str(entry.get("id"))))
    else:
        out += ["## Conversation", ""]
        for entry in _wire_branch(manager):
            out += _markdown_entry(entry, facts, manager.get_label(str(entry.get("id"))))
    out += ["---", f"*Exported by pisession {__version__}.*", ""]
    return "\n".join(out)


_HTML_STYLE = """
:root { color-scheme: light dark; --fg: #1f2328; --muted: #656d76; --bg: #ffffff; --card: #f6f8fa;
  --line: #d0d7de; --user: #0969da; --assistant: #8250df; --tool: #57606a; --warn: #9a6700;
  --bad: #cf222e; --ok: #1a7f37; }
@media (prefers-color-scheme: dark) { :root { --fg: #e6edf3; --muted: #8d96a0; --bg: #0d1117;
  --card: #161b22; --line: #30363d; --user: #4493f8; --assistant: #a371f7; --tool: #8d96a0;
  --warn: #d29922; --bad: #f85149; --ok: #3fb950; } }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg);
  font: 15px/1.55 system-ui, -apple-system, "Segoe UI", sans-serif; }
main, header.page { max-width: 60rem; margin: 0 auto; padding: 1rem 1.25rem; }
header.page h1 { margin: .5rem 0; font-size: 1.6rem; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: .15rem 1rem; margin: 0;
  color: var(--muted); font-size: .9rem; }
dl.meta dd { margin: 0; overflow-wrap: anywhere; }
h2 { font-size: 1.15rem; border-bottom: 1px solid var(--line); padding-bottom: .3rem; margin-top: 2rem; }
article.entry { border: 1px solid var(--line); border-left: 4px solid var(--line); border-radius: 6px;
  background: var(--card); margin: .75rem 0; padding: .5rem .9rem; }
article.role-user { border-left-color: var(--user); }
article.role-assistant { border-left-color: var(--assistant); }
article.role-toolResult { border-left-color: var(--tool); }
article.compaction, article.branch_summary { border-left-color: var(--warn); }
article.edited { outline: 1px dashed var(--bad); }
article.leaf { box-shadow: 0 0 0 2px var(--ok); }
article.meta-entry { background: transparent; border-style: dashed; padding: .25rem .9rem; font-size: .9rem;
  color: var(--muted); }
.entry-head { display: flex; flex-wrap: wrap; gap: .5rem; align-items: baseline; font-size: .85rem;
  color: var(--muted); }
.entry-head .kind { font-weight: 600; color: var(--fg); text-transform: capitalize; }
.entry-head code { font-size: .8rem; }
.badge { border-radius: 1rem; padding: 0 .5rem; font-size: .75rem; border: 1px solid currentColor; }
.badge.label { color: var(--user); } .badge.edit { color: var(--bad); } .badge.keep { color: var(--warn); }
.badge.leaf { color: var(--ok); } .badge.orphan { color: var(--bad); }
.text { white-space: pre-wrap; overflow-wrap: anywhere; margin: .4rem 0; }
pre { background: var(--bg); border: 1px solid var(--line); border-radius: 4px; padding: .5rem .7rem;
  overflow-x: auto; white-space: pre-wrap; overflow-wrap: anywhere; font-size: .85rem; margin: .4rem 0; }
details { margin: .4rem 0; } summary { cursor: pointer; color: var(--muted); }
.toolcall .name { font-family: ui-monospace, monospace; font-weight: 600; }
.error { color: var(--bad); }
.usage { color: var(--muted); font-size: .8rem; }
img.attached { max-width: 100%; border: 1px solid var(--line); border-radius: 4px; }
footer { color: var(--muted); font-size: .8rem; text-align: center; padding: 2rem 0; }
"""

_SAFE_MIME = re.compile(r"image/[a-z0-9.+-]{1,40}")
_BASE64 = re.compile(r"[A-Za-z0-9+/=\s]*")


def _h(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _html_content(content: Any) -> str:
    if isinstance(content, str):
        return f'<div class="text">{_h(content)}</div>'
    parts = []
    for block in _blocks(content):
        kind = block.get("type")
        if kind == "text":
            parts.append(f'<div class="text">{_h(block.get("text", ""))}</div>')
        elif kind == "image":
            mime = block.get("mimeType")
            data = block.get("data")
            if (
                isinstance(mime, str)
                and _SAFE_MIME.fullmatch(mime)
                and isinstance(data, str)
                and _BASE64.fullmatch(data)
            ):
                parts.append(
                    f'<img class="attached" alt="attached image" src="data:{mime};base64,{_h(data)}">'
                )
            else:
                parts.append('<p class="usage">[image that cannot be shown]</p>')
        else:
            parts.append(f"<pre>{_h(_pretty_json(block))}</pre>")
    return "".join(parts)


def _html_entry(entry: Wire, facts: _Facts, label: Any) -> str:
    kind = str(entry.get("type"))
    entry_id = str(entry.get("id"))
    message = entry.get("message")
    role = message.get("role") if kind == "message" and isinstance(message, Mapping) else None
    classes = ["entry", re.sub(r"[^A-Za-z0-9_-]", "", kind)]
    if role is not None:
        classes.append("role-" + re.sub(r"[^A-Za-z0-9_-]", "", str(role)))
    if kind in (
        "model_change",
        "thinking_level_change",
        "label",
        "session_info",
        "custom",
        "usage",
        "context_edit",
    ):
        classes.append("meta-entry")
    if entry_id in facts.edits:
        classes.append("edited")
    if entry.get("id") == facts.leaf_id:
        classes.append("leaf")
    badges = []
    for text, _ in facts.notes(entry, label):
        badge = (
            "leaf"
            if text.startswith("←")
            else "label"
            if text.startswith("[")
            else "edit"
            if text.startswith("✎")
            else "keep"
            if text.startswith("◆")
            else "orphan"
        )
        badges.append(
            f'<span class="badge {badge}">{_h(text.strip("[]") if badge == "label" else text)}</span>'
        )
    head = (
        f'<div class="entry-head"><span class="kind">{_h(_entry_kind(entry))}</span>'
        f'<code>{_h(entry_id)}</code><time datetime="{_h(entry.get("timestamp", ""))}">'
        f"{_h(_local_time(entry.get('timestamp')))}</time>{''.join(badges)}</div>"
    )
    body = ""
    if role is not None and isinstance(message, Mapping):
        content = message.get("content")
        if role == "assistant":
            for block in _blocks(content):
                btype = block.get("type")
                if btype == "text":
                    body += f'<div class="text">{_h(block.get("text", ""))}</div>'
                elif btype == "thinking":
                    body += (
                        f'<details class="thinking"><summary>Thinking</summary>'
                        f'<div class="text">{_h(block.get("thinking", ""))}</div></details>'
                    )
                elif btype == "toolCall":
                    body += (
                        f'<div class="toolcall">→ <span class="name">{_h(block.get("name", "?"))}</span>'
                        f"<pre>{_h(_pretty_json(block.get('arguments')))}</pre></div>"
                    )
            if message.get("stopReason") in ("error", "aborted"):
                stop = _h(message.get("stopReason"))
                body += f'<p class="error">{stop}: {_h(message.get("errorMessage", ""))}</p>'
            usage = _usage_text(message.get("usage"))
            body += (
                f'<div class="usage">{_h(message.get("provider"))}/{_h(message.get("model"))}'
                + (f" · {_h(usage)}" if usage else "")
                + "</div>"
            )
        elif role == "toolResult":
            error = ' class="error"' if message.get("isError") is True else ""
            body += (
                f"<details open><summary{error}>{_h(message.get('toolName', '?'))} result"
                f"{' (error)' if error else ''}</summary>{_html_content(content)}</details>"
            )
        elif role == "system":
            body += (
                "<details><summary>System prompt"
                + (" (replaces everything before)" if message.get("replace") is True else "")
                + f"</summary>{_html_content(content)}"
            )
            sections = message.get("sections")
            if isinstance(sections, Mapping):
                for name, value in sections.items():
                    body += f"<p><strong>§ {_h(name)}</strong>{' (deleted)' if value is None else ''}</p>"
                    if isinstance(value, str):
                        body += f"<pre>{_h(value)}</pre>"
            body += "</details>"
            added = _tools_named(message.get("toolsAdded"))
            removed = _tools_named(message.get("toolsRemoved"))
            if added:
                body += f'<p class="usage">Tools added: {_h(", ".join(added))}</p>'
            if removed:
                body += f'<p class="usage">Tools removed: {_h(", ".join(removed))}</p>'
        elif role == "bashExecution":
            body += f"<pre>$ {_h(message.get('command', ''))}\n{_h(message.get('output', ''))}</pre>"
        elif role in ("user", "custom"):
            body += _html_content(content)
        else:
            body += f"<pre>{_h(_pretty_json(message))}</pre>"
    elif kind == "compaction":
        body += (
            f"<p><strong>Context compacted</strong> ({_h(_int_text(_num(entry.get('tokensBefore'))))} tokens "
            f'before; keeps from <a href="#entry-{_h(entry.get("firstKeptEntryId"))}">'
            f"<code>{_h(entry.get('firstKeptEntryId'))}</code></a>)</p>"
            f'<div class="text">{_h(entry.get("summary", ""))}</div>'
        )
    elif kind == "branch_summary":
        body += (
            f"<p><strong>Branch summary</strong> (left <code>{_h(entry.get('fromId'))}</code>)</p>"
            f'<div class="text">{_h(entry.get("summary", ""))}</div>'
        )
    elif kind == "custom_message":
        body += f"<p><strong>{_h(entry.get('customType'))}</strong></p>{_html_content(entry.get('content'))}"
    elif kind == "context_edit":
        target = entry.get("targetId")
        body += (
            f"<span>{'Omits' if entry.get('replacement') is None else 'Replaces the content of'} "
            f'<a href="#entry-{_h(target)}"><code>{_h(target)}</code></a> in the model context</span>'
        )
    else:
        body += f"<span>{_h(_entry_text(entry))}</span>"
    return f'<article class="{" ".join(classes)}" id="entry-{_h(entry_id)}">{head}{body}</article>\n'


def _export_html(manager: SessionManager, all_branches: bool) -> str:
    facts = _Facts(manager)
    header = manager.get_header()
    title = _export_title(manager)
    parts = [
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n',
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
        f"<title>{_h(title)}</title>\n<style>{_HTML_STYLE}</style>\n</head>\n<body>\n",
        f'<header class="page"><h1>{_h(title)}</h1><dl class="meta">',
        f"<dt>Session</dt><dd><code>{_h(header.id if header else '')}</code></dd>",
        f"<dt>Working directory</dt><dd><code>{_h(manager.get_cwd())}</code></dd>",
        f"<dt>Created</dt><dd>{_h(_local_time(header.timestamp if header else None))}</dd>",
        f"<dt>Entries</dt><dd>{manager.get_entry_count():,}</dd>",
        f"<dt>Shown</dt><dd>{'every branch' if all_branches else 'the active branch'}</dd>",
        "</dl></header>\n<main>\n",
    ]
    context = manager.build_session_context()
    system = get_current_system_message(context.messages)
    if system is not None:
        wire = to_wire(system)
        tools = _tools_named(wire.get("toolsAdded"))
        parts.append(
            '<section class="system"><h2>System prompt at the leaf</h2><details><summary>'
            f"{len(_content_text(wire.get('content'))):,} characters, {len(tools)} tools</summary>"
            f"{_html_content(wire.get('content'))}</details>"
        )
        if tools:
            parts.append(f'<p class="usage">Tools: {_h(", ".join(tools))}</p>')
        parts.append("</section>\n")
    if all_branches:
        for number, run in enumerate(_runs(manager), start=1):
            active = any(e.get("id") in facts.active_ids for e in run.entries[-1:])
            if run.parent is None:
                heading = f"Branch {number}: from the root"
            else:
                heading = (
                    f"Branch {number}: after {run.parent.get('id')} ({run.index + 1} of {run.count}) — "
                    f"{_one_line(_entry_text(run.parent), 50)}"
                )
            parts.append(
                f'<section class="branch{" active" if active else ""}"><h2>{_h(heading)}'
                f"{' (active)' if active else ''}</h2>\n"
            )
            parts.extend(_html_entry(e, facts, manager.get_label(str(e.get("id")))) for e in run.entries)
            parts.append("</section>\n")
    else:
        parts.append('<section class="branch active"><h2>Conversation</h2>\n')
        parts.extend(
            _html_entry(e, facts, manager.get_label(str(e.get("id")))) for e in _wire_branch(manager)
        )
        parts.append("</section>\n")
    parts.append(f"</main>\n<footer>Exported by pisession {_h(__version__)}</footer>\n</body>\n</html>\n")
    return "".join(parts)


def cmd_export(args: argparse.Namespace) -> int:
    path = _resolve(args)
    manager = _load(path)
    if args.format == "jsonl":
        entries = list(manager.snapshot().wire_entries()) if args.all else _wire_branch(manager)
        text = "".join(wire_dumps(e) + "\n" for e in entries)
    elif args.format == "md":
        text = _export_markdown(manager, args.all)
    else:
        text = _export_html(manager, args.all)
    if args.output in (None, "-"):
        sys.stdout.write(text)
        return 0
    target = os.path.abspath(os.path.expanduser(args.output))
    if os.path.exists(target) and os.path.samefile(target, path):
        raise CliError("refusing to overwrite the session itself with its export")
    with open(target, "w", encoding="utf-8", errors="surrogatepass", newline="\n") as handle:
        handle.write(text)
    _note(f"wrote {target}")
    return 0


# =========================================================================== demo


class _DemoClock:
    """Starts 40 minutes ago and moves a few seconds per reading, so the demo reads like a real session."""

    def __init__(self) -> None:
        self._now = time.time_ns() // 1_000_000 - 40 * 60 * 1000

    def now_ms(self) -> int:
        self._now += 4_700
        return self._now


def _demo_usage(tokens_in: int, tokens_out: int, cache_read: int = 0) -> Wire:
    cost_in, cost_out, cost_cache = tokens_in * 3e-6, tokens_out * 15e-6, cache_read * 3e-7
    return {
        "input": tokens_in,
        "output": tokens_out,
        "cacheRead": cache_read,
        "cacheWrite": 0,
        "totalTokens": tokens_in + tokens_out + cache_read,
        "cost": {
            "input": round(cost_in, 6),
            "output": round(cost_out, 6),
            "cacheRead": round(cost_cache, 6),
            "cacheWrite": 0,
            "total": round(cost_in + cost_out + cost_cache, 6),
        },
    }


def _tool(name: str, description: str, **properties: str) -> Wire:
    return {
        "name": name,
        "description": description,
        "parameters": {
            "type": "object",
            "properties": {k: {"type": "string", "description": v} for k, v in properties.items()},
            "required": list(properties),
        },
    }


def write_demo_session(directory: str) -> str:
    """Write a sample session with the library and return its path (what ``pisession demo`` shows)."""
    clock = _DemoClock()
    cwd = os.path.join(os.path.expanduser("~"), "projects", "tinyparse")
    manager = SessionManager.create(cwd, directory, clock=clock)
    model = {"api": "anthropic-messages", "provider": "anthropic", "model": "claude-sonnet-4-5"}

    def user(text: str) -> str:
        return manager.append_message({"role": "user", "content": text, "timestamp": clock.now_ms()})

    def assistant(blocks: list[Wire], usage: Wire, stop: str = "stop", **override: str) -> str:
        message = {
            "role": "assistant",
            "content": blocks,
            **model,
            **override,
            "usage": usage,
            "stopReason": stop,
            "timestamp": clock.now_ms(),
        }
        return manager.append_message(message)

    def result(call_id: str, tool: str, text: str, error: bool = False) -> str:
        return manager.append_message(
            {
                "role": "toolResult",
                "toolCallId": call_id,
                "toolName": tool,
                "content": [{"type": "text", "text": text}],
                "isError": error,
                "timestamp": clock.now_ms(),
            }
        )

    def call(call_id: str, tool: str, **arguments: str) -> Wire:
        return {"type": "toolCall", "id": call_id, "name": tool, "arguments": arguments}

    with manager.batch():
        manager.append_model_change("anthropic", "claude-sonnet-4-5")
        manager.append_thinking_level_change("medium")
        manager.append_message(
            {
                "role": "system",
                "content": "You are Pi, a coding agent. Work in small verified steps and explain what you "
                "changed.",
                "sections": {
                    "environment": f"<env>cwd: {cwd}\nos: linux</env>",
                    "guidelines": "<guidelines>Run the tests before and after every edit.</guidelines>",
                },
                "toolsAdded": [
                    _tool("read", "Read a file", path="File to read"),
                    _tool("bash", "Run a shell command", command="Command line"),
                    _tool(
                        "edit",
                        "Replace text in a file",
                        path="File",
                        oldText="Exact text",
                        newText="Replacement",
                    ),
                ],
                "timestamp": clock.now_ms(),
            }
        )
        report = user("tests/test_parser.py::test_empty fails with an IndexError. Can you fix it?")
        assistant(
            [
                {"type": "thinking", "thinking": "Reproduce first, then read the parser."},
                call("call_1", "bash", command="pytest -q tests/test_parser.py"),
            ],
            _demo_usage(2100, 120),
            "toolUse",
        )
        result(
            "call_1",
            "bash",
            "F..\nFAILED tests/test_parser.py::test_empty - IndexError: list index "
            "out of range\n1 failed, 2 passed in 0.04s",
            error=True,
        )
        assistant(
            [call("call_2", "read", path="src/tinyparse/parser.py")], _demo_usage(2400, 60, 1800), "toolUse"
        )
        source = result(
            "call_2",
            "read",
            "def parse(text):\n    tokens = text.split()\n    head = tokens[0]\n"
            "    return Node(head, tokens[1:])\n" + "# ... 180 more lines ...\n",
        )
        assistant(
            [
                {
                    "type": "text",
                    "text": "`parse` reads `tokens[0]` without checking for empty input. "
                    "I'll return `None` for an empty string.",
                },
                call(
                    "call_3",
                    "edit",
                    path="src/tinyparse/parser.py",
                    oldText="    head = tokens[0]",
                    newText="    if not tokens:\n        return None\n    head = tokens[0]",
                ),
            ],
            _demo_usage(2700, 210, 2300),
            "toolUse",
        )
        result("call_3", "edit", "Edited src/tinyparse/parser.py (+2 lines)")
        manager.append_usage("title", "anthropic", "claude-haiku-4-5", _demo_usage(350, 12), "session title")
        first_fix = assistant(
            [{"type": "text", "text": 'Fixed: `parse("")` now returns `None`; all 3 tests pass.'}],
            _demo_usage(2900, 40, 2600),
        )
        manager.append_label_change(report, "bug report")
        # The user goes back to the point where the file had been read and asks for another fix:
        # Pi writes a branch summary of the path it leaves, as a child of the entry it goes back to.
        manager.branch_with_summary(
            source,
            "Tried returning None for empty input; the tests passed, but "
            "the user wants an exception instead.",
        )
        manager.append_model_change("openai", "gpt-5")
        openai = {"api": "openai-responses", "provider": "openai", "model": "gpt-5"}
        keep = user('Rather than returning None, raise ParseError("empty input"). Check the callers too.')
        assistant(
            [call("call_4", "bash", command="grep -rn 'parse(' src")],
            _demo_usage(3100, 80),
            "toolUse",
            **openai,
        )
        callers = result(
            "call_4",
            "bash",
            "src/tinyparse/cli.py:12:    tree = parse(args.text)\n"
            "src/tinyparse/api.py:40:    return parse(body)\n" + "vendor/...: match\n" * 250,
        )
        assistant(
            [
                call(
                    "call_5",
                    "edit",
                    path="src/tinyparse/parser.py",
                    oldText="    head = tokens[0]",
                    newText='    if not tokens:\n        raise ParseError("empty input")\n'
                    "    head = tokens[0]",
                )
            ],
            _demo_usage(3400, 150),
            "toolUse",
            **openai,
        )
        result("call_5", "edit", "Edited src/tinyparse/parser.py (+2 lines)")
        user("Good. Update test_empty to expect the exception, then run the whole suite.")
        assistant([call("call_6", "bash", command="pytest -q")], _demo_usage(3800, 90), "toolUse", **openai)
        result("call_6", "bash", "......\n6 passed in 0.11s")
        # The model context restarts from this summary plus everything from `keep` on.
        manager.append_compaction(
            "The user reported an IndexError in parse() on empty input. A first fix returned None; the user "
            "asked for ParseError instead, which parse() now raises.",
            keep,
            4200,
            usage=_demo_usage(4200, 180),
        )
        assistant(
            [{"type": "text", "text": "All 6 tests pass; `test_empty` now expects `ParseError`."}],
            _demo_usage(1200, 45),
            **openai,
        )
        # A context edit hides the long grep output from the model; the entry itself stays as written.
        manager.append_context_edit(callers, {"content": "[250 lines trimmed] callers: cli.py:12, api.py:40"})
        manager.append_label_change(first_fix, "first attempt")
        manager.append_session_info("Fix IndexError on empty input")
    path = manager.get_session_file()
    manager.close()
    assert path is not None
    return path


def cmd_demo(args: argparse.Namespace) -> int:
    if args.dir:
        directory = os.path.abspath(os.path.expanduser(args.dir))
        os.makedirs(directory, exist_ok=True)
    else:
        directory = tempfile.mkdtemp(prefix="pisession-demo-")
    path = write_demo_session(directory)
    style = _Style(sys.stdout)
    manager = _load(path)
    _emit(style("pisession demo", "bold") + f": wrote a sample Pi session to {path}")
    _emit(
        style(
            "Below: its tree (one line per entry; ● the active branch, ○ an abandoned one), then what "
            "the model receives at the leaf.",
            "dim",
        )
    )
    _emit()
    _print_tree(manager, False, style)
    _emit()
    _print_context(manager, _context_data(manager), style, False)
    _emit()
    _emit(style("Try next:", "bold"))
    for hint in (
        f"pisession tree {path} --all",
        f"pisession stats {path}",
        f"pisession export {path} --format html -o demo.html",
        f"pisession validate {path}",
    ):
        _emit(f"  {hint}")
    return 0


# =========================================================================== argument parsing


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="pisession",
        description="Read, check and edit the session files of the Pi coding agent. SESSION is a file path, "
        "or "
        "a session id (or unique id prefix) from the current folder's sessions, as with `pi --session`.",
        epilog="Session folder: --session-dir, else $PI_CODING_AGENT_SESSION_DIR, else "
        "$PI_CODING_AGENT_DIR/sessions/--<cwd>-- (default agent dir ~/.pi/agent). "
        "`pisession demo` writes and shows a sample session.",
    )
    parser.add_argument("--version", action="version", version=f"pisession {__version__}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND")

    where = argparse.ArgumentParser(add_help=False)
    where.add_argument(
        "--session-dir",
        metavar="DIR",
        help="folder to look up session ids in (default: $PI_CODING_AGENT_SESSION_DIR, else Pi's)",
    )
    as_json = argparse.ArgumentParser(add_help=False)
    as_json.add_argument("--json", action="store_true", help="print JSON instead of text")

    def command(
        name: str,
        handler: Callable[[argparse.Namespace], int],
        summary: str,
        description: str,
        parents: Sequence[argparse.ArgumentParser] = (),
        session: bool = True,
    ) -> argparse.ArgumentParser:
        sub = commands.add_parser(name, help=summary, description=description, parents=list(parents))
        if session:
            sub.add_argument(
                "session", metavar="SESSION", help="session file, or session id / unique id prefix"
            )
        sub.set_defaults(handler=handler)
        return sub

    sub = command(
        "demo",
        cmd_demo,
        "write a sample session and show it",
        "Write a sample session with pisession itself (system prompt, tool calls, a branch, a "
        "compaction, a context edit, labels, a name), then print its tree and the model context at "
        "its leaf. Needs nothing but pisession.",
        session=False,
    )
    sub.add_argument(
        "dir", metavar="DIR", nargs="?", help="folder to write the session to (default: a new temp folder)"
    )

    sub = command(
        "ls",
        cmd_ls,
        "list sessions, newest first",
        "List sessions like Pi's session picker: modified time, message count, id, and the name or "
        "first message. Python: SessionManager.list(cwd, session_dir) / list_all(session_dir).",
        [where, as_json],
        session=False,
    )
    sub.add_argument("--all", action="store_true", help="every project's sessions, not only this folder's")
    sub.add_argument("--cwd", metavar="DIR", help="list the sessions of DIR instead of the current folder")
    sub.add_argument(
        "--no-catalog", action="store_true", help="read every session file instead of the session catalog"
    )

    sub = command(
        "search",
        cmd_search,
        "search message text across sessions",
        'Find user, assistant and tool result messages holding every word of QUERY ("quoted words" as a '
        "phrase), newest first, through the session catalog ($PISESSION_CATALOG, else "
        "$XDG_CACHE_HOME/pisession/catalog.sqlite3). Continue from a hit with "
        "`pisession context PATH --leaf ENTRY`. Python: pisession.catalog.search(QUERY, all=True).",
        [where, as_json],
        session=False,
    )
    sub.add_argument("query", metavar="QUERY", help="words to find (whole words, any case)")
    sub.add_argument("--all", action="store_true", help="every project's sessions, not only this folder's")
    sub.add_argument("--cwd", metavar="DIR", help="search the sessions of DIR instead of the current folder")
    sub.add_argument("--role", choices=("user", "assistant", "tool"), help="only messages of this role")
    sub.add_argument("-n", "--limit", metavar="N", type=int, default=50, help="at most N matches (50)")

    sub = command(
        "tree",
        cmd_tree,
        "show the entry tree",
        "One line per entry: id, role or type, short text, labels and notes (context edits, "
        "compaction boundaries, orphans). Only branch points indent. Python: SessionManager.get_tree().",
        [where, as_json],
    )
    sub.add_argument("--all", action="store_true", help="also show usage entries (hidden by default)")

    sub = command(
        "context",
        cmd_context,
        "show what the model receives at the leaf",
        "The replayed system prompt and tools, then every message the model receives, with totals. "
        "Python: manager.build_session_context() and get_current_system_message(messages).",
        [where, as_json],
    )
    sub.add_argument("--leaf", metavar="ID", help="build the context at entry ID instead of the leaf")
    sub.add_argument("--full", action="store_true", help="print whole messages and system prompt")

    sub = command(
        "tail",
        cmd_tail,
        "follow a live session",
        "Print the last entries, then one line per entry as Pi (or anyone) appends it. Ctrl-C stops. "
        "Python: for entry in SessionManager.open(path).follow(): ...",
        [where, as_json],
    )
    sub.add_argument("--interval", metavar="S", type=float, default=0.25, help="seconds between polls (0.25)")
    sub.add_argument(
        "-n", "--lines", metavar="N", type=int, default=10, help="existing entries to show first (10)"
    )

    command(
        "stats",
        cmd_stats,
        "tokens and cost by model",
        "Tokens and cost from assistant messages, usage entries, compaction and branch-summary usage, on "
        "all branches, by model and by source.",
        [where, as_json],
    )

    sub = command(
        "validate",
        cmd_validate,
        "check files for problems",
        "Report malformed lines (with line numbers), non-session files, duplicate ids, orphans, "
        "parentId cycles and dangling firstKeptEntryId / targetId. Exit 1 when there is an error "
        "(warnings alone exit 0). Never modifies a file.",
        [where, as_json],
        session=False,
    )
    sub.add_argument("session", metavar="SESSION", nargs="+", help="session files or ids")

    as_entry = argparse.ArgumentParser(add_help=False)
    as_entry.add_argument("--json", action="store_true", help="print the written entry as Pi's JSON")
    sub = command(
        "name",
        cmd_name,
        "name the session",
        "Append a session_info entry. Python: manager.append_session_info(TEXT).",
        [where, as_entry],
    )
    sub.add_argument("text", metavar="TEXT", help="the new name")
    sub = command(
        "label",
        cmd_label,
        "set or clear an entry's label",
        "Append a label entry; without TEXT the label of ID is cleared. "
        "Python: manager.append_label_change(ID, TEXT).",
        [where, as_entry],
    )
    sub.add_argument("id", metavar="ID", help="entry id")
    sub.add_argument("text", metavar="TEXT", nargs="?", help="the label (left out: clear it)")
    sub = command(
        "branch",
        cmd_branch,
        "branch from an entry with a summary",
        "Write a branch_summary entry whose parent is ID: Pi then resumes the session at ID with a "
        "summary of the path left behind. --summary is required: Pi does not store the leaf in the "
        "file, so branching without a summary would write nothing. "
        "Python: manager.branch_with_summary(ID, TEXT).",
        [where, as_entry],
    )
    sub.add_argument("id", metavar="ID", help="entry id")
    sub.add_argument("--summary", metavar="TEXT", help="summary of the path being left (required)")
    sub = command(
        "edit",
        cmd_edit,
        "omit or replace an entry in the model context",
        "Append a context_edit for ID (on the active branch; a user, assistant, toolResult or custom "
        "message): the model no longer sees it (--omit) or sees TEXT instead. The entry itself is "
        "never changed. Python: manager.append_context_edit(ID, None | {'content': TEXT}).",
        [where, as_entry],
    )
    sub.add_argument("id", metavar="ID", help="entry id")
    what = sub.add_mutually_exclusive_group(required=True)
    what.add_argument("--omit", action="store_true", help="hide the entry from the model")
    what.add_argument("--text", metavar="TEXT", help="replacement content")
    sub = command(
        "compact",
        cmd_compact,
        "append a compaction",
        "Append a compaction: the model context restarts from --summary plus the entries from "
        "--keep-from (on the active branch) onwards. Python: manager.append_compaction(TEXT, ID, N).",
        [where, as_entry],
    )
    sub.add_argument("--summary", metavar="TEXT", required=True, help="what the compacted history held")
    sub.add_argument("--keep-from", metavar="ID", required=True, help="first entry to keep")
    sub.add_argument(
        "--tokens-before",
        metavar="N",
        type=int,
        help="context size before compaction (default: estimated, characters / 4)",
    )
    sub = command(
        "fork",
        cmd_fork,
        "copy a session to another project",
        "Copy every entry into a new session of --cwd DIR whose header names the source as parent. "
        "Python: SessionManager.fork_from(path, DIR, session_dir).",
        [where, as_json],
    )
    sub.add_argument("--cwd", metavar="DIR", required=True, help="working directory of the new session")
    sub = command(
        "extract",
        cmd_extract,
        "make a branch a session of its own",
        "Write a new session holding only the path to --leaf ID (labels kept). "
        "Python: manager.create_branched_session(ID).",
        [where, as_json],
    )
    sub.add_argument("--leaf", metavar="ID", required=True, help="last entry of the path to keep")
    command(
        "migrate",
        cmd_migrate,
        "bring an old session file to the current version",
        "Open the session as Pi does: an old version is migrated and the file rewritten, a missing final "
        "newline is repaired. Reports whether the file changed. Python: SessionManager.open(path).",
        [where, as_json],
    )

    sub = command(
        "export",
        cmd_export,
        "export as Markdown, HTML or JSON lines",
        "Export the active branch (or --all branches): md, a self-contained html page (no external "
        "assets), or jsonl (the entries as Pi's JSON lines, no header).",
        [where],
    )
    sub.add_argument("--format", choices=("md", "html", "jsonl"), required=True)
    sub.add_argument("--all", action="store_true", help="every branch, not only the active one")
    sub.add_argument("-o", "--output", metavar="FILE", help="write to FILE instead of stdout")
    return parser


def _os_error_text(error: OSError) -> str:
    where = f": {error.filename}" if error.filename else ""
    return f"{error.strerror or error}{where}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``pisession`` command line; returns the exit status."""
    parser = _parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 2
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 0
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        with contextlib.suppress(ValueError, OSError):
            reconfigure(errors="backslashreplace")  # lone surrogates from a file must not crash output
    try:
        return int(handler(args))
    except CliError as error:
        sys.stderr.write(f"pisession: error: {error}\n")
        return error.code
    except PisessionError as error:
        sys.stderr.write(f"pisession: error: {error}\n")
        return 1
    except BrokenPipeError:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return 1
    except OSError as error:
        sys.stderr.write(f"pisession: error: {_os_error_text(error)}\n")
        return 1
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
