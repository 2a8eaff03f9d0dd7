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
import re
from collections.abc import Callable, Iterable, Mapping
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


def _split_thinking(text: str) -> tuple[str, str] | None:
    base, sep, suffix = text.rpartition(":")
    return (base, suffix) if sep and suffix in THINKING_LEVELS else None


def _split_provider(text: str, models: list[Model]) -> tuple[str, str] | None:
    # Provider ids may hold "/" themselves, so Pi matches known ids, the longest first.
    lower = text.lower()
    best: tuple[str, str] | None = None
    for model in models:
        provider = model.provider
        prefix = provider.strip().lower()
        if not prefix or (best is not None and len(best[0]) >= len(provider)):
            continue
        slash = lower.find("/", len(prefix))
        if slash == -1 or lower[:slash].strip() != prefix:
            continue
        model_text = text[slash + 1 :].strip()
        if model_text:
            best = (provider, model_text)
    return best


def _fuzzy_matches(text: str, models: Iterable[Model]) -> list[Model]:
    lower = text.lower()
    return [
        m
        for m in models
        if lower in m.id.lower() or (isinstance(m.data.get("name"), str) and lower in m.data["name"].lower())
    ]


def _is_alias(model_id: str) -> bool:
    return model_id.endswith("-latest") or re.search(r"-\d{8}$", model_id) is None


# ICU's root order for the punctuation model ids use, before digits and letters.
_PUNCTUATION = "_-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$"


def _collation_key(text: str) -> tuple[tuple[tuple[int, str], ...], str]:
    """Close to ``localeCompare``: punctuation, then digits, then letters ignoring case; then
    lower case before upper case."""
    primary = tuple(
        (0, chr(_PUNCTUATION.index(c) + 1)) if c in _PUNCTUATION else (1, c.casefold()) for c in text
    )
    return primary, text.swapcase()


def _best_fuzzy(matches: list[Model]) -> Model | None:
    """Aliases (``claude-sonnet-4-5``) over dated ids, then the latest (``localeCompare``,
    which orders case-insensitively first)."""
    aliases = [m for m in matches if _is_alias(m.id)]
    pool = aliases or matches
    ordered = sorted(pool, key=lambda m: _collation_key(m.id), reverse=True)
    return ordered[0] if ordered else None


# A resolution: ("resolved", model, level, warning) | ("ambiguous", candidates, usable) | not found.
_Resolved = tuple[str, Any, Any, Any]


def _select_reference(text: str, pool: list[Model], usable: Callable[[str], bool]) -> _Resolved | None:
    lower = text.lower()
    raw = [m for m in pool if m.id.lower() == lower]
    split = _split_provider(text, pool)
    named: Model | None = None
    if split is not None:
        provider, model_text = split
        own = [m for m in pool if m.provider == provider]
        lower_text = model_text.lower()
        named = (
            next((m for m in own if m.id.lower() == lower_text), None)
            or next((m for m in raw if m.provider == provider), None)
            or _best_fuzzy(_fuzzy_matches(model_text, own))
        )
    others = [m for m in raw if m is not named]
    candidates = [named, *others] if named is not None else others
    if not candidates:
        return None
    if len({m.provider for m in candidates}) == 1:
        return ("resolved", candidates[0], None, None)
    if named is not None and usable(named.provider):
        return ("resolved", named, None, None)
    usable_others = [m for m in others if usable(m.provider)]
    if len(usable_others) == 1:
        return ("resolved", usable_others[0], None, None)
    if not usable_others and named is not None:
        return ("resolved", named, None, None)
    return ("ambiguous", candidates, len(usable_others), None)


def _select_fuzzy(matches: list[Model], usable: Callable[[str], bool]) -> _Resolved | None:
    if not matches:
        return None
    several = len({m.provider for m in matches}) > 1
    usable_matches = [m for m in matches if usable(m.provider)] if several else []
    pool = usable_matches or matches
    best = _best_fuzzy(pool)
    if best is None:
        return None
    tied = [m for m in pool if m.id == best.id]
    if len({m.provider for m in tied}) == 1:
        return ("resolved", best, None, None)
    return ("ambiguous", tied, len(tied) if usable_matches else 0, None)


def _resolve_text(text: str, pool: list[Model], usable: Callable[[str], bool]) -> _Resolved | None:
    """Pi's ``resolveText`` for the CLI (fuzzy, a strict ``:LEVEL`` suffix)."""
    found = _select_reference(text, pool, usable) or _select_fuzzy(_fuzzy_matches(text, pool), usable)
    if found is not None:
        return found
    thinking = _split_thinking(text)
    if thinking is None:
        return None
    inner = _resolve_text(thinking[0], pool, usable)
    if inner is None:
        return None
    if inner[0] == "resolved":
        return (inner[0], inner[1], None if inner[3] else thinking[1], inner[3])
    return inner


def _parse_flag(
    model_flag: str, thinking_flag: str | None, registry: ModelRegistry, env: Mapping[str, str]
) -> tuple[Model, str | None, str | None]:
    """Pi's ``resolveCliModel``: an exact ``provider/id`` or id, then a partial id or name,
    ``:LEVEL``, and for a known provider an unknown id as a custom model id (with a warning).
    Returns the model, the level from the flag's suffix and the warning."""
    models = list(registry)
    if not models:
        raise ModelError("No models available. Check your installation or add models to models.json.")
    text = model_flag.strip()
    found = _resolve_text(text, models, lambda p: has_configured_auth(registry, p, env)) if text else None
    if found is not None and found[0] == "resolved":
        return found[1], found[2], found[3]
    if found is not None:
        matches = ", ".join(sorted((m.key for m in found[1]), key=lambda k: (k.casefold(), k)))
        hint = (
            "No matching provider is authenticated."
            if found[2] == 0
            else "More than one matching provider is authenticated."
        )
        raise ModelError(
            f'Model "{model_flag}" is ambiguous across providers: {matches}. {hint} '
            "Use --provider or provider/model."
        )
    split = _split_provider(text, models) if text else None
    if split is None:
        raise ModelError(f'Model "{model_flag}" not found. Use --list-models to see available models.')
    provider, model_text = split
    suffix = _split_thinking(model_text)
    # With --thinking the suffix stays part of the custom id.
    model_id = model_text if thinking_flag else (suffix[0] if suffix else model_text)
    level = None if thinking_flag else (suffix[1] if suffix else None)
    own = [m for m in models if m.provider == provider]
    default_id = DEFAULT_MODEL_PER_PROVIDER.get(provider)
    base = next((m for m in own if m.id == default_id), own[0]) if default_id else own[0]
    data = {**base.data, "id": model_id, "name": model_id}
    requested = thinking_flag or level
    if requested and requested != "off":
        data["reasoning"] = True
    warning = f'Model "{model_id}" not found for provider "{provider}". Using custom model id.'
    return Model(data), level, warning


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
    if model:  # Pi: an empty --model is no --model
        chosen, flag_thinking, warning = _parse_flag(model, thinking, registry, env)
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
