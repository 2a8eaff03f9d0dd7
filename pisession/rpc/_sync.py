"""A blocking face of :class:`PiRpcClient` for scripts: the client runs on an event loop in a
thread of its own."""

from __future__ import annotations

import asyncio
import os
import threading
from collections.abc import Callable, Coroutine, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TypeVar

from ._client import PiRpcClient
from ._errors import RpcError
from ._stream import PromptResult

if TYPE_CHECKING:
    from types import TracebackType

    from .._manager import SessionManager
    from .._model import CompactionEntry
    from ..compaction import CompactionSettings, Navigation, Summarizer
    from ._types import EntriesData, SessionState, TreeData

__all__ = ["SyncPiRpcClient"]

ResultT = TypeVar("ResultT")


class SyncPiRpcClient:
    """:class:`PiRpcClient` without asyncio::

        with SyncPiRpcClient.start("session.jsonl") as client:
            print(client.prompt("hi").text)
            with client.handoff() as manager:
                manager.append_label_change(manager.get_leaf_id(), "checkpoint")

    :attr:`aio` is the asyncio client underneath, for what has no blocking method here
    (``client.call(client.aio.get_commands())``).
    """

    def __init__(
        self, loop: asyncio.AbstractEventLoop, thread: threading.Thread, client: PiRpcClient
    ) -> None:
        self._loop, self._thread, self.aio = loop, thread, client
        self._handoff_thread: int | None = None

    @classmethod
    def start(
        cls,
        session: str | os.PathLike[str] | None = None,
        *,
        command: Sequence[str] | None = None,
        cwd: str | os.PathLike[str] | None = None,
        env: Mapping[str, str] | None = None,
        args: Sequence[str] = (),
        timeout: float = 60.0,
    ) -> SyncPiRpcClient:
        """Spawn Pi as :meth:`PiRpcClient.start` does."""
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="pisession-rpc", daemon=True)
        thread.start()

        async def make() -> PiRpcClient:
            return await PiRpcClient.start(
                session, command=command, cwd=cwd, env=env, args=args, timeout=timeout
            )

        try:
            client = asyncio.run_coroutine_threadsafe(make(), loop).result()
        except BaseException:
            loop.call_soon_threadsafe(loop.stop)
            thread.join()
            loop.close()
            raise
        return cls(loop, thread, client)

    def call(self, coroutine: Coroutine[Any, Any, ResultT]) -> ResultT:
        """Run a coroutine of :attr:`aio` and return its result."""
        if self._handoff_thread == threading.get_ident():
            coroutine.close()
            raise RpcError(
                "A command sent from inside a handoff block would wait for the block to end: edit "
                "with the manager inside the block, send commands after it"
            )
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def _step(self, coroutine: Coroutine[Any, Any, ResultT]) -> ResultT:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result()

    def close(self, timeout: float = 10.0) -> int | None:
        """End Pi (as :meth:`PiRpcClient.close`) and the client's thread."""
        if self._loop.is_closed():
            return self.aio.returncode
        try:
            return self.call(self.aio.close(timeout))
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
            self._loop.close()

    def __enter__(self) -> SyncPiRpcClient:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    @property
    def pid(self) -> int:
        return self.aio.pid

    def request(self, command: Mapping[str, Any], *, timeout: float | None = None) -> Any:
        return self.call(self.aio.request(command, timeout=timeout))

    def prompt(self, message: str, *, timeout: float | None = None) -> PromptResult:
        return self.call(self.aio.prompt(message, timeout=timeout))

    def get_state(self) -> SessionState:
        return self.call(self.aio.get_state())

    def get_entries(self, since: str | None = None) -> EntriesData:
        return self.call(self.aio.get_entries(since))

    def get_tree(self) -> TreeData:
        return self.call(self.aio.get_tree())

    def abort(self) -> None:
        self.call(self.aio.abort())

    def set_session_name(self, name: str) -> None:
        self.call(self.aio.set_session_name(name))

    @contextmanager
    def handoff(self) -> Iterator[SessionManager]:
        """:meth:`PiRpcClient.handoff` as a ``with`` block (the body runs in the caller's thread)."""
        handoff = self.aio.handoff()
        manager = self.call(handoff.__aenter__())
        self._handoff_thread = threading.get_ident()
        try:
            yield manager
        except BaseException as error:
            self._handoff_thread = None
            self._step(handoff.__aexit__(type(error), error, error.__traceback__))
            raise
        self._handoff_thread = None
        self._step(handoff.__aexit__(None, None, None))

    def edit(self, edit: Callable[[SessionManager], Any], *, attempts: int = 3) -> Any:
        """:meth:`PiRpcClient.edit` (``edit`` runs on the client's thread)."""
        return self.call(self.aio.edit(edit, attempts=attempts))

    def navigate_tree(
        self,
        target_id: str,
        *,
        summarize: Summarizer | None = None,
        custom_instructions: str | None = None,
        replace_instructions: bool = False,
        label: str | None = None,
    ) -> Navigation:
        return self.call(
            self.aio.navigate_tree(
                target_id,
                summarize=summarize,
                custom_instructions=custom_instructions,
                replace_instructions=replace_instructions,
                label=label,
            )
        )

    def compact_with(
        self,
        summarize: Summarizer,
        *,
        custom_instructions: str | None = None,
        settings: CompactionSettings | None = None,
    ) -> CompactionEntry:
        return self.call(
            self.aio.compact_with(summarize, custom_instructions=custom_instructions, settings=settings)
        )
