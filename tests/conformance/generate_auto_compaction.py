"""Golden data for ``SessionManager.needs_compaction``: Pi 1.6.0's automatic compaction check
(``AgentSession._checkCompaction`` as ``_prepareRun`` calls it), recorded from the published code.

    python tests/conformance/generate_auto_compaction.py   # needs node and ../shared/pi-oracle/setup.sh

Writes the sessions ``cases/compaction/auto_<name>.jsonl`` (built here, in Pi's format: before
and after compactions, with context edits, failed, aborted and zero-usage replies) and
``golden/compaction/auto.json``: ``[{case, settings, decisions, tokens}]`` from
``check_compaction.mjs``, for those sessions, every other compaction case and the read cases
``generate_compaction.py`` reuses, under a few settings.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from generate_compaction import READ_CASES, Session, call, coding_turns, text, usage  # noqa: E402

CASES = HERE / "cases" / "compaction"
GOLDEN = HERE / "golden" / "compaction" / "auto.json"
CHECK = HERE / "check_compaction.mjs"
WINDOWS = [200000, 128000, 32000, 16000]
SETTINGS = [
    {"enabled": True, "reserveTokens": 16384, "keepRecentTokens": 20000},
    {"enabled": True, "reserveTokens": 4096, "keepRecentTokens": 20000},
    {"enabled": False, "reserveTokens": 16384, "keepRecentTokens": 20000},
]


def zero_usage() -> dict[str, Any]:
    return {**usage(100), "input": 0, "output": 0, "totalTokens": 0}


def failed(s: Session, error: str) -> str:
    """A reply the provider failed (not an overflow: Pi's check counts the context instead)."""
    return s.msg(
        {
            "role": "assistant",
            "content": [],
            "api": "anthropic-messages",
            "provider": "anthropic",
            "model": "claude-sonnet-4-5",
            "usage": zero_usage(),
            "stopReason": "error",
            "errorMessage": error,
        }
    )


def conversation(name: str) -> Session:
    s = Session(name)
    s.msg({"role": "system", "content": "You are Pi.", "sections": {"env": "linux"}})
    coding_turns(s, 3)
    return s


def compacted(name: str) -> tuple[Session, str]:
    """A conversation, then a compaction keeping its last turn (an assistant message with the
    old, large usage among the kept)."""
    s = conversation(name)
    kept = s.user("Keep going with module 3 " + "please " * 40)
    s.assistant(text("On it. " * 50), usage=usage(60000))
    compaction = s.add(
        "compaction", summary="What happened so far.", firstKeptEntryId=kept, tokensBefore=60000
    )
    return s, compaction


def build() -> list[str]:
    names = []

    def done(s: Session) -> None:
        s.write()
        names.append(s.name)

    s = conversation("auto_plain")
    s.user("And one more thing")
    s.assistant(text("Sure."), usage=usage(150000))
    done(s)

    done(compacted("auto_just_compacted")[0])

    s, _ = compacted("auto_compacted_then_a_turn")
    s.user("Next: the docs")
    s.assistant(text("Docs updated."), usage=usage(30000))
    done(s)

    s, _ = compacted("auto_compacted_then_an_error")
    s.user("Next: the docs")
    failed(s, "529 overloaded")
    done(s)

    s, _ = compacted("auto_compacted_then_a_turn_then_an_error")
    s.user("Next: the docs")
    s.assistant(text("Docs half done."), usage=usage(31000))
    s.user("and the changelog " * 30)
    failed(s, "529 overloaded")
    done(s)

    s = conversation("auto_error_reply")
    s.user("One more " * 50)
    failed(s, "socket hang up")
    done(s)

    s = conversation("auto_zero_usage")
    s.user("One more " * 50)
    s.assistant(text("A reply with no usage reported. " * 20), usage=zero_usage())
    done(s)

    s = conversation("auto_no_usage")
    s.user("One more " * 50)
    s.assistant(text("A reply without a usage field. " * 20))
    done(s)

    s = conversation("auto_aborted")
    s.user("One more " * 50)
    s.assistant(text("Partial"), usage=usage(140000), stop="aborted")
    done(s)

    s = conversation("auto_total_missing")
    s.user("One more " * 50)
    s.assistant(text("Done."), usage={**usage(0), "input": 50000, "output": 900, "cacheRead": 70000})
    done(s)

    s = conversation("auto_context_edit")
    result = s.tool("cx", "read", "big output " * 3000)
    s.assistant(text("Read it."), call("cy", "read", path="a.py"), usage=usage(125000), stop="toolUse")
    s.tool("cy", "read", "small")
    s.add("context_edit", targetId=result, replacement={"content": [text("(elided)")]})
    s.user("Go on")
    s.assistant(text("Going on."), usage=usage(126000))
    done(s)

    s, _ = compacted("auto_context_edit_after_compaction")
    s.user("Next " * 20)
    result = s.tool("cz", "read", "more output " * 2000)
    s.assistant(text("Read more."), usage=usage(70000))
    s.add("context_edit", targetId=result, replacement=None)
    done(s)

    s = Session("auto_no_assistant")
    s.user("Hello " * 400)
    done(s)
    return names


def main() -> None:
    built = build()
    others = sorted(p.stem for p in CASES.glob("*.jsonl") if not p.stem.startswith("auto_"))
    files = [CASES / f"{n}.jsonl" for n in built + others] + [
        HERE / "cases" / f"{n}.jsonl" for n in READ_CASES
    ]
    jobs = [
        {"file": str(f), "settings": settings, "windows": WINDOWS} for f in files for settings in SETTINGS
    ]
    out = subprocess.run(
        ["node", str(CHECK), json.dumps(jobs)], capture_output=True, text=True, check=True, timeout=1800
    ).stdout
    results = json.loads(out)
    records = [
        {
            "case": str(Path(job["file"]).relative_to(HERE)),
            "settings": job["settings"],
            "decisions": result["decisions"],
            "tokens": result["tokens"],
        }
        for job, result in zip(jobs, results, strict=True)
    ]
    GOLDEN.write_text(json.dumps(records, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN.relative_to(HERE)}: {len(records)} checks over {len(files)} sessions")


if __name__ == "__main__":
    main()
