"""Compaction and tree navigation on a session another writer appended to after pisession opened
it (golden data from ``generate_stale.py``; live checks with Pi itself appending, skipped without
node).

Pi's own ``/compact`` and ``/tree`` work on the file as it is; so must a manager opened earlier,
including when the other writer appends while the summarizer runs (the lock is not held then).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import ORACLE, needs_oracle
from test_compaction import Recorder, normalise, our_requests, pi_requests

from pisession import AlreadyCompactedError, BranchChangedError, SessionManager
from pisession import compaction as c

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases" / "compaction"
STALE = json.loads((HERE / "golden" / "compaction" / "stale.json").read_text(encoding="utf-8"))
PI_APPEND = HERE / "pi_append.mjs"


def _ids(records: list[dict[str, Any]]) -> list[str]:
    return [f"{r['case']}-keep{r['compact']['options']['settings']['keepRecentTokens']}" for r in records]


def opened_copy(tmp_path: Path, case: str) -> tuple[SessionManager, Path]:
    path = tmp_path / f"{case}.jsonl"
    shutil.copyfile(CASES / f"{case}.jsonl", path)
    return SessionManager.open(path), path


def pi_writes(path: Path, lines: str) -> None:
    """What Pi's appendFileSync does: the lines land at the end, with no lock taken."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    try:
        os.write(fd, lines.encode("utf-8"))
    finally:
        os.close(fd)


def written_after(path: Path, before: str) -> list[str]:
    text = path.read_text(encoding="utf-8")
    assert text.startswith(before)
    return [line for line in text[len(before) :].split("\n") if line]


def settings_of(record: dict[str, Any]) -> c.CompactionSettings:
    return c.CompactionSettings(
        keep_recent_tokens=record["compact"]["options"]["settings"]["keepRecentTokens"]
    )


def check_compaction(
    record: dict[str, Any], path: Path, file_before: str, recorder: Recorder, skip: int
) -> None:
    expected = record["compact"]["result"]
    assert expected["ok"]
    recorder.requests = recorder.requests[skip:]
    assert our_requests(recorder) == pi_requests(expected)
    assert normalise(written_after(path, file_before)) == normalise(
        [line for line in expected["written"].split("\n") if line]
    )


@pytest.mark.parametrize("record", STALE, ids=_ids(STALE))
def test_compact_plans_on_what_another_writer_appended_after_open(
    record: dict[str, Any], tmp_path: Path
) -> None:
    manager, path = opened_copy(tmp_path, record["case"])
    pi_writes(path, record["appended"])
    file_before = path.read_text(encoding="utf-8")
    recorder = Recorder(record["compact"]["options"]["replies"])
    manager.compact(recorder, settings=settings_of(record))
    check_compaction(record, path, file_before, recorder, 0)


@pytest.mark.parametrize("record", STALE, ids=_ids(STALE))
def test_plan_compaction_reads_what_another_writer_appended(record: dict[str, Any], tmp_path: Path) -> None:
    manager, path = opened_copy(tmp_path, record["case"])
    pi_writes(path, record["appended"])
    plan = manager.plan_compaction(settings_of(record))
    expected = record["compact"]["result"]["preparation"]
    assert plan is not None
    assert (plan.first_kept_entry_id, plan.tokens_before) == (
        expected["firstKeptEntryId"],
        expected["tokensBefore"],
    )


@pytest.mark.parametrize("record", STALE, ids=_ids(STALE))
def test_a_summary_of_a_branch_that_moved_meanwhile_is_made_again(
    record: dict[str, Any], tmp_path: Path
) -> None:
    manager, path = opened_copy(tmp_path, record["case"])
    replies = record["compact"]["options"]["replies"]
    recorder = Recorder(replies + replies)
    file_before = path.read_text(encoding="utf-8") + record["appended"]

    def slow_model(request: c.SummaryRequest) -> c.SummaryResult:
        if not recorder.requests:  # Pi appends while the first request is being answered
            pi_writes(path, record["appended"])
        return recorder(request)

    manager.compact(slow_model, settings=settings_of(record))
    first_round = 2  # both plans are split turns: two requests each
    assert len(recorder.requests) == 2 * first_round
    recorder.replies = replies * 2
    check_compaction(record, path, file_before, recorder, first_round)


@pytest.mark.parametrize("which", [0, 1], ids=["target-pi-appended", "target-pi-left-behind"])
def test_navigate_reads_what_another_writer_appended(tmp_path: Path, which: int) -> None:
    record = STALE[0]
    navigation = record["navigate"][which]
    options, expected = navigation["options"], navigation["result"]
    manager, path = opened_copy(tmp_path, record["case"])
    pi_writes(path, record["appended"])
    file_before = path.read_text(encoding="utf-8")
    recorder = Recorder(options["replies"])
    nav = manager.navigate_tree(
        options["target"], summarize=recorder, label=options["label"], context_window=200000
    )
    assert our_requests(recorder) == pi_requests(expected)
    assert (nav.new_leaf_id, nav.editor_text) == (expected["newLeafId"], expected["editorText"])
    assert normalise(written_after(path, file_before)) == normalise(
        [line for line in expected["written"].split("\n") if line]
    )


