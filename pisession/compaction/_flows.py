"""Compaction and tree navigation as operations on a session (``AgentSession.compact`` and
``AgentSession.navigateTree``, session side), with the model replaced by a summarizer callable.

The summarizer is called without the session lock held (a model call takes seconds); the
entries are then appended through the manager's ordinary methods, under the lock. A summarizer
that raises leaves the session untouched.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

import attrs

from .._codec import to_wire
from .._context import project_leaf
from .._errors import AlreadyCompactedError, EntryNotFoundError, NothingToCompactError, SummarizerCommandError
from .._js import MISSING, js_string, js_truthy
from .._model import UNSET, BranchSummaryEntry, CompactionEntry, Usage
from ._branch import collect_wire, prepare_branch_wire
from ._common import content_text
from ._cut import CompactionPreparation, prepare_from_projection
from ._files import compute_file_lists, format_file_operations
from ._messages import convert_to_llm_wire, serialize_conversation_wire
from ._prompts import (
    BRANCH_SUMMARY_PREAMBLE,
    BRANCH_SUMMARY_PROMPT,
    SUMMARIZATION_PROMPT,
    SUMMARIZATION_SYSTEM_PROMPT,
    TURN_PREFIX_SUMMARIZATION_PROMPT,
    UPDATE_SUMMARIZATION_PROMPT,
)
from ._tokens import DEFAULT_COMPACTION_SETTINGS, CompactionSettings

if TYPE_CHECKING:
    from .._manager import SessionManager

__all__ = [
    "SummaryRequest",
    "SummaryResult",
    "Summarizer",
    "Navigation",
    "command_summarizer",
    "format_plan",
    "history_prompt",
    "turn_prefix_prompt",
    "branch_prompt",
]

SummaryKind = Literal["history", "turn_prefix", "branch"]


@attrs.frozen
class SummaryRequest:
    """One summarization request, exactly as Pi would send it to the model: ``system_prompt`` as
    the system prompt, ``prompt`` as the only user message (one text block)."""

    kind: SummaryKind
    """``"history"`` (compaction), ``"turn_prefix"`` (the start of a split turn) or ``"branch"``."""
    system_prompt: str
    prompt: str
    reasoning: str | None = None
    """The thinking level to request (None: no reasoning), as Pi passes it to the provider."""


@attrs.frozen
class SummaryResult:
    """A summary and, optionally, the model's usage (stored in the entry as Pi stores it)."""

    text: str
    usage: Usage | None = None


Summarizer = Callable[[SummaryRequest], "str | SummaryResult"]
"""Any callable taking a :class:`SummaryRequest` and returning the summary text (or a
:class:`SummaryResult` with usage)::

    def summarize(request: SummaryRequest) -> str:
        return my_model(system=request.system_prompt, user=request.prompt)
"""


@attrs.frozen
class Navigation:
    """Where :meth:`SessionManager.navigate_tree` left the session."""

    new_leaf_id: str | None
    editor_text: str | None
    """The text of a user or custom message target (Pi puts it back in the editor), else None."""
    summary_entry: BranchSummaryEntry | None


# -- prompts ---------------------------------------------------------------------------------------


def _conversation(messages: Sequence[Mapping[str, Any]]) -> str:
    return serialize_conversation_wire(convert_to_llm_wire(messages))


def history_prompt(
    messages: Sequence[Mapping[str, Any]], previous_summary: Any, custom_instructions: str | None
) -> str:
    # previous_summary is the file's value: Pi tests it for truth and writes it with String().
    base = UPDATE_SUMMARIZATION_PROMPT if js_truthy(previous_summary) else SUMMARIZATION_PROMPT
    if custom_instructions:
        base = f"{base}\n\nAdditional focus: {custom_instructions}"
    prompt = f"<conversation>\n{_conversation(messages)}\n</conversation>\n\n"
    if js_truthy(previous_summary):
        prompt += f"<previous-summary>\n{js_string(previous_summary)}\n</previous-summary>\n\n"
    return prompt + base


