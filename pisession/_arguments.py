"""Checking what a public function was handed for "a session": a manager, or a file's path.

A path is read with :func:`pisession.read_session` (the file is never written); anything else is
a ``TypeError`` that says what the function takes, instead of an ``AttributeError`` from deep
inside it.
"""

from __future__ import annotations

import os

from ._manager import SessionManager

__all__ = ["session_manager"]


def session_manager(value: object, function: str) -> SessionManager:
    """``value`` as a manager: itself, or the session file it names, read-only."""
    if isinstance(value, SessionManager):
        return value
    if isinstance(value, (str, os.PathLike)):
        from ._read import read_session

        path = os.fspath(value)
        if isinstance(path, str):
            return read_session(path)
    raise TypeError(
        f"{function}() takes a SessionManager or the path of a session file, not {type(value).__name__}"
        + _hint(value)
    )


def _hint(value: object) -> str:
    name = type(value).__name__
    if name == "AsyncSessionManager":
        return " (pass its .sync manager, or the path of its session file)"
    if name == "TreeIndex":
        return " (a snapshot has no leaf: pass the manager it came from, or the file's path)"
    return ""
