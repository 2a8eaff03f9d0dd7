"""The ``pisession`` parser and entry point: builds the commands from ``GROUPS``, runs one, and
turns every expected failure into one ``pisession: error: ...`` line and an exit status."""

from __future__ import annotations

import argparse
import contextlib
import errno
import gc
import importlib
import io
import math
import os
import sys
import warnings
from collections.abc import Sequence

from pisession import PisessionError, __version__

from .commands import Commands, Formatter
from .output import CliError, write_out

# typing for type checkers only (they take TYPE_CHECKING for true): importing it at run time
# took 8 % of `pisession tree`'s start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# Command groups (modules of this package) in the order `pisession --help` lists them; a new group
# is a module with a `register(commands)` function added here, and its commands to COMMANDS.
GROUPS = (
    "demo",
    "listing",
    "reading",
    "searching",
    "checking",
    "editing",
    "summarizing",
    "export",
    "importing",
    "settings",
    "usage",
    "dataset",
)

# Which group registers each command: `pisession tree` imports and registers only `reading`, so a
# command pays for its own group's imports and no other's (a test checks this table against
# what the groups register).
COMMANDS = {
    "demo": "demo",
    "ls": "listing",
    **dict.fromkeys(("tree", "context", "tail"), "reading"),
    "search": "searching",
    **dict.fromkeys(("stats", "validate"), "checking"),
    **dict.fromkeys(("name", "label", "edit", "fork", "extract", "migrate"), "editing"),
    **dict.fromkeys(("branch", "compact"), "summarizing"),
    "export": "export",
    "import": "importing",
    **dict.fromkeys(("settings", "models"), "settings"),
    "usage": "usage",
    "dataset": "dataset",
}


def _command_name(argv: Sequence[str]) -> str | None:
    """The command word of ``argv``, when it can be told before parsing (else None: all groups)."""
    args = iter(argv)
    for arg in args:
        if arg == "--lock-timeout":
            next(args, None)
        elif not arg.startswith("-"):
            return arg
    return None


def build_parser(groups: Sequence[str] = GROUPS, only: str | None = None) -> argparse.ArgumentParser:
    """The parser with the commands of ``groups`` (default: all, as ``--help`` lists them), or
    with command ``only`` alone, of those."""
    parser = argparse.ArgumentParser(
        prog="pisession",
        formatter_class=Formatter,
        description="Read, check and edit the session files of the Pi coding agent. SESSION is a file path, "
        "or "
        "a session id (or unique id prefix) from the current folder's sessions, as with `pi --session`.",
        epilog="Session folder: --session-dir, else $PI_CODING_AGENT_SESSION_DIR, else Pi's sessionDir "
        "setting, else $PI_CODING_AGENT_DIR/sessions/--<cwd>-- (default agent dir ~/.pi/agent); "
        "`pisession settings` shows which. "
        "`pisession demo` writes and shows a sample session.",
    )
    parser.add_argument("--version", action="version", version=f"pisession {__version__}")
    parser.add_argument(
        "--lock-timeout",
        metavar="SECONDS",
        type=_seconds,
        default=30.0,
        help="editing commands wait at most this long for another writer's session lock (default 30)",
    )
    commands = Commands(parser, only)
    for group in groups:
        importlib.import_module(f"{__package__}.{group}").register(commands)
    return parser


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}")
    return value


def _show_warning(message: Warning | str, category: type[Warning], *_: Any, **__: Any) -> None:
    write_out(f"pisession: warning: {message}\n", sys.stderr)


def _os_error_text(error: OSError) -> str:
    where = f": {error.filename}" if error.filename else ""
    return f"{error.strerror or error}{where}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``pisession`` command line (``argv``: its words, default ``sys.argv[1:]``);
    returns the exit status."""
    return _main(argv, exiting=False)


def console_main() -> int:
    """The ``pisession`` console script and ``python -m pisession.cli``: :func:`main` in a
    process that exits right after it. What start-up made is frozen out of the garbage
    collector's reach (it lives until the exit), and the interpreter's last collection pass
    would walk every object left (about 4 ms of ``pisession tree``) where none needs it: a
    process that goes on after the command calls :func:`main`, which freezes nothing."""
    try:
        return _main(None, exiting=True)
    finally:
        gc.freeze()


class _ClosedStdout(io.TextIOBase):
    """stdout when its descriptor was closed (``pisession ls >&-``, a daemon): Python leaves
    ``sys.stdout`` None, and writing to it ends as a closed pipe does."""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        raise BrokenPipeError(errno.EPIPE, "stdout is closed")


def _guard_standard_streams() -> None:
    """Give a closed standard descriptor ``/dev/null``, so that no file this command opens
    (a session, the catalog, a Parquet file) takes number 0, 1 or 2 and gets another's bytes;
    a closed stdout then writes as a broken pipe, a closed stderr into nothing."""
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            try:
                opened = os.open(os.devnull, os.O_RDWR)
            except OSError:
                continue
            if opened != fd:
                os.dup2(opened, fd)
                os.close(opened)
    if sys.stdout is None:
        sys.stdout = _ClosedStdout()
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - lives until the exit


def _main(argv: Sequence[str] | None, *, exiting: bool) -> int:
    _guard_standard_streams()
    words = sys.argv[1:] if argv is None else argv
    name = _command_name(words)
    group = COMMANDS.get(name or "")
    if list(words) == ["--version"]:
        groups: Sequence[str] = ()  # a prompt asking for the version needs no command
    else:
        groups = GROUPS if group is None else (group,)
    # The command first (`pisession tree ...`, what scripts run): only its own parser is built.
    only = name if group is not None and words and words[0] == name else None
    collecting = gc.isenabled()
    gc.disable()  # importing a command group makes many objects and no garbage: no collection passes
    try:
        parser = build_parser(groups, only)
    finally:
        if exiting:
            gc.freeze()  # what the console script has made so far lives until it exits
        if collecting:
            gc.enable()
    try:
        args, extras = parser.parse_known_args(argv)
        if extras:
            # argparse ends a command's PATH list at the first option (`import codex --dry-run
            # PATH`): a command that names its list takes the words after it too
            intermixed = getattr(args, "intermixed", None)
            unknown = [w for w in extras if w.startswith("-")] if isinstance(intermixed, str) else extras
            if unknown or not isinstance(intermixed, str):
                parser.error("unrecognized arguments: " + " ".join(unknown))
            getattr(args, intermixed).extend(extras)
    except SystemExit as exit_:
        return exit_.code if isinstance(exit_.code, int) else 2
    handler = getattr(args, "handler", None)
    if handler is None:
        parser.print_help()
        return 0
    reconfigure = getattr(sys.stdout, "reconfigure", None)
    if reconfigure is not None:
        with contextlib.suppress(ValueError, OSError):
            reconfigure(errors="backslashreplace")  # lone surrogates from a file must not crash output
    try:
        with warnings.catch_warnings():
            warnings.showwarning = _show_warning
            return int(handler(args))
    except CliError as error:
        write_out(f"pisession: error: {error}\n", sys.stderr)
        return error.code
    except PisessionError as error:
        write_out(f"pisession: error: {error}\n", sys.stderr)
        return 1
    except BrokenPipeError:
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):
            pass
        return 1
    except OSError as error:
        write_out(f"pisession: error: {_os_error_text(error)}\n", sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except MemoryError:
        write_out("pisession: error: out of memory (a session too large for the memory given)\n", sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
