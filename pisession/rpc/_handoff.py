"""Edits a running Pi takes up.

Pi reads its session file once, when it opens it, and appends each new entry under the leaf it
holds in memory. An entry another program writes is therefore invisible to Pi, and undone as soon
as Pi writes again (Pi's next entry hangs from its stale leaf and becomes the file's last line,
where Pi resumes after a reload). The handoff closes that gap: it waits until Pi is idle, lets a
:class:`~pisession.SessionManager` edit the file, then makes Pi load the file again
(``switch_session`` to the same path: Pi's leaf becomes the file's last entry) and checks that Pi
stands where pisession left the session.

Pi takes no lock, so nothing stops Pi itself (an extension, a timer) or another program from
writing during the edit. Every entry is stamped by an id source that records the ids it makes:
an entry in the file that is neither Pi's at the start nor one of those is somebody else's, and
is never passed over in silence (the edit is redone on top of it, or :class:`HandoffError`).
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import Awaitable, Callable, Container
from typing import TYPE_CHECKING, Any, cast

from attrs import define

from ._errors import HandoffError
from ._link import ClientLink

if TYPE_CHECKING:
    from .._manager import SessionManager
    from .._model import CompactionEntry
    from ..compaction import AsyncSummarizer, CompactionSettings, Navigation, Summarizer

__all__ = ["Handoff"]

# What Pi itself appends when it loads a session (createAgentSession): the thinking level when
# the branch has none, and for an empty session the model. Such entries under pisession's leaf
# after the reload are Pi's, not a write that undoes the edit.
_RELOAD_ENTRY_TYPES = frozenset({"thinking_level_change", "model_change"})


class _RecordingIds:
    """Pi's random ids, remembering each one handed out: the entries this manager wrote."""

    def __init__(self) -> None:
        from .._ids import RandomIds

        self._ids = RandomIds()
        self.made: set[str] = set()

    def entry_id(self, existing: Container[object]) -> str:
        made = self._ids.entry_id(existing)
        self.made.add(made)
        return made

    def session_id(self, now_ms: int) -> str:
        return self._ids.session_id(now_ms)


@define(frozen=True)
class _Conflict:
    foreign: tuple[str, ...]
    base: str | None  # where a redo starts: Pi's leaf, or the newest foreign entry
    message: str


