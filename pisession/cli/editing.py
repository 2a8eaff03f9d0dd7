"""Editing commands: each appends one entry (or writes one new session) through
``SessionManager``, after trying the same edit on an in-memory copy first."""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from pisession import (
    CURRENT_SESSION_VERSION,
    SessionManager,
    SessionNotWrittenWarning,
    read_session_entries,
    to_wire,
)
from pisession.views import context_data

from . import sessions
from .commands import Commands
from .output import CliError, emit, emit_json, emit_wire, note, write_out

if TYPE_CHECKING:
    from pisession.compaction import CompactionPreparation, CompactionSettings

T = TypeVar("T")


def _edit(
    args: argparse.Namespace, operation: Callable[[SessionManager], T]
) -> tuple[str, SessionManager, T]:
    """Run ``operation`` on an in-memory copy first (a rejected edit then never touches the file,
    not even with the migration or newline repair that opening does), then on the file itself."""
    path = sessions.resolve(args)
    operation(sessions.load(path, quiet=True))
    manager = SessionManager.open(path, sessions.session_dir(args), **_locking(args))
    try:
        result = operation(manager)
    except BaseException:
        manager.close()
        raise
    return path, manager, result


def _locking(args: argparse.Namespace) -> dict[str, Any]:
    """The editing commands' lock options: wait at most --lock-timeout, say so after a second."""

    def waiting(holder: str) -> None:
        write_out(f"pisession: waiting for the session lock held by {holder}\n", sys.stderr)

    return {"lock_timeout": args.lock_timeout, "on_lock_wait": waiting}


