"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-<time>-<uuid>.jsonl``) as Pi
sessions.

A rollout is linear: envelopes ``{timestamp, type, payload}`` (``session_meta``,
``response_item``, ``event_msg``, ``turn_context``, ``compacted``); the oldest files are flat
(a meta line, then bare response items). Response items are the conversation; a prompt that
appears only as a ``user_message`` event is taken from the event. Consecutive assistant-side
items (reasoning, text, tool calls) make one Pi assistant message; ``token_count`` events carry
cumulative totals, so each message gets the difference from the previous total (a repeated
total adds nothing). ``thread_rolled_back`` moves back the given number of user turns: what
follows is a Pi branch.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from ._common import Line, SessionWriter, as_count, as_list, as_str, ms_from_iso, usage_wire

__all__ = ["CodexMeta", "looks_like_codex", "meta_of", "spawn_parent", "write_rollout"]

PROVIDER = "openai-codex"
API = "openai-codex-responses"

_ENVELOPES = ("session_meta", "response_item", "event_msg", "turn_context", "compacted")
# Events that repeat what the response items hold, or only mark a turn's start and end.
_ECHOES = ("agent_message", "agent_reasoning", "agent_reasoning_raw_content", "task_started", "task_complete")
_CONTEXT_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
)


# Bare response items of the flat layout (no envelope, no Claude uuid).
_FLAT_ITEMS = ("message", "reasoning", "function_call", "function_call_output", "local_shell_call")


def looks_like_codex(line: Mapping[str, Any], following: Mapping[str, Any] | None = None) -> bool:
    """Whether ``line``, a file's first record, opens a Codex rollout. ``following`` is the
    next record: the flat layout's meta line may hold only the id and the time, and then the
    bare response item after it decides."""
    if line.get("type") in _ENVELOPES and "payload" in line:
        return True
    # The flat layout: a meta line with the session id (and the instructions), no envelope.
    if "type" in line or not isinstance(line.get("id"), str) or "timestamp" not in line:
        return False
    if "instructions" in line or "git" in line:
        return True
    return (
        following is not None
        and following.get("type") in _FLAT_ITEMS
        and "uuid" not in following
        and "payload" not in following
    )


CodexMeta = dict[str, Any]


def meta_of(lines: list[Line]) -> CodexMeta:
    for line in lines:
        if line.data.get("type") == "session_meta" and isinstance(line.data.get("payload"), dict):
            payload: dict[str, Any] = dict(line.data["payload"])
            payload.setdefault("timestamp", line.data.get("timestamp"))
            meta = payload.get("meta")
            if isinstance(meta, dict):  # some versions nest it
                payload = {**meta, **{k: v for k, v in payload.items() if k != "meta"}}
            return payload
    if lines and "type" not in lines[0].data:
        return dict(lines[0].data)
    return {}


def _events(lines: list[Line]) -> list[tuple[str, dict[str, Any], int]]:
    """(envelope type, payload, ms) in file order; flat files as response items."""
    flat = bool(lines) and "type" not in lines[0].data
    start = ms_from_iso(lines[0].data.get("timestamp")) if flat else 0
    found: list[tuple[str, dict[str, Any], int]] = []
    for line in lines[1:] if flat else lines:
        data = line.data
        if flat:
            if data.get("record_type") == "state" or not isinstance(data.get("type"), str):
                continue
            found.append(("response_item", data, start))
        elif isinstance(data.get("payload"), dict) and isinstance(data.get("type"), str):
            found.append((data["type"], data["payload"], ms_from_iso(data.get("timestamp"))))
    return found


def _texts(content: Any) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in content if isinstance(content, list) else []:
        if not isinstance(part, dict):
            continue
        if part.get("type") in ("input_text", "output_text", "text"):
            blocks.append({"type": "text", "text": as_str(part.get("text"))})
        elif part.get("type") == "input_image":
            url = part.get("image_url", "")
            if isinstance(url, str) and url.startswith("data:") and ";base64," in url:
                mime, data = url[5:].split(";base64,", 1)
                blocks.append({"type": "image", "data": data, "mimeType": mime})
            else:
                blocks.append({"type": "text", "text": f"[image: {url}]"})
    return blocks


def _plain(blocks: list[dict[str, Any]]) -> str:
    return "\n".join(as_str(block.get("text")) for block in blocks if block["type"] == "text").strip()


# Codex wraps a pasted image in the prompt's item as text parts of their own, "<image name=[Image
# #1]>" and "</image>", around the image; its user_message event holds the typed text alone.
_IMAGE_TAG = re.compile(r"</?image\b[^>]*>")


