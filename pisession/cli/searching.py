"""``pisession search``, and the session catalog that it and ``ls`` read through
(:mod:`pisession.catalog`, imported only when one of them runs)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from pisession import PisessionError

from . import sessions
from .commands import Commands
from .output import Style, emit, emit_json, note

if TYPE_CHECKING:
    from pisession.catalog import Catalog


def open_catalog(*, in_memory: bool = False) -> Catalog | None:
    """The default session catalog (``$PISESSION_CATALOG``), or None when it is refused (a path
    inside Pi's data): listing then reads the files itself. ``in_memory``: a throwaway catalog
    instead of None (search needs one)."""
    from pisession.catalog import Catalog

    try:
        return Catalog()
    except PisessionError as error:
        note(f"session catalog not used ({error})")
        return Catalog(":memory:") if in_memory else None


def close_catalog(catalog: Catalog) -> None:
    """Close it, saying so when it failed and the files were read instead."""
    if catalog.last_error:
        note(f"session catalog not used ({catalog.last_error}); read the session files instead")
    catalog.close()


def cmd_search(args: argparse.Namespace) -> int:
    from pisession.catalog import format_hit

    cwd = os.path.abspath(os.path.expanduser(args.cwd)) if args.cwd else os.getcwd()
    catalog = open_catalog(in_memory=True)
    assert catalog is not None
    try:
        hits = catalog.search(
            args.query,
            cwd=cwd,
            all=args.all,
            role=args.role,
            limit=args.limit,
            session_dir=sessions.session_dir(args, cwd=cwd),
            on_progress=sessions.progress(sys.stderr),
        )
    finally:
        close_catalog(catalog)
    if args.json:
        emit_json([hit.to_wire() for hit in hits])
        return 0
    if not hits:
        emit(f"No messages match {args.query!r}.")
        return 0
    style = Style(sys.stdout)
    for hit in hits:
        emit(format_hit(hit, lambda word: style(word, "bold")))
    first = hits[0]
    where = f" --leaf {first.entry_id}" if first.entry_id else ""
    plural = "es" if len(hits) != 1 else ""
    emit(
        style(
            f"{len(hits)} match{plural}, newest first · pisession context {first.session_path}{where}",
            "dim",
        )
    )
    return 0


def register(commands: Commands) -> None:
    sub = commands.add(
        "search",
        cmd_search,
        "search message text across sessions",
        'Find user, assistant and tool result messages holding every word of QUERY ("quoted words" as '
        "a phrase), newest first, through the session catalog ($PISESSION_CATALOG, else "
        "$XDG_CACHE_HOME/pisession/catalog.sqlite3). Continue from a hit with "
        "`pisession context PATH --leaf ENTRY`. Python: pisession.catalog.search(QUERY, all=True).",
        [commands.where, commands.as_json],
        session=False,
    )
    sub.add_argument("query", metavar="QUERY", help="words to find (whole words, any case)")
    sub.add_argument("--all", action="store_true", help="every project's sessions, not only this folder's")
    sub.add_argument("--cwd", metavar="DIR", help="search the sessions of DIR instead of the current folder")
    sub.add_argument("--role", choices=("user", "assistant", "tool"), help="only messages of this role")
    sub.add_argument("-n", "--limit", metavar="N", type=int, default=50, help="at most N matches (50)")
