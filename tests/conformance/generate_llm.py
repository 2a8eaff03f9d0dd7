"""Regenerate golden/llm/*.json: the exact HTTP requests Pi 1.6.0's real command line sends for a
compaction or a branch summary, and the entries it writes, captured with
``../shared/pi-oracle/capture.py`` against the loopback fake provider.

    python tests/conformance/generate_llm.py [CASE ...]

Each file holds the input (session text, agent-dir files, fake-provider options, Pi's flags) and
what Pi did (requests with their meaningful headers, the new session lines, the RPC response and
stderr), so ``test_llm_conformance.py`` can run pisession on the same input against the same fake
server without Node.
"""

from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden" / "llm"
ORACLE_DIR = HERE.parents[2] / "shared" / "pi-oracle"
NODE = "node"

# The headers worth comparing (README "What is comparable"); the rest are the JS SDKs' fingerprint.
MEANINGFUL_HEADERS = (
    "x-api-key",
    "authorization",
    "x-goog-api-key",
    "anthropic-version",
    "anthropic-beta",
    "content-type",
    "accept",
    "x-custom",
    "x-model",
)

T0 = 1764583200000
USAGE = {
    "input": 1000,
    "output": 200,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 1200,
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
}


def session_ops(
    provider: str,
    model: str,
    api: str,
    shape: str = "normal",
    model_change: tuple[str, str] | None = None,
    thinking: str | None = None,
) -> list[dict[str, Any]]:
    ops: list[dict[str, Any]] = []
    if model_change:
        ops.append({"op": "appendModelChange", "args": list(model_change)})
    if thinking:
        ops.append({"op": "appendThinkingLevelChange", "args": [thinking]})

    def msg(m: dict[str, Any]) -> None:
        ops.append({"op": "appendMessage", "args": [{**m, "timestamp": T0 + len(ops)}]})

    def assistant(content: list[Any], stop: str) -> None:
        msg(
            {
                "role": "assistant",
                "content": content,
                "api": api,
                "provider": provider,
                "model": model,
                "usage": USAGE,
                "stopReason": stop,
            }
        )

    for turn in range(2):
        text = f"Turn {turn}: fix the bug in src/app_{turn}.py — naïve “quotes” 😀"
        msg({"role": "user", "content": [{"type": "text", "text": text}]})
        call = {
            "type": "toolCall",
            "id": f"call_{turn}",
            "name": "read",
            "arguments": {"path": f"src/app_{turn}.py"},
        }
        assistant(
            [
                {"type": "thinking", "thinking": "secret reasoning"},
                {"type": "text", "text": f"Reading app_{turn}."},
                call,
            ],
            "toolUse",
        )
        msg(
            {
                "role": "toolResult",
                "toolCallId": f"call_{turn}",
                "toolName": "read",
                "content": [{"type": "text", "text": "def main():\n    return 1/0\n" * 40}],
                "isError": False,
            }
        )
        assistant([{"type": "text", "text": f"Fixed app_{turn}: division by zero."}], "stop")
    if shape == "normal":
        msg(
            {
                "role": "user",
                "content": [{"type": "text", "text": "Turn 2: " + "please also review the tests " * 4}],
            }
        )
        assistant([{"type": "text", "text": "Reviewed: " + "all tests pass now. " * 8}], "stop")
    else:
        msg({"role": "user", "content": [{"type": "text", "text": "Turn 2: edit src/app_2.py"}]})
        edit = {"path": "src/app_2.py", "oldText": "1/0", "newText": "1"}
        assistant([{"type": "toolCall", "id": "call_2", "name": "edit", "arguments": edit}], "toolUse")
        msg(
            {
                "role": "toolResult",
                "toolCallId": "call_2",
                "toolName": "edit",
                "content": [{"type": "text", "text": "Edited.\n" + "x = 1\n" * 200}],
                "isError": False,
            }
        )
        assistant([{"type": "text", "text": "Done."}], "stop")
    return ops


def model(
    id_: str, reasoning: bool = False, window: int = 200000, max_tokens: int = 32000, **extra: Any
) -> dict[str, Any]:
    return {
        "id": id_,
        "reasoning": reasoning,
        "contextWindow": window,
        "maxTokens": max_tokens,
        "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75},
        **extra,
    }


