"""Commands that write a summary: ``branch`` (Pi's ``/tree`` with a branch summary) and
``compact`` (Pi's ``/compact``), with the summary given or written by a summarizer command
(:func:`pisession.compaction.command_summarizer`)."""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from typing import Any

import attrs

from pisession import SessionManager, to_wire
from pisession.compaction import (
    AlreadyCompactedError,
    CompactionPreparation,
    CompactionSettings,
    NothingToCompactError,
    command_summarizer,
    compute_file_lists,
    format_plan,
)
from pisession.views import context_data

from . import sessions
from .commands import Commands
from .editing import edit_session, lock_options, report_entry
from .output import CliError, emit, emit_json, note

# typing for type checkers only (they take TYPE_CHECKING for true)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pisession.settings import PiSettings


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
    _, manager, entry_id = edit_session(args, lambda m: m.branch_with_summary(args.id, args.summary))
    return report_entry(
        args,
        manager,
        entry_id,
        f"Branched from {args.id} with a summary of the path left behind (entry {entry_id}); "
        "Pi resumes the session there.",
    )


def _navigate(args: argparse.Namespace) -> int:
    """Pi's /tree with a branch summary: the summarizer command is run once, on the session file
    itself (no trial run on a copy: a model call is not free); nothing is written if it fails."""

    if args.summary is not None:
        raise CliError("--summary TEXT and --summarize are alternatives: give one", 2)
    _check_model_flags(args)
    path = sessions.resolve(args)
    if sessions.load(path, quiet=True).get_entry(args.id) is None:
        raise CliError(f"entry {args.id} not found in {path}")
    if args.dry_run:
        return _dry_run_branch(args, path)
    manager = SessionManager.open(path, sessions.session_dir(args), **lock_options(args))
    try:
        reserve_tokens = args.reserve_tokens
        if reserve_tokens is None:
            reserve_tokens = _user_settings(args, manager).branch_summary_reserve_tokens
        context_window = 128000
        summarizer: Any
        if args.summarizer_command is not None:
            summarizer = command_summarizer(args.summarizer_command)
        else:
            pi = _pi_summarizer(args, manager)
            summarizer, context_window = pi, pi.model.context_window
        navigation = manager.navigate_tree(
            args.id,
            summarize=summarizer,
            custom_instructions=args.instructions,
            label=args.label,
            reserve_tokens=reserve_tokens,
            context_window=context_window,
        )
        _end_progress()
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


def _user_settings(args: argparse.Namespace, manager: SessionManager) -> PiSettings:
    """The settings Pi's runtime uses for this session: those of the session's own folder (its
    header's cwd), not of the folder the command runs in, and its project file only when Pi
    trusts that folder."""
    from pisession.settings import PiSettings, is_project_trusted

    folder = manager.get_cwd()
    settings = PiSettings.load(folder, project_trusted=is_project_trusted(folder))
    sessions.warn_settings_errors(args, settings.errors)
    return settings


def _compaction_settings(args: argparse.Namespace, manager: SessionManager) -> CompactionSettings:
    """The user's compaction settings for the session's model, the flags overriding them."""
    from pisession.settings import session_model

    settings = _user_settings(args, manager)
    chosen = settings.compaction_settings(session_model(manager, settings))
    if args.keep_recent_tokens is not None:
        chosen = attrs.evolve(chosen, keep_recent_tokens=args.keep_recent_tokens)
    if args.reserve_tokens is not None:
        chosen = attrs.evolve(chosen, reserve_tokens=args.reserve_tokens)
    return chosen


