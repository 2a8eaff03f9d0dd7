"""``SessionManager.needs_compaction`` against Pi 1.6.0's own automatic check (golden data from
``generate_auto_compaction.py``, which runs ``AgentSession._checkCompaction``)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import pytest

from pisession import SessionManager
from pisession import compaction as c
from pisession.aio import AsyncSessionManager

HERE = Path(__file__).resolve().parent
RECORDS = json.loads((HERE / "golden" / "compaction" / "auto.json").read_text(encoding="utf-8"))
NOT_COUNTED = {"disabled", "no_assistant_message", "before_compaction"}


def _ids(records: list[dict[str, Any]]) -> list[str]:
    return [
        f"{Path(r['case']).stem}-reserve{r['settings']['reserveTokens']}"
        + ("" if r["settings"]["enabled"] else "-disabled")
        for r in records
    ]


def settings_of(record: dict[str, Any]) -> c.CompactionSettings:
    raw = record["settings"]
    return c.CompactionSettings(
        enabled=raw["enabled"],
        reserve_tokens=raw["reserveTokens"],
        keep_recent_tokens=raw["keepRecentTokens"],
    )


@pytest.mark.parametrize("record", RECORDS, ids=_ids(RECORDS))
def test_needs_compaction_answers_as_pis_check(record: dict[str, Any], tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    shutil.copyfile(HERE / record["case"], path)
    manager = SessionManager.open(path)
    settings = settings_of(record)
    for window, decision in record["decisions"].items():
        check = manager.needs_compaction(int(window), settings)
        assert bool(check) is (decision is not None), window
        assert check.threshold == int(window) - settings.reserve_tokens
    tokens = record["tokens"]
    if tokens is None:
        check = manager.needs_compaction(0, settings)
        assert not check and check.tokens is None and check.reason in NOT_COUNTED
        return
    # Pi compares tokens > window - reserve: these two windows pin the figure it counted.
    at_edge = manager.needs_compaction(tokens + settings.reserve_tokens - 1, settings)
    assert at_edge and at_edge.tokens == tokens and at_edge.reason == "above_threshold"
    past_edge = manager.needs_compaction(tokens + settings.reserve_tokens, settings)
    assert not past_edge and past_edge.tokens == tokens and past_edge.reason == "below_threshold"


def test_a_session_just_compacted_needs_no_compaction(tmp_path: Path) -> None:
    """The docs' recipe used to compact the same session on every run: the estimate right after
    a compaction still counts the last usage from before it; Pi's check does not."""
    path = tmp_path / "session.jsonl"
    shutil.copyfile(HERE / "cases" / "compaction" / "auto_plain.jsonl", path)
    manager = SessionManager.open(path)
    window = 128000
    assert manager.needs_compaction(window).tokens == 150000
    manager.compact(lambda request: "summary", settings=c.CompactionSettings(keep_recent_tokens=1000))
    stale = c.estimate_context_tokens(manager.build_session_context().messages)
    assert stale.tokens > window  # what a check on the estimate alone would compact again
    check = manager.needs_compaction(window)
    assert not check and check.reason == "before_compaction"


def test_the_async_manager_checks_too(tmp_path: Path) -> None:
    import asyncio

    path = tmp_path / "session.jsonl"
    shutil.copyfile(HERE / "cases" / "compaction" / "auto_plain.jsonl", path)

    async def main() -> c.CompactionCheck:
        async with await AsyncSessionManager.open(path) as manager:
            return await manager.needs_compaction(128000)

    assert asyncio.run(main()) == SessionManager.open(path).needs_compaction(128000)


def test_a_context_window_must_be_a_number() -> None:
    manager = SessionManager.in_memory()
    with pytest.raises(TypeError, match="context_window is a number of tokens, not str"):
        manager.needs_compaction("200000")  # type: ignore[arg-type]


def test_without_a_window_the_check_uses_the_model_pi_would_resume_with(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:

    agent = tmp_path / "agent"
    agent.mkdir()
    provider = {"baseUrl": "http://x", "api": "openai-completions", "apiKey": "sk-literal"}
    models = {
        "providers": {
            "small": {**provider, "models": [{"id": "m", "contextWindow": 160000}]},
            "large": {**provider, "models": [{"id": "m", "contextWindow": 200000}]},
        }
    }
    (agent / "models.json").write_text(json.dumps(models), encoding="utf-8")
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    path = tmp_path / "session.jsonl"
    shutil.copyfile(HERE / "cases" / "compaction" / "auto_plain.jsonl", path)  # 150,000 tokens
    manager = SessionManager.open(path)
    manager.append_model_change("small", "m")
    assert manager.needs_compaction() == manager.needs_compaction(160000)
    assert manager.needs_compaction() and manager.needs_compaction().tokens == 150000
    manager.append_model_change("large", "m")  # the branch's last model decides
    assert manager.needs_compaction() == manager.needs_compaction(200000)
    assert not manager.needs_compaction()
    # the user's compaction settings apply: a larger reserve makes the larger window compact
    (agent / "settings.json").write_text(json.dumps({"compaction": {"reserveTokens": 60000}}))
    assert manager.needs_compaction()
    assert not manager.needs_compaction(settings=c.CompactionSettings())  # settings given: used


def test_without_a_window_and_no_model_the_check_is_a_model_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pisession import ModelError

    agent = tmp_path / "agent"
    agent.mkdir()
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    for name in list(os.environ):
        if name.endswith(("_API_KEY", "_TOKEN")):
            monkeypatch.delenv(name)
    manager = SessionManager.in_memory(str(tmp_path))
    with pytest.raises(ModelError):
        manager.needs_compaction()
