"""Pi's read methods of a session (``getEntries``, ``getBranch``, ``getTree``,
``buildSessionContext``, ...) over the manager's immutable index.

They read ``self._index`` once and never write, so they can run on any thread: what
:class:`~pisession.aio.AsyncSessionManager` calls directly rather than on the manager's thread.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence

from ._context import WireProjection, context_positions, current_system_message, project_leaf
from ._index import TreeIndex
from ._js import MISSING, bulk, js_truthy
from ._paths import default_session_dir_path, paths_equal
from ._results import EntryList, TreeNode
from ._state import SessionState
from ._values import UNSET

# typing for type checkers only (they take TYPE_CHECKING for true): importing it at run time
# took 8 % of `pisession tree`'s start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeVar

    from ._results import TreeShape

    WireEntry = dict[str, Any]
    _WireEntries = list[WireEntry]

# The model classes, the codec and the typed context results are imported where they are used:
# reading a session and walking its tree (`pisession tree`) never creates a model object, and
# importing attrs and creating the model classes took longer than the rest of that command.
if TYPE_CHECKING:
    from ._model import CustomEntry, Entry, SessionContext, SessionHeader
    from ._projection import SessionProjection

    # Under TYPE_CHECKING: a bound named by a string compiles code, the first compile of a
    # process (more than a millisecond of `pisession tree`).
    EntryT = TypeVar("EntryT", bound=Entry)

__all__ = ["SessionReader", "SessionSnapshot"]


class SessionReader(SessionState):
    """The read half of :class:`~pisession.SessionManager`'s API."""

    def snapshot(self) -> TreeIndex:
        """The current immutable index: later appends never change it. Picklable; a low-memory
        manager's snapshot reads its lines in when pickled or deep-copied, so the copy needs
        the file no more::

            data = pickle.dumps(manager.snapshot())
        """
        return self._index

    def is_persisted(self) -> bool:
        return self._persist

    def get_cwd(self) -> str:
        return self._cwd

    def get_session_dir(self) -> str:
        return self._session_dir

    def get_session_id(self) -> str:
        return str(self._header.get("id", ""))

    def get_session_file(self) -> str | None:
        return self._session_file

    def uses_default_session_dir(self) -> bool:
        return (
            paths_equal(self._session_dir, default_session_dir_path(self._cwd))
            if self._session_dir
            else False
        )

    def get_header(self) -> SessionHeader | None:
        from ._codec import from_wire

        return from_wire(self._header) if self._header else None  # type: ignore[return-value]

    def get_entries(self) -> Sequence[Entry]:
        """Every entry in file order (header excluded), typed as each is read."""
        return EntryList(self._index)

    def get_entry_count(self) -> int:
        return len(self._index)

    def get_entry(self, entry_id: str) -> Entry | None:
        pos = self._index.position(entry_id)
        return None if pos is None else self._index.model_at(pos)

    def get_leaf_id(self) -> str | None:
        leaf = self._leaf_id
        return None if leaf is MISSING else leaf

    def get_leaf_entry(self) -> Entry | None:
        return None if self._leaf_id is None else self.get_entry(self._leaf_id)

    def get_children(self, parent_id: str) -> builtins.list[Entry]:
        index = self._index
        return [index.model_at(p) for p in index.children_positions(parent_id)]

    def get_label(self, entry_id: str) -> str | None:
        return self._index.label(entry_id)  # type: ignore[no-any-return]

    def get_session_name(self) -> str | None:
        return self._index.session_name()

    def get_branch(self, from_id: str | None = None) -> Sequence[Entry]:
        """The path from the root to ``from_id`` (default: the leaf), root first; unknown → empty.

        Like :meth:`get_entries`, a sequence of the snapshot's entries typed when read.
        """
        index = self._index
        start = from_id if from_id is not None else self._leaf_id
        pos = index.position(start) if js_truthy(start) else None
        return EntryList(index, index.path_positions(pos) if pos is not None else [])

    def get_entries_of_type(self, entry_type: type[EntryT], *, branch: bool = False) -> builtins.list[EntryT]:
        """The entries of one class in file order; ``branch=True``: only those on the path to
        the leaf, root first::

            for entry in manager.get_entries_of_type(pisession.CustomEntry):
                print(entry.custom_type, entry.data)
        """
        from ._model import UnknownEntry

        index = self._index  # one snapshot throughout, whatever other threads append meanwhile
        leaf = index.resolve_leaf(self._leaf_id)
        positions: Sequence[int] = index.path_positions(leaf) if branch else range(len(index))
        if not issubclass(entry_type, UnknownEntry):  # a known class: parse only its type's lines
            wire_type = entry_type.type
            positions = [p for p in positions if index.type_at(p) == wire_type]
        return [e for e in index.models_at(positions) if isinstance(e, entry_type)]

    def get_latest_custom_entry(self, custom_type: str, *, branch: bool = True) -> CustomEntry | None:
        """The newest ``custom`` entry of ``custom_type`` on the path to the leaf, or None: where
        an extension's state stands on the current branch, as Pi's extensions rebuild it from
        ``getBranch()``. ``branch=False``: the newest in the whole file, whichever branch holds it::

            entry = manager.get_latest_custom_entry("my-extension")
            state = entry.data if entry is not None else {}
        """
        from ._model import CustomEntry

        index = self._index
        positions = index.path_positions(index.resolve_leaf(self._leaf_id)) if branch else range(len(index))
        for pos in reversed(positions):
            if index.type_at(pos) == "custom":
                entry = index.model_at(pos)
                if isinstance(entry, CustomEntry) and entry.custom_type == custom_type:
                    return entry
        return None

    def get_custom_data(self, custom_type: str, default: Any = None, *, branch: bool = True) -> Any:
        """The ``data`` of :meth:`get_latest_custom_entry`, or ``default`` when there is no such
        entry or it has no ``data``::

            state = manager.get_custom_data("my-extension", {"todos": []})
        """
        entry = self.get_latest_custom_entry(custom_type, branch=branch)
        return default if entry is None or entry.data is UNSET else entry.data

    def _branch_wire(self, from_id: Any) -> _WireEntries:
        index = self._index
        pos = index.position(from_id) if js_truthy(from_id) else None
        return [index.entry_at(p) for p in index.path_positions(pos)] if pos is not None else []

    def get_tree(self) -> builtins.list[TreeNode]:
        """The whole session as a tree: roots (and orphans) with children sorted by time."""
        index = self._index
        cache = index.cache()
        key = ("tree", len(index))
        cached = cache.get(key)
        if cached is None:
            with bulk():
                # The shapes only: a node refers to the index, whose store holds this cache, and
                # that cycle would keep the store (a low-memory one's open file) alive until the
                # garbage collector's next full pass rather than until its last reader is gone.
                cached = tuple(_build_shapes(index))
            cache[key] = cached
        return [TreeNode(index, shape) for shape in cached]

    def _leaf_position(self) -> int | None:
        return self._index.resolve_leaf(self._leaf_id)

    def build_context_entries(self) -> builtins.list[Entry]:
        """The entries the model context is built from at the leaf (compaction-aware)."""
        index = self._index
        return index.models_at(context_positions(index, self._leaf_position()))

    def build_session_projection(self) -> SessionProjection:
        """The model context with, for each message, the entry it came from."""
        from ._projection import projection_from_wire

        index = self._index
        return projection_from_wire(index, self._wire_projection())

    def build_session_context(self) -> SessionContext:
        """What the model receives at the leaf: messages, thinking level, model."""
        index = self._index
        leaf = self._leaf_position()
        cache = index.cache()
        key = ("context", leaf) if index.is_regular else ("context", leaf, len(index))
        cached = cache.get(key)
        if cached is None:
            from ._projection import context_from_projection

            cached = context_from_projection(project_leaf(index, leaf))
            cache[key] = cached
        return cached

    def _wire_projection(self) -> WireProjection:
        return project_leaf(self._index, self._leaf_position())

    def _header_wire(self) -> dict[str, Any]:
        """The session header as the file holds it (``get_header()`` types it)."""
        return self._header

    def _system_message_wire(self) -> dict[str, Any] | None:
        """The system prompt and tools at the leaf (Pi's ``getCurrentSystemMessage``) as JSON,
        made from the leaf's projection without typing the context."""
        return current_system_message(self._wire_projection().messages)

    def __repr__(self) -> str:
        where = self._session_file or "in memory"
        return f"<SessionManager {self.get_session_id()} {where} entries={len(self._index)}>"


