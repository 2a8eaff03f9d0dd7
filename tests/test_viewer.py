"""The HTML viewer's page as text: the embedded data, its escaping, the tree's shape, and the page
fetching nothing. What it does in a browser is tested in tests/browser/."""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
import zlib
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from pisession import SessionManager, TreeNode, read_session
from pisession._viewer import _VENDOR, _asset, _script, _script_hash, embed_json, render_viewer

CASES = Path(__file__).parent / "conformance" / "cases"

HOSTILE = [
    "</script><script>alert(1)</script>",
    "</SCRIPT >",
    "<!--<script>",
    "<img src=x onerror=alert(1)>",
    "[x](javascript:alert(1))",
    "a\u2028b\u2029c",
    "&amp; &lt; \\u003c",
    "\ud800 lone surrogate",
]


class _Scripts(HTMLParser):
    """Collects <script> elements as a browser's tokenizer splits them."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=False)
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self._attrs: dict[str, str | None] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "script":
            self._attrs = dict(attrs)
            self.scripts.append((self._attrs, ""))

    def handle_data(self, data: str) -> None:
        if self._attrs is not None:
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._attrs = None


def scripts(page: str) -> list[tuple[dict[str, str | None], str]]:
    parser = _Scripts()
    parser.feed(page)
    return parser.scripts


def embedded(page: str) -> Any:
    (data,) = [text for attrs, text in scripts(page) if attrs.get("id") == "pisession-data"]
    return json.loads(data)


def hostile_session() -> SessionManager:
    manager = SessionManager.in_memory("/p")
    for text in HOSTILE:
        manager.append_message({"role": "user", "content": text, "timestamp": 1})
    manager.append_custom_entry("</script>", {"</script>": HOSTILE})
    manager.append_label_change(manager.get_leaf_id() or "", "</script><b>")
    return manager


@pytest.mark.parametrize("text", HOSTILE)
def test_embed_json_escapes_what_could_end_the_script(text: str) -> None:
    out = embed_json({"text": text, text: [text]})
    assert not set(out) & set("<>&\u2028\u2029")
    assert json.loads(out) == {"text": text, text: [text]}
    out.encode("utf-8")  # a lone surrogate is written as its escape


def test_hostile_entries_stay_inside_the_data_element() -> None:
    manager = hostile_session()
    page = render_viewer(manager)
    page.encode("utf-8")
    found = scripts(page)
    # Exactly the data element and the viewer's own script: session text opened no element.
    assert [attrs.get("id") for attrs, _ in found] == ["pisession-data", None]
    assert found[0][0].get("type") == "application/json"
    data = embedded(page)
    assert data["entries"] == manager.snapshot().wire_entries()
    assert data["labels"] == {str(len(HOSTILE)): "</script><b>"}


def test_data_before_escaping_would_close_the_element() -> None:
    # Guards the test above: without the escaping the hostile text does end the data element.
    raw = '<script type="application/json">' + json.dumps(HOSTILE[0]) + "</script>"
    assert len(scripts(raw)) == 2


def test_page_fetches_nothing() -> None:
    page = render_viewer(hostile_session())
    head = page[: page.index("<body")]
    assert "default-src 'none'" in head and "connect-src 'none'" in head
    without_data = re.sub(r'(<script id="pisession-data"[^>]*>).*?(</script>)', r"\1\2", page, flags=re.S)
    assert not re.search(
        r"<link\b|\b(src|href)\s*=\s*[\"']?(https?:)?//|url\(\s*[\"']?(https?:)?//", without_data
    )
    assert "@import" not in _asset("viewer.css")  # (highlight.js names Objective-C's @import: not CSS)
    script = _script()
    assert "vendor/markdown-it.min.js" in _VENDOR and "markdown-it" in script and "Highlight.js" in script
    assert not re.search(r"\bfetch\(|XMLHttpRequest|WebSocket|EventSource|import\(|sendBeacon", script)
    # Nor does it evaluate text as code, so the policy allows the one script by its hash alone.
    assert not re.search(r"\beval\(|new Function\b|\bFunction\(", script)
    assert f"script-src '{_script_hash(script)}'" in head and "unsafe" not in head.split("style-src")[0]


def test_assets_can_be_inlined() -> None:
    assert "</script" not in _script().lower()
    assert "</style" not in _asset("viewer.css").lower()
    holes = ["SCRIPTHASH", "TITLE", "CSS", "KIND", "DATA", "JS"]
    assert re.findall(r"\{\{([A-Z]+)\}\}", _asset("page.html")) == holes


def _shape(roots: list[TreeNode] | tuple[TreeNode, ...], wire: list[dict[str, Any]]) -> dict[int, list[int]]:
    """Children positions per parent position (-1: roots), from get_tree. With duplicated ids
    (Pi's tree holds the last one's node twice) a node is kept where first met and an entry the
    tree never reaches is a root."""
    kids: dict[int, list[int]] = {}
    seen: set[int] = set()
    stack: list[tuple[int, TreeNode]] = [(-1, node) for node in reversed(roots)]
    while stack:
        above, node = stack.pop()
        here = node[1][0]  # the position in the snapshot (see TreeNode)
        if here in seen:
            continue
        seen.add(here)
        kids.setdefault(above, []).append(here)
        stack.extend((here, child) for child in reversed(node.children))
    kids.setdefault(-1, []).extend(p for p in range(len(wire)) if p not in seen)
    return {k: sorted(v) for k, v in kids.items()}


@pytest.mark.parametrize(
    "case", ["branched_labels", "orphans", "duplicate_ids", "multiple_roots", "label_edges"]
)
def test_tree_shape_and_leaf_match_the_manager(tmp_path: Path, case: str) -> None:
    path = tmp_path / "s.jsonl"
    shutil.copy(CASES / f"{case}.jsonl", path)
    manager = SessionManager.open(path)
    data = embedded(render_viewer(manager))
    wire = manager.snapshot().wire_entries()
    count = len(wire)
    assert sorted(data["order"]) == list(range(count))
    seen: set[int] = set()
    for position in data["order"]:
        above = data["parent"][position]
        assert above == -1 or above in seen  # pre-order: a parent before its children
        seen.add(position)
    by_parent: dict[int, list[int]] = {}
    for position in data["order"]:
        by_parent.setdefault(data["parent"][position], []).append(position)
    assert {k: sorted(v) for k, v in by_parent.items()} == _shape(manager.get_tree(), wire)
    assert data["labels"] == {
        str(i): manager.get_label(str(e["id"])) for i, e in enumerate(wire) if manager.get_label(str(e["id"]))
    }
    leaf = manager.get_leaf_id()
    assert data["leaf"] == max(i for i, e in enumerate(wire) if e["id"] == leaf)


@pytest.mark.parametrize("odd_id", [["x"], {"a": 1}, 7])
def test_a_leaf_whose_id_is_not_text_is_still_the_leaf(tmp_path: Path, odd_id: object) -> None:
    """Any JSON value may stand as an entry's id (validate says it is wrong; Pi keeps it): the
    page still renders, with that entry as its leaf."""
    from test_hostile import line, message, session_file

    odd = {**message("aaaa0002", "aaaa0001"), "id": odd_id}
    manager = read_session(session_file(tmp_path, line(message("aaaa0001", None)), line(odd)))
    data = embedded(render_viewer(manager))
    assert manager.get_leaf_id() == odd_id
    assert data["leaf"] == 1 and data["entries"][1]["id"] == odd_id


def test_siblings_keep_the_tree_order(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    shutil.copy(CASES / "branched_labels.jsonl", path)
    manager = SessionManager.open(path)
    data = embedded(render_viewer(manager))
    wire = manager.snapshot().wire_entries()
    index = {e["id"]: i for i, e in enumerate(wire)}
    for node in manager.get_tree():
        stack = [node]
        while stack:
            current = stack.pop()
            children = [index[c.wire_entry["id"]] for c in current.children]
            in_order = [p for p in data["order"] if p in children]
            assert in_order == children
            stack.extend(current.children)


def test_title() -> None:
    manager = SessionManager.in_memory("/p")
    manager.append_message({"role": "user", "content": "  Fix   the <b>tests</b>\nplease ", "timestamp": 1})
    assert "<title>Fix the &lt;b&gt;tests&lt;/b&gt; please</title>" in render_viewer(manager)
    manager.append_session_info("Named & done")
    assert "<title>Named &amp; done</title>" in render_viewer(manager)
    assert "<title>&lt;mine&gt;</title>" in render_viewer(manager, title="<mine>")
    assert embedded(render_viewer(manager, title="<mine>"))["title"] == "<mine>"


def test_lone_surrogate_in_the_title() -> None:
    manager = SessionManager.in_memory("/p")
    manager.append_message({"role": "user", "content": "bad \ud800 text", "timestamp": 1})
    page = render_viewer(manager)
    assert "<title>bad \ufffd text</title>" in page.encode("utf-8").decode("utf-8")
    assert embedded(page)["title"] == "bad \ud800 text"


def test_empty_session() -> None:
    manager = SessionManager.in_memory("/p")
    data = embedded(render_viewer(manager))
    assert data["entries"] == [] and data["leaf"] == -1 and data["header"]["cwd"] == "/p"


def test_a_large_session_is_embedded_compressed() -> None:
    manager = hostile_session()
    plain = render_viewer(manager)
    packed = render_viewer(manager, compress=True)
    ((attrs, text),) = [(a, t) for a, t in scripts(packed) if a.get("id") == "pisession-data"]
    assert attrs.get("type") == "application/x-pisession-zlib-base64"
    assert json.loads(zlib.decompress(base64.b64decode(text))) == embedded(plain)
    # By default only past COMPRESS_ABOVE bytes of JSON.
    assert 'type="application/json"' in plain
    big = SessionManager.in_memory("/p")
    big.append_message({"role": "user", "content": "words " * 200_000, "timestamp": 1})
    big_page = render_viewer(big)
    assert "application/x-pisession-zlib-base64" in big_page and len(big_page) < 200_000 + len(plain)


def test_a_large_session_that_compresses_badly_is_embedded_plain() -> None:
    # Hex digits pack to about 0.67 of their size in base64: the page would open slower packed.
    noise = hashlib.sha256(b"seed").hexdigest()
    text = "".join(hashlib.sha256(f"{noise}{i}".encode()).hexdigest() for i in range(40_000))
    big = SessionManager.in_memory("/p")
    big.append_message({"role": "user", "content": text, "timestamp": 1})
    page = render_viewer(big)
    assert 'type="application/json"' in page
    assert embedded(page)["entries"][0]["message"]["content"] == text
    assert "application/x-pisession-zlib-base64" in render_viewer(big, compress=True)


def test_vendored_libraries_ship_with_their_licences() -> None:
    # hatchling ships every file under pisession/, so these reach the wheel beside the code.
    for script, licence, words in (
        ("markdown-it.min.js", "LICENSE.markdown-it", "Permission is hereby granted, free of charge"),
        ("highlight.min.js", "LICENSE.highlight.js", "Redistribution and use in source and binary forms"),
    ):
        assert f"vendor/{script}" in _VENDOR
        assert words in _asset(f"vendor/{licence}")
