"""``pisession dataset``: the sessions as a Parquet folder (:mod:`pisession.dataset`, which needs
pyarrow and is imported only when this command runs)."""

from __future__ import annotations

import argparse
import os
import sys

from . import sessions
from .commands import Commands
from .output import CliError, emit, emit_json, note, progress_line, write_out

# typing for type checkers only (they take TYPE_CHECKING for true)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import TextIO


def _progress(stream: TextIO) -> Callable[[int, int], None] | None:
    """A progress line on a terminal while a long export runs (nothing when piped)."""
    return progress_line(stream, "pisession: dataset: {done}/{total} sessions", after=0.5, every=0.1)


def cmd_dataset(args: argparse.Namespace) -> int:
    try:
        from pisession.dataset import write_parquet
    except ImportError as error:
        raise CliError(
            f'`pisession dataset` needs pyarrow ({error.name or "pyarrow"} is not installed): '
            'pip install "pisession[data]"'
        ) from None
    cwd = os.path.abspath(os.path.expanduser(args.cwd)) if args.cwd else None
    if cwd is not None and not os.path.isdir(cwd):
        raise CliError(f"no such folder: {args.cwd}", 2)
    report = write_parquet(
        os.path.expanduser(args.out_dir),
        cwd=cwd,
        session_dir=sessions.session_dir(args),
        full=args.full,
        on_progress=_progress(sys.stderr),
        workers=None,  # worker processes once there are many sessions to write
    )
    for skipped in report.skipped:
        note(f"skipped {skipped.path}: {skipped.reason}")
    if args.json:
        emit_json(
            {
                "outDir": report.out_dir,
                "sessions": report.sessions,
                "written": report.written,
                "unchanged": report.unchanged,
                "removed": report.removed,
                "filesWritten": report.files_written,
                "skipped": [{"path": s.path, "reason": s.reason} for s in report.skipped],
            }
        )
        return 0
    emit(
        f"{report.out_dir}: {report.sessions} sessions, {report.written} written "
        f"({report.files_written} files), {report.unchanged} unchanged, {report.removed} removed"
        + (f", {len(report.skipped)} skipped" if report.skipped else "")
    )
    if report.sessions == 0 and not report.removed:
        write_out("pisession: no sessions found (see --cwd, --session-dir)\n", sys.stderr)
    return 0


def register(commands: Commands) -> None:
    sub = commands.add(
        "dataset",
        cmd_dataset,
        "write the sessions as Parquet tables for DuckDB, Polars, Spark",
        "Write every project's sessions (or --cwd's) as five Parquet tables: sessions, entries, "
        "messages, tool_calls, usage, laid out OUT_DIR/<table>/project=<session cwd, escaped>/<session "
        "id>.parquet. Run it again to bring the folder up to date: only the sessions that changed "
        "are written again, and the files of deleted sessions are removed. Needs pyarrow "
        '(pip install "pisession[data]"). Python: pisession.dataset.write_parquet(OUT_DIR).',
        [commands.where, commands.as_json],
        session=False,
    )
    sub.add_argument("out_dir", metavar="OUT_DIR", help="new, empty, or an earlier export")
    sub.add_argument("--cwd", metavar="DIR", help="only the sessions of DIR (default: every project's)")
    sub.add_argument("--full", action="store_true", help="write every session again, changed or not")
