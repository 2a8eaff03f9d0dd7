"""The ``import`` command: Claude Code and Codex CLI sessions into Pi session files."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .commands import Commands
from .output import CliError, emit, home_short, note, progress_line


def cmd_import(args: argparse.Namespace) -> int:
    from pisession import SourceFormatError
    from pisession.importers import default_root, find_sources, import_all

    roots: list[Path | None] = []
    for given in args.paths or [None]:
        if given is not None and not Path(given).expanduser().exists():
            raise CliError(f"{given}: no such file or folder")
        roots.append(Path(given).expanduser() if given is not None else None)
    total = sum(len(find_sources(args.source, root)) for root in roots)
    if not total:
        where = ", ".join(args.paths) if args.paths else str(default_root(args.source))
        note(f"no {args.source} sessions found under {home_short(where)}: nothing to import")
        return 0
    show = progress_line(sys.stderr, "pisession: import: {done}/{total} files", after=0.5, every=0.1)
    done = written = existing = failed = 0
    verb = "would write" if args.dry_run else "wrote"
    for root in roots:

        def on_file(number: int, count: int, path: Path, before: int = done) -> None:
            if show is not None:
                show(before + number - 1, total)

        for result in import_all(
            args.source, root, session_dir=args.session_dir, dry_run=args.dry_run, on_file=on_file
        ):
            done += 1
            if isinstance(result, SourceFormatError):
                failed += 1
                note(f"skipped {result}")
                continue
            written += len(result.written)
            existing += len(result.existing)
            for made in result.written:
                emit(f"{verb} {home_short(str(made))}  (from {home_short(str(result.source))})")
            for note_text in result.notes:
                note(f"{home_short(str(result.source))}: {note_text}")
    if show is not None:
        show(total, total)
    outcome = "would be written" if args.dry_run else "written"
    note(
        f"{total} file(s): {written} session(s) {outcome}, {existing} already imported, "
        f"{failed} skipped (not a {args.source} session)"
    )
    return 1 if failed and not written and not existing else 0


def register(commands: Commands) -> None:
    sub = commands.add(
        "import",
        cmd_import,
        "bring Claude Code or Codex CLI sessions into Pi",
        "Import Claude Code sessions (default: every file under $CLAUDE_CONFIG_DIR/projects, "
        "~/.claude/projects) or Codex CLI rollouts (default: $CODEX_HOME/sessions, ~/.codex/sessions) "
        "as Pi session files in the folder Pi uses for each session's cwd (or --session-dir). The whole "
        "tree is kept; a file imported before writes nothing. "
        "Python: pisession.importers.import_session(path) / import_all(source).",
        [commands.where],
        session=False,
    )
    sub.add_argument("source", choices=("claude", "codex"), help="which agent wrote the sessions")
    sub.add_argument(
        "paths", nargs="*", metavar="PATH", help="session files or folders (default: the whole store)"
    )
    sub.add_argument("--dry-run", action="store_true", help="convert and report, write nothing")
    sub.set_defaults(intermixed="paths")  # PATHs may follow the options
