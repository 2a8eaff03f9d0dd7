"""Usage, cost and message counts of a session, by model and by source (``pisession stats``).

Pi's ``getSessionStats`` and ``getUsageCostBreakdown`` (``core/usage-totals.js``), over every
entry of every branch: what was billed, compacted history included::

    from pisession import SessionManager
    from pisession.stats import session_stats

    stats = session_stats(SessionManager.open("session.jsonl"))
    for row in stats.by_model:
        print(row.name, row.usage.tokens, f"${row.usage.cost:.4f}")
    print(stats.total.cost, stats.messages.tool_calls)
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ._arguments import session_manager
from ._errors import _warn_to_json
from ._manager import SessionManager
from .describe import _blocks, _num

__all__ = ["StatsTotals", "StatsRow", "MessageCounts", "SessionStats", "session_stats"]



_TOKEN_KEYS = ("input", "output", "cacheRead", "cacheWrite")


@dataclass(frozen=True)
class StatsTotals:
    """Summed usage: calls counted, tokens by kind, their sum and the cost in dollars."""

    calls: int = 0
    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    tokens: int = 0
    cost: float = 0.0

    def to_json(self) -> dict[str, Any]:
        """Deprecated name of :meth:`to_wire`."""
        _warn_to_json(self)
        return self.to_wire()

    def to_wire(self) -> dict[str, Any]:
        """The JSON shape of ``pisession stats --json`` (Pi's camelCase keys)."""
        return {
            "calls": self.calls,
            "input": self.input,
            "output": self.output,
            "cacheRead": self.cache_read,
            "cacheWrite": self.cache_write,
            "tokens": self.tokens,
            "cost": self.cost,
        }


@dataclass(frozen=True)
class StatsRow:
    """One row of a breakdown: a model (``provider/model``) or a source (``assistant messages``)."""

    name: str
    usage: StatsTotals


@dataclass(frozen=True)
class MessageCounts:
    """Message entries on all branches by role, and the tool calls assistant messages made."""

    user: int = 0
    assistant: int = 0
    tool_results: int = 0
    tool_calls: int = 0
    total: int = 0

    def to_json(self) -> dict[str, int]:
        """Deprecated name of :meth:`to_wire`."""
        _warn_to_json(self)
        return self.to_wire()

    def to_wire(self) -> dict[str, int]:
        return {
            "user": self.user,
            "assistant": self.assistant,
            "toolResults": self.tool_results,
            "toolCalls": self.tool_calls,
            "total": self.total,
        }


@dataclass(frozen=True)
class SessionStats:
    """What ``session_stats`` returns; ``to_wire()`` is what ``pisession stats --json`` prints."""

    session_id: str | None
    entries: int
    messages: MessageCounts
    by_model: tuple[StatsRow, ...]
    """Models with tokens or cost, most expensive first."""
    by_source: tuple[StatsRow, ...]
    """Where usage was recorded, in order of first appearance."""
    total: StatsTotals

    def to_json(self) -> dict[str, Any]:
        """Deprecated name of :meth:`to_wire`."""
        _warn_to_json(self)
        return self.to_wire()

    def to_wire(self) -> dict[str, Any]:
        return {
            "sessionId": self.session_id,
            "entries": self.entries,
            "messages": self.messages.to_wire(),
            "byModel": [{"model": r.name, **r.usage.to_wire()} for r in self.by_model],
            "bySource": [{"source": r.name, **r.usage.to_wire()} for r in self.by_source],
            "total": self.total.to_wire(),
        }


class _Sum:
    __slots__ = ("calls", "input", "output", "cacheRead", "cacheWrite", "cost")

    def __init__(self) -> None:
        self.calls = self.input = self.output = self.cacheRead = self.cacheWrite = self.cost = 0.0

    def add(self, usage: Mapping[str, Any]) -> None:
        self.calls += 1
        for key in _TOKEN_KEYS:
            setattr(self, key, getattr(self, key) + _num(usage.get(key)))
        cost = usage.get("cost")
        if isinstance(cost, Mapping):
            self.cost += _num(cost.get("total"))

    @property
    def tokens(self) -> float:
        return self.input + self.output + self.cacheRead + self.cacheWrite

    def frozen(self) -> StatsTotals:
        return StatsTotals(
            calls=int(self.calls),
            input=int(self.input),
            output=int(self.output),
            cache_read=int(self.cacheRead),
            cache_write=int(self.cacheWrite),
            tokens=int(self.tokens),
            cost=round(self.cost, 10),
        )


def session_stats(manager: SessionManager | str | os.PathLike[str]) -> SessionStats:
    """Usage and cost of every entry of every branch, by model and by source, with message counts.

    Assistant messages count under ``provider/responseModel`` (else ``model``); tool results,
    compactions and branch summaries under ``Tools/summaries``; usage entries under their own model.

    :param manager: the session to count: every entry of every branch in it, not only the active branch.
    """
    manager = session_manager(manager, "session_stats")
    by_model: dict[str, _Sum] = {}
    by_source: dict[str, _Sum] = {}
    total = _Sum()
    counts = dict.fromkeys(("user", "assistant", "toolResults", "toolCalls", "total"), 0)
    entries = manager.snapshot().wire_entries()
    for entry in entries:
        kind = entry.get("type")
        message = entry.get("message") if kind == "message" else None
        usage: Any = None
        key = source = ""
        if isinstance(message, Mapping):
            counts["total"] += 1
            role = message.get("role")
            if role == "user":
                counts["user"] += 1
            elif role == "assistant":
                counts["assistant"] += 1
                counts["toolCalls"] += sum(
                    1 for b in _blocks(message.get("content")) if b.get("type") == "toolCall"
                )
                model = message.get("responseModel") or message.get("model")
                usage, key, source = (
                    message.get("usage"),
                    f"{message.get('provider')}/{model}",
                    "assistant messages",
                )
            elif role == "toolResult":
                counts["toolResults"] += 1
                usage, key, source = message.get("usage"), "Tools/summaries", "tool results"
        elif kind == "usage":
            usage, key = entry.get("usage"), f"{entry.get('provider')}/{entry.get('model')}"
            source = f"usage entries ({entry.get('kind')})"
        elif kind in ("compaction", "branch_summary"):
            usage, key = entry.get("usage"), "Tools/summaries"
            source = "compactions" if kind == "compaction" else "branch summaries"
        if not isinstance(usage, Mapping):
            continue
        by_model.setdefault(key, _Sum()).add(usage)
        by_source.setdefault(source, _Sum()).add(usage)
        total.add(usage)

    header = manager.get_header()
    models = sorted(
        ((key, row) for key, row in by_model.items() if row.cost > 0 or row.tokens > 0),
        key=lambda item: -item[1].cost,
    )
    return SessionStats(
        session_id=header.id if header else None,
        entries=len(entries),
        messages=MessageCounts(
            user=counts["user"],
            assistant=counts["assistant"],
            tool_results=counts["toolResults"],
            tool_calls=counts["toolCalls"],
            total=counts["total"],
        ),
        by_model=tuple(StatsRow(key, row.frozen()) for key, row in models),
        by_source=tuple(StatsRow(key, row.frozen()) for key, row in by_source.items()),
        total=total.frozen(),
    )


# The names these classes had until pisession.usage's report rows took the same ones (with other
# fields): still importable, with a DeprecationWarning.
_DEPRECATED = {"UsageTotals": "StatsTotals", "UsageRow": "StatsRow"}

if TYPE_CHECKING:  # what a type checker sees of them
    UsageTotals = StatsTotals
    UsageRow = StatsRow


def __getattr__(name: str) -> Any:
    new = _DEPRECATED.get(name)
    if new is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    import warnings

    warnings.warn(
        f"pisession.stats.{name} is deprecated: use pisession.stats.{new} "
        f"(pisession.usage's report rows are ReportRow and ReportTotals)",
        DeprecationWarning,
        stacklevel=2,
    )
    return globals()[new]
