"""The shapes of Pi 1.6.0's RPC records (``dist/modes/rpc/rpc-types.d.ts``, ``docs/rpc-commands.md``,
``docs/json.md``) as TypedDicts: what :meth:`PiRpcClient.request` sends and returns, and the
events. Values inside them (messages, entries, models) are Pi's wire dicts, as in a session file;
:func:`pisession.from_wire` types an entry.
"""

from __future__ import annotations

from typing import Any, Literal, TypedDict, Union  # Union: the alias is evaluated on 3.10

__all__ = [
    "CommandType",
    "EventType",
    "PromptDisposition",
    "QueuedDisposition",
    "StreamingBehavior",
    "QueueMode",
    "ThinkingLevelName",
    "ImageData",
    "Command",
    "PromptCommand",
    "MessageCommand",
    "SimpleCommand",
    "NewSessionCommand",
    "SetModelCommand",
    "SetThinkingLevelCommand",
    "SetQueueModeCommand",
    "CompactCommand",
    "ToggleCommand",
    "BashCommand",
    "ExportHtmlCommand",
    "SwitchSessionCommand",
    "ForkCommand",
    "GetEntriesCommand",
    "SetSessionNameCommand",
    "Response",
    "SessionState",
    "EntriesData",
    "TreeData",
    "TreeNodeData",
    "CancelledData",
    "ForkData",
    "QueueData",
    "CompactionResultData",
    "SessionStatsData",
    "BashResultData",
    "SlashCommandData",
    "Event",
]

CommandType = Literal[
    "prompt",
    "steer",
    "follow_up",
    "abort",
    "clear_queue",
    "new_session",
    "get_state",
    "set_model",
    "cycle_model",
    "get_available_models",
    "set_thinking_level",
    "cycle_thinking_level",
    "get_available_thinking_levels",
    "set_steering_mode",
    "set_follow_up_mode",
    "compact",
    "set_auto_compaction",
    "set_auto_retry",
    "abort_retry",
    "bash",
    "abort_bash",
    "get_session_stats",
    "export_html",
    "switch_session",
    "fork",
    "clone",
    "get_fork_messages",
    "get_entries",
    "get_tree",
    "get_last_assistant_text",
    "set_session_name",
    "get_messages",
    "get_commands",
]
"""Every command Pi 1.6.0's RPC mode accepts (anything else: ``Unknown command: X``)."""

EventType = Literal[
    "agent_start",
    "agent_end",
    "agent_settled",
    "turn_start",
    "turn_end",
    "message_start",
    "message_update",
    "message_end",
    "tool_execution_start",
    "tool_execution_update",
    "tool_execution_end",
    "queue_update",
    "entry_appended",
    "session_info_changed",
    "thinking_level_changed",
    "compaction_start",
    "compaction_end",
    "auto_retry_start",
    "auto_retry_end",
    "summarization_retry_scheduled",
    "summarization_retry_attempt_start",
    "summarization_retry_finished",
    "bash_execution_update",
    "extension_error",
    "extension_ui_request",
]
"""The ``type`` of the records Pi writes besides responses (``docs/json.md``,
``docs/rpc-extension-ui.md``)."""

PromptDisposition = Literal["started", "queued", "handled"]
QueuedDisposition = Literal["queued", "handled"]
StreamingBehavior = Literal["steer", "followUp"]
QueueMode = Literal["all", "one-at-a-time"]
ThinkingLevelName = Literal["off", "minimal", "low", "medium", "high", "xhigh"]


class ImageData(TypedDict):
    type: Literal["image"]
    data: str  # base64
    mimeType: str


# -- commands ---------------------------------------------------------------------------------
# ``id`` is optional on every command; the client sets it to correlate the response.


class _Id(TypedDict, total=False):
    id: str


class _Prompt(_Id):
    type: Literal["prompt"]
    message: str


class PromptCommand(_Prompt, total=False):
    images: list[ImageData]
    streamingBehavior: StreamingBehavior


class _Message(_Id):
    type: Literal["steer", "follow_up"]
    message: str


class MessageCommand(_Message, total=False):
    images: list[ImageData]


class SimpleCommand(_Id):
    """A command with no argument: ``abort``, ``clear_queue``, ``get_state``, ``cycle_model``,
    ``get_available_models``, ``cycle_thinking_level``, ``get_available_thinking_levels``,
    ``abort_retry``, ``abort_bash``, ``get_session_stats``, ``clone``, ``get_fork_messages``,
    ``get_tree``, ``get_last_assistant_text``, ``get_messages``, ``get_commands``."""

    type: str


class NewSessionCommand(_Id, total=False):
    type: Literal["new_session"]
    parentSession: str


class SetModelCommand(_Id):
    type: Literal["set_model"]
    provider: str
    modelId: str


class SetThinkingLevelCommand(_Id):
    type: Literal["set_thinking_level"]
    level: ThinkingLevelName


class SetQueueModeCommand(_Id):
    type: Literal["set_steering_mode", "set_follow_up_mode"]
    mode: QueueMode