def turn_prefix_prompt(messages: Sequence[Mapping[str, Any]], custom_instructions: str | None) -> str:
    prompt = (
        f"# Conversation\n{_conversation(messages)}\n\n# Instructions\n{TURN_PREFIX_SUMMARIZATION_PROMPT}"
    )
    if custom_instructions:
        prompt = f"{prompt}\n\nAdditional focus: {custom_instructions}"
    return prompt


def branch_prompt(
    messages: Sequence[Mapping[str, Any]], custom_instructions: str | None, replace_instructions: bool
) -> str:
    if replace_instructions and custom_instructions:
        instructions = custom_instructions
    elif custom_instructions:
        instructions = f"{BRANCH_SUMMARY_PROMPT}\n\nAdditional focus: {custom_instructions}"
    else:
        instructions = BRANCH_SUMMARY_PROMPT
    return f"<conversation>\n{_conversation(messages)}\n</conversation>\n\n{instructions}"


# -- calling the summarizer -----------------------------------------------------------------------


def _reasoning(thinking_level: str | None) -> str | None:
    return None if not thinking_level or thinking_level == "off" else thinking_level


def _call(summarize: Summarizer, kind: SummaryKind, prompt: str, reasoning: str | None) -> tuple[str, Any]:
    """The summary text and its usage as a wire dict (MISSING when none was given)."""
    result = summarize(SummaryRequest(kind, SUMMARIZATION_SYSTEM_PROMPT, prompt, reasoning))
    if isinstance(result, str):
        return result, MISSING
    if isinstance(result, SummaryResult):
        usage = result.usage
        if usage is None:
            return result.text, MISSING
        return result.text, dict(usage) if isinstance(usage, Mapping) else to_wire(usage)
    raise TypeError(f"a summarizer returns str or SummaryResult, not {type(result).__name__}")


def _combine_usage(first: Mapping[str, Any], second: Mapping[str, Any]) -> dict[str, Any]:
    """pi's ``combineUsage``: the sum of two usages, in its key order."""

    def num(usage: Mapping[str, Any], key: str) -> Any:
        return usage.get(key) or 0

    combined: dict[str, Any] = {
        k: num(first, k) + num(second, k) for k in ("input", "output", "cacheRead", "cacheWrite")
    }
    for key in ("cacheWrite1h", "reasoning"):
        if key in first or key in second:
            combined[key] = num(first, key) + num(second, key)
    combined["totalTokens"] = num(first, "totalTokens") + num(second, "totalTokens")
    a, b = first.get("cost") or {}, second.get("cost") or {}
    combined["cost"] = {
        k: num(a, k) + num(b, k) for k in ("input", "output", "cacheRead", "cacheWrite", "total")
    }
    # A sum is provider-reported only when every part is.
    combined["cost"]["totalFromProvider"] = (
        a.get("totalFromProvider") is True and b.get("totalFromProvider") is True
    )
    return combined


def summarize_compaction(
    preparation: CompactionPreparation,
    summarize: Summarizer,
    custom_instructions: str | None,
    thinking_level: str | None,
) -> tuple[str, Any]:
    """Pi's ``compact()``: the summary text (file lists appended) and the usage (wire or MISSING)."""
    reasoning = _reasoning(thinking_level)
    history = preparation._summarize_wire
    prefix = preparation._prefix_wire
    previous = preparation._previous_summary_wire
    if preparation.is_split_turn and prefix:
        history_text = "No prior history." if previous is None or previous is MISSING else js_string(previous)
        history_usage: Any = MISSING
        if history:
            history_text, history_usage = _call(
                summarize, "history", history_prompt(history, previous, custom_instructions), reasoning
            )
        prefix_text, prefix_usage = _call(
            summarize, "turn_prefix", turn_prefix_prompt(prefix, custom_instructions), reasoning
        )
        summary = f"{history_text}\n\n---\n\n**Turn Context (split turn):**\n\n{prefix_text}"
        if history_usage is not MISSING and prefix_usage is not MISSING:
            usage = _combine_usage(history_usage, prefix_usage)
        else:
            usage = prefix_usage if prefix_usage is not MISSING else history_usage
    else:
        summary, usage = _call(
            summarize, "history", history_prompt(history, previous, custom_instructions), reasoning
        )
    read_files, modified_files = compute_file_lists(preparation.file_ops)
    return summary + format_file_operations(read_files, modified_files), usage


