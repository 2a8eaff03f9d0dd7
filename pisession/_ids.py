"""Where time and randomness come from: pluggable, so tests can write reproducible files."""

from __future__ import annotations

import os
import re
import time
import weakref
from collections.abc import Container
from typing import Protocol, runtime_checkable

from ._errors import InvalidSessionIdError
from ._js import iso_from_ms  # with the JavaScript semantics; re-exported here

__all__ = [
    "Clock",
    "IdSource",
    "SystemClock",
    "RandomIds",
    "iso_from_ms",
    "uuid7",
    "assert_valid_session_id",
]

_SESSION_ID = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?", re.ASCII)


@runtime_checkable
class Clock(Protocol):
    """Tells the time in Unix milliseconds, like JavaScript's ``Date.now()``."""

    def now_ms(self) -> int: ...


@runtime_checkable
class IdSource(Protocol):
    """Makes entry ids (8 hex chars, unique among ``existing``) and session ids."""

    def entry_id(self, existing: Container[object]) -> str: ...

    def session_id(self, now_ms: int) -> str: ...


class SystemClock:
    def now_ms(self) -> int:
        return time.time_ns() // 1_000_000


class RandomIds:
    """Pi's ids: 8 random hex chars, retried 100 times on collision, then a full UUID.

    Random bytes are drawn from the OS 4 KiB at a time (one syscall per 1,024 ids), as V8
    batches the entropy behind ``crypto.randomUUID``. Taking an id is one ``list.pop``, atomic
    across threads; a forked child empties its pools so it never repeats its parent's ids.
    """

    def __init__(self) -> None:
        self._pool: list[str] = []
        _POOLS.add(self)

    # A copy (pickled into a spawned process, copy.copy) must not hand out the same ids.
    def __getstate__(self) -> dict[str, object]:
        return {"pool": "not copied"}  # a false value would skip __setstate__

    def __setstate__(self, state: dict[str, object]) -> None:
        self._pool = []
        _POOLS.add(self)

    def _hex8(self) -> str:
        try:
            return self._pool.pop()
        except IndexError:
            digits = os.urandom(4096).hex()
            fresh = [digits[i : i + 8] for i in range(0, len(digits), 8)]
            candidate = fresh.pop()
            self._pool = fresh
            return candidate

    def entry_id(self, existing: Container[object]) -> str:
        candidate = self._hex8()
        if candidate not in existing:  # all but once in ~4 billion / len(existing) times
            return candidate
        for _ in range(99):
            candidate = self._hex8()
            if candidate not in existing:
                return candidate
        import uuid  # start-up: uuid imports platform; a collision here is all but impossible

        return str(uuid.uuid4())

    def session_id(self, now_ms: int) -> str:
        return uuid7(now_ms)


_POOLS: weakref.WeakSet[RandomIds] = weakref.WeakSet()


def _forget_pools_after_fork() -> None:
    for source in list(_POOLS):
        source._pool = []


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pools_after_fork)


def uuid7(now_ms: int | None = None) -> str:
    """A time-ordered UUIDv7 string: ulid's 48-bit millisecond time and its randomness."""
    import ulid  # only programs that write load it

    value = ulid.new() if now_ms is None else ulid.from_timestamp(now_ms / 1000)
    millis = value.timestamp().int
    rand = int.from_bytes(value.randomness().bytes, "big")  # 80 bits; UUIDv7 keeps 74
    rand_a = rand >> 68 & 0xFFF
    rand_b = rand & ((1 << 62) - 1)
    number = (millis & ((1 << 48) - 1)) << 80 | 0x7 << 76 | rand_a << 64 | 0b10 << 62 | rand_b
    import uuid

    return str(uuid.UUID(int=number))


def assert_valid_session_id(session_id: object) -> None:
    """Reject ids Pi rejects; this is also what keeps a session id from naming another path."""
    if not isinstance(session_id, str) or _SESSION_ID.fullmatch(session_id) is None:
        raise InvalidSessionIdError(
            "Session id must be non-empty, contain only alphanumeric characters, '-', '_', and '.', "
            "and start and end with an alphanumeric character"
        )
