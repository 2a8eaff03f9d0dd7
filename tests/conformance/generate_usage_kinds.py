"""Golden data of ``usage_report(..., by_kind=True)``: Pi's own breakdown of one kind at a time.

Pi's breakdown files compaction, branch-summary and tool-result usage under one key
(``Tools/summaries``), so the oracle cannot split them itself. For each entry type that carries
usage, a copy of the session keeps the usage of that type's entries only; the oracle's ``usage``
breakdown of that copy is Pi's figure for that kind. Run from the worktree:

    python3 tests/conformance/generate_usage_kinds.py
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
SESSION = (
    "corpus/sessions/--work-proj-a--/2026-11-02T22-50-00-001Z_01a19e74-89c0-70c2-998f-3ab0d1e19a63.jsonl"
)
KINDS = ("message", "compaction", "branch_summary", "usage")
ORACLE = HERE.parent.parent.parent / "shared" / "pi-oracle" / "oracle.mjs"


def _only(lines: list[str], kind: str) -> str:
    out = []
    for line in lines:
        entry = json.loads(line)
        if entry.get("type") != kind:
            entry.pop("usage", None)
            if isinstance(entry.get("message"), dict):
                entry["message"].pop("usage", None)
        out.append(json.dumps(entry, separators=(",", ":")))
    return "\n".join(out) + "\n"


def _breakdown(path: Path) -> list[dict[str, object]]:
    done = subprocess.run(
        ["node", str(ORACLE), "usage", str(path)], capture_output=True, text=True, check=True
    )
    result = json.loads(done.stdout)
    assert result["ok"], result
    return list(result["breakdown"])


def main() -> None:
    lines = (HERE / "cases" / "usage" / SESSION).read_text(encoding="utf-8").splitlines()
    golden: dict[str, object] = {"session": SESSION, "all": _breakdown(HERE / "cases" / "usage" / SESSION)}
    kinds = {}
    with tempfile.TemporaryDirectory() as folder:
        for kind in KINDS:
            copy = Path(folder) / f"{kind}.jsonl"
            copy.write_text(_only(lines, kind), encoding="utf-8")
            kinds[kind] = _breakdown(copy)
    golden["kinds"] = kinds
    target = HERE / "golden" / "usage_kinds.json"
    target.write_text(json.dumps(golden, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
