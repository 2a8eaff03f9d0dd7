"""pisession's built-in summarizer against Pi 1.6.0's own requests and entries
(``golden/llm/*.json``, captured by ``generate_llm.py`` with the real Pi CLI and
``../shared/pi-oracle/capture.py``).

Each case runs pisession on the same session, agent folder, environment and fake-provider
answers (the oracle's ``fake_provider.py``, plain Python: no Node needed) and checks that every
request body equals Pi's (parsed JSON, key order included), that the meaningful headers and the
request line equal Pi's, and that the entries written equal Pi's apart from ids and timestamps.
"""

from __future__ import annotations

import itertools
import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest

from pisession import SessionManager
from pisession.llm import ModelRequestError, PiSummarizer
from pisession.models import CredentialsError, ModelError, ModelRegistry

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden" / "llm"
ORACLE_DIR = HERE.parents[2] / "shared" / "pi-oracle"
MEANINGFUL = (
    "x-api-key",
    "authorization",
    "x-goog-api-key",
    "anthropic-version",
    "anthropic-beta",
    "content-type",
    "x-custom",
    "x-model",
)

if (ORACLE_DIR / "fake_provider.py").exists():
    sys.dont_write_bytecode = True
    sys.path.insert(0, str(ORACLE_DIR))
    from fake_provider import FakeProvider  # type: ignore[import-not-found]

    sys.path.remove(str(ORACLE_DIR))
else:  # pragma: no cover
    FakeProvider = None

pytestmark = pytest.mark.skipif(FakeProvider is None, reason="needs ../shared/pi-oracle/fake_provider.py")

CASES = sorted(p.stem for p in GOLDEN.glob("*.json"))


def load(name: str) -> dict[str, Any]:
    return json.loads((GOLDEN / f"{name}.json").read_text(encoding="utf-8"))


def setup(case: dict[str, Any], tmp: Path, url: str) -> tuple[Path, Path, dict[str, str]]:
    agent = tmp / "agent"
    agent.mkdir()
    for name, content in case["input"]["agent"].items():
        (agent / name).write_text(json.dumps(content).replace("{FAKE_URL}", url))
    cwd = tmp / "cwd"
    cwd.mkdir()
    lines = case["input"]["session"].splitlines()
    header = json.loads(lines[0])
    header["cwd"] = str(cwd)
    session = tmp / "session.jsonl"
    session.write_text("\n".join([json.dumps(header), *lines[1:]]) + "\n", encoding="utf-8")
    env = dict(item.split("=", 1) for item in case["input"]["env"])
    env["HOME"] = str(tmp)
    return session, agent, env


def pi_args(case: dict[str, Any]) -> dict[str, str | None]:
    words = case["input"]["piArgs"].split()
    out: dict[str, str | None] = {"model": None, "thinking": None}
    for flag, value in itertools.pairwise(words):
        if flag in ("--model", "--thinking"):
            out[flag[2:]] = value
    return out


def run_pisession(
    case: dict[str, Any], tmp: Path
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], Exception | None]:
    with FakeProvider(case["input"]["fake"]) as fake:
        session, agent, env = setup(case, tmp, fake.url)
        manager = SessionManager.open(str(session))
        before = len(session.read_text(encoding="utf-8").splitlines())
        error: Exception | None = None
        try:
            flags = pi_args(case)
            summarizer = PiSummarizer.for_session(
                manager, flags["model"], flags["thinking"], agent_dir=str(agent), env=env
            )
            if case["input"]["mode"] == "compact":
                manager.compact(
                    summarizer,
                    settings=summarizer.compaction_settings(),
                    custom_instructions=case["input"]["instructions"],
                )
            else:
                target = case["input"]["ids"][case["input"]["navigateTo"]]
                manager.navigate_tree(
                    target,
                    summarize=summarizer,
                    custom_instructions=case["input"]["instructions"],
                    label=case["input"]["label"],
                    context_window=summarizer.model.context_window,
                    reserve_tokens=summarizer.branch_summary_reserve_tokens(),
                )
        except Exception as exc:
            error = exc
        requests = list(fake.requests)
        after = session.read_text(encoding="utf-8").splitlines()[before:]
    return requests, [json.loads(line) for line in after], error


def comparable(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # Pi's RPC start appends the effective thinking level when the branch has none: not part of
    # the compaction itself (pisession writes no such entry).
    return [
        {k: v for k, v in e.items() if k not in ("id", "parentId", "timestamp", "targetId", "fromId")}
        for e in entries
        if e.get("type") != "thinking_level_change"
    ]


def headers_of(request: dict[str, Any]) -> dict[str, str]:
    lowered = {k.lower(): v for k, v in request["headers"].items()}
    return {k: lowered[k] for k in MEANINGFUL if k in lowered}


@pytest.mark.parametrize("name", CASES)
def test_requests_and_entries_equal_pis(name: str, tmp_path: Path) -> None:
    case = load(name)
    pi = case["pi"]
    requests, entries, error = run_pisession(case, tmp_path)
    pi_requests = pi["requests"]
    if name == "unknown_model":
        assert isinstance(error, ModelError) and 'Model "nowhere/nothing" not found' in str(error)
        assert requests == [] and entries == []
        return
    assert len(requests) == len(pi_requests), (error, [r["answer"] for r in requests])
    for ours, theirs in zip(requests, pi_requests, strict=True):
        assert (ours["method"], ours["path"], ours["query"]) == (
            theirs["method"],
            theirs["path"],
            theirs["query"],
        )
        ours_body, pi_body = json.loads(ours["body"]), json.loads(theirs["body"])
        assert json.dumps(ours_body, ensure_ascii=False) == json.dumps(pi_body, ensure_ascii=False)
        assert ours["body"] == theirs["body"]  # byte for byte: JSON.stringify's output
        assert headers_of(ours) == {k: v for k, v in theirs["headers"].items() if k in MEANINGFUL}
    success = pi["response"] is not None and (pi["response"].get("success") or pi["response"].get("ok"))
    if success:
        assert error is None, error
    else:
        assert isinstance(error, ModelRequestError)
        assert str(error) == pi["response"]["error"]
    assert comparable(entries) == comparable(pi["newLines"])


def test_missing_key_fails_before_any_request_naming_the_variable(tmp_path: Path) -> None:
    case = load("completions")
    case["input"]["env"] = []
    case["input"]["agent"]["models.json"] = {
        "providers": {"fakeoai": case["input"]["agent"]["models.json"]["providers"]["fakeoai"]}
    }
    case["input"]["agent"].pop("auth.json")
    requests, entries, error = run_pisession(case, tmp_path)
    assert isinstance(error, (CredentialsError, ModelError))
    assert requests == [] and entries == []


def test_registry_sees_custom_and_builtin_models(tmp_path: Path) -> None:
    case = load("anthropic")
    _, agent, _ = setup(case, tmp_path, "http://127.0.0.1:9")
    registry = ModelRegistry.load(agent)
    assert registry.get("fakeant/claude-small").context_window == 12000
    assert registry.get("anthropic/claude-sonnet-4-5").base_url == "http://127.0.0.1:9"
    shutil.rmtree(agent)
