"""Live: the real Pi 1.6.0 CLI and ``pisession`` run the same compaction or branch summary against
the same loopback fake provider (``../shared/pi-oracle/capture.py``); every request and the
entries written must be equal. Skipped, saying why, where Node 22 and the installed Pi are
missing (the golden tests in test_llm_conformance.py still run).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import generate_llm as gen  # noqa: E402

ROOT = HERE.parents[1]


def _pi_runs() -> str | None:
    if not (gen.ORACLE_DIR / "capture.py").exists():
        return "needs ../shared/pi-oracle"
    try:
        done = subprocess.run(
            ["bash", str(gen.ORACLE_DIR / "pi.sh"), "--version"], capture_output=True, timeout=60, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"the real Pi CLI does not run: {exc}"
    if done.returncode != 0:
        return "the real Pi CLI does not run (Node 22 missing): run ../shared/pi-oracle/setup.sh"
    return None


REASON = _pi_runs()
pytestmark = pytest.mark.skipif(REASON is not None, reason=REASON or "")

LIVE = [
    "anthropic_think_high",
    "anthropic_think_off",
    "anthropic_small_window",
    "responses_off",
    "navigate_openai",
    "unknown_model",
    "no_credentials",
    "completions_split",
    "responses_think",
    "google",
    "navigate",
    "flag_model",
    "retry_429",
    "truncated",
]


def _pisession_command(spec: dict[str, Any], ids: list[str]) -> list[str]:
    cmd = ["env", f"PYTHONPATH={ROOT}", sys.executable, "-m", "pisession.cli"]
    if spec["mode"] == "compact":
        cmd += ["compact", "{session}"]
    else:
        cmd += ["branch", "{session}", ids[spec["navigateTo"]], "--summarize"]
        if spec["label"]:
            cmd += ["--label", spec["label"]]
    if spec["instructions"]:
        cmd += ["--instructions", spec["instructions"]]
    words = spec["piArgs"].split()
    for flag in ("--model", "--thinking"):
        if flag in words:
            cmd += [flag, words[words.index(flag) + 1]]
    return cmd


def _capture(spec: dict[str, Any], text: str, work: Path, tail: list[str]) -> dict[str, Any]:
    d = Path(tempfile.mkdtemp(dir=work))
    session = d / "session.jsonl"
    session.write_text(text, encoding="utf-8")
    agent = d / "agent"
    agent.mkdir()
    for name, content in spec["agent"].items():
        (agent / name).write_text(json.dumps(content))
    cmd = [
        sys.executable,
        str(gen.ORACLE_DIR / "capture.py"),
        "--session",
        str(session),
        "--agent-dir",
        str(agent),
    ]
    cmd += ["--fake-options", json.dumps(spec["fake"]), "--timeout", "90"]
    for item in spec["env"]:
        cmd += ["--env", item]
    done = subprocess.run(
        [*cmd, *tail],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"},
    )
    if done.returncode == 2:
        pytest.skip(f"capture.py: {done.stderr.strip()[:200]}")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)  # type: ignore[no-any-return]


def _entries(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {k: v for k, v in e.items() if k not in ("id", "parentId", "timestamp", "targetId", "fromId")}
        for e in lines
        if e.get("type") != "thinking_level_change"
    ]


def _headers(request: dict[str, Any]) -> dict[str, str]:
    lowered = {k.lower(): v for k, v in request["headers"].items()}
    return {k: lowered[k] for k in gen.MEANINGFUL_HEADERS if k in lowered and k != "accept"}


@pytest.mark.parametrize("name", LIVE)
def test_pisession_sends_and_writes_what_the_real_pi_does(name: str, tmp_path: Path) -> None:
    if name == "no_credentials":
        # Every provider's key is a variable nobody set: Pi finds no model; pisession refuses
        # before any request, naming the variables.
        spec = gen.case("no_credentials", "fakeoai", "gpt-fake", "openai-completions", env=[], auth=None)
        providers = {k: v for k, v in gen.MODELS["providers"].items() if k in ("fakeoai", "fakegem")}
        spec["agent"]["models.json"] = {"providers": providers}
    else:
        spec = next(c for c in gen.CASES if c["name"] == name)
    text, ids = gen.build_session(spec["ops"], tmp_path)
    pi_tail = ["--pi-compact"] if spec["mode"] == "compact" else ["--pi-navigate", ids[spec["navigateTo"]]]
    if spec["piArgs"]:
        pi_tail.insert(0, f"--pi-args={spec['piArgs']}")
    if spec["instructions"]:
        pi_tail += ["--instructions", spec["instructions"]]
    if spec["label"]:
        pi_tail += ["--label", spec["label"]]
    pi = _capture(spec, text, tmp_path, pi_tail)
    ours = _capture(spec, text, tmp_path, ["--", *_pisession_command(spec, ids)])
    assert len(ours["requests"]) == len(pi["requests"]), ours["stderr"]
    if not pi["requests"]:
        assert ours["exit"] == 1 and ours["newLines"] == []
        if name == "no_credentials":
            assert "environment variable: FAKEOAI_KEY" in ours["stderr"], ours["stderr"]
        assert not [e for e in pi["newLines"] if e.get("type") == "compaction"]
        return
    for mine, theirs in zip(ours["requests"], pi["requests"], strict=True):
        assert (mine["method"], mine["path"], mine["query"]) == (
            theirs["method"],
            theirs["path"],
            theirs["query"],
        )
        assert mine["body"] == theirs["body"]
        assert _headers(mine) == _headers(theirs)
    assert _entries(ours["newLines"]) == _entries(pi["newLines"])
    response = pi["response"] or {}
    if response.get("success") is False:
        assert ours["exit"] == 1
        assert ours["stderr"].strip().endswith(response["error"])
    else:
        assert ours["exit"] == 0, ours["stderr"]
    for secret in ("sk-test-fakeant", "sk-test-fakeoai", "sk-test-fakeresp", "sk-test-fakegem"):
        assert secret not in ours["stdout"] + ours["stderr"]
