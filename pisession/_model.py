"""Typed, frozen value objects for everything a Pi session file holds.

The rest of pisession stores entries as *wire dicts* (the parsed JSON of a line, camelCase keys,
Pi's key order); these classes are the typed view handed to users. :mod:`pisession._codec` turns
one into the other (``from_wire`` / ``to_wire``) without losing anything: unknown keys live in
``extra``, the key order a file used is remembered, a required field that is missing or of
another JSON type reads as its type's empty value and is written back as it was, and tags Pi
does not know are kept by the ``Unknown*`` classes (docs/typing.md).

Build objects with keyword arguments; omitted optional fields are :data:`UNSET` (absent from the
JSON), while ``None`` is written as ``null``::

    >>> from pisession import UserMessage, to_wire
    >>> msg = UserMessage(content="Fix the failing test", timestamp=1733234400000)
    >>> to_wire(msg)
    {'role': 'user', 'content': 'Fix the failing test', 'timestamp': 1733234400000}
    >>> manager.append_message(msg)  # doctest: +SKIP

This module holds data only: no I/O and no conversion logic.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Literal

import attrs

# UNSET and the read-only containers live in _values, which reading a session imports without
# attrs; their classes are found here by pickle (and by the codec).
from ._values import _EMPTY as _EMPTY
from ._values import UNSET as UNSET
from ._values import Unset as Unset
from ._values import _extra_in_order as _extra_in_order
from ._values import _ReadOnlyDict as _ReadOnlyDict
from ._values import _ReadOnlyDictInOrder as _ReadOnlyDictInOrder
from ._values import _ReadOnlyList as _ReadOnlyList
from ._values import _UnsetType as _UnsetType
from ._values import freeze_json as freeze_json

__all__ = [
    "UNSET",
    "Unset",
    "StopReason",
    "ThinkingLevel",
    # content blocks
    "TextContent",
    "ImageContent",
    "ThinkingContent",
    "ToolCall",
    "UnknownContent",
    "ContentBlock",
    "UserContent",
    "AssistantContent",
    "ToolResultContent",
    # usage
    "Cost",
    "Usage",
    # messages
    "SystemMessage",
    "UserMessage",
    "AssistantMessage",
    "ToolResultMessage",
    "BashExecutionMessage",
    "CustomMessage",
    "BranchSummaryMessage",
    "CompactionSummaryMessage",
    "UnknownMessage",
    "Message",
    # entries
    "SessionHeader",
    "MessageEntry",
    "ThinkingLevelChangeEntry",
    "ModelChangeEntry",
    "UsageEntry",
    "CompactionEntry",
    "ContextEditReplacement",
    "ContextEditEntry",
    "BranchSummaryEntry",
    "CustomEntry",
    "CustomMessageEntry",
    "LabelEntry",
    "SessionInfoEntry",
    "UnknownEntry",
    "MalformedEntry",
    "Entry",
    "FileEntry",
    # context
    "ModelRef",
    "SessionContext",
    "ModelObject",
]


StopReason = Literal["pending", "stop", "length", "toolUse", "error", "aborted", "deferred"]
"""Stop reasons Pi 1.6.0 knows. ``AssistantMessage.stop_reason`` is a plain ``str`` so that a newer
Pi's reasons still read as an assistant message."""

ThinkingLevel = Literal["off", "minimal", "low", "medium", "high", "xhigh", "max"]
"""Thinking levels Pi 1.6.0 knows. Session fields holding a level are plain ``str``: Pi stores any string."""


def _read_only(value: Mapping[str, Any]) -> Mapping[str, Any]:
    if type(value) is _ReadOnlyDict or type(value) is _ReadOnlyDictInOrder:
        return value
    return _ReadOnlyDict({k: freeze_json(v) for k, v in value.items()})


def _freeze(value: Any) -> Any:
    # Lists become tuples so that a decoded object equals one built from Python, and frozen
    # objects shared by index snapshots cannot be changed through their sequences.
    return tuple(value) if type(value) is list else value


# One converter per annotation: mypy's attrs plugin takes a field's __init__ type from its
# converter's parameter, and cannot do so from a generic one.
def _user_content(value: UserContent) -> UserContent:
    return _freeze(value)  # type: ignore[no-any-return]


def _assistant_content(value: AssistantContent) -> AssistantContent:
    return _freeze(value)  # type: ignore[no-any-return]


