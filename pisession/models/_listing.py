"""``pi --list-models [SEARCH]``: the credentialed models, fuzzy-filtered (pi-tui's
``fuzzyFilter``: every whitespace- or slash-separated token must match ``provider id`` in order),
sorted by provider then id (``localeCompare``), as Pi's table."""

from __future__ import annotations

import re
from collections.abc import Iterable

from .._collation import collation_key
from ._registry import Model

__all__ = ["fuzzy_match", "format_model_table", "filter_models"]


def _matches(query: str, text: str) -> bool:
    if not query:
        return True
    if len(query) > len(text):
        return False
    last = -1
    for ch in query:
        last = text.find(ch, last + 1)
        if last < 0:
            return False
    return True


def fuzzy_match(query: str, text: str) -> bool:
    """pi-tui's ``fuzzyMatch`` (whether it matches; the score only orders, and Pi sorts after)."""
    q, t = query.lower(), text.lower()
    if _matches(q, t):
        return True
    m = re.match(r"^([a-z]+)([0-9]+)$", q) or re.match(r"^([0-9]+)([a-z]+)$", q)
    return m is not None and _matches(m.group(2) + m.group(1), t)


def filter_models(models: Iterable[Model], search: str | None) -> list[Model]:
    items = list(models)
    if search and search.strip():
        tokens = [t for t in re.split(r"[\s/]+", search.strip()) if t]
        items = [m for m in items if all(fuzzy_match(t, f"{m.provider} {m.id}") for t in tokens)]
    return sorted(items, key=lambda m: (collation_key(m.provider), collation_key(m.id)))


def _count(n: int) -> str:
    def fmt(value: float, suffix: str) -> str:
        return f"{int(value)}{suffix}" if value == int(value) else f"{value:.1f}{suffix}"

    if n >= 1_000_000:
        return fmt(n / 1_000_000, "M")
    if n >= 1_000:
        return fmt(n / 1_000, "K")
    return str(n)


def format_model_table(models: list[Model]) -> str:
    """Pi's table: ``provider  model  context  max-out  thinking  images``."""
    head = ("provider", "model", "context", "max-out", "thinking", "images")
    rows = [
        (
            m.provider,
            m.id,
            _count(m.context_window),
            _count(m.max_tokens),
            "yes" if m.reasoning else "no",
            "yes" if m.images else "no",
        )
        for m in models
    ]
    widths = [max(len(head[i]), *(len(r[i]) for r in rows)) for i in range(len(head))]
    lines = ["  ".join(c.ljust(widths[i]) for i, c in enumerate(row)) for row in [head, *rows]]
    return "\n".join(lines) + "\n"
