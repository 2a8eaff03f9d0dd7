"""Read-only views of a session as data: the tree in display order and the model context with a
size estimate (what ``pisession tree`` and ``pisession context`` print, and their ``--json``).

::

    from pisession import SessionManager
    from pisession.views import context_data, tree_rows

    manager = SessionManager.open("session.jsonl")
    for row in tree_rows(manager):
        print(row.prefix, row.entry["id"], row.active)
    print(context_data(manager)["totals"]["approxTokens"])
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence

from ._arguments import session_manager
from ._manager import SessionManager
from ._results import TreeNode
from ._values import UNSET
from .describe import SessionFacts, _blocks, _compact_json, content_text, describe_entry

# typing for type checkers only (they take TYPE_CHECKING for true): importing it at run time
# took 8 % of `pisession tree`'s start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["TreeRow", "tree_rows", "tree_data", "context_data", "message_size"]


class TreeRow:
    """One line of the tree: the node, its graph prefix (``├─ ``, ``│  ``), its depth (branch
    points passed), the children shown under it and whether it is on the active branch.
    Immutable; a plain class for start-up, as :class:`pisession.describe.Note` explains."""

    __slots__ = ("_node", "_prefix", "_depth", "_children", "_active")
    __match_args__ = ("node", "prefix", "depth", "children", "active")

    def __init__(
        self, node: TreeNode, prefix: str, depth: int, children: tuple[TreeNode, ...], active: bool
    ) -> None:
        self._node = node
        self._prefix = prefix
        self._depth = depth
        self._children = children
        self._active = active

    @property
    def node(self) -> TreeNode:
        return self._node

    @property
    def prefix(self) -> str:
        return self._prefix

    @property
    def depth(self) -> int:
        return self._depth

    @property
    def children(self) -> tuple[TreeNode, ...]:
        return self._children

    @property
    def active(self) -> bool:
        return self._active

    @property
    def entry(self) -> dict[str, Any]:
        """The entry's JSON."""
        return self._node.wire_entry

    def _fields(self) -> tuple[Any, ...]:
        return (self._node, self._prefix, self._depth, self._children, self._active)

    def __repr__(self) -> str:
        return (
            f"TreeRow(node={self._node!r}, prefix={self._prefix!r}, depth={self._depth!r}, "
            f"children={self._children!r}, active={self._active!r})"
        )

    def __eq__(self, other: object) -> bool:
        if type(other) is not TreeRow:
            return NotImplemented
        return self._fields() == other._fields()

    def __hash__(self) -> int:
        return hash(self._fields())  # a TypeError, as TreeNode is not hashable


def _visible(nodes: Sequence[TreeNode], hidden: Callable[[dict[str, Any]], bool]) -> list[TreeNode]:
    out: list[TreeNode] = []
    stack = list(reversed(nodes))
    while stack:
        node = stack.pop()
        if hidden(node.wire_entry):
            stack.extend(reversed(node.children))
        else:
            out.append(node)
    return out


def _rows(manager: SessionManager, show_all: bool) -> Iterator[tuple[TreeNode, str, int, list[TreeNode]]]:
    def hidden(entry: dict[str, Any]) -> bool:
        return not show_all and entry.get("type") == "usage"

    roots = _visible(manager.get_tree(), hidden)
    stack: list[tuple[TreeNode, str, str, int]] = []
    if len(roots) == 1:
        stack.append((roots[0], "", "", 0))
    else:
        for i in reversed(range(len(roots))):
            last = i == len(roots) - 1
            stack.append((roots[i], "└─ " if last else "├─ ", "   " if last else "│  ", 1))
    while stack:
        node, first, cont, depth = stack.pop()
        kids = _visible(node.children, hidden)
        yield node, first, depth, kids
        if len(kids) == 1:
            stack.append((kids[0], cont, cont, depth))
        else:
            for i in reversed(range(len(kids))):
                last = i == len(kids) - 1
                stack.append(
                    (kids[i], cont + ("└─ " if last else "├─ "), cont + ("   " if last else "│  "), depth + 1)
                )


def tree_rows(
    manager: SessionManager | str | os.PathLike[str],
    *,
    show_all: bool = True,
    facts: SessionFacts | None = None,
) -> Iterator[TreeRow]:
    """The tree in display order, without recursion: ``for row in tree_rows(manager): ...``.

    A run of single children stays in one column; only a branch point indents, like
    ``git log --graph``, so a 100,000-entry conversation is 100,000 aligned rows. With
    ``show_all=False`` usage entries are left out (their children move up). ``facts``: the
    :class:`~pisession.describe.SessionFacts` of ``manager`` when the caller has made them
    already (for the notes beside each row), so they are not made again.
    """
    return _tree_rows(session_manager(manager, "tree_rows"), show_all, facts)  # a wrong argument fails here


