"""``pisession search``, and the session catalog that it and ``ls`` read through
(:mod:`pisession.catalog`, imported only when one of them runs)."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

from pisession import PisessionError, default_session_dir

from . import sessions
from .commands import Commands
from .output import Style, emit, emit_json, note

if TYPE_CHECKING:
    from pisession.catalog import Catalog, SessionMatch


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
    if catalog.last_notice:
        note(catalog.last_notice)
    if catalog.last_error:
        note(f"session catalog not used ({catalog.last_error}); read the session files instead")
    catalog.close()


def _searched(args: argparse.Namespace, cwd: str, session_dir: str | None, scoped_cwd: str | None) -> str:
    """What a search covered, in words, for "nothing found" and "showing N of M"."""
    if session_dir and scoped_cwd is None:
        return f"the sessions in {session_dir}"
    if args.all:
        return f"every project's sessions ({os.path.dirname(default_session_dir(cwd))})"
    folder = session_dir or default_session_dir(cwd)
    return f"the sessions of {cwd} ({folder}; --all searches every project)"


def cmd_search(args: argparse.Namespace) -> int:
    from pisession.catalog import format_hit

    cwd = os.path.abspath(os.path.expanduser(args.cwd)) if args.cwd else os.getcwd()
    session_dir = sessions.session_dir(args, cwd=cwd)
    # a folder named on the command line is searched whole, unless --cwd narrows it
    scoped_cwd = None if getattr(args, "session_dir", None) and not args.cwd else cwd
    catalog = open_catalog(in_memory=True)
    assert catalog is not None
    progress = sessions.progress(sys.stderr)
    try:
        if args.sessions:
            matches = catalog.search_sessions(
                args.query,
                cwd=scoped_cwd,
                all=args.all,
                role=args.role,
                session_dir=session_dir,
                on_progress=progress,
            )
        else:
            hits = catalog.search(
                args.query,
                cwd=scoped_cwd,
                all=args.all,
                role=args.role,
                limit=args.limit,
                session_dir=session_dir,
                on_progress=progress,
            )
            total = catalog.last_total if catalog.last_total is not None else len(hits)
    finally:
        close_catalog(catalog)
    searched = _searched(args, cwd, session_dir, scoped_cwd)
    if args.sessions:
        return _print_sessions(args, matches, searched)
    if args.json:
        emit_json([hit.to_wire() for hit in hits])
        return 0
    if not hits:
        emit(f"No messages match {args.query!r} in {searched}.")
        return 0
    style = Style(sys.stdout)
    for hit in hits:
        emit(format_hit(hit, lambda word: style(word, "bold")))
    first = hits[0]
    where = f" --leaf {first.entry_id}" if first.entry_id else ""
    plural = "es" if total != 1 else ""
    shown = (
        f"showing {len(hits)} of {total} matches (-n to see more)"
        if total > len(hits)
        else f"{total} match{plural}"
    )
    emit(style(f"{shown}, newest first · pisession context {first.session_path}{where}", "dim"))
    return 0


def _print_sessions(args: argparse.Namespace, matches: list[SessionMatch], searched: str) -> int:
    if args.json:
        emit_json([match.to_wire() for match in matches])
        return 0
    if not matches:
        emit(f"No messages match {args.query!r} in {searched}.")
        return 0
    from pisession.describe import local_time_text

    style = Style(sys.stdout)
    width = max(4, *(len(str(match.hits)) for match in matches))
    emit(style(f"{'NEWEST MATCH':<16}  {'HITS':>{width}}  {'ID':<8}  PATH", "bold"))
    for match in matches:
        when = "????-??-?? ??:??" if match.newest is None else local_time_text(match.newest)
        emit(f"{when}  {match.hits:>{width}}  {match.session_id[:8]:<8}  {match.session_path}")
    total = sum(match.hits for match in matches)
    plural = "s" if len(matches) != 1 else ""
    emit(style(f"{len(matches)} session{plural}, {total} matching messages, newest first", "dim"))
    return 0


def register(commands: Commands) -> None:
    sub = commands.add(
        "search",
        cmd_search,
        "search message text across sessions",
        'Find user, assistant and tool result messages holding every word of QUERY ("quoted words" as '
        "a phrase), newest first, through the session catalog ($PISESSION_CATALOG, else "
        "$XDG_CACHE_HOME/pisession/catalog-v<schema>-u<Unicode>.sqlite3, one per version). "
        "Continue from a hit with `pisession context PATH --leaf ENTRY`. "
        "Python: pisession.catalog.search(QUERY, all=True).",
        [commands.where, commands.as_json],
        session=False,
    )
    sub.add_argument("query", metavar="QUERY", help="words to find (whole words, any case)")
    sub.add_argument("--all", action="store_true", help="every project's sessions, not only this folder's")
    sub.add_argument("--cwd", metavar="DIR", help="search the sessions of DIR instead of the current folder")
    sub.add_argument("--role", choices=("user", "assistant", "tool"), help="only messages of this role")
    sub.add_argument("-n", "--limit", metavar="N", type=int, default=50, help="at most N matches (50)")
    sub.add_argument(
        "--sessions",
        action="store_true",
        help="list the sessions that match, with their number of matching messages, instead of the messages",
    )