MODELS = {
    "providers": {
        "fakeant": {
            "baseUrl": "{FAKE_URL}",
            "api": "anthropic-messages",
            "apiKey": "sk-test-fakeant",
            "models": [
                model("claude-fake"),
                model("claude-think", True),
                model("claude-small", True, 12000, 8000),
            ],
        },
        "fakeoai": {
            "baseUrl": "{FAKE_URL}/v1",
            "api": "openai-completions",
            "apiKey": "$FAKEOAI_KEY",
            "models": [model("gpt-fake"), model("gpt-think", True)],
        },
        "fakeresp": {
            "baseUrl": "{FAKE_URL}/v1",
            "api": "openai-responses",
            "apiKey": "!printf sk-test-fakeresp",
            "models": [model("gpt-resp-fake"), model("gpt-resp-think", True)],
        },
        "fakegem": {
            "baseUrl": "{FAKE_URL}/v1beta",
            "api": "google-generative-ai",
            "apiKey": "${FAKEGEM_KEY}",
            "headers": {"x-custom": "gem-header"},
            "models": [model("gemini-fake"), model("gemini-think", True)],
        },
        # built-in providers pointed at the fake: their models keep Pi's own metadata
        "anthropic": {"baseUrl": "{FAKE_URL}"},
        "openai": {"baseUrl": "{FAKE_URL}/v1"},
        "google": {"baseUrl": "{FAKE_URL}/v1beta"},
        "groq": {"baseUrl": "{FAKE_URL}/openai/v1"},
        "deepseek": {"baseUrl": "{FAKE_URL}"},
        "openrouter": {"baseUrl": "{FAKE_URL}/api/v1"},
        "zai": {"baseUrl": "{FAKE_URL}/api/paas/v4"},
        "together": {"baseUrl": "{FAKE_URL}/v1"},
        "qwen-token-plan": {"baseUrl": "{FAKE_URL}/compatible-mode/v1"},
        "moonshotai": {"baseUrl": "{FAKE_URL}/v1"},
        "fakehdr": {
            "baseUrl": "{FAKE_URL}/v1",
            "api": "openai-completions",
            "apiKey": "sk-test-fakehdr",
            "authHeader": True,
            "headers": {"x-custom": "$FAKEOAI_KEY"},
            "models": [
                model(
                    "hdr-model",
                    True,
                    samplingParams={"temperature": 0.2, "top_p": 0.9},
                    headers={"x-model": "m1"},
                ),
            ],
            "modelOverrides": {"hdr-model": {"maxTokens": 12345}},
        },
    }
}
AUTH = {
    "anthropic": {"type": "api_key", "key": "sk-ant-test-auth"},
    "openai": {"type": "api_key", "key": "sk-openai-test-auth"},
    "google": {"type": "api_key", "key": "gem-test-auth"},
    "groq": {"type": "api_key", "key": "gsk-test-auth"},
    **{
        p: {"type": "api_key", "key": f"{p}-test-auth"}
        for p in ("deepseek", "openrouter", "zai", "together", "qwen-token-plan", "moonshotai")
    },
}
ENV = ["FAKEOAI_KEY=sk-test-fakeoai", "FAKEGEM_KEY=sk-test-fakegem"]
SETTINGS = {"compaction": {"keepRecentTokens": 60}, "retry": {"enabled": False}}
FAKE = {
    "summary": "## Goal\nFake summary {hash}.",
    "usage": {"input": 1234, "output": 56, "cacheRead": 7, "cacheWrite": 0},
}


def case(
    name: str,
    provider: str,
    mid: str,
    api: str,
    *,
    shape: str = "normal",
    model_change: bool = True,
    thinking: str | None = None,
    settings: dict[str, Any] | None = None,
    models: dict[str, Any] | None = MODELS,
    auth: dict[str, Any] | None = AUTH,
    env: list[str] | None = None,
    fake: dict[str, Any] | None = None,
    pi_args: str = "",
    mode: str = "compact",
    instructions: str | None = None,
    navigate_to: int | None = None,
    label: str | None = None,
) -> dict[str, Any]:
    return {
        "name": name,
        "ops": session_ops(provider, mid, api, shape, (provider, mid) if model_change else None, thinking),
        "agent": {
            "settings.json": settings if settings is not None else SETTINGS,
            **({"models.json": models} if models is not None else {}),
            **({"auth.json": auth} if auth is not None else {}),
        },
        "env": ENV if env is None else env,
        "fake": fake if fake is not None else FAKE,
        "piArgs": pi_args,
        "mode": mode,
        "instructions": instructions,
        "navigateTo": navigate_to,
        "label": label,
    }


