"""Writes the hand-made importer fixtures (run from this folder; the output is committed).

Each file shows one pitfall of the issue (#32); the tests in tests/test_importers.py say what
Pi must see in the imported session."""

from __future__ import annotations

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
SID = "11111111-2222-4333-8444-555555555555"
CWD = "/work/demo"


def ts(n: int) -> str:
    return f"2026-03-01T10:{n // 60:02d}:{n % 60:02d}.000Z"


def rec(kind, uuid, parent, n, message=None, **extra):
    out = {
        "parentUuid": parent,
        "isSidechain": False,
        "userType": "external",
        "cwd": CWD,
        "sessionId": SID,
        "version": "2.1.29",
        "gitBranch": "main",
        "type": kind,
        "uuid": uuid,
        "timestamp": ts(n),
    }
    if message is not None:
        out["message"] = message
    out.update(extra)
    return out


def user(uuid, parent, n, content, **extra):
    return rec("user", uuid, parent, n, {"role": "user", "content": content}, **extra)


def usage(inp, out, read=0, write=0):
    return {
        "input_tokens": inp,
        "cache_creation_input_tokens": write,
        "cache_read_input_tokens": read,
        "output_tokens": out,
    }


def assistant(
    uuid, parent, n, mid, blocks, use, req="req_1", model="claude-sonnet-4-5-20250929", stop=None, **extra
):
    return rec(
        "assistant",
        uuid,
        parent,
        n,
        {
            "id": mid,
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": blocks,
            "stop_reason": stop,
            "usage": use,
        },
        requestId=req,
        **extra,
    )


def result(uuid, parent, n, call, text):
    return user(
        uuid,
        parent,
        n,
        [{"tool_use_id": call, "type": "tool_result", "content": text}],
        toolUseResult={"stdout": text},
    )


