"""pisession.compaction beyond what the golden data pins: summarizer plumbing, failures that must
write nothing, the command-line summarizer and the plan text."""

from __future__ import annotations

import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pisession import (
    AlreadyCompactedError,
    CompactionEntry,
    NothingToCompactError,
    PisessionError,
    SessionManager,
    SummarizerCommandError,
)
from pisession import compaction as c

CASES = Path(__file__).resolve().parent / "conformance" / "cases" / "compaction"
SPLIT = c.CompactionSettings(keep_recent_tokens=1000)  # "coding": history and a split turn


def open_case(tmp_path: Path, name: str) -> SessionManager:
    copy = tmp_path / f"{name}.jsonl"
    shutil.copyfile(CASES / f"{name}.jsonl", copy)
    return SessionManager.open(copy)


def test_plain_string_summary_stores_no_usage(tmp_path: Path) -> None:
    manager = open_case(tmp_path, "coding")
    plan = manager.plan_compaction(SPLIT)
    assert plan is not None
    entry = manager.compact(lambda request: "short", settings=SPLIT)
    assert isinstance(entry, CompactionEntry)
    assert entry.summary.startswith("short\n\n---\n\n**Turn Context (split turn):**\n\nshort\n\n<read-files>")
    assert '"usage"' not in (tmp_path / "coding.jsonl").read_text().splitlines()[-1]
    read_files, modified_files = c.compute_file_lists(plan.file_ops)
    assert entry.details == {"readFiles": read_files, "modifiedFiles": modified_files}
    assert entry.first_kept_entry_id == plan.first_kept_entry_id


def test_a_failing_summarizer_writes_nothing(tmp_path: Path) -> None:
    manager = open_case(tmp_path, "coding")
    before = (tmp_path / "coding.jsonl").read_text()
    calls: list[c.SummaryRequest] = []

    def fail_second(request: c.SummaryRequest) -> str:
        calls.append(request)
        if len(calls) == 2:
            raise RuntimeError("model down")
        return "ok"

    with pytest.raises(RuntimeError, match="model down"):
        manager.compact(fail_second, settings=SPLIT)
    assert [r.kind for r in calls] == ["history", "turn_prefix"]
    assert (tmp_path / "coding.jsonl").read_text() == before
    assert manager.get_entry_count() == len(before.splitlines()) - 1


def test_a_summarizer_must_return_text(tmp_path: Path) -> None:
    manager = open_case(tmp_path, "coding")
    with pytest.raises(TypeError, match="str or SummaryResult"):
        manager.compact(lambda request: 42, settings=SPLIT)  # type: ignore[arg-type,return-value]


def test_split_turn_usage_is_summed_like_pi(tmp_path: Path) -> None:
    manager = open_case(tmp_path, "coding")
    usage = {
        "input": 5,
        "output": 1,
        "cacheRead": 2,
        "cacheWrite": 0,
        "totalTokens": 8,
        "reasoning": 1,
        "cost": {"input": 0.5, "output": 0.25, "cacheRead": 0, "cacheWrite": 0, "total": 0.75},
    }
    from pisession import Usage, from_wire, to_wire

    result = c.SummaryResult("s", from_wire(usage, Usage))
    entry = manager.compact(lambda request: result, settings=SPLIT)
    assert to_wire(entry.usage) == {
        "input": 10,
        "output": 2,
        "cacheRead": 4,
        "cacheWrite": 0,
        "reasoning": 2,
        "totalTokens": 16,
        "cost": {
            "input": 1.0,
            "output": 0.5,
            "cacheRead": 0,
            "cacheWrite": 0,
            "total": 1.5,
            "totalFromProvider": False,
        },
    }


def test_errors_are_pisession_errors(tmp_path: Path) -> None:
    assert issubclass(NothingToCompactError, PisessionError)
    assert issubclass(AlreadyCompactedError, PisessionError)
    manager = open_case(tmp_path, "compacted")
    with pytest.raises(AlreadyCompactedError, match=r"^Already compacted$"):
        manager.compact(lambda request: "x")


