"""Markdown in the viewer is CommonMark (with GFM tables and strikethrough), code is highlighted,
and pathological input renders in linear time. Examples are from the CommonMark 0.31 and GFM specs."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from test_viewer_browser import clean, drive, export, js

from pisession import SessionManager

# (name, Markdown, the HTML the spec gives, newlines between tags dropped on both sides)
SPEC = [
    (
        "setext heading (CommonMark 80)",
        "Foo *bar*\n=========\n\nFoo *bar*\n---------",
        "<h1>Foo <em>bar</em></h1><h2>Foo <em>bar</em></h2>",
    ),
    ("setext over two lines (CommonMark 81)", "Foo *bar\nbaz*\n====", "<h1>Foo <em>bar\nbaz</em></h1>"),
    (
        "reference link (CommonMark 192)",
        '[foo]: /url "title"\n\n[foo]',
        '<p><a href="/url" title="title">foo</a></p>',
    ),
    (
        "full reference link (CommonMark 528)",
        "[link [foo [bar]]][ref]\n\n[ref]: /uri",
        '<p><a href="/uri">link [foo [bar]]</a></p>',
    ),
    (
        "collapsed reference (CommonMark 553)",
        '[foo][]\n\n[foo]: /url "title"',
        '<p><a href="/url" title="title">foo</a></p>',
    ),
    (
        "entities (CommonMark 25)",
        "&nbsp; &amp; &copy; &AElig; &Dcaron;\n&frac34; &HilbertSpace; &DifferentialD;\n"
        "&ClockwiseContourIntegral; &ngE;",
        "<p>\u00a0 &amp; \u00a9 \u00c6 \u010e\n\u00be \u210b \u2146\n\u2232 \u2267\u0338</p>",
    ),
    ("numeric entities (CommonMark 26)", "&#35; &#1234; &#992; &#0;", "<p># \u04d2 \u03e0 \ufffd</p>"),
    (
        "escaped pipes in a table (GFM 200)",
        "| f\\|oo  |\n| ------ |\n| b `\\|` az |\n| b **\\|** im |",
        "<table><thead><tr><th>f|oo</th></tr></thead><tbody><tr><td>b <code>|</code> az</td></tr>"
        "<tr><td>b <strong>|</strong> im</td></tr></tbody></table>",
    ),
    ("emphasis (CommonMark 350)", "*foo bar*", "<p><em>foo bar</em></p>"),
    ("not emphasis (CommonMark 351)", "a * foo bar*", "<p>a * foo bar*</p>"),
    ("intraword underscore (CommonMark 358)", "foo_bar_", "<p>foo_bar_</p>"),
    ("nested emphasis (CommonMark 413)", "*foo**bar**baz*", "<p><em>foo<strong>bar</strong>baz</em></p>"),
    ("triple emphasis (CommonMark 419)", "foo***bar***baz", "<p>foo<em><strong>bar</strong></em>baz</p>"),
    ("rule of three (CommonMark 411)", "*foo**bar*", "<p><em>foo**bar</em></p>"),
    (
        "strikethrough (GFM 491)",
        "~~Hi~~ Hello, ~~there~~ world!",
        "<p><del>Hi</del> Hello, <del>there</del> world!</p>",
    ),
    (
        "task list items, as text boxes (GFM 279)",
        "- [ ] foo\n- [x] bar",
        "<ul><li>☐ foo</li><li>☑ bar</li></ul>",
    ),
    (
        "backslash escapes (CommonMark 12)",
        "\\*not emphasized*\n\\[not a link](/foo)",
        "<p>*not emphasized*\n[not a link](/foo)</p>",
    ),
]


def _plain(html: str) -> str:
    # The viewer adds rel/target to links leaving the page; the spec's HTML has neither.
    html = re.sub(r' (rel="noopener noreferrer"|target="_blank")', "", html)
    # markdown-it writes GFM's strikethrough as <s>, the spec as <del>: the same thing.
    html = html.replace("<s>", "<del>").replace("</s>", "</del>")
    return re.sub(r">\n+<", "><", html).strip()


def test_commonmark_spec_examples(tmp_path: Path) -> None:
    page = export(SessionManager.in_memory("/p"), tmp_path)
    out = drive(page, [js(f"window.pisessionViewer.markdown({json.dumps(md)})") for _, md, _ in SPEC])
    clean(out)
    for (name, _, expected), got in zip(SPEC, out["values"], strict=True):
        assert _plain(got) == expected, name


CODE = {
    "diff": "@@ -1 +1 @@\n-old\n+new",
    "html": '<div class="a">x</div>',
    "xml": '<?xml version="1.0"?>\n<a b="c"/>',
    "php": "<?php\nfunction f($x) { return $x; }",
    "kotlin": "fun main() { val x = 1 }",
    "python": "def f():\n    return 1",
}


@pytest.mark.parametrize("lang", sorted(CODE))
def test_fenced_code_is_highlighted(tmp_path: Path, lang: str) -> None:
    page = export(SessionManager.in_memory("/p"), tmp_path)
    source = f"```{lang}\n{CODE[lang]}\n```"
    out = drive(
        page,
        [
            js(
                "(() => { const d = document.createElement('div');"
                f" d.innerHTML = window.pisessionViewer.markdown({json.dumps(source)});"
                " return [d.querySelectorAll('pre code span[class^=hljs-]').length,"
                " d.querySelector('pre code').textContent]; })()"
            )
        ],
    )
    clean(out)
    ((spans, text),) = out["values"]
    assert spans > 0
    assert text == CODE[lang]  # highlighting changes no character


def test_a_400_kb_adversarial_message_renders(tmp_path: Path) -> None:
    manager = SessionManager.in_memory("/p")
    hostile = "**a " * 100_000 + "[x](" * 20_000 + "`" * 50_000
    manager.append_message({"role": "user", "content": hostile, "timestamp": 1})
    manager.append_message({"role": "user", "content": "after it", "timestamp": 2})
    page = export(manager, tmp_path)
    out = drive(
        page,
        [
            js("document.querySelector('#messages').textContent.includes('after it')"),
            js(
                "(() => { const t = performance.now();"
                " window.pisessionViewer.markdown('_a ' .repeat(130000));"
                " return performance.now() - t; })()"
            ),
        ],
    )
    clean(out)
    shown, took_ms = out["values"]
    assert shown is True
    assert took_ms < 10_000  # a hang detector, not a timing: linear work takes well under a second


MARKDOWN_PAYLOADS = [
    "<javascript:alert(1)>",
    "[a](<javascript:alert(1)>)",
    "[a](&#106;avascript:alert(1))",
    "[a](jav&#x09;ascript:alert(1))",
    "[r]\n\n[r]: javascript:alert(1)",
    "[a](vbscript:msgbox(1)) [b](data:text/html;base64,PHNjcmlwdD4=) [c](file:///etc/passwd)",
    "![x](javascript:alert(1)) ![y](https://example.com/t.png)",
    "<script>alert(1)</script>\n\n<iframe src=x></iframe>\n\n<img src=x onerror=alert(1)>",
    '```"><script>alert(1)</script>\ncode\n```',
    "<svg onload=alert(1)> *<b onmouseover=alert(1)>x</b>*",
    '[a](https://example.com "t\\" onmouseover=alert(1) x=\\"")',
    "javascript:alert(1) www.example.com mailto:a@b.c",
]


def test_markdown_payloads_make_no_active_markup(tmp_path: Path) -> None:
    page = export(SessionManager.in_memory("/p"), tmp_path)
    check = (
        "(md => { const d = document.createElement('div'); d.innerHTML = window.pisessionViewer.markdown(md);"
        " const bad = [...d.querySelectorAll('*')].filter(e =>"
        " /^(script|iframe|img|svg|object|embed|style)$/i.test(e.tagName)"
        " || [...e.attributes].some(a => /^on/i.test(a.name)));"
        " const hrefs = [...d.querySelectorAll('[href]')].map(a => a.getAttribute('href'));"
        " return [bad.length, hrefs]; })"
    )
    out = drive(page, [js(f"{check}({json.dumps(md)})") for md in MARKDOWN_PAYLOADS])
    clean(out)
    for md, (bad, hrefs) in zip(MARKDOWN_PAYLOADS, out["values"], strict=True):
        assert bad == 0, md
        for href in hrefs:
            scheme = re.match(r"\s*([A-Za-z][A-Za-z0-9+.-]*):", href)
            assert scheme is None or scheme.group(1).lower() in ("http", "https", "mailto"), (md, href)


# Each a 400 KB message built to make a regex renderer backtrack (as h/hostile's Node test had
# them): an opening mark with no closer, a label or a title that never closes.
SIZE = 400_000
ADVERSARIAL = {"**a ": "<strong>", "__a ": "<strong>", "~~a ": "<s>", "[": "<a ", '[a](b "x ': "<a "}


def test_adversarial_messages_render_and_marks_spanning_one_still_pair(tmp_path: Path) -> None:
    page = export(SessionManager.in_memory("/p"), tmp_path)
    render = "window.pisessionViewer.markdown({}.repeat({}))"
    steps = [js(render.format(json.dumps(unit), SIZE // len(unit))) for unit in ADVERSARIAL]
    steps.append(js(f"window.pisessionViewer.markdown('**' + 'a '.repeat({SIZE // 2}) + 'b**')"))
    out = drive(page, steps)
    clean(out)
    *adversarial, whole = out["values"]
    for (unit, tag), html in zip(ADVERSARIAL.items(), adversarial, strict=True):
        assert tag not in html, unit
        assert len(html) >= SIZE  # every character is still there, escaped
    assert whole.count("<strong>") == 1
