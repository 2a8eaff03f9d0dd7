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

import errno
import os
import re
import stat
import tempfile
from collections.abc import Mapping, Sequence
from typing import Any

from .._arguments import session_manager
from .._ids import Clock, SystemClock, iso_from_ms
from .._json import dumps as _js_stringify
from .._json import to_json_line
from .._load import CURRENT_SESSION_VERSION
from .._manager import SessionManager
from .._reading import SessionSnapshot
from .._store import _write_all, replace_with_temp
from .._version import __version__
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


def to_markdown(manager: SessionManager | str | os.PathLike[str], *, all_branches: bool = False) -> str:
    """The session as a Markdown document: the active branch, or every branch (``all_branches``)
    as numbered runs from each branch point; labels, context edits and compaction boundaries noted.

    :param manager: the session to export.
    :param all_branches: every branch, as numbered runs from each branch point (default: the active branch
        only).
    """
    view = SessionSnapshot(session_manager(manager, "to_markdown"))  # one moment, read once
    return _to_markdown(view, all_branches=all_branches, version=__version__)


def to_html(manager: SessionManager | str | os.PathLike[str], *, title: str | None = None) -> str:
    """The session as an interactive viewer, as ``pi --export`` makes one: one self-contained
    page (no network fetches) holding every branch, with a tree sidebar, search, filters, tool
    output, context edits and compactions as the model saw them (docs/viewer.md). ``title``
    defaults to the session's name, else its first user message."""
    view = SessionSnapshot(session_manager(manager, "to_html"))  # one moment, read once
    from .._viewer import render_viewer  # the page's assets are read only when one is made

    return render_viewer(view, title=title)


def to_static_html(manager: SessionManager | str | os.PathLike[str], *, all_branches: bool = False) -> str:
    """The session as one static HTML page (inline CSS, no scripts, no network fetches): the
    active branch, or every branch (``all_branches``); every string from the session is
    HTML-escaped, images only as ``data:image/...`` URLs."""
    view = SessionSnapshot(session_manager(manager, "to_static_html"))  # one moment, read once
    return _to_html(view, all_branches=all_branches, version=__version__)


def to_jsonl(manager: SessionManager | str | os.PathLike[str], *, clock: Clock | None = None) -> str:
    """Pi's ``serializeSessionBranch``: a new header (version, session id, the time now, cwd) and
    the entries from the root to the leaf, each re-parented on the one before it, as JSON lines.

    The result is a session file holding just the active branch (what ``pi`` exports as JSONL).
    ``clock`` (default: the system clock) gives the header's timestamp.

    :param manager: the session whose active branch is exported.
    :param clock: gives the new header's timestamp (default: the system clock).
    """
    view = SessionSnapshot(session_manager(manager, "to_jsonl"))  # one moment, read once
    now = (clock or SystemClock()).now_ms()
    header = {
        "type": "session",
        "version": CURRENT_SESSION_VERSION,
        "id": view.get_session_id(),
        "timestamp": iso_from_ms(now),
        "cwd": view.get_cwd(),
    }
    lines = [_js_stringify(header)]
    parent: Any = None
    for entry in wire_branch(view):
        lines.append(_js_stringify({**entry, "parentId": parent}))
        parent = entry.get("id")
    return "\n".join(lines) + "\n"


def to_entry_lines(manager: SessionManager | str | os.PathLike[str], *, all_branches: bool = False) -> str:
    """The entries of the active branch (or of the whole file) as the file holds them, one JSON
    line each, no header: a filter over the session's lines (``pisession export --format jsonl``)."""
    view = SessionSnapshot(session_manager(manager, "to_entry_lines"))  # one moment, read once
    entries: Sequence[Mapping[str, Any]] = (
        list(view.snapshot().wire_entries()) if all_branches else wire_branch(view)
    )
    return "".join(_js_stringify(e) + "\n" for e in entries)


def write_text(path: str | os.PathLike[str], text: str) -> str:
    """Write ``text`` (UTF-8) to ``path`` as the exports are written; returns the absolute path.

    A regular file (new or existing) is replaced atomically: a temporary file in the same
    folder, fsync, rename; mode 0600. A symbolic link to a regular file is kept and its target
    replaced that way. A character device or a pipe (``/dev/null``, a terminal, a FIFO) is
    written to as shell redirection would, never replaced; so is a link to one of this
    process's descriptors (``/dev/stdout``, ``/dev/fd/N``, ``/proc/self/fd/N``), at the
    descriptor's own position. A folder, a socket, a block device and a dangling link are
    refused with an `OSError` naming the path.
    """
    target = os.path.abspath(os.path.expanduser(os.fspath(path)))
    data = text.encode("utf-8", "surrogatepass")  # lone surrogates from a file are written back as read
    descriptor = _own_descriptor(target)
    if descriptor is not None:
        _write_to_descriptor(descriptor, data, target)
        return target
    try:
        info = os.stat(target)
    except FileNotFoundError:
        if os.path.islink(target):  # as cp does: a dangling link is not written through
            raise OSError(errno.ENOENT, "not writing through a dangling symbolic link", target) from None
        _replace(target, data)
        return target
    if stat.S_ISREG(info.st_mode):
        _replace(os.path.realpath(target), data)  # a link stays a link: its target is replaced
    elif stat.S_ISCHR(info.st_mode) or stat.S_ISFIFO(info.st_mode):
        _write_in_place(target, data)
    elif stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(errno.EISDIR, "Is a directory", target)
    else:
        if stat.S_ISSOCK(info.st_mode):
            kind = "a socket"
        elif stat.S_ISBLK(info.st_mode):
            kind = "a block device"
        else:
            kind = "something that is not a file"
        raise OSError(errno.EINVAL, f"refusing to write an export to {kind}", target)
    return target


