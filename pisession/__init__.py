"""pisession: read and write Pi coding-agent session files exactly as Pi does.

Open a session and print what the model sees::

    import pisession

    manager = pisession.SessionManager.open("session.jsonl")
    for message in manager.build_session_context().messages:
        print(message.role)
"""

from __future__ import annotations

from ._builders import (
    build_context_entries,
    build_session_context,
    build_session_projection,
    get_current_system_message,
    get_latest_compaction_entry,
    project_context_entry,
    session_entry_to_context_messages,
)
from ._codec import from_wire, to_wire
from ._discovery import SessionInfo
from ._errors import (
    AlreadyCompactedError,
    CatalogError,
    EntryNotFoundError,
    InvalidContextEditError,
    InvalidSessionError,
    InvalidSessionIdError,
    LockFileAccessError,
    NothingToCompactError,
    PisessionError,
    SessionClosedError,
    SessionExistsError,
    SessionNotWrittenWarning,
    SessionReadOnlyError,
    SessionReplacedError,
    SummarizerCommandError,
    SymlinkRefusedError,
    WireFormatError,
)
from ._ids import Clock, IdSource, RandomIds, SystemClock, assert_valid_session_id, uuid7
from ._index import TreeIndex
from ._load import (
    CURRENT_SESSION_VERSION,
    load_entries_from_file,
    migrate_session_entries,
    parse_session_entries,
)
from ._lock import LockTimeout
from ._manager import SessionManager
from ._model import *  # noqa: F403 - the model classes are the public vocabulary
from ._model import __all__ as _model_all
from ._paths import find_most_recent_session, get_default_session_dir
from ._read import default_session_dir, read_session, read_session_entries, read_session_header
from ._results import ProjectedEntry, SessionProjection, TreeNode

__version__ = "0.1.0"

__all__ = [
    "SessionManager",
    "SessionInfo",
    "TreeNode",
    "TreeIndex",
    "SessionProjection",
    "ProjectedEntry",
    "to_wire",
    "from_wire",
    "build_context_entries",
    "build_session_context",
    "build_session_projection",
    "get_current_system_message",
    "get_latest_compaction_entry",
    "project_context_entry",
    "session_entry_to_context_messages",
    "parse_session_entries",
    "load_entries_from_file",
    "migrate_session_entries",
    "CURRENT_SESSION_VERSION",
    "get_default_session_dir",
    "default_session_dir",
    "read_session",
    "read_session_entries",
    "read_session_header",
    "find_most_recent_session",
    "assert_valid_session_id",
    "uuid7",
    "Clock",
    "IdSource",
    "SystemClock",
    "RandomIds",
    "PisessionError",
    "InvalidSessionError",
    "SessionReplacedError",
    "EntryNotFoundError",
    "InvalidContextEditError",
    "InvalidSessionIdError",
    "SessionExistsError",
    "WireFormatError",
    "SymlinkRefusedError",
    "CatalogError",
    "LockTimeout",
    "LockFileAccessError",
    "SessionClosedError",
    "SessionReadOnlyError",
    "SessionNotWrittenWarning",
    "NothingToCompactError",
    "AlreadyCompactedError",
    "SummarizerCommandError",
    *_model_all,
]
