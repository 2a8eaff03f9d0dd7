"""Pi's own settings, read as Pi 1.6.0 reads them (``SettingsManager`` in Pi's
``core/settings-manager.js``): the session folder a user configured, and the compaction and
branch-summary settings Pi would use::

    from pisession import SessionManager
    from pisession.settings import PiSettings

    settings = PiSettings.load("/work/project")
    sessions = SessionManager.list("/work/project", settings.session_dir)
    manager.plan_compaction(settings.compaction_settings("anthropic/claude-sonnet-4-5"))

The global ``AGENT_DIR/settings.json`` (``AGENT_DIR``: ``$PI_CODING_AGENT_DIR``, else
``~/.pi/agent``) is merged with the project's ``CWD/.pi/settings.json`` object by object, the
project winning, with JavaScript's semantics: a ``"__proto__"`` key of the project's file sets
the merged object's prototype, so ``{"__proto__": {"sessionDir": "/elsewhere"}}`` supplies a
``sessionDir`` neither file sets, as it does for Pi. A file that is missing or empty
contributes nothing; one that cannot be read or parsed contributes nothing and is listed in
:attr:`PiSettings.errors`. Nothing is ever written.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal

from ._errors import SettingsError
from ._js import MISSING, js_truthy
from ._paths import get_agent_dir, node_resolve, normalize_path_from, resolve_path
from ._record import Record
from ._settings_files import (
    SessionDirSource,
    SettingsFileError,
    SettingsScope,
    configured_session_dir,
    session_dir_value,
)
from ._settings_files import js_string as _js_string
from ._settings_files import open_settings_file as _open_settings_file
from ._settings_files import read_layer as _read_layer

if TYPE_CHECKING:
    from ._session import HasBranch
    from .compaction import CompactionSettings

__all__ = [
    "PiSettings",
    "SettingsFileError",
    "SettingsScope",
    "ResolvedSetting",
    "SessionDirChoice",
    "SessionDirSource",
    "choose_session_dir",
    "is_project_trusted",
    "session_model",
    "settings_agent_dir",
]

# Pi's SETTINGS_DEFAULTS (core/settings-defaults.js).
_DEFAULT_RESERVE = 16384
_DEFAULT_KEEP_RECENT = 20000
_DEFAULT_BRANCH_SUMMARY_RESERVE_TOKENS = 16384
_TOKEN_DEFAULTS: tuple[tuple[Literal["reserveTokens", "keepRecentTokens"], int], ...] = (
    ("reserveTokens", _DEFAULT_RESERVE),
    ("keepRecentTokens", _DEFAULT_KEEP_RECENT),
)
_MAX_SAFE_INTEGER = 2**53 - 1
_PROJECT_CONFIG_DIR = ".pi"


def settings_agent_dir() -> str:
    """Pi's agent folder: ``$PI_CODING_AGENT_DIR`` (``~`` expanded), else ``~/.pi/agent``."""
    return get_agent_dir()


def _safe_integer(value: object) -> int | None:
    """``value`` as an int when JavaScript's ``Number.isSafeInteger(value)`` holds, else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if value != int(value) or abs(value) > _MAX_SAFE_INTEGER:
        return None
    return int(value)




class ResolvedSetting(Record):
    """One setting as Pi resolves it, and where its value comes from (:meth:`PiSettings.resolved`)."""

    name: str
    """Its name in ``settings.json``, e.g. ``compaction.keepRecentTokens``."""
    value: int | bool | None
    """None when the setting is invalid (see ``error``)."""
    source: SettingsScope | Literal["default"]
    """The file it comes from, or ``"default"`` for Pi's built-in value."""
    model_override: bool = False
    """True when it comes from ``compaction.modelOverrides`` for the model asked about."""
    error: str | None = None
    """Pi's message for an invalid value (what :meth:`PiSettings.compaction_settings` raises)."""


