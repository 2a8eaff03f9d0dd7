"""One error hierarchy for everything pisession raises on purpose."""

from __future__ import annotations

__all__ = [
    "PisessionError",
    "InvalidSessionError",
    "SessionReplacedError",
    "SessionChangedError",
    "EntryNotFoundError",
    "InvalidContextEditError",
    "InvalidSessionIdError",
    "SessionExistsError",
    "WireFormatError",
    "UnwritableEntryError",
    "SymlinkRefusedError",
    "LockFileAccessError",
    "SessionClosedError",
    "SessionReadOnlyError",
    "SessionNotWrittenWarning",
    "LineTooLongWarning",
    "NothingToCompactError",
    "AlreadyCompactedError",
    "SummarizerCommandError",
    "EmptySummaryError",
    "BranchChangedError",
    "CatalogError",
    "ModelError",
    "CredentialsError",
    "ModelRequestError",
    "SettingsError",
    "UsageQueryError",
    "SourceFormatError",
]


class PisessionError(Exception):
    """Base class of every error pisession raises deliberately."""


class InvalidSessionError(PisessionError):
    """A file is not a Pi session (its first parsed line is not a session header)."""


class SessionReplacedError(InvalidSessionError):
    """The file at a session's path now holds another session (another header id): it was
    replaced behind the manager's back. Nothing is written to it; open it anew to use it."""


class SessionChangedError(InvalidSessionError):
    """A session opened with ``low_memory=True`` reads an entry's line back from the file when
    the entry is first read, and the file no longer holds that line as it was when it was opened
    (truncated or rewritten in place, or, after the manager was closed, replaced or removed).
    The message names the file and the entry; open the file anew to read it as it is now."""



class _InSession(PisessionError):
    """An error about one session's entries: ``args[0]`` is Pi's own message (``Entry X not
    found``), ``where`` the session it happened in (its file, or ``an in-memory session``), and
    the text is both: ``Entry X not found in /path/session.jsonl``."""

    def __init__(self, message: str = "", *, where: str | None = None) -> None:
        super().__init__(message)
        self.where = where

    def __str__(self) -> str:  # KeyError quotes its message; keep Pi's plain text
        text = str(self.args[0]) if self.args else ""
        return text if self.where is None else f"{text} in {self.where}"

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild, (type(self), self.args, self.where))


def _rebuild(cls: type[_InSession], args: tuple[object, ...], where: str | None) -> _InSession:
    error = cls.__new__(cls)
    error.args = args
    error.where = where
    return error


class EntryNotFoundError(_InSession, KeyError):
    """An operation named an entry id the session does not hold. ``str(error)`` names the
    session: ``Entry nope not found in /path/session.jsonl`` (``args[0]`` is Pi's message)."""


class InvalidContextEditError(_InSession, ValueError):
    """A context edit failed one of Pi's checks (replacement shape, branch, target kind); the
    message names the session, as :class:`EntryNotFoundError`'s does."""


class InvalidSessionIdError(PisessionError, ValueError):
    """A caller-supplied session id does not match Pi's pattern (this also rules out path traversal)."""


class SessionExistsError(PisessionError, FileExistsError):
    """The file a new session would be written to already exists."""



class WireFormatError(PisessionError, ValueError):
    """A wire dict cannot be read as the model object asked for."""


class UnwritableEntryError(PisessionError, ValueError):
    """An entry cannot be written as a JSON line: it is nested deeper than 10,000 levels (or
    holds itself). Pi 1.6.0 fails on such an entry too (its ``JSON.stringify`` runs out of
    stack), so a fork, an extraction or a migration that would copy it writes nothing; opening a
    file whose migration would is read-only (:class:`SessionNotWrittenWarning`)."""


class SymlinkRefusedError(PisessionError, OSError):
    """A session file or its lock file is a symbolic link: pisession never writes through one.

    Writing through a link would put the data (or the lock) somewhere else than the session's
    folder, and two spellings of one session would take two different locks.
    """


