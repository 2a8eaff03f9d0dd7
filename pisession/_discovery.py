"""Listing sessions the way Pi's session picker does (``SessionManager.list`` / ``listAll``)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator
from datetime import datetime, timezone
from itertools import groupby

from ._js import MISSING, js_date_ms, js_join_item, js_trim
from ._json import loads, to_json_line
from ._load import iter_file_lines, open_regular, parse_line
from ._paths import cwd_matches, get_sessions_dir, list_folder, normalize_path
from ._record import Record

__all__ = ["SessionInfo", "list_sessions", "list_all_sessions", "build_session_info"]

ProgressCallback = Callable[[int, int], None]

# typing for type checkers only: `pisession ls` does not import it
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, TypeVar

    _Row = TypeVar("_Row")


class SessionInfo(Record):
    """One row of Pi's session picker.

    ``modified`` is the time of the latest user or assistant message (else the header's time,
    else the file's mtime); ``first_message`` is the first user text or ``"(no messages)"``.
    """

    path: str
    id: str
    cwd: str
    name: str | None
    parent_session_path: str | None
    created: datetime | None
    modified: datetime
    message_count: int
    first_message: str
    all_messages_text: str

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {"path": self.path, "id": self.id, "cwd": self.cwd}
        if self.name is not None:
            out["name"] = self.name
        if self.parent_session_path is not None:
            out["parentSessionPath"] = self.parent_session_path
        out["created"] = _iso(self.created)
        out["modified"] = _iso(self.modified)
        out.update(
            messageCount=self.message_count,
            firstMessage=self.first_message,
            allMessagesText=self.all_messages_text,
        )
        return out


def _iso(moment: datetime | None) -> str | None:
    if moment is None:
        return None
    moment = moment.astimezone(timezone.utc)
    return f"{moment:%Y-%m-%dT%H:%M:%S}.{moment.microsecond // 1000:03d}Z"


def _from_ms(ms: float) -> datetime | None:
    try:
        return datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None


def _extract_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return " ".join(
            js_join_item(block.get("text", MISSING))
            for block in content
            if isinstance(block, dict) and block.get("type") == "text"
        )
    # Pi throws here (null content) and drops the whole session from the list; we read no text.
    return ""


def _lines(data: bytes) -> list[bytes]:
    # Pi reads these files with readline, which also ends lines at a lone "\r".
    lines = data.split(b"\n")
    if b"\r" in data:
        lines = [part for line in lines for part in line.replace(b"\r\n", b"\n").split(b"\r")]
    return lines


class SessionSummary:
    """The picker row of one session, built line by line (so it can resume where a file grew).

    ``add`` takes the parsed entries in file order; ``info`` gives the :class:`SessionInfo` the
    entries seen so far make. With ``messages`` set, every user, assistant and tool result
    message with text is also recorded there as ``(entry id, time in ms, role, text)`` (the
    catalog's search rows). Internal: shared by the scan and by :mod:`pisession.catalog` so both
    give the same rows.
    """

    __slots__ = (
        "header",
        "foreign",
        "message_count",
        "first_message",
        "texts",
        "name",
        "last_activity",
        "messages",
    )

    def __init__(self, messages: list[tuple[object, float | None, str, str]] | None = None) -> None:
        self.header: dict[str, Any] | None = None
        self.foreign = False
        self.message_count = 0
        self.first_message = ""
        self.texts: list[str] = []
        self.name: str | None = None
        self.last_activity: float | None = None
        self.messages = messages

    def add(self, entry: dict[str, Any]) -> bool:
        """Take one parsed entry; False once the file is known not to be a session."""
        if self.header is None:
            if self.foreign or entry.get("type") != "session":
                self.foreign = True
                return False
            self.header = entry
            return True
        kind = entry.get("type")
        if kind == "session_info":
            raw = entry.get("name")
            self.name = (js_trim(raw) or None) if isinstance(raw, str) else None
        if kind != "message":
            return True
        self.message_count += 1
        message = entry.get("message")
        if (
            not isinstance(message, dict)
            or not isinstance(message.get("role"), str)
            or "content" not in message
        ):
            return True
        role = message["role"]
        if role not in ("user", "assistant"):
            if role == "toolResult" and self.messages is not None:
                text = _extract_text(message.get("content"))
                if text:
                    self.messages.append((entry.get("id"), _activity(entry, message), "tool", text))
            return True
        activity = _activity(entry, message)
        if activity is not None:
            self.last_activity = max(self.last_activity or 0.0, activity)
        text = _extract_text(message.get("content"))
        if not text:
            return True
        self.texts.append(text)
        if self.messages is not None:
            self.messages.append((entry.get("id"), activity, role, text))
        if not self.first_message and role == "user":
            self.first_message = text
        return True

    def info(self, path: str, mtime: float | None) -> SessionInfo | None:
        """The row for ``path`` (``mtime`` is the file's, the last fallback for ``modified``;
        None: no row when it would be needed, so that a row made ahead holds for any mtime)."""
        header = self.header
        if header is None or self.foreign:
            return None
        stamp = header.get("timestamp", MISSING)
        created = js_date_ms(stamp)  # parsed once: the same call gives both (a string's, else None)
        header_time = created if isinstance(stamp, str) else None
        modified: datetime | None = None
        last_activity = self.last_activity
        if last_activity is not None and last_activity > 0:
            modified = _from_ms(last_activity)
        if modified is None and header_time is not None:
            modified = _from_ms(header_time)
        if modified is None:
            if mtime is None:
                return None
            modified = datetime.fromtimestamp(mtime, tz=timezone.utc)
        cwd = header.get("cwd")
        parent = header.get("parentSession")
        return SessionInfo(
            path=path,
            id=header.get("id"),  # type: ignore[arg-type]
            cwd=cwd if isinstance(cwd, str) else "",
            name=self.name,
            parent_session_path=parent if isinstance(parent, str) else None,
            created=None if created is None else _from_ms(created),
            modified=modified,
            message_count=self.message_count,
            first_message=self.first_message or "(no messages)",
            all_messages_text=" ".join(self.texts),
        )


def _activity(entry: dict[str, Any], message: dict[str, Any]) -> float | None:
    stamp = message.get("timestamp")
    if isinstance(stamp, (int, float)) and not isinstance(stamp, bool):
        return float(stamp)
    ms = js_date_ms(entry.get("timestamp", MISSING))
    # a float either way, as the catalog's REAL column gives it back (and the quick read makes it)
    return None if ms is None else float(ms)


def build_session_info(path: str) -> SessionInfo | None:
    """The picker row of one file, or None when it is not a readable session."""
    summary = SessionSummary()
    try:
        with open_regular(path) as handle:
            stats = os.fstat(handle.fileno())
            # line by line: a line too long to read is skipped, never held (MAX_LINE_BYTES)
            if not feed_lines(summary, split_cr(iter_file_lines(handle))):
                return None
    except OSError:
        return None
    return summary.info(path, stats.st_mtime)


def split_cr(lines: Iterable[bytes]) -> Iterator[bytes]:
    """:func:`_lines` of a file read line by line."""
    for line in lines:
        if b"\r" in line:
            yield from line.split(b"\r")
        else:
            yield line


def feed_lines(
    summary: SessionSummary, data: bytes | Iterable[bytes], parse: Callable[[bytes | str], object] = loads
) -> bool:
    """Add each parsed line of ``data`` (a file's bytes, or its lines as ``_lines`` splits them)
    to ``summary``; False as soon as it refuses one (the first entry is not a session header):
    the scan and the catalog read files alike. ``parse``: :func:`pisession._json.loads` or a
    function giving the same results (see :func:`~pisession._json.loads_for`)."""
    for line in _lines(data) if isinstance(data, (bytes, bytearray)) else data:
        if not line:
            continue
        entry = parse_line(line, parse)
        if entry is None:
            continue
        if not summary.add(entry):
            return False
    return True


def _sorted(infos: list[SessionInfo], mtimes: dict[str, float] | None = None) -> list[SessionInfo]:
    """Newest first, as Pi sorts (see :func:`newest_first`)."""
    return newest_first(infos, _modified, _path, mtimes)


def newest_first(
    rows: Iterable[_Row],
    modified: Callable[[_Row], float],
    path: Callable[[_Row], str],
    mtimes: dict[str, float] | None,
) -> list[_Row]:
    """``rows`` newest first by ``modified`` (a POSIX time), as Pi sorts; rows with the same time
    in the order Pi read them: by name, descending in ``localeCompare`` order, or with ``mtimes``
    (a sessions root: path → mtime) by mtime first. Names are collated only where there are
    ties (rare, and collating costs far more than comparing code points)."""
    ordered: list[_Row] = []
    for _, same in groupby(sorted(rows, key=lambda row: -modified(row)), modified):
        tied = list(same)
        if len(tied) > 1:
            from ._collation import collation_key

            tied.sort(
                key=lambda row: (
                    0.0 if mtimes is None else mtimes.get(path(row), float("-inf")),
                    collation_key(os.path.basename(path(row))),
                ),
                reverse=True,
            )
        ordered.extend(tied)
    return ordered


def _modified(info: SessionInfo) -> float:
    return info.modified.timestamp()


def _path(info: SessionInfo) -> str:
    return info.path


def rows_json(infos: Iterable[SessionInfo]) -> bytes:
    """``infos`` as ``pisession ls --json`` prints them: ``json.dumps(rows, indent=2,
    ensure_ascii=False)`` and a newline, in UTF-8, a lone surrogate written as its JSON escape
    (``\\ud800``, as the command line's output stream writes it)."""
    rows = [info.to_wire() for info in infos]
    try:
        text = json.dumps(rows, indent=2, ensure_ascii=False)
    except RecursionError:  # a header id nested deeper than the json module goes
        text = to_json_line(rows)
    return text.encode("utf-8", "backslashreplace") + b"\n"


def row_json(info: SessionInfo) -> bytes:
    """One row of :func:`rows_json` (indented as an item of its list, without the comma);
    RecursionError for a header id nested deeper than the json module goes."""
    text = json.dumps([info.to_wire()], indent=2, ensure_ascii=False)
    return text[2:-2].encode("utf-8", "backslashreplace")


def utf8_name(name: str) -> bool:
    """Whether a name read from the disk is valid UTF-8. Pi reads names as UTF-8 with replacement
    characters, so for any other name it looks for a file that does not exist, and skips it."""
    if name.isascii():
        return True
    try:
        name.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def jsonl_names(folder: str) -> list[str]:
    """The ``.jsonl`` names in ``folder`` that Pi can open (raises OSError as ``os.listdir``)."""
    return [n for n in os.listdir(folder) if n.endswith(".jsonl") and utf8_name(n)]


def project_folders(root: str) -> list[str]:
    """The folders (or links) in a sessions root that Pi reads (raises OSError as ``os.scandir``)."""
    return [
        os.path.join(root, e.name)
        for e in os.scandir(root)
        if (e.is_dir() or e.is_symlink()) and utf8_name(e.name)
    ]


def folder_names(directory: str) -> list[str]:
    """The ``.jsonl`` names of one session folder in the order Pi reads them (descending); none
    when the folder cannot be read or its name is not UTF-8 (Pi cannot name it)."""
    if not utf8_name(directory):
        return []
    try:
        return sorted(jsonl_names(directory), reverse=True)
    except OSError:
        return []


def root_files(root: str) -> list[tuple[str, str]]:
    """(project folder, path) of each ``.jsonl`` file Pi reads in a sessions root, unsorted;
    a root or folder that cannot be read gives none."""
    try:
        folders = project_folders(root)
    except OSError:
        return []
    out: list[tuple[str, str]] = []
    for folder in folders:
        try:
            names = jsonl_names(folder)
        except OSError:
            continue
        out.extend((folder, os.path.join(folder, name)) for name in names)
    return out


def is_sessions_root(folder: str) -> bool:
    """Whether a folder named as a session folder holds no ``.jsonl`` file of its own, and so is read
    as a root of project folders (Pi's ``sessions/``). Pi's ``listAll(folder)`` lists nothing there;
    pisession lists what the project folders in it hold, as ``listAll()`` does for the default root."""
    try:
        return not jsonl_names(folder) and bool(project_folders(folder))
    except OSError:
        return False


def all_of(session_dir: str | None) -> tuple[list[str] | None, str | None]:
    """What :func:`list_all_sessions` (and :meth:`Catalog.list_all`) reads for ``session_dir``:
    (one folder, None), or (None, a sessions root: every project folder in it)."""
    if not session_dir:
        return None, get_sessions_dir()
    folder = normalize_path(session_dir)
    return (None, folder) if is_sessions_root(folder) else ([folder], None)


def _list_dir(directory: str, on_progress: ProgressCallback | None) -> list[SessionInfo]:
    names = folder_names(directory)
    infos = []
    total = len(names)
    for loaded, name in enumerate(names, start=1):
        info = build_session_info(os.path.join(directory, name))
        if info is not None:
            infos.append(info)
        if on_progress is not None:
            on_progress(loaded, total)
    return infos


def list_sessions(
    cwd: str, session_dir: str | None = None, on_progress: ProgressCallback | None = None
) -> list[SessionInfo]:
    """Pi's ``SessionManager.list``: sessions in ``cwd``'s folder (or ``session_dir``), newest first.

    With a ``session_dir`` other than the default, only sessions whose header cwd is ``cwd``.
    """
    directory, only_cwd = list_folder(cwd, session_dir)
    infos = _list_dir(directory, on_progress)
    if only_cwd is not None:
        infos = [info for info in infos if cwd_matches(info.cwd, only_cwd)]
    return _sorted(infos)


def list_all_sessions(
    session_dir: str | None = None, on_progress: ProgressCallback | None = None
) -> list[SessionInfo]:
    """Pi's ``SessionManager.listAll``: every project's sessions (or one folder's), newest first.

    A ``session_dir`` holding no ``.jsonl`` file but project folders is read as a sessions root
    (see :func:`is_sessions_root`).
    """
    folders, root = all_of(session_dir)
    if folders is not None:
        return _sorted(_list_dir(folders[0], on_progress))
    assert root is not None
    candidates: list[tuple[float, str]] = []
    for _, path in root_files(root):
        try:
            mtime = os.stat(path).st_mtime
        except OSError:
            mtime = float("-inf")
        candidates.append((mtime, path))
    candidates.sort(key=lambda item: (item[0], os.path.basename(item[1])), reverse=True)
    infos = []
    total = len(candidates)
    for loaded, (_, path) in enumerate(candidates, start=1):
        info = build_session_info(path)
        if info is not None:
            infos.append(info)
        if on_progress is not None:
            on_progress(loaded, total)
    return _sorted(infos, {path: mtime for mtime, path in candidates})
