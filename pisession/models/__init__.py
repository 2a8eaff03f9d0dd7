"""The models Pi 1.6.0 knows and the one it would summarize a session with.

Pi's built-in model list ships as data (``pisession/data/models.json``, generated from the Pi
package by ``tests/conformance/generate_models.py``); :class:`ModelRegistry` merges it with the
user's ``AGENT_DIR/models.json`` exactly as Pi does (custom providers, ``baseUrl``/``compat`` of
built-in providers, ``modelOverrides``)::

    from pisession import SessionManager
    from pisession.models import ModelRegistry, choose_model
    from pisession.settings import PiSettings

    registry = ModelRegistry.load()                   # $PI_CODING_AGENT_DIR or ~/.pi/agent
    model = registry.get("anthropic/claude-sonnet-4-5")
    manager = SessionManager.open("session.jsonl")
    choice = choose_model(registry, PiSettings.load(manager.get_cwd()), manager.get_branch())
    print(choice.model.key, choice.thinking_level)

Credentials (:func:`resolve_credentials`) are read as Pi reads them and never written, printed or
put into a message.
"""

from __future__ import annotations

from .._errors import CredentialsError, ModelError
from ._cost import calculate_cost
from ._credentials import Credentials, config_value_env_names, has_configured_auth, resolve_credentials
from ._listing import filter_models, format_model_table, fuzzy_match
from ._registry import THINKING_LEVELS, Model, ModelRegistry, builtin_env_vars
from ._select import DEFAULT_THINKING_LEVEL, ModelChoice, available_models, choose_model

__all__ = [
    "Model",
    "ModelRegistry",
    "ModelChoice",
    "choose_model",
    "available_models",
    "calculate_cost",
    "Credentials",
    "resolve_credentials",
    "has_configured_auth",
    "config_value_env_names",
    "builtin_env_vars",
    "filter_models",
    "format_model_table",
    "fuzzy_match",
    "THINKING_LEVELS",
    "DEFAULT_THINKING_LEVEL",
    "ModelError",
    "CredentialsError",
]