class Handoff:
    """``async with client.handoff() as manager:`` (see :meth:`PiRpcClient.handoff`)."""

    def __init__(self, client: ClientLink) -> None:
        self._client = client
        self._manager: SessionManager | None = None
        self._path = ""
        self._known: set[str] = set()  # entries that were in the file and Pi's when the edit began
        self._pi_last: str | None = None
        self._pi_leaf: str | None = None
        self._pi_seen: tuple[str | None, str | None] = (None, None)  # Pi's last entry, leaf
        self._on_top: set[str] = set()  # others' entries under the edit's leaf: no conflict
        self._ids = _RecordingIds()
        self._locked = False

    @property
    def manager(self) -> SessionManager:
        assert self._manager is not None, "the handoff has not begun"
        return self._manager

    async def __aenter__(self) -> SessionManager:
        return await self._begin()

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: object
    ) -> None:
        try:
            if error is None:
                conflict = await self._inspect()
                await self._finish(conflict)
            else:
                await self._abandon()
        finally:
            await self._release()

    # -- the steps (PiRpcClient.edit drives them with redo) ---------------------------------------

    async def _begin(self) -> SessionManager:
        client = self._client
        await client._handoff_lock.acquire()
        self._locked = True
        client._open.clear()
        client._handoff_task = asyncio.current_task()
        try:
            # Commands sent before the handoff began are answered first.
            pending = [f for f in client._pending.values() if not f.done()]
            if pending:
                await asyncio.wait(pending)
            await client._wait_idle()
            state = await client._send({"type": "get_state"})
            path = state.get("sessionFile")
            if not path:
                raise HandoffError(
                    "Pi keeps no session file (--no-session): there is nothing to edit", reloaded=False
                )
            data = await client._send({"type": "get_entries"})
            pi_ids = [entry["id"] for entry in data["entries"]]
            from .._manager import SessionManager

            manager = await asyncio.to_thread(SessionManager.open, path, ids=self._ids)
            file_ids = {entry.id for entry in manager.get_entries()}
            missing = [entry_id for entry_id in pi_ids if entry_id not in file_ids]
            if missing:
                manager.close()
                raise HandoffError(
                    f"Pi's session file {path} does not hold {len(missing)} of Pi's {len(pi_ids)} "
                    "entries: Pi writes a new session's file with its first assistant message, so "
                    "prompt first (or the file was replaced)",
                    reloaded=False,
                )
            leaf = data["leafId"]
            # Pi's leaf may be an earlier entry than the last (a navigation without a summary
            # writes nothing): the edit starts where Pi stands.
            if leaf is None:
                manager.reset_leaf()
            else:
                manager.branch(leaf)
            self._manager, self._path = manager, path
            # Entries others wrote before the handoff began (Pi does not hold them) are part of
            # the file the edit starts from, not writes made during it.
            self._known = file_ids
            self._pi_last = pi_ids[-1] if pi_ids else None
            self._pi_leaf = leaf
            return manager
        except BaseException:
            await self._release()
            raise

    async def _inspect(self) -> _Conflict | None:
        """What others wrote since the edit began, if it would be lost or hide the edit."""
        client, manager = self._client, self.manager
        await asyncio.to_thread(manager.refresh)
        new = [entry for entry in manager.get_entries() if entry.id not in self._known]
        foreign = [entry.id for entry in new if entry.id not in self._ids.made]
        since: dict[str, Any] = {"type": "get_entries"}
        if self._pi_last is not None:
            since["since"] = self._pi_last
        pi_now = await client._send(since)
        pi_new = [entry["id"] for entry in pi_now["entries"]]
        pi_leaf = pi_now["leafId"]
        self._pi_seen = (pi_new[-1] if pi_new else self._pi_last, pi_leaf)
        for entry_id in pi_new:  # Pi's own writes are in the file; be sure of it
            if entry_id not in foreign and entry_id not in self._ids.made:
                foreign.append(entry_id)
        expected = manager.get_leaf_id()
        pi_moved = pi_leaf != self._pi_leaf
        hidden = [f for f in foreign if not self._descends(f, expected)]
        if not hidden and not pi_moved:
            self._on_top = set(foreign)
            return None
        if pi_moved:
            base = pi_leaf
            what = f"Pi moved to {pi_leaf} (from {self._pi_leaf})"
            if pi_new:
                what = f"Pi wrote {', '.join(pi_new)} and stands at {pi_leaf}"
        else:
            base = hidden[-1]
            what = f"another writer appended {', '.join(hidden)}"
        return _Conflict(tuple(foreign), base, f"{what} while pisession edited {self._path}")

    def _descends(self, entry_id: str, ancestor: str | None) -> bool:
        if ancestor is None:
            return True
        manager = self.manager
        if manager.get_entry(entry_id) is None:
            return False
        return any(entry.id == ancestor for entry in manager.get_branch(entry_id)) and entry_id != ancestor

    def _rebase(self, conflict: _Conflict) -> None:
        """Take what others wrote as the new starting point and move the leaf to ``base``."""
        manager = self.manager
        self._known.update(entry.id for entry in manager.get_entries())
        self._known.update(conflict.foreign)
        # get_entries(since) needs an id Pi holds: Pi's own newest entry, not pisession's.
        self._pi_last, self._pi_leaf = self._pi_seen
        if conflict.base is not None and manager.get_entry(conflict.base) is not None:
            manager.branch(conflict.base)
        self._ids.made.clear()

    async def _finish(self, conflict: _Conflict | None) -> None:
        """Make Pi reload the file and check its leaf; with ``conflict``, raise it afterwards."""
        client, manager = self._client, self.manager
        expected = manager.get_leaf_id()
        wrote = any(entry.id in self._ids.made for entry in manager.get_entries())
        if conflict is None and not wrote and expected == self._pi_leaf:
            return  # nothing to take up
        before = {entry.id for entry in manager.get_entries()}
        result = await client._send({"type": "switch_session", "sessionPath": self._path})
        if result.get("cancelled"):
            raise HandoffError(
                f"An extension cancelled Pi's reload of {self._path}: Pi does not see the edit "
                f"(pisession's leaf {expected}); its next entry will hang from its old leaf",
                foreign=conflict.foreign if conflict else (),
                expected_leaf=expected,
                pi_leaf=self._pi_leaf,
                reloaded=False,
            )
        after = await client._send({"type": "get_entries"})
        pi_leaf = after["leafId"]
        if conflict is not None:
            raise HandoffError(
                f"{conflict.message}; Pi has reloaded the file and stands at {pi_leaf}, "
                f"pisession's edit ended at {expected}",
                foreign=conflict.foreign,
                expected_leaf=expected,
                pi_leaf=pi_leaf,
            )
        # Pi's leaf is pisession's, or under it: entries others wrote on top of the edit (they
        # read it first), and what Pi appends itself when it loads a branch.
        parents = {entry["id"]: entry for entry in after["entries"]}
        node, ok = pi_leaf, pi_leaf == expected
        while not ok and node is not None and node in parents:
            entry = parents[node]
            on_top = node in self._on_top
            if not on_top and (node in before or entry.get("type") not in _RELOAD_ENTRY_TYPES):
                break
            node = entry.get("parentId")
            ok = node == expected
        if not ok:
            raise HandoffError(
                f"Pi did not take the edit up: after reloading {self._path} it stands at {pi_leaf}, "
                f"not at pisession's leaf {expected} (something wrote to the file meanwhile)",
                expected_leaf=expected,
                pi_leaf=pi_leaf,
            )

    async def _abandon(self) -> None:
        """The edit failed: if it wrote anything, Pi still reloads (its view and the file agree)."""
        if self._manager is None:
            return
        if any(entry.id in self._ids.made for entry in self._manager.get_entries()):
            with contextlib.suppress(Exception):  # the edit's own error is the one to report
                await self._client._send({"type": "switch_session", "sessionPath": self._path})

    async def _release(self) -> None:
        if self._manager is not None:
            self._manager.close()
            self._manager = None
        if self._locked:
            self._locked = False
            self._client._handoff_task = None
            self._client._open.set()
            self._client._handoff_lock.release()


