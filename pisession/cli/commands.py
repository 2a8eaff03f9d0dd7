"""The place commands are registered: each command group's ``register(commands)`` calls
``commands.add(...)`` once per command, with the shared options as ``parents``."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

Handler = Callable[[argparse.Namespace], int]


class Commands:
    """The subcommands of the ``pisession`` parser and the option sets they share."""

    def __init__(self, parser: argparse.ArgumentParser) -> None:
        self._sub = parser.add_subparsers(title="commands", metavar="COMMAND")
        self.where = argparse.ArgumentParser(add_help=False)
        self.where.add_argument(
            "--session-dir",
            metavar="DIR",
            help="folder to look up session ids in (default: $PI_CODING_AGENT_SESSION_DIR, else Pi's)",
        )
        self.as_json = argparse.ArgumentParser(add_help=False)
        self.as_json.add_argument("--json", action="store_true", help="print JSON instead of text")
        self.as_entry = argparse.ArgumentParser(add_help=False)
        self.as_entry.add_argument("--json", action="store_true", help="print the written entry as Pi's JSON")

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
        sub = self._sub.add_parser(name, help=summary, description=description, parents=list(parents))
        if session:
            sub.add_argument(
                "session", metavar="SESSION", help="session file, or session id / unique id prefix"
            )
        sub.set_defaults(handler=handler)
        return sub
