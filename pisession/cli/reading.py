"""Reading commands: ``ls``, ``tree``, ``context`` and ``tail``. They never write a file."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping

from pisession import (
    CURRENT_SESSION_VERSION,
    SessionManager,
    read_session,
    read_session_entries,
    read_session_header,
)
from pisession.describe import (
    SessionFacts,
    content_text,
    describe_message,
    format_local_time,
    one_line,
    tool_names,
)
from pisession.views import context_data, tree_data, tree_rows

from . import sessions
from .commands import Commands
from .output import (
    KIND_STYLES,
    CliError,
    Style,
    emit,
    emit_json,
    emit_wire,
    entry_line,
    width,
)

# typing for type checkers only (they take TYPE_CHECKING for true): importing it at run time
# took 8 % of `pisession tree`'s start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:  # the model and discovery (attrs classes) only for the commands that use them
    from typing import Any



def print_tree(manager: SessionManager, show_all: bool, style: Style) -> None:
    facts = SessionFacts(manager)
    room = width()
    shown = 0
    branch_points = 0
    for row in tree_rows(manager, show_all=show_all, facts=facts):  # the facts made once
        entry = row.entry
        mark = style("●", "green") if row.active else style("○", "dim")
        emit(
            entry_line(
                entry,
                style,
                prefix=row.prefix + mark + " ",
                notes=facts.notes(entry, row.node.label),
                dim=not row.active,
                width_=room + (len(mark) - 1),
            )
        )
        shown += 1
        branch_points += len(row.children) > 1
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
    emit(style("● active branch  ○ other branches  ·  " + " · ".join(parts), "dim"))


def cmd_tree(args: argparse.Namespace) -> int:
    manager = sessions.load(sessions.resolve(args))
    if args.json:
        emit_json(tree_data(manager))
        return 0
    print_tree(manager, args.all, Style(sys.stdout))
    return 0


def print_context(data: Mapping[str, Any], style: Style, full: bool) -> None:
    room = width()
    model = data["model"]
    model_text = f"{model.get('provider')}/{model.get('modelId')}" if isinstance(model, Mapping) else "(none)"
    system = data["system"]
    messages: list[dict[str, Any]] = data["messages"]
    system_count = sum(1 for m in messages if m.get("role") == "system")
    emit(
        style("System prompt", "bold")
        + style(
            f"  (replayed from {system_count} system message{'s' if system_count != 1 else ''})"
            if system is not None
            else "  (none)",
            "dim",
        )
    )
    if system is not None:
        text = content_text(system.get("content"))
        lines = text.splitlines() or [""]
        limit = len(lines) if full else 6
        for line in lines[:limit]:
            emit("  │ " + (line if full else one_line(line, room - 4)))
        if len(lines) > limit:
            emit(style(f"  │ … {len(lines) - limit} more lines (--full shows them)", "dim"))
        sections = system.get("sections")
        if isinstance(sections, Mapping):
            for name, value in sections.items():
                body = value if isinstance(value, str) else ""
                if full:
                    emit(f"  § {name}")
                    for line in body.splitlines():
                        emit("    " + line)
                else:
                    emit(f"  § {name}: " + style(one_line(body, room - len(name) - 6), "dim"))
        tools = tool_names(system.get("toolsAdded"))
        emit(style(f"Tools ({len(tools)})", "bold") + (": " + ", ".join(tools) if tools else ""))
    emit()
    emit(
        style(f"Messages at leaf {data['leafId']}", "bold")
        + style(f"  (model {model_text}, thinking {data['thinkingLevel']})", "dim")
    )
    number_width = len(str(len(messages)))
    for i, message in enumerate(messages, start=1):
        role = str(message.get("role", "?"))
        head = f"  {i:>{number_width}}  {role:<17} "
        if full and role != "system":
            emit(head.rstrip())
            for line in describe_message(message).splitlines() or [""]:
                emit("      " + line)
            continue
        text = "(system prompt, replayed above)" if role == "system" else describe_message(message)
        emit(
            f"  {i:>{number_width}}  "
            + style(f"{role:<17}", *KIND_STYLES.get(role, ()))
            + " "
            + one_line(text, max(20, room - len(head)))
        )
    totals = data["totals"]
    emit(
        style(
            f"Total: {totals['messages']} messages · {totals['characters']:,} characters"
            + (f" · {totals['images']} images" if totals["images"] else "")
            + f" · ~{totals['approxTokens']:,} tokens (characters / 4)",
            "bold",
        )
    )


def cmd_context(args: argparse.Namespace) -> int:
    manager = sessions.load(sessions.resolve(args))
    if args.leaf is not None:
        manager.branch(args.leaf)
    data = context_data(manager)
    if args.json:
        emit_json(data)
    else:
        print_context(data, Style(sys.stdout), args.full)
    return 0


def _check_current_version(path: str) -> None:
    header = read_session_header(path)
    if not header:
        read_session_entries(path)  # raises the precise not-a-session error
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
    path = sessions.resolve(args)
    _check_current_version(path)
    # A read-only view: nothing is written, not even a newline after an unfinished last line
    # (another writer's line still arriving: shown once it is whole).
    manager = read_session(path)
    style = Style(sys.stdout)
    room = width()

    def show(entry: dict[str, Any]) -> None:
        if args.json:
            emit_wire(entry)
        else:
            stamp = style(format_local_time(entry.get("timestamp"), with_date=False), "dim")
            emit(stamp + "  " + entry_line(entry, style, width_=room - 10))
        sys.stdout.flush()

    from pisession import to_wire

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


def register(commands: Commands) -> None:
    where, as_json = commands.where, commands.as_json
    sub = commands.add(
        "tree",
        cmd_tree,
        "show the entry tree",
        "One line per entry: id, role or type, short text, labels and notes (context edits, "
        "compaction boundaries, orphans). Only branch points indent. "
        "Python: pisession.views.tree_rows(manager), tree_data(manager).",
        [where, as_json],
    )
    sub.add_argument("--all", action="store_true", help="also show usage entries (hidden by default)")

    sub = commands.add(
        "context",
        cmd_context,
        "show what the model receives at the leaf",
        "The replayed system prompt and tools, then every message the model receives, with totals. "
        "Python: pisession.views.context_data(manager).",
        [where, as_json],
    )
    sub.add_argument("--leaf", metavar="ID", help="build the context at entry ID instead of the leaf")
    sub.add_argument("--full", action="store_true", help="print whole messages and system prompt")

    sub = commands.add(
        "tail",
        cmd_tail,
        "follow a live session",
        "Print the last entries, then one line per entry as Pi (or anyone) appends it. Ctrl-C stops. "
        "Python: for entry in pisession.read_session(path).follow(): ...",
        [where, as_json],
    )
    sub.add_argument("--interval", metavar="S", type=float, default=0.25, help="seconds between polls (0.25)")
    sub.add_argument(
        "-n", "--lines", metavar="N", type=int, default=10, help="existing entries to show first (10)"
    )
