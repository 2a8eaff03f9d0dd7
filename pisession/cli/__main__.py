"""``python -m pisession.cli``: the ``pisession`` command."""

import sys

from .main import console_main

sys.exit(console_main())
