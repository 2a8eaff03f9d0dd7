"""The model and thinking level Pi 1.6.0 would summarize a session with
(``createAgentSession`` and ``findInitialModel``): ``--model``/``--thinking`` first; else the
branch's model (its last ``model_change`` or assistant message) when Pi knows it and has its
credentials; else settings ``defaultProvider``/``defaultModel``; else the first credentialed
model (a provider's preferred one first). The thinking level is the branch's last
``thinking_level_change``, else settings ``defaultThinkingLevel``, else ``medium``, clamped to
the model.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from .._errors import ModelError
from ._credentials import has_configured_auth, resolve_credentials
from ._registry import THINKING_LEVELS, Model, ModelRegistry

if TYPE_CHECKING:
    from ..settings import PiSettings

__all__ = ["ModelChoice", "choose_model", "available_models"]

DEFAULT_THINKING_LEVEL = "medium"

# Pi's defaultModelPerProvider (core/model-resolver.js), in its order.
DEFAULT_MODEL_PER_PROVIDER = {
    "amazon-bedrock": "us.anthropic.claude-opus-5-5",
    "ant-ling": "Ring-2.6-1T",
    "anthropic": "claude-opus-5-5",
    "openai": "gpt-6.2-sol",
    "azure": "gpt-6.2-sol",
    "openai-codex": "gpt-6.2-sol",
    "radius": "balanced",
    "nvidia": "nvidia/nemotron-3.5-super-vl-120b-a12b",
    "deepseek": "deepseek-v4-pro",
    "google": "gemini-4-argon",
    "google-vertex": "gemini-4-argon",
    "github-copilot": "gpt-6.1-sol",
    "openrouter": "moonshotai/kimi-k2.7-code",
    "vercel-ai-gateway": "zai/glm-5.3",
    "xai": "grok-4.7",
    "groq": "openai/gpt-oss-120b",
    "cerebras": "gpt-oss-120b",
    "zai": "glm-5.3",
    "zai-coding-cn": "glm-5.3",
    "mistral": "devstral-medium-latest",
    "minimax": "MiniMax-M3",
    "minimax-cn": "MiniMax-M3",
    "moonshotai": "kimi-k2.7-code",
    "moonshotai-cn": "kimi-k2.7-code",
    "huggingface": "moonshotai/Kimi-K2.7-Code",
    "fireworks": "accounts/fireworks/models/kimi-k3",
    "together": "moonshotai/Kimi-K3",
    "baseten": "zai-org/GLM-5.3",
    "opencode": "kimi-k2.7-code",
    "opencode-go": "kimi-k3.1-pro",
    "kimi-coding": "kimi-for-coding",
    "meta": "muse-spark-1.3",
    "cloudflare-workers-ai": "@cf/moonshotai/kimi-k2.7-code",
    "cloudflare-ai-gateway": "workers-ai/@cf/moonshotai/kimi-k2.7-code",
    "qwen-token-plan": "qwen3.8-max",
    "qwen-token-plan-cn": "qwen3.8-max",
    "qwen-token-plan-individual": "qwen3.8-max",
    "qwen-token-plan-individual-cn": "qwen3.8-max",
    "xiaomi": "mimo-v2.6-pro",
    "xiaomi-token-plan-cn": "mimo-v2.6-pro",
    "xiaomi-token-plan-ams": "mimo-v2.6-pro",
    "xiaomi-token-plan-sgp": "mimo-v2.6-pro",
}


@attrs.frozen
class ModelChoice:
    """The model and thinking level a summary uses, and why."""

    model: Model
    thinking_level: str
    """Clamped to the model (``off`` for a model that does not reason)."""
    source: str
    """``flag``, ``session``, ``settings`` or ``first available``."""
    warning: str | None = None
    """Pi's stderr warning, e.g. ``Could not restore model P/M. Using A/B``."""
    thinking_in_branch: bool = False
    """Whether the branch already holds a ``thinking_level_change`` (Pi appends one otherwise)."""

    @property
    def reasoning(self) -> str | None:
        """The level sent to the provider: None when the model does not reason or it is off."""
        return self.thinking_level if self.model.reasoning and self.thinking_level != "off" else None


def available_models(registry: ModelRegistry, env: Mapping[str, str] | None = None) -> list[Model]:
    """The models whose provider has credentials, in Pi's order (``getAvailable``)."""
    env = os.environ if env is None else env
    usable = {p for p in registry.providers if has_configured_auth(registry, p, env)}
    return [m for m in registry if m.provider in usable]


