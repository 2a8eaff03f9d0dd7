#!/usr/bin/env python3
# ruff: noqa: E501  (long string literals are test data)
"""Regenerate pisession's conformance data from the reference implementation (pi-oracle).

    python tests/conformance/generate.py              # everything
    python tests/conformance/generate.py --only NAME  # one read case, op script, "fn" or "demo_sample"
    python tests/conformance/generate.py --list       # names and what each covers

Needs `node` and the reference installed by ../shared/pi-oracle/setup.sh. Stdlib only.
See README.md beside this file for the layout and the placeholders.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent.parent
CASES = HERE / "cases"
NO_ORACLE = CASES / "no_oracle"
OPS = HERE / "ops"
GOLDEN_READ = HERE / "golden" / "read"
GOLDEN_OPS = HERE / "golden" / "ops"
GOLDEN_FN = HERE / "golden" / "fn.json"
FIXTURES = HERE / "fixtures"
SAMPLE = PROJECT / "pisession" / "data" / "sample.jsonl"
SEED_PRELOAD = HERE / "oracle_seed.mjs"

ORACLE = Path(os.environ.get("PI_ORACLE", str(PROJECT.parent / "shared" / "pi-oracle" / "oracle.mjs")))
ORACLE_HOME = os.environ.get("PI_ORACLE_HOME") or str(Path.home() / ".cache" / "pi-oracle")

# The oracle runs with this HOME (never created: nothing is written under it) and with "/" as its
# working directory, so "~" and relative paths resolve to fixed strings the tests can reproduce.
FAKE_HOME = "/home/pi"
NODE_CWD = "/"

T0 = 1733234400000  # 2024-12-03T14:00:00.000Z, the default op-script clock


# --------------------------------------------------------------------------------------------
# JSON text helpers. Oracle output is kept as text so JavaScript's number formatting (1e+21,
# 0.000018, 12345678901234567000) survives; it is only re-indented, never re-serialised.
# --------------------------------------------------------------------------------------------


class Raw:
    """JSON text to embed as is (re-indented) in a generated document."""

    def __init__(self, text: str) -> None:
        self.text = text


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\],:]|[^"{}\[\],:\s]+|\s+', re.S)


INDENT_LEVELS = 100  # deeper nesting (entries 1,000 levels deep) stays on one line: no MB of spaces


def reindent(text: str, step: str = " ") -> str:
    """Pretty-print JSON text token by token (strings and numbers untouched)."""
    out: list[str] = []
    level = 0
    tokens = [t for t in _TOKEN.findall(text) if not t.isspace()]
    i = 0
    n = len(tokens)
    while i < n:
        t = tokens[i]
        if t in "{[" and len(t) == 1:
            if i + 1 < n and tokens[i + 1] == ("}" if t == "{" else "]"):
                out.append(t + tokens[i + 1])
                i += 2
                continue
            level += 1
            out.append(t + "\n" + step * level if level <= INDENT_LEVELS else t)
        elif t in "}]" and len(t) == 1:
            level -= 1
            out.append("\n" + step * level + t if level < INDENT_LEVELS else t)
        elif t == ",":
            out.append(",\n" + step * level if level <= INDENT_LEVELS else ",")
        elif t == ":":
            out.append(": ")
        else:
            out.append(t)
        i += 1
    return "".join(out)


def compact(obj: Any) -> str:
    """Serialise Python data (possibly holding Raw) as compact JSON text."""
    if isinstance(obj, Raw):
        return obj.text
    if isinstance(obj, dict):
        return (
            "{" + ",".join(json.dumps(k, ensure_ascii=False) + ":" + compact(v) for k, v in obj.items()) + "}"
        )
    if isinstance(obj, (list, tuple)):
        return "[" + ",".join(compact(v) for v in obj) + "]"
    return json.dumps(obj, ensure_ascii=False)


def write_json(path: Path, obj: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(reindent(compact(obj)) + "\n", encoding="utf-8")


def J(obj: Any) -> str:
    """One line as Pi writes it (only for hand-written lines holding ints and strings)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def iso(ms: int) -> str:
    return (
        datetime.fromtimestamp(ms / 1000, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}Z"
    )


# --------------------------------------------------------------------------------------------
# Running the oracle
# --------------------------------------------------------------------------------------------


class Sandbox:
    """Private temp paths for one oracle run, and the placeholders that replace them."""

    _count = 0

    def __init__(self, root: Path, name: str) -> None:
        Sandbox._count += 1
        self.root = root / f"{Sandbox._count:04d}-{re.sub(r'[^A-Za-z0-9_-]', '_', name)}"
        self.dir = self.root / "dir"
        self.agent = self.root / "agent"
        self.nodetmp = self.root / "nodetmp"
        for p in (self.agent, self.nodetmp):
            p.mkdir(parents=True)
        self.extra: list[tuple[str, str]] = []

    def placeholders(self, text: str) -> str:
        text = re.sub(re.escape(str(self.nodetmp)) + r"/pi-oracle-[A-Za-z0-9]+/session\.jsonl", "$FILE", text)
        for real, ph in self.extra:
            text = text.replace(real, ph)
        text = text.replace(str(self.dir), "$DIR").replace(str(self.agent), "$AGENT")
        return text.replace(str(self.root), "$TMP")

    def real(self, text: str) -> str:
        """The inverse for arguments written with placeholders."""
        return (
            text.replace("$DIR", str(self.dir))
            .replace("$AGENT", str(self.agent))
            .replace("$TMP", str(self.root))
        )


