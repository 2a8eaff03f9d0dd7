"""Golden data for pisession.compaction, recorded from the reference (Pi 1.6.0 via the oracle).

    python tests/conformance/generate_compaction.py [--only fn,compact,navigate]   # needs node

Writes the session cases ``cases/compaction/<name>.jsonl`` (built here, in Pi's format) and
``golden/compaction/``:

- ``fn.json``: ``[{module, name, args, result}]``, ``oracle.mjs fn compaction:NAME`` /
  ``fn messages:NAME`` on messages and entries drawn from the cases (token estimates, cut points,
  ``prepareCompaction``, serialisation, file lists, branch collection and budgets);
- ``compact.json``: ``[{case, options, result}]``, ``oracle.mjs compact`` (Pi's manual compaction
  with a recording fake model) on each case with several settings;
- ``navigate.json``: ``[{case, options, result}]``, ``oracle.mjs navigate`` for many targets.

The reference's ids are made repeatable by ``oracle_seed.mjs`` and its clock is frozen, so a rerun
gives the same bytes.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CASES = HERE / "cases" / "compaction"
GOLDEN = HERE / "golden" / "compaction"
SEED_PRELOAD = HERE / "oracle_seed.mjs"
ORACLE = Path(os.environ.get("PI_ORACLE", HERE.parents[2].parent / "shared" / "pi-oracle" / "oracle.mjs"))
if not ORACLE.exists():
    ORACLE = Path("/work/shared/pi-oracle/oracle.mjs")
CLOCK = 1733234400000
# Read cases of generate.py that are ordinary Pi sessions (no malformed lines): reused here as they are.
READ_CASES = (
    "all_roles",
    "context_edits",
    "context_edit_compaction",
    "multiple_compactions",
    "system_replace_flag",
    "branch_summary_edges",
    "custom_message_edges",
    "compaction_system_message",
    "system_replay",
    "orphans",
    "tree_child_order",
    "label_edges",
)
USAGE = {
    "input": 1200,
    "output": 300,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 1500,
    "cost": {"input": 0.0036, "output": 0.0045, "cacheRead": 0, "cacheWrite": 0, "total": 0.0081},
}


# -- building sessions -----------------------------------------------------------------------------


class Session:
    """Writes a session file the way Pi lays one out (ids: 8 hex characters, repeatable)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.lines: list[dict[str, Any]] = []
        self.n = 0
        self.leaf: str | None = None
        self.header = {
            "type": "session",
            "version": 3,
            "id": "01938cd2-1b00-74af-b373-" + hashlib.sha256(name.encode()).hexdigest()[:12],
            "timestamp": self._ts(),
            "cwd": "/project",
        }

    def _ts(self) -> str:
        self.n += 1
        ms = self.n
        return f"2024-12-03T14:{ms // 60000:02d}:{(ms // 1000) % 60:02d}.{ms % 1000:03d}Z"

    def _id(self) -> str:
        return hashlib.sha256(f"{self.name}:{self.n}".encode()).hexdigest()[:8]

    def add(self, kind: str, parent: str | None | bool = True, **fields: Any) -> str:
        entry_id = self._id()
        parent_id = self.leaf if parent is True else parent
        entry = {"type": kind, "id": entry_id, "parentId": parent_id, "timestamp": self._ts(), **fields}
        self.lines.append(entry)
        self.leaf = entry_id
        return entry_id

    def msg(self, message: dict[str, Any], parent: str | None | bool = True) -> str:
        message = {**message, "timestamp": message.get("timestamp", CLOCK + self.n)}
        return self.add("message", parent, message=message)

    def user(self, text: Any, **kw: Any) -> str:
        return self.msg({"role": "user", "content": text}, **kw)

    def assistant(
        self, *blocks: dict[str, Any], usage: dict[str, Any] | None = None, stop: str = "stop", **kw: Any
    ) -> str:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": list(blocks),
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
        }
        if usage is not None:
            message["usage"] = usage
        message["stopReason"] = stop
        return self.msg(message, **kw)

    def tool(self, call_id: str, name: str, text: str, **kw: Any) -> str:
        return self.msg(
            {
                "role": "toolResult",
                "toolCallId": call_id,
                "toolName": name,
                "content": [{"type": "text", "text": text}],
                "isError": False,
            },
            **kw,
        )

    def write(self) -> Path:
        path = CASES / f"{self.name}.jsonl"
        text = "".join(
            json.dumps(x, ensure_ascii=False, separators=(",", ":")) + "\n"
            for x in [self.header, *self.lines]
        )
        path.write_text(text, encoding="utf-8")
        return path


