"""Reading the model's streamed answer (SSE) as pi-ai reads it, per API: the text, whether it
called a tool, the stop reason, Pi's error message, and the usage with its cost (pi-ai's
``calculateCost``), keys in the order Pi writes them into the entry.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

import attrs

from ..models import Model
from ..models._cost import calculate_cost

__all__ = ["Reply", "ServerEvent", "SSEDecoder", "iter_sse", "StreamReader", "reader_for", "calculate_cost"]


@attrs.frozen
class ServerEvent:
    event: str | None
    data: str


class SSEDecoder:
    """Server-sent events, one decoded line at a time (``\n``, ``\r\n`` or ``\r`` split)."""

    def __init__(self) -> None:
        self._event: str | None = None
        self._data: list[str] = []

    def feed(self, raw: str) -> ServerEvent | None:
        line = raw.rstrip("\r\n")
        if not line:
            return self.flush()
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        return None

    def flush(self) -> ServerEvent | None:
        event = ServerEvent(self._event, "\n".join(self._data)) if self._data else None
        self._event, self._data = None, []
        return event


def iter_sse(lines: Iterable[str]) -> Iterator[ServerEvent]:
    """Server-sent events from decoded lines."""
    decoder = SSEDecoder()
    for raw in lines:
        event = decoder.feed(raw)
        if event is not None:
            yield event
    last = decoder.flush()
    if last is not None:
        yield last


def _valid_cost(value: Any) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and value >= 0
        and value != float("inf")
    )


def is_openrouter(model: Model) -> bool:
    return model.provider == "openrouter" or "openrouter.ai" in model.base_url


def apply_openrouter_cost(usage: dict[str, Any], reported: Mapping[str, Any]) -> None:
    """pi-ai's ``applyOpenRouterReportedCost``: OpenRouter's billed cost replaces the total."""
    cost: Any = reported.get("cost")
    if not _valid_cost(cost):
        return
    if reported.get("is_byok") is False:
        usage["cost"]["total"], usage["cost"]["totalFromProvider"] = cost, True
    elif reported.get("is_byok") is True:
        details = reported.get("cost_details")
        if not isinstance(details, Mapping):
            return
        upstream: Any = details.get("upstream_inference_cost")
        if upstream is None:
            prompt: Any
            completion: Any
            prompt, completion = (
                details.get("upstream_inference_prompt_cost"),
                details.get("upstream_inference_completions_cost"),
            )
            if not (_valid_cost(prompt) and _valid_cost(completion)):
                return
            upstream = prompt + completion
        if _valid_cost(upstream):
            usage["cost"]["total"], usage["cost"]["totalFromProvider"] = cost + upstream, True


def _zero_cost() -> dict[str, Any]:
    return {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}


@attrs.define
class Reply:
    """What the model answered."""

    text_blocks: list[str] = attrs.field(factory=list)
    tool_call: bool = False
    stop_reason: str = "pending"
    error_message: str | None = None
    usage: dict[str, Any] = attrs.field(
        factory=lambda: {
            "input": 0,
            "output": 0,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": 0,
            "cost": _zero_cost(),
        }
    )

    @property
    def text(self) -> str:
        return "\n".join(self.text_blocks)


class StreamReader:
    """Feeds on one API's events; ``finish()`` raises ``StreamEnded`` with Pi's message when the
    stream stopped without its closing event."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.reply = Reply()

    def feed(self, event: ServerEvent) -> None:
        raise NotImplementedError

    def finish(self) -> Reply:
        raise NotImplementedError


class StreamEndedError(Exception):
    """An answer cut short or failed in-stream (the message is Pi's)."""


def _json(data: str) -> Any:
    try:
        return json.loads(data)
    except ValueError:
        return None


