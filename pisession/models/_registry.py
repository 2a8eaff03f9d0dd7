"""Pi's model list: the built-in models of Pi 1.6.0 (``pisession/data/models.json``, made by
``tests/conformance/generate_models.py``) merged with ``AGENT_DIR/models.json`` as Pi's
``provider-composer.js`` merges them: a provider's ``baseUrl``/``compat`` apply to its built-in
models, ``models`` entries replace or add models, ``modelOverrides`` apply last.
"""

from __future__ import annotations

import copy
import functools
import json
import os
from collections.abc import Iterator, Mapping
from typing import Any

import attrs

from .._errors import ModelError
from .._load import open_regular
from .._paths import get_agent_dir, normalize_path

__all__ = ["Model", "ModelRegistry", "builtin_env_vars"]

THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh", "max")


@functools.cache
def _builtin() -> dict[str, Any]:
    path = os.path.join(os.path.dirname(os.path.dirname(__file__)), "data", "models.json")
    with open(path, encoding="utf-8") as handle:
        data: dict[str, Any] = json.load(handle)
    return data


def builtin_env_vars(provider: str) -> tuple[str, ...]:
    """The environment variables Pi reads a built-in provider's key from (``findEnvKeys``)."""
    return tuple(_builtin()["envVars"].get(provider, ()))


@attrs.frozen
class Model:
    """One model as Pi sees it after merging (``data`` holds Pi's model object: ``api``,
    ``baseUrl``, ``reasoning``, ``contextWindow``, ``maxTokens``, ``cost``, ``compat``, ...)."""

    data: Mapping[str, Any] = attrs.field(eq=False, repr=False)
    provider: str = attrs.field(init=False)
    id: str = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        object.__setattr__(self, "provider", self.data["provider"])
        object.__setattr__(self, "id", self.data["id"])

    @property
    def key(self) -> str:
        """``provider/id``."""
        return f"{self.provider}/{self.id}"

    @property
    def api(self) -> str:
        return str(self.data["api"])

    @property
    def base_url(self) -> str:
        return str(self.data.get("baseUrl") or "")

    @property
    def name(self) -> str:
        return str(self.data.get("name") or self.id)

    @property
    def reasoning(self) -> bool:
        return bool(self.data.get("reasoning"))

    @property
    def context_window(self) -> int:
        return int(self.data.get("contextWindow") or 0)

    @property
    def max_tokens(self) -> int:
        return int(self.data.get("maxTokens") or 0)

    @property
    def images(self) -> bool:
        return "image" in (self.data.get("input") or ())

    @property
    def compat(self) -> Mapping[str, Any]:
        return self.data.get("compat") or {}

    @property
    def thinking_level_map(self) -> Mapping[str, Any]:
        return self.data.get("thinkingLevelMap") or {}

    def supported_thinking_levels(self) -> tuple[str, ...]:
        """pi-ai's ``getSupportedThinkingLevels``."""
        if not self.reasoning:
            return ("off",)
        mapping = self.thinking_level_map
        levels = []
        for level in THINKING_LEVELS:
            mapped = mapping.get(level, _ABSENT)
            if mapped is None:
                continue
            if level in ("xhigh", "max") and mapped is _ABSENT:
                continue
            levels.append(level)
        return tuple(levels)

    def clamp_thinking_level(self, level: str) -> str:
        """pi-ai's ``clampThinkingLevel``: the level itself if the model has it, else the next
        higher one it has, else the next lower."""
        available = self.supported_thinking_levels()
        if level in available:
            return level
        if level not in THINKING_LEVELS:
            return available[0] if available else "off"
        i = THINKING_LEVELS.index(level)
        for candidate in (*THINKING_LEVELS[i:], *reversed(THINKING_LEVELS[:i])):
            if candidate in available:
                return candidate
        return available[0] if available else "off"


_ABSENT = object()


def _strip_json_comments(text: str) -> str:
    # Pi's stripJsonComments: // and /* */ outside strings.
    out: list[str] = []
    i, n = 0, len(text)
    in_string = False
    while i < n:
        ch = text[i]
        if in_string:
            out.append(ch)
            if ch == "\\" and i + 1 < n:
                out.append(text[i + 1])
                i += 2
                continue
            if ch == '"':
                in_string = False
            i += 1
            continue
        if ch == '"':
            in_string = True
            out.append(ch)
            i += 1
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            i = n if end < 0 else end + 2
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _merge_compat(base: Any, override: Any) -> Any:
    if not override:
        return base
    merged = {**(base or {}), **override}
    for key in ("openRouterRouting", "vercelGatewayRouting", "chatTemplateKwargs", "chatTemplateArgs"):
        b, o = (base or {}).get(key), override.get(key)
        if isinstance(b, dict) or isinstance(o, dict):
            merged[key] = {**(b or {}), **(o or {})}
    return merged


