"""Checking commands: ``stats`` (usage and cost) and ``validate`` (the damage report)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from . import sessions
from .commands import Commands
from .output import CliError, Style, cost_text, emit, emit_json, int_text, note

if TYPE_CHECKING:
    from pisession.stats import SessionStats, StatsTotals
    from pisession.validate import ValidationReport

_COLUMNS = ("calls", "input", "output", "cache read", "cache write", "tokens", "cost")


def _cells(usage: StatsTotals) -> list[str]:
    numbers = (usage.calls, usage.input, usage.output, usage.cache_read, usage.cache_write, usage.tokens)
    return [int_text(n) for n in numbers] + [cost_text(usage.cost)]


def print_stats(stats: SessionStats, style: Style) -> None:
    def table(title: str, rows: list[tuple[str, StatsTotals]]) -> None:
        name_width = max([len(title), *(len(name) for name, _ in rows)])
        cells = [_cells(usage) for _, usage in rows]
        widths = [max([len(t), *(len(c[i]) for c in cells)]) for i, t in enumerate(_COLUMNS)]
        head = "  ".join(f"{t:>{w}}" for t, w in zip(_COLUMNS, widths, strict=True))
        emit(style(f"{title:<{name_width}}  {head}", "bold"))
        for (name, _), cell in zip(rows, cells, strict=True):
            emit(
                f"{name:<{name_width}}  " + "  ".join(f"{c:>{w}}" for c, w in zip(cell, widths, strict=True))
            )

    counts = stats.messages
    emit(
        f"Session {stats.session_id}: {stats.entries:,} entries; {counts.user:,} user and "
        f"{counts.assistant:,} assistant messages, {counts.tool_calls:,} tool calls (all branches)"
    )
    if not stats.total.calls:
        emit("No usage recorded.")
        return
    emit()
    if stats.by_model:  # empty when every call used no tokens and cost nothing (an aborted request)
        table("model", [(r.name, r.usage) for r in stats.by_model])
        emit()
    table("source", [(r.name, r.usage) for r in stats.by_source] + [("total", stats.total)])
    emit(style("tokens = input + output + cache read + cache write, as Pi counts them", "dim"))


def cmd_stats(args: argparse.Namespace) -> int:
    from pisession.stats import session_stats

    stats = session_stats(sessions.load(sessions.resolve(args)))
    if args.json:
        emit_json(stats.to_wire())
    else:
        print_stats(stats, Style(sys.stdout))
    return 0


def _validate(args: argparse.Namespace, arg: str) -> list[ValidationReport]:
    from pisession.validate import Problem, ValidationReport, validate_file, validate_folder

    folder = os.path.expanduser(arg)
    if arg and os.path.isdir(folder):
        found = validate_folder(os.path.abspath(folder))
        if not found:  # said, so that checking the wrong folder does not read as a clean pass
            note(f"no session files (*.jsonl) in {folder}")
        return found
    try:
        path = sessions.resolve(args, arg)
    except CliError as error:
        return [ValidationReport(arg, (Problem("error", None, str(error)),))]
    return [validate_file(path)]


def print_reports(reports: list[ValidationReport], style: Style) -> None:
    for report in reports:
        errors = len(report.errors)
        warnings = len(report.problems) - errors
        if not report.problems:
            emit(
                f"{report.path}: "
                + style("OK", "green", "bold")
                + f" ({report.entries or 0:,} entries, version {report.version})"
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
        emit(f"{report.path}: " + style(summary, "red" if errors else "yellow", "bold"))
        for p in report.problems:
            where = f"line {p.line}: " if p.line is not None else ""
            severity = style(p.severity, "red" if p.severity == "error" else "yellow")
            emit(f"  {where}{severity}: {p.message}")


def cmd_validate(args: argparse.Namespace) -> int:
    reports = [report for arg in args.session for report in _validate(args, arg)]
    if args.json:
        emit_json([r.to_wire() for r in reports])
    else:
        print_reports(reports, Style(sys.stdout))
    return 0 if all(r.ok for r in reports) else 1


def register(commands: Commands) -> None:
    where, as_json = commands.where, commands.as_json
    commands.add(
        "stats",
        cmd_stats,
        "tokens and cost by model",
        "Tokens and cost from assistant messages, usage entries, compaction and branch-summary usage, on "
        "all branches, by model and by source. Python: pisession.stats.session_stats(manager).",
        [where, as_json],
    )
    sub = commands.add(
        "validate",
        cmd_validate,
        "check files for problems",
        "Report malformed lines (with line numbers), non-session files, duplicate ids, orphans, "
        "parentId cycles and dangling firstKeptEntryId / targetId. Exit 1 when there is an error "
        "(warnings alone exit 0). A folder checks each of its *.jsonl files. Never modifies a file. "
        "Python: pisession.validate.validate_file(path) / validate_folder(path).",
        [where, as_json],
        session=False,
    )
    sub.add_argument("session", metavar="SESSION", nargs="+", help="session files, ids or folders")
