"""What the event streams and the handoff drive of a client: its commands, its gates and its
exit. A protocol here (below both and below the client) keeps the client the only module that
knows them all, so the package imports in one direction."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, MutableSet
from typing import Any, Protocol

from ._errors import PiExitedError

__all__ = ["ClientLink"]


class ClientLink(Protocol):
    """The side of :class:`~pisession.rpc.PiRpcClient` its streams and handoffs use."""

    _env: dict[str, str]
    _pending: dict[str, asyncio.Future[Any]]
    _open: asyncio.Event
    _handoff_task: asyncio.Task[Any] | None
    _handoff_lock: asyncio.Lock

    @property
    def _streams(self) -> MutableSet[Any]: ...

    def _exited_error(self, message: str) -> PiExitedError: ...

    async def _wait_open(self) -> None: ...

    async def _send(self, command: Mapping[str, Any], *, timeout: float | None = None) -> Any: ...

    async def _wait_idle(self) -> None: ...
