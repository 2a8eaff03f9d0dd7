"""Finding and loading the session a SESSION argument names (a path, an id or an id prefix)."""

from __future__ import annotations

import argparse
import os
import time
from collections.abc import Callable, Sequence

from pisession import default_session_dir

from .output import CliError, note

# typing for type checkers only (they take TYPE_CHECKING for true): importing it at run time
# took 8 % of `pisession tree`'s start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:  # discovery's attrs classes only when a SESSION argument is an id
    from typing import TextIO

    from pisession import SessionInfo, SessionManager
    from pisession.settings import SettingsFileError

def session_dir(args: argparse.Namespace, *, cwd: str | None = None) -> str | None:
    """The session folder as Pi's command line picks it: ``--session-dir`` >
    ``$PI_CODING_AGENT_SESSION_DIR`` > the ``sessionDir`` setting of ``cwd`` (default: the
    current folder) > Pi's default (None). A settings file that cannot be used is said on stderr."""
    from pisession.settings import choose_session_dir, settings_agent_dir  # only where a folder is chosen

    explicit = getattr(args, "session_dir", None)
    choice = choose_session_dir(cwd, str(explicit) if explicit else None)
    if choice.settings is not None:
        warn_settings_errors(args, choice.settings.errors)
    if choice.path is not None and "\0" in choice.path:
        # No file name holds one: Pi's own file calls throw on it (ERR_INVALID_ARG_VALUE).
        raise CliError(
            f"the session folder {choice.path!r} ({_SOURCES[choice.source]}) holds a NUL byte, "
            "which no folder name can"
        )
    if choice.path is None and "\0" in (agent_dir := settings_agent_dir()):
        raise CliError(
            f"the agent folder {agent_dir!r} ($PI_CODING_AGENT_DIR), where Pi's default session "
            "folders are, holds a NUL byte, which no folder name can"
        )
    return choice.path


_SOURCES = {
    "explicit": "--session-dir",
    "variable": "$PI_CODING_AGENT_SESSION_DIR",
    "global": "the sessionDir setting of the global settings",
    "project": "the sessionDir setting of the project settings",
    "default": "Pi's default",
}


def warn_settings_errors(args: argparse.Namespace, errors: Sequence[SettingsFileError]) -> None:
    """Each unusable settings file once per command, as Pi warns about them at start-up."""
    warned: set[str] = args.__dict__.setdefault("_settings_warned", set())
    for error in errors:
        if str(error) not in warned:
            warned.add(str(error))
            note(f"warning: settings file ignored, as Pi ignores it: {error}")


def _looks_like_path(arg: str) -> bool:
    return "/" in arg or "\\" in arg or arg.endswith(".jsonl") or os.path.isfile(arg)


def _list_local(cwd: str, directory: str | None) -> list[SessionInfo]:
    # Pi's own default folder is created by list(); a read-only command must not create it.
    folder = directory or default_session_dir(cwd)
    if not os.path.isdir(folder):
        return []
    from pisession import SessionManager  # the manager's modules only where a session is read

    return SessionManager.list(cwd, folder)


def _pick(arg: str, infos: Sequence[SessionInfo], where: str) -> str | None:
    # A header id that is not a string (Pi lists such a file) is never matched by a SESSION argument.
    named = [info for info in infos if isinstance(info.id, str)]
    exact = [info for info in named if info.id == arg]
    if exact:
        return exact[0].path
    matches = [info for info in named if info.id.startswith(arg)]
    if len(matches) > 1:
        shown = ", ".join(info.id for info in matches[:5]) + (" ..." if len(matches) > 5 else "")
        raise CliError(
            f"ambiguous session id prefix {arg!r}: {len(matches)} sessions {where} match ({shown})"
        )
    return matches[0].path if matches else None


def sessions_root_exists(directory: str | None) -> bool:
    if directory:
        return os.path.isdir(directory)
    return os.path.isdir(os.path.dirname(default_session_dir(os.getcwd())))


def resolve(args: argparse.Namespace, arg: str | None = None) -> str:
    """The file a SESSION argument names: a path, else a session id or unique id prefix, looked up
    in the cwd's session folder first and then in every project's (as Pi's ``--session`` does)."""
    value = arg if arg is not None else str(args.session)
    if not value:
        raise CliError("empty SESSION argument")
    if _looks_like_path(value):
        path = os.path.abspath(os.path.expanduser(value))
        if not os.path.exists(path):
            if os.path.islink(path):  # the name is there: say why it reaches no file
                raise CliError(f"{value} is a symbolic link to no file (its target is missing, or it loops)")
            raise CliError(f"no such file: {value}")
        if os.path.isdir(path):
            raise CliError(f"{value} is a directory, not a session file")
        return path
    directory = session_dir(args)
    cwd = os.getcwd()
    found = _pick(value, _list_local(cwd, directory), "of this folder")
    if found is None:
        from pisession import SessionManager

        everywhere = SessionManager.list_all(directory) if sessions_root_exists(directory) else []
        found = _pick(value, everywhere, "in all projects")
    if found is None:
        where = directory or default_session_dir(cwd)
        raise CliError(
            f"no session file or session id matching {value!r} (looked in {where} and all projects)"
        )
    return found


def load(path: str, *, quiet: bool = False) -> SessionManager:
    """A read-only view of a session: an in-memory manager, migrated in memory if the file is old."""
    from pisession import SessionManager, read_session_entries

    entries = read_session_entries(path)
    version = entries[0].get("version")
    if not quiet and (version is None or (isinstance(version, (int, float)) and version < 2)):
        note(
            f"note: {path} is a version-1 session, migrated in memory only: its entry ids are "
            "assigned now and change on every run (`pisession migrate` rewrites the file)"
        )
    cwd = entries[0].get("cwd")
    manager = SessionManager.in_memory(cwd if isinstance(cwd, str) and cwd else os.getcwd(), entries=entries)
    manager._read_from = os.path.abspath(path)  # errors name the file
    return manager


def progress(stream: TextIO) -> Callable[[int, int], None] | None:
    """A progress line on a terminal while ``ls`` scans many sessions."""
    if not (hasattr(stream, "isatty") and stream.isatty()):
        return None
    started = time.monotonic()

    def report(loaded: int, total: int) -> None:
        if total < 50 or time.monotonic() - started < 0.2:
            return
        if loaded == total:
            stream.write("\r\033[K")
        elif loaded % 10 == 0:
            stream.write(f"\rpisession: scanning sessions {loaded}/{total}")
        stream.flush()

    return report
