"""The storage under :class:`~pisession._index.TreeIndex`: append-only columns of a session's
entries (ids, parents, types, timestamps, bodies) shared by every snapshot of one session.

A ``_Store`` only grows; a ``TreeIndex`` sees its first ``n`` rows, which is what makes an index
immutable while an append costs amortised O(1) (see ``_index``). Each row's parent is resolved to
a position as Pi's ``byId`` map resolves it.
"""

from __future__ import annotations

import sys
from collections.abc import Hashable, Iterable

from ._bodies import UNREAD, BodyFile
from ._js import MISSING, js_trim, js_truthy
from ._load import head_of, parse_raw, scan_raw

# typing for type checkers only (they take TYPE_CHECKING for true): importing it at run time
# took 8 % of `pisession tree`'s start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from ._load import Head, Record

    WireEntry = dict[str, Any]

__all__ = ["NO_PARENT"]

NO_PARENT = -1
_intern = sys.intern
_NOTHING_SET = (NO_PARENT, NO_PARENT, NO_PARENT)


def _key(value: object) -> Hashable:
    """A dict key for an id or parentId value; unhashable JSON values never match anything."""
    if type(value) is str:
        return value
    try:
        hash(value)
    except TypeError:
        return ("<unhashable>", id(value))
    return value


def _role(head: Head) -> Any:
    message = head.message
    return MISSING if message is None else message.role


