"""What both importers share: reading a JSON-lines source, the stable ids, Pi's usage shape, and
the one way an imported session is written (through ``SessionManager``, into a private temporary
folder inside the target folder, renamed into place only when complete)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable, Container, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import attrs

from .._codec import to_wire
from .._errors import SessionExistsError, SettingsError, SourceFormatError
from .._json import to_json_line
from .._manager import SessionManager
from .._paths import default_session_dir_path
from ._pricing import usage_cost

__all__ = [
    "Line",
    "SessionWriter",
    "SourceLines",
    "as_dict",
    "as_list",
    "as_str",
    "find_imported",
    "ms_from_iso",
    "read_lines",
    "session_id_for",
    "target_folder",
    "usage_wire",
    "writing",
]

# The namespace of the stable session ids: uuid5(namespace, "<source>:<key>"), so importing one
# source file again names the same Pi session.
_NAMESPACE = uuid.UUID("5b1f4c1e-8f0e-4d6a-9a55-0c1d7e3b2a90")


def session_id_for(source: str, key: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, f"{source}:{key}"))


@attrs.define(frozen=True)
class Line:
    number: int  # 1-based line number in the source, for messages
    data: dict[str, Any]


@attrs.define(frozen=True)
class SourceLines:
    lines: list[Line]
    bad_lines: list[int]  # lines that are not a JSON object (skipped)
    torn_last_line: bool  # the last line has no newline and does not parse: a cut-off record


def read_lines(path: str) -> SourceLines:
    """Every JSON object line of ``path``; lines that do not parse are listed, not fatal."""
    try:
        with open(path, "rb") as handle:
            raw = handle.read()
    except OSError as error:
        raise SourceFormatError(f"{path}: cannot read: {error.strerror or error}") from error
    text = raw.decode("utf-8", errors="replace")
    parts = text.split("\n")
    lines: list[Line] = []
    bad: list[int] = []
    torn = False
    for number, part in enumerate(parts, 1):
        if not part.strip():
            continue
        try:
            data = json.loads(part)
        except (ValueError, RecursionError):  # not JSON, or nested past Python's stack
            if number == len(parts) and not text.endswith("\n"):
                torn = True
            else:
                bad.append(number)
            continue
        if isinstance(data, dict):
            lines.append(Line(number, data))
        else:
            bad.append(number)
    return SourceLines(lines, bad, torn)


def ms_from_iso(value: object, default: int = 0) -> int:
    """Unix milliseconds of an ISO 8601 timestamp (``Z`` or an offset), else ``default``."""
    if not isinstance(value, str) or not value:
        return default
    from datetime import datetime, timezone

    text = value.strip().replace("Z", "+00:00").replace("z", "+00:00")
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return default
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return int(moment.timestamp() * 1000 + (0.5 if moment.timestamp() >= 0 else -0.5))


def target_folder(cwd: str, session_dir: str | os.PathLike[str] | None) -> str:
    """Where Pi started in ``cwd`` keeps its sessions: ``session_dir`` (its ``--session-dir``),
    else ``$PI_CODING_AGENT_SESSION_DIR``, else the ``sessionDir`` setting of ``cwd``, else
    ``<agent dir>/sessions/--<cwd>--``. Raises :class:`~pisession.SettingsError` for a folder no
    file system can hold (a NUL byte) or a setting Pi refuses."""
    from ..settings import choose_session_dir  # reads settings files: only when a folder is chosen

    choice = choose_session_dir(cwd, os.fspath(session_dir) if session_dir else None)
    folder = choice.path if choice.path is not None else default_session_dir_path(cwd)
    if "\0" in folder:
        raise SettingsError(f"the session folder {folder!r} holds a NUL byte, which no folder name can")
    return folder


def find_imported(folder: str, session_id: str) -> str | None:
    """The session file of ``session_id`` already in ``folder`` (Pi names it
    ``<timestamp>_<id>.jsonl``), or None."""
    suffix = f"_{session_id}.jsonl"
    try:
        names = os.listdir(folder)
    except OSError:
        return None
    for name in sorted(names):
        if name.endswith(suffix):
            return os.path.join(folder, name)
    return None


def usage_wire(
    provider: str,
    model: str,
    *,
    input: int = 0,
    output: int = 0,
    cache_read: int = 0,
    cache_write: int = 0,
    cache_write_1h: int | None = None,
    reasoning: int | None = None,
    recorded_cost: float | None = None,
) -> dict[str, Any]:
    """Pi's ``usage`` object; the cost is the dollars the source recorded (old Claude Code's
    ``costUSD``, as ccusage takes it), else what Pi's model registry prices the tokens at, else
    zero."""
    if recorded_cost:  # what the source billed, as ccusage's default ("auto") mode takes it
        cost: dict[str, Any] = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0}
        cost["total"] = recorded_cost
    else:
        cost = usage_cost(provider, model, input, output, cache_read, cache_write, cache_write_1h)
    usage: dict[str, Any] = {
        "input": input,
        "output": output,
        "cacheRead": cache_read,
        "cacheWrite": cache_write,
        "totalTokens": input + output + cache_read + cache_write,
        "cost": cost,
    }
    if cache_write_1h:
        usage["cacheWrite1h"] = cache_write_1h
    if reasoning:
        usage["reasoning"] = reasoning
    return usage


class _Clock:
    """The source's time: each entry is stamped with the moment the source recorded it."""

    def __init__(self, now_ms: int) -> None:
        self.ms = now_ms

    def now_ms(self) -> int:
        return self.ms


