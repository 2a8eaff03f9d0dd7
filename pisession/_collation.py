"""Ordering names as Pi does: JavaScript's ``localeCompare`` (ICU's collation, English locale).

Pi lists a folder's session files in descending ``localeCompare`` order of their names, and keeps
that order among sessions with the same ``modified`` time. ICU compares strings level by level:
the base letters first (punctuation < digits < letters, any case, accents aside), then the
accents, then the case (lower before upper). :func:`collation_key` builds such a key from
per-character weights taken from Node (``pisession/data/collation.json``, made by
``tests/conformance/generate_collation.py``) for Latin, Greek, Cyrillic, punctuation and currency
characters; other characters sort after those, by code point. Not modelled: characters ICU expands
to several letters (``ß``, ``æ``, ligatures) or contracts, and locales whose tailoring differs from
English (Swedish ``å``/``ä``/``ö``...).
"""

from __future__ import annotations

import functools
import json
import os
import unicodedata

_UNKNOWN = 1 << 20  # primary weights past every known character's


@functools.cache
def _table() -> tuple[dict[str, tuple[int, int, int]], tuple[tuple[int, int], ...]]:
    path = os.path.join(os.path.dirname(__file__), "data", "collation.json")
    with open(path, encoding="utf-8") as handle:
        document = json.load(handle)
    flat = document["weights"]
    weights = {
        chr(point): (flat[3 * n], flat[3 * n + 1], flat[3 * n + 2])
        for n, point in enumerate(document["points"])
    }
    ranges = tuple((start, end) for start, end in document["ranges"])
    return weights, ranges


def collation_key(name: str) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """A key that orders names as ``a.localeCompare(b)`` does (within the limits above)."""
    weights, ranges = _table()
    primary: list[int] = []
    secondary: list[int] = []
    tertiary: list[int] = []
    for char in unicodedata.normalize("NFD", name):
        weight = weights.get(char)
        if weight is None:
            point = ord(char)
            if any(start <= point <= end for start, end in ranges) or unicodedata.category(char) in (
                "Cc",
                "Cf",
            ):
                continue  # a character ICU gives no weight
            weight = (_UNKNOWN + point, 0, 0)
        if weight[0]:
            primary.append(weight[0])
        secondary.append(weight[1])
        tertiary.append(weight[2])
    return tuple(primary), tuple(secondary), tuple(tertiary)
