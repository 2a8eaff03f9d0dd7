"""Credentials as Pi 1.6.0 resolves them, read-only (``provider-composer.js``,
``resolve-config-value.js``, pi-ai's ``env-api-keys.js``): ``auth.json`` (an ``api_key`` or an
unexpired OAuth ``access`` token), else ``models.json``'s ``apiKey``, else the built-in
provider's environment variables. ``apiKey`` and header values may be literal, ``$VAR`` /
``${VAR}`` (``$$`` is a literal ``$``) or ``!command`` (run by the shell, its trimmed output).

A resolved credential lives only in the :class:`Credentials` object handed to the request
builder; its ``repr`` hides it, and no message here ever holds one.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time
from collections.abc import Mapping
from typing import Any

import attrs

from .._errors import CredentialsError
from .._load import open_regular
from ._registry import Model, ModelRegistry, builtin_env_vars

__all__ = ["Credentials", "resolve_credentials", "has_configured_auth", "config_value_env_names"]

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_NAME_FULL = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@attrs.frozen
class Credentials:
    """What a request carries for auth: the API key (or OAuth access token) and the headers
    configured in ``models.json`` (resolved). Shown as ``Credentials(<hidden>)``."""

    api_key: str | None = attrs.field(repr=False)
    headers: Mapping[str, str] = attrs.field(repr=False, factory=dict)
    source: str = "none"
    """Where the key came from: ``auth.json``, ``models.json``, an environment variable's name."""
    oauth: bool = False

    def __repr__(self) -> str:
        return f"Credentials(<hidden>, source={self.source!r})"


def _parse_template(config: str) -> list[tuple[str, str]]:
    parts: list[tuple[str, str]] = []

    def literal(value: str) -> None:
        if not value:
            return
        if parts and parts[-1][0] == "literal":
            parts[-1] = ("literal", parts[-1][1] + value)
        else:
            parts.append(("literal", value))

    i = 0
    while i < len(config):
        d = config.find("$", i)
        if d < 0:
            literal(config[i:])
            break
        literal(config[i:d])
        nxt = config[d + 1 : d + 2]
        if nxt in ("$", "!"):
            literal(nxt)
            i = d + 2
            continue
        if nxt == "{":
            end = config.find("}", d + 2)
            if end < 0:
                literal("$")
                i = d + 1
                continue
            name = config[d + 2 : end]
            if _NAME_FULL.match(name):
                parts.append(("env", name))
            else:
                literal(config[d : end + 1])
            i = end + 1
            continue
        m = _NAME.match(config, d + 1)
        if m:
            parts.append(("env", m.group(0)))
            i = m.end()
            continue
        literal("$")
        i = d + 1
    return parts


def config_value_env_names(config: str) -> list[str]:
    """The environment variables a config value reads (none for a ``!command``)."""
    if config.startswith("!"):
        return []
    names: list[str] = []
    for kind, value in _parse_template(config):
        if kind == "env" and value not in names:
            names.append(value)
    return names


def _env(name: str, env: Mapping[str, str]) -> str | None:
    return env.get(name) or None


