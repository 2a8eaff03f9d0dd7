"""pisession.llm without a server: the summarizer's behaviour around the request (retries,
refused answers, cancellation, the async manager, secrets kept out of messages), with the HTTP
layer replaced by respx. Request bodies themselves are checked against Pi in
tests/conformance/test_llm_conformance.py."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import respx

from pisession import SessionManager
from pisession.aio import AsyncSessionManager
from pisession.compaction import CompactionSettings
from pisession.llm import AsyncPiSummarizer, ModelRequestError, PiSummarizer, calculate_cost
from pisession.models import CredentialsError, Model, ModelRegistry

SECRET = "sk-very-secret-key"
URL = "http://fake.test/v1/chat/completions"
SETTINGS = CompactionSettings(keep_recent_tokens=60)


def agent_dir(tmp_path: Path, retry: dict[str, Any] | None = None) -> Path:
    agent = tmp_path / "agent"
    agent.mkdir(parents=True)
    models = {
        "providers": {
            "fake": {
                "baseUrl": "http://fake.test/v1",
                "api": "openai-completions",
                "apiKey": SECRET,
                "models": [
                    {"id": "m", "cost": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}}
                ],
            }
        }
    }
    (agent / "models.json").write_text(json.dumps(models))
    (agent / "settings.json").write_text(
        json.dumps({"retry": retry or {"enabled": True, "maxRetries": 2, "baseDelayMs": 1}})
    )
    return agent


def session(tmp_path: Path) -> SessionManager:
    manager = SessionManager.create(str(tmp_path), str(tmp_path / "sessions"))
    manager.append_model_change("fake", "m")
    for turn in range(3):
        manager.append_message({"role": "user", "content": f"turn {turn} " + "x" * 300, "timestamp": turn})
        manager.append_message(
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "done " + "y" * 300}],
                "api": "openai-completions",
                "provider": "fake",
                "model": "m",
                "usage": {
                    "input": 10,
                    "output": 10,
                    "cacheRead": 0,
                    "cacheWrite": 0,
                    "totalTokens": 20,
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
                },
                "stopReason": "stop",
                "timestamp": turn,
            }
        )
    return manager


def sse(*chunks: Any) -> bytes:
    return b"".join(f"data: {json.dumps(c) if not isinstance(c, str) else c}\n\n".encode() for c in chunks)


def answer(text: str = "## Goal\nSummary.", finish: str = "stop", tool: bool = False) -> bytes:
    delta: dict[str, Any] = {"content": text}
    if tool:
        delta["tool_calls"] = [{"index": 0, "id": "c", "function": {"name": "read", "arguments": "{}"}}]
    usage = {"prompt_tokens": 100, "completion_tokens": 20, "prompt_tokens_details": {"cached_tokens": 0}}
    return sse(
        {"choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
        {"choices": [], "usage": usage},
        "[DONE]",
    )


def summarizer(tmp_path: Path, manager: SessionManager, **options: Any) -> PiSummarizer:
    return PiSummarizer.for_session(
        manager, agent_dir=str(agent_dir(tmp_path, options.pop("retry", None))), env={}, **options
    )


@respx.mock
def test_a_429_is_retried_then_the_entry_carries_usage_and_cost(tmp_path: Path) -> None:
    route = respx.post(URL).mock(
        side_effect=[
            httpx.Response(429, json={"error": {"message": "Slow down", "type": "rate_limit_exceeded"}}),
            httpx.Response(200, content=answer(), headers={"content-type": "text/event-stream"}),
            httpx.Response(
                200, content=answer("## Goal\nPrefix."), headers={"content-type": "text/event-stream"}
            ),
        ]
    )
    manager = session(tmp_path)
    entry = manager.compact(summarizer(tmp_path, manager), settings=SETTINGS)
    # A split turn here: the history and the turn prefix, each one request; the 429 retried.
    assert route.call_count == 3
    assert route.calls[1].request.content == route.calls[0].request.content
    assert entry.summary.startswith(
        "## Goal\nSummary.\n\n---\n\n**Turn Context (split turn):**\n\n## Goal\nPrefix."
    )
    assert entry.usage is not None and entry.usage.input == 200 and entry.usage.output == 40
    assert entry.usage.cost.total == pytest.approx(2 * (100 * 3e-6 + 20 * 15e-6))
    assert route.calls[0].request.headers["authorization"] == f"Bearer {SECRET}"


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            answer(finish="length"),
            "Summarization failed: generation hit the token cap and the summary is incomplete",
        ),
        (answer(tool=True, finish="stop"), "Summarization attempted to call a tool"),
        (
            sse({"choices": [{"index": 0, "delta": {"content": "half"}, "finish_reason": None}]}),
            "Summarization failed: Stream ended without finish_reason",
        ),
    ],
)
@respx.mock
def test_refused_answers_write_nothing(tmp_path: Path, body: bytes, message: str) -> None:
    respx.post(URL).mock(return_value=httpx.Response(200, content=body))
    manager = session(tmp_path)
    before = Path(manager.get_session_file()).read_bytes()
    with pytest.raises(ModelRequestError) as caught:
        manager.compact(summarizer(tmp_path, manager, retry={"enabled": False}), settings=SETTINGS)
    assert str(caught.value) == message
    assert Path(manager.get_session_file()).read_bytes() == before


@respx.mock
def test_http_errors_never_show_the_key(tmp_path: Path) -> None:
    respx.post(URL).mock(return_value=httpx.Response(401, json={"error": {"message": f"bad key {SECRET}"}}))
    manager = session(tmp_path)
    with pytest.raises(ModelRequestError) as caught:
        manager.compact(summarizer(tmp_path, manager, retry={"enabled": False}), settings=SETTINGS)
    assert str(caught.value).startswith("Summarization failed: 401: ") and SECRET not in str(caught.value)
    assert "bad key <hidden>" in str(caught.value)
    assert SECRET not in repr(summarizer(tmp_path / "x", manager).credentials())


def test_a_missing_key_fails_before_any_request(tmp_path: Path) -> None:
    agent = agent_dir(tmp_path)
    config = json.loads((agent / "models.json").read_text())
    config["providers"]["fake"]["apiKey"] = "$FAKE_KEY"
    (agent / "models.json").write_text(json.dumps(config))
    manager = session(tmp_path)
    with respx.mock(assert_all_called=False) as mock:
        route = mock.post(URL)
        pi = PiSummarizer("fake/m", agent_dir=str(agent), env={})
        with pytest.raises(CredentialsError, match="FAKE_KEY"):
            manager.compact(pi, settings=SETTINGS)
        assert route.call_count == 0


@respx.mock
def test_ctrl_c_while_streaming_writes_nothing(tmp_path: Path) -> None:
    def interrupt(request: httpx.Request) -> httpx.Response:
        raise KeyboardInterrupt

    respx.post(URL).mock(side_effect=interrupt)
    manager = session(tmp_path)
    before = Path(manager.get_session_file()).read_bytes()
    with pytest.raises(KeyboardInterrupt):
        manager.compact(summarizer(tmp_path, manager), settings=SETTINGS)
    assert Path(manager.get_session_file()).read_bytes() == before


@respx.mock
def test_the_async_manager_awaits_the_async_summarizer(tmp_path: Path) -> None:
    respx.post(URL).mock(return_value=httpx.Response(200, content=answer("## Goal\nAsync.")))
    manager = session(tmp_path)
    seen: list[int] = []
    pi = AsyncPiSummarizer.for_session(
        manager, agent_dir=str(agent_dir(tmp_path)), env={}, progress=lambda request, n: seen.append(n)
    )

    async def go() -> Any:
        return await AsyncSessionManager(manager).compact(pi, settings=SETTINGS)

    entry = asyncio.run(go())
    assert entry.summary.startswith("## Goal\nAsync.")
    assert seen and max(seen) == len("## Goal\nAsync.")  # progress while the answer streamed


@respx.mock
def test_cancelling_the_async_summary_writes_nothing(tmp_path: Path) -> None:
    async def slow(request: httpx.Request) -> httpx.Response:
        await asyncio.sleep(30)
        return httpx.Response(200, content=answer())

    respx.post(URL).mock(side_effect=slow)
    manager = session(tmp_path)
    before = Path(manager.get_session_file()).read_bytes()
    pi = AsyncPiSummarizer.for_session(manager, agent_dir=str(agent_dir(tmp_path)), env={})

    async def go() -> None:
        task = asyncio.ensure_future(AsyncSessionManager(manager).compact(pi, settings=SETTINGS))
        await asyncio.sleep(0.2)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())
    assert Path(manager.get_session_file()).read_bytes() == before


def test_needs_compaction_takes_the_models_window(tmp_path: Path) -> None:
    manager = session(tmp_path)
    pi = summarizer(tmp_path, manager)
    assert pi.model.context_window == 128000  # models.json's default
    assert not pi.needs_compaction(manager)


def test_cost_follows_tiers_and_one_hour_cache_writes() -> None:
    model = Model(
        {
            "provider": "p",
            "id": "m",
            "cost": {
                "input": 3,
                "output": 15,
                "cacheRead": 0.3,
                "cacheWrite": 3.75,
                "tiers": [
                    {
                        "inputTokensAbove": 200000,
                        "input": 6,
                        "output": 22.5,
                        "cacheRead": 0.6,
                        "cacheWrite": 7.5,
                    }
                ],
            },
        }
    )
    usage: dict[str, Any] = {
        "input": 250000,
        "output": 1000,
        "cacheRead": 0,
        "cacheWrite": 1000,
        "cacheWrite1h": 400,
        "cost": {},
    }
    calculate_cost(model, usage)
    assert usage["cost"]["input"] == pytest.approx(1.5)
    assert usage["cost"]["cacheWrite"] == pytest.approx((7.5 * 600 + 6 * 2 * 400) / 1e6)
    assert usage["cost"]["totalFromProvider"] is False


def test_registry_is_read_only(tmp_path: Path) -> None:
    agent = agent_dir(tmp_path)
    before = {p.name: p.read_bytes() for p in agent.iterdir()}
    ModelRegistry.load(agent)
    assert {p.name: p.read_bytes() for p in agent.iterdir()} == before


def test_openrouter_billed_cost_replaces_the_catalog_total() -> None:
    from pisession.llm._streams import ServerEvent, reader_for

    model = Model(
        {
            "provider": "openrouter",
            "id": "x",
            "api": "openai-completions",
            "baseUrl": "https://openrouter.ai/api/v1",
            "cost": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0},
        }
    )
    reader = reader_for(model)
    for chunk in (
        {"choices": [{"index": 0, "delta": {"content": "ok"}, "finish_reason": "stop"}]},
        {
            "choices": [],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "cost": 0.5, "is_byok": False},
        },
    ):
        reader.feed(ServerEvent(None, json.dumps(chunk)))
    usage = reader.finish().usage
    assert usage["cost"]["total"] == 0.5 and usage["cost"]["totalFromProvider"] is True
    assert usage["cost"]["input"] == pytest.approx(10e-6)


def test_a_fallback_models_answer_is_priced_at_its_own_rate() -> None:
    from pisession.llm._streams import ServerEvent, reader_for

    fallback_cost = {"input": 5, "output": 25, "cacheRead": 0.5, "cacheWrite": 6.25}
    model = Model(
        {
            "provider": "anthropic",
            "id": "big",
            "api": "anthropic-messages",
            "baseUrl": "https://api.anthropic.com",
            "cost": {"input": 10, "output": 50, "cacheRead": 1, "cacheWrite": 12.5},
            "compat": {
                "allowedFallbackModels": [{"provider": "anthropic", "model": "small", "cost": fallback_cost}]
            },
        }
    )
    reader = reader_for(model)
    events = [
        {
            "type": "message_start",
            "message": {"model": "small", "usage": {"input_tokens": 1000, "output_tokens": 0}},
        },
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "hi"}},
        {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 100}},
    ]
    for event in events:
        reader.feed(ServerEvent(event["type"], json.dumps(event)))
    usage = reader.finish().usage
    assert usage["cost"]["input"] == pytest.approx(1000 * 5e-6)
    assert usage["cost"]["output"] == pytest.approx(100 * 25e-6)


def test_dry_run_hides_every_credential(tmp_path: Path) -> None:
    from pisession.compaction import SUMMARIZATION_SYSTEM_PROMPT, SummaryRequest

    agent = agent_dir(tmp_path)
    config = json.loads((agent / "models.json").read_text())
    config["providers"]["fake"]["headers"] = {"x-team-token": "$TEAM_TOKEN"}
    (agent / "models.json").write_text(json.dumps(config))
    pi = PiSummarizer("fake/m", agent_dir=str(agent), env={"TEAM_TOKEN": "team-secret"})
    run = pi.dry_run(SummaryRequest("history", SUMMARIZATION_SYSTEM_PROMPT, "hello"))
    shown = json.dumps([dict(run.headers), run.body, run.url])
    assert SECRET not in shown and "team-secret" not in shown
    assert run.headers["authorization"] == "<hidden>" and run.headers["x-team-token"] == "<hidden>"
    assert run.max_tokens == 16384 and run.url == URL


@pytest.mark.parametrize(("value", "seconds"), [(1234, 1.234), ("disabled", None), (None, 300.0)])
def test_the_idle_timeout_follows_pis_setting(tmp_path: Path, value: Any, seconds: float | None) -> None:
    agent = agent_dir(tmp_path)
    settings = json.loads((agent / "settings.json").read_text())
    if value is not None:
        settings["httpIdleTimeoutMs"] = value
    (agent / "settings.json").write_text(json.dumps(settings))
    manager = session(tmp_path)
    pi = PiSummarizer.for_session(manager, agent_dir=str(agent), env={})
    assert pi.timeout.read == seconds


def test_an_api_pisession_does_not_build_is_refused_before_credentials(tmp_path: Path) -> None:
    from pisession.compaction import SUMMARIZATION_SYSTEM_PROMPT, SummaryRequest
    from pisession.models import ModelError

    pi = PiSummarizer(
        "amazon-bedrock/us.anthropic.claude-opus-5-5", agent_dir=str(agent_dir(tmp_path)), env={}
    )
    with pytest.raises(ModelError, match="bedrock-converse-stream API"):
        pi(SummaryRequest("history", SUMMARIZATION_SYSTEM_PROMPT, "hello"))


@respx.mock
def test_retry_provider_timeout_ms_bounds_the_wait_for_headers(tmp_path: Path) -> None:
    # Pi: timeoutMs = retry.provider.timeoutMs ?? httpIdleTimeoutMs, armed by the SDK around
    # fetch only; a timeout is "Request timed out." and the retry policy applies to it.
    seen: list[Any] = []

    def slow(request: httpx.Request) -> httpx.Response:
        seen.append(dict(request.extensions["timeout"]))
        if len(seen) == 1:
            raise httpx.ReadTimeout("slow", request=request)
        return httpx.Response(200, content=answer())

    respx.post(URL).mock(side_effect=slow)
    manager = session(tmp_path)
    retry = {"enabled": True, "maxRetries": 1, "baseDelayMs": 1, "provider": {"timeoutMs": 1500}}
    entry = manager.compact(summarizer(tmp_path, manager, retry=retry), settings=SETTINGS)
    assert entry is not None and seen[0]["read"] == 1.5 and seen[0]["connect"] == 1.5
    respx.post(URL).mock(side_effect=lambda r: (_ for _ in ()).throw(httpx.ReadTimeout("x", request=r)))
    other = tmp_path / "b"
    other.mkdir()
    second = session(other)
    with pytest.raises(ModelRequestError, match=r"^Summarization failed: Request timed out\.$"):
        second.compact(summarizer(other, second, retry={"enabled": False}), settings=SETTINGS)


def _then_answers(*first: httpx.Response) -> Callable[[httpx.Request], httpx.Response]:
    """The given replies in turn, then answers (a split turn here sends two requests)."""
    pending = list(first)
    return lambda request: pending.pop(0) if pending else httpx.Response(200, content=answer())


def _fresh(tmp_path: Path, name: str) -> tuple[Path, SessionManager]:
    folder = tmp_path / name
    folder.mkdir()
    return folder, session(folder)


@respx.mock
def test_retry_provider_max_retries_retries_before_the_stream(tmp_path: Path) -> None:
    # pi-ai's retryProviderRequest: retry.provider.maxRetries (none by default) on a
    # connection error, 408, 409, 429 or 5xx, waiting retry-after-ms when the server says.
    def busy() -> httpx.Response:
        return httpx.Response(503, headers={"retry-after-ms": "1"}, json={"error": {"message": "busy"}})

    respx.reset()
    route = respx.post(URL).mock(side_effect=_then_answers(busy(), busy()))
    folder, manager = _fresh(tmp_path, "a")
    retry = {"enabled": False, "provider": {"maxRetries": 2}}
    assert manager.compact(summarizer(folder, manager, retry=retry), settings=SETTINGS) is not None
    assert route.call_count == 4

    respx.reset()
    route = respx.post(URL).mock(side_effect=_then_answers(busy()))
    folder, manager = _fresh(tmp_path, "b")
    with pytest.raises(ModelRequestError, match=r"^Summarization failed: 503: "):
        manager.compact(summarizer(folder, manager, retry={"enabled": False}), settings=SETTINGS)
    assert route.call_count == 1

    refused = httpx.Response(503, headers={"x-should-retry": "false"}, json={"error": {"message": "no"}})
    respx.reset()
    route = respx.post(URL).mock(side_effect=_then_answers(refused))
    folder, manager = _fresh(tmp_path, "c")
    with pytest.raises(ModelRequestError):
        manager.compact(summarizer(folder, manager, retry=retry), settings=SETTINGS)
    assert route.call_count == 1


@respx.mock
def test_retry_provider_max_retry_delay_ms_refuses_a_longer_server_delay(tmp_path: Path) -> None:
    def slow() -> httpx.Response:
        return httpx.Response(429, headers={"retry-after": "5"}, json={"error": {"message": "slow down"}})

    route = respx.post(URL).mock(side_effect=_then_answers(slow()))
    folder, manager = _fresh(tmp_path, "a")
    retry = {"enabled": False, "provider": {"maxRetries": 1, "maxRetryDelayMs": 1000}}
    expected = r"^Summarization failed: Server requested 5s retry delay \(max: 1s\)\. 429 slow down$"
    with pytest.raises(ModelRequestError, match=expected):
        manager.compact(summarizer(folder, manager, retry=retry), settings=SETTINGS)
    assert route.call_count == 1
    # The cap error says "retry delay", so the outer retry.* policy retries it (pi-ai #1123).
    respx.reset()
    route = respx.post(URL).mock(side_effect=_then_answers(slow()))
    folder, manager = _fresh(tmp_path, "b")
    retry["enabled"], retry["maxRetries"], retry["baseDelayMs"] = True, 1, 1
    assert manager.compact(summarizer(folder, manager, retry=retry), settings=SETTINGS) is not None
    assert route.call_count == 3


def test_a_refused_connection_names_the_reason_as_pi_does(tmp_path: Path) -> None:
    # Pi 1.6.0 (pi-ai completeSimple against a closed port): "Connection error.: connect
    # ECONNREFUSED 127.0.0.1:PORT"; an unknown host: "...: getaddrinfo ENOTFOUND HOST".
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    folder, manager = _fresh(tmp_path, "a")
    agent = agent_dir(folder, {"enabled": False})
    config = json.loads((agent / "models.json").read_text())
    config["providers"]["fake"]["baseUrl"] = f"http://127.0.0.1:{port}/v1"
    (agent / "models.json").write_text(json.dumps(config))
    pi = PiSummarizer.for_session(manager, agent_dir=str(agent), env={"NO_PROXY": "*"})
    expected = rf"^Summarization failed: Connection error\.: connect ECONNREFUSED 127\.0\.0\.1:{port}$"
    with pytest.raises(ModelRequestError, match=expected):
        manager.compact(pi, settings=SETTINGS)


def test_an_unknown_host_names_the_lookup_failure_as_pi_does(tmp_path: Path) -> None:
    import socket

    class Unknown(httpx.BaseTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            try:
                raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
            except socket.gaierror as exc:
                raise httpx.ConnectError(str(exc), request=request) from exc

    folder, manager = _fresh(tmp_path, "a")
    agent = agent_dir(folder, {"enabled": False})
    pi = PiSummarizer.for_session(manager, agent_dir=str(agent), env={}, transport=Unknown())
    expected = r"^Summarization failed: Connection error\.: getaddrinfo ENOTFOUND fake\.test$"
    with pytest.raises(ModelRequestError, match=expected):
        manager.compact(pi, settings=SETTINGS)


@pytest.mark.parametrize("api", ["anthropic-messages", "openai-completions", "openai-responses"])
def test_github_copilot_requests_are_refused_for_every_api(api: str) -> None:
    from pisession.llm import build_request
    from pisession.models import Credentials, Model, ModelError

    data = {"provider": "github-copilot", "id": "m", "api": api, "baseUrl": "http://x", "maxTokens": 100}
    with pytest.raises(ModelError, match="GitHub Copilot"):
        build_request(Model(data), Credentials(None, {}, "missing"), "system", "prompt", None)
