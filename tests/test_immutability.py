"""Nothing a read returns shares mutable state with the session: every kind of object the readers
hand out is attacked with every mutation it offers, and later reads must be unchanged."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest

from pisession import (
    CustomEntry,
    MessageEntry,
    SessionManager,
    ToolCall,
    TreeNode,
    UnknownEntry,
    to_wire,
)
from pisession._json import dumps

TS = 1733234400000


def make_session(tmp_path: Path) -> SessionManager:
    manager = SessionManager.create("/project", str(tmp_path))
    manager.append_message(
        {
            "role": "system",
            "content": "You are terse.",
            "sections": {"style": "short"},
            "toolsAdded": [{"name": "read", "parameters": {"type": "object", "required": ["path"]}}],
            "timestamp": TS,
        }
    )
    manager.append_message(
        {"role": "user", "content": [{"type": "text", "text": "read it"}], "timestamp": TS}
    )
    manager.append_message(
        {
            "role": "assistant",
            "content": [
                {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a", "opts": [1]}}
            ],
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": "claude",
            "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2,
                      "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}},
            "stopReason": "toolUse",
            "diagnostics": {"trace": [{"step": 1}]},
            "timestamp": TS,
            "x-vendor": {"nested": [1, {"deep": True}]},
        }
    )
    manager.append_message(
        {
            "role": "toolResult",
            "toolCallId": "c1",
            "toolName": "read",
            "content": [{"type": "text", "text": "body"}],
            "details": {"lines": [1, 2]},
            "isError": False,
            "timestamp": TS,
        }
    )
    custom = manager.append_custom_entry("state", {"count": 1, "seen": ["a"], "more": {"k": [0]}})
    manager.append_custom_message_entry("note", [{"type": "text", "text": "hi"}], True, {"why": ["x"]})
    manager.append_label_change(custom, "checkpoint")
    manager.append_compaction("summary", custom, 100, details={"readFiles": ["a"]})
    manager.append_message({"role": "user", "content": "after", "timestamp": TS})
    path = manager.get_session_file()
    assert path is not None
    with open(path, "a", encoding="utf-8") as f:  # a type Pi does not know, with nested extra fields
        f.write(
            '{"type":"bookmark","id":"bm000001","parentId":null,"timestamp":"2024-12-03T14:00:00.000Z",'
            '"at":{"list":[1,{"x":2}]}}\n'
        )
    manager.close()
    return SessionManager.open(path)


def dump(manager: SessionManager) -> str:
    leaf = manager.get_leaf_id()
    return dumps(
        {
            "header": to_wire(manager.get_header() or {}),
            "entries": [to_wire(e) for e in manager.get_entries()],
            "tree": [n.to_wire() for n in manager.get_tree()],
            "context": to_wire(manager.build_session_context()),
            "projection": to_wire(manager.build_session_projection()),
            "branch": [to_wire(e) for e in manager.get_branch()],
            "leaf": leaf,
        }
    )


_MUTATORS: list[tuple[str, Callable[[Any], Any]]] = [
    ("setitem", lambda o: o.__setitem__(next(iter(o)) if isinstance(o, Mapping) else 0, "MUTATED")),
    ("delitem", lambda o: o.__delitem__(next(iter(o)) if isinstance(o, Mapping) else 0)),
    ("update", lambda o: o.update({"k": "MUTATED"})),
    ("setdefault", lambda o: o.setdefault("new", "MUTATED")),
    ("pop", lambda o: o.pop()),
    ("popitem", lambda o: o.popitem()),
    ("clear", lambda o: o.clear()),
    ("append", lambda o: o.append("MUTATED")),
    ("extend", lambda o: o.extend(["MUTATED"])),
    ("insert", lambda o: o.insert(0, "MUTATED")),
    ("remove", lambda o: o.remove(o[0])),
    ("sort", lambda o: o.sort(key=str, reverse=True)),
    ("reverse", lambda o: o.reverse()),
]


def attack(obj: Any, seen: set[int], escaped: list[str], where: str) -> None:
    """Recurse into obj, then try every mutation it offers; note those that worked on a model."""
    if id(obj) in seen or isinstance(obj, (str, bytes, int, float)) or obj is None:
        return
    seen.add(id(obj))
    if attrs.has(type(obj)):
        for field in attrs.fields(type(obj)):
            attack(getattr(obj, field.name), seen, escaped, f"{where}.{field.name}")
            with pytest.raises(AttributeError):  # frozen
                setattr(obj, field.name, "MUTATED")
        return
    if isinstance(obj, TreeNode):
        attack(obj.entry, seen, escaped, f"{where}.entry")
        attack(obj.wire_entry, seen, escaped, f"{where}.wire_entry")
        for i, child in enumerate(obj.children):
            attack(child, seen, escaped, f"{where}.children[{i}]")
        return
    if isinstance(obj, Mapping):
        for k, v in list(obj.items()):
            attack(v, seen, escaped, f"{where}[{k!r}]")
    elif isinstance(obj, Sequence):
        for i, v in enumerate(list(obj)):
            attack(v, seen, escaped, f"{where}[{i}]")
    for name, mutate in _MUTATORS:
        if not (isinstance(obj, (Mapping, Sequence)) and len(obj)):
            continue
        try:
            mutate(obj)
        except (TypeError, AttributeError, KeyError, IndexError):
            continue
        escaped.append(f"{where}: {name}")


def test_every_returned_object_is_read_only_or_a_copy(tmp_path: Path) -> None:
    manager = make_session(tmp_path)
    path = manager.get_session_file()
    assert path is not None
    before_file = Path(path).read_bytes()
    before = dump(manager)

    custom_id = next(e.id for e in manager.get_entries() if isinstance(e, CustomEntry))
    reads: dict[str, Callable[[], Any]] = {
        "get_header": manager.get_header,
        "get_entry": lambda: manager.get_entry(custom_id),
        "get_entries": manager.get_entries,
        "get_branch": manager.get_branch,
        "get_children": lambda: manager.get_children(custom_id),
        "get_leaf_entry": manager.get_leaf_entry,
        "get_tree": manager.get_tree,
        "build_context_entries": manager.build_context_entries,
        "build_session_context": manager.build_session_context,
        "build_session_projection": manager.build_session_projection,
        "to_wire(get_entries)": lambda: to_wire(manager.get_entries()),
        "to_wire(context)": lambda: to_wire(manager.build_session_context()),
        "to_wire(projection)": lambda: to_wire(manager.build_session_projection()),
        "tree to_wire": lambda: [n.to_wire() for n in manager.get_tree()],
    }
    for name, read in reads.items():
        escaped: list[str] = []
        attack(read(), set(), escaped, name)
        # Models and what they hold refuse every change; only fresh containers (a list the
        # call built, to_wire's top level) may be changed, and changing them changes nothing.
        assert not [e for e in escaped if "." in e.split(":")[0]], escaped
        assert dump(manager) == before, f"{name}: a later read changed"

    assert dump(manager) == before
    assert Path(path).read_bytes() == before_file
    reopened = SessionManager.open(path)
    assert dump(reopened) == before


def test_the_issues_examples_raise_and_change_nothing(tmp_path: Path) -> None:
    manager = make_session(tmp_path)
    entry = next(e for e in manager.get_entries() if isinstance(e, CustomEntry))
    with pytest.raises(TypeError, match="read-only"):
        entry.data["count"] = 2
    with pytest.raises(TypeError):
        entry.data["seen"].append("b")
    assistant = next(
        e.id for e in manager.get_entries() if e.type == "message" and e.message.role == "assistant"
    )
    manager.branch(assistant)  # before the compaction: the tool call is in context
    context = manager.build_session_context()
    calls = [
        b for m in context.messages if m.role == "assistant" for b in m.content if isinstance(b, ToolCall)
    ]
    with pytest.raises(TypeError):
        calls[0].arguments["path"] = "x"  # type: ignore[index]  # Mapping: mypy already refuses it
    with pytest.raises(TypeError):
        calls[0].arguments["opts"].append(2)
    again = manager.get_entry(entry.id)
    assert again == entry and again is not None
    assert to_wire(again)["data"] == {"count": 1, "seen": ["a"], "more": {"k": [0]}}
    assert [b.arguments for b in calls] == [{"path": "a", "opts": [1]}]


def test_frozen_values_write_back_exactly(tmp_path: Path) -> None:
    """A value read from one entry can be appended as it is (JSON encoders take the read-only types)."""
    manager = make_session(tmp_path)
    entry = next(e for e in manager.get_entries() if isinstance(e, CustomEntry))
    new_id = manager.append_custom_entry("copy", entry.data)
    path = manager.get_session_file()
    assert path is not None
    assert Path(path).read_text(encoding="utf-8").splitlines()[-1].startswith(
        '{"type":"custom","customType":"copy","data":{"count":1,"seen":["a"],"more":{"k":[0]}},'
    )
    assert manager.get_entry(new_id) is not None
    message = next(e for e in manager.get_entries() if isinstance(e, MessageEntry))
    manager.append_message(message.message)  # a read message appended again
    unknown = next(e for e in manager.get_entries() if isinstance(e, UnknownEntry))
    assert unknown.extra["at"] == {"list": [1, {"x": 2}]}
    with pytest.raises(TypeError):
        unknown.extra["at"]["list"].append(3)