def _run_command(command: str) -> str | None:
    # Pi: execSync(command) with the default shell, 10 s, stderr ignored, stdout trimmed.
    try:
        done = subprocess.run(
            command,
            shell=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    if done.returncode != 0:
        return None
    return done.stdout.decode("utf-8", "replace").strip() or None


def resolve_config_value(config: str, description: str, env: Mapping[str, str]) -> str:
    """Pi's ``resolveConfigValueOrThrow``; the message names the command or variables only."""
    if config.startswith("!"):
        value = _run_command(config[1:])
        if value is None:
            raise CredentialsError(f"Failed to resolve {description} from shell command: {config[1:]}")
        return value
    out = ""
    missing = []
    for kind, value in _parse_template(config):
        if kind == "literal":
            out += value
            continue
        found = _env(value, env)
        if found is None:
            missing.append(value)
        else:
            out += found
    if missing:
        noun = "environment variable" if len(missing) == 1 else "environment variables"
        raise CredentialsError(f"Failed to resolve {description} from {noun}: {', '.join(missing)}")
    return out


def _is_configured(config: str, env: Mapping[str, str]) -> bool:
    return all(_env(name, env) is not None for name in config_value_env_names(config))


def _read_auth(agent_dir: str) -> dict[str, Any]:
    path = os.path.join(agent_dir, "auth.json")
    if "\0" in path:  # no file has such a name: Pi's existsSync is false for it
        return {}
    try:
        with open_regular(path) as handle:  # a FIFO in its place must not block
            data = json.loads(handle.read().decode("utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        # The exception text of a JSON error may quote the file: say only where and what kind.
        raise CredentialsError(f"cannot read {path}: {type(exc).__name__}") from None
    return data if isinstance(data, dict) else {}


def has_configured_auth(registry: ModelRegistry, provider: str, env: Mapping[str, str] | None = None) -> bool:
    """Whether Pi counts ``provider`` as having credentials (``hasConfiguredAuth``): a stored
    credential, a usable ``models.json`` ``apiKey``, or the built-in provider's variables."""
    env = os.environ if env is None else env
    credential = _read_auth(registry.agent_dir).get(provider)
    if isinstance(credential, dict) and credential.get("type") in ("api_key", "oauth"):
        return True
    raw = registry.provider_config(provider).get("apiKey")
    if isinstance(raw, str):
        return raw.startswith("!") or _is_configured(raw, env)
    return any(_env(name, env) for name in builtin_env_vars(provider))


def _headers(
    registry: ModelRegistry, model: Model, env: Mapping[str, str], key: str | None
) -> dict[str, str]:
    config = registry.provider_config(model.provider)
    raw: dict[str, str] = dict(config.get("headers") or {})
    definition = next((d for d in config.get("models") or () if d.get("id") == model.id), None)
    model_raw = {
        **((config.get("modelOverrides") or {}).get(model.id, {}).get("headers") or {}),
        **((definition or {}).get("headers") or {}),
    }
    headers: dict[str, str] = {}
    for name, value in raw.items():
        headers[name] = resolve_config_value(value, f'provider "{model.provider}"', env)
    for name, value in model_raw.items():
        headers[name] = resolve_config_value(value, f'model "{model.key}"', env)
    if config.get("authHeader"):
        if not key:
            raise CredentialsError("authHeader requires a resolved API key")
        headers["Authorization"] = f"Bearer {key}"
    return headers


def resolve_credentials(
    registry: ModelRegistry,
    model: Model,
    env: Mapping[str, str] | None = None,
    *,
    now_ms: int | None = None,
) -> Credentials:
    """The key and headers Pi would send for ``model``; :class:`~pisession.CredentialsError`
    (before any request) when there is none, naming what Pi would have read."""
    env = os.environ if env is None else env
    provider = model.provider
    credential = _read_auth(registry.agent_dir).get(provider)
    key: str | None = None
    source = "none"
    oauth = False
    extra: dict[str, str] = {}
    if isinstance(credential, dict) and credential.get("type") == "api_key" and credential.get("key"):
        key, source = str(credential["key"]), "auth.json"
    elif isinstance(credential, dict) and credential.get("type") == "oauth":
        expires = credential.get("expires")
        now = int(time.time() * 1000) if now_ms is None else now_ms
        if not isinstance(expires, (int, float)) or expires <= now or not credential.get("access"):
            raise CredentialsError(
                f"the OAuth login for provider {provider} in {registry.agent_dir}/auth.json has expired; "
                "pisession does not refresh it: run pi once (it refreshes the token), or set "
                + (
                    "one of " + ", ".join(builtin_env_vars(provider))
                    if builtin_env_vars(provider)
                    else "an apiKey for it in models.json"
                )
            )
        key, source, oauth = str(credential["access"]), "auth.json (oauth)", True
    else:
        raw = registry.provider_config(provider).get("apiKey")
        if isinstance(raw, str):
            key = resolve_config_value(raw, f'API key for provider "{provider}"', env)
            source = "models.json"
        else:
            names = builtin_env_vars(provider)
            if provider == "anthropic" and _env("ANTHROPIC_AUTH_TOKEN", env):
                # Pi sends this one as a bearer token, not as x-api-key.
                extra["Authorization"] = f"Bearer {_env('ANTHROPIC_AUTH_TOKEN', env)}"
                source = "ANTHROPIC_AUTH_TOKEN"
            else:
                for name in names:
                    if name == "ANTHROPIC_AUTH_TOKEN":
                        continue
                    value = _env(name, env)
                    if value:
                        key, source = value, name
                        break
            if key is None and not extra:
                where = f"{registry.agent_dir}/auth.json or an apiKey in {registry.agent_dir}/models.json"
                if names:
                    raise CredentialsError(
                        f"No API key for provider {provider}: set {' or '.join(names)}, or add it to {where}"
                    )
                raise CredentialsError(f"No API key for provider {provider}: add it to {where}")
    headers = {**extra, **_headers(registry, model, env, key)}
    return Credentials(key, headers, source, oauth)
