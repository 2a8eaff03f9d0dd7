"""The interactive HTML viewer: one self-contained page for a whole session.

``render_viewer`` embeds the session (header, every entry, the tree's shape, labels, the leaf) as
JSON in a ``<script type="application/json">`` element (past ``COMPRESS_ABOVE`` bytes of JSON,
zlib-compressed in base64, which the page unpacks with ``DecompressionStream``) and inlines the
page's own CSS and JavaScript (``viewer.css``, ``viewer.js``, ``page.html`` beside this module,
and markdown-it and highlight.js from ``vendor/``): the file works offline and fetches nothing.
The page builds everything in the browser, lazily: the sidebar tree is virtualised and only the
messages of the branch being read are rendered, a screenful at a time, so a 20,000-entry session
opens fast (docs/performance.md).

The tree's shape comes from :meth:`SessionManager.get_tree` (children sorted by time, orphans as
roots, no cycles), so the page never walks ``parentId`` links itself. Session text reaches the
page only as JSON data and is escaped by the page's renderer (``viewer.js``; markdown-it with raw
HTML off): raw HTML in a session is shown, never run. The policy allows the one script by hash.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import json
import re
import zlib
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import TYPE_CHECKING, Any

from .._json import dumps
from .._results import TreeNode
from .._version import __version__

if TYPE_CHECKING:
    from .._session import SessionView

try:
    import orjson as _orjson
except ImportError:  # pragma: no cover - orjson is a dependency, but pisession runs without it
    _orjson = None  # type: ignore[assignment]

__all__ = ["embed_json", "render_viewer"]

# Past this much JSON the page embeds the session compressed (docs/performance.md), if that
# makes it at most PACKED_RATIO of the JSON's size: Chromium unpacks only about 40 MB/s, so
# text that compresses badly (a 40 MB log of hashes: 0.7) opens faster as plain JSON.
COMPRESS_ABOVE = 1_000_000
PACKED_RATIO = 0.5

# Inside <script> the HTML parser ends the element at "</script" and treats "<!--" specially;
# U+2028/2029 are escaped too so the text is safe wherever it is pasted. These characters occur
# only inside JSON strings, where their \u escapes mean the same thing. Replaced in the UTF-8
# bytes: several times faster than in a str of 17 MB.
_SCRIPT_UNSAFE = (
    (b"<", b"\\u003c"),
    (b">", b"\\u003e"),
    (b"&", b"\\u0026"),
    ("\u2028".encode(), b"\\u2028"),
    ("\u2029".encode(), b"\\u2029"),
)
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _json_bytes(value: object) -> bytes:
    # The page only parses this, so any valid JSON will do: orjson (about 10x faster than the
    # JavaScript-exact writer on a 20,000-entry session), else json, else that writer, which
    # also takes what the others refuse (integers past 64 bits, NaN read as JavaScript would).
    if _orjson is not None:
        try:
            return _orjson.dumps(value)
        except (TypeError, ValueError):
            pass
    try:
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (ValueError, RecursionError):  # RecursionError: nested deeper than json goes
        text = dumps(value)
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", text).encode("utf-8")


def embed_json(value: object) -> str:
    """JSON text of ``value`` that can sit inside ``<script type="application/json">``::

        embed_json({"text": "</script>"})  # '{"text":"\\u003c/script\\u003e"}'
    """
    data = _json_bytes(value)
    for unsafe, escape in _SCRIPT_UNSAFE:
        data = data.replace(unsafe, escape)
    return data.decode("utf-8")


@functools.cache
def _asset(name: str) -> str:
    return resources.files(__name__).joinpath(name).read_text(encoding="utf-8")


# Vendored, each with its licence beside it in vendor/: markdown-it (MIT) renders Markdown as
# CommonMark with GFM tables and strikethrough, highlight.js's common build (BSD-3-Clause) colours
# code. Neither uses eval or new Function, so the page's policy allows its one script by hash.
_VENDOR = ("vendor/markdown-it.min.js", "vendor/highlight.min.js")


@functools.cache
def _script() -> str:
    return "\n".join([*(_asset(name) for name in _VENDOR), _asset("viewer.js")])


@functools.cache
def _script_hash(script: str) -> str:
    # The template writes the script as "<script>\n{{JS}}\n</script>": its text is what is hashed.
    digest = hashlib.sha256(("\n" + script + "\n").encode("utf-8")).digest()
    return "sha256-" + base64.b64encode(digest).decode("ascii")


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, Sequence):
        return "".join(
            str(b.get("text")) for b in content if isinstance(b, Mapping) and b.get("type") == "text"
        )
    return ""


def _default_title(manager: SessionView, entries: Sequence[Mapping[str, Any]]) -> str:
    name = manager.get_session_name()
    if name:
        return name
    for entry in entries:
        message = entry.get("message")
        if entry.get("type") == "message" and isinstance(message, Mapping) and message.get("role") == "user":
            text = " ".join(_text_of(message.get("content")).split())
            if text:
                return text if len(text) <= 80 else text[:79] + "…"
    header = manager.get_header()
    return f"Pi session {header.id if header else ''}".strip()


def _tree_shape(roots: Sequence[TreeNode], count: int) -> tuple[list[int], list[int], dict[str, str]]:
    """Each entry's parent position in the tree (-1 for a root), the positions in pre-order (so
    siblings keep the tree's time order), and the labels by position."""
    parent = [-1] * count
    order: list[int] = []
    labels: dict[str, str] = {}
    seen = [False] * count
    stack: list[tuple[TreeNode, int]] = [(node, -1) for node in reversed(roots)]
    while stack:
        node, above = stack.pop()
        position = node[1][0]  # a node is (snapshot, (position, children)): see TreeNode
        if seen[position]:
            continue
        seen[position] = True
        parent[position] = above
        order.append(position)
        label = node.label
        if label:
            labels[str(position)] = label
        stack.extend((child, position) for child in reversed(node.children))
    # Whatever the tree did not reach (entries on a parentId cycle) is shown as a root.
    order.extend(p for p in range(count) if not seen[p])
    return parent, order, labels