def test_thinking_level_becomes_reasoning(tmp_path: Path) -> None:
    seen: list[str | None] = []
    for level in (None, "off", "high"):
        manager = open_case(tmp_path, "coding")
        manager.compact(lambda r: seen.append(r.reasoning) or "s", thinking_level=level, settings=SPLIT)
    assert seen == [None, None, None, None, "high", "high"]


def test_navigate_without_summary_moves_leaf_only(tmp_path: Path) -> None:
    manager = open_case(tmp_path, "tree")
    before = (tmp_path / "tree.jsonl").read_text()
    first = manager.get_entries()[0]
    nav = manager.navigate_tree(first.id)
    assert nav == c.Navigation(None, "Start the investigation.", None)
    assert manager.get_leaf_id() is None
    assert (tmp_path / "tree.jsonl").read_text() == before


def test_navigate_summarizer_failure_keeps_leaf(tmp_path: Path) -> None:
    manager = open_case(tmp_path, "tree")
    leaf = manager.get_leaf_id()

    def boom(request: c.SummaryRequest) -> str:
        raise RuntimeError("no")

    with pytest.raises(RuntimeError):
        manager.navigate_tree(manager.get_entries()[1].id, summarize=boom, label="x")
    assert manager.get_leaf_id() == leaf


def test_command_summarizer_runs_the_command(tmp_path: Path) -> None:
    script = tmp_path / "echo.py"
    script.write_text(
        "import os, sys\n"
        "data = sys.stdin.read()\n"
        "print(os.environ['PISESSION_SYSTEM_PROMPT'][:10] + '|' + str(len(data)))\n"
    )
    summarize = c.command_summarizer(f"{sys.executable} {script}")
    request = c.SummaryRequest("history", c.SUMMARIZATION_SYSTEM_PROMPT, "é" * 5)
    assert summarize(request) == "You are a |5"


@pytest.mark.parametrize(
    ("command", "message"),
    [("exit 3", "exited with code 3"), ("true", "printed nothing"), ("echo '  '", "printed nothing")],
)
def test_command_summarizer_failures(tmp_path: Path, command: str, message: str) -> None:
    manager = open_case(tmp_path, "coding")
    before = (tmp_path / "coding.jsonl").read_text()
    with pytest.raises(SummarizerCommandError, match=message):
        manager.compact(c.command_summarizer(command), settings=SPLIT)
    assert (tmp_path / "coding.jsonl").read_text() == before


def test_command_summarizer_timeout() -> None:
    summarize = c.command_summarizer("sleep 5", timeout=0.2)
    with pytest.raises(SummarizerCommandError, match="timed out"):
        summarize(c.SummaryRequest("branch", "s", "p"))


def test_format_plan(tmp_path: Path) -> None:
    manager = open_case(tmp_path, "long_turn")
    plan = manager.plan_compaction(c.CompactionSettings(keep_recent_tokens=300))
    assert plan is not None
    text = c.format_plan(plan)
    assert f"first kept entry: {plan.first_kept_entry_id}" in text
    assert "split turn: yes" in text
    assert "read files: pkg/file_0.py" in text
    assert c.format_plan(None) == "nothing to compact"
    assert manager.get_entry_count() == len((tmp_path / "long_turn.jsonl").read_text().splitlines()) - 1


def test_public_functions_take_model_objects_and_wire_dicts(tmp_path: Path) -> None:
    manager = open_case(tmp_path, "kinds")
    branch = manager.get_branch()
    wire = [dict(__import__("pisession").to_wire(e)) for e in branch]
    s = c.CompactionSettings(keep_recent_tokens=50)
    a, b = c.prepare_compaction(branch, s), c.prepare_compaction(wire, s)
    assert a is not None and b is not None
    assert a.first_kept_entry_id == b.first_kept_entry_id
    assert a.messages_to_summarize == b.messages_to_summarize
    assert [c.estimate_tokens(m) for m in a.messages_to_summarize] == [
        c.estimate_tokens(__import__("pisession").to_wire(m)) for m in a.messages_to_summarize
    ]


