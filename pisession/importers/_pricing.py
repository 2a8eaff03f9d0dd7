"""The cost of imported usage, as Pi would have recorded it: the model's prices from Pi's model
registry (:mod:`pisession.models`, the built-in list merged with the user's ``models.json``)
through Pi's ``calculateCost``. A model the registry does not know costs zero, and ``pisession
usage`` still counts its tokens."""

from __future__ import annotations

import functools
from typing import Any

from ..models import Model, ModelRegistry, calculate_cost

__all__ = ["usage_cost"]


@functools.lru_cache(maxsize=1)
def _registry() -> ModelRegistry:
    return ModelRegistry.load()


@functools.lru_cache(maxsize=256)
def _model(provider: str, model: str) -> Model | None:
    try:
        return _registry().find(f"{provider}/{model}")
    except Exception:  # an unknown or odd name is no price, never a failed import
        return None


def usage_cost(
    provider: str,
    model: str,
    input: int,
    output: int,
    cache_read: int,
    cache_write: int,
    cache_write_1h: int | None = None,
) -> dict[str, Any]:
    """Pi's ``cost`` object for these token counts (zeros when no price is known)."""
    found = _model(provider, model)
    if found is None:
        return {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    usage: dict[str, Any] = {
        "input": input,
        "output": output,
        "cacheRead": cache_read,
        "cacheWrite": cache_write,
        "cacheWrite1h": cache_write_1h or 0,
        "cost": {},
    }
    calculate_cost(found, usage)
    cost: dict[str, Any] = usage["cost"]
    return cost
