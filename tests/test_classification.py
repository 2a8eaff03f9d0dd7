"""Entries and messages are classified as Pi classifies them: by their ``type`` and ``role``.

A field that is missing or of another JSON type reads as the empty value of its type and is
written back exactly as the file had it; ``Unknown*`` is only for tags Pi does not know.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pisession import (
    UNSET,
    AssistantMessage,
    CompactionEntry,
    CustomMessageEntry,
    LabelEntry,
    MalformedEntry,
    MessageEntry,
    SessionManager,
    ToolResultMessage,
    UnknownEntry,
    UnknownMessage,
    UserMessage,
    from_wire,
    to_wire,
)
from pisession._json import dumps

HEADER = '{"type":"session","version":3,"id":"s1","timestamp":"2024-12-03T14:00:00.000Z","cwd":"/p"}'


def _line(i: int, body: str) -> str:
    parent = "null" if i == 1 else f'"e{i - 1:07d}"'
    return f'{{{body},"id":"e{i:07d}","parentId":{parent},"timestamp":"2024-12-03T14:00:0{i}.000Z"}}'


ODD_LINES = [
    ('"type":"message","message":{"role":"user","content":"no timestamp"}', MessageEntry, UserMessage),
    ('"type":"message","message":{"role":"user","timestamp":1}', MessageEntry, UserMessage),
    (
        '"type":"message","message":{"role":"user","content":null,"timestamp":"yesterday"}',
        MessageEntry,
        UserMessage,
    ),
    (
        '"type":"message","message":{"role":"assistant","content":[{"type":"text","text":7}],'
        '"provider":"p","model":"m","timestamp":1}',
        MessageEntry,
        AssistantMessage,
    ),
    (
        '"type":"message","message":{"role":"toolResult","toolCallId":"c","toolName":"n","content":[],'
        '"isError":0,"timestamp":1}',
        MessageEntry,
        ToolResultMessage,
    ),
    ('"type":"message","message":{"role":"critic","verdict":"ok"}', MessageEntry, UnknownMessage),
    ('"type":"custom_message","customType":"t","content":"x"', CustomMessageEntry, None),
    ('"type":"label","targetId":"e0000001","label":3', LabelEntry, None),
    (
        '"type":"compaction","summary":"s","firstKeptEntryId":"e0000001","tokensBefore":"many"',
        CompactionEntry,
        None,
    ),
    ('"type":"bookmark","at":{"deep":[1,{"x":null}]}', UnknownEntry, None),
]


@pytest.fixture
def odd_file(tmp_path: Path) -> Path:
    lines = [HEADER] + [_line(i, body) for i, (body, _, _) in enumerate(ODD_LINES, start=1)]
    path = tmp_path / "odd.jsonl"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_odd_fields_keep_the_class_and_write_back_byte_for_byte(odd_file: Path) -> None:
    manager = SessionManager.open(odd_file)
    lines = odd_file.read_text(encoding="utf-8").splitlines()[1:]
    entries = manager.get_entries()
    assert len(entries) == len(ODD_LINES)
    for entry, line, (_, entry_cls, message_cls) in zip(entries, lines, ODD_LINES, strict=True):
        assert type(entry) is entry_cls, line
        if message_cls is not None:
            assert isinstance(entry, MessageEntry) and type(entry.message) is message_cls, line
        assert dumps(to_wire(entry)) == line
        assert dumps(to_wire(from_wire(json.loads(line)))) == line


def test_missing_and_odd_fields_read_as_empty_values(odd_file: Path) -> None:
    entries = SessionManager.open(odd_file).get_entries()
    first, second, third = (e.message for e in entries[:3] if isinstance(e, MessageEntry))
    assert isinstance(first, UserMessage) and first.content == "no timestamp" and first.timestamp is None
    assert isinstance(second, UserMessage) and second.content == ""
    assert isinstance(third, UserMessage) and third.extra == {"content": None, "timestamp": "yesterday"}
    assistant = entries[3]
    assert isinstance(assistant, MessageEntry) and isinstance(assistant.message, AssistantMessage)
    assert assistant.message.api == "" and assistant.message.usage.total_tokens == 0
    assert [b.text for b in assistant.message.content if b.type == "text"] == [""]
    custom = entries[6]
    assert isinstance(custom, CustomMessageEntry) and custom.display is False and custom.content == "x"
    compaction = entries[8]
    assert isinstance(compaction, CompactionEntry) and compaction.tokens_before == 0
    assert compaction.extra == {"tokensBefore": "many"}
    unknown = entries[9]
    assert isinstance(unknown, UnknownEntry) and unknown.type == "unknown" and unknown.wire_type == "bookmark"


def test_appended_without_optional_looking_fields_read_back_typed(tmp_path: Path) -> None:
    manager = SessionManager.create("/p", str(tmp_path))
    user = manager.append_message({"role": "user", "content": "hi"})
    note = manager.append_custom_message_entry("t", "x")  # type: ignore[call-overload]  # Pi requires display
    read = manager.get_entry(user)
    assert isinstance(read, MessageEntry) and isinstance(read.message, UserMessage)
    assert read.message.content == "hi" and read.message.timestamp is None
    assert to_wire(read.message) == {"role": "user", "content": "hi"}
    custom = manager.get_entry(note)
    assert isinstance(custom, CustomMessageEntry) and custom.content == "x" and custom.display is False
    assert "display" not in to_wire(custom)
    path = manager.get_session_file()
    assert path is not None
    reopened = SessionManager.open(path)
    assert reopened.get_entry(user) == read and reopened.get_entry(note) == custom


def test_only_lines_without_a_string_id_or_type_are_malformed() -> None:
    no_id = {"type": "message", "timestamp": "t", "message": {"role": "user"}}
    assert isinstance(from_wire(no_id), MalformedEntry)
    odd = from_wire({"type": 5, "id": "x"})
    assert isinstance(odd, MalformedEntry) and odd.wire_type is UNSET and odd.extra == {"type": 5}
    assert type(from_wire({"type": "nope", "id": "x"})) is UnknownEntry


def test_malformed_lines_are_kept_by_the_readers_and_harmless(tmp_path: Path) -> None:
    path = tmp_path / "forked-v1.jsonl"
    no_id = '{"type":"message","timestamp":"2024-11-30T10:00:30.000Z","message":{"role":"user"}}'
    path.write_text(f"{HEADER}\n{{}}\n{no_id}\n{_line(1, LINE_USER)}\n", encoding="utf-8")
    manager = SessionManager.open(path)
    entries = manager.get_entries()
    assert [type(e) for e in entries] == [MalformedEntry, MalformedEntry, MessageEntry]
    assert [e.type for e in entries] == ["unknown", "unknown", "message"]
    assert [e.wire_type for e in entries[:2] if isinstance(e, MalformedEntry)] == [UNSET, "message"]
    assert [manager.get_label(e.id) for e in entries] == [None, None, None]
    assert [dumps(to_wire(e)) for e in entries] == path.read_text(encoding="utf-8").splitlines()[1:]


LINE_USER = '"type":"message","message":{"role":"user","content":"hi","timestamp":1}'
