"""pisession's view of a session in the shape oracle.mjs dumps Pi's, for comparison."""

from __future__ import annotations

from typing import Any

import pisession
from pisession import SessionManager, TreeNode, to_wire


def tree_of(nodes: list[TreeNode]) -> list[dict[str, Any]]:
    out = []
    stack: list[tuple[TreeNode, list[dict[str, Any]]]] = [(n, out) for n in reversed(nodes)]
    # iterative: sessions can be deep
    pending: list[tuple[TreeNode, list[dict[str, Any]]]] = []
    for node in nodes:
        pending.append((node, out))
    out.clear()
    while pending:
        node, target = pending.pop(0)
        item = {
            "id": node.wire_entry.get("id"),
            "label": node.label,
            "labelTimestamp": node.label_timestamp,
            "children": [],
        }
        target.append(item)
        pending[0:0] = [(child, item["children"]) for child in node.children]
    del stack
    return out


def leaf_view(index: pisession.TreeIndex, leaf: Any) -> dict[str, Any]:
    projection = pisession.build_session_projection(index, leaf)
    return {
        "contextEntries": [e.id for e in pisession.build_context_entries(index, leaf)],
        "projection": [
            {"source": p.source_entry.id, "messages": [to_wire(m) for m in p.messages]}
            for p in projection.entries
        ],
        "context": to_wire(pisession.build_session_context(index, leaf)),
    }


def dump(manager: SessionManager, all_leaves: bool) -> dict[str, Any]:
    entries = manager.get_entries()
    out: dict[str, Any] = {
        "header": to_wire(manager.get_header()),
        "entries": [to_wire(e) for e in entries],
        "leafId": manager.get_leaf_id(),
        "sessionName": manager.get_session_name(),
        "labels": {e.id: manager.get_label(e.id) for e in entries if manager.get_label(e.id) is not None},
        "tree": tree_of(manager.get_tree()),
        "branch": [e.id for e in manager.get_branch()],
        "current": {
            "contextEntries": [e.id for e in manager.build_context_entries()],
            "context": to_wire(manager.build_session_context()),
        },
    }
    if all_leaves:
        index = manager.snapshot()
        out["leaves"] = {
            e.id: {"branch": [x.id for x in manager.get_branch(e.id)], **leaf_view(index, e.id)}
            for e in entries
        }
    return out


def canonical(value: Any) -> str:
    """JSON text as JavaScript writes it (key order kept, 0.0 written 0), so comparisons see
    order as well as values."""
    from pisession._json import dumps

    return dumps(value)


def assert_same(ours: Any, golden: Any, where: str) -> None:
    if canonical(ours) != canonical(golden):
        assert ours == golden, where  # shows the differing values
        raise AssertionError(
            f"{where}: same values, different key order:\n"
            f"{canonical(ours)[:2000]}\n{canonical(golden)[:2000]}"
        )
