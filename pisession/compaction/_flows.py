"""Compaction and tree navigation as operations on a session (``AgentSession.compact`` and
``AgentSession.navigateTree``, session side), with the model replaced by a summarizer callable.

The summarizer is called without the session lock held (a model call takes seconds); the
entries are then appended through the manager's ordinary methods, under the lock. A summarizer
that raises leaves the session untouched.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import signal
import subprocess
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import attrs

from .._codec import to_wire
from .._context import project_leaf
from .._errors import (
    AlreadyCompactedError,
    BranchChangedError,
    EmptySummaryError,
    EntryNotFoundError,
    NothingToCompactError,
    PisessionError,
    SummarizerCommandError,
)
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
    from .._index import TreeIndex
    from .._session import WritableSession

__all__ = [
    "SummaryRequest",
    "SummaryResult",
    "Summarizer",
    "AsyncSummarizer",
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
    """A summary and, optionally, the model's usage (stored in the entry as Pi stores it).
    ``text`` must be a string (``None``, bytes or a number raise ``TypeError``)."""

    text: str = attrs.field(validator=attrs.validators.instance_of(str))
    usage: Usage | None = None


Summarizer = Callable[[SummaryRequest], "str | SummaryResult"]
"""Any callable taking a :class:`SummaryRequest` and returning the summary text (or a
:class:`SummaryResult` with usage)::

    def summarize(request: SummaryRequest) -> str:
        return my_model(system=request.system_prompt, user=request.prompt)

An empty or blank summary is refused (:class:`~pisession.EmptySummaryError`).
"""

AsyncSummarizer = Callable[[SummaryRequest], Awaitable["str | SummaryResult"]]
"""A summarizer for :class:`~pisession.aio.AsyncSessionManager`: an ``async def`` taking a
:class:`SummaryRequest`, awaited on the event loop (the session lock is not held meanwhile)::

    async def summarize(request: SummaryRequest) -> str:
        return await my_async_model(system=request.system_prompt, user=request.prompt)
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
#
# A flow is a generator: it yields each SummaryRequest, receives what the summarizer returned and
# finally returns the flow's result. Between two requests it reads and writes the session (its
# locks are never held across a yield); who calls the summarizer, and how, is the driver's
# business: ``run`` for plain callables, the asyncio manager awaits coroutines on its loop.

_T = TypeVar("_T")
Steps = Generator[SummaryRequest, object, _T]

# Summaries made for a branch that then moved are thrown away and made anew, this many times.
_ROUNDS = 3


def _reasoning(thinking_level: str | None) -> str | None:
    return None if not thinking_level or thinking_level == "off" else thinking_level


def _ask(kind: SummaryKind, prompt: str, reasoning: str | None) -> Steps[tuple[str, Any]]:
    """The summary text and its usage as a wire dict (MISSING when none was given)."""
    result = yield SummaryRequest(kind, SUMMARIZATION_SYSTEM_PROMPT, prompt, reasoning)
    return summary_of(result)


def summary_of(result: object) -> tuple[str, Any]:
    """A summarizer's answer checked: a non-blank string, or a :class:`SummaryResult` holding one."""
    if isinstance(result, str):
        text, usage = result, MISSING
    elif isinstance(result, SummaryResult):
        text = result.text
        if not isinstance(text, str):  # made around the validator (object.__setattr__)
            raise TypeError(f"SummaryResult.text must be str, not {type(text).__name__}")
        given = result.usage
        if given is None:
            usage = MISSING
        elif isinstance(given, Mapping):
            usage = dict(given)
        elif isinstance(given, Usage):
            usage = to_wire(given)
        else:
            raise TypeError(f"SummaryResult.usage must be a Usage, dict or None, not {type(given).__name__}")
    else:
        raise TypeError(f"a summarizer returns str or SummaryResult, not {type(result).__name__}")
    if not text.strip():
        raise EmptySummaryError("the summarizer returned an empty summary: nothing was written")
    return text, usage


def is_async(summarize: object) -> bool:
    """Whether ``summarize`` is an ``async def``, or an object with an async ``__call__``."""
    call = getattr(summarize, "__call__", None)  # noqa: B004 - an object with an async __call__
    return inspect.iscoroutinefunction(summarize) or inspect.iscoroutinefunction(call)


def refuse_async(summarize: object) -> None:
    """A coroutine function given where a plain summarizer is called (``SessionManager``)."""
    if is_async(summarize):
        raise TypeError(
            "SessionManager calls summarizers synchronously; an async summarizer needs "
            "pisession.aio.AsyncSessionManager (its compact and navigate_tree await it)"
        )


