"""pisession must read and write the same without msgspec and orjson (they only add speed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import pisession

HERE = Path(__file__).parent
CASES = HERE / "conformance" / "cases"

SCRIPT = r"""
import json, shutil, sys, tempfile
if sys.argv[1] == "hide":
    sys.modules["msgspec"] = None  # an import of it now fails, as if not installed
    sys.modules["orjson"] = None
import pisession
from pisession import _json, _load
hidden = sys.argv[1] == "hide"
assert (_load._head_decoder() is None) == hidden and _json.HAVE_ORJSON == (not hidden)
out = {}
for name in sys.argv[2:]:
    tmp = tempfile.mkdtemp()
    path = shutil.copy(name, tmp)
    try:
        manager = pisession.SessionManager.open(path)
    except pisession.PisessionError as error:
        out[name] = str(error)
        continue
    manager.append_custom_entry("probe", {"x": 1.5e-6, "2": 1, "a": 5.0})
    out[name] = {
        "entries": [pisession.to_wire(e) for e in manager.get_entries()][:-1],
        "context": pisession.to_wire(manager.build_session_context()),
        "last_line": open(path, "rb").read().split(b"\n")[-2].split(b'"id"')[0].decode(),
    }
print(json.dumps(out, sort_keys=True, default=repr))
"""


def run(mode: str, files: list[str]) -> object:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, mode, *files], capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def test_same_results_without_msgspec_and_orjson() -> None:
    names = [
        "all_entry_types",
        "all_roles",
        "malformed_lines",
        "invalid_utf8",
        "lone_surrogate",
        "duplicate_keys",
        "nan_literal",
        "v2_migration_rewrite",
        "unicode_separators",
        "json_edge_lines",
    ]
    files = [str(CASES / f"{n}.jsonl") for n in names]
    fast, plain = run("keep", files), run("hide", files)
    assert fast == plain
    assert all(isinstance(v, dict) for v in fast.values())  # every case actually opened


DATASET = r"""
import json, os, shutil, sys, tempfile
if sys.argv[1] == "hide":
    sys.modules["msgspec"] = None
    sys.modules["orjson"] = None
from pisession.dataset import tables, write_parquet
root = tempfile.mkdtemp()
folder = os.path.join(root, "sessions", "--home-dev-todo-app--")
os.makedirs(folder)
shutil.copy(sys.argv[2], folder)
out = os.path.join(root, "out")
first, again = write_parquet(out, session_dir=folder), write_parquet(out, session_dir=folder)
rows = {name: table.num_rows for name, table in tables(session_dir=folder).items()}
manifest = json.load(open(os.path.join(out, ".pisession-dataset.json"), encoding="utf-8"))
print(json.dumps([first.written, again.unchanged, rows, sorted(manifest)]))
"""


def test_the_dataset_is_written_and_read_again_without_msgspec_and_orjson() -> None:
    pytest.importorskip("pyarrow", reason="pisession.dataset needs pyarrow (the test extra installs it)")
    sample = str(Path(pisession.__file__).parent / "data" / "sample.jsonl")
    results = []
    for mode in ("keep", "hide"):
        done = subprocess.run([sys.executable, "-c", DATASET, mode, sample], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        results.append(json.loads(done.stdout))
    assert results[0] == results[1]
    assert results[0][:2] == [1, 1] and all(results[0][2].values())
