"""Reading commands: ``ls``, ``tree``, ``context`` and ``tail``. They never write a file."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Mapping

from pisession import (
    CURRENT_SESSION_VERSION,
    SessionManager,
    default_session_dir,
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
    emit_json_rows,
    emit_wire,
    entry_line,
    home_short,
    id_text,
    width,
)

# typing for type checkers only (they take TYPE_CHECKING for true): importing it at run time
# took 8 % of `pisession tree`'s start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:  # the model and discovery (attrs classes) only for the commands that use them
    from typing import Any

    from pisession import SessionInfo


def print_tree(manager: SessionManager, show_all: bool, style: Style) -> None:
    facts = SessionFacts(manager)
    room = width()
    shown = 0
    branch_points = 0
    for row in tree_rows(manager, show_all=show_all):
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


def _short_ids(ids: list[str], minimum: int = 8) -> dict[str, str]:
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


def _nothing_listed(args: argparse.Namespace, cwd: str, session_dir: str | None) -> str:
    """What was looked through, when it held no session to list."""
    if args.all:
        where = session_dir or f"any project ({os.path.dirname(default_session_dir(cwd))})"
        return f"No sessions found in {where}."
    directory = session_dir or default_session_dir(cwd)
    if directory == default_session_dir(cwd) or not os.path.isdir(directory):
        return f"No sessions found in {directory}."
    others = len(SessionManager.list_all(directory))  # the folder is shared: ls keeps cwd's sessions
    if not others:
        return f"No sessions found in {directory}."
    return (
        f"No sessions of {cwd} in {directory} ({others} of other folders there: --all lists them, "
        "--cwd DIR another folder's)."
    )


def cmd_ls(args: argparse.Namespace) -> int:
    cwd = os.path.abspath(os.path.expanduser(args.cwd)) if args.cwd else os.getcwd()
    session_dir = sessions.session_dir(args, cwd=cwd)
    report = sessions.progress(sys.stderr)
    from .searching import close_catalog, open_catalog  # the catalog only for `ls`

    catalog = None if args.no_catalog else open_catalog()
    infos: list[SessionInfo] = []
    if args.all:
        if not sessions.sessions_root_exists(session_dir):
            pass
        elif catalog is not None:
            infos = catalog.list_all(session_dir, report, text=args.json)
        else:
            infos = SessionManager.list_all(session_dir, report)
    else:
        directory = session_dir or default_session_dir(cwd)
        if not os.path.isdir(directory):
            pass
        elif catalog is not None:
            infos = catalog.list(cwd, directory, report, text=args.json)
        else:
            infos = SessionManager.list(cwd, directory, report)
    if catalog is not None:
        close_catalog(catalog)
    if args.json:
        emit_json_rows([info.to_wire() for info in infos])
        return 0
    style = Style(sys.stdout)
    if not infos:
        emit(_nothing_listed(args, cwd, session_dir))
        return 0
    short = _short_ids([info.id for info in infos if isinstance(info.id, str)])
    shown = [short[info.id] if isinstance(info.id, str) else id_text(info.id) for info in infos]
    id_width = max(len(s) for s in shown)
    room = width()
    count_width = max(4, *(len(str(info.message_count)) for info in infos))
    head = f"{'MODIFIED':<16}  {'MSGS':>{count_width}}  {'ID':<{id_width}}  "
    cwd_width = 0
    if args.all:
        cwd_width = min(30, max(len(home_short(info.cwd)) for info in infos))
        head += f"{'CWD':<{cwd_width}}  "
    emit(style(head + "NAME / FIRST MESSAGE", "bold"))
    for info, session_id in zip(infos, shown, strict=True):
        line = (
            f"{info.modified.astimezone():%Y-%m-%d %H:%M}  {info.message_count:>{count_width}}  "
            + style(f"{session_id:<{id_width}}", "yellow")
            + "  "
        )
        if args.all:
            line += f"{one_line(home_short(info.cwd), cwd_width):<{cwd_width}}  "
        fit = max(20, room - len(head))
        title = style(one_line(info.name, fit), "bold") if info.name else one_line(info.first_message, fit)
        emit(line + title)
    emit(style(f"{len(infos)} session{'s' if len(infos) != 1 else ''}, newest first", "dim"))
    return 0


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
    _wait_for_whole_lines(path, args.interval)
    manager = SessionManager.open(path)
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
        "ls",
        cmd_ls,
        "list sessions, newest first",
        "List sessions like Pi's session picker: modified time, message count, id, and the name or "
        "first message, through the session catalog (only files that changed since the last call "
        "are read). Python: SessionManager.list(cwd, session_dir, catalog=True) / "
        "list_all(session_dir, catalog=True).",
        [where, as_json],
        session=False,
    )
    sub.add_argument("--all", action="store_true", help="every project's sessions, not only this folder's")
    sub.add_argument("--cwd", metavar="DIR", help="list the sessions of DIR instead of the current folder")
    sub.add_argument(
        "--no-catalog", action="store_true", help="read every session file instead of the session catalog"
    )

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
        "Python: for entry in SessionManager.open(path).follow(): ...",
        [where, as_json],
    )
    sub.add_argument("--interval", metavar="S", type=float, default=0.25, help="seconds between polls (0.25)")
    sub.add_argument(
        "-n", "--lines", metavar="N", type=int, default=10, help="existing entries to show first (10)"
    )
