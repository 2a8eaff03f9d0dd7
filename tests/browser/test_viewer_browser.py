"""The HTML viewer in a real browser: headless Chromium from npm (tests/browser/setup.sh) driven
by puppeteer-core through drive.mjs. Skipped, with the reason, where Node or the browser is missing.
No timings are asserted here (measure_load.py measures them)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
from viewer_sessions import big_session, huge_body_session

from pisession import SessionManager, to_wire
from pisession._json import dumps
from pisession._viewer import render_viewer

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
CASES = ROOT / "tests" / "conformance" / "cases"
BROWSER_DIR = Path(os.environ.get("PISESSION_BROWSER_DIR", Path.home() / ".cache" / "pisession-browser"))


def _missing() -> str | None:
    if shutil.which("node") is None:
        return "node is not installed"
    for package in ("@sparticuz/chromium", "puppeteer-core"):
        if not (BROWSER_DIR / "node_modules" / package).is_dir():
            return f"{package} is not installed in {BROWSER_DIR}: run tests/browser/setup.sh"
    return None


pytestmark = pytest.mark.skipif(_missing() is not None, reason=_missing() or "")


def drive(html: Path, steps: list[dict[str, Any]], **plan: Any) -> dict[str, Any]:
    done = subprocess.run(
        ["node", str(HERE / "drive.mjs"), json.dumps({"html": str(html), "steps": steps, **plan})],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if done.returncode != 0:
        pytest.fail(f"drive.mjs failed: {done.stderr[-2000:]}")
    out: dict[str, Any] = json.loads(done.stdout)
    return out


def clean(out: dict[str, Any]) -> None:
    assert out["consoleErrors"] == []
    assert out["pageErrors"] == []
    assert out["requests"] == [], "the viewer must fetch nothing"


def export(manager: SessionManager, folder: Path, name: str = "view.html") -> Path:
    page = folder / name
    page.write_text(render_viewer(manager), encoding="utf-8")
    return page


def js(expression: str) -> dict[str, str]:
    return {"do": "eval", "js": expression}


ROWS = "[...document.querySelectorAll('#tree .row')].map(r => r.textContent)"
SHOWN = "[...document.querySelectorAll('#messages [id^=\"entry-\"]')].map(e => e.id.slice(6))"


def test_branch_switch_search_toggles_filters_links_and_download(tmp_path: Path) -> None:
    source = tmp_path / "branched.jsonl"
    shutil.copy(CASES / "branched_labels.jsonl", source)
    manager = SessionManager.open(source)
    page = export(manager, tmp_path)
    wire = manager.snapshot().wire_entries()
    by_text = {
        str(
            e["message"]["content"]
            if isinstance(e["message"]["content"], str)
            else e["message"]["content"][0]["text"]
        ): e["id"]
        for e in wire
        if e["type"] == "message"
    }
    alternative, main = by_text["alternative follow-up"], by_text["main follow-up"]
    downloads = tmp_path / "downloads"
    downloads.mkdir()
    out = drive(
        page,
        [
            js(SHOWN),
            # Branch switch: click the other branch's row in the sidebar.
            {"do": "click", "sel": f'#tree .row[data-p="{window_position(wire, alternative)}"]'},
            js(SHOWN),
            js("[...document.querySelectorAll('#tree .row.current')].map(r => r.dataset.p)"),
            # Search narrows the tree to matching entries (and the leaf, always shown).
            {"do": "type", "sel": "#search", "text": "alternative"},
            {"do": "wait", "ms": 400},
            js(ROWS),
            js("document.querySelector('#tree-status').textContent"),
            {"do": "click", "sel": "#search"},
            {"do": "key", "key": "Escape"},
            {"do": "wait", "ms": 400},
            js(ROWS + ".length"),
            # Toggles.
            {"do": "click", "sel": "[data-act=tools]"},
            js(
                "[document.body.classList.contains('tools-open'),"
                " document.querySelector('[data-act=tools]').getAttribute('aria-pressed')]"
            ),
            {"do": "key", "key": "t"},
            js("document.body.classList.contains('hide-thinking')"),
            {"do": "click", "sel": "[data-act=hidden]"},
            js("document.body.classList.contains('hide-hidden')"),
            {"do": "click", "sel": "[data-act=theme]"},
            {"do": "click", "sel": "[data-act=theme]"},
            js("[document.documentElement.dataset.theme, getComputedStyle(document.body).backgroundColor]"),
            # Filters.
            {"do": "click", "sel": ".filter[data-filter=user]"},
            js(ROWS),
            {"do": "click", "sel": ".filter[data-filter=labeled]"},
            js(ROWS),
            {"do": "click", "sel": ".filter[data-filter=all]"},
            js(ROWS + ".length"),
            # A per-message link opens its branch.
            js(f"(location.hash = '#entry-{main}', new Promise(r => setTimeout(r, 200)))"),
            js(SHOWN),
            # The JSONL download.
            {"do": "downloads", "dir": str(downloads)},
            {"do": "click", "sel": "[data-act=download]"},
            {"do": "wait", "ms": 1500},
        ],
    )
    clean(out)
    (
        first,
        after_click,
        current,
        searched,
        status,
        cleared,
        tools,
        thinking,
        hidden,
        theme,
        users,
        labeled,
        all_rows,
        _,
        linked,
    ) = out["values"]
    assert main in first and alternative not in first
    assert alternative in after_click and main not in after_click
    assert current == [str(window_position(wire, alternative))]
    assert any("alternative follow-up" in row for row in searched)
    assert sum("alternative" not in row for row in searched) <= 1  # matches, and the leaf (always shown)
    assert status.startswith(f"{len(searched)} / {len(wire)}")
    assert cleared > len(searched)
    assert tools == [True, "true"]
    assert thinking is True
    assert hidden is False  # hidden entries were hidden at first, now shown
    assert theme[0] == "dark" and theme[1] == "rgb(22, 24, 28)"
    user_count = sum(1 for e in wire if e["type"] == "message" and e["message"]["role"] == "user")
    assert sum("user:" in row for row in users) == user_count and len(users) <= user_count + 1
    labels = {label for e in wire if (label := manager.get_label(e["id"]))}
    assert labels and all(label in " ".join(labeled) for label in labels)
    assert len(labeled) <= len(labels) + 1  # the labeled entries, and the leaf
    assert all_rows == len(wire)
    assert main in linked and alternative not in linked
    (saved,) = downloads.iterdir()
    header = manager.get_header()
    assert header is not None
    expected = "".join(dumps(line) + "\n" for line in [to_wire(header), *wire])
    assert saved.read_text(encoding="utf-8") == expected


def window_position(wire: list[dict[str, Any]], entry_id: str) -> int:
    return next(i for i, e in enumerate(wire) if e["id"] == entry_id)


HOSTILE = [
    "</script><script>window.__pwned = 1</script>",
    '<img src=x onerror="window.__pwned = 2">',
    "[click](javascript:window.__pwned=3) [data](data:text/html,<b>x</b>) [ok](https://example.com/a?b=1&c=2)",
    "![pic](https://example.com/tracker.png) <!-- comment --> \u2028 line \u2029 para",
    "**bold** `<code>` ```\n</pre><svg onload=window.__pwned=4>\n```",
]


def test_hostile_content_is_shown_not_run(tmp_path: Path) -> None:
    manager = SessionManager.in_memory("/p")
    for text in HOSTILE:
        manager.append_message({"role": "user", "content": text, "timestamp": 1})
    manager.append_message(
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": HOSTILE[2]},
                {"type": "toolCall", "id": "c", "name": "<b>x</b>", "arguments": {"q": "</script>"}},
                {"type": "image", "data": '"><script>window.__pwned=5</script>', "mimeType": "text/html"},
            ],
            "api": "x",
            "provider": "<i>p</i>",
            "model": "m",
            "stopReason": "stop",
            "timestamp": 2,
            "usage": {
                "input": 1,
                "output": 1,
                "cacheRead": 0,
                "cacheWrite": 0,
                "totalTokens": 2,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
            },
        }
    )
    manager.append_label_change(manager.get_leaf_id() or "", "<script>window.__pwned=6</script>")
    page = export(manager, tmp_path)
    out = drive(
        page,
        [
            js("window.__pwned === undefined"),
            js("document.querySelectorAll('#messages script, #messages img[onerror], svg, [onload]').length"),
            js("[...document.querySelectorAll('#messages a')].map(a => a.getAttribute('href'))"),
            js(f"document.querySelector('#messages').textContent.includes({json.dumps(HOSTILE[0])})"),
            js("document.querySelectorAll('#messages img').length"),
            js(
                "window.pisessionViewer.markdown("
                "'[x](JaVaScRiPt:alert(1)) [y](java\\nscript:alert(1)) [z]( javascript:alert(1))')"
            ),
            {"do": "click", "sel": ".filter[data-filter=labeled]"},
            js(ROWS),
        ],
    )
    clean(out)
    safe, active, hrefs, shown_raw, images, markdown, labeled = out["values"]
    assert safe is True
    assert active == 0
    assert hrefs and all(h.startswith(("https://", "#entry-")) for h in hrefs)
    assert "https://example.com/a?b=1&c=2" in hrefs
    assert shown_raw is True
    assert images == 0  # no network image, no unsafe data: image
    assert "href" not in markdown
    assert any("<script>" in row for row in labeled)


def test_context_edits_and_compaction_show_what_the_model_saw(tmp_path: Path) -> None:
    source = tmp_path / "sample.jsonl"
    shutil.copy(ROOT / "pisession" / "data" / "sample.jsonl", source)
    page = export(SessionManager.open(source), tmp_path)
    out = drive(
        page,
        [
            js(
                "Object.fromEntries([...document.querySelectorAll('.stats dt')].map(d => [d.textContent,"
                " d.nextElementSibling.textContent]))"
            ),
            js("[...document.querySelectorAll('.ctx-boundary')].map(b => b.textContent)"),
            js("document.querySelectorAll('.ctx-note.replaced').length"),
            js(
                "document.querySelector('.ctx-note.replaced').closest('.tool').querySelector('details.was').textContent"
            ),
            js("['.ctx-compacted', '.ctx-note'].map(s => document.querySelectorAll(s).length)"),
            {"do": "click", "sel": "[data-act=model]"},
            js("[...document.querySelectorAll('.ctx-compacted')].filter(e => e.offsetParent).length"),
        ],
    )
    clean(out)
    stats, boundaries, replaced, original, (compacted, notes), compacted_seen = out["values"]
    wire = SessionManager.open(source).snapshot().wire_entries()
    messages = [e["message"] for e in wire if e["type"] == "message"]
    answers = [m for m in messages if m["role"] == "assistant"]
    calls = [b for m in answers for b in m["content"] if b["type"] == "toolCall"]
    cost = sum(m["usage"]["cost"]["total"] for m in answers)
    assert stats["Models"] == ", ".join(
        f"{key} \u00d7{sum(1 for m in answers if m['provider'] + '/' + m['model'] == key)}"
        for key in dict.fromkeys(m["provider"] + "/" + m["model"] for m in answers)
    )
    assert stats["Tool calls"].startswith(f"{len(calls)} (")
    assert stats["Cost"].startswith(f"${cost:.3f}")
    assert stats["Messages"].startswith(
        f"{sum(m['role'] == 'user' for m in messages)} user, {len(answers)} assistant"
    )
    # The whole branch in place, one line where the model's context starts, no banner per entry.
    assert len(boundaries) == 1 and "context starts here" in boundaries[0]
    assert replaced >= 1
    assert "def test_missing(client)" in original  # the original result, shown on demand
    assert compacted >= 1 and notes < compacted
    assert compacted_seen == 0  # "What the model saw" hides what was summarised away


def test_twenty_thousand_entries_render(tmp_path: Path) -> None:
    manager = SessionManager.in_memory(entries=big_session(20_000))
    page = export(manager, tmp_path)
    out = drive(
        page,
        [
            js("document.querySelector('#tree-status').textContent"),
            js("document.querySelectorAll('#tree .row').length"),
            js("document.querySelectorAll('#messages .entry').length"),
            js(
                "(() => { const rows = window.pisessionViewer.rows(); const p = rows[rows.length - 1][0];"
                " window.pisessionViewer.navigate(p, p, 'center');"
                " return [p, window.pisessionViewer.state.leaf]; })()"
            ),
            js("document.querySelectorAll('#messages .entry').length"),
            {"do": "type", "sel": "#search", "text": "turn 4000:"},
            {"do": "wait", "ms": 800},
            js(ROWS),
        ],
    )
    clean(out)
    status, rows, messages, (clicked, leaf), after, searched = out["values"]
    assert status.endswith("/ 20,000 entries")
    assert 0 < rows < 200  # the tree is virtualised
    assert 0 < messages < 200  # messages are rendered a chunk at a time
    assert leaf == clicked
    assert after > 0
    assert any("Turn 4000:" in row for row in searched)


# Entries whose fields have the wrong types: the page must draw every one of them without an error.
MALFORMED: list[dict[str, Any]] = [
    {"type": "session", "version": 3, "id": "x", "timestamp": "2024-01-01T00:00:00Z", "cwd": "/p"},
    {
        "type": "message",
        "id": "a1",
        "parentId": None,
        "timestamp": "bad",
        "message": {"role": "user", "content": None},
    },
    {
        "type": "message",
        "id": "a2",
        "parentId": "a1",
        "timestamp": "2024",
        "message": {
            "role": "assistant",
            "content": [
                None,
                5,
                {"type": "toolCall", "name": None, "arguments": "str"},
                {"type": "text", "text": None},
            ],
            "usage": None,
        },
    },
    {
        "type": "message",
        "id": "a3",
        "parentId": "a2",
        "timestamp": "2024",
        "message": {"role": "weird", "x": 1},
    },
    {
        "type": "message",
        "id": "a4",
        "parentId": "a3",
        "timestamp": "2024",
        "message": {"role": "toolResult", "content": "plain", "toolCallId": None},
    },
    {
        "type": "message",
        "id": "a5",
        "parentId": "a4",
        "timestamp": "2024",
        "message": {
            "role": "system",
            "content": None,
            "sections": {"a": None, "b": 5},
            "toolsAdded": [None, "x", {"name": "y"}],
        },
    },
    {"type": "brand_new", "id": "a6", "parentId": "a5", "timestamp": "2024"},
    {
        "type": "compaction",
        "id": "a7",
        "parentId": "a6",
        "timestamp": "2024",
        "summary": None,
        "firstKeptEntryId": "zz",
        "tokensBefore": "many",
    },
    {
        "type": "context_edit",
        "id": "a8",
        "parentId": "a7",
        "timestamp": "2024",
        "targetId": "a7",
        "replacement": {"content": None},
    },
    {
        "type": "message",
        "id": "a9",
        "parentId": "a8",
        "timestamp": "2024",
        "message": {"role": "bashExecution", "command": None, "output": None, "exitCode": "x"},
    },
    {
        "type": "custom_message",
        "id": "b1",
        "parentId": "a9",
        "timestamp": "2024",
        "customType": None,
        "content": [{"type": "image", "data": "AAAA", "mimeType": "image/svg+xml"}],
        "display": False,
    },
    {
        "type": "message",
        "id": "b2",
        "parentId": "b1",
        "timestamp": "2024",
        "message": {
            "role": "assistant",
            "content": [
                {
                    "type": "toolCall",
                    "id": "t",
                    "name": "edit",
                    "arguments": {"path": 5, "edits": "not json"},
                },
                {"type": "toolCall", "id": "u", "name": "read", "arguments": {"path": "a", "offset": "x"}},
                {"type": "toolCall", "id": "w", "name": "write", "arguments": {"content": None}},
                {"type": "toolCall", "id": "b", "name": "bash", "arguments": None},
            ],
        },
    },
    {"type": "message", "id": "b3", "parentId": "b2", "timestamp": "2024", "message": None},
    {"type": "label", "id": "b4", "parentId": "b3", "timestamp": "2024", "targetId": "a1", "label": "x"},
]


def test_malformed_entries_render_without_errors(tmp_path: Path) -> None:
    page = export(SessionManager.in_memory(entries=MALFORMED), tmp_path)
    out = drive(
        page,
        [
            {"do": "click", "sel": ".filter[data-filter=all]"},
            {"do": "click", "sel": "[data-act=hidden]"},
            {"do": "click", "sel": "[data-act=tools]"},
            js(
                "(() => { const v = window.pisessionViewer;"
                " for (const [p] of v.rows()) v.navigate(p, p, 'center');"
                " return [v.rows().length, " + SHOWN + ".length]; })()"
            ),
            {"do": "type", "sel": "#search", "text": "x"},
            {"do": "wait", "ms": 300},
        ],
    )
    clean(out)
    ((rows, shown),) = out["values"]
    assert rows == len(MALFORMED) - 1
    assert shown > 0


def test_skills_nested_calls_tool_parameters_and_pi_links(tmp_path: Path) -> None:
    manager = SessionManager.in_memory("/p")
    manager.append_message(
        {
            "role": "system",
            "content": "You are Pi.",
            "toolsAdded": [
                {
                    "name": "bash",
                    "description": "Run a command",
                    "parameters": {
                        "type": "object",
                        "properties": {"command": {"type": "string"}},
                        "required": ["command"],
                    },
                }
            ],
            "timestamp": 1,
        }
    )
    first = manager.append_message({"role": "user", "content": "first", "timestamp": 2})
    skill = '<skill name="deploy" location="/home/u/skills/deploy.md">\nSteps **here**\n</skill>\n\nship it'
    manager.append_message({"role": "user", "content": skill, "timestamp": 3})
    manager.append_message(
        {
            "role": "assistant",
            "content": [{"type": "toolCall", "id": "c1", "name": "code", "arguments": {"script": "x"}}],
            "api": "a",
            "provider": "p",
            "model": "m",
            "stopReason": "toolUse",
            "timestamp": 4,
        }
    )
    leaf = manager.append_message(
        {
            "role": "toolResult",
            "toolCallId": "c1",
            "toolName": "code",
            "isError": False,
            "timestamp": 5,
            "content": [{"type": "text", "text": "done"}],
            "nestedCalls": {
                "complete": True,
                "calls": [{"name": "read", "status": "ok", "arguments": {"path": "a"}}],
            },
        }
    )
    manager.branch(first)
    other = manager.append_message({"role": "user", "content": "other branch", "timestamp": 6})
    page = export(manager, tmp_path)
    seen = [
        js("document.querySelector('.skill summary').textContent"),
        js("document.querySelector('.skill .md').innerHTML"),
        js("document.querySelector('.toolspec').textContent"),
    ]
    out = drive(page, [js(SHOWN)], query=f"?leafId={other}&targetId={first}")
    clean(out)
    assert out["values"] == [[e.id for e in manager.get_branch(other)]]
    out = drive(
        page, [js(SHOWN), *seen, js("document.querySelector('.tool').textContent")], query=f"?leafId={leaf}"
    )
    clean(out)
    shown, summary, body, spec, tool = out["values"]
    assert other not in shown
    assert "deploy" in summary and "~/skills/deploy.md" in summary
    assert body.strip() == "<p>Steps <strong>here</strong></p>"
    assert "command" in spec and "required" in spec
    assert "nested calls: 1" in tool and '✓ read {"path":"a"}' in tool


# Every own key of JavaScript's Object.prototype: a plain-object table looked up with one of these
# finds a function (or the prototype itself) instead of nothing.
PROTOTYPE_KEYS = [
    "constructor",
    "__proto__",
    "toString",
    "toLocaleString",
    "valueOf",
    "hasOwnProperty",
    "isPrototypeOf",
    "propertyIsEnumerable",
    "__defineGetter__",
    "__defineSetter__",
    "__lookupGetter__",
    "__lookupSetter__",
]


def prototype_key_session() -> list[dict[str, Any]]:
    """Per key: a user message with the key as its id, tool calls (read, write, edit and a tool
    named by the key) on paths ending in ".<key>", their results, a fenced block in that language,
    a message with the key as its role, a custom message and nested call status named by it."""
    entries: list[dict[str, Any]] = [
        {"type": "session", "version": 3, "id": "s", "timestamp": "2026-01-05T09:00:00.000Z", "cwd": "/p"}
    ]
    parent: str | None = None

    def add(entry_id: str, **fields: Any) -> None:
        nonlocal parent
        entries.append(
            {"id": entry_id, "parentId": parent, "timestamp": "2026-01-05T09:00:01.000Z", **fields}
        )
        parent = entry_id

    def message(entry_id: str, **body: Any) -> None:
        add(entry_id, type="message", message={"timestamp": 1767603601000, **body})

    for key in PROTOTYPE_KEYS:
        message(key, role="user", content=f"turn {key}")
        calls = {
            f"read-{key}": ("read", {"path": f"src/x.{key}"}),
            f"write-{key}": ("write", {"path": f"/home/u/out.{key}", "content": "a\nb"}),
            f"edit-{key}": ("edit", {"path": f"lib/{key}", "edits": [{"oldText": "a", "newText": "b"}]}),
            f"tool-{key}": (key, {"path": f"x.{key}"}),
        }
        message(
            f"calls-{key}",
            role="assistant",
            api="a",
            provider="p",
            model="m",
            stopReason="toolUse",
            content=[
                {"type": "text", "text": f"&{key}; [r][{key}] &#x{key};\n\n```{key}\ncode()\n```"},
                *(
                    {"type": "toolCall", "id": cid, "name": name, "arguments": args}
                    for cid, (name, args) in calls.items()
                ),
            ],
        )
        for cid, (name, _) in calls.items():
            message(
                f"result-{cid}",
                role="toolResult",
                toolCallId=cid,
                toolName=name,
                isError=False,
                content=[{"type": "text", "text": "line 1\nline 2"}],
                nestedCalls={"complete": True, "calls": [{"name": "read", "status": key, "arguments": {}}]},
            )
        message(f"role-{key}", role=key, content=f"role {key}")
        add(f"custom-{key}", type="custom_message", customType=key, content=f"custom {key}", display=True)
    add("label-x", type="label", targetId=PROTOTYPE_KEYS[0], label="__proto__")
    return entries


def test_paths_roles_and_ids_named_like_object_prototype_keys_render(tmp_path: Path) -> None:
    entries = prototype_key_session()
    page = export(SessionManager.in_memory(entries=entries), tmp_path)
    ids = [e["id"] for e in entries[1:]]
    out = drive(
        page,
        [
            {"do": "click", "sel": ".filter[data-filter=all]"},
            {"do": "click", "sel": "[data-act=hidden]"},
            # Every row opened in turn: its entry is drawn, and the union of what was drawn kept.
            js(
                "(() => { const v = window.pisessionViewer, seen = new Set();"
                " for (const [p] of v.rows()) { v.navigate(p, p, 'center');"
                "  for (const id of " + SHOWN + ") seen.add(id); }"
                " return [...seen]; })()"
            ),
            js("document.body.innerText.includes('[native code]')"),
            js(ROWS + ".join('\\n').includes('[native code]')"),
            js("[...document.querySelectorAll('#messages .md pre code')].map(c => c.textContent)"),
            # Clicking a tree row still navigates.
            js("(() => { document.querySelector('#tree').scrollTop = 0; return 0; })()"),
            {"do": "wait", "ms": 200},
            {"do": "click", "sel": "#tree .row[data-p='0']"},
            js("window.pisessionViewer.state.target"),
            js("['constructor', 'a.__proto__'].map((l) => window.pisessionViewer.highlight('x', l))"),
        ],
    )
    clean(out)
    seen, native_in_page, native_in_rows, fences, _, target, highlighted = out["values"]
    assert sorted(seen) == sorted(ids)
    assert native_in_page is False
    assert native_in_rows is False
    assert "code()" in fences
    assert target == 0
    assert highlighted == ["x", "x"]


MESSAGES_TEXT = "document.querySelector('#messages').textContent.length"


def test_a_forty_megabyte_tool_result_is_drawn_cut_until_show_all(tmp_path: Path) -> None:
    entries = huge_body_session(40_000_000)
    body = entries[3]["message"]["content"][0]["text"]
    last_line = body.rstrip("\n").rsplit("\n", 1)[1]
    page = export(SessionManager.in_memory(entries=entries), tmp_path)
    big = "document.querySelector('#entry-00000003')"
    out = drive(
        page,
        [
            js(MESSAGES_TEXT),
            js(f"{big}.querySelectorAll('button.show-all').length"),
            # Away to the short branch and back: the result is drawn cut again.
            js(
                "(() => { window.pisessionViewer.navigate(5, 5, 'center'); return " + MESSAGES_TEXT + "; })()"
            ),
            js(
                "(() => { window.pisessionViewer.navigate(6, 2, 'center'); return " + MESSAGES_TEXT + "; })()"
            ),
            # Search reaches past the cut: the last line finds the result's row.
            {"do": "type", "sel": "#search", "text": last_line.split()[1]},
            {"do": "wait", "ms": 1500},
            js("window.pisessionViewer.rows().map((r) => r[0])"),
            {"do": "click", "sel": "#entry-00000003 button.show-all"},
            js(f"{big}.querySelector('pre').textContent.length"),
            js(f"{big}.querySelector('pre').textContent.slice(-200)"),
            js(f"{big}.querySelectorAll('button.show-all').length"),
        ],
    )
    clean(out)
    first, buttons, away, back, found, whole, tail, left = out["values"]
    assert first < 100_000 and back < 100_000 and away < 1_000
    assert buttons == 1
    assert 2 in found  # the result's position; the leaf (6) is always shown too
    assert whole == len(body) == 40_000_000
    assert tail == body[-200:]
    assert left == 0


def test_huge_markdown_thinking_commands_diffs_and_arguments_are_cut(tmp_path: Path) -> None:
    big = "".join(f"line {i} **bold** `code`\n" for i in range(12_000))  # ~300 KB
    manager = SessionManager.in_memory("/p")
    manager.append_message({"role": "user", "content": big, "timestamp": 1})
    manager.append_message(
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": big},
                {"type": "text", "text": big},
                {"type": "toolCall", "id": "b", "name": "bash", "arguments": {"command": big}},
                {
                    "type": "toolCall",
                    "id": "e",
                    "name": "edit",
                    "arguments": {"path": "a.py", "oldText": big, "newText": "x"},
                },
                {"type": "toolCall", "id": "o", "name": "other", "arguments": {"data": big}},
            ],
            "api": "a",
            "provider": "p",
            "model": "m",
            "stopReason": "toolUse",
            "timestamp": 2,
        }
    )
    page = export(manager, tmp_path)
    lengths = (
        "[...document.querySelectorAll('#messages .md, #messages .thinking-body, #messages .cmd,"
        " #messages pre.diff, #messages details.args pre')].map((e) => e.textContent.length)"
    )
    out = drive(
        page,
        [
            {"do": "click", "sel": "[data-act=tools]"},
            js("document.querySelectorAll('#messages button.show-all').length"),
            js(lengths),
            js(
                "(() => { for (const b of document.querySelectorAll('#messages button.show-all')) b.click();"
                " return document.querySelectorAll('#messages .show-all, #messages [data-lazy]').length; })()"
            ),
            js(lengths),
            js("document.querySelectorAll('#messages .md strong').length"),
        ],
    )
    clean(out)
    buttons, cut, left, whole, bold = out["values"]
    assert buttons == 6  # user text, thinking, assistant text, command, diff, arguments
    assert len(cut) == 6 and all(n < 70_000 for n in cut)
    assert left == 0
    assert len(whole) == 6 and all(n > 0.75 * len(big) for n in whole)  # Markdown drops its ** and `
    assert bold == 2 * 12_000  # shown whole, Markdown under 1 MB is still rendered


def test_copy_of_a_cut_output_copies_all_of_it(tmp_path: Path) -> None:
    output = "".join(f"row {i}\tvalue\n" for i in range(20_000))  # ~300 KB
    manager = SessionManager.in_memory("/p")
    call = {"type": "toolCall", "id": "c1", "name": "bash", "arguments": {"command": "dump"}}
    manager.append_message(
        {
            "role": "assistant",
            "content": [call],
            "api": "a",
            "provider": "p",
            "model": "m",
            "stopReason": "toolUse",
            "timestamp": 1,
        }
    )
    manager.append_message(
        {
            "role": "toolResult",
            "toolCallId": "c1",
            "toolName": "bash",
            "isError": False,
            "timestamp": 2,
            "content": [{"type": "text", "text": output}],
        }
    )
    page = export(manager, tmp_path)
    out = drive(
        page,
        [
            js("document.querySelector('.tool .codebox pre').textContent.length"),
            {"do": "click", "sel": ".tool .codebox button.copy"},
            {"do": "wait", "ms": 300},
            js("navigator.clipboard.readText()"),
        ],
        clipboard=True,
    )
    clean(out)
    shown, copied = out["values"]
    assert shown < 80_000  # 64 KB, its tabs drawn as three spaces
    assert copied == output.rstrip()  # the output as it is (the bash view trims its end)
