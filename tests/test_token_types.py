"""Token counts are ints in the typed API; what Pi's JavaScript computes on odd input keeps its
own typed place (``*_js``, ``*_wire``), and is what is written (issue 31, item 5)."""

from __future__ import annotations

import math

from pisession import SessionManager, UserMessage
from pisession import compaction as c
from pisession._model import AssistantMessage, TextContent, Usage


def test_estimate_tokens_is_an_int_even_where_pi_computes_nan() -> None:
    ordinary = {"role": "user", "content": "hello world!", "timestamp": 1}
    assert c.estimate_tokens(ordinary) == 3 and type(c.estimate_tokens(ordinary)) is int
    odd = {"role": "user", "content": [{"type": "text", "text": {"not": "a string"}}], "timestamp": 1}
    assert math.isnan(c.estimate_tokens_js(odd))  # what Pi's JavaScript makes of it
    assert c.estimate_tokens(odd) == 0 and type(c.estimate_tokens(odd)) is int


def test_token_count_reads_javascripts_values_as_ints() -> None:
    assert [c.token_count(v) for v in (7, 7.0, float("nan"), math.inf, "5003", "x", 2.0**60)] == [
        7,
        7,
        0,
        0,
        5003,
        0,
        2**60,
    ]


def test_context_estimate_and_usage_counts_are_ints() -> None:
    usage = {"input": "500", "output": 3, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0}
    assert c.calculate_context_tokens_js(usage) == "500300"  # "500" + 3 + 0 + 0 as JavaScript adds
    assert c.calculate_context_tokens(usage) == 500300
    message = AssistantMessage(
        content=[TextContent(text="ok")],
        api="a",
        provider="p",
        model="m",
        usage=Usage(input=10, output=5, total_tokens=15),
    )
    estimate = c.estimate_context_tokens([message, {"role": "user", "content": "abcd", "timestamp": 1}])
    assert (estimate.tokens, estimate.usage_tokens, estimate.trailing_tokens) == (16, 15, 1)
    assert all(type(v) is int for v in (estimate.tokens, estimate.usage_tokens, estimate.trailing_tokens))


def test_a_plans_tokens_before_is_an_int_and_the_entry_gets_the_same(tmp_path: object) -> None:
    manager = SessionManager.in_memory("/w")
    for n in range(6):
        manager.append_message(UserMessage(content=f"question {n} " + "word " * 200))
    plan = manager.plan_compaction(c.CompactionSettings(keep_recent_tokens=300))
    assert plan is not None
    assert type(plan.tokens_before) is int and plan.tokens_before == plan.tokens_before_wire
    entry = manager.compact(lambda *_: "summary", settings=c.CompactionSettings(keep_recent_tokens=300))
    assert entry.tokens_before == plan.tokens_before
