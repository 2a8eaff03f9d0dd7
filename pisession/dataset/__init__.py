"""Sessions as an analytics dataset: five Arrow tables with the tree's meaning in their columns,
in memory or as a Hive-partitioned Parquet folder that DuckDB, Polars and Spark read as it is.

Needs ``pyarrow`` (``pip install "pisession[data]"``)::

    from pisession.dataset import tables, write_parquet

    usage = tables(cwd="/work/project")["usage"]          # a pyarrow.Table
    report = write_parquet("sessions-data")                 # every project's sessions
    print(report.written, report.unchanged, report.removed)

Tables: ``sessions``, ``entries``, ``messages``, ``tool_calls``, ``usage`` (:data:`SCHEMAS`).
The folder is ``OUT/<table>/project=<the session's cwd, escaped>/<file>.parquet``: the small
sessions of a project share bundle files (``bundle-<12 hex>.parquet``), a large one has its own
(``<session id>.parquet``); writing it again reads only the sessions that changed since, writes
again only their files or bundles, and removes the rows of deleted ones.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable, Iterable

try:
    import pyarrow as pa
except ImportError as error:  # pragma: no cover - exercised in a venv without pyarrow
    raise ImportError(
        'pisession.dataset needs pyarrow: pip install "pisession[data]" (or pip install pyarrow)'
    ) from error

from .._errors import InvalidSessionError
from .._record import Record
from ._export import (
    MANIFEST,
    TABLES,
    DatasetError,
    Failed,
    batches,
    project_of,
    read_source,
    select_sources,
)
from ._exporter import Exporter
from ._rows import NotASession
from ._schema import PROJECT, SCHEMAS, string_array, to_table

__all__ = [
    "tables",
    "write_parquet",
    "DatasetReport",
    "SkippedSession",
    "DatasetError",
    "SCHEMAS",
    "TABLES",
    "MANIFEST",
]

ProgressCallback = Callable[[int, int], None]


# Read-only values without attrs, as the catalog's report is (pisession._record): importing attrs
# was 15 ms of every `pisession dataset`, and of a re-export's ~0.25 s.
class SkippedSession(Record):
    """A ``.jsonl`` file that gave no rows, and why (not a session, unreadable)."""

    path: str
    reason: str


class DatasetReport(Record):
    """What :func:`write_parquet` did: sessions found, written again, left as they were (their
    files already up to date), removed (their file is gone), files written, and files skipped."""

    out_dir: str
    sessions: int = 0
    written: int = 0
    unchanged: int = 0
    removed: int = 0
    files_written: int = 0
    skipped: tuple[SkippedSession, ...] = ()


def tables(
    *,
    cwd: str | os.PathLike[str] | None = None,
    session_dir: str | os.PathLike[str] | None = None,
    paths: Iterable[str | os.PathLike[str]] | None = None,
) -> dict[str, pa.Table]:
    """The five tables of some sessions, in memory (DuckDB and Polars query them directly)::

        import duckdb
        usage = tables(cwd="/work/project")["usage"]
        duckdb.sql("SELECT model_key, sum(cost) FROM usage WHERE counted GROUP BY ALL")

    Which sessions: ``paths`` (session files); else ``cwd``'s sessions (from ``session_dir``
    when given, keeping those whose header names ``cwd``, as Pi's ``list``); else every file of
    ``session_dir`` (or, when it holds project folders and no ``.jsonl`` of its own, every
    project's, as ``pisession ls --all`` reads it); else every project's sessions in Pi's
    sessions folder. Each table has its
    :data:`SCHEMAS` columns and then ``project`` (the session's working folder, its header's
    ``cwd``, as the Parquet folder's partition gives it; the ``sessions`` table's ``folder`` is
    the name of the folder holding the file). A discovered file that is not a session is left out; one
    named in ``paths`` raises :class:`~pisession.InvalidSessionError` (``OSError`` if unreadable).
    """
    explicit = None if paths is None else [os.fspath(p) for p in paths]
    sources, scope = select_sources(cwd, session_dir, explicit)
    parts: dict[str, list[pa.Table]] = {t: [] for t in TABLES}
    projects: dict[str, list[str]] = {t: [] for t in TABLES}
    for source in sources:
        try:
            session = read_source(source)
        except NotASession as error:
            if explicit is not None:
                raise InvalidSessionError(f"{source.path} is not a Pi session (no session header)") from error
            continue
        except OSError:
            if explicit is not None:
                raise
            continue
        if not scope.selects(session.cwd):
            continue
        for table in TABLES:
            parts[table].append(to_table(table, session.columns[table]))
            projects[table].append(project_of(session.cwd, source.folder))
    out: dict[str, pa.Table] = {}
    for table in TABLES:
        schema = SCHEMAS[table].append(PROJECT)
        if not parts[table]:
            out[table] = schema.empty_table()
            continue
        combined = pa.concat_tables(parts[table])
        column = string_array(  # a cwd's lone surrogate as U+FFFD, as in its own column
            [p for part, p in zip(parts[table], projects[table], strict=True) for _ in range(part.num_rows)]
        )
        out[table] = combined.append_column(PROJECT, column)
    return out


def write_parquet(
    out_dir: str | os.PathLike[str],
    *,
    cwd: str | os.PathLike[str] | None = None,
    session_dir: str | os.PathLike[str] | None = None,
    full: bool = False,
    on_progress: ProgressCallback | None = None,
    workers: int | None = 1,
) -> DatasetReport:
    """Write (or bring up to date) the Parquet folder ``out_dir``::

        report = write_parquet("sessions-data")
        # SELECT sum(cost) FROM read_parquet('sessions-data/usage/**/*.parquet',
        #     hive_partitioning = true, hive_types = {'project': VARCHAR})

    Sessions as :func:`tables` selects them (every project by default). Only the sessions whose
    file changed since the last run are read (``full=True``: all of them); the rows of
    sessions that were deleted are removed (their files, or their bundle written again without
    them). Each file is written under a hidden temporary name
    and renamed into place. ``on_progress(done, total)`` is called as sessions are handled.
    ``workers``: processes that read and write sessions side by side, each holding one bundle
    (at most 512 KB of session files) or one large session at a time (default 1: all in this
    process; ``None``: up to the number of CPUs, at most 4, once there are 32 sessions or more
    to write, as ``pisession dataset`` does). Worker
    processes import the calling script again, as :mod:`multiprocessing` does: call it with
    ``workers`` other than 1 only under ``if __name__ == "__main__":``. Raises
    :class:`DatasetError` when ``out_dir`` is not a folder, is not empty and holds no dataset,
    another export holds its lock, its manifest is not as pisession writes it (it is checked,
    never obeyed), or a folder in it is a symbolic link.
    """
    sources, scope = select_sources(cwd, session_dir)
    exporter = Exporter(os.fspath(out_dir))
    written = unchanged = removed = files = 0
    skipped: list[SkippedSession] = []
    total = len(sources)
    with exporter.locked():
        selected = {s.key for s in sources}
        for path in exporter.gone(scope, selected):
            removed += exporter.remove(path) > 0
        dirty = []
        for source in sources:
            state = exporter.unchanged(source, full, scope)
            if state is False:
                dirty.append(source)
            else:
                unchanged += state is True
        done = total - len(dirty)
        if on_progress is not None and total:
            on_progress(done, total)
        jobs = exporter.jobs(dirty, scope.cwd)
        # closed before the lock goes, also on an error: no job may write on after it
        with contextlib.closing(batches(jobs, workers, len(dirty))) as done_jobs:
            for batch in done_jobs:
                names, installed = exporter.install_bundles(batch)
                files += installed
                for source, result in batch.results:
                    if isinstance(result, Failed):
                        skipped.append(SkippedSession(source.path, result.reason))
                        if result.fingerprint is not None:  # not a session: not read again until it changes
                            exporter.remove(source.key, rewrite=False)
                            exporter.record(
                                source, result.fingerprint, result.read_ns, None, None, None, crc=result.crc
                            )
                    elif result.bundle is None and not scope.selects(result.cwd):
                        result.discard()
                    else:
                        files += exporter.install(source, result, names)
                        written += 1
                    done += 1
                    if on_progress is not None:
                        on_progress(done, total)
        exporter.save()
    return DatasetReport(
        out_dir=exporter.out,
        sessions=total,
        written=written,
        unchanged=unchanged,
        removed=removed,
        files_written=files,
        skipped=tuple(skipped),
    )