def _prompt_key(blocks: list[dict[str, Any]]) -> str:
    """A prompt item's text as its ``user_message`` event has it: the image wrappers left out."""
    return _plain(
        [b for b in blocks if b["type"] != "text" or not _IMAGE_TAG.fullmatch(as_str(b.get("text")).strip())]
    )


def _arguments(text: Any) -> dict[str, Any]:
    if isinstance(text, dict):
        return text
    if isinstance(text, str):
        try:
            parsed = json.loads(text)
        except (ValueError, RecursionError):  # not JSON, or nested past Python's stack
            return {"input": text}
        return parsed if isinstance(parsed, dict) else {"input": parsed}
    return {}


def _count(usage: Mapping[str, Any] | None, key: str) -> int:
    return as_count((usage or {}).get(key))


class _Rollout:
    def __init__(self, writer: SessionWriter, meta: CodexMeta) -> None:
        self.writer = writer
        self.model = str(meta.get("model") or "unknown")
        self.pending: list[dict[str, Any]] = []  # the assistant message being gathered
        self.pending_ms = 0
        self.pending_usage: dict[str, int] | None = None
        self.calls: dict[str, str] = {}
        self.turns: list[str | None] = []  # the leaf before each user turn, for rollbacks
        self.total: dict[str, int] | None = None
        self.last_context = 0
        self.skipped: dict[str, int] = {}
        self.orphan_outputs = 0
        self.copying = False  # inside a fork's copy of its parent's history

    def skip(self, kind: str) -> None:
        self.skipped[kind] = self.skipped.get(kind, 0) + 1

    def flush(self) -> None:
        if not self.pending:
            if self.pending_usage:
                self._usage_entry(self.pending_usage, self.pending_ms)
                self.pending_usage = None
            return
        counts = self.pending_usage or {}
        has_calls = any(block["type"] == "toolCall" for block in self.pending)
        message = {
            "role": "assistant",
            "content": self.pending,
            "api": API,
            "provider": PROVIDER,
            "model": self.model,
            "usage": self._usage(counts),
            "stopReason": "toolUse" if has_calls else "stop",
            "timestamp": self.pending_ms,
        }
        self.writer.message(message, self.pending_ms)
        self.pending = []
        self.pending_usage = None

    def _usage(self, counts: Mapping[str, int]) -> dict[str, Any]:
        cached = counts.get("cached", 0)
        return usage_wire(
            PROVIDER,
            self.model,
            # Codex's input tokens include the cached ones; Pi's input does not.
            input=max(counts.get("input", 0) - cached, 0),
            output=counts.get("output", 0),
            cache_read=cached,
            reasoning=counts.get("reasoning", 0) or None,
        )

    def _usage_entry(self, counts: Mapping[str, int], ms: int) -> None:
        self.writer.at(ms).manager.append_usage("codex-import", PROVIDER, self.model, self._usage(counts))

    def user(self, blocks: list[dict[str, Any]], ms: int) -> None:
        self.flush()
        self.turns.append(self.writer.leaf())
        content: Any = blocks[0]["text"] if len(blocks) == 1 and blocks[0]["type"] == "text" else blocks
        self.writer.message({"role": "user", "content": content, "timestamp": ms}, ms)

    def assistant_block(self, block: dict[str, Any], ms: int) -> None:
        if not self.pending:
            self.pending_ms = ms
        self.pending.append(block)

    def token_count(self, payload: Mapping[str, Any], ms: int) -> None:
        info = payload.get("info")
        if not isinstance(info, dict):
            return
        total, last = info.get("total_token_usage"), info.get("last_token_usage")
        keys = {
            "input": "input_tokens",
            "cached": "cached_input_tokens",
            "output": "output_tokens",
            "reasoning": "reasoning_output_tokens",
        }
        if isinstance(total, dict):
            now = {name: _count(total, key) for name, key in keys.items()}
            before = self.total or dict.fromkeys(keys, 0)
            delta = {name: max(now[name] - before[name], 0) for name in keys}
            self.total = now
            if self.copying:
                return  # the parent's spending, counted in the parent: only the baseline moves
            if not any(delta.values()):
                return  # the same total again: nothing new was spent
        elif isinstance(last, dict) and not self.copying:
            delta = {name: _count(last, key) for name, key in keys.items()}
        else:
            return
        if isinstance(last, dict):
            self.last_context = _count(last, "input_tokens") + _count(last, "output_tokens")
        if self.pending_usage is None:
            self.pending_usage = delta
        else:
            self.pending_usage = {
                name: self.pending_usage.get(name, 0) + value for name, value in delta.items()
            }
        if not self.pending:
            self.pending_ms = ms
            self.flush()

    def rollback(self, turns: int, ms: int) -> None:
        self.flush()
        if turns <= 0 or not self.turns:
            return
        turns = min(turns, len(self.turns))
        target = self.turns[-turns]
        del self.turns[-turns:]
        self.writer.move_to(target)
        self.writer.custom("codex.thread_rolled_back", {"numTurns": turns}, ms)


