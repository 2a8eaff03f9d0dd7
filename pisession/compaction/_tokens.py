"""Token accounting as Pi does it: the provider's usage where there is one, else chars / 4.

The estimate is Pi's conservative heuristic (4 characters per token, 4,800 characters per image,
UTF-16 lengths), not a tokenizer: it is what decides *when* and *where* Pi compacts, so a script
that wants to behave like Pi must count the same way.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from .._codec import from_wire
from .._context import WireProjection, current_system_message
from .._js import (
    MISSING,
    js_add,
    js_entries,
    js_greater,
    js_number,
    js_property,
    js_string,
    js_to_number,
    js_truthy,
)
from .._json import dumps
from .._model import Entry, Message, Usage
from ._common import js_len, wire, wire_list

__all__ = [
    "CompactionSettings",
    "DEFAULT_COMPACTION_SETTINGS",
    "ContextTokenEstimate",
    "JsNumber",
    "token_count",
    "estimate_tokens",
    "estimate_tokens_js",
    "estimate_context_tokens",
    "calculate_context_tokens",
    "calculate_context_tokens_js",
    "get_last_assistant_usage",
    "should_compact",
]

ESTIMATED_IMAGE_CHARS = 4800
_EXACT = 2**53  # beyond this a JavaScript number is no longer every integer


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


JsNumber = int | float | str
"""A count as Pi's JavaScript computes it: an int for any session Pi writes; NaN, a float past
2**53, or a string (``"500" + 3`` is ``"5003"``) where a file holds odd values."""


def token_count(value: object) -> int:
    """The integer reading of a count Pi computed (:data:`JsNumber`): the value itself when it is
    an int; JavaScript's ``Number(value)`` truncated when that is finite; else (NaN, Infinity) 0."""
    if type(value) is int:
        return value
    number = js_to_number(value)
    return int(number) if math.isfinite(number) else 0


@attrs.frozen
class ContextTokenEstimate:
    """Context size from the last usable usage plus the estimate of what came after it.

    The counts are ints. Pi does this arithmetic in JavaScript and checks no types, so a usage
    count that is a string concatenates (``"500" + 3`` is ``"5003"``) and text that is not a
    string can make NaN: ``tokens_wire`` and ``usage_tokens_wire`` keep what Pi computes, and
    the int fields its integer reading (:func:`token_count`)."""

    tokens: int
    usage_tokens: int
    trailing_tokens: int
    last_usage_index: int | None
    """Index of the message whose usage was used, or None when everything was estimated."""
    tokens_wire: JsNumber | None = attrs.field(default=None, eq=False, repr=False)
    """``tokens`` exactly as Pi computes it (None in an estimate built by hand)."""
    usage_tokens_wire: JsNumber | None = attrs.field(default=None, eq=False, repr=False)
    """``usage_tokens`` exactly as Pi computes it (None in an estimate built by hand)."""
    trailing_tokens_wire: JsNumber | None = attrs.field(default=None, eq=False, repr=False)
    """``trailing_tokens`` exactly as Pi computes it (None in an estimate built by hand)."""


