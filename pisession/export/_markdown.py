"""The Markdown export: a document of the active branch or of every branch."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .._reading import SessionReader
from ..describe import (
    SessionFacts,
    _blocks,
    _int_text,
    _num,
    content_text,
    describe_entry,
    describe_message,
    entry_kind,
    format_local_time,
    one_line,
    tool_names,
    usage_text,
)
from ._common import Wire, export_title, label_of, pretty_json, runs, wire_branch

# Entries shown as a block of their own in exports; the others (model and thinking-level changes,
# labels, names, custom state, usage, context edits, unknown types) as one line.
FULL_ENTRIES = ("message", "compaction", "branch_summary", "custom_message")
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


def _fence(text: str, info: str = "") -> str:
    longest = max((len(m) for m in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


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


def _message_body(message: Mapping[str, Any]) -> list[str]:
    role = message.get("role")
    content = message.get("content")
    out: list[str] = []
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
                    _fence(pretty_json(block.get("arguments")), "json"),
                    "",
                ]
        usage = usage_text(message.get("usage"))
        out += [
            f"<sub>{message.get('provider')}/{message.get('model')}"
            + (f" · {usage}" if usage else "")
            + "</sub>",
            "",
        ]
    elif role == "toolResult":
        if message.get("isError") is True:
            out += ["**The tool reported an error:**", ""]
        out += [_fence(content_text(content)), ""]
    elif role == "system":
        out += [_fence(content_text(content)), ""]
        sections = message.get("sections")
        if isinstance(sections, Mapping):
            for name, value in sections.items():
                out += [f"**§ {name}**" + (" (deleted)" if value is None else ""), ""]
                if isinstance(value, str):
                    out += [_fence(value), ""]
        added = tool_names(message.get("toolsAdded"))
        removed = tool_names(message.get("toolsRemoved"))
        if added:
            out += ["Tools added: " + ", ".join(f"`{t}`" for t in added), ""]
        if removed:
            out += ["Tools removed: " + ", ".join(f"`{t}`" for t in removed), ""]
    elif role == "bashExecution":
        out += [_fence(f"$ {message.get('command', '')}\n{message.get('output', '')}", "console"), ""]
    elif role in ("user", "custom"):
        text = content_text(content)
        out += [text if text.strip() else "*(no text)*", ""]
    else:
        out += [describe_message(message), ""]
    return out


def markdown_entry(entry: Wire, facts: SessionFacts, label: str | None) -> list[str]:
    kind = entry.get("type")
    entry_id = entry.get("id")
    when = format_local_time(entry.get("timestamp"))
    marks = "".join(f" · {note.text}" for note in facts.notes(entry, label) if note.kind != "leaf")
    if entry_id is not None and entry_id == facts.leaf_id:
        marks += " · **leaf**"
    stamp = f"<sub>`{entry_id}` · {when}{marks}</sub>"
    if kind not in FULL_ENTRIES:
        return [f"- *{entry_kind(entry)}* {_code_span(one_line(describe_entry(entry), 200))} {stamp}", ""]
    out = [f"### {_title(entry)}", "", stamp, ""]
    message = entry.get("message")
    if kind == "message" and isinstance(message, Mapping):
        out += _message_body(message)
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
        out += [content_text(entry.get("content")), ""]
    else:
        out += [describe_entry(entry), ""]
    return out


def to_markdown(manager: SessionReader, *, all_branches: bool = False, version: str = "") -> str:
    facts = SessionFacts(manager)
    header = manager.get_header()
    out = [f"# {export_title(manager)}", ""]
    out += [
        f"- Session: `{header.id if header else ''}`",
        f"- Working directory: `{manager.get_cwd()}`",
        f"- Created: {format_local_time(header.timestamp if header else None)}",
        f"- Leaf: `{facts.leaf_id}`",
        f"- Shown: {'every branch' if all_branches else 'the active branch'}",
        "",
    ]
    wire = manager._system_message_wire()
    if wire is not None:
        tools = tool_names(wire.get("toolsAdded"))
        out += ["## System prompt at the leaf", "", _fence(content_text(wire.get("content"))), ""]
        if tools:
            out += ["Tools: " + ", ".join(f"`{t}`" for t in tools), ""]
    if all_branches:
        for number, run in enumerate(runs(manager), start=1):
            active = any(facts.is_active(e) for e in run.entries[-1:])
            if run.parent is None:
                title = f"## Branch {number}: from the root" + (
                    f" ({run.index + 1} of {run.count})" if run.count > 1 else ""
                )
            else:
                title = (
                    f"## Branch {number}: after `{run.parent.get('id')}` ({run.index + 1} of {run.count}) "
                    f"— {one_line(describe_entry(run.parent), 50)}"
                )
            out += [title + (" *(active)*" if active else ""), ""]
            for entry in run.entries:
                out += markdown_entry(entry, facts, label_of(manager, entry))
    else:
        out += ["## Conversation", ""]
        for entry in wire_branch(manager):
            out += markdown_entry(entry, facts, label_of(manager, entry))
    out += ["---", f"*Exported by pisession {version}.*", ""]
    return "\n".join(out)
