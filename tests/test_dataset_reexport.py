"""pisession.dataset: the re-export of a few changed sessions, the call that follows every first
export. Its jobs run in threads (Arrow writes Parquet without Python's lock), it imports neither
Arrow's compute module nor filelock, and the rows it keeps from a bundle are those a filter on
their sessions keeps, in order; it still waits for another export's lock, taken by filelock
itself, and refuses a lock file planted as a link.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow", reason="pisession.dataset needs pyarrow (the test extra installs it)")
pytest.importorskip("pyarrow.parquet")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from test_dataset_folder import _corpus  # noqa: E402

from pisession.dataset import _export, write_parquet  # noqa: E402

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
