"""The ``export`` command: Markdown, HTML or JSON lines, to stdout or to a file (0600)."""

from __future__ import annotations

import argparse
import os

from . import sessions
from .commands import Commands
from .output import CliError, note, write_out

FORMATS = ("md", "html", "static-html", "jsonl", "pi-jsonl")


def cmd_export(args: argparse.Namespace) -> int:
    from pisession.export import to_entry_lines, to_html, to_jsonl, to_markdown, to_static_html, write_text

    path = sessions.resolve(args)
    manager = sessions.load(path)
    if args.format == "jsonl":
        text = to_entry_lines(manager, all_branches=args.all)
    elif args.format == "pi-jsonl":
        if args.all:
            raise CliError(
                "--format pi-jsonl exports the active branch only (Pi's format); leave out --all", 2
            )
        text = to_jsonl(manager)
    elif args.format == "md":
        text = to_markdown(manager, all_branches=args.all)
    elif args.format == "static-html":
        text = to_static_html(manager, all_branches=args.all)
    else:
        text = to_html(manager)  # the viewer holds every branch: --all changes nothing
    if args.output in (None, "-"):
        write_out(text)  # control characters shown escaped; a file (-o) gets the text as it is
        return 0
    target = os.path.abspath(os.path.expanduser(args.output))
    if os.path.exists(target) and os.path.samefile(target, path):
        raise CliError("refusing to overwrite the session itself with its export")
    note(f"wrote {write_text(target, text)}")
    return 0


def register(commands: Commands) -> None:
    sub = commands.add(
        "export",
        cmd_export,
        "export as Markdown, HTML or JSON lines",
        "Export the active branch (or --all branches): md, html (an interactive viewer of every "
        "branch in one self-contained file, as `pi --export` makes), static-html (a plain page, no "
        "scripts), jsonl (the entries as the file holds them, no header), or pi-jsonl (Pi's own "
        "export of the active branch: a new header and the branch, a session file of its own). "
        "Python: pisession.export.to_markdown / to_html / to_static_html / to_entry_lines / "
        "to_jsonl(manager).",
        [commands.where],
    )
    sub.add_argument("--format", choices=FORMATS, required=True)
    sub.add_argument("--all", action="store_true", help="every branch, not only the active one")
    sub.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write to FILE instead of stdout (`-`): a regular file is replaced atomically (mode 0600), a "
        "device or pipe (/dev/null, a FIFO, /dev/stdout) is written to, never replaced",
    )
