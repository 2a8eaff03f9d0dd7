"""The ``pisession`` command: a thin shell over the library, in the style of sqlite-utils.

Each command is one or two public library calls plus formatting; ``pisession COMMAND --help``
explains it and ``docs/cli.md`` shows each beside its Python equivalent. Read-only commands read
the file with :func:`pisession.read_session` (no newline repair, no migration rewrite, no lock
file), so they never change what they read; editing commands first try the edit on an in-memory
copy, so an edit Pi would reject leaves the file byte for byte as it was.

One module per command group (``reading``, ``checking``, ``editing``, ``export``, ``demo``), each
with a ``register(commands)`` function; ``main`` lists the groups in ``GROUPS``. A new command
group is a module with ``register`` added there.
"""

from __future__ import annotations

import gc

# Importing the command line (argparse, typing, json, ...) makes many objects and no garbage: no
# collection passes meanwhile (about a millisecond of every command's start-up).
_collecting = gc.isenabled()
gc.disable()
try:
    from .main import console_main, main
finally:
    if _collecting:
        gc.enable()

__all__ = ["console_main", "main"]
