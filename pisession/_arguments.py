"""Checking what a public function was handed for "a session": a manager, or a file's path.

A path is read with :func:`pisession.read_session` (the file is never written); anything else is
a ``TypeError`` that says what the function takes, instead of an ``AttributeError`` from deep
inside it.
"""

from __future__ import annotations

import os

from ._manager import SessionManager
from ._read import read_session
from ._session import not_a_session

__all__ = ["session_manager"]


def session_manager(value: object, function: str) -> SessionManager:
    """``value`` as a manager: itself, or the session file it names, read-only."""
    if isinstance(value, SessionManager):
        return value
    if isinstance(value, (str, os.PathLike)):
        path = os.fspath(value)
        if isinstance(path, str):
            return read_session(path)
    raise not_a_session(value, function)