def _tool_result_content(value: ToolResultContent) -> ToolResultContent:
    return _freeze(value)  # type: ignore[no-any-return]


def _replacement_content(value: UserContent | AssistantContent) -> UserContent | AssistantContent:
    return _freeze(value)  # type: ignore[no-any-return]


def _any_seq(value: Sequence[Any] | Unset) -> Sequence[Any] | Unset:
    return tuple(map(freeze_json, value)) if type(value) is list else value


def _json(value: Any) -> Any:
    return freeze_json(value)


def _json_object(value: Mapping[str, Any]) -> Mapping[str, Any]:
    return freeze_json(value)  # type: ignore[no-any-return]


def _sections(value: Mapping[str, str | None] | Unset) -> Mapping[str, str | None] | Unset:
    return _ReadOnlyDict(value) if type(value) is dict else value


def _messages(value: Sequence[Message]) -> Sequence[Message]:
    return _freeze(value)  # type: ignore[no-any-return]


def _now_ms() -> int:
    return time.time_ns() // 1_000_000  # Pi's Date.now()


@attrs.frozen(kw_only=True, repr=False)
class _Wire:
    """Fields every model class has: unknown wire keys and the remembered key order.

    ``extra`` holds the wire keys the class does not model, in file order. ``_wire_keys`` is the
    key order of the dict an object was read from (``None`` for objects built in Python, which
    serialise in Pi's canonical order); it takes no part in equality. ``_absent`` names the
    required fields the dict lacked or held with another JSON type: they read as the empty value
    of their type (``""``, ``0``, ``False``, ``()``, ``None`` where ``None`` is allowed) and are
    left out of ``to_wire`` (a raw value stays in ``extra``), so the object writes back exactly
    what was read. ``attrs.evolve`` starts a complete object: it writes every field.
    """

    extra: Mapping[str, Any] = attrs.field(default=_EMPTY, converter=_read_only)
    _wire_keys: tuple[str, ...] | None = attrs.field(default=None, eq=False, init=False)
    _absent: tuple[str, ...] = attrs.field(default=(), eq=False, init=False)

    def __repr__(self) -> str:
        parts = []
        for a in attrs.fields(type(self)):
            if a.name in ("extra", "_wire_keys", "_absent"):
                continue
            value = getattr(self, a.name)
            if value is not UNSET:
                parts.append(f"{a.name}={value!r}")
        if self.extra:
            parts.append(f"extra={dict(self.extra)!r}")
        return f"{type(self).__name__}({', '.join(parts)})"


# --------------------------------------------------------------------------- content blocks


@attrs.frozen(kw_only=True, repr=False)
class TextContent(_Wire):
    """``{"type": "text", "text", "textSignature"?}``: ``TextContent(text="Done.")``."""

    type: ClassVar[Literal["text"]] = "text"
    text: str
    text_signature: str | Unset | None = UNSET


@attrs.frozen(kw_only=True, repr=False)
class ImageContent(_Wire):
    """``{"type": "image", "data", "mimeType"}``: ``ImageContent(data=b64, mime_type="image/png")``."""

    type: ClassVar[Literal["image"]] = "image"
    data: str
    mime_type: str


@attrs.frozen(kw_only=True, repr=False)
class ThinkingContent(_Wire):
    """``{"type": "thinking", "thinking", "thinkingSignature"?, "redacted"?}``."""

    type: ClassVar[Literal["thinking"]] = "thinking"
    thinking: str
    thinking_signature: str | Unset | None = UNSET
    redacted: bool | Unset | None = UNSET


@attrs.frozen(kw_only=True, repr=False)
class ToolCall(_Wire):
    """``{"type": "toolCall", "id", "name", "arguments", ...}``.

    ``ToolCall(id="call_1", name="read", arguments={"path": "README.md"})``
    """

    type: ClassVar[Literal["toolCall"]] = "toolCall"
    id: str
    name: str
    arguments: Mapping[str, Any] = attrs.field(factory=dict, converter=_json_object)
    thought_signature: str | Unset | None = UNSET
    namespace: str | Unset | None = UNSET
    arguments_error: str | Unset | None = UNSET


@attrs.frozen(kw_only=True, repr=False)
class UnknownContent(_Wire):
    """A content block of a type Pi 1.6.0 does not know: ``block.type == "unknown"``.

    The block's own ``type`` is ``wire_type`` (:data:`UNSET` when it has no string ``type``; the
    raw value is then in ``extra``); every other key is in ``extra``.
    """

    type: ClassVar[Literal["unknown"]] = "unknown"
    wire_type: str | Unset = attrs.field(default=UNSET, metadata={"wire": "type"})


