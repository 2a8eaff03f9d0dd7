"""Where sessions live and how their files are found (SPEC §1, §7 discovery)."""

from __future__ import annotations

import os
import re

from ._errors import SettingsError
from ._load import is_session_header, iter_file_lines, open_regular, parse_line
from ._store import make_private_dirs

# typing for type checkers only (they take TYPE_CHECKING for true): importing it at run time
# took 8 % of `pisession tree`'s start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "ENV_AGENT_DIR",
    "ENV_SESSION_DIR",
    "InvalidFileUrlError",
    "resolve_path",
    "node_resolve",
    "normalize_path",
    "get_agent_dir",
    "get_sessions_dir",
    "default_session_dir_path",
    "get_default_session_dir",
    "list_folder",
    "session_file_name",
    "read_session_header",
    "find_most_recent_session",
    "find_by_id",
    "paths_equal",
    "HEADER_SCAN_LIMIT",
]

ENV_AGENT_DIR = "PI_CODING_AGENT_DIR"
ENV_SESSION_DIR = "PI_CODING_AGENT_SESSION_DIR"
HEADER_SCAN_LIMIT = 1024 * 1024


def _home() -> str:
    from pathlib import Path  # start-up: pathlib only when the home folder is asked for

    return str(Path.home())


def _js_normalize(path: str) -> str:
    """Node's ``path.posix.normalize``: ``.`` and ``..`` resolved, repeated ``/`` collapsed, a
    trailing ``/`` kept (``os.path.normpath`` drops it and keeps a leading ``//``)."""
    if not path:
        return "."
    absolute = path.startswith("/")
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if parts and parts[-1] != "..":
                parts.pop()
            elif not absolute:
                parts.append("..")
            continue
        parts.append(part)
    text = "/".join(parts)
    trailing = path.endswith("/")
    if not text:
        return "/" if absolute else ("./" if trailing else ".")
    if trailing:
        text += "/"
    return "/" + text if absolute else text


def normalize_path(value: str | os.PathLike[str]) -> str:
    """Pi's ``normalizePath``: expand ``~`` (``~/x`` as Node's ``join(home, "x")``, which
    normalises) and ``file://`` URLs (as Node's ``fileURLToPath``), nothing else. Raises
    :class:`InvalidFileUrlError` (a :class:`~pisession.SettingsError`) with Node's message
    where Pi throws: a host other than ``localhost``, an encoded ``/``, a bad ``%`` escape."""
    text = os.fspath(value)
    if text == "~":
        return _home()
    if text.startswith("~/"):
        rest = text[2:]
        return _js_normalize(f"{_home()}/{rest}" if rest else _home())
    if text.startswith("file://"):
        from ._file_url import FileUrlError, file_url_to_path

        try:
            return file_url_to_path(text)
        except FileUrlError as error:
            raise InvalidFileUrlError(text, str(error)) from None
    return text


class InvalidFileUrlError(SettingsError):
    """A path given as a ``file://`` URL that Pi's ``normalizePath`` (Node's
    ``fileURLToPath``) refuses: ``pi_message`` is Node's message, word for word."""

    def __init__(self, url: str, pi_message: str, where: str | None = None) -> None:
        import json

        place = f" ({where})" if where else ""
        super().__init__(f"Invalid file URL {json.dumps(url, ensure_ascii=False)}{place}: {pi_message}")
        self.url = url
        self.pi_message = pi_message
        self.where = where

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.url, self.pi_message, self.where))


def normalize_path_from(value: str, where: str) -> str:
    """:func:`normalize_path`, an error naming ``where`` the value comes from."""
    try:
        return normalize_path(value)
    except InvalidFileUrlError as error:
        raise InvalidFileUrlError(error.url, error.pi_message, where) from None


def resolve_path(value: str | os.PathLike[str], base: str | None = None) -> str:
    """Pi's ``resolvePath``: absolute and normalised, symlinks not resolved."""
    return node_resolve(normalize_path(value), normalize_path(base) if base else None)


def node_resolve(text: str, base: str | None = None) -> str:
    """Node's ``path.resolve(base, text)`` (``base`` default: the current folder): absolute and
    normalised, no ``~`` expansion, symlinks not resolved."""
    if not os.path.isabs(text):
        text = os.path.join(base or os.getcwd(), text)
    resolved = os.path.normpath(text)
    if resolved.startswith("//"):  # node's path.resolve collapses the POSIX double slash
        resolved = "/" + resolved.lstrip("/")
    return resolved


def paths_equal(left: str, right: str) -> bool:
    return resolve_path(left) == resolve_path(right)


def get_agent_dir() -> str:
    env = os.environ.get(ENV_AGENT_DIR)
    if env:
        return normalize_path_from(env, f"${ENV_AGENT_DIR}")
    return os.path.join(_home(), ".pi", "agent")


def get_sessions_dir(agent_dir: str | None = None) -> str:
    return os.path.join(agent_dir if agent_dir is not None else get_agent_dir(), "sessions")


def default_session_dir_path(cwd: str | os.PathLike[str], agent_dir: str | None = None) -> str:
    resolved_cwd = resolve_path(cwd)
    resolved_agent = resolve_path(agent_dir if agent_dir is not None else get_agent_dir())
    safe = "--" + re.sub(r"[/\\:]", "-", re.sub(r"^[/\\]", "", resolved_cwd)) + "--"
    return os.path.join(resolved_agent, "sessions", safe)


