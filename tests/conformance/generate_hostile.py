"""Golden data for compaction on hostile content Pi accepts, recorded from Pi 1.6.0 (the oracle).

    python tests/conformance/generate_hostile.py [--only compact,navigate,fn]   # needs the oracle

Pi reads a session without checking any types, so text that is an object, a usage count that is
a string or tool arguments that are an array reach its compaction, where JavaScript's ``.length``,
``+`` and ``>`` decide what it cuts, counts and sends. This script builds sessions full of such
values from a fixed seed (``cases/hostile/<name>.jsonl``) and records ``golden/hostile/``:

- ``compact.json``: ``[{case, options, result}]``, ``oracle.mjs compact`` on each case with a few
  keep budgets: Pi's preparation, the summarization requests and the lines it appended (or its
  error, a JavaScript TypeError where Pi itself crashes on a value);
- ``navigate.json``: ``[{case, options, result}]``, ``oracle.mjs navigate`` from each case's leaf
  to an entry a third of the way in, with the abandoned branch summarized;
- ``fn.json``: ``[{module, name, args, result}]``, ``fn compaction:NAME`` on the cases' messages,
  entries and usages (``estimateTokens``, ``calculateContextTokens``, ``estimateContextTokens``,
  ``getLastAssistantUsage``, ``findCutPoint``, ``serializeConversation``, ``convertToLlm``).

``tests/conformance/test_hostile_compaction.py`` checks pisession against both without Node, and
runs :func:`hostile_session` on fresh seeds against the live oracle where it is installed.
"""

from __future__ import annotations

import json
import random
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from generate_compaction import CLOCK, HERE, Session, oracle, path_to, read_entries

CASES = HERE / "cases" / "hostile"
GOLDEN = HERE / "golden" / "hostile"
SESSIONS = 36
KEEPS = (1, 60, 400)

# Values Pi reads without complaint where a string or a number belongs.
ODD_TEXT: list[Any] = [
    {"k": "v"},
    5,
    0,
    -3,
    1.5,
    True,
    False,
    None,
    [],
    ["ab", 1, None, ["c"]],
    {"length": 7},
    {"length": "12"},
    {"length": -40},
    {"length": 1e300},
    {},
    "",
    "NaN",
    "0x10",
    " 12 ",
    "😀 emoji",
]
ODD_NUMBERS: list[Any] = [
    "500",
    "abc",
    "",
    "NaN",
    "Infinity",
    " 7 ",
    "0x20",
    "1e3",
    -500,
    0,
    1.5,
    2**60,
    1e300,
    True,
    None,
    [5],
    [1, 2],
    {"n": 1},
]
ODD_ROLES: list[Any] = ["weird", "User", 5, None, ["user"], {"role": "user"}, ""]


def _words(rng: random.Random, n: int) -> str:
    pool = ["fix", "the", "build", "😀", "naïve", "tests", "module", "\u2028", "path/to/file.py"]
    return " ".join(rng.choice(pool) for _ in range(n))


def _text(rng: random.Random) -> Any:
    return rng.choice(ODD_TEXT) if rng.random() < 0.35 else _words(rng, rng.randint(0, 120))


def _number(rng: random.Random) -> Any:
    return rng.choice(ODD_NUMBERS) if rng.random() < 0.5 else rng.randint(0, 30000)


def _usage(rng: random.Random) -> Any:
    if rng.random() < 0.1:
        return rng.choice([None, "usage", 5, [], {}])
    usage = {k: _number(rng) for k in ("input", "output", "cacheRead", "cacheWrite", "totalTokens")}
    if rng.random() < 0.3:
        del usage[rng.choice(list(usage))]
    usage["cost"] = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
    return usage


