"""The files a refresh looks at: each ``.jsonl`` file Pi's list would read, in its order, with
the ``stat`` taken for this call (:func:`candidates`), and the rows the catalog holds for them
(:func:`stored_rows`)."""

from __future__ import annotations

import os
import sqlite3
from typing import Any

from .._discovery import folder_names, root_files
from .._record import Record
from ._schema import FILE_COLUMNS, Row


class Candidate(Record):
    """A ``.jsonl`` name found in a folder, with the ``stat`` taken for this call (None: failed)."""

    path: str
    dir: str
    stat: os.stat_result | None


def _stat(path: str) -> os.stat_result | None:
    try:
        return os.stat(path)
    except (OSError, ValueError):
        return None


def candidates(
    directories: list[str] | None, root: str | None, named: list[tuple[str, str]] | None = None
) -> list[Candidate]:
    """The files Pi's list would read, in the order it reads them (which breaks ties);
    ``named``: their :func:`names`, found already."""
    out = [Candidate(path, folder, _stat(path)) for folder, path in named or names(directories, root)]
    if directories is not None:
        return out
    out.sort(
        key=lambda c: (float("-inf") if c.stat is None else c.stat.st_mtime, os.path.basename(c.path)),
        reverse=True,
    )
    return out


def names(directories: list[str] | None, root: str | None) -> list[tuple[str, str]]:
    """(folder, path) of the files Pi's list would read (in a folder, in its order)."""
    if directories is not None:
        return [
            (directory, os.path.join(directory, name))
            for directory in directories
            for name in folder_names(directory)
        ]
    assert root is not None
    return root_files(root)


def stored_rows(
    connection: sqlite3.Connection, directories: list[str] | None, root: str | None
) -> dict[str, Row]:
    if directories is not None:
        rows: list[Any] = []
        for directory in directories:
            rows += connection.execute(
                f"SELECT {FILE_COLUMNS} FROM files WHERE dir = ?", (directory,)
            ).fetchall()
    else:
        assert root is not None
        prefix = os.path.join(root, "")
        rows = connection.execute(
            f"SELECT {FILE_COLUMNS} FROM files WHERE dir >= ? AND dir < ?",
            (prefix, prefix[:-1] + chr(ord(prefix[-1]) + 1)),
        ).fetchall()
        rows = [row for row in rows if os.path.dirname(row[2]) == root]
    return {row[1]: Row(*row) for row in rows}
