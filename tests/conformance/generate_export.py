#!/usr/bin/env python3
"""Regenerate golden/export_jsonl.json: Pi's ``serializeSessionBranch`` (its JSONL export of the
active branch) for every read case, via export_jsonl.mjs beside this file.

    python tests/conformance/generate_export.py

Needs `node` and the reference installed by ../shared/pi-oracle/setup.sh (``PI_ORACLE_HOME``
overrides the install). Node runs in "/" with the clock frozen at T0, so the output is the same
on every run; each record holds the file as Pi left it after opening (``fileAfterOpen``, which the
test opens with pisession) and the exported text.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases"
GOLDEN = HERE / "golden" / "export_jsonl.json"
T0 = 1733234400000


def main() -> int:
    files = sorted(str(p) for p in CASES.glob("*.jsonl"))
    home = os.environ.get("PI_ORACLE_HOME") or str(Path.home() / ".cache" / "pi-oracle")
    env = {**os.environ, "TZ": "UTC", "HOME": "/home/pi", "PI_ORACLE_HOME": home}
    result = subprocess.run(
        ["node", str(HERE / "export_jsonl.mjs"), str(T0), *files],
        cwd="/",
        env=env,
        check=True,
        capture_output=True,
        text=True,
    )
    records = json.loads(result.stdout)
    GOLDEN.write_text(json.dumps({"clock": T0, "cases": records}, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {GOLDEN} ({len(records)} cases)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