_FORK_BURST_MS = 1000


def fork_parent(lines: list[Line], meta: CodexMeta) -> str | None:
    """The id of the rollout this one was forked from (``forked_from_id``, or the id of an
    ancestor's ``session_meta`` copied into it), else None."""
    parent = meta.get("forked_from_id")
    if isinstance(parent, str) and parent:
        return parent
    parent = spawn_parent(meta)  # a sub-agent thread (spawn_agent)
    if parent is not None:
        return parent
    for line in lines:
        payload = line.data.get("payload")
        if line.data.get("type") == "session_meta" and isinstance(payload, dict):
            found = payload.get("id")
            if isinstance(found, str) and found and found != meta.get("id"):
                return found
    return None


def _fork_copy_end(events: list[tuple[str, dict[str, Any], int]], meta: CodexMeta) -> int:
    """Where a fork's copy of its parent's history ends (0 when the rollout is no fork).

    A forked rollout opens with its own ``session_meta``, then the parent's lines: the parent's
    ``session_meta`` and history, written in one burst (re-stamped to the fork instant, or with
    the parent's older timestamps). The copy ends at the first line stamped more than a second
    after the fork, and never restarts: the parent's tokens are counted in the parent, once.
    """
    metas = [n for n, (kind, _, _) in enumerate(events) if kind == "session_meta"]
    forked = isinstance(meta.get("forked_from_id"), str) or any(
        events[n][1].get("id") not in (None, meta.get("id")) for n in metas[1:]
    )
    if not forked or not metas:
        return 0
    instant = events[metas[0]][2]
    for number in range(metas[0] + 1, len(events)):
        if events[number][2] > instant + _FORK_BURST_MS:
            return number
    return len(events)


def spawn_parent(meta: CodexMeta) -> str | None:
    """The thread that spawned this sub-agent thread (``source.subagent.thread_spawn``)."""
    source = meta.get("source")
    spawn = source.get("subagent") if isinstance(source, dict) else None
    spawn = spawn.get("thread_spawn") if isinstance(spawn, dict) else None
    parent = spawn.get("parent_thread_id") if isinstance(spawn, dict) else None
    return parent if isinstance(parent, str) and parent else None


def _replay_end(events: list[tuple[str, dict[str, Any], int]], parent: list[Line]) -> int:
    """Where a spawned thread's replay of its parent's lines ends: the run of events after its
    own ``session_meta`` that are, line for line, events of the parent (0: no replay)."""
    metas = [n for n, (kind, _, _) in enumerate(events) if kind == "session_meta"]
    if not metas:
        return 0

    def key(event: tuple[str, dict[str, Any], int]) -> str:
        return json.dumps(event, sort_keys=True, ensure_ascii=False)

    known = {key(event) for event in _events(parent) if event[0] != "session_meta"}
    end = metas[0] + 1
    while end < len(events) and key(events[end]) in known:
        end += 1
    return end if end > metas[0] + 1 else 0