# -- the session operations -------------------------------------------------------------------------


def plan(manager: SessionManager, settings: CompactionSettings | None) -> CompactionPreparation | None:
    with manager._mutex:
        index, leaf_id = manager.snapshot(), manager.get_leaf_id()
    pos = index.position(leaf_id) if js_truthy(leaf_id) else None
    positions = index.path_positions(pos) if pos is not None else []
    # The manager's index holds the branch: its projection is the branch's (and is cached).
    # Only the branch's ids and types are read, so its entries are not parsed.
    projection = project_leaf(index, pos)
    return prepare_from_projection(
        projection,
        index.entry_at,
        [index.id_at(p) for p in positions],
        [index.type_at(p) for p in positions],
        settings or DEFAULT_COMPACTION_SETTINGS,
    )


def compact(
    manager: SessionManager,
    summarize: Summarizer,
    settings: CompactionSettings | None,
    custom_instructions: str | None,
    thinking_level: str | None,
) -> CompactionEntry:
    preparation = plan(manager, settings)
    if preparation is None:
        branch = manager.get_branch()
        if branch and branch[-1].type == "compaction":
            raise AlreadyCompactedError("Already compacted")
        raise NothingToCompactError("Nothing to compact (session too small)")
    summary, usage = summarize_compaction(preparation, summarize, custom_instructions, thinking_level)
    read_files, modified_files = compute_file_lists(preparation.file_ops)
    entry_id = manager.append_compaction(
        summary,
        preparation.first_kept_entry_id,
        preparation.tokens_before,  # type: ignore[arg-type]  # NaN or a string as Pi writes them
        {"readFiles": read_files, "modifiedFiles": modified_files},
        False,
        UNSET if usage is MISSING else usage,
    )
    return manager.get_entry(entry_id)  # type: ignore[return-value]


def navigate(
    manager: SessionManager,
    target_id: str,
    *,
    summarize: Summarizer | None,
    custom_instructions: str | None,
    replace_instructions: bool,
    label: str | None,
    thinking_level: str | None,
    context_window: int,
    reserve_tokens: int,
) -> Navigation:
    with manager._mutex:
        index, old_leaf_id = manager.snapshot(), manager.get_leaf_id()
    if target_id == old_leaf_id:
        return Navigation(old_leaf_id, None, None)
    target_pos = index.position(target_id)
    if target_pos is None:
        raise EntryNotFoundError(f"Entry {target_id} not found")
    target = index.entry_at(target_pos)
    entries, _ = collect_wire(index, old_leaf_id, target_id)

    summary: str | None = None
    usage: Any = MISSING
    details: dict[str, Any] = {}
    if summarize is not None and entries:
        budget = (context_window or 128000) - reserve_tokens
        messages, ops, _ = prepare_branch_wire(entries, budget)
        if not messages:
            summary = "No content to summarize"
            details = {"readFiles": [], "modifiedFiles": []}
        else:
            text, usage = _call(
                summarize,
                "branch",
                branch_prompt(messages, custom_instructions, replace_instructions),
                _reasoning(thinking_level),
            )
            read_files, modified_files = compute_file_lists(ops)
            summary = BRANCH_SUMMARY_PREAMBLE + text + format_file_operations(read_files, modified_files)
            details = {"readFiles": read_files, "modifiedFiles": modified_files}

    kind = target.get("type")
    message = target.get("message")
    editor_text: str | None = None
    new_leaf: Any = target_id
    if kind == "message" and isinstance(message, Mapping) and message.get("role") == "user":
        new_leaf, editor_text = target.get("parentId"), content_text(message.get("content"), "")
    elif kind == "custom_message":
        new_leaf, editor_text = target.get("parentId"), content_text(target.get("content"), "")
    new_leaf = new_leaf if isinstance(new_leaf, str) else None

    summary_entry: BranchSummaryEntry | None = None
    with manager._writing():
        if summary:
            summary_id = manager.branch_with_summary(
                new_leaf, summary, details, False, UNSET if usage is MISSING else usage
            )
            summary_entry = manager.get_entry(summary_id)  # type: ignore[assignment]
            if label:
                manager.append_label_change(summary_id, label)
        elif new_leaf is None:
            manager.reset_leaf()
        else:
            manager.branch(new_leaf)
        if label and not summary:
            manager.append_label_change(target_id, label)
    return Navigation(new_leaf, editor_text, summary_entry)