ContentBlock = TextContent | ImageContent | ThinkingContent | ToolCall | UnknownContent
"""Any content block. Decoding never fails on a JSON object; ``match block.type`` narrows."""

UserContent = str | Sequence[TextContent | ImageContent | UnknownContent]
"""Content of user, custom and system messages (and of ``custom_message`` entries)."""

AssistantContent = Sequence[TextContent | ThinkingContent | ToolCall | UnknownContent]
ToolResultContent = Sequence[TextContent | ImageContent | UnknownContent]


# --------------------------------------------------------------------------- usage


@attrs.frozen(kw_only=True, repr=False)
class Cost(_Wire):
    """Dollar cost of one call: ``{input, output, cacheRead, cacheWrite, total, totalFromProvider?}``."""

    input: float = 0
    output: float = 0
    cache_read: float = 0
    cache_write: float = 0
    total: float = 0
    total_from_provider: bool | Unset | None = UNSET


@attrs.frozen(kw_only=True, repr=False)
class Usage(_Wire):
    """Token counts and cost: ``{input, output, cacheRead, cacheWrite, totalTokens, cost, ...}``.

    ``reasoning`` is already part of ``output``. ``cache_write_1h`` (wire ``cacheWrite1h``) is
    the part of ``cache_write`` kept for an hour. Every count defaults to 0 (``Usage.zero()``
    is all zeros); objects built in Python put the optional counts after ``cost``, where Pi's
    providers add them::

        Usage(input=10, output=5, total_tokens=15, cost=Cost(input=0.00003, output=0.000075, total=0.000105))
    """

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    total_tokens: int = 0
    cost: Cost = attrs.field(factory=Cost)
    cache_write_1h: int | Unset = UNSET
    reasoning: int | Unset = UNSET

    @classmethod
    def zero(cls) -> Usage:
        """No tokens and no cost: ``AssistantMessage(..., usage=Usage.zero())``."""
        return cls()


# --------------------------------------------------------------------------- messages
# Message timestamps are Unix milliseconds (None where Pi computed NaN from a bad entry
# timestamp, or where the message has none); entry timestamps are ISO strings. Objects built in
# Python default to "now".


@attrs.frozen(kw_only=True, repr=False)
class SystemMessage(_Wire):
    """Prompt and tool state. ``sections`` patch by name (``None`` deletes one).

    ``replace=True`` (a pisession seed extension, ignored by Pi 1.6.0) starts a fresh baseline.
    ``tools_added`` holds tool declarations (``{"name", "description", "parameters", ...}``),
    ``tools_removed`` holds ``{"name"}`` references::

        SystemMessage(content="You are terse.", sections={"style": "<style>short</style>"})
    """

    role: ClassVar[Literal["system"]] = "system"
    content: UserContent = attrs.field(converter=_user_content)
    sections: Mapping[str, str | None] | Unset = attrs.field(default=UNSET, converter=_sections)
    tools_added: Sequence[Any] | Unset = attrs.field(default=UNSET, converter=_any_seq)
    tools_removed: Sequence[Any] | Unset = attrs.field(default=UNSET, converter=_any_seq)
    replace: bool | Unset | None = UNSET
    timestamp: int | float | None = attrs.field(factory=_now_ms)


@attrs.frozen(kw_only=True, repr=False)
class UserMessage(_Wire):
    """A user turn; content is a string or text/image blocks::

    UserMessage(content="What does this do?")
    UserMessage(content=[TextContent(text="Look:"), ImageContent(data=b64, mime_type="image/png")])
    """

    role: ClassVar[Literal["user"]] = "user"
    content: UserContent = attrs.field(converter=_user_content)
    timestamp: int | float | None = attrs.field(factory=_now_ms)