def _arguments(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.55:
        args: dict[str, Any] = {"path": rng.choice(["a.py", "src/😀.py", "", 5, None, ["x"]])}
        if rng.random() < 0.5:
            args[rng.choice(["2", "10", "command", "b"])] = _text(rng)
        return args
    return rng.choice(["ls -la", "😀", "", ["a", 1], [], 5, True, None, {"0": "x", "b": [1]}])


def _content(rng: random.Random) -> Any:
    roll = rng.random()
    if roll < 0.3:
        return _words(rng, rng.randint(1, 150))
    if roll < 0.35:
        return rng.choice([5, {"type": "text", "text": "x"}, "", []])
    blocks: list[Any] = []
    for _ in range(rng.randint(1, 3)):
        kind = rng.random()
        if kind < 0.7:
            blocks.append({"type": "text", "text": _text(rng)})
        elif kind < 0.8:
            blocks.append({"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"})
        else:
            blocks.append(rng.choice([{"type": 5}, {"type": "texts", "text": "x"}, "plain", 7, [1]]))
    return blocks


def _assistant_blocks(rng: random.Random, turn: int) -> list[Any]:
    blocks: list[Any] = []
    for i in range(rng.randint(1, 3)):
        kind = rng.random()
        if kind < 0.4:
            blocks.append({"type": "text", "text": _text(rng)})
        elif kind < 0.55:
            blocks.append({"type": "thinking", "thinking": _text(rng), "thinkingSignature": "s"})
        elif kind < 0.95:
            name = (
                rng.choice(["read", "edit", "write", "bash"]) if rng.random() < 0.8 else rng.choice(ODD_TEXT)
            )
            blocks.append(
                {"type": "toolCall", "id": f"c{turn}.{i}", "name": name, "arguments": _arguments(rng)}
            )
        else:
            blocks.append(rng.choice([{"type": None}, "text", 3]))
    return blocks


def hostile_session(rng: random.Random, name: str) -> Session:
    """A linear session (with the odd context edit, compaction and branch summary) whose fields
    hold the values above; the same ``rng`` state gives the same session."""
    s = Session(name)
    if rng.random() < 0.4:
        s.msg(
            {
                "role": "system",
                "content": _content(rng),
                "sections": rng.choice([{"env": _text(rng)}, "ab", ["x", 5], 5, None, {"a": "x", "1": "y"}]),
                "toolsAdded": rng.choice([None, [{"name": "read"}], "tools", 0, {"a": 1}]),
            }
        )
    ids: list[str] = []
    for turn in range(rng.randint(3, 9)):
        roll = rng.random()
        if roll < 0.07:
            ids.append(s.msg({"role": rng.choice(ODD_ROLES), "content": _content(rng)}))
        elif roll < 0.15:
            ids.append(
                s.msg(
                    {
                        "role": "bashExecution",
                        "command": _text(rng),
                        "output": _text(rng),
                        "exitCode": rng.choice([0, 1, None, "0", False, "x", 2.5]),
                        "cancelled": rng.choice([False, True, 0, "yes"]),
                        "truncated": rng.choice([False, True]),
                        "fullOutputPath": rng.choice(["/tmp/o", None, 5, {"p": 1}]),
                    }
                )
            )
        elif roll < 0.22:
            ids.append(
                s.add(
                    "custom_message",
                    customType=rng.choice(["ext.note", 5]),
                    content=_content(rng),
                    display=rng.choice([True, False]),
                )
            )
        else:
            ids.append(s.user(_content(rng)))
        for _ in range(rng.randint(0, 2)):
            blocks = _assistant_blocks(rng, turn)
            ids.append(
                s.assistant(
                    *blocks,
                    usage=_usage(rng) if rng.random() < 0.9 else None,
                    stop=rng.choice(["stop", "toolUse", "toolUse", "error", "aborted", 5]),
                )
            )
            for block in blocks:
                if isinstance(block, dict) and block.get("type") == "toolCall" and rng.random() < 0.8:
                    ids.append(
                        s.msg(
                            {
                                "role": "toolResult",
                                "toolCallId": block["id"],
                                "toolName": block["name"],
                                "content": _content(rng),
                                "isError": False,
                                **(
                                    {
                                        "nestedCalls": {
                                            "calls": [{"name": "read", "arguments": _arguments(rng)}]
                                        }
                                    }
                                    if rng.random() < 0.15
                                    else {}
                                ),
                            }
                        )
                    )
        roll = rng.random()
        if roll < 0.12 and ids:
            s.add(
                "context_edit",
                targetId=rng.choice(ids),
                replacement=rng.choice([None, {"content": _content(rng)}, {"content": "elided"}]),
            )
        elif roll < 0.2 and len(ids) > 2:
            s.add(
                "compaction",
                summary=rng.choice([_words(rng, 30), *ODD_TEXT]),
                firstKeptEntryId=rng.choice(ids[-3:]),
                tokensBefore=_number(rng),
                details=rng.choice(
                    [
                        {"readFiles": ["old.py", 5], "modifiedFiles": ["m.py"]},
                        {"readFiles": "x"},
                        None,
                        5,
                    ]
                ),
                **({"fromHook": True} if rng.random() < 0.2 else {}),
            )
        elif roll < 0.26:
            s.add(
                "branch_summary",
                fromId=rng.choice(ids) if ids else "root",
                summary=rng.choice([_words(rng, 20), *ODD_TEXT]),
            )
    return s


_USAGE = {
    "input": 1,
    "output": 1,
    "cacheRead": 0,
    "cacheWrite": 0,
    "totalTokens": 2,
    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
}
SETTINGS = {"enabled": True, "reserveTokens": 16384, "keepRecentTokens": 20000}


def extra_calls() -> list[tuple[str, str, list[Any]]]:
    """Single values the generated sessions may miss."""
    calls: list[tuple[str, str, list[Any]]] = []
    for tokens in ["190000", "abc", "", None, [190000], True, 183617, "1e6"]:
        calls.append(("compaction", "shouldCompact", [tokens, 200000, SETTINGS]))
    for usage in [
        {"totalTokens": "500"},
        {"totalTokens": 0, "input": "5", "output": 3, "cacheRead": 0, "cacheWrite": 0},
        {"input": 1},
        {"totalTokens": [5]},
        {"totalTokens": True},
        {"totalTokens": 0, "input": None, "output": [], "cacheRead": False, "cacheWrite": {}},
    ]:
        calls.append(("compaction", "calculateContextTokens", [usage]))
    for message in [
        {"role": "user", "content": [{"type": "text", "text": {"k": "v"}}]},
        {"role": "user", "content": [{"type": "text", "text": 5}, {"type": "text", "text": "abcd"}]},
        {"role": "user", "content": [{"type": "text", "text": {"length": "12"}}, {"type": "image"}]},
        {"role": "user", "content": [{"type": "text", "text": ["a", "b", "c", "d", "e"]}]},
        {"role": "assistant", "content": [{"type": "text", "text": 5}]},
        {"role": "assistant", "content": [{"type": "toolCall", "name": {"length": "7"}, "arguments": {}}]},
        {"role": "assistant", "content": "a string is no list of blocks"},
        {"role": "bashExecution", "command": 5, "output": "x"},
        {"role": "compactionSummary", "summary": [1, 2, 3, 4, 5]},
        {"role": "system", "content": "s", "sections": ["abc", 5, "de"], "toolsAdded": "tools"},
    ]:
        calls.append(("compaction", "estimateTokens", [message]))
    return calls


def prompt_sessions() -> list[Session]:
    """Hand-made cases for the summarization prompt: tool arguments that are not an object (Pi's
    ``Object.entries`` lists a string's characters and an array's items), and a previous
    compaction whose summary is not a string (Pi tests it for truth and writes it with String())."""
    out = []
    # Pi throws on null arguments ("Cannot convert undefined or null to object"): kept apart so
    # that every run of the first case compares a prompt.
    for name, values in (
        ("prompt_arguments", ["ls -la", ["a", 1, None], 5, {"2": "x", "b": 1, "1": "y"}, "😀!", True]),
        ("prompt_arguments_null", ["ls", None]),
    ):
        out.append(_arguments_session(name, values))
    return out + _issue_and_summary_sessions()


def _arguments_session(name: str, values: list[Any]) -> Session:
    s = Session(name)
    for turn, arguments in enumerate(values):
        s.user(f"Turn {turn}: run the tool. " + "x" * 200)
        s.assistant(
            {"type": "text", "text": "Calling."},
            {"type": "toolCall", "id": f"t{turn}", "name": "bash", "arguments": arguments},
            stop="toolUse",
        )
        s.tool(f"t{turn}", "bash", "done " * 40)
        s.assistant({"type": "text", "text": "Finished. " + "y" * 300})
    return s


def _issue_and_summary_sessions() -> list[Session]:
    out: list[Session] = []
    # Text that is an object or a number; a string totalTokens.
    s = Session("issue_text_not_string")
    s.user("hi " * 500)
    s.assistant({"type": "text", "text": {"k": "v"}}, usage=_USAGE)
    s.user([{"type": "text", "text": 5}])
    s.assistant({"type": "text", "text": "ok " * 400}, usage=_USAGE)
    s.user("bye")
    out.append(s)
    s = Session("issue_total_tokens_string")
    s.user("hi " * 500)
    s.assistant({"type": "text", "text": "x" * 3000}, usage={**_USAGE, "totalTokens": "500"})
    s.user("again " * 300)
    s.assistant({"type": "text", "text": "y" * 3000}, usage={**_USAGE, "totalTokens": "500"})
    s.user("bye")
    out.append(s)
    for label, summary in [
        ("object", {"k": "v"}),
        ("number", 42),
        ("zero", 0),
        ("array", ["first", None, 2]),
        ("null", None),
        ("false", False),
        ("empty", ""),
    ]:
        s = Session(f"prompt_previous_{label}")
        kept = ""
        for turn in range(3):
            kept = s.user(f"Early {turn}. " + "e" * 300)
            s.assistant({"type": "text", "text": "ok " * 100})
        s.add("compaction", summary=summary, firstKeptEntryId=kept, tokensBefore=5000)
        for turn in range(3):
            s.user(f"Later {turn}. " + "l" * 300)
            s.assistant(
                {"type": "text", "text": "working " * 30},
                {"type": "toolCall", "id": f"l{turn}", "name": "read", "arguments": {"path": f"f{turn}.py"}},
                stop="toolUse",
            )
            s.tool(f"l{turn}", "read", "content " * 60)
        out.append(s)
    return out


def write_session(session: Session, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{session.name}.jsonl"
    text = "".join(
        json.dumps(x, ensure_ascii=False, separators=(",", ":")) + "\n"
        for x in [session.header, *session.lines]
    )
    path.write_text(text, encoding="utf-8")
    return path


def compact_options(keep: int) -> dict[str, Any]:
    return {"settings": {"keepRecentTokens": keep}, "replies": ["HISTORY", "PREFIX"], "clock": CLOCK}


def record_compact(path: Path, options: dict[str, Any], seed: str) -> dict[str, Any]:
    """The oracle's compact run, reduced to what the tests compare (the lines appended, not the
    whole file or the dump)."""
    result = oracle(seed, "compact", str(path), "--options", json.dumps(options))
    dump = result.pop("dump", None) or {}
    result["leafId"] = dump.get("leafId")
    if "text" in result:
        original = path.read_text(encoding="utf-8")
        assert result["text"].startswith(original)
        result["appended"] = result.pop("text")[len(original) :]
    return result


def case_value(ref: Any) -> Any:
    """An argument ``"$messages:NAME"`` (also ``$entries``, ``$branch``) as the case data it
    names; anything else as it is."""
    if not (isinstance(ref, str) and ref.startswith("$") and ":" in ref):
        return ref
    kind, name = ref[1:].split(":", 1)
    entries = read_entries(CASES / f"{name}.jsonl")
    if kind == "entries":
        return entries
    if kind == "branch":
        return path_to(entries, entries[-1]["id"])
    return [e["message"] for e in entries if e["type"] == "message"]


def navigate_options(path: Path) -> dict[str, Any]:
    """Leave the branch for an entry a third of the way in, summarizing what is abandoned."""
    entries = read_entries(path)
    target = entries[len(entries) // 3]["id"]
    return {"target": target, "summarize": True, "replies": ["BRANCH"], "clock": CLOCK}


def record_navigate(path: Path, options: dict[str, Any], seed: str) -> dict[str, Any]:
    result = oracle(seed, "navigate", str(path), "--options", json.dumps(options))
    dump = result.pop("dump", None) or {}
    result["leafId"] = dump.get("leafId")
    if "text" in result:
        original = path.read_text(encoding="utf-8")
        assert result["text"].startswith(original)
        result["appended"] = result.pop("text")[len(original) :]
    return result


def fn_calls(path: Path) -> list[tuple[str, str, list[Any]]]:
    """(module, function, arguments); a whole session's data is named by reference."""
    entries = read_entries(path)
    branch = path_to(entries, entries[-1]["id"])
    messages = [e["message"] for e in entries if e["type"] == "message"]
    name = path.stem
    sample = messages[:: max(1, len(messages) // 5)]
    calls: list[tuple[str, str, list[Any]]] = [("compaction", "estimateTokens", [m]) for m in sample]
    calls += [
        ("compaction", "calculateContextTokens", [m["usage"]])
        for m in messages
        if m.get("role") == "assistant" and isinstance(m.get("usage"), dict)
    ][:3]
    calls += [
        ("compaction", "estimateContextTokens", [f"$messages:{name}"]),
        ("compaction", "getLastAssistantUsage", [f"$entries:{name}"]),
        ("compaction", "findCutPoint", [f"$branch:{name}", 0, len(branch), 60]),
        ("messages", "convertToLlm", [f"$messages:{name}"]),
        ("compaction", "serializeConversation", [f"$messages:{name}"]),
    ]
    return calls


def main() -> None:
    rng = random.Random(20261204)
    paths = [write_session(hostile_session(rng, f"hostile_{i:02d}"), CASES) for i in range(SESSIONS)]
    paths += [write_session(session, CASES) for session in prompt_sessions()]
    runs = [(path, keep) for path in paths for keep in KEEPS]
    calls = [(path, call) for path in paths for call in fn_calls(path)]
    calls += [(paths[0], call) for call in extra_calls()]

    def run_compact(item: tuple[int, tuple[Path, int]]) -> dict[str, Any]:
        i, (path, keep) = item
        options = compact_options(keep)
        return {"case": path.stem, "options": options, "result": record_compact(path, options, f"hostile{i}")}

    def run_navigate(item: tuple[int, Path]) -> dict[str, Any]:
        i, path = item
        options = navigate_options(path)
        return {"case": path.stem, "options": options, "result": record_navigate(path, options, f"hnav{i}")}

    def run_fn(item: tuple[int, tuple[Path, tuple[str, str, list[Any]]]]) -> dict[str, Any]:
        i, (path, (module, name, args)) = item
        result = oracle(f"hfn{i}", "fn", f"{module}:{name}", json.dumps([case_value(a) for a in args]))
        result.pop("args", None)
        return {"case": path.stem, "module": module, "name": name, "args": args, "result": result}

    GOLDEN.mkdir(parents=True, exist_ok=True)
    only = (
        sys.argv[sys.argv.index("--only") + 1].split(",")
        if "--only" in sys.argv
        else ["compact", "navigate", "fn"]
    )
    out: dict[str, list[dict[str, Any]]] = {}
    with ThreadPoolExecutor(2) as pool:
        if "compact" in only:
            out["compact"] = list(pool.map(run_compact, enumerate(runs)))
        if "navigate" in only:
            out["navigate"] = list(pool.map(run_navigate, enumerate(paths)))
        if "fn" in only:
            out["fn"] = list(pool.map(run_fn, enumerate(calls)))
    for name, data in out.items():
        (GOLDEN / f"{name}.json").write_text(
            json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8"
        )
    print({name: len(data) for name, data in out.items()})


if __name__ == "__main__":
    sys.exit(main())
