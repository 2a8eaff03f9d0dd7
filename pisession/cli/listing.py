"""``pisession ls``: a group of its own, so that listing imports the catalog and what it prints,
not the tree, context and model modules the other reading commands need."""

from __future__ import annotations

import argparse
import os
import sys

from pisession import default_session_dir

from . import sessions
from .commands import Commands
from .output import Style, emit, emit_json_bytes, emit_json_rows, home_short, id_text, width

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from pisession import SessionInfo


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
    others = len(_scan_all(directory))  # the folder is shared: ls keeps cwd's sessions
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
        elif catalog is not None and args.json:
            data = catalog.list_all_json(session_dir, report)  # the rows' JSON as the catalog keeps it
            close_catalog(catalog)
            emit_json_bytes(data)
            return 0
        elif catalog is not None:
            infos = catalog.list_all(session_dir, report, text=args.json)
        else:
            infos = _scan_all(session_dir, report)
    else:
        directory = session_dir or default_session_dir(cwd)
        if not os.path.isdir(directory):
            pass
        elif catalog is not None and args.json:
            data = catalog.list_json(cwd, directory, report)  # the rows' JSON as the catalog keeps it
            close_catalog(catalog)
            emit_json_bytes(data)
            return 0
        elif catalog is not None:
            infos = catalog.list(cwd, directory, report, text=args.json)
        else:
            infos = _scan(cwd, directory, report)
    if catalog is not None:
        close_catalog(catalog)
    if args.json:
        emit_json_rows([info.to_wire() for info in infos])
        return 0
    from pisession.describe import local_time_text, one_line

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
            f"{local_time_text(info.modified)}  {info.message_count:>{count_width}}  "
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


def _scan_all(directory: str | None, report: Callable[[int, int], None] | None = None) -> list[SessionInfo]:
    """Every project's sessions read from the files (no catalog): the manager only then."""
    from pisession import SessionManager

    return SessionManager.list_all(directory, report)


def _scan(cwd: str, directory: str, report: Callable[[int, int], None] | None) -> list[SessionInfo]:
    from pisession import SessionManager

    return SessionManager.list(cwd, directory, report)


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