def write(name, records, torn=None):
    path = os.path.join(HERE, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        for r in records:
            f.write(json.dumps(r, separators=(",", ":")) + "\n")
        if torn:
            f.write(torn)


def text(t):
    return {"type": "text", "text": t}


def call(i, name="Bash", **args):
    return {"type": "tool_use", "id": i, "name": name, "input": args}


# Parallel tool calls, their results and a hook progress record as sibling forks; a /doctor
# command beside the chain; one API message split over three records with placeholder usage.
write(
    "claude/forks.jsonl",
    [
        {"type": "summary", "summary": "Listing files", "leafUuid": "a5"},
        {"type": "file-history-snapshot", "messageId": "u1", "snapshot": {"trackedFileBackups": {}}},
        user("u1", None, 0, "list the files and the date"),
        assistant(
            "a1",
            "u1",
            1,
            "msg_1",
            [{"type": "thinking", "thinking": "two calls", "signature": "sig1"}],
            usage(10, 8, 100, 50),
        ),
        assistant("a2", "a1", 2, "msg_1", [call("t1", command="ls")], usage(10, 8, 100, 50)),
        assistant(
            "a3", "a1", 3, "msg_1", [call("t2", command="date")], usage(10, 322, 100, 50), stop="tool_use"
        ),
        rec("progress", "p1", "a2", 4, data={"type": "hook_progress"}),
        result("r1", "a2", 5, "t1", "a.txt b.txt"),
        result("r2", "a3", 6, "t2", "Sun Mar 1"),
        assistant(
            "a4",
            "r2",
            7,
            "msg_2",
            [text("Two files; it is Sunday.")],
            usage(5, 12, 300, 0),
            req="req_2",
            stop="end_turn",
        ),
        user("c1", "a4", 8, "<command-name>/doctor</command-name>"),
        rec("attachment", "at1", "a4", 8, attachment={"type": "todo_reminder", "content": []}),
        user("u2", "a4", 9, "thanks"),
        assistant(
            "a5", "u2", 10, "msg_3", [text("You are welcome.")], usage(3, 5), req="req_3", stop="end_turn"
        ),
    ],
)

# A rewound prompt: a second user turn under the same parent is a branch; the newer is active.
write(
    "claude/rewind.jsonl",
    [
        user("u1", None, 0, "write a haiku"),
        assistant(
            "a1", "u1", 1, "msg_1", [text("Old pond...")], usage(5, 10), stop="end_turn", costUSD=0.0125
        ),
        user("u2", "a1", 2, "make it about cats"),
        assistant(
            "a2", "u2", 3, "msg_2", [text("Cat on the mat...")], usage(6, 11), req="req_2", stop="end_turn"
        ),
        user("u2b", "a1", 4, "make it about dogs"),
        assistant(
            "a2b", "u2b", 5, "msg_3", [text("Dog in the sun...")], usage(6, 12), req="req_3", stop="end_turn"
        ),
    ],
)

# Compaction (2.x): the boundary has no parent and a logical parent that is not in the file.
write(
    "claude/compact.jsonl",
    [
        user("u1", None, 0, "start"),
        assistant("a1", "u1", 1, "msg_1", [text("started")], usage(5, 10), stop="end_turn"),
        rec(
            "system",
            "b1",
            None,
            2,
            subtype="compact_boundary",
            content="Conversation compacted",
            level="info",
            logicalParentUuid="not-in-this-file",
            compactMetadata={"trigger": "manual", "preTokens": 12345},
        ),
        user(
            "s1",
            "b1",
            3,
            "This session is being continued from a previous conversation. Summary: we started.",
            isCompactSummary=True,
            isVisibleInTranscriptOnly=True,
        ),
        user("u2", "s1", 4, "go on"),
        assistant("a2", "u2", 5, "msg_2", [text("going on")], usage(7, 9), req="req_2", stop="end_turn"),
    ],
)

# 1.0.x: a compaction as a second root, no boundary record; a hook record whose parent was
# never written.
write(
    "claude/old-compact.jsonl",
    [
        user("u1", None, 0, "start"),
        assistant("a1", "u1", 1, "msg_1", [text("started")], usage(5, 10), stop="end_turn"),
        rec("system", "h1", "never-written", 2, subtype="informational", content="hook ran", level="info"),
        user("s1", None, 3, "Summary: we started.", isCompactSummary=True),
        user("u2", "s1", 4, "go on"),
        assistant("a2", "u2", 5, "msg_2", [text("going on")], usage(7, 9), req="req_2", stop="end_turn"),
    ],
)

# A file that starts mid-story: a summary record, then a tool result whose call is elsewhere.
write(
    "claude/midstory.jsonl",
    [
        {"type": "summary", "summary": "Earlier work", "leafUuid": "elsewhere"},
        result("r0", None, 0, "toolu_elsewhere", "old output"),
        user("u1", "r0", 1, "what next?"),
        assistant("a1", "u1", 2, "msg_1", [text("Next: tests.")], usage(4, 6), stop="end_turn"),
    ],
)

# Sidechains in the main file (1.0.x) and a sub-agent file (2.x).
write(
    "claude/sidechain.jsonl",
    [
        user("u1", None, 0, "research this"),
        assistant(
            "a1", "u1", 1, "msg_1", [call("t1", "Task", prompt="look it up")], usage(5, 10), stop="tool_use"
        ),
        dict(user("s1", None, 2, "look it up"), isSidechain=True),
        dict(
            assistant(
                "s2", "s1", 3, "msg_s", [text("found it")], usage(1000, 500), req="req_s", stop="end_turn"
            ),
            isSidechain=True,
        ),
        result("r1", "a1", 4, "t1", "found it"),
        assistant("a2", "r1", 5, "msg_2", [text("Done.")], usage(6, 7), req="req_2", stop="end_turn"),
    ],
)
write(
    "claude/agents/" + SID + ".jsonl",
    [
        user("u1", None, 0, "delegate"),
        assistant("a1", "u1", 1, "msg_1", [call("t1", "Task", prompt="sub")], usage(5, 10), stop="tool_use"),
        result("r1", "a1", 4, "t1", "sub done"),
        assistant("a2", "r1", 5, "msg_2", [text("Done.")], usage(6, 7), req="req_2", stop="end_turn"),
    ],
)
write(
    "claude/agents/" + SID + "/subagents/agent-abc123.jsonl",
    [
        dict(user("x1", None, 2, "sub"), isSidechain=True, agentId="abc123"),
        dict(
            assistant(
                "x2", "x1", 3, "msg_x", [text("sub done")], usage(2000, 700), req="req_x", stop="end_turn"
            ),
            isSidechain=True,
            agentId="abc123",
        ),
    ],
)

# Newer partial compaction: the preserved segment's logical parent loops back under the
# boundary (it names a record written after it); the file also starts with a compact summary.
write(
    "claude/loop.jsonl",
    [
        user("s0", None, 0, "Summary: an earlier file.", isCompactSummary=True),
        user("u1", "s0", 1, "start"),
        assistant("a1", "u1", 2, "msg_1", [text("started")], usage(5, 10), stop="end_turn"),
        rec(
            "system",
            "b1",
            None,
            3,
            subtype="compact_boundary",
            content="Conversation compacted",
            logicalParentUuid="k1",
            compactMetadata={"trigger": "auto", "preTokens": 900},
        ),
        user("s1", "b1", 4, "Summary: we started.", isCompactSummary=True),
        user("k1", "s1", 5, "kept prompt"),
        assistant("a2", "k1", 6, "msg_2", [text("kept reply")], usage(7, 9), req="req_2", stop="end_turn"),
    ],
)

# A partial compaction (newer Claude Code): the boundary's compactMetadata.preservedSegment keeps
# u2..a2 (written before the boundary) after the summary, and the next prompt chains off the
# preserved tail, so Claude's context after compacting is: summary, u2, a2, u3, a3.
write(
    "claude/partial.jsonl",
    [
        user("u1", None, 0, "first prompt"),
        assistant(
            "a1", "u1", 1, "msg_p1", [text("first answer")], usage(5, 10), req="req_p1", stop="end_turn"
        ),
        user("u2", "a1", 2, "second prompt"),
        assistant(
            "a2", "u2", 3, "msg_p2", [text("second answer")], usage(6, 11), req="req_p2", stop="end_turn"
        ),
        rec(
            "system",
            "b1",
            None,
            4,
            subtype="compact_boundary",
            content="Conversation compacted",
            logicalParentUuid="a2",
            compactMetadata={
                "trigger": "manual",
                "preTokens": 500,
                "preservedSegment": {"headUuid": "u2", "anchorUuid": "s1", "tailUuid": "a2"},
            },
        ),
        user("s1", "b1", 5, "Summary: the first prompt was answered.", isCompactSummary=True),
        user("u3", "a2", 6, "third prompt"),
        assistant(
            "a3", "u3", 7, "msg_p3", [text("third answer")], usage(7, 12), req="req_p3", stop="end_turn"
        ),
    ],
)

# Images, redacted thinking, an API error message and a content block Pi has no type for.
write(
    "claude/blocks.jsonl",
    [
        user(
            "u1",
            None,
            0,
            [
                text("what is in this picture?"),
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
                },
            ],
        ),
        assistant(
            "a1",
            "u1",
            1,
            "msg_1",
            [
                {"type": "redacted_thinking", "data": "opaque"},
                {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {"q": "x"}},
                text("A cat."),
            ],
            usage(50, 4),
            stop="end_turn",
        ),
        user("u2", "a1", 2, "and now?"),
        assistant(
            "a2",
            "u2",
            3,
            "msg_2",
            [text("API Error: 529 overloaded")],
            usage(0, 0),
            req="req_2",
            model="<synthetic>",
            stop="stop_sequence",
            isApiErrorMessage=True,
        ),
    ],
)

