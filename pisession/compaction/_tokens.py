"""Token accounting as Pi does it: the provider's usage where there is one, else chars / 4.

The estimate is Pi's conservative heuristic (4 characters per token, 4,800 characters per image,
UTF-16 lengths), not a tokenizer: it is what decides *when* and *where* Pi compacts, so a script
that wants to behave like Pi must count the same way.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from .._codec import from_wire
from .._context import WireProjection, current_system_message
from .._js import MISSING, js_truthy
from .._json import dumps
from .._model import Entry, Message, Usage
from ._common import js_len, wire, wire_list

__all__ = [
    "CompactionSettings",
    "DEFAULT_COMPACTION_SETTINGS",
    "ContextTokenEstimate",
    "estimate_tokens",
    "estimate_context_tokens",
    "calculate_context_tokens",
    "get_last_assistant_usage",
    "should_compact",
]

ESTIMATED_IMAGE_CHARS = 4800


@attrs.frozen
class CompactionSettings:
    """When Pi compacts and how much it keeps (Pi's ``CompactionSettings``, snake_case)::

    settings = CompactionSettings(keep_recent_tokens=8000)
    """

    enabled: bool = True
    reserve_tokens: int = 16384
    """Room kept free in the context window: compaction triggers above ``window - reserve``."""
    keep_recent_tokens: int = 20000
    """Roughly how many recent tokens stay verbatim after the cut."""

    def to_wire(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "reserveTokens": self.reserve_tokens,
            "keepRecentTokens": self.keep_recent_tokens,
        }


DEFAULT_COMPACTION_SETTINGS = CompactionSettings()


@attrs.frozen
class ContextTokenEstimate:
    """Context size from the last usable usage plus the estimate of what came after it."""

    tokens: int
    usage_tokens: int
    trailing_tokens: int
    last_usage_index: int | None
    """Index of the message whose usage was used, or None when everything was estimated."""


def _ceil4(chars: int) -> int:
    return -(-chars // 4)


def _text_and_image_chars(content: Any) -> int:
    if isinstance(content, str):
        return js_len(content)
    chars = 0
    for block in content if isinstance(content, list) else ():
        if not isinstance(block, Mapping):
            continue
        kind = block.get("type")
        if kind == "text" and js_truthy(block.get("text")):
            chars += js_len(block["text"])
        elif kind == "image":
            chars += ESTIMATED_IMAGE_CHARS
    return chars


def estimate_tokens_wire(message: Mapping[str, Any]) -> int:
    role = message.get("role")
    if role == "system":
        chars = _text_and_image_chars(message.get("content"))
        sections = message.get("sections")
        if isinstance(sections, Mapping):
            chars += sum(js_len(s) for s in sections.values() if isinstance(s, str) and s)
        tools = message.get("toolsAdded")
        if js_truthy(tools):
            chars += js_len(dumps(tools))
        return _ceil4(chars)
    if role in ("user", "custom", "toolResult"):
        return _ceil4(_text_and_image_chars(message.get("content")))
    if role == "assistant":
        chars = 0
        content = message.get("content")
        for block in content if isinstance(content, list) else ():
            if not isinstance(block, Mapping):
                continue
            kind = block.get("type")
            if kind == "text":
                chars += js_len(block.get("text") or "")
            elif kind == "thinking":
                chars += js_len(block.get("thinking") or "")
            elif kind == "toolCall":
                chars += js_len(str(block.get("name"))) + js_len(dumps(block.get("arguments")))
        return _ceil4(chars)
    if role == "bashExecution":
        return _ceil4(js_len(str(message.get("command"))) + js_len(str(message.get("output"))))
    if role in ("branchSummary", "compactionSummary"):
        return _ceil4(js_len(str(message.get("summary"))))
    return 0


def calculate_context_tokens_wire(usage: Mapping[str, Any]) -> int:
    total: Any = usage.get("totalTokens")
    if js_truthy(total):
        return total  # type: ignore[no-any-return]
    parts: Any = sum(usage.get(k) or 0 for k in ("input", "output", "cacheRead", "cacheWrite"))
    return parts  # type: ignore[no-any-return]


def assistant_usage_wire(message: Any) -> Mapping[str, Any] | None:
    """The usage of an assistant message that has a real one (not aborted, failed or all zero)."""
    if not isinstance(message, Mapping) or message.get("role") != "assistant" or "usage" not in message:
        return None
    usage = message["usage"]
    if message.get("stopReason") in ("aborted", "error") or not isinstance(usage, Mapping):
        return None
    return usage if calculate_context_tokens_wire(usage) > 0 else None


def estimate_context_tokens_wire(messages: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    for i in range(len(messages) - 1, -1, -1):
        usage = assistant_usage_wire(messages[i])
        if usage is not None:
            usage_tokens = calculate_context_tokens_wire(usage)
            trailing = sum(estimate_tokens_wire(m) for m in messages[i + 1 :])
            return {
                "tokens": usage_tokens + trailing,
                "usageTokens": usage_tokens,
                "trailingTokens": trailing,
                "lastUsageIndex": i,
            }
    estimated = sum(estimate_tokens_wire(m) for m in messages)
    return {"tokens": estimated, "usageTokens": 0, "trailingTokens": estimated, "lastUsageIndex": None}


def estimate_projected_context_tokens_wire(
    projection: WireProjection, entry_at: Any, branch_ids: Sequence[Any], branch_types: Sequence[Any]
) -> int:
    """Pi's ``estimateProjectedContextTokens(...).tokens``: a usage recorded before the latest
    context edit or compaction describes a context that no longer exists, so it is not trusted."""
    messages = projection.messages
    estimate = estimate_context_tokens_wire(messages)
    last = estimate["lastUsageIndex"]
    if last is not None:
        usage_entry_id: Any = MISSING
        seen = 0
        for pos, msgs in projection.entries:
            if last < seen + len(msgs):
                usage_entry_id = entry_at(pos).get("id", MISSING)
                break
            seen += len(msgs)
        usage_index = -1
        if js_truthy(usage_entry_id):
            usage_index = next((i for i, e in enumerate(branch_ids) if e == usage_entry_id), -1)
        invalidating = next(
            (
                i
                for i in range(len(branch_types) - 1, -1, -1)
                if branch_types[i] in ("context_edit", "compaction")
            ),
            -1,
        )
        if usage_index > invalidating:
            return estimate["tokens"]  # type: ignore[no-any-return]
    # Pi 1.6.0 replays system messages ignoring the "replace" flag.
    system = current_system_message(messages, honour_replace=False)
    tokens = estimate_tokens_wire(system) if system is not None else 0
    return tokens + sum(estimate_tokens_wire(m) for m in messages if m.get("role") != "system")


# -- public ---------------------------------------------------------------------------------------


def estimate_tokens(message: Message | Mapping[str, Any]) -> int:
    """Pi's estimate of one message's tokens (characters / 4, rounded up; an image counts 4,800
    characters; thinking and tool-call arguments count, tool-result images too)::

        tokens = sum(estimate_tokens(m) for m in manager.build_session_context().messages)
    """
    return estimate_tokens_wire(wire(message))


def estimate_context_tokens(messages: Iterable[Message | Mapping[str, Any]]) -> ContextTokenEstimate:
    """The context size Pi assumes: the last valid assistant usage plus estimates of the messages
    after it (all estimated when no assistant reported usage)::

        estimate_context_tokens(manager.build_session_context().messages).tokens
    """
    raw = estimate_context_tokens_wire(wire_list(messages))
    return ContextTokenEstimate(
        raw["tokens"], raw["usageTokens"], raw["trailingTokens"], raw["lastUsageIndex"]
    )


def calculate_context_tokens(usage: Usage | Mapping[str, Any]) -> int:
    """``totalTokens`` when the provider gave it, else input + output + cache read + cache write."""
    return calculate_context_tokens_wire(wire(usage))


def get_last_assistant_usage(entries: Iterable[Entry | Mapping[str, Any]]) -> Usage | None:
    """The usage of the newest assistant message entry that has a real one (aborted, failed and
    all-zero usages skipped)::

        usage = get_last_assistant_usage(manager.get_branch())
    """
    wires = wire_list(entries)
    for entry in reversed(wires):
        if entry.get("type") == "message":
            usage = assistant_usage_wire(entry.get("message"))
            if usage is not None:
                return from_wire(usage, Usage)
    return None


def should_compact(context_tokens: int, context_window: int, settings: CompactionSettings) -> bool:
    """Whether Pi would compact now: enabled, and the context exceeds the window minus the
    reserve::

        if should_compact(estimate.tokens, 200_000, DEFAULT_COMPACTION_SETTINGS): ...
    """
    if not settings.enabled:
        return False
    return context_tokens > context_window - settings.reserve_tokens