class PiSettings(Record):
    """The settings Pi would use in a folder: :meth:`load` reads them; the properties resolve
    each value as Pi's ``SettingsManager`` getters do."""

    cwd: str
    """The folder whose project settings were read (absolute)."""
    agent_dir: str
    """The agent folder whose ``settings.json`` was read (absolute)."""
    project_trusted: bool
    """False: the project's file was not read, as Pi does for a project it does not trust."""
    global_path: str
    project_path: str
    errors: tuple[SettingsFileError, ...]
    """One per settings file that exists but could not be used (Pi skips it and goes on)."""

    def __init__(
        self,
        cwd: str,
        agent_dir: str,
        project_trusted: bool,
        global_path: str,
        project_path: str,
        errors: tuple[SettingsFileError, ...],
        global_values: Mapping[str, object],
        project_values: Mapping[str, object],
    ) -> None:
        super().__init__(cwd, agent_dir, project_trusted, global_path, project_path, errors)
        # what the files hold: not fields (left out of equality and repr), read through value()
        self.__dict__.update(_global=global_values, _project=project_values)
        self._global: Mapping[str, object]
        self._project: Mapping[str, object]

    @classmethod
    def load(
        cls, cwd: str, agent_dir: str | None = None, *, project_trusted: bool | None = None
    ) -> PiSettings:
        """Read ``AGENT_DIR/settings.json`` and ``CWD/.pi/settings.json`` (the latter only when
        the project is trusted)::

            settings = PiSettings.load(os.getcwd())
            for error in settings.errors:
                print("ignored:", error)

        :param cwd: the project folder whose ``.pi/settings.json`` is read.
        :param agent_dir: Pi's agent folder holding the global ``settings.json`` and
            ``trust.json`` (default: ``$PI_CODING_AGENT_DIR``, else ``~/.pi/agent``).
        :param project_trusted: whether the project's settings count. None (the default): Pi's
            rule in its non-interactive modes, :func:`is_project_trusted` (a project whose folder
            has no decision in ``trust.json`` is not trusted unless ``defaultProjectTrust`` is
            ``"always"``). True or False decides it here, as a user's answer to Pi's prompt would.

        Raises :class:`~pisession.SettingsError` when ``trust.json`` must be read and cannot be.
        """
        resolved_cwd = resolve_path(cwd)
        resolved_agent_dir = resolve_path(agent_dir if agent_dir is not None else settings_agent_dir())
        if project_trusted is None:
            project_trusted = is_project_trusted(resolved_cwd, resolved_agent_dir)
        global_path = os.path.join(resolved_agent_dir, "settings.json")
        project_path = os.path.join(resolved_cwd, _PROJECT_CONFIG_DIR, "settings.json")
        global_values, global_error = _read_layer("global", global_path)
        project_values: dict[str, object] = {}
        project_error = None
        if project_trusted:
            project_values, project_error = _read_layer("project", project_path)
        errors = tuple(error for error in (global_error, project_error) if error is not None)
        return cls(
            resolved_cwd,
            resolved_agent_dir,
            project_trusted,
            global_path,
            project_path,
            errors,
            global_values=global_values,
            project_values=project_values,
        )

    def value(self, *keys: str) -> object:
        """The merged value at ``keys`` as Pi sees it (``settings.value("compaction",
        "keepRecentTokens")``), or None when no file sets it. Values are not validated here; an
        object or array is a copy (the settings themselves never change). A value a project's
        ``__proto__`` key supplies is found, as Pi finds it."""
        from ._settings_merge import to_python

        found, _ = self._lookup(keys)
        found = to_python(found)
        return None if found is MISSING else found

    def source(self, *keys: str) -> SettingsScope | None:
        """Which file the merged value at ``keys`` comes from, None when neither sets it (or it
        is ``null``, which Pi reads as unset where it has a default)."""
        found, scope = self._lookup(keys)
        return None if found is MISSING or found is None else scope

    def _lookup(self, keys: tuple[str, ...]) -> tuple[object, SettingsScope | None]:
        # Pi's merged object, read as Pi's getters read it: `settings.compaction?.keepRecentTokens`
        # follows prototypes (a project's `__proto__` key sets one), a missing step is undefined.
        from ._settings_merge import js_get, merge_settings

        merged = self.__dict__.get("_merged")
        if merged is None:
            merged = merge_settings(self._global, self._project)
            self.__dict__["_merged"] = merged
        value: object = merged
        scope: SettingsScope | None = None
        for key in keys:
            value, scope = js_get(value, key, scope)
            if value is MISSING:
                return MISSING, None
        if not keys:
            scope = "project" if self._project else "global"
        return value, scope

    @property
    def session_dir(self) -> str | None:
        """The ``sessionDir`` setting as Pi's ``getSessionDir()`` gives it (``~`` and ``file://``
        expanded, a relative folder left relative), or None when it is unset or empty. Pi's
        command line uses it when neither ``--session-dir`` nor
        ``$PI_CODING_AGENT_SESSION_DIR`` is given::

            SessionManager.list(cwd, PiSettings.load(cwd).session_dir)

        Raises :class:`~pisession.SettingsError` for a value that is not a string."""
        path = self.global_path if self.source("sessionDir") == "global" else self.project_path
        return session_dir_value(self.value("sessionDir"), f"the sessionDir setting of {path}")

    @property
    def compaction_enabled(self) -> bool:
        """``compaction.enabled`` (default true): whether Pi compacts on its own. A manual
        ``/compact`` (and ``pisession compact``) compacts either way."""
        raw = self.value("compaction", "enabled")
        return True if raw is None else js_truthy(raw)

    def compaction_settings(self, model: str | None = None) -> CompactionSettings:
        """Pi's ``getCompactionSettings(model)``: each token setting from
        ``compaction.modelOverrides["provider/modelId"]``, else ``compaction``, else Pi's
        default::

            plan = manager.plan_compaction(settings.compaction_settings("openai/gpt-5"))

        Raises :class:`~pisession.SettingsError` with Pi's message for an invalid value, e.g.
        ``Invalid compaction.keepRecentTokens setting: -1. Expected a non-negative safe integer.``
        """
        from .compaction import CompactionSettings

        return CompactionSettings(
            enabled=self.compaction_enabled,
            reserve_tokens=self._compaction_tokens("reserveTokens", model, _DEFAULT_RESERVE),
            keep_recent_tokens=self._compaction_tokens("keepRecentTokens", model, _DEFAULT_KEEP_RECENT),
        )

    def compaction_source(
        self, field: Literal["reserveTokens", "keepRecentTokens"], model: str | None = None
    ) -> SettingsScope | None:
        """Which file ``compaction_settings(model)`` takes ``field`` from (a model override
        first), None when it is Pi's default."""
        if model and self._model_override(model, field) is not MISSING:
            return self.source("compaction", "modelOverrides", model, field)
        return self.source("compaction", field)

    def _model_override(self, model: str, field: str) -> object:
        from ._settings_merge import is_object, js_get

        found, _ = self._lookup(("compaction", "modelOverrides", model))
        if found is MISSING:
            return MISSING
        if not is_object(found):
            raise SettingsError(
                f'Invalid compaction.modelOverrides["{model}"] setting: {_js_string(found)}. '
                "Expected an object."
            )
        return js_get(found, field)[0]

    def _compaction_tokens(self, field: str, model: str | None, default: int) -> int:
        # Checked in Pi's order: the ordinary setting, then the model's override entry, then its value.
        ordinary, _ = self._lookup(("compaction", field))
        ordinary_tokens = _safe_integer(ordinary)
        if ordinary is not MISSING and (ordinary_tokens is None or ordinary_tokens < 0):
            raise SettingsError(
                f"Invalid compaction.{field} setting: {_js_string(ordinary)}. "
                "Expected a non-negative safe integer."
            )
        override = self._model_override(model, field) if model else MISSING
        override_tokens = _safe_integer(override)
        if override is not MISSING:
            if override_tokens is None or override_tokens < 0:
                raise SettingsError(
                    f'Invalid compaction.modelOverrides["{model}"].{field} setting: '
                    f"{_js_string(override)}. Expected a non-negative safe integer."
                )
            return override_tokens
        return default if ordinary_tokens is None else ordinary_tokens

    @property
    def branch_summary_reserve_tokens(self) -> int:
        """``branchSummary.reserveTokens`` (default 16384): room kept free when Pi's ``/tree``
        summarizes the branch it leaves. Raises :class:`~pisession.SettingsError` for a value
        that is not a safe integer (Pi does not check it, and computes with whatever is there)."""
        raw = self.value("branchSummary", "reserveTokens")
        if raw is None:
            return _DEFAULT_BRANCH_SUMMARY_RESERVE_TOKENS
        tokens = _safe_integer(raw)
        if tokens is None:
            raise SettingsError(
                f"Invalid branchSummary.reserveTokens setting: {_js_string(raw)}. Expected a safe integer."
            )
        return tokens

    def resolved(self, model: str | None = None) -> tuple[ResolvedSetting, ...]:
        """Every compaction and branch-summary setting for ``model`` with its source; an
        invalid one is reported (``error``), not raised::

            for setting in PiSettings.load(cwd).resolved("openai/gpt-5"):
                print(setting.name, setting.value, setting.source)
        """
        enabled_source = self.source("compaction", "enabled") or "default"
        out = [ResolvedSetting("compaction.enabled", self.compaction_enabled, enabled_source)]
        field: Literal["reserveTokens", "keepRecentTokens"]
        for field, default in _TOKEN_DEFAULTS:
            name = f"compaction.{field}"
            try:
                value = self._compaction_tokens(field, model, default)
                overridden = self._model_override(model, field) is not MISSING if model else False
                source = self.compaction_source(field, model) or "default"
            except SettingsError as error:
                source = self.source("compaction", field) or "default"
                out.append(ResolvedSetting(name, None, source, error=str(error)))
                continue
            out.append(ResolvedSetting(name, value, source, overridden))
        name = "branchSummary.reserveTokens"
        source = self.source("branchSummary", "reserveTokens") or "default"
        try:
            out.append(ResolvedSetting(name, self.branch_summary_reserve_tokens, source))
        except SettingsError as error:
            out.append(ResolvedSetting(name, None, source, error=str(error)))
        out.append(
            ResolvedSetting(
                "branchSummary.skipPrompt",
                self.branch_summary_skip_prompt,
                self.source("branchSummary", "skipPrompt") or "default",
            )
        )
        return tuple(out)

    @property
    def branch_summary_skip_prompt(self) -> bool:
        """``branchSummary.skipPrompt`` (default false): Pi's ``/tree`` does not ask whether to
        summarize the branch it leaves."""
        raw = self.value("branchSummary", "skipPrompt")
        return False if raw is None else js_truthy(raw)