# A live file cut mid-record.
write(
    "claude/torn.jsonl",
    [
        user("u1", None, 0, "hello"),
        assistant("a1", "u1", 1, "msg_1", [text("hi")], usage(3, 4), stop="end_turn"),
    ],
    torn='{"parentUuid":"a1","type":"user","uuid":"u2","mess',
)

# --------------------------------------------------------------------------------- codex
CID = "0199aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee"


def env(n, kind, payload):
    return {"timestamp": ts(n), "type": kind, "payload": payload}


def item(n, payload):
    return env(n, "response_item", payload)


def msg(role, t, kind):
    return {"type": "message", "role": role, "content": [{"type": kind, "text": t}]}


def tokens(n, total, last):
    def u(i, c, o, r):
        return {
            "input_tokens": i,
            "cached_input_tokens": c,
            "output_tokens": o,
            "reasoning_output_tokens": r,
            "total_tokens": i + o,
        }

    return env(
        n,
        "event_msg",
        {
            "type": "token_count",
            "info": {
                "total_token_usage": u(*total),
                "last_token_usage": u(*last),
                "model_context_window": 272000,
            },
        },
    )


write(
    "codex/rollout-2026-03-01T10-00-00-" + CID + ".jsonl",
    [
        env(
            0,
            "session_meta",
            {
                "id": CID,
                "timestamp": ts(0),
                "cwd": CWD,
                "originator": "codex_cli_rs",
                "cli_version": "0.63.0",
            },
        ),
        item(
            0,
            msg(
                "user", "<environment_context>\n  <cwd>/work/demo</cwd>\n</environment_context>", "input_text"
            ),
        ),
        env(1, "turn_context", {"cwd": CWD, "model": "gpt-5-codex", "approval_policy": "on-request"}),
        item(1, msg("user", "fix the test", "input_text")),
        env(1, "event_msg", {"type": "user_message", "message": "fix the test", "images": []}),
        item(
            2,
            {
                "type": "reasoning",
                "summary": [{"type": "summary_text", "text": "Run the tests first."}],
                "content": None,
                "encrypted_content": "gAAAA-opaque",
            },
        ),
        item(
            2,
            {
                "type": "function_call",
                "name": "shell",
                "arguments": '{"command":["pytest","-q"]}',
                "call_id": "call_1",
            },
        ),
        tokens(3, (1000, 800, 50, 20), (1000, 800, 50, 20)),
        tokens(3, (1000, 800, 50, 20), (1000, 800, 50, 20)),
        item(4, {"type": "function_call_output", "call_id": "call_1", "output": "1 failed"}),
        item(5, msg("assistant", "One test fails; fixed.", "output_text")),
        env(5, "event_msg", {"type": "agent_message", "message": "One test fails; fixed."}),
        tokens(5, (2500, 1600, 120, 30), (1500, 800, 70, 10)),
        env(6, "event_msg", {"type": "thread_rolled_back", "num_turns": 1}),
        env(
            7, "event_msg", {"type": "user_message", "message": "fix it without running tests", "images": []}
        ),
        item(8, msg("assistant", "Fixed by reading the code.", "output_text")),
        tokens(8, (3700, 2400, 160, 30), (1200, 800, 40, 0)),
        env(
            9,
            "compacted",
            {
                "message": "",
                "replacement_history": [
                    msg("user", "fix it without running tests", "input_text"),
                    msg("user", "Summary: the test was fixed by reading the code.", "input_text"),
                ],
            },
        ),
        item(10, msg("user", "thanks", "input_text")),
        env(10, "event_msg", {"type": "user_message", "message": "thanks", "images": []}),
        item(11, msg("assistant", "Welcome.", "output_text")),
        tokens(11, (4000, 2600, 170, 30), (300, 200, 10, 0)),
    ],
)

