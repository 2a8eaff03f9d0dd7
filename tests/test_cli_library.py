"""Each CLI command prints what a documented library call returns (issue 13: the CLI is thin)."""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest

import pisession
from pisession import read_session
from pisession.cli import main
from pisession.export import to_entry_lines, to_html, to_jsonl, to_markdown, to_static_html
from pisession.stats import session_stats
from pisession.validate import validate_file
from pisession.views import context_data, tree_data

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "tests" / "conformance" / "cases"
SESSIONS = [
    ROOT / "pisession" / "data" / "sample.jsonl",
    CASES / "all_entry_types.jsonl",
    CASES / "orphans.jsonl",
]


@pytest.fixture(autouse=True)
def _isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR", raising=False)
    monkeypatch.chdir(tmp_path)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    main(list(argv))
    return capsys.readouterr().out


def as_json(value: Any) -> Any:
    return json.loads(json.dumps(value, ensure_ascii=False))


@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: p.stem)
def test_exports_print_the_library_text(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manager = read_session(path)
    assert run(capsys, "export", str(path), "--format", "md") == to_markdown(manager)
    assert run(capsys, "export", str(path), "--format", "md", "--all") == to_markdown(
        manager, all_branches=True
    )
    assert run(capsys, "export", str(path), "--format", "html") == to_html(manager)
    assert run(capsys, "export", str(path), "--format", "html", "--all") == to_html(manager)
    assert run(capsys, "export", str(path), "--format", "static-html") == to_static_html(manager)
    assert run(capsys, "export", str(path), "--format", "static-html", "--all") == to_static_html(
        manager, all_branches=True
    )
    assert run(capsys, "export", str(path), "--format", "jsonl") == to_entry_lines(manager)
    assert run(capsys, "export", str(path), "--format", "jsonl", "--all") == to_entry_lines(
        manager, all_branches=True
    )
    printed = run(capsys, "export", str(path), "--format", "pi-jsonl").splitlines()
    expected = to_jsonl(manager).splitlines()
    assert len(printed) == len(expected) and printed[1:] == expected[1:]
    header, mine = json.loads(printed[0]), json.loads(expected[0])
    assert {**header, "timestamp": ""} == {**mine, "timestamp": ""}  # only the time of export differs


@pytest.mark.parametrize("path", SESSIONS, ids=lambda p: p.stem)
def test_json_views_are_the_library_data(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    manager = read_session(path)
    assert json.loads(run(capsys, "stats", str(path), "--json")) == as_json(session_stats(manager).to_wire())
    assert json.loads(run(capsys, "tree", str(path), "--json")) == as_json(tree_data(manager))
    assert json.loads(run(capsys, "context", str(path), "--json")) == as_json(context_data(manager))
    reports = json.loads(run(capsys, "validate", str(path), "--json"))
    assert reports == [as_json(validate_file(path).to_wire())]


def test_stats_is_typed_data() -> None:
    stats = session_stats(read_session(SESSIONS[0]))
    assert stats.total.calls == sum(row.usage.calls for row in stats.by_source)
    assert stats.total.tokens == stats.total.input + stats.total.output + stats.total.cache_read + (
        stats.total.cache_write
    )
    costs = [row.usage.cost for row in stats.by_model]
    assert costs == sorted(costs, reverse=True)
    with pytest.raises(AttributeError):
        stats.total.calls = 0  # type: ignore[misc]


def test_validate_folder_reports_every_session(tmp_path: Path) -> None:
    from pisession.validate import validate_folder

    for name in ("orphans.jsonl", "all_entry_types.jsonl", "malformed_lines.jsonl"):
        (tmp_path / name).write_bytes((CASES / name).read_bytes())
    (tmp_path / "notes.txt").write_text("not a session")
    reports = validate_folder(tmp_path)
    assert [Path(r.path).name for r in reports] == [
        "all_entry_types.jsonl",
        "malformed_lines.jsonl",
        "orphans.jsonl",
    ]
    assert [r.ok for r in reports] == [True, False, False]
    assert all(p.line is not None for p in reports[1].errors)


def test_the_cli_package_uses_only_public_names_and_small_modules() -> None:
    for module in sorted((ROOT / "pisession" / "cli").glob("*.py")):
        source = module.read_text(encoding="utf-8")
        assert len(source.splitlines()) <= 500, module.name
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                parts = node.module.split(".")
                assert parts[0] != "pisession" or not any(p.startswith("_") for p in parts), (
                    module,
                    node.module,
                )
                if parts[0] == "pisession":
                    assert not any(
                        a.name.startswith("_") and not a.name.endswith("__") for a in node.names
                    ), (module, node.module)
            elif isinstance(node, ast.ImportFrom) and node.level > 1:
                raise AssertionError(f"{module.name} reaches into the library by a relative import")


def test_descriptions_take_typed_entries_or_their_json() -> None:
    from pisession import to_wire
    from pisession.describe import describe_entry, describe_message, entry_kind, usage_text

    manager = read_session(SESSIONS[0])
    for entry in manager.get_entries():
        wire = to_wire(entry)
        assert describe_entry(entry) == describe_entry(wire)
        assert entry_kind(entry) == entry_kind(wire)
        message = getattr(entry, "message", None)
        if message is not None:
            assert describe_message(message) == describe_message(wire["message"])
    kinds = {entry_kind(e) for e in manager.get_entries()}
    assert {"user", "assistant", "toolResult", "compaction", "branch summary", "model"} <= kinds
    calls = [describe_entry(e) for e in manager.get_entries() if entry_kind(e) == "assistant"]
    assert any("→ bash(" in text for text in calls)
    assert usage_text({"totalTokens": 1234, "cost": {"total": 0.5}}) == "1,234 tokens, $0.5000"
    assert usage_text(None) == ""


def test_validate_a_folder_is_validate_folder(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pisession.validate import validate_folder

    for name in ("orphans.jsonl", "all_entry_types.jsonl"):
        (tmp_path / name).write_bytes((CASES / name).read_bytes())
    printed = json.loads(run(capsys, "validate", str(tmp_path), "--json"))
    assert printed == [as_json(r.to_wire()) for r in validate_folder(tmp_path)]
    assert len(printed) == 2


def test_ls_json_is_session_manager_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pisession import SessionManager

    folder = tmp_path / "sessions"
    folder.mkdir()
    for path in SESSIONS:
        (folder / path.name).write_bytes(path.read_bytes())
    printed = json.loads(run(capsys, "ls", "--session-dir", str(folder), "--all", "--json"))
    assert printed == as_json([info.to_wire() for info in SessionManager.list_all(str(folder))])
    assert len(printed) == 3


def test_an_export_into_a_missing_folder_names_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "missing" / "out.md"
    code = main(["export", str(SESSIONS[0]), "--format", "md", "-o", str(target)])
    err = capsys.readouterr().err
    assert code == 1 and err == f"pisession: error: No such file or directory: {target}\n"


def test_context_tokens_are_pis_estimate() -> None:
    from pisession import get_current_system_message
    from pisession.compaction import estimate_tokens
    from pisession.views import context_data

    manager = pisession.SessionManager.in_memory("/p")
    # Astral characters count twice in Pi's (UTF-16) lengths
    manager.append_message({"role": "system", "content": "Be brief. 😀" * 10, "timestamp": 1})
    manager.append_message({"role": "user", "content": "hi 😀", "timestamp": 2})
    messages = manager.build_session_context().messages
    system = get_current_system_message(messages)
    expected = sum(estimate_tokens(m) for m in messages if m.role != "system")
    expected += estimate_tokens(system) if system is not None else 0
    assert system is not None and context_data(manager)["totals"]["approxTokens"] == expected


@pytest.mark.parametrize("path", SESSIONS[:1], ids=lambda p: p.stem)
def test_results_have_to_wire_and_to_json_is_a_deprecated_alias(path: Path) -> None:
    from pisession import SessionManager, to_wire
    from pisession.stats import session_stats
    from pisession.validate import validate_file

    for result in (session_stats(SessionManager.open(path)), validate_file(path)):
        wire = result.to_wire()
        assert to_wire(result) == wire
        with pytest.warns(DeprecationWarning, match=r"to_json\(\) is deprecated; call to_wire"):
            assert result.to_json() == wire