def _report_entry(args: argparse.Namespace, manager: SessionManager, entry_id: str, message: str) -> int:
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
    if args.summarize:
        return _navigate(args)
    if args.summary is None:
        raise CliError(
            "branch needs --summary TEXT or --summarize --summarizer-command CMD: Pi does not store "
            "the leaf in the file (it resumes at the last entry), so moving it alone would write "
            f"nothing. To look at that point use `pisession context SESSION --leaf {args.id}`; to "
            f"make it a session of its own, `pisession extract SESSION --leaf {args.id}`.",
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


def _navigate(args: argparse.Namespace) -> int:
    """Pi's /tree with a branch summary: the summarizer command is run once, on the session file
    itself (no trial run on a copy: a model call is not free); nothing is written if it fails."""
    from pisession.compaction import command_summarizer

    if args.summarizer_command is None:
        raise CliError("--summarize needs --summarizer-command CMD (the model that writes the summary)", 2)
    if args.summary is not None:
        raise CliError("--summary TEXT and --summarize are alternatives: give one", 2)
    path = sessions.resolve(args)
    if sessions.load(path, quiet=True).get_entry(args.id) is None:
        raise CliError(f"entry {args.id} not found")
    manager = SessionManager.open(path, sessions.session_dir(args), **_locking(args))
    try:
        navigation = manager.navigate_tree(
            args.id,
            summarize=command_summarizer(args.summarizer_command),
            custom_instructions=args.instructions,
            label=args.label,
        )
        summary = navigation.summary_entry
        if args.json:
            emit_json(
                {
                    "newLeafId": navigation.new_leaf_id,
                    "editorText": navigation.editor_text,
                    "summaryEntry": to_wire(summary) if summary is not None else None,
                }
            )
        elif summary is not None:
            emit(
                f"Branched to {args.id} with a summary of the path left behind (entry {summary.id}); "
                "Pi resumes the session there."
            )
        else:
            emit(f"Nothing to summarize: {args.id} is where the session already is; nothing written.")
        if navigation.editor_text:
            note(f"the target's text, for the editor: {navigation.editor_text}")
    finally:
        manager.close()
    return 0


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


def _compaction_settings(args: argparse.Namespace) -> CompactionSettings:
    from pisession.compaction import DEFAULT_COMPACTION_SETTINGS

    settings = DEFAULT_COMPACTION_SETTINGS
    if args.keep_recent_tokens is not None:
        settings = attrs.evolve(settings, keep_recent_tokens=args.keep_recent_tokens)
    if args.reserve_tokens is not None:
        settings = attrs.evolve(settings, reserve_tokens=args.reserve_tokens)
    return settings


def cmd_compact(args: argparse.Namespace) -> int:
    from pisession.compaction import format_plan

    modes = [args.plan, args.summarizer_command is not None, args.summary is not None]
    if sum(modes) != 1:
        raise CliError(
            "compact takes one of --plan, --summarizer-command CMD, or --summary TEXT --keep-from ID", 2
        )
    if args.plan:
        plan = sessions.load(sessions.resolve(args), quiet=True).plan_compaction(_compaction_settings(args))
        if args.json:
            emit_json(_plan_data(plan))
        else:
            emit(format_plan(plan))
        return 0
    if args.summarizer_command is not None:
        return _compact_with_model(args)
    if args.keep_from is None:
        raise CliError("--summary TEXT needs --keep-from ID (the first entry to keep)", 2)

    def operation(m: SessionManager) -> str:
        if not any(to_wire(e).get("id") == args.keep_from for e in m.get_branch()):
            if m.get_entry(args.keep_from) is None:
                raise CliError(f"entry {args.keep_from} not found")
            raise CliError(
                f"entry {args.keep_from} is not on the active branch: a compaction keeping it "
                "would keep nothing"
            )
        tokens = args.tokens_before
        if tokens is None:
            tokens = context_data(m)["totals"]["approxTokens"]
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


def _plan_data(plan: CompactionPreparation | None) -> dict[str, Any] | None:
    from pisession.compaction import compute_file_lists

    if plan is None:
        return None
    read_files, modified_files = compute_file_lists(plan.file_ops)
    return {
        "firstKeptEntryId": plan.first_kept_entry_id,
        "tokensBefore": plan.tokens_before,
        "isSplitTurn": plan.is_split_turn,
        "messagesToSummarize": len(plan.messages_to_summarize),
        "turnPrefixMessages": len(plan.turn_prefix_messages),
        "previousSummary": plan.previous_summary,
        "readFiles": list(read_files),
        "modifiedFiles": list(modified_files),
        "settings": plan.settings.to_wire(),
    }


def _compact_with_model(args: argparse.Namespace) -> int:
    """Pi's /compact: where to cut and what to ask are Pi's; the summarizer command is run once
    per request on the session file itself, and nothing is written if it fails."""
    from pisession.compaction import command_summarizer

    if args.keep_from is not None or args.tokens_before is not None:
        raise CliError("--keep-from and --tokens-before go with --summary: the cut is Pi's here", 2)
    path = sessions.resolve(args)
    manager = SessionManager.open(path, sessions.session_dir(args), **_locking(args))
    try:
        entry = manager.compact(
            command_summarizer(args.summarizer_command),
            settings=_compaction_settings(args),
            custom_instructions=args.instructions,
            thinking_level=args.thinking,
        )
    except BaseException:
        manager.close()
        raise
    return _report_entry(
        args,
        manager,
        entry.id,
        f"Compacted (entry {entry.id}): the model context now starts with the summary, then "
        f"{entry.first_kept_entry_id} onwards ({entry.tokens_before} tokens before).",
    )


def cmd_fork(args: argparse.Namespace) -> int:
    source = sessions.resolve(args)
    read_session_entries(source)  # a clear error for a non-session, before fork_from reads it
    target = os.path.abspath(os.path.expanduser(args.cwd))
    manager = SessionManager.fork_from(source, target, sessions.session_dir(args), **_locking(args))
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
            raise CliError(f"entry {args.leaf} not found")
        if not _has_conversation(to_wire(e) for e in m.get_branch(args.leaf)):
            raise CliError(
                f"the path to {args.leaf} holds no user or assistant message; Pi would not write "
                "such a session, so nothing was extracted"
            )
        return m.create_branched_session(args.leaf)

    _, manager, new_path = _edit(args, operation)
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
            manager = SessionManager.open(path, sessions.session_dir(args), **_locking(args))
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


def _summarizer_options(sub: argparse.ArgumentParser) -> None:
    sub.add_argument(
        "--summarizer-command",
        metavar="CMD",
        help="shell command that writes a summary: the prompt on stdin, the system prompt in "
        "$PISESSION_SYSTEM_PROMPT, the summary on stdout",
    )
    sub.add_argument(
        "--instructions", metavar="TEXT", help="extra focus for the summary (Pi's custom instructions)"
    )


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
        "branch",
        cmd_branch,
        "branch from an entry with a summary",
        "Write a branch_summary entry whose parent is ID: Pi then resumes the session at ID with a "
        "summary of the path left behind, given as --summary TEXT, or written by a model as Pi's "
        "/tree does (--summarize --summarizer-command CMD: Pi's prompt on CMD's stdin, its stdout "
        "the summary). A summary is required: Pi does not store the leaf in the file, so branching "
        "without one would write nothing. Python: manager.branch_with_summary(ID, TEXT), "
        "manager.navigate_tree(ID, summarize=command_summarizer(CMD)).",
        [where, as_entry],
    )
    sub.add_argument("id", metavar="ID", help="entry id")
    sub.add_argument("--summary", metavar="TEXT", help="summary of the path being left")
    sub.add_argument(
        "--summarize",
        action="store_true",
        help="as Pi's /tree: have --summarizer-command summarize the path being left (Pi's prompt)",
    )
    _summarizer_options(sub)
    sub.add_argument("--label", metavar="TEXT", help="with --summarize: label the target, as Pi's /tree can")
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
        "compact",
        cmd_compact,
        "append a compaction",
        "Compact as Pi's /compact does: --plan prints where Pi would cut (first kept entry, tokens "
        "before and kept, split turn, files) without writing; --summarizer-command CMD runs CMD "
        "once per summarization request (Pi's prompt on stdin, the system prompt in "
        "$PISESSION_SYSTEM_PROMPT, its stdout the summary) and appends the compaction Pi would. "
        "Or give the summary yourself: --summary TEXT --keep-from ID. Python: "
        "manager.plan_compaction(), manager.compact(command_summarizer(CMD)), "
        "manager.append_compaction(TEXT, ID, N).",
        [where, as_entry],
    )
    sub.add_argument("--plan", action="store_true", help="print Pi's cut and write nothing")
    _summarizer_options(sub)
    sub.add_argument("--thinking", metavar="LEVEL", help="the thinking level asked of the summarizer")
    sub.add_argument(
        "--keep-recent-tokens", metavar="N", type=int, help="Pi's keepRecentTokens (default 20000)"
    )
    sub.add_argument("--reserve-tokens", metavar="N", type=int, help="Pi's reserveTokens (default 16384)")
    sub.add_argument("--summary", metavar="TEXT", help="what the compacted history held")
    sub.add_argument("--keep-from", metavar="ID", help="with --summary: first entry to keep")
    sub.add_argument(
        "--tokens-before",
        metavar="N",
        type=int,
        help="with --summary: context size before compaction (default: Pi's estimate)",
    )
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
