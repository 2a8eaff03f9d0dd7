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
    from pisession import from_wire

    a = from_wire({"type": "text", "text": "x"}, TextContent)
    b = from_wire({"text": "x", "type": "text"}, TextContent)
    assert a == b == TextContent(text="x")
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
    from pisession import from_wire

    assert "_wire_keys" not in repr(from_wire({"text": "x", "type": "text"}, TextContent))


def test_no_model_constructor_takes_a_private_parameter() -> None:
    import inspect

    import pisession._model as model

    classes = [c for c in vars(model).values() if isinstance(c, type) and attrs.has(c)]
    assert len(classes) > 30
    for cls in classes:
        assert [p for p in inspect.signature(cls).parameters if p.startswith("_")] == [], cls


# A LabelEntry (label UNSET) pickled by pisession before Unset became a class (protocols 2 and 5).
OLD_PICKLES = [
    b"\x80\x02cpisession._model\nLabelEntry\nq\x00)\x81q\x01}q\x02(X\x05\x00\x00\x00extraq\x03cpisession._model"
    b"\n_ReadOnlyDict\nq\x04}q\x05\x85q\x06Rq\x07X\n\x00\x00\x00_wire_keysq\x08NX\x07\x00\x00\x00_absentq\t)X"
    b"\x02\x00\x00\x00idq\nX\x08\x00\x00\x00a1b2c3d4q\x0bX\t\x00\x00\x00parent_idq\x0cNX\t\x00\x00\x00timestampq"
    b"\rX\x18\x00\x00\x002024-12-03T14:00:00.000Zq\x0eX\t\x00\x00\x00target_idq\x0fX\x01\x00\x00\x00xq\x10X\x05"
    b"\x00\x00\x00labelq\x11cpisession._model\n_UnsetType\nq\x12X\x05\x00\x00\x00UNSETq\x13\x85q\x14Rq\x15ub.",
    b"\x80\x05\x95\xf0\x00\x00\x00\x00\x00\x00\x00\x8c\x10pisession._model\x94\x8c\nLabelEntry\x94\x93\x94)\x81"
    b"\x94}\x94(\x8c\x05extra\x94\x8c\x10pisession._model\x94\x8c\r_ReadOnlyDict\x94\x93\x94}\x94\x85\x94R\x94\x8c"
    b"\n_wire_keys\x94N\x8c\x07_absent\x94)\x8c\x02id\x94\x8c\x08a1b2c3d4\x94\x8c\tparent_id\x94N\x8c\ttimestamp"
    b"\x94\x8c\x182024-12-03T14:00:00.000Z\x94\x8c\ttarget_id\x94\x8c\x01x\x94\x8c\x05label\x94h\x06\x8c\n_UnsetType"
    b"\x94\x93\x94\x8c\x05UNSET\x94\x85\x94R\x94ub.",
]


@pytest.mark.parametrize("data", OLD_PICKLES)
def test_pickles_from_before_unset_was_a_class_still_load(data: bytes) -> None:
    from pisession import Unset

    entry = pickle.loads(data)
    assert entry == LabelEntry(**BASE, target_id="x")
    assert entry.label is UNSET and isinstance(entry.label, Unset)


def test_unset_is_a_class_with_one_falsy_instance() -> None:
    from pisession import Unset

    assert isinstance(UNSET, Unset) and not isinstance(None, Unset) and not isinstance("UNSET", Unset)
    assert list(Unset) == [UNSET] and not UNSET


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
