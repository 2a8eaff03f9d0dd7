"""Summarizers that call the model Pi would call, with the request Pi would send
(``completeSummarization`` in Pi's ``core/compaction/compaction.js``): one streamed request per
summary, retried on transient errors per ``settings.json`` ``retry.*``, the answer refused
(nothing written) on a ``length`` or ``error`` stop or a tool call.
"""

from __future__ import annotations

import contextlib
import email.utils
import errno
import ipaddress
import json
import math
import os
import random
import re
import socket
import time
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import attrs
import httpx

from .._errors import ModelError, ModelRequestError
from ..compaction import (
    DEFAULT_COMPACTION_SETTINGS,
    CompactionCheck,
    CompactionSettings,
    SummaryRequest,
    SummaryResult,
)
from ..models import (
    Credentials,
    Model,
    ModelChoice,
    ModelRegistry,
    choose_model,
    resolve_credentials,
)
from ..settings import PiSettings, is_project_trusted
from ._requests import SUPPORTED_APIS, PreparedRequest, build_request
from ._streams import Reply, ServerEvent, SSEDecoder, StreamEndedError, StreamReader, iter_sse, reader_for

if TYPE_CHECKING:
    from .._manager import SessionManager

_S = TypeVar("_S", bound="_Base")

__all__ = ["PiSummarizer", "AsyncPiSummarizer", "RetryPolicy", "DryRun"]

Progress = Callable[[SummaryRequest, int], None]
"""Called as the answer streams in: the request and the characters of text received so far."""

_NON_RETRYABLE = re.compile(
    r"GoUsageLimitError|FreeUsageLimitError|Monthly usage limit reached|available balance|"
    r"insufficient_quota|out of budget|quota exceeded|billing|"
    r"subscription_sharing_usage_limit_exceeded|"
    r"subscription_sharing_workplace_individual_usage_limit_exceeded|\"code\"\s*:\s*\"?1308(?![0-9])",
    re.IGNORECASE,
)
_RETRYABLE = re.compile(
    r"overloaded|server_busy|servers are currently busy|currently experiencing high demand|"
    r"model is at capacity|rate.?limit|too many requests|"
    r"(?<![a-z0-9])(?:429|500|502|503|504|520|524)(?![a-z0-9])|"
    r"service.?(?:is.?)?(?:temporarily.?)?unavailable|server.?error|internal.?error|"
    r"provider.?returned.?(?:an.?)?error|exceeded request buffer limit while retrying upstream|"
    r"unable to forward upstream|upstream.?request.?failed|upstream_stream_read_error|stream was interrupted|"
    r"http/?2 stream failed|network.?error|connection.?error|connection.?refused|connection.?lost|"
    r"connection.?closed|other side closed|fetch failed|request to \S+ failed, reason:|getaddrinfo|"
    r"(?<![a-z0-9_])(?:ECONNRESET|ECONNABORTED|ECONNREFUSED|ETIMEDOUT|EPIPE)(?![a-z0-9_])|"
    r"connection reset by peer|ENOTFOUND|EAI_AGAIN|upstream.?connect|reset before headers|socket hang up|"
    r"socket connection was closed|timed? out|timeout|terminated|websocket.?closed|websocket.?error|"
    r"websocket.?connection.?limit.?reached|ended without|stream ended before message_stop|"
    r"stream ended before a terminal response event|http2 request did not get a response|"
    r"stream disconnected before completion|cut short after the reply had begun|"
    r"pending stream has been canceled|retry delay|you can retry your request|try your request again|"
    r"please retry your request|ResourceExhausted|subscription_sharing_usage_unavailable|"
    r"subscription_sharing_user_unavailable",
    re.IGNORECASE,
)


def is_retryable(message: str) -> bool:
    """pi-ai's ``isRetryableAssistantError`` on an error message."""
    return not _NON_RETRYABLE.search(message) and bool(_RETRYABLE.search(message))


