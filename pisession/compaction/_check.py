"""When Pi compacts on its own: ``AgentSession._checkCompaction`` (Pi 1.6.0) as Pi runs it before
the next prompt, at the leaf, on the last assistant message of the context.

Pi's check also compacts to recover from a context overflow the *same* model reported (an error
naming the overflow, or a truncated reply): that path reacts to a failed request, not to the
session's size, and needs the model; it is not modelled here.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Literal

import attrs

from .._context import project_leaf
from .._js import js_date_ms, js_to_number, js_truthy
from ._tokens import (
    DEFAULT_COMPACTION_SETTINGS,
    CompactionSettings,
    calculate_context_tokens_wire,
    estimate_context_tokens_wire,
    estimate_projected_context_tokens_wire,
    should_compact,
)

if TYPE_CHECKING:
    from .._index import TreeIndex

__all__ = ["CompactionCheck", "CheckReason"]

CheckReason = Literal[
    "disabled", "no_assistant_message", "before_compaction", "below_threshold", "above_threshold"
]


@attrs.frozen
class CompactionCheck:
    """The answer of :meth:`SessionManager.needs_compaction`: true when Pi would compact now::

        check = manager.needs_compaction(200_000)
        if check:
            manager.compact(summarize)
        print(check.tokens, check.threshold, check.reason)
    """

    needed: bool
    tokens: int | None
    """The context size Pi decided on (fractions of a provider's usage dropped); None when it did
    not count (see ``reason``) or the usage it read is not a number."""
    threshold: int
    """``context_window - reserve_tokens``: Pi compacts when ``tokens`` is above it."""
    reason: CheckReason
    """``"above_threshold"`` / ``"below_threshold"`` once counted; else why Pi did not count:
    ``"disabled"`` (the settings turn compaction off), ``"no_assistant_message"`` (the context
    has none), ``"before_compaction"`` (the last assistant message, or the usage Pi would count
    from, predates the latest compaction: its size is the old context's)."""

    def __bool__(self) -> bool:
        return self.needed


def _at_or_before(message_timestamp: Any, compaction: Any) -> bool:
    """JavaScript's ``message.timestamp <= new Date(compaction.timestamp).getTime()``."""
    entry_ms = js_date_ms(compaction.get("timestamp"))
    ms = js_to_number(message_timestamp)
    return entry_ms is not None and not math.isnan(ms) and ms <= entry_ms


def check(
    index: TreeIndex, leaf_id: Any, context_window: int, settings: CompactionSettings | None
) -> CompactionCheck:
    if isinstance(context_window, bool) or not isinstance(context_window, (int, float)):
        raise TypeError(f"context_window is a number of tokens, not {type(context_window).__name__}")
    settings = settings or DEFAULT_COMPACTION_SETTINGS
    threshold = context_window - settings.reserve_tokens
    if not settings.enabled:
        return CompactionCheck(False, None, threshold, "disabled")
    pos = index.position(leaf_id) if js_truthy(leaf_id) else None
    projection = project_leaf(index, pos)
    messages = projection.messages
    assistant = next((m for m in reversed(messages) if m.get("role") == "assistant"), None)
    if assistant is None:  # Pi checks only when the context holds an assistant message
        return CompactionCheck(False, None, threshold, "no_assistant_message")
    positions = index.path_positions(pos) if pos is not None else []
    compaction = next(
        (index.entry_at(p) for p in reversed(positions) if index.type_at(p) == "compaction"), None
    )
    if compaction is not None and _at_or_before(assistant.get("timestamp"), compaction):
        return CompactionCheck(False, None, threshold, "before_compaction")

    usage = assistant.get("usage")
    if js_truthy(usage):
        direct: Any = calculate_context_tokens_wire(usage) if isinstance(usage, Mapping) else math.nan
    else:
        direct = 0
    if any(index.type_at(p) == "context_edit" for p, _ in projection.entries):
        tokens: Any = estimate_projected_context_tokens_wire(
            projection,
            index.entry_at,
            [index.id_at(p) for p in positions],
            [index.type_at(p) for p in positions],
        )
    elif assistant.get("stopReason") == "error" or direct == 0:
        estimate = estimate_context_tokens_wire(messages)
        last = estimate["lastUsageIndex"]
        if last is not None:
            # A usage recorded before the latest compaction measured the old, larger context.
            source = messages[last]
            if (
                compaction is not None
                and source.get("role") == "assistant"
                and _at_or_before(source.get("timestamp"), compaction)
            ):
                return CompactionCheck(False, None, threshold, "before_compaction")
        tokens = estimate["tokens"]
    else:
        tokens = direct
    # A usage is the provider's: compared as JavaScript compares it (NaN never compacts).
    needed = should_compact(tokens, context_window, settings)
    number = js_to_number(tokens)
    counted = int(number) if math.isfinite(number) else None
    return CompactionCheck(needed, counted, threshold, "above_threshold" if needed else "below_threshold")
