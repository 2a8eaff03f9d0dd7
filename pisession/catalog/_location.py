"""Where the catalog's database file lives, and making sure that file is ours before SQLite opens it.

The catalog holds every session's text, so its file is treated as Pi treats its own folder:
created 0600, never through a symbolic link, never in a folder or file another user owns (a
missing folder is created only inside one we own, or one with the sticky bit such as ``/tmp``).

A file is ours when it is empty or an SQLite database whose header carries :data:`APPLICATION_ID`
(written before the file is switched to WAL, so the main file's header always shows it). Anything
else is never opened for writing: at the default location it is moved aside (the catalog is a
cache, rebuilt from the session files); at a path the user named, it is refused.

A catalog of ours that nothing will use again (damaged, the previous releases' ``catalog.sqlite3``
and the copies they moved aside, another version's file unused for :data:`STALE_AFTER`) holds
sessions' text, deleted ones' too: it is removed, its bytes overwritten first (:func:`wipe`), unless
:data:`ENV_KEEP` says to keep it.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import stat
import time

from .._errors import CatalogError
from .._paths import get_agent_dir, get_sessions_dir, normalize_path, resolve_path

ENV_CATALOG = "PISESSION_CATALOG"
"""Environment variable naming the catalog's database file (default: see :func:`default_catalog_path`)."""
ENV_KEEP = "PISESSION_KEEP_OLD_CATALOGS"
"""Environment variable: set (not empty, not ``0``), catalogs that would be removed are kept
(a damaged one moved aside as ``<name>.<time>-<pid>.aside``)."""

APPLICATION_ID = 0x70694354  # "piCT" in the database header: PRAGMA application_id
_SQLITE_MAGIC = b"SQLite format 3\x00"
_HEADER = 100


STALE_AFTER = 30 * 86400
"""Seconds after which another version's catalog nobody used is removed (a file in use has its
mtime brought forward once a day)."""
LEGACY_NAME = "catalog.sqlite3"  # the default file of releases before one file per version
_VERSIONED = re.compile(r"catalog-v(\d+)-u(\d+(?:\.\d+)*)\.sqlite3")
_ASIDE = re.compile(r"catalog(?:-v\d+-u\d+(?:\.\d+)*)?\.sqlite3\.\d{8}-\d{6}-\d+\.aside")
_COMPANIONS = ("-wal", "-journal", "-shm")  # SQLite's files beside a database (-shm holds no rows)


def named_path() -> str | None:
    """``$PISESSION_CATALOG`` made absolute, or None when it is not set."""
    env = os.environ.get(ENV_CATALOG)
    return os.path.abspath(normalize_path(env)) if env else None


def cache_folder() -> str:
    """``$XDG_CACHE_HOME/pisession`` (``~/.cache/pisession``), where the default catalogs live.

    Raises :class:`~pisession.CatalogError` when there is no home folder (rather than a ``~``
    folder in the current one).
    """
    cache = os.environ.get("XDG_CACHE_HOME")
    if not cache:
        home = os.path.expanduser("~")
        if not os.path.isabs(home):
            raise CatalogError("no home folder to keep the session catalog in: set PISESSION_CATALOG")
        cache = os.path.join(home, ".cache")
    return os.path.join(os.path.abspath(cache), "pisession")


def keep_old() -> bool:
    return os.environ.get(ENV_KEEP, "") not in ("", "0")


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


def tidy(path: str, version: tuple[int, str]) -> None:
    """Beside the default catalog ``path`` (of ``version``: schema, Unicode), remove the catalogs
    of ours nothing will use again: the previous releases' ``catalog.sqlite3`` and the copies
    they moved aside, and another version's file unused for :data:`STALE_AFTER` unless it is a
    newer version's (an older release never destroys a newer one's). Marks ``path`` as in use."""
    with contextlib.suppress(OSError):
        if time.time() - os.stat(path).st_mtime > 86400:
            os.utime(path)
    if keep_old():
        return
    folder = os.path.dirname(path)
    ours = (version[0], unicode_key(version[1]))
    try:
        names = os.listdir(folder)
    except OSError:
        return
    for name in names:
        found = _VERSIONED.fullmatch(name)
        if found is not None:
            theirs = (int(found[1]), unicode_key(found[2]))
            if theirs >= ours or not _unused(os.path.join(folder, name)):
                continue
        elif name != LEGACY_NAME and not _ASIDE.fullmatch(name):
            continue
        candidate = os.path.join(folder, name)
        with contextlib.suppress(OSError):
            if is_ours(candidate) and not _open_now(candidate):
                wipe(candidate)


def unicode_key(version: str) -> tuple[int, ...]:
    """A Unicode version (``15.1.0``) as numbers that compare as versions do."""
    return tuple(int(part) for part in version.split(".") if part.isdigit())


def _unused(path: str) -> bool:
    newest = 0.0
    for name in (path, path + "-wal"):
        with contextlib.suppress(OSError):
            newest = max(newest, os.stat(name).st_mtime)
    return time.time() - newest > STALE_AFTER


def _open_now(path: str) -> bool:
    """Whether a process seems to have the database open now: SQLite's shared-memory file is
    there and was written lately (the last connection to close removes it). Removed later."""
    try:
        return time.time() - os.stat(path + "-shm").st_mtime < 3600
    except OSError:
        return False


def is_ours(path: str) -> bool:
    """Whether ``path`` is a catalog of ours: our mark in its header, or (releases before the
    mark) an unmarked database holding exactly the first catalogs' tables."""
    descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        stats = os.fstat(descriptor)
        header = os.read(descriptor, _HEADER) if stat.S_ISREG(stats.st_mode) else b""
    finally:
        os.close(descriptor)
    if stats.st_uid != os.geteuid() or len(header) < _HEADER or not header.startswith(_SQLITE_MAGIC):
        return False
    mark = int.from_bytes(header[68:72], "big")
    return mark == APPLICATION_ID or (mark == 0 and _unmarked_catalog(path))


def _unmarked_catalog(path: str) -> bool:
    from pathlib import Path

    try:  # read-only and immutable: not a byte of it changes, no -wal or -shm is made
        connection = sqlite3.connect(f"{Path(path).as_uri()}?mode=ro&immutable=1", uri=True)
        try:
            tables = {
                name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            }
            if not {"catalog_meta", "files", "messages"} <= tables:
                return False
            meta = dict(connection.execute("SELECT key, value FROM catalog_meta").fetchall())
        finally:
            connection.close()
    except (sqlite3.Error, ValueError):
        return False
    return meta.get("schema") in ("1", "2", "3", "4") and meta.get("mode") in ("fts5", "plain")


def wipe(path: str) -> None:
    """Remove a catalog of ours and SQLite's files beside it, each overwritten with zeros first
    (as ``secure_delete`` does a deleted row): unlinked alone, its pages would stay on the disk
    as they were. Another process still using it reads a damaged database and falls back to the
    files."""
    for name in (path, *(path + suffix for suffix in _COMPANIONS)):
        try:
            descriptor = os.open(name, os.O_WRONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except FileNotFoundError:
            continue
        try:
            stats = os.fstat(descriptor)
            if not stat.S_ISREG(stats.st_mode) or stats.st_uid != os.geteuid():
                continue
            zeros = bytes(1 << 20)
            left = stats.st_size
            while left > 0:
                left -= os.write(descriptor, zeros[: min(left, len(zeros))])
            os.fsync(descriptor)
        finally:
            os.close(descriptor)
        os.unlink(name)


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