# -- for command lines -------------------------------------------------------------------------------


def command_summarizer(command: str, *, timeout: float | None = None) -> Summarizer:
    """A summarizer that runs ``command`` through the shell once per request, with the prompt on
    stdin and the system prompt in the environment variable ``PISESSION_SYSTEM_PROMPT``; its
    standard output (trailing newlines removed) is the summary. ``PISESSION_REASONING`` holds the
    thinking level when one was asked for::

        summarize = command_summarizer('llm -s "$PISESSION_SYSTEM_PROMPT"')
        manager.compact(summarize)

    A command that exits non-zero, times out or prints nothing raises
    :class:`SummarizerCommandError` (and nothing is written).
    """

    def summarize(request: SummaryRequest) -> str:
        env = {**os.environ, "PISESSION_SYSTEM_PROMPT": request.system_prompt}
        if request.reasoning is not None:
            env["PISESSION_REASONING"] = request.reasoning
        try:
            done = subprocess.run(
                command,
                shell=True,
                input=request.prompt.encode("utf-8", "surrogatepass"),
                env=env,
                capture_output=True,
                timeout=timeout,
                check=False,
            )
        except subprocess.TimeoutExpired as exc:
            raise SummarizerCommandError(
                f"summarizer command timed out after {timeout} s: {command}"
            ) from exc
        except OSError as exc:
            raise SummarizerCommandError(f"summarizer command could not run: {command}: {exc}") from exc
        if done.returncode != 0:
            detail = done.stderr.decode("utf-8", "replace").strip().splitlines()
            tail = f": {detail[-1]}" if detail else ""
            raise SummarizerCommandError(
                f"summarizer command exited with code {done.returncode}{tail}: {command}"
            )
        text = done.stdout.decode("utf-8", "replace").rstrip("\r\n")
        if not text.strip():
            raise SummarizerCommandError(f"summarizer command printed nothing: {command}")
        return text

    return summarize


def format_plan(preparation: CompactionPreparation | None) -> str:
    """A few lines describing a compaction plan (for ``pisession compact --plan``)::

    print(format_plan(manager.plan_compaction()))
    """
    if preparation is None:
        return "nothing to compact"
    from ._tokens import estimate_tokens_wire

    summarized = sum(estimate_tokens_wire(m) for m in preparation._summarize_wire)
    prefix = sum(estimate_tokens_wire(m) for m in preparation._prefix_wire)
    read_files, modified_files = compute_file_lists(preparation.file_ops)
    lines = [
        f"first kept entry: {preparation.first_kept_entry_id}",
        f"tokens before: {preparation.tokens_before}",
        f"tokens kept (after, plus the summary): ~{preparation._kept_tokens}",
        f"messages to summarize: {len(preparation._summarize_wire)} (~{summarized} tokens)",
        f"split turn: {'yes' if preparation.is_split_turn else 'no'}"
        + (
            f" ({len(preparation._prefix_wire)} turn-prefix messages, ~{prefix} tokens)"
            if preparation.is_split_turn
            else ""
        ),
        f"previous summary: {'yes' if preparation.previous_summary is not None else 'no'}",
        f"read files: {', '.join(map(js_string, read_files)) if read_files else '(none)'}",
        f"modified files: {', '.join(map(js_string, modified_files)) if modified_files else '(none)'}",
    ]
    return "\n".join(lines)