def test_the_summarizer_runs_without_the_session_lock(tmp_path: Path) -> None:
    """A model call takes seconds: another process must be able to append meanwhile (it would wait
    for the lock otherwise). The manager was at the tip, so it follows that append, as every
    append does; the branch moved, so the summary is made again for the branch as it now is."""
    manager = open_case(tmp_path, "coding")
    leaf = manager.get_leaf_id()
    code = (
        "import sys, pisession\n"
        "m = pisession.SessionManager.open(sys.argv[1])\n"
        "m.append_message({'role': 'user', 'content': 'meanwhile', 'timestamp': 1})\n"
    )
    kinds: list[str] = []

    def summarize(request: c.SummaryRequest) -> str:
        kinds.append(request.kind)
        if len(kinds) == 1:  # the first of the two calls of this split turn
            subprocess.run(
                [sys.executable, "-c", code, str(tmp_path / "coding.jsonl")], check=True, timeout=60
            )
        return "s"

    entry = manager.compact(summarize, settings=SPLIT)
    assert kinds == ["history", "turn_prefix", "history", "turn_prefix"]
    lines = (tmp_path / "coding.jsonl").read_text().splitlines()
    assert '"meanwhile"' in lines[-2] and '"type":"compaction"' in lines[-1]
    meanwhile = manager.get_entry(entry.parent_id or "")
    assert meanwhile is not None and meanwhile.parent_id == leaf
    assert entry.first_kept_entry_id in {e.id for e in manager.get_branch()}
    # What Pi would have written for the file with "meanwhile" in it.
    fresh = SessionManager.open(tmp_path / "coding.jsonl")
    fresh.branch(meanwhile.id)
    plan = fresh.plan_compaction(SPLIT)
    assert plan is not None
    assert (entry.first_kept_entry_id, entry.tokens_before) == (plan.first_kept_entry_id, plan.tokens_before)


def test_compaction_errors_are_importable_where_the_compaction_docs_describe_them() -> None:
    import pisession

    for name in (
        "NothingToCompactError",
        "AlreadyCompactedError",
        "BranchChangedError",
        "EmptySummaryError",
        "SummarizerCommandError",
    ):
        assert getattr(c, name) is getattr(pisession, name), name
        assert name in c.__all__ and name in pisession.__all__


@pytest.mark.parametrize("summary", ["", "  \n\t"])
def test_an_empty_summary_is_refused_as_the_command_summarizer_refuses_it(
    tmp_path: Path, summary: str
) -> None:
    manager = open_case(tmp_path, "coding")
    before = (tmp_path / "coding.jsonl").read_text()
    with pytest.raises(c.EmptySummaryError):
        manager.compact(lambda request: summary, settings=SPLIT)
    with pytest.raises(c.EmptySummaryError):
        manager.compact(lambda request: c.SummaryResult(summary), settings=SPLIT)
    with pytest.raises(c.EmptySummaryError):
        manager.compact(c.command_summarizer(f"printf {summary!r}"), settings=SPLIT)
    with pytest.raises(c.EmptySummaryError):
        manager.navigate_tree(manager.get_entries()[5].id, summarize=lambda request: summary)
    assert (tmp_path / "coding.jsonl").read_text() == before


@pytest.mark.parametrize("text", [None, b"bytes", 123])
def test_a_summary_result_must_hold_text(tmp_path: Path, text: object) -> None:
    with pytest.raises(TypeError, match="text"):
        c.SummaryResult(text)  # type: ignore[arg-type]
    made_anyway = c.SummaryResult("x")
    object.__setattr__(made_anyway, "text", text)
    manager = open_case(tmp_path, "coding")
    before = (tmp_path / "coding.jsonl").read_text()
    with pytest.raises(TypeError, match=r"SummaryResult\.text must be str"):
        manager.compact(lambda request: made_anyway, settings=SPLIT)
    assert (tmp_path / "coding.jsonl").read_text() == before


def test_a_summary_result_usage_must_be_a_usage(tmp_path: Path) -> None:
    manager = open_case(tmp_path, "coding")
    before = (tmp_path / "coding.jsonl").read_text()
    odd = c.SummaryResult("text", "1500 tokens")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match=r"SummaryResult\.usage must be a Usage"):
        manager.compact(lambda request: odd, settings=SPLIT)
    assert (tmp_path / "coding.jsonl").read_text() == before


