"""Which entries a manager has read in but not yet handed to its reader (refresh, follow).

One queue per manager, shared by ``refresh()`` and every ``follow()``: an entry leaves it only
when it is handed over, so a follow that ends early (a ``break``, an exception, a cancelled
task) leaves what it did not yield for the next follow or refresh, and each entry another
writer appended reaches the reader exactly once, in file order.

The manager's own appends are marked, not queued apart: a reader skips them unless it asked for
them (``follow(include_own=True)``). While no such follower runs and nothing is pending, an own
append just moves the cursor past itself, so a manager that only writes keeps no set of them.
"""

from __future__ import annotations

from collections import deque

from ._errors import PisessionError
from ._js import hashable

# typing for type checkers only (they take TYPE_CHECKING for true): start-up of a read-only
# command does not import it.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._index import TreeIndex
    from ._model import Entry

__all__ = ["Delivery"]


class Delivery:
    """The undelivered entries of one manager. Mutated with the manager's mutex held, except
    :meth:`pop_staged` and the follower registry, which are single atomic deque/list operations
    (an asyncio follower takes staged entries on the event loop's thread without the mutex)."""

    def __init__(self) -> None:
        # Positions below the cursor in the manager's current index were handed over or staged.
        self.cursor = 0
        # Positions at or past the cursor that this manager wrote itself.
        self.own: set[int] = set()
        # Entries already typed, each with whether it is our own, all before the cursor's: an
        # asyncio follower types them on the manager's thread and takes them on the loop's;
        # a re-read file leaves its undelivered entries here (their positions changed).
        self.staged: deque[tuple[Entry, bool]] = deque()
        # One token per follower that wants own appends (appends and removes are atomic).
        self.own_followers: list[object] = []

    def reset(self, length: int) -> None:
        """The manager now holds another session (or the same, loaded afresh): nothing of it
        is pending."""
        self.cursor = length
        self.own.clear()
        self.staged.clear()

    def wrote(self, pos: int) -> None:
        """This manager appended the entry at ``pos`` (the index's last)."""
        if pos == self.cursor and not self.own_followers:
            self.cursor = pos + 1
        else:
            self.own.add(pos)

    def truncate(self, length: int) -> None:
        """The index went back to its first ``length`` entries (an append that did not happen)."""
        if self.cursor > length:
            self.cursor = length
        if self.own:
            self.own = {p for p in self.own if p < length}

    def take(self, index: TreeIndex, include_own: bool) -> Entry | None:
        """The next undelivered entry, now delivered; None when there is none."""
        entry = self.pop_staged(include_own)
        if entry is not None:
            return entry
        own_positions = self.own
        while self.cursor < len(index):
            pos = self.cursor
            self.cursor = pos + 1
            own = False
            if own_positions and pos in own_positions:
                own_positions.discard(pos)
                own = True
            if include_own or not own:
                return index.model_at(pos)
        return None

    def stage(self, index: TreeIndex, limit: int) -> bool:
        """Type up to ``limit`` more undelivered entries into :attr:`staged`; True if any is
        staged now."""
        own_positions = self.own
        end = min(len(index), self.cursor + limit)
        while self.cursor < end:
            pos = self.cursor
            self.cursor = pos + 1
            own = bool(own_positions) and pos in own_positions
            if own:
                own_positions.discard(pos)
            self.staged.append((index.model_at(pos), own))
        return bool(self.staged)

    def pop_staged(self, include_own: bool) -> Entry | None:
        """The next staged entry, now delivered (callable without the manager's mutex)."""
        while True:
            try:
                entry, own = self.staged.popleft()
            except IndexError:
                return None
            if include_own or not own:
                return entry

    def give_back(self, entries: list[Entry]) -> None:
        """Entries taken but never handed over (a cancelled asyncio refresh): first again."""
        self.staged.extendleft((entry, False) for entry in reversed(entries))

    def rebase(self, old: TreeIndex, new: TreeIndex) -> None:
        """The file was read again from the start (replaced, or our view of it was unsure):
        what was pending in ``old`` stays pending, and of ``new`` only what ``old`` did not
        hold becomes pending (our own appends are in ``old``: never reported as others')."""
        for pos in range(self.cursor, len(old)):
            # Typed from the new file where it is there still: a low-memory index reads its
            # lines from the file it was loaded from, which may be gone or changed.
            ident = old.id_at(pos)
            moved = new.position(ident) if hashable(ident) and ident is not None else None
            try:
                entry = new.model_at(moved) if moved is not None else old.model_at(pos)
            except PisessionError:
                continue  # its line is unreadable now and it is not in the file any more
            self.staged.append((entry, pos in self.own))
        for pos in range(len(new)):
            ident = new.id_at(pos)
            if hashable(ident) and ident is not None:
                if ident in old:
                    continue
            elif pos < len(old):  # no id to compare: only what lies past the old end is new
                continue
            self.staged.append((new.model_at(pos), False))
        self.cursor = len(new)
        self.own.clear()