def _set(model: dict[str, Any], key: str, value: Any) -> None:
    # JS object spread keeps a key written as undefined; JSON drops it: drop it here too.
    if value is None:
        model.pop(key, None)
    else:
        model[key] = value


def _apply_override(model: dict[str, Any], override: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(model)
    for key in ("name", "reasoning", "input", "contextWindow", "maxTokens"):
        if override.get(key) is not None:
            out[key] = override[key]
    if override.get("thinkingLevelMap"):
        out["thinkingLevelMap"] = {**(model.get("thinkingLevelMap") or {}), **override["thinkingLevelMap"]}
    if override.get("inputLimits"):
        base = model.get("inputLimits") or {}
        limits = {**base, **override["inputLimits"]}
        images = override["inputLimits"].get("images")
        if images:
            merged_images = {**(base.get("images") or {}), **images}
            if images.get("resize"):
                merged_images["resize"] = {
                    **((base.get("images") or {}).get("resize") or {}),
                    **images["resize"],
                }
            limits["images"] = merged_images
        out["inputLimits"] = limits
    cost = override.get("cost")
    if cost:
        base_cost = model.get("cost") or {}
        new_cost = {k: cost.get(k, base_cost.get(k)) for k in ("input", "output", "cacheRead", "cacheWrite")}
        tiers = cost.get("tiers", base_cost.get("tiers"))
        if tiers is not None:
            new_cost["tiers"] = tiers
        out["cost"] = new_cost
    if override.get("promptCache"):
        out["promptCache"] = {**(model.get("promptCache") or {}), **override["promptCache"]}
    if override.get("samplingParams"):
        out["samplingParams"] = {**(model.get("samplingParams") or {}), **override["samplingParams"]}
    by_level = override.get("samplingParamsByThinkingLevel")
    if by_level:
        merged = dict(model.get("samplingParamsByThinkingLevel") or {})
        for level in THINKING_LEVELS:
            if by_level.get(level):
                merged[level] = {**(merged.get(level) or {}), **by_level[level]}
        out["samplingParamsByThinkingLevel"] = merged
    _set(out, "compat", _merge_compat(model.get("compat"), override.get("compat")))
    return out


def _model_from_json(
    provider: str,
    definition: Mapping[str, Any],
    config: Mapping[str, Any],
    defaults: Mapping[str, Any] | None,
) -> dict[str, Any]:
    api = definition.get("api") or config.get("api") or (defaults or {}).get("api")
    model_id = definition.get("id")
    if not api:
        raise ModelError(
            f'Provider {provider}, model {model_id}: no "api" specified. Set at provider or model level.'
        )
    base_url = definition.get("baseUrl") or config.get("baseUrl") or (defaults or {}).get("baseUrl")
    if not base_url:
        raise ModelError(f'Provider {provider}: "baseUrl" is required when defining custom models.')
    model: dict[str, Any] = {
        "id": model_id,
        "name": definition.get("name") or model_id,
        "api": api,
        "provider": provider,
        "baseUrl": base_url,
        "reasoning": definition.get("reasoning", False),
    }
    _set(model, "thinkingLevelMap", definition.get("thinkingLevelMap"))
    model["input"] = definition.get("input") or ["text"]
    _set(model, "inputLimits", definition.get("inputLimits"))
    model["cost"] = definition.get("cost") or {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
    _set(model, "promptCache", definition.get("promptCache"))
    model["contextWindow"] = definition.get("contextWindow") or 128000
    model["maxTokens"] = definition.get("maxTokens") or 16384
    _set(model, "samplingParams", definition.get("samplingParams"))
    _set(model, "samplingParamsByThinkingLevel", definition.get("samplingParamsByThinkingLevel"))
    _set(model, "compat", _merge_compat(config.get("compat"), definition.get("compat")))
    return model


def _find_defaults(models: list[dict[str, Any]], model_id: str, api: str | None) -> dict[str, Any] | None:
    for field, value in (("id", model_id), ("api", api), ("api", "openai-completions")):
        if value is None:
            continue
        for m in models:
            if m[field] == value:
                return m
    return models[0] if models else None


def _apply_models_json(
    provider: str, base: list[dict[str, Any]], config: Mapping[str, Any]
) -> list[dict[str, Any]]:
    has_overrides = bool(config.get("modelOverrides"))
    if not (
        config.get("models")
        or config.get("baseUrl")
        or config.get("headers")
        or config.get("compat")
        or has_overrides
        or config.get("apiKey")
        or config.get("oauth")
        or "authHeader" in config
    ):
        raise ModelError(
            f'Provider {provider}: must specify "baseUrl", "headers", "compat", '
            '"modelOverrides", or "models".'
        )
    models = []
    for model in base:
        base_url = (
            model.get("baseUrl")
            if config.get("oauth") == "radius"
            else config.get("baseUrl") or model.get("baseUrl")
        )
        merged = {**model, "baseUrl": base_url}
        _set(merged, "compat", _merge_compat(model.get("compat"), config.get("compat")))
        models.append(merged)
    for definition in config.get("models") or ():
        existing = next((i for i, m in enumerate(models) if m["id"] == definition.get("id")), -1)
        defaults = _find_defaults(models, definition.get("id"), definition.get("api") or config.get("api"))
        model = _model_from_json(provider, definition, config, defaults)
        if existing >= 0:
            models[existing] = model
        else:
            models.append(model)
    return models


@attrs.frozen
class ModelRegistry:
    """Every model Pi knows, in Pi's order (built-in providers, then the custom providers of
    ``models.json``)::

        registry = ModelRegistry.load()            # ~/.pi/agent (or $PI_CODING_AGENT_DIR)
        model = registry.get("anthropic/claude-sonnet-4-5")
        print(model.context_window, model.max_tokens)
    """

    agent_dir: str
    providers: Mapping[str, tuple[Model, ...]] = attrs.field(repr=False)
    config: Mapping[str, Mapping[str, Any]] = attrs.field(repr=False)
    """``models.json``'s providers, as written (credentials unresolved)."""
    error: str | None = None
    """Pi's message for a ``models.json`` it could not load (Pi then ignores the file)."""

    @classmethod
    def load(cls, agent_dir: str | os.PathLike[str] | None = None) -> ModelRegistry:
        directory = normalize_path(agent_dir) if agent_dir is not None else get_agent_dir()
        config, error = _read_models_json(os.path.join(directory, "models.json"))
        builtin = _builtin()["providers"]
        order = [p["id"] for p in builtin] + [p for p in config if p not in {b["id"] for b in builtin}]
        base_models = {p["id"]: [dict(m) for m in p["models"]] for p in builtin}
        providers: dict[str, tuple[Model, ...]] = {}
        for provider in order:
            models = base_models.get(provider, [])
            provider_config = config.get(provider)
            if provider_config is not None:
                models = _apply_models_json(provider, models, provider_config)
                overrides = provider_config.get("modelOverrides") or {}
                models = [
                    _apply_override(m, overrides[m["id"]]) if m["id"] in overrides else m for m in models
                ]
            providers[provider] = tuple(Model(m) for m in models)
        return cls(directory, providers, config, error)

    def __iter__(self) -> Iterator[Model]:
        for models in self.providers.values():
            yield from models

    def get(self, key: str, model_id: str | None = None) -> Model:
        """The model ``provider/id`` (or ``get(provider, id)``); :class:`~pisession.ModelError`
        when Pi knows no such model."""
        found = self.find(key, model_id)
        if found is None:
            name = key if model_id is None else f"{key}/{model_id}"
            raise ModelError(f'Model "{name}" not found. Use --list-models to see available models.')
        return found

    def find(self, key: str, model_id: str | None = None) -> Model | None:
        if model_id is None:
            provider, sep, model_id = key.partition("/")
            if not sep:
                return None
        else:
            provider = key
        for model in self.providers.get(provider, ()):
            if model.id == model_id:
                return model
        return None

    def provider_config(self, provider: str) -> Mapping[str, Any]:
        return self.config.get(provider) or {}


def _read_models_json(path: str) -> tuple[dict[str, Any], str | None]:
    try:
        # open_regular: a FIFO in its place must not block (Pi would hang there)
        with open_regular(path) as handle:
            text = handle.read().decode("utf-8")
    except (FileNotFoundError, ValueError):  # a NUL in the agent folder: Pi's existsSync is false
        return {}, None
    except (OSError, UnicodeDecodeError) as exc:
        return {}, f"Failed to load models.json: {exc}\n\nFile: {path}"
    text = text.removeprefix("\ufeff")
    try:
        parsed = json.loads(_strip_json_comments(text))
    except ValueError as exc:
        return {}, f"Failed to parse models.json: {exc}\n\nFile: {path}"
    providers = parsed.get("providers") if isinstance(parsed, dict) else None
    if not isinstance(providers, dict) or not all(isinstance(v, dict) for v in providers.values()):
        return {}, f"Invalid models.json schema:\n  - providers: Expected object\n\nFile: {path}"
    return copy.deepcopy(providers), None
