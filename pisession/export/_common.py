"""What the Markdown and HTML exports share: the straight runs of the tree, the title, the branch."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._json import dumps
from .._reading import SessionReader
from .._results import TreeNode
from ..describe import content_text, one_line

Wire = dict[str, Any]


@dataclass(frozen=True)
class Run:
    """A straight stretch of the tree: entries from a root or a branch point to the next one."""

    entries: list[Wire]
    parent: Wire | None
    index: int
    count: int


def runs(manager: SessionReader) -> list[Run]:
    out: list[Run] = []
    roots: Sequence[TreeNode] = manager.get_tree()
    stack: list[tuple[TreeNode, Wire | None, int, int]] = [
        (roots[i], None, i, len(roots)) for i in reversed(range(len(roots)))
    ]
    while stack:
        node, parent, position, count = stack.pop()
        entries: list[Wire] = []
        current = node
        while True:
            entries.append(current.wire_entry)
            if len(current.children) != 1:
                break
            current = current.children[0]
        kids = current.children
        for i in reversed(range(len(kids))):
            stack.append((kids[i], current.wire_entry, i, len(kids)))
        out.append(Run(entries, parent, position, count))
    return out


def wire_branch(manager: SessionReader) -> list[Wire]:
    """The entries (JSON, as the file holds them) from the root to the manager's leaf."""
    index = manager.snapshot()
    leaf_id = manager.get_leaf_id()
    leaf = index.resolve_leaf(leaf_id) if leaf_id is not None else None
    return [index.entry_at(p) for p in index.path_positions(leaf)]


def export_title(manager: SessionReader) -> str:
    name = manager.get_session_name()
    if name:
        return name
    for entry in manager.snapshot().wire_entries():
        message = entry.get("message")
        if entry.get("type") == "message" and isinstance(message, Mapping) and message.get("role") == "user":
            text = content_text(message.get("content")).strip()
            if text:
                return one_line(text, 80)
    header = manager.get_header()
    return f"Pi session {header.id if header else ''}".strip()


def pretty_json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, indent=2)
    except RecursionError:  # nested deeper than the json module goes: our encoder is iterative
        return dumps(value)
    except (TypeError, ValueError):
        return repr(value)


def label_of(manager: SessionReader, entry: Mapping[str, Any]) -> str | None:
    entry_id = entry.get("id")
    return manager.get_label(entry_id) if isinstance(entry_id, str) else None