@attrs.frozen
class RetryPolicy:
    """``settings.json`` ``retry.*`` (Pi's defaults: on, 3 retries, 2 s doubling, at most 60 s)."""

    enabled: bool = True
    max_retries: int = 3
    base_delay_ms: int = 2000
    max_delay_ms: int = 60000
    provider_max_retries: int = 0
    """``retry.provider.maxRetries``: the SDK-level retries before the stream (Pi: none)."""
    provider_max_retry_delay_ms: int = 60000
    """``retry.provider.maxRetryDelayMs``: a longer server-requested delay fails (0: no cap)."""

    @classmethod
    def from_settings(cls, settings: PiSettings | None) -> RetryPolicy:
        if settings is None:
            return cls()

        def number(*path: str, default: int) -> int:
            value = settings.value("retry", *path)
            return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else default

        enabled = settings.value("retry", "enabled")
        return cls(
            enabled if isinstance(enabled, bool) else True,
            number("maxRetries", default=3),
            number("baseDelayMs", default=2000),
            number("maxAgentDelayMs", default=60000),
            number("provider", "maxRetries", default=0),
            number("provider", "maxRetryDelayMs", default=60000),
        )

    def delay_s(self, attempt: int) -> float:
        delay: int = self.base_delay_ms * 2 ** max(0, attempt - 1)
        return min(delay, self.max_delay_ms) / 1000


@attrs.frozen
class DryRun:
    """What :meth:`PiSummarizer.dry_run` would send (no credential in it)."""

    model: str
    thinking_level: str
    url: str
    max_tokens: int
    input_tokens: int
    input_cost: float
    """Estimated input cost in dollars at the model's input rate."""
    headers: Mapping[str, str]
    body: Mapping[str, Any]


def _idle_timeout(settings: PiSettings | None) -> httpx.Timeout:
    """Pi's ``httpIdleTimeoutMs`` (default 300 s; 0 or "disabled": none) between bytes."""
    value: Any = settings.value("httpIdleTimeoutMs") if settings is not None else None
    if isinstance(value, str):
        text = value.strip()
        try:
            value = 0 if text.lower() == "disabled" else (float(text) if text else None)
        except ValueError:
            value = None
    idle_ms = (
        value if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0 else 300_000
    )
    idle = None if idle_ms == 0 else idle_ms / 1000
    return httpx.Timeout(idle, connect=30.0)


def _headers_timeout(settings: PiSettings | None, timeout: float | httpx.Timeout) -> float | None:
    """Pi's per-request ``timeoutMs``: ``retry.provider.timeoutMs``, else the idle timeout.
    The Anthropic and OpenAI SDKs arm it around ``fetch`` only, so it bounds the wait for
    the response headers, not the stream after them (Google's client takes no timeout)."""
    value: Any = settings.value("retry", "provider", "timeoutMs") if settings is not None else None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value >= 0:
        return value / 1000
    return timeout.read if isinstance(timeout, httpx.Timeout) else timeout


_TIMED_OUT = "Request timed out."
"""The SDKs' ``APIConnectionTimeoutError`` message when ``timeoutMs`` passes."""


def _os_error(exc: BaseException) -> OSError | None:
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return None
        if isinstance(seen, OSError) and seen.errno is not None:
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


# Node's getaddrinfo codes for the resolver's failures (EAI_NONAME and EAI_NODATA: ENOTFOUND).
_DNS_CODES = {socket.EAI_NONAME: "ENOTFOUND", socket.EAI_AGAIN: "EAI_AGAIN", socket.EAI_FAIL: "EAI_FAIL"}
if hasattr(socket, "EAI_NODATA"):
    _DNS_CODES[socket.EAI_NODATA] = "ENOTFOUND"


def _address(host: str, port: int) -> str:
    """The address Node names in ``connect ECONNREFUSED ADDRESS:PORT`` (an IPv4 one first)."""
    try:
        ipaddress.ip_address(host)
        return f"{host}:{port}"
    except ValueError:
        pass
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError:
        return f"{host}:{port}"
    ordered = sorted(found, key=lambda info: info[0] != socket.AF_INET)
    return f"{ordered[0][4][0]}:{port}" if ordered else f"{host}:{port}"


