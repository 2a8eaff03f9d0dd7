"""Compaction and branch summaries by the model Pi would call, with the request Pi would send.

:class:`PiSummarizer` is a summarizer (as :meth:`pisession.SessionManager.compact` and
:meth:`~pisession.SessionManager.navigate_tree` take one) that picks the model, thinking level and
credentials as Pi 1.6.0 does (:mod:`pisession.models`), builds the request body Pi builds for
``anthropic-messages``, ``openai-completions``, ``openai-responses`` and
``google-generative-ai``, streams the answer and returns it with its usage and cost::

    from pisession import SessionManager
    from pisession.llm import PiSummarizer

    manager = SessionManager.open("session.jsonl")
    summarizer = PiSummarizer.for_session(manager)
    entry = manager.compact(summarizer, settings=summarizer.compaction_settings())

:class:`AsyncPiSummarizer` is the same for :class:`pisession.aio.AsyncSessionManager`.
"""

from __future__ import annotations

from .._errors import CredentialsError, ModelError, ModelRequestError
from ._requests import SUPPORTED_APIS, PreparedRequest, build_request, estimate_input_tokens
from ._streams import calculate_cost
from ._summarizer import AsyncPiSummarizer, DryRun, PiSummarizer, RetryPolicy, is_retryable

__all__ = [
    "PiSummarizer",
    "AsyncPiSummarizer",
    "DryRun",
    "RetryPolicy",
    "PreparedRequest",
    "build_request",
    "estimate_input_tokens",
    "calculate_cost",
    "is_retryable",
    "SUPPORTED_APIS",
    "ModelError",
    "CredentialsError",
    "ModelRequestError",
]