class SessionSnapshot(SessionReader):
    """One moment of a session, for a reader that reads it many times (an export, the viewer):
    the index, the leaf and the header taken together once, read by the same methods as the
    manager's (``get_tree``, ``get_label``, ``build_session_context``, ...). Appends made to the
    manager afterwards are not seen; nothing is copied (the index is immutable)."""

    def __init__(self, session: SessionReader) -> None:
        """``session``'s state now (no lock taken: a write on another thread is never waited for)."""
        self._leaf_id = session._leaf_id  # before the index: an append sets the index first
        self._index = session._index
        self._header = session._header
        self._cwd = session._cwd
        self._session_dir = session._session_dir
        self._session_file = session._session_file
        self._persist = session._persist
        self._read_from = session._read_from



def _build_regular_shapes(
    index: TreeIndex, parts: tuple[list[int], Sequence[Any], dict[Any, int | list[int]]]
) -> list[TreeShape]:
    """The tree of a regular index: children come after their parents in the file, so one
    pass from the end builds every node after its children, with no stack and no recursion."""
    n = len(index)
    roots, ids, children_by_parent_id = parts
    built: list[Any] = [None] * n
    leaf: tuple[TreeShape, ...] = ()
    pos = n
    # One C-level pass finds every entry's children; the loop then only builds shapes.
    for kids in reversed(list(map(children_by_parent_id.get, ids[:n]))):
        pos -= 1
        if kids is None:
            built[pos] = (pos, leaf)
        elif isinstance(kids, int):  # one child
            built[pos] = (pos, (built[kids],) if kids < n else leaf)
        else:
            built[pos] = (pos, tuple([built[c] for c in index.sort_children(kids)]))
    return [built[r] for r in roots]


def _build_shapes(index: TreeIndex) -> list[TreeShape]:
    parts = index.regular_tree_parts()
    if parts is not None:
        return _build_regular_shapes(index, parts)
    roots, children = index.tree_order()
    built: dict[int, TreeShape] = {}
    # Irregular files (forward references, duplicate ids): children before parents, without
    # recursion, and never through a node already on the way down (a duplicated id can make a
    # node its own ancestor).
    on_stack: set[int] = set()
    for root in roots:
        stack: list[tuple[int, bool]] = [(root, False)]
        while stack:
            pos, expanded = stack.pop()
            if pos in built and not expanded:
                continue
            if not expanded:
                if pos in on_stack:
                    continue
                on_stack.add(pos)
                stack.append((pos, True))
                for child in children.get(pos, ()):
                    if child not in built and child not in on_stack:
                        stack.append((child, False))
                continue
            on_stack.discard(pos)
            built[pos] = (pos, tuple(built[c] for c in children.get(pos, ()) if c in built))
    return [built[r] for r in roots if r in built]
