"""Measures the viewer on a session with one huge tool result (40 MB by default) in headless
Chromium: how long the page takes to be ready and to paint its first screen, and how long a
switch to the other branch and back (which draws the huge result again) takes.

    python tests/browser/measure_huge.py [megabytes]

Prints the median and the runs of five; the figures go into docs/performance.md and
docs/viewer.md. The tests never assert timings (test_viewer_browser.py checks the structure).
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

from viewer_sessions import huge_body_session  # noqa: E402

from pisession import SessionManager  # noqa: E402
from pisession._viewer import render_viewer  # noqa: E402

# Time until the next frame has been painted after the call: layout of what was drawn included.
_PAINTED = "new Promise((r) => requestAnimationFrame(() => setTimeout(r, 0)))"
# Positions: the huge result is entry 3 (position 2), the short branch ends at position 5.
_SWITCH = (
    "(async () => { const v = window.pisessionViewer; const t0 = performance.now();"
    " v.navigate(5, 5, 'center'); await " + _PAINTED + "; const t1 = performance.now();"
    " v.navigate(6, 2, 'center'); await " + _PAINTED + "; const t2 = performance.now();"
    " return [t1 - t0, t2 - t1]; })()"
)
# "Show all" on the huge result: the whole 40 MB drawn and laid out.
_SHOW_ALL = (
    "(async () => { const t0 = performance.now();"
    " document.querySelector('#entry-00000003 button.show-all').click(); await " + _PAINTED + ";"
    " return [performance.now() - t0, document.querySelector('#entry-00000003 pre').textContent.length]; })()"
)


def main() -> int:
    megabytes = float(sys.argv[1]) if len(sys.argv) > 1 else 40.0
    manager = SessionManager.in_memory(entries=huge_body_session(int(megabytes * 1_000_000)))
    with tempfile.TemporaryDirectory() as folder:
        page = Path(folder) / "huge.html"
        started = time.perf_counter()
        page.write_text(render_viewer(manager), encoding="utf-8")
        written = time.perf_counter() - started
        size = page.stat().st_size
        plan = {
            "html": str(page),
            "steps": [
                {"do": "eval", "js": f"(async () => {{ await {_PAINTED}; return performance.now(); }})()"},
                {"do": "eval", "js": _SWITCH},
                {"do": "eval", "js": "document.querySelector('#messages').textContent.length"},
                {"do": "eval", "js": _SHOW_ALL},
            ],
        }
        ready, painted, away, back, shown, whole = [], [], [], [], [], []
        for _ in range(5):
            done = subprocess.run(
                ["node", str(HERE / "drive.mjs"), json.dumps(plan)],
                capture_output=True,
                text=True,
                check=True,
                timeout=600,
            )
            out = json.loads(done.stdout)
            if out["pageErrors"]:
                print("page errors:", out["pageErrors"])
            ready.append(out["readyMs"])
            painted.append(out["values"][0])
            away.append(out["values"][1][0])
            back.append(out["values"][1][1])
            shown.append(out["values"][2])
            whole.append(out["values"][3][0])
            assert out["values"][3][1] == len(manager.get_entries()[2].message.content[0].text)

    def line(name: str, values: list[float]) -> str:
        runs = ", ".join(f"{v / 1000:.2f}" for v in values)
        return f"{name}: median {statistics.median(values) / 1000:.2f} s (runs: {runs})"

    print(f"tool result: {megabytes:g} MB  html: {size / 1e6:.1f} MB  written in {written:.1f} s")
    print(line("ready", ready))
    print(line("first screen painted", painted))
    print(line("switch to the other branch", away))
    print(line("switch back (draws the huge result)", back))
    print(f"characters in the message list after switching back: {max(shown):,}")
    print(line("show all (the whole result drawn)", whole))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
