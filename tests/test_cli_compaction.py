"""`pisession compact --plan / --summarizer-command` and `branch --summarize`: each the library's
compaction call (plan_compaction, compact, navigate_tree with command_summarizer), on the file."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from pisession import AssistantMessage, MessageEntry, SessionManager, read_session, to_wire
from pisession.cli import main
from pisession.compaction import CompactionSettings, SummaryRequest, format_plan

CASES = Path(__file__).parent / "conformance" / "cases" / "compaction"
SETTINGS = CompactionSettings(keep_recent_tokens=300)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def session(tmp_path: Path) -> Path:
    path = tmp_path / "coding.jsonl"
    shutil.copyfile(CASES / "coding.jsonl", path)
    return path


def _without_ids(entry: Any, ids: dict[str, str] | None = None) -> dict[str, Any]:
    """The entry as written, its fresh ids and clock readings aside (``ids`` renames the ids
    it points at, e.g. a label on an entry of the same run)."""
    wire = dict(to_wire(entry))
    for key in ("id", "parentId", "timestamp"):
        wire.pop(key, None)
    if isinstance(wire.get("systemMessage"), dict):
        wire["systemMessage"] = {k: v for k, v in wire["systemMessage"].items() if k != "timestamp"}
    if ids and wire.get("targetId") in ids:
        wire["targetId"] = ids[wire["targetId"]]
    return wire


def test_plan_prints_the_library_plan_and_writes_nothing(
    session: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = session.read_bytes()
    code, out, _ = run(capsys, "compact", str(session), "--plan", "--keep-recent-tokens", "300")
    assert code == 0
    plan = read_session(session).plan_compaction(SETTINGS)
    assert plan is not None
    assert out == format_plan(plan) + "\n"
    assert "first kept entry: " + plan.first_kept_entry_id in out
    code, out, _ = run(capsys, "compact", str(session), "--plan", "--json", "--keep-recent-tokens", "300")
    assert code == 0 and '"firstKeptEntryId": "' + plan.first_kept_entry_id + '"' in out
    assert session.read_bytes() == before


def test_summarizer_command_compacts_as_the_library_does(
    session: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "copy.jsonl"
    shutil.copyfile(session, copy)
    requests: list[SummaryRequest] = []

    def summarize(request: SummaryRequest) -> str:
        requests.append(request)
        return f"summary of {request.kind}"

    expected = SessionManager.open(copy).compact(summarize, settings=SETTINGS)
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    command = (
        f"n=$(ls {prompts} | grep -c prompt); cat > {prompts}/$n.prompt; "
        f'printf %s "$PISESSION_SYSTEM_PROMPT" > {prompts}/$n.system; '
        'if [ "$n" = 0 ]; then printf "summary of history"; else printf "summary of turn_prefix"; fi'
    )
    code, out, err = run(
        capsys, "compact", str(session), "--keep-recent-tokens", "300", "--summarizer-command", command
    )
    assert (code, err) == (0, "")
    assert "Compacted (entry " in out
    written = SessionManager.open(session).get_leaf_entry()
    assert _without_ids(written) == _without_ids(expected)
    # The command saw, once per request, exactly what Pi would send.
    assert len(requests) == 2 and requests[1].kind == "turn_prefix"
    for n, request in enumerate(requests):
        assert (prompts / f"{n}.prompt").read_text() == request.prompt
        assert (prompts / f"{n}.system").read_text() == request.system_prompt


@pytest.mark.parametrize("command", ["exit 3", "true", "printf '  \\n'"])
def test_a_failing_or_silent_summarizer_writes_nothing(
    session: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    before = session.read_bytes()
    code, out, err = run(
        capsys, "compact", str(session), "--keep-recent-tokens", "300", "--summarizer-command", command
    )
    assert code == 1 and out == ""
    assert err.startswith("pisession: error: ") and err.count("\n") == 1
    assert session.read_bytes() == before


def test_compact_takes_exactly_one_way_to_summarize(
    session: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = session.read_bytes()
    for argv in (
        ["compact", str(session), "--plan", "--summary", "x", "--keep-from", "a"],
        ["compact", str(session), "--summary", "x"],
        ["compact", str(session), "--summarizer-command", "echo x", "--keep-from", "a"],
    ):
        code, _, err = run(capsys, *argv)
        assert code == 2 and err.startswith("pisession: error: "), argv
    assert session.read_bytes() == before


def test_compact_without_a_summarizer_uses_pis_model_and_fails_clearly_without_one(
    session: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # No summarizer given: the model Pi would use. The agent folder is empty and no provider
    # variable is set, so there is no key: a clear error before any request, nothing written.
    from pisession.models import builtin_env_vars
    from pisession.models._registry import _builtin

    for provider in _builtin()["envVars"]:
        for name in builtin_env_vars(provider):
            monkeypatch.delenv(name, raising=False)
    before = session.read_bytes()
    code, out, err = run(capsys, "compact", str(session))
    assert code == 1 and out == ""
    # The session's model is Anthropic's: the message names the variables Pi would read.
    assert err.startswith("pisession: error: No API key for provider anthropic: set ANTHROPIC_")
    assert "ANTHROPIC_API_KEY" in err
    code, out, err = run(capsys, "compact", str(session), "--model", "nowhere/nothing", "--dry-run")
    assert code == 1 and 'Model "nowhere/nothing" not found' in err
    assert session.read_bytes() == before


def test_branch_summarize_navigates_as_the_library_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    session = tmp_path / "tree.jsonl"
    shutil.copyfile(CASES / "tree.jsonl", session)
    copy = tmp_path / "copy.jsonl"
    shutil.copyfile(session, copy)
    manager = SessionManager.open(copy)
    leaf_path = {e.id for e in manager.get_branch()}
    target = next(
        e.id
        for e in manager.get_entries()
        if isinstance(e, MessageEntry) and isinstance(e.message, AssistantMessage) and e.id not in leaf_path
    )
    expected = manager.navigate_tree(target, summarize=lambda request: "the old branch", label="retry")
    assert expected.summary_entry is not None
    code, out, err = run(
        capsys,
        "branch",
        str(session),
        target,
        "--summarize",
        "--summarizer-command",
        "printf 'the old branch'",
        "--label",
        "retry",
    )
    assert (code, err) == (0, "")
    assert out.startswith(f"Branched to {target} with a summary")
    after = SessionManager.open(session)
    written = after.get_entries()[-2:]
    reference = SessionManager.open(copy).get_entries()[-2:]
    assert [_without_ids(e, {written[0].id: "summary"}) for e in written] == [
        _without_ids(e, {reference[0].id: "summary"}) for e in reference
    ]
    assert after.get_label(written[0].id) == "retry"  # Pi labels the summary entry


def test_branch_summarize_without_a_command_uses_pis_model(
    session: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Without --summarizer-command the model Pi would use; an unknown entry is refused first.
    before = session.read_bytes()
    code, _, err = run(capsys, "branch", str(session), "x", "--summarize")
    assert code == 1 and "entry x not found" in err
    code, _, err = run(capsys, "branch", str(session), "x", "--summarize", "--summary", "s")
    assert code == 2
    assert session.read_bytes() == before


@pytest.mark.parametrize("value", ["-5", "many", "1.5"])
def test_token_settings_must_be_whole_numbers(
    session: Path, capsys: pytest.CaptureFixture[str], value: str
) -> None:
    code, out, err = run(capsys, "compact", str(session), "--plan", "--keep-recent-tokens", value)
    assert code == 2 and out == "" and "not a number of tokens" in err


@pytest.mark.parametrize(
    ("case", "keep", "why"),
    [
        ("compacted", "300", "Already compacted"),
        ("coding", "1000000", "Nothing to compact (session too small)"),
    ],
)
def test_plan_says_why_there_is_nothing_to_compact(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, keep: str, why: str
) -> None:
    path = tmp_path / f"{case}.jsonl"
    shutil.copyfile(CASES / f"{case}.jsonl", path)
    code, out, _ = run(capsys, "compact", str(path), "--plan", "--keep-recent-tokens", keep)
    assert (code, out) == (0, why + "\n")
    code, out, _ = run(capsys, "compact", str(path), "--plan", "--json", "--keep-recent-tokens", keep)
    assert (code, out.strip()) == (0, "null")


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="reads /proc")
def test_ctrl_c_during_the_summarizer_command_leaves_no_child_and_writes_nothing(session: Path) -> None:
    import signal
    import subprocess
    import sys
    import time

    pidfile = session.parent / "child.pid"
    before = session.read_bytes()
    command = f"sleep 60 </dev/null >/dev/null 2>&1 & echo $! > {pidfile}; wait"
    process = subprocess.Popen(
        [
            *(sys.executable, "-m", "pisession.cli", "compact", str(session)),
            *("--keep-recent-tokens", "300", "--summarizer-command", command),
        ],
        stderr=subprocess.PIPE,
    )
    try:
        for _ in range(600):
            if (pidfile.exists() and pidfile.read_text().strip()) or process.poll() is not None:
                break
            time.sleep(0.05)
        assert process.poll() is None, process.communicate()
        child = int(pidfile.read_text())
        process.send_signal(signal.SIGINT)  # Ctrl-C reaches the foreground process
        _, err = process.communicate(timeout=60)
        assert process.returncode == 130 and b"Traceback" not in err
        for _ in range(100):
            try:
                with open(f"/proc/{child}/stat") as stat:
                    if stat.read().rsplit(")", 1)[1].split()[0] == "Z":
                        break
            except FileNotFoundError:
                break
            time.sleep(0.05)
        else:
            raise AssertionError(f"the summarizer's child {child} outlived Ctrl-C")
        assert session.read_bytes() == before
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_compact_dry_run_prints_the_request_and_sends_nothing(
    session: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import json
    import os

    agent = Path(os.environ["PI_CODING_AGENT_DIR"])
    agent.mkdir(parents=True, exist_ok=True)
    secret = "sk-dry-run-secret"
    models = {
        "providers": {
            "local": {
                "baseUrl": "http://127.0.0.1:9/v1",
                "api": "openai-completions",
                "apiKey": secret,
                "models": [{"id": "small", "reasoning": True, "contextWindow": 12000, "maxTokens": 8000}],
            }
        }
    }
    (agent / "models.json").write_text(json.dumps(models))
    before = session.read_bytes()
    argv = ["compact", str(session), "--model", "local/small", "--thinking", "high", "--dry-run",
            "--keep-recent-tokens", "300"]  # fmt: skip
    code, out, err = run(capsys, *argv)
    assert code == 0, err
    assert "endpoint: POST http://127.0.0.1:9/v1/chat/completions" in out
    assert "output cap: " in out and '"reasoning_effort": "high"' in out
    assert secret not in out + err
    code, out, err = run(capsys, *argv, "--json")
    data = json.loads(out)
    assert data[0]["model"] == "local/small" and data[0]["headers"]["authorization"] == "<hidden>"
    assert data[0]["body"]["max_completion_tokens"] == data[0]["maxTokens"] < 8000  # the window clamps it
    assert session.read_bytes() == before