def text(t: str) -> dict[str, Any]:
    return {"type": "text", "text": t}


def call(call_id: str, name: str, **args: Any) -> dict[str, Any]:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": args}


def usage(total: int) -> dict[str, Any]:
    return {
        "input": total - 100,
        "output": 100,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": total,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
    }


LOREM = ("The quick brown fox jumps over the lazy dog while the build runs its tests again. ") * 6
IMAGE = {
    "type": "image",
    "data": "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg==",  # noqa: E501
    "mimeType": "image/png",
}


def coding_turns(s: Session, turns: int, *, tag: str = "", big: bool = True) -> None:
    """User asks, the assistant reads, edits and writes files over several tool rounds."""
    for t in range(turns):
        s.user(f"{tag}Task {t}: please fix module_{t}.py. {LOREM[: 80 + 37 * t]}")
        s.assistant(
            {
                "type": "thinking",
                "thinking": f"Plan for task {t}. " + LOREM[:200],
                "thinkingSignature": "sig",
            },
            text(f"Reading module_{t}.py first."),
            call(f"c{t}a", "read", path=f"src/module_{t}.py"),
            usage=usage(4000 + 900 * t),
            stop="toolUse",
        )
        s.tool(f"c{t}a", "read", (f"def f_{t}():\n    return {t}\n" + LOREM) * (12 if big and t % 2 else 1))
        s.assistant(
            text("Now editing."),
            call(f"c{t}b", "edit", path=f"src/module_{t}.py", oldText="x", newText="y"),
            call(f"c{t}c", "write", path=f"tests/test_{t}.py", content="assert True\n" * 5),
            usage=usage(4500 + 900 * t),
            stop="toolUse",
        )
        s.tool(f"c{t}b", "edit", "edited")
        s.tool(f"c{t}c", "write", "written")
        s.assistant(text(f"Done with task {t}. " + LOREM[:120]), usage=usage(5000 + 900 * t))


