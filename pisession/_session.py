"""What the parts below the manager need of "a session", as protocols, so that they never import it.

The compaction flows, the branch collector and the HTML viewer work on a session that a caller
hands them. They name what they use of it here; :class:`~pisession.SessionManager` is one (mypy
checks that it fits wherever one is passed), and a test double or a future client of a running
Pi can be another. The manager sits above them in the layers (see docs/architecture.md).
"""

from __future__ import annotations

import os

from ._index import TreeIndex
from ._load import Opaque, migrate_session_entries, read_session_entries

# Protocols are for type checkers only (they take TYPE_CHECKING for true): nothing checks them at
# run time, and importing typing took 8 % of `pisession tree`'s start-up. Import them under
# ``if TYPE_CHECKING:`` too.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import contextlib
    from collections.abc import Mapping, Sequence
    from typing import Any, Protocol

    from ._model import Entry, SessionHeader, Unset, Usage
    from ._results import TreeNode

    class HasSnapshot(Protocol):
        """A session that hands out its immutable index."""

        def snapshot(self) -> TreeIndex: ...

    class HasBranch(Protocol):
        """A session whose active branch can be read (what Pi's model choice looks at)."""

        def get_branch(self, from_id: str | None = ...) -> Sequence[Entry]: ...

    class SessionView(HasSnapshot, Protocol):
        """What a rendering of a whole session reads (the viewer)."""

        def get_leaf_id(self) -> str | None: ...

        def get_header(self) -> SessionHeader | None: ...

        def get_session_name(self) -> str | None: ...

        def get_tree(self) -> list[TreeNode]: ...

        def _header_wire(self) -> dict[str, Any]: ...

    class WritableSession(HasSnapshot, Protocol):
        """What the compaction and navigation flows do to a session: read it up to date, hold its
        lock while they check and write, and append through Pi's own operations."""

        def _catch_up(self) -> tuple[TreeIndex, Any]: ...

        def _writing(
            self, lock_timeout: float | None | Unset = ...
        ) -> contextlib.AbstractContextManager[None]: ...

        def _where(self) -> str: ...

        def get_leaf_id(self) -> str | None: ...

        def get_entry(self, entry_id: str) -> Entry | None: ...

        def append_compaction(
            self,
            summary: str,
            first_kept_entry_id: str | None,
            tokens_before: int,
            details: Any = ...,
            from_hook: bool | Unset = ...,
            usage: Usage | Mapping[str, Any] | Unset = ...,
        ) -> str: ...

        def branch_with_summary(
            self,
            branch_from_id: str | None,
            summary: str,
            details: Any = ...,
            from_hook: Any = ...,
            usage: Any = ...,
        ) -> str: ...

        def append_label_change(self, target_id: str, label: str | Unset | None = ...) -> str: ...

        def branch(self, branch_from_id: str) -> None: ...

        def reset_leaf(self) -> None: ...


__all__ = ["is_path", "not_a_session", "read_index"]


def not_a_session(value: object, function: str) -> TypeError:
    """The error for ``function`` handed something that is neither a session nor a file's path."""
    return TypeError(
        f"{function}() takes a SessionManager or the path of a session file, not {type(value).__name__}"
        + _hint(value)
    )


def _hint(value: object) -> str:
    name = type(value).__name__
    if name == "AsyncSessionManager":
        return " (pass its .sync manager, or the path of its session file)"
    if name == "TreeIndex":
        return " (a snapshot has no leaf: pass the manager it came from, or the file's path)"
    return ""


def is_path(value: object) -> bool:
    """Whether ``value`` names a file as a function taking "a session or its path" accepts it."""
    return isinstance(value, (str, os.PathLike)) and isinstance(os.fspath(value), str)


def read_index(path: str) -> TreeIndex:
    """The index of the session file at ``path``, read as :func:`pisession.read_session` reads it
    (an old version migrated in memory, the file never written), for a function below the
    manager that was handed a path."""
    entries: list[Any] = read_session_entries(path)
    migrate_session_entries(entries)
    return TreeIndex.from_entries(
        [e for e in entries if type(e) is not Opaque and e.get("type") != "session"]
    )
