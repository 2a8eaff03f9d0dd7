"""Wire dicts ⇄ model objects: exact round trips (values and key order), unknowns, totality."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import attrs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pisession._codec import converter, from_wire, to_wire
from pisession._errors import WireFormatError
from pisession._model import (
    UNSET,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryEntry,
    BranchSummaryMessage,
    CompactionEntry,
    CompactionSummaryMessage,
    ContentBlock,
    ContextEditEntry,
    ContextEditReplacement,
    Cost,
    CustomEntry,
    CustomMessage,
    CustomMessageEntry,
    Entry,
    FileEntry,
    ImageContent,
    LabelEntry,
    MalformedEntry,
    Message,
    MessageEntry,
    ModelChangeEntry,
    ModelRef,
    SessionContext,
    SessionHeader,
    SessionInfoEntry,
    SystemMessage,
    TextContent,
    ThinkingContent,
    ThinkingLevelChangeEntry,
    ToolCall,
    ToolResultMessage,
    UnknownContent,
    UnknownEntry,
    UnknownMessage,
    Usage,
    UsageEntry,
    UserMessage,
)


def js(value: Any) -> str:
    """JSON text keeps key order at every depth and tells 1 from 1.0 from True: compare with it."""
    return json.dumps(value)


def assert_round_trip(d: dict[str, Any], cls: Any = None) -> Any:
    obj = from_wire(d, cls)
    back = to_wire(obj)
    assert back == d
    assert js(back) == js(d)
    return obj


# --------------------------------------------------------------------------- samples in Pi's order

COST = {"input": 0.0036, "output": 0.001275, "cacheRead": 0.0045, "cacheWrite": 0.001125, "total": 0.0105}
USAGE = {
    "input": 1200,
    "output": 85,
    "cacheRead": 15000,
    "cacheWrite": 300,
    "totalTokens": 16585,
    "cost": COST,
}
USAGE_FULL = {**USAGE, "cacheWrite1h": 100, "reasoning": 40}
TS = "2024-12-03T14:00:00.000Z"
MS = 1733234400000

BLOCKS: dict[str, tuple[type, dict[str, Any]]] = {
    "text": (TextContent, {"type": "text", "text": "Done.", "textSignature": "sig"}),
    "image": (ImageContent, {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}),
    "thinking": (
        ThinkingContent,
        {"type": "thinking", "thinking": "hmm", "thinkingSignature": "EqQB", "redacted": False},
    ),
    "toolCall": (
        ToolCall,
        {
            "type": "toolCall",
            "id": "toolu_01",
            "name": "read",
            "arguments": {"path": "a.py", "range": [1, 2]},
            "thoughtSignature": "ts",
            "namespace": "fs",
        },
    ),
}

SYSTEM = {
    "role": "system",
    "content": "You are terse.",
    "sections": {"style": "<style/>", "old": None},
    "toolsAdded": [{"name": "read", "description": "Read a file", "parameters": {"type": "object"}}],
    "toolsRemoved": [{"name": "write"}],
    "timestamp": MS,
}
ASSISTANT = {
    "role": "assistant",
    "content": [BLOCKS["thinking"][1], BLOCKS["text"][1], BLOCKS["toolCall"][1]],
    "api": "anthropic-messages",
    "provider": "anthropic",
    "model": "claude-sonnet-4-5",
    "usage": USAGE_FULL,
    "stopReason": "toolUse",
    "timestamp": MS,
    "responseId": "msg_01",
    "thinkingLevel": "high",
}
MESSAGES: dict[str, tuple[type, dict[str, Any]]] = {
    "system": (SystemMessage, SYSTEM),
    "user-string": (UserMessage, {"role": "user", "content": "hi", "timestamp": MS}),
    "user-blocks": (
        UserMessage,
        {"role": "user", "content": [BLOCKS["text"][1], BLOCKS["image"][1]], "timestamp": MS},
    ),
    "assistant": (AssistantMessage, ASSISTANT),
    "toolResult": (
        ToolResultMessage,
        {
            "role": "toolResult",
            "toolCallId": "toolu_01",
            "toolName": "read",
            "content": [{"type": "text", "text": "# README"}],
            "details": {"lines": 1},
            "isError": False,
            "durationMs": 12,
            "timestamp": MS,
        },
    ),
    "bashExecution": (
        BashExecutionMessage,
        {
            "role": "bashExecution",
            "command": "ls",
            "output": "a\nb\n",
            "exitCode": 0,
            "cancelled": False,
            "truncated": False,
            "timestamp": MS,
            "excludeFromContext": True,
        },
    ),
    "custom": (
        CustomMessage,
        {
            "role": "custom",
            "customType": "ext",
            "content": "note",
            "display": True,
            "details": None,
            "timestamp": MS,
        },
    ),
    "branchSummary": (
        BranchSummaryMessage,
        {"role": "branchSummary", "summary": "tried X", "fromId": "root", "timestamp": MS},
    ),
    "compactionSummary": (
        CompactionSummaryMessage,
        {"role": "compactionSummary", "summary": "s", "tokensBefore": 5000, "timestamp": None},
    ),
}


def entry(type_: str, **fields: Any) -> dict[str, Any]:
    return {"type": type_, "id": "b2c3d4e5", "parentId": "a1b2c3d4", "timestamp": TS, **fields}


ENTRIES: dict[str, tuple[type, dict[str, Any]]] = {
    "session": (
        SessionHeader,
        {"type": "session", "version": 3, "id": "0193", "timestamp": TS, "cwd": "/p", "parentSession": "/x"},
    ),
    "message": (MessageEntry, entry("message", message=ASSISTANT)),
    "thinking_level_change": (ThinkingLevelChangeEntry, entry("thinking_level_change", thinkingLevel="high")),
    "model_change": (ModelChangeEntry, entry("model_change", provider="openai", modelId="gpt-5")),
    "usage": (
        UsageEntry,
        entry("usage", kind="cache_warm", provider="anthropic", model="m", usage=USAGE, note="warm"),
    ),
    "compaction": (
        CompactionEntry,
        entry(
            "compaction",
            summary="sum",
            firstKeptEntryId="a1b2c3d4",
            tokensBefore=12000,
            details={"files": ["a"]},
            usage=USAGE,
            fromHook=False,
            systemMessage=SYSTEM,
        ),
    ),
    "context_edit": (
        ContextEditEntry,
        entry("context_edit", targetId="a1b2c3d4", replacement={"content": [{"type": "text", "text": "x"}]}),
    ),
    "context_edit-null": (ContextEditEntry, entry("context_edit", targetId="a1b2c3d4", replacement=None)),
    "branch_summary": (
        BranchSummaryEntry,
        entry("branch_summary", fromId="root", summary="s", details=None, usage=None, fromHook=True),
    ),
    "custom": (
        CustomEntry,
        {
            "type": "custom",
            "customType": "pi.virtual-model-state",
            "data": {"x": 1},
            "id": "b2c3d4e5",
            "parentId": None,
            "timestamp": TS,
        },
    ),
    "custom_message": (
        CustomMessageEntry,
        {
            "type": "custom_message",
            "customType": "ext",
            "content": [BLOCKS["text"][1]],
            "display": False,
            "details": {"k": "v"},
            "id": "b2c3d4e5",
            "parentId": "a1b2c3d4",
            "timestamp": TS,
        },
    ),
    "label": (LabelEntry, entry("label", targetId="a1b2c3d4", label="start")),
    "session_info": (SessionInfoEntry, entry("session_info", name="My session")),
}


# --------------------------------------------------------------------------- exact round trips


@pytest.mark.parametrize("name", list(ENTRIES))
def test_every_entry_type_round_trips_in_order(name: str) -> None:
    cls, d = ENTRIES[name]
    obj = assert_round_trip(d)
    assert type(obj) is cls
    assert obj.extra == {}


@pytest.mark.parametrize("name", list(MESSAGES))
def test_every_role_round_trips_in_order(name: str) -> None:
    cls, d = MESSAGES[name]
    assert type(assert_round_trip(d)) is cls
    assert type(assert_round_trip(d, Message)) is cls
    wrapped = entry("message", message=d)
    assert type(assert_round_trip(wrapped).message) is cls


@pytest.mark.parametrize("name", list(BLOCKS))
def test_every_block_type_round_trips_in_order(name: str) -> None:
    cls, d = BLOCKS[name]
    assert type(assert_round_trip(d, ContentBlock)) is cls
    assert type(assert_round_trip(d, cls)) is cls


def test_decoded_values_are_typed() -> None:
    e = from_wire(ENTRIES["message"][1])
    assert isinstance(e, MessageEntry)
    msg = e.message
    assert isinstance(msg, AssistantMessage)
    assert [type(b) for b in msg.content] == [ThinkingContent, TextContent, ToolCall]  # type: ignore[union-attr]
    assert msg.usage.cost == Cost(
        input=0.0036, output=0.001275, cache_read=0.0045, cache_write=0.001125, total=0.0105
    )
    assert msg.usage.cache_write_1h == 100
    assert msg.stop_reason == "toolUse" and msg.thinking_level == "high" and msg.error_message is UNSET
    assert e.parent_id == "a1b2c3d4" and e.timestamp == TS


def test_usage_and_cost_read_on_their_own() -> None:
    u = assert_round_trip(USAGE_FULL, Usage)
    assert u.total_tokens == 16585 and u.reasoning == 40
    assert list(to_wire(u)) == list(USAGE_FULL)


def test_key_order_of_the_file_is_kept_even_when_it_is_not_pis() -> None:
    d = {"timestamp": TS, "label": "x", "type": "label", "parentId": None, "targetId": "t", "id": "i"}
    obj = assert_round_trip(d)
    assert isinstance(obj, LabelEntry)
    assert list(to_wire(obj)) == list(d)


def test_unknown_fields_survive_wherever_they_are() -> None:
    d = {
        "type": "message",
        "zeta": 1,
        "id": "i",
        "parentId": None,
        "extra": {"nested": True},
        "timestamp": TS,
        "message": {
            "role": "user",
            "x-first": None,
            "content": [{"type": "text", "text": "hi", "cache": "ephemeral"}],
            "timestamp": MS,
            "_wire_keys": [1],
        },
        "last": [1, 2],
    }
    obj = assert_round_trip(d)
    assert isinstance(obj, MessageEntry)
    assert obj.extra == {"zeta": 1, "extra": {"nested": True}, "last": [1, 2]}
    assert isinstance(obj.message, UserMessage)
    assert obj.message.extra == {"x-first": None, "_wire_keys": [1]}
    assert obj.message.content[0] == TextContent(text="hi", extra={"cache": "ephemeral"})  # type: ignore[index]


def test_unknown_entry_type_role_and_block_survive() -> None:
    e = assert_round_trip(entry("bookmark", target="x", color=None))
    assert isinstance(e, UnknownEntry)
    assert (e.type, e.wire_type, e.id, e.parent_id, e.timestamp) == (
        "unknown", "bookmark", "b2c3d4e5", "a1b2c3d4", TS
    )
    assert e.extra == {"target": "x", "color": None}

    m = assert_round_trip({"role": "hookMessage", "customType": "x", "timestamp": 1})
    assert isinstance(m, UnknownMessage) and m.role == "unknown" and m.wire_role == "hookMessage"
    wrapped = assert_round_trip(entry("message", message={"role": "critic", "verdict": "ok"}))
    assert isinstance(wrapped, MessageEntry) and isinstance(wrapped.message, UnknownMessage)

    b = assert_round_trip({"type": "audio", "data": "…", "format": "wav"}, ContentBlock)
    assert isinstance(b, UnknownContent) and b.wire_type == "audio"
    assert b.extra == {"data": "…", "format": "wav"}


# --------------------------------------------------------------------------- UNSET vs null


def test_custom_data_null_and_missing_stay_different() -> None:
    with_null = {
        "type": "custom",
        "customType": "x",
        "data": None,
        "id": "i",
        "parentId": None,
        "timestamp": TS,
    }
    without = {"type": "custom", "customType": "x", "id": "i", "parentId": None, "timestamp": TS}
    a, b = assert_round_trip(with_null), assert_round_trip(without)
    assert isinstance(a, CustomEntry) and isinstance(b, CustomEntry)
    assert a.data is None and b.data is UNSET
    assert "data" in to_wire(a) and "data" not in to_wire(b)


@pytest.mark.parametrize(
    ("d", "field"),
    [
        (entry("label", targetId="t"), "label"),
        (entry("label", targetId="t", label=None), "label"),
        (entry("session_info"), "name"),
        (entry("session_info", name=None), "name"),
        (entry("compaction", summary="s", firstKeptEntryId="f", tokensBefore=1), "details"),
        (entry("compaction", summary="s", firstKeptEntryId="f", tokensBefore=1, details=None), "details"),
        (entry("compaction", summary="s", firstKeptEntryId="f", tokensBefore=1, usage=None), "usage"),
        (entry("branch_summary", fromId="f", summary="s", fromHook=None), "from_hook"),
        (entry("branch_summary", fromId="f", summary="s"), "from_hook"),
    ],
)
def test_null_and_missing_optional_fields_round_trip(d: dict[str, Any], field: str) -> None:
    obj = assert_round_trip(d)
    wire = attrs.fields_dict(type(obj))
    assert field in wire
    value = getattr(obj, field)
    camel = "".join(p if i == 0 else p.capitalize() for i, p in enumerate(field.split("_")))
    assert value is (None if camel in d else UNSET)


def test_null_content_and_null_timestamp_stay_typed() -> None:
    # Pi's content is never null: a null reads as the empty value, the raw null stays in extra.
    m = assert_round_trip({"role": "user", "content": None, "timestamp": None})
    assert isinstance(m, UserMessage) and m.content == "" and m.timestamp is None
    assert m.extra == {"content": None}
    missing = assert_round_trip(
        {"role": "assistant", **{k: v for k, v in ASSISTANT.items() if k != "content"}}
    )
    assert isinstance(missing, AssistantMessage) and missing.content == ()


# ------------------------------------------------- Pi's order for Python-built objects


def base() -> dict[str, Any]:
    return {"id": "b2c3d4e5", "parent_id": "a1b2c3d4", "timestamp": TS}


def u() -> Usage:
    return Usage(
        input=1,
        output=2,
        cache_read=0,
        cache_write=0,
        total_tokens=3,
        cost=Cost(input=0.1, output=0.2, cache_read=0, cache_write=0, total=0.3),
        cache_write_1h=0,
        reasoning=1,
    )


PYTHON_BUILT: list[tuple[Any, list[str]]] = [
    (
        SessionHeader(id="s", timestamp=TS, cwd="/p", parent_session="/q"),
        ["type", "version", "id", "timestamp", "cwd", "parentSession"],
    ),
    (
        CustomEntry(custom_type="x", data=None, **base()),
        ["type", "customType", "data", "id", "parentId", "timestamp"],
    ),
    (CustomEntry(custom_type="x", **base()), ["type", "customType", "id", "parentId", "timestamp"]),
    (
        CustomMessageEntry(custom_type="x", content="c", display=True, details=None, **base()),
        ["type", "customType", "content", "display", "details", "id", "parentId", "timestamp"],
    ),
    (
        MessageEntry(message=UserMessage(content="hi", timestamp=1), **base()),
        ["type", "id", "parentId", "timestamp", "message"],
    ),
    (
        UsageEntry(kind="k", provider="p", model="m", usage=u(), note="n", **base()),
        ["type", "id", "parentId", "timestamp", "kind", "provider", "model", "usage", "note"],
    ),
    (
        CompactionEntry(
            summary="s",
            first_kept_entry_id="f",
            tokens_before=1,
            details=None,
            usage=None,
            from_hook=None,
            system_message=SystemMessage(content="x", timestamp=1),
            **base(),
        ),
        [
            "type",
            "id",
            "parentId",
            "timestamp",
            "summary",
            "firstKeptEntryId",
            "tokensBefore",
            "details",
            "usage",
            "fromHook",
            "systemMessage",
        ],
    ),
    (
        BranchSummaryEntry(from_id="root", summary="s", details=1, usage=u(), from_hook=False, **base()),
        ["type", "id", "parentId", "timestamp", "fromId", "summary", "details", "usage", "fromHook"],
    ),
    (
        ContextEditEntry(target_id="t", replacement=ContextEditReplacement(content="x"), **base()),
        ["type", "id", "parentId", "timestamp", "targetId", "replacement"],
    ),
    (
        LabelEntry(target_id="t", label="l", **base()),
        ["type", "id", "parentId", "timestamp", "targetId", "label"],
    ),
    (SessionInfoEntry(name="n", **base()), ["type", "id", "parentId", "timestamp", "name"]),
    (
        ThinkingLevelChangeEntry(thinking_level="low", **base()),
        ["type", "id", "parentId", "timestamp", "thinkingLevel"],
    ),
    (
        ModelChangeEntry(provider="p", model_id="m", **base()),
        ["type", "id", "parentId", "timestamp", "provider", "modelId"],
    ),
    (
        AssistantMessage(
            content=[],
            api="a",
            provider="p",
            model="m",
            usage=u(),
            stop_reason="stop",
            timestamp=1,
            response_id="r",
        ),
        ["role", "content", "api", "provider", "model", "usage", "stopReason", "timestamp", "responseId"],
    ),
    (
        ToolResultMessage(
            tool_call_id="c", tool_name="n", content=[], details={}, is_error=True, timestamp=1
        ),
        ["role", "toolCallId", "toolName", "content", "details", "isError", "timestamp"],
    ),
    (
        BashExecutionMessage(
            command="ls",
            output="",
            exit_code=0,
            cancelled=False,
            truncated=False,
            timestamp=1,
            exclude_from_context=True,
        ),
        [
            "role",
            "command",
            "output",
            "exitCode",
            "cancelled",
            "truncated",
            "timestamp",
            "excludeFromContext",
        ],
    ),
    (
        CustomMessage(custom_type="x", content="c", display=True, details=None, timestamp=1),
        ["role", "customType", "content", "display", "details", "timestamp"],
    ),
    (
        BranchSummaryMessage(summary="s", from_id=None, timestamp=1),
        ["role", "summary", "fromId", "timestamp"],
    ),
    (
        CompactionSummaryMessage(summary="s", tokens_before=1, timestamp=1),
        ["role", "summary", "tokensBefore", "timestamp"],
    ),
    (
        u(),
        ["input", "output", "cacheRead", "cacheWrite", "totalTokens", "cost", "cacheWrite1h", "reasoning"],
    ),
    (ToolCall(id="c", name="n", arguments={}), ["type", "id", "name", "arguments"]),
    (ImageContent(data="d", mime_type="image/png"), ["type", "data", "mimeType"]),
]


@pytest.mark.parametrize(("obj", "keys"), PYTHON_BUILT, ids=lambda x: type(x).__name__)
def test_objects_built_in_python_serialise_in_pis_order(obj: Any, keys: list[str]) -> None:
    wire = to_wire(obj)
    assert list(wire) == keys
    again = from_wire(wire, type(obj))
    assert again == obj
    assert js(to_wire(again)) == js(wire)


def test_python_built_extra_goes_after_the_fields() -> None:
    label = LabelEntry(target_id="t", extra={"color": "red"}, **base())
    assert list(to_wire(label)) == ["type", "id", "parentId", "timestamp", "targetId", "color"]


def test_nested_objects_serialise_to_wire_dicts() -> None:
    msg = UserMessage(
        content=[TextContent(text="a"), ImageContent(data="d", mime_type="image/png")], timestamp=7
    )
    assert to_wire(MessageEntry(message=msg, **base()))["message"] == {
        "role": "user",
        "content": [{"type": "text", "text": "a"}, {"type": "image", "data": "d", "mimeType": "image/png"}],
        "timestamp": 7,
    }


# --------------------------------------------------------------------------- evolve and the remembered order


def test_evolve_keeps_the_file_order_and_appends_new_keys() -> None:
    d = {"targetId": "t", "type": "label", "id": "i", "parentId": None, "timestamp": TS, "x": 1}
    obj = from_wire(d)
    assert isinstance(obj, LabelEntry)
    changed = attrs.evolve(obj, target_id="u")
    assert list(to_wire(changed)) == list(d)
    assert to_wire(changed)["targetId"] == "u"
    labelled = attrs.evolve(obj, label="new")
    assert list(to_wire(labelled)) == [*d, "label"]
    cleared = attrs.evolve(labelled, label=UNSET)
    assert js(to_wire(cleared)) == js(d)


def test_evolve_keeps_the_file_order_after_a_pickle_and_with_unknown_keys() -> None:
    import pickle

    d = {"targetId": "t", "zz": [1], "type": "label", "id": "i", "parentId": None, "timestamp": TS}
    obj = pickle.loads(pickle.dumps(from_wire(d)))
    assert list(to_wire(attrs.evolve(obj, target_id="u"))) == list(d)
    # a new extra is a new object's: Pi's own key order
    assert list(to_wire(attrs.evolve(obj, extra={}))) == ["type", "id", "parentId", "timestamp", "targetId"]


def test_a_set_field_wins_over_a_raw_value_kept_in_extra() -> None:
    odd = from_wire({"type": "thing", "id": 5, "parentId": None})
    assert isinstance(odd, UnknownEntry)
    assert odd.id is UNSET and odd.extra == {"id": 5}
    fixed = attrs.evolve(odd, id="abc")
    assert to_wire(fixed) == {"type": "thing", "id": "abc", "parentId": None}
    assert list(to_wire(fixed)) == ["type", "id", "parentId"]


# ------------------------------------------------- misfits keep their class (as Pi), losslessly

MISFITS: list[tuple[dict[str, Any], type]] = [
    (entry("message", message="just a string"), MessageEntry),
    (entry("message", message=None), MessageEntry),
    (entry("message"), MessageEntry),
    (entry("model_change", provider="p"), ModelChangeEntry),
    (entry("model_change", provider="p", modelId=7), ModelChangeEntry),
    (entry("compaction", summary="s", firstKeptEntryId="f", tokensBefore=True), CompactionEntry),
    (entry("compaction", summary="s", firstKeptEntryId="f", tokensBefore=1.5), CompactionEntry),
    (
        entry(
            "compaction",
            summary="s",
            firstKeptEntryId="f",
            tokensBefore=1,
            systemMessage=MESSAGES["user-string"][1],
        ),
        CompactionEntry,
    ),
    (entry("context_edit", targetId="t", replacement={"text": "x"}), ContextEditEntry),
    (entry("context_edit", targetId="t"), ContextEditEntry),
    (entry("usage", kind="k", provider="p", model="m", usage={"input": 1}), UsageEntry),
    (entry("label", targetId="t", label=3), LabelEntry),
    ({"type": "label", "targetId": "t"}, MalformedEntry),
    ({"type": "session", "version": 3, "timestamp": TS, "cwd": "/p"}, MalformedEntry),  # header needs an id
    ({"type": 7, "id": "i"}, MalformedEntry),
    ({"type": ["message"], "id": "i"}, MalformedEntry),
    ({"type": None}, MalformedEntry),
    ({}, MalformedEntry),
    ({"foo": "bar"}, MalformedEntry),
    ({"role": "user", "content": 42, "timestamp": MS}, UserMessage),
    ({"role": "user", "content": {"text": "x"}, "timestamp": MS}, UserMessage),
    ({"role": "user", "content": ["x"], "timestamp": MS}, UserMessage),
    ({"role": "user", "content": "hi"}, UserMessage),
    ({"role": "user", "content": "hi", "timestamp": "yesterday"}, UserMessage),
    ({"role": "assistant", **{**ASSISTANT, "usage": {**USAGE, "cost": None}}}, AssistantMessage),
    ({"role": "assistant", **{**ASSISTANT, "content": "text"}}, AssistantMessage),
    ({"role": 3}, UnknownMessage),
    ({"role": {"nested": 1}}, UnknownMessage),
    ({"role": "system", "content": "", "sections": {"a": 1}, "timestamp": 1}, SystemMessage),
    (
        {
            "role": "toolResult",
            "toolCallId": "c",
            "toolName": "n",
            "content": [],
            "isError": 0,
            "timestamp": 1,
        },
        ToolResultMessage,
    ),
]


@pytest.mark.parametrize(
    ("d", "cls"), MISFITS, ids=lambda x: js(x)[:60] if isinstance(x, dict) else x.__name__
)
def test_misfits_keep_their_class_and_round_trip(d: dict[str, Any], cls: type) -> None:
    obj = assert_round_trip(d)
    assert type(obj) is cls


def test_a_misfit_inside_a_message_keeps_every_class() -> None:
    d = entry("message", message={"role": "assistant", **{**ASSISTANT, "usage": {"input": 1}}})
    e = assert_round_trip(d)
    assert isinstance(e, MessageEntry) and isinstance(e.message, AssistantMessage)
    assert e.message.usage.input == 1 and e.message.usage.output == 0  # missing counts read as 0
    blocks = {"role": "user", "content": [{"type": "text", "text": 5}, {"type": "image"}], "timestamp": 1}
    m = assert_round_trip(blocks)
    assert isinstance(m, UserMessage) and not isinstance(m.content, str)
    assert [type(b) for b in m.content] == [TextContent, ImageContent]
    assert m.content[0] == TextContent(text="", extra={"text": 5})


def test_a_missing_message_reads_as_an_empty_unknown_message() -> None:
    e = assert_round_trip(entry("message"))
    assert isinstance(e, MessageEntry) and isinstance(e.message, UnknownMessage)
    assert e.message.wire_role is UNSET


def test_a_block_the_role_does_not_allow_reads_as_unknown() -> None:
    m = assert_round_trip({"role": "user", "content": [BLOCKS["toolCall"][1]], "timestamp": 1})
    assert isinstance(m, UserMessage) and type(m.content[0]) is UnknownContent  # type: ignore[index]
    a = assert_round_trip({**ASSISTANT, "content": [BLOCKS["image"][1]]})
    assert isinstance(a, AssistantMessage) and type(a.content[0]) is UnknownContent  # type: ignore[index]
    r = assert_round_trip(
        entry("context_edit", targetId="t", replacement={"content": [BLOCKS["thinking"][1]]})
    )
    assert isinstance(r, ContextEditEntry) and isinstance(r.replacement, ContextEditReplacement)
    assert type(r.replacement.content[0]) is ThinkingContent


def test_a_header_with_odd_optional_fields_is_still_a_header() -> None:
    d = {"type": "session", "id": "s", "timestamp": 17, "cwd": None, "x": 1}
    h = assert_round_trip(d)
    assert isinstance(h, SessionHeader)
    assert h.id == "s" and h.version is UNSET and h.timestamp == "" and h.cwd == ""
    assert h.extra == {"timestamp": 17, "cwd": None, "x": 1}


def test_a_dict_with_a_role_and_no_type_is_a_message() -> None:
    assert isinstance(from_wire({"role": "user", "content": "x", "timestamp": 1}), UserMessage)
    assert isinstance(from_wire({"role": "user", "type": "x"}), UnknownEntry)


# --------------------------------------------------------------------------- asking for a class


def test_asking_for_a_class_raises_when_the_dict_does_not_fit() -> None:
    with pytest.raises(WireFormatError, match="'output'"):
        from_wire({"input": 1}, Usage)
    with pytest.raises(WireFormatError, match="role is 'assistant'"):
        from_wire(ASSISTANT, UserMessage)
    with pytest.raises(WireFormatError, match="'text' does not fit"):
        from_wire({"type": "text", "text": 5}, TextContent)
    with pytest.raises(WireFormatError, match="required key 'id'"):
        from_wire({"type": "session", "cwd": "/"}, SessionHeader)
    with pytest.raises(WireFormatError):
        from_wire([1, 2], Usage)  # type: ignore[arg-type]
    with pytest.raises(WireFormatError):
        from_wire("not a dict")  # type: ignore[arg-type]


def test_asking_for_a_union_never_raises_for_a_mapping() -> None:
    assert isinstance(from_wire({"x": 1}, Message), UnknownMessage)
    assert isinstance(from_wire({"type": "video"}, ContentBlock), UnknownContent)
    assert isinstance(from_wire(ENTRIES["session"][1], Entry), UnknownEntry)  # the header is no entry
    assert isinstance(from_wire(ENTRIES["session"][1], FileEntry), SessionHeader)
    assert isinstance(from_wire(ENTRIES["label"][1], FileEntry), LabelEntry)
    assert isinstance(from_wire({"type": "video"}, UnknownContent), UnknownContent)


def test_the_converter_is_the_one_registry() -> None:
    usage = converter.structure(USAGE, Usage)
    assert isinstance(usage, Usage)
    assert converter.unstructure(usage) == USAGE
    assert isinstance(converter.structure(MESSAGES["custom"][1], Message), CustomMessage)


# --------------------------------------------------------------------------- context objects


def test_session_context_round_trips() -> None:
    d = {
        "messages": [MESSAGES["user-string"][1], ASSISTANT, {"role": "critic"}],
        "thinkingLevel": "off",
        "model": {"provider": "anthropic", "modelId": "claude"},
    }
    ctx = assert_round_trip(d, SessionContext)
    assert [type(m) for m in ctx.messages] == [UserMessage, AssistantMessage, UnknownMessage]
    assert ctx.model == ModelRef(provider="anthropic", model_id="claude")
    built = SessionContext(messages=[UserMessage(content="x", timestamp=1)], thinking_level="low", model=None)
    assert to_wire(built) == {
        "messages": [{"role": "user", "content": "x", "timestamp": 1}],
        "thinkingLevel": "low",
        "model": None,
    }


# --------------------------------------------------------------------------- to_wire on plain and mixed input


def test_plain_json_passes_through_unchanged() -> None:
    d = {"type": "label", "nested": {"a": [1, {"b": 2}]}}
    assert to_wire(d) is d
    items = [d, {"role": "user"}]
    assert to_wire(items) is items
    assert to_wire((d,)) == [d]


def test_model_objects_inside_plain_containers_are_converted_without_touching_the_input() -> None:
    block = TextContent(text="x")
    d = {"role": "user", "content": [block, {"type": "text", "text": "y"}], "timestamp": 1}
    out = to_wire(d)
    assert out == {
        "role": "user",
        "content": [{"type": "text", "text": "x"}, {"type": "text", "text": "y"}],
        "timestamp": 1,
    }
    assert d["content"][0] is block
    assert to_wire([UserMessage(content="a", timestamp=1), {"role": "custom"}]) == [
        {"role": "user", "content": "a", "timestamp": 1},
        {"role": "custom"},
    ]


def test_typed_fields_accept_wire_dicts_from_python() -> None:
    entry_obj = UsageEntry(kind="k", provider="p", model="m", usage=USAGE, **base())  # type: ignore[arg-type]
    assert to_wire(entry_obj)["usage"] is USAGE


# --------------------------------------------------------------------------- hypothesis: random shapes

text = st.text(max_size=6)
json_scalar = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | text
)
json_value = st.recursive(
    json_scalar,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=6,
)
number = st.integers(0, 10**9) | st.floats(0, 10, allow_nan=False)
count = st.integers(0, 10**9)
ms = st.none() | st.integers(0, 2**42)

Fields = list[tuple[str, st.SearchStrategy[Any], bool]]  # wire key, good values, optional


@st.composite
def shaped(
    draw: st.DrawFn, tag: tuple[str, str] | None, fields: Callable[[], Fields], noisy: bool
) -> dict[str, Any]:
    """A dict with ``fields`` (good values, sometimes omitted or, when noisy, any JSON), extra keys,
    in a random key order."""
    items: list[tuple[str, Any]] = [tag] if tag else []
    specs = fields()
    for wire, good, optional in specs:
        choice = draw(
            st.sampled_from(["good", "good", "good", "omit", "noise"] if noisy else ["good", "omit"])
        )
        if choice == "omit" and (optional or noisy):
            continue
        items.append((wire, draw(json_value if choice == "noise" else good)))
    known = {w for w, _, _ in specs} | ({tag[0]} if tag else set())
    # Well-formed dicts get extra keys only under new names; noisy ones may overwrite any key.
    key = (
        st.text(min_size=1, max_size=6)
        if noisy
        else st.text(min_size=1, max_size=6).filter(lambda k: k not in known)
    )
    items += draw(st.lists(st.tuples(key, json_value), max_size=3))
    d: dict[str, Any] = {}
    for k, v in draw(st.permutations(items)):
        d[k] = v
    return d


def block(
    noisy: bool, allowed: tuple[str, ...] = ("text", "image", "thinking", "toolCall")
) -> st.SearchStrategy[Any]:
    opt_str = st.none() | text
    table: dict[str, Callable[[], Fields]] = {
        "text": lambda: [("text", text, False), ("textSignature", opt_str, True)],
        "image": lambda: [("data", text, False), ("mimeType", text, False)],
        "thinking": lambda: [
            ("thinking", text, False),
            ("thinkingSignature", opt_str, True),
            ("redacted", st.booleans(), True),
        ],
        "toolCall": lambda: [
            ("id", text, False),
            ("name", text, False),
            ("arguments", st.dictionaries(text, json_value, max_size=2), False),
            ("thoughtSignature", text, True),
            ("namespace", text, True),
        ],
    }
    return st.one_of([shaped(("type", t), table[t], noisy) for t in allowed])


def content(noisy: bool, allowed: tuple[str, ...]) -> st.SearchStrategy[Any]:
    return text | st.lists(block(noisy, allowed), max_size=3)


def cost(noisy: bool) -> st.SearchStrategy[Any]:
    return shaped(
        None,
        lambda: (
            [(k, number, False) for k in ("input", "output", "cacheRead", "cacheWrite", "total")]
            + [("totalFromProvider", st.booleans(), True)]
        ),
        noisy,
    )


def usage(noisy: bool) -> st.SearchStrategy[Any]:
    return shaped(
        None,
        lambda: (
            [(k, count, False) for k in ("input", "output", "cacheRead", "cacheWrite", "totalTokens")]
            + [("cost", cost(noisy), False), ("cacheWrite1h", count, True), ("reasoning", count, True)]
        ),
        noisy,
    )


USER_BLOCKS = ("text", "image")
ASSISTANT_BLOCKS = ("text", "thinking", "toolCall")


def message_fields(noisy: bool) -> dict[str, Callable[[], Fields]]:
    opt_str = st.none() | text
    return {
        "system": lambda: [
            ("content", content(noisy, USER_BLOCKS), True),
            ("sections", st.dictionaries(text, opt_str, max_size=2), True),
            ("toolsAdded", st.lists(st.fixed_dictionaries({"name": text}), max_size=2), True),
            ("toolsRemoved", st.lists(st.fixed_dictionaries({"name": text}), max_size=2), True),
            ("timestamp", ms, False),
        ],
        "user": lambda: [
            ("content", st.none() | content(noisy, USER_BLOCKS), True),
            ("timestamp", ms, False),
        ],
        "assistant": lambda: [
            ("content", st.lists(block(noisy, ASSISTANT_BLOCKS), max_size=3), True),
            ("api", text, False),
            ("provider", text, False),
            ("model", text, False),
            ("usage", usage(noisy), False),
            ("stopReason", st.sampled_from(["stop", "toolUse", "error", "new-reason"]), False),
            ("timestamp", ms, False),
            ("responseId", text, True),
            ("errorMessage", text, True),
            ("thinkingLevel", text, True),
            ("diagnostics", json_value, True),
        ],
        "toolResult": lambda: [
            ("toolCallId", text, False),
            ("toolName", text, False),
            ("content", st.lists(block(noisy, USER_BLOCKS), max_size=2), True),
            ("details", json_value, True),
            ("usage", st.none() | usage(noisy), True),
            ("isError", st.booleans(), False),
            ("timestamp", ms, False),
        ],
        "bashExecution": lambda: [
            ("command", text, False),
            ("output", text, False),
            ("exitCode", st.none() | st.integers(-1, 255), True),
            ("cancelled", st.booleans(), False),
            ("truncated", st.booleans(), False),
            ("fullOutputPath", text, True),
            ("timestamp", ms, False),
            ("excludeFromContext", st.booleans(), True),
        ],
        "custom": lambda: [
            ("customType", text, False),
            ("content", content(noisy, USER_BLOCKS), True),
            ("display", st.booleans(), False),
            ("details", json_value, True),
            ("timestamp", ms, False),
        ],
        "branchSummary": lambda: [
            ("summary", text, False),
            ("fromId", opt_str, False),
            ("timestamp", ms, False),
        ],
        "compactionSummary": lambda: [
            ("summary", text, False),
            ("tokensBefore", count, False),
            ("timestamp", ms, False),
        ],
    }


def message(noisy: bool, roles: tuple[str, ...] | None = None) -> st.SearchStrategy[Any]:
    table = message_fields(noisy)
    return st.one_of([shaped(("role", r), table[r], noisy) for r in (roles or tuple(table))])


def entry_fields(noisy: bool) -> dict[str, Callable[[], Fields]]:
    opt_str = st.none() | text
    base_fields: Fields = [("id", text, False), ("parentId", opt_str, False), ("timestamp", text, False)]

    def with_base(fields: Callable[[], Fields], first: bool = True) -> Callable[[], Fields]:
        return lambda: base_fields + fields() if first else fields() + base_fields

    return {
        "message": with_base(lambda: [("message", message(noisy), False)]),
        "thinking_level_change": with_base(lambda: [("thinkingLevel", text, False)]),
        "model_change": with_base(lambda: [("provider", text, False), ("modelId", text, False)]),
        "usage": with_base(
            lambda: [
                ("kind", text, False),
                ("provider", text, False),
                ("model", text, False),
                ("usage", usage(noisy), False),
                ("note", text, True),
            ]
        ),
        "compaction": with_base(
            lambda: [
                ("summary", text, False),
                ("firstKeptEntryId", text, False),
                ("tokensBefore", count, False),
                ("details", json_value, True),
                ("usage", st.none() | usage(noisy), True),
                ("fromHook", st.none() | st.booleans(), True),
                ("systemMessage", message(noisy, ("system",)), True),
            ]
        ),
        "context_edit": with_base(
            lambda: [
                ("targetId", text, False),
                (
                    "replacement",
                    st.none()
                    | st.fixed_dictionaries({"content": content(noisy, USER_BLOCKS + ASSISTANT_BLOCKS)}),
                    False,
                ),
            ]
        ),
        "branch_summary": with_base(
            lambda: [
                ("fromId", text, False),
                ("summary", text, False),
                ("details", json_value, True),
                ("usage", st.none() | usage(noisy), True),
                ("fromHook", st.booleans(), True),
            ]
        ),
        "custom": with_base(lambda: [("customType", text, False), ("data", json_value, True)], first=False),
        "custom_message": with_base(
            lambda: [
                ("customType", text, False),
                ("content", content(noisy, USER_BLOCKS), True),
                ("display", st.booleans(), False),
                ("details", json_value, True),
            ],
            first=False,
        ),
        "label": with_base(lambda: [("targetId", text, False), ("label", opt_str, True)]),
        "session_info": with_base(lambda: [("name", opt_str, True)]),
        "session": lambda: [
            ("version", st.integers(1, 3), True),
            ("id", text, False),
            ("timestamp", text, False),
            ("cwd", text, False),
            ("parentSession", text, True),
        ],
    }


ENTRY_CLASS = {
    "message": MessageEntry,
    "thinking_level_change": ThinkingLevelChangeEntry,
    "model_change": ModelChangeEntry,
    "usage": UsageEntry,
    "compaction": CompactionEntry,
    "context_edit": ContextEditEntry,
    "branch_summary": BranchSummaryEntry,
    "custom": CustomEntry,
    "custom_message": CustomMessageEntry,
    "label": LabelEntry,
    "session_info": SessionInfoEntry,
    "session": SessionHeader,
}
ROLE_CLASS = {cls.role: cls for cls, _ in MESSAGES.values()}  # type: ignore[attr-defined]


def well_formed_entry() -> st.SearchStrategy[dict[str, Any]]:
    table = entry_fields(noisy=False)
    return st.one_of([shaped(("type", t), table[t], noisy=False) for t in sorted(table)])


def noisy_entry() -> st.SearchStrategy[dict[str, Any]]:
    table = entry_fields(noisy=True)
    return st.one_of([shaped(("type", t), table[t], noisy=True) for t in sorted(table)]) | shaped(
        ("type", "no_such_type"), lambda: [], noisy=True
    )


HYPO = settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@HYPO
@given(well_formed_entry())
def test_well_formed_entries_read_as_their_class_and_round_trip(d: dict[str, Any]) -> None:
    obj = from_wire(d)
    assert type(obj) is ENTRY_CLASS[d["type"]]
    back = to_wire(obj)
    assert back == d
    assert js(back) == js(d)
    assert from_wire(back) == obj


@HYPO
@given(message(noisy=False))
def test_well_formed_messages_read_as_their_role_and_round_trip(d: dict[str, Any]) -> None:
    obj = from_wire(d, Message)
    assert type(obj) is ROLE_CLASS[d["role"]]
    assert js(to_wire(obj)) == js(d)
    content = getattr(obj, "content", None)
    if isinstance(content, tuple):
        assert UnknownContent not in {type(b) for b in content}


@HYPO
@given(noisy_entry())
def test_any_json_in_entry_fields_round_trips_exactly(d: dict[str, Any]) -> None:
    obj = from_wire(d)
    back = to_wire(obj)
    assert back == d
    assert js(back) == js(d)
    assert from_wire(back) == obj


@HYPO
@given(message(noisy=True))
def test_any_json_in_message_fields_round_trips_exactly(d: dict[str, Any]) -> None:
    for obj in (from_wire(d), from_wire(d, Message)):
        assert js(to_wire(obj)) == js(d)
    assert isinstance(from_wire(entry("message", message=d)), MessageEntry)


any_key = (
    st.sampled_from(["type", "role", "id", "parentId", "timestamp", "message", "content", "extra"]) | text
)


@HYPO
@given(st.dictionaries(any_key, json_value, max_size=6))
def test_any_json_object_round_trips(d: dict[str, Any]) -> None:
    assert js(to_wire(from_wire(d))) == js(d)
    for union in (Entry, Message, ContentBlock, FileEntry):
        assert js(to_wire(from_wire(d, union))) == js(d)
