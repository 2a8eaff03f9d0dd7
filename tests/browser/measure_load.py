"""Measures how long the viewer takes to open a 20,000-entry session in headless Chromium.

    python tests/browser/measure_load.py [session.jsonl]   (default: the generated big session)

Prints the HTML size and, over five runs, the time from navigation to the page being ready
(tree built, first messages drawn) and to a click on the last tree row being rendered. The
figure goes into docs/performance.md; the tests never assert timings.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from viewer_sessions import big_session  # noqa: E402

from pisession import SessionManager  # noqa: E402
from pisession._viewer import render_viewer  # noqa: E402


def main() -> int:
    manager = (
        SessionManager.open(sys.argv[1])
        if len(sys.argv) > 1
        else SessionManager.in_memory(entries=big_session())
    )
    with tempfile.TemporaryDirectory() as folder:
        page = Path(folder) / "big.html"
        page.write_text(render_viewer(manager), encoding="utf-8")
        plan = {
            "html": str(page),
            "steps": [
                {
                    "do": "eval",
                    "js": "performance.getEntriesByType('navigation')[0].domContentLoadedEventEnd",
                },
                {
                    "do": "eval",
                    "js": "(() => { const t = performance.now(); const rows = window.pisessionViewer.rows();"
                    " const p = rows[rows.length - 1][0]; document.querySelector('#tree').scrollTop = 1e9;"
                    " window.pisessionViewer.navigate(p, p, 'center'); return performance.now() - t; })()",
                },
            ],
        }
        ready, navigate = [], []
        for _ in range(5):
            done = subprocess.run(
                ["node", str(HERE / "drive.mjs"), json.dumps(plan)],
                capture_output=True,
                text=True,
                check=True,
                timeout=300,
            )
            out = json.loads(done.stdout)
            ready.append(out["readyMs"])
            navigate.append(out["values"][1])
        print(f"entries: {manager.get_entry_count():,}  html: {page.stat().st_size / 1e6:.1f} MB")
        runs = ", ".join(f"{v:.0f}" for v in ready)
        print(f"ready after navigation: median {statistics.median(ready):.0f} ms (runs: {runs})")
        print(f"switch to the last tree row's branch: median {statistics.median(navigate):.0f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
