"""The static HTML export: one self-contained page (no scripts, no external assets)."""

from __future__ import annotations

import html
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
    entry_kind,
    format_local_time,
    one_line,
    tool_names,
    usage_text,
)
from ._common import Wire, export_title, label_of, pretty_json, runs, wire_branch

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
            parts.append(f"<pre>{_h(pretty_json(block))}</pre>")
    return "".join(parts)


def _html_entry(entry: Wire, facts: SessionFacts, label: str | None) -> str:
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
    for note in facts.notes(entry, label):
        text = note.text.strip("[]") if note.kind == "label" else note.text
        badges.append(f'<span class="badge {note.kind}">{_h(text)}</span>')
    head = (
        f'<div class="entry-head"><span class="kind">{_h(entry_kind(entry))}</span>'
        f'<code>{_h(entry_id)}</code><time datetime="{_h(entry.get("timestamp", ""))}">'
        f"{_h(format_local_time(entry.get('timestamp')))}</time>{''.join(badges)}</div>"
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
                        f"<pre>{_h(pretty_json(block.get('arguments')))}</pre></div>"
                    )
            if message.get("stopReason") in ("error", "aborted"):
                stop = _h(message.get("stopReason"))
                body += f'<p class="error">{stop}: {_h(message.get("errorMessage", ""))}</p>'
            usage = usage_text(message.get("usage"))
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
            added = tool_names(message.get("toolsAdded"))
            removed = tool_names(message.get("toolsRemoved"))
            if added:
                body += f'<p class="usage">Tools added: {_h(", ".join(added))}</p>'
            if removed:
                body += f'<p class="usage">Tools removed: {_h(", ".join(removed))}</p>'
        elif role == "bashExecution":
            body += f"<pre>$ {_h(message.get('command', ''))}\n{_h(message.get('output', ''))}</pre>"
        elif role in ("user", "custom"):
            body += _html_content(content)
        else:
            body += f"<pre>{_h(pretty_json(message))}</pre>"
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
        body += f"<span>{_h(describe_entry(entry))}</span>"
    return f'<article class="{" ".join(classes)}" id="entry-{_h(entry_id)}">{head}{body}</article>\n'


def to_html(manager: SessionReader, *, all_branches: bool = False, version: str = "") -> str:
    facts = SessionFacts(manager)
    header = manager.get_header()
    title = export_title(manager)
    parts = [
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n',
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n',
        f"<title>{_h(title)}</title>\n<style>{_HTML_STYLE}</style>\n</head>\n<body>\n",
        f'<header class="page"><h1>{_h(title)}</h1><dl class="meta">',
        f"<dt>Session</dt><dd><code>{_h(header.id if header else '')}</code></dd>",
        f"<dt>Working directory</dt><dd><code>{_h(manager.get_cwd())}</code></dd>",
        f"<dt>Created</dt><dd>{_h(format_local_time(header.timestamp if header else None))}</dd>",
        f"<dt>Entries</dt><dd>{manager.get_entry_count():,}</dd>",
        f"<dt>Shown</dt><dd>{'every branch' if all_branches else 'the active branch'}</dd>",
        "</dl></header>\n<main>\n",
    ]
    wire = manager._system_message_wire()
    if wire is not None:
        tools = tool_names(wire.get("toolsAdded"))
        parts.append(
            '<section class="system"><h2>System prompt at the leaf</h2><details><summary>'
            f"{len(content_text(wire.get('content'))):,} characters, {len(tools)} tools</summary>"
            f"{_html_content(wire.get('content'))}</details>"
        )
        if tools:
            parts.append(f'<p class="usage">Tools: {_h(", ".join(tools))}</p>')
        parts.append("</section>\n")
    if all_branches:
        for number, run in enumerate(runs(manager), start=1):
            active = any(facts.is_active(e) for e in run.entries[-1:])
            if run.parent is None:
                heading = f"Branch {number}: from the root"
            else:
                heading = (
                    f"Branch {number}: after {run.parent.get('id')} ({run.index + 1} of {run.count}) — "
                    f"{one_line(describe_entry(run.parent), 50)}"
                )
            parts.append(
                f'<section class="branch{" active" if active else ""}"><h2>{_h(heading)}'
                f"{' (active)' if active else ''}</h2>\n"
            )
            parts.extend(_html_entry(e, facts, label_of(manager, e)) for e in run.entries)
            parts.append("</section>\n")
    else:
        parts.append('<section class="branch active"><h2>Conversation</h2>\n')
        parts.extend(_html_entry(e, facts, label_of(manager, e)) for e in wire_branch(manager))
        parts.append("</section>\n")
    parts.append(f"</main>\n<footer>Exported by pisession {_h(version)}</footer>\n</body>\n</html>\n")
    return "".join(parts)
