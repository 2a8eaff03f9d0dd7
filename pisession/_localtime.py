"""Times shown in the local time zone, as the C library (and Node) compute it.

``datetime.astimezone()`` refuses a local offset of a whole day or more, which ``TZ=UTC+24``
(or ``UTC-30``, ``UTC+99``: the C library clamps them to 24 hours, as Node does) gives: the
local time is read from ``time.localtime`` instead, which takes any offset the C library makes.
"""

from __future__ import annotations

import time

# datetime for type checkers only: `pisession tree` shows no time and imports this module
TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import datetime

__all__ = ["local_time_text"]


def local_time_text(when: datetime | float, fmt: str = "%Y-%m-%d %H:%M") -> str:
    """``when`` (an aware datetime, or seconds since the epoch) in local time, as ``fmt``
    (``time.strftime`` codes) writes it; in UTC where the C library has no local time for it."""
    seconds = when if isinstance(when, (int, float)) else when.timestamp()
    try:
        return time.strftime(fmt, time.localtime(seconds))
    except (OverflowError, OSError, ValueError):
        from datetime import datetime, timezone

        try:
            return datetime.fromtimestamp(seconds, timezone.utc).strftime(fmt)
        except (OverflowError, OSError, ValueError):
            return "????-??-?? ??:??"
