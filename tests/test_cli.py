"""The ``pisession`` command line, driven through ``main([...])`` on sessions written by the reference.

Session files come from ``tests/conformance/cases`` (written by Pi 1.6.0 or by hand to Pi's shape)
and ``pisession/data/sample.jsonl`` when present; editing tests work on copies in ``tmp_path``.
"""

from __future__ import annotations

import html.parser
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import pisession
from pisession.cli import main

ROOT = Path(__file__).resolve().parents[1]
CASES = ROOT / "tests" / "conformance" / "cases"
SAMPLE = ROOT / "pisession" / "data" / "sample.jsonl"
EXAMPLES = sorted((ROOT / "docs" / "examples").glob("*.py"))

READ_ONLY = [
    ["tree"],
    ["tree", "--all"],
    ["tree", "--json"],
    ["context"],
    ["context", "--json"],
    ["stats"],
    ["stats", "--json"],
    ["validate"],
    ["validate", "--json"],
    ["export", "--format", "md"],
    ["export", "--format", "html", "--all"],
    ["export", "--format", "jsonl"],
]


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """No test reads or writes the real ~/.pi; each runs in its own project folder."""
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR", raising=False)
    monkeypatch.setenv("COLUMNS", "120")
    monkeypatch.delenv("NO_COLOR", raising=False)
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    yield


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def copy_case(tmp_path: Path, name: str) -> Path:
    source = CASES / name
    target = tmp_path / "files" / source.name
    target.parent.mkdir(exist_ok=True)
    shutil.copyfile(source, target)
    return target


def reference_sessions() -> list[Any]:
    params: list[Any] = [pytest.param(CASES / "all_entry_types.jsonl", id="all_entry_types")]
    params.append(
        pytest.param(
            SAMPLE, id="sample", marks=pytest.mark.skipif(not SAMPLE.exists(), reason="no sample.jsonl")
        )
    )
    return params


@pytest.fixture(params=reference_sessions())
def session(request: pytest.FixtureRequest, tmp_path: Path) -> Path:
    target = tmp_path / "files" / "session.jsonl"
    target.parent.mkdir(exist_ok=True)
    shutil.copyfile(request.param, target)
    return target


def default_dir(cwd: Path) -> Path:
    from pisession._paths import default_session_dir_path

    return Path(default_session_dir_path(str(cwd)))


def write_session(
    directory: Path, cwd: str, text: str, *, name: str | None = None
) -> pisession.SessionManager:
    manager = pisession.SessionManager.create(cwd, str(directory))
    manager.append_message({"role": "user", "content": text, "timestamp": int(time.time() * 1000)})
    if name:
        manager.append_session_info(name)
    manager.close()
    return manager


def lines_of(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


# ---------------------------------------------------------------------------- help and demo


COMMANDS = [
    "demo",
    "ls",
    "tree",
    "context",
    "tail",
    "stats",
    "validate",
    "name",
    "label",
    "branch",
    "edit",
    "compact",
    "fork",
    "extract",
    "migrate",
    "export",
    "import",
    "usage",
]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, command, "--help")
    assert code == 0
    assert out.startswith(f"usage: pisession {command}")


def test_no_command_prints_the_command_list(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys)
    assert code == 0
    for command in COMMANDS:
        assert command in out


def test_unknown_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(capsys, "frobnicate")
    assert code == 2
    assert "invalid choice" in err


def test_demo_writes_every_kind_of_entry_and_shows_tree_and_context(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "demo", str(tmp_path / "demo"))
    assert code == 0, err
    files = list((tmp_path / "demo").glob("*.jsonl"))
    assert len(files) == 1
    assert f"wrote a sample Pi session to {files[0]}" in out
    manager = pisession.SessionManager.open(files[0])
    entries = manager.get_entries()
    types = [e.type for e in entries]
    for kind in ("model_change", "branch_summary", "compaction", "context_edit", "session_info", "usage"):
        assert kind in types
    assert types.count("label") == 2
    system = next(e for e in entries if e.type == "message" and e.message.role == "system")
    assert system.message.sections and system.message.tools_added
    assert any(e.type == "message" and e.message.role == "toolResult" for e in entries)
    assert manager.get_session_name() == "Fix IndexError on empty input"
    # The tree part: branch drawing, leaf, labels, edits, compaction boundary.
    assert "└─ ● " in out and "├─ ○ " in out
    assert f"{manager.get_leaf_id()}  name" in out and "← leaf" in out
    assert "[bug report]" in out and "[first attempt]" in out
    assert "✎ replaced by" in out and "keeps from here" in out
    assert "usage entry hidden" in out  # usage entries stay out of the tree
    # The context part matches the library's view.
    context = manager.build_session_context()
    assert f"Total: {len(context.messages)} messages" in out
    assert "compactionSummary" in out and "[250 lines trimmed]" in out
    assert "Tools (3): read, bash, edit" in out
    assert main(["validate", str(files[0])]) == 0


def test_demo_without_a_folder_uses_a_new_temporary_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    code, out, _ = run(capsys, "demo")
    assert code == 0
    written = list(tmp_path.glob("pisession-demo-*/*.jsonl"))
    assert len(written) == 1 and str(written[0]) in out


