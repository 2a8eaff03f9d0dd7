"""The HTTP request Pi 1.6.0 sends for one summary (pi-ai's ``streamSimple`` per API, called by
``completeSummarization`` with ``cacheRetention: "none"``): the same JSON body, key for key and
in the same order, and the headers that carry meaning (auth, ``anthropic-version``,
``anthropic-beta``, content type, the headers configured in ``models.json``).

The context is always Pi's summarization context: the system prompt and one user message with
one text block; no tools, no history. Only what such a context reaches in pi-ai is built; a model
whose request takes a path not built here raises :class:`~pisession.ModelError` instead of
sending something Pi would not send.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any

import attrs

from .._errors import ModelError
from .._js import js_len
from ..models import Credentials, Model

__all__ = ["PreparedRequest", "build_request", "estimate_input_tokens", "SUPPORTED_APIS"]

SUPPORTED_APIS = ("anthropic-messages", "openai-completions", "openai-responses", "google-generative-ai")

_CONTEXT_SAFETY_TOKENS = 4096
_CONTEXT_SAFETY_RATIO = 0.15
_MIN_OUTPUT_WITH_RATIO_MARGIN = 32768
_MIN_ANSWER_TOKENS = 1024
_THINKING_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 16384}
_ANTHROPIC_VERSION = "2023-06-01"
_INTERLEAVED_THINKING_BETA = "interleaved-thinking-2025-05-14"
_SERVER_SIDE_FALLBACK_BETA = "server-side-fallback-2026-07-01"
_MID_CONVERSATION_OUTPUT_CONFIG_BETA = "mid-conversation-output-config-2026-07-01"
_THINKING_BINDING_CONTROLS_BETA = "thinking-binding-controls-2026-08-01"
_RESPONSES_MIN_OUTPUT_TOKENS = 16


@attrs.frozen
class PreparedRequest:
    """One request, ready to send. ``headers`` hold the credential: never print them (see
    :meth:`redacted_headers`)."""

    api: str
    url: str
    headers: Mapping[str, str] = attrs.field(repr=False)
    body: Mapping[str, Any] = attrs.field(repr=False)
    max_tokens: int
    """The output cap sent (thinking included where the API counts it in)."""
    input_tokens: int
    """Pi's estimate of the input (chars / 3.5 in UTF-16 units)."""

    def body_bytes(self) -> bytes:
        """The body as Pi's ``JSON.stringify`` writes it."""
        return json.dumps(self.body, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    def redacted_headers(self) -> dict[str, str]:
        """The headers with every value that may hold a credential hidden: auth headers and
        any header configured in ``models.json`` (its value may come from a variable)."""
        shown = {"content-type", "accept", "anthropic-version", "anthropic-beta"}
        return {k: (v if k.lower() in shown else "<hidden>") for k, v in self.headers.items()}


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def sanitize_surrogates(text: str) -> str:
    """pi-ai's ``sanitizeSurrogates``: unpaired surrogates dropped (a Python ``str`` from JSON
    holds a valid pair as one character, so any surrogate left is unpaired)."""
    return _LONE_SURROGATE.sub("", text)


def _text_tokens(text: str) -> int:
    return math.ceil(js_len(text) / 3.5)


def estimate_input_tokens(system_prompt: str, prompt: str) -> int:
    """pi-ai's ``estimateContextTokens`` of the summarization context."""
    return _text_tokens(system_prompt) + _text_tokens(prompt)


def clamp_max_tokens(model: Model, input_tokens: int, max_tokens: int) -> int:
    """pi-ai's ``clampMaxTokensToContext``."""
    window = model.context_window
    if window <= 0:
        return max(1, max_tokens)
    margin = max(_CONTEXT_SAFETY_TOKENS, math.ceil(input_tokens * _CONTEXT_SAFETY_RATIO))
    room = window - input_tokens - margin
    if room < _MIN_OUTPUT_WITH_RATIO_MARGIN:
        room = min(_MIN_OUTPUT_WITH_RATIO_MARGIN, window - input_tokens - _CONTEXT_SAFETY_TOKENS)
    return min(max_tokens, max(1, room))


def _thinking_budget(level: str) -> int:
    return _THINKING_BUDGETS["high" if level in ("xhigh", "max") else level]


def _sampling_params(model: Model, level: str) -> dict[str, Any] | None:
    base = model.data.get("samplingParams")
    per_level = (model.data.get("samplingParamsByThinkingLevel") or {}).get(model.clamp_thinking_level(level))
    if base or per_level:
        return {**(base or {}), **(per_level or {})}
    return None


def build_request(
    model: Model,
    credentials: Credentials,
    system_prompt: str,
    prompt: str,
    reasoning: str | None,
) -> PreparedRequest:
    """The request Pi sends to summarize: ``reasoning`` is the thinking level Pi passes (None
    when the model does not reason or the level is off)."""
    if model.api not in SUPPORTED_APIS:
        raise ModelError(
            f"{model.key} uses the {model.api} API; pisession builds Pi's requests for "
            f"{', '.join(SUPPORTED_APIS)} only"
        )
    system_prompt = sanitize_surrogates(system_prompt)
    prompt_text = sanitize_surrogates(prompt)
    input_tokens = estimate_input_tokens(system_prompt, prompt)
    base_max = clamp_max_tokens(model, input_tokens, model.max_tokens)
    if model.provider == "github-copilot":
        raise ModelError(f"{model.key}: pisession does not build GitHub Copilot's requests")
    builder = {
        "anthropic-messages": _anthropic,
        "openai-completions": _completions,
        "openai-responses": _responses,
        "google-generative-ai": _google,
    }[model.api]
    url, headers, body, max_tokens = builder(
        model, credentials, system_prompt, prompt_text, reasoning, input_tokens, base_max
    )
    return PreparedRequest(model.api, url, headers, body, max_tokens, input_tokens)


_Built = tuple[str, dict[str, str], dict[str, Any], int]


def _merge_headers(*sources: Mapping[str, str] | None) -> dict[str, str]:
    # Header names are case-insensitive: a later source replaces an earlier one's value.
    out: dict[str, str] = {}
    for source in sources:
        for name, value in (source or {}).items():
            for existing in [k for k in out if k.lower() == name.lower()]:
                del out[existing]
            out[name] = value
    return out


def _auth_header(headers: Mapping[str, str]) -> bool:
    return any(k.lower() == "authorization" and v.strip() for k, v in headers.items())


def _anthropic(
    model: Model,
    credentials: Credentials,
    system_prompt: str,
    prompt: str,
    reasoning: str | None,
    input_tokens: int,
    base_max: int,
) -> _Built:
    compat = model.compat
    max_tokens = base_max
    thinking_enabled = reasoning is not None
    effort: str | None = None
    budget: int | None = None
    if thinking_enabled:
        assert reasoning is not None
        if compat.get("forceAdaptiveThinking") is True:
            mapped = model.thinking_level_map.get(reasoning)
            effort = (
                mapped
                if isinstance(mapped, str)
                else {"minimal": "low", "low": "low", "medium": "medium", "high": "high"}.get(
                    reasoning, "high"
                )
            )
        else:
            level_budget = _thinking_budget(reasoning)
            adjusted = min(base_max + level_budget, model.max_tokens)
            if adjusted <= level_budget:
                level_budget = min(level_budget, max(0, adjusted - _MIN_ANSWER_TOKENS))
            max_tokens = clamp_max_tokens(model, input_tokens, adjusted)
            budget = min(level_budget, max(0, max_tokens - 1024))

    thinking_disabled = (
        model.reasoning and not thinking_enabled and model.thinking_level_map.get("off", 0) is not None
    )
    effort_messages = compat.get("supportsMidConvoEffort") is True and not thinking_disabled
    fallbacks = compat.get("allowedFallbackModels") or []

    configured_beta: str | None | int = 0
    for source in (model.data.get("headers"), credentials.headers):
        for name, value in (source or {}).items():
            if name.lower() == "anthropic-beta":
                configured_beta = value
    betas: list[str] = []
    if configured_beta is None:
        betas = []
    elif isinstance(configured_beta, str):
        betas = list(dict.fromkeys(f.strip() for f in configured_beta.split(",") if f.strip()))
    else:
        if model.reasoning and thinking_enabled and compat.get("forceAdaptiveThinking") is not True:
            betas.append(_INTERLEAVED_THINKING_BETA)
        if fallbacks:
            betas.append(_SERVER_SIDE_FALLBACK_BETA)
        if compat.get("supportsMidConvoEffort") is True:
            betas += [_MID_CONVERSATION_OUTPUT_CONFIG_BETA, _THINKING_BINDING_CONTROLS_BETA]
        betas = list(dict.fromkeys(betas))

    user = {"role": "user", "content": [{"type": "text", "text": prompt}]}
    messages: list[dict[str, Any]] = [user] if prompt.strip() else []
    if effort_messages:
        messages.append({"role": "system", "content": [], "output_config": {"effort": effort or "high"}})
    body: dict[str, Any] = {"model": model.id, "messages": messages, "max_tokens": max_tokens, "stream": True}
    if system_prompt:
        body["system"] = [{"type": "text", "text": system_prompt}]
    if thinking_disabled:
        body["thinking"] = {"type": "disabled"}
    elif effort_messages:
        body["thinking"] = {
            "type": "adaptive",
            "display": "summarized",
            "block_binding": {"prefix_mismatch_behavior": "drop_block"},
        }
        body["output_config"] = {"effort": "low"}
    elif model.reasoning and thinking_enabled:
        if compat.get("forceAdaptiveThinking") is True:
            body["thinking"] = {"type": "adaptive", "display": "summarized"}
            if effort:
                body["output_config"] = {"effort": effort}
        else:
            body["thinking"] = {"type": "enabled", "budget_tokens": budget or 1024, "display": "summarized"}
    if fallbacks:
        body["fallbacks"] = [{"model": f["model"]} for f in fallbacks]

    auth: dict[str, str] = {}
    if credentials.oauth and credentials.api_key:
        # Pi sends an Anthropic OAuth token as a bearer token and impersonates Claude Code
        # (its headers and system prompt); pisession sends the token only (docs: the difference).
        auth["authorization"] = f"Bearer {credentials.api_key}"
    elif credentials.api_key and not _auth_header(credentials.headers):
        auth["x-api-key"] = credentials.api_key
    headers = _merge_headers(
        {
            "accept": "application/json",
            "content-type": "application/json",
            "anthropic-version": _ANTHROPIC_VERSION,
        },
        auth,
        model.data.get("headers"),
        credentials.headers,
    )
    headers = {k: v for k, v in headers.items() if k.lower() != "anthropic-beta"}
    if betas:
        headers["anthropic-beta"] = ",".join(betas)
    return f"{model.base_url.rstrip('/')}/v1/messages?beta=true", headers, body, max_tokens


# cacheControlFormat and session affinity only apply with a cache retention; Pi's summaries use
# none. chat-template and baseten formats (chat-template arguments) are not built.
_THINKING_FORMATS = (
    "openai",
    "zai",
    "qwen",
    "qwen-chat-template",
    "deepseek",
    "openrouter",
    "ant-ling",
    "together",
    "string-thinking",
)


def _completions_compat(model: Model) -> dict[str, Any]:
    provider, base_url = model.provider, model.base_url
    is_zai = provider in ("zai", "zai-coding-cn") or "api.z.ai" in base_url or "open.bigmodel.cn" in base_url
    is_together = provider == "together" or "api.together.ai" in base_url or "api.together.xyz" in base_url
    is_moonshot = provider in ("moonshotai", "moonshotai-cn") or "api.moonshot." in base_url
    is_openrouter = provider == "openrouter" or "openrouter.ai" in base_url
    is_cf_workers = provider == "cloudflare-workers-ai" or "api.cloudflare.com" in base_url
    is_cf_gateway = provider == "cloudflare-ai-gateway" or "gateway.ai.cloudflare.com" in base_url
    is_nvidia = provider == "nvidia" or "integrate.api.nvidia.com" in base_url
    is_ant_ling = provider == "ant-ling" or "api.ant-ling.com" in base_url
    is_cerebras = provider == "cerebras" or "cerebras.ai" in base_url
    is_deepseek = provider == "deepseek" or "deepseek.com" in base_url.lower()
    is_grok = provider == "xai" or "api.x.ai" in base_url
    non_standard = (
        is_nvidia
        or is_cerebras
        or is_grok
        or is_together
        or "chutes.ai" in base_url
        or is_deepseek
        or is_zai
        or is_moonshot
        or provider == "opencode"
        or "opencode.ai" in base_url
        or is_cf_workers
        or is_cf_gateway
        or is_ant_ling
    )
    use_max_tokens = (
        "chutes.ai" in base_url
        or is_deepseek
        or is_moonshot
        or is_cf_gateway
        or is_together
        or is_nvidia
        or is_ant_ling
        or is_zai
    )
    is_openai = provider == "openai" or "api.openai.com" in base_url
    thinking_format = (
        "deepseek"
        if is_deepseek
        else "zai"
        if is_zai
        else "together"
        if is_together
        else "ant-ling"
        if is_ant_ling
        else "openrouter"
        if is_openrouter
        else "openai"
    )
    detected: dict[str, Any] = {
        "supportsStore": not non_standard,
        "supportsDeveloperRole": is_openai,
        "supportsReasoningEffort": not (
            is_grok or is_zai or is_moonshot or is_together or is_cf_gateway or is_nvidia or is_ant_ling
        ),
        "supportsUsageInStreaming": True,
        "maxTokensField": "max_tokens" if use_max_tokens else "max_completion_tokens",
        "thinkingFormat": thinking_format,
        "supportsThinkingTokenBudget": False,
        "thinkingTokenBudgetField": None,
        "cacheControlFormat": "anthropic"
        if provider == "openrouter" and model.id.startswith("anthropic/")
        else None,
        "vllmPriority": None,
        "chatTemplateKwargs": {},
        "chatTemplateArgs": {},
    }
    explicit = model.compat
    for key in detected:
        if explicit.get(key) is not None:
            detected[key] = explicit[key]
    return detected


def _bearer(credentials: Credentials) -> dict[str, str]:
    return {"authorization": f"Bearer {credentials.api_key}"} if credentials.api_key else {}


def _openai_headers(model: Model, credentials: Credentials) -> dict[str, str]:
    return _merge_headers(
        {"accept": "application/json", "content-type": "application/json"},
        _bearer(credentials),
        model.data.get("headers"),
        credentials.headers,
    )


def _completions(
    model: Model,
    credentials: Credentials,
    system_prompt: str,
    prompt: str,
    reasoning: str | None,
    input_tokens: int,
    base_max: int,
) -> _Built:
    compat = _completions_compat(model)
    if model.reasoning and compat["thinkingFormat"] not in _THINKING_FORMATS:
        raise ModelError(
            f"{model.key}: pisession does not build Pi's {compat['thinkingFormat']} thinking request yet"
        )
    effort = model.clamp_thinking_level(reasoning) if reasoning else None
    if effort == "off":
        effort = None
    role = "developer" if model.reasoning and compat["supportsDeveloperRole"] else "system"
    messages: list[dict[str, Any]] = []
    if system_prompt:
        messages.append({"role": role, "content": system_prompt})
    messages.append({"role": "user", "content": [{"type": "text", "text": prompt}]})
    body: dict[str, Any] = {"model": model.id, "messages": messages, "stream": True}
    if compat["supportsUsageInStreaming"] is not False:
        body["stream_options"] = {"include_usage": True}
    if compat["supportsStore"]:
        body["store"] = False
    if base_max:
        body["max_tokens" if compat["maxTokensField"] == "max_tokens" else "max_completion_tokens"] = base_max
    if compat["vllmPriority"] is not None:
        body["priority"] = compat["vllmPriority"]
    _completions_thinking(model, compat, effort, body)
    routing = model.compat.get("openRouterRouting")
    if routing is not None:
        body["provider"] = routing
    gateway = model.compat.get("vercelGatewayRouting")
    if gateway and (gateway.get("only") or gateway.get("order")):
        body["providerOptions"] = {"gateway": {k: gateway[k] for k in ("only", "order") if gateway.get(k)}}
    sampling = _sampling_params(model, effort or "off")
    if sampling:
        body.update(sampling)
    return (
        f"{model.base_url.rstrip('/')}/chat/completions",
        _openai_headers(model, credentials),
        body,
        base_max,
    )


def _mapped(model: Model, level: str) -> Any:
    # `thinkingLevelMap?.[level] ?? level`: a null mapping falls back to the level too.
    value = model.thinking_level_map.get(level)
    return level if value is None else value


def _completions_thinking(
    model: Model, compat: Mapping[str, Any], effort: str | None, body: dict[str, Any]
) -> None:
    """pi-ai's openai-completions thinking fields, per ``thinkingFormat``."""
    fmt, level_map, reasons = compat["thinkingFormat"], model.thinking_level_map, model.reasoning
    supports_effort = compat["supportsReasoningEffort"]
    off_absent_or_set = level_map.get("off", 0) is not None
    if fmt == "zai" and reasons:
        body["thinking"] = {"type": "enabled", "clear_thinking": False} if effort else {"type": "disabled"}
        if effort and supports_effort:
            value = level_map.get(effort, effort)
            if isinstance(value, str):
                body["reasoning_effort"] = value
    elif fmt == "qwen" and reasons:
        body["enable_thinking"] = bool(effort)
        if effort and supports_effort and isinstance(_mapped(model, effort), str):
            body["reasoning_effort"] = _mapped(model, effort)
    elif fmt == "qwen-chat-template" and reasons:
        body["chat_template_kwargs"] = {"enable_thinking": bool(effort), "preserve_thinking": True}
    elif fmt == "deepseek" and reasons:
        if effort:
            body["thinking"] = {"type": "enabled"}
        elif off_absent_or_set:
            body["thinking"] = {"type": "disabled"}
        if effort and supports_effort:
            body["reasoning_effort"] = _mapped(model, effort)
    elif fmt == "openrouter" and reasons:
        if effort:
            body["reasoning"] = {"effort": _mapped(model, effort)}
        elif off_absent_or_set:
            body["reasoning"] = {"effort": level_map.get("off") or "none"}
    elif fmt == "ant-ling" and reasons and effort:
        value = level_map.get(effort)
        if isinstance(value, str):
            body["reasoning"] = {"effort": value}
    elif fmt == "together" and reasons:
        body["reasoning"] = {"enabled": bool(effort)}
        if effort and supports_effort:
            body["reasoning_effort"] = _mapped(model, effort)
    elif fmt == "string-thinking" and reasons:
        if effort:
            body["thinking"] = _mapped(model, effort)
        elif off_absent_or_set:
            body["thinking"] = level_map.get("off") or "none"
    elif effort and reasons and supports_effort:
        body["reasoning_effort"] = _mapped(model, effort)
    elif not effort and reasons and supports_effort:
        off = level_map.get("off")
        if isinstance(off, str):
            body["reasoning_effort"] = off
    field = compat["thinkingTokenBudgetField"] or (
        "thinking_token_budget" if compat["supportsThinkingTokenBudget"] else None
    )
    if field and effort and reasons:
        ceiling = body.get("max_tokens") or body.get("max_completion_tokens") or model.max_tokens
        budget = min(_thinking_budget(effort), max(0, ceiling - _MIN_ANSWER_TOKENS))
        if budget > 0:
            body[field] = budget


def _responses(
    model: Model,
    credentials: Credentials,
    system_prompt: str,
    prompt: str,
    reasoning: str | None,
    input_tokens: int,
    base_max: int,
) -> _Built:
    compat = model.compat
    key = credentials.api_key
    chatgpt_sign_in = (
        model.provider == "openai"
        and model.base_url == "https://api.openai.com/v1"
        and key is not None
        and not key.startswith("sk-")
    )
    effort = model.clamp_thinking_level(reasoning) if reasoning else None
    if effort == "off":
        effort = None
    role = "developer" if model.reasoning and compat.get("supportsDeveloperRole", True) else "system"
    items: list[dict[str, Any]] = []
    if system_prompt:
        items.append({"role": role, "content": system_prompt})
    items.append({"role": "user", "content": [{"type": "input_text", "text": prompt}]})
    update_effort: str | None = None
    if compat.get("supportsMidConvoEffort") and effort and not chatgpt_sign_in:
        # The level travels in a configuration_update item; reasoning.effort stays fixed.
        update_effort = model.thinking_level_map.get(effort) or effort
        items.append({"type": "configuration_update", "reasoning": {"effort": update_effort}})
    body: dict[str, Any] = {"model": model.id, "input": items, "stream": True}
    if compat.get("supportsExplicitPromptCacheMode") and not chatgpt_sign_in:
        # Pi's summaries ask for no cache (cacheRetention "none"): such endpoints are told so.
        body["prompt_cache_options"] = {"mode": "explicit"}
    body["store"] = False
    if base_max and compat.get("supportsMaxOutputTokens", True) and not chatgpt_sign_in:
        body["max_output_tokens"] = max(base_max, _RESPONSES_MIN_OUTPUT_TOKENS)
    level_map = model.thinking_level_map
    if model.reasoning:
        if effort:
            requested = level_map.get(effort) or effort if update_effort is None else "medium"
            body["reasoning"] = {"effort": requested, "summary": "auto"}
            body["include"] = ["reasoning.encrypted_content"]
        elif level_map.get("off", 0) is not None:
            body["reasoning"] = {"effort": level_map.get("off") or "none"}
        if model.provider == "xai":
            body["include"] = ["reasoning.encrypted_content"]
    sampling = _sampling_params(model, effort or "off")
    if sampling:
        body.update(sampling)
    return f"{model.base_url.rstrip('/')}/responses", _openai_headers(model, credentials), body, base_max


def _uses_google_thinking_level(model_id: str) -> bool:
    i = model_id.lower()
    return bool(
        re.search(r"gemini-3(?:\.\d+)?-(?:pro|flash)", i)
        or re.search(r"gemini-(?:[4-9]|[1-9]\d)", i)
        or i in ("gemini-flash-latest", "gemini-flash-lite-latest")
        or re.search(r"gemma-?4", i)
    )


def _google_level(model: Model, level: str) -> str:
    mapped = model.thinking_level_map.get(level)
    resolved = mapped.lower() if isinstance(mapped, str) else level
    if resolved not in ("minimal", "low", "medium", "high"):
        raise ModelError(f"Unsupported Google thinking level mapping for {model.key}: {level} -> {mapped}")
    return resolved


def _google_budget(model_id: str, level: str) -> int:
    if "2.5-pro" in model_id:
        return {"minimal": 128, "low": 2048, "medium": 8192, "high": 32768}[level]
    if "2.5-flash-lite" in model_id:
        return {"minimal": 512, "low": 2048, "medium": 8192, "high": 24576}[level]
    if "2.5-flash" in model_id:
        return {"minimal": 128, "low": 2048, "medium": 8192, "high": 24576}[level]
    return -1


def _google(
    model: Model,
    credentials: Credentials,
    system_prompt: str,
    prompt: str,
    reasoning: str | None,
    input_tokens: int,
    base_max: int,
) -> _Built:
    if not credentials.api_key:
        raise ModelError(f"No API key for provider: {model.provider}")
    generation: dict[str, Any] = {"maxOutputTokens": base_max}
    level = model.clamp_thinking_level(reasoning) if reasoning else "off"
    if model.reasoning and level != "off":
        resolved = _google_level(model, level)
        config: dict[str, Any] = {"includeThoughts": True}
        if _uses_google_thinking_level(model.id):
            config["thinkingLevel"] = resolved.upper()
        else:
            config["thinkingBudget"] = _google_budget(model.id, resolved)
        generation["thinkingConfig"] = config
    elif model.reasoning:
        if not _uses_google_thinking_level(model.id) or model.clamp_thinking_level("off") == "off":
            generation["thinkingConfig"] = {"thinkingBudget": 0}
        else:
            fallback = _google_level(model, model.clamp_thinking_level("off"))
            generation["thinkingConfig"] = {"thinkingLevel": fallback.upper()}
    body: dict[str, Any] = {"contents": [{"parts": [{"text": prompt}], "role": "user"}]}
    if system_prompt:
        body["systemInstruction"] = {"parts": [{"text": system_prompt}], "role": "user"}
    body["generationConfig"] = generation
    headers = _merge_headers(
        {"content-type": "application/json", "x-goog-api-key": credentials.api_key},
        model.data.get("headers"),
        credentials.headers,
    )
    url = f"{model.base_url.rstrip('/')}/models/{model.id}:streamGenerateContent?alt=sse"
    return url, headers, body, base_max