def _replace(target: str, data: bytes) -> None:
    try:
        fd, temp = tempfile.mkstemp(prefix=".pisession-export-", suffix=".tmp", dir=os.path.dirname(target))
    except OSError as error:  # name the file asked for, not the temporary one
        raise OSError(error.errno, error.strerror, target) from None
    replace_with_temp(target, data, fd, temp)  # mkstemp made it 0600; the rename keeps that mode


_DESCRIPTOR_NAME = re.compile(r"/proc/(?:self|thread-self|\d+(?:/task/\d+)?)/fd/(\d+)|/dev/fd/(\d+)")


def _own_descriptor(target: str) -> int | None:
    """The descriptor of this process that ``target`` names through links (``/dev/stdout``,
    ``/dev/fd/1``, ``/proc/self/fd/1``), else None."""
    own = {"self", "thread-self", str(os.getpid())}
    path = target
    for _ in range(40):  # the kernel's own limit on links followed
        folder = os.path.realpath(os.path.dirname(path))
        match = _DESCRIPTOR_NAME.fullmatch(os.path.join(folder, os.path.basename(path)))
        if match is not None and (match.group(2) is not None or folder.split("/")[2] in own):
            return int(match.group(1) or match.group(2))
        if not os.path.islink(path):
            return None
        try:
            link = os.readlink(path)
        except OSError:
            return None
        path = os.path.join(folder, link)
    return None


def _write_to_descriptor(fd: int, data: bytes, target: str) -> None:
    """Write at the descriptor's own position (an append-mode log stays appended to), as
    ``>&N`` would; the descriptor stays open."""
    try:
        _write_all(fd, data)
    except OSError as error:
        raise _named(error, target) from None


def _write_in_place(target: str, data: bytes) -> None:
    """Open a device or a pipe for writing and write, as ``cp``/``tee``/``>`` would: no new
    file, no rename, nothing created or truncated."""
    try:
        fd = os.open(target, os.O_WRONLY | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError as error:
        raise _named(error, target) from None
    try:
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISCHR(mode) or stat.S_ISFIFO(mode)):  # swapped since the check
            raise OSError(errno.EAGAIN, "the file changed while being opened; try again", target)
        _write_all(fd, data)
    except OSError as error:
        raise _named(error, target) from None
    finally:
        os.close(fd)


def _named(error: OSError, target: str) -> OSError:
    if error.errno == errno.EPIPE:  # OSError(EPIPE) would be a BrokenPipeError: the CLI's own stdout
        return OSError(errno.EIO, "the reader closed the pipe before the export was written", target)
    return OSError(error.errno, error.strerror, error.filename or target)


def write_markdown(
    manager: SessionManager | str | os.PathLike[str],
    path: str | os.PathLike[str],
    *,
    all_branches: bool = False,
) -> str:
    """Write `to_markdown` to ``path`` (0600, atomically); returns the absolute path."""
    manager = session_manager(manager, "write_markdown")
    return write_text(path, to_markdown(manager, all_branches=all_branches))


def write_html(
    manager: SessionManager | str | os.PathLike[str],
    path: str | os.PathLike[str],
    *,
    title: str | None = None,
) -> str:
    """Write `to_html` (the viewer) to ``path`` (0600, atomically); returns the absolute path."""
    manager = session_manager(manager, "write_html")
    return write_text(path, to_html(manager, title=title))


def write_static_html(
    manager: SessionManager | str | os.PathLike[str],
    path: str | os.PathLike[str],
    *,
    all_branches: bool = False,
) -> str:
    """Write `to_static_html` to ``path`` (0600, atomically); returns the absolute path."""
    manager = session_manager(manager, "write_static_html")
    return write_text(path, to_static_html(manager, all_branches=all_branches))


def write_jsonl(
    manager: SessionManager | str | os.PathLike[str],
    path: str | os.PathLike[str],
    *,
    clock: Clock | None = None,
) -> str:
    """Write `to_jsonl` to ``path`` (0600, atomically); returns the absolute path."""
    manager = session_manager(manager, "write_jsonl")
    return write_text(path, to_jsonl(manager, clock=clock))