def _connection_error(prepared: PreparedRequest, exc: httpx.TransportError) -> str:
    """Pi's message when no connection could be made: the SDK's ``Connection error.``
    (@google/genai: fetch's ``fetch failed``) with the underlying reason pi-ai's
    ``withCauseDetail`` appends, e.g. ``connect ECONNREFUSED 127.0.0.1:8080`` or
    ``getaddrinfo ENOTFOUND host``."""
    prefix = "fetch failed" if prepared.api == "google-generative-ai" else "Connection error."
    error = _os_error(exc)
    url = httpx.URL(prepared.url)
    host = url.host
    if isinstance(error, socket.gaierror):
        code = _DNS_CODES.get(error.errno or 0, "ENOTFOUND")
        return f"{prefix}: getaddrinfo {code} {host}"
    if error is not None and isinstance(exc, httpx.ConnectError):
        code = errno.errorcode.get(error.errno or 0, str(error.errno))
        port = url.port or (443 if url.scheme == "https" else 80)
        return f"{prefix}: connect {code} {_address(host, port)}"
    return f"{prefix}: {exc}" if str(exc) else prefix


def _stream_broken(exc: httpx.TransportError) -> str:
    return f"Connection error.: {type(exc).__name__}"


class _Failure(Exception):
    def __init__(self, message: str, retryable: bool) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable


class _ProviderFailure(_Failure):
    """A failure before the stream, which pi-ai's ``retryProviderRequest`` may retry."""

    def __init__(self, message: str, status: int | None, headers: httpx.Headers | None, sdk: str) -> None:
        super().__init__(message, is_retryable(message))
        self.status = status
        self.headers = headers
        self.sdk_message = sdk
        """The SDK error's own message, which a too long server-requested delay quotes."""

    @property
    def provider_retryable(self) -> bool:
        # pi-ai mirrors the OpenAI/Anthropic SDK policy: x-should-retry, else no status
        # (a connection error or timeout), 408, 409, 429 and 5xx.
        should: str | None = self.headers.get("x-should-retry") if self.headers is not None else None
        if should in ("true", "false"):
            return should == "true"
        return self.status is None or self.status in (408, 409, 429) or self.status >= 500


def _parse_float(text: str) -> float:
    """JavaScript's ``parseFloat``: the longest leading number, else NaN."""
    found = re.match(r"\s*([+-]?(?:Infinity|\d+\.?\d*(?:[eE][+-]?\d+)?|\.\d+(?:[eE][+-]?\d+)?))", text)
    if found is None:
        return math.nan
    number = found.group(1)
    if "Infinity" in number:
        return -math.inf if number.startswith("-") else math.inf
    return float(number)


def _provider_delay_s(failure: _ProviderFailure, retry_index: int, max_delay_ms: int) -> float:
    """pi-ai's ``getRetryDelayMs``: ``retry-after-ms``, ``retry-after`` (seconds or a date),
    else 0.5 s doubling to 8 s less up to a quarter of jitter."""

    def checked(delay_ms: float) -> float:
        if max_delay_ms > 0 and delay_ms > max_delay_ms:
            message = (
                f"Server requested {math.ceil(delay_ms / 1000)}s retry delay "
                f"(max: {math.ceil(max_delay_ms / 1000)}s). {failure.sdk_message}"
            )
            raise _Failure(message, is_retryable(message))
        return max(0.0, delay_ms) / 1000

    headers = failure.headers
    if headers is not None:
        after_ms = headers.get("retry-after-ms")
        if after_ms:
            value = _parse_float(after_ms)
            if math.isfinite(value):
                return checked(value)
        after = headers.get("retry-after")
        if after:
            seconds = _parse_float(after)
            delay: float = math.nan
            if math.isnan(seconds):
                try:
                    when = email.utils.parsedate_to_datetime(after)
                    delay = (when.timestamp() - time.time()) * 1000
                except (TypeError, ValueError):
                    delay = math.nan
            else:
                delay = seconds * 1000
            if math.isfinite(delay):
                return checked(delay)
    return float(min(0.5 * 2.0**retry_index, 8.0)) * (1 - random.random() * 0.25)


