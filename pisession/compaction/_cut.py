"""Where Pi cuts a branch for compaction, and what it hands the summarizer (``prepareCompaction``).

Walking back from the newest entry, Pi keeps about ``keep_recent_tokens`` verbatim and cuts at the
nearest user, assistant or other turn-starting message (never at a tool result, which must follow
its call). Cutting inside a turn is a *split turn*: the turn's beginning is summarized separately.
Everything before the cut, back to the previous compaction, is summarized; its summary and file
lists carry over. The cut works on the *projection* (context edits applied, only the newest
compaction's retained range), so what gets summarized is what the model actually saw.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from .._context import WireProjection, entry_to_messages, project_leaf
from .._index import TreeIndex
from .._js import MISSING, hashable, js_string, js_truthy
from .._model import Entry, Message
from ._common import WireMessage, messages_out, wire_list
from ._files import FileOperations, add_details_wire, extract_file_ops_wire
from ._tokens import (
    CompactionSettings,
    JsNumber,
    estimate_projected_context_tokens_wire,
    sum_tokens_wire,
    token_count,
)

__all__ = [
    "CutPoint",
    "CompactionPreparation",
    "find_turn_start_index",
    "find_cut_point",
    "prepare_compaction",
]

_CUT_ROLES = frozenset({"user", "assistant", "bashExecution", "custom", "branchSummary", "compactionSummary"})
_TURN_START_ROLES = frozenset({"user", "bashExecution", "custom", "branchSummary", "compactionSummary"})


@attrs.frozen
class CutPoint:
    """Pi's ``CutPointResult``: indexes into the entry list given to :func:`find_cut_point`."""

    first_kept_entry_index: int
    turn_start_index: int
    """The entry that starts the turn being split, or -1."""
    is_split_turn: bool


def _role(message: Any) -> str | None:
    role = message.get("role") if isinstance(message, Mapping) else None
    return role if type(role) is str else None  # a role read from a file may be any JSON value


def _is_cut(messages: Sequence[Any]) -> bool:
    return any(_role(m) in _CUT_ROLES for m in messages)


def _is_turn_start(messages: Sequence[Any]) -> bool:
    return any(_role(m) in _TURN_START_ROLES for m in messages)


def _tokens(messages: Sequence[Any]) -> Any:
    """Pi's ``messages.reduce((sum, m) => sum + estimateTokens(m), 0)``: a number, maybe NaN."""
    return sum_tokens_wire([m for m in messages if isinstance(m, Mapping)])


# -- on raw entries (Pi's exported findCutPoint / findTurnStartIndex) ----------------------------


def _is_turn_start_entry(entry: Mapping[str, Any]) -> bool:
    return entry.get("type") != "compaction" and _is_turn_start(entry_to_messages(entry))


def find_turn_start_index_wire(
    entries: Sequence[Mapping[str, Any]], entry_index: int, start_index: int
) -> int:
    for i in range(entry_index, start_index - 1, -1):
        if _is_turn_start_entry(entries[i]):
            return i
    return -1


def find_cut_point_wire(
    entries: Sequence[Mapping[str, Any]], start_index: int, end_index: int, keep_recent_tokens: int
) -> CutPoint:
    cut_points = [
        i
        for i in range(start_index, end_index)
        if entries[i].get("type") != "compaction" and _is_cut(entry_to_messages(entries[i]))
    ]
    if not cut_points:
        return CutPoint(start_index, -1, False)
    accumulated = 0
    cut_index = cut_points[0]
    for i in range(end_index - 1, start_index - 1, -1):
        tokens = _tokens(entry_to_messages(entries[i]))
        if tokens == 0:
            continue
        accumulated += tokens
        if accumulated >= keep_recent_tokens:
            cut_index = next((c for c in cut_points if c >= i), cut_points[-1])
            break
    while cut_index > start_index:
        previous = entries[cut_index - 1]
        if previous.get("type") == "compaction" or entry_to_messages(previous):
            break
        cut_index -= 1
    starts_turn = _is_turn_start_entry(entries[cut_index])
    turn_start = -1 if starts_turn else find_turn_start_index_wire(entries, cut_index, start_index)
    return CutPoint(cut_index, turn_start, not starts_turn and turn_start != -1)


# -- on the projection (what prepareCompaction uses) ---------------------------------------------

_Projected = tuple[Mapping[str, Any], Sequence[WireMessage]]


def _projected_turn_start(item: _Projected) -> bool:
    return item[0].get("type") != "compaction" and _is_turn_start(item[1])


def _find_projected_turn_start(items: Sequence[_Projected], entry_index: int, start_index: int) -> int:
    for i in range(entry_index, start_index - 1, -1):
        if _projected_turn_start(items[i]):
            return i
    return -1