def node_env(sandbox: Sandbox, seed: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PI_", "TAU_"))}
    env.update(
        HOME=FAKE_HOME,
        TZ="UTC",
        TMPDIR=str(sandbox.nodetmp),
        PI_CODING_AGENT_DIR=str(sandbox.agent),
        PI_ORACLE_HOME=ORACLE_HOME,
        PI_ORACLE_SEED=seed,
    )
    return env


def oracle(sandbox: Sandbox, seed: str, *argv: str, timeout: float = 60) -> str:
    cmd = ["node", "--import", SEED_PRELOAD.as_uri(), str(ORACLE), *argv]
    proc = subprocess.run(
        cmd, cwd=NODE_CWD, env=node_env(sandbox, seed), capture_output=True, timeout=timeout, check=False
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"oracle failed ({proc.returncode}): {' '.join(argv)}\n{proc.stderr.decode(errors='replace')}"
        )
    return proc.stdout.decode("utf-8").strip()


def new_header_placeholders(raw: str, keep_id: bool = False) -> str:
    """Replace the id/timestamp of a header made at run time (real clock) by placeholders."""
    obj = json.loads(raw)
    header = (obj.get("dump") or {}).get("header")
    if header is None and obj.get("fileAfterOpen"):
        header = json.loads(obj["fileAfterOpen"].split("\n", 1)[0])
    if not header:
        return raw
    ts = header["timestamp"]
    raw = raw.replace(ts.replace(":", "-").replace(".", "-"), "$NEW_FILE_TIMESTAMP").replace(
        ts, "$NEW_TIMESTAMP"
    )
    if not keep_id:
        raw = raw.replace(header["id"], "$NEW_ID")
    return raw


# --------------------------------------------------------------------------------------------
# Op scripts
# --------------------------------------------------------------------------------------------


class Script:
    """An op script; each call appends an op and returns "$K", the reference to its result."""

    def __init__(self, doc: str, cwd: str = "/project", clock: int | None = T0, options: dict | None = None):
        self.doc = doc
        self.data: dict[str, Any] = {"doc": doc, "cwd": cwd}
        if clock is not None:
            self.data["clock"] = clock
        if options is not None:
            self.data["options"] = options
        self.data["ops"] = []

    def __call__(self, op: str, *args: Any) -> str:
        step: dict[str, Any] = {"op": op}
        if args:
            step["args"] = list(args)
        self.data["ops"].append(step)
        return f"${len(self.data['ops']) - 1}"

    def undefined(self) -> str:
        """A reference that resolves to undefined: the result of an op that fails."""
        return self("branch", "__undefined__")

    def text(self) -> str:
        return json.dumps(self.data, ensure_ascii=False, indent=1) + "\n"


class Ctx:
    """What case builders get: a way to run op scripts through the oracle."""

    def __init__(self, root: Path, name: str) -> None:
        self.root = root
        self.name = name

    def run_ops(
        self, script: Script, memory: bool = False, all_leaves: bool = False
    ) -> tuple[dict, str, Sandbox]:
        sb = Sandbox(self.root, self.name)
        path = sb.root / "script.json"
        path.write_text(script.text(), encoding="utf-8")
        argv = ["ops", str(path)]
        if not memory:
            argv += ["--dir", str(sb.dir)]
        if all_leaves:
            argv.append("--all-leaves")
        raw = oracle(sb, self.name, *argv)
        return json.loads(raw), raw, sb

    def session(self, script: Script) -> tuple[str, list[Any]]:
        """The file Pi writes for a script, and the op results' values."""
        out, _, _ = self.run_ops(script)
        if out["text"] is None:
            raise RuntimeError(f"{self.name}: the script wrote no file")
        return out["text"], [r.get("value") for r in out["results"]]


# --------------------------------------------------------------------------------------------
# Message builders
# --------------------------------------------------------------------------------------------


def usage(inp: int = 1200, out: int = 350, cache_read: int = 0, cache_write: int = 0, **extra: Any) -> dict:
    u: dict[str, Any] = {"input": inp, "output": out, "cacheRead": cache_read, "cacheWrite": cache_write}
    u.update(extra)
    u["totalTokens"] = inp + out + cache_read + cache_write
    cin, cout, cr, cw = inp * 3e-6, out * 15e-6, cache_read * 3e-7, cache_write * 3.75e-6
    u["cost"] = {
        "input": round(cin, 8),
        "output": round(cout, 8),
        "cacheRead": round(cr, 8),
        "cacheWrite": round(cw, 8),
        "total": round(cin + cout + cr + cw, 8),
    }
    return u


def text(t: str, **kw: Any) -> dict:
    return {"type": "text", "text": t, **kw}


def thinking(t: str, **kw: Any) -> dict:
    return {"type": "thinking", "thinking": t, **kw}


def tool_call(cid: str, name: str, arguments: dict, **kw: Any) -> dict:
    return {"type": "toolCall", "id": cid, "name": name, "arguments": arguments, **kw}


IMAGE = {
    "type": "image",
    "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg==",
    "mimeType": "image/png",
}


def user(content: Any, ts: int = T0) -> dict:
    return {"role": "user", "content": content, "timestamp": ts}


def assistant(
    content: list,
    ts: int = T0,
    model: str = "claude-sonnet-4-5",
    provider: str = "anthropic",
    stop: str = "stop",
    u: dict | None = None,
    api: str = "anthropic-messages",
    **extra: Any,
) -> dict:
    m = {
        "role": "assistant",
        "content": content,
        "api": api,
        "provider": provider,
        "model": model,
        "usage": u or usage(),
        "stopReason": stop,
        "timestamp": ts,
    }
    m.update(extra)
    return m


def say(t: str, ts: int = T0, **kw: Any) -> dict:
    return assistant([text(t)], ts, **kw)


def tool_result(cid: str, name: str, body: str, ts: int = T0, is_error: bool = False, **extra: Any) -> dict:
    m = {
        "role": "toolResult",
        "toolCallId": cid,
        "toolName": name,
        "content": [text(body)],
        "isError": is_error,
        "timestamp": ts,
    }
    m.update(extra)
    return m


def tool(name: str, description: str, **props: str) -> dict:
    return {
        "name": name,
        "description": description,
        "parameters": {
            "type": "object",
            "properties": {k: {"type": v} for k, v in props.items()},
            "required": list(props),
        },
    }


READ_TOOL = tool("read", "Read a file", path="string")
BASH_TOOL = tool("bash", "Run a shell command", command="string")
EDIT_TOOL = tool("edit", "Replace text in a file", path="string", oldText="string", newText="string")
WRITE_TOOL = tool("write", "Write a file", path="string", content="string")
GREP_TOOL = tool("grep", "Search file contents", pattern="string")


def system(
    content: Any,
    ts: int = T0,
    sections: dict | None = None,
    added: list | None = None,
    removed: list | None = None,
    **extra: Any,
) -> dict:
    m: dict[str, Any] = {"role": "system", "content": content}
    if sections is not None:
        m["sections"] = sections
    if added is not None:
        m["toolsAdded"] = added
    if removed is not None:
        m["toolsRemoved"] = [{"name": n} for n in removed]
    m.update(extra)
    m["timestamp"] = ts
    return m


def bash_exec(command: str, output: str, ts: int = T0, **extra: Any) -> dict:
    m = {
        "role": "bashExecution",
        "command": command,
        "output": output,
        "exitCode": 0,
        "cancelled": False,
        "truncated": False,
        "timestamp": ts,
    }
    m.update(extra)
    return m


# --------------------------------------------------------------------------------------------
# Hand-written lines
# --------------------------------------------------------------------------------------------


def header(
    sid: str = "0193a0b0-0000-7000-8000-000000000001",
    version: int | None = 3,
    ts: int = T0,
    cwd: str = "/project",
    **extra: Any,
) -> str:
    h: dict[str, Any] = {"type": "session"}
    if version is not None:
        h["version"] = version
    h.update(id=sid, timestamp=iso(ts), cwd=cwd)
    h.update(extra)
    return J(h)


def entry(etype: str, eid: str | None, parent: str | None, ts: int | str, **fields: Any) -> dict:
    e: dict[str, Any] = {"type": etype}
    if eid is not None:
        e["id"] = eid
        e["parentId"] = parent
    e["timestamp"] = ts if isinstance(ts, str) else iso(ts)
    e.update(fields)
    return e


def msg(eid: str | None, parent: str | None, ts: int | str, message: dict) -> dict:
    return entry("message", eid, parent, ts, message=message)


def lines_of(text: str) -> list[str]:
    return text.split("\n")[:-1] if text.endswith("\n") else text.split("\n")


def last_id(text: str) -> str:
    for line in reversed(lines_of(text)):
        try:
            return json.loads(line)["id"]
        except (ValueError, KeyError, TypeError):
            continue
    raise ValueError("no entry id")


def join_lines(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


# --------------------------------------------------------------------------------------------
# A. Read cases: cases/<name>.jsonl + golden/read/<name>.json
# --------------------------------------------------------------------------------------------

Builder = Callable[[Ctx], "str | bytes"]
READ: dict[str, tuple[str, Builder]] = {}
NO_ORACLE_CASES: dict[str, tuple[str, Builder]] = {}


def read_case(
    name: str, doc: str, table: dict[str, tuple[str, Builder]] = READ
) -> Callable[[Builder], Builder]:
    def deco(fn: Builder) -> Builder:
        table[name] = (doc, fn)
        return fn

    return deco


@read_case(
    "all_entry_types",
    "every entry type written by Pi: model/thinking changes, usage (known kind with note, "
    "unknown kind), custom without data / data null / data, custom_message string and blocks+details, label "
    "set and cleared, context_edit, compaction with details/usage/fromHook, branch_summary, session_info "
    "(blank from '  ', a name, then hand-written '   ' and a name with a newline, which wins)",
)
def _all_entry_types(g: Ctx) -> str:
    s = Script("all entry types")
    s("appendModelChange", "anthropic", "claude-sonnet-4-5")
    s("appendThinkingLevelChange", "medium")
    s(
        "appendMessage",
        system(
            "You are Pi, a coding agent.",
            T0,
            sections={"environment": "<env>cwd: /project</env>"},
            added=[READ_TOOL, BASH_TOOL],
        ),
    )
    u1 = s("appendMessage", user("List the files here", T0 + 10))
    s(
        "appendMessage",
        assistant(
            [
                thinking("The user wants ls.", thinkingSignature="sig-1"),
                tool_call("call_1", "bash", {"command": "ls"}),
            ],
            T0 + 20,
            stop="toolUse",
        ),
    )
    t1 = s("appendMessage", tool_result("call_1", "bash", "README.md\nsrc\n", T0 + 30))
    a2 = s("appendMessage", say("There is a README and a src folder.", T0 + 40))
    s("appendUsage", "compaction", "anthropic", "claude-haiku-4-5", usage(5000, 400), "automatic compaction")
    s("appendUsage", "x-extension-embedding", "openai", "text-embedding-3-small", usage(800, 0))
    s("appendCustomEntry", "ext.state")
    s("appendCustomEntry", "ext.state", None)
    s(
        "appendCustomEntry",
        "pi.virtual-model-state",
        {"router": "default", "selected": {"provider": "anthropic", "modelId": "claude-sonnet-4-5"}},
    )
    s("appendCustomMessageEntry", "ext.note", "A plain string note", True)
    s("appendCustomMessageEntry", "ext.note", [text("Block note"), IMAGE], False, {"source": "hook", "n": 1})
    s("appendLabelChange", u1, "start")
    s("appendLabelChange", a2, "answer")
    s("appendLabelChange", a2)
    s("appendContextEdit", t1, {"content": "(listing elided)"})
    s(
        "appendCompaction",
        "The user asked for a listing; README.md and src exist.",
        a2,
        5000,
        {"readFiles": [], "modifiedFiles": []},
        False,
        usage(5000, 400),
    )
    s("appendMessage", user("Thanks", T0 + 50))
    s("branchWithSummary", u1, "Tried a listing and said thanks.", {"files": []}, True)
    s("appendMessage", user("Different question: what is 2+2?", T0 + 60))
    s("appendSessionInfo", "  ")
    s("appendSessionInfo", "My session")
    body, _ = g.session(s)
    lines = lines_of(body)
    lines.append(J(entry("session_info", "5e550001", last_id(body), T0 + 1000, name="   ")))
    lines.append(J(entry("session_info", "5e550002", "5e550001", T0 + 1001, name="Line one\nline two")))
    return join_lines(lines)


@read_case(
    "all_roles",
    "every message role: system with sections/toolsAdded and with toolsRemoved, user string and "
    "text+image blocks, assistant with thinking (signed, redacted)/text/toolCall and full usage, an error "
    "assistant, toolResult with details, bashExecution (also excludeFromContext), custom, branchSummary, "
    "compactionSummary stored as messages, an unknown role; hand-written messages with null or missing "
    "content (system -> '', user/assistant/toolResult -> [], unknown role untouched)",
)
def _all_roles(g: Ctx) -> str:
    s = Script("all roles")
    s(
        "appendMessage",
        system(
            "Base prompt",
            T0,
            sections={"identity": "<identity>Pi</identity>", "environment": "<env>linux</env>"},
            added=[READ_TOOL, BASH_TOOL],
        ),
    )
    s("appendMessage", system("", T0 + 1, sections={"environment": "<env>macos</env>"}, removed=["bash"]))
    s("appendMessage", user("plain string content", T0 + 2))
    s("appendMessage", user([text("look at this"), IMAGE], T0 + 3))
    s(
        "appendMessage",
        assistant(
            [
                thinking("hmm", thinkingSignature="c2lnbmF0dXJl"),
                thinking("", thinkingSignature="opaque", redacted=True),
                text("Reading it.", textSignature="ts-1"),
                tool_call("call_9", "read", {"path": "a.txt"}, thoughtSignature="th-1", namespace="fs"),
            ],
            T0 + 4,
            stop="toolUse",
            u=usage(2000, 500, 100, 50, cacheWrite1h=20, reasoning=120),
            responseId="resp_1",
            responseModel="claude-sonnet-4-5-20250929",
            thinkingLevel="medium",
        ),
    )
    s(
        "appendMessage",
        tool_result(
            "call_9", "read", "file body", T0 + 5, is_error=True, details={"path": "a.txt", "lines": 1}
        ),
    )
    s("appendMessage", bash_exec("ls -la", "total 0\n", T0 + 6))
    s(
        "appendMessage",
        bash_exec("cat .env", "SECRET=1\n", T0 + 7, excludeFromContext=True, fullOutputPath="/tmp/out.txt"),
    )
    s(
        "appendMessage",
        {
            "role": "custom",
            "customType": "ext.msg",
            "content": "custom role content",
            "display": True,
            "details": {"a": 1},
            "timestamp": T0 + 8,
        },
    )
    s(
        "appendMessage",
        {
            "role": "branchSummary",
            "summary": "stored branch summary message",
            "fromId": "abc12345",
            "timestamp": T0 + 9,
        },
    )
    s(
        "appendMessage",
        {
            "role": "compactionSummary",
            "summary": "stored compaction summary message",
            "tokensBefore": 1234,
            "timestamp": T0 + 10,
        },
    )
    s("appendMessage", {"role": "telemetryPing", "payload": {"seq": 1}, "timestamp": T0 + 11})
    s(
        "appendMessage",
        assistant(
            [text("partial")],
            T0 + 12,
            stop="error",
            errorMessage="overloaded",
            provider="openai",
            model="gpt-5",
            api="openai-responses",
        ),
    )
    body, _ = g.session(s)
    lines = lines_of(body)
    parent = last_id(body)
    hand = [
        {"role": "system", "content": None, "timestamp": T0 + 20},
        {"role": "user", "content": None, "timestamp": T0 + 21},
        {
            "role": "assistant",
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "usage": usage(1, 1),
            "stopReason": "stop",
            "timestamp": T0 + 22,
        },
        {
            "role": "toolResult",
            "toolCallId": "call_x",
            "toolName": "read",
            "content": None,
            "isError": False,
            "timestamp": T0 + 23,
        },
        {"role": "user", "timestamp": T0 + 24},
        {"role": "mystery", "content": None, "timestamp": T0 + 25},
        {"role": "system", "timestamp": T0 + 26},
    ]
    for i, m in enumerate(hand):
        eid = f"a000000{i + 1}"
        lines.append(J(msg(eid, parent, T0 + 2000 + i, m)))
        parent = eid
    return join_lines(lines)


@read_case(
    "session_info_blank_last",
    "session_info names: a name, '  Padded  ' (trimmed by getSessionName), a "
    "session_info without name, and a blank '   ' last: the session has no name",
)
def _si_blank(g: Ctx) -> str:
    L = [header()]
    L.append(J(msg("b0000001", None, T0 + 1, user("hello", T0 + 1))))
    L.append(J(entry("session_info", "b0000002", "b0000001", T0 + 2, name="First")))
    L.append(J(entry("session_info", "b0000003", "b0000002", T0 + 3, name="  Padded  ")))
    L.append(J(entry("session_info", "b0000004", "b0000003", T0 + 4)))
    L.append(J(entry("session_info", "b0000005", "b0000004", T0 + 5, name="Real name")))
    L.append(J(entry("session_info", "b0000006", "b0000005", T0 + 6, name="   ")))
    return join_lines(L)


@read_case(
    "session_info_off_path",
    "the latest session_info in file order names the session even when it is on another branch than the leaf",
)
def _si_off(g: Ctx) -> str:
    L = [header()]
    L.append(J(msg("c0000001", None, T0 + 1, user("hello", T0 + 1))))
    L.append(J(entry("session_info", "c0000002", "c0000001", T0 + 2, name="Main name")))
    L.append(J(msg("c0000003", "c0000002", T0 + 3, say("hi", T0 + 3))))
    L.append(J(entry("session_info", "c0000004", "c0000001", T0 + 4, name="Side branch name")))
    L.append(J(msg("c0000005", "c0000003", T0 + 5, user("on the main branch", T0 + 5))))
    return join_lines(L)


@read_case(
    "multiple_compactions",
    "three compactions on one path; the second keeps from before the first, so the "
    "first sits in the kept region and contributes no messages",
)
def _multi_compactions(g: Ctx) -> str:
    s = Script("multiple compactions")
    s("appendMessage", user("q1", T0 + 1))
    s("appendMessage", say("a1", T0 + 2))
    u2 = s("appendMessage", user("q2", T0 + 3))
    a2 = s("appendMessage", say("a2", T0 + 4))
    s("appendCompaction", "summary one", u2, 1000)
    u3 = s("appendMessage", user("q3", T0 + 5))
    s("appendMessage", say("a3", T0 + 6))
    s("appendCompaction", "summary two", a2, 2000)
    u4 = s("appendMessage", user("q4", T0 + 7))
    s("appendMessage", say("a4", T0 + 8))
    s("appendCompaction", "summary three", u4, 3000)
    s("appendMessage", user("q5", T0 + 9))
    del u3
    return g.session(s)[0]


@read_case(
    "compaction_retain_none",
    "appendCompaction(summary, null, ...): firstKeptEntryId is the compaction's own "
    "id, nothing before it is kept",
)
def _retain_none(g: Ctx) -> str:
    s = Script("retain none")
    s("appendMessage", user("q1", T0 + 1))
    s("appendMessage", say("a1", T0 + 2))
    s("appendCompaction", "everything so far", None, 500)
    s("appendMessage", user("q2", T0 + 3))
    s("appendMessage", say("a2", T0 + 4))
    return g.session(s)[0]


@read_case(
    "compaction_dangling_first_kept",
    "a compaction whose firstKeptEntryId names no entry, and on another "
    "branch one with the field removed: only the compaction and what follows it are in context",
)
def _dangling(g: Ctx) -> str:
    s = Script("dangling first kept")
    s("appendMessage", user("q1", T0 + 1))
    a1 = s("appendMessage", say("a1", T0 + 2))
    s("appendCompaction", "dangling", "deadbeef", 100)
    s("appendMessage", user("q2", T0 + 3))
    s("branch", a1)
    c2 = s("appendCompaction", "field removed", a1, 200)
    s("appendMessage", user("q3", T0 + 4))
    body, ids = g.session(s)
    target = ids[int(c2[1:])]
    out = []
    for line in lines_of(body):
        if f'"id":"{target}"' in line:
            obj = json.loads(line)
            del obj["firstKeptEntryId"]
            line = J(obj)
        out.append(line)
    return join_lines(out)


@read_case(
    "compaction_system_message",
    "system prompt set before a compaction: the compaction stores systemMessage "
    "(replay of the path's system messages); system messages in the kept region are skipped; a system message "
    "after the first compaction is replayed into the second one's systemMessage",
)
def _compaction_system(g: Ctx) -> str:
    s = Script("compaction with system message")
    s(
        "appendMessage",
        system("You are Pi.", T0, sections={"env": "<env>v1</env>"}, added=[READ_TOOL, BASH_TOOL]),
    )
    u1 = s("appendMessage", user("q1", T0 + 1))
    s("appendMessage", say("a1", T0 + 2))
    s("appendMessage", system("", T0 + 3, sections={"env": "<env>v2</env>"}, removed=["bash"]))
    s("appendMessage", user("q2", T0 + 4))
    s("appendMessage", say("a2", T0 + 5))
    s("appendCompaction", "first", u1, 1000)
    u3 = s("appendMessage", user("q3", T0 + 6))
    s("appendMessage", system("Also be brief.", T0 + 7, added=[GREP_TOOL]))
    s("appendMessage", say("a3", T0 + 8))
    s("appendCompaction", "second", u3, 2000)
    s("appendMessage", user("q4", T0 + 9))
    return g.session(s)[0]


@read_case(
    "compaction_first_kept_system",
    "firstKeptEntryId points at a system message: the kept range starts there "
    "but the system message itself is skipped",
)
def _first_kept_system(g: Ctx) -> str:
    s = Script("first kept is a system message")
    s("appendMessage", system("Base.", T0, added=[READ_TOOL]))
    s("appendMessage", user("q1", T0 + 1))
    s("appendMessage", say("a1", T0 + 2))
    sys2 = s("appendMessage", system("Extra rule.", T0 + 3))
    s("appendMessage", user("q2", T0 + 4))
    s("appendMessage", say("a2", T0 + 5))
    s("appendCompaction", "summary", sys2, 900)
    s("appendMessage", user("q3", T0 + 6))
    return g.session(s)[0]


@read_case(
    "context_edits",
    "context edits written by Pi: string replacement on assistant and toolResult (stored "
    "normalized as text blocks), blocks on a user message, null (omit) on an assistant, two edits for one "
    "target (the last wins), a string on a custom_message (kept as string), and an edit on another branch",
)
def _context_edits(g: Ctx) -> str:
    s = Script("context edits")
    u1 = s("appendMessage", user("first question", T0 + 1))
    a1 = s("appendMessage", say("a long first answer", T0 + 2))
    u2 = s("appendMessage", user([text("look"), IMAGE], T0 + 3))
    s(
        "appendMessage",
        assistant(
            [thinking("need to run"), tool_call("c1", "bash", {"command": "make"})], T0 + 4, stop="toolUse"
        ),
    )
    t1 = s("appendMessage", tool_result("c1", "bash", "lots of build output", T0 + 5))
    a3 = s("appendMessage", say("verbose final answer", T0 + 6))
    cm = s("appendCustomMessageEntry", "ext.ctx", "custom message body", True, {"k": 1})
    s("appendContextEdit", a1, {"content": "short answer"})
    s("appendContextEdit", t1, {"content": "(output elided)"})
    s("appendContextEdit", u2, {"content": [text("look (image removed)")]})
    s("appendContextEdit", a3, None)
    s("appendContextEdit", u1, {"content": "first edit"})
    s("appendContextEdit", u1, {"content": "second edit"})
    s("appendContextEdit", cm, {"content": "custom replaced"})
    s("appendMessage", user("next", T0 + 7))
    s("branch", a1)
    s("appendContextEdit", u1, {"content": "edit on the side branch"})
    s("appendMessage", user("side question", T0 + 8))
    return g.session(s)[0]


@read_case(
    "context_edits_handwritten",
    "context edits Pi would refuse to write, as a hand-edited file may hold them: "
    "raw string replacement on an assistant (normalized at projection), null on a system message (drops "
    "it), on a model_change, on a missing id, content 5 on a user, extra fields, on a bashExecution "
    "(unchanged), on a custom-role message entry (replaced), on a later system message (unchanged), and "
    "null on the newest compaction (drops its summary and systemMessage)",
)
def _context_edits_hand(g: Ctx) -> str:
    s = Script("base for hand-written edits")
    sys1 = s("appendMessage", system("Base prompt.", T0, added=[READ_TOOL]))
    u1 = s("appendMessage", user("q1", T0 + 1))
    a1 = s("appendMessage", say("a1", T0 + 2))
    mc = s("appendModelChange", "openai", "gpt-5")
    u2 = s("appendMessage", user("q2", T0 + 3))
    s("appendMessage", assistant([tool_call("c1", "read", {"path": "x"})], T0 + 4, stop="toolUse"))
    t1 = s("appendMessage", tool_result("c1", "read", "x body", T0 + 5))
    bx = s("appendMessage", bash_exec("pwd", "/project\n", T0 + 6))
    cr = s(
        "appendMessage",
        {
            "role": "custom",
            "customType": "ext",
            "content": "custom role",
            "display": True,
            "timestamp": T0 + 7,
        },
    )
    sys2 = s("appendMessage", system("Later rule.", T0 + 8))
    s("appendMessage", user("q3", T0 + 9))
    body, ids = g.session(s)
    r = lambda ref: ids[int(ref[1:])]  # noqa: E731
    lines = lines_of(body)
    parent = last_id(body)
    edits = [
        (r(a1), {"content": "raw string on assistant"}),
        (r(sys1), None),
        (r(mc), {"content": "on a model change"}),
        ("missing1", {"content": "no such target"}),
        (r(u2), {"content": 5}),
        (r(t1), {"content": "tool result string", "extra": True}),
        (r(bx), {"content": "bash replaced?"}),
        (r(cr), {"content": "replaced custom role"}),
        (r(sys2), {"content": "patched system?"}),
    ]
    for i, (target, repl) in enumerate(edits):
        eid = f"ed00000{i}"
        lines.append(J(entry("context_edit", eid, parent, T0 + 1000 + i, targetId=target, replacement=repl)))
        parent = eid
    lines.append(
        J(
            entry(
                "compaction",
                "c0mpac71",
                parent,
                T0 + 1100,
                summary="hand compaction",
                firstKeptEntryId=r(u1),
                tokensBefore=100,
                systemMessage=system("Base prompt.", T0 + 1100, added=[READ_TOOL]),
            )
        )
    )
    lines.append(
        J(entry("context_edit", "ed000010", "c0mpac71", T0 + 1101, targetId="c0mpac71", replacement=None))
    )
    lines.append(J(msg("ed000011", "ed000010", T0 + 1102, user("after", T0 + 1102))))
    return join_lines(lines)


@read_case(
    "context_edit_compaction",
    "edits made before a compaction: one whose target is in the kept region "
    "(applies), one whose target was summarized away (no effect), an omit on a kept entry; on a second branch "
    "a compaction that summarizes the edits and their targets",
)
def _edit_compaction(g: Ctx) -> str:
    s = Script("context edits and compaction")
    u1 = s("appendMessage", user("q1", T0 + 1))
    s("appendMessage", say("a1", T0 + 2))
    u2 = s("appendMessage", user("q2", T0 + 3))
    a2 = s("appendMessage", say("a2", T0 + 4))
    s("appendContextEdit", u2, {"content": "q2 edited"})
    s("appendContextEdit", u1, {"content": "q1 edited"})
    s("appendContextEdit", a2, None)
    u3 = s("appendMessage", user("q3", T0 + 5))
    s("appendCompaction", "kept from q2", u2, 1000)
    s("appendMessage", user("q4", T0 + 6))
    s("branch", u3)
    s("appendCompaction", "kept from q3", u3, 2000)
    s("appendMessage", user("q5", T0 + 7))
    return g.session(s)[0]


@read_case(
    "system_replay",
    "several system messages replayed into a compaction's systemMessage: sections patched "
    "(integer-like names '10' and '2' reorder in JS objects), one deleted with null and re-set later (moves "
    "to the end), tools added, removed, re-added with a new definition, removal of an unknown tool, empty "
    "content skipped, block content joined with '\\n' and messages with '\\n\\n'",
)
def _system_replay(g: Ctx) -> str:
    s = Script("system replay")
    s(
        "appendMessage",
        system(
            "Base prompt.",
            T0,
            sections={
                "identity": "<identity>Pi</identity>",
                "environment": "<env>v1</env>",
                "10": "<ten/>",
                "2": "<two/>",
            },
            added=[READ_TOOL, BASH_TOOL],
        ),
    )
    s("appendMessage", user("q1", T0 + 1))
    s("appendMessage", say("a1", T0 + 2))
    s(
        "appendMessage",
        system(
            "",
            T0 + 3,
            sections={"environment": "<env>v2</env>", "rules": "<rules>be brief</rules>"},
            added=[EDIT_TOOL],
        ),
    )
    s(
        "appendMessage",
        system(
            [text("Extra A"), text("Extra B"), IMAGE],
            T0 + 4,
            sections={"identity": None},
            removed=["bash"],
            added=[tool("read", "Read a file (v2)", path="string")],
        ),
    )
    s("appendMessage", system("More instructions.", T0 + 5, removed=["nonexistent"]))
    s("appendMessage", system("", T0 + 6, sections={"identity": "<identity>back</identity>"}))
    u2 = s("appendMessage", user("q2", T0 + 7))
    s("appendMessage", say("a2", T0 + 8))
    s("appendCompaction", "summary", u2, 4000)
    s("appendMessage", user("q3", T0 + 9))
    return g.session(s)[0]


@read_case(
    "system_replace_flag",
    'a system message with "replace": true: the reference 1.6.0 ignores the flag '
    "(content joined, sections and tools merged); SPEC (seed) says pisession starts a fresh baseline instead",
)
def _system_replace(g: Ctx) -> str:
    s = Script("system replace flag")
    s(
        "appendMessage",
        system("Old base.", T0, sections={"a": "<a/>", "b": "<b/>"}, added=[READ_TOOL, BASH_TOOL]),
    )
    s("appendMessage", user("q1", T0 + 1))
    s("appendMessage", say("a1", T0 + 2))
    s("appendMessage", system("New base.", T0 + 3, sections={"c": "<c/>"}, added=[GREP_TOOL], replace=True))
    u2 = s("appendMessage", user("q2", T0 + 4))
    s("appendCompaction", "summary", u2, 100)
    s("appendMessage", user("q3", T0 + 5))
    return g.session(s)[0]


@read_case(
    "multiple_roots",
    "several roots: resetLeaf then append, branchWithSummary(null, ...) (a branch_summary "
    "root whose fromId is the old leaf), and a model_change root",
)
def _multiple_roots(g: Ctx) -> str:
    s = Script("multiple roots")
    s("appendMessage", user("first root", T0 + 1))
    s("appendMessage", say("a1", T0 + 2))
    s("resetLeaf")
    s("appendMessage", user("second root", T0 + 3))
    s("appendMessage", say("a2", T0 + 4))
    s("branchWithSummary", None, "summary of the second root")
    s("appendMessage", user("after the summary root", T0 + 5))
    s("resetLeaf")
    s("appendModelChange", "openai", "gpt-5")
    s("appendMessage", user("under a model change root", T0 + 6))
    return g.session(s)[0]


@read_case(
    "orphans",
    "entries whose parentId names no entry (and a child of such an orphan) are roots of the tree; "
    "their paths stop at the orphan",
)
def _orphans(g: Ctx) -> str:
    s = Script("base for orphans")
    u1 = s("appendMessage", user("q1", T0 + 1))
    a1 = s("appendMessage", say("a1", T0 + 2))
    s("appendMessage", user("q2", T0 + 3))
    body, ids = g.session(s)
    L = lines_of(body)
    L.append(J(msg("0afa0001", "ffff0000", T0 + 10, user("orphan", T0 + 10))))
    L.append(J(msg("0afa0002", "0afa0001", T0 + 11, say("child of orphan", T0 + 11))))
    L.append(
        J(entry("label", "0afa0003", "ffff0001", T0 + 12, targetId=ids[int(u1[1:])], label="orphan label"))
    )
    L.append(J(msg("0afa0004", ids[int(a1[1:])], T0 + 13, user("back on the tree", T0 + 13))))
    return join_lines(L)


@read_case(
    "forward_reference", "a child listed before its parent in the file (parents resolve by id, not by order)"
)
def _forward(g: Ctx) -> str:
    L = [header()]
    L.append(J(msg("f0000002", "f0000001", T0 + 2, say("child, written first", T0 + 2))))
    L.append(J(msg("f0000001", "f0000000", T0 + 1, user("parent", T0 + 1))))
    L.append(J(entry("model_change", "f0000000", None, T0, provider="anthropic", modelId="claude-opus-4-1")))
    L.append(J(msg("f0000003", "f0000002", T0 + 3, user("leaf", T0 + 3))))
    return join_lines(L)


@read_case(
    "duplicate_ids",
    "two entries share an id: the later one wins in the index (paths, getEntry), both stay in "
    "entries, and the tree holds the later node twice",
)
def _dup_ids(g: Ctx) -> str:
    L = [header()]
    L.append(J(msg("d0000001", None, T0 + 1, user("first d0000001", T0 + 1))))
    L.append(J(msg("d0000002", "d0000001", T0 + 2, say("child of d0000001", T0 + 2))))
    L.append(J(msg("d0000001", None, T0 + 3, user("second d0000001 (a root)", T0 + 3))))
    L.append(J(msg("d0000003", "d0000002", T0 + 4, user("grandchild", T0 + 4))))
    L.append(J(msg("d0000004", "d0000001", T0 + 5, say("child of the id", T0 + 5))))
    return join_lines(L)


NUMBERS_JSON = (
    '{"one":1.0,"tiny":1e-7,"small":0.000018,"huge":1e21,"negzero":-0,"negzero2":-0.0,'
    '"bigint":12345678901234567890,"upper":1E5,"denorm":5e-324,"max":1.7976931348623157e308,'
    '"below21":123456789012345680000,"e6":1e-6,"e6b":2.5e-6,"tenth":0.1,"sum":0.30000000000000004,'
    '"intlike":100,"exp300":1.5e300,"unsafe":9007199254740993,"negexp":-1e-7,"plusexp":1e+2,'
    '"inf":1e400,"neginf":-1e400}'
)


@read_case(
    "v1_linear",
    "a version-1 file (no ids): migration gives each entry an id and chains parentId in file "
    "order; firstKeptEntryIndex becomes firstKeptEntryId (valid index), is dropped (index 0 = header, index "
    "out of range), or stays (a string index); stale ids are overwritten; hookMessage becomes custom; numbers "
    "in details are rewritten in JS form; fileAfterOpen is the migrated rewrite",
)
def _v1(g: Ctx) -> str:
    L = [header("v1-session", version=1, cwd="/legacy")]
    e = lambda etype, ts, **f: J(entry(etype, None, None, ts, **f))  # noqa: E731
    L.append(e("message", T0 + 1, message=user("legacy question", T0 + 1)))
    L.append(
        '{"type":"message","timestamp":"'
        + iso(T0 + 2)
        + '","message":{"role":"assistant","content":[{"type":'
        '"text","text":"legacy answer"}],"provider":"anthropic","model":"claude-3-5-sonnet","usage":{"input":12,'
        '"output":3,"cacheRead":0,"cacheWrite":0,"totalTokens":15,"cost":{"input":0.000036,"output":0.000045,'
        '"cacheRead":0,"cacheWrite":0,"total":8.1e-5}},"stopReason":"stop","timestamp":' + str(T0 + 2) + "}}"
    )
    L.append(e("thinking_level_change", T0 + 3, thinkingLevel="high"))
    L.append(
        e(
            "message",
            T0 + 4,
            message={
                "role": "hookMessage",
                "customType": "legacy-hook",
                "content": "from a hook",
                "display": True,
                "timestamp": T0 + 4,
            },
        )
    )
    L.append(
        '{"type":"compaction","timestamp":"' + iso(T0 + 5) + '","summary":"points at the header",'
        '"firstKeptEntryIndex":0,"tokensBefore":100}'
    )
    L.append(
        '{"type":"compaction","timestamp":"' + iso(T0 + 6) + '","summary":"out of range",'
        '"firstKeptEntryIndex":99,"tokensBefore":200}'
    )
    L.append(
        '{"type":"compaction","timestamp":"' + iso(T0 + 7) + '","summary":"string index",'
        '"firstKeptEntryIndex":"3","tokensBefore":300}'
    )
    L.append(
        J(
            {
                "type": "message",
                "id": "stale-id",
                "parentId": "whatever",
                "timestamp": iso(T0 + 8),
                "message": user("had a stale id", T0 + 8),
            }
        )
    )
    L.append(
        '{"type":"compaction","timestamp":"' + iso(T0 + 9) + '","summary":"keeps from the assistant",'
        '"firstKeptEntryIndex":2,"tokensBefore":4000,"details":' + NUMBERS_JSON + "}"
    )
    L.append(e("message", T0 + 10, message=user("after the compaction", T0 + 10)))
    return join_lines(L)


@read_case("no_version", "a header without a version field is version 1: migrated to v3 and rewritten")
def _no_version(g: Ctx) -> str:
    L = [header("no-version", version=None, cwd="/legacy")]
    L.append(J(entry("message", None, None, T0 + 1, message=user("hello", T0 + 1))))
    L.append(
        '{"type":"message","timestamp":"'
        + iso(T0 + 2)
        + '","message":{"role":"assistant","content":[{"type":'
        '"text","text":"hi"}],"usage":{"cost":{"total":1.0e-5}},"timestamp":' + str(T0 + 2) + "}}"
    )
    return join_lines(L)


@read_case(
    "v2_migration_rewrite",
    "a version-2 file rewritten on load: hookMessage -> custom, malformed/blank lines "
    "dropped by the rewrite, duplicate keys (last value, first position), integer-like keys moved first "
    "(JS object order), a __proto__ key kept as data, 1e400 -> null, JS number formatting, unknown entry types "
    "and fields kept, extra header fields kept",
)
def _v2(g: Ctx) -> str:
    L = [
        '{"type":"session","version":2,"id":"v2-session","timestamp":"' + iso(T0) + '","cwd":"/project",'
        '"x-header-extra":{"b":1,"a":2}}'
    ]
    L.append(J(msg("e0000001", None, T0 + 1, user("v2 question", T0 + 1))))
    L.append(
        '{"type":"message","id":"e0000002","parentId":"e0000001","timestamp":"' + iso(T0 + 2) + '","message":'
        '{"role":"hookMessage","customType":"old-hook","content":"hook text","display":false,"details":'
        + NUMBERS_JSON
        + ',"timestamp":'
        + str(T0 + 2)
        + "}}"
    )
    L.append("{oops not json")
    L.append("")
    L.append("   ")
    L.append(
        '{"type":"message","id":"e0000003","parentId":"e0000002","timestamp":"' + iso(T0 + 3) + '","message":'
        '{"role":"user","content":"first","timestamp":1,"content":"second wins"},"type":"message"}'
    )
    L.append(
        '{"type":"custom","customType":"keys","data":{"b":1,"10":2,"2":3,"01":4,"-1":5,"1.5":6,'
        '"4294967294":7,"4294967295":8,"a":9,"0":10},"id":"e0000004","parentId":"e0000003","timestamp":"'
        + iso(T0 + 4)
        + '"}'
    )
    L.append(
        '{"type":"custom","customType":"proto","data":{"__proto__":{"polluted":true},"ok":1},"id":"e0000005",'
        '"parentId":"e0000004","timestamp":"' + iso(T0 + 5) + '"}'
    )
    L.append(
        '{"type":"x-future-entry","id":"e0000006","parentId":"e0000005","timestamp":"' + iso(T0 + 6) + '",'
        '"payload":{"nested":[1,2.50,{"z":null}]}}'
    )
    L.append(
        '{"type":"message","id":"e0000007","parentId":"e0000006","timestamp":"' + iso(T0 + 7) + '",'
        '"extraTop":true,"message":{"role":"user","content":"with extras","timestamp":7,"extraMsg":[1e2]}}'
    )
    return join_lines(L)


@read_case(
    "malformed_lines",
    "a v3 file with malformed JSON lines, blank lines and whitespace-only lines between "
    "entries: all skipped, the file is not rewritten",
)
def _malformed(g: Ctx) -> str:
    s = Script("base for malformed lines")
    s("appendMessage", user("q1", T0 + 1))
    s("appendMessage", say("a1", T0 + 2))
    s("appendMessage", user("q2", T0 + 3))
    s("appendMessage", say("a2", T0 + 4))
    L = lines_of(g.session(s)[0])
    junk = ["", "{bad json", "   \t  ", "]", '{"type":"message"', "", "}{"]
    out = [L[0], junk[0], L[1], junk[1], junk[2], L[2], junk[3], junk[4], L[3], junk[5], junk[6], L[4]]
    return join_lines(out)


@read_case(
    "non_object_lines",
    'lines holding valid JSON that is not an object: null, 0, false and "" are skipped '
    "(falsy), while 123, \"text\", true, [] and {} become 'entries' without id (reference quirk)",
)
def _non_object(g: Ctx) -> str:
    L = [header()]
    L.append(J(msg("n0000001", None, T0 + 1, user("q1", T0 + 1))))
    L += ["123", '"just a string"', "true", "[]", "null", "0", "false", '""', "{}"]
    L.append(J(msg("n0000002", "n0000001", T0 + 2, say("a1", T0 + 2))))
    return join_lines(L)


@read_case(
    "non_object_last_line",
    "the last parsed line is a number: the leaf id becomes undefined (null in the "
    "dump) and the active branch is empty",
)
def _non_object_last(g: Ctx) -> str:
    L = [header()]
    L.append(J(msg("n1000001", None, T0 + 1, user("q1", T0 + 1))))
    L.append(J(msg("n1000002", "n1000001", T0 + 2, say("a1", T0 + 2))))
    L.append("42")
    return join_lines(L)


def _deep(depth: int) -> Any:
    """A value nested ``depth`` levels (arrays and objects in turn), innermost a string."""
    value: Any = "bottom"
    for level in range(depth):
        value = [value] if level % 2 else {"k": value}
    return value


def _deep_json(depth: int) -> str:
    """_deep(depth) written as JSON.stringify would (without recursing in Python)."""
    opening, closing = [], []
    for level in reversed(range(depth)):
        opening.append("[" if level % 2 else '{"k":')
        closing.append("]" if level % 2 else "}")
    return "".join(opening) + '"bottom"' + "".join(reversed(closing))


def _deep_entry(eid: str | None, parent: str | None, ts: int, depth: int) -> str:
    head = J(entry("custom", eid, parent, ts, customType="deep"))[:-1]
    return head + ',"data":' + _deep_json(depth) + "}"


@read_case(
    "v1_unparsed_lines",
    "a version-1 file with lines pisession's line scanner cannot read but Pi keeps: an array "
    '["note",1] (gets an id JSON never shows; the next entry\'s parentId names it; a compaction\'s '
    "firstKeptEntryIndex pointing at it takes that id) and an entry nested 1,200 levels; the migration "
    "rewrite keeps both (fileAfterOpen)",
)
def _v1_unparsed(g: Ctx) -> str:
    L = [header("v1-unparsed", version=1, cwd="/legacy")]
    L.append(J(entry("message", None, None, T0 + 1, message=user("before", T0 + 1))))
    L.append('["note",1]')
    L.append(_deep_entry(None, None, T0 + 2, 1200))
    L.append(J(entry("message", None, None, T0 + 3, message=user("after", T0 + 3))))
    L.append(
        '{"type":"compaction","timestamp":"' + iso(T0 + 4) + '","summary":"keeps from the array",'
        '"firstKeptEntryIndex":2,"tokensBefore":100}'
    )
    return join_lines(L)


@read_case(
    "v2_unparsed_lines",
    "a version-2 file with JSON lines that are not objects (an array, 5, a string, true kept; "
    "0, null, false, \"\" dropped) and an entry nested 1,200 levels whose child follows it: the "
    "migration rewrite keeps what Pi keeps (fileAfterOpen)",
)
def _v2_unparsed(g: Ctx) -> str:
    L = [header("v2-unparsed", version=2)]
    L.append(J(msg("w0000001", None, T0 + 1, user("before", T0 + 1))))
    L += ['["note",1]', "5", '"a string"', "true", "0", "null", "false", '""']
    L.append(_deep_entry("w0000002", "w0000001", T0 + 2, 1200))
    L.append(J(msg("w0000003", "w0000002", T0 + 3, user("child of the deep entry", T0 + 3))))
    return join_lines(L)


@read_case(
    "v1_number_line",
    "a version-1 file holding a line that is a number: Pi's migration cannot give it an id "
    "(TypeError in strict mode), the open fails and the file is left as it was",
)
def _v1_number(g: Ctx) -> str:
    L = [header("v1-number", version=1)]
    L.append(J(entry("message", None, None, T0 + 1, message=user("before", T0 + 1))))
    L.append("5")
    L.append(J(entry("message", None, None, T0 + 2, message=user("after", T0 + 2))))
    return join_lines(L)


@read_case(
    "v2_deep_entries",
    "a version-2 file with entries nested 600 and 1,000 levels (deeper than pisession's "
    "recursive writer reaches, within its reader's limit): read and migrated like any other entry",
)
def _v2_deep(g: Ctx) -> str:
    L = [header("v2-deep", version=2)]
    L.append(J(msg("x0000001", None, T0 + 1, user("before", T0 + 1))))
    L.append(_deep_entry("x0000002", "x0000001", T0 + 2, 600))
    L.append(_deep_entry("x0000003", "x0000002", T0 + 3, 1000))
    L.append(J(msg("x0000004", "x0000003", T0 + 4, user("after", T0 + 4))))
    return join_lines(L)


@read_case(
    "json_edge_lines",
    "line-level JSON.parse edge cases: surrounding spaces/tabs (ok), a trailing \\r (ok), "
    "escaped key names (ok), a leading U+00A0 or U+FEFF (skipped), raw tab or \\x0b inside a string (skipped), "
    "trailing comma, comment, single quotes, two objects on a line (all skipped)",
)
def _json_edges(g: Ctx) -> str:
    L = [header()]
    ok = lambda i, p, m: J(msg(f"j000000{i}", p, T0 + i, m))  # noqa: E731
    L.append("  \t" + ok(1, None, user("padded line", T0 + 1)) + " \t")
    L.append(ok(2, "j0000001", say("line ending in CR", T0 + 2)) + "\r")
    L.append(
        '{"\\u0074ype":"message","id":"j0000003","parentId":"j0000002","timestamp":"'
        + iso(T0 + 3)
        + '","message":{"role":"user","content":"escaped key","timestamp":3}}'
    )
    L.append("\u00a0" + ok(4, "j0000003", user("nbsp prefix", T0 + 4)))
    L.append("\ufeff" + ok(5, "j0000003", user("bom prefix", T0 + 5)))
    L.append(ok(6, "j0000003", user("raw\ttab", T0 + 6)).replace("\\t", "\t"))
    L.append(ok(7, "j0000003", user("raw\x0bvt", T0 + 7)).replace("\\u000b", "\x0b"))
    L.append(ok(8, "j0000003", user("trailing comma", T0 + 8))[:-1] + ",}")
    L.append(ok(9, "j0000003", user("comment", T0 + 9)) + " // note")
    L.append("{'type':'message','id':'j0000010'}")
    L.append(ok(11, "j0000003", user("two", T0 + 11)) + ok(12, "j0000003", user("objects", T0 + 12)))
    L.append(J(msg("j0000013", "j0000003", T0 + 13, say("last good line", T0 + 13))))
    return join_lines(L)


@read_case(
    "truncated_last_line",
    "the last line is incomplete JSON without a final newline: it is skipped and load "
    "appends \\n to the file (fileAfterOpen)",
)
def _truncated(g: Ctx) -> str:
    s = Script("base for truncation")
    s("appendMessage", user("q1", T0 + 1))
    s("appendMessage", say("a1", T0 + 2))
    body = g.session(s)[0]
    return (
        body
        + '{"type":"message","id":"trunc001","parentId":"'
        + last_id(body)
        + '","timestamp":"2024-12-03T14:0'
    )


@read_case(
    "last_line_no_newline", "a complete last line without the final newline: parsed, and load appends \\n"
)
def _no_final_newline(g: Ctx) -> str:
    s = Script("no final newline")
    s("appendMessage", user("q1", T0 + 1))
    s("appendMessage", say("a1", T0 + 2))
    return g.session(s)[0].rstrip("\n")


@read_case(
    "unicode_separators",
    "text holding U+2028, U+2029, \\r, \\x0b, \\x0c, \\x85, \\r\\n, NUL and an emoji as Pi "
    "writes them (U+2028/2029/0085 raw, control characters escaped): lines split on \\n only",
)
def _unicode(g: Ctx) -> str:
    weird = "a\u2028b\u2029c\rd\x0be\x0cf\x85g\r\nh\x00i 😀 é"
    s = Script("unicode separators")
    s("appendMessage", user(weird, T0 + 1))
    s("appendMessage", assistant([text(weird), thinking("think\u2028ing")], T0 + 2))
    s("appendCustomEntry", "ext", {"key\u2028with\x85sep": weird})
    s("appendCustomMessageEntry", "ext", weird, True)
    s("appendSessionInfo", "name\u2028with\u2029seps\x85")
    return g.session(s)[0]


INVALID_UTF8 = [
    b"\xff",
    b"\xc3(",
    b"\xe2\x82",
    b"\xed\xa0\x80",
    b"\xf0\x9f\x98",
    b"\xc0\xaf",
    b"\xf4\x90\x80\x80",
    b"\xe2\x82\xac\x80",
    b"\xfe\xfe",
]


def _invalid_utf8_lines(version: int) -> bytes:
    out = [header("utf8-session", version=version).encode()]
    parent = None
    for i, bad in enumerate(INVALID_UTF8):
        eid = f"u800000{i}"
        line = J(msg(eid, parent, T0 + i, user(f"<BAD{i}>", T0 + i))).encode()
        out.append(line.replace(f"<BAD{i}>".encode(), b"[" + bad + b"]"))
        parent = eid
    line = J(entry("custom", "u8000099", parent, T0 + 99, customType="bad-key", data={"k<X>": 1})).encode()
    out.append(line.replace(b"<X>", b"\xff\xfe"))
    return b"".join(x + b"\n" for x in out)


@read_case(
    "invalid_utf8",
    "invalid UTF-8 byte sequences inside strings (and a key) of a v3 file decode to U+FFFD "
    "(WHATWG rules: one U+FFFD per maximal subpart); the file is not rewritten",
)
def _utf8(g: Ctx) -> bytes:
    return _invalid_utf8_lines(3)


@read_case("invalid_utf8_v2", "the same invalid UTF-8 in a v2 file: the migration rewrite writes U+FFFD")
def _utf8_v2(g: Ctx) -> bytes:
    return _invalid_utf8_lines(2)


@read_case(
    "lone_surrogate",
    "escaped lone surrogates (\\ud800, \\udc00) and an escaped pair in a v2 file: the rewrite "
    "keeps lone surrogates escaped and writes the pair as a raw emoji",
)
def _lone_surrogate(g: Ctx) -> str:
    L = [header("surrogates", version=2)]
    L.append(
        '{"type":"message","id":"5a000001","parentId":null,"timestamp":"'
        + iso(T0 + 1)
        + '","message":{"role":'
        '"user","content":"lone \\ud800 high, lone \\udc00 low, pair \\ud83d\\ude00, reversed \\udc00\\ud800",'
        '"timestamp":1}}'
    )
    L.append(
        '{"type":"custom","customType":"k","data":{"key\\ud800":"v"},"id":"5a000002","parentId":"5a000001",'
        '"timestamp":"' + iso(T0 + 2) + '"}'
    )
    return join_lines(L)


@read_case(
    "nan_literal",
    "lines holding NaN, Infinity or -Infinity literals are not JSON and are skipped (Python's "
    "json accepts them); an entry whose parent was such a line is an orphan",
)
def _nan(g: Ctx) -> str:
    L = [header()]
    L.append(J(msg("aa000001", None, T0 + 1, user("q1", T0 + 1))))
    L.append(
        '{"type":"custom","customType":"nan","data":NaN,"id":"aa000002","parentId":"aa000001","timestamp":"'
        + iso(T0 + 2)
        + '"}'
    )
    L.append(
        '{"type":"custom","customType":"inf","data":{"x":Infinity},"id":"aa000003","parentId":"aa000001",'
        '"timestamp":"' + iso(T0 + 3) + '"}'
    )
    L.append(
        '{"type":"custom","customType":"ninf","data":[-Infinity],"id":"aa000004","parentId":"aa000001",'
        '"timestamp":"' + iso(T0 + 4) + '"}'
    )
    L.append(J(msg("aa000005", "aa000002", T0 + 5, say("child of the NaN line", T0 + 5))))
    L.append(J(msg("aa000006", "aa000001", T0 + 6, say("a1", T0 + 6))))
    return join_lines(L)


@read_case(
    "duplicate_keys",
    "duplicate keys in v3 lines: the last value wins (id, type, nested content); the file is not rewritten",
)
def _dup_keys(g: Ctx) -> str:
    L = [header()]
    L.append(
        '{"type":"message","id":"dk-first","parentId":null,"timestamp":"' + iso(T0 + 1) + '","id":"dk000001",'
        '"message":{"role":"user","content":"one","content":"two","timestamp":1}}'
    )
    L.append(
        '{"type":"custom","id":"dk000002","parentId":"dk000001","timestamp":"'
        + iso(T0 + 2)
        + '","type":"message",'
        '"message":{"role":"assistant","content":[{"type":"text","text":"typed twice"}],"provider":"p",'
        '"model":"m","usage":{},"stopReason":"stop","timestamp":2}}'
    )
    L.append(
        '{"type":"message","id":"dk000003","parentId":"dk-first","parentId":"dk000002","timestamp":"'
        + iso(T0 + 3)
        + '","message":{"role":"user","content":"parent given twice","timestamp":3}}'
    )
    return join_lines(L)


@read_case(
    "unknown_types_fields",
    "unknown entry types (in the tree, out of context), unknown fields on known entry "
    "types and on messages, an unknown content block type",
)
def _unknown(g: Ctx) -> str:
    s = Script("base for unknown types")
    s("appendMessage", user("q1", T0 + 1))
    s("appendMessage", say("a1", T0 + 2))
    body = g.session(s)[0]
    L = lines_of(body)
    p = last_id(body)
    L.append(
        '{"type":"x-future-entry","id":"0u000001","parentId":"'
        + p
        + '","timestamp":"'
        + iso(T0 + 10)
        + '","payload":{"list":[1,2,3],"flag":true}}'
    )
    L.append(
        '{"type":"message","id":"0u000002","parentId":"0u000001","timestamp":"'
        + iso(T0 + 11)
        + '","meta":{"source":"import"},"message":{"role":"assistant","content":[{"type":"x-citation","url":'
        '"https://example.com"},{"type":"text","text":"cited"}],"provider":"p","model":"m","usage":'
        + J(usage(1, 1))
        + ',"stopReason":"stop","timestamp":11,"x-extra":1}}'
    )
    L.append(
        '{"type":"model_change","id":"0u000003","parentId":"0u000002","timestamp":"'
        + iso(T0 + 12)
        + '","provider":"openai","modelId":"gpt-5","reason":"user request"}'
    )
    L.append(
        '{"type":"compaction","id":"0u000004","parentId":"0u000003","timestamp":"'
        + iso(T0 + 13)
        + '","summary":"s","firstKeptEntryId":"0u000002","tokensBefore":5,"x-compactor":"v9"}'
    )
    L.append(
        '{"type":"session_info","id":"0u000005","parentId":"0u000004","timestamp":"'
        + iso(T0 + 14)
        + '","name":"named","color":"blue"}'
    )
    return join_lines(L)


@read_case(
    "unparsable_timestamps",
    "entry timestamps that are not dates ('not a date', '', missing, null, a number): "
    "tree children sort with NaN comparisons (treated as equal), and ms(...) of a custom_message, "
    "branch_summary and compaction is NaN, written null in context",
)
def _bad_ts(g: Ctx) -> str:
    L = [header()]
    L.append(J(msg("75000000", None, T0, user("root", T0))))
    kids: list[tuple[str, Any]] = [
        ("75000001", "not a date"),
        ("75000002", iso(T0 + 5000)),
        ("75000003", ""),
        ("75000004", None),
        ("75000005", 12345),
        ("75000006", iso(T0 + 1000)),
        ("75000007", "missing"),
    ]
    for eid, ts in kids:
        e = {
            "type": "custom_message",
            "customType": "ts",
            "content": f"ts={ts!r}",
            "display": True,
            "id": eid,
            "parentId": "75000000",
        }
        if ts != "missing":
            e["timestamp"] = ts
        L.append(J(e))
    L.append(
        J(
            {
                "type": "branch_summary",
                "id": "75000008",
                "parentId": "75000001",
                "timestamp": "garbage",
                "fromId": "75000000",
                "summary": "branch summary with a bad timestamp",
            }
        )
    )
    L.append(
        J(
            {
                "type": "compaction",
                "id": "75000009",
                "parentId": "75000008",
                "timestamp": "also garbage",
                "summary": "compaction with a bad timestamp",
                "firstKeptEntryId": "75000001",
                "tokensBefore": 10,
            }
        )
    )
    return join_lines(L)


@read_case(
    "timestamp_formats",
    "parseable non-canonical timestamps (no ms, 1 or 6 fraction digits, an offset, "
    "date only, no zone = local time (the oracle runs with TZ=UTC), RFC 1123): tree order and ms() values "
    "follow JavaScript's Date parsing",
)
def _ts_formats(g: Ctx) -> str:
    L = [header()]
    L.append(J(msg("7f000000", None, T0, user("root", T0))))
    forms = [
        "2024-12-03T14:00:05Z",
        "2024-12-03T14:00:04.5Z",
        "2024-12-03T14:00:03.123456Z",
        "2024-12-03T16:00:02+02:00",
        "2024-12-03",
        "2024-12-03T14:00:01",
        "Tue, 03 Dec 2024 14:00:06 GMT",
        "2024-12-03T14:00:00.000+00:00",
    ]
    for i, ts in enumerate(forms):
        L.append(
            J(
                {
                    "type": "custom_message",
                    "customType": "ts",
                    "content": ts,
                    "display": True,
                    "id": f"7f00000{i + 1}",
                    "parentId": "7f000000",
                    "timestamp": ts,
                }
            )
        )
    return join_lines(L)


@read_case(
    "tree_child_order",
    "children sorted by timestamp ascending whatever their file order, ties keep file order, at two levels",
)
def _child_order(g: Ctx) -> str:
    L = [header()]
    L.append(J(msg("0c000000", None, T0, user("root", T0))))
    for eid, off in [
        ("0c000001", 3000),
        ("0c000002", 1000),
        ("0c000003", 2000),
        ("0c000004", 1000),
        ("0c000005", 500),
    ]:
        L.append(J(msg(eid, "0c000000", T0 + off, say(eid, T0 + off))))
    for eid, off in [("0c000011", 9000), ("0c000012", 7000), ("0c000013", 7000), ("0c000014", 8000)]:
        L.append(J(msg(eid, "0c000003", T0 + off, user(eid, T0 + off))))
    return join_lines(L)


@read_case(
    "not_a_session", "the first parsed line is not a session header: open fails and the file is untouched"
)
def _not_session(g: Ctx) -> str:
    return join_lines([J(msg("bad00001", None, T0, user("no header first", T0))), header()])


@read_case(
    "header_after_malformed",
    "malformed and blank lines before the header are skipped: the header is the "
    "first parsed line, the file is a session",
)
def _header_after_junk(g: Ctx) -> str:
    return join_lines(["{bad", "", "  ", header(), J(msg("ha000001", None, T0 + 1, user("q", T0 + 1)))])


@read_case("header_id_not_string", "a session line whose id is a number is not a header: open fails")
def _header_id_num(g: Ctx) -> str:
    return join_lines(
        [
            '{"type":"session","version":3,"id":42,"timestamp":"' + iso(T0) + '","cwd":"/project"}',
            J(msg("hn000001", None, T0 + 1, user("q", T0 + 1))),
        ]
    )


@read_case(
    "bom_header",
    "a UTF-8 BOM before the header makes the first line unparsable; the first parsed line is then "
    "a message, so open fails",
)
def _bom(g: Ctx) -> bytes:
    return (
        b"\xef\xbb\xbf" + join_lines([header(), J(msg("bo000001", None, T0 + 1, user("q", T0 + 1)))]).encode()
    )


@read_case(
    "empty_file",
    "an empty file: open writes a fresh header into it ($NEW_ID/$NEW_TIMESTAMP; cwd is the "
    "oracle's working directory '/')",
)
def _empty(g: Ctx) -> str:
    return ""


@read_case("header_only", "a file holding only a header: no entries, leaf null")
def _header_only(g: Ctx) -> str:
    return join_lines([header()])


@read_case(
    "whitespace_only_file",
    "a non-empty file of blank lines: no parsed entries, but its size is not 0, so open "
    "fails instead of writing a header",
)
def _ws_only(g: Ctx) -> str:
    return "\n  \n\t\n"


@read_case(
    "branched_labels",
    "a session branched three ways with labels on each branch, one label moved to another "
    "entry, one label cleared, a label on a label entry",
)
def _branched_labels(g: Ctx) -> str:
    s = Script("branched labels")
    u1 = s("appendMessage", user("root question", T0 + 1))
    a1 = s("appendMessage", say("root answer", T0 + 2))
    s("appendLabelChange", u1, "root-q")
    u2 = s("appendMessage", user("main follow-up", T0 + 3))
    a2 = s("appendMessage", say("main answer", T0 + 4))
    s("appendLabelChange", a2, "main-answer")
    s("branch", a1)
    s("appendMessage", user("alternative follow-up", T0 + 5))
    a3 = s("appendMessage", say("alternative answer", T0 + 6))
    s("appendLabelChange", a3, "alt-answer")
    lab = s("appendLabelChange", u1, "start")
    s("appendLabelChange", lab, "label-on-label")
    s("branch", u2)
    s("appendMessage", say("second answer to the main follow-up", T0 + 7))
    s("appendLabelChange", a2, "")
    s("appendLabelChange", a1, "checkpoint")
    return g.session(s)[0]


@read_case(
    "future_version",
    "a header with version 4 (newer than the reader): no migration, no rewrite, hookMessage kept as is",
)
def _future(g: Ctx) -> str:
    L = [header("future", version=4)]
    L.append(
        J(
            msg(
                "fv000001",
                None,
                T0 + 1,
                {
                    "role": "hookMessage",
                    "customType": "h",
                    "content": "kept",
                    "display": True,
                    "timestamp": 1,
                },
            )
        )
    )
    return join_lines(L)


@read_case(
    "header_version_string",
    'a header whose version is the string "2": JavaScript compares it as a number, '
    "so only the v2->v3 step runs and the header gets version 3",
)
def _version_string(g: Ctx) -> str:
    L = ['{"type":"session","version":"2","id":"vs","timestamp":"' + iso(T0) + '","cwd":"/project"}']
    L.append(
        J(
            msg(
                "vs000001",
                None,
                T0 + 1,
                {
                    "role": "hookMessage",
                    "customType": "h",
                    "content": "renamed",
                    "display": True,
                    "timestamp": 1,
                },
            )
        )
    )
    return join_lines(L)


@read_case(
    "label_edges",
    'labels as a hand-edited file may hold them: a missing target, "" on an unlabeled entry, '
    "no label field, set/clear/set again, a number label (truthy, kept), 0 and false (clear), a label on a "
    "label entry",
)
def _label_edges(g: Ctx) -> str:
    L = [header()]
    L.append(J(msg("1a000001", None, T0 + 1, user("q", T0 + 1))))
    L.append(J(msg("1a000002", "1a000001", T0 + 2, say("a", T0 + 2))))
    labels = [
        ("1a000010", "nope", "for a missing entry"),
        ("1a000011", "1a000002", ""),
        ("1a000012", "1a000002", None),
        ("1a000013", "1a000001", "first"),
        ("1a000014", "1a000001", ""),
        ("1a000015", "1a000001", "again"),
        ("1a000016", "1a000002", 5),
        ("1a000017", "1a000010", "on a label"),
        ("1a000018", "1a000002", 0),
        ("1a000019", "1a000001", False),
        ("1a000020", "1a000001", "final"),
    ]
    parent = "1a000002"
    for i, (eid, target, label) in enumerate(labels):
        e = entry("label", eid, parent, T0 + 10 + i, targetId=target)
        if label is not None:
            e["label"] = label
        L.append(J(e))
        parent = eid
    L.append(J(entry("label", "1a000030", parent, T0 + 40, targetId="1a000002", label="answer")))
    return join_lines(L)


@read_case(
    "branch_summary_edges",
    "branch_summary entries: empty summary (no message), missing summary, fromId "
    "'root', missing fromId, with details/usage/fromHook",
)
def _bs_edges(g: Ctx) -> str:
    L = [header()]
    L.append(J(msg("b5000001", None, T0 + 1, user("q", T0 + 1))))
    rows = [
        dict(fromId="b5000001", summary=""),
        dict(fromId="b5000001"),
        dict(fromId="root", summary="from root"),
        dict(summary="no fromId"),
        dict(fromId="b5000001", summary="full", details={"files": ["a"]}, usage=usage(10, 5), fromHook=True),
    ]
    parent = "b5000001"
    for i, f in enumerate(rows):
        eid = f"b500001{i}"
        L.append(J(entry("branch_summary", eid, parent, T0 + 10 + i, **f)))
        parent = eid
    return join_lines(L)


@read_case(
    "custom_message_edges",
    "custom_message entries: content missing (-> []), empty string, display missing, "
    "details null, customType missing",
)
def _cm_edges(g: Ctx) -> str:
    L = [header()]
    L.append(J(msg("cm000001", None, T0 + 1, user("q", T0 + 1))))
    rows = [
        {"customType": "a", "display": True},
        {"customType": "b", "content": "", "display": False},
        {"customType": "c", "content": "no display"},
        {"customType": "d", "content": [text("t")], "display": True, "details": None},
        {"content": "no type", "display": True},
    ]
    parent = "cm000001"
    for i, f in enumerate(rows):
        eid = f"cm00001{i}"
        L.append(
            J({"type": "custom_message", **f, "id": eid, "parentId": parent, "timestamp": iso(T0 + 10 + i)})
        )
        parent = eid
    return join_lines(L)


@read_case(
    "crlf_line_endings",
    "a v3 file with \\r\\n line endings: each line parses (JSON allows the trailing \\r), "
    "the file is not rewritten",
)
def _crlf(g: Ctx) -> str:
    s = Script("crlf")
    s("appendMessage", user("q1", T0 + 1))
    s("appendMessage", say("a1", T0 + 2))
    return g.session(s)[0].replace("\n", "\r\n")


# --- no oracle: the reference loops forever or crashes on these; pisession defines its own behaviour ---


@read_case(
    "cycle",
    "parentId cycle a -> b -> a beside a normal root (the reference loops forever walking it)",
    NO_ORACLE_CASES,
)
def _cycle(g: Ctx) -> str:
    L = [header()]
    L.append(J(msg("cy000001", None, T0 + 1, user("root", T0 + 1))))
    L.append(J(msg("cy00000a", "cy00000b", T0 + 2, user("a", T0 + 2))))
    L.append(J(msg("cy00000b", "cy00000a", T0 + 3, say("b", T0 + 3))))
    L.append(J(msg("cy00000c", "cy00000b", T0 + 4, user("hangs below the cycle", T0 + 4))))
    L.append(J(msg("cy000002", "cy000001", T0 + 5, say("leaf on the normal root", T0 + 5))))
    return join_lines(L)


@read_case(
    "self_parent",
    "an entry whose parentId is its own id: getTree lists it as a root, but walking its path "
    "loops forever in the reference",
    NO_ORACLE_CASES,
)
def _self_parent(g: Ctx) -> str:
    L = [header()]
    L.append(J(msg("sp000001", "sp000001", T0 + 1, user("my own parent", T0 + 1))))
    L.append(J(msg("sp000002", "sp000001", T0 + 2, say("child", T0 + 2))))
    return join_lines(L)


@read_case(
    "context_edit_missing_replacement",
    "a context_edit without a replacement field: the reference throws "
    "TypeError (reading 'content' of undefined) while building any context that includes it",
    NO_ORACLE_CASES,
)
def _edit_missing_repl(g: Ctx) -> str:
    L = [header()]
    L.append(J(msg("mr000001", None, T0 + 1, user("q", T0 + 1))))
    L.append(J(entry("context_edit", "mr000002", "mr000001", T0 + 2, targetId="mr000001")))
    return join_lines(L)


# --------------------------------------------------------------------------------------------
# B. Op scripts: ops/<name>.json + golden/ops/<name>.json (and <name>.memory.json)
# --------------------------------------------------------------------------------------------

OPS_SCRIPTS: dict[str, tuple[Callable[[], Script], bool]] = {}  # name -> (builder, also in memory)


def op_script(name: str, memory: bool = False) -> Callable[[Callable[[], Script]], Callable[[], Script]]:
    def deco(fn: Callable[[], Script]) -> Callable[[], Script]:
        OPS_SCRIPTS[name] = (fn, memory)
        return fn

    return deco


@op_script("messages_all_roles", memory=True)
def _ops_roles() -> Script:
    s = Script("appendMessage with every role, then the manager's plain reads")
    s("appendMessage", system("You are Pi.", T0, sections={"env": "<env/>"}, added=[READ_TOOL]))
    s("appendMessage", user("string content", T0 + 1))
    s("appendMessage", user([text("blocks"), IMAGE], T0 + 2))
    a = s(
        "appendMessage",
        assistant(
            [
                thinking("plan", thinkingSignature="sig"),
                text("answer"),
                tool_call("call_1", "read", {"path": "README.md"}),
            ],
            T0 + 3,
            stop="toolUse",
            u=usage(1000, 200, 300, 40, cacheWrite1h=10, reasoning=50),
        ),
    )
    s("appendMessage", tool_result("call_1", "read", "# Readme", T0 + 4))
    s("appendMessage", bash_exec("ls", "a b", T0 + 5))
    s(
        "appendMessage",
        {
            "role": "custom",
            "customType": "ext",
            "content": "custom role",
            "display": False,
            "timestamp": T0 + 6,
        },
    )
    s("appendMessage", {"role": "branchSummary", "summary": "bs", "fromId": "x", "timestamp": T0 + 7})
    s("appendMessage", {"role": "compactionSummary", "summary": "cs", "tokensBefore": 9, "timestamp": T0 + 8})
    s("appendMessage", {"role": "x-unknown", "anything": [1, 2], "timestamp": T0 + 9})
    s("appendMessage", user(None, T0 + 10))
    s("getEntry", a)
    s("getEntry", "nope")
    s("getLeafEntry")
    s("getLeafId")
    s("getEntryCount")
    s("getHeader")
    s("getSessionId")
    s("getCwd")
    s("isPersisted")
    s("getSessionDir")
    s("usesDefaultSessionDir")
    s("getSessionFile")
    s("getChildren", a)
    s("buildContextEntries")
    s("buildSessionContext")
    return s


@op_script("settings_and_usage")
def _ops_settings() -> Script:
    s = Script("thinking level / model changes and usage entries (note given, empty, null, omitted)")
    s("appendThinkingLevelChange", "high")
    s("appendModelChange", "openai", "gpt-5")
    s("appendUsage", "compaction", "anthropic", "claude-haiku-4-5", usage(5000, 300), "auto compaction")
    s("appendUsage", "branch_summary", "anthropic", "claude-haiku-4-5", usage(900, 100))
    s("appendUsage", "x-ext-kind", "openai", "gpt-5-mini", usage(10, 1), "")
    s("appendUsage", "x-ext-kind", "openai", "gpt-5-mini", usage(10, 1), None)
    s("buildSessionContext")
    s("appendMessage", user("hi", T0 + 1))
    s("appendMessage", say("hello", T0 + 2, provider="anthropic", model="claude-sonnet-4-5"))
    s("buildSessionContext")
    s("appendModelChange", "google", "gemini-2.5-pro")
    s("appendThinkingLevelChange", "off")
    s("buildSessionContext")
    s("getLeafEntry")
    return s


@op_script("persist_setup_only")
def _ops_setup_only() -> Script:
    s = Script("only setup entries (and roles that are not user/assistant): no file is written")
    s("appendModelChange", "anthropic", "claude-sonnet-4-5")
    s("appendThinkingLevelChange", "low")
    s("appendMessage", system("You are Pi.", T0, added=[READ_TOOL]))
    s("appendCustomEntry", "ext.state", {"ready": True})
    s("appendCustomMessageEntry", "ext.note", "note", True)
    s("appendMessage", tool_result("c", "read", "x", T0 + 1))
    s("appendMessage", bash_exec("ls", "", T0 + 2))
    s(
        "appendMessage",
        {"role": "custom", "customType": "ext", "content": "c", "display": True, "timestamp": T0 + 3},
    )
    s("appendSessionInfo", "named but empty")
    s("getSessionFile")
    return s


@op_script("persist_first_user")
def _ops_first_user() -> Script:
    s = Script(
        "setup entries stay in memory; the first user message writes the file with all entries, later ones "
        "append"
    )
    s("appendModelChange", "anthropic", "claude-sonnet-4-5")
    s("appendThinkingLevelChange", "medium")
    s("appendMessage", system("You are Pi.", T0, added=[READ_TOOL]))
    s("appendMessage", user("first user message", T0 + 1))
    s("appendMessage", say("reply", T0 + 2))
    s("appendLabelChange", "$3", "first")
    return s


@op_script("persist_assistant_first")
def _ops_assistant_first() -> Script:
    s = Script("a script starting with an assistant message: the file is written at once")
    s("appendMessage", say("I speak first", T0 + 1))
    s("appendMessage", user("ok", T0 + 2))
    return s


@op_script("compaction_variants")
def _ops_compaction() -> Script:
    s = Script(
        "appendCompaction with an id, with null (retain none), with details/fromHook/usage given, given as "
        "null, omitted, undefined in the middle, a dangling id; no system message on the path so no "
        "systemMessage"
    )
    undef = s.undefined()
    u1 = s("appendMessage", user("q1", T0 + 1))
    s("appendMessage", say("a1", T0 + 2))
    s("appendCompaction", "kept from q1", u1, 1000)
    u2 = s("appendMessage", user("q2", T0 + 3))
    s("appendCompaction", "retain none", None, 2000)
    s(
        "appendCompaction",
        "everything given",
        u2,
        3000,
        {"readFiles": ["a.py"], "modifiedFiles": []},
        True,
        usage(3000, 200),
    )
    s("appendCompaction", "nulls given", u2, 4000, None, None, None)
    s("appendCompaction", "undefined details, fromHook false", u2, 5000, undef, False)
    s("appendCompaction", "dangling", "deadbeef", 6000)
    s("appendCompaction", "", u2, 0)
    s("buildContextEntries")
    s("buildSessionContext")
    return s


@op_script("compaction_system_messages")
def _ops_compaction_system() -> Script:
    s = Script(
        "systemMessage on compactions: replay of the path's system messages (tools, sections, joined "
        "content), carried over from an earlier compaction; absent for a system message without timestamp "
        "and no tools; content '' when every tool was removed"
    )
    s("appendMessage", system("Base.", T0, sections={"env": "<env>1</env>"}, added=[READ_TOOL, BASH_TOOL]))
    u1 = s("appendMessage", user("q1", T0 + 1))
    s("appendMessage", say("a1", T0 + 2))
    s("appendCompaction", "first", u1, 100)
    s(
        "appendMessage",
        system(
            [text("Block one"), text("Block two")],
            T0 + 3,
            sections={"env": "<env>2</env>"},
            removed=["bash"],
            added=[GREP_TOOL],
        ),
    )
    u2 = s("appendMessage", user("q2", T0 + 4))
    s("appendCompaction", "second", u2, 200)
    s("resetLeaf")
    s("appendMessage", {"role": "system", "content": "no timestamp"})
    u3 = s("appendMessage", user("q3", T0 + 5))
    s("appendCompaction", "third: replay undefined", u3, 300)
    s("resetLeaf")
    s("appendMessage", system("", T0 + 6, added=[READ_TOOL]))
    s("appendMessage", system("", T0 + 7, removed=["read"]))
    u4 = s("appendMessage", user("q4", T0 + 8))
    s("appendCompaction", "fourth: tools all removed", u4, 400)
    s("buildSessionContext")
    return s


@op_script("system_replace_flag")
def _ops_replace() -> Script:
    s = Script("a system message with replace: true, then a compaction: the reference ignores the flag")
    s("appendMessage", system("Old base.", T0, sections={"a": "<a/>"}, added=[READ_TOOL]))
    s("appendMessage", user("q1", T0 + 1))
    s("appendMessage", system("New base.", T0 + 2, sections={"b": "<b/>"}, added=[GREP_TOOL], replace=True))
    u2 = s("appendMessage", user("q2", T0 + 3))
    s("appendCompaction", "summary", u2, 10)
    s("buildSessionContext")
    return s


@op_script("custom_entries")
def _ops_custom() -> Script:
    s = Script(
        "appendCustomEntry('x') vs ('x', null) vs ('x', data) incl. falsy data, JS number formatting and "
        "integer-like keys; appendCustomMessageEntry with string/blocks, details given/null/omitted, display "
        "omitted"
    )
    s("appendMessage", user("start", T0 + 1))
    s("appendCustomEntry", "x")
    s("appendCustomEntry", "x", None)
    s("appendCustomEntry", "x", {"b": 1, "2": "two", "1": "one", "a": [1, 2]})
    s("appendCustomEntry", "x", "string data")
    s("appendCustomEntry", "x", 0)
    s("appendCustomEntry", "x", False)
    s(
        "appendCustomEntry",
        "numbers",
        {
            "float_int": 5.0,
            "tiny": 1e-7,
            "small": 0.000018,
            "huge": 1e21,
            "negzero": -0.0,
            "bigint": 12345678901234567890,
            "unsafe": 9007199254740993,
            "tenth": 0.1,
            "e6": 2.5e-6,
        },
    )
    s("appendCustomMessageEntry", "note", "string content", True)
    s("appendCustomMessageEntry", "note", [text("block"), IMAGE], False, {"k": [1, 2]})
    s("appendCustomMessageEntry", "note", "details null", True, None)
    s("appendCustomMessageEntry", "note", "display omitted")
    s("buildSessionContext")
    return s


@op_script("session_info")
def _ops_session_info() -> Script:
    s = Script("appendSessionInfo sanitising (runs of \\r/\\n -> one space, trimmed) and getSessionName")
    s("appendMessage", user("hi", T0 + 1))
    s("getSessionName")
    s("appendSessionInfo", "a\r\n\nb  ")
    s("getSessionName")
    s("appendSessionInfo", "  ")
    s("getSessionName")
    s("appendSessionInfo", "\n\nTitle\r")
    s("getSessionName")
    s("appendSessionInfo", "x\u2028y\ttab\x85")
    s("getSessionName")
    s("appendSessionInfo", "line1\rline2\n\rline3")
    s("getSessionName")
    s("appendSessionInfo", "")
    s("getSessionName")
    # JavaScript's trim() and Python's str.strip() disagree on U+FEFF (JS strips), \x1c-\x1f and \x85 (JS keeps)
    s("appendSessionInfo", "\ufeffbom\ufeff")
    s("getSessionName")
    s("appendSessionInfo", "\x1cfs\x1f")
    s("getSessionName")
    s("appendSessionInfo", "\u00a0nbsp\u3000\u2028")
    s("getSessionName")
    s("appendSessionInfo", "\x85nel\x85")
    s("getSessionName")
    return s


@op_script("context_edit_errors")
def _ops_edit_errors() -> Script:
    s = Script(
        "appendContextEdit failures, checked in order: replacement shape, target exists, target on the "
        "active branch, target editable"
    )
    u1 = s("appendMessage", user("q1", T0 + 1))
    a1 = s("appendMessage", say("a1", T0 + 2))
    mc = s("appendModelChange", "openai", "gpt-5")
    sm = s("appendMessage", system("sys", T0 + 3))
    ce = s("appendCustomEntry", "ext", {"a": 1})
    lb = s("appendLabelChange", u1, "l")
    bx = s("appendMessage", bash_exec("ls", "", T0 + 4))
    cr = s(
        "appendMessage",
        {"role": "custom", "customType": "c", "content": "x", "display": True, "timestamp": 1},
    )
    bs = s("appendMessage", {"role": "branchSummary", "summary": "s", "fromId": "x", "timestamp": 1})
    si = s("appendSessionInfo", "name")
    us = s("appendUsage", "compaction", "p", "m", usage(1, 1))
    ok = s("appendContextEdit", u1, {"content": "valid edit"})
    cp = s("appendCompaction", "c", u1, 10)
    bsum = s("branchWithSummary", cp, "branch summary")
    for bad in ({}, {"content": 5}, "str", 5, {"content": None}, [], True, {"Content": "x"}):
        s("appendContextEdit", u1, bad)
    s("appendContextEdit", "nope", {})
    s("appendContextEdit", "nope", {"content": "x"})
    s("appendContextEdit", "nope", None)
    for target in (mc, sm, ce, lb, bx, cr, bs, si, cp, bsum, ok):
        s("appendContextEdit", target, {"content": "x"})
    s("appendContextEdit", si, None)
    del us
    s("branch", u1)
    s("appendMessage", user("side", T0 + 5))
    s("appendContextEdit", a1, {"content": "x"})
    s("appendContextEdit", mc, {"content": "x"})
    s("appendContextEdit", a1, {})
    s("getEntryCount")
    return s


@op_script("context_edit_valid")
def _ops_edit_valid() -> Script:
    s = Script(
        "valid appendContextEdit calls: strings on user/assistant/toolResult/custom_message (assistant and "
        "toolResult normalized to text blocks), blocks, null, extra fields, empty and non-block arrays, "
        "several edits for one target, then the projection"
    )
    u1 = s("appendMessage", user("q1", T0 + 1))
    a1 = s(
        "appendMessage",
        assistant([thinking("t"), tool_call("c1", "read", {"path": "x"})], T0 + 2, stop="toolUse"),
    )
    t1 = s("appendMessage", tool_result("c1", "read", "long body", T0 + 3))
    a2 = s("appendMessage", say("a2", T0 + 4))
    cm = s("appendCustomMessageEntry", "ext", [text("custom")], True)
    s("appendContextEdit", u1, {"content": "user string"})
    s("appendContextEdit", a1, {"content": "assistant string"})
    s("appendContextEdit", t1, {"content": "tool string"})
    s("appendContextEdit", cm, {"content": "custom string"})
    s("appendContextEdit", a2, {"content": [text("assistant blocks")]})
    s("appendContextEdit", u1, {"content": [text("user blocks"), IMAGE]})
    s("appendContextEdit", a2, {"content": "with extra", "extra": 1})
    s("appendContextEdit", u1, {"content": "user with extra", "extra": 1})
    s("appendContextEdit", t1, {"content": []})
    s("appendContextEdit", cm, {"content": [1, "x"]})
    s("appendContextEdit", a2, None)
    s("buildSessionProjection")
    s("buildSessionContext")
    return s


@op_script("labels", memory=True)
def _ops_labels() -> Script:
    s = Script(
        "appendLabelChange: unknown target fails; set, clear by omitting the label, by '' and by null; "
        "labels on a label and on another branch; getLabel and getTree"
    )
    s("appendLabelChange", "nope", "x")
    u1 = s("appendMessage", user("q1", T0 + 1))
    a1 = s("appendMessage", say("a1", T0 + 2))
    s("appendLabelChange", u1, "start")
    s("getLabel", u1)
    s("appendLabelChange", u1)
    s("getLabel", u1)
    l2 = s("appendLabelChange", u1, "again")
    s("appendLabelChange", u1, "")
    s("getLabel", u1)
    s("appendLabelChange", a1, "answer")
    s("appendLabelChange", a1, None)
    s("getLabel", a1)
    s("appendLabelChange", l2, "label on a label")
    s("branch", u1)
    s("appendMessage", say("other answer", T0 + 3))
    s("appendLabelChange", a1, "set from another branch")
    s("getLabel", a1)
    s("getLabel", "nope")
    s("getTree")
    return s


@op_script("branching")
def _ops_branching() -> Script:
    s = Script(
        "branch (unknown id fails), resetLeaf then append (a new root), getChildren/getBranch/getTree/"
        "getLeafEntry around them"
    )
    s("branch", "nope")
    u1 = s("appendMessage", user("q1", T0 + 1))
    a1 = s("appendMessage", say("a1", T0 + 2))
    s("appendMessage", user("q2", T0 + 3))
    a2 = s("appendMessage", say("a2", T0 + 4))
    s("branch", a1)
    s("getLeafId")
    s("appendMessage", user("q2 alternative", T0 + 5))
    s("getChildren", a1)
    s("getChildren", u1)
    s("getChildren", None)
    s("getChildren", "nope")
    s("getBranch")
    s("getBranch", a2)
    s("getBranch", "nope")
    s("resetLeaf")
    s("getLeafId")
    s("getLeafEntry")
    s("getBranch")
    s("buildSessionContext")
    s("appendMessage", user("new root", T0 + 6))
    s("getChildren", None)
    s("getTree")
    s("branch", u1)
    s("getLeafEntry")
    return s


@op_script("branch_with_summary", memory=True)
def _ops_bws() -> Script:
    s = Script(
        "branchWithSummary: unknown id fails; with a null leaf fromId is 'root'; from an id; to null (new "
        "root); details/fromHook/usage given, null, undefined; an empty summary"
    )
    undef = s("branchWithSummary", "nope", "s")
    s("branchWithSummary", None, "from nothing")
    u1 = s("appendMessage", user("q1", T0 + 1))
    a1 = s("appendMessage", say("a1", T0 + 2))
    s("appendMessage", user("q2", T0 + 3))
    s("appendMessage", say("a2", T0 + 4))
    s("branchWithSummary", a1, "abandoned q2/a2")
    s("appendMessage", user("q3", T0 + 5))
    s("branchWithSummary", None, "restart", {"d": 1}, True, usage(100, 10))
    s("branchWithSummary", u1, "", None, False, None)
    s("branchWithSummary", u1, "undefined details and fromHook", undef, undef, usage(5, 5))
    s("resetLeaf")
    s("branchWithSummary", u1, "from a reset leaf")
    s("buildSessionContext")
    s("getTree")
    return s


def _branched_base(s: Script) -> dict[str, str]:
    ids = {}
    ids["u1"] = s("appendMessage", user("q1", T0 + 1))
    ids["l1"] = s("appendLabelChange", ids["u1"], "start")
    ids["a1"] = s("appendMessage", say("a1", T0 + 2))
    ids["l2"] = s("appendLabelChange", ids["a1"], "first-answer")
    ids["l3"] = s("appendLabelChange", ids["u1"], "begin")
    ids["u2"] = s("appendMessage", user("q2", T0 + 3))
    ids["a2"] = s("appendMessage", say("a2", T0 + 4))
    ids["c"] = s("appendCompaction", "summary kept from a label", ids["l2"], 500)
    ids["u3"] = s("appendMessage", user("q3", T0 + 5))
    ids["l4"] = s("appendLabelChange", ids["a2"], "second-answer")
    s("branch", ids["a1"])
    ids["side"] = s("appendMessage", user("side", T0 + 6))
    s("appendLabelChange", ids["side"], "side-label")
    s("appendLabelChange", ids["u2"], "set-from-side")
    s("appendLabelChange", ids["a1"])
    return ids


@op_script("create_branched_session", memory=True)
def _ops_cbs() -> Script:
    s = Script(
        "createBranchedSession: unknown id fails; the path keeps labels out and re-chains (a child of a label "
        "hangs from the previous kept entry), a compaction whose firstKeptEntryId is a label moves to the next "
        "kept entry, one label entry per label resolved on the path (timestamps kept); persisted: returns and "
        "writes the new file (header parentSession = the old file), later appends go there"
    )
    s("createBranchedSession", "nope")
    ids = _branched_base(s)
    s("createBranchedSession", ids["u3"])
    s("getSessionFile")
    s("getHeader")
    s("getEntries")
    s("getLeafId")
    s("getLabel", ids["u1"])
    s("getTree")
    s("appendMessage", user("after extraction", T0 + 7))
    s("buildSessionContext")
    return s


@op_script("create_branched_session_from_label")
def _ops_cbs_label() -> Script:
    s = Script("createBranchedSession with a label entry as the leaf: the trailing label is dropped")
    ids = _branched_base(s)
    s("createBranchedSession", ids["l3"])
    s("getEntries")
    return s


@op_script("create_branched_session_setup_only")
def _ops_cbs_setup() -> Script:
    s = Script(
        "createBranchedSession of a path without a user/assistant message: the new file is not written until "
        "the first user message"
    )
    mc = s("appendModelChange", "anthropic", "claude-sonnet-4-5")
    s("appendMessage", user("q1", T0 + 1))
    s("appendLabelChange", mc, "setup")
    s("createBranchedSession", mc)
    s("getSessionFile")
    s("getEntries")
    s("appendMessage", user("first message of the new file", T0 + 2))
    return s


@op_script("new_session_ids")
def _ops_new_session() -> Script:
    s = Script(
        "newSession with valid and invalid ids (invalid: error, state unchanged), plain, and with "
        "parentSession; each newSession starts an empty session"
    )
    s("appendMessage", user("in the first session", T0 + 1))
    for bad in ("../x", "a/b", "", ".a", "a.", "-a", "a_", "a b", "a\n", "é"):
        s("newSession", {"id": bad})
    s("getSessionId")
    s("getEntryCount")
    s("newSession", {"id": "ok_2.session-3"})
    s("getSessionId")
    s("getEntryCount")
    s("newSession")
    s("newSession", {"id": "child", "parentSession": "/old/parent.jsonl"})
    s("getHeader")
    s("appendMessage", user("in the child session", T0 + 2))
    return s


@op_script("options_custom_id")
def _ops_options_id() -> Script:
    s = Script(
        "create with options {id}: the id names the header and the file", options={"id": "my-session.1"}
    )
    s("getSessionId")
    s("getSessionFile")
    s("appendMessage", user("hi", T0 + 1))
    return s


@op_script("options_parent_session")
def _ops_options_parent() -> Script:
    s = Script(
        "create with options {id, parentSession}",
        options={"id": "child-1", "parentSession": "/sessions/parent.jsonl"},
    )
    s("getHeader")
    s("appendMessage", user("hi", T0 + 1))
    return s


@op_script("empty_manager", memory=True)
def _ops_empty() -> Script:
    s = Script("every read on a fresh manager")
    for op in (
        "getLeafId",
        "getLeafEntry",
        "getBranch",
        "getTree",
        "getEntries",
        "getEntryCount",
        "buildContextEntries",
        "buildSessionProjection",
        "buildSessionContext",
        "getSessionName",
        "getHeader",
        "isPersisted",
        "usesDefaultSessionDir",
    ):
        s(op)
    s("getChildren", None)
    s("getEntry", "x")
    s("getLabel", "x")
    return s


@op_script("demo_sample")
def demo_sample() -> Script:
    """The realistic session shipped as pisession/data/sample.jsonl."""
    s = Script(
        "the demo session shipped as pisession/data/sample.jsonl",
        cwd="/home/dev/todo-app",
        clock=1764583200000,
    )
    t = 1764583200000
    s("appendModelChange", "anthropic", "claude-sonnet-4-5")
    s("appendThinkingLevelChange", "medium")
    s(
        "appendMessage",
        system(
            "You are Pi, an expert coding assistant. You help users by reading files, running commands, editing code "
            "and writing new files.",
            t + 10,
            sections={
                "environment": "<environment>\ncwd: /home/dev/todo-app\nplatform: linux\ndate: 2025-12-01\n"
                "</environment>",
                "project": "<project-instructions>\nRun tests with `pytest -q`. Keep handlers in src/api.py.\n"
                "</project-instructions>",
            },
            added=[READ_TOOL, BASH_TOOL, EDIT_TOOL, WRITE_TOOL],
        ),
    )
    s(
        "appendMessage",
        user("The tests in tests/test_api.py fail since my refactor. Can you take a look?", t + 1000),
    )
    s(
        "appendMessage",
        assistant(
            [
                thinking(
                    "Start by running the failing tests to see the error.",
                    thinkingSignature="EqQBCkYIBxgCKkA1",
                ),
                text("Let me run the tests first."),
                tool_call("toolu_01", "bash", {"command": "pytest -q tests/test_api.py"}),
            ],
            t + 4000,
            stop="toolUse",
            u=usage(3120, 96, 0, 3120),
            responseId="msg_01A",
        ),
    )
    s(
        "appendMessage",
        tool_result(
            "toolu_01",
            "bash",
            "F.F\nFAILED tests/test_api.py::test_create_todo - KeyError: 'title'\n"
            "FAILED tests/test_api.py::test_update_todo - KeyError: 'title'\n2 failed, 1 passed",
            t + 6000,
            details={"exitCode": 1},
        ),
    )
    s(
        "appendMessage",
        assistant(
            [
                thinking(
                    "KeyError 'title': the handler probably reads a renamed field.",
                    thinkingSignature="EqQBCkYIBxgCKkA2",
                ),
                tool_call("toolu_02", "read", {"path": "src/api.py"}),
            ],
            t + 9000,
            stop="toolUse",
            u=usage(3400, 60, 3120, 280),
            responseId="msg_01B",
        ),
    )
    s(
        "appendMessage",
        tool_result(
            "toolu_02",
            "read",
            "def create_todo(payload):\n    return Todo(name=payload['title'])\n\n"
            "def update_todo(todo, payload):\n    todo.name = payload['title']\n",
            t + 9500,
        ),
    )
    s(
        "appendMessage",
        assistant(
            [
                text(
                    "The model field is now `name`, but the handlers still read `title` from the payload while the tests "
                    "send `name`. I'll update both handlers."
                ),
                tool_call(
                    "toolu_03",
                    "edit",
                    {"path": "src/api.py", "oldText": "payload['title']", "newText": "payload['name']"},
                ),
            ],
            t + 14000,
            stop="toolUse",
            u=usage(3620, 140, 3400, 220),
            responseId="msg_01C",
        ),
    )
    s("appendMessage", tool_result("toolu_03", "edit", "Replaced 2 occurrences in src/api.py", t + 14200))
    s(
        "appendMessage",
        assistant(
            [tool_call("toolu_04", "bash", {"command": "pytest -q tests/test_api.py"})],
            t + 16000,
            stop="toolUse",
            u=usage(3790, 40, 3620, 170),
            responseId="msg_01D",
        ),
    )
    s(
        "appendMessage",
        tool_result("toolu_04", "bash", "...\n3 passed in 0.21s", t + 17500, details={"exitCode": 0}),
    )
    green = s(
        "appendMessage",
        assistant(
            [
                text(
                    "All three tests pass now. The handlers read `payload['name']`, matching the renamed model field."
                )
            ],
            t + 19000,
            u=usage(3850, 38, 3790, 60),
            responseId="msg_01E",
        ),
    )
    s("appendLabelChange", green, "tests-green")
    s("appendSessionInfo", "Fix failing API tests")
    s("appendMessage", user("Nice. Also add a test for the 404 when a todo does not exist.", t + 60000))
    s(
        "appendMessage",
        assistant(
            [
                thinking(
                    "Use requests-mock to simulate the missing todo.", thinkingSignature="EqQBCkYIBxgCKkA3"
                ),
                tool_call(
                    "toolu_05",
                    "write",
                    {
                        "path": "tests/test_404.py",
                        "content": "import requests_mock\n\ndef test_missing(client):\n    ...\n",
                    },
                ),
            ],
            t + 64000,
            stop="toolUse",
            u=usage(3990, 210, 3850, 140),
            responseId="msg_01F",
        ),
    )
    s("appendMessage", tool_result("toolu_05", "write", "Wrote tests/test_404.py", t + 64100))
    s(
        "appendMessage",
        assistant(
            [tool_call("toolu_06", "bash", {"command": "pytest -q tests/test_404.py"})],
            t + 66000,
            stop="toolUse",
            u=usage(4220, 40, 3990, 230),
            responseId="msg_01G",
        ),
    )
    s(
        "appendMessage",
        tool_result(
            "toolu_06",
            "bash",
            "ModuleNotFoundError: No module named 'requests_mock'",
            t + 67000,
            is_error=True,
            details={"exitCode": 2},
        ),
    )
    s(
        "branchWithSummary",
        green,
        "Tried a 404 test based on requests-mock; it failed because requests-mock is not installed. The user prefers "
        "not to add dependencies.",
        {"readFiles": [], "modifiedFiles": ["tests/test_404.py"]},
        False,
        usage(4300, 180, 0, 0),
    )
    u_retry = s(
        "appendMessage",
        user("Let's use the app's built-in test client instead, no new dependencies.", t + 90000),
    )
    s("appendModelChange", "openai", "gpt-5")
    s("appendThinkingLevelChange", "high")
    s(
        "appendMessage",
        assistant(
            [
                thinking("The fixture `client` already wraps the app; request a missing id and expect 404."),
                tool_call(
                    "call_7",
                    "write",
                    {
                        "path": "tests/test_404.py",
                        "content": "def test_missing(client):\n    r = client.get('/todos/999')\n"
                        "    assert r.status_code == 404\n",
                    },
                ),
            ],
            t + 95000,
            provider="openai",
            model="gpt-5",
            api="openai-responses",
            stop="toolUse",
            u=usage(4500, 260, 0, 0, reasoning=120),
            thinkingLevel="high",
        ),
    )
    written = s(
        "appendMessage",
        tool_result(
            "call_7",
            "write",
            "Wrote tests/test_404.py (3 lines)\n" + "def test_missing(client):\n" * 3,
            t + 95200,
        ),
    )
    s(
        "appendMessage",
        assistant(
            [tool_call("call_8", "bash", {"command": "pytest -q"})],
            t + 97000,
            provider="openai",
            model="gpt-5",
            api="openai-responses",
            stop="toolUse",
            u=usage(4800, 30, 4400, 0),
        ),
    )
    s(
        "appendMessage",
        tool_result("call_8", "bash", "....\n4 passed in 0.25s", t + 99000, details={"exitCode": 0}),
    )
    s(
        "appendMessage",
        assistant(
            [text("Added `tests/test_404.py`; the whole suite passes (4 tests).")],
            t + 100000,
            provider="openai",
            model="gpt-5",
            api="openai-responses",
            u=usage(4850, 22, 4800, 0),
        ),
    )
    s(
        "appendMessage",
        system(
            "",
            t + 110000,
            sections={
                "environment": "<environment>\ncwd: /home/dev/todo-app\nplatform: linux\ndate: 2025-12-02\n</environment>"
            },
            added=[GREP_TOOL],
        ),
    )
    s("appendUsage", "compaction", "anthropic", "claude-haiku-4-5", usage(9800, 410), "automatic compaction")
    s(
        "appendCompaction",
        "## Goal\nFix failing API tests and cover the 404 path.\n\n## Done\n- Handlers in src/api.py read "
        "payload['name'] (was 'title').\n- tests/test_404.py uses the built-in `client` fixture.\n\n## State\nAll 4 "
        "tests pass.",
        u_retry,
        48213,
        {"readFiles": ["src/api.py"], "modifiedFiles": ["src/api.py", "tests/test_404.py"]},
        False,
        usage(9800, 410),
    )
    s("appendMessage", user("Can you summarize what changed overall?", t + 120000))
    summary = s(
        "appendMessage",
        assistant(
            [
                thinking("Summarize both fixes briefly."),
                text(
                    "Two changes:\n1. `src/api.py`: both handlers read `payload['name']`, matching the model.\n"
                    "2. `tests/test_404.py`: a new test requesting a missing todo through the `client` fixture."
                ),
            ],
            t + 124000,
            provider="openai",
            model="gpt-5",
            api="openai-responses",
            u=usage(2100, 90, 0, 0, reasoning=30),
        ),
    )
    s("appendContextEdit", written, {"content": "Wrote tests/test_404.py (3 lines)"})
    s("appendLabelChange", summary, "summary")
    s("appendMessage", user("Thanks!", t + 180000))
    s(
        "appendMessage",
        assistant(
            [text("You're welcome!")],
            t + 181000,
            provider="openai",
            model="gpt-5",
            api="openai-responses",
            u=usage(2200, 6, 2100, 0),
        ),
    )
    return s


# --------------------------------------------------------------------------------------------
# C. Static methods and exported functions: golden/fn.json
# --------------------------------------------------------------------------------------------


def _epoch(s: str) -> int:
    return int(datetime.strptime(s, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc).timestamp())


def _ms(s: str) -> int:
    return _epoch(s) * 1000


def _session_text(sid: str, ts: str, cwd: str, rows: list[dict], version: int = 3, **hextra: Any) -> str:
    h: dict[str, Any] = {"type": "session", "version": version, "id": sid, "timestamp": ts, "cwd": cwd}
    h.update(hextra)
    return join_lines([J(h)] + [J(r) for r in rows])


def _chain(prefix: str, start: str, rows: list[tuple[str, dict]]) -> list[dict]:
    """Linear v3 entries: (type, fields) with fields holding 'message' or whatever the type needs."""
    out = []
    parent = None
    t = _ms(start)
    for i, (etype, fields) in enumerate(rows):
        eid = f"{prefix}{i:04d}"
        out.append(entry(etype, eid, parent, t + i * 60000, **fields))
        parent = eid
    return out


def discovery_fixture() -> list[dict]:
    """The session directory used by list/listAll/findById/continueRecent/forkFrom (paths under $AGENT)."""
    P = "sessions/--project--/"
    OTHER = "sessions/--other--/"
    t = _ms
    files: list[dict] = []

    def add(path: str, text_: str, mtime: str, **kw: Any) -> None:
        files.append({"path": path, "text": text_, "mtime": _epoch(mtime), **kw})

    named = _chain(
        "5a",
        "2024-12-01T10:00:00Z",
        [
            ("model_change", {"provider": "anthropic", "modelId": "claude-sonnet-4-5"}),
            ("message", {"message": user("Refactor the parser", t("2024-12-01T10:01:00Z"))}),
            (
                "message",
                {
                    "message": assistant(
                        [thinking("plan"), text("Sure."), text("Done.")], t("2024-12-01T10:02:00Z")
                    )
                },
            ),
            ("session_info", {"name": "Parser refactor"}),
            (
                "message",
                {"message": user([text("And tests?"), IMAGE, text("please")], t("2024-12-01T10:04:00Z"))},
            ),
            (
                "message",
                {
                    "message": assistant(
                        [tool_call("c1", "bash", {"command": "pytest"})],
                        t("2024-12-01T10:05:00Z"),
                        stop="toolUse",
                    )
                },
            ),
            ("message", {"message": tool_result("c1", "bash", "ok", t("2024-12-01T10:06:00Z"))}),
        ],
    )
    add(
        P + "2024-12-01T10-00-00-000Z_s-named.jsonl",
        _session_text(
            "s-named", "2024-12-01T10:00:00.000Z", "/project", named, parentSession="/old/parent.jsonl"
        ),
        "2024-12-01T12:00:00Z",
    )
    unnamed_rows = _chain(
        "5b",
        "2024-12-02T09:00:00Z",
        [
            ("message", {"message": user("Hello there", t("2024-12-02T09:00:30Z"))}),
            ("session_info", {"name": "Temp"}),
            ("message", {"message": {k: v for k, v in say("General Kenobi").items() if k != "timestamp"}}),
            ("message", {"message": tool_result("c", "read", "x")}),
            ("session_info", {"name": ""}),
        ],
    )
    add(
        P + "2024-12-02T09-00-00-000Z_s-unnamed.jsonl",
        _session_text("s-unnamed", "2024-12-02T09:00:00.000Z", "/project/", unnamed_rows),
        "2024-12-02T09:30:00Z",
    )
    add(
        P + "2024-12-03T08-00-00-000Z_s-nomsg.jsonl",
        _session_text(
            "s-nomsg",
            "2024-12-03T08:00:00.000Z",
            "/project",
            _chain(
                "5c",
                "2024-12-03T08:00:00Z",
                [
                    ("model_change", {"provider": "openai", "modelId": "gpt-5"}),
                    ("thinking_level_change", {"thinkingLevel": "low"}),
                ],
            ),
        ),
        "2024-12-06T00:00:00Z",
    )
    add(
        P + "2024-12-03T12-00-00-000Z_s-nullcontent.jsonl",
        _session_text(
            "s-nullcontent",
            "2024-12-03T12:00:00.000Z",
            "/project",
            _chain(
                "5d",
                "2024-12-03T12:00:00Z",
                [
                    ("message", {"message": user("visible text", t("2024-12-03T12:00:10Z"))}),
                    ("message", {"message": user(None, t("2024-12-03T12:00:20Z"))}),
                ],
            ),
        ),
        "2024-12-03T12:30:00Z",
        note="Pi leaves this session out of list (text extraction throws on null content); SPEC: pisession lists it",
    )
    add(
        P + "notes.jsonl",
        J({"hello": "world"})
        + "\n"
        + J(
            {
                "type": "session",
                "version": 3,
                "id": "late-header",
                "timestamp": "2024-12-01T00:00:00.000Z",
                "cwd": "/project",
            }
        )
        + "\n",
        "2024-12-10T00:00:00Z",
    )
    add(
        P + "readme.txt",
        _session_text("txt-session", "2024-12-01T00:00:00.000Z", "/project", []),
        "2024-12-11T00:00:00Z",
    )
    add(P + "empty.jsonl", "", "2024-12-09T00:00:00Z")
    files.append({"path": P + "dir.jsonl", "dir": True, "mtime": _epoch("2024-12-08T00:00:00Z")})
    big = (
        '{"type":"session","version":3,"id":"s-big","timestamp":"2024-12-02T00:00:00.000Z","cwd":"/project",'
        '"pad":"@PAD@"}\n'
        + J(
            msg(
                "5e000000",
                None,
                "2024-12-02T00:00:01.000Z",
                user("big header session", t("2024-12-02T00:00:01Z")),
            )
        )
        + "\n"
    )
    add(
        P + "big-header.jsonl",
        big,
        "2024-12-07T00:00:00Z",
        pad={"marker": "@PAD@", "char": "x", "count": 1100000},
        note="the header line is over 1 MiB: header discovery (findById, continueRecent) skips the file",
    )
    add(
        P + "2024-12-04T10-00-00-000Z_s-other.jsonl",
        _session_text(
            "s-other",
            "2024-12-04T10:00:00.000Z",
            "/other",
            _chain(
                "5f",
                "2024-12-04T10:00:00Z",
                [("message", {"message": user("Other project work", t("2024-12-04T10:01:00Z"))})],
            ),
        ),
        "2024-12-06T12:00:00Z",
    )
    add(
        P + "2024-12-04T11-00-00-000Z_s-badts.jsonl",
        _session_text("s-badts", "not-a-time", "/project", []),
        "2024-12-04T11:30:00Z",
    )
    add(
        P + "2024-12-05T10-00-00-000Z_s-prefixed.jsonl",
        "\n{bad\n"
        + _session_text(
            "s-prefixed",
            "2024-12-05T10:00:00.000Z",
            "/project",
            _chain(
                "60",
                "2024-12-05T10:00:00Z",
                [("message", {"message": user("after junk", t("2024-12-05T10:01:00Z"))})],
            ),
        ),
        "2024-12-05T12:00:00Z",
    )
    v1 = [
        J(
            {
                "type": "session",
                "version": 1,
                "id": "s-v1",
                "timestamp": "2024-11-30T10:00:00.000Z",
                "cwd": "/project",
            }
        ),
        J(
            {
                "type": "message",
                "timestamp": "2024-11-30T10:00:30.000Z",
                "message": user("legacy hello", t("2024-11-30T10:00:30Z")),
            }
        ),
        J(
            {
                "type": "message",
                "timestamp": "2024-11-30T10:01:00.000Z",
                "message": {
                    "role": "hookMessage",
                    "customType": "h",
                    "content": "hook",
                    "display": True,
                    "timestamp": t("2024-11-30T10:01:00Z"),
                },
            }
        ),
        '{"type":"compaction","timestamp":"2024-11-30T10:02:00.000Z","summary":"s","firstKeptEntryIndex":1,'
        '"tokensBefore":10,"details":{"cost":1.0e-5}}',
    ]
    add(P + "2024-11-30T10-00-00-000Z_s-v1.jsonl", join_lines(v1), "2024-11-30T11:00:00Z")
    crlf = _session_text(
        "s-crlf",
        "2024-12-06T10:00:00.000Z",
        "/project",
        _chain(
            "61",
            "2024-12-06T10:00:00Z",
            [("message", {"message": user("crlf\u2028line", t("2024-12-06T10:01:00Z"))})],
        ),
    ).replace("\n", "\r\n")
    add(P + "2024-12-06T10-00-00-000Z_s-crlf.jsonl", crlf, "2024-12-06T10:30:00Z")
    add(
        OTHER + "2024-12-07T10-00-00-000Z_s-elsewhere.jsonl",
        _session_text(
            "s-elsewhere",
            "2024-12-07T10:00:00.000Z",
            "/other",
            _chain(
                "62",
                "2024-12-07T10:00:00Z",
                [("message", {"message": user("elsewhere", t("2024-12-07T10:01:00Z"))})],
            ),
        ),
        "2024-12-07T11:00:00Z",
    )
    add(
        OTHER + "2024-11-29T10-00-00-000Z_s-misplaced.jsonl",
        _session_text(
            "s-misplaced",
            "2024-11-29T10:00:00.000Z",
            "/project/",
            _chain(
                "63",
                "2024-11-29T10:00:00Z",
                [("message", {"message": user("misplaced", t("2024-11-29T10:01:00Z"))})],
            ),
        ),
        "2024-11-29T11:00:00Z",
    )
    return files


def lay_fixture(files: list[dict], base: Path) -> None:
    """Build the fixture under base (the tests do the same from fixtures/discovery.json)."""
    for f in files:
        p = base / f["path"]
        p.parent.mkdir(parents=True, exist_ok=True)
        if f.get("dir"):
            p.mkdir(exist_ok=True)
        else:
            body = f["text"]
            if "pad" in f:
                body = body.replace(f["pad"]["marker"], f["pad"]["char"] * f["pad"]["count"])
            p.write_bytes(body.encode("utf-8"))
    for f in files:  # directories last: creating files inside would move their mtime
        os.utime(base / f["path"], (f["mtime"], f["mtime"]))


def _ctx_entries() -> list[dict]:
    return [
        msg("cx000001", None, T0 + 1, user("q1", T0 + 1)),
        msg("cx000002", "cx000001", T0 + 2, say("a1", T0 + 2, provider="openai", model="gpt-5")),
        entry("thinking_level_change", "cx000003", "cx000002", T0 + 3, thinkingLevel="high"),
        msg("cx000004", "cx000003", T0 + 4, user("q2", T0 + 4)),
        entry(
            "compaction",
            "cx000005",
            "cx000004",
            T0 + 5,
            summary="sum",
            firstKeptEntryId="cx000002",
            tokensBefore=50,
        ),
        entry(
            "context_edit",
            "cx000006",
            "cx000005",
            T0 + 6,
            targetId="cx000004",
            replacement={"content": "q2*"},
        ),
        msg("cx000007", "cx000006", T0 + 7, user("q3", T0 + 7)),
        msg("cx000008", "cx000002", T0 + 8, user("side", T0 + 8)),
    ]


def fn_calls() -> list[dict]:
    """Each call: kind (fn/static), name, args (JSON-able, with placeholders) or args_raw, and flags."""
    calls: list[dict] = []

    def add(
        kind: str,
        name: str,
        *args: Any,
        fixture: bool = False,
        new_header: bool = False,
        keep_id: bool = False,
        note: str | None = None,
        args_raw: str | None = None,
    ) -> None:
        c: dict[str, Any] = {
            "kind": kind,
            "name": name,
            "args": list(args),
            "fixture": fixture,
            "new_header": new_header,
            "keep_id": keep_id,
        }
        if args_raw is not None:
            c["args_raw"] = args_raw
        if note:
            c["note"] = note
        calls.append(c)

    for cwd in [
        "/project",
        "/project/",
        "/home/user/my project",
        "relative/dir",
        "./x/../y",
        "C:\\Users\\me\\proj",
        "/a:b\\c/d",
        "/",
        "//double//slash/",
        "~",
        "~/work",
        "~user/x",
        "file:///srv/app",
        "",
        "/tmp/../etc",
        "\\\\server\\share",
        "/ü/naïve dir",
        "/with--dashes-/x",
    ]:
        add("fn", "getDefaultSessionDir", cwd)
    add("fn", "getDefaultSessionDir", "/project", "$TMP/alt-agent")
    add("fn", "getDefaultSessionDir", "/project", "$TMP/alt-agent/")

    for sid in [
        "a",
        "Z9",
        "a.b",
        "a-b_c",
        "0",
        "01938cd2-1b00-7538-9752-9221d5307030",
        "a..b",
        "a--b",
        "a_b.c-d",
        "",
        ".a",
        "a.",
        "-a",
        "a-",
        "_a",
        "a_",
        "a/b",
        "../x",
        "a b",
        "é",
        "a\n",
        "\na",
        "a\u0000b",
        "\uff41",
        "a\\b",
        ".",
        "..",
        "a\tb",
        "a:b",
    ]:
        add("fn", "assertValidSessionId", sid)

    for content in [
        "a\n\n{bad\n{}",
        "",
        "   \n\n",
        '{"a":1}\r\n{"b":2}\r\n',
        'NaN\n1\n"s"\nnull\n[]\n0\nfalse',
        '\u2028{"a":1}\u2028',
        '{"a":1}\n\u2028{"b":2}',
        '\ufeff{"a":1}',
        '{"a":1}\n\ufeff{"b":2}',
        '{"type":"a"}\n{"type":"b","type":"c"}',
        '  {"a":1}  \n\t{"b":2}\t',
    ]:
        add("fn", "parseSessionEntries", content)
    add("fn", "parseSessionEntries", args_raw='["{\\"x\\":1e400,\\"y\\":-0,\\"z\\":1.0,\\"w\\":1e21}"]')

    def hdr(version: int | None) -> dict:
        h = {"type": "session", "version": version, "id": "m", "timestamp": iso(T0), "cwd": "/p"}
        return {k: v for k, v in h.items() if v is not None}

    plain = lambda ts, m: {"type": "message", "timestamp": iso(T0 + ts), "message": m}  # noqa: E731
    hook = {"role": "hookMessage", "customType": "h", "content": "x", "display": True, "timestamp": 1}
    add(
        "fn",
        "migrateSessionEntries",
        [
            hdr(1),
            plain(1, user("u", 1)),
            plain(2, say("a", 2)),
            {
                "type": "compaction",
                "timestamp": iso(T0 + 3),
                "summary": "s",
                "firstKeptEntryIndex": 1,
                "tokensBefore": 1,
            },
            {
                "type": "compaction",
                "timestamp": iso(T0 + 4),
                "summary": "s",
                "firstKeptEntryIndex": 0,
                "tokensBefore": 1,
            },
            plain(5, hook),
        ],
    )
    add("fn", "migrateSessionEntries", [plain(1, user("no header", 1)), plain(2, hook)])
    add("fn", "migrateSessionEntries", [hdr(None), plain(1, user("no version", 1))])
    add(
        "fn",
        "migrateSessionEntries",
        [
            hdr(2),
            msg("m1", None, T0 + 1, hook),
            {"type": "message", "id": "m2", "parentId": "m1", "timestamp": iso(T0 + 2)},
        ],
    )
    add("fn", "migrateSessionEntries", [hdr(3), msg("m1", None, T0 + 1, hook)])
    add("fn", "migrateSessionEntries", [])

    ents = _ctx_entries()
    for name in ("buildSessionContext", "buildContextEntries", "buildSessionProjection"):
        add("fn", name, ents)
        add("fn", name, ents, None)
        add("fn", name, ents, "missing")
        add("fn", name, ents, "cx000007")
        add("fn", name, ents, "cx000008")
    add("fn", "buildSessionContext", [])
    add("fn", "getLatestCompactionEntry", ents)
    add("fn", "getLatestCompactionEntry", ents[:4])

    single = [
        msg("s1", None, T0, {"role": "system", "content": None, "timestamp": 1}),
        msg("s2", None, T0, {"role": "system", "timestamp": 1}),
        msg("s3", None, T0, {"role": "user", "content": None, "timestamp": 1}),
        msg("s4", None, T0, {"role": "assistant", "timestamp": 1}),
        msg("s5", None, T0, {"role": "toolResult", "content": None, "timestamp": 1}),
        msg("s6", None, T0, {"role": "bashExecution", "command": "x", "timestamp": 1}),
        msg("s7", None, T0, {"role": "mystery", "content": None}),
        entry("custom_message", "s8", None, T0, customType="c", display=True),
        entry(
            "custom_message", "s9", None, "bad time", customType="c", content="x", display=False, details=None
        ),
        entry("branch_summary", "s10", None, T0, fromId="root", summary=""),
        entry("branch_summary", "s11", None, T0, fromId="root", summary="bs"),
        entry("compaction", "s12", None, T0, summary="c", firstKeptEntryId="s12", tokensBefore=1),
        entry(
            "compaction",
            "s13",
            None,
            T0,
            summary="c",
            firstKeptEntryId="s13",
            tokensBefore=1,
            systemMessage=system("sys", T0),
        ),
        entry("label", "s14", None, T0, targetId="s1", label="l"),
        entry("context_edit", "s15", None, T0, targetId="s1", replacement=None),
        entry("custom", "s16", None, T0, customType="c", data={}),
        entry("x-unknown", "s17", None, T0),
    ]
    for e in single:
        add("fn", "sessionEntryToContextMessages", e)

    edit = lambda r: entry("context_edit", "ed", None, T0, targetId="x", replacement=r)  # noqa: E731
    for e, r in [
        (msg("p1", None, T0, system("sys", 1)), None),
        (msg("p2", None, T0, system("sys", 1)), {"content": "x"}),
        (msg("p3", None, T0, say("a", 1)), {"content": "str"}),
        (msg("p4", None, T0, user("u", 1)), {"content": "str"}),
        (
            msg(
                "p5",
                None,
                T0,
                {"role": "custom", "customType": "c", "content": "c", "display": True, "timestamp": 1},
            ),
            {"content": "str"},
        ),
        (msg("p6", None, T0, bash_exec("ls", "", 1)), {"content": "str"}),
        (msg("p7", None, T0, tool_result("c", "read", "x", 1)), {"content": [text("blocks")]}),
        (
            entry("custom_message", "p8", None, T0, customType="c", content="c", display=True),
            {"content": "s"},
        ),
        (
            entry(
                "compaction",
                "p9",
                None,
                T0,
                summary="c",
                firstKeptEntryId="p9",
                tokensBefore=1,
                systemMessage=system("sys", T0),
            ),
            {"content": "s"},
        ),
        (entry("branch_summary", "p10", None, T0, fromId="root", summary="bs"), {"content": "s"}),
    ]:
        add("fn", "projectContextEntry", e, edit(r))
    add("fn", "projectContextEntry", msg("p11", None, T0, user("u", 1)))

    D = "$AGENT/sessions/--project--"
    OTHER = "$AGENT/sessions/--other--"
    named = D + "/2024-12-01T10-00-00-000Z_s-named.jsonl"
    for args in (
        ["/project", D],
        ["/project"],
        ["/project", D + "/"],
        ["/other", D],
        ["/project", OTHER],
        ["/other", OTHER],
        ["/nowhere"],
        ["/project", "$AGENT/missing-dir"],
    ):
        add("static", "list", *args, fixture=True)
    add("static", "listAll", D, fixture=True)
    add("static", "listAll", fixture=True)
    for args in (
        ["/project", "s-named", D],
        ["/project", "s-named"],
        ["/other", "s-named", D],
        ["/other", "s-other", D],
        ["/project", "s-big", D],
        ["/project", "late-header", D],
        ["/project", "txt-session", D],
        ["/project", "s-prefixed", D],
        ["/project", "s-crlf", D],
        ["/project", "s-badts", D],
        ["/project", "s-misplaced", OTHER],
        ["/project", "nope", D],
    ):
        add("static", "findById", *args, fixture=True)
    add("static", "continueRecent", "/project", D, fixture=True)
    add("static", "continueRecent", "/project", fixture=True)
    add("static", "continueRecent", "/project", OTHER, fixture=True)
    add("static", "continueRecent", "/other", D, fixture=True)
    add("static", "continueRecent", "/nowhere", D, fixture=True, new_header=True)
    add("fn", "findMostRecentSession", D, fixture=True)
    add("fn", "findMostRecentSession", D, "/project", fixture=True)
    add("fn", "findMostRecentSession", OTHER, "/other", fixture=True)
    add("static", "forkFrom", named, "/forked", fixture=True, new_header=True)
    add(
        "static",
        "forkFrom",
        named,
        "/forked",
        "$TMP/forks",
        {"id": "fork-1"},
        fixture=True,
        new_header=True,
        keep_id=True,
    )
    add(
        "static",
        "forkFrom",
        D + "/2024-11-30T10-00-00-000Z_s-v1.jsonl",
        "/forked",
        "$TMP/forks",
        {"id": "fork-v1"},
        fixture=True,
        new_header=True,
        keep_id=True,
        note="entries are copied raw: a v1 source gives a v3 header over entries without ids",
    )
    add(
        "static",
        "forkFrom",
        D + "/2024-12-05T10-00-00-000Z_s-prefixed.jsonl",
        "relative/target",
        "$TMP/forks",
        {"id": "fork-prefixed"},
        fixture=True,
        new_header=True,
        keep_id=True,
    )
    add(
        "static",
        "forkFrom",
        D + "/2024-12-06T10-00-00-000Z_s-crlf.jsonl",
        "/forked",
        "$TMP/forks",
        {"id": "fork-crlf"},
        fixture=True,
        new_header=True,
        keep_id=True,
    )
    add("static", "forkFrom", D + "/empty.jsonl", "/forked", "$TMP/forks", fixture=True)
    add("static", "forkFrom", D + "/notes.jsonl", "/forked", "$TMP/forks", fixture=True)
    add("static", "forkFrom", "$AGENT/missing.jsonl", "/forked", "$TMP/forks", fixture=True)
    add("static", "forkFrom", named, "/forked", "$TMP/forks", {"id": "../bad"}, fixture=True)
    for sid in ["../x", "a/b", "", ".a", "a.", "x y"]:
        add("static", "create", "/project", "$DIR", {"id": sid})
    add("static", "create", "/project", "$DIR", {"id": "valid.id-1"}, new_header=True, keep_id=True)
    add("static", "create", "/project", new_header=True)
    add("static", "inMemory", "/p", {"id": "../x"})
    add("static", "inMemory", "/p", {"id": "mem-1"}, new_header=True, keep_id=True)
    add("static", "inMemory", new_header=True)
    add(
        "static",
        "inMemory",
        "/p",
        None,
        [hdr(1), plain(1, user("u", 1)), plain(2, hook)],
        note="entries given with a v1 header: migrated in memory",
    )
    add(
        "static",
        "inMemory",
        "/p",
        None,
        [msg("im000001", None, T0 + 1, user("u", 1))],
        new_header=True,
        note="entries given without a header: a fresh header is put in front",
    )
    add("static", "open", named, fixture=True)
    add("static", "open", named, "$TMP/other-dir", "/override", fixture=True)
    add("static", "open", "$AGENT/nope/new.jsonl", fixture=True, new_header=True)
    add("static", "open", D + "/notes.jsonl", fixture=True)
    return calls


# --------------------------------------------------------------------------------------------
# Driver
# --------------------------------------------------------------------------------------------


def gen_read_case(root: Path, name: str) -> list[Path]:
    _doc, builder = READ[name]
    data = builder(Ctx(root, name))
    raw_in = data.encode("utf-8") if isinstance(data, str) else data
    case = CASES / f"{name}.jsonl"
    case.parent.mkdir(parents=True, exist_ok=True)
    case.write_bytes(raw_in)
    sb = Sandbox(root, name)
    out = sb.placeholders(oracle(sb, name, "read", str(case), "--all-leaves"))
    parsed = json.loads(out)
    if parsed.get("ok") and parsed["dump"]["header"]["id"] not in raw_in.decode("utf-8", "replace"):
        out = new_header_placeholders(out)
    dest = GOLDEN_READ / f"{name}.json"
    write_json(dest, Raw(out))
    return [case, dest]


def gen_no_oracle_case(root: Path, name: str) -> list[Path]:
    _doc, builder = NO_ORACLE_CASES[name]
    data = builder(Ctx(root, name))
    dest = NO_ORACLE / f"{name}.jsonl"
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return [dest]


def _ops_golden(ctx: Ctx, script: Script, memory: bool) -> str:
    _out, raw, sb = ctx.run_ops(script, memory=memory, all_leaves=True)
    files = {}
    if sb.dir.is_dir():
        for p in sorted(sb.dir.iterdir()):
            files[f"$DIR/{p.name}"] = p.read_text(encoding="utf-8")
    raw = sb.placeholders(raw)
    assert raw.endswith("}")
    # dirFiles is generate.py's addition: every file the run left in the session directory.
    return raw[:-1] + ',"dirFiles":' + sb.placeholders(compact(files)) + "}"


def gen_ops(root: Path, name: str) -> list[Path]:
    builder, memory = OPS_SCRIPTS[name]
    script = builder()
    src = OPS / f"{name}.json"
    src.parent.mkdir(parents=True, exist_ok=True)
    src.write_text(script.text(), encoding="utf-8")
    written = [src]
    ctx = Ctx(root, name)
    dest = GOLDEN_OPS / f"{name}.json"
    golden = _ops_golden(ctx, script, memory=False)
    write_json(dest, Raw(golden))
    written.append(dest)
    if memory:
        mdest = GOLDEN_OPS / f"{name}.memory.json"
        write_json(mdest, Raw(_ops_golden(ctx, script, memory=True)))
        written.append(mdest)
    if name == "demo_sample":
        text_ = json.loads(golden)["text"]
        SAMPLE.parent.mkdir(parents=True, exist_ok=True)
        SAMPLE.write_text(text_, encoding="utf-8")
        written.append(SAMPLE)
    return written


def run_fn_call(root: Path, index: int, call: dict, fixture: list[dict]) -> dict:
    sb = Sandbox(root, f"fn{index}-{call['name']}")
    if call["fixture"]:
        lay_fixture(fixture, sb.agent)
    args_text = call.get("args_raw") or compact(call["args"])
    seed = f"fn:{index}"
    out = sb.placeholders(oracle(sb, seed, call["kind"], call["name"], sb.real(args_text)))
    if call["new_header"] and json.loads(out).get("ok"):
        out = new_header_placeholders(out, keep_id=call["keep_id"])
    rec: dict[str, Any] = {
        "call": f"{call['kind']} {call['name']}",
        "args": Raw(args_text),
        "env": {"HOME": FAKE_HOME, "PI_CODING_AGENT_DIR": "$AGENT", "TZ": "UTC"},
        "cwd": NODE_CWD,
        "fixture": call["fixture"],
    }
    if "note" in call:
        rec["note"] = call["note"]
    rec["result"] = Raw(out)
    return rec


def gen_fn(root: Path, jobs: int) -> list[Path]:
    fixture = discovery_fixture()
    write_json(
        FIXTURES / "discovery.json",
        {
            "doc": "The session directory laid under $AGENT for the fn.json calls marked fixture: true. Write each "
            "file's text (for 'pad', replace marker by char * count), make 'dir' entries directories, then set "
            "every path's mtime (seconds since the epoch), directories last.",
            "files": fixture,
        },
    )
    calls = fn_calls()
    with concurrent.futures.ThreadPoolExecutor(jobs) as pool:
        records = list(pool.map(lambda ic: run_fn_call(root, ic[0], ic[1], fixture), enumerate(calls)))
    write_json(GOLDEN_FN, records)
    return [FIXTURES / "discovery.json", GOLDEN_FN]


def all_tasks() -> dict[str, Callable[[Path], list[Path]]]:
    tasks: dict[str, Callable[[Path], list[Path]]] = {}
    for name in READ:
        tasks[name] = lambda root, n=name: gen_read_case(root, n)
    for name in NO_ORACLE_CASES:
        tasks[f"no_oracle/{name}"] = lambda root, n=name: gen_no_oracle_case(root, n)
    for name in OPS_SCRIPTS:
        key = name if name not in tasks else f"ops/{name}"
        tasks[key] = lambda root, n=name: gen_ops(root, n)
    return tasks


def remove_stale(written: set[Path]) -> None:
    for folder, pattern in (
        (CASES, "*.jsonl"),
        (NO_ORACLE, "*.jsonl"),
        (GOLDEN_READ, "*.json"),
        (GOLDEN_OPS, "*.json"),
        (OPS, "*.json"),
    ):
        if folder.is_dir():
            for p in folder.glob(pattern):
                if p.resolve() not in written:
                    print(f"removing stale {p.relative_to(HERE)}")
                    p.unlink()


def main(argv: list[str] | None = None) -> int:
    sys.setrecursionlimit(20_000)  # the oracle's output holds entries nested 1,200 levels
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", help="regenerate one item: a read case, an op script, 'fn' or 'demo_sample'")
    ap.add_argument("--list", action="store_true", help="list the items and what each covers")
    ap.add_argument("--jobs", type=int, default=min(8, os.cpu_count() or 2))
    ap.add_argument("--keep-tmp", action="store_true", help="keep the temporary directory (for debugging)")
    args = ap.parse_args(argv)

    tasks = all_tasks()
    if args.list:
        for name, (doc, _) in READ.items():
            print(f"read  {name}: {doc}")
        for name, (doc, _) in NO_ORACLE_CASES.items():
            print(f"noorc {name}: {doc}")
        for name, (fn, mem) in OPS_SCRIPTS.items():
            print(f"ops   {name}{' (+memory)' if mem else ''}: {fn().doc}")
        print("fn    fn: static methods and exported functions (golden/fn.json)")
        return 0
    if args.only and args.only != "fn" and args.only not in tasks:
        ap.error(f"unknown item {args.only!r}; see --list")
    if not ORACLE.exists():
        print(f"oracle not found: {ORACLE} (set PI_ORACLE)", file=sys.stderr)
        return 2
    if shutil.which("node") is None:
        print("node not found", file=sys.stderr)
        return 2

    started = time.monotonic()
    root = Path(os.path.realpath(tempfile.mkdtemp(prefix="pisession-gen-")))
    written: set[Path] = set()
    try:
        selected = (
            {args.only: tasks[args.only]} if args.only and args.only != "fn" else ({} if args.only else tasks)
        )
        errors = []
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
            futures = {pool.submit(fn, root): name for name, fn in selected.items()}
            for fut in concurrent.futures.as_completed(futures):
                try:
                    written.update(p.resolve() for p in fut.result())
                except Exception as exc:  # report every failure, not just the first
                    errors.append(f"{futures[fut]}: {exc}")
        if not args.only or args.only == "fn":
            written.update(p.resolve() for p in gen_fn(root, args.jobs))
        if errors:
            print("\n".join(errors), file=sys.stderr)
            return 1
        if not args.only:
            remove_stale(written)
    finally:
        if args.keep_tmp:
            print(f"kept {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)
    size = sum(p.stat().st_size for p in written if p.exists())
    print(f"wrote {len(written)} files ({size / 1e6:.2f} MB) in {time.monotonic() - started:.1f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
