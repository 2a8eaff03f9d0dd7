"""``pisession usage``: usage and cost across sessions, as a table or ccusage's JSON
(:func:`pisession.usage.usage_report`)."""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, TextIO

from pisession import UsageQueryError

from .commands import Commands
from .output import CliError, emit, emit_json, note, progress_line, terminal_columns

if TYPE_CHECKING:
    from pisession.usage import ModelUsage, ReportRow, ReportTotals, UsageReport

_HEADINGS = {
    "daily": "Date",
    "weekly": "Week of",
    "monthly": "Month",
    "session": "Session",
    "project": "Project",
}
_NUMBERS = ("Input", "Output", "C.write", "C.read", "Total")
_NUMBER_WIDTH = 7
_COST_WIDTH = 9  # $9,999.99, $999,999, $999.99M: see _dollars
_PROGRESS_AFTER = 1.0  # seconds: a first build shows its progress, a warm report never does


def _tokens(value: float) -> str:
    """A token count in at most seven characters: 999,999 then 12.35M, 1.23B."""
    if value != value:
        return "NaN"
    if value in (math.inf, -math.inf):
        return "-Inf" if value < 0 else "Inf"
    if abs(value) < 1_000_000:
        return f"{round(value):,}"
    for size, unit in ((1e12, "T"), (1e9, "B"), (1e6, "M")):
        if abs(value) >= size:
            return f"{value / size:.2f}{unit}"
    return str(value)  # unreachable


def _dollars(value: float) -> str:
    """Dollars in at most nine characters: $9,999.99, then whole dollars ($999,999), then $12.35M,
    $1.23B, $1.23T (the JSON keeps the exact figure)."""
    if value != value or value in (math.inf, -math.inf):
        return _tokens(value)
    size = abs(value)
    if size < 9_999.995:
        return f"${value:,.2f}"
    if size < 999_999.5:
        return f"${value:,.0f}"
    for unit_size, unit in ((1e6, "M"), (1e9, "B")):
        if size < unit_size * 999.995:  # else it would round to 1000.00 of this unit
            return f"${value / unit_size:.2f}{unit}"
    return f"${value / 1e12:.2f}T"


def _cut(text: str, room: int, *, keep_end: bool) -> str:
    if len(text) <= room:
        return text
    return "…" + text[len(text) - room + 1 :] if keep_end else text[: room - 1] + "…"


def _cells(totals: ReportTotals | ModelUsage, cost: float) -> list[str]:
    return [
        _tokens(totals.input_tokens),
        _tokens(totals.output_tokens),
        _tokens(totals.cache_creation_tokens),
        _tokens(totals.cache_read_tokens),
        _tokens(totals.total_tokens),
        _dollars(cost),
    ]


def _label(report: UsageReport, row: ReportRow) -> str:
    if report.group_by == "session":
        day = (row.last_activity or "")[:10]
        return f"{(row.session_id or '?')[:13]} {day}".rstrip()  # a UUIDv7's time: unique, a usable prefix
    if row.project_path is not None and report.group_by != "project":  # --instances
        return f"{row.key} {row.project_path}"
    return row.key


def format_table(report: UsageReport, *, breakdown: bool = False, columns: int = 80) -> list[str]:
    """The report as aligned lines no wider than ``columns`` (at least 60): one per row, a
    totals row, and with ``breakdown`` one line per model under each row."""
    numbers_width = len(_NUMBERS) * (_NUMBER_WIDTH + 2) + 2 + _COST_WIDTH
    # a path keeps its end (the project's name), a model name its start (provider and family)
    keep_end = report.group_by == "project" or any(row.project_path is not None for row in report.rows)
    lines_in: list[tuple[str, list[str], bool]] = []
    for row in report.rows:
        lines_in.append((_label(report, row), _cells(row.totals, row.total_cost), keep_end))
        if breakdown:
            for model in row.models:
                name = model.model_name if model.kind is None else f"{model.model_name} [{model.kind}]"
                lines_in.append(("  " + name, _cells(model, model.cost), False))
    total = ("Total", _cells(report.totals, report.totals.total_cost), False)
    key_width = max(len(_HEADINGS[report.group_by]), *(len(label) for label, _, _ in [*lines_in, total]))
    key_width = max(12, min(key_width, max(60, columns) - numbers_width))

    def line(label: str, cells: list[str], keep_end: bool = False) -> str:
        numbers = "".join(f"  {cell:>{_NUMBER_WIDTH}}" for cell in cells[:-1])
        cut = _cut(label, key_width, keep_end=keep_end)
        return f"{cut:<{key_width}}{numbers}  {cells[-1]:>{_COST_WIDTH}}".rstrip()

    heading = line(_HEADINGS[report.group_by], [*_NUMBERS, "Cost"])
    rule = "-" * len(heading)
    out = [heading, rule]
    for label, cells, keep in lines_in:
        if breakdown and label.startswith("  ") and len(label) > key_width:
            out.append(label)  # a long model name on its own line, its figures under it
            label = ""
        out.append(line(label, cells, keep))
    out.extend([rule, line(*total)])
    return out