def cmd_compact(args: argparse.Namespace) -> int:

    modes = [args.plan, args.summarizer_command is not None, args.summary is not None, args.dry_run]
    if sum(modes) > 1:
        raise CliError(
            "compact takes one of --plan, --dry-run, --summarizer-command CMD, or --summary TEXT "
            "--keep-from ID (none: the model Pi would use)",
            2,
        )
    if args.plan:
        session = sessions.load(sessions.resolve(args), quiet=True)
        try:
            plan = session.plan_compaction(_compaction_settings(args, session), raise_if_nothing=True)
        except (NothingToCompactError, AlreadyCompactedError) as nothing:
            plan, why = None, str(nothing)  # Pi's words for why /compact would do nothing
        if args.json:
            emit_json(_plan_data(plan))
        else:
            emit(format_plan(plan) if plan is not None else why)
        return 0
    if args.summary is None:
        return _compact_with_model(args)
    if args.keep_from is None:
        raise CliError("--summary TEXT needs --keep-from ID (the first entry to keep)", 2)

    def operation(m: SessionManager) -> str:
        if not any(to_wire(e).get("id") == args.keep_from for e in m.get_branch()):
            if m.get_entry(args.keep_from) is None:
                raise CliError(f"entry {args.keep_from} not found in {m._where()}")
            raise CliError(
                f"entry {args.keep_from} is not on the active branch: a compaction keeping it "
                "would keep nothing"
            )
        tokens = args.tokens_before
        if tokens is None:
            tokens = context_data(m)["totals"]["approxTokens"]
        return m.append_compaction(args.summary, args.keep_from, tokens)

    _, manager, entry_id = edit_session(args, operation)
    entry = manager.get_entry(entry_id)
    tokens = getattr(entry, "tokens_before", "?")
    return report_entry(
        args,
        manager,
        entry_id,
        f"Compacted (entry {entry_id}): the model context now starts with the summary, "
        f"then {args.keep_from} onwards ({tokens} tokens before).",
    )


