"""The immutable tree index over a session's entries (SPEC §7 state, §8 immutability).

A :class:`TreeIndex` is a snapshot: it never changes once made. Appending returns a new index
that shares storage with the old one, so an append costs amortised O(1): entries live in
append-only arrays owned by a ``_Store``, and each index only sees the first ``n`` of them.

Parent links are resolved to positions the way Pi resolves them through its ``byId`` map (the
last entry with an id wins, a parent may appear later in the file). Appends that would change how
an *earlier* entry resolves (a duplicate id, the arrival of a missing parent) get a fresh store,
so older snapshots keep their view; Pi never writes such files, so this path is rare.
"""

from __future__ import annotations

import functools
from bisect import bisect_left
from collections.abc import Container, Hashable, Iterable, Sequence

from ._bodies import BodyFile
from ._columns import NO_PARENT, _key, _Store
from ._js import MISSING, js_date_ms, js_truthy
from ._load import head_of

# typing for type checkers only (they take TYPE_CHECKING for true): importing it at run time
# took 8 % of `pisession tree`'s start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ._load import Record
    from ._model import Entry  # created when an entry is first typed (models_at)

    WireEntry = dict[str, Any]

__all__ = ["NO_PARENT", "TreeIndex"]

class TreeIndex:
    """An immutable view of a session's entries in file order (header excluded).

    Build one with :meth:`from_entries`; grow it with :meth:`append`, which returns a new index
    and leaves this one unchanged::

        index = TreeIndex.from_entries(wire_entries)
        bigger = index.append([new_entry])
        assert len(index) == len(wire_entries)
    """

    __slots__ = ("_store", "_n")

    def __init__(self, store: _Store | None = None, n: int = 0) -> None:
        self._store = store if store is not None else _Store()
        self._n = n

    @classmethod
    def from_entries(cls, entries: Iterable[WireEntry]) -> TreeIndex:
        """An index over parsed entries (wire dicts, header excluded)."""
        return cls.from_records((head_of(e), None, e) for e in entries)

    @classmethod
    def from_records(cls, records: Iterable[Record], bodies: BodyFile | None = None) -> TreeIndex:
        """An index over scanned lines: (head, raw line, parsed dict or None); with ``bodies``
        (low-memory mode), a raw line may be its number there (see ``_bodies``)."""
        store = _Store.build(records, bodies)
        return cls(store, len(store))

    def append(self, entries: Iterable[WireEntry]) -> TreeIndex:
        return self.append_records((head_of(e), None, e) for e in entries)

    def append_written(self, entry: WireEntry, raw: bytes) -> TreeIndex:
        """This index plus one entry we just made (``entry``) and its line (``raw``, kept as what
        the index holds, parsed again when read). The append hot path: no head is built."""
        store = self._store
        if len(store) == self._n and store.regular:
            message = entry.get("message")
            role = message.get("role", MISSING) if isinstance(message, dict) else MISSING
            get = entry.get
            if store.push_fields(
                get("id", MISSING),
                get("parentId", MISSING),
                get("type", MISSING),
                role,
                get("timestamp", MISSING),
                raw,
                None,
                head_of(entry) if get("type") in ("label", "session_info") else None,
            ):
                return TreeIndex(store, self._n + 1)
        return self.append_records([(head_of(entry), raw, None)])

    def append_records(self, records: Iterable[Record]) -> TreeIndex:
        new = list(records)
        if not new:
            return self
        store = self._store
        if len(new) == 1 and len(store) == self._n and store.regular and store.push_one(*new[0]):
            return TreeIndex(store, self._n + 1)  # the append hot path: one regular entry
        if len(store) == self._n and store.regular:
            rest = store.extend(new)
            if not rest and store.regular:
                return TreeIndex(store, len(store))
            # The arrival changes how earlier entries resolve: a fresh store keeps old
            # snapshots' view intact (they only read positions below their own length).
            done = len(new) - len(rest)
            store = _Store.build([*store.records(len(store) - done), *new], store.bodies)
            return TreeIndex(store, len(store))
        store = _Store.build([*store.records(self._n), *new], store.bodies)
        return TreeIndex(store, len(store))

    # -- size and access ----------------------------------------------------------------------

    def __len__(self) -> int:
        return self._n

    @property
    def version(self) -> tuple[int, int]:
        """Identifies this snapshot's content: equal versions mean equal entries."""
        return (id(self._store), self._n)

    @property
    def bodies(self) -> BodyFile | None:
        """Where a low-memory index reads its entries' lines back from (None: all in memory)."""
        return self._store.bodies

    @property
    def is_regular(self) -> bool:
        return self._store.regular

    @property
    def cycles(self) -> tuple[tuple[Any, ...], ...]:
        """Ids of each parentId cycle found (a walk along one stops before revisiting an entry)."""
        return tuple(self._store.cycles) if self._store.has_cycles else ()

    def entry_at(self, pos: int) -> WireEntry:
        """The wire dict of the entry at ``pos`` (parsed from its line on first use)."""
        if not 0 <= pos < self._n:
            raise IndexError(pos)
        return self._store.entry(pos)

    def has_conversation(self) -> bool:
        """Whether any entry is a user or assistant message (Pi writes nothing before one)."""
        store = self._store
        types, roles = store.types, store.roles
        return any(types[p] == "message" and roles[p] in ("user", "assistant") for p in range(self._n))

    def ids(self) -> Sequence[Any]:
        """Entry ids by position (shared storage: do not modify)."""
        return self._store.ids

    def id_at(self, pos: int) -> Any:
        return self._store.ids[pos]

    def type_at(self, pos: int) -> Any:
        return self._store.types[pos]

    def timestamp_at(self, pos: int) -> Any:
        return self._store.stamp(pos)

    def wire_entries(self) -> list[WireEntry]:
        """Every entry as a wire dict (parses all lines not read yet)."""
        entry = self._store.entry
        return [entry(p) for p in range(self._n)]

    def models_at(self, positions: Sequence[int]) -> list[Entry]:
        """``model_at`` of each position (a path of thousands mostly reads the cache)."""
        models = self._store.models
        try:
            return list(map(models.__getitem__, positions))
        except KeyError:
            pass
        for pos in set(positions).difference(models):
            self.model_at(pos)
        return list(map(models.__getitem__, positions))

    def model_at(self, pos: int) -> Entry:
        """The typed model of the entry at ``pos``, built on first use and then shared."""
        store = self._store
        model = store.models.get(pos)
        if model is None:
            from ._codec import entry_from_wire

            model = entry_from_wire(self.entry_at(pos))
            store.models[pos] = model
        return model

    def position(self, entry_id: object) -> int | None:
        """Position of the entry Pi's ``byId`` resolves ``entry_id`` to, within this snapshot."""
        try:
            pos = self._store.by_id.get(_key(entry_id))
        except TypeError:
            return None
        if pos is None:
            return None
        if pos < self._n:
            return pos
        # The id's latest holder arrived after this snapshot; an earlier holder may exist.
        ids = self._store.ids
        for earlier in range(self._n - 1, -1, -1):
            if _key(ids[earlier]) == _key(entry_id):
                return earlier
        return None

    def get(self, entry_id: object) -> WireEntry | None:
        pos = self.position(entry_id)
        return None if pos is None else self._store.entry(pos)

    def taken_ids(self) -> Container[object]:
        """Every id this snapshot holds, perhaps with ids of later snapshots sharing its
        storage: enough to choose a new id that is unique (a fast ``in``)."""
        return self._store.by_id

    def __contains__(self, entry_id: object) -> bool:
        return self.position(entry_id) is not None

    def parent_position(self, pos: int) -> int:
        parent = self._store.parents[pos]
        return parent if parent < self._n else self._late_parent(pos)

    def _late_parent(self, pos: int) -> int:
        parent_id = self._store.parent_ids[pos]
        if not js_truthy(parent_id):
            return NO_PARENT
        found = self.position(parent_id)
        return NO_PARENT if found is None else found

    def last_position(self) -> int | None:
        return self._n - 1 if self._n else None

    # -- paths --------------------------------------------------------------------------------

    def path_positions(self, leaf: int | None) -> list[int]:
        """Positions from the root down to ``leaf``; a cycle ends the walk before a repeat."""
        if leaf is None:
            return []
        store = self._store
        parents = store.parents
        node = leaf
        if store.regular:
            # Parents precede their children: walk run by run, each run a range.
            starts = store.run_starts
            runs = []
            while node != NO_PARENT:
                start = starts[node]
                runs.append(range(start, node + 1))
                node = parents[start]
            path: list[int] = []
            for run in reversed(runs):
                path.extend(run)
            return path
        path = []
        n = self._n
        if not store.has_cycles:
            while node != NO_PARENT:
                path.append(node)
                node = parents[node]
                if node >= n:
                    node = self._late_parent(path[-1])
        else:
            seen = set()
            while node != NO_PARENT and node not in seen:
                seen.add(node)
                path.append(node)
                node = parents[node] if parents[node] < n else self._late_parent(node)
        path.reverse()
        return path

    def resolve_leaf(self, leaf_id: object = MISSING) -> int | None:
        """Pi's leaf rule: omitted or unknown → the last entry in file order; None → no leaf."""
        if leaf_id is None:
            return None
        if leaf_id is not MISSING and js_truthy(leaf_id):
            pos = self.position(leaf_id)
            if pos is not None:
                return pos
        return self.last_position()

    # -- facts the context builder needs ----------------------------------------------------

    def latest_compaction_on_path(self, leaf: int) -> int | None:
        """The nearest compaction at or above ``leaf``, in O(1) for a regular index."""
        if self._store.regular:
            pos = self._store.latest[leaf][0]
            return None if pos == NO_PARENT else pos
        types = self._store.types
        for pos in reversed(self.path_positions(leaf)):
            if types[pos] == "compaction":
                return pos
        return None

    def settings_positions(self, leaf: int) -> tuple[int, int]:
        """Positions of the entries that set thinking level and model on the path (or -1)."""
        store = self._store
        if store.regular:
            _, thinking, model = store.latest[leaf]
            return thinking, model
        thinking = model = NO_PARENT
        for pos in self.path_positions(leaf):
            kind = store.types[pos]
            if kind == "thinking_level_change":
                thinking = pos
            elif kind == "model_change":
                model = pos
            elif kind == "message":
                message = store.entry(pos).get("message")
                if isinstance(message, dict) and message.get("role") == "assistant":
                    model = pos
        return thinking, model

    def cache(self) -> dict[Any, Any]:
        """Memo space for pure results keyed by position; valid as long as the store lives."""
        return self._store.cache

    # -- labels, names, children -------------------------------------------------------------

    def label(self, entry_id: object) -> Any:
        change = self._label_change(entry_id)
        return None if change is None else change[1]

    def label_timestamp(self, entry_id: object) -> Any:
        change = self._label_change(entry_id)
        return None if change is None else change[2]

    def _label_change(self, entry_id: object) -> tuple[int, Any, Any] | None:
        try:
            changes = self._store.label_changes.get(_key(entry_id))
        except TypeError:
            return None
        if not changes:
            return None
        i = bisect_left(changes, self._n, key=lambda c: c[0]) if changes[-1][0] >= self._n else len(changes)
        if i == 0:
            return None
        change = changes[i - 1]
        return None if change[1] is None else change

    def labels(self) -> dict[Any, Any]:
        """Every resolved label, target id → label, in the order Pi's label map holds them."""
        out: dict[Any, Any] = {}
        order: list[tuple[int, Any]] = []
        for target, changes in self._store.label_changes.items():
            if type(target) is tuple:  # an object or array targetId (see _key): it labels no entry
                continue
            change = self._label_change(target)
            if change is not None:
                # A Map keeps a key's first insertion after its last deletion.
                first = change[0]
                for earlier in reversed(changes[: changes.index(change)]):
                    if earlier[1] is None:
                        break
                    first = earlier[0]
                order.append((first, target))
        for _, target in sorted(order, key=lambda item: item[0]):
            out[target] = self.label(target)
        return out

    def session_name(self) -> str | None:
        names = self._store.name_changes
        if not names:
            return None
        if names[-1][0] < self._n:
            return names[-1][1]
        i = bisect_left(names, self._n, key=lambda c: c[0])
        return names[i - 1][1] if i else None

    def children_positions(self, parent_id: object) -> list[int]:
        """Entries whose raw ``parentId`` equals ``parent_id``, in Pi's ``byId`` order."""
        try:
            found = self._store.children.get(_key(parent_id), [])
        except TypeError:
            return []
        candidates = [found] if isinstance(found, int) else found
        if self._store.regular:
            return [p for p in candidates if p < self._n]
        result = []
        for pos in candidates:
            if pos >= self._n:
                continue
            holder = self.position(self._store.ids[pos])
            if holder == pos:
                result.append(pos)
        # byId iterates keys in first-insertion order while the value is the latest holder.
        first_seen: dict[Hashable, int] = {}
        for pos in range(self._n):
            first_seen.setdefault(_key(self._store.ids[pos]), pos)
        result.sort(key=lambda p: first_seen[_key(self._store.ids[p])])
        return result

    def regular_tree_parts(self) -> tuple[list[int], Sequence[Any], dict[Hashable, int | list[int]]] | None:
        """For a regular index: roots, ids by position, and the positions of each parent's
        children by the parent's id, in file order: one child as its position, several as a
        list (shared storage: read only; positions past this snapshot may be there, last).
        ``sort_children`` orders them as ``tree_order`` does. None when the index is not
        regular (a later append to the shared storage can make it so at any moment: ask once,
        then use the answer)."""
        store = self._store
        if not store.regular:
            return None
        roots = store.roots
        # A regular store's roots stay roots (an awaited parent arriving makes it irregular).
        return roots[: bisect_left(roots, self._n)], store.ids, store.children

    def sort_children(self, kids: list[int]) -> list[int]:
        """Children positions (in file order, possibly past this snapshot) as getTree orders them."""
        n = self._n
        kids = [k for k in kids if k < n]
        if len(kids) > 1:
            _sort_by_time(kids, self._store)
        return kids

    def tree_order(self) -> tuple[list[int], dict[int, list[int]]]:
        """Roots and children by position, as Pi's ``getTree`` builds them (children by time).

        Like Pi, an entry whose id repeats is represented by the latest holder of that id, once
        per entry carrying the id; entries on a parentId cycle are unreachable and left out.
        """
        store = self._store
        n = self._n
        ids, parent_ids, parents = store.ids, store.parent_ids, store.parents
        roots: list[int] = []
        children: dict[int, list[int]] = {}
        if store.regular:
            # Every parent precedes its child and resolves as getTree's nodeMap would; ids are
            # unique, so the children recorded under a parent's id are that parent's.
            roots = [pos for pos, parent in enumerate(parents[:n]) if parent == NO_PARENT]
            by_parent_id = store.children
            for pos in range(n):
                found = by_parent_id.get(ids[pos])
                if found is None:
                    continue
                if isinstance(found, int):
                    if found < n:
                        children[pos] = [found]
                    continue
                kids = found
                if kids[-1] >= n:
                    kids = [k for k in kids if k < n]
                    if not kids:
                        continue
                children[pos] = list(kids) if len(kids) > 1 else kids
        else:
            for pos in range(n):
                node = self.position(ids[pos])
                if node is None:
                    continue
                parent_id = parent_ids[pos]
                if parent_id is None or (parent_id is not MISSING and parent_id == ids[pos]):
                    roots.append(node)
                    continue
                parent = self.position(parent_id) if parent_id is not MISSING else None
                if parent is None:
                    roots.append(node)
                else:
                    children.setdefault(parent, []).append(node)
        for kids in children.values():
            if len(kids) > 1:
                _sort_by_time(kids, store)
        return roots, children


def _sort_by_time(positions: list[int], store: _Store) -> None:
    stamp = store.stamp
    times = {p: js_date_ms(stamp(p)) for p in positions}
    if all(t is not None for t in times.values()):
        positions.sort(key=lambda p: times[p])  # type: ignore[arg-type, return-value]
        return

    # A NaN time makes JavaScript's comparator answer NaN, read as "equal"; CPython's sort is the
    # same TimSort as V8's, so the same comparator gives the same order.
    def compare(a: int, b: int) -> int:
        ta, tb = times[a], times[b]
        if ta is None or tb is None:
            return 0
        return -1 if ta < tb else (1 if ta > tb else 0)

    positions.sort(key=functools.cmp_to_key(compare))