def run(steps: Steps[_T], summarize: Summarizer | None) -> _T:
    """Drive a flow with a plain callable (an ``async def`` is refused before the flow starts)."""
    try:
        refuse_async(summarize)
        done, value = advance(steps, None)
        while not done:
            assert summarize is not None  # a flow given no summarizer asks for no summary
            result = summarize(value)
            if inspect.isawaitable(result):
                if inspect.iscoroutine(result):
                    result.close()  # never awaited: say so here, not in a RuntimeWarning
                raise TypeError(
                    "the summarizer returned an awaitable; SessionManager calls summarizers "
                    "synchronously: use pisession.aio.AsyncSessionManager for an async one"
                )
            done, value = advance(steps, result)
        result_value: _T = value
        return result_value
    finally:
        steps.close()


def advance(steps: Steps[_T], value: object) -> tuple[bool, Any]:
    """One step of a flow (``value`` None starts it): (False, the next request) or (True, its
    result). Only the flow's own end is caught: a StopIteration from a summarizer is an error
    like any other; and a driver that runs the steps in another thread cannot pass
    StopIteration through a future."""
    try:
        return False, steps.send(value)
    except StopIteration as done:
        return True, done.value


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
    custom_instructions: str | None,
    thinking_level: str | None,
) -> Steps[tuple[str, Any]]:
    """Pi's ``compact()``: the summary text (file lists appended) and the usage (wire or MISSING)."""
    reasoning = _reasoning(thinking_level)
    history = preparation._summarize_wire
    prefix = preparation._prefix_wire
    previous = preparation._previous_summary_wire
    if preparation.is_split_turn and prefix:
        history_text = "No prior history." if previous is None or previous is MISSING else js_string(previous)
        history_usage: Any = MISSING
        if history:
            history_text, history_usage = yield from _ask(
                "history", history_prompt(history, previous, custom_instructions), reasoning
            )
        prefix_text, prefix_usage = yield from _ask(
            "turn_prefix", turn_prefix_prompt(prefix, custom_instructions), reasoning
        )
        summary = f"{history_text}\n\n---\n\n**Turn Context (split turn):**\n\n{prefix_text}"
        if history_usage is not MISSING and prefix_usage is not MISSING:
            usage = _combine_usage(history_usage, prefix_usage)
        else:
            usage = prefix_usage if prefix_usage is not MISSING else history_usage
    else:
        summary, usage = yield from _ask(
            "history", history_prompt(history, previous, custom_instructions), reasoning
        )
    read_files, modified_files = compute_file_lists(preparation.file_ops)
    return summary + format_file_operations(read_files, modified_files), usage


# -- the session operations -------------------------------------------------------------------------


def plan_at(
    index: TreeIndex, leaf_id: Any, settings: CompactionSettings | None
) -> CompactionPreparation | None:
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


def _nothing_to_compact(index: TreeIndex, leaf_id: Any) -> PisessionError:
    """Why Pi's ``/compact`` refuses the branch at ``leaf_id``, in its words."""
    pos = index.position(leaf_id) if js_truthy(leaf_id) else None
    if pos is not None and index.type_at(pos) == "compaction":
        return AlreadyCompactedError("Already compacted")
    return NothingToCompactError("Nothing to compact (session too small)")


def plan(
    manager: WritableSession, settings: CompactionSettings | None, *, raise_if_nothing: bool = False
) -> CompactionPreparation | None:
    index, leaf_id = manager._catch_up()
    preparation = plan_at(index, leaf_id, settings)
    if preparation is None and raise_if_nothing:
        raise _nothing_to_compact(index, leaf_id)
    return preparation


def _plan_key(preparation: CompactionPreparation) -> tuple[Any, ...]:
    """Everything of a plan that reaches the summarizer or the entry: two plans with equal keys
    make the same requests and the same compaction."""
    tokens = preparation.tokens_before_wire
    return (
        preparation.first_kept_entry_id,
        ("NaN",) if tokens != tokens else tokens,  # NaN (Pi's count of odd text) equals no NaN
        preparation.is_split_turn,
        preparation._previous_summary_wire,
        preparation._summarize_wire,
        preparation._prefix_wire,
        compute_file_lists(preparation.file_ops),
    )


