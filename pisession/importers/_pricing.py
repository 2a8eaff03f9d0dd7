"""The cost of imported usage: a seam for the model registry (``pisession.models``, built on
another branch). When a registry that knows the model's prices is importable, the cost is
computed from it (dollars per million tokens, as Pi's model catalogue gives them); otherwise
every cost is zero, and ``pisession usage`` still counts the tokens."""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["usage_cost"]


def _prices(provider: str, model: str) -> dict[str, float] | None:
    try:
        registry: Any = importlib.import_module("pisession.models")
    except ImportError:
        return None
    find = getattr(registry, "get_model", None) or getattr(registry, "find_model", None)
    if find is None:
        return None
    try:
        found = find(provider, model)
    except Exception:  # an unknown model is no price, never a failed import
        return None
    cost = getattr(found, "cost", None) if found is not None else None
    if cost is None:
        return None
    if isinstance(cost, dict):
        return {key: float(cost.get(key, 0) or 0) for key in ("input", "output", "cacheRead", "cacheWrite")}
    return {
        "input": float(getattr(cost, "input", 0) or 0),
        "output": float(getattr(cost, "output", 0) or 0),
        "cacheRead": float(getattr(cost, "cache_read", 0) or 0),
        "cacheWrite": float(getattr(cost, "cache_write", 0) or 0),
    }


def usage_cost(
    provider: str, model: str, input: int, output: int, cache_read: int, cache_write: int
) -> dict[str, float | int]:
    """Pi's ``cost`` object for these token counts (zeros when no price is known)."""
    prices = _prices(provider, model)
    if prices is None:
        return {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    parts = {
        "input": input * prices["input"] / 1_000_000,
        "output": output * prices["output"] / 1_000_000,
        "cacheRead": cache_read * prices["cacheRead"] / 1_000_000,
        "cacheWrite": cache_write * prices["cacheWrite"] / 1_000_000,
    }
    return {**parts, "total": sum(parts.values())}