def build_cases() -> dict[str, Path]:
    CASES.mkdir(parents=True, exist_ok=True)
    out: dict[str, Path] = {}

    s = Session("coding")
    s.msg(
        {
            "role": "system",
            "content": "You are Pi.",
            "sections": {"env": "<env>linux</env>"},
            "toolsAdded": [{"name": "read", "description": "Read a file", "parameters": {"type": "object"}}],
        }
    )
    s.add("model_change", provider="anthropic", modelId="claude-sonnet-4-5")
    s.add("thinking_level_change", thinkingLevel="medium")
    coding_turns(s, 6)
    out[s.name] = s.write()

    # One long turn of many tool rounds: a small keep budget cuts inside it (split turn).
    s = Session("long_turn")
    s.user("Refactor the whole package, one file at a time.")
    for r in range(10):
        s.assistant(
            text(f"Round {r}. " + LOREM[:150]),
            call(f"r{r}", "read", path=f"pkg/file_{r}.py"),
            usage=usage(3000 + 500 * r),
            stop="toolUse",
        )
        s.tool(f"r{r}", "read", LOREM * (3 + r))
    s.assistant(text("All files refactored."), usage=usage(9000))
    out[s.name] = s.write()

    # A previous compaction (Pi's, with file details) and one from an extension (fromHook).
    s = Session("recompact")
    coding_turns(s, 3, tag="early ")
    first_kept = s.lines[-7]["id"]
    s.add(
        "compaction",
        summary="## Goal\nFix modules 0-2.\n\n<read-files>\nsrc/old.py\n</read-files>",
        firstKeptEntryId=first_kept,
        tokensBefore=12000,
        details={"readFiles": ["src/old.py", "docs/a.md"], "modifiedFiles": ["src/module_0.py"]},
    )
    coding_turns(s, 3, tag="later ")
    out[s.name] = s.write()

    s = Session("recompact_hook")
    coding_turns(s, 2, tag="early ")
    first_kept = s.lines[-4]["id"]
    s.add(
        "compaction",
        summary="Extension summary.",
        firstKeptEntryId=first_kept,
        tokensBefore=9000,
        details={"readFiles": ["hook/only.py"], "modifiedFiles": []},
        fromHook=True,
    )
    coding_turns(s, 2, tag="later ")
    out[s.name] = s.write()

    # Context edits: hiding and replacing entries inside the kept range, at its edge, and a failed
    # attempt hidden at the end (the recovery-omission suffix).
    s = Session("edits")
    coding_turns(s, 4)
    ids = [e["id"] for e in s.lines]
    s.add("context_edit", targetId=ids[3], replacement={"content": "(file contents elided)"})
    s.add("context_edit", targetId=ids[-1], replacement={"content": [text("Done (edited).")]})
    s.add("context_edit", targetId=ids[-8], replacement=None)
    s.user("One more thing: rename the helper.")
    failed = s.assistant(text("Renaming" + LOREM), usage=usage(0), stop="error")
    s.add("context_edit", targetId=failed, replacement=None)
    out[s.name] = s.write()

    # Everything serializeConversation and estimateTokens treat specially.
    s = Session("kinds")
    s.user([text("Look at this screenshot"), IMAGE])
    s.assistant(
        {"type": "thinking", "thinking": "Thinking is left out of summaries.", "thinkingSignature": "x"},
        {"type": "thinking", "thinking": "", "thinkingSignature": "opaque", "redacted": True},
        text("I see a dialog."),
        text("Second text block."),
        call("k1", "bash", command="ls -la", timeout=30),
        call("k2", "read", path="ü/naïve 😀.py"),
        usage=usage(2500),
        stop="toolUse",
    )
    s.msg(
        {
            "role": "toolResult",
            "toolCallId": "k1",
            "toolName": "bash",
            "content": [text("x" * 1999 + "😀" + "tail" * 300)],
            "isError": False,
        }
    )
    s.msg(
        {
            "role": "toolResult",
            "toolCallId": "k2",
            "toolName": "read",
            "content": [text("short"), IMAGE, text("after image")],
            "isError": True,
            "nestedCalls": {
                "calls": [
                    {"name": "write", "arguments": {"path": "nested/out.txt"}},
                    {"name": "edit", "arguments": {"path": 7}},
                ]
            },
        }
    )
    s.msg(
        {
            "role": "bashExecution",
            "command": "make test",
            "output": "FAILED 2 tests\n",
            "exitCode": 2,
            "cancelled": False,
            "truncated": True,
            "fullOutputPath": "/tmp/full.txt",
        }
    )
    s.msg(
        {
            "role": "bashExecution",
            "command": "sleep 100",
            "output": "",
            "exitCode": None,
            "cancelled": True,
            "truncated": False,
        }
    )
    s.msg(
        {
            "role": "bashExecution",
            "command": "cat secrets",
            "output": "x",
            "exitCode": 0,
            "cancelled": False,
            "truncated": False,
            "excludeFromContext": True,
        }
    )
    s.add("custom_message", customType="ext.note", content="A note from an extension. " + LOREM, display=True)
    s.add(
        "custom_message",
        customType="ext.blocks",
        content=[text("Block note"), IMAGE],
        display=False,
        details={"n": 1},
    )
    s.add("custom", customType="ext.state", data={"k": 1})
    s.add("label", targetId=s.lines[0]["id"], label="start")
    s.add("session_info", name="kinds")
    s.user("Unicode: 😀 emoji, ü, \u2028 separators and a very long line " + "é" * 400)
    s.assistant(text("Done. " + LOREM), usage=usage(6000))
    s.user("Thanks!")
    out[s.name] = s.write()

    # A tree: two explored branches with a branch summary and labels.
    s = Session("tree")
    root = s.user("Start the investigation.")
    s.assistant(text("Starting."), usage=usage(1200))
    fork = s.user("Try approach A.")
    s.assistant(text("A: reading."), call("a1", "read", path="a/one.py"), usage=usage(1500), stop="toolUse")
    s.tool("a1", "read", LOREM * 4)
    s.assistant(text("A: editing."), call("a2", "edit", path="a/one.py"), usage=usage(1800), stop="toolUse")
    s.tool("a2", "edit", "ok")
    s.add("custom_message", customType="ext.note", content=[text("custom in A")], display=True)
    a_leaf = s.assistant(text("A works partly. " + LOREM), usage=usage(2400))
    s.add(
        "branch_summary",
        parent=fork,
        fromId=a_leaf,
        summary="The user explored approach A.\n\n<modified-files>\na/one.py\n</modified-files>",
        details={"readFiles": ["a/notes.md"], "modifiedFiles": ["a/one.py"]},
    )
    s.user("Try approach B instead.")
    s.assistant(text("B: writing."), call("b1", "write", path="b/two.py"), usage=usage(2000), stop="toolUse")
    s.tool("b1", "write", "ok")
    s.add(
        "branch_summary",
        fromId="root",
        summary="Hook summary.",
        details={"readFiles": ["hook.py"]},
        fromHook=True,
    )
    s.add("compaction", summary="Compacted B.", firstKeptEntryId=s.lines[-3]["id"], tokensBefore=5000)
    b_leaf = s.assistant(text("B done. " + LOREM), usage=usage(2600))
    s.add("label", targetId=root, label="root")
    s.leaf = b_leaf
    s.add("custom_message", parent=root, customType="ext.prompt", content="Custom target text", display=True)
    s.assistant(text("reply to custom"), usage=usage(1300))
    s.leaf = b_leaf
    s.user("Last question on B?", parent=b_leaf)
    out[s.name] = s.write()

    s = Session("tiny")
    s.user("hello")
    out[s.name] = s.write()

    s = Session("compacted")
    coding_turns(s, 2)
    s.add("compaction", summary="done", firstKeptEntryId=s.lines[-2]["id"], tokensBefore=100)
    out[s.name] = s.write()

    # System messages, one with replace: true (Pi 1.6.0 ignores the flag when estimating), no usage.
    s = Session("system_replace")
    s.msg({"role": "system", "content": "Base prompt " + LOREM, "sections": {"a": LOREM}})
    s.user("first question " + LOREM)
    s.msg({"role": "system", "content": "Replacement prompt", "replace": True})
    for t in range(4):
        s.assistant(text(f"answer {t} " + LOREM))
        s.user(f"question {t} " + LOREM)
    out[s.name] = s.write()

    s = Session("only_meta")
    s.add("model_change", provider="openai", modelId="gpt-5")
    s.add("thinking_level_change", thinkingLevel="high")
    out[s.name] = s.write()
    for name in READ_CASES:
        out[name] = case_path(name)
    return out


