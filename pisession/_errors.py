"""One error hierarchy for everything pisession raises on purpose."""

from __future__ import annotations

__all__ = [
    "PisessionError",
    "InvalidSessionError",
    "EntryNotFoundError",
    "InvalidContextEditError",
    "InvalidSessionIdError",
    "SessionExistsError",
    "WireFormatError",
    "SymlinkRefusedError",
    "CatalogError",
]


class PisessionError(Exception):
    """Base class of every error pisession raises deliberately."""


class InvalidSessionError(PisessionError):
    """A file is not a Pi session (its first parsed line is not a session header)."""



class EntryNotFoundError(PisessionError, KeyError):
    """An operation named an entry id the session does not hold."""

    def __str__(self) -> str:  # KeyError quotes its message; keep Pi's plain text
        return str(self.args[0]) if self.args else ""


class InvalidContextEditError(PisessionError, ValueError):
    """A context edit failed one of Pi's checks (replacement shape, branch, target kind)."""


class InvalidSessionIdError(PisessionError, ValueError):
    """A caller-supplied session id does not match Pi's pattern (this also rules out path traversal)."""


class SessionExistsError(PisessionError, FileExistsError):
    """The file a new session would be written to already exists."""



class WireFormatError(PisessionError, ValueError):
    """A wire dict cannot be read as the model object asked for."""


class SymlinkRefusedError(PisessionError, OSError):
    """A session file or its lock file is a symbolic link: pisession never writes through one.

    Writing through a link would put the data (or the lock) somewhere else than the session's
    folder, and two spellings of one session would take two different locks.
    """


class CatalogError(PisessionError):
    """The session catalog cannot be used (a foreign or unreadable database, a bad search query).

    Listing never raises it: a catalog that fails falls back to reading the files.
    """
