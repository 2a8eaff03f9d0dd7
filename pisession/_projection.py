"""Typed context results built lazily from a wire projection: ``SessionContext``'s messages,
``SessionProjection`` and its entries.

Converting every message of a long context into attrs objects costs more than building the
context, so the messages stay wire dicts and each is converted the first time it is read.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, overload

import attrs

from ._codec import from_wire, to_wire
from ._js import MISSING
from ._model import UNSET, Entry, Message, ModelRef, SessionContext, freeze_json

if TYPE_CHECKING:
    from ._context import WireProjection
    from ._index import TreeIndex

__all__ = [
    "LazyMessages",
    "ProjectedEntry",
    "SessionProjection",
    "context_from_projection",
    "projection_from_wire",
    "model_ref",
]


class LazyMessages(Sequence[Message]):
    """An immutable sequence of messages, each converted from its wire dict on first access."""

    __slots__ = ("_wire", "_models")

    def __init__(self, wire: Sequence[dict[str, Any]]) -> None:
        self._wire = wire
        self._models: list[Message | None] = [None] * len(wire)

    @property
    def wire(self) -> Sequence[dict[str, Any]]:
        """The messages' JSON, read-only (the index's own dicts stay out of reach)."""
        return [freeze_json(m) for m in self._wire]

    def to_wire(self) -> list[Any]:
        return [freeze_json(m) for m in self._wire]

    def __len__(self) -> int:
        return len(self._wire)

    @overload
    def __getitem__(self, i: int) -> Message: ...
    @overload
    def __getitem__(self, i: slice) -> Sequence[Message]: ...
    def __getitem__(self, i: int | slice) -> Message | Sequence[Message]:
        if isinstance(i, slice):
            return tuple(self[j] for j in range(*i.indices(len(self))))
        model = self._models[i]
        if model is None:
            model = from_wire(self._wire[i], Message)
            self._models[i] = model
        return model

    def __iter__(self) -> Iterator[Message]:
        for i in range(len(self._wire)):
            yield self[i]

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LazyMessages):
            return list(self._wire) == list(other._wire)
        if isinstance(other, Sequence) and not isinstance(other, str):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __repr__(self) -> str:
        return f"LazyMessages({list(self)!r})"


@attrs.frozen
class ProjectedEntry:
    """An entry of the context and the messages it contributes (after context edits)."""

    source_entry: Entry
    messages: Sequence[Message]

    def to_wire(self) -> dict[str, Any]:
        return {"sourceEntry": to_wire(self.source_entry), "messages": _messages_wire(self.messages)}


@attrs.frozen
class SessionProjection:
    """Pi's ``buildSessionProjection`` result: provenance-preserving model context."""

    entries: Sequence[ProjectedEntry]
    messages: Sequence[Message]
    thinking_level: str
    model: ModelRef | None

    def to_wire(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "entries": [e.to_wire() for e in self.entries],
            "messages": _messages_wire(self.messages),
        }
        if self.thinking_level is not UNSET:  # type: ignore[comparison-overlap]
            out["thinkingLevel"] = self.thinking_level
        out["model"] = None if self.model is None else to_wire(self.model)
        return out


def _messages_wire(messages: Sequence[Message]) -> list[Any]:
    if isinstance(messages, LazyMessages):
        return messages.to_wire()
    return [to_wire(m) for m in messages]


def model_ref(wire: dict[str, Any] | None) -> ModelRef | None:
    if wire is None:
        return None
    if isinstance(wire.get("provider"), str) and isinstance(wire.get("modelId"), str) and len(wire) == 2:
        return from_wire(wire, ModelRef)
    # An assistant message without provider or model gives Pi a partial model object.
    return ModelRef(provider=wire.get("provider", UNSET), model_id=wire.get("modelId", UNSET))


def _thinking(value: Any) -> Any:
    return UNSET if value is MISSING else value


def context_from_projection(projection: WireProjection) -> SessionContext:
    return SessionContext(
        messages=LazyMessages(projection.messages),
        thinking_level=_thinking(projection.thinking_level),
        model=model_ref(projection.model),
    )


def projection_from_wire(index: TreeIndex, projection: WireProjection) -> SessionProjection:
    return SessionProjection(
        entries=tuple(
            ProjectedEntry(index.model_at(pos), LazyMessages(list(messages)))
            for pos, messages in projection.entries
        ),
        messages=LazyMessages(projection.messages),
        thinking_level=_thinking(projection.thinking_level),
        model=model_ref(projection.model),
    )