def _branch_model_and_thinking(branch: Iterable[Any]) -> tuple[tuple[str, str] | None, str | None]:
    entries = list(branch)
    model: tuple[str, str] | None = None
    thinking: str | None = None
    for entry in reversed(entries):
        wire = entry if isinstance(entry, Mapping) else None
        kind = wire.get("type") if wire is not None else getattr(entry, "type", None)
        if thinking is None and kind == "thinking_level_change":
            value = wire.get("thinkingLevel") if wire is not None else getattr(entry, "thinking_level", None)
            if isinstance(value, str):
                thinking = value
        if model is None and kind == "model_change":
            provider = wire.get("provider") if wire is not None else getattr(entry, "provider", None)
            model_id = wire.get("modelId") if wire is not None else getattr(entry, "model_id", None)
            if isinstance(provider, str) and isinstance(model_id, str):
                model = (provider, model_id)
        elif model is None and kind == "message":
            message = wire.get("message") if wire is not None else getattr(entry, "message", None)
            get = message.get if isinstance(message, Mapping) else (lambda k, m=message: getattr(m, k, None))
            if get("role") == "assistant" and get("api") != "pi-virtual":
                provider, model_id = get("provider"), get("model")
                if isinstance(provider, str) and isinstance(model_id, str):
                    model = (provider, model_id)
    return model, thinking


def _parse_flag(model_flag: str, registry: ModelRegistry) -> tuple[Model, str | None]:
    text, thinking = model_flag, None
    base, sep, suffix = model_flag.rpartition(":")
    if sep and suffix in THINKING_LEVELS:
        text, thinking = base, suffix
    found = registry.find(text)
    if found is None:
        matches = [m for m in registry if m.id == text]
        if len(matches) == 1:
            found = matches[0]
    if found is None:
        raise ModelError(f'Model "{model_flag}" not found. Use --list-models to see available models.')
    return found, thinking


def choose_model(
    registry: ModelRegistry,
    settings: PiSettings | None = None,
    branch: Iterable[Any] = (),
    *,
    model: str | None = None,
    thinking: str | None = None,
    env: Mapping[str, str] | None = None,
) -> ModelChoice:
    """The model and thinking level Pi would summarize ``branch`` with (``manager.get_branch()``:
    entries or wire dicts)::

        choice = choose_model(ModelRegistry.load(), PiSettings.load(cwd), manager.get_branch())
        print(choice.model.key, choice.thinking_level)

    ``model`` and ``thinking`` are Pi's ``--model PROVIDER/ID[:LEVEL]`` and ``--thinking``."""
    env = os.environ if env is None else env
    if thinking is not None and thinking not in THINKING_LEVELS:
        raise ModelError(f"invalid thinking level {thinking!r}: one of {', '.join(THINKING_LEVELS)}")
    branch_model, branch_thinking = _branch_model_and_thinking(branch)
    default_thinking = settings.value("defaultThinkingLevel") if settings is not None else None
    fallback_thinking = default_thinking if isinstance(default_thinking, str) else DEFAULT_THINKING_LEVEL
    warning: str | None = None
    chosen: Model | None = None
    source = ""
    level: str | None = None
    if model is not None:
        chosen, flag_thinking = _parse_flag(model, registry)
        source, level = "flag", thinking or flag_thinking
    else:
        if branch_model is not None:
            found = registry.find(*branch_model)
            if found is not None and has_configured_auth(registry, found.provider, env):
                chosen, source = found, "session"
        if chosen is None:
            chosen, source = _initial(registry, settings, env)
            if branch_model is not None and chosen is not None:
                warning = f"Could not restore model {branch_model[0]}/{branch_model[1]}. Using {chosen.key}"
        level = thinking
    if chosen is None:
        wanted = registry.find(*branch_model) if branch_model is not None else None
        if wanted is not None:
            # The session's model is known but its key is not there: say which key Pi reads.
            resolve_credentials(registry, wanted, env)
        raise ModelError(
            "No models available: no provider has credentials (auth.json, an apiKey in models.json, "
            "or the provider's API key variable)"
        )
    if level is None:
        level = branch_thinking if branch_thinking is not None else fallback_thinking
    return ModelChoice(
        chosen, chosen.clamp_thinking_level(level), source, warning, branch_thinking is not None
    )


def _initial(
    registry: ModelRegistry, settings: PiSettings | None, env: Mapping[str, str]
) -> tuple[Model | None, str]:
    if settings is not None:
        provider, model_id = settings.value("defaultProvider"), settings.value("defaultModel")
        if isinstance(provider, str) and isinstance(model_id, str) and provider and model_id:
            found = registry.find(provider, model_id)
            if found is not None and has_configured_auth(registry, found.provider, env):
                return found, "settings"
    available = available_models(registry, env)
    for provider, model_id in DEFAULT_MODEL_PER_PROVIDER.items():
        for candidate in available:
            if candidate.provider == provider and candidate.id == model_id:
                return candidate, "first available"
    if available:
        return available[0], "first available"
    return None, ""
