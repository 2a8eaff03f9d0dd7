"""Writes ccusage/daily.json: what the real ccusage reports for the importer fixtures, the golden
data tests/test_importers.py compares `pisession usage` with (run from any folder; the output is
committed; never edit it by hand).

    python make_ccusage.py [CCUSAGE]   # default /tmp/ccusage/node_modules/.bin/ccusage

Each fixture alone in a store laid out as the agent lays it out (Claude: CLAUDE_CONFIG_DIR/
projects/-proj/<file>, with its <stem>/subagents folder; Codex: CODEX_HOME/sessions/2026/03/01/
<file>), then the stores of several fixtures at once, where ccusage counts an API message copied
into several files once."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
VERSION = "20.0.24"


def claude_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.rglob("*.jsonl") if "subagents" not in p.parts)


def codex_files(folder: Path) -> list[Path]:
    return sorted(folder.rglob("rollout-*.jsonl"))


def run(ccusage: str, source: str, home: Path) -> dict[str, list[float]]:
    env = {k: v for k, v in os.environ.items() if k not in ("CLAUDE_CONFIG_DIR", "CODEX_HOME")}
    env["CLAUDE_CONFIG_DIR" if source == "claude" else "CODEX_HOME"] = str(home)
    out = subprocess.run(
        [ccusage, source, "daily", "--json", "--offline", "--timezone", "UTC"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    ).stdout
    found: dict[str, list[float]] = {}
    report = json.loads(out) if out.strip().startswith("{") else {"daily": []}
    for row in report.get("daily", []):
        # claude: a list of breakdowns with their cost; codex: models by name, the cost per day
        models = row.get("modelBreakdowns") or [
            {**model, "modelName": name, "cost": row["costUSD"] if len(row["models"]) == 1 else 0.0}
            for name, model in row["models"].items()
        ]
        for model in models:
            found[f"{row['date']} {model['modelName']}"] = [
                model["inputTokens"],
                model["outputTokens"],
                model["cacheReadTokens"],
                model["cacheCreationTokens"],
                model["cost"],
            ]
    return found


def compact(source: Path, target: Path) -> None:
    """The records as Claude Code writes them (JSON.stringify: no spaces). ccusage 20.0.24 skips
    a line without the bytes `"usage":{` (a byte-level prefilter, measured), and some public
    fixtures were re-serialized by their project with spaces: the same records, compact, are
    what it counts."""
    out = []
    for line in source.read_text(encoding="utf-8").splitlines(keepends=True):
        try:
            out.append(json.dumps(json.loads(line), ensure_ascii=False, separators=(",", ":")) + "\n")
        except ValueError:
            out.append(line)  # a torn line stays torn
    target.write_text("".join(out), encoding="utf-8")


def place(source: str, home: Path, files: list[Path]) -> None:
    if source == "claude":
        project = home / "projects" / "-proj"
        project.mkdir(parents=True, exist_ok=True)
        for path in files:
            compact(path, project / path.name)
            agents = path.parent / path.stem / "subagents"
            for agent in sorted(agents.glob("*.jsonl")):
                (project / path.stem / "subagents").mkdir(parents=True, exist_ok=True)
                compact(agent, project / path.stem / "subagents" / agent.name)
    else:
        day = home / "sessions" / "2026" / "03" / "01"
        day.mkdir(parents=True, exist_ok=True)
        for path in files:
            shutil.copy(path, day / path.name)


def report(ccusage: str, source: str, files: list[Path]) -> dict[str, list[float]]:
    with tempfile.TemporaryDirectory() as scratch:
        place(source, Path(scratch), files)
        return run(ccusage, source, Path(scratch))


def tokens(found: dict[str, list[float]]) -> dict[str, list[float]]:
    return {key: [int(n) for n in row[:4]] for key, row in found.items()}


def cost(found: dict[str, list[float]]) -> float:
    return round(sum(row[4] for row in found.values()), 10)


def main() -> None:
    ccusage = sys.argv[1] if len(sys.argv) > 1 else "/tmp/ccusage/node_modules/.bin/ccusage"
    version = subprocess.run([ccusage, "--version"], capture_output=True, text=True).stdout.strip()
    if version.split()[-1:] != [VERSION]:
        sys.exit(f"ccusage {VERSION} expected, found {version!r}")
    public = HERE / "public"
    sets = {
        "claude": claude_files(HERE / "claude"),
        "public_claude": claude_files(public / "claude"),
        "codex": [*codex_files(HERE / "codex"), *sorted((public / "codex").glob("rollout-*.jsonl"))],
        "public_codex": codex_files(public / "codex"),
    }
    files: dict[str, dict[str, list[float]]] = {}
    for name, paths in sets.items():
        source = "claude" if "claude" in name else "codex"
        for path in paths:
            key = path.relative_to(HERE).as_posix()
            if key not in files:
                files[key] = tokens(report(ccusage, source, [path]))
    stores = {
        name: report(ccusage, "claude" if "claude" in name else "codex", paths)
        for name, paths in sets.items()
    }
    golden = {
        "ccusage": VERSION,
        "command": "ccusage claude|codex daily --json --offline --timezone UTC, one fixture alone in "
        "CLAUDE_CONFIG_DIR/projects/-proj (with its <stem>/subagents) or CODEX_HOME/sessions/2026/03/01",
        "columns": ["input", "output", "cacheRead", "cacheWrite"],
        "files": files,
        "stores_command": "the same, on every fixture of a set at once: claude = claude/**, "
        "public_claude = public/claude/** (one project folder); codex = codex/*.jsonl and "
        "public/codex/*.jsonl, public_codex = public/codex/** (one day folder; file names are unique)",
        "stores": {name: tokens(found) for name, found in stores.items()},
        "store_costs": {name: cost(found) for name, found in stores.items()},
        "written_by": "make_ccusage.py",
    }
    target = HERE / "ccusage" / "daily.json"
    target.write_text(json.dumps(golden, indent=1, sort_keys=True) + "\n")
    print(f"wrote {target}")


if __name__ == "__main__":
    main()
