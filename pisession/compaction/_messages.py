"""Messages as the summarizer sees them: Pi's ``messages.js`` and ``serializeConversation``.

``convert_to_llm`` turns the coding agent's own roles (bash executions, custom messages, stored
summaries) into the user messages a provider accepts; ``serialize_conversation`` renders those as
the plain text a summary request quotes, so the model reads a transcript instead of continuing it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from .._js import MISSING, js_date_ms, js_entries, js_string, js_truthy
from .._json import dumps
from .._model import BranchSummaryMessage, CompactionSummaryMessage, CustomMessage, Message
from ._common import WireMessage, content_text, js_len, messages_out, slice_head, wire, wire_list
from ._prompts import (
    BRANCH_SUMMARY_PREFIX,
    BRANCH_SUMMARY_SUFFIX,
    COMPACTION_SUMMARY_PREFIX,
    COMPACTION_SUMMARY_SUFFIX,
)

__all__ = [
    "TOOL_RESULT_MAX_CHARS",
    "bash_execution_to_text",
    "convert_to_llm",
    "serialize_conversation",
    "create_branch_summary_message",
    "create_compaction_summary_message",
    "create_custom_message",
]

TOOL_RESULT_MAX_CHARS = 2000
"""A tool result longer than this (in UTF-16 code units) is cut in a serialized conversation."""

_PASS_THROUGH = frozenset({"system", "user", "assistant", "toolResult"})


def _present(message: dict[str, Any]) -> dict[str, Any]:
    # An undefined property vanishes from Pi's JSON; MISSING plays undefined here.
    return {k: v for k, v in message.items() if v is not MISSING}


def bash_execution_to_text_wire(msg: Mapping[str, Any]) -> str:
    # Pi's template literals: every value reads as JavaScript's String() would write it.
    text = f"Ran `{js_string(msg.get('command', MISSING))}`\n"
    output = msg.get("output", MISSING)
    text += f"```\n{js_string(output)}\n```" if js_truthy(output) else "(no output)"
    exit_code = msg.get("exitCode", MISSING)
    if js_truthy(msg.get("cancelled")):
        text += "\n\n(command cancelled)"
    elif exit_code is not None and exit_code is not MISSING and not _is_js_zero(exit_code):
        text += f"\n\nCommand exited with code {js_string(exit_code)}"
    if js_truthy(msg.get("truncated")) and js_truthy(msg.get("fullOutputPath")):
        text += f"\n\n[Output truncated. Full output: {js_string(msg.get('fullOutputPath'))}]"
    return text


def _is_js_zero(value: Any) -> bool:
    """``value === 0``: the number zero only (False and "0" are not)."""
    return type(value) in (int, float) and value == 0


def convert_to_llm_wire(messages: Iterable[Mapping[str, Any]]) -> list[WireMessage]:
    out: list[WireMessage] = []
    for m in messages:
        role = m.get("role")
        if role == "bashExecution":
            if js_truthy(m.get("excludeFromContext")):
                continue  # a "!!" command the user kept out of the model's context
            text = bash_execution_to_text_wire(m)
            out.append(
                _present(
                    {
                        "role": "user",
                        "content": [{"type": "text", "text": text}],
                        "timestamp": m.get("timestamp", MISSING),
                    }
                )
            )
        elif role == "custom":
            content = m.get("content", MISSING)
            if isinstance(content, str):
                content = [{"type": "text", "text": content}]
            out.append(
                _present({"role": "user", "content": content, "timestamp": m.get("timestamp", MISSING)})
            )
        elif role in ("branchSummary", "compactionSummary"):
            prefix, suffix = (
                (BRANCH_SUMMARY_PREFIX, BRANCH_SUMMARY_SUFFIX)
                if role == "branchSummary"
                else (COMPACTION_SUMMARY_PREFIX, COMPACTION_SUMMARY_SUFFIX)
            )
            text = f"{prefix}{js_string(m.get('summary', MISSING))}{suffix}"
            out.append(
                _present(
                    {
                        "role": "user",
                        "content": [{"type": "text", "text": text}],
                        "timestamp": m.get("timestamp", MISSING),
                    }
                )
            )
        elif type(role) is str and role in _PASS_THROUGH:
            out.append(dict(m))
    return out


def _truncate_for_summary(text: str, max_chars: int) -> str:
    length = js_len(text)
    if length <= max_chars:
        return text
    return f"{slice_head(text, max_chars)}\n\n[... {length - max_chars} more characters truncated]"


def _tool_call_text(block: Mapping[str, Any]) -> str:
    items = js_entries(block.get("arguments", MISSING))
    return f"{js_string(block.get('name', MISSING))}({', '.join(f'{k}={dumps(v)}' for k, v in items)})"


def serialize_conversation_wire(messages: Iterable[Mapping[str, Any]]) -> str:
    parts: list[str] = []
    for msg in messages:
        role = msg.get("role")
        if role == "user":
            content = content_text(msg.get("content"), "")
            if content:
                parts.append(f"[User]: {content}")
        elif role == "assistant":
            blocks = msg.get("content")
            blocks = blocks if isinstance(blocks, list) else []
            calls = [
                _tool_call_text(b) for b in blocks if isinstance(b, dict) and b.get("type") == "toolCall"
            ]
            if any(isinstance(b, dict) and b.get("type") == "text" for b in blocks):
                parts.append(f"[Assistant]: {content_text(blocks)}")
            if calls:
                parts.append(f"[Assistant tool calls]: {'; '.join(calls)}")
        elif role == "toolResult":
            content = content_text(msg.get("content"), "")
            if content:
                parts.append(f"[Tool result]: {_truncate_for_summary(content, TOOL_RESULT_MAX_CHARS)}")
    return "\n\n".join(parts)


def custom_message_wire(
    custom_type: Any, content: Any, display: Any, details: Any, timestamp: Any
) -> WireMessage:
    return _present(
        {
            "role": "custom",
            "customType": custom_type,
            "content": content,
            "display": display,
            "details": details,
            "timestamp": js_date_ms(timestamp),
        }
    )


def branch_summary_message_wire(summary: Any, from_id: Any, timestamp: Any) -> WireMessage:
    return _present(
        {"role": "branchSummary", "summary": summary, "fromId": from_id, "timestamp": js_date_ms(timestamp)}
    )


def compaction_summary_message_wire(summary: Any, tokens_before: Any, timestamp: Any) -> WireMessage:
    return _present(
        {
            "role": "compactionSummary",
            "summary": summary,
            "tokensBefore": tokens_before,
            "timestamp": js_date_ms(timestamp),
        }
    )


# -- public: model objects in, model objects out -------------------------------------------------


def bash_execution_to_text(message: Message | Mapping[str, Any]) -> str:
    """The user-message text Pi gives the model for a bash execution::

    bash_execution_to_text(BashExecutionMessage(command="ls", output="a\\n", exit_code=0, ...))
    """
    return bash_execution_to_text_wire(wire(message))


def convert_to_llm(messages: Iterable[Message | Mapping[str, Any]]) -> list[Message]:
    """Pi's ``convertToLlm``: bash executions, custom messages and stored summaries become user
    messages (an excluded bash execution disappears); provider roles pass unchanged::

        llm_messages = convert_to_llm(preparation.messages_to_summarize)
    """
    return messages_out(convert_to_llm_wire(wire_list(messages)))


def serialize_conversation(messages: Iterable[Message | Mapping[str, Any]]) -> str:
    """Pi's ``serializeConversation``: ``[User]:``, ``[Assistant]:``, ``[Assistant tool calls]:``
    and ``[Tool result]:`` paragraphs, thinking left out, tool results cut after
    :data:`TOOL_RESULT_MAX_CHARS`. Call :func:`convert_to_llm` first, as Pi does::

        text = serialize_conversation(convert_to_llm(messages))
    """
    return serialize_conversation_wire(wire_list(messages))


def create_custom_message(
    custom_type: str, content: Any, display: bool, details: Any, timestamp: str | int
) -> CustomMessage:
    """The ``custom`` message a ``custom_message`` entry stands for (timestamp as milliseconds)."""
    return messages_out([custom_message_wire(custom_type, content, display, details, timestamp)])[0]  # type: ignore[return-value]


def create_branch_summary_message(summary: str, from_id: str, timestamp: str | int) -> BranchSummaryMessage:
    """The ``branchSummary`` message a ``branch_summary`` entry stands for."""
    return messages_out([branch_summary_message_wire(summary, from_id, timestamp)])[0]  # type: ignore[return-value]


def create_compaction_summary_message(
    summary: str, tokens_before: int, timestamp: str | int
) -> CompactionSummaryMessage:
    """The ``compactionSummary`` message a ``compaction`` entry stands for."""
    return messages_out([compaction_summary_message_wire(summary, tokens_before, timestamp)])[0]  # type: ignore[return-value]
