"""Auto-compaction job: compact a Pi session when Pi itself would, with a summary from an
OpenAI-compatible chat-completions endpoint (stdlib ``urllib`` only).

    python newcomer_auto_compact.py SESSION [--endpoint URL] [--model NAME] [--window TOKENS]

Without ``--endpoint`` it starts a fake endpoint on 127.0.0.1 that answers with a canned summary.
The compaction settings are the user's Pi settings for the session's project and model.
Exit status: 0 nothing to do, 3 compacted.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import urllib.request
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pisession
from pisession.compaction import (
    AlreadyCompactedError,
    NothingToCompactError,
    SummaryRequest,
    SummaryResult,
)
from pisession.settings import PiSettings, is_project_trusted, session_model


def openai_summarizer(
    endpoint: str, model: str, api_key: str = "none"
) -> Callable[[SummaryRequest], SummaryResult]:
    """A summarizer that sends Pi's summarization request to ``endpoint``/chat/completions."""

    def summarize(request: SummaryRequest) -> SummaryResult:
        body = {
            "model": model,
            "messages": [
                {"role": "system", "content": request.system_prompt},
                {"role": "user", "content": request.prompt},
            ],
        }
        http_request = urllib.request.Request(
            endpoint.rstrip("/") + "/chat/completions",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {api_key}"},
            method="POST",
        )
        with urllib.request.urlopen(http_request, timeout=120) as response:
            answer: dict[str, Any] = json.load(response)
        text = answer["choices"][0]["message"]["content"]
        counts = answer.get("usage") or {}
        prompt_tokens = int(counts.get("prompt_tokens", 0))
        completion_tokens = int(counts.get("completion_tokens", 0))
        usage = pisession.Usage(
            input=prompt_tokens,
            output=completion_tokens,
            total_tokens=prompt_tokens + completion_tokens,
            cost=pisession.Cost(),
        )
        return SummaryResult(text=str(text), usage=usage)

    return summarize


class FakeChatCompletions(BaseHTTPRequestHandler):
    """Answers every POST .../chat/completions with a canned summary."""

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        request = json.loads(self.rfile.read(length))
        prompt = request["messages"][-1]["content"]
        reply = {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "model": request["model"],
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "## Goal\nRead the modules one by one.\n"},
                }
            ],
            "usage": {
                "prompt_tokens": len(prompt) // 4,
                "completion_tokens": 12,
                "total_tokens": len(prompt) // 4 + 12,
            },
        }
        data = json.dumps(reply).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass


def start_fake_endpoint() -> tuple[ThreadingHTTPServer, str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), FakeChatCompletions)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    host, port = server.server_address[0], server.server_address[1]
    return server, f"http://{host!s}:{port}/v1"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Compact a Pi session when Pi would.")
    parser.add_argument("session")
    parser.add_argument("--endpoint", help="OpenAI-compatible base URL (default: a local fake)")
    parser.add_argument("--model", default="gpt-4o-mini")
    parser.add_argument("--window", type=int, default=8000, help="the model's context window")
    args = parser.parse_args(argv)

    server = None
    endpoint: str = args.endpoint
    if endpoint is None:
        server, endpoint = start_fake_endpoint()
    try:
        manager = pisession.SessionManager.open(args.session)
        folder = manager.get_cwd()
        pi_settings = PiSettings.load(folder, project_trusted=is_project_trusted(folder))
        settings = pi_settings.compaction_settings(session_model(manager, pi_settings))
        check = manager.needs_compaction(args.window, settings)
        print(f"{args.session}: {check.tokens} tokens, threshold {check.threshold}: {check.reason}")
        if not check:
            print("nothing to do")
            manager.close()
            return 0
        try:
            entry = manager.compact(openai_summarizer(endpoint, args.model), settings=settings)
        except (NothingToCompactError, AlreadyCompactedError) as reason:
            # Over the threshold, yet nothing before the kept tail to summarize (a window
            # smaller than keepRecentTokens + reserveTokens): Pi skips it too.
            print(f"nothing to do: {reason}")
            manager.close()
            return 0
        print(
            f"compacted: {entry.id}, keeps from {entry.first_kept_entry_id},"
            f" tokens before {entry.tokens_before}"
        )
        print(f"summary starts: {entry.summary.splitlines()[0]}")
        manager.close()
        return 3
    finally:
        if server is not None:
            server.shutdown()
            server.server_close()


if __name__ == "__main__":
    sys.exit(main())
