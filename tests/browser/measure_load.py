"""Measures how long the viewer takes to open a 20,000-entry session in headless Chromium.

    python tests/browser/measure_load.py [session.jsonl]   (default: the generated big session)

For the session embedded as plain JSON and compressed, prints the time to write the page, the
HTML size and, over five runs, the time from navigation to the page being ready (tree built,
first messages drawn), to a click on the last tree row being rendered, the DOM's node count and
the JavaScript heap. The figures go into docs/performance.md; the tests never assert timings.
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
import tempfile
import time
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
    for compress in (False, True):
        measure(manager, compress)
    return 0


def measure(manager: SessionManager, compress: bool) -> None:
    with tempfile.TemporaryDirectory() as folder:
        page = Path(folder) / "big.html"
        started = time.perf_counter()
        html = render_viewer(manager, compress=compress)
        written = time.perf_counter() - started
        page.write_text(html, encoding="utf-8")
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
                {"do": "eval", "js": "document.getElementsByTagName('*').length"},
                {"do": "eval", "js": "performance.memory ? performance.memory.usedJSHeapSize : 0"},
            ],
        }
        ready, navigate, nodes, heap = [], [], [], []
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
            nodes.append(out["values"][2])
            heap.append(out["values"][3])
        kind = "compressed" if compress else "plain JSON"
        print(
            f"{kind}: entries: {manager.get_entry_count():,}  html: {page.stat().st_size / 1e6:.2f} MB"
            f"  written in {written:.2f} s"
        )
        runs = ", ".join(f"{v:.0f}" for v in ready)
        print(f"ready after navigation: median {statistics.median(ready):.0f} ms (runs: {runs})")
        print(f"switch to the last tree row's branch: median {statistics.median(navigate):.0f} ms")
        print(f"DOM nodes: {max(nodes):,}  JS heap: {max(heap) / 1e6:.0f} MB")


if __name__ == "__main__":
    raise SystemExit(main())