# The oldest layout: no envelopes, a meta line and bare response items.
write(
    "codex/rollout-2025-05-01-flat.jsonl",
    [
        {
            "id": "0b5e1e3a-0000-4000-8000-000000000001",
            "timestamp": "2025-05-01T09:00:00.000Z",
            "instructions": None,
            "git": {"branch": "main"},
        },
        {"record_type": "state"},
        msg("user", "hello codex", "input_text"),
        {"record_type": "state"},
        msg("assistant", "hello", "output_text"),
    ],
)

write(
    "codex/rollout-torn.jsonl",
    [
        env(
            0, "session_meta", {"id": "0199ffff-0000-7000-8000-000000000002", "timestamp": ts(0), "cwd": CWD}
        ),
        env(1, "turn_context", {"cwd": CWD, "model": "gpt-5-codex"}),
        item(1, msg("user", "hi", "input_text")),
        item(2, msg("assistant", "hello", "output_text")),
    ],
    torn='{"timestamp":"2026-03-01T10:00:03.000Z","type":"response_item","payload":{"type":"mess',
)

# Usage only (an aborted or headless run): no user or assistant message, two token counts.
UID = "0199cccc-dddd-7eee-8fff-000000000000"
write(
    "codex/rollout-2026-03-01T10-00-00-" + UID + ".jsonl",
    [
        env(
            0,
            "session_meta",
            {"id": UID, "timestamp": ts(0), "cwd": CWD, "originator": "codex_exec", "cli_version": "0.63.0"},
        ),
        env(1, "turn_context", {"cwd": CWD, "model": "gpt-5-codex", "approval_policy": "never"}),
        tokens(2, (900, 600, 40, 10), (900, 600, 40, 10)),
        tokens(3, (900, 600, 40, 10), (900, 600, 40, 10)),
        tokens(4, (2000, 1500, 90, 30), (1100, 900, 50, 20)),
    ],
)