def _find_projected_cut_point(
    items: Sequence[_Projected], start_index: int, end_index: int, keep_recent_tokens: int
) -> CutPoint:
    cut_points = [
        i
        for i in range(start_index, end_index)
        if items[i][0].get("type") != "compaction" and _is_cut(items[i][1])
    ]
    if not cut_points:
        return CutPoint(start_index, -1, False)
    accumulated = 0
    exceeded = False
    cut_index = cut_points[0]
    for i in range(end_index - 1, start_index - 1, -1):
        tokens = _tokens(items[i][1])
        if tokens == 0:
            continue
        accumulated += tokens
        if accumulated >= keep_recent_tokens:
            exceeded = True
            cut_index = next((c for c in cut_points if c >= i), cut_points[-1])
            break
    if exceeded and _is_recovery_omission_suffix(items[cut_index + 1 : end_index]):
        # A failed attempt and the edits that hid it, after the last input: cutting after it
        # keeps nothing the model will see again.
        cut_index += 1
    while cut_index > start_index:
        source, messages = items[cut_index - 1]
        if source.get("type") == "compaction" or messages:
            break
        cut_index -= 1
    starts_turn = _projected_turn_start(items[cut_index])
    turn_start = -1 if starts_turn else _find_projected_turn_start(items, cut_index, start_index)
    return CutPoint(cut_index, turn_start, not starts_turn and turn_start != -1)


def _is_recovery_omission_suffix(suffix: Sequence[_Projected]) -> bool:
    def visible(item: _Projected) -> bool:
        return item[0].get("type") != "context_edit" and bool(entry_to_messages(item[0]))

    def omitted(item: _Projected) -> bool:
        return visible(item) and not item[1]

    omitted_ids = {item[0].get("id") for item in suffix if omitted(item) and hashable(item[0].get("id"))}
    external_replacement = any(
        item[0].get("type") == "context_edit"
        and item[0].get("replacement", MISSING) is not None
        and not (hashable(item[0].get("targetId")) and item[0].get("targetId", MISSING) in omitted_ids)
        for item in suffix
    )
    if external_replacement:
        return False
    has_omitted_attempt = any(
        item[0].get("type") == "message"
        and isinstance(item[0].get("message"), Mapping)
        and item[0]["message"].get("role") == "assistant"
        and omitted(item)
        for item in suffix
    )
    return has_omitted_attempt and all(
        item[0].get("type") != "compaction" and (not visible(item) or omitted(item)) for item in suffix
    )


class CompactionPreparation:
    """What Pi's ``prepareCompaction`` decided: where to cut, what to summarize, the token count
    before, the previous summary and the files touched. Read-only; the messages are converted to
    model objects when first read::

        preparation = manager.plan_compaction()
        if preparation is not None:
            print(preparation.first_kept_entry_id, preparation.tokens_before)
    """

    __slots__ = (
        "first_kept_entry_id",
        "is_split_turn",
        "tokens_before",
        "tokens_before_wire",
        "previous_summary",
        "file_ops",
        "settings",
        "_previous_summary_wire",
        "_summarize_wire",
        "_prefix_wire",
        "_summarize",
        "_prefix",
        "_kept_tokens",
    )

    first_kept_entry_id: str
    is_split_turn: bool
    tokens_before: int
    """Pi's estimate of the context before compacting (the entry's ``tokensBefore``)."""
    tokens_before_wire: JsNumber
    """``tokens_before`` exactly as Pi's JavaScript computes it, and as the entry is written:
    the same int for any session Pi writes; NaN or a string where its arithmetic meets odd usage
    values (``tokens_before`` is then its integer reading, :func:`token_count`)."""
    previous_summary: str | None
    file_ops: FileOperations
    settings: CompactionSettings

    def __init__(
        self,
        *,
        first_kept_entry_id: str,
        messages_to_summarize: Sequence[WireMessage],
        turn_prefix_messages: Sequence[WireMessage],
        is_split_turn: bool,
        tokens_before: JsNumber,
        previous_summary: Any,
        file_ops: FileOperations,
        settings: CompactionSettings,
        kept_tokens: float = 0,
    ) -> None:
        self.first_kept_entry_id = first_kept_entry_id
        self.is_split_turn = is_split_turn
        self.tokens_before = token_count(tokens_before)
        self.tokens_before_wire = tokens_before
        # The previous compaction's summary as the file holds it (MISSING: no previous
        # compaction): Pi's prompts test it for truth and write it with String().
        self._previous_summary_wire = previous_summary
        self.previous_summary = (
            None if previous_summary is None or previous_summary is MISSING else js_string(previous_summary)
        )
        self.file_ops = file_ops
        self.settings = settings
        self._summarize_wire = list(messages_to_summarize)
        self._prefix_wire = list(turn_prefix_messages)
        self._summarize: list[Message] | None = None
        self._prefix: list[Message] | None = None
        self._kept_tokens = kept_tokens  # estimate of what stays verbatim (for plans)

    @property
    def messages_to_summarize(self) -> list[Message]:
        """The messages before the cut (back to the previous compaction), in order."""
        if self._summarize is None:
            self._summarize = messages_out(self._summarize_wire)
        return list(self._summarize)

    @property
    def turn_prefix_messages(self) -> list[Message]:
        """For a split turn, the turn's messages before the cut (summarized on their own)."""
        if self._prefix is None:
            self._prefix = messages_out(self._prefix_wire)
        return list(self._prefix)

    def __repr__(self) -> str:
        return (
            f"CompactionPreparation(first_kept_entry_id={self.first_kept_entry_id!r}, "
            f"messages_to_summarize=<{len(self._summarize_wire)} messages>, "
            f"turn_prefix_messages=<{len(self._prefix_wire)} messages>, "
            f"is_split_turn={self.is_split_turn!r}, "
            f"tokens_before={self.tokens_before!r}, previous_summary={self.previous_summary!r}, "
            f"file_ops={self.file_ops!r}, settings={self.settings!r})"
        )