@attrs.frozen(kw_only=True, repr=False)
class AssistantMessage(_Wire):
    """A model response. ``content`` is text, thinking and tool-call blocks::

        AssistantMessage(content=[TextContent(text="Done.")], api="anthropic-messages",
                         provider="anthropic", model="claude-sonnet-4-5")

    ``usage`` defaults to :meth:`Usage.zero`, ``stop_reason`` to ``"stop"``, ``timestamp`` to
    now. Required fields come in the order Pi's providers build them; the optional ones follow
    ``timestamp`` because Pi assigns them after the message object exists.
    """

    role: ClassVar[Literal["assistant"]] = "assistant"
    content: AssistantContent = attrs.field(converter=_assistant_content)
    api: str
    provider: str
    model: str
    usage: Usage = attrs.field(factory=Usage)
    stop_reason: str = "stop"
    timestamp: int | float | None = attrs.field(factory=_now_ms)
    response_model: str | Unset | None = UNSET
    response_id: str | Unset | None = UNSET
    provider_thinking_level: str | Unset | None = UNSET
    thinking_level: str | Unset | None = UNSET
    diagnostics: Any = attrs.field(default=UNSET, converter=_json)
    deferred: Any = attrs.field(default=UNSET, converter=_json)
    error_message: str | Unset | None = UNSET
    raw_stop_reason: str | Unset | None = UNSET
    end_turn: bool | Unset | None = UNSET
    duration_ms: int | float | Unset | None = UNSET


@attrs.frozen(kw_only=True, repr=False)
class ToolResultMessage(_Wire):
    """The result of one tool call (``is_error`` defaults to False)::

    ToolResultMessage(tool_call_id="call_1", tool_name="read", content=[TextContent(text="# README")])
    """

    role: ClassVar[Literal["toolResult"]] = "toolResult"
    tool_call_id: str
    tool_name: str
    content: ToolResultContent = attrs.field(converter=_tool_result_content)
    details: Any = attrs.field(default=UNSET, converter=_json)
    usage: Usage | Unset | None = UNSET
    nested_calls: Any = attrs.field(default=UNSET, converter=_json)
    is_error: bool = False
    duration_ms: int | float | Unset | None = UNSET
    timestamp: int | float | None = attrs.field(factory=_now_ms)


@attrs.frozen(kw_only=True, repr=False)
class BashExecutionMessage(_Wire):
    """A ``!command`` the user ran; ``exit_code`` is UNSET when the command did not finish."""

    role: ClassVar[Literal["bashExecution"]] = "bashExecution"
    command: str
    output: str
    exit_code: int | Unset | None = UNSET
    cancelled: bool = False
    truncated: bool = False
    full_output_path: str | Unset | None = UNSET
    timestamp: int | float | None = attrs.field(factory=_now_ms)
    exclude_from_context: bool | Unset | None = UNSET


@attrs.frozen(kw_only=True, repr=False)
class CustomMessage(_Wire):
    """An extension's message in model context (built by Pi from a ``custom_message`` entry)."""

    role: ClassVar[Literal["custom"]] = "custom"
    custom_type: str
    content: UserContent = attrs.field(converter=_user_content)
    display: bool
    details: Any = attrs.field(default=UNSET, converter=_json)
    timestamp: int | float | None = attrs.field(factory=_now_ms)


@attrs.frozen(kw_only=True, repr=False)
class BranchSummaryMessage(_Wire):
    """Summary of an abandoned branch, as it appears in model context."""

    role: ClassVar[Literal["branchSummary"]] = "branchSummary"
    summary: str
    from_id: str | None
    timestamp: int | float | None = attrs.field(factory=_now_ms)


@attrs.frozen(kw_only=True, repr=False)
class CompactionSummaryMessage(_Wire):
    """Summary of compacted history, as it appears in model context."""

    role: ClassVar[Literal["compactionSummary"]] = "compactionSummary"
    summary: str
    tokens_before: int
    timestamp: int | float | None = attrs.field(factory=_now_ms)


@attrs.frozen(kw_only=True, repr=False)
class UnknownMessage(_Wire):
    """A message of a role Pi 1.6.0 does not know: ``message.role == "unknown"``.

    The message's own role is ``wire_role`` (:data:`UNSET` when it has no string ``role``; the
    raw value is then in ``extra``); every other key is in ``extra``.
    """

    role: ClassVar[Literal["unknown"]] = "unknown"
    wire_role: str | Unset = attrs.field(default=UNSET, metadata={"wire": "role"})


Message = (
    SystemMessage
    | UserMessage
    | AssistantMessage
    | ToolResultMessage
    | BashExecutionMessage
    | CustomMessage
    | BranchSummaryMessage
    | CompactionSummaryMessage
    | UnknownMessage
)
"""Any AgentMessage. Decoding never fails on a JSON object; ``message.role`` is a ``Literal``, so
``if message.role == "user":`` and ``match message.role:`` narrow to the class."""


