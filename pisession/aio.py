"""``AsyncSessionManager``: :class:`~pisession.SessionManager` for asyncio code.

Every method that may touch the file or wait for the session lock is a coroutine run on one
thread of the manager's own (a one-worker executor), so the event loop never blocks. One thread,
not a pool: the session lock and the manager's mutex belong to the thread that took them, so a
transaction's enter, appends and exit must all run on the same one. Methods that only read the
manager's in-memory snapshot (``get_entries``, ``build_session_context``, ...) stay plain calls,
as on ``SessionManager``; they never wait for a lock.

Follow a session from a coroutine::

    async with await AsyncSessionManager.open(path) as manager:
        async for entry in manager.follow():
            print(entry.type)
"""

from __future__ import annotations

import asyncio
import builtins
import concurrent.futures
import contextlib
import contextvars
import functools
import inspect
import threading
import weakref
from collections.abc import AsyncIterator, Callable, Coroutine
from types import TracebackType
from typing import TYPE_CHECKING, Any, Concatenate, Generic, ParamSpec, TypeVar, overload

from . import _watch
from ._lock import SessionLock
from ._manager import SessionManager
from ._model import UNSET, CompactionEntry, Entry, Unset
from ._watch import open_watcher, wait_for_any

if TYPE_CHECKING:
    from .compaction import AsyncSummarizer, CompactionSettings, Navigation, Summarizer
    from .compaction._flows import Steps, SummaryRequest

__all__ = ["AsyncSessionManager"]

_P = ParamSpec("_P")
_R = TypeVar("_R")

# The turns the running task (and the tasks it starts) holds through its transactions, each
# with the manager on whose thread that transaction holds the session lock.
_HELD: contextvars.ContextVar[tuple[tuple[asyncio.Lock, AsyncSessionManager], ...]] = contextvars.ContextVar(
    "pisession_aio_transactions", default=()
)

# One turn (an asyncio lock) per session file and event loop, shared by every manager of that
# file: a write waits for another manager's transaction on the event loop, not on its thread.
# Waiting on its thread for the session lock would block that thread for good when the
# transaction's own task writes through the second manager (the transaction waits for it).
_LoopTurns = weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock]
_TURNS: weakref.WeakKeyDictionary[SessionLock, _LoopTurns] = weakref.WeakKeyDictionary()
_TURNS_GUARD = threading.Lock()

# How many entries an asyncio follower has typed on the manager's thread at a time.
_STAGE = 256


def _new_executor() -> concurrent.futures.ThreadPoolExecutor:
    return concurrent.futures.ThreadPoolExecutor(max_workers=1, thread_name_prefix="pisession")