class _Ids:
    """Entry ids derived from the source (a hash of the session key and a counter), so the
    same source always gives the same file; a collision takes the next counter value."""

    def __init__(self, key: str) -> None:
        self._key = key
        self._count = 0

    def entry_id(self, existing: Container[object]) -> str:
        while True:
            self._count += 1
            digest = hashlib.sha256(f"{self._key}#{self._count}".encode()).hexdigest()[:8]
            if digest not in existing:
                return digest

    def session_id(self, now_ms: int) -> str:  # never asked: every import names its session
        return str(uuid.uuid5(_NAMESPACE, f"{self._key}@{now_ms}"))


class SessionWriter:
    """Appends to one new Pi session with the source's timestamps; see :func:`writing`."""

    def __init__(self, manager: SessionManager, clock: _Clock) -> None:
        self.manager = manager
        self._clock = clock

    def at(self, ms: int) -> SessionWriter:
        if ms:
            self._clock.ms = ms
        return self

    def message(self, message: Mapping[str, Any], ms: int) -> str:
        return self.at(ms).manager.append_message(message)

    def custom(self, custom_type: str, data: Any, ms: int) -> str:
        return self.at(ms).manager.append_custom_entry(custom_type, data)

    def leaf(self) -> str | None:
        return self.manager.get_leaf_id()

    def move_to(self, entry_id: str | None) -> None:
        if entry_id is None:
            self.manager.reset_leaf()
        else:
            self.manager.branch(entry_id)


@contextmanager
def writing(
    folder: str,
    session_id: str,
    cwd: str,
    start_ms: int,
    *,
    parent_session: str | None = None,
    on_done: Callable[[str], None],
) -> Iterator[SessionWriter]:
    """A writer for a new session ``session_id`` of ``cwd``, built in a temporary folder inside
    ``folder`` and moved into ``folder`` when the block ends without an error (``on_done`` gets
    the final path; a session with no user or assistant message is not written at all, unless it
    holds usage: see :func:`_write_usage_only`). An error leaves nothing behind."""
    created = not os.path.isdir(folder)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix=".pisession-import-", dir=folder)
    try:
        clock = _Clock(start_ms)
        manager = SessionManager.create(
            cwd, scratch, id=session_id, parent_session=parent_session, clock=clock, ids=_Ids(session_id)
        )
        with manager:
            with manager.batch():
                yield SessionWriter(manager, clock)
            written = manager.get_session_file()
            if written and not os.path.exists(written):
                _write_usage_only(manager, written)
            if written and os.path.exists(written):
                final = os.path.join(folder, os.path.basename(written))
                try:
                    # A link never replaces: two imports of one source at once make one file.
                    os.link(written, final)
                except FileExistsError:
                    raise SessionExistsError(f"{final}: already exists (imported meanwhile?)") from None
                except OSError:  # a file system without hard links
                    if os.path.exists(final):
                        raise SessionExistsError(f"{final}: already exists (imported meanwhile?)") from None
                    os.replace(written, final)
                on_done(final)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        if created:
            with contextlib.suppress(OSError):
                os.rmdir(folder)  # only if still empty: nothing is left of a failed import
        raise
    shutil.rmtree(scratch, ignore_errors=True)


def _write_usage_only(manager: SessionManager, path: str) -> None:
    """Pi writes a session only once it holds a user or assistant message, so a source that
    recorded usage and nothing else (a Codex run with token counts but no message) would lose
    it: such a session is written as its header and its entries (``usage`` entries, outside the
    model's context), as Pi would have written them had a message come. A session with no usage
    stays unwritten, as in Pi."""
    entries, header = manager.get_entries(), manager.get_header()
    if header is None or not any(entry.type == "usage" for entry in entries):
        return
    lines = [to_json_line(to_wire(header)), *(to_json_line(to_wire(entry)) for entry in entries)]
    with open(path, "x", encoding="utf-8") as handle:
        handle.write("".join(line + "\n" for line in lines))


def as_dict(value: object) -> dict[str, Any]:
    """``value`` when it is a JSON object, else empty: a record of an unexpected shape is
    read as far as it goes, never a crash."""
    return value if isinstance(value, dict) else {}


def as_list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def as_count(value: object, default: int = 0) -> int:
    """A source's number as an int: a whole number as it is, a finite float cut to one; anything
    else ``default``, a bool, and NaN, Infinity and 1e400 too (json reads them, int() cannot
    take them; JavaScript's JSON.parse would have refused the line or made it Infinity)."""
    if isinstance(value, bool):
        return default
    if isinstance(value, int):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return int(value)
    return default


def as_str(value: object) -> str:
    if isinstance(value, str):
        return value
    return "" if value is None else json.dumps(value, ensure_ascii=False)