class SessionDirChoice(Record):
    """The session folder Pi's command line would use, and where it comes from."""

    path: str | None
    """The folder, or None for Pi's default per-cwd folder under ``AGENT_DIR/sessions``
    (with a folder of its own, Pi creates and lists sessions directly in it)."""
    source: SessionDirSource
    settings: PiSettings | None
    """The settings read to decide (None when ``explicit`` or the variable decided first)."""


def choose_session_dir(
    cwd: str | None = None, explicit: str | None = None, *, agent_dir: str | None = None
) -> SessionDirChoice:
    """Pi's command line's session folder: ``explicit`` (its ``--session-dir``), else
    ``$PI_CODING_AGENT_SESSION_DIR``, else the ``sessionDir`` setting of ``cwd`` (default: the
    current folder), else Pi's default (``path`` None)::

        folder = choose_session_dir().path
        sessions = SessionManager.list(os.getcwd(), folder)

    ``~`` and ``file://`` are expanded in each as Pi expands them. A relative folder from the
    setting is joined to ``cwd`` (Pi started there opens it from there); a relative
    ``explicit`` or variable stays relative to the current folder, where it was typed. Raises
    :class:`~pisession.SettingsError` when the setting is not a string or a ``file://`` URL Pi
    refuses."""
    if explicit:
        return SessionDirChoice(normalize_path_from(explicit, "--session-dir"), "explicit", None)
    # One rule with the library's calls that take no folder (pisession._settings_files).
    folder, source, _ = configured_session_dir(cwd, agent_dir)
    if source == "variable":
        return SessionDirChoice(folder, source, None)
    # Pi reads sessionDir from a project's file whether or not it trusts the project.
    settings = PiSettings.load(cwd if cwd is not None else os.getcwd(), agent_dir, project_trusted=True)
    return SessionDirChoice(folder, source, settings)


