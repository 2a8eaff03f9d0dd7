"""What an export may write or delete in its output folder, and what it takes from the folder.

The output folder may come from anywhere (shared, downloaded, restored from a backup), so
nothing read from it is an instruction: the manifest is checked field by field against what
pisession writes before any of it names a path, every path written or deleted is built from
plain names (one path component each) and reached without following a symbolic link, and the
start-up clean-up removes only regular files named as pisession names its own temporaries.
The output folder itself may be a link (the user named it); nothing below it may be.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import stat
from collections.abc import Callable, Iterable
from typing import Any

from .._errors import PisessionError

__all__ = [
    "DatasetError",
    "MANIFEST",
    "JOURNAL",
    "LOCK",
    "temporary",
    "is_temporary",
    "folder",
    "checked_folders",
    "remove_temporaries",
    "ours_only",
    "check_manifest",
    "check_row",
    "read_journal",
    "journal_line",
    "STEM",
]

MANIFEST = ".pisession-dataset.json"
JOURNAL = ".pisession-dataset.pending"  # file names installed since the manifest was last saved
LOCK = ".pisession-dataset.lock"


class DatasetError(PisessionError):
    """The output folder cannot be used: not a folder, not empty and not a dataset, locked by
    another export past the timeout, its manifest unreadable or not as pisession writes it, or
    a folder in it a symbolic link."""


# -------------------------------------------------------------------- temporaries

# ".<final name>.<pid>.<12 hex>.tmp": hidden (engines skip names starting with "." or "_")
_TEMPORARY = re.compile(
    r"\.(session\.parquet|\.pisession-dataset\.json)\.[0-9]+\.[0-9a-f]{12}\.tmp", re.ASCII
)


def temporary(folder: str, name: str) -> str:
    """A new temporary name for ``name`` in ``folder``, removed by the next run if left."""
    return os.path.join(folder, f".{name}.{os.getpid()}.{os.urandom(6).hex()}.tmp")


def is_temporary(name: str) -> bool:
    return _TEMPORARY.fullmatch(name) is not None


# -------------------------------------------------------------------- folders


def _plain(name: str) -> bool:
    """One path component that names an entry of its folder: not empty, ``.`` or ``..``, no
    separator, no NUL."""
    return (
        name not in ("", ".", "..")
        and "/" not in name
        and "\x00" not in name
        and (os.altsep is None or os.altsep not in name)
        and (os.sep == "/" or os.sep not in name)
    )


def folder(out: str, *names: str, create: bool = False) -> str:
    """``out/names...``, each name a plain component and each folder on the way a real folder
    (created when ``create``), never a symbolic link: a path built here stays inside ``out``.
    Raises :class:`DatasetError` for a link, a file or a name that is not plain; ``OSError``
    as the file system gives it (``FileNotFoundError``: a folder missing and not created)."""
    path = out
    for name in names:
        if not _plain(name):
            raise DatasetError(f"{_show(name)} is not a plain file name: refused under {out}")
        path = os.path.join(path, name)
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            if not create:
                raise
            with contextlib.suppress(FileExistsError):  # made meanwhile (a worker beside this one)
                os.mkdir(path)
            mode = os.lstat(path).st_mode
        if stat.S_ISLNK(mode):
            raise DatasetError(
                f"{path} is a symbolic link: pisession does not write through links in a dataset folder"
            )
        if not stat.S_ISDIR(mode):
            raise DatasetError(f"{path} is not a folder: pisession does not write there")
    return path


def checked_folders(out: str, tables: Iterable[str]) -> list[str]:
    """The partition folders of every table, after checking that neither a table's folder nor
    a partition folder is a link (:class:`DatasetError`): what an export writes in."""
    found: list[str] = []
    for table in tables:
        try:
            path = folder(out, table)
        except FileNotFoundError:
            continue
        with os.scandir(path) as entries:
            for entry in entries:
                if entry.is_symlink() and entry.name.startswith("project="):
                    raise DatasetError(
                        f"{entry.path} is a symbolic link: pisession does not write through links "
                        "in a dataset folder"
                    )
                if entry.is_dir(follow_symlinks=False):
                    found.append(entry.path)
    return found


def remove_temporaries(out: str, tables: Iterable[str]) -> None:
    """Remove the temporaries an interrupted export left: only regular files named as
    :func:`temporary` names them, only in ``out`` and its partition folders."""
    for where in [out, *checked_folders(out, tables)]:
        with os.scandir(where) as entries:
            names = [e.name for e in entries if is_temporary(e.name) and e.is_file(follow_symlinks=False)]
        for name in names:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(os.path.join(where, name))


def ours_only(out: str) -> bool:
    """Whether ``out`` holds nothing but what a first export makes before its first file: the
    lock and the manifest's temporaries (an export killed right then)."""
    return all(name == LOCK or is_temporary(name) for name in os.listdir(out))