# --------------------------------------------------------------------------- entries
# Every entry has id, parent_id (None for a root) and timestamp (the ISO string as written).


@attrs.frozen(kw_only=True, repr=False)
class SessionHeader(_Wire):
    """First line of a session file: ``SessionHeader(id=..., timestamp=..., cwd="/project")``.

    Pi only requires a string ``id`` and reads ``timestamp`` and ``cwd`` defensively, so a header
    whose ``timestamp``/``cwd``/``version``/``parentSession`` is missing or has another JSON type
    still reads as a header: ``timestamp``/``cwd`` read as ``""``, ``version``/``parent_session``
    as :data:`UNSET`, and a raw value stays in ``extra``.
    """

    type: ClassVar[Literal["session"]] = "session"
    version: int | Unset = 3
    id: str
    timestamp: str
    cwd: str
    parent_session: str | Unset | None = UNSET


@attrs.frozen(kw_only=True, repr=False)
class MessageEntry(_Wire):
    """``{"type": "message", ..., "message": AgentMessage}``."""

    type: ClassVar[Literal["message"]] = "message"
    id: str
    parent_id: str | None
    timestamp: str
    message: Message


@attrs.frozen(kw_only=True, repr=False)
class ThinkingLevelChangeEntry(_Wire):
    type: ClassVar[Literal["thinking_level_change"]] = "thinking_level_change"
    id: str
    parent_id: str | None
    timestamp: str
    thinking_level: str


@attrs.frozen(kw_only=True, repr=False)
class ModelChangeEntry(_Wire):
    type: ClassVar[Literal["model_change"]] = "model_change"
    id: str
    parent_id: str | None
    timestamp: str
    provider: str
    model_id: str


@attrs.frozen(kw_only=True, repr=False)
class UsageEntry(_Wire):
    """Model-attributed usage outside the context (``kind`` is free-form, e.g. ``"cache_warm"``)."""

    type: ClassVar[Literal["usage"]] = "usage"
    id: str
    parent_id: str | None
    timestamp: str
    kind: str
    provider: str
    model: str
    usage: Usage
    note: str | Unset | None = UNSET


@attrs.frozen(kw_only=True, repr=False)
class CompactionEntry(_Wire):
    """Checkpoint: context restarts from ``summary`` plus the entries from ``first_kept_entry_id``."""

    type: ClassVar[Literal["compaction"]] = "compaction"
    id: str
    parent_id: str | None
    timestamp: str
    summary: str
    first_kept_entry_id: str
    tokens_before: int
    details: Any = attrs.field(default=UNSET, converter=_json)
    usage: Usage | Unset | None = UNSET
    from_hook: bool | Unset | None = UNSET
    system_message: SystemMessage | Unset = UNSET


@attrs.frozen(kw_only=True, repr=False)
class ContextEditReplacement(_Wire):
    """New content for a context edit's target: ``ContextEditReplacement(content="redacted")``."""

    content: UserContent | AssistantContent = attrs.field(converter=_replacement_content)


@attrs.frozen(kw_only=True, repr=False)
class ContextEditEntry(_Wire):
    """Replaces (or, with ``replacement=None``, hides) an earlier entry's content in model context."""

    type: ClassVar[Literal["context_edit"]] = "context_edit"
    id: str
    parent_id: str | None
    timestamp: str
    target_id: str
    replacement: ContextEditReplacement | None


@attrs.frozen(kw_only=True, repr=False)
class BranchSummaryEntry(_Wire):
    type: ClassVar[Literal["branch_summary"]] = "branch_summary"
    id: str
    parent_id: str | None
    timestamp: str
    from_id: str
    summary: str
    details: Any = attrs.field(default=UNSET, converter=_json)
    usage: Usage | Unset | None = UNSET
    from_hook: bool | Unset | None = UNSET


@attrs.frozen(kw_only=True, repr=False)
class CustomEntry(_Wire):
    """Extension state outside the context. Pi writes ``customType`` and ``data`` before ``id``.

    ``data=UNSET`` writes no ``data`` key, ``data=None`` writes ``"data":null``.
    """

    type: ClassVar[Literal["custom"]] = "custom"
    custom_type: str
    data: Any = attrs.field(default=UNSET, converter=_json)
    id: str
    parent_id: str | None
    timestamp: str