CASES = [
    case("anthropic", "fakeant", "claude-fake", "anthropic-messages"),
    case("anthropic_think_high", "fakeant", "claude-think", "anthropic-messages", thinking="high"),
    case("anthropic_think_off", "fakeant", "claude-think", "anthropic-messages", thinking="off"),
    case("anthropic_small_window", "fakeant", "claude-small", "anthropic-messages", thinking="high"),
    case("anthropic_builtin", "anthropic", "claude-sonnet-4-5", "anthropic-messages", thinking="medium"),
    case("completions", "fakeoai", "gpt-fake", "openai-completions"),
    case("completions_think", "fakeoai", "gpt-think", "openai-completions", thinking="low"),
    case("completions_split", "fakeoai", "gpt-fake", "openai-completions", shape="split"),
    case("responses", "fakeresp", "gpt-resp-fake", "openai-responses"),
    case("responses_think", "fakeresp", "gpt-resp-think", "openai-responses", thinking="minimal"),
    case("responses_builtin", "openai", "gpt-5", "openai-responses", thinking="medium"),
    case("google", "fakegem", "gemini-fake", "google-generative-ai", instructions="Keep it short."),
    case("google_think", "fakegem", "gemini-think", "google-generative-ai", thinking="medium"),
    case("google_builtin", "google", "gemini-2.5-pro", "google-generative-ai", thinking="high"),
    case(
        "defaults",
        "ghost",
        "no-such-model",
        "openai-responses",
        settings={
            **SETTINGS,
            "defaultProvider": "fakeresp",
            "defaultModel": "gpt-resp-think",
            "defaultThinkingLevel": "high",
        },
    ),
    case(
        "flag_model",
        "fakeant",
        "claude-fake",
        "anthropic-messages",
        pi_args="--model fakeresp/gpt-resp-think --thinking low",
    ),
    case(
        "navigate",
        "fakeant",
        "claude-think",
        "anthropic-messages",
        thinking="medium",
        mode="navigate",
        navigate_to=5,
        instructions="Focus on the bugs",
        label="checkpoint",
    ),
    case("navigate_openai", "fakeoai", "gpt-fake", "openai-completions", mode="navigate", navigate_to=5),
    case("google_level", "google", "gemini-3.1-pro-preview", "google-generative-ai", thinking="low"),
    case("google_off", "google", "gemini-2.5-flash", "google-generative-ai", thinking="off"),
    case("responses_off", "fakeresp", "gpt-resp-think", "openai-responses", thinking="off"),
    case("groq_think", "groq", "openai/gpt-oss-120b", "openai-completions", thinking="high"),
    case("anthropic_opus55", "anthropic", "claude-opus-5-5", "anthropic-messages", thinking="high"),
    case("anthropic_fable", "anthropic", "claude-fable-5", "anthropic-messages", thinking="low"),
    case("headers_sampling", "fakehdr", "hdr-model", "openai-completions", thinking="medium"),
    case("responses_explicit_cache", "openai", "gpt-5.6-sol", "openai-responses", thinking="high"),
    case("responses_midconvo", "openai", "gpt-6.2-sol", "openai-responses", thinking="medium"),
    case("deepseek_think", "deepseek", "deepseek-flash", "openai-completions", thinking="medium"),
    case(
        "openrouter_think",
        "openrouter",
        "~anthropic/claude-fable-latest",
        "openai-completions",
        thinking="low",
    ),
    case(
        "openrouter_reasoning",
        "openrouter",
        "~deepseek/deepseek-flash-latest",
        "openai-completions",
        thinking="medium",
    ),
    case(
        "openrouter_off",
        "openrouter",
        "~deepseek/deepseek-flash-latest",
        "openai-completions",
        thinking="off",
    ),
    case("zai_think", "zai", "glm-4.7", "openai-completions", thinking="high"),
    case(
        "together_think",
        "together",
        "deepseek-ai/DeepSeek-V4-Pro-0813",
        "openai-completions",
        thinking="high",
    ),
    case("qwen_think", "qwen-token-plan", "deepseek-v4-flash-0731", "openai-completions", thinking="high"),
    case("moonshot_off", "moonshotai", "kimi-k2.6", "openai-completions", thinking="off"),
    case("unknown_model", "fakeant", "claude-fake", "anthropic-messages", pi_args="--model nowhere/nothing"),
    case("missing_key", "fakeoai", "gpt-fake", "openai-completions", env=[]),
    case("missing_key_noauth", "fakeoai", "gpt-fake", "openai-completions", env=[], auth=None),
    case(
        "retry_429",
        "fakeant",
        "claude-fake",
        "anthropic-messages",
        settings={**SETTINGS, "retry": {"enabled": True, "maxRetries": 2, "baseDelayMs": 1}},
        fake={**FAKE, "responses": [{"status": 429, "message": "Slow down"}]},
    ),
    case("truncated", "fakeresp", "gpt-resp-fake", "openai-responses", fake={**FAKE, "stop": "cut"}),
    case("length", "fakeant", "claude-fake", "anthropic-messages", fake={**FAKE, "stop": "length"}),
    case(
        "completions_400",
        "fakeoai",
        "gpt-fake",
        "openai-completions",
        fake={**FAKE, "status": 400, "message": "Bad request here"},
    ),
    case(
        "responses_401",
        "fakeresp",
        "gpt-resp-fake",
        "openai-responses",
        fake={**FAKE, "status": 401, "message": "Invalid key"},
    ),
    case(
        "anthropic_529",
        "fakeant",
        "claude-fake",
        "anthropic-messages",
        fake={**FAKE, "status": 529, "message": "Overloaded"},
    ),
    case(
        "completions_error_event",
        "fakeoai",
        "gpt-fake",
        "openai-completions",
        fake={**FAKE, "stop": "error", "message": "boom"},
    ),
    case("anthropic_cut", "fakeant", "claude-fake", "anthropic-messages", fake={**FAKE, "stop": "cut"}),
    case("google_length", "fakegem", "gemini-fake", "google-generative-ai", fake={**FAKE, "stop": "length"}),
    case("http_500", "fakegem", "gemini-fake", "google-generative-ai", fake={**FAKE, "status": 500}),
]


