"""Where the catalog's database file lives, and making sure that file is ours before SQLite opens it.

The catalog holds every session's text, so its file is treated as Pi treats its own folder:
created 0600, never through a symbolic link, never in a folder or file another user owns (a
missing folder is created only inside one we own, or one with the sticky bit such as ``/tmp``).

A file is ours when it is empty or an SQLite database whose header carries :data:`APPLICATION_ID`
(written before the file is switched to WAL, so the main file's header always shows it). Anything
else is never opened for writing: at the default location it is moved aside (the catalog is a
cache, rebuilt from the session files); at a path the user named, it is refused.
"""

from __future__ import annotations

import contextlib
import os
import stat
import time

from .._errors import CatalogError
from .._paths import get_agent_dir, get_sessions_dir, normalize_path, resolve_path

ENV_CATALOG = "PISESSION_CATALOG"
"""Environment variable naming the catalog's database file (default: see :func:`default_catalog_path`)."""

APPLICATION_ID = 0x70694354  # "piCT" in the database header: PRAGMA application_id
_SQLITE_MAGIC = b"SQLite format 3\x00"
_HEADER = 100


def default_catalog_path() -> str:
    """``$PISESSION_CATALOG``, else ``$XDG_CACHE_HOME/pisession/catalog.sqlite3`` (``~/.cache``).

    Raises :class:`~pisession.CatalogError` when neither is set and there is no home folder
    (rather than a ``~`` folder in the current one).
    """
    env = os.environ.get(ENV_CATALOG)
    if env:
        return os.path.abspath(normalize_path(env))
    return _cache_default()


def _cache_default() -> str:
    cache = os.environ.get("XDG_CACHE_HOME")
    if not cache:
        home = os.path.expanduser("~")
        if not os.path.isabs(home):
            raise CatalogError("no home folder to keep the session catalog in: set PISESSION_CATALOG")
        cache = os.path.join(home, ".cache")
    return os.path.join(os.path.abspath(cache), "pisession", "catalog.sqlite3")


def is_movable_default(path: str) -> bool:
    """Whether ``path`` is the catalog's own default location (not one the user named)."""
    if os.environ.get(ENV_CATALOG):
        return False
    try:
        return path == _cache_default()
    except CatalogError:
        return False


def refuse_pi_data(path: str) -> None:
    target = os.path.realpath(path)
    for guarded in (get_agent_dir(), get_sessions_dir()):
        root = os.path.realpath(resolve_path(guarded))
        if target == root or target.startswith(os.path.join(root, "")):
            raise CatalogError(f"the catalog {path} must not be inside Pi's data folder {root}")


def _ours_or_sticky(folder: str, stats: os.stat_result) -> bool:
    return stats.st_uid == os.geteuid() or bool(stats.st_mode & stat.S_ISVTX)


def make_folder(folder: str) -> None:
    """Create the catalog's folder (0700) unless another user owns it or the folder it goes in."""
    missing: list[str] = []
    at = folder
    while True:
        try:
            stats = os.stat(at)
            break
        except FileNotFoundError:
            missing.append(at)
            parent = os.path.dirname(at)
            if parent == at:
                raise
            at = parent
    if not stat.S_ISDIR(stats.st_mode):
        raise CatalogError(f"cannot keep the session catalog in {folder}: {at} is not a folder")
    if missing and not _ours_or_sticky(at, stats):
        raise CatalogError(
            f"not creating the session catalog's folder {folder}: {at} belongs to another user"
        )
    if not missing and stats.st_uid != os.geteuid() and not stats.st_mode & stat.S_ISVTX:
        raise CatalogError(f"not writing the session catalog into {folder}: it belongs to another user")
    for created in reversed(missing):
        with contextlib.suppress(FileExistsError):
            os.mkdir(created, 0o700)


def claim_file(path: str, movable: bool) -> str | None:
    """Make sure ``path`` is a catalog file of ours (creating it 0600 if missing) before SQLite
    opens it; returns a notice when a file that was not ours was moved aside."""
    for attempt in range(2):
        try:
            descriptor = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            pass
        else:
            os.close(descriptor)
            return None
        try:
            descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            continue  # removed meanwhile: create it
        except OSError as error:
            if os.path.islink(path):
                raise CatalogError(
                    f"the session catalog {path} is a symbolic link: not following it"
                ) from None
            raise CatalogError(f"cannot open the session catalog {path}: {error.strerror or error}") from None
        try:
            stats = os.fstat(descriptor)
            header = os.read(descriptor, _HEADER) if stat.S_ISREG(stats.st_mode) else b""
        finally:
            os.close(descriptor)
        if not stat.S_ISREG(stats.st_mode):
            raise CatalogError(f"the session catalog {path} is not a regular file")
        if stats.st_uid != os.geteuid():
            raise CatalogError(f"the session catalog {path} belongs to another user: not using it")
        if stats.st_mode & 0o077:
            os.chmod(path, 0o600)
        why = _not_ours(header)
        if why is None:
            return None
        if not movable or attempt:
            raise CatalogError(f"{path} is {why}: not touching it (name another file for the catalog)")
        notice = move_aside(path, why)
        claim_file(path, movable=False)
        return notice
    raise CatalogError(f"cannot create the session catalog {path}")


def move_aside(path: str, why: str) -> str:
    """Rename a catalog file that cannot be used out of the way (with its WAL); the notice to show."""
    aside = f"{path}.{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.aside"
    os.replace(path, aside)
    for suffix in ("-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.replace(path + suffix, aside + suffix)
    return f"the session catalog {path} was {why}: moved it to {aside} and started a new one"


def _not_ours(header: bytes) -> str | None:
    """Why a file with this header is not a catalog of ours (None: it is, or it is empty)."""
    if not header:
        return None
    if len(header) < _HEADER or not header.startswith(_SQLITE_MAGIC):
        return "not an SQLite database"
    if int.from_bytes(header[68:72], "big") != APPLICATION_ID:
        return "an SQLite database that is not a pisession catalog"
    return None