def write_rollout(
    lines: list[Line], writer: SessionWriter, meta: CodexMeta, parent_lines: list[Line] | None = None
) -> dict[str, Any]:
    """``parent_lines``: the rollout of the thread that spawned this one, when it is imported
    too: the lines replayed from it keep their place in the context, and their tokens are the
    parent's (as ccusage counts them when both files are in the store)."""
    rollout = _Rollout(writer, meta)
    events = _events(lines)
    # Prompts recorded as response items, so that the same prompt as an event is not taken twice.
    # Prompts recorded as response items, so that the same prompt as an event is not taken twice.
    item_prompts: dict[str, int] = {}
    for kind, payload, _ in events:
        if kind == "response_item" and payload.get("type") == "message" and payload.get("role") == "user":
            text = _prompt_key(_texts(payload.get("content")))
            item_prompts[text] = item_prompts.get(text, 0) + 1
    # Replies are response items, and agent_message events echo them (sanitized copies do not
    # even match in text); a rollout with no reply item (a sub-agent thread) has only the events.
    replies_are_events = not any(
        kind == "response_item" and payload.get("type") == "message" and payload.get("role") == "assistant"
        for kind, payload, _ in events
    )
    copy_ends = _fork_copy_end(events, meta)
    if parent_lines is not None:
        copy_ends = max(copy_ends, _replay_end(events, parent_lines))
    for number, (kind, payload, ms) in enumerate(events):
        rollout.copying = number < copy_ends
        item = payload.get("type")
        if kind == "session_meta":
            continue
        if kind == "turn_context":
            if isinstance(payload.get("model"), str):
                if rollout.pending and payload["model"] != rollout.model:
                    rollout.flush()
                rollout.model = payload["model"]
            continue
        if kind == "compacted":
            rollout.flush()
            summary = str(payload.get("message") or "")
            history = payload.get("replacement_history")
            if not summary and isinstance(history, list):
                # Newer rollouts leave the message empty: the summary is the last user text of
                # the replacement history.
                for entry in reversed(history):
                    if isinstance(entry, dict) and entry.get("role") == "user":
                        summary = _plain(_texts(entry.get("content")))
                        if summary:
                            break
            details: dict[str, Any] = {"source": "codex"}
            if history is not None:
                details["replacementHistory"] = history
            writer.at(ms).manager.append_compaction(
                summary or "(compacted)", None, rollout.last_context, details
            )
            continue
        if kind == "event_msg":
            if item == "token_count":
                rollout.token_count(payload, ms)
            elif item == "thread_rolled_back":
                count = payload.get("num_turns")
                rollout.rollback(as_count(count, 1), ms)
            elif item == "user_message":
                said = payload.get("message")
                text = said if isinstance(said, str) else ""
                key = text.strip()
                if item_prompts.get(key):
                    item_prompts[key] -= 1
                elif text:
                    blocks = [{"type": "text", "text": text}]
                    for url in as_list(payload.get("images")):
                        blocks.extend(_texts([{"type": "input_image", "image_url": url}]))
                    rollout.user(blocks, ms)
            elif item == "agent_message" and replies_are_events:
                said = payload.get("message")
                if isinstance(said, str) and said:
                    rollout.assistant_block({"type": "text", "text": said}, ms)
            elif item not in _ECHOES:
                rollout.skip(f"event_msg:{item}")
            continue
        if kind != "response_item":
            rollout.skip(str(kind))
            continue
        if item == "message":
            role = payload.get("role")
            blocks = _texts(payload.get("content"))
            if role == "assistant":
                for block in blocks:
                    rollout.assistant_block(block, ms)
            elif role == "user":
                text = _plain(blocks)
                if text.startswith(_CONTEXT_PREFIXES):
                    rollout.flush()
                    writer.custom("codex.context", payload, ms)
                else:
                    rollout.user(blocks, ms)
            else:
                rollout.flush()
                writer.custom(f"codex.{role}", payload, ms)
        elif item == "reasoning":
            reasoning = "\n\n".join(
                as_str(part.get("text")) for part in as_list(payload.get("summary")) if isinstance(part, dict)
            )
            if not reasoning:  # open models write the reasoning text itself, no summary
                reasoning = "\n\n".join(
                    as_str(part.get("text"))
                    for part in as_list(payload.get("content"))
                    if isinstance(part, dict)
                )
            thinking: dict[str, Any] = {"type": "thinking", "thinking": reasoning}
            if payload.get("encrypted_content"):
                # What Pi's Codex provider keeps to replay the reasoning to the same model.
                thinking["thinkingSignature"] = json.dumps(payload, ensure_ascii=False, separators=(",", ":"))
            rollout.assistant_block(thinking, ms)
        elif item in ("function_call", "custom_tool_call", "local_shell_call"):
            call_id = payload.get("call_id") or payload.get("id")
            if not isinstance(call_id, str):
                rollout.skip(f"response_item:{item}")
                continue
            name = str(payload.get("name") or ("shell" if item == "local_shell_call" else item))
            arguments: dict[str, Any]
            if item == "function_call":
                arguments = _arguments(payload.get("arguments"))
            elif item == "custom_tool_call":
                arguments = {"input": payload.get("input")}
            else:
                action = payload.get("action")
                arguments = action if isinstance(action, dict) else {}
            rollout.calls[call_id] = name
            rollout.assistant_block(
                {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}, ms
            )
        elif item in ("function_call_output", "custom_tool_call_output"):
            rollout.flush()
            call_id = payload.get("call_id")
            output = payload.get("output")
            shown: Any = output.get("content") if isinstance(output, dict) else output
            failed = isinstance(output, dict) and output.get("success") is False
            if not isinstance(call_id, str) or call_id not in rollout.calls:
                rollout.orphan_outputs += 1
                writer.custom("codex.orphan-tool-output", payload, ms)
                continue
            writer.message(
                {
                    "role": "toolResult",
                    "toolCallId": call_id,
                    "toolName": rollout.calls[call_id],
                    "content": [
                        {"type": "text", "text": shown if isinstance(shown, str) else json.dumps(shown)}
                    ],
                    "isError": failed,
                    "timestamp": ms,
                },
                ms,
            )
        else:
            rollout.flush()
            writer.custom(f"codex.{item}", payload, ms)
    rollout.flush()
    return {"skipped": rollout.skipped, "orphanToolOutputs": rollout.orphan_outputs}
