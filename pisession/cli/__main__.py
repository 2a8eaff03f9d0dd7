"""``python -m pisession.cli``: the ``pisession`` command."""

import sys

from .main import main

sys.exit(main())