def compaction_steps(
    manager: WritableSession,
    settings: CompactionSettings | None,
    custom_instructions: str | None,
    thinking_level: str | None,
) -> Steps[CompactionEntry]:
    preparation = plan(manager, settings, raise_if_nothing=True)
    assert preparation is not None
    for _ in range(_ROUNDS):
        summary, usage = yield from summarize_compaction(preparation, custom_instructions, thinking_level)
        # The summarizer ran without the lock: another writer may have moved the branch since the
        # plan. Under the lock (what others appended now read) the plan is made again; only a
        # summary of the plan Pi would make for the file as it is now is written.
        with manager._writing():
            index, leaf_id = manager.snapshot(), manager.get_leaf_id()
            current = plan_at(index, leaf_id, settings)
            if current is None:
                raise _nothing_to_compact(index, leaf_id)
            if _plan_key(current) == _plan_key(preparation):
                read_files, modified_files = compute_file_lists(preparation.file_ops)
                entry_id = manager.append_compaction(
                    summary,
                    preparation.first_kept_entry_id,
                    preparation.tokens_before_wire,  # type: ignore[arg-type]  # NaN or a string as Pi writes them
                    {"readFiles": read_files, "modifiedFiles": modified_files},
                    False,
                    UNSET if usage is MISSING else usage,
                )
                return manager.get_entry(entry_id)  # type: ignore[return-value]
        preparation = current
    raise BranchChangedError(
        f"the branch kept changing while the summarizer ran ({_ROUNDS} summaries made, each for a "
        f"branch another writer had moved on): nothing was written to {manager._where()}"
    )


def navigation_steps(
    manager: WritableSession,
    target_id: str,
    *,
    summarizing: bool,
    custom_instructions: str | None,
    replace_instructions: bool,
    label: str | None,
    thinking_level: str | None,
    context_window: int,
    reserve_tokens: int,
) -> Steps[Navigation]:
    for _ in range(_ROUNDS):
        index, old_leaf_id = manager._catch_up()
        if target_id == old_leaf_id:
            return Navigation(old_leaf_id, None, None)
        target_pos = index.position(target_id)
        if target_pos is None:
            raise EntryNotFoundError(f"Entry {target_id} not found", where=manager._where())
        target = index.entry_at(target_pos)
        entries, _ = collect_wire(index, old_leaf_id, target_id)

        summary: str | None = None
        usage: Any = MISSING
        details: dict[str, Any] = {}
        if summarizing and entries:
            budget = (context_window or 128000) - reserve_tokens
            messages, ops, _ = prepare_branch_wire(entries, budget)
            if not messages:
                summary = "No content to summarize"
                details = {"readFiles": [], "modifiedFiles": []}
            else:
                text, usage = yield from _ask(
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

        with manager._writing():
            # As for a compaction: what was summarized must still be the branch being left.
            if manager.get_leaf_id() != old_leaf_id or _ids(
                collect_wire(manager.snapshot(), old_leaf_id, target_id)[0]
            ) != _ids(entries):
                continue
            summary_entry: BranchSummaryEntry | None = None
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
    raise BranchChangedError(
        f"the branch being left kept changing while the summarizer ran ({_ROUNDS} tries): "
        f"nothing was written to {manager._where()}"
    )


def _ids(entries: Sequence[Mapping[str, Any]]) -> list[Any]:
    return [e.get("id") for e in entries]


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
            returncode, stdout, stderr = _run_command(
                command, request.prompt.encode("utf-8", "surrogatepass"), env, timeout
            )
        except subprocess.TimeoutExpired as exc:
            raise SummarizerCommandError(
                f"summarizer command timed out after {timeout} s: {command}"
            ) from exc
        except OSError as exc:
            raise SummarizerCommandError(f"summarizer command could not run: {command}: {exc}") from exc
        if returncode != 0:
            detail = stderr.decode("utf-8", "replace").strip().splitlines()
            tail = f": {detail[-1]}" if detail else ""
            raise SummarizerCommandError(f"summarizer command exited with code {returncode}{tail}: {command}")
        text = stdout.decode("utf-8", "replace").rstrip("\r\n")
        if not text.strip():
            raise EmptySummaryError(f"summarizer command printed nothing: {command}")
        return text

    return summarize


def _run_command(
    command: str, stdin: bytes, env: Mapping[str, str], timeout: float | None
) -> tuple[int, bytes, bytes]:
    """Run ``command`` through the shell in a process group of its own, so that what it starts
    (a model client, a pipeline) ends with it: on a timeout, Ctrl-C or any other exception the
    whole group is killed, not only the shell. Ctrl-C at a terminal reaches only the foreground
    group, so the command's group is not interrupted by it: this process kills it."""
    process = subprocess.Popen(
        command,
        shell=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env),
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(stdin, timeout=timeout)
    except BaseException:
        _kill_group(process)
        raise
    return process.returncode, stdout, stderr


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    # The shell is not yet reaped here, so its pid still names its group and no other.
    killpg = getattr(os, "killpg", None)  # POSIX
    try:
        if killpg is None:
            process.kill()
        else:
            killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
    # Not communicate(): a process that left the group may still hold the pipes open.
    for stream in (process.stdin, process.stdout, process.stderr):
        if stream is not None:
            with contextlib.suppress(OSError):  # stdin's unwritten rest: the reader is dead
                stream.close()
    process.wait()


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
