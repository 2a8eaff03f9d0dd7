"""The viewer as a reader meets it: the first screen, links that follow navigation, copy buttons,
a phone's screen, printing, and the tree by keyboard (headless Chromium, see test_viewer_browser)."""

from __future__ import annotations

import json
from pathlib import Path

from test_viewer_browser import clean, drive, export, js

from pisession import SessionManager
from pisession.cli.demo import write_demo_session


def demo(folder: Path) -> tuple[SessionManager, Path]:
    manager = SessionManager.open(write_demo_session(str(folder / "sessions")))
    return manager, export(manager, folder)


def first_user_id(manager: SessionManager) -> str:
    return next(
        e["id"]
        for e in manager.snapshot().wire_entries()
        if e["type"] == "message" and e["message"]["role"] == "user"
    )


ON_SCREEN = (
    "(id => {{ const el = document.getElementById('entry-' + id); if (!el) return null;"
    " const r = el.getBoundingClientRect();"
    " return [Math.round(r.top), innerHeight, el.offsetParent !== null]; }})({})"
)


def test_first_screen_holds_the_first_user_message(tmp_path: Path) -> None:
    manager, page = demo(tmp_path)
    first = first_user_id(manager)
    out = drive(
        page,
        [
            js(ON_SCREEN.format(json.dumps(first))),
            js("document.querySelectorAll('.ctx-boundary').length"),
            js("document.querySelector('#messages').textContent.includes('Branch of')"),
        ],
        width=1280,
        height=720,
    )
    clean(out)
    (top, height, visible), boundaries, jargon = out["values"]
    assert visible and 0 <= top < height - 40  # its head and first line are on the first screen
    assert boundaries == 1  # the demo has a compaction: one line where the model's context starts
    assert jargon is False