def _ceil4(chars: Any) -> Any:
    """``Math.ceil(chars / 4)``; ``chars`` is whatever Pi's ``+=`` made of the lengths it read."""
    if type(chars) is int and chars <= _EXACT:
        return -(-chars // 4)
    quarter = js_to_number(chars) / 4
    return js_number(math.ceil(quarter)) if math.isfinite(quarter) else quarter


def _length(value: Any) -> Any:
    """``value.length`` as Pi reads it from content: a string's UTF-16 length, an array's size,
    an object's ``length`` property, undefined (MISSING) for a number. Pi throws a TypeError on
    null or undefined; pisession counts those as empty instead of failing the whole estimate."""
    if type(value) is str:
        return js_len(value)
    if value is None or value is MISSING:
        return 0
    return js_property(value, "length")


def _text_and_image_chars(content: Any) -> Any:
    if isinstance(content, str):
        return js_len(content)
    chars: Any = 0
    # Pi's for-of throws on an object, a number or null: counted as no blocks here.
    for block in content if isinstance(content, list) else ():
        kind = block.get("type", MISSING) if isinstance(block, dict) else MISSING
        if kind == "text":
            text = block.get("text", MISSING)
            if type(text) is str and type(chars) is int:
                chars += js_len(text)
            elif js_truthy(text):
                chars = js_add(chars, _length(text))
        elif kind == "image":
            chars = js_add(chars, ESTIMATED_IMAGE_CHARS)
    return chars


def _assistant_chars(content: Any) -> Any:
    chars: Any = 0
    # A string's characters are no blocks; an object or a number throws in Pi and counts nothing.
    for block in content if isinstance(content, list) else ():
        kind = block.get("type", MISSING) if isinstance(block, dict) else MISSING
        if kind == "text" or kind == "thinking":
            value = block.get(kind, MISSING)
            if type(value) is str and type(chars) is int:
                chars += js_len(value)
            else:
                chars = js_add(chars, _length(value))
        elif kind == "toolCall":
            name = block.get("name", MISSING)
            arguments = block.get("arguments", MISSING)
            if arguments is MISSING:
                continue  # JSON.stringify(undefined).length throws in Pi
            call = js_add(_length(name), js_len(dumps(arguments)))
            chars = js_add(chars, call)
    return chars


def estimate_tokens_wire(message: Mapping[str, Any]) -> Any:
    """Pi's ``estimateTokens``: an int for ordinary messages; with text that is not a string,
    whatever JavaScript's arithmetic makes of it (NaN, or a count read from an array's size)."""
    role = message.get("role")
    if type(role) is not str:
        return 0
    if role == "system":
        chars = _text_and_image_chars(message.get("content"))
        sections = message.get("sections", MISSING)
        if js_truthy(sections):
            for _, section in js_entries(sections):  # Object.values
                if js_truthy(section):
                    chars = js_add(chars, _length(section))
        tools = message.get("toolsAdded", MISSING)
        if js_truthy(tools):
            chars = js_add(chars, js_len(dumps(tools)))
        return _ceil4(chars)
    if role in ("user", "custom", "toolResult"):
        return _ceil4(_text_and_image_chars(message.get("content")))
    if role == "assistant":
        return _ceil4(_assistant_chars(message.get("content")))
    if role == "bashExecution":
        command, output = message.get("command", MISSING), message.get("output", MISSING)
        return _ceil4(js_add(_length(command), _length(output)))
    if role in ("branchSummary", "compactionSummary"):
        return _ceil4(_length(message.get("summary", MISSING)))
    return 0


def calculate_context_tokens_wire(usage: Any) -> Any:
    """``usage.totalTokens || usage.input + usage.output + usage.cacheRead + usage.cacheWrite``,
    with JavaScript's ``||`` and ``+`` (a string count concatenates, a missing one is NaN)."""
    if isinstance(usage, dict):
        keys = ("totalTokens", "input", "output", "cacheRead", "cacheWrite")
        counts = [usage.get(k, MISSING) for k in keys]
        # What every provider writes: plain integers, where a double is exact too.
        if all(type(v) is int and -_EXACT <= v <= _EXACT for v in counts):
            tokens = counts[0] or counts[1] + counts[2] + counts[3] + counts[4]
            if -_EXACT <= tokens <= _EXACT:
                return tokens
    total = js_property(usage, "totalTokens")
    if js_truthy(total):
        # An array or object count acts as its primitive in every later `+` and `>`.
        return js_string(total) if isinstance(total, (list, dict)) else total
    total = js_property(usage, "input")
    for key in ("output", "cacheRead", "cacheWrite"):
        total = js_add(total, js_property(usage, key))
    return total


def assistant_usage_wire(message: Any) -> Mapping[str, Any] | None:
    """The usage of an assistant message that has a real one (not aborted, failed or all zero)."""
    if not isinstance(message, Mapping) or message.get("role") != "assistant" or "usage" not in message:
        return None
    usage = message["usage"]
    if message.get("stopReason") in ("aborted", "error") or not js_truthy(usage):
        return None
    return usage if js_greater(calculate_context_tokens_wire(usage), 0) else None


def estimate_context_tokens_wire(messages: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    for i in range(len(messages) - 1, -1, -1):
        usage = assistant_usage_wire(messages[i])
        if usage is not None:
            usage_tokens = calculate_context_tokens_wire(usage)
            trailing = sum_tokens_wire(messages[i + 1 :])
            return {
                "tokens": js_add(usage_tokens, trailing),
                "usageTokens": usage_tokens,
                "trailingTokens": trailing,
                "lastUsageIndex": i,
            }
    estimated = sum_tokens_wire(messages)
    return {"tokens": estimated, "usageTokens": 0, "trailingTokens": estimated, "lastUsageIndex": None}


def estimate_projected_context_tokens_wire(
    projection: WireProjection, entry_at: Any, branch_ids: Sequence[Any], branch_types: Sequence[Any]
) -> Any:
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
            return estimate["tokens"]
    # Pi 1.6.0 replays system messages ignoring the "replace" flag.
    system = current_system_message(messages, honour_replace=False)
    tokens = estimate_tokens_wire(system) if system is not None else 0
    return js_add(tokens, sum_tokens_wire([m for m in messages if m.get("role") != "system"]))


def sum_tokens_wire(messages: Iterable[Mapping[str, Any]]) -> Any:
    """A sum of estimates as Pi's loop adds them (estimates are numbers, so NaN absorbs)."""
    total: Any = 0
    for message in messages:
        tokens = estimate_tokens_wire(message)
        if type(tokens) is int and type(total) is int and total + tokens <= _EXACT:
            total += tokens
        else:
            total = js_add(total, tokens)
    return total


# -- public ---------------------------------------------------------------------------------------


def estimate_tokens(message: Message | Mapping[str, Any]) -> int:
    """Pi's estimate of one message's tokens (characters / 4, rounded up; an image counts 4,800
    characters; thinking and tool-call arguments count, tool-result images too)::

        tokens = sum(estimate_tokens(m) for m in manager.build_session_context().messages)

    Always an int. Text that is not a string makes Pi's JavaScript compute NaN or the size of an
    array: :func:`estimate_tokens_js` gives that value, this its integer reading (NaN: 0)."""
    return token_count(estimate_tokens_wire(wire(message)))


def estimate_tokens_js(message: Message | Mapping[str, Any]) -> JsNumber:
    """:func:`estimate_tokens` exactly as Pi's JavaScript computes it, NaN and strings included."""
    tokens: JsNumber = estimate_tokens_wire(wire(message))
    return tokens


def estimate_context_tokens(messages: Iterable[Message | Mapping[str, Any]]) -> ContextTokenEstimate:
    """The context size Pi assumes: the last valid assistant usage plus estimates of the messages
    after it (all estimated when no assistant reported usage)::

        estimate_context_tokens(manager.build_session_context().messages).tokens
    """
    raw = estimate_context_tokens_wire(wire_list(messages))
    return ContextTokenEstimate(
        token_count(raw["tokens"]),
        token_count(raw["usageTokens"]),
        token_count(raw["trailingTokens"]),
        raw["lastUsageIndex"],
        tokens_wire=raw["tokens"],
        usage_tokens_wire=raw["usageTokens"],
        trailing_tokens_wire=raw["trailingTokens"],
    )


def calculate_context_tokens(usage: Usage | Mapping[str, Any]) -> int:
    """``totalTokens`` when the provider gave it, else input + output + cache read + cache write,
    as an int (:func:`calculate_context_tokens_js` gives what JavaScript's ``+`` makes of odd
    counts: a string count concatenates, an array or object count reads as its string form)."""
    return token_count(calculate_context_tokens_wire(wire(usage)))


def calculate_context_tokens_js(usage: Usage | Mapping[str, Any]) -> JsNumber:
    """:func:`calculate_context_tokens` exactly as Pi's JavaScript computes it."""
    tokens: JsNumber = calculate_context_tokens_wire(wire(usage))
    return tokens


def get_last_assistant_usage(entries: Iterable[Entry | Mapping[str, Any]]) -> Usage | None:
    """The usage of the newest assistant message entry that has a real one (aborted, failed and
    all-zero usages skipped)::

        usage = get_last_assistant_usage(manager.get_branch())
    """
    wires = wire_list(entries)
    for entry in reversed(wires):
        if entry.get("type") == "message":
            message = entry.get("message")
            if assistant_usage_wire(message) is not None:
                # Read through its message, which keeps counts of another JSON type in `extra`
                # (a lone Usage is read strictly).
                usage = getattr(from_wire(message, Message), "usage", None)
                return usage if isinstance(usage, Usage) else None
    return None


def should_compact(context_tokens: float | str, context_window: int, settings: CompactionSettings) -> bool:
    """Whether Pi would compact now: enabled, and the context exceeds the window minus the
    reserve::

        if should_compact(estimate.tokens, 200_000, DEFAULT_COMPACTION_SETTINGS): ...
    """
    if not settings.enabled:
        return False
    # JavaScript's `>`: a token count Pi computed as a string still compares (NaN never exceeds).
    return js_greater(context_tokens, context_window - settings.reserve_tokens)