class LockFileAccessError(PisessionError, PermissionError):
    """The session's ``<file>.lock`` cannot be opened or created by this user (a lock file left
    by another user, root for instance, or a read-only folder); the message names its owner."""

    def __str__(self) -> str:  # the message already says what the errno would
        return str(self.strerror) if self.strerror else super().__str__()


class SessionClosedError(PisessionError):
    """A write on a manager after :meth:`SessionManager.close`."""


class SessionReadOnlyError(PisessionError, PermissionError):
    """A write on a manager whose session was opened read-only because opening it needed a
    write (newline repair, migration) that could not be made: see :class:`SessionNotWrittenWarning`."""


class SessionNotWrittenWarning(UserWarning):
    """Opening a session needed a write (a missing final newline, a migration from an old
    version, a header for an empty file) that pisession could not or would not make: the file is
    a symbolic link (never written through), or its folder, file or lock file is not writable.

    The session is read into memory as Pi would have it (migrated, repaired); the file is left
    as it was, and every later write on that manager raises :class:`SessionReadOnlyError`::

        with warnings.catch_warnings():
            warnings.simplefilter("error", SessionNotWrittenWarning)  # refuse instead
            manager = SessionManager.open(path)
    """


class NothingToCompactError(PisessionError):
    """Compaction found nothing before the cut to summarize (Pi: "Nothing to compact (session
    too small)")."""


class AlreadyCompactedError(PisessionError):
    """The branch already ends with a compaction (Pi: "Already compacted")."""


class SummarizerCommandError(PisessionError):
    """A summarizer command failed, timed out or printed nothing (nothing was written)."""


class EmptySummaryError(SummarizerCommandError):
    """A summarizer (a callable as much as a command) gave an empty or blank summary: it is
    refused, and nothing is written."""


class BranchChangedError(PisessionError):
    """Another writer kept changing the branch a compaction or tree navigation summarized while
    its summarizer ran: every summary made was for a branch no longer there, so nothing was
    written. Try again when the session is quiet."""


class ModelError(PisessionError, ValueError):
    """A model cannot be used for a summary: unknown ``provider/id``, an invalid ``models.json``,
    an API pisession does not speak, or no model at all (Pi: "No models available")."""


class CredentialsError(PisessionError):
    """No usable credential for a provider (a missing key names the variables Pi would read; an
    expired OAuth token says how to refresh it). The message never holds a credential."""


class ModelRequestError(PisessionError):
    """The model's answer cannot be used (HTTP error, a stream cut short, a ``length`` or
    ``error`` stop, a tool call): Pi's message, and nothing was written."""


class CatalogError(PisessionError):
    """The session catalog cannot be used (a foreign or unreadable database, a bad search query).

    Listing never raises it: a catalog that fails falls back to reading the files.
    """


class SettingsError(PisessionError, ValueError):
    """A Pi setting holds a value Pi refuses (the message is Pi's, e.g. ``Invalid
    compaction.keepRecentTokens setting: -1. Expected a non-negative safe integer.``)."""


class UsageQueryError(PisessionError, ValueError):
    """A usage report was asked for with a bad argument: an unknown grouping, a date that is not
    ``YYYY-MM-DD``, a time zone that is not a known IANA name (or no time zone data installed)."""


class SourceFormatError(PisessionError, ValueError):
    """A file given to ``pisession.importers`` is not a Claude Code or Codex CLI session (a Pi
    session, other JSON, a file with no readable record): nothing was written."""


class LineTooLongWarning(UserWarning):
    """A session file holds a line longer than pisession reads (512 MiB): it was skipped like
    a malformed line, never held whole. Pi cannot read such a file either (it reads the whole
    file into one JavaScript string). ``pisession validate`` reports the line too."""


def _warn_to_json(obj: object) -> None:
    """Say, as a ``DeprecationWarning`` pointing at the caller of ``obj.to_json()``, that the
    method is now ``to_wire()`` (the results of ``stats`` and ``validate`` share this text)."""
    import warnings

    warnings.warn(
        f"{type(obj).__name__}.to_json() is deprecated; call to_wire(), the name every result uses",
        DeprecationWarning,
        stacklevel=3,
    )