class _Offloaded(Generic[_P, _R]):
    """A ``SessionManager`` method as a coroutine that runs it on the manager's thread.

    ``exclusive``: it waits while another task of the same manager is inside a transaction
    (a write, or a leaf move, must not land in the middle of someone else's transaction).
    """

    def __init__(self, method: Callable[Concatenate[SessionManager, _P], _R], *, exclusive: bool) -> None:
        self._method = method
        self._exclusive = exclusive
        self.__doc__ = method.__doc__
        self.__name__ = method.__name__
        self.__wrapped__ = method  # help() and inspect.signature() show the method's parameters

    def __call__(
        self, manager: AsyncSessionManager, /, *args: _P.args, **kwargs: _P.kwargs
    ) -> Coroutine[Any, Any, _R]:
        """Called on the class, as a plain method is: ``AsyncSessionManager.append_message(manager, ...)``."""
        return self.__get__(manager, type(manager))(*args, **kwargs)

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> _Offloaded[_P, _R]: ...
    @overload
    def __get__(
        self, obj: AsyncSessionManager, owner: type[Any]
    ) -> Callable[_P, Coroutine[Any, Any, _R]]: ...
    def __get__(
        self, obj: AsyncSessionManager | None, owner: type[Any]
    ) -> _Offloaded[_P, _R] | Callable[_P, Coroutine[Any, Any, _R]]:
        if obj is None:
            return self
        method, exclusive = self._method, self._exclusive

        @functools.wraps(method)
        async def call(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            return await obj._call(functools.partial(method, obj._manager, *args, **kwargs), exclusive)

        return call


class _InMemory(Generic[_P, _R]):
    """A ``SessionManager`` read of the in-memory snapshot, called as it is."""

    def __init__(self, method: Callable[Concatenate[SessionManager, _P], _R]) -> None:
        self._method = method
        self.__doc__ = method.__doc__
        self.__name__ = method.__name__
        self.__wrapped__ = method  # help() and inspect.signature() show the method's parameters

    def __call__(self, manager: AsyncSessionManager, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        """Called on the class, as a plain method is: ``AsyncSessionManager.get_leaf_id(manager)``."""
        return self.__get__(manager, type(manager))(*args, **kwargs)

    @overload
    def __get__(self, obj: None, owner: type[Any]) -> _InMemory[_P, _R]: ...
    @overload
    def __get__(self, obj: AsyncSessionManager, owner: type[Any]) -> Callable[_P, _R]: ...
    def __get__(
        self, obj: AsyncSessionManager | None, owner: type[Any]
    ) -> _InMemory[_P, _R] | Callable[_P, _R]:
        if obj is None:
            return self
        return functools.partial(self._method, obj._manager)


class _Constructor(Generic[_P]):
    """A ``SessionManager`` constructor as a coroutine building the manager on its new thread."""

    def __init__(self, make: Callable[_P, SessionManager]) -> None:
        self._make = make
        self.__doc__ = _async_doc(make, "an :class:`AsyncSessionManager` (built on its own thread)")

    def __get__(
        self, obj: object, owner: type[AsyncSessionManager]
    ) -> Callable[_P, Coroutine[Any, Any, AsyncSessionManager]]:
        make = self._make

        async def construct(*args: _P.args, **kwargs: _P.kwargs) -> AsyncSessionManager:
            executor = _new_executor()
            try:
                loop = asyncio.get_running_loop()
                manager = await loop.run_in_executor(executor, functools.partial(make, *args, **kwargs))
            except BaseException:
                executor.shutdown(wait=False)
                raise
            wrapped = owner(manager)
            wrapped._executor = executor  # the thread that made the manager goes on serving it
            return wrapped

        # help() and inspect.signature(): the parameters of the sync constructor, but this
        # docstring and an AsyncSessionManager, not the SessionManager functools.wraps would show
        _describe(construct, make, owner, self.__doc__, owner.__name__)
        return construct


class _Static(Generic[_P, _R]):
    """A ``SessionManager`` static method (listing, finding) as a coroutine in a worker thread."""

    def __init__(self, function: Callable[_P, _R]) -> None:
        self._function = function
        self.__doc__ = _async_doc(function, "what it returns, read in a worker thread")

    def __get__(self, obj: object, owner: type[Any]) -> Callable[_P, Coroutine[Any, Any, _R]]:
        function = self._function

        async def call(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            return await asyncio.to_thread(function, *args, **kwargs)

        _describe(call, function, owner, self.__doc__, None)
        return call


def _async_doc(function: Callable[..., Any], returns: str) -> str:
    name = getattr(function, "__name__", "?")
    return (
        f"Awaitable :meth:`SessionManager.{name} <pisession.SessionManager.{name}>`: "
        f"``await AsyncSessionManager.{name}(...)`` gives {returns}.\n\n"
        f"{inspect.cleandoc(function.__doc__ or '')}"
    )


def _describe(
    wrapper: Callable[..., Any],
    function: Callable[..., Any],
    owner: type[Any],
    doc: str | None,
    returns: str | None,
) -> None:
    """Name, docstring and signature of an async stand-in for a sync ``SessionManager`` call."""
    name = getattr(function, "__name__", "?")
    wrapper.__name__ = name
    wrapper.__qualname__ = f"{owner.__name__}.{name}"
    wrapper.__module__ = owner.__module__
    wrapper.__doc__ = doc
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):
        return
    if returns is not None:
        signature = signature.replace(return_annotation=returns)
    wrapper.__signature__ = signature  # type: ignore[attr-defined]


class _Transaction:
    """``async with manager.transaction():`` — see :meth:`AsyncSessionManager.transaction`."""

    def __init__(self, owner: AsyncSessionManager, lock_timeout: float | None | Unset) -> None:
        self._owner = owner
        self._lock_timeout = lock_timeout
        self._sync: contextlib.AbstractContextManager[SessionManager] | None = None
        self._token: contextvars.Token[tuple[tuple[asyncio.Lock, AsyncSessionManager], ...]] | None = None
        self._taken: asyncio.Lock | None = None
        self._runner = owner

    async def __aenter__(self) -> AsyncSessionManager:
        owner = self._owner
        turn = owner._turn()
        runner = _holder(turn)
        if runner is None:
            await turn.acquire()
            self._taken = turn
            runner = owner
        # Inside a transaction of this file (through this manager or another), this one runs
        # on the thread that holds the session lock, as nested blocks do on one thread.
        self._runner = runner
        try:
            sync = self._sync = owner._manager.transaction(lock_timeout=self._lock_timeout)
            entering = runner._submit(sync.__enter__)
            try:
                await asyncio.shield(asyncio.wrap_future(entering))
            except asyncio.CancelledError:
                # The thread goes on taking the lock: it lets it go again right after (one thread,
                # jobs in order: the enter is done when this runs).
                runner._submit(lambda: entering.exception() is None and sync.__exit__(None, None, None))
                raise
        except BaseException:
            self._release()
            raise
        self._token = _HELD.set((*_HELD.get(), (turn, runner)))
        return owner

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._token is not None:
            _HELD.reset(self._token)
            self._token = None
        assert self._sync is not None
        exiting = self._runner._submit(functools.partial(self._sync.__exit__, exc_type, exc, tb))
        try:
            # Shielded: a cancelled task still ends the transaction it is in, on the same thread.
            await asyncio.shield(asyncio.wrap_future(exiting))
        finally:
            self._release()

    def _release(self) -> None:
        taken, self._taken = self._taken, None
        if taken is not None:
            taken.release()


def _holder(turn: asyncio.Lock) -> AsyncSessionManager | None:
    """The manager on whose thread the running task's transaction holding ``turn`` runs."""
    for held, runner in reversed(_HELD.get()):
        if held is turn:
            return runner
    return None


class AsyncSessionManager:
    """A Pi session for asyncio code: :class:`~pisession.SessionManager`'s constructors and
    methods, those that may wait for the file or the lock as coroutines::

        manager = await AsyncSessionManager.open(path)
        entry_id = await manager.append_message({"role": "user", "content": "hi", "timestamp": 1})
        context = manager.build_session_context()  # in memory: a plain call
        async with manager.transaction():
            count = manager.get_custom_data("counter", {"n": 0})["n"]
            await manager.append_custom_entry("counter", {"n": count + 1})

    Tasks sharing one manager, or managers of one session file, are served in turn; a
    transaction keeps other tasks' writes out until it ends, while writes from inside it, through
    any manager of the file, go ahead (as on one thread with :class:`~pisession.SessionManager`).
    A call cancelled while it waits its turn does not happen; one the manager's thread has
    started completes (an append is written) and only its result is dropped.
    """

    def __init__(self, manager: SessionManager) -> None:
        """Wrap an existing ``SessionManager`` (do not use it from other threads meanwhile)."""
        self._manager = manager
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._own_turn = asyncio.Lock()  # in memory: no file to share a turn with

    @property
    def sync(self) -> SessionManager:
        """The ``SessionManager`` underneath (its methods block: call them in a thread)."""
        return self._manager

    def _submit(self, job: Callable[[], _R]) -> concurrent.futures.Future[_R]:
        if self._executor is None:
            self._executor = _new_executor()
        return self._executor.submit(job)

    async def _run(self, job: Callable[[], _R]) -> _R:
        return await asyncio.wrap_future(self._submit(job))

    def _turn(self) -> asyncio.Lock:
        """The turn of this manager's session file in the running event loop."""
        lock = self._manager._current_lock()
        if lock is None:
            return self._own_turn
        loop = asyncio.get_running_loop()
        with _TURNS_GUARD:  # event loops in several threads
            turns = _TURNS.get(lock)
            if turns is None:
                turns = _TURNS[lock] = weakref.WeakKeyDictionary()
            turn = turns.get(loop)
            if turn is None:
                turn = turns[loop] = asyncio.Lock()
            return turn

    async def _call(self, job: Callable[[], _R], exclusive: bool) -> _R:
        """Run ``job`` on the right thread: inside a transaction of this file, the one holding
        the session lock; otherwise this manager's, after waiting for the file's turn when
        ``exclusive`` (a write, or a leaf move, must not land in someone else's transaction)."""
        turn = self._turn()
        runner = _holder(turn)
        if runner is not None:
            return await runner._run(job)
        if exclusive:
            async with turn:
                return await self._run(job)
        return await self._run(job)

    # -- constructors --------------------------------------------------------------------------

    create = _Constructor(SessionManager.create)
    open = _Constructor(SessionManager.open)
    in_memory = _Constructor(SessionManager.in_memory)
    continue_recent = _Constructor(SessionManager.continue_recent)
    fork_from = _Constructor(SessionManager.fork_from)
    list = _Static(SessionManager.list)
    list_all = _Static(SessionManager.list_all)
    find_by_id = _Static(SessionManager.find_by_id)

    # -- writing (coroutines) ------------------------------------------------------------------

    append_message = _Offloaded(SessionManager.append_message, exclusive=True)
    append_thinking_level_change = _Offloaded(SessionManager.append_thinking_level_change, exclusive=True)
    append_model_change = _Offloaded(SessionManager.append_model_change, exclusive=True)
    append_usage = _Offloaded(SessionManager.append_usage, exclusive=True)
    append_compaction = _Offloaded(SessionManager.append_compaction, exclusive=True)
    append_custom_entry = _Offloaded(SessionManager.append_custom_entry, exclusive=True)
    append_custom_message_entry = _Offloaded(SessionManager.append_custom_message_entry, exclusive=True)
    append_session_info = _Offloaded(SessionManager.append_session_info, exclusive=True)
    set_session_name = _Offloaded(SessionManager.set_session_name, exclusive=True)
    append_context_edit = _Offloaded(SessionManager.append_context_edit, exclusive=True)
    append_label_change = _Offloaded(SessionManager.append_label_change, exclusive=True)
    branch = _Offloaded(SessionManager.branch, exclusive=True)
    reset_leaf = _Offloaded(SessionManager.reset_leaf, exclusive=True)
    branch_with_summary = _Offloaded(SessionManager.branch_with_summary, exclusive=True)
    create_branched_session = _Offloaded(SessionManager.create_branched_session, exclusive=True)
    new_session = _Offloaded(SessionManager.new_session, exclusive=True)
    set_session_file = _Offloaded(SessionManager.set_session_file, exclusive=True)
    # They read what others appended and may move the leaf onto it, as a write does.
    plan_compaction = _Offloaded(SessionManager.plan_compaction, exclusive=True)
    needs_compaction = _Offloaded(SessionManager.needs_compaction, exclusive=True)

    # -- reading the in-memory snapshot (plain calls) ------------------------------------------

    snapshot = _InMemory(SessionManager.snapshot)
    is_persisted = _InMemory(SessionManager.is_persisted)
    get_cwd = _InMemory(SessionManager.get_cwd)
    get_session_dir = _InMemory(SessionManager.get_session_dir)
    get_session_id = _InMemory(SessionManager.get_session_id)
    get_session_file = _InMemory(SessionManager.get_session_file)
    uses_default_session_dir = _InMemory(SessionManager.uses_default_session_dir)
    get_header = _InMemory(SessionManager.get_header)
    get_entries = _InMemory(SessionManager.get_entries)
    get_entry_count = _InMemory(SessionManager.get_entry_count)
    get_entry = _InMemory(SessionManager.get_entry)
    get_leaf_id = _InMemory(SessionManager.get_leaf_id)
    get_leaf_entry = _InMemory(SessionManager.get_leaf_entry)
    get_children = _InMemory(SessionManager.get_children)
    get_label = _InMemory(SessionManager.get_label)
    get_session_name = _InMemory(SessionManager.get_session_name)
    get_branch = _InMemory(SessionManager.get_branch)
    get_entries_of_type = _InMemory(SessionManager.get_entries_of_type)
    get_latest_custom_entry = _InMemory(SessionManager.get_latest_custom_entry)
    get_custom_data = _InMemory(SessionManager.get_custom_data)
    get_tree = _InMemory(SessionManager.get_tree)
    build_context_entries = _InMemory(SessionManager.build_context_entries)
    build_session_projection = _InMemory(SessionManager.build_session_projection)
    build_session_context = _InMemory(SessionManager.build_session_context)

    # -- compaction and tree navigation ---------------------------------------------------------

    async def compact(
        self,
        summarize: Summarizer | AsyncSummarizer,
        *,
        settings: CompactionSettings | None = None,
        custom_instructions: str | None = None,
        thinking_level: str | None = None,
    ) -> CompactionEntry:
        """:meth:`SessionManager.compact`, with a summarizer that may be an ``async def``::

            async def summarize(request: SummaryRequest) -> str:
                return await my_model(request.system_prompt, request.prompt)

            entry = await manager.compact(summarize)

        An ``async def`` summarizer is awaited on the event loop, a plain one runs in a thread of
        its own; the session lock is not held meanwhile (other tasks' writes go on).
        """
        from .compaction import _flows

        steps = _flows.compaction_steps(self._manager, settings, custom_instructions, thinking_level)
        result: CompactionEntry = await self._drive(steps, summarize)
        return result

    async def navigate_tree(
        self,
        target_id: str,
        *,
        summarize: Summarizer | AsyncSummarizer | None = None,
        custom_instructions: str | None = None,
        replace_instructions: bool = False,
        label: str | None = None,
        thinking_level: str | None = None,
        context_window: int = 128000,
        reserve_tokens: int = 16384,
    ) -> Navigation:
        """:meth:`SessionManager.navigate_tree`, with a summarizer that may be an ``async def``
        (awaited on the event loop, without the session lock held)::

            nav = await manager.navigate_tree(entry_id, summarize=summarize, label="retry")
        """
        from .compaction import _flows

        steps = _flows.navigation_steps(
            self._manager,
            target_id,
            summarizing=summarize is not None,
            custom_instructions=custom_instructions,
            replace_instructions=replace_instructions,
            label=label,
            thinking_level=thinking_level,
            context_window=context_window,
            reserve_tokens=reserve_tokens,
        )
        result: Navigation = await self._drive(steps, summarize)
        return result

    async def _drive(self, steps: Steps[_R], summarize: Summarizer | AsyncSummarizer | None) -> _R:
        """Run a flow's session steps on the manager's thread (each in turn with other tasks'
        writes) and its summarizer calls here, between them, with no lock held."""
        from .compaction._flows import advance

        try:
            done, value = await self._step(functools.partial(advance, steps, None))
            while not done:
                assert summarize is not None  # a flow given no summarizer asks for no summary
                answer = await _summarize(summarize, value)
                done, value = await self._step(functools.partial(advance, steps, answer))
            result: _R = value
            return result
        finally:
            if self._executor is None:  # closed: no step can be running
                steps.close()
            else:  # on the manager's thread, after any step still running there (a cancelled task's)
                self._executor.submit(steps.close)

    async def _step(self, job: Callable[[], _R]) -> _R:
        # Each step waits for the file's turn on its own: no turn is held while the summarizer
        # runs, so other tasks and managers of the file write meanwhile.
        return await self._call(job, exclusive=True)

    # -- transactions, following, closing ------------------------------------------------------

    def transaction(
        self, *, lock_timeout: float | None | Unset = UNSET
    ) -> contextlib.AbstractAsyncContextManager[AsyncSessionManager]:
        """``async with manager.transaction():`` holds the session lock for the block and first
        reads what others appended (see :meth:`SessionManager.transaction`); other tasks' writes
        through this manager wait for it. The lock is taken on the manager's thread: the event
        loop runs on while it waits. ``lock_timeout`` as for :meth:`SessionManager.transaction`."""
        return _Transaction(self, lock_timeout)

    def batch(
        self, *, lock_timeout: float | None | Unset = UNSET
    ) -> contextlib.AbstractAsyncContextManager[AsyncSessionManager]:
        """The same as :meth:`transaction`."""
        return _Transaction(self, lock_timeout)

    async def refresh(self, *, move_leaf: bool = False) -> builtins.list[Entry]:
        """Read entries other writers appended since this manager last looked (see
        :meth:`SessionManager.refresh`). Cancelled after the manager's thread took them, the
        entries are not lost: the next ``refresh()`` or ``follow()`` returns them."""
        manager = self._manager
        runner = _holder(self._turn()) or self
        taking = runner._submit(functools.partial(manager.refresh, move_leaf=move_leaf))
        try:
            return await asyncio.shield(asyncio.wrap_future(taking))
        except asyncio.CancelledError:
            if not taking.cancel():  # started: once it is done (jobs run in order), give back
                runner._submit(functools.partial(_give_back, manager, taking))
            raise

    async def follow(
        self,
        poll_interval: float = 0.25,
        *,
        stop: asyncio.Event | None = None,
        notify: bool = True,
        include_own: bool = False,
    ) -> AsyncIterator[Entry]:
        """Yield entries as other writers append them::

            async for entry in manager.follow():
                print(entry.type)

        Wakes as soon as the file changes where inotify is available (Linux; ``notify=False``
        turns it off), otherwise looks every ``poll_interval`` seconds. Runs until ``stop`` is
        set (it then reads the file to its end, yields what was appended before, and ends) or
        the task is cancelled (the watch is then closed); the leaf does not move.

        Each entry is handed over once, as with :meth:`SessionManager.follow`: leave the loop
        early (``break``, an exception, a cancelled task) and what was not yielded comes from
        the next ``follow()`` or ``refresh()``. Own appends are skipped unless
        ``include_own``.
        """
        loop = asyncio.get_running_loop()
        manager = self._manager
        delivery = manager._delivery
        path = manager._followed_path()
        watcher = open_watcher(path) if notify and path else None
        changed = asyncio.Event()
        if watcher is not None:

            def on_readable() -> None:
                if watcher.drain():
                    changed.set()

            loop.add_reader(watcher.fileno(), on_readable)
        period = _watch.NOTIFIED_POLL if watcher is not None else poll_interval
        token = object()
        if include_own:
            delivery.own_followers.append(token)
        try:
            drained = False
            while True:
                if not drained and stop is not None and stop.is_set():
                    # Stopped: read to the end once, then hand over what is left.
                    drained = True
                    await self._call(functools.partial(manager._stage, 0, read=True), False)
                # Taken here, on the loop's thread, right before it is yielded: a task cancelled
                # anywhere else leaves it staged for the next reader.
                entry = delivery.pop_staged(include_own)
                if entry is not None:
                    yield entry
                    continue
                changed.clear()  # before reading: a change during the read wakes the next wait
                if await self._call(functools.partial(manager._stage, _STAGE, read=not drained), False):
                    continue
                if drained:
                    return
                await wait_for_any(changed, stop, period)
        finally:
            if include_own:
                delivery.own_followers.remove(token)
            if watcher is not None:
                loop.remove_reader(watcher.fileno())
                watcher.close()

    async def close(self) -> None:
        """Release file descriptors and the manager's thread. The manager stays readable; later
        writes raise :class:`~pisession.SessionClosedError`. Inside a transaction the thread
        stays until the transaction ends."""
        turn = self._turn()
        runner = _holder(turn)
        if runner is not None:  # the transaction's exit must run on that same thread
            await runner._run(self._manager.close)
            return
        async with turn:
            await self._run(self._manager.close)
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=False)

    async def __aenter__(self) -> AsyncSessionManager:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"<AsyncSessionManager {self._manager!r}>"


async def _summarize(summarize: Summarizer | AsyncSummarizer, request: SummaryRequest) -> object:
    """What the summarizer answers: an ``async def`` is awaited here, on the loop; a plain
    callable runs in a thread (a model call blocks for seconds)."""
    from .compaction._flows import is_async

    if is_async(summarize):
        result: object = summarize(request)
    else:
        result = await asyncio.to_thread(summarize, request)
    if inspect.isawaitable(result):
        result = await result
    return result


def _give_back(manager: SessionManager, taking: concurrent.futures.Future[list[Entry]]) -> None:
    if taking.exception() is None:
        with manager._mutex:
            manager._delivery.give_back(taking.result())