class _Anthropic(StreamReader):
    def __init__(self, model: Model) -> None:
        super().__init__(model)
        self.blocks: dict[int, int] = {}
        self.usage_model = model

    def _usage_from(self, raw: Mapping[str, Any], start: bool) -> None:
        u = self.reply.usage
        if start:
            u["input"] = raw.get("input_tokens") or 0
            u["output"] = raw.get("output_tokens") or 0
            u["cacheRead"] = raw.get("cache_read_input_tokens") or 0
            u["cacheWrite"] = raw.get("cache_creation_input_tokens") or 0
            u["cacheWrite1h"] = (raw.get("cache_creation") or {}).get("ephemeral_1h_input_tokens") or 0
        else:
            for key, name in (
                ("input", "input_tokens"),
                ("output", "output_tokens"),
                ("cacheRead", "cache_read_input_tokens"),
                ("cacheWrite", "cache_creation_input_tokens"),
            ):
                if raw.get(name) is not None:
                    u[key] = raw[name]
            one_hour = (raw.get("cache_creation") or {}).get("ephemeral_1h_input_tokens")
            if one_hour is not None:
                u["cacheWrite1h"] = one_hour
            thinking = (raw.get("output_tokens_details") or {}).get("thinking_tokens")
            if thinking is not None:
                u["reasoning"] = thinking
        u["totalTokens"] = u["input"] + u["output"] + u["cacheRead"] + u["cacheWrite"]
        calculate_cost(self.usage_model, u)

    def feed(self, event: ServerEvent) -> None:
        data = _json(event.data)
        if not isinstance(data, dict):
            return
        kind = data.get("type") or event.event
        if kind == "error":
            error = data.get("error") or {}
            raise StreamEndedError(
                json.dumps(data, separators=(",", ":"))
                if not error.get("message")
                else f"{error.get('type', 'error')}: {error.get('message')}"
            )
        if kind == "message_start":
            message = data.get("message") or {}
            answered_by = message.get("model")
            if answered_by and answered_by != self.model.id:
                # A server-side fallback answered: its own price, as pi-ai counts it.
                fallbacks = self.model.compat.get("allowedFallbackModels") or []
                cost = next(
                    (
                        f.get("cost")
                        for f in fallbacks
                        if f.get("provider") == self.model.provider and f.get("model") == answered_by
                    ),
                    None,
                )
                if cost:
                    self.usage_model = Model({**self.model.data, "id": answered_by, "cost": cost})
            self._usage_from(message.get("usage") or {}, True)
        elif kind == "content_block_start":
            block = data.get("content_block") or {}
            if block.get("type") == "text":
                self.reply.text_blocks.append(block.get("text") or "")
                self.blocks[data.get("index", 0)] = len(self.reply.text_blocks) - 1
            elif block.get("type") == "tool_use":
                self.reply.tool_call = True
        elif kind == "content_block_delta":
            delta = data.get("delta") or {}
            at = self.blocks.get(data.get("index", 0))
            if delta.get("type") == "text_delta" and at is not None:
                self.reply.text_blocks[at] += delta.get("text") or ""
        elif kind == "message_delta":
            reason = (data.get("delta") or {}).get("stop_reason")
            if reason:
                self.reply.stop_reason, self.reply.error_message = _anthropic_stop(reason)
            if data.get("usage"):
                self._usage_from(data["usage"], False)
            else:
                u = self.reply.usage
                u["totalTokens"] = u["input"] + u["output"] + u["cacheRead"] + u["cacheWrite"]
                calculate_cost(self.usage_model, u)
            if data.get("usage") and is_openrouter(self.model):
                apply_openrouter_cost(self.reply.usage, data["usage"])

    def finish(self) -> Reply:
        if self.reply.stop_reason == "pending":
            raise StreamEndedError("Anthropic stream ended before message_stop")
        return self.reply


def _anthropic_stop(reason: str) -> tuple[str, str | None]:
    if reason in ("end_turn", "stop_sequence", "pause_turn"):
        return "stop", None
    if reason in ("max_tokens", "model_context_window_exceeded"):
        return "length", None
    if reason == "tool_use":
        return "toolUse", None
    if reason == "refusal":
        return "error", "The model refused to complete the request"
    return "error", f"Unhandled stop reason: {reason}"


