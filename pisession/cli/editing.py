"""Editing commands: each appends one entry (or writes one new session) through
``SessionManager``, after trying the same edit on an in-memory copy first."""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

from pisession import (
    CURRENT_SESSION_VERSION,
    SessionManager,
    SessionNotWrittenWarning,
    read_session_entries,
    to_wire,
)

from . import sessions
from .commands import Commands
from .output import CliError, emit, emit_json, emit_wire, write_out

if TYPE_CHECKING:
    pass

T = TypeVar("T")


def edit_session(
    args: argparse.Namespace, operation: Callable[[SessionManager], T]
) -> tuple[str, SessionManager, T]:
    """Run ``operation`` on an in-memory copy first (a rejected edit then never touches the file,
    not even with the migration or newline repair that opening does), then on the file itself."""
    path = sessions.resolve(args)
    operation(sessions.load(path, quiet=True))
    manager = SessionManager.open(path, sessions.session_dir(args), **lock_options(args))
    try:
        result = operation(manager)
    except BaseException:
        manager.close()
        raise
    return path, manager, result


def lock_options(args: argparse.Namespace) -> dict[str, Any]:
    """The editing commands' lock options: wait at most --lock-timeout, say so after a second."""

    def waiting(holder: str) -> None:
        write_out(f"pisession: waiting for the session lock held by {holder}\n", sys.stderr)

    return {"lock_timeout": args.lock_timeout, "on_lock_wait": waiting}


def report_entry(args: argparse.Namespace, manager: SessionManager, entry_id: str, message: str) -> int:
    try:
        if args.json:
            entry = manager.get_entry(entry_id)
            emit_wire(to_wire(entry) if entry is not None else None)
        else:
            emit(message)
    finally:
        manager.close()
    return 0


def cmd_name(args: argparse.Namespace) -> int:
    _, manager, entry_id = edit_session(args, lambda m: m.append_session_info(args.text))
    name = manager.get_session_name()
    text = f"Named the session {name!r}" if name else "Cleared the session name"
    return report_entry(args, manager, entry_id, f"{text} (entry {entry_id}).")


def cmd_label(args: argparse.Namespace) -> int:
    def operation(m: SessionManager) -> str:
        return (
            m.append_label_change(args.id, args.text)
            if args.text is not None
            else m.append_label_change(args.id)
        )

    _, manager, entry_id = edit_session(args, operation)
    text = f"Labelled {args.id} {args.text!r}" if args.text else f"Cleared the label of {args.id}"
    return report_entry(args, manager, entry_id, f"{text} (entry {entry_id}).")


def cmd_edit(args: argparse.Namespace) -> int:
    replacement = None if args.omit else {"content": args.text}
    _, manager, entry_id = edit_session(args, lambda m: m.append_context_edit(args.id, replacement))
    what = "omitted from" if args.omit else "replaced in"
    return report_entry(
        args,
        manager,
        entry_id,
        f"{args.id} is now {what} the model context (context edit {entry_id}); "
        "the entry itself is unchanged.",
    )


def cmd_fork(args: argparse.Namespace) -> int:
    source = sessions.resolve(args)
    read_session_entries(source)  # a clear error for a non-session, before fork_from reads it
    target = os.path.abspath(os.path.expanduser(args.cwd))
    # the new session goes where Pi started in the target folder would keep it: that folder's settings
    folder = sessions.session_dir(args, cwd=target)
    manager = SessionManager.fork_from(source, target, folder, **lock_options(args))
    try:
        path = manager.get_session_file()
        if args.json:
            emit_json(
                {
                    "path": path,
                    "id": manager.get_session_id(),
                    "cwd": manager.get_cwd(),
                    "parentSession": source,
                }
            )
        else:
            emit(f"Forked into {path}")
            emit(f"  session {manager.get_session_id()} for {manager.get_cwd()} (parent: {source})")
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
            raise CliError(f"entry {args.leaf} not found in {m._where()}")
        if not _has_conversation(to_wire(e) for e in m.get_branch(args.leaf)):
            raise CliError(
                f"the path to {args.leaf} holds no user or assistant message; Pi would not write "
                "such a session, so nothing was extracted"
            )
        return m.create_branched_session(args.leaf)

    _, manager, new_path = edit_session(args, operation)
    try:
        if args.json:
            emit_json(
                {"path": new_path, "id": manager.get_session_id(), "entries": manager.get_entry_count()}
            )
        else:
            emit(f"Extracted the path to {args.leaf} into {new_path}")
            emit(f"  session {manager.get_session_id()}: {manager.get_entry_count()} entries")
    finally:
        manager.close()
    return 0


def cmd_migrate(args: argparse.Namespace) -> int:
    path = sessions.resolve(args)
    entries = read_session_entries(path)
    version = entries[0].get("version")
    with open(path, "rb") as handle:
        before = handle.read()
    with warnings.catch_warnings():
        warnings.simplefilter("error", SessionNotWrittenWarning)  # migrate exists to write
        try:
            manager = SessionManager.open(path, sessions.session_dir(args), **lock_options(args))
        except SessionNotWrittenWarning as warning:
            raise CliError(str(warning)) from None
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
        emit_json(
            {"path": path, "changed": changed, "fromVersion": version, "toVersion": CURRENT_SESSION_VERSION}
        )
    else:
        emit(f"{path}: {what}")
    return 0


def register(commands: Commands) -> None:
    where, as_json, as_entry = commands.where, commands.as_json, commands.as_entry
    sub = commands.add(
        "name",
        cmd_name,
        "name the session",
        "Append a session_info entry. Python: manager.append_session_info(TEXT).",
        [where, as_entry],
    )
    sub.add_argument("text", metavar="TEXT", help="the new name")
    sub = commands.add(
        "label",
        cmd_label,
        "set or clear an entry's label",
        "Append a label entry; without TEXT the label of ID is cleared. "
        "Python: manager.append_label_change(ID, TEXT).",
        [where, as_entry],
    )
    sub.add_argument("id", metavar="ID", help="entry id")
    sub.add_argument("text", metavar="TEXT", nargs="?", help="the label (left out: clear it)")
    sub = commands.add(
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
    sub = commands.add(
        "fork",
        cmd_fork,
        "copy a session to another project",
        "Copy every entry into a new session of --cwd DIR whose header names the source as parent. "
        "Python: SessionManager.fork_from(path, DIR, session_dir).",
        [where, as_json],
    )
    sub.add_argument("--cwd", metavar="DIR", required=True, help="working directory of the new session")
    sub = commands.add(
        "extract",
        cmd_extract,
        "make a branch a session of its own",
        "Write a new session holding only the path to --leaf ID (labels kept). "
        "Python: manager.create_branched_session(ID).",
        [where, as_json],
    )
    sub.add_argument("--leaf", metavar="ID", required=True, help="last entry of the path to keep")
    commands.add(
        "migrate",
        cmd_migrate,
        "bring an old session file to the current version",
        "Open the session as Pi does: an old version is migrated and the file rewritten, a missing final "
        "newline is repaired. Reports whether the file changed. Python: SessionManager.open(path).",
        [where, as_json],
    )