def build_session(ops: list[dict[str, Any]], work: Path) -> tuple[str, list[str]]:
    d = Path(tempfile.mkdtemp(dir=work))
    script = d / "ops.json"
    script.write_text(json.dumps({"cwd": "/project", "clock": T0, "ops": ops}, ensure_ascii=False))
    out = json.loads(
        subprocess.run(
            [NODE, str(ORACLE_DIR / "oracle.mjs"), "ops", str(script), "--dir", str(d)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    )
    return Path(out["file"]).read_text(encoding="utf-8"), [r["value"] for r in out["results"]]


def meaningful(headers: dict[str, str]) -> dict[str, str]:
    lowered = {k.lower(): v for k, v in headers.items()}
    return {k: lowered[k] for k in MEANINGFUL_HEADERS if k in lowered}


def run_capture(spec: dict[str, Any], session_text: str, ids: list[str], work: Path) -> dict[str, Any]:
    d = Path(tempfile.mkdtemp(dir=work))
    session = d / "session.jsonl"
    session.write_text(session_text, encoding="utf-8")
    agent = d / "agent"
    agent.mkdir()
    for name, content in spec["agent"].items():
        (agent / name).write_text(json.dumps(content))
    cmd = [
        sys.executable,
        str(ORACLE_DIR / "capture.py"),
        "--session",
        str(session),
        "--agent-dir",
        str(agent),
        "--fake-options",
        json.dumps(spec["fake"]),
        "--timeout",
        "90",
    ]
    for item in spec["env"]:
        cmd += ["--env", item]
    if spec["piArgs"]:
        cmd.append(f"--pi-args={spec['piArgs']}")
    if spec["mode"] == "compact":
        cmd.append("--pi-compact")
    else:
        cmd += ["--pi-navigate", ids[spec["navigateTo"]]]
    if spec["instructions"]:
        cmd += ["--instructions", spec["instructions"]]
    if spec["label"]:
        cmd += ["--label", spec["label"]]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"capture.py failed ({proc.returncode}): {proc.stderr}")
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


def main(names: list[str]) -> None:
    GOLDEN.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        for spec in CASES:
            if names and spec["name"] not in names:
                continue
            text, ids = build_session(spec["ops"], work)
            run = run_capture(spec, text, ids, work)
            requests = [
                {
                    "method": q["method"],
                    "path": q["path"],
                    "query": q["query"],
                    "headers": meaningful(q["headers"]),
                    "body": q["body"],
                    "answer": q["answer"],
                }
                for q in run["requests"]
            ]
            out = {
                "name": spec["name"],
                "input": {
                    "session": text,
                    "ids": ids,
                    "agent": spec["agent"],
                    "env": spec["env"],
                    "fake": spec["fake"],
                    "piArgs": spec["piArgs"],
                    "mode": spec["mode"],
                    "instructions": spec["instructions"],
                    "navigateTo": spec["navigateTo"],
                    "label": spec["label"],
                },
                "pi": {
                    "requests": requests,
                    "newLines": run["newLines"],
                    "exit": run["exit"],
                    "response": run["response"],
                    "stderr": run["stderr"],
                },
            }
            path = GOLDEN / f"{spec['name']}.json"
            path.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
            status = [q["answer"]["status"] for q in requests]
            print(f"{spec['name']}: {len(requests)} requests {status} exit {run['exit']}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