def _progress(stream: TextIO) -> Callable[[int, int], None] | None:
    """A progress line on a terminal, once reading the files has taken more than a second."""
    return progress_line(stream, "pisession: reading sessions {done}/{total}", after=_PROGRESS_AFTER)


def _searched(cwd: str | None, session_dir: str | None) -> str:
    """The sessions a report read, in words, for "nothing found"."""
    from pisession import default_session_dir

    root = session_dir or os.path.dirname(default_session_dir(os.getcwd()))
    return f"the sessions of {cwd} ({root})" if cwd else f"every project's sessions ({root})"


def cmd_usage(args: argparse.Namespace) -> int:
    from pisession.usage import usage_report

    from . import sessions

    # the project's own settings choose the folder, as Pi started in that project would read them
    project = os.path.abspath(os.path.expanduser(args.cwd)) if args.cwd else None
    session_dir = sessions.session_dir(args, cwd=project)
    since = args.since
    for flag, value in (("--last", args.last), ("--this-month", "this-month" if args.this_month else None)):
        if value is not None:
            if since is not None:
                raise CliError(f"{flag} and --since, --last or --this-month name the same thing: give one", 2)
            since = value
    merge: dict[str, str] = {}
    for pair in args.merge_model or ():
        source, equals, target = pair.partition("=")
        if not equals or not source or not target:
            raise CliError(f"--merge-model takes FROM=TO (two model names), not {pair!r}", 2)
        merge[source] = target
    try:
        report = usage_report(
            args.group_by,
            cwd=args.cwd,
            since=since,
            until=args.until,
            timezone=args.timezone,
            session_dir=session_dir,
            on_progress=_progress(sys.stderr),
            by_project=args.instances,
            merge_models=merge,
            by_kind=args.by_kind,
        )
    except UsageQueryError as error:
        raise CliError(str(error), 2) from None
    if report.catalog_error:
        note(f"session catalog not used ({report.catalog_error}); read the session files instead")
    for skipped in report.skipped:
        note(f"not counted: {skipped.path}: {skipped.reason}")
    if args.json:
        emit_json(report.to_wire())
        return 0
    if not report.rows:
        emit(
            "No usage recorded"
            + (" in that period" if since or args.until else "")
            + f" in {_searched(args.cwd, session_dir)}."
        )
        return 0
    # piped or redirected: whole paths and model names, never cut with "…" (unless $COLUMNS asks)
    columns = terminal_columns(80) if _stdout_is_terminal() or os.environ.get("COLUMNS") else _UNCUT
    for text in format_table(report, breakdown=args.breakdown or args.by_kind, columns=columns):
        emit(text)
    return 0


_UNCUT = 1 << 20


def _stdout_is_terminal() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


def register(commands: Commands) -> None:
    sub = commands.add(
        "usage",
        cmd_usage,
        "usage and cost per day, week, month, session or project",
        "What every project's sessions spent (tokens and dollars), as Pi attributes it: assistant "
        "messages under provider/model, usage entries, and tool-result, compaction and branch-summary "
        "usage under Tools/summaries; every branch counts, and what a fork or branched session copied "
        "from its parent counts once, in the parent. Read through the session catalog "
        "($PISESSION_CATALOG), so a repeated report reads only what changed. --json prints ccusage's "
        "JSON shape. Python: pisession.usage.usage_report('daily').",
        [commands.where, commands.as_json],
        session=False,
    )
    sub.add_argument(
        "group_by",
        metavar="GROUPING",
        nargs="?",
        default="daily",
        choices=("daily", "weekly", "monthly", "session", "project"),
        help="daily (default), weekly, monthly, session or project",
    )
    sub.add_argument("--cwd", metavar="DIR", help="only the sessions of project DIR")
    sub.add_argument(
        "--since",
        metavar="DATE",
        help="from this day on (YYYY-MM-DD or YYYYMMDD, inclusive), or a period ending today: "
        "7d, 2w, 3m, this-week, this-month, today",
    )
    sub.add_argument(
        "--last", metavar="PERIOD", help="the last PERIOD, today included (7d, 2w, 3m): --since PERIOD"
    )
    sub.add_argument("--this-month", action="store_true", help="this calendar month: --since this-month")
    sub.add_argument("--until", metavar="DATE", help="up to this day (YYYY-MM-DD, inclusive)")
    sub.add_argument("--timezone", metavar="TZ", help="IANA time zone of the days (default: the local zone)")
    sub.add_argument("--breakdown", action="store_true", help="one line per model under each row")
    sub.add_argument(
        "--instances",
        "--by-project",
        action="store_true",
        help="split each day, week or month by project (as ccusage's daily --instances)",
    )
    sub.add_argument(
        "--by-kind",
        action="store_true",
        help="split each model's line by the entries that spent it: message, compaction, "
        "branch_summary, usage (implies --breakdown; JSON: a kind in each modelBreakdowns item)",
    )
    sub.add_argument(
        "--merge-model",
        metavar="FROM=TO",
        action="append",
        help="count model FROM as TO (e.g. a dated responseModel under its model); repeatable",
    )