def _sdk_message(api: str, status: int, body: str) -> str:
    """The SDK error's message (``APIError.makeMessage``) before pi-ai formats it."""
    text = body.strip()
    if api == "google-generative-ai":
        return _http_error(api, status, body, "")
    try:
        parsed = json.loads(text) if text else None
    except ValueError:
        parsed = None
    # The OpenAI SDK keeps the body's "error" member, the Anthropic SDK the whole body.
    if api == "anthropic-messages":
        error = parsed
    else:
        error = parsed.get("error") if isinstance(parsed, dict) else None
    if isinstance(error, dict) and error.get("message"):
        inner = error["message"]
        msg: str | None = (
            inner if isinstance(inner, str) else json.dumps(inner, ensure_ascii=False, separators=(",", ":"))
        )
    elif error is not None:
        msg = json.dumps(error, ensure_ascii=False, separators=(",", ":"))
    else:
        msg = None if parsed is not None else (text or None)
    return f"{status} {msg}" if msg else f"{status} status code (no body)"


def _label(request: SummaryRequest) -> str:
    return "Branch summarization" if request.kind == "branch" else "Summarization"


def _http_error(api: str, status: int, body: str, provider: str) -> str:
    """Pi's message for an HTTP error (each SDK's message through pi-ai's
    ``formatProviderError``)."""
    text = body.strip()
    if api == "google-generative-ai":
        return text
    if api == "anthropic-messages":
        return f"{status} {text}".strip() if text else f"{status} status code (no body)"
    # The OpenAI SDK keeps the body's "error" object; pi-ai prints it after the status.
    try:
        parsed = json.loads(text) if text else None
    except ValueError:
        parsed = None
    error = parsed.get("error") if isinstance(parsed, dict) else None
    if isinstance(error, dict) and error:
        detail = json.dumps(error, ensure_ascii=False, separators=(",", ":"))
        if api == "openai-responses":
            prefix = "OpenAI" if provider == "openai" else provider
            return f"{prefix} API error ({status}): {detail}"
        return f"{status}: {detail}"
    message = f"{status} {text}" if text else f"{status} status code (no body)"
    if api == "openai-responses":
        prefix = "OpenAI" if provider == "openai" else provider
        return f"{prefix} API error ({status}): {message}"
    return message


def _check_reply(request: SummaryRequest, reply: Reply) -> SummaryResult:
    label = _label(request)
    if reply.stop_reason == "error":
        raise ModelRequestError(f"{label} failed: {reply.error_message or 'Unknown error'}")
    if reply.stop_reason == "length":
        raise ModelRequestError(f"{label} failed: generation hit the token cap and the summary is incomplete")
    if reply.tool_call:
        raise ModelRequestError(f"{label} attempted to call a tool")
    return SummaryResult(reply.text, reply.usage)  # type: ignore[arg-type]


