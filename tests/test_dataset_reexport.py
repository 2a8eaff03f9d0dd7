"""pisession.dataset: the re-export of a few changed sessions, the call that follows every first
export. Its jobs run in threads (Arrow writes Parquet without Python's lock); it imports neither
Arrow's compute module, nor pyarrow.parquet and its file systems, nor filelock, attrs or
hashlib (its report is a read-only Record); the rows it keeps from a bundle are those a filter
on their sessions keeps, in order; it still waits for another export's lock, taken by filelock
itself, and refuses a lock file planted as a link.
"""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow", reason="pisession.dataset needs pyarrow (the test extra installs it)")
pytest.importorskip("pyarrow.parquet")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from test_dataset_folder import _append, _corpus, _leftovers, _tables  # noqa: E402

from pisession.dataset import DatasetError, DatasetReport, SkippedSession, _export, write_parquet  # noqa: E402

REPO = Path(__file__).resolve().parent.parent


@pytest.fixture
def bundled(tmp_path: Path) -> Iterator[tuple[Path, Path]]:
    """Nine sessions in three bundles, exported once: (the sessions root, the output folder)."""
    root = _corpus(tmp_path / "sessions", sessions=9)
    one = (root / "--proj--" / "s000.jsonl").stat().st_size
    size, _export.BUNDLE_BYTES = _export.BUNDLE_BYTES, 3 * one
    out = tmp_path / "out"
    try:
        assert write_parquet(out, session_dir=root).files_written == 15
        yield root, out
    finally:
        _export.BUNDLE_BYTES = size


# --------------------------------------------------------------------------- the rows a bundle keeps


@given(st.lists(st.sampled_from(["a", "b", "c", None]), max_size=40), st.sets(st.sampled_from("abc")))
def test_the_rows_kept_from_a_bundle_are_those_a_filter_keeps(
    sessions: list[str | None], kept: set[str]
) -> None:
    import pyarrow.compute as pc

    table = pa.table({"session_id": pa.array(sessions, pa.string()), "n": pa.array(range(len(sessions)))})
    expected = table.filter(pc.is_in(table["session_id"], value_set=pa.array(sorted(kept), pa.string())))
    got = _export._rows_of(table, kept)
    assert got.schema == table.schema
    assert got.to_pylist() == expected.to_pylist()


# --------------------------------------------------------------------------- what it imports


def test_a_re_export_imports_no_arrow_compute_file_systems_filelock_or_attrs(
    bundled: tuple[Path, Path],
) -> None:
    root, out = bundled
    for name in ("s000", "s004"):
        _append(root / "--proj--" / f"{name}.jsonl", "one more")
    code = (
        "import sys\n"
        "from pisession.dataset import write_parquet\n"
        f"report = write_parquet({str(out)!r}, session_dir={str(root)!r}, workers=None)\n"
        "assert report.written == 2, report\n"
        "unwanted = ['pyarrow.compute', 'pyarrow.fs', 'pyarrow.parquet', 'filelock', 'attrs']\n"
        # pyarrow before 16 imports numpy, which imports hashlib
        "unwanted += [] if 'numpy' in sys.modules else ['hashlib']\n"
        "print(sorted(m for m in unwanted if m in sys.modules))\n"
    )
    path = os.environ.get("PYTHONPATH")
    env = {**os.environ, "PYTHONPATH": str(REPO) + (os.pathsep + path if path else "")}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_the_report_is_a_read_only_value(bundled: tuple[Path, Path]) -> None:
    root, out = bundled
    report = write_parquet(out, session_dir=root)
    assert report == DatasetReport(out_dir=str(out), sessions=9, unchanged=9)
    with pytest.raises(AttributeError):
        report.written = 1  # type: ignore[misc]
    skipped = SkippedSession("a.jsonl", "not a session")
    assert skipped == SkippedSession(path="a.jsonl", reason="not a session") and hash(skipped)


# --------------------------------------------------------------------------- the lock


def test_a_lock_file_planted_as_a_link_is_a_dataset_error(bundled: tuple[Path, Path], tmp_path: Path) -> None:
    root, out = bundled
    target = tmp_path / "elsewhere"
    lock = out / ".pisession-dataset.lock"
    lock.unlink(missing_ok=True)
    lock.symlink_to(target)
    with pytest.raises(DatasetError, match="cannot lock"):
        write_parquet(out, session_dir=root)
    assert not target.exists()


def test_the_lock_is_taken_again_after_an_export_in_the_same_process(bundled: tuple[Path, Path]) -> None:
    import filelock

    root, out = bundled
    assert write_parquet(out, session_dir=root).unchanged == 9
    # released and closed: another holder (filelock's own protocol) takes it at once
    with filelock.FileLock(str(out / ".pisession-dataset.lock"), timeout=0):
        pass


# --------------------------------------------------------------------------- threads


def test_a_re_export_of_sessions_in_several_bundles_writes_each_in_a_thread(
    bundled: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, out = bundled
    threads: list[str] = []
    run_job = _export.run_job

    def recorded(job: _export.Job) -> _export.Batch:
        threads.append(threading.current_thread().name)
        return run_job(job)

    monkeypatch.setattr(_export, "run_job", recorded)
    for name in ("s000", "s004", "s008"):  # one in each bundle
        _append(root / "--proj--" / f"{name}.jsonl", "one more")
    report = write_parquet(out, session_dir=root, workers=None)
    assert (report.written, report.unchanged, report.files_written) == (3, 6, 15)
    assert len(threads) == 3 and all(t.startswith("pisession-dataset") for t in threads)
    assert not [t for t in threading.enumerate() if t.name.startswith("pisession-dataset")]
    clean = tmp_path / "clean"
    write_parquet(clean, session_dir=root)
    assert _tables(out) == _tables(clean)


def test_workers_given_by_the_caller_keep_its_jobs_in_its_thread(
    bundled: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    root, out = bundled
    threads: list[threading.Thread] = []
    run_job = _export.run_job

    def recorded(job: _export.Job) -> _export.Batch:
        threads.append(threading.current_thread())
        return run_job(job)

    monkeypatch.setattr(_export, "run_job", recorded)
    for name in ("s000", "s004"):
        _append(root / "--proj--" / f"{name}.jsonl", "one more")
    assert write_parquet(out, session_dir=root, workers=1).written == 2
    assert threads == [threading.main_thread()] * 2


def test_a_job_that_fails_in_a_thread_stops_the_export_and_leaves_nothing_behind(
    bundled: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, out = bundled
    run_job = _export.run_job
    jobs: list[str | None] = []

    def failing(job: _export.Job) -> _export.Batch:
        jobs.append(job.bundle)
        if len(jobs) == 2:
            raise OSError("disk full")
        return run_job(job)

    monkeypatch.setattr(_export, "run_job", failing)
    monkeypatch.setattr(_export, "_thread_count", lambda workers, jobs: 2)
    for name in ("s000", "s004", "s008"):
        _append(root / "--proj--" / f"{name}.jsonl", "one more")
    with pytest.raises(OSError, match="disk full"):
        write_parquet(out, session_dir=root, workers=None)
    # every thread ended before the export let its lock go, and their temporaries went with it
    # (the journal stays: the next run needs it)
    assert not [t for t in threading.enumerate() if t.name.startswith("pisession-dataset")]
    assert [p for p in _leftovers(out) if p.endswith(".tmp")] == []
    monkeypatch.undo()
    assert write_parquet(out, session_dir=root).written >= 1  # what was not recorded is read again
    clean = tmp_path / "clean"
    write_parquet(clean, session_dir=root)
    assert _tables(out) == _tables(clean)