class _Completions(StreamReader):
    def __init__(self, model: Model) -> None:
        super().__init__(model)
        self.reply.usage = {
            "input": 0,
            "output": 0,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": 0,
            "cost": _zero_cost(),
        }
        self.text_open = False

    def feed(self, event: ServerEvent) -> None:
        if event.data.strip() == "[DONE]":
            return
        data = _json(event.data)
        if not isinstance(data, dict):
            return
        if data.get("error"):
            error = data["error"]
            raise StreamEndedError(str(error.get("message") if isinstance(error, dict) else error))
        if data.get("usage"):
            self.reply.usage = _chat_usage(self.model, data["usage"])
        for choice in data.get("choices") or ():
            delta = choice.get("delta") or {}
            content = delta.get("content")
            if isinstance(content, str) and content:
                if not self.text_open:
                    self.reply.text_blocks.append("")
                    self.text_open = True
                self.reply.text_blocks[-1] += content
            if delta.get("tool_calls"):
                self.reply.tool_call = True
            reason = choice.get("finish_reason")
            if reason is not None:
                self.reply.stop_reason, self.reply.error_message = _chat_stop(reason)

    def finish(self) -> Reply:
        if self.reply.stop_reason == "pending":
            raise StreamEndedError("Stream ended without finish_reason")
        return self.reply


def _chat_usage(model: Model, raw: Mapping[str, Any]) -> dict[str, Any]:
    prompt = raw.get("prompt_tokens") or 0
    details = raw.get("prompt_tokens_details") or {}
    cache_read = details.get("cached_tokens")
    if cache_read is None:
        cache_read = raw.get("prompt_cache_hit_tokens")
    if cache_read is None:
        cache_read = raw.get("cached_tokens")
    cache_read = cache_read or 0
    cache_write = details.get("cache_write_tokens") or 0
    input_tokens = max(0, prompt - cache_read - cache_write)
    output = raw.get("completion_tokens") or 0
    usage: dict[str, Any] = {
        "input": input_tokens,
        "output": output,
        "cacheRead": cache_read,
        "cacheWrite": cache_write,
        "reasoning": (raw.get("completion_tokens_details") or {}).get("reasoning_tokens")
        or raw.get("reasoning_tokens")
        or 0,
        "totalTokens": input_tokens + output + cache_read + cache_write,
        "cost": _zero_cost(),
    }
    calculate_cost(model, usage)
    if is_openrouter(model):
        apply_openrouter_cost(usage, raw)
    return usage


def _chat_stop(reason: str) -> tuple[str, str | None]:
    if reason in ("stop", "end"):
        return "stop", None
    if reason == "length":
        return "length", None
    if reason in ("function_call", "tool_calls"):
        return "toolUse", None
    return "error", f"Provider finish_reason: {reason}"


class _Responses(StreamReader):
    def __init__(self, model: Model) -> None:
        super().__init__(model)
        self.terminal = False
        self.text_items: dict[str, int] = {}

    def feed(self, event: ServerEvent) -> None:
        data = _json(event.data)
        if not isinstance(data, dict):
            return
        kind = data.get("type") or event.event
        if kind == "response.output_item.added":
            item = data.get("item") or {}
            if item.get("type") == "function_call":
                self.reply.tool_call = True
        elif kind == "response.output_text.delta":
            key = f"{data.get('item_id')}:{data.get('content_index')}"
            if key not in self.text_items:
                self.reply.text_blocks.append("")
                self.text_items[key] = len(self.reply.text_blocks) - 1
            self.reply.text_blocks[self.text_items[key]] += data.get("delta") or ""
        elif kind in ("response.completed", "response.incomplete"):
            self.terminal = True
            response = data.get("response") or {}
            raw = response.get("usage")
            if raw:
                details = raw.get("input_tokens_details") or {}
                cached = details.get("cached_tokens") or 0
                write = details.get("cache_write_tokens") or 0
                self.reply.usage = {
                    "input": max(0, (raw.get("input_tokens") or 0) - cached - write),
                    "output": raw.get("output_tokens") or 0,
                    "cacheRead": cached,
                    "cacheWrite": write,
                    "reasoning": (raw.get("output_tokens_details") or {}).get("reasoning_tokens") or 0,
                    "totalTokens": raw.get("total_tokens") or 0,
                    "cost": _zero_cost(),
                }
            calculate_cost(self.model, self.reply.usage)
            status = response.get("status")
            incomplete = (response.get("incomplete_details") or {}).get("reason")
            self.reply.stop_reason, self.reply.error_message = _responses_stop(status, incomplete)
            if self.reply.tool_call and self.reply.stop_reason == "stop":
                self.reply.stop_reason = "toolUse"
        elif kind == "error":
            raise StreamEndedError(f"Error Code {data.get('code')}: {data.get('message') or 'Unknown error'}")
        elif kind == "response.failed":
            self.terminal = True
            error = (data.get("response") or {}).get("error") or {}
            message = error.get("message") or "Unknown error"
            raise StreamEndedError(f"{error.get('code')}: {message}" if error.get("code") else message)

    def finish(self) -> Reply:
        if not self.terminal:
            raise StreamEndedError("OpenAI Responses stream ended before a terminal response event")
        return self.reply