def default_session_dir(cwd: str | os.PathLike[str], agent_dir: str | None = None) -> str:
    """Pi's session folder for ``cwd`` (``<agent dir>/sessions/--<cwd>--``), without creating it
    (``get_default_session_dir`` creates it, as Pi does)."""
    return default_session_dir_path(cwd, agent_dir)


def get_default_session_dir(cwd: str | os.PathLike[str], agent_dir: str | None = None) -> str:
    """``<agentDir>/sessions/--<cwd>--``, created (mode 0700) if missing, as Pi does."""
    directory = default_session_dir_path(cwd, agent_dir)
    if not os.path.exists(directory):
        make_private_dirs(directory)
    return directory


def list_folder(cwd: str, session_dir: str | None, *, create: bool = True) -> tuple[str, str | None]:
    """The folder Pi's ``list(cwd, session_dir)`` reads (``session_dir``, else ``cwd``'s
    default folder, created as Pi creates it unless ``create`` is false), and the resolved
    ``cwd`` that a session's header must name to be listed: None when the folder is ``cwd``'s
    default one (every session in it is listed)."""
    if not session_dir:
        return (get_default_session_dir(cwd) if create else default_session_dir_path(cwd)), None
    directory = normalize_path(session_dir)
    if paths_equal(directory, default_session_dir_path(cwd)):
        return directory, None
    return directory, resolve_path(cwd)


def session_file_name(iso_timestamp: str, session_id: str) -> str:
    return re.sub(r"[:.]", "-", iso_timestamp) + "_" + session_id + ".jsonl"


class HeaderScanLimitError(Exception):
    pass


def read_session_header(path: str) -> dict[str, Any] | None:
    """The header, if the first parsed line of ``path`` is one, reading at most 1 MiB.

    Raises OSError for unreadable files and HeaderScanLimitError past the bound.
    """
    scanned = 0
    with open_regular(path) as handle:
        pending = b""
        while scanned < HEADER_SCAN_LIMIT:
            chunk = handle.read(min(4096, HEADER_SCAN_LIMIT - scanned))
            if not chunk:
                return _header_candidate(pending) or None
            scanned += len(chunk)
            pending += chunk
            while True:
                cut = pending.find(b"\n")
                if cut < 0:
                    break
                line, pending = pending[:cut], pending[cut + 1 :]
                found = _header_candidate(line)
                if found is not None:
                    return found or None
        if not handle.read(1):
            return _header_candidate(pending) or None
    raise HeaderScanLimitError(f"Session header exceeds {HEADER_SCAN_LIMIT}-byte scan limit: {path}")


def first_session_header(path: str) -> dict[str, Any] | None:
    """The header as a full load finds it, however far into the file: the first parsed line,
    if it is a session header (what ``SessionManager.open`` falls back to past the scan limit)."""
    with open_regular(path) as handle:
        for line in iter_file_lines(handle):
            found = _header_candidate(line)
            if found is not None:
                return found or None
    return None


def _header_candidate(line: bytes) -> dict[str, Any] | None:
    """None: keep scanning; {}: a non-header entry came first; else the header."""
    if not line.strip():
        return None
    entry = parse_line(line)
    if entry is None:
        return None
    return entry if is_session_header(entry) else {}


def read_header_for_discovery(path: str) -> dict[str, Any] | None:
    try:
        return read_session_header(path)
    except (OSError, HeaderScanLimitError):
        # Discovery is best effort: one unreadable or odd file must not hide the others.
        return None


def header_cwd(header: dict[str, Any]) -> str | None:
    cwd = header.get("cwd")
    return cwd if isinstance(cwd, str) else None


def cwd_matches(cwd: str | None, resolved_cwd: str) -> bool:
    return cwd is not None and cwd != "" and resolve_path(cwd) == resolved_cwd


def find_most_recent_session(session_dir: str, cwd: str | None = None) -> str | None:
    """Newest ``.jsonl`` by mtime whose header is valid (and whose cwd matches, if given)."""
    directory = normalize_path(session_dir)
    resolved_cwd = resolve_path(cwd) if cwd else None
    try:
        files = [os.path.join(directory, name) for name in os.listdir(directory) if name.endswith(".jsonl")]
        stamped = sorted(((os.stat(p).st_mtime_ns, p) for p in files), key=lambda item: -item[0])
    except OSError:
        return None
    for _, path in stamped:
        header = read_header_for_discovery(path)
        if header and (resolved_cwd is None or cwd_matches(header_cwd(header), resolved_cwd)):
            return path
    return None


def find_by_id(cwd: str, session_id: str, session_dir: str | None = None) -> str | None:
    """The file of the session with exactly this id, reading headers only."""
    directory = normalize_path(session_dir) if session_dir else get_default_session_dir(cwd)
    filter_cwd = session_dir is not None and not paths_equal(directory, default_session_dir_path(cwd))
    resolved_cwd = resolve_path(cwd)
    try:
        names = os.listdir(directory)
    except OSError:
        return None
    for name in names:
        if not name.endswith(".jsonl"):
            continue
        path = os.path.join(directory, name)
        header = read_header_for_discovery(path)
        if not header or header.get("id") != session_id:
            continue
        if filter_cwd and not cwd_matches(header_cwd(header), resolved_cwd):
            continue
        return path
    return None
