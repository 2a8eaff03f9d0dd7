from __future__ import annotations

from typing import Any

import pisession
from pisession import TreeIndex, to_wire
from pisession._context import current_system_message, project_leaf

TS = "2024-12-03T14:00:00.000Z"
TS_MS = 1733234400000


def msg(eid: str, parent: str | None, role: str, content: Any = "x", **extra: Any) -> dict[str, Any]:
    return {
        "type": "message",
        "id": eid,
        "parentId": parent,
        "timestamp": TS,
        "message": {"role": role, "content": content, "timestamp": 1, **extra},
    }


def wire_context(entries: list[dict[str, Any]], leaf: Any = pisession.UNSET) -> dict[str, Any]:
    return to_wire(pisession.build_session_context(entries, leaf))


def test_leaf_none_gives_empty_context() -> None:
    context = wire_context([msg("a", None, "user")], None)
    assert context["messages"] == [] and context["thinkingLevel"] == "off" and context["model"] is None


def test_unknown_leaf_falls_back_to_last_entry() -> None:
    entries = [msg("a", None, "user"), msg("b", None, "user", "second root")]
    assert [m["content"] for m in wire_context(entries, "nope")["messages"]] == ["second root"]


def test_compaction_keeps_from_first_kept_and_drops_system_messages() -> None:
    entries = [
        msg("s", None, "system", "prompt"),
        msg("u1", "s", "user", "old"),
        msg("u2", "u1", "user", "kept"),
        msg("s2", "u2", "system", "patch"),
        {
            "type": "compaction",
            "id": "c",
            "parentId": "s2",
            "timestamp": TS,
            "summary": "sum",
            "firstKeptEntryId": "u2",
            "tokensBefore": 5,
        },
        msg("u3", "c", "user", "after"),
    ]
    ids = [e.id for e in pisession.build_context_entries(entries)]
    assert ids == ["c", "u2", "u3"]
    messages = wire_context(entries)["messages"]
    assert messages[0] == {
        "role": "compactionSummary",
        "summary": "sum",
        "tokensBefore": 5,
        "timestamp": TS_MS,
    }
    assert [m["content"] for m in messages[1:]] == ["kept", "after"]


def test_missing_first_kept_keeps_nothing_before_compaction() -> None:
    entries = [
        msg("u1", None, "user"),
        {
            "type": "compaction",
            "id": "c",
            "parentId": "u1",
            "timestamp": TS,
            "summary": "s",
            "firstKeptEntryId": "gone",
            "tokensBefore": 1,
        },
    ]
    assert [e.id for e in pisession.build_context_entries(entries)] == ["c"]


def test_last_context_edit_per_target_wins_and_normalises_assistant_strings() -> None:
    entries = [
        msg("u", None, "user", "question"),
        msg("a", "u", "assistant", [{"type": "text", "text": "answer"}], provider="p", model="m"),
        {
            "type": "context_edit",
            "id": "e1",
            "parentId": "a",
            "timestamp": TS,
            "targetId": "a",
            "replacement": {"content": "first"},
        },
        {
            "type": "context_edit",
            "id": "e2",
            "parentId": "e1",
            "timestamp": TS,
            "targetId": "a",
            "replacement": {"content": "second"},
        },
        {
            "type": "context_edit",
            "id": "e3",
            "parentId": "e2",
            "timestamp": TS,
            "targetId": "u",
            "replacement": None,
        },
    ]
    context = wire_context(entries)
    assert [m["role"] for m in context["messages"]] == ["assistant"]
    assert context["messages"][0]["content"] == [{"type": "text", "text": "second"}]
    assert context["model"] == {"provider": "p", "modelId": "m"}
    # raw entries are never modified
    assert entries[1]["message"]["content"] == [{"type": "text", "text": "answer"}]


def test_edit_on_another_branch_does_not_apply() -> None:
    entries = [
        msg("u", None, "user", "q"),
        {
            "type": "context_edit",
            "id": "e",
            "parentId": "u",
            "timestamp": TS,
            "targetId": "u",
            "replacement": None,
        },
        msg("v", "u", "user", "other branch"),
    ]
    assert [m["content"] for m in wire_context(entries, "v")["messages"]] == ["q", "other branch"]
    assert wire_context(entries, "e")["messages"] == []


