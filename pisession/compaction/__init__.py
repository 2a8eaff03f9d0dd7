"""Compaction and branch summaries exactly as Pi 1.6.0 does them (SPEC §5, Pi's
``core/compaction/`` and ``core/messages.js``).

Pure functions over entries and messages (model objects or wire dicts) that decide what Pi
decides: how many tokens a context holds, where to cut, what the summarizer receives, which files
were read and modified. :meth:`pisession.SessionManager.compact` and
:meth:`~pisession.SessionManager.navigate_tree` build on them; a summarizer is any callable::

    from pisession import SessionManager
    from pisession.compaction import SummaryRequest

    def summarize(request: SummaryRequest) -> str:
        return call_my_model(request.system_prompt, request.prompt)

    manager = SessionManager.open("session.jsonl")
    print(manager.plan_compaction())
    manager.compact(summarize)
"""

from __future__ import annotations

from .._errors import (
    AlreadyCompactedError,
    BranchChangedError,
    EmptySummaryError,
    NothingToCompactError,
    SummarizerCommandError,
)
from ._branch import BranchPreparation, collect_entries_for_branch_summary, prepare_branch_entries
from ._check import CheckReason, CompactionCheck
from ._cut import CompactionPreparation, CutPoint, find_cut_point, find_turn_start_index, prepare_compaction
from ._files import FileOperations, compute_file_lists, extract_file_ops_from_message, format_file_operations
from ._flows import (
    AsyncSummarizer,
    Navigation,
    Summarizer,
    SummaryKind,
    SummaryRequest,
    SummaryResult,
    command_summarizer,
    format_plan,
)
from ._messages import (
    TOOL_RESULT_MAX_CHARS,
    bash_execution_to_text,
    convert_to_llm,
    create_branch_summary_message,
    create_compaction_summary_message,
    create_custom_message,
    serialize_conversation,
)
from ._prompts import (
    BRANCH_SUMMARY_PREAMBLE,
    BRANCH_SUMMARY_PREFIX,
    BRANCH_SUMMARY_PROMPT,
    BRANCH_SUMMARY_SUFFIX,
    COMPACTION_SUMMARY_PREFIX,
    COMPACTION_SUMMARY_SUFFIX,
    SUMMARIZATION_PROMPT,
    SUMMARIZATION_SYSTEM_PROMPT,
    TURN_PREFIX_SUMMARIZATION_PROMPT,
    UPDATE_SUMMARIZATION_INSTRUCTIONS,
    UPDATE_SUMMARIZATION_PROMPT,
)
from ._tokens import (
    DEFAULT_COMPACTION_SETTINGS,
    CompactionSettings,
    ContextTokenEstimate,
    JsNumber,
    calculate_context_tokens,
    calculate_context_tokens_js,
    estimate_context_tokens,
    estimate_tokens,
    estimate_tokens_js,
    get_last_assistant_usage,
    should_compact,
    token_count,
)

__all__ = [
    # token accounting
    "estimate_tokens",
    "estimate_tokens_js",
    "estimate_context_tokens",
    "ContextTokenEstimate",
    "calculate_context_tokens",
    "calculate_context_tokens_js",
    "JsNumber",
    "token_count",
    "get_last_assistant_usage",
    "should_compact",
    "CompactionCheck",
    "CheckReason",
    # cutting
    "CompactionSettings",
    "DEFAULT_COMPACTION_SETTINGS",
    "CutPoint",
    "find_turn_start_index",
    "find_cut_point",
    "CompactionPreparation",
    "prepare_compaction",
    # messages
    "convert_to_llm",
    "serialize_conversation",
    "bash_execution_to_text",
    "create_branch_summary_message",
    "create_compaction_summary_message",
    "create_custom_message",
    "TOOL_RESULT_MAX_CHARS",
    "SUMMARIZATION_SYSTEM_PROMPT",
    "SUMMARIZATION_PROMPT",
    "UPDATE_SUMMARIZATION_INSTRUCTIONS",
    "UPDATE_SUMMARIZATION_PROMPT",
    "TURN_PREFIX_SUMMARIZATION_PROMPT",
    "BRANCH_SUMMARY_PROMPT",
    "BRANCH_SUMMARY_PREAMBLE",
    "COMPACTION_SUMMARY_PREFIX",
    "COMPACTION_SUMMARY_SUFFIX",
    "BRANCH_SUMMARY_PREFIX",
    "BRANCH_SUMMARY_SUFFIX",
    # files
    "FileOperations",
    "extract_file_ops_from_message",
    "compute_file_lists",
    "format_file_operations",
    # branches
    "collect_entries_for_branch_summary",
    "prepare_branch_entries",
    "BranchPreparation",
    # summarizers and results
    "SummaryKind",
    "SummaryRequest",
    "SummaryResult",
    "Summarizer",
    "AsyncSummarizer",
    "Navigation",
    "command_summarizer",
    "format_plan",
    # errors (the same classes as pisession.X)
    "NothingToCompactError",
    "AlreadyCompactedError",
    "BranchChangedError",
    "EmptySummaryError",
    "SummarizerCommandError",
]
