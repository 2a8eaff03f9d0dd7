"""``pisession dataset``: the sessions as a Parquet folder (:mod:`pisession.dataset`, which needs
pyarrow and is imported only when this command runs)."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
import threading

from . import sessions
from .commands import Commands
from .output import CliError, emit, emit_json, note, progress_line, write_out

# typing for type checkers only (they take TYPE_CHECKING for true)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from types import FrameType
    from typing import TextIO


class _Terminated(BaseException):
    """SIGTERM while the export runs: unwinds it as Ctrl-C does (its workers stopped, its
    temporaries removed, its lock let go), where the default action would end this process
    alone and leave its workers writing."""


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise _Terminated


@contextlib.contextmanager
def _terminate_unwinds() -> Iterator[None]:
    # only where nobody else chose what SIGTERM does (a host program calling main())
    mine = threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGTERM) in (
        signal.SIG_DFL,
        None,
    )
    if mine:
        signal.signal(signal.SIGTERM, _terminate)
    try:
        yield
    finally:
        if mine:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)


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
    try:
        with _terminate_unwinds():
            report = write_parquet(
                os.path.expanduser(args.out_dir),
                cwd=cwd,
                session_dir=sessions.session_dir(args, cwd=cwd),
                full=args.full,
                on_progress=_progress(sys.stderr),
                workers=None,  # worker processes once there are many sessions to write
            )
    except _Terminated:
        raise CliError("terminated (SIGTERM): the next run goes on from what was written", 128 + 15) from None
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
        "messages, tool_calls, usage, laid out OUT_DIR/<table>/project=<session cwd, escaped>/, small "
        "sessions sharing bundle files, a large one in <session id>.parquet. Run it again to bring "
        "the folder up to date: only the sessions that changed are written again (their files or "
        "bundles), and the rows of deleted sessions are removed. Needs pyarrow "
        '(pip install "pisession[data]"). Python: pisession.dataset.write_parquet(OUT_DIR).',
        [commands.where, commands.as_json],
        session=False,
    )
    sub.add_argument("out_dir", metavar="OUT_DIR", help="new, empty, or an earlier export")
    sub.add_argument("--cwd", metavar="DIR", help="only the sessions of DIR (default: every project's)")
    sub.add_argument("--full", action="store_true", help="write every session again, changed or not")