def _responses_stop(status: str | None, incomplete: str | None) -> tuple[str, str | None]:
    if not status or status in ("completed", "in_progress", "queued"):
        return "stop", None
    if status == "incomplete":
        if incomplete == "max_output_tokens":
            return "length", None
        return "error", f"Provider stopped: {incomplete or status}"
    return "error", f"Provider stopped: {status}"


class _Google(StreamReader):
    def __init__(self, model: Model) -> None:
        super().__init__(model)
        self.last_was_text = False
        self.raw_stop: str | None = None

    def feed(self, event: ServerEvent) -> None:
        data = _json(event.data)
        if not isinstance(data, dict):
            return
        if data.get("error"):
            raise StreamEndedError(json.dumps(data, separators=(",", ":"), ensure_ascii=False))
        candidates = data.get("candidates") or []
        candidate = candidates[0] if candidates else None
        if isinstance(candidate, dict):
            for part in (candidate.get("content") or {}).get("parts") or ():
                if "text" in part and part.get("text") is not None:
                    if part.get("thought") is True:
                        self.last_was_text = False
                        continue
                    if not self.last_was_text:
                        self.reply.text_blocks.append("")
                        self.last_was_text = True
                    self.reply.text_blocks[-1] += part["text"]
                if part.get("functionCall"):
                    self.reply.tool_call = True
                    self.last_was_text = False
            reason = candidate.get("finishReason")
            if reason:
                self.raw_stop = reason
                self.reply.stop_reason = _google_stop(reason)
                if self.reply.tool_call and self.reply.stop_reason == "stop":
                    self.reply.stop_reason = "toolUse"
        meta = data.get("usageMetadata")
        if meta:
            thoughts = meta.get("thoughtsTokenCount") or 0
            cached = meta.get("cachedContentTokenCount") or 0
            self.reply.usage = {
                "input": (meta.get("promptTokenCount") or 0) - cached,
                "output": (meta.get("candidatesTokenCount") or 0) + thoughts,
                "cacheRead": cached,
                "cacheWrite": 0,
                "reasoning": thoughts,
                "totalTokens": meta.get("totalTokenCount") or 0,
                "cost": _zero_cost(),
            }
            calculate_cost(self.model, self.reply.usage)

    def finish(self) -> Reply:
        if self.reply.stop_reason == "pending":
            raise StreamEndedError("Google stream ended without a finish reason")
        if self.reply.stop_reason == "error":
            raise StreamEndedError(f"Provider stopped with: {self.raw_stop}")
        return self.reply


def _google_stop(reason: str) -> str:
    if reason == "STOP":
        return "stop"
    if reason in ("MAX_TOKENS", "CONTINUATION"):
        return "length"
    return "error"


def reader_for(model: Model) -> StreamReader:
    return {
        "anthropic-messages": _Anthropic,
        "openai-completions": _Completions,
        "openai-responses": _Responses,
        "google-generative-ai": _Google,
    }[model.api](model)