class _Store:
    """Append-only arrays shared by successive snapshots of one session."""

    __slots__ = (
        "items",
        "ids",
        "types",
        "parent_ids",
        "stamps",
        "roles",
        "parents",
        "roots",
        "run_starts",
        "by_id",
        "children",
        "label_changes",
        "name_changes",
        "regular",
        "has_cycles",
        "cycles",
        "latest",
        "waiting",
        "models",
        "cache",
        "bodies",
    )

    def __init__(self) -> None:
        # An entry is its raw line (bytes) until first read, then its parsed dict; in a
        # low-memory store, an entry not read yet may be its line's number in ``bodies`` (the
        # line stays in the file), None when that number is its position (an open: no int
        # object per entry). The index itself needs only the head fields kept in the parallel
        # arrays below (a low-memory open leaves timestamps in the file too: UNREAD).
        self.items: list[WireEntry | bytes | int | None] = []
        self.ids: list[Any] = []
        self.types: list[Any] = []
        self.parent_ids: list[Any] = []
        self.stamps: list[Any] = []
        self.roles: list[Any] = []
        self.parents: list[int] = []
        self.roots: list[int] = []  # positions without a resolved parent (kept while regular)
        # Where the run of entries each one ends lies: a run is consecutive positions, each the
        # parent of the next, so a path is a few ranges (kept while regular).
        self.run_starts: list[int] = []
        self.by_id: dict[Hashable, int] = {}
        # Positions of each parent id's children in file order: a single child as its position,
        # several as a list (nearly every entry has one child: 20,000 one-item lists were 11 %
        # of the memory of an open and 40 % of the objects its first garbage collection walked).
        self.children: dict[Hashable, int | list[int]] = {}
        self.label_changes: dict[Hashable, list[tuple[int, Any, Any]]] = {}
        self.name_changes: list[tuple[int, str | None]] = []
        # regular: every parent precedes its child and no id repeats, so per-entry facts
        # (latest compaction, settings) can be computed once from the parent's.
        self.regular = True
        self.has_cycles = False
        self.cycles: list[tuple[Any, ...]] = []
        # (latest compaction, thinking-level change, model setter) on each entry's path; an
        # entry that sets none of them shares its parent's tuple.
        self.latest: list[tuple[int, int, int]] = []
        self.waiting: dict[Hashable, list[int]] = {}
        self.models: dict[int, Any] = {}  # typed models built so far, by position
        self.cache: dict[Any, Any] = {}
        self.bodies: BodyFile | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def entry(self, pos: int) -> WireEntry:
        item = self.items[pos]
        if isinstance(item, dict):
            return item
        if not isinstance(item, bytes):  # left in the file (low-memory mode): its line's number
            assert self.bodies is not None
            item = self.bodies.read(pos if item is None else item, self.ids[pos])
        entry = parse_raw(item)
        if entry is None:  # pragma: no cover - the scanner accepted this line
            entry = {"type": self.types[pos], "id": self.ids[pos], "parentId": self.parent_ids[pos]}
        self.items[pos] = entry
        return entry

    def stamp(self, pos: int) -> Any:
        """The entry's ``timestamp`` (MISSING when it has none)."""
        value = self.stamps[pos]
        return self.entry(pos).get("timestamp", MISSING) if value is UNREAD else value

    # -- building ---------------------------------------------------------------------------

    def extend(self, records: Iterable[Record]) -> list[Record]:
        """Append records while they keep the store regular; returns the ones left over.

        This is the open path for 20,000-entry sessions, so it is one loop over local names.
        """
        items = self.items
        ids, types, parent_ids, stamps, roles = self.ids, self.types, self.parent_ids, self.stamps, self.roles
        parents, by_id, waiting, children = self.parents, self.by_id, self.waiting, self.children
        roots, latest, starts = self.roots, self.latest, self.run_starts
        pos = len(ids)
        # Consumed as it comes (``records`` may scan each line as it is asked for): only the
        # current head is alive, and the rest is returned when the store stops being regular.
        pending = iter(records)
        for head, raw, entry in pending:
            entry_id = head.id
            if type(entry_id) is not str or entry_id in by_id or entry_id in waiting:
                # A repeated, awaited or non-string id changes how earlier entries resolve
                # (Pi's Map even gives undefined an entry): the general build handles it.
                self.regular = False
                return [(head, raw, entry), *pending]
            key = entry_id
            parent_id = head.parentId
            kind = head.type
            if type(kind) is str:
                kind = _intern(kind)  # a few distinct values: one string each, not one per entry
            message = head.message
            role = MISSING if message is None else message.role
            if type(role) is str:
                role = _intern(role)
            by_id[key] = pos
            if type(parent_id) is str and parent_id:
                parent = by_id.get(parent_id, NO_PARENT)
                if parent == NO_PARENT:
                    waiting.setdefault(parent_id, []).append(pos)
                elif parent != pos:
                    parent_id = ids[parent]  # the parent's own id string, not a copy of it
                children_key: Hashable = parent_id
            else:
                parent = NO_PARENT
                if js_truthy(parent_id):
                    found = by_id.get(_key(parent_id))
                    if found is None:
                        waiting.setdefault(_key(parent_id), []).append(pos)
                    else:
                        parent = found
                elif parent_id is not None and parent_id is not MISSING:
                    self.regular = False  # a falsy parentId such as "" resolves differently in getTree
                children_key = _key(parent_id)
            items.append(raw if entry is None else entry)
            ids.append(entry_id)
            types.append(kind)
            parent_ids.append(parent_id)
            stamps.append(head.timestamp)
            roles.append(role)
            parents.append(parent)
            if parent == NO_PARENT:
                roots.append(pos)
            kids = children.get(children_key)
            if kids is None:
                children[children_key] = pos
            elif type(kids) is int:
                children[children_key] = [kids, pos]
            else:
                kids.append(pos)  # type: ignore[union-attr]
            if kind == "label" or kind == "session_info":
                self._note_facts(pos, head)
            if parent == pos:
                self.has_cycles = True
                self.regular = False
                self.cycles.append((entry_id,))
                return list(pending)
            # _derive, inline: this loop runs once per entry of every file opened
            facts = _NOTHING_SET if parent == NO_PARENT else latest[parent]
            if kind == "message":
                if role == "assistant":
                    facts = (facts[0], facts[1], pos)
            elif kind == "compaction":
                facts = (pos, facts[1], facts[2])
            elif kind == "thinking_level_change":
                facts = (facts[0], pos, facts[2])
            elif kind == "model_change":
                facts = (facts[0], facts[1], pos)
            latest.append(facts)
            starts.append(starts[parent] if parent == pos - 1 and pos else pos)
            pos += 1
            if not self.regular:
                return list(pending)
        return []

    def push_one(self, head: Head, raw: bytes | int | None, entry: WireEntry | None) -> bool:
        """Append one entry with a string id whose string parent (or null) is already here;
        False (nothing changed) for anything else, which ``extend`` then handles."""
        message = head.message
        return self.push_fields(
            head.id,
            head.parentId,
            head.type,
            MISSING if message is None else message.role,
            head.timestamp,
            raw,
            entry,
            head,
        )

    def push_fields(
        self,
        entry_id: Any,
        parent_id: Any,
        kind: Any,
        role: Any,
        timestamp: Any,
        raw: bytes | int | None,
        entry: WireEntry | None,
        head: Head | None,
    ) -> bool:
        """``push_one`` from the head fields themselves (``head`` is read only for labels and
        session names; None makes it taken from ``entry``)."""
        by_id = self.by_id
        if type(entry_id) is not str or entry_id in by_id or entry_id in self.waiting:
            return False
        if parent_id is None:
            parent = NO_PARENT
        elif type(parent_id) is str and parent_id:
            parent = by_id.get(parent_id, NO_PARENT)
            if parent == NO_PARENT:
                return False
        else:
            return False
        pos = len(self.ids)
        self.items.append(raw if entry is None else entry)
        self.ids.append(entry_id)
        self.types.append(kind)
        self.parent_ids.append(parent_id)
        self.stamps.append(timestamp)
        self.roles.append(role)
        by_id[entry_id] = pos
        self.parents.append(parent)
        if parent == NO_PARENT:
            self.roots.append(pos)
        kids = self.children.get(parent_id)
        if kids is None:
            self.children[parent_id] = pos
        elif type(kids) is int:
            self.children[parent_id] = [kids, pos]
        else:
            kids.append(pos)  # type: ignore[union-attr]
        if kind == "label" or kind == "session_info":
            if head is None:
                assert entry is not None
                head = head_of(entry)
            self._note_facts(pos, head)
        self._derive(pos, kind, role, parent)
        return True

    def _derive(self, pos: int, kind: Any, role: Any, parent: int) -> None:
        """The latest compaction, thinking-level and model entries on ``pos``'s path, from its
        parent's: one step per entry, so no path is ever walked to find them."""
        facts = _NOTHING_SET if parent == NO_PARENT else self.latest[parent]
        if kind == "message":
            if role == "assistant":
                facts = (facts[0], facts[1], pos)
        elif kind == "compaction":
            facts = (pos, facts[1], facts[2])
        elif kind == "thinking_level_change":
            facts = (facts[0], pos, facts[2])
        elif kind == "model_change":
            facts = (facts[0], facts[1], pos)
        self.latest.append(facts)
        starts = self.run_starts
        starts.append(starts[parent] if parent == pos - 1 and pos else pos)

    def _note_facts(self, pos: int, head: Head) -> None:
        kind = head.type
        if kind == "label":
            label = head.label
            target = _key(head.targetId)
            change = (pos, label, head.timestamp) if js_truthy(label) else (pos, None, None)
            self.label_changes.setdefault(target, []).append(change)
        elif kind == "session_info":
            name = head.name
            self.name_changes.append((pos, (js_trim(name) or None) if isinstance(name, str) else None))

    @classmethod
    def build(cls, records: Iterable[Record], bodies: BodyFile | None = None) -> _Store:
        store = cls()
        store.bodies = bodies
        rest = store.extend(records)
        if not rest and store.regular:
            return store
        # The records the regular pass took are read back from it (the same heads: a line
        # scans the same each time, and a parsed entry's head is its dict's).
        return cls._build_irregular(store, [*store.records(len(store)), *rest])

    @classmethod
    def _build_irregular(cls, partial: _Store, records: list[Record]) -> _Store:
        store = cls()
        store.bodies = partial.bodies
        store.regular = False
        for pos, (head, raw, entry) in enumerate(records):
            if pos < len(partial):  # keep what the regular pass already parsed
                store.items.append(partial.items[pos])
            else:
                store.items.append(raw if entry is None else entry)
            store.ids.append(head.id)
            store.types.append(head.type)
            store.parent_ids.append(head.parentId)
            store.stamps.append(head.timestamp)
            store.roles.append(_role(head))
            store.by_id[_key(head.id)] = pos
        children: dict[Hashable, list[int]] = {}
        for pos, (head, _, _) in enumerate(records):
            parent_id = head.parentId
            parent = NO_PARENT
            if js_truthy(parent_id):
                parent = store.by_id.get(_key(parent_id), NO_PARENT)
            store.parents.append(parent)
            children.setdefault(_key(parent_id), []).append(pos)
            store._note_facts(pos, head)
        store.children = dict(children)
        store._find_cycles()
        return store

    def records(self, n: int) -> list[Record]:
        out: list[Record] = []
        for pos in range(n):
            item = self.items[pos]
            if isinstance(item, dict):
                out.append((head_of(item), None, item))
            else:
                if isinstance(item, bytes):
                    line = item
                else:  # read back from the file, and still referred to by its number
                    assert self.bodies is not None
                    item = pos if item is None else item
                    line = self.bodies.read(item, self.ids[pos])
                scanned = scan_raw(line)
                assert scanned is not None
                out.append((scanned[0], item, None))
        return out

    def __getstate__(self) -> dict[str, Any]:
        # A low-memory store's lines are read in: a pickled or deep-copied snapshot holds its
        # entries itself, as every default one does (a descriptor cannot travel with it).
        state = {name: getattr(self, name) for name in self.__slots__}
        bodies = self.bodies
        if bodies is not None:
            ids, read = self.ids, bodies.read
            state["items"] = [
                it if isinstance(it, (dict, bytes)) else read(pos if it is None else it, ids[pos])
                for pos, it in enumerate(self.items)
            ]
            state["stamps"] = stamps = list(self.stamps)
            for pos, value in enumerate(stamps):
                if value is UNREAD:
                    item = state["items"][pos]
                    entry = item if isinstance(item, dict) else parse_raw(item) or {}
                    stamps[pos] = entry.get("timestamp", MISSING)
            state["bodies"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name, value in state.items():
            setattr(self, name, value)

    def _find_cycles(self) -> None:
        # Each entry has at most one parent, so cycles are found by one colouring walk.
        state = [0] * len(self.parents)  # 0 new, 1 on the current walk, 2 done
        for start in range(len(self.parents)):
            walk = []
            node = start
            while node != NO_PARENT and state[node] == 0:
                state[node] = 1
                walk.append(node)
                node = self.parents[node]
            if node != NO_PARENT and state[node] == 1:
                loop = walk[walk.index(node) :]
                self.cycles.append(tuple(self.ids[p] for p in loop))
                self.has_cycles = True
            for p in walk:
                state[p] = 2
