"""What the client hands out: the events as they come, and a prompt's result."""

from __future__ import annotations

import asyncio
from typing import Any

from attrs import define

from ._link import ClientLink
from ._types import Event, PromptDisposition

__all__ = ["EventStream", "PromptResult"]


@define(frozen=True)
class PromptResult:
    """What :meth:`PiRpcClient.prompt` returns once Pi has settled: the prompt's ``disposition``,
    the entries Pi appended meanwhile (wire dicts, in file order), Pi's leaf, and whether the run
    was aborted."""

    disposition: PromptDisposition
    entries: tuple[dict[str, Any], ...] = ()
    leaf_id: str | None = None
    aborted: bool = False

    @property
    def text(self) -> str | None:
        """The text of the last assistant message among ``entries`` (None if there is none)."""
        for entry in reversed(self.entries):
            message = entry.get("message") if entry.get("type") == "message" else None
            if isinstance(message, dict) and message.get("role") == "assistant":
                content = message.get("content")
                if isinstance(content, list):
                    return "".join(
                        b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
                    )
                return content if isinstance(content, str) else None
        return None


class EventStream:
    """The events Pi writes from the moment the stream was made (:meth:`PiRpcClient.events`)::

        async with client.events() as events:
            await client.request({"type": "prompt", "message": "hi"})
            async for event in events:
                if event["type"] == "agent_settled":
                    break

    Iteration ends when Pi exits or the stream is closed. Unread events are kept (Pi is never
    held up), so close a stream that is no longer read.
    """

    def __init__(self, client: ClientLink) -> None:
        self._client = client
        self._queue: asyncio.Queue[Event | None] = asyncio.Queue()
        self._closed = False

    def _put(self, event: Event | None) -> None:
        if not self._closed:
            self._queue.put_nowait(event)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._client._streams.discard(self)
            self._queue.put_nowait(None)

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> Event:
        if self._queue.empty() and self._closed:
            raise StopAsyncIteration
        event = await self._queue.get()
        if event is None:
            self._closed = True
            self._client._streams.discard(self)
            raise StopAsyncIteration
        return event

    async def next(self, timeout: float | None = None) -> Event:
        """The next event; :class:`PiExitedError` if Pi has ended, ``TimeoutError`` after
        ``timeout`` seconds."""
        try:
            return await asyncio.wait_for(self.__anext__(), timeout)
        except StopAsyncIteration:
            raise self._client._exited_error("Pi ended before the event came") from None

    async def __aenter__(self) -> EventStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.close()