# Pi's `api` of a virtual model's messages: they do not name the model the user selected.
_VIRTUAL_MODEL_API = "pi-virtual"


def session_model(manager: HasBranch, settings: PiSettings | None = None) -> str | None:
    """``"provider/modelId"`` of the model Pi resumes ``manager``'s session with, the one whose
    ``compaction.modelOverrides`` apply: the last ``model_change`` on the branch, or the model
    of a later assistant message (Pi's ``getBranchSelection``); else ``settings``'
    ``defaultProvider`` / ``defaultModel``; else None::

        settings = PiSettings.load(manager.get_cwd())
        plan = manager.plan_compaction(settings.compaction_settings(session_model(manager, settings)))

    Pi also needs that model in its registry, with credentials, which only Pi can check."""
    from ._model import AssistantMessage, MessageEntry, ModelChangeEntry

    for entry in reversed(manager.get_branch()):
        if isinstance(entry, ModelChangeEntry):
            return f"{entry.provider}/{entry.model_id}"
        if (
            isinstance(entry, MessageEntry)
            and isinstance(entry.message, AssistantMessage)
            and entry.message.api != _VIRTUAL_MODEL_API
        ):
            return f"{entry.message.provider}/{entry.message.model}"
    if settings is None:
        return None
    provider, model_id = settings.value("defaultProvider"), settings.value("defaultModel")
    if isinstance(provider, str) and isinstance(model_id, str) and provider and model_id:
        return f"{provider}/{model_id}"
    return None


