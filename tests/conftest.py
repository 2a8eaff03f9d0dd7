from __future__ import annotations

import itertools
import shutil
from collections.abc import Container
from pathlib import Path

import pytest

ORACLE_HOME = Path.home() / ".cache" / "pi-oracle"
ORACLE = Path(__file__).resolve().parents[2] / "shared" / "pi-oracle" / "oracle.mjs"


def oracle_available() -> bool:
    return (
        shutil.which("node") is not None
        and ORACLE.exists()
        and (ORACLE_HOME / "node_modules" / "@earendil-works" / "pi-coding-agent").exists()
    )


needs_oracle = pytest.mark.skipif(
    not oracle_available(),
    reason="live oracle needs node and ../shared/pi-oracle/setup.sh (golden tests still run)",
)


class StepClock:
    """Like the oracle's frozen Date: starts at ``start`` and moves 1 ms per reading."""

    def __init__(self, start: int = 1733234400000) -> None:
        self._next = itertools.count(start)

    def now_ms(self) -> int:
        return next(self._next)


class CountingIds:
    """Predictable ids: e0000001, e0000002, ..."""

    def __init__(self) -> None:
        self._entries = itertools.count(1)
        self._sessions = itertools.count(1)

    def entry_id(self, existing: Container[object]) -> str:
        while True:
            candidate = f"e{next(self._entries):07x}"
            if candidate not in existing:
                return candidate

    def session_id(self, now_ms: int) -> str:
        return f"session-{next(self._sessions)}"


@pytest.fixture(autouse=True)
def _private_catalog(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """`pisession ls` / `search` keep a session catalog in the user's cache: never the real one in tests."""
    monkeypatch.setenv("PISESSION_CATALOG", str(tmp_path_factory.mktemp("catalog") / "catalog.sqlite3"))


@pytest.fixture(autouse=True)
def _private_pi_settings(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pi's settings (``AGENT_DIR/settings.json``: a ``sessionDir``, compaction values) on the
    machine running the tests must not reach them: an empty agent folder (a test or a module's
    fixture may name its own), and no session-folder variable."""
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path_factory.mktemp("pi-agent")))
    monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR", raising=False)


@pytest.fixture
def clock() -> StepClock:
    return StepClock()


@pytest.fixture
def ids() -> CountingIds:
    return CountingIds()


class OracleIds:
    """The oracle's seeded entropy (tests/conformance/oracle_seed.mjs), replayed in Python.

    Entry ids are ``crypto.randomUUID().slice(0, 8)``; session ids are Pi's UUIDv7 with its
    monotonic sequence. Both draw 16-byte blocks from one SHA-256 counter stream seeded with the
    case name, so pisession driven by this source writes the ids the reference wrote.
    """

    def __init__(self, seed: str) -> None:
        self._seed = seed
        self._counter = 0
        self._sequence: int | None = None
        self._last_ms = -1

    def _block(self) -> bytes:
        import hashlib

        digest = hashlib.sha256(f"{self._seed}:{self._counter}".encode()).digest()
        self._counter += 1
        return digest[:16]

    def entry_id(self, existing: Container[object]) -> str:
        import uuid as _uuid

        for _ in range(100):
            candidate = self._block()[:4].hex()
            if candidate not in existing:
                return candidate
        return str(_uuid.uuid4())

    def session_id(self, now_ms: int) -> str:
        raw = bytearray(self._block())
        timestamp = max(now_ms, self._last_ms)
        self._last_ms = timestamp
        if self._sequence is None:
            self._sequence = int.from_bytes(raw[1:6], "big")
        else:
            self._sequence += 1
        seq = self._sequence
        raw[0:6] = timestamp.to_bytes(6, "big")
        raw[6] = 0x70 | (seq >> 37 & 0x0F)
        raw[7] = seq >> 29 & 0xFF
        raw[8] = 0x80 | (seq >> 23 & 0x3F)
        raw[9] = seq >> 15 & 0xFF
        raw[10] = seq >> 7 & 0xFF
        raw[11] = ((seq & 0x7F) << 1) | (raw[11] & 0x01)
        h = raw.hex()
        return f"{h[0:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--fuzz",
        action="store_true",
        default=False,
        help="run the fuzz tests (tests/test_fuzz.py) with many more hypothesis examples",
    )


@pytest.fixture(params=["1", "2"], ids=["one-process", "workers"])
def workers(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each catalog test that takes it runs with the files read in this process and again in
    worker processes (``PISESSION_WORKERS``, honoured however few files there are)."""
    monkeypatch.setenv("PISESSION_WORKERS", request.param)
    return str(request.param)