class CompactCommand(_Id, total=False):
    type: Literal["compact"]
    customInstructions: str


class ToggleCommand(_Id):
    type: Literal["set_auto_compaction", "set_auto_retry"]
    enabled: bool


class _Bash(_Id):
    type: Literal["bash"]
    command: str


class BashCommand(_Bash, total=False):
    excludeFromContext: bool


class ExportHtmlCommand(_Id, total=False):
    type: Literal["export_html"]
    outputPath: str


class SwitchSessionCommand(_Id):
    type: Literal["switch_session"]
    sessionPath: str


class ForkCommand(_Id):
    type: Literal["fork"]
    entryId: str


class GetEntriesCommand(_Id, total=False):
    type: Literal["get_entries"]
    since: str


class SetSessionNameCommand(_Id):
    type: Literal["set_session_name"]
    name: str


Command = Union[  # noqa: UP007
    PromptCommand,
    MessageCommand,
    SimpleCommand,
    NewSessionCommand,
    SetModelCommand,
    SetThinkingLevelCommand,
    SetQueueModeCommand,
    CompactCommand,
    ToggleCommand,
    BashCommand,
    ExportHtmlCommand,
    SwitchSessionCommand,
    ForkCommand,
    GetEntriesCommand,
    SetSessionNameCommand,
]


# -- responses --------------------------------------------------------------------------------


class _Response(TypedDict):
    type: Literal["response"]
    command: str
    success: bool


class Response(_Response, total=False):
    """``{"id", "type": "response", "command", "success", "data"?, "error"?}``; a line Pi could
    not parse is answered with ``command: "parse"`` and no ``id``."""

    id: str
    data: Any
    error: str


class _SessionState(TypedDict):
    thinkingLevel: str
    isStreaming: bool
    isCompacting: bool
    steeringMode: QueueMode
    followUpMode: QueueMode
    sessionId: str
    autoCompactionEnabled: bool
    messageCount: int
    pendingMessageCount: int


class SessionState(_SessionState, total=False):
    """``get_state``: ``model`` is Pi's model object (absent without a model), ``sessionFile``
    absent with ``--no-session``."""

    model: dict[str, Any]
    sessionFile: str
    sessionName: str


class EntriesData(TypedDict):
    """``get_entries``: entries in append order (wire dicts, no header) and the leaf id."""

    entries: list[dict[str, Any]]
    leafId: str | None


class _TreeNode(TypedDict):
    entry: dict[str, Any]
    children: list[TreeNodeData]


class TreeNodeData(_TreeNode, total=False):
    label: str
    labelTimestamp: str


class TreeData(TypedDict):
    tree: list[TreeNodeData]
    leafId: str | None


class CancelledData(TypedDict):
    """``new_session``, ``switch_session``, ``clone``: whether an extension cancelled it."""

    cancelled: bool


class ForkData(TypedDict, total=False):
    text: str
    cancelled: bool


class QueueData(TypedDict):
    steering: list[str]
    followUp: list[str]


class _CompactionResult(TypedDict):
    summary: str
    firstKeptEntryId: str
    tokensBefore: int


class CompactionResultData(_CompactionResult, total=False):
    estimatedTokensAfter: int
    usage: dict[str, Any]
    details: Any


class SessionStatsData(TypedDict, total=False):
    sessionFile: str
    sessionId: str
    userMessages: int
    assistantMessages: int
    toolCalls: int
    toolResults: int
    totalMessages: int
    tokens: dict[str, int]
    cost: float
    contextUsage: dict[str, Any]


class BashResultData(TypedDict, total=False):
    output: str
    exitCode: int | None
    cancelled: bool
    truncated: bool
    fullOutputPath: str


class SlashCommandData(TypedDict, total=False):
    name: str
    description: str
    source: Literal["extension", "prompt", "skill"]
    sourceInfo: dict[str, Any]


# -- events -----------------------------------------------------------------------------------


class Event(TypedDict, total=False):
    """Any record Pi writes that is not a response: ``type`` (an :data:`EventType`) and the
    event's fields (``docs/json.md``), e.g. ``{"type": "agent_settled", "aborted": false}``.
    A line that is not JSON is handed over as ``{"type": "unparsed_line", "line": ...}``."""

    type: str
    message: dict[str, Any]
    messages: list[dict[str, Any]]
    assistantMessageEvent: dict[str, Any]
    usage: dict[str, Any]
    aborted: bool
    willRetry: bool
    toolResults: list[dict[str, Any]]
    toolCallId: str
    toolName: str
    args: Any
    result: Any
    partialResult: Any
    isError: bool
    durationMs: float
    steering: list[str]
    followUp: list[str]
    entry: dict[str, Any]
    name: str
    level: str
    reason: str
    errorMessage: str
    success: bool
    attempt: int
    maxAttempts: int
    delayMs: int
    finalError: str
    source: str
    id: str
    delta: str
    extensionPath: str
    event: str
    error: str
    method: str
    line: str
