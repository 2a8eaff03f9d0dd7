"""pisession: read and write Pi coding-agent session files exactly as Pi does.

Open a session and print what the model sees::

    import pisession

    manager = pisession.SessionManager.open("session.jsonl")
    for message in manager.build_session_context().messages:
        print(message.role)
"""

from __future__ import annotations

import importlib

from ._errors import (
    AlreadyCompactedError,
    BranchChangedError,
    CatalogError,
    CredentialsError,
    EmptySummaryError,
    EntryNotFoundError,
    InvalidContextEditError,
    InvalidSessionError,
    InvalidSessionIdError,
    LineTooLongWarning,
    LockFileAccessError,
    ModelError,
    ModelRequestError,
    NothingToCompactError,
    PisessionError,
    SessionChangedError,
    SessionClosedError,
    SessionExistsError,
    SessionNotWrittenWarning,
    SessionReadOnlyError,
    SessionReplacedError,
    SettingsError,
    SourceFormatError,
    SummarizerCommandError,
    SymlinkRefusedError,
    UnwritableEntryError,
    UsageQueryError,
    WireFormatError,
)

# False at run time, true for type checkers (mypy and pyright know the name): importing typing
# would be most of what `import pisession` costs.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

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
    from ._folder import FolderEntry, FolderFollower, follow_folder
    from ._ids import Clock, IdSource, RandomIds, SystemClock, assert_valid_session_id, uuid7
    from ._index import TreeIndex
    from ._load import (
        CURRENT_SESSION_VERSION,
        load_entries_from_file,
        migrate_session_entries,
        parse_session_entries,
    )
    from ._lock import LockTimeout, remove_unused_locks
    from ._manager import SessionManager
    from ._model import (
        UNSET,
        AssistantContent,
        AssistantMessage,
        BashExecutionMessage,
        BranchSummaryEntry,
        BranchSummaryMessage,
        CompactionEntry,
        CompactionSummaryMessage,
        ContentBlock,
        ContextEditEntry,
        ContextEditReplacement,
        Cost,
        CustomEntry,
        CustomMessage,
        CustomMessageEntry,
        Entry,
        FileEntry,
        ImageContent,
        LabelEntry,
        MalformedEntry,
        Message,
        MessageEntry,
        ModelChangeEntry,
        ModelObject,
        ModelRef,
        SessionContext,
        SessionHeader,
        SessionInfoEntry,
        StopReason,
        SystemMessage,
        TextContent,
        ThinkingContent,
        ThinkingLevel,
        ThinkingLevelChangeEntry,
        ToolCall,
        ToolResultContent,
        ToolResultMessage,
        UnknownContent,
        UnknownEntry,
        UnknownMessage,
        Unset,
        Usage,
        UsageEntry,
        UserContent,
        UserMessage,
    )
    from ._paths import default_session_dir, find_most_recent_session, get_default_session_dir
    from ._projection import ProjectedEntry, SessionProjection
    from ._read import read_session, read_session_entries, read_session_header
    from ._results import TreeNode
    from ._version import __version__ as __version__

# Start-up: `import pisession` loads only this module and the errors; every other public name is
# imported from its module the first time it is used (PEP 562), so a script or a CLI command pays
# only for what it touches (the model classes, the codec, the manager, ...). The TYPE_CHECKING
# imports above show type checkers the same names.
_LAZY: dict[str, str] = {
    **dict.fromkeys(
        (
            "build_context_entries",
            "build_session_context",
            "build_session_projection",
            "get_current_system_message",
            "get_latest_compaction_entry",
            "project_context_entry",
            "session_entry_to_context_messages",
        ),
        "._builders",
    ),
    **dict.fromkeys(("from_wire", "to_wire"), "._codec"),
    "SessionInfo": "._discovery",
    **dict.fromkeys(
        ("Clock", "IdSource", "RandomIds", "SystemClock", "assert_valid_session_id", "uuid7"), "._ids"
    ),
    "TreeIndex": "._index",
    **dict.fromkeys(
        (
            "CURRENT_SESSION_VERSION",
            "load_entries_from_file",
            "migrate_session_entries",
            "parse_session_entries",
        ),
        "._load",
    ),
    **dict.fromkeys(("FolderEntry", "FolderFollower", "follow_folder"), "._folder"),
    "LockTimeout": "._lock",
    "remove_unused_locks": "._lock",
    "SessionManager": "._manager",
    **dict.fromkeys(
        ("default_session_dir", "find_most_recent_session", "get_default_session_dir"), "._paths"
    ),
    **dict.fromkeys(
        ("read_session", "read_session_entries", "read_session_header"), "._read"
    ),
    **dict.fromkeys(("ProjectedEntry", "SessionProjection"), "._projection"),
    "TreeNode": "._results",
    **dict.fromkeys(("UNSET", "Unset"), "._values"),  # no need to create the model classes for the sentinel
    "__version__": "._version",  # a module of its own: the exports print it, and sit below this one
}


# The public modules, as attributes too (`pisession.export.to_html(...)` after `import pisession`).
_SUBMODULES = frozenset(
    (
        "aio", "catalog", "cli", "compaction", "describe", "export", "settings", "stats", "usage",
        "validate", "views",
    )
)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None and name in __all__:
        module = "._model"  # the rest of __all__ is the model's vocabulary
    if module is not None:
        value = getattr(importlib.import_module(module, __name__), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | {"__version__"})


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
    "FolderFollower",
    "FolderEntry",
    "follow_folder",
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
    "SessionChangedError",
    "EntryNotFoundError",
    "InvalidContextEditError",
    "InvalidSessionIdError",
    "SessionExistsError",
    "WireFormatError",
    "UnwritableEntryError",
    "SymlinkRefusedError",
    "CatalogError",
    "SettingsError",
    "ModelError",
    "CredentialsError",
    "ModelRequestError",
    "UsageQueryError",
    "SourceFormatError",
    "LockTimeout",
    "remove_unused_locks",
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
    # the model (pisession._model.__all__), written out so that type checkers see them
    "UNSET",
    "Unset",
    "StopReason",
    "ThinkingLevel",
    "TextContent",
    "ImageContent",
    "ThinkingContent",
    "ToolCall",
    "UnknownContent",
    "ContentBlock",
    "UserContent",
    "AssistantContent",
    "ToolResultContent",
    "Cost",
    "Usage",
    "SystemMessage",
    "UserMessage",
    "AssistantMessage",
    "ToolResultMessage",
    "BashExecutionMessage",
    "CustomMessage",
    "BranchSummaryMessage",
    "CompactionSummaryMessage",
    "UnknownMessage",
    "Message",
    "SessionHeader",
    "MessageEntry",
    "ThinkingLevelChangeEntry",
    "ModelChangeEntry",
    "UsageEntry",
    "CompactionEntry",
    "ContextEditReplacement",
    "ContextEditEntry",
    "BranchSummaryEntry",
    "CustomEntry",
    "CustomMessageEntry",
    "LabelEntry",
    "SessionInfoEntry",
    "UnknownEntry",
    "MalformedEntry",
    "Entry",
    "FileEntry",
    "ModelRef",
    "SessionContext",
    "ModelObject",
]
