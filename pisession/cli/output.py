"""Output for the terminal: styling, one-line entries, JSON, numbers, and the one error type."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence

# typing for type checkers only (they take TYPE_CHECKING for true): importing it at run time
# took 8 % of `pisession tree`'s start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, ClassVar, TextIO

# The library is imported where it is used: `main` imports this module for CliError and
# write_out, and `pisession --version` needs nothing more.
if TYPE_CHECKING:
    from pisession.describe import Note


class CliError(Exception):
    """A user mistake: reported as one ``pisession: error: ...`` line, exit ``code``."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


class Style:
    """ANSI styling, on only for a terminal (and never with ``NO_COLOR`` or ``TERM=dumb``)."""

    _CODES: ClassVar[dict[str, str]] = {
        "bold": "1",
        "dim": "2",
        "red": "31",
        "green": "32",
        "yellow": "33",
        "blue": "34",
        "magenta": "35",
        "cyan": "36",
    }

    def __init__(self, stream: TextIO) -> None:
        isatty = getattr(stream, "isatty", None)
        self.enabled = bool(
            isatty is not None
            and isatty()
            and "NO_COLOR" not in os.environ
            and os.environ.get("TERM") != "dumb"
        )

    def __call__(self, text: str, *styles: str) -> str:
        if not self.enabled or not styles or not text:
            return text
        codes = ";".join(self._CODES[s] for s in styles)
        return f"{_ESC}[{codes}m{text}{_ESC}[0m"


# Session content is untrusted: tool output routinely carries escape sequences (OSC 52 clipboard
# writes, title changes, screen clears). Every line is written with its control characters shown
# as JSON-style escapes (valid inside --json output too). Our own styling is built with _ESC, a
# marker session content cannot contain (random per process), and becomes ESC only when written.
_ESC = "\ue000" + os.urandom(8).hex() + "\ue000"  # secrets.token_hex(8), without importing secrets
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def safe(text: str) -> str:
    """``text`` with control characters (C0 but newline and tab, DEL, C1) shown as ``\\u001b``."""
    return _UNSAFE.sub(_escape, text)


def write_out(text: str, stream: TextIO | None = None) -> None:
    """Write text to the terminal (stdout by default): content escaped, our own styling kept."""
    (stream or sys.stdout).write("\x1b".join(safe(part) for part in text.split(_ESC)))


KIND_STYLES: dict[str, tuple[str, ...]] = {
    "user": ("bold",),
    "assistant": ("blue",),
    "toolResult": ("dim",),
    "system": ("cyan",),
    "compaction": ("yellow", "bold"),
    "branch summary": ("magenta", "bold"),
    "context edit": ("red",),
    "label": ("cyan",),
    "usage": ("dim",),
}
NOTE_STYLES: dict[str, tuple[str, ...]] = {
    "label": ("cyan", "bold"),
    "edit": ("red",),
    "keep": ("yellow",),
    "orphan": ("red",),
    "leaf": ("green", "bold"),
}
KIND_WIDTH = 14


def emit(line: str = "") -> None:
    write_out(line + "\n")


def _json_default(value: Any) -> Any:
    from pisession import UNSET, to_wire

    return None if value is UNSET else to_wire(value)


def json_text(value: Any) -> str:
    """Indented JSON as ``--json`` prints it (on one line for a value nested deeper than the
    json module goes, in a hostile file: Pi's encoder, which is not recursive, writes it)."""
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, default=_json_default)
    except RecursionError:
        from pisession.export import to_json_line

        return to_json_line(value)


def emit_json(value: Any) -> None:
    emit(json_text(value))


def emit_json_rows(rows: Sequence[Mapping[str, Any]]) -> None:
    """``emit_json(rows)`` for rows of strings, integers, booleans and nulls (``ls --json``):
    the same bytes, encoded by orjson when it is there. The json module's indented output is
    pure Python: it took about a quarter of a warm ``ls --all --json`` over 1,000 sessions."""
    data = _orjson_rows(rows)
    if data is None:
        emit_json(rows)
        return
    emit_json_bytes(data)


def emit_json_bytes(data: bytes) -> None:
    """JSON text in UTF-8 as ``emit`` writes its text: straight to the byte buffer under a UTF-8
    stdout when it holds nothing ``safe`` escapes, else through the text layer."""
    stream = sys.stdout
    buffer = getattr(stream, "buffer", None)
    encoding = str(getattr(stream, "encoding", "")).lower().replace("-", "").replace("_", "")
    if not _has_c1_or_del(data) and buffer is not None and encoding == "utf8" and os.linesep == "\n":
        stream.flush()  # what was written before goes first
        buffer.write(data)  # one write, as the text layer makes of one str
        if getattr(stream, "line_buffering", False):
            buffer.flush()  # a terminal: the text layer flushes a text holding a newline
    else:
        write_out(data.decode("utf-8"), stream)