def test_null_content_is_patched_in_a_copy() -> None:
    entries = [msg("s", None, "system", None), msg("u", "s", "user", None)]
    messages = wire_context(entries)["messages"]
    assert messages[0]["content"] == "" and messages[1]["content"] == []
    assert entries[0]["message"]["content"] is None


def test_settings_follow_the_path() -> None:
    entries = [
        {
            "type": "thinking_level_change",
            "id": "t",
            "parentId": None,
            "timestamp": TS,
            "thinkingLevel": "high",
        },
        {
            "type": "model_change",
            "id": "m",
            "parentId": "t",
            "timestamp": TS,
            "provider": "a",
            "modelId": "b",
        },
        msg("u", "m", "user"),
        {
            "type": "thinking_level_change",
            "id": "t2",
            "parentId": None,
            "timestamp": TS,
            "thinkingLevel": "low",
        },
    ]
    assert wire_context(entries, "u")["thinkingLevel"] == "high"
    assert wire_context(entries, "u")["model"] == {"provider": "a", "modelId": "b"}
    assert wire_context(entries, "t2")["thinkingLevel"] == "low"


def test_system_replay_patches_sections_and_tools() -> None:
    messages = [
        {
            "role": "system",
            "content": "base",
            "sections": {"a": "1", "b": "2"},
            "toolsAdded": [{"name": "read"}, {"name": "write"}],
            "timestamp": 10,
        },
        {"role": "user", "content": "hi", "timestamp": 11},
        {
            "role": "system",
            "content": "",
            "sections": {"a": None, "c": "3", "b": "2b"},
            "toolsRemoved": [{"name": "write"}],
            "toolsAdded": [{"name": "read", "v": 2}],
            "timestamp": 12,
        },
        {"role": "system", "content": [{"type": "text", "text": "more"}], "timestamp": 13},
    ]
    assert current_system_message(messages) == {
        "role": "system",
        "content": "base\n\nmore",
        "sections": {"b": "2b", "c": "3"},
        "toolsAdded": [{"name": "read", "v": 2}],
        "timestamp": 10,
    }


def test_replace_true_starts_a_fresh_baseline_unless_following_pi() -> None:
    messages = [
        {
            "role": "system",
            "content": "old",
            "sections": {"a": "1"},
            "toolsAdded": [{"name": "x"}],
            "timestamp": 1,
        },
        {"role": "system", "content": "new", "replace": True, "timestamp": 2},
    ]
    assert current_system_message(messages) == {"role": "system", "content": "new", "timestamp": 2}
    pi = current_system_message(messages, honour_replace=False)
    assert pi is not None and pi["content"] == "old\n\nnew" and pi["toolsAdded"] == [{"name": "x"}]


def test_no_system_message_gives_none() -> None:
    assert current_system_message([{"role": "user", "content": "x"}]) is None
    assert pisession.get_current_system_message([]) is None


def test_projection_is_memoised_per_leaf() -> None:
    index = TreeIndex.from_entries([msg("u", None, "user")])
    assert project_leaf(index, 0) is project_leaf(index, 0)


def test_older_compaction_in_kept_range_contributes_nothing() -> None:
    entries = [
        msg("u1", None, "user", "a"),
        {
            "type": "compaction",
            "id": "c1",
            "parentId": "u1",
            "timestamp": TS,
            "summary": "one",
            "firstKeptEntryId": "u1",
            "tokensBefore": 1,
        },
        msg("u2", "c1", "user", "b"),
        {
            "type": "compaction",
            "id": "c2",
            "parentId": "u2",
            "timestamp": TS,
            "summary": "two",
            "firstKeptEntryId": "u1",
            "tokensBefore": 2,
        },
    ]
    projection = pisession.build_session_projection(entries)
    assert [p.source_entry.id for p in projection.entries] == ["c2", "u1", "c1", "u2"]
    assert [len(p.messages) for p in projection.entries] == [1, 1, 0, 1]
