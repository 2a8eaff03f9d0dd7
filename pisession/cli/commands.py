"""The place commands are registered: each command group's ``register(commands)`` calls
``commands.add(...)`` once per command, with the shared options as ``parents``."""

from __future__ import annotations

import argparse
import functools
from collections.abc import Callable, Sequence

from .output import terminal_columns

# typing for type checkers only (they take TYPE_CHECKING for true): importing it at run time
# took 8 % of `pisession tree`'s start-up.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

Handler = Callable[[argparse.Namespace], int]


class Formatter(argparse.HelpFormatter):
    """argparse's help formatter, with the width it takes from ``shutil.get_terminal_size()``
    found without importing shutil (argparse makes a formatter for every option it adds)."""

    def __init__(
        self, prog: str, indent_increment: int = 2, max_help_position: int = 24, width: int | None = None
    ) -> None:
        width = terminal_columns(80) - 2 if width is None else width
        super().__init__(prog, indent_increment, max_help_position, width)


class _NotBuilt:
    """What :meth:`Commands.add` gives for a command that will not run: it takes the command's
    options and builds nothing."""

    def __getattr__(self, name: str) -> Any:
        return self._ignore

    def _ignore(self, *args: Any, **kwargs: Any) -> _NotBuilt:
        return self


class Commands:
    """The subcommands of the ``pisession`` parser and the option sets they share.

    ``only``: the one command that will run (its name is the first word of the command line);
    the others are not built. Building a command's parser costs argparse about a millisecond,
    and the usage line names no command (``COMMAND``), so nothing printed changes.
    """

    def __init__(self, parser: argparse.ArgumentParser, only: str | None = None) -> None:
        self._sub = parser.add_subparsers(title="commands", metavar="COMMAND")
        self._only = only

    @functools.cached_property
    def where(self) -> argparse.ArgumentParser:
        where = argparse.ArgumentParser(add_help=False, formatter_class=Formatter)
        where.add_argument(
            "--session-dir",
            metavar="DIR",
            help="folder to look up session ids in (default: $PI_CODING_AGENT_SESSION_DIR, else Pi's "
            "sessionDir setting, else Pi's default folder)",
        )
        return where

    @functools.cached_property
    def as_json(self) -> argparse.ArgumentParser:
        as_json = argparse.ArgumentParser(add_help=False, formatter_class=Formatter)
        as_json.add_argument("--json", action="store_true", help="print JSON instead of text")
        return as_json

    @functools.cached_property
    def as_entry(self) -> argparse.ArgumentParser:
        as_entry = argparse.ArgumentParser(add_help=False, formatter_class=Formatter)
        as_entry.add_argument("--json", action="store_true", help="print the written entry as Pi's JSON")
        return as_entry

    def add(
        self,
        name: str,
        handler: Handler,
        summary: str,
        description: str,
        parents: Sequence[argparse.ArgumentParser] = (),
        session: bool = True,
    ) -> argparse.ArgumentParser:
        """Add command ``name`` run by ``handler``; ``session`` adds the SESSION argument."""
        if self._only is not None and name != self._only:
            return _NotBuilt()  # type: ignore[return-value]  # it takes every call a parser takes
        sub = self._sub.add_parser(
            name, help=summary, description=description, parents=list(parents), formatter_class=Formatter
        )
        if session:
            sub.add_argument(
                "session", metavar="SESSION", help="session file, or session id / unique id prefix"
            )
        sub.set_defaults(handler=handler)
        return sub