def _plan_data(plan: CompactionPreparation | None) -> dict[str, Any] | None:

    if plan is None:
        return None
    read_files, modified_files = compute_file_lists(plan.file_ops)
    return {
        "firstKeptEntryId": plan.first_kept_entry_id,
        "tokensBefore": plan.tokens_before_wire,  # as the entry would be written
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

    if args.keep_from is not None or args.tokens_before is not None:
        raise CliError("--keep-from and --tokens-before go with --summary: the cut is Pi's here", 2)
    _check_model_flags(args)
    path = sessions.resolve(args)
    if args.dry_run:
        return _dry_run_compact(args, path)
    manager = SessionManager.open(path, sessions.session_dir(args), **lock_options(args))
    try:
        if args.summarizer_command is not None:
            entry = manager.compact(
                command_summarizer(args.summarizer_command),
                settings=_compaction_settings(args, manager),
                custom_instructions=args.instructions,
                thinking_level=args.thinking,
            )
        else:
            summarizer = _pi_summarizer(args, manager)
            entry = manager.compact(
                summarizer,
                settings=_flag_settings(args, summarizer.compaction_settings()),
                custom_instructions=args.instructions,
            )
            _end_progress()
    except BaseException:
        _end_progress()
        manager.close()
        raise
    return report_entry(
        args,
        manager,
        entry.id,
        f"Compacted (entry {entry.id}): the model context now starts with the summary, then "
        f"{entry.first_kept_entry_id} onwards ({entry.tokens_before} tokens before).",
    )


def _check_model_flags(args: argparse.Namespace) -> None:
    if args.summarizer_command is not None and (args.model is not None or args.dry_run):
        raise CliError("--model and --dry-run are for the model Pi would use, not --summarizer-command", 2)


def _flag_settings(args: argparse.Namespace, chosen: CompactionSettings) -> CompactionSettings:
    if getattr(args, "keep_recent_tokens", None) is not None:
        chosen = attrs.evolve(chosen, keep_recent_tokens=args.keep_recent_tokens)
    if getattr(args, "reserve_tokens", None) is not None:
        chosen = attrs.evolve(chosen, reserve_tokens=args.reserve_tokens)
    return chosen


_progress_shown = False


def _progress(request: Any, received: int) -> None:
    global _progress_shown
    if sys.stderr.isatty():
        _progress_shown = True
        sys.stderr.write(f"\rpisession: summarizing ({request.kind}): {received} characters")
        sys.stderr.flush()


def _end_progress() -> None:
    global _progress_shown
    if _progress_shown:
        sys.stderr.write("\n")
        _progress_shown = False


def _pi_summarizer(args: argparse.Namespace, manager: SessionManager) -> Any:
    """The model, thinking level and credentials Pi would summarize this session with."""
    from pisession.llm import PiSummarizer

    summarizer = PiSummarizer.for_session(manager, args.model, args.thinking, progress=_progress)
    if summarizer.registry.error:
        note(f"Warning: errors loading models.json (ignored, as Pi ignores it): {summarizer.registry.error}")
    if summarizer.choice.warning:
        note(f"Warning: {summarizer.choice.warning}")
    sessions.warn_settings_errors(args, summarizer.settings.errors if summarizer.settings else ())
    if not args.json:
        note(f"summarizing with {summarizer.model.key} (thinking {summarizer.thinking_level})")
    return summarizer


class _Stop(Exception):
    pass


def _record(requests: list[Any], stop_after: int) -> Any:
    def summarize(request: Any) -> str:
        requests.append(request)
        if len(requests) >= stop_after:
            raise _Stop
        return "(dry run)"

    return summarize


def _show_dry_run(args: argparse.Namespace, summarizer: Any, requests: list[Any]) -> int:
    runs = [summarizer.dry_run(request) for request in requests]
    if args.json:
        emit_json(
            [
                {
                    "kind": request.kind,
                    "model": run.model,
                    "thinkingLevel": run.thinking_level,
                    "url": run.url,
                    "maxTokens": run.max_tokens,
                    "estimatedInputTokens": run.input_tokens,
                    "estimatedInputCost": run.input_cost,
                    "headers": dict(run.headers),
                    "body": run.body,
                }
                for request, run in zip(requests, runs, strict=True)
            ]
        )
        return 0
    for request, run in zip(requests, runs, strict=True):
        emit(f"request: {request.kind} (dry run: nothing sent, nothing written)")
        emit(f"model: {run.model} (thinking {run.thinking_level})")
        emit(f"endpoint: POST {run.url}")
        emit(f"output cap: {run.max_tokens} tokens")
        emit(f"estimated input: {run.input_tokens} tokens, ${run.input_cost:.6f}")
        emit("body:")
        emit(json.dumps(run.body, ensure_ascii=False, indent=2))
    return 0


def _dry_run_compact(args: argparse.Namespace, path: str) -> int:
    session = sessions.load(path, quiet=True)
    summarizer = _pi_summarizer(args, session)
    settings = _flag_settings(args, summarizer.compaction_settings())
    plan = session.plan_compaction(settings, raise_if_nothing=True)
    assert plan is not None
    expected = 1
    if plan.is_split_turn and plan.turn_prefix_messages:
        expected = 2 if plan.messages_to_summarize else 1
    requests: list[Any] = []
    with contextlib.suppress(_Stop):
        session.compact(_record(requests, expected), settings=settings, custom_instructions=args.instructions)
    return _show_dry_run(args, summarizer, requests)


def _dry_run_branch(args: argparse.Namespace, path: str) -> int:
    session = sessions.load(path, quiet=True)
    summarizer = _pi_summarizer(args, session)
    reserve_tokens = args.reserve_tokens
    if reserve_tokens is None:
        reserve_tokens = summarizer.branch_summary_reserve_tokens()
    requests: list[Any] = []
    with contextlib.suppress(_Stop):
        session.navigate_tree(
            args.id,
            summarize=_record(requests, 1),
            custom_instructions=args.instructions,
            label=args.label,
            reserve_tokens=reserve_tokens,
            context_window=summarizer.model.context_window,
        )
    if not requests:
        emit("Nothing to summarize: no request would be sent.")
        return 0
    return _show_dry_run(args, summarizer, requests)


def _model_options(sub: argparse.ArgumentParser, thinking: bool = True) -> None:
    sub.add_argument(
        "--model",
        metavar="PROVIDER/ID",
        help="the model to summarize with, as Pi's --model (default: the session's, as Pi picks it)",
    )
    if thinking:
        sub.add_argument(
            "--thinking",
            metavar="LEVEL",
            help="thinking level: off, minimal, low, medium, high, xhigh (default: the session's)",
        )
    sub.add_argument(
        "--dry-run",
        action="store_true",
        help="print the model, endpoint, output cap, estimated input tokens and cost, and the request "
        "body; send nothing, write nothing",
    )


def _tokens(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"not a number of tokens: {text!r}")
    return value


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
    sub = commands.add(
        "branch",
        cmd_branch,
        "branch from an entry with a summary",
        "Write a branch_summary entry whose parent is ID: Pi then resumes the session at ID with a "
        "summary of the path left behind, given as --summary TEXT, or written by a model as Pi's "
        "/tree does: --summarize alone calls the model Pi would use for the session (its model, "
        "thinking level and credentials; --model, --thinking override; --dry-run shows the request "
        "and sends nothing), --summarize --summarizer-command CMD runs CMD instead (Pi's prompt on "
        "CMD's stdin, its stdout the summary). A summary is required: Pi does not store the "
        "leaf in the file, so branching "
        "without one would write nothing. --summarize uses the user's Pi settings "
        "(branchSummary.reserveTokens) of the session's own folder. Python: "
        "manager.branch_with_summary(ID, TEXT), manager.navigate_tree(ID, "
        "summarize=command_summarizer(CMD), reserve_tokens=settings.branch_summary_reserve_tokens).",
        [commands.where, commands.as_entry],
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
    _model_options(sub)
    sub.add_argument(
        "--reserve-tokens",
        metavar="N",
        type=_tokens,
        help="with --summarize: Pi's branchSummary.reserveTokens (default: the user's Pi settings, "
        "else 16384)",
    )
    sub = commands.add(
        "compact",
        cmd_compact,
        "append a compaction",
        "Compact as Pi's /compact does: --plan prints where Pi would cut (first kept entry, tokens "
        "before and kept, split turn, files) without writing; with no summarizer given it calls "
        "the model Pi would use for the session, with the request Pi would send (--model, "
        "--thinking override as Pi's flags; --dry-run prints the model, endpoint, output cap, "
        "estimated input tokens and cost, and the body, and sends nothing); "
        "--summarizer-command CMD runs CMD "
        "once per summarization request (Pi's prompt on stdin, the system prompt in "
        "$PISESSION_SYSTEM_PROMPT, its stdout the summary) and appends the compaction Pi would. "
        "Or give the summary yourself: --summary TEXT --keep-from ID. The cut uses the user's Pi "
        "settings (compaction.keepRecentTokens and reserveTokens, per-model overrides for the "
        "session's model) of the session's own folder, as Pi's /compact does; the flags override "
        "them. Python: manager.plan_compaction(PiSettings.load(cwd).compaction_settings(model)), "
        "manager.compact(command_summarizer(CMD), settings=...), "
        "manager.append_compaction(TEXT, ID, N), manager.compact(PiSummarizer.for_session(manager)).",
        [commands.where, commands.as_entry],
    )
    sub.add_argument("--plan", action="store_true", help="print Pi's cut and write nothing")
    _summarizer_options(sub)
    _model_options(sub)
    sub.add_argument(
        "--keep-recent-tokens",
        metavar="N",
        type=_tokens,
        help="Pi's compaction.keepRecentTokens (default: the user's Pi settings, else 20000)",
    )
    sub.add_argument(
        "--reserve-tokens",
        metavar="N",
        type=_tokens,
        help="Pi's compaction.reserveTokens (default: the user's Pi settings, else 16384)",
    )
    sub.add_argument("--summary", metavar="TEXT", help="what the compacted history held")
    sub.add_argument("--keep-from", metavar="ID", help="with --summary: first entry to keep")
    sub.add_argument(
        "--tokens-before",
        metavar="N",
        type=int,
        help="with --summary: context size before compaction (default: Pi's estimate)",
    )
