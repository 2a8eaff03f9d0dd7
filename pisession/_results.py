"""Typed views of an index snapshot: its entries and its tree, each entry typed when first read.

Converting every entry of a 20,000-entry session into attrs objects costs far more than Pi's
whole open, so results hold wire dicts and convert an item the first time it is read. Nothing
here needs attrs or the model classes until an entry is typed (``pisession tree`` never does);
the context's results are in :mod:`pisession._projection`.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from ._values import freeze_json

# typing for type checkers only (they take TYPE_CHECKING for true): importing it at run time
# took 8 % of `pisession tree`'s start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, overload

    from ._index import TreeIndex
    from ._model import Entry

__all__ = ["EntryList", "TreeNode"]


class EntryList(Sequence["Entry"]):
    """Entries of an index snapshot (file order, header excluded), typed on access."""

    __slots__ = ("_index", "_positions")

    def __init__(self, index: TreeIndex, positions: Sequence[int] | None = None) -> None:
        self._index = index
        self._positions = positions

    def __len__(self) -> int:
        return len(self._index) if self._positions is None else len(self._positions)

    if TYPE_CHECKING:

        @overload
        def __getitem__(self, i: int) -> Entry: ...
        @overload
        def __getitem__(self, i: slice) -> Sequence[Entry]: ...

    def __getitem__(self, i: int | slice) -> Entry | Sequence[Entry]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        pos = i if self._positions is None else self._positions[i]
        return self._index.model_at(pos)

    def __iter__(self) -> Iterator[Entry]:
        index = self._index
        positions = range(len(index)) if self._positions is None else self._positions
        for start in range(0, len(positions), 1024):  # typed a block at a time
            yield from index.models_at(positions[start : start + 1024])

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"EntryList(<{len(self)} entries>)"

    def to_wire(self) -> list[dict[str, Any]]:
        index = self._index
        positions = range(len(index)) if self._positions is None else self._positions
        return [freeze_json(index.entry_at(p)) for p in positions]


if TYPE_CHECKING:
    TreeShape = tuple[int, tuple[Any, ...]]
    """A node of the tree's shape: (position, child shapes in getTree's order)."""


class TreeNode(tuple):  # type: ignore[type-arg]
    """One node of :meth:`SessionManager.get_tree`: ``entry``, ``children``, ``label``, ``label_timestamp``.

    The tree's shape is built whole by ``get_tree`` as plain tuples (position, child shapes);
    a node is a view of one shape in its snapshot, made when its parent's ``children`` is read
    (creating 20,000 tuple-subclass nodes up front cost as much as the rest of getTree). So
    nodes are immutable and compare by content, not identity; ``entry`` is typed on first
    access, ``wire_entry`` is the entry's JSON, the label is looked up in the snapshot.
    """

    __slots__ = ()

    def __new__(cls, index: TreeIndex, shape: TreeShape) -> TreeNode:
        return tuple.__new__(cls, (index, shape))

    @property
    def entry(self) -> Entry:
        return self[0].model_at(self[1][0])  # type: ignore[no-any-return]

    @property
    def wire_entry(self) -> dict[str, Any]:
        """The entry's JSON, read-only."""
        return freeze_json(self[0].entry_at(self[1][0]))  # type: ignore[no-any-return]

    @property
    def children(self) -> tuple[TreeNode, ...]:
        index, new, cls = self[0], tuple.__new__, type(self)
        return tuple([new(cls, (index, shape)) for shape in self[1][1]])

    @property
    def label(self) -> str | None:
        index = self[0]
        return index.label(index.id_at(self[1][0]))  # type: ignore[no-any-return]

    @property
    def label_timestamp(self) -> str | None:
        index = self[0]
        return index.label_timestamp(index.id_at(self[1][0]))  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return (
            f"TreeNode(id={self[0].id_at(self[1][0])!r}, label={self.label!r}, children={len(self[1][1])})"
        )

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TreeNode):
            return NotImplemented
        # Without recursion: sessions can be 100,000 entries deep.
        pending = [(self, other)]
        while pending:
            mine, theirs = pending.pop()
            if (
                mine[0].entry_at(mine[1][0]) != theirs[0].entry_at(theirs[1][0])
                or mine.label != theirs.label
                or mine.label_timestamp != theirs.label_timestamp
                or len(mine[1][1]) != len(theirs[1][1])
            ):
                return False
            pending.extend(zip(mine.children, theirs.children, strict=True))
        return True

    def __ne__(self, other: object) -> bool:
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = None  # type: ignore[assignment]

    def to_wire(self) -> dict[str, Any]:
        """``{entry, children, label?, labelTimestamp?}`` as Pi's getTree nodes, built without
        recursion (sessions can be 100,000 entries deep)."""
        index = self[0]
        root = _tree_shell(index, self[1][0])
        stack: list[tuple[TreeShape, dict[str, Any]]] = [(self[1], root)]
        while stack:
            shape, out = stack.pop()
            for child in shape[1]:
                shell = _tree_shell(index, child[0])
                out["children"].append(shell)
                stack.append((child, shell))
        return root


def _tree_shell(index: TreeIndex, pos: int) -> dict[str, Any]:
    out: dict[str, Any] = {"entry": freeze_json(index.entry_at(pos)), "children": []}
    entry_id = index.id_at(pos)
    label = index.label(entry_id)
    if label is not None:
        out["label"] = label
    stamp = index.label_timestamp(entry_id)
    if stamp is not None:
        out["labelTimestamp"] = stamp
    return out
