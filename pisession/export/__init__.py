"""Exports of a session: Markdown, an interactive HTML viewer, a static HTML page, and JSON lines.

Each ``to_*`` function returns the text; each ``write_*`` writes it to a file atomically (a
temporary file in the same folder, fsync, rename) and private to the owner (mode 0600), as
session files are::

    from pisession import SessionManager
    from pisession.export import to_jsonl, to_markdown, write_html

    manager = SessionManager.open("session.jsonl")
    print(to_markdown(manager))              # the active branch
    write_html(manager, "session.html")      # the interactive viewer, every branch
    branch = to_jsonl(manager)               # Pi's own JSONL export of the branch
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

from .. import __version__
from .._ids import Clock, SystemClock, iso_from_ms
from .._json import dumps as _js_stringify
from .._load import CURRENT_SESSION_VERSION
from .._manager import SessionManager
from .._store import replace_with_temp
from ._common import wire_branch
from ._html import to_html as _to_html
from ._markdown import to_markdown as _to_markdown

__all__ = [
    "to_markdown",
    "to_html",
    "to_static_html",
    "to_jsonl",
    "to_entry_lines",
    "to_json_line",
    "write_markdown",
    "write_html",
    "write_static_html",
    "write_jsonl",
    "write_text",
]


def to_markdown(manager: SessionManager, *, all_branches: bool = False) -> str:
    """The session as a Markdown document: the active branch, or every branch (``all_branches``)
    as numbered runs from each branch point; labels, context edits and compaction boundaries noted.

    :param manager: the session to export.
    :param all_branches: every branch, as numbered runs from each branch point (default: the active branch
        only).
    """
    return _to_markdown(manager, all_branches=all_branches, version=__version__)


def to_html(manager: SessionManager, *, title: str | None = None) -> str:
    """The session as an interactive viewer, as ``pi --export`` makes one: one self-contained
    page (no network fetches) holding every branch, with a tree sidebar, search, filters, tool
    output, context edits and compactions as the model saw them (docs/viewer.md). ``title``
    defaults to the session's name, else its first user message."""
    from .._viewer import render_viewer  # the page's assets are read only when one is made

    return render_viewer(manager, title=title)


def to_static_html(manager: SessionManager, *, all_branches: bool = False) -> str:
    """The session as one static HTML page (inline CSS, no scripts, no network fetches): the
    active branch, or every branch (``all_branches``); every string from the session is
    HTML-escaped, images only as ``data:image/...`` URLs."""
    return _to_html(manager, all_branches=all_branches, version=__version__)


def to_json_line(value: Any) -> str:
    """One value as Pi's ``JSON.stringify`` writes it (key order, number format), no newline.

    ``to_json_line(to_wire(entry))`` is the line a session file holds for ``entry``.

    :param value: a JSON value: dicts, lists, strings, numbers, booleans, None (e.g. ``to_wire(entry)``).
    """
    return _js_stringify(value)


def to_jsonl(manager: SessionManager, *, clock: Clock | None = None) -> str:
    """Pi's ``serializeSessionBranch``: a new header (version, session id, the time now, cwd) and
    the entries from the root to the leaf, each re-parented on the one before it, as JSON lines.

    The result is a session file holding just the active branch (what ``pi`` exports as JSONL).
    ``clock`` (default: the system clock) gives the header's timestamp.

    :param manager: the session whose active branch is exported.
    :param clock: gives the new header's timestamp (default: the system clock).
    """
    now = (clock or SystemClock()).now_ms()
    header = {
        "type": "session",
        "version": CURRENT_SESSION_VERSION,
        "id": manager.get_session_id(),
        "timestamp": iso_from_ms(now),
        "cwd": manager.get_cwd(),
    }
    lines = [_js_stringify(header)]
    parent: Any = None
    for entry in wire_branch(manager):
        lines.append(_js_stringify({**entry, "parentId": parent}))
        parent = entry.get("id")
    return "\n".join(lines) + "\n"


def to_entry_lines(manager: SessionManager, *, all_branches: bool = False) -> str:
    """The entries of the active branch (or of the whole file) as the file holds them, one JSON
    line each, no header: a filter over the session's lines (``pisession export --format jsonl``)."""
    entries: Sequence[Mapping[str, Any]] = (
        list(manager.snapshot().wire_entries()) if all_branches else wire_branch(manager)
    )
    return "".join(_js_stringify(e) + "\n" for e in entries)


def write_text(path: str | os.PathLike[str], text: str) -> str:
    """Write ``text`` (UTF-8) to ``path`` as the exports are written: a temporary file in the same
    folder, fsync, rename over ``path``; mode 0600. Returns the absolute path."""
    target = os.path.abspath(os.path.expanduser(os.fspath(path)))
    data = text.encode("utf-8", "surrogatepass")  # lone surrogates from a file are written back as read
    try:
        fd, temp = tempfile.mkstemp(prefix=".pisession-export-", suffix=".tmp", dir=os.path.dirname(target))
    except OSError as error:  # name the file asked for, not the temporary one
        raise OSError(error.errno, error.strerror, target) from None
    replace_with_temp(target, data, fd, temp)  # mkstemp made it 0600; the rename keeps that mode
    return target


def write_markdown(
    manager: SessionManager, path: str | os.PathLike[str], *, all_branches: bool = False
) -> str:
    """Write `to_markdown` to ``path`` (0600, atomically); returns the absolute path."""
    return write_text(path, to_markdown(manager, all_branches=all_branches))


def write_html(manager: SessionManager, path: str | os.PathLike[str], *, title: str | None = None) -> str:
    """Write `to_html` (the viewer) to ``path`` (0600, atomically); returns the absolute path."""
    return write_text(path, to_html(manager, title=title))


def write_static_html(
    manager: SessionManager, path: str | os.PathLike[str], *, all_branches: bool = False
) -> str:
    """Write `to_static_html` to ``path`` (0600, atomically); returns the absolute path."""
    return write_text(path, to_static_html(manager, all_branches=all_branches))


def write_jsonl(manager: SessionManager, path: str | os.PathLike[str], *, clock: Clock | None = None) -> str:
    """Write `to_jsonl` to ``path`` (0600, atomically); returns the absolute path."""
    return write_text(path, to_jsonl(manager, clock=clock))