def test_navigate_summarizes_again_when_the_branch_left_grew_meanwhile(tmp_path: Path) -> None:
    record = STALE[0]
    options, expected = record["navigate"][1]["options"], record["navigate"][1]["result"]
    manager, path = opened_copy(tmp_path, record["case"])
    file_before = path.read_text(encoding="utf-8") + record["appended"]
    recorder = Recorder(options["replies"])

    def slow_model(request: c.SummaryRequest) -> c.SummaryResult:
        if not recorder.requests:
            pi_writes(path, record["appended"])
        return recorder(request)

    manager.navigate_tree(
        options["target"], summarize=slow_model, label=options["label"], context_window=200000
    )
    assert len(recorder.requests) == 2
    recorder.requests = recorder.requests[1:]
    assert our_requests(recorder) == pi_requests(expected)
    assert normalise(written_after(path, file_before)) == normalise(
        [line for line in expected["written"].split("\n") if line]
    )


def test_a_branch_that_never_settles_writes_nothing(tmp_path: Path) -> None:
    manager, path = opened_copy(tmp_path, "coding")
    other = SessionManager.open(path)
    calls = []

    def busy_session(request: c.SummaryRequest) -> str:
        calls.append(request)
        other.append_message({"role": "user", "content": f"more {len(calls)}", "timestamp": 1})
        return "summary"

    with pytest.raises(BranchChangedError, match="nothing was written"):
        manager.compact(busy_session, settings=c.CompactionSettings(keep_recent_tokens=1000))
    lines = path.read_text(encoding="utf-8").splitlines()
    assert not any('"type":"compaction"' in line for line in lines)
    assert sum('"more ' in line for line in lines) == len(calls) > 0
    with pytest.raises(BranchChangedError):
        manager.navigate_tree(manager.get_entries()[10].id, summarize=busy_session)
    assert not any(
        '"type":"branch_summary"' in line for line in path.read_text(encoding="utf-8").splitlines()
    )


def test_a_compaction_written_meanwhile_by_another_writer_is_pis_already_compacted(tmp_path: Path) -> None:
    manager, path = opened_copy(tmp_path, "coding")
    other = SessionManager.open(path)
    settings = c.CompactionSettings(keep_recent_tokens=1000)

    def racing(request: c.SummaryRequest) -> str:
        if request.kind == "history" and not any(e.type == "compaction" for e in other.get_entries()):
            other.compact(lambda r: "theirs", settings=settings)
        return "ours"

    with pytest.raises(AlreadyCompactedError, match=r"^Already compacted$"):
        manager.compact(racing, settings=settings)
    text = path.read_text(encoding="utf-8")
    assert text.count('"type":"compaction"') == 1 and '"summary":"theirs' in text


# -- live: Pi itself appends --------------------------------------------------------------------


def pi_append(path: Path, entries: list[dict[str, Any]]) -> list[str]:
    out = subprocess.run(
        ["node", str(PI_APPEND), str(path), json.dumps(entries)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    return json.loads(out)  # type: ignore[no-any-return]


def oracle_compact(path: Path, options: dict[str, Any]) -> dict[str, Any]:
    out = subprocess.run(
        ["node", str(ORACLE), "compact", str(path), "--options", json.dumps(options)],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout
    return json.loads(out)  # type: ignore[no-any-return]


TURN = [
    {"message": {"role": "user", "content": "And the docs " * 80, "timestamp": 1733300000000}},
    {
        "message": {
            "role": "assistant",
            "content": [{"type": "text", "text": "Updated the docs. " * 40}],
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "usage": {
                "input": 9100,
                "output": 300,
                "cacheRead": 0,
                "cacheWrite": 0,
                "totalTokens": 9400,
                "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
            },
            "stopReason": "stop",
            "timestamp": 1733300000001,
        }
    },
]


def _live_compact(tmp_path: Path, during: Callable[[Path], None] | None, keep: int) -> None:
    manager, path = opened_copy(tmp_path, "coding")
    if during is None:
        pi_append(path, TURN)
    recorder = Recorder(["A", "B"])

    def model(request: c.SummaryRequest) -> c.SummaryResult:
        if during is not None and not recorder.requests:
            during(path)
        usage = recorder(request).usage
        # Pi's fake model answers "A", then "B": the history, then the turn prefix of a split turn.
        return c.SummaryResult("B" if request.kind == "turn_prefix" else "A", usage)

    manager.compact(model, settings=c.CompactionSettings(keep_recent_tokens=keep))
    text = path.read_text(encoding="utf-8")
    as_it_then_was = text[: text.rstrip("\n").rfind("\n") + 1]
    snapshot = tmp_path / "then.jsonl"
    snapshot.write_text(as_it_then_was, encoding="utf-8")
    expected = oracle_compact(snapshot, {"settings": {"keepRecentTokens": keep}, "replies": ["A", "B"]})
    assert expected["ok"], expected.get("error")
    pis_requests = pi_requests(expected)
    assert our_requests(recorder)[-len(pis_requests) :] == pis_requests
    assert normalise(written_after(path, as_it_then_was)) == normalise(
        [line for line in expected["text"][len(as_it_then_was) :].split("\n") if line]
    )


@needs_oracle
@pytest.mark.parametrize("keep", [1000, 2000])
def test_live_pi_appends_between_open_and_compact(tmp_path: Path, keep: int) -> None:
    _live_compact(tmp_path, None, keep)


@needs_oracle
@pytest.mark.parametrize("keep", [1000, 2000])
def test_live_pi_appends_while_the_summarizer_runs(tmp_path: Path, keep: int) -> None:
    _live_compact(tmp_path, lambda path: pi_append(path, TURN), keep)