# A fork of the rollout above (Codex's fork): its own session_meta naming the parent, then the
# parent's lines copied in one burst re-stamped to the fork instant, then one new turn whose
# cumulative total continues from the parent's.
FID = "0199bbbb-cccc-7ddd-8eee-ffffffffffff"
FORK_AT = "2026-03-01T11:00:00.000Z"
with open(os.path.join(HERE, "codex", "rollout-2026-03-01T10-00-00-" + CID + ".jsonl")) as f:
    copied = [{**json.loads(line), "timestamp": FORK_AT} for line in f]
write(
    "codex/rollout-2026-03-01T11-00-00-" + FID + ".jsonl",
    [
        {
            "timestamp": FORK_AT,
            "type": "session_meta",
            "payload": {
                "id": FID,
                "forked_from_id": CID,
                "timestamp": FORK_AT,
                "cwd": CWD,
                "originator": "codex_cli_rs",
                "cli_version": "0.63.0",
            },
        },
        *copied,
        {
            **env(0, "turn_context", {"cwd": CWD, "model": "gpt-5-codex"}),
            "timestamp": "2026-03-01T11:00:05.000Z",
        },
        {
            **item(0, msg("user", "now try another way", "input_text")),
            "timestamp": "2026-03-01T11:00:05.000Z",
        },
        {
            **item(0, msg("assistant", "Done another way.", "output_text")),
            "timestamp": "2026-03-01T11:00:06.000Z",
        },
        {**tokens(0, (4700, 3100, 230, 35), (700, 500, 60, 5)), "timestamp": "2026-03-01T11:00:06.000Z"},
    ],
)

# A sub-agent thread (spawn_agent): its session_meta names the spawning thread in
# source.subagent.thread_spawn, then replays the parent's history as the parent wrote it (the
# same lines, the parent's timestamps; the shape of claude-code-log's public fixture), then its
# own turn. ccusage counts the replayed tokens in the parent when the parent is in the store.
SPAWNER = "0199dddd-0000-7000-8000-000000000001"
SPAWNED = "0199dddd-0000-7000-8000-000000000002"


def at(second, record):
    return {**record, "timestamp": f"2026-03-02T10:00:{second:02d}.000Z"}


def meta(second, sid, source):
    payload = {
        "id": sid,
        "cwd": CWD,
        "originator": "codex_cli_rs",
        "cli_version": "0.120.0",
        "source": source,
    }
    return at(second, env(0, "session_meta", {**payload, "timestamp": at(second, {})["timestamp"]}))


spawner = [
    meta(0, SPAWNER, "cli"),
    at(1, env(0, "turn_context", {"cwd": CWD, "model": "gpt-5-codex"})),
    at(2, env(0, "event_msg", {"type": "user_message", "message": "plan it"})),
    at(3, item(0, msg("assistant", "spawning a helper", "output_text"))),
    at(4, tokens(0, (1000, 400, 100, 0), (1000, 400, 100, 0))),
]
spawn_call = {
    "type": "function_call",
    "name": "spawn_agent",
    "arguments": '{"message":"look"}',
    "call_id": "s1",
}
write(
    "codex/rollout-2026-03-02T10-00-00-" + SPAWNER + ".jsonl",
    [
        *spawner,
        at(5, item(0, spawn_call)),
        at(6, tokens(0, (2500, 1400, 150, 0), (1500, 1000, 50, 0))),
        at(20, item(0, {"type": "function_call_output", "call_id": "s1", "output": "looked"})),
        at(21, item(0, msg("assistant", "the helper looked", "output_text"))),
        at(22, tokens(0, (4500, 3000, 200, 0), (2000, 1600, 50, 0))),
    ],
)
write(
    "codex/rollout-2026-03-02T10-00-07-" + SPAWNED + ".jsonl",
    [
        meta(7, SPAWNED, {"subagent": {"thread_spawn": {"parent_thread_id": SPAWNER, "depth": 1}}}),
        *spawner[1:],
        at(8, env(0, "turn_context", {"cwd": CWD, "model": "gpt-5-codex"})),
        at(9, env(0, "event_msg", {"type": "user_message", "message": "look"})),
        at(10, item(0, msg("assistant", "looked", "output_text"))),
        at(11, tokens(0, (1800, 900, 130, 0), (800, 500, 30, 0))),
    ],
)

with open(os.path.join(HERE, "foreign.json"), "w") as f:
    f.write('{"hello": "world"}\n')