def _tree_rows(
    manager: SessionManager, show_all: bool, facts: SessionFacts | None = None
) -> Iterator[TreeRow]:
    if facts is None:
        facts = SessionFacts(manager)
    for node, prefix, depth, kids in _rows(manager, show_all):
        yield TreeRow(node, prefix, depth, tuple(kids), facts.is_active(node.wire_entry))


def tree_data(manager: SessionManager | str | os.PathLike[str]) -> dict[str, Any]:
    """The whole tree as JSON-ready data (what ``pisession tree --json`` prints)."""
    manager = session_manager(manager, "tree_data")
    facts = SessionFacts(manager)
    nodes = []
    for row in _tree_rows(manager, True, facts):  # the facts once, not again for the rows
        entry = row.entry
        item: dict[str, Any] = {
            "id": entry.get("id"),
            "parentId": entry.get("parentId"),
            "type": entry.get("type"),
            "depth": row.depth,
            "active": row.active,
            "children": [k.wire_entry.get("id") for k in row.children],
            "text": describe_entry(entry),
        }
        label = row.node.label
        if label is not None:
            item["label"] = label
            item["labelTimestamp"] = row.node.label_timestamp
        item["entry"] = entry
        nodes.append(item)
    # get_header().id without typing the header, which reads an id that is not a string as ""
    header = manager._header
    header_id = (header.get("id") if isinstance(header.get("id"), str) else "") if header else None
    return {
        "sessionId": header_id,
        "leafId": facts.leaf_id,
        "name": manager.get_session_name(),
        "entryCount": len(facts.entries),
        "cycles": [list(c) for c in manager.snapshot().cycles],
        "nodes": nodes,
    }


def message_size(message: Mapping[str, Any]) -> tuple[int, int]:
    """(characters, images) of a message's JSON the way Pi estimates tokens: text, thinking,
    tool names and arguments, summaries, shell commands and output."""
    chars = 0
    images = 0
    role = message.get("role")
    content = message.get("content")
    if isinstance(content, str):
        chars += len(content)
    for block in _blocks(content):
        kind = block.get("type")
        if kind == "text":
            chars += len(str(block.get("text", "")))
        elif kind == "thinking":
            chars += len(str(block.get("thinking", "")))
        elif kind == "toolCall":
            chars += len(str(block.get("name", ""))) + len(_compact_json(block.get("arguments", {})))
        elif kind == "image":
            images += 1
    if role in ("branchSummary", "compactionSummary"):
        chars += len(str(message.get("summary", "")))
    elif role == "bashExecution":
        chars += len(str(message.get("command", ""))) + len(str(message.get("output", "")))
    return chars, images


def _system_size(system: Mapping[str, Any] | None) -> int:
    if system is None:
        return 0
    chars = len(content_text(system.get("content")))
    sections = system.get("sections")
    if isinstance(sections, Mapping):
        chars += sum(len(v) for v in sections.values() if isinstance(v, str))
    tools = system.get("toolsAdded")
    if isinstance(tools, list) and tools:
        chars += len(_compact_json(tools))
    return chars


def context_data(manager: SessionManager | str | os.PathLike[str]) -> dict[str, Any]:
    """What the model receives at the manager's leaf, as JSON-ready data (``pisession context
    --json``): ``leafId``, ``model``, ``thinkingLevel``, the replayed ``system`` message, the
    ``messages``, and ``totals`` with ``approxTokens`` (Pi's estimate,
    :func:`pisession.compaction.estimate_tokens`: characters / 4 per message, 1,200 per image)."""
    manager = session_manager(manager, "context_data")
    from ._builders import get_current_system_message
    from ._codec import to_wire

    context = manager.build_session_context()
    # Typed str, but UNSET when a thinking_level_change entry has no level.
    thinking: Any = context.thinking_level
    if thinking is UNSET:
        thinking = None
    messages = [to_wire(m) for m in context.messages]
    replayed = get_current_system_message(messages)
    system = to_wire(replayed) if replayed is not None else None
    chars = 0
    from .compaction import estimate_tokens_js  # the compaction machinery only for context sizes

    images = 0
    tokens: float = 0  # NaN where Pi cannot count the text (estimate_tokens)
    for message in messages:
        if message.get("role") == "system":
            continue  # counted once, replayed, below
        c, i = message_size(message)
        chars += c
        images += i
        tokens += estimate_tokens_js(message)  # type: ignore[operator]  # NaN where Pi cannot count
    chars += _system_size(system)
    if system is not None:
        tokens += estimate_tokens_js(system)  # type: ignore[operator]  # the replayed system message, once
    return {
        "leafId": manager.get_leaf_id(),
        "model": to_wire(context.model) if context.model is not None else None,
        "thinkingLevel": thinking,
        "system": system,
        "messages": messages,
        "totals": {"messages": len(messages), "characters": chars, "images": images, "approxTokens": tokens},
    }