async def _call(edit: Callable[[SessionManager], Any], manager: SessionManager) -> Any:
    result = edit(manager)
    if inspect.isawaitable(result):
        result = await result
    return result


async def run_edit(
    client: ClientLink, edit: Callable[[SessionManager], Awaitable[Any] | Any], attempts: int
) -> Any:
    handoff = Handoff(client)
    manager = await handoff._begin()
    try:
        try:
            result = await _call(edit, manager)
            for attempt in range(1, max(attempts, 1) + 1):
                conflict = await handoff._inspect()
                if conflict is None or attempt == attempts:
                    break
                handoff._rebase(conflict)
                result = await _call(edit, manager)
            else:  # pragma: no cover - the loop always breaks
                conflict = None
        except BaseException:
            await handoff._abandon()
            raise
        await handoff._finish(conflict)
        return result
    finally:
        await handoff._release()


async def _model_facts(client: ClientLink) -> tuple[str | None, int | None, str | None, str]:
    state = await client._send({"type": "get_state"})
    model = state.get("model") or {}
    ref = f"{model['provider']}/{model['id']}" if model.get("provider") and model.get("id") else None
    window = model.get("contextWindow")
    return (
        state.get("thinkingLevel"),
        window if isinstance(window, int) else None,
        ref,
        state.get("sessionFile", ""),
    )


async def navigate(
    client: ClientLink,
    target_id: str,
    *,
    summarize: Summarizer | AsyncSummarizer | None,
    custom_instructions: str | None,
    replace_instructions: bool,
    label: str | None,
    attempts: int,
) -> Navigation:
    await client._wait_open()
    thinking_level, window, _, _ = await _model_facts(client)

    async def edit(manager: SessionManager) -> Navigation:
        from ..aio import AsyncSessionManager

        return await AsyncSessionManager(manager).navigate_tree(
            target_id,
            summarize=summarize,
            custom_instructions=custom_instructions,
            replace_instructions=replace_instructions,
            label=label,
            thinking_level=thinking_level,
            context_window=window or 128000,
        )

    return cast("Navigation", await run_edit(client, edit, attempts))


async def compact(
    client: ClientLink,
    summarize: Summarizer | AsyncSummarizer,
    *,
    custom_instructions: str | None,
    settings: CompactionSettings | None,
    attempts: int,
) -> CompactionEntry:
    await client._wait_open()
    thinking_level, _, model_ref, _ = await _model_facts(client)

    async def edit(manager: SessionManager) -> CompactionEntry:
        from ..aio import AsyncSessionManager

        chosen = (
            settings
            if settings is not None
            else _pi_compaction_settings(client, manager.get_cwd(), model_ref)
        )
        return await AsyncSessionManager(manager).compact(
            summarize, settings=chosen, custom_instructions=custom_instructions, thinking_level=thinking_level
        )

    return cast("CompactionEntry", await run_edit(client, edit, attempts))


def _pi_compaction_settings(client: ClientLink, cwd: str, model_ref: str | None) -> CompactionSettings:
    """Pi's compaction settings as the Pi process reads them (its ``PI_CODING_AGENT_DIR``)."""
    import os

    from ..settings import PiSettings, is_project_trusted

    agent_dir = client._env.get("PI_CODING_AGENT_DIR") or os.path.join(
        os.path.expanduser("~"), ".pi", "agent"
    )
    trusted = is_project_trusted(cwd, agent_dir)
    return PiSettings.load(cwd, agent_dir, project_trusted=trusted).compaction_settings(model_ref)
