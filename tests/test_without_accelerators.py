"""pisession must read and write the same without msgspec and orjson (they only add speed)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

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
