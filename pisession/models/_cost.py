"""What a model's usage costs, as pi-ai's ``calculateCost`` computes it: the model's prices per
million tokens, its tiers above an input size, and 1-hour cache writes at twice the input price.
The summarizer fills the usage it writes with it, and the importers the usage they bring in."""

from __future__ import annotations

from typing import Any

from ._registry import Model

__all__ = ["calculate_cost"]


def calculate_cost(model: Model, usage: dict[str, Any]) -> None:
    """pi-ai's ``calculateCost``: ``usage["cost"]`` filled in place (tiers, 1h cache writes)."""
    cost = model.data.get("cost") or {}
    input_tokens = usage["input"] + usage["cacheRead"] + usage["cacheWrite"]
    rates = cost
    threshold = -1
    for tier in cost.get("tiers") or ():
        above = tier.get("inputTokensAbove", 0)
        if input_tokens > above and above > threshold:
            rates, threshold = tier, above
    long_write = usage.get("cacheWrite1h") or 0
    short_write = usage["cacheWrite"] - long_write

    def rate(name: str) -> float:
        value = rates.get(name)
        return float(value) if isinstance(value, (int, float)) else 0.0

    target = usage["cost"]
    target["input"] = _js_num(rate("input") / 1000000 * usage["input"])
    target["output"] = _js_num(rate("output") / 1000000 * usage["output"])
    target["cacheRead"] = _js_num(rate("cacheRead") / 1000000 * usage["cacheRead"])
    target["cacheWrite"] = _js_num(
        (rate("cacheWrite") * short_write + rate("input") * 2 * long_write) / 1000000
    )
    target["total"] = _js_num(target["input"] + target["output"] + target["cacheRead"] + target["cacheWrite"])
    target["totalFromProvider"] = False


def _js_num(value: float) -> int | float:
    # JSON.stringify writes an integral double without ".0".
    return int(value) if value == int(value) and abs(value) < 2**53 else value