class _Base:
    def __init__(
        self,
        model: str | Model | None = None,
        thinking: str | None = None,
        *,
        agent_dir: str | os.PathLike[str] | None = None,
        cwd: str | None = None,
        settings: PiSettings | None = None,
        registry: ModelRegistry | None = None,
        branch: Iterable[Any] = (),
        env: Mapping[str, str] | None = None,
        timeout: float | httpx.Timeout | None = None,
        progress: Progress | None = None,
        transport: httpx.BaseTransport | httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._env = dict(os.environ if env is None else env)
        self.registry = registry if registry is not None else ModelRegistry.load(agent_dir)
        if settings is None and cwd is not None:
            trusted = is_project_trusted(cwd, self.registry.agent_dir)
            settings = PiSettings.load(cwd, self.registry.agent_dir, project_trusted=trusted)
        self.settings = settings
        if isinstance(model, Model):
            level = thinking or "medium"
            self.choice = ModelChoice(model, model.clamp_thinking_level(level), "flag")
        else:
            self.choice = choose_model(
                self.registry, settings, branch, model=model, thinking=thinking, env=self._env
            )
        self.retry = RetryPolicy.from_settings(settings)
        self.timeout = timeout if timeout is not None else _idle_timeout(settings)
        self._headers_timeout = _headers_timeout(settings, self.timeout)
        proxy = settings.value("httpProxy") if settings is not None else None
        # Pi: the httpProxy setting stands in for HTTP(S)_PROXY when neither is set.
        self._proxy: str | None = None
        if (
            isinstance(proxy, str)
            and proxy.strip()
            and not any(self._env.get(k) for k in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"))
        ):
            self._proxy = proxy.strip()
        self.progress = progress
        self._transport = transport
        self._credentials: Credentials | None = None

    @classmethod
    def for_session(
        cls: type[_S],
        manager: SessionManager,
        model: str | None = None,
        thinking: str | None = None,
        **options: Any,
    ) -> _S:
        """The summarizer Pi would use for ``manager``'s session: its branch's model and thinking
        level, the settings of its working folder (project settings if Pi trusts the project)::

            summarizer = PiSummarizer.for_session(manager)
            manager.compact(summarizer, settings=summarizer.compaction_settings())
        """
        cwd = options.pop("cwd", None) or manager.get_cwd()
        return cls(model, thinking, cwd=cwd, branch=manager.get_branch(), **options)

    @property
    def model(self) -> Model:
        return self.choice.model

    @property
    def thinking_level(self) -> str:
        return self.choice.thinking_level

    def compaction_settings(self) -> CompactionSettings:
        """The ``compaction.*`` settings Pi would use with this model (per-model overrides)."""
        if self.settings is None:
            return DEFAULT_COMPACTION_SETTINGS
        return self.settings.compaction_settings(self.model.key)

    def branch_summary_reserve_tokens(self) -> int:
        return self.settings.branch_summary_reserve_tokens if self.settings is not None else 16384

    def credentials(self) -> Credentials:
        """Resolved once, before the first request (a missing key fails here, nothing sent)."""
        if self._credentials is None:
            self._credentials = resolve_credentials(self.registry, self.model, self._env)
        return self._credentials

    def prepare(self, request: SummaryRequest) -> PreparedRequest:
        if self.model.api not in SUPPORTED_APIS:  # say so before asking for a key it cannot use
            raise ModelError(
                f"{self.model.key} uses the {self.model.api} API; pisession builds Pi's requests for "
                f"{', '.join(SUPPORTED_APIS)} only"
            )
        return build_request(
            self.model, self.credentials(), request.system_prompt, request.prompt, self.choice.reasoning
        )

    def _redact(self, message: str) -> str:
        # A provider's error body may quote what it was sent: never pass a credential on.
        credentials = self._credentials
        secrets = [credentials.api_key] if credentials and credentials.api_key else []
        if credentials:
            secrets += [v for k, v in credentials.headers.items() if k.lower() == "authorization"]
        for secret in secrets:
            if secret and len(secret) >= 4:
                message = message.replace(secret, "<hidden>")
        return message

    def needs_compaction(self, manager: SessionManager) -> CompactionCheck:
        """Pi's automatic check with this model's context window and compaction settings::

        if summarizer.needs_compaction(manager):
            manager.compact(summarizer, settings=summarizer.compaction_settings())
        """
        return manager.needs_compaction(self.model.context_window, self.compaction_settings())

    def _request_timeouts(self, timeout: httpx.Timeout, prepared: PreparedRequest) -> dict[str, float | None]:
        """Per-request timeouts until the headers arrive; the caller puts the client's own
        back in this same dict before reading the stream (httpcore reads it lazily)."""
        timeouts: dict[str, float | None] = dict(timeout.as_dict())
        if prepared.api == "google-generative-ai":
            return timeouts
        limit = self._headers_timeout
        for name in ("connect", "write", "pool", "read"):
            current = timeouts.get(name)
            timeouts[name] = limit if current is None or (limit is not None and limit < current) else current
        timeouts["read"] = limit
        return timeouts

    def _http_failure(self, prepared: PreparedRequest, response: httpx.Response, body: str) -> _Failure:
        status = response.status_code
        message = _http_error(prepared.api, status, body, self.model.provider)
        sdk = _sdk_message(prepared.api, status, body)
        # @google/genai's errors carry a status but no headers (pi-ai sets them undefined).
        headers = None if prepared.api == "google-generative-ai" else response.headers
        return _ProviderFailure(message, status, headers, sdk)

    def _unsent(self, prepared: PreparedRequest, exc: httpx.TransportError) -> _Failure:
        """A request that got no response: the SDKs' timeout or connection error, which
        pi-ai retries; @google/genai's fetch error has no status and is not retried there."""
        if prepared.api == "google-generative-ai":
            return _Failure(_connection_error(prepared, exc), True)
        if isinstance(exc, httpx.TimeoutException):
            return _ProviderFailure(_TIMED_OUT, None, None, _TIMED_OUT)
        message = _connection_error(prepared, exc)
        return _ProviderFailure(message, None, None, message)

    def _tick(self, request: SummaryRequest, received: int) -> None:
        if self.progress is not None:
            self.progress(request, received)

    def dry_run(self, request: SummaryRequest) -> DryRun:
        """The request that would be sent, with its credential hidden; nothing is sent. A
        missing credential does not stop a dry run (the auth header is then absent)."""
        try:
            credentials = self.credentials()
        except Exception:
            credentials = Credentials(None, {}, "missing")
        prepared = build_request(
            self.model, credentials, request.system_prompt, request.prompt, self.choice.reasoning
        )
        rate = (self.model.data.get("cost") or {}).get("input") or 0
        return DryRun(
            self.model.key,
            self.thinking_level,
            prepared.url,
            prepared.max_tokens,
            prepared.input_tokens,
            rate / 1000000 * prepared.input_tokens,
            prepared.redacted_headers(),
            prepared.body,
        )


def _feed(reader: StreamReader, event: ServerEvent) -> None:
    try:
        reader.feed(event)
    except StreamEndedError as exc:
        raise _Failure(str(exc), is_retryable(str(exc))) from None


def _finish(reader: StreamReader) -> Reply:
    try:
        return reader.finish()
    except StreamEndedError as exc:
        raise _Failure(str(exc), is_retryable(str(exc))) from None


def _reply_from_lines(
    prepared: PreparedRequest, model: Model, lines: Iterable[str], tick: Callable[[int], None]
) -> Reply:
    reader = reader_for(model)
    for event in iter_sse(lines):
        _feed(reader, event)
        tick(len(reader.reply.text))
    return _finish(reader)


class PiSummarizer(_Base):
    """A summarizer calling the model Pi would call, for :meth:`SessionManager.compact` and
    :meth:`SessionManager.navigate_tree`::

        from pisession.llm import PiSummarizer

        summarizer = PiSummarizer.for_session(manager)       # the session's model, as Pi picks it
        manager.compact(summarizer, settings=summarizer.compaction_settings())

    ``PiSummarizer("anthropic/claude-sonnet-4-5", "high")`` names the model and thinking level
    (Pi's ``--model`` and ``--thinking``). Raises :class:`~pisession.ModelError`,
    :class:`~pisession.CredentialsError` (before any request) or
    :class:`~pisession.ModelRequestError` (Pi's message); nothing is written then.
    """

    def __call__(self, request: SummaryRequest) -> SummaryResult:
        prepared = self.prepare(request)
        attempt = 0
        transport = self._transport if isinstance(self._transport, httpx.BaseTransport) else None
        with httpx.Client(
            timeout=self.timeout, transport=transport, trust_env=True, proxy=self._proxy
        ) as client:
            while True:
                try:
                    reply = self._send(client, prepared, request)
                    return _check_reply(request, reply)
                except _Failure as failure:
                    if not (self.retry.enabled and failure.retryable and attempt < self.retry.max_retries):
                        raise ModelRequestError(
                            f"{_label(request)} failed: {self._redact(failure.message)}"
                        ) from None
                    attempt += 1
                    time.sleep(self.retry.delay_s(attempt))

    def _send(self, client: httpx.Client, prepared: PreparedRequest, request: SummaryRequest) -> Reply:
        # pi-ai's retryProviderRequest: retry.provider.maxRetries retries before the stream.
        retries_left = self.retry.provider_max_retries
        while True:
            try:
                return self._attempt(client, prepared, request)
            except _ProviderFailure as failure:
                if retries_left <= 0 or not failure.provider_retryable:
                    raise
                index = self.retry.provider_max_retries - retries_left
                retries_left -= 1
                time.sleep(_provider_delay_s(failure, index, self.retry.provider_max_retry_delay_ms))

    def _attempt(self, client: httpx.Client, prepared: PreparedRequest, request: SummaryRequest) -> Reply:
        timeouts = self._request_timeouts(client.timeout, prepared)
        http_request = client.build_request(
            "POST",
            prepared.url,
            headers=dict(prepared.headers),
            content=prepared.body_bytes(),
            extensions={"timeout": timeouts},
        )
        try:
            response = client.send(http_request, stream=True)
        except httpx.TransportError as exc:
            raise self._unsent(prepared, exc) from None
        timeouts.update(client.timeout.as_dict())
        try:
            with contextlib.closing(response):
                if response.status_code >= 400:
                    body = response.read().decode("utf-8", "replace")
                    raise self._http_failure(prepared, response, body)
                return _reply_from_lines(
                    prepared, self.model, response.iter_lines(), lambda n: self._tick(request, n)
                )
        except httpx.TransportError as exc:
            raise _Failure(_stream_broken(exc), True) from None


class AsyncPiSummarizer(_Base):
    """:class:`PiSummarizer` for :class:`pisession.aio.AsyncSessionManager` (``await``-ed on
    the event loop; cancelling the task closes the connection and writes nothing)::

        summarizer = AsyncPiSummarizer.for_session(manager)
        await async_manager.compact(summarizer)
    """

    async def __call__(self, request: SummaryRequest) -> SummaryResult:
        import asyncio

        prepared = self.prepare(request)
        attempt = 0
        transport = self._transport if isinstance(self._transport, httpx.AsyncBaseTransport) else None
        async with httpx.AsyncClient(
            timeout=self.timeout, transport=transport, trust_env=True, proxy=self._proxy
        ) as client:
            while True:
                try:
                    reply = await self._send(client, prepared, request)
                    return _check_reply(request, reply)
                except _Failure as failure:
                    if not (self.retry.enabled and failure.retryable and attempt < self.retry.max_retries):
                        raise ModelRequestError(
                            f"{_label(request)} failed: {self._redact(failure.message)}"
                        ) from None
                    attempt += 1
                    await asyncio.sleep(self.retry.delay_s(attempt))

    async def _send(
        self, client: httpx.AsyncClient, prepared: PreparedRequest, request: SummaryRequest
    ) -> Reply:
        import asyncio

        retries_left = self.retry.provider_max_retries
        while True:
            try:
                return await self._attempt(client, prepared, request)
            except _ProviderFailure as failure:
                if retries_left <= 0 or not failure.provider_retryable:
                    raise
                index = self.retry.provider_max_retries - retries_left
                retries_left -= 1
                await asyncio.sleep(_provider_delay_s(failure, index, self.retry.provider_max_retry_delay_ms))

    async def _attempt(
        self, client: httpx.AsyncClient, prepared: PreparedRequest, request: SummaryRequest
    ) -> Reply:
        timeouts = self._request_timeouts(client.timeout, prepared)
        http_request = client.build_request(
            "POST",
            prepared.url,
            headers=dict(prepared.headers),
            content=prepared.body_bytes(),
            extensions={"timeout": timeouts},
        )
        try:
            response = await client.send(http_request, stream=True)
        except httpx.TransportError as exc:
            raise self._unsent(prepared, exc) from None
        timeouts.update(client.timeout.as_dict())
        try:
            async with contextlib.aclosing(response):
                if response.status_code >= 400:
                    body = (await response.aread()).decode("utf-8", "replace")
                    raise self._http_failure(prepared, response, body)
                reader = reader_for(self.model)
                decoder = SSEDecoder()
                async for line in response.aiter_lines():
                    event = decoder.feed(line)
                    if event is not None:
                        _feed(reader, event)
                        self._tick(request, len(reader.reply.text))
                last = decoder.flush()
                if last is not None:
                    _feed(reader, last)
                return _finish(reader)
        except httpx.TransportError as exc:
            raise _Failure(_stream_broken(exc), True) from None