def case_path(name: str) -> Path:
    """A case of this script, or one of generate.py's read cases."""
    own = CASES / f"{name}.jsonl"
    return own if own.exists() or name not in READ_CASES else HERE / "cases" / f"{name}.jsonl"


# -- running the oracle ---------------------------------------------------------------------------------


def oracle(seed: str, *argv: str) -> Any:
    env = {**os.environ, "TZ": "UTC", "PI_ORACLE_SEED": seed}
    proc = subprocess.run(
        ["node", "--import", SEED_PRELOAD.as_uri(), str(ORACLE), *argv],
        env=env,
        capture_output=True,
        timeout=120,
        check=False,
        cwd="/",
    )
    if proc.returncode != 0:
        raise RuntimeError(f"oracle failed: {argv}\n{proc.stderr.decode(errors='replace')}")
    return json.loads(proc.stdout)


def read_entries(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").split("\n")[1:] if line]


def path_to(entries: list[dict[str, Any]], leaf: str) -> list[dict[str, Any]]:
    by_id = {e["id"]: e for e in entries}
    out = []
    cur: Any = by_id.get(leaf)
    while cur:
        out.append(cur)
        cur = by_id.get(cur["parentId"]) if cur["parentId"] else None
    return out[::-1]


def case_value(ref: str) -> Any:
    """A recorded argument ``"$branch:NAME"`` (also ``$entries``, ``$messages``, ``$serial``) as
    the value it stands for: the case's leaf path, entries, messages, or messages without bash."""
    kind, name = ref[1:].split(":", 1)
    entries = read_entries(case_path(name))
    if kind == "branch":
        return path_to(entries, entries[-1]["id"])
    if kind == "entries":
        return entries
    messages = [e["message"] for e in entries if e["type"] == "message"]
    if kind == "messages":
        return messages
    return [m for m in messages if m["role"] != "bashExecution"]


def resolve_args(args: list[Any]) -> list[Any]:
    return [case_value(a) if isinstance(a, str) and a.startswith("$") and ":" in a else a for a in args]


def fn_calls(cases: dict[str, Path]) -> list[tuple[str, str, list[Any]]]:
    """(module, function, arguments): ``"$branch:NAME"``-style arguments stand for case data."""
    calls: list[tuple[str, str, list[Any]]] = []
    c = calls.append
    settings = {"enabled": True, "reserveTokens": 16384, "keepRecentTokens": 20000}
    for name, path in cases.items():
        entries = read_entries(path)
        if not entries:
            continue
        branch = path_to(entries, entries[-1]["id"])
        messages = [e["message"] for e in entries if e["type"] == "message"]
        for m in messages[:: max(1, len(messages) // 12)]:
            c(("compaction", "estimateTokens", [m]))
        c(("compaction", "estimateContextTokens", [f"$messages:{name}"]))
        c(("compaction", "getLastAssistantUsage", [f"$entries:{name}"]))
        c(("messages", "convertToLlm", [f"$messages:{name}"]))
        c(("compaction", "serializeConversation", [f"$serial:{name}"]))
        n = len(branch)
        for keep in (0, 1, 50, 300, 1000, 3000, 20000):
            c(("compaction", "findCutPoint", [f"$branch:{name}", 0, n, keep]))
        for keep in (1, 300, 3000):
            c(
                (
                    "compaction",
                    "prepareCompaction",
                    [f"$branch:{name}", {**settings, "keepRecentTokens": keep}],
                )
            )
        c(("compaction", "findCutPoint", [f"$branch:{name}", min(3, n), n, 200]))
        for i in range(0, n, max(1, n // 6)):
            c(("compaction", "findTurnStartIndex", [f"$branch:{name}", i, 0]))
        for budget in (0, -5, 1, 700, 3000):
            c(("compaction", "prepareBranchEntries", [f"$entries:{name}", budget]))
        ids = [e["id"] for e in entries]
        for old, target in [
            (ids[-1], ids[0]),
            (ids[-1], ids[len(ids) // 2]),
            (ids[len(ids) // 2], ids[-1]),
            (None, ids[0]),
            (ids[-1], "nope"),
        ]:
            c(("compaction", "collectEntriesForBranchSummary", [{"$open": str(path)}, old, target]))

    # A stored summary squeezes in while under 90% of the budget is used.
    def summary_entry(kind: str, tokens: int) -> dict[str, Any]:
        extra = {"fromId": "f0"} if kind == "branch_summary" else {"firstKeptEntryId": "x", "tokensBefore": 1}
        return {
            "type": kind,
            "id": f"s{tokens}",
            "parentId": None,
            "timestamp": "2024-12-03T14:00:00.000Z",
            "summary": "s" * (4 * tokens),
            **extra,
        }

    def user_entry(tokens: int) -> dict[str, Any]:
        return {
            "type": "message",
            "id": f"u{tokens}",
            "parentId": None,
            "timestamp": "2024-12-03T14:00:00.000Z",
            "message": {"role": "user", "content": "u" * (4 * tokens), "timestamp": 1},
        }

    for kind in ("branch_summary", "compaction"):
        for newest in (850, 899, 900, 920):
            c(("compaction", "prepareBranchEntries", [[summary_entry(kind, 200), user_entry(newest)], 1000]))
    c(("compaction", "prepareBranchEntries", [[user_entry(5), user_entry(990), user_entry(10)], 1000]))
    for usage_ in (
        USAGE,
        {**USAGE, "totalTokens": 0},
        {"input": 1, "output": 2, "cacheRead": 3, "cacheWrite": 4},
    ):
        c(("compaction", "calculateContextTokens", [usage_]))
    for tokens, window, enabled in [
        (100, 200, True),
        (183617, 200000, True),
        (183616, 200000, True),
        (10**6, 1000, False),
    ]:
        c(("compaction", "shouldCompact", [tokens, window, {**settings, "enabled": enabled}]))
    ops = {
        "read": ["b.py", "a.py", "z/😀.py", "z/\uff61.py", "c.py"],
        "written": ["c.py", "w.py"],
        "edited": ["a.py", "e.py"],
    }
    c(("compaction", "computeFileLists", [ops]))
    c(("compaction", "computeFileLists", [{"read": [], "written": [], "edited": []}]))
    for read, modified in [([], []), (["a"], []), ([], ["m"]), (["a", "b"], ["m"])]:
        c(("compaction", "formatFileOperations", [read, modified]))
    for args in (["s", "abc", "2024-12-03T14:00:00.000Z"], ["", "root", 1733234400000]):
        c(("messages", "createBranchSummaryMessage", args))
    c(("messages", "createCompactionSummaryMessage", ["s", 123, "2024-12-03T14:00:00.005Z"]))
    c(("messages", "createCustomMessage", ["t", "text", True, {"a": 1}, "2024-12-03T14:00:00.005Z"]))
    c(("messages", "createCustomMessage", ["t", [text("x")], False, None, "not a date"]))
    return calls


def compact_runs(cases: dict[str, Path]) -> list[tuple[str, dict[str, Any]]]:
    runs: list[tuple[str, dict[str, Any]]] = []
    for name in cases:
        for keep in (20000, 3000, 1000, 300, 50, 1):
            runs.append(
                (name, {"settings": {"keepRecentTokens": keep}, "replies": ["HISTORY SUMMARY", "PREFIX"]})
            )
    for name in ("coding", "long_turn", "recompact", "edits"):
        runs.append(
            (
                name,
                {
                    "settings": {"keepRecentTokens": 1000},
                    "customInstructions": "Focus on tests.",
                    "thinkingLevel": "high",
                    "reasoning": True,
                    "replies": ["H", "P"],
                },
            )
        )
        runs.append(
            (name, {"settings": {"keepRecentTokens": 1000}, "thinkingLevel": "off", "reasoning": True})
        )
    return [(n, {**o, "clock": CLOCK}) for n, o in runs]


def navigate_runs(cases: dict[str, Path]) -> list[tuple[str, dict[str, Any]]]:
    runs: list[tuple[str, dict[str, Any]]] = []
    for name, path in cases.items():
        entries = read_entries(path)
        ids = [e["id"] for e in entries]
        step = max(1, len(ids) // 8)
        for i, target in enumerate([*ids[::step], ids[-1] if ids else "x", "missing-id"]):
            opts: dict[str, Any] = {"target": target, "summarize": i % 3 != 2, "replies": ["BRANCH SUMMARY"]}
            if i % 4 == 1:
                opts["label"] = f"mark {i}"
            if i % 5 == 3:
                opts["customInstructions"] = "Keep the file names."
            runs.append((name, opts))
    tree = read_entries(cases["tree"])
    tid = [e["id"] for e in tree]
    for target in tid:
        runs.append(("tree", {"target": target, "summarize": True, "label": "t", "replies": ["S"]}))
    extra = [
        {
            "target": tid[2],
            "summarize": True,
            "customInstructions": "Only list decisions.",
            "replaceInstructions": True,
        },
        {"target": tid[2], "summarize": True, "replaceInstructions": True},
        {"target": tid[0], "summarize": True, "reserveTokens": 199990},
        {"target": tid[0], "summarize": True, "reserveTokens": 200000},
        {"target": tid[0], "summarize": True, "reserveTokens": 300000},
        {"target": tid[0], "summarize": True, "reserveTokens": 199000},
        {"target": tid[0], "summarize": True, "contextWindow": 1000, "reserveTokens": 400},
        {"target": tid[0], "summarize": True, "thinkingLevel": "medium", "reasoning": True},
    ]
    runs.extend(("tree", o) for o in extra)
    return [(n, {**o, "clock": CLOCK}) for n, o in runs]


def main() -> None:
    cases = build_cases()
    GOLDEN.mkdir(parents=True, exist_ok=True)
    rel = {name: str(path.relative_to(HERE)) for name, path in cases.items()}

    def run_fn(item: tuple[int, tuple[str, str, list[Any]]]) -> dict[str, Any]:
        i, (module, fname, args) = item
        result = oracle(f"fn{i}", "fn", f"{module}:{fname}", json.dumps(resolve_args(args)))
        result.pop("args", None)
        return {"module": module, "name": fname, "args": _relative(args), "result": _relative(result)}

    def run_mode(mode: str) -> Any:
        def run(item: tuple[int, tuple[str, dict[str, Any]]]) -> dict[str, Any]:
            i, (name, opts) = item
            result = oracle(f"{mode}{i}", mode, str(cases[name]), "--options", json.dumps(opts))
            dump = result.pop("dump", None) or {}
            result["leafId"] = dump.get("leafId")
            # Only what the run appended: the case file itself is committed next to it.
            original = cases[name].read_text(encoding="utf-8")
            assert result["text"].startswith(original)
            result["appended"] = result.pop("text")[len(original) :]
            return {"case": name, "options": opts, "result": result}

        return run

    jobs = int(os.environ.get("JOBS", "2"))
    only = (
        sys.argv[sys.argv.index("--only") + 1].split(",")
        if "--only" in sys.argv
        else ["fn", "compact", "navigate"]
    )
    out: dict[str, list[dict[str, Any]]] = {}
    with ThreadPoolExecutor(jobs) as pool:
        if "fn" in only:
            out["fn"] = list(pool.map(run_fn, enumerate(fn_calls(cases))))
        if "compact" in only:
            out["compact"] = list(pool.map(run_mode("compact"), enumerate(compact_runs(cases))))
        if "navigate" in only:
            out["navigate"] = list(pool.map(run_mode("navigate"), enumerate(navigate_runs(cases))))
    for name, data in out.items():
        (GOLDEN / f"{name}.json").write_text(
            json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    print({name: len(data) for name, data in out.items()}, "cases:", sorted(rel))


def _relative(value: Any) -> Any:
    """``{"$open": absolute path}`` arguments recorded relative to this folder."""
    if isinstance(value, dict):
        if set(value) == {"$open"}:
            return {"$open": str(Path(value["$open"]).relative_to(HERE))}
        return {k: _relative(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_relative(v) for v in value]
    return value


if __name__ == "__main__":
    sys.exit(main())