def test_plan_compaction_can_say_why_there_is_nothing_to_do(tmp_path: Path) -> None:
    compacted = open_case(tmp_path, "compacted")
    assert compacted.plan_compaction() is None
    with pytest.raises(AlreadyCompactedError, match=r"^Already compacted$"):
        compacted.plan_compaction(raise_if_nothing=True)
    small = open_case(tmp_path, "coding")
    roomy = c.CompactionSettings(keep_recent_tokens=10**6)
    assert small.plan_compaction(roomy) is None
    with pytest.raises(NothingToCompactError, match=r"^Nothing to compact \(session too small\)$"):
        small.plan_compaction(roomy, raise_if_nothing=True)
    assert small.plan_compaction(SPLIT, raise_if_nothing=True) is not None


def test_an_async_summarizer_is_refused_by_the_sync_manager(tmp_path: Path) -> None:
    manager = open_case(tmp_path, "coding")
    before = (tmp_path / "coding.jsonl").read_text()

    async def summarize(request: c.SummaryRequest) -> str:
        return "s"

    class AsyncCallable:
        async def __call__(self, request: c.SummaryRequest) -> str:
            return "s"

    for summarizer in (summarize, AsyncCallable(), lambda request: summarize(request)):
        with pytest.raises(TypeError, match="AsyncSessionManager"):
            manager.compact(summarizer, settings=SPLIT)  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="AsyncSessionManager"):
            manager.navigate_tree(manager.get_entries()[5].id, summarize=summarizer)  # type: ignore[arg-type]
    assert (tmp_path / "coding.jsonl").read_text() == before


def _gone(pid: int) -> bool:
    """The process ended (a zombie waiting for a reaper counts: it runs no more)."""
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def _wait_gone(pid: int) -> bool:
    # A bound for a loaded machine (the kill is immediate; being scheduled to die may not be).
    for _ in range(600):
        if _gone(pid):
            return True
        time.sleep(0.05)
    return False


# The child does not hold the pipes: a leftover is found by its pid, not by a hung read.
SPAWNING = "sleep 60 </dev/null >/dev/null 2>&1 & echo $! > {pidfile}; wait"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_a_timed_out_summarizer_command_leaves_no_child_behind(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    summarize = c.command_summarizer(SPAWNING.format(pidfile=pidfile), timeout=1.0)
    with pytest.raises(SummarizerCommandError, match="timed out"):
        summarize(c.SummaryRequest("history", "s", "p"))
    child = int(pidfile.read_text())
    assert _wait_gone(child), f"the command's child {child} outlived the timeout"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_ctrl_c_leaves_no_summarizer_child_behind(tmp_path: Path) -> None:
    pidfile = tmp_path / "child.pid"
    script = (
        "import sys\n"
        "from pisession.compaction import SummaryRequest, command_summarizer\n"
        "try:\n"
        "    command_summarizer(sys.argv[1])(SummaryRequest('history', 's', 'p'))\n"
        "except KeyboardInterrupt:\n"
        "    sys.exit(130)\n"
    )
    process = subprocess.Popen([sys.executable, "-c", script, SPAWNING.format(pidfile=pidfile)])
    try:
        for _ in range(400):
            if pidfile.exists() and pidfile.read_text().strip():
                break
            time.sleep(0.05)
        child = int(pidfile.read_text())
        process.send_signal(signal.SIGINT)  # what Ctrl-C sends to the foreground process
        assert process.wait(timeout=60) == 130
        assert _wait_gone(child), f"the command's child {child} outlived Ctrl-C"
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_a_summarizer_raising_stop_iteration_is_an_error_not_the_end(tmp_path: Path) -> None:
    manager = open_case(tmp_path, "coding")
    before = (tmp_path / "coding.jsonl").read_text()

    def broken(request: c.SummaryRequest) -> str:
        raise StopIteration

    with pytest.raises(StopIteration):
        manager.compact(broken, settings=SPLIT)
    assert (tmp_path / "coding.jsonl").read_text() == before