def _summarized_messages(items: Sequence[_Projected]) -> list[WireMessage]:
    # System messages are prompt state, not conversation; the compaction entry carries their replay.
    return [
        m
        for source, messages in items
        if source.get("type") != "compaction"
        for m in messages
        if m.get("role") != "system"
    ]


def prepare_from_projection(
    projection: WireProjection,
    entry_at: Any,
    branch_ids: Sequence[Any],
    branch_types: Sequence[Any],
    settings: CompactionSettings,
) -> CompactionPreparation | None:
    """``prepareCompaction`` given the branch's projection (``entry_at`` maps its positions to
    wire entries) and the ids and types of the branch's entries, root first (only those are
    needed, so a lazily parsed branch stays unparsed)."""
    if branch_types and branch_types[-1] == "compaction":
        return None
    items: list[_Projected] = [(entry_at(pos), messages) for pos, messages in projection.entries]
    prev = next(
        (i for i, (source, messages) in enumerate(items) if source.get("type") == "compaction" and messages),
        -1,
    )
    previous_summary: Any = MISSING
    boundary_start = 0
    if prev >= 0:
        previous_summary = items[prev][0].get("summary", MISSING)
        boundary_start = prev + 1
    tokens_before = estimate_projected_context_tokens_wire(projection, entry_at, branch_ids, branch_types)
    cut = _find_projected_cut_point(items, boundary_start, len(items), settings.keep_recent_tokens)
    first_kept = items[cut.first_kept_entry_index][0] if cut.first_kept_entry_index < len(items) else None
    first_kept_id = first_kept.get("id") if first_kept is not None else None
    if not js_truthy(first_kept_id):
        return None
    history_end = cut.turn_start_index if cut.is_split_turn else cut.first_kept_entry_index
    to_summarize = _summarized_messages(items[boundary_start:history_end])
    prefix = (
        _summarized_messages(items[cut.turn_start_index : cut.first_kept_entry_index])
        if cut.is_split_turn
        else []
    )
    if not to_summarize and not prefix:
        return None
    ops = FileOperations()
    if prev >= 0 and not js_truthy(items[prev][0].get("fromHook")):
        add_details_wire(items[prev][0].get("details"), ops)
    for message in to_summarize:
        extract_file_ops_wire(message, ops)
    for message in prefix:
        extract_file_ops_wire(message, ops)
    return CompactionPreparation(
        first_kept_entry_id=first_kept_id,  # type: ignore[arg-type]
        messages_to_summarize=to_summarize,
        turn_prefix_messages=prefix,
        is_split_turn=cut.is_split_turn,
        tokens_before=tokens_before,
        previous_summary=previous_summary,
        file_ops=ops,
        settings=settings,
        kept_tokens=_tokens([m for _, messages in items[cut.first_kept_entry_index :] for m in messages]),
    )


# -- public ---------------------------------------------------------------------------------------


def find_turn_start_index(
    entries: Sequence[Entry | Mapping[str, Any]], entry_index: int, start_index: int
) -> int:
    """The index of the entry whose message starts the turn holding ``entries[entry_index]``,
    searching back to ``start_index``; -1 if none."""
    return find_turn_start_index_wire(wire_list(entries), entry_index, start_index)


def find_cut_point(
    entries: Sequence[Entry | Mapping[str, Any]], start_index: int, end_index: int, keep_recent_tokens: int
) -> CutPoint:
    """Pi's ``findCutPoint`` over raw entries ``[start_index, end_index)``: keep about
    ``keep_recent_tokens``, cut at a user-like or assistant message, never at a tool result::

        cut = find_cut_point(branch, 0, len(branch), 20000)
    """
    return find_cut_point_wire(wire_list(entries), start_index, end_index, keep_recent_tokens)


def prepare_compaction(
    path_entries: Sequence[Entry | Mapping[str, Any]], settings: CompactionSettings
) -> CompactionPreparation | None:
    """Pi's ``prepareCompaction`` on a branch (root first): None when the branch ends with a
    compaction or nothing before the cut would be summarized::

        preparation = prepare_compaction(manager.get_branch(), DEFAULT_COMPACTION_SETTINGS)
    """
    branch = wire_list(path_entries)
    index = TreeIndex.from_entries(branch)
    projection = project_leaf(index, index.resolve_leaf(MISSING))
    ids = [e.get("id") for e in branch]
    types = [e.get("type") for e in branch]
    return prepare_from_projection(projection, index.entry_at, ids, types, settings)