# -------------------------------------------------------------------- the manifest

# What :func:`pisession.dataset._export.file_stem` gives (a safe id of at most 128 characters,
# or "id-" and 32 hex digits), and a path hash after it where two sources share a name.
STEM = re.compile(
    r"(?:[A-Za-z0-9](?:[A-Za-z0-9._-]{0,126}[A-Za-z0-9])?|id-[0-9a-f]{32})(?:-[0-9a-f]{12})?", re.ASCII
)


def _show(value: Any) -> str:
    """A value in a one-line message, cut short: a manifest may hold anything, of any length."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


class _Bad(Exception):
    """One field not as pisession writes it (caught and named with its file)."""


def _int(value: Any) -> int:
    if type(value) is not int:
        raise _Bad(f"{_show(value)} is not a whole number")
    return value


def _any_text(value: Any) -> str:
    if not isinstance(value, str):
        raise _Bad(f"{_show(value)} is not text")
    return value


def _text(value: Any) -> str:
    text = _any_text(value)
    if "\x00" in text:
        raise _Bad(f"{_show(value)} holds a NUL")
    return text


def _path(value: Any) -> str:
    text = _text(value)
    if not os.path.isabs(text):
        raise _Bad(f"{_show(value)} is not an absolute path")
    return text


def _fingerprint(value: Any) -> list[int]:
    if not isinstance(value, list) or len(value) != 4:
        raise _Bad(f"{_show(value)} is not a file's fingerprint (device, inode, size, mtime)")
    for part in value:
        _int(part)
    return value


def _stem(value: Any) -> str:
    if not isinstance(value, str) or STEM.fullmatch(value) is None:
        raise _Bad(f"{_show(value)} is not a file name pisession writes")
    return value


def _optional(check: Callable[[Any], Any]) -> Callable[[Any], Any]:
    def optional(value: Any) -> Any:
        return None if value is None else check(value)

    return optional


# Every field of a manifest row and what it must hold (a new field is added here, or every
# manifest holding it is refused).
_ROW: dict[str, Callable[[Any], Any]] = {
    "fp": _fingerprint,
    "checked": _int,
    "project": _any_text,  # what the header says (the partition name made of it is checked)
    "stem": _optional(_stem),
    # as the session's header gives them (any text: never a path written or deleted)
    "cwd": _optional(_any_text),
    "parent": _optional(_any_text),
    "parent_fp": _optional(_fingerprint),
}
# Fields a row may lack (a manifest written before they were): a file's ctime, and the
# checksum of the bytes read, as the change detection compares them.
_ROW_OPTIONAL: dict[str, Callable[[Any], Any]] = {
    "ctime": _optional(_int),
    "crc": _optional(_int),
    "parent_ctime": _optional(_int),
    # the name of the session folder holding the file (the project of a header without a cwd;
    # never a path written or deleted: the partition comes from `project`)
    "folder": _optional(_any_text),
    # a small session's bundle: the file name its rows share with others' (format 3 on), and
    # its id, by which they are found in it (any text, as the header gives it: never a file
    # name, which file_stem makes of it, hashing an id that is not safe)
    "bundle": _optional(_stem),
    "session": _optional(_any_text),
}


_ROW_NAMES = frozenset(_ROW)
_ROW_ALL_NAMES = _ROW_NAMES | frozenset(_ROW_OPTIONAL)
_ROW_CHECKS = (*_ROW.items(), *_ROW_OPTIONAL.items())


def _where(key: Any) -> str:
    return f"sessions[{_show(key)}]"


def check_row(key: Any, row: Any, partition: Callable[[str], str]) -> None:
    """Raise ``_Bad`` unless ``key`` (a source path) and ``row`` are as pisession writes them;
    ``partition``: the partition folder name of a project. (Every row of every manifest, at the
    start of each export: where a row is sound, nothing is formatted.)"""
    try:
        _path(key)
    except _Bad as error:
        raise _Bad(f"{_where(key)}: {error}") from None
    if not isinstance(row, dict):
        raise _Bad(f"{_where(key)} is not an object")
    names = row.keys()
    if not (names >= _ROW_NAMES and names <= _ROW_ALL_NAMES):
        missing = [name for name in _ROW if name not in row]
        extra = [name for name in row if name not in _ROW_ALL_NAMES]
        what = "missing " + ", ".join(missing) if missing else "unknown " + ", ".join(extra)
        raise _Bad(f"{_where(key)}: {what}")
    for name, check in _ROW_CHECKS:
        if name in row:
            try:
                check(row[name])
            except _Bad as error:
                raise _Bad(f"{_where(key)}.{name}: {error}") from None
    if row.get("bundle") is not None and (row["stem"] is not None or row.get("session") is None):
        raise _Bad(f"{_where(key)}: a bundled session has no stem of its own and an id")
    name = partition(row["project"])
    if not _plain(name):
        raise _Bad(f"{_where(key)}.project: {_show(row['project'])} does not make a plain folder name")


def check_manifest(
    data: Any, path: str, partition: Callable[[str], str], owner: Callable[[str, str], Any]
) -> None:
    """Raise :class:`DatasetError` (naming ``path``, one line) unless ``data`` is a manifest as
    pisession writes it: ``{"format": int, "sessions": {source path: row}}``, every row's
    fields of their type, stems and partition folders plain names pisession makes, no two rows
    owning one file (``owner``: the key two rows may not share)."""
    try:
        if not isinstance(data, dict):
            raise _Bad("not a JSON object")
        if not {"format", "sessions"} <= set(data) <= {"format", "sessions", "partitions"}:
            raise _Bad(f"keys {_show(sorted(data))}, not format, sessions (and partitions)")
        _int(data["format"])
        # a partition value an engine reads -> the whole project, where its folder's name had to
        # be cut: any text, as a row's project; told to readers, never used to form a path
        partitions = data.get("partitions", {})
        if not isinstance(partitions, dict):
            raise _Bad("partitions is not an object")
        for project in partitions.values():
            _any_text(project)
        sessions = data["sessions"]
        if not isinstance(sessions, dict):
            raise _Bad("sessions is not an object")
        owners: set[Any] = set()
        bundles: dict[Any, set[str]] = {}  # a bundle's file -> the session ids in it
        for key, row in sessions.items():
            check_row(key, row, partition)
            if row["stem"] is not None:
                key_ = owner(row["project"], row["stem"])
                if key_ in owners:
                    raise _Bad(f"sessions[{_show(key)}]: a second row for the file {_show(row['stem'])}")
                owners.add(key_)
            elif row.get("bundle") is not None:
                ids = bundles.setdefault(owner(row["project"], row["bundle"]), set())
                if row["session"] in ids:
                    raise _Bad(
                        f"sessions[{_show(key)}]: a second row for the session {_show(row['session'])}"
                    )
                ids.add(row["session"])
        if not owners.isdisjoint(bundles):
            raise _Bad("a session's own file has the name of a bundle")
    except _Bad as error:
        raise DatasetError(
            f"the dataset manifest {path} is not as pisession writes it ({error}): "
            "nothing was changed; export to a new folder, or delete this one"
        ) from None


def read_journal(path: str, partition: Callable[[str], str]) -> list[tuple[str, str]]:
    """The (project, stem) pairs in the journal at ``path`` (none if it is missing); lines
    that are not as pisession writes them (a line cut short by a full disk) are ignored: an
    entry only ever leads to deleting its own files, so nothing unchecked is acted on."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except FileNotFoundError:
        return []
    except OSError as error:
        raise DatasetError(f"cannot read {path}: {error.strerror or error}") from None
    with open(fd, encoding="utf-8", errors="replace") as handle:
        try:
            if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                raise DatasetError(f"{path} is not a regular file: pisession does not use it")
            lines = handle.read().splitlines()
        except OSError as error:
            raise DatasetError(f"cannot read {path}: {error.strerror or error}") from None
    pairs = []
    for line in lines:
        try:
            value = json.loads(line)
        except ValueError:
            continue
        if not (isinstance(value, list) and len(value) == 2 and all(isinstance(v, str) for v in value)):
            continue
        project, stem = value
        if STEM.fullmatch(stem) is None or not _plain(partition(project)) or "\x00" in project:
            continue
        pairs.append((project, stem))
    return pairs


def journal_line(project: str, stem: str) -> bytes:
    return (json.dumps([project, stem], ensure_ascii=True) + "\n").encode("ascii")
