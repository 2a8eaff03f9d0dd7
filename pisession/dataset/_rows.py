"""One session file as the rows of the five tables, in plain Python lists (no Arrow here).

The tree's meaning comes from the library's own index and context builder: the leaf is Pi's
(the last entry in file order), the branch is ``path_positions``, the context entries are
``context_positions`` and the context's messages are ``project_leaf``'s, so every column agrees
with ``SessionManager`` and ``build_session_context`` by construction.
"""

from __future__ import annotations

import bisect
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .._attribution import copied_entry_ids, usage_items
from .._context import entry_to_messages, project_leaf
from .._index import NO_PARENT, TreeIndex
from .._js import MISSING
from .._json import dumps, loads_for
from .._load import (
    is_session_header,
    iter_line_lists,
    migrate_session_entries,
    open_regular,
    parse_line,
    scan_raw,
)
from ..catalog._range import CheckedRange

__all__ = [
    "COLUMNS",
    "Fingerprint",
    "NotASession",
    "ResultMatcher",
    "SessionRows",
    "message_text",
    "read_identities",
    "read_rows",
]

# The column names of each table, in schema order (``_schema`` gives their Arrow types).
COLUMNS: dict[str, tuple[str, ...]] = {
    "sessions": (
        "session_id",
        "session_file",
        "folder",
        "cwd",
        "created",
        "parent_session",
        "name",
        "entry_count",
        "leaf_id",
    ),
    "entries": (
        "session_id",
        "entry_id",
        "parent_id",
        "type",
        "timestamp",
        "on_leaf_branch",
        "in_context",
        "copied",
        "label",
        "json",
    ),
    "messages": (
        "session_id",
        "entry_id",
        "message_index",
        "role",
        "timestamp",
        "text",
        "provider",
        "model",
        "stop_reason",
        "on_leaf_branch",
        "in_context",
        "context_index",
        "context_text",
    ),
    "tool_calls": (
        "session_id",
        "entry_id",
        "timestamp",
        "tool_call_id",
        "name",
        "arguments",
        "on_leaf_branch",
        "is_error",
        "result_text",
        "result_entry_id",
    ),
    "usage": (
        "session_id",
        "entry_id",
        "timestamp",
        "model_key",
        "input",
        "output",
        "cache_read",
        "cache_write",
        "cost",
        "counted",
    ),
}

Fingerprint = tuple[int, int, int, int, int]
"""(device, inode, size, mtime in ns, ctime in ns) of a file as it was read: with the checksum of
its bytes, what the catalog's change rule (:func:`pisession.catalog._change.same_file`) compares."""

_INT64 = 2**63


class NotASession(Exception):
    """The file is not a Pi session (its first JSON object is not a session header)."""

    def __init__(self, path: str, fingerprint: Fingerprint, read_ns: int, crc: int) -> None:
        super().__init__(path)
        self.fingerprint = fingerprint
        self.read_ns = read_ns
        self.crc = crc


class SessionRows:
    """The rows one session file gives each table (``columns[table][column]`` is a list), with
    what the export needs to name and track its files."""

    __slots__ = (
        "path",
        "session_id",
        "cwd",
        "parent",
        "parent_fp",
        "fingerprint",
        "read_ns",
        "crc",
        "columns",
    )

    def __init__(
        self,
        path: str,
        session_id: str,
        cwd: str | None,
        parent: str | None,
        fingerprint: Fingerprint,
        read_ns: int,
    ) -> None:
        self.path = path
        self.read_ns = read_ns
        self.session_id = session_id
        self.cwd = cwd
        self.parent = parent
        self.parent_fp: Fingerprint | None = None  # the parent's, as read for ``copied``
        self.fingerprint = fingerprint
        self.crc = 0  # CRC-32 of the bytes the rows were made from (the fingerprint's size)
        self.columns: dict[str, dict[str, list[Any]]] = {
            table: {name: [] for name in names} for table, names in COLUMNS.items()
        }


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _ms(value: object) -> int | None:
    """A message's Unix-millisecond timestamp as a column value (None when not a usable number)."""
    if type(value) is int:
        return value if -8_640_000_000_000_000 <= value <= 8_640_000_000_000_000 else None
    if type(value) is float and math.isfinite(value) and abs(value) <= 8.64e15:
        return math.trunc(value)
    return None


def _date(value: object) -> str | None:
    """An entry's ISO timestamp, left as text: the Arrow side converts a column at once
    (``_schema.to_table``), as JavaScript's ``Date`` reads it."""
    return value if isinstance(value, str) else None


