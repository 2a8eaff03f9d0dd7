"""Drive a running Pi from Python: an asyncio client for ``pi --mode rpc`` (Pi 1.6.0), and edits
made with a :class:`~pisession.SessionManager` that the running Pi takes up::

    from pisession.rpc import PiRpcClient

    async with PiRpcClient.start("session.jsonl") as client:
        result = await client.prompt("What changed since yesterday?")
        async with client.handoff() as manager:
            manager.append_label_change(result.leaf_id, "reviewed")

The transport is the standard library's asyncio; nothing in pisession imports this package.
"""

from __future__ import annotations

from ._client import PiRpcClient, StartingPi
from ._errors import HandoffError, PiExitedError, RpcCommandError, RpcError
from ._framing import JsonlDecoder, encode_record
from ._handoff import Handoff
from ._stream import EventStream, PromptResult
from ._sync import SyncPiRpcClient
from ._types import (
    Command,
    CommandType,
    EntriesData,
    Event,
    EventType,
    PromptDisposition,
    Response,
    SessionState,
    TreeData,
)

__all__ = [
    "PiRpcClient",
    "SyncPiRpcClient",
    "PromptResult",
    "StartingPi",
    "EventStream",
    "Handoff",
    "RpcError",
    "RpcCommandError",
    "PiExitedError",
    "HandoffError",
    "JsonlDecoder",
    "encode_record",
    "Command",
    "CommandType",
    "Event",
    "EventType",
    "PromptDisposition",
    "Response",
    "SessionState",
    "EntriesData",
    "TreeData",
]
