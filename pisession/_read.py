"""Reading a session without the write path: no newline repair, no migration rewrite, no lock.

What read-only tools (the ``pisession`` reading commands, scripts that inspect other people's
files) want: the file is never changed, not even by opening it as Pi would.
"""

from __future__ import annotations

import os

from ._load import read_session_entries
from ._manager import SessionManager
from ._paths import HeaderScanLimitError, default_session_dir
from ._paths import read_session_header as _read_header

# typing for type checkers only (they take TYPE_CHECKING for true): importing it at run time
# took 8 % of `pisession tree`'s start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# default_session_dir lives in _paths (listing needs it without the manager); kept importable here
__all__ = ["read_session", "read_session_entries", "read_session_header", "default_session_dir"]


def read_session(
    path: str | os.PathLike[str], *, low_memory: bool = False, allow_empty: bool = False
) -> SessionManager:
    """A read-only view of a session file: an in-memory manager holding its entries (an old
    version migrated in memory only), with the header's cwd. The file is never written::

        manager = read_session("session.jsonl")
        print(manager.get_session_name(), len(manager.get_branch()))

    The view follows the file without writing it: :meth:`~SessionManager.refresh` returns what
    other writers (Pi) appended since, each entry once, and :meth:`~SessionManager.follow`
    yields them as they arrive (``AsyncSessionManager(read_session(path)).follow()`` in asyncio
    code). A last line still being written is taken once it is whole. A file that shrank or was
    replaced by the same session is read again (only entries not seen before are returned); one
    that now holds another session raises :class:`SessionReplacedError`.

    Appends go to memory only. For a version-1 file the entry ids are assigned on every read.

    ``allow_empty=True``: an empty file, or one whose header line is still being written (Pi
    creating the session), gives a view with no header and no entries yet, which takes them as
    they arrive; otherwise such a file raises :class:`InvalidSessionError`.

    ``low_memory=True`` (a version-3 file; an older one is read in full all the same) keeps the
    file open and each entry's line in it until the entry is first read, as
    ``SessionManager.open(path, low_memory=True)`` does: a line the file no longer holds as it
    was raises :class:`SessionChangedError` when read::

        manager = read_session("big.jsonl", low_memory=True)
    """
    name = os.fspath(path)
    if low_memory:
        manager = SessionManager._read_low_memory(name)
        if manager is not None:
            return manager
    return SessionManager._read_view(name, allow_empty=allow_empty)


def read_session_header(path: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The session header of ``path`` read from its first MiB, or None when the file's first JSON
    object is not a header or lies beyond that bound. ``OSError`` if the file cannot be read."""
    try:
        return _read_header(os.fspath(path))
    except HeaderScanLimitError:
        return None