@attrs.frozen(kw_only=True, repr=False)
class CustomMessageEntry(_Wire):
    """An extension message that takes part in model context. Pi writes ``id`` after ``details``."""

    type: ClassVar[Literal["custom_message"]] = "custom_message"
    custom_type: str
    content: UserContent = attrs.field(converter=_user_content)
    display: bool
    details: Any = attrs.field(default=UNSET, converter=_json)
    id: str
    parent_id: str | None
    timestamp: str


@attrs.frozen(kw_only=True, repr=False)
class LabelEntry(_Wire):
    """Sets (or, when ``label`` is falsy, clears) the label of ``target_id``."""

    type: ClassVar[Literal["label"]] = "label"
    id: str
    parent_id: str | None
    timestamp: str
    target_id: str
    label: str | Unset | None = UNSET


@attrs.frozen(kw_only=True, repr=False)
class SessionInfoEntry(_Wire):
    type: ClassVar[Literal["session_info"]] = "session_info"
    id: str
    parent_id: str | None
    timestamp: str
    name: str | Unset | None = UNSET


@attrs.frozen(kw_only=True, repr=False)
class UnknownEntry(_Wire):
    """An entry of a type Pi 1.6.0 does not know: ``entry.type == "unknown"``.

    The entry's own type is ``wire_type``; every key but the base fields is in ``extra``;
    ``to_wire`` gives back exactly the dict that was read::

        >>> from_wire({"type": "bookmark", "id": "b1", "parentId": None, "timestamp": "...", "at": 3})
        UnknownEntry(wire_type='bookmark', id='b1', parent_id=None, timestamp='...', extra={'at': 3})
    """

    type: ClassVar[Literal["unknown"]] = "unknown"
    wire_type: str = attrs.field(metadata={"wire": "type"})
    id: str
    parent_id: str | None = None
    timestamp: str = ""


@attrs.frozen(kw_only=True, repr=False)
class MalformedEntry(UnknownEntry):
    """An entry line without a string ``id`` or ``type`` (``{}``, a v1 entry copied by a fork).

    Pi keeps such lines, so ``get_entries()`` and the other readers do too, but no entry can
    name one as its parent or label it. It is the one class whose ``id`` and ``wire_type`` may
    be :data:`UNSET` (the raw values are then in ``extra``), which the ``Entry`` type does not
    show: check ``isinstance(entry, MalformedEntry)`` before relying on ``entry.id`` where such
    files can occur. A subclass of :class:`UnknownEntry`, so ``case UnknownEntry():`` covers it.
    """

    wire_type: str | Unset = attrs.field(default=UNSET, metadata={"wire": "type"})  # type: ignore[assignment]
    id: str | Unset = UNSET  # type: ignore[assignment]
    parent_id: str | Unset | None = UNSET  # type: ignore[assignment]
    timestamp: str | Unset = UNSET  # type: ignore[assignment]


Entry = (
    MessageEntry
    | ThinkingLevelChangeEntry
    | ModelChangeEntry
    | UsageEntry
    | CompactionEntry
    | ContextEditEntry
    | BranchSummaryEntry
    | CustomEntry
    | CustomMessageEntry
    | LabelEntry
    | SessionInfoEntry
    | UnknownEntry
)
"""Any session entry (not the header). Every entry has a ``str`` ``id`` and a ``Literal`` ``type``,
so ``if entry.type == "message":`` and ``match entry.type:`` narrow to the class. Decoding never
fails on a JSON object: a type Pi does not know reads as :class:`UnknownEntry`, a line without a
string id as :class:`MalformedEntry` (see there)."""

FileEntry = SessionHeader | Entry


# --------------------------------------------------------------------------- context


@attrs.frozen(kw_only=True, repr=False)
class ModelRef(_Wire):
    """The model in effect: wire ``{"provider", "modelId"}``."""

    provider: str
    model_id: str


@attrs.frozen(kw_only=True, repr=False)
class SessionContext(_Wire):
    """What Pi sends to the model: wire ``{"messages", "thinkingLevel", "model"}``."""

    messages: Sequence[Message] = attrs.field(converter=_messages)
    thinking_level: str
    model: ModelRef | None


ModelObject = (
    ContentBlock | Cost | Usage | Message | FileEntry | ContextEditReplacement | ModelRef | SessionContext
)
"""Every model class (what ``to_wire`` accepts besides plain JSON values)."""
