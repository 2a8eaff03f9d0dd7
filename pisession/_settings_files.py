"""Reading Pi's settings files, and the one rule for where Pi's sessions are when no folder is
given (``$PI_CODING_AGENT_SESSION_DIR``, else the ``sessionDir`` setting, else Pi's default).

Below :mod:`pisession.settings` so that the usage report, the dataset and the catalog, which sit
under it, find sessions where the CLI finds them without importing it."""

from __future__ import annotations

import errno
import os
import stat
from typing import BinaryIO, Literal

from ._errors import SettingsError
from ._js import MISSING, js_join_item, js_truthy
from ._paths import ENV_SESSION_DIR, get_agent_dir, normalize_path_from, resolve_path
from ._record import Record

__all__ = [
    "SettingsScope",
    "SettingsFileError",
    "SessionDirSource",
    "js_string",
    "open_settings_file",
    "read_layer",
    "session_dir_value",
    "configured_session_dir",
    "pi_session_dir",
]

SettingsScope = Literal["global", "project"]
"""Which settings file a value or an error comes from."""

SessionDirSource = Literal["explicit", "variable", "global", "project", "default"]
"""Where Pi's command line takes its session folder from: ``--session-dir``,
``$PI_CODING_AGENT_SESSION_DIR``, the ``sessionDir`` setting of either file, or Pi's default."""

_PROJECT_CONFIG_DIR = ".pi"


class SettingsFileError(Record):
    """A settings file Pi would skip (it exists but cannot be read or is not a JSON object Pi
    accepts); ``str()`` names the file and the reason."""

    scope: SettingsScope
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


def js_string(value: object) -> str:
    """JavaScript's ``String(value)``, as Pi's messages print a setting's value."""
    return "null" if value is None else js_join_item(value)


def open_settings_file(path: str) -> BinaryIO:
    """Open a settings file for reading, without waiting on it: a FIFO (or socket, or device
    other than ``/dev/null``) is an OSError, where Pi's ``readFileSync`` would block until a
    writer comes, forever; a directory is Pi's EISDIR."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
        if not stat.S_ISREG(mode) and not (stat.S_ISCHR(mode) and os.path.samefile(path, os.devnull)):
            raise OSError(errno.EINVAL, "not a regular file", path)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_layer(scope: SettingsScope, path: str) -> tuple[dict[str, object], SettingsFileError | None]:
    from ._json import decode_utf8, loads_deep

    try:
        with open_settings_file(path) as file:
            data = file.read()
    except (FileNotFoundError, ValueError):  # ValueError: a NUL byte, a path Node's existsSync calls absent
        return {}, None
    except OSError as error:
        return {}, SettingsFileError(scope, path, error.strerror or str(error))
    text = decode_utf8(data)
    if not text:
        return {}, None  # Pi reads an empty file as no settings, without an error
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        value = loads_deep(text)
    except ValueError as error:
        return {}, SettingsFileError(scope, path, f"not valid JSON ({error})")
    if isinstance(value, dict):
        return value, None
    if isinstance(value, list):
        return {}, None  # Pi spreads an array into an object: index keys, none of them a setting
    # Pi's migration step asks `"queueMode" in settings`, which throws for a JSON primitive.
    return {}, SettingsFileError(
        scope, path, f"Cannot use 'in' operator to search for 'queueMode' in {js_string(value)}"
    )


def session_dir_value(raw: object, where: str = "the sessionDir setting") -> str | None:
    """A ``sessionDir`` setting as Pi's ``getSessionDir()`` gives it (``~`` and ``file://``
    expanded, a relative folder left relative), None when unset or empty. Raises
    :class:`~pisession.SettingsError` for a value that is not a string, or a ``file://`` URL Pi
    refuses (the message naming ``where`` the value comes from)."""
    if raw is MISSING or not js_truthy(raw):
        return None
    if not isinstance(raw, str):
        raise SettingsError(f"Invalid sessionDir setting: {js_string(raw)}. Expected a string.")
    return normalize_path_from(raw, where)


def configured_session_dir(
    cwd: str | None = None, agent_dir: str | None = None
) -> tuple[str | None, SessionDirSource, tuple[SettingsFileError, ...]]:
    """Where Pi's command line looks for sessions when no ``--session-dir`` is given, where it
    comes from, and the settings files that could not be used: ``$PI_CODING_AGENT_SESSION_DIR``,
    else the ``sessionDir`` of the global and ``cwd``'s project settings merged as Pi merges them
    (the project's read whether or not Pi trusts the project, as Pi does for this one setting;
    a ``__proto__`` key counts, as in Pi), a relative folder joined to ``cwd`` (Pi started there
    opens it from there), else None (Pi's default)."""
    from ._settings_merge import js_get, merge_settings, to_python

    variable = os.environ.get(ENV_SESSION_DIR)
    if variable:
        return normalize_path_from(variable, f"${ENV_SESSION_DIR}"), "variable", ()
    resolved_cwd = resolve_path(cwd if cwd is not None else os.getcwd())
    resolved_agent = resolve_path(agent_dir if agent_dir is not None else get_agent_dir())
    global_path = os.path.join(resolved_agent, "settings.json")
    project_path = os.path.join(resolved_cwd, _PROJECT_CONFIG_DIR, "settings.json")
    global_values, global_error = read_layer("global", global_path)
    project_values, project_error = read_layer("project", project_path)
    errors = tuple(error for error in (global_error, project_error) if error is not None)
    raw, scope = js_get(merge_settings(global_values, project_values), "sessionDir", None)
    raw = to_python(raw)
    if raw is MISSING or raw is None:
        return None, "default", errors
    path = global_path if scope == "global" else project_path
    folder = session_dir_value(raw, f"the sessionDir setting of {path}")
    if folder is None:
        return None, "default", errors
    return os.path.join(resolved_cwd, folder), scope or "default", errors


def pi_session_dir(cwd: str | None = None, agent_dir: str | None = None) -> str | None:
    """The session folder a pisession call with no folder argument reads, as ``pisession``'s
    commands and Pi's command line choose it: ``$PI_CODING_AGENT_SESSION_DIR``, else the
    ``sessionDir`` setting of ``cwd`` (default: the current folder), else None (Pi's default
    ``AGENT_DIR/sessions/``). Settings files that cannot be used are skipped, as Pi skips them."""
    return configured_session_dir(cwd, agent_dir)[0]