def _canonical(path: str) -> str:
    # Pi's canonicalizePath: the real path, or the path as given where there is none.
    try:
        return os.path.realpath(path, strict=True)
    except (OSError, RuntimeError, ValueError):  # ValueError: a NUL byte, no file's path
        return path


def _read_trust_store(path: str) -> dict[str, object]:
    from ._json import decode_utf8, loads_deep

    try:
        with _open_settings_file(path) as file:
            text = decode_utf8(file.read())
    except (FileNotFoundError, ValueError):  # ValueError: a NUL byte, which no file's path holds
        return {}
    except OSError as error:
        raise SettingsError(f"Failed to read trust store {path}: {error.strerror or error}") from None
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        data = loads_deep(text)
    except ValueError as error:
        raise SettingsError(f"Failed to read trust store {path}: {error}") from None
    if not isinstance(data, dict):
        raise SettingsError(f"Invalid trust store {path}: expected an object")
    for key, value in data.items():
        if value is not True and value is not False and value is not None:
            from ._json import dumps

            raise SettingsError(
                f"Invalid trust store {path}: value for {dumps(key)} must be true, false, or null"
            )
    return data


def is_project_trusted(cwd: str, agent_dir: str | None = None) -> bool:
    """Whether Pi reads the project settings of ``cwd`` without asking: the decision saved in
    ``AGENT_DIR/trust.json`` for ``cwd`` or its nearest parent with one, else the global
    ``defaultProjectTrust`` setting (``"always"``: trusted; ``"never"`` or Pi's default
    ``"ask"``: not trusted, as for Pi with no terminal to ask on)::

        folder = manager.get_cwd()
        settings = PiSettings.load(folder, project_trusted=is_project_trusted(folder))

    Raises :class:`~pisession.SettingsError` with Pi's message when ``trust.json`` cannot be
    read. Trust given "for this session only" or by an extension is not saved, so not seen."""
    resolved_agent_dir = resolve_path(agent_dir if agent_dir is not None else settings_agent_dir())
    data = _read_trust_store(os.path.join(resolved_agent_dir, "trust.json"))
    decisions = [(node_resolve(key), value) for key, value in data.items() if isinstance(value, bool)]
    folder = _canonical(resolve_path(cwd))
    while True:
        here = node_resolve(folder)
        for key, decision in decisions:  # the first key naming the folder decides
            if key == here:
                return decision
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    # Pi asks its startup settings, and only their global file, for the default.
    global_values, _ = _read_layer("global", os.path.join(resolved_agent_dir, "settings.json"))
    return global_values.get("defaultProjectTrust") == "always"
