"""The viewer as a reader meets it: the first screen, links that follow navigation, copy buttons,
a phone's screen, printing, and the tree by keyboard (headless Chromium, see test_viewer_browser)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from test_viewer_browser import CASES, HOSTILE, SHOWN, clean, drive, export, js
from viewer_sessions import big_session

from pisession import SessionManager
from pisession._viewer import render_viewer
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


def branched(folder: Path) -> tuple[SessionManager, Path]:
    source = folder / "branched.jsonl"
    shutil.copy(CASES / "branched_labels.jsonl", source)
    manager = SessionManager.open(source)
    return manager, export(manager, folder)


STATE = "[location.hash, window.pisessionViewer.state.leaf, window.pisessionViewer.state.target]"


def test_the_address_follows_navigation_back_works_and_reopens_the_view(tmp_path: Path) -> None:
    manager, page = branched(tmp_path)
    pos = {e["id"]: i for i, e in enumerate(manager.snapshot().wire_entries())}
    root_answer, alternative, alt_leaf = "dd4bd8b5", "8c234d49", "0b3cd03a"
    main_leaf = pos[manager.get_leaf_id() or ""]
    out = drive(
        page,
        [
            js(STATE),
            {"do": "click", "sel": f'#tree .row[data-p="{pos[alternative]}"]'},
            js(STATE),
            # The shared root answer, shown on the main branch (its newest is the alternative one).
            js(f"window.pisessionViewer.navigate({main_leaf}, {pos[root_answer]}, 'center')"),
            js(STATE),
            js("(history.back(), new Promise(r => setTimeout(r, 300)))"),
            js(STATE),
            js("(history.back(), new Promise(r => setTimeout(r, 300)))"),
            js(STATE),
        ],
    )
    clean(out)
    start, clicked, _, shared, _, back_once, _, back_twice = out["values"]
    assert start == ["", main_leaf, -1]
    assert clicked == [f"#entry-{alternative}", pos[alt_leaf], pos[alternative]]
    main_id = manager.get_leaf_id()
    assert shared == [f"#entry-{root_answer}&leaf={main_id}", main_leaf, pos[root_answer]]
    assert back_once == clicked
    assert back_twice == start
    # The copied address opens the same entry on the same branch.
    out = drive(page, [js(STATE), js(SHOWN)], hash=shared[0])
    clean(out)
    (reopened, shown) = out["values"]
    assert reopened == shared
    assert "b1e592c6" in shown and alternative not in shown
    # Pi's own links still open.
    out = drive(page, [js(STATE)], query=f"?leafId={alt_leaf}&targetId={root_answer}")
    clean(out)
    assert out["values"][0][1:] == [pos[alt_leaf], pos[root_answer]]


def test_copy_buttons_copy(tmp_path: Path) -> None:
    manager = SessionManager.in_memory("/p")
    manager.append_message(
        {"role": "user", "content": "Run this:\n\n```python\nprint('hi')\n```", "timestamp": 1}
    )
    call = {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "ls"}}
    manager.append_message(
        {
            "role": "assistant",
            "content": [call],
            "api": "a",
            "provider": "p",
            "model": "m",
            "stopReason": "toolUse",
            "timestamp": 2,
        }
    )
    manager.append_message(
        {
            "role": "toolResult",
            "toolCallId": "c1",
            "toolName": "bash",
            "isError": False,
            "timestamp": 3,
            "content": [{"type": "text", "text": "a.txt\nb.txt"}],
        }
    )
    first = first_user_id(manager)
    page = export(manager, tmp_path)
    read = "navigator.clipboard.readText()"
    out = drive(
        page,
        [
            {"do": "click", "sel": ".md .codebox button.copy"},
            {"do": "wait", "ms": 200},
            js(read),
            {"do": "click", "sel": ".tool .codebox button.copy"},
            {"do": "wait", "ms": 200},
            js(read),
            {"do": "click", "sel": f"#entry-{first} .head button.copy"},
            {"do": "wait", "ms": 200},
            js(read),
            js("location.href.replace(/[?#].*$/s, '')"),
        ],
        clipboard=True,
    )
    clean(out)
    code, output, link, base = out["values"]
    assert code == "print('hi')"
    assert output == "a.txt\nb.txt"
    assert link == f"{base}#entry-{first}"


SCROLLERS = (
    "[...document.querySelectorAll('*')].filter(el => { const s = getComputedStyle(el);"
    " const r = el.getBoundingClientRect();"
    " return /(auto|scroll)/.test(s.overflowY) && el.scrollHeight > el.clientHeight + 1"
    " && r.right > 0 && r.left < innerWidth && r.width > 0; }).map(el => el.id || el.className)"
)


def test_a_phone_shows_the_first_message_first_and_the_tree_as_a_drawer(tmp_path: Path) -> None:
    manager, page = demo(tmp_path)
    first = first_user_id(manager)
    sidebar = "Math.round(document.querySelector('#sidebar').getBoundingClientRect().right)"
    out = drive(
        page,
        [
            js(ON_SCREEN.format(json.dumps(first))),
            js(SCROLLERS),
            js("document.documentElement.scrollHeight <= innerHeight"),
            js(sidebar),
            {"do": "click", "sel": "#tree-button"},
            {"do": "wait", "ms": 400},
            js(sidebar),
            js("document.querySelectorAll('#tree .row').length"),
        ],
        width=375,
        height=667,
    )
    clean(out)
    (top, height, visible), scrollers, page_fits, closed, opened, rows = out["values"]
    assert visible and 0 <= top < height - 40
    assert scrollers == ["content"]  # one scroll area
    assert page_fits is True
    assert closed <= 0 < opened <= 375
    assert rows > 0


def test_printing_gives_the_pages_the_content_needs(tmp_path: Path) -> None:
    page = export(SessionManager.in_memory(entries=big_session(55)), tmp_path)
    out = drive(
        page,
        [
            {"do": "media", "type": "print"},
            {"do": "wait", "ms": 200},
            js("getComputedStyle(document.querySelector('#sidebar')).display"),
            # The printed layout's height at A4's printable width (8.27 in less Chrome's margins).
            js(
                "(() => { document.body.style.width = '730px';"
                " const h = document.documentElement.scrollHeight;"
                " document.body.style.width = ''; return h; })()"
            ),
            {"do": "media", "type": None},
            {"do": "pdf"},
        ],
    )
    clean(out)
    sidebar, height, pages = out["values"]
    assert sidebar == "none"
    needed = height // 1123  # an A4 page is 1123 CSS px tall: at least this many full pages
    assert needed >= 3
    assert needed <= pages <= needed * 2 + 2


def test_printing_draws_every_message_of_the_branch(tmp_path: Path) -> None:
    manager = SessionManager.in_memory(entries=big_session(300))
    page = export(manager, tmp_path)
    last = manager.get_leaf_id()
    count = "document.querySelectorAll('#messages .entry').length"
    drawn = f"[{count}, !!document.getElementById('entry-{last}')]"
    out = drive(page, [js(drawn), {"do": "pdf"}, js(drawn), js("window.pisessionViewer.items().length")])
    clean(out)
    (before, _), pages, (after, drew_last), items = out["values"]
    assert before < items  # the screen draws a window of the branch
    assert after == items and drew_last is True
    assert pages > 1


def test_arrow_keys_move_through_the_tree(tmp_path: Path) -> None:
    _, page = branched(tmp_path)
    focused = (
        "(() => { const el = document.activeElement;"
        " return [el.classList.contains('row') ? +el.dataset.i : null, el.classList.contains('cursor')]; })()"
    )
    out = drive(
        page,
        [
            {"do": "click", "sel": '#tree .row[data-i="0"]'},
            {"do": "key", "key": "ArrowDown"},
            {"do": "key", "key": "ArrowDown"},
            js(focused),
            {"do": "key", "key": "ArrowUp"},
            js(focused),
            {"do": "key", "key": "Enter"},
            js("[window.pisessionViewer.state.target, window.pisessionViewer.rows()[1][0]]"),
            {"do": "key", "key": "End"},
            js(focused),
            js("window.pisessionViewer.rows().length"),
        ],
    )
    clean(out)
    down, up, (target, second), end, count = out["values"]
    assert down == [2, True]
    assert up == [1, True]
    assert target == second
    assert end == [count - 1, True]


def test_deep_trees_keep_a_readable_row(tmp_path: Path) -> None:
    manager = SessionManager.in_memory("/p")
    at = manager.append_message({"role": "user", "content": "start", "timestamp": 1})
    for level in range(40):  # a branch point inside a branch point, 40 deep
        manager.append_message({"role": "user", "content": f"side {level}", "timestamp": 2})
        manager.branch(at)
        at = manager.append_message({"role": "user", "content": f"deeper {level}", "timestamp": 3})
    page = export(manager, tmp_path)
    out = drive(
        page,
        [js("Math.max(...[...document.querySelectorAll('#tree .prefix')].map(p => p.textContent.length))")],
        width=1280,
    )
    clean(out)
    assert out["values"][0] <= 20


def test_a_compressed_page_shows_the_same(tmp_path: Path) -> None:
    manager, _ = branched(tmp_path)
    page = tmp_path / "packed.html"
    page.write_text(render_viewer(manager, compress=True), encoding="utf-8")
    seen = [js(SHOWN), js("window.pisessionViewer.rows().length")]
    packed = drive(page, seen)
    plain = drive(export(manager, tmp_path), seen)
    clean(packed)
    assert packed["values"] == plain["values"] and packed["values"][0]


def test_no_payload_runs_from_a_compressed_page(tmp_path: Path) -> None:
    manager = SessionManager.in_memory("/p")
    for text in HOSTILE:
        manager.append_message({"role": "user", "content": text, "timestamp": 1})
    page = tmp_path / "packed.html"
    page.write_text(render_viewer(manager, compress=True), encoding="utf-8")
    out = drive(
        page, [js("window.__pwned === undefined"), js("document.querySelectorAll('#messages script').length")]
    )
    clean(out)
    assert out["values"] == [True, 0]


FIRST_LINE_CHARS = (
    "(() => { const p = document.querySelector('.m-user .md p'); const t = p.firstChild;"
    " const r = document.createRange(); let top = null;"
    " for (let i = 0; i < t.length; i++) { r.setStart(t, i); r.setEnd(t, i + 1);"
    " const y = r.getClientRects()[0].top; if (top === null) top = y; else if (y > top + 2) return i; }"
    " return t.length; })()"
)
OUTPUT = (
    "(() => { const pre = document.querySelector('.tool .long pre'); const s = getComputedStyle(pre);"
    " const lines = (pre.clientHeight - parseFloat(s.paddingTop) - parseFloat(s.paddingBottom))"
    " / parseFloat(s.lineHeight);"
    " return [Math.round(lines * 100) / 100, pre.scrollWidth > pre.clientWidth]; })()"
)


def test_readable_measure_rows_and_output(tmp_path: Path) -> None:
    manager = SessionManager.in_memory("/p")
    words = " ".join(f"word{i}" for i in range(400))
    manager.append_message({"role": "user", "content": words, "timestamp": 1})
    call = {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "cat log"}}
    manager.append_message(
        {
            "role": "assistant",
            "content": [call],
            "api": "a",
            "provider": "p",
            "model": "m",
            "stopReason": "toolUse",
            "timestamp": 2,
        }
    )
    output = "\n".join(("x" * 400 if i % 3 == 0 else f"line {i}") for i in range(40))
    manager.append_message(
        {
            "role": "toolResult",
            "toolCallId": "c1",
            "toolName": "bash",
            "isError": False,
            "timestamp": 3,
            "content": [{"type": "text", "text": output}],
        }
    )
    page = export(manager, tmp_path)
    out = drive(
        page,
        [
            js(FIRST_LINE_CHARS),
            js("document.querySelector('#tree .row').offsetHeight"),
            js(OUTPUT),
        ],
        width=1600,
        height=900,
    )
    clean(out)
    chars, row, (lines, scrolls) = out["values"]
    assert 70 <= chars <= 110  # a measure of about 80-100 characters, even on a wide screen
    assert row <= 20
    assert lines == 8  # cut after whole lines, not mid-line
    assert scrolls is True  # long lines scroll sideways rather than being clipped


def test_cards_are_not_washed_out_nor_repeat_the_date(tmp_path: Path) -> None:
    manager, page = demo(tmp_path)
    out = drive(
        page,
        [
            js("[...document.querySelectorAll('.ctx-compacted')].map(e => getComputedStyle(e).opacity)"),
            js("[...document.querySelectorAll('#messages .head time')].map(t => t.textContent)"),
        ],
    )
    clean(out)
    opacities, times = out["values"]
    assert opacities and set(opacities) == {"1"}
    year = str(manager.get_header().timestamp)[:4]  # type: ignore[union-attr]
    assert times and not any(year in t for t in times)