def _has_c1_or_del(data: bytes) -> bool:
    """Whether JSON text (UTF-8) holds what ``safe`` escapes and JSON does not: DEL or a C1
    control (U+0080-U+009F, UTF-8 0xC2 0x80-0x9F; 0xC2 is never a continuation byte)."""
    if b"\x7f" in data:
        return True
    at = data.find(b"\xc2")
    while at >= 0:
        if 0x80 <= data[at + 1] <= 0x9F:
            return True
        at = data.find(b"\xc2", at + 2)
    return False


def _orjson_rows(rows: Sequence[Mapping[str, Any]]) -> bytes | None:
    """``rows`` as ``json.dumps(rows, indent=2, ensure_ascii=False)`` encodes them, then a
    newline, by orjson; None when orjson is missing or a value could come out differently (a float, an integer
    beyond 64 bits, a nested value, a subclass, a lone surrogate)."""
    for row in rows:
        if type(row) is not dict:
            return None
        for key, value in row.items():
            kind = type(value)
            if type(key) is not str or not (
                kind is str or value is None or kind is bool or (kind is int and -(2**63) <= value < 2**64)
            ):
                return None
    try:
        import orjson
    except ImportError:  # pragma: no cover - orjson is a dependency, but optional at run time
        return None
    try:
        return orjson.dumps(
            rows if type(rows) is list else list(rows), option=orjson.OPT_INDENT_2 | orjson.OPT_APPEND_NEWLINE
        )
    except TypeError:  # lone surrogates: json writes them, orjson refuses
        return None


def emit_wire(value: Any) -> None:
    """One line of Pi's own JSON (``JSON.stringify``): what the session file holds."""
    from pisession.export import to_json_line  # the export machinery only for commands that print lines

    emit(to_json_line(value))


def note(message: str) -> None:
    write_out(f"pisession: {message}\n", sys.stderr)


def progress_line(
    stream: TextIO, text: str, *, after: float, every: float = 0.0
) -> Callable[[int, int], None] | None:
    """An ``on_progress(done, total)`` writing ``text`` (``{done}``, ``{total}`` filled in) on one
    terminal line once ``after`` seconds have passed, at most once every ``every`` seconds, and
    clearing it when done; None when ``stream`` is not a terminal (a pipe gets nothing)."""
    if not (hasattr(stream, "isatty") and stream.isatty()):
        return None
    started = time.monotonic()
    shown: list[float | None] = [None]  # when the line was last written

    def report(done: int, total: int) -> None:
        last = shown[0]
        if done >= total:
            if last is not None:
                stream.write("\r\033[K")
                stream.flush()
            return
        now = time.monotonic()
        if now - started < after or (last is not None and now - last < every):
            return
        shown[0] = now
        stream.write("\r" + text.format(done=done, total=total))
        stream.flush()

    return report


def terminal_columns(fallback: int) -> int:
    """``shutil.get_terminal_size((fallback, 24)).columns``, without importing shutil (it brings
    bz2, lzma and fnmatch: 2-3 ms of every command's start-up): ``$COLUMNS``, else the width of
    the terminal on stdout, else ``fallback``."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns or fallback  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return fallback


def width() -> int:
    return max(60, terminal_columns(120))


def int_text(value: float) -> str:
    return f"{round(value):,}"


def cost_text(value: float) -> str:
    return f"${value:,.4f}"


def id_text(value: Any) -> str:
    """An id as text: a string as it is, any other JSON value as its JSON (``42``, ``{"a":1}``)."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def home_short(path: str) -> str:
    home = os.path.expanduser("~")
    return "~" + path[len(home) :] if home not in ("", "/") and path.startswith(home + os.sep) else path


def entry_line(
    entry: Mapping[str, Any],
    style: Style,
    *,
    prefix: str = "",
    notes: Sequence[Note] = (),
    dim: bool = False,
    width_: int | None = None,
) -> str:
    """One entry as a styled tree line: id, kind, its description cut to fit, then its notes."""
    from pisession.describe import describe_entry, entry_kind, one_line

    room_width = width_ or width()
    kind = entry_kind(entry)
    entry_id = str(entry.get("id", "?"))
    note_text = "".join(" " + n.text for n in notes)
    head = f"{prefix}{entry_id}  {kind:<{KIND_WIDTH}} "
    room = max(20, room_width - len(head) - len(note_text))
    text = one_line(describe_entry(entry), room)
    kind_styles = ("dim",) if dim else KIND_STYLES.get(kind, ())
    line = (
        prefix
        + style(entry_id, "dim" if dim else "yellow")
        + "  "
        + style(f"{kind:<{KIND_WIDTH}}", *kind_styles)
        + " "
        + (style(text, "dim") if dim else text)
    )
    for n in notes:
        line += " " + style(n.text, *NOTE_STYLES[n.kind])
    return line