def _session_data(manager: SessionView, title: str | None) -> dict[str, Any]:
    index = manager.snapshot()
    entries = index.wire_entries()
    parent, order, labels = _tree_shape(manager.get_tree(), len(entries))
    # A duplicated id names its last entry, as in Pi's byId map.
    positions = {str(entry.get("id")): position for position, entry in enumerate(entries)}
    leaf_id = manager.get_leaf_id()
    header = manager._header_wire()
    return {
        "format": 1,
        "generator": f"pisession {__version__}",
        "title": title if title is not None else _default_title(manager, entries),
        "header": header or None,
        "entries": entries,
        "parent": parent,
        "order": order,
        "labels": labels,
        # keyed as the positions are: an id may be any JSON value (a list, an object: unhashable)
        "leaf": positions.get(str(leaf_id), -1) if leaf_id is not None else -1,
    }


def _html_text(text: str) -> str:
    # A lone surrogate cannot be written as UTF-8, and HTML reads its character reference as
    # U+FFFD anyway.
    text = _LONE_SURROGATE.sub("\ufffd", text)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace('"', "&quot;")


def _packed(data: bytes) -> str:
    # zlib format, which the page's DecompressionStream("deflate") reads; base64 needs no escaping.
    # Level 1: on Pi's 20,000-entry file 0.3 s for 6.5 MB, where level 6 took 1.1 s for 5.4 MB.
    return base64.b64encode(zlib.compress(data, 1)).decode("ascii")


def render_viewer(manager: SessionView, *, title: str | None = None, compress: bool | None = None) -> str:
    """The whole session as one self-contained interactive HTML page::

        html = render_viewer(SessionManager.open("session.jsonl"))

    ``title`` defaults to the session's name, else its first user message. ``compress`` embeds
    the session compressed (the page unpacks it); by default only past ``COMPRESS_ABOVE`` bytes,
    and only when that makes it at most ``PACKED_RATIO`` of the size.
    """
    data = _session_data(manager, title)
    script = _script()
    raw = embed_json(data)
    packed: str | None = None
    if compress or (compress is None and len(raw) > COMPRESS_ABOVE):
        encoded = raw.encode("utf-8")
        packed = _packed(encoded)
        if compress is None and len(packed) > PACKED_RATIO * len(encoded):
            packed = None
    fills = {
        "TITLE": _html_text(data["title"]),
        "CSS": _asset("viewer.css"),
        "KIND": "application/x-pisession-zlib-base64" if packed is not None else "application/json",
        "DATA": packed if packed is not None else raw,
        "JS": script,
        "SCRIPTHASH": _script_hash(script),
    }
    # One pass over the template, so text filled in is never searched for more placeholders.
    return re.sub(r"\{\{([A-Z]+)\}\}", lambda m: fills[m.group(1)], _asset("page.html"))
