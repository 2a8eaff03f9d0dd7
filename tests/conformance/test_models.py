"""pisession.models against Pi 1.6.0: ``pi --list-models [SEARCH]`` (golden/list_models.json,
made by generate_models.py with the real Pi CLI), credentials as Pi resolves them, and the model
and thinking level Pi picks for a session."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

from pisession.cli import main
from pisession.models import (
    CredentialsError,
    ModelError,
    ModelRegistry,
    available_models,
    choose_model,
    filter_models,
    format_model_table,
    resolve_credentials,
)
from pisession.settings import PiSettings

GOLDEN = json.loads((Path(__file__).parent / "golden" / "list_models.json").read_text(encoding="utf-8"))


def agent(tmp_path: Path, models: dict[str, Any] | None = None, auth: dict[str, Any] | None = None) -> Path:
    directory = tmp_path / "agent"
    directory.mkdir(exist_ok=True)
    if models is not None:
        (directory / "models.json").write_text(json.dumps(models))
    if auth is not None:
        (directory / "auth.json").write_text(json.dumps(auth))
    return directory


@pytest.mark.parametrize("search", list(GOLDEN["outputs"]))
def test_list_models_prints_what_pi_prints(search: str, tmp_path: Path) -> None:
    registry = ModelRegistry.load(agent(tmp_path, GOLDEN["models"], GOLDEN["auth"]))
    models = filter_models(available_models(registry, GOLDEN["env"]), search)
    printed = format_model_table(models) if models else f'No models matching "{search}"\n'
    assert printed == GOLDEN["outputs"][search]


def test_models_command_lists_like_pi(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent(tmp_path, GOLDEN["models"], GOLDEN["auth"])))
    for name, value in GOLDEN["env"].items():
        monkeypatch.setenv(name, value)
    assert main(["models", "sonnet"]) == 0
    assert capsys.readouterr().out == GOLDEN["outputs"]["sonnet"]


CUSTOM = {
    "providers": {
        "lit": {
            "baseUrl": "http://x",
            "api": "openai-completions",
            "apiKey": "sk-literal",
            "models": [{"id": "m"}],
        },
        "var": {
            "baseUrl": "http://x",
            "api": "openai-completions",
            "apiKey": "$MY_KEY",
            "models": [{"id": "m"}],
        },
        "braces": {
            "baseUrl": "http://x",
            "api": "openai-completions",
            "apiKey": "pre-${MY_KEY}-$$",
            "headers": {"x-team": "$TEAM"},
            "models": [{"id": "m", "headers": {"x-model": "one"}}],
        },
        "cmd": {
            "baseUrl": "http://x",
            "api": "openai-completions",
            "apiKey": "!printf ' sk-cmd \\n'",
            "models": [{"id": "m"}],
        },
        "badcmd": {
            "baseUrl": "http://x",
            "api": "openai-completions",
            "apiKey": "!exit 3",
            "models": [{"id": "m"}],
        },
        "nokey": {"baseUrl": "http://x", "api": "openai-completions", "models": [{"id": "m"}]},
        "bearer": {
            "baseUrl": "http://x",
            "api": "anthropic-messages",
            "apiKey": "k",
            "authHeader": True,
            "models": [{"id": "m"}],
        },
        "anthropic": {
            "modelOverrides": {"claude-sonnet-4-5": {"contextWindow": 50000, "cost": {"input": 1}}}
        },
    }
}


def test_credentials_resolve_as_pi_resolves_them(tmp_path: Path) -> None:
    registry = ModelRegistry.load(agent(tmp_path, CUSTOM, {"lit": {"type": "api_key", "key": "from-auth"}}))
    env = {"MY_KEY": "v", "TEAM": "t"}
    assert resolve_credentials(registry, registry.get("lit/m"), env).api_key == "from-auth"  # auth.json first
    assert resolve_credentials(registry, registry.get("var/m"), env).api_key == "v"
    braces = resolve_credentials(registry, registry.get("braces/m"), env)
    assert braces.api_key == "pre-v-$"
    assert dict(braces.headers) == {"x-team": "t", "x-model": "one"}
    assert resolve_credentials(registry, registry.get("cmd/m"), env).api_key == "sk-cmd"
    assert resolve_credentials(registry, registry.get("bearer/m"), env).headers["Authorization"] == "Bearer k"
    assert "v" not in repr(resolve_credentials(registry, registry.get("var/m"), env))


def test_missing_credentials_name_what_pi_would_read(tmp_path: Path) -> None:
    registry = ModelRegistry.load(agent(tmp_path, CUSTOM))
    with pytest.raises(CredentialsError, match="from environment variable: MY_KEY"):
        resolve_credentials(registry, registry.get("var/m"), {})
    with pytest.raises(CredentialsError, match="from shell command: exit 3"):
        resolve_credentials(registry, registry.get("badcmd/m"), {})
    with pytest.raises(CredentialsError, match="ANTHROPIC_OAUTH_TOKEN or ANTHROPIC_API_KEY"):
        resolve_credentials(registry, registry.get("anthropic/claude-sonnet-4-5"), {})
    with pytest.raises(CredentialsError, match="No API key for provider nokey"):
        resolve_credentials(registry, registry.get("nokey/m"), {})


def test_expired_oauth_says_how_to_refresh_and_hides_the_token(tmp_path: Path) -> None:
    token = "sk-ant-oat-secret-token"
    past = int(time.time() * 1000) - 1000
    registry = ModelRegistry.load(
        agent(
            tmp_path, None, {"anthropic": {"type": "oauth", "access": token, "refresh": "r", "expires": past}}
        )
    )
    with pytest.raises(CredentialsError) as caught:
        resolve_credentials(registry, registry.get("anthropic/claude-sonnet-4-5"), {})
    assert "run pi once" in str(caught.value) and "ANTHROPIC_API_KEY" in str(caught.value)
    assert token not in str(caught.value)
    fresh = ModelRegistry.load(
        agent(tmp_path, None, {"anthropic": {"type": "oauth", "access": token, "expires": past + 10**9}})
    )
    assert resolve_credentials(fresh, fresh.get("anthropic/claude-sonnet-4-5"), {}).oauth


def test_model_overrides_apply_over_builtin_models(tmp_path: Path) -> None:
    registry = ModelRegistry.load(agent(tmp_path, CUSTOM))
    model = registry.get("anthropic/claude-sonnet-4-5")
    assert model.context_window == 50000
    assert model.data["cost"]["input"] == 1 and model.data["cost"]["output"] == 15
    with pytest.raises(ModelError, match='Model "anthropic/nope" not found'):
        registry.get("anthropic/nope")


def test_session_model_thinking_and_fallbacks(tmp_path: Path) -> None:
    registry = ModelRegistry.load(agent(tmp_path, CUSTOM))
    env = {"MY_KEY": "v"}
    branch = [
        {"type": "model_change", "provider": "var", "modelId": "m"},
        {"type": "thinking_level_change", "thinkingLevel": "high"},
    ]
    choice = choose_model(registry, None, branch, env=env)
    assert (choice.model.key, choice.thinking_level, choice.source) == ("var/m", "off", "session")
    # The session's provider has no key: Pi falls back and says so.
    choice = choose_model(registry, None, branch, env={})
    assert choice.source == "first available" and choice.warning is not None
    assert choice.warning.startswith("Could not restore model var/m. Using ")
    settings = PiSettings.load(str(tmp_path), str(registry.agent_dir))
    choice = choose_model(registry, settings, [], model="anthropic/claude-sonnet-4-5:low", env={})
    assert (choice.model.key, choice.thinking_level) == ("anthropic/claude-sonnet-4-5", "low")
    with pytest.raises(ModelError, match="not found"):
        choose_model(registry, settings, [], model="nowhere/nothing", env={})


def test_a_fifo_in_place_of_models_or_auth_json_does_not_block(tmp_path: Path) -> None:
    import os

    directory = agent(tmp_path)
    os.mkfifo(directory / "models.json")
    os.mkfifo(directory / "auth.json")
    registry = ModelRegistry.load(directory)  # returns: a FIFO is not read
    assert registry.error is not None and "models.json" in registry.error
    with pytest.raises(CredentialsError, match=r"auth\.json"):
        resolve_credentials(registry, registry.find("anthropic/claude-sonnet-4-5"), {})


def test_an_agent_folder_holding_a_nul_byte_has_no_files(tmp_path: Path) -> None:
    # Pi's existsSync is false for such a path: no models.json, no auth.json, no error
    directory = f"{tmp_path}/a\0b"
    registry = ModelRegistry.load(directory)
    assert registry.error is None
    assert registry.find("anthropic/claude-sonnet-4-5") is not None


MODEL_FLAG = json.loads((Path(__file__).parent / "golden" / "model_flag.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    "case", MODEL_FLAG["cases"], ids=lambda c: f"{c['model']!r}-{c['thinking']}-{c['authed']}"
)
def test_model_flag_resolves_as_pis_resolve_cli_model(
    case: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    # golden/model_flag.json: Pi 1.6.0's resolveCliModel on the same list (model_flag.mjs):
    # partial ids and names, aliases over dated ids, :LEVEL, ambiguity by credentials,
    # provider ids holding "/", and a custom id for a known provider.
    from pisession.models import Model, _select

    providers: dict[str, list[Model]] = {}
    for data in MODEL_FLAG["models"]:
        providers.setdefault(data["provider"], []).append(Model(dict(data, api="openai-completions")))
    registry = ModelRegistry("/nonexistent", {p: tuple(m) for p, m in providers.items()}, {})
    monkeypatch.setattr(_select, "has_configured_auth", lambda _r, provider, _e: provider in case["authed"])
    if case["error"] is not None:
        with pytest.raises(ModelError) as caught:
            _select._parse_flag(case["model"], case["thinking"], registry, {})
        assert str(caught.value) == case["error"]
        return
    if case["key"] is None:  # an empty --model is no --model
        monkeypatch.setattr(_select, "_initial", lambda *_a: (registry.get("gate/other"), "first available"))
        assert choose_model(registry, model=case["model"], env={}).source == "first available"
        return
    model, level, warning = _select._parse_flag(case["model"], case["thinking"], registry, {})
    assert (model.key, level, warning) == (case["key"], case["thinkingLevel"], case["warning"])
    assert (model.reasoning, model.data.get("name")) == (case["reasoning"], case["name"])


def test_the_latest_fuzzy_match_is_ordered_as_localecompare() -> None:
    # Node 22: [...ids].sort((x, y) => y.localeCompare(x)), as Pi's bestFuzzyMatch orders.
    from pisession.models._select import _collation_key

    ids = ["gpt-4o", "gpt-4.1", "gpt-4-1", "GPT-5", "gpt-5", "a_b", "a-b", "ab", "claude-3.5", "claude-35"]
    node = ["GPT-5", "gpt-5", "gpt-4o", "gpt-4.1", "gpt-4-1", "claude-35", "claude-3.5", "ab", "a-b", "a_b"]
    assert sorted(ids, key=_collation_key, reverse=True) == node
