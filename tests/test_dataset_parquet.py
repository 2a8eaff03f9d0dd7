"""pisession.dataset writes and reads its Parquet files through the writer and reader that
pyarrow.parquet wraps (pyarrow._parquet), to spare every export the import of pyarrow.fs. The
files must be those pyarrow.parquet writes with the same settings, byte for byte, and read back
as pyarrow.parquet reads them: a pyarrow whose private API moved fails here, not in a user's
folder.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pa = pytest.importorskip("pyarrow", reason="pisession.dataset needs pyarrow (the test extra installs it)")
pq = pytest.importorskip("pyarrow.parquet")

import pisession  # noqa: E402
from pisession.dataset import TABLES, _export, tables, write_parquet  # noqa: E402

SAMPLE = Path(pisession.__file__).parent / "data" / "sample.jsonl"
SAMPLE_PROJECT = "/home/dev/todo-app"


@pytest.fixture(scope="module")
def sample_tables(tmp_path_factory: pytest.TempPathFactory) -> dict[str, pa.Table]:
    """The five tables of the built-in sample (every table has rows), as :func:`tables` gives them."""
    root = tmp_path_factory.mktemp("sample")
    folder = root / "sessions" / "--home-dev-todo-app--"
    folder.mkdir(parents=True)
    shutil.copy(SAMPLE, folder / SAMPLE.name)
    read = tables(session_dir=folder)
    assert all(read[name].num_rows for name in TABLES)
    return {name: read[name] for name in TABLES}


@pytest.mark.parametrize("name", TABLES)
def test_a_table_is_written_as_pyarrow_parquet_writes_it(
    sample_tables: dict[str, pa.Table], name: str, tmp_path: Path
) -> None:
    table = sample_tables[name]
    ours, theirs = tmp_path / "ours.parquet", tmp_path / "theirs.parquet"
    _export._write_parquet(table, str(ours))
    keyed = _export._encodings(tuple(table.column_names))
    pq.write_table(
        table, theirs, compression=_export._COMPRESSION, use_dictionary=keyed, write_statistics=keyed
    )
    assert ours.read_bytes() == theirs.read_bytes()
    assert pq.read_table(ours).equals(table)


def test_a_bundle_is_read_as_pyarrow_parquet_reads_it(tmp_path: Path) -> None:
    root = tmp_path / "sessions" / "--home-dev-todo-app--"
    root.mkdir(parents=True)
    shutil.copy(SAMPLE, root / SAMPLE.name)
    out = tmp_path / "out"
    assert write_parquet(out, session_dir=root).written == 1
    (bundle,) = (out / "sessions").rglob("bundle-*.parquet")
    read = _export._read_bundle(str(out), SAMPLE_PROJECT, bundle.stem)
    for name in TABLES:
        (path,) = (out / name).rglob(bundle.name)
        expected = pq.read_table(path, partitioning=None)
        assert read[name].equals(expected, check_metadata=True)
        assert read[name].num_rows


def test_a_bundle_written_with_other_metadata_is_read_with_the_tables_schema(tmp_path: Path) -> None:
    from pisession.dataset import SCHEMAS

    root = tmp_path / "sessions" / "--home-dev-todo-app--"
    root.mkdir(parents=True)
    shutil.copy(SAMPLE, root / SAMPLE.name)
    out = tmp_path / "out"
    write_parquet(out, session_dir=root)
    (path,) = (out / "messages").rglob("bundle-*.parquet")
    other = pq.read_table(path, partitioning=None).replace_schema_metadata({"written by": "another tool"})
    pq.write_table(other, path)
    read = _export._read_bundle(str(out), SAMPLE_PROJECT, path.stem)["messages"]
    assert read.schema.equals(SCHEMAS["messages"], check_metadata=True)
    assert read.equals(other)
