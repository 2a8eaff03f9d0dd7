"""Where time and randomness come from: pluggable, so tests can write reproducible files."""

from __future__ import annotations

import re
import secrets
import time
import uuid
from collections.abc import Container
from datetime import datetime, timezone
from typing import Protocol, runtime_checkable

import ulid

from ._errors import InvalidSessionIdError

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
    """Pi's ids: 8 random hex chars, retried 100 times on collision, then a full UUID."""

    def entry_id(self, existing: Container[object]) -> str:
        for _ in range(100):
            candidate = secrets.token_hex(4)
            if candidate not in existing:
                return candidate
        return str(uuid.uuid4())

    def session_id(self, now_ms: int) -> str:
        return uuid7(now_ms)


def uuid7(now_ms: int | None = None) -> str:
    """A time-ordered UUIDv7 string: ulid's 48-bit millisecond time and its randomness."""
    value = ulid.new() if now_ms is None else ulid.from_timestamp(now_ms / 1000)
    millis = value.timestamp().int
    rand = int.from_bytes(value.randomness().bytes, "big")  # 80 bits; UUIDv7 keeps 74
    rand_a = rand >> 68 & 0xFFF
    rand_b = rand & ((1 << 62) - 1)
    number = (millis & ((1 << 48) - 1)) << 80 | 0x7 << 76 | rand_a << 64 | 0b10 << 62 | rand_b
    return str(uuid.UUID(int=number))


def iso_from_ms(ms: int) -> str:
    """JavaScript's ``new Date(ms).toISOString()``: always milliseconds and ``Z``."""
    moment = datetime.fromtimestamp(ms // 1000, tz=timezone.utc)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{ms % 1000:03d}Z"


def assert_valid_session_id(session_id: object) -> None:
    """Reject ids Pi rejects; this is also what keeps a session id from naming another path."""
    if not isinstance(session_id, str) or _SESSION_ID.fullmatch(session_id) is None:
        raise InvalidSessionIdError(
            "Session id must be non-empty, contain only alphanumeric characters, '-', '_', and '.', "
            "and start and end with an alphanumeric character"
        )