def _whole(value: object) -> int | None:
    """A token count as an int64 column value: None where Pi's sum would not be a whole number."""
    if type(value) is int:
        return value if -_INT64 <= value < _INT64 else None
    if type(value) is float and value.is_integer() and abs(value) < 2**63:
        return int(value)
    return None


def _cost(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _blocks_text(content: object) -> str | None:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return None
    texts = [
        block["text"]
        for block in content
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
    ]
    return "\n".join(texts) if texts else None


def message_text(message: Mapping[str, Any]) -> str | None:
    """The ``text`` column: a string content, else its text blocks joined with a newline; a
    summary's ``summary``; a shell run's ``output``; None when the message has no text."""
    role = message.get("role")
    if role == "branchSummary" or role == "compactionSummary":
        return _str(message.get("summary"))
    if role == "bashExecution":
        return _str(message.get("output"))
    return _blocks_text(message.get("content"))


def _read_lines(path: str) -> tuple[list[bytes], Fingerprint, int, int]:
    """The file's lines as every reader splits them (:func:`iter_line_lists`: a line too long to
    read is a :class:`SkippedLine`, never held), its fingerprint taken before reading them, when
    that was, and the CRC-32 of the bytes read: as many as the fingerprint's size (a line
    appended meanwhile is read next time, when the size shows it)."""
    with open_regular(path) as handle:
        read_ns = time.time_ns()
        stats = os.fstat(handle.fileno())
        reader = CheckedRange(handle, stats.st_size)
        lines = [line for batch in iter_line_lists(reader) for line in batch]
    fingerprint = (stats.st_dev, stats.st_ino, stats.st_size, stats.st_mtime_ns, stats.st_ctime_ns)
    return lines, fingerprint, read_ns, reader.crc


def read_identities(path: str) -> tuple[list[dict[str, Any]], Fingerprint | None]:
    """What :func:`copied_entry_ids` needs of a parent session: each entry's type, id and
    timestamp, with the fingerprint of the file they were read from (([], None) when the file
    cannot be read)."""
    try:
        raw_lines, fingerprint, _, _ = _read_lines(path)
    except OSError:
        return [], None
    out: list[dict[str, Any]] = []
    for line in raw_lines:
        if not line:
            continue
        scanned = scan_raw(line)
        if scanned is None:
            continue
        head = scanned[0]
        out.append({"type": head.type, "id": head.id, "timestamp": head.timestamp})
    return out, fingerprint


def read_rows(
    path: str,
    *,
    parent_of: Callable[[str], tuple[list[dict[str, Any]], Fingerprint | None]] | None = None,
) -> SessionRows:
    """The rows of the session at ``path``; raises :class:`NotASession` or ``OSError``.

    ``parent_of(path) -> (entries, fingerprint)``: how a fork's parent session is read (for
    ``copied``), and the fingerprint of the file as read (kept as ``parent_fp``: a later change
    of the parent shows against it); default :func:`read_identities`.
    """
    raw_lines, fingerprint, read_ns, crc = _read_lines(path)
    parse = loads_for(fingerprint[2])
    lines: list[bytes] = []
    entries: list[dict[str, Any]] = []
    for line in raw_lines:
        if not line:
            continue
        entry = parse_line(line, parse)
        if entry is not None:
            lines.append(line)
            entries.append(entry)
    del raw_lines
    if not entries or not is_session_header(entries[0]):
        raise NotASession(path, fingerprint, read_ns, crc)
    header = entries[0]
    migrate_session_entries(entries)  # in memory only, as read_session does (a no-op when current)
    # Later header-shaped lines are not entries of the tree (Pi's loader and the manager skip them).
    body = [(line, e) for line, e in zip(lines[1:], entries[1:], strict=True) if e.get("type") != "session"]
    del lines
    wire = [e for _, e in body]
    index = TreeIndex.from_entries(wire)
    session_id: str = header["id"]
    parent = _str(header.get("parentSession"))
    rows = SessionRows(
        os.path.abspath(path), session_id, _str(header.get("cwd")), parent, fingerprint, read_ns
    )
    rows.crc = crc
    leaf = index.last_position()
    branch = set(index.path_positions(leaf))
    projection = project_leaf(index, leaf)
    # the projection holds one pair per context_positions entry, in order: no second walk
    context = [pos for pos, _ in projection.entries]
    in_context = set(context)
    contributed: dict[int, tuple[int, Any]] = {}  # position -> (first context index, its messages)
    at = 0
    for pos, messages in projection.entries:
        if messages:
            contributed[pos] = (at, messages)
            at += len(messages)
    edited = {
        target
        for pos in context
        if index.type_at(pos) == "context_edit"
        and isinstance(target := index.entry_at(pos).get("targetId"), str)
    }
    copied: frozenset[str] = frozenset()
    if parent is not None:
        identities, rows.parent_fp = (parent_of or read_identities)(parent)
        copied = copied_entry_ids(wire, identities)

    _sessions(rows, header, index, leaf)
    _entries(rows, body, index, branch, in_context, copied)
    _messages(rows, index, branch, contributed, edited)
    _tool_calls(rows, index, branch)
    _usage(rows, wire, copied)
    return rows


def _sessions(rows: SessionRows, header: dict[str, Any], index: TreeIndex, leaf: int | None) -> None:
    columns = rows.columns["sessions"]
    columns["session_id"].append(rows.session_id)
    columns["session_file"].append(rows.path)
    columns["folder"].append(os.path.basename(os.path.dirname(rows.path)))
    columns["cwd"].append(rows.cwd)
    columns["created"].append(_date(header.get("timestamp")))
    columns["parent_session"].append(rows.parent)
    columns["name"].append(_str(index.session_name()))
    columns["entry_count"].append(len(index))
    columns["leaf_id"].append(None if leaf is None else _str(index.id_at(leaf)))


def _entries(
    rows: SessionRows,
    body: list[tuple[bytes, dict[str, Any]]],
    index: TreeIndex,
    branch: set[int],
    in_context: set[int],
    copied: frozenset[str],
) -> None:
    columns = rows.columns["entries"]
    n = len(body)
    ids = [_str(index.id_at(pos)) for pos in range(n)]
    columns["session_id"] = [rows.session_id] * n
    columns["entry_id"] = ids
    columns["parent_id"] = [_str(e.get("parentId")) for _, e in body]
    columns["type"] = [_str(index.type_at(pos)) for pos in range(n)]
    columns["timestamp"] = [_date(index.timestamp_at(pos)) for pos in range(n)]
    columns["on_leaf_branch"] = [pos in branch for pos in range(n)]
    columns["in_context"] = [pos in in_context for pos in range(n)]
    columns["copied"] = [entry_id in copied for entry_id in ids] if copied else [False] * n
    labels = index.labels()
    columns["label"] = [_str(labels.get(entry_id)) for entry_id in ids] if labels else [None] * n
    columns["json"] = [line for line, _ in body]  # bytes: the Arrow side checks them as UTF-8


def _messages(
    rows: SessionRows,
    index: TreeIndex,
    branch: set[int],
    contributed: dict[int, tuple[int, Any]],
    edited: set[str],
) -> None:
    c = rows.columns["messages"]
    # one bound append per column: this loop runs once per message of every session
    add_session, add_entry = c["session_id"].append, c["entry_id"].append
    add_index = c["message_index"].append
    add_role, add_time, add_text = c["role"].append, c["timestamp"].append, c["text"].append
    add_provider, add_model, add_stop = c["provider"].append, c["model"].append, c["stop_reason"].append
    add_branch, add_in, add_at = c["on_leaf_branch"].append, c["in_context"].append, c["context_index"].append
    add_context_text = c["context_text"].append
    session_id = rows.session_id
    type_at, entry_at, id_at = index.type_at, index.entry_at, index.id_at
    for pos in range(len(index)):
        if type_at(pos) not in _MESSAGE_BEARING:
            continue
        messages = entry_to_messages(entry_at(pos))
        if not messages:
            continue
        entry_id = _str(id_at(pos))
        first, in_context = contributed.get(pos, (None, None))
        replaced = in_context is not None and entry_id is not None and entry_id in edited
        on_branch = pos in branch
        for i, message in enumerate(messages):
            if not isinstance(message, dict):
                continue
            get = message.get
            add_session(session_id)
            add_entry(entry_id)
            add_index(i)
            role = get("role")
            add_role(role if type(role) is str else None)
            add_time(_ms(get("timestamp")))
            add_text(message_text(message))
            provider, model, stop = get("provider"), get("model"), get("stopReason")
            add_provider(provider if type(provider) is str else None)
            add_model(model if type(model) is str else None)
            add_stop(stop if type(stop) is str else None)
            add_branch(on_branch)
            add_in(in_context is not None)
            add_at(None if first is None else first + i)
            projected = in_context[i] if replaced and in_context is not None and i < len(in_context) else None
            changed = projected is not None and projected.get("content") != get("content")
            add_context_text(message_text(projected) if changed and projected is not None else None)


# a tuple, not a set: an entry's "type" may be any JSON value, a list or an object too
_MESSAGE_BEARING = ("message", "custom_message", "branch_summary", "compaction")


def _tool_calls(rows: SessionRows, index: TreeIndex, branch: set[int]) -> None:
    results: dict[str, list[int]] = {}
    calls: list[int] = []
    for pos in range(len(index)):
        if index.type_at(pos) != "message":
            continue
        message = index.entry_at(pos).get("message")
        if not isinstance(message, dict):
            continue
        role = message.get("role")
        if role == "assistant":
            calls.append(pos)
        elif role == "toolResult":
            call_id = message.get("toolCallId")
            if isinstance(call_id, str):
                results.setdefault(call_id, []).append(pos)
    match = ResultMatcher([index.parent_position(pos) for pos in range(len(index))], results)
    c = rows.columns["tool_calls"]
    for pos in calls:
        content = index.entry_at(pos)["message"].get("content")
        if not isinstance(content, list):
            continue
        entry_id = _str(index.id_at(pos))
        stamp = _date(index.timestamp_at(pos))
        on_branch = pos in branch
        for block in content:
            if not isinstance(block, dict) or block.get("type") != "toolCall":
                continue
            call_id = _str(block.get("id"))
            result = match(pos, call_id) if call_id is not None else None
            c["session_id"].append(rows.session_id)
            c["entry_id"].append(entry_id)
            c["timestamp"].append(stamp)
            c["tool_call_id"].append(call_id)
            c["name"].append(_str(block.get("name")))
            arguments = block.get("arguments", MISSING)
            c["arguments"].append(None if arguments is MISSING else dumps(arguments))
            c["on_leaf_branch"].append(on_branch)
            if result is None:
                c["is_error"].append(None)
                c["result_text"].append(None)
                c["result_entry_id"].append(None)
            else:
                message = index.entry_at(result)["message"]
                is_error = message.get("isError")
                c["is_error"].append(is_error if isinstance(is_error, bool) else None)
                c["result_text"].append(_blocks_text(message.get("content")))
                c["result_entry_id"].append(_str(index.id_at(result)))


class ResultMatcher:
    """A call's result: the first tool result (in file order) with the call's id that lies below
    the call in the tree, i.e. reaches it by following ``parentId`` (on a ``parentId`` cycle,
    every entry of the cycle and of the branches hanging off it reaches every cycle entry).

    Walking up from every candidate result to the root costs, when every turn reuses one call
    id (``call_0``, as some providers send), results x calls x depth: hours for a few thousand
    turns. Instead the tree is numbered once in depth-first order, so that "below ``p``" is a
    range of numbers, and each id's results get a range-minimum table over file order: the
    first result below a call is one lookup. ``O(n log n)`` per session.

    Numbering costs a few microseconds per entry, more than the walk in a session whose ids are
    unique (a result sits one step below its call): the walk is tried first, within a budget of
    steps linear in the session, and the numbering built only once the budget is spent.
    """

    __slots__ = ("_parents", "_results", "_tree", "_by_id", "_budget", "steps")

    def __init__(
        self, parents: Sequence[int], results: Mapping[str, list[int]], walk_budget: int | None = None
    ) -> None:
        self._parents = parents
        self._results = results
        self._tree: _Numbered | None = None
        self._by_id: dict[str, _Candidates] = {}
        self._budget = 4 * len(parents) + 64 if walk_budget is None else walk_budget
        self.steps = 0  # work done, counted for the tests (one per entry or candidate handled)

    def __call__(self, call: int, call_id: str) -> int | None:
        candidates = self._results.get(call_id)
        if not candidates:
            return None
        if self._tree is None:
            found = self._walk(call, candidates)
            if found is not _UNDECIDED:
                return found  # type: ignore[return-value]
            self._tree = _Numbered(self._parents)
            self.steps += len(self._parents)
        found = self._by_id.get(call_id)
        if found is None:
            found = self._by_id[call_id] = _Candidates(self._tree, candidates)
            self.steps += len(candidates) * max(1, len(candidates).bit_length())
        self.steps += 1
        return found.first_below(call)

    def _walk(self, call: int, candidates: list[int]) -> int | None | object:
        """The first candidate whose walk up reaches ``call``; ``_UNDECIDED`` once the budget is spent."""
        parents = self._parents
        limit = len(parents)
        budget = self._budget
        try:
            for pos in candidates:
                node = parents[pos]
                seen = 0
                budget -= 1
                while node != NO_PARENT and node != call and seen <= limit:
                    if budget <= 0:
                        return _UNDECIDED
                    node = parents[node]
                    seen += 1
                    budget -= 1
                if node == call:
                    return pos
            return None
        finally:
            self.steps += self._budget - max(budget, 0)
            self._budget = max(budget, 0)


_UNDECIDED = object()


class _Numbered:
    """The parent links numbered in depth-first order: each entry off a cycle gets ``start`` (its
    number) and ``end`` (the last number below it); the roots are the entries without a parent
    and those on a cycle, whose cycle every entry of their subtree reaches (``cycle``)."""

    __slots__ = ("start", "end", "cycle", "top")

    def __init__(self, parents: Sequence[int]) -> None:
        n = len(parents)
        cycle = [-1] * n  # the cycle an entry lies on, named by one of its entries
        state = bytearray(n)  # 0: not seen, 1: on the walk being made, 2: done
        for first in range(n):
            if state[first]:
                continue
            walk = []
            node = first
            while node != NO_PARENT and not state[node]:
                state[node] = 1
                walk.append(node)
                node = parents[node]
            if node != NO_PARENT and state[node] == 1:  # the walk came back to itself
                for member in walk[walk.index(node) :]:
                    cycle[member] = node
            for member in walk:
                state[member] = 2
        children: list[list[int]] = [[] for _ in range(n)]
        roots = []
        for pos in range(n):
            parent = parents[pos]
            if parent == NO_PARENT or cycle[pos] != -1:
                roots.append(pos)
            else:
                children[parent].append(pos)
        start = [0] * n
        top = [0] * n  # the root of each entry's subtree
        order: list[int] = []
        for root in roots:
            stack = [root]
            while stack:
                node = stack.pop()
                start[node] = len(order)
                top[node] = root
                order.append(node)
                stack.extend(reversed(children[node]))
        size = [1] * n
        for node in reversed(order):
            if cycle[node] == -1 and parents[node] != NO_PARENT:
                size[parents[node]] += size[node]
        self.start = start
        self.end = [start[pos] + size[pos] - 1 for pos in range(n)]
        self.cycle = cycle
        self.top = top


class _Candidates:
    """One call id's results, sorted by depth-first number, with a sparse table of the smallest
    file position over every power-of-two run of them."""

    __slots__ = ("_tree", "_numbers", "_table", "_on_cycle")

    def __init__(self, tree: _Numbered, results: list[int]) -> None:
        self._tree = tree
        ordered = sorted(results, key=tree.start.__getitem__)
        self._numbers = [tree.start[pos] for pos in ordered]
        table = [ordered]
        width = 1
        while 2 * width <= len(ordered):
            last = table[-1]
            table.append([min(last[i], last[i + width]) for i in range(len(last) - width)])
            width *= 2
        self._table = table
        self._on_cycle: dict[int, int] = {}  # cycle -> the first result whose walk reaches it
        for pos in reversed(results):
            reached = tree.cycle[tree.top[pos]]
            if reached != -1:
                self._on_cycle[reached] = pos

    def first_below(self, call: int) -> int | None:
        tree = self._tree
        if tree.cycle[call] != -1:
            return self._on_cycle.get(tree.cycle[call])
        low = bisect.bisect_right(self._numbers, tree.start[call])
        high = bisect.bisect_right(self._numbers, tree.end[call])
        if low >= high:
            return None
        level = (high - low).bit_length() - 1
        row = self._table[level]
        return min(row[low], row[high - (1 << level)])


def _usage(rows: SessionRows, wire: list[dict[str, Any]], copied: frozenset[str]) -> None:
    c = rows.columns["usage"]
    for item in usage_items(wire):
        entry_id = item.entry_id or None
        c["session_id"].append(rows.session_id)
        c["entry_id"].append(entry_id)
        c["timestamp"].append(item.timestamp or None)
        c["model_key"].append(item.model_key)
        c["input"].append(_whole(item.input))
        c["output"].append(_whole(item.output))
        c["cache_read"].append(_whole(item.cache_read))
        c["cache_write"].append(_whole(item.cache_write))
        c["cost"].append(_cost(item.cost))
        c["counted"].append(entry_id is None or entry_id not in copied)
