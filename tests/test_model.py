"""The model layer on its own: UNSET, defaults, immutability, equality, repr, pickling."""

from __future__ import annotations

import copy
import pickle
import time

import attrs
import pytest

from pisession._model import (
    UNSET,
    AssistantMessage,
    BashExecutionMessage,
    BranchSummaryEntry,
    BranchSummaryMessage,
    CompactionEntry,
    CompactionSummaryMessage,
    ContextEditEntry,
    Cost,
    CustomEntry,
    CustomMessage,
    CustomMessageEntry,
    ImageContent,
    LabelEntry,
    MalformedEntry,
    MessageEntry,
    ModelChangeEntry,
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

BASE = {"id": "a1b2c3d4", "parent_id": None, "timestamp": "2024-12-03T14:00:00.000Z"}


def usage() -> Usage:
    return Usage(
        input=10,
        output=5,
        cache_read=0,
        cache_write=0,
        total_tokens=15,
        cost=Cost(input=0.00003, output=0.000075, cache_read=0, cache_write=0, total=0.000105),
    )


# --------------------------------------------------------------------------- UNSET


def test_unset_is_a_falsy_singleton_with_a_readable_repr() -> None:
    assert not UNSET
    assert repr(UNSET) == "UNSET"
    assert UNSET is not None
    assert copy.deepcopy(UNSET) is UNSET
    assert pickle.loads(pickle.dumps(UNSET)) is UNSET


def test_optional_fields_default_to_unset_not_none() -> None:
    label = LabelEntry(**BASE, target_id="x")
    assert label.label is UNSET
    custom = CustomEntry(**BASE, custom_type="ext")
    assert custom.data is UNSET
    assert CustomEntry(**BASE, custom_type="ext", data=None).data is None
    compaction = CompactionEntry(**BASE, summary="s", first_kept_entry_id="x", tokens_before=3)
    assert (compaction.details, compaction.usage, compaction.from_hook, compaction.system_message) == (
        UNSET,
        UNSET,
        UNSET,
        UNSET,
    )
    assert TextContent(text="t").text_signature is UNSET
    assert usage().cache_write_1h is UNSET and usage().reasoning is UNSET


def test_header_defaults_to_the_current_version() -> None:
    header = SessionHeader(id="s1", timestamp="2024-12-03T14:00:00.000Z", cwd="/p")
    assert header.version == 3
    assert header.parent_session is UNSET
    assert header.type == "session"


def test_message_timestamp_defaults_to_now_in_milliseconds() -> None:
    before = time.time() * 1000
    msg = UserMessage(content="hi")
    after = time.time() * 1000
    assert isinstance(msg.timestamp, int)
    assert before - 1 <= msg.timestamp <= after + 1
    assert UserMessage(content="hi", timestamp=None).timestamp is None


# --------------------------------------------------------------------------- tags


@pytest.mark.parametrize(
    ("cls", "tag"),
    [
        (MessageEntry, "message"),
        (ThinkingLevelChangeEntry, "thinking_level_change"),
        (ModelChangeEntry, "model_change"),
        (UsageEntry, "usage"),
        (CompactionEntry, "compaction"),
        (ContextEditEntry, "context_edit"),
        (BranchSummaryEntry, "branch_summary"),
        (CustomEntry, "custom"),
        (CustomMessageEntry, "custom_message"),
        (LabelEntry, "label"),
        (SessionInfoEntry, "session_info"),
        (SessionHeader, "session"),
        (TextContent, "text"),
        (ImageContent, "image"),
        (ThinkingContent, "thinking"),
        (ToolCall, "toolCall"),
    ],
)
def test_type_tags_are_class_constants_not_fields(cls: type, tag: str) -> None:
    assert cls.type == tag  # type: ignore[attr-defined]
    assert "type" not in attrs.fields_dict(cls)


@pytest.mark.parametrize(
    ("cls", "role"),
    [
        (SystemMessage, "system"),
        (UserMessage, "user"),
        (AssistantMessage, "assistant"),
        (ToolResultMessage, "toolResult"),
        (BashExecutionMessage, "bashExecution"),
        (CustomMessage, "custom"),
        (BranchSummaryMessage, "branchSummary"),
        (CompactionSummaryMessage, "compactionSummary"),
    ],
)
def test_roles_are_class_constants(cls: type, role: str) -> None:
    assert cls.role == role  # type: ignore[attr-defined]
    assert "role" not in attrs.fields_dict(cls)


def test_unknown_classes_carry_their_tag_as_a_field() -> None:
    # The class tag is "unknown" (so == on the Literal narrows); the file's tag is wire_type/wire_role.
    future = UnknownEntry(wire_type="future", id="f1")
    assert future.type == "unknown" and future.wire_type == "future"
    assert UnknownMessage(wire_role="future").role == "unknown"
    assert UnknownMessage(wire_role="future").wire_role == "future"
    assert UnknownContent(wire_type="audio").wire_type == "audio"
    assert MalformedEntry().id is UNSET and isinstance(MalformedEntry(), UnknownEntry)


# --------------------------------------------------------------------------- immutability


def test_objects_are_frozen() -> None:
    msg = UserMessage(content="hi", timestamp=1)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        msg.content = "changed"  # type: ignore[misc]


def test_lists_become_tuples_so_sequences_cannot_change() -> None:
    blocks = [TextContent(text="a")]
    msg = UserMessage(content=blocks, timestamp=1)
    assert msg.content == (TextContent(text="a"),)
    blocks.append(TextContent(text="b"))
    assert msg.content == (TextContent(text="a"),)
    assert UserMessage(content="abc", timestamp=1).content == "abc"  # a string is not split
    system = SystemMessage(content="", tools_added=[{"name": "read"}], timestamp=1)
    assert system.tools_added == ({"name": "read"},)


def test_extra_is_a_read_only_copy() -> None:
    source = {"color": "red"}
    label = LabelEntry(**BASE, target_id="x", extra=source)
    source["color"] = "blue"
    assert label.extra == {"color": "red"}
    with pytest.raises(TypeError):
        label.extra["color"] = "green"  # type: ignore[index]
    with pytest.raises(TypeError):
        label.extra.update(x=1)  # type: ignore[attr-defined]
    assert LabelEntry(**BASE, target_id="x").extra == {}


def test_objects_built_with_lists_equal_objects_built_with_tuples() -> None:
    a = AssistantMessage(
        content=[TextContent(text="x")],
        api="anthropic-messages",
        provider="anthropic",
        model="m",
        usage=usage(),
        stop_reason="stop",
        timestamp=1,
    )
    b = attrs.evolve(a, content=(TextContent(text="x"),))
    assert a == b


def test_equality_ignores_the_remembered_key_order() -> None:
    a = TextContent(text="x", _wire_keys=("type", "text"))
    b = TextContent(text="x", _wire_keys=("text", "type"))
    assert a == b
    assert a != TextContent(text="y")
    assert TextContent(text="x") != TextContent(text="x", extra={"k": 1})


def test_unset_and_none_are_different_values() -> None:
    assert CustomEntry(**BASE, custom_type="x") != CustomEntry(**BASE, custom_type="x", data=None)


# --------------------------------------------------------------------------- repr, pickle


def test_repr_leaves_out_unset_fields_and_empty_extra() -> None:
    assert repr(TextContent(text="hi")) == "TextContent(text='hi')"
    assert repr(TextContent(text="hi", text_signature=None)) == "TextContent(text='hi', text_signature=None)"
    assert (
        repr(UnknownContent(wire_type="audio", extra={"url": "u"}))
        == "UnknownContent(wire_type='audio', extra={'url': 'u'})"
    )


def test_repr_hides_the_private_key_order() -> None:
    assert "_wire_keys" not in repr(TextContent(text="x", _wire_keys=("type", "text")))


@pytest.mark.parametrize(
    "obj",
    [
        MessageEntry(**BASE, message=UserMessage(content=[TextContent(text="hi")], timestamp=1)),
        UsageEntry(**BASE, kind="cache_warm", provider="p", model="m", usage=usage(), note="n"),
        CustomEntry(**BASE, custom_type="x", data={"a": [1, 2]}, extra={"z": 1}),
        ToolResultMessage(tool_call_id="c", tool_name="read", content=[], is_error=False, timestamp=1),
        BashExecutionMessage(command="ls", output="", cancelled=False, truncated=False, timestamp=2),
    ],
)
def test_pickle_and_deepcopy_round_trip(obj: object) -> None:
    assert pickle.loads(pickle.dumps(obj)) == obj
    assert copy.deepcopy(obj) == obj