def test_console_script_runs_the_demo(tmp_path: Path) -> None:
    script = shutil.which("pisession") or str(Path(sys.executable).with_name("pisession"))
    assert Path(script).exists(), "the pisession console script is not installed"
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "PI_CODING_AGENT_DIR": str(tmp_path / "agent"),
        "TMPDIR": str(tmp_path),
    }
    result = subprocess.run([script, "demo"], capture_output=True, text=True, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "wrote a sample Pi session to" in result.stdout
    assert "Total:" in result.stdout and "← leaf" in result.stdout
    assert list(tmp_path.glob("pisession-demo-*/*.jsonl"))


# ---------------------------------------------------------------------------- ls and SESSION lookup


def test_ls_lists_this_folders_sessions_newest_first(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = Path.cwd()
    directory = default_dir(project)
    older = write_session(directory, str(project), "first question")
    time.sleep(0.01)
    newer = write_session(directory, str(project), "second question", name="Named one")
    write_session(default_dir(tmp_path / "elsewhere"), str(tmp_path / "elsewhere"), "other project")
    code, out, _ = run(capsys, "ls")
    assert code == 0
    rows = out.splitlines()
    assert rows[0].split() == ["MODIFIED", "MSGS", "ID", "NAME", "/", "FIRST", "MESSAGE"]
    assert "Named one" in rows[1] and newer.get_session_id()[:8] in rows[1]
    assert "first question" in rows[2] and older.get_session_id()[:8] in rows[2]
    assert "other project" not in out
    assert rows[-1] == "2 sessions, newest first"

    code, out, _ = run(capsys, "ls", "--json")
    listed = json.loads(out)
    assert [s["id"] for s in listed] == [newer.get_session_id(), older.get_session_id()]
    assert listed[0]["name"] == "Named one" and listed[1]["firstMessage"] == "first question"

    code, out, _ = run(capsys, "ls", "--all")
    assert code == 0 and "other project" in out and "CWD" in out.splitlines()[0]
    code, out, _ = run(capsys, "ls", "--cwd", str(tmp_path / "elsewhere"))
    assert "other project" in out and "first question" not in out


def test_ls_reads_without_creating_folders(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "ls")
    assert code == 0 and out.startswith("No sessions found")
    assert not (tmp_path / "agent").exists()


def test_session_dir_flag_beats_env_beats_default(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cwd = str(Path.cwd())
    write_session(default_dir(Path.cwd()), cwd, "in the default folder")
    write_session(tmp_path / "from-env", cwd, "in the env folder")
    write_session(tmp_path / "from-flag", cwd, "in the flag folder")
    code, out, _ = run(capsys, "ls")
    assert "in the default folder" in out and "env folder" not in out
    monkeypatch.setenv("PI_CODING_AGENT_SESSION_DIR", str(tmp_path / "from-env"))
    code, out, _ = run(capsys, "ls")
    assert "in the env folder" in out and "default folder" not in out
    code, out, _ = run(capsys, "ls", "--session-dir", str(tmp_path / "from-flag"))
    assert code == 0 and "in the flag folder" in out and "env folder" not in out


def test_session_argument_takes_ids_and_unique_prefixes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    directory = default_dir(Path.cwd())
    directory.mkdir(parents=True)
    for case, session_id in (
        ("orphans.jsonl", "01938cd2-1b00-7383-868d-05a8d6c6a856"),
        ("all_entry_types.jsonl", "01938cd2-1b00-727d-bcf6-007c263ff2bb"),
    ):
        shutil.copyfile(CASES / case, directory / f"2024-12-03T14-00-00-001Z_{session_id}.jsonl")
    code, out, _ = run(capsys, "tree", "01938cd2-1b00-7383-868d-05a8d6c6a856")
    assert code == 0 and "back on the tree" in out
    code, out, _ = run(capsys, "tree", "01938cd2-1b00-72")
    assert code == 0 and "List the files here" in out
    code, _, err = run(capsys, "tree", "01938cd2")
    assert code == 1
    assert err.startswith("pisession: error: ambiguous session id prefix '01938cd2'")
    assert "01938cd2-1b00-7383" in err and "01938cd2-1b00-727d" in err
    code, _, err = run(capsys, "context", "ffffffff")
    assert code == 1 and "no session file or session id matching 'ffffffff'" in err
    # From another folder the id is found among all projects, as Pi's --session does.
    monkeypatch.chdir(tmp_path)
    code, out, _ = run(capsys, "stats", "01938cd2-1b00-72")
    assert code == 0 and "01938cd2-1b00-727d-bcf6-007c263ff2bb" in out


@pytest.mark.parametrize(
    "command", [["tree"], ["context"], ["stats"], ["export", "--format", "md"], ["name", "--json"], ["tail"]]
)
def test_missing_files_and_folders_are_one_line_errors(
    command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(
        capsys,
        command[0],
        str(tmp_path / "missing.jsonl"),
        *command[1:],
        *(["x"] if command[0] == "name" else []),
    )
    assert code == 1
    assert err == f"pisession: error: no such file: {tmp_path / 'missing.jsonl'}\n"
    code, _, err = run(
        capsys, command[0], str(tmp_path), *command[1:], *(["x"] if command[0] == "name" else [])
    )
    assert code == 1 and "is a directory" in err and "Traceback" not in err


# ---------------------------------------------------------------------------- read-only commands


@pytest.mark.parametrize(
    "case",
    [
        "last_line_no_newline.jsonl",
        "v1_linear.jsonl",
        "orphans.jsonl",
        "no_oracle/cycle.jsonl",
        "duplicate_ids.jsonl",
        "all_entry_types.jsonl",
    ],
)
@pytest.mark.parametrize("command", READ_ONLY, ids=lambda c: "-".join(c))
def test_read_only_commands_never_change_the_file(
    case: str, command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = copy_case(tmp_path, case)
    before = path.read_bytes()
    code, out, err = run(capsys, command[0], str(path), *command[1:])
    assert "Traceback" not in err
    assert code in ((0, 1) if command[0] == "validate" else (0,)), err
    assert out
    assert path.read_bytes() == before
    assert sorted(p.name for p in path.parent.iterdir()) == [path.name]  # no lock file, no rewrite temp


@pytest.mark.parametrize("case", ["not_a_session.jsonl", "empty_file.jsonl", "header_id_not_string.jsonl"])
@pytest.mark.parametrize(
    "command",
    [
        ["tree"],
        ["context"],
        ["stats"],
        ["export", "--format", "html"],
        ["label", "x", "y"],
        ["edit", "x", "--omit"],
        ["migrate"],
        ["tail"],
    ],
)
def test_files_that_are_not_sessions_are_refused_untouched(
    case: str, command: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = copy_case(tmp_path, case)
    before = path.read_bytes()
    code, out, err = run(capsys, command[0], str(path), *command[1:])
    assert code == 1
    assert err.startswith("pisession: error: ") and "is not a Pi session" in err
    assert err.count("\n") == 1 and out == ""
    assert path.read_bytes() == before


def test_tree_shows_branches_labels_edits_compaction_and_leaf(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = copy_case(tmp_path, "all_entry_types.jsonl")
    code, out, _ = run(capsys, "tree", str(path))
    assert code == 0
    lines = out.splitlines()
    manager = pisession.SessionManager.in_memory(entries=pisession.load_entries_from_file(str(path)))
    body = lines[:-1]
    usage_ids = [e.id for e in manager.get_entries() if e.type == "usage"]
    assert len(body) == manager.get_entry_count() - len(usage_ids)
    assert not any(i in out for i in usage_ids)
    assert "2 usage entries hidden" in lines[-1]
    assert next(line for line in lines if "922b8cd8" in line and "user" in line).endswith("[start]")
    assert "✎ replaced by 702c6adb" in next(line for line in lines if "aef47a6c  toolResult" in line)
    assert "context restarts here (keeps from 902d17b6; 5,000 tokens before)" in out
    assert "◆ compaction fab89887 keeps from here" in next(
        line for line in lines if "902d17b6  assistant" in line
    )
    leaf_line = next(line for line in lines if "← leaf" in line)
    assert manager.get_leaf_id() in leaf_line
    # Only the branch point indents: the abandoned run is marked ○ under ├─, the active one ● under └─.
    assert any(line.startswith("├─ ○ 5b41c004") for line in lines)
    assert any(line.startswith("└─ ● ae0d2302  branch summary ↩ left c30ae87e") for line in lines)
    assert any(line.startswith("│  ○ aef47a6c") for line in lines)

    code, out, _ = run(capsys, "tree", str(path), "--all")
    assert all(i in out for i in usage_ids) and "hidden" not in out


def test_tree_json_is_flat_and_complete(session: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "tree", str(session), "--json")
    assert code == 0
    data = json.loads(out)
    manager = pisession.SessionManager.open(session)
    assert data["leafId"] == manager.get_leaf_id()
    assert data["sessionId"] == manager.get_session_id()
    nodes = data["nodes"]
    assert [n["id"] for n in nodes if n["active"]] == [e.id for e in manager.get_branch()]
    assert sorted(n["id"] for n in nodes) == sorted(e.id for e in manager.get_entries())
    by_id = {n["id"]: n for n in nodes}
    for entry in manager.get_entries():
        assert by_id[entry.id]["entry"] == pisession.to_wire(entry)
        assert sorted(by_id[entry.id]["children"]) == sorted(c.id for c in manager.get_children(entry.id))
        assert by_id[entry.id]["parentId"] == entry.parent_id
    depth = {n["id"]: n["depth"] for n in nodes}
    for node in nodes:  # a child is one level deeper exactly when its parent branches
        if node["parentId"] in by_id:
            siblings = len(by_id[node["parentId"]]["children"])
            assert node["depth"] == depth[node["parentId"]] + (siblings > 1)


def test_tree_of_a_100000_deep_session_does_not_recurse(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    depth = 30_000  # far beyond the recursion limit; the command has no depth-dependent code
    lines = [
        json.dumps(
            {
                "type": "session",
                "version": 3,
                "id": "deep",
                "timestamp": "2024-12-03T14:00:00.000Z",
                "cwd": "/deep",
            }
        )
    ]
    parent = None
    for i in range(depth):
        entry_id = f"{i:08x}"
        lines.append(
            json.dumps(
                {
                    "type": "message",
                    "id": entry_id,
                    "parentId": parent,
                    "timestamp": "2024-12-03T14:00:00.000Z",
                    "message": {"role": "user", "content": f"m{i}", "timestamp": 1},
                }
            )
        )
        parent = entry_id
    path = tmp_path / "deep.jsonl"
    path.write_text("\n".join(lines) + "\n")
    code, out, err = run(capsys, "tree", str(path))
    assert code == 0, err
    rows = out.splitlines()
    assert len(rows) == depth + 1
    assert all(row.startswith("● ") for row in rows[:-1])  # one column: no indentation growth
    assert rows[-2].startswith(f"● {depth - 1:08x}") and "← leaf" in rows[-2]
    code, out, _ = run(capsys, "tree", str(path), "--json")
    assert code == 0 and len(json.loads(out)["nodes"]) == depth


def test_tree_reports_entries_lost_in_a_cycle(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = copy_case(tmp_path, "no_oracle/cycle.jsonl")
    code, out, _ = run(capsys, "tree", str(path))
    assert code == 0
    assert "3 not reachable from a root" in out
    code, out, _ = run(capsys, "tree", str(path), "--json")
    assert json.loads(out)["cycles"] == [["cy00000a", "cy00000b"]]


def test_context_matches_the_library(session: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manager = pisession.SessionManager.open(session)
    context = manager.build_session_context()
    system = pisession.get_current_system_message(context.messages)
    code, out, _ = run(capsys, "context", str(session), "--json")
    assert code == 0
    data = json.loads(out)
    assert data["messages"] == [pisession.to_wire(m) for m in context.messages]
    assert data["system"] == (pisession.to_wire(system) if system else None)
    assert data["leafId"] == manager.get_leaf_id()
    assert data["thinkingLevel"] == context.thinking_level
    assert data["totals"]["messages"] == len(context.messages)
    assert data["totals"]["approxTokens"] >= data["totals"]["characters"] // 4 > 0

    code, out, _ = run(capsys, "context", str(session))
    assert code == 0
    assert "System prompt" in out
    tools = [t["name"] for t in (data["system"] or {}).get("toolsAdded", [])]
    assert f"Tools ({len(tools)}): {', '.join(tools)}" in out
    assert f"Total: {len(context.messages)} messages · {data['totals']['characters']:,} characters" in out
    numbered = [line for line in out.splitlines() if line.strip()[:1].isdigit()]
    assert [line.split()[1] for line in numbered] == [m.role for m in context.messages]


def test_context_at_another_leaf(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = copy_case(tmp_path, "all_entry_types.jsonl")
    entries = pisession.load_entries_from_file(str(path))
    expected = pisession.build_session_context(entries, "902d17b6")
    code, out, _ = run(capsys, "context", str(path), "--leaf", "902d17b6", "--json")
    assert code == 0
    data = json.loads(out)
    assert data["leafId"] == "902d17b6"
    assert data["messages"] == [pisession.to_wire(m) for m in expected.messages]
    assert [m["role"] for m in data["messages"]][-1] == "assistant"
    code, _, err = run(capsys, "context", str(path), "--leaf", "nope")
    assert code == 1 and err == f"pisession: error: Entry nope not found in {path}\n"


def test_context_honours_replace_in_system_replay(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = copy_case(tmp_path, "system_replace_flag.jsonl")
    # Before the compaction both system messages are in context (the compaction's stored
    # checkpoint was written by Pi, which ignores the flag).
    messages = pisession.build_session_context(
        pisession.load_entries_from_file(str(path)), "86afe3b7"
    ).messages
    seed = pisession.get_current_system_message(messages)
    pi = pisession.get_current_system_message(messages, honour_replace=False)
    assert seed is not None and pi is not None
    assert seed.content == "New base." and pi.content == "Old base.\n\nNew base."
    code, out, _ = run(capsys, "context", str(path), "--leaf", "86afe3b7", "--json")
    assert json.loads(out)["system"] == pisession.to_wire(seed)
    code, out, _ = run(capsys, "context", str(path), "--leaf", "86afe3b7")
    assert code == 0 and "  │ New base.\n" in out and "Old base." not in out


def test_stats_sums_usage_as_pi_does(session: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manager = pisession.SessionManager.open(session)
    expected_cost = 0.0
    expected_tokens = 0
    for entry in manager.get_entries():
        wire = pisession.to_wire(entry)
        usage = None
        if wire["type"] == "message" and wire["message"].get("role") in ("assistant", "toolResult"):
            usage = wire["message"].get("usage")
        elif wire["type"] in ("usage", "compaction", "branch_summary"):
            usage = wire.get("usage")
        if usage:
            expected_cost += usage["cost"]["total"]
            expected_tokens += sum(usage[k] for k in ("input", "output", "cacheRead", "cacheWrite"))
    code, out, _ = run(capsys, "stats", str(session), "--json")
    assert code == 0
    data = json.loads(out)
    assert data["total"]["cost"] == pytest.approx(expected_cost)
    assert data["total"]["tokens"] == expected_tokens
    assert sum(r["cost"] for r in data["byModel"]) == pytest.approx(expected_cost)
    assert sum(r["calls"] for r in data["bySource"]) == data["total"]["calls"]
    assert data["messages"]["assistant"] == sum(
        1 for e in manager.get_entries() if e.type == "message" and e.message.role == "assistant"
    )
    code, out, _ = run(capsys, "stats", str(session))
    assert code == 0
    assert f"${expected_cost:,.4f}" in out.splitlines()[-2]
    for row in data["byModel"]:
        assert any(line.startswith(row["model"]) for line in out.splitlines())


def test_stats_attributes_usage_entries_and_summaries(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = copy_case(tmp_path, "all_entry_types.jsonl")
    code, out, _ = run(capsys, "stats", str(path), "--json")
    assert code == 0
    rows = {r["model"]: r for r in json.loads(out)["byModel"]}
    assert rows["anthropic/claude-haiku-4-5"]["cost"] == pytest.approx(0.021)  # the usage entry
    assert "openai/text-embedding-3-small" in rows
    assert rows["anthropic/claude-sonnet-4-5"]["calls"] >= 2


# ---------------------------------------------------------------------------- validate


def test_validate_passes_clean_files(session: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "validate", str(session))
    assert code == 0
    assert out.startswith(f"{session}: OK (")


@pytest.mark.parametrize(
    ("case", "expected"),
    [
        (
            "orphans.jsonl",
            [
                "line 5: error: orphan: the parent ffff0000 of entry 0afa0001 does not exist",
                "line 7: error: orphan: the parent ffff0001",
            ],
        ),
        (
            "malformed_lines.jsonl",
            [
                "line 4: error: not valid JSON",
                "line 7: error: not valid JSON",
                "line 8: error: not valid JSON",
                "line 11: error: not valid JSON",
            ],
        ),
        ("non_object_lines.jsonl", ["line 3: error: a JSON value that is not an object (Pi skips it): 123"]),
        ("duplicate_ids.jsonl", ["line 4: error: duplicate id d0000001 (first at line 2)"]),
        ("no_oracle/cycle.jsonl", ["error: parentId cycle: cy00000a → cy00000b → cy00000a"]),
        ("no_oracle/self_parent.jsonl", ["error: parentId cycle: sp000001 → sp000001"]),
        (
            "compaction_dangling_first_kept.jsonl",
            ["line 4: error: compaction ab0536bf: firstKeptEntryId deadbeef"],
        ),
        ("label_edges.jsonl", ["line 4: error: label 1a000010: targetId nope does not exist"]),
        (
            "context_edits_handwritten.jsonl",
            ["error: context_edit ed000003: targetId missing1 does not exist"],
        ),
        ("not_a_session.jsonl", ["line 1: error: not a Pi session"]),
        ("empty_file.jsonl", ["error: not a Pi session: the file is empty"]),
        ("truncated_last_line.jsonl", ["line 4: error: unfinished last line"]),
        ("bom_header.jsonl", ["line 1: error: not valid JSON, starting with a byte-order mark"]),
    ],
)
def test_validate_reports_problems_with_line_numbers(
    case: str, expected: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = copy_case(tmp_path, case)
    before = path.read_bytes()
    code, out, _ = run(capsys, "validate", str(path))
    assert code == 1
    for text in expected:
        assert any(text in line for line in out.splitlines()), (text, out)
    assert path.read_bytes() == before


@pytest.mark.parametrize(
    ("case", "warning"),
    [
        ("last_line_no_newline.jsonl", "no final newline"),
        ("no_version.jsonl", "old session version 1 (no version field): Pi migrates"),
        ("invalid_utf8.jsonl", "invalid UTF-8 on 10 line(s)"),
        ("future_version.jsonl", "session version 4 is not one Pi 1.6.0 writes"),
    ],
)
def test_validate_warnings_do_not_fail(
    case: str, warning: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = copy_case(tmp_path, case)
    code, out, _ = run(capsys, "validate", str(path))
    assert code == 0, out
    assert warning in out and "error" not in out


def test_validate_many_files_as_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = copy_case(tmp_path, "all_entry_types.jsonl")
    bad = copy_case(tmp_path, "orphans.jsonl")
    code, out, _ = run(capsys, "validate", "--json", str(good), str(bad), str(tmp_path / "missing.jsonl"))
    assert code == 1
    results = json.loads(out)
    assert [r["ok"] for r in results] == [True, False, False]
    assert [p["line"] for p in results[1]["problems"]] == [5, 7]
    assert results[2]["problems"][0]["message"].startswith("no such file")
    assert main(["validate", str(good)]) == 0


def test_validate_names_a_folder_in_a_files_place_and_an_empty_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    odd = tmp_path / "x.jsonl"  # a folder, named as a session file, inside the folder checked
    odd.mkdir()
    code, out, _ = run(capsys, "validate", str(tmp_path))
    assert code == 1 and f"{odd} is a directory, not a session file" in out
    code, out, err = run(capsys, "validate", str(odd))  # a folder holding no session file
    assert code == 0 and out == "" and f"no session files (*.jsonl) in {odd}" in err


@pytest.mark.parametrize("target", ["loop.jsonl", "missing.jsonl"])
def test_a_link_to_no_file_is_named_as_such(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], target: str
) -> None:
    link = tmp_path / "loop.jsonl"
    link.symlink_to(tmp_path / target)  # itself, or a file that is not there
    code, _, err = run(capsys, "tree", str(link))
    assert code == 1 and "is a symbolic link to no file (its target is missing, or it loops)" in err


# ---------------------------------------------------------------------------- editing commands


def test_name_appends_a_session_info_entry(session: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = session.read_bytes()
    code, out, _ = run(capsys, "name", str(session), "Refactor\nthe API")
    assert code == 0 and out.startswith("Named the session 'Refactor the API' (entry ")
    after = session.read_bytes()
    assert after.startswith(before) and after.count(b"\n") == before.count(b"\n") + 1
    manager = pisession.SessionManager.open(session)
    assert manager.get_session_name() == "Refactor the API"
    assert manager.get_entries()[-1].type == "session_info"


def test_label_sets_and_clears(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = copy_case(tmp_path, "all_entry_types.jsonl")
    code, out, _ = run(capsys, "label", str(path), "aef47a6c", "listing", "--json")
    assert code == 0
    written = json.loads(out)
    assert written == json.loads(lines_of(path)[-1])
    assert written["type"] == "label" and written["targetId"] == "aef47a6c" and written["label"] == "listing"
    assert pisession.SessionManager.open(path).get_label("aef47a6c") == "listing"
    code, out, _ = run(capsys, "label", str(path), "aef47a6c")
    assert code == 0 and out.startswith("Cleared the label of aef47a6c")
    assert "label" not in json.loads(lines_of(path)[-1])
    assert pisession.SessionManager.open(path).get_label("aef47a6c") is None


def test_branch_needs_a_summary_and_writes_nothing_without(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = copy_case(tmp_path, "all_entry_types.jsonl")
    before = path.read_bytes()
    code, _, err = run(capsys, "branch", str(path), "922b8cd8")
    assert code == 2
    assert "branch needs --summary" in err and "does not store the leaf" in err
    assert path.read_bytes() == before
    code, out, _ = run(capsys, "branch", str(path), "922b8cd8", "--summary", "went back", "--json")
    assert code == 0
    entry = json.loads(out)
    assert entry["type"] == "branch_summary" and entry["parentId"] == "922b8cd8"
    assert entry["fromId"] == "5e550002" and entry["summary"] == "went back"
    manager = pisession.SessionManager.open(path)
    assert [e.id for e in manager.get_branch()][-2:] == ["922b8cd8", entry["id"]]
    assert manager.build_session_context().messages[-1].role == "branchSummary"
    code, _, err = run(capsys, "branch", str(path), "nope", "--summary", "x")
    assert code == 1 and err == f"pisession: error: Entry nope not found in {path}\n"


def test_edit_omits_and_replaces_in_context_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = copy_case(tmp_path, "multiple_roots.jsonl")
    manager = pisession.SessionManager.open(path)
    target = next(e for e in manager.get_branch() if e.type == "message" and e.message.role == "user")
    raw_target = next(line for line in lines_of(path) if target.id in line and '"message"' in line)
    code, out, _ = run(capsys, "edit", str(path), target.id, "--text", "redacted")
    assert code == 0 and "replaced in the model context" in out
    context = pisession.SessionManager.open(path).build_session_context()
    assert any(m.role == "user" and m.content == "redacted" for m in context.messages)
    code, out, _ = run(capsys, "edit", str(path), target.id, "--omit", "--json")
    assert code == 0
    assert json.loads(out) == {
        **json.loads(out),
        "type": "context_edit",
        "targetId": target.id,
        "replacement": None,
    }
    context = pisession.SessionManager.open(path).build_session_context()
    assert all(m.role != "user" for m in context.messages)
    assert raw_target in lines_of(path)  # the entry itself is untouched


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope", "--omit"], "Entry nope not found"),
        (["82ab0b2c", "--omit"], "Entry 82ab0b2c does not contribute editable model content"),
        (["5b41c004", "--text", "x"], "Entry 5b41c004 is not on the active branch"),
    ],
)
def test_rejected_edits_leave_the_file_unchanged(
    args: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = copy_case(tmp_path, "all_entry_types.jsonl")
    before = path.read_bytes()
    code, out, err = run(capsys, "edit", str(path), *args)
    assert code == 1
    assert err == f"pisession: error: {message} in {path}\n" and out == ""
    assert path.read_bytes() == before


def test_a_rejected_edit_does_not_even_migrate_an_old_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = copy_case(tmp_path, "v1_linear.jsonl")
    before = path.read_bytes()
    assert main(["label", str(path), "nope", "x"]) == 1
    assert main(["edit", str(path), "nope", "--omit"]) == 1
    assert path.read_bytes() == before
    capsys.readouterr()


def test_edit_requires_omit_or_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = copy_case(tmp_path, "all_entry_types.jsonl")
    code, _, err = run(capsys, "edit", str(path), "922b8cd8")
    assert code == 2 and "one of the arguments --omit --text is required" in err
    code, _, _ = run(capsys, "edit", str(path), "922b8cd8", "--omit", "--text", "x")
    assert code == 2


def test_compact_keeps_from_an_entry_on_the_branch(session: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manager = pisession.SessionManager.open(session)
    branch = manager.get_branch()
    keep = [e for e in branch if e.type == "message" and e.message.role == "user"][-1]
    code, out, _ = run(
        capsys,
        "compact",
        str(session),
        "--summary",
        "Earlier: things happened.",
        "--keep-from",
        keep.id,
        "--tokens-before",
        "1234",
        "--json",
    )
    assert code == 0
    entry = json.loads(out)
    assert entry["type"] == "compaction" and entry["firstKeptEntryId"] == keep.id
    assert entry["tokensBefore"] == 1234 and entry["summary"] == "Earlier: things happened."
    context = pisession.SessionManager.open(session).build_session_context()
    roles = [m.role for m in context.messages]
    assert "compactionSummary" in roles[:2]
    assert context.messages[roles.index("compactionSummary") + 1].content == keep.message.content


def test_compact_refuses_an_entry_off_the_branch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = copy_case(tmp_path, "all_entry_types.jsonl")
    before = path.read_bytes()
    code, _, err = run(capsys, "compact", str(path), "--summary", "s", "--keep-from", "5b41c004")
    assert code == 1 and "not on the active branch" in err
    code, _, err = run(capsys, "compact", str(path), "--summary", "s", "--keep-from", "nope")
    assert code == 1 and "entry nope not found" in err
    assert path.read_bytes() == before
    code, out, _ = run(capsys, "compact", str(path), "--summary", "s", "--keep-from", "f880ecee")
    assert code == 0 and "tokens before" in out
    assert json.loads(lines_of(path)[-1])["tokensBefore"] > 0


def test_fork_copies_into_the_target_folder(
    session: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = session.read_bytes()
    target = tmp_path / "worktree"
    code, out, _ = run(capsys, "fork", str(session), "--cwd", str(target), "--json")
    assert code == 0
    result = json.loads(out)
    new = Path(result["path"])
    assert new.parent == default_dir(target)
    header = json.loads(lines_of(new)[0])
    assert header["parentSession"] == str(session) and header["cwd"] == str(target)
    assert lines_of(new)[1:] == lines_of(session)[1:]
    assert session.read_bytes() == before


def test_extract_keeps_only_the_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = copy_case(tmp_path, "all_entry_types.jsonl")
    before = path.read_bytes()
    code, out, _ = run(capsys, "extract", str(path), "--leaf", "902d17b6", "--json")
    assert code == 0
    result = json.loads(out)
    extracted = pisession.SessionManager.open(result["path"])
    ids = [e.id for e in extracted.get_entries() if e.type != "label"]
    assert ids == ["82ab0b2c", "c2978fa5", "b33663d4", "922b8cd8", "5b41c004", "aef47a6c", "902d17b6"]
    assert extracted.get_header().parent_session == str(path)
    assert extracted.get_label("922b8cd8") == "start"
    assert path.read_bytes() == before
    code, _, err = run(capsys, "extract", str(path), "--leaf", "c2978fa5")
    assert code == 1 and "holds no user or assistant message" in err
    code, _, err = run(capsys, "extract", str(path), "--leaf", "nope")
    assert code == 1 and "entry nope not found" in err


def test_migrate_rewrites_old_files_once(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = copy_case(tmp_path, "v1_linear.jsonl")
    code, out, _ = run(capsys, "migrate", str(path))
    assert code == 0 and out == f"{path}: migrated from version 1 to 3\n"
    assert json.loads(lines_of(path)[0])["version"] == 3
    assert all("id" in json.loads(line) for line in lines_of(path)[1:])
    migrated = path.read_bytes()
    code, out, _ = run(capsys, "migrate", str(path), "--json")
    assert json.loads(out) == {"path": str(path), "changed": False, "fromVersion": 3, "toVersion": 3}
    assert path.read_bytes() == migrated


def test_migrate_repairs_a_missing_newline(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = copy_case(tmp_path, "last_line_no_newline.jsonl")
    before = path.read_bytes()
    code, out, _ = run(capsys, "migrate", str(path))
    assert code == 0 and "repaired the missing final newline" in out
    assert path.read_bytes() == before + b"\n"


# ---------------------------------------------------------------------------- export


class _Page(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []
        self.stack: list[str] = []
        self.unclosed_errors = 0
        self.decl = ""

    def handle_decl(self, decl: str) -> None:
        self.decl = decl

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag not in ("meta", "img", "br", "link"):
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if self.stack and self.stack[-1] == tag:
            self.stack.pop()
        else:
            self.unclosed_errors += 1

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse_page(text: str) -> _Page:
    page = _Page()
    page.feed(text)
    page.close()
    return page


def test_static_html_export_is_a_self_contained_page(
    session: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "export", str(session), "--format", "static-html")
    assert code == 0
    page = parse_page(out)
    assert page.decl.lower() == "doctype html"
    assert page.unclosed_errors == 0 and page.stack == []
    names = [tag for tag, _ in page.tags]
    assert names[:3] == ["html", "head", "meta"] and "style" in names and "body" in names
    assert "script" not in names and "link" not in names and "iframe" not in names
    for _, attrs in page.tags:
        for key in ("src", "href"):
            value = attrs.get(key)
            assert value is None or value.startswith(("#", "data:image/")), value
    manager = pisession.SessionManager.open(session)
    articles = [attrs for tag, attrs in page.tags if tag == "article"]
    assert [a["id"] for a in articles] == [f"entry-{e.id}" for e in manager.get_branch()]
    leaf_article = articles[-1]
    assert "leaf" in (leaf_article.get("class") or "")
    text = "".join(page.text)
    assert manager.get_session_name() is None or manager.get_session_name() in text
    for entry in manager.get_branch():
        if (
            entry.type == "message"
            and entry.message.role == "user"
            and isinstance(entry.message.content, str)
        ):
            assert entry.message.content in text


def test_static_html_export_of_all_branches_contains_every_entry(
    session: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "export", str(session), "--format", "static-html", "--all")
    assert code == 0
    page = parse_page(out)
    ids = [attrs["id"] for tag, attrs in page.tags if tag == "article"]
    manager = pisession.SessionManager.open(session)
    assert sorted(ids) == sorted(f"entry-{e.id}" for e in manager.get_entries())
    sections = [
        attrs.get("class")
        for tag, attrs in page.tags
        if tag == "section" and "branch" in (attrs.get("class") or "")
    ]
    assert len(sections) >= 3 and sections.count("branch active") >= 1


def test_static_html_export_escapes_everything(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manager = pisession.SessionManager.create(str(tmp_path), str(tmp_path / "s"))
    hostile = '<script>alert("x")</script><img src=x onerror=alert(1)>'
    manager.append_message({"role": "user", "content": hostile, "timestamp": 1})
    manager.append_message(
        {
            "role": "user",
            "content": [
                {"type": "image", "mimeType": 'image/png" onload="alert(1)', "data": "AAAA"},
                {"type": "image", "mimeType": "image/png", "data": "iVBORw0KGgo="},
            ],
            "timestamp": 2,
        }
    )
    manager.append_session_info("</title><script>bad()</script>")
    path = manager.get_session_file()
    assert path is not None
    code, out, _ = run(capsys, "export", path, "--format", "static-html")
    assert code == 0
    page = parse_page(out)
    assert "script" not in [tag for tag, _ in page.tags]
    assert not any("onerror" in attrs or "onload" in attrs for _, attrs in page.tags)
    images = [attrs["src"] for tag, attrs in page.tags if tag == "img"]
    assert images == ["data:image/png;base64,iVBORw0KGgo="]
    text = "".join(page.text)
    assert hostile in text and "</title><script>bad()</script>" in text


def test_html_export_is_the_viewer_holding_every_entry(
    session: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "export", str(session), "--format", "html")
    assert code == 0
    page = parse_page(out)
    assert page.decl.lower() == "doctype html"
    data = [attrs for tag, attrs in page.tags if tag == "script" and attrs.get("type") == "application/json"]
    assert len(data) == 1
    found = re.search(r'<script [^>]*type="application/json"[^>]*>(.*?)</script>', out, re.S)
    assert found is not None
    embedded = json.loads(found[1])
    manager = pisession.SessionManager.open(session)
    assert [e.get("id") for e in embedded["entries"]] == [e.id for e in manager.get_entries()]


def test_markdown_export(session: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "export", str(session), "--format", "md")
    assert code == 0
    manager = pisession.SessionManager.open(session)
    assert out.startswith("# ")
    assert "## Conversation" in out
    headings = [line for line in out.splitlines() if line.startswith("### ")]
    blocks = [
        e
        for e in manager.get_branch()
        if e.type in ("message", "compaction", "branch_summary", "custom_message")
    ]
    assert len(headings) == len(blocks)
    for entry in manager.get_branch():
        assert f"`{entry.id}`" in out
    assert out.count("```") % 2 == 0  # every fence is closed
    code, everything, _ = run(capsys, "export", str(session), "--format", "md", "--all")
    assert everything.count("## Branch ") >= 3
    for entry in manager.get_entries():
        assert f"`{entry.id}`" in everything


def test_jsonl_export_is_the_files_own_lines(session: Path, capsys: pytest.CaptureFixture[str]) -> None:
    raw = lines_of(session)
    by_id = {json.loads(line)["id"]: line for line in raw[1:]}
    manager = pisession.SessionManager.open(session)
    code, out, _ = run(capsys, "export", str(session), "--format", "jsonl")
    assert code == 0
    assert out.splitlines() == [by_id[e.id] for e in manager.get_branch()]
    code, out, _ = run(capsys, "export", str(session), "--format", "jsonl", "--all")
    assert out.splitlines() == raw[1:]


def test_export_to_a_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = copy_case(tmp_path, "all_entry_types.jsonl")
    before = path.read_bytes()
    target = tmp_path / "out.html"
    code, out, err = run(capsys, "export", str(path), "--format", "html", "-o", str(target))
    assert code == 0 and out == "" and str(target) in err
    assert target.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    code, _, err = run(capsys, "export", str(path), "--format", "jsonl", "-o", str(path))
    assert code == 1 and "refusing to overwrite the session" in err
    assert path.read_bytes() == before


# ---------------------------------------------------------------------------- tail


def _tail_process(path: Path, *extra: str) -> subprocess.Popen[str]:
    code = "import sys; from pisession.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.Popen(
        [sys.executable, "-c", code, "tail", str(path), "--interval", "0.05", *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _read_lines(process: subprocess.Popen[str], count: int, timeout: float = 30) -> list[str]:
    lines: list[str] = []

    def reader() -> None:
        assert process.stdout is not None
        while len(lines) < count:
            line = process.stdout.readline()
            if not line:
                return
            lines.append(line.rstrip("\n"))

    thread = threading.Thread(target=reader, daemon=True)
    thread.start()
    thread.join(timeout)
    return lines


@pytest.mark.parametrize("as_json", [False, True])
def test_tail_follows_appends_and_stops_quietly_on_ctrl_c(as_json: bool, tmp_path: Path) -> None:
    path = copy_case(tmp_path, "all_entry_types.jsonl")
    process = _tail_process(path, "-n", "2", *(["--json"] if as_json else []))
    try:
        first = _read_lines(process, 2)
        assert len(first) == 2
        if as_json:
            assert first == lines_of(path)[-2:]
        else:
            assert "5e550001" in first[0] and "5e550002" in first[1]
        writer = pisession.SessionManager.open(path)
        new_id = writer.append_message({"role": "user", "content": "appended while tailing", "timestamp": 1})
        writer.close()
        (line,) = _read_lines(process, 1)
        if as_json:
            assert line == lines_of(path)[-1]
            assert json.loads(line)["id"] == new_id
        else:
            assert new_id in line and "appended while tailing" in line
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 0
        assert process.stderr is not None and process.stderr.read() == ""
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()


def test_tail_will_not_open_a_file_it_would_rewrite(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = copy_case(tmp_path, "v1_linear.jsonl")
    before = path.read_bytes()
    code, _, err = run(capsys, "tail", str(path))
    assert code == 1 and "opening it to follow would rewrite it" in err
    assert path.read_bytes() == before
    code, _, err = run(capsys, "tail", str(path), "--interval", "0")
    assert code == 2 and "--interval must be positive" in err


# ---------------------------------------------------------------------------- docs examples


@pytest.mark.parametrize(
    "script", [p for p in EXAMPLES if p.name != "usage_csv.py"], ids=lambda p: p.name
)  # usage_csv.py reads a report: tests/test_usage.py runs it
def test_docs_example_runs(script: Path, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "PI_CODING_AGENT_DIR": str(tmp_path / "agent"),
        "TMPDIR": str(tmp_path),
    }
    env.pop("PI_CODING_AGENT_SESSION_DIR", None)
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stderr == ""
    expected = {
        "extension_backend.py": ["custom entries written by the backend: 15", "every parent exists: True"],
        "auto_fork.py": ["forked to ", "checkpoint ", "parent recorded: True"],
        "auto_compact.py": ["compaction ", "system prompt kept: True"],
        "extension_state.py": ["with transactions: 100 of 100 increments kept"],
        "async_backend.py": ["every tool call audited once: True", "every parent exists: True"],
    }[script.name]
    for text in expected:
        assert text in result.stdout
    written = list(tmp_path.rglob("*.jsonl"))
    assert written and all(str(p).startswith(str(tmp_path)) for p in written)
    for path in written:
        assert main(["validate", str(path)]) == 0


def test_the_examples_are_all_tested() -> None:
    assert {p.name for p in EXAMPLES} == {
        "extension_backend.py",
        "auto_fork.py",
        "auto_compact.py",
        "extension_state.py",
        "async_backend.py",
        "usage_csv.py",
    }


def test_odd_but_loadable_entries_never_crash_the_output(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "odd.jsonl"
    lines = [
        {"type": "session", "version": 3, "id": "odd", "timestamp": "2024-12-03T14:00:00.000Z", "cwd": "/p"},
        {"type": "thinking_level_change", "id": "a1", "parentId": None, "timestamp": "2024-12-03T14:00:01Z"},
        {"type": "message", "id": "a2", "parentId": "a1", "timestamp": "x",
         "message": {"role": "user", "content": "lone \ud800 surrogate", "timestamp": 1}},
        {"type": "mystery", "id": "a3", "parentId": "a2", "timestamp": "2024-12-03T14:00:00.003Z", "x": [1]},
    ]  # fmt: skip
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    code, out, err = run(capsys, "context", str(path), "--json")
    assert code == 0, err
    assert json.loads(out)["thinkingLevel"] is None
    for command in (
        ["tree"],
        ["context"],
        ["stats"],
        ["export", "--format", "html"],
        ["export", "--format", "md"],
    ):
        code, out, err = run(capsys, command[0], str(path), *command[1:])
        assert code == 0 and err == "", (command, err)
    code, out, _ = run(capsys, "tree", str(path))
    assert "a3  mystery" in out and '{"x":[1]}' in out


def test_progress_is_shown_only_on_a_terminal_for_many_files(monkeypatch: pytest.MonkeyPatch) -> None:
    import io

    from pisession.cli import sessions

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert sessions.progress(io.StringIO()) is None
    terminal = Terminal()
    report = sessions.progress(terminal)
    assert report is not None
    monkeypatch.setattr(sessions.time, "monotonic", lambda: 1e9)  # past the initial quiet period
    report(10, 20)
    assert terminal.getvalue() == ""  # few files: no progress line
    report(10, 200)
    assert terminal.getvalue() == "\rpisession: scanning sessions 10/200"
    report(200, 200)
    assert terminal.getvalue().endswith("\r\033[K")  # the line is cleared at the end


def test_piping_into_a_closed_reader_exits_quietly(tmp_path: Path) -> None:
    path = tmp_path / "long.jsonl"
    lines = [
        {"type": "session", "version": 3, "id": "long", "timestamp": "2024-12-03T14:00:00.000Z", "cwd": "/p"}
    ]
    for i in range(5000):  # far more output than a pipe buffers
        lines.append({"type": "message", "id": f"{i:08x}", "parentId": f"{i - 1:08x}" if i else None,
                      "timestamp": "2024-12-03T14:00:00.000Z",
                      "message": {"role": "user", "content": "x" * 80, "timestamp": 1}})  # fmt: skip
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    code = "import sys; from pisession.cli import main; sys.exit(main(sys.argv[1:]))"
    producer = subprocess.Popen(
        [sys.executable, "-c", code, "tree", str(path)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert producer.stdout is not None and producer.stderr is not None
    assert producer.stdout.read(10)
    producer.stdout.close()
    assert producer.wait(timeout=60) == 1
    assert producer.stderr.read() == b""
