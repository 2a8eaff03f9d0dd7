"""Public functions that take a session (issue 21, point 5): a path is accepted and read without
writing; anything else is a TypeError saying what the function takes, never an AttributeError
from inside it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pisession import SessionManager
from pisession.compaction import collect_entries_for_branch_summary
from pisession.export import to_entry_lines, to_html, to_jsonl, to_markdown, to_static_html, write_markdown
from pisession.stats import session_stats
from pisession.views import context_data, tree_data, tree_rows

HEADER = {
    "type": "session",
    "version": 3,
    "id": "01938cd2-1b00-7383-868d-05a8d6c6a856",
    "timestamp": "2024-12-03T14:00:00.000Z",
    "cwd": "/project",
}
USER = {
    "type": "message",
    "id": "aaaa0001",
    "parentId": None,
    "timestamp": "2024-12-03T14:00:01.000Z",
    "message": {"role": "user", "content": "hello", "timestamp": 1},
}

FUNCTIONS: dict[str, Callable[[Any], Any]] = {
    "session_stats": session_stats,
    "to_markdown": to_markdown,
    "to_html": to_html,
    "to_static_html": to_static_html,
    "to_jsonl": to_jsonl,
    "to_entry_lines": to_entry_lines,
    "tree_rows": tree_rows,
    "tree_data": tree_data,
    "context_data": context_data,
}


@pytest.fixture
def path(tmp_path: Path) -> Path:
    session = tmp_path / "s.jsonl"
    session.write_text(json.dumps(HEADER) + "\n" + json.dumps(USER), encoding="utf-8")  # no final newline
    return session


def _comparable(value: Any) -> Any:
    if isinstance(value, str):  # the viewer and pi-jsonl carry the time they were made
        return len(value.splitlines())
    if hasattr(value, "to_wire"):
        return value.to_wire()
    if not isinstance(value, dict):
        return [(row.node.entry.id, row.prefix) for row in value]
    return value


@pytest.mark.parametrize("name", FUNCTIONS)
def test_a_path_reads_like_the_manager_and_writes_nothing(name: str, path: Path) -> None:
    before = path.read_bytes()
    function = FUNCTIONS[name]
    from_path = function(str(path))
    from_pathlib = function(path)
    assert path.read_bytes() == before  # not even the missing newline is repaired
    from pisession import read_session

    expected = _comparable(function(read_session(path)))
    assert _comparable(from_path) == expected == _comparable(from_pathlib)


@pytest.mark.parametrize("name", FUNCTIONS)
@pytest.mark.parametrize("wrong", [42, None, b"s.jsonl", ["s.jsonl"]])
def test_anything_else_is_a_type_error_naming_what_is_expected(name: str, wrong: object) -> None:
    expected = rf"^{name}\(\) takes a SessionManager or the path of a session file, not "
    with pytest.raises(TypeError, match=expected):
        FUNCTIONS[name](wrong)


def test_a_snapshot_and_an_async_manager_are_explained(path: Path) -> None:
    from pisession.aio import AsyncSessionManager

    manager = SessionManager.open(path)
    with pytest.raises(TypeError, match="a snapshot has no leaf"):
        session_stats(manager.snapshot())  # type: ignore[arg-type]
    async_manager = AsyncSessionManager.__new__(AsyncSessionManager)
    with pytest.raises(TypeError, match=r"pass its \.sync manager, or the path of its session file"):
        to_markdown(async_manager)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="collect_entries_for_branch_summary"):
        collect_entries_for_branch_summary(5, None, "aaaa0001")  # type: ignore[arg-type]
    manager.close()


def test_write_functions_take_a_path_too(path: Path, tmp_path: Path) -> None:
    target = tmp_path / "out.md"
    assert write_markdown(path, target) == str(target)
    assert "hello" in target.read_text()
    with pytest.raises(TypeError, match=r"^write_markdown\(\) takes"):
        write_markdown(3, target)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("message", "error", "says"),
    [
        ({"foo": 1}, ValueError, "needs a string 'role'.*not none"),
        ({"role": None, "content": "x"}, ValueError, "not None"),
        ({"role": 5}, ValueError, "not 5"),
        ("hello", TypeError, "takes a message.*not str"),
        (None, TypeError, "not NoneType"),
        ([{"role": "user"}], TypeError, "not list"),
    ],
)
def test_append_message_refuses_what_has_no_role_and_writes_nothing(
    path: Path, message: Any, error: type[Exception], says: str
) -> None:
    manager = SessionManager.open(path)
    before = path.read_bytes()
    with pytest.raises(error, match=says):
        manager.append_message(message)
    assert path.read_bytes() == before and manager.get_entry_count() == 1
    manager.close()


def test_append_message_keeps_unknown_string_roles(path: Path) -> None:
    manager = SessionManager.open(path)
    entry_id = manager.append_message({"role": "hologram", "content": "x", "timestamp": 1})
    manager.close()
    line = json.loads(path.read_text(encoding="utf-8").splitlines()[-1])
    assert line["id"] == entry_id and line["message"] == {"role": "hologram", "content": "x", "timestamp": 1}


def test_entry_errors_name_the_session(path: Path) -> None:
    import pickle

    from pisession import EntryNotFoundError, InvalidContextEditError, read_session

    manager = SessionManager.open(path)
    with pytest.raises(EntryNotFoundError) as caught:
        manager.branch("nope")
    assert str(caught.value) == f"Entry nope not found in {path}"
    assert caught.value.args[0] == "Entry nope not found"  # Pi's own text
    assert isinstance(caught.value, KeyError) and caught.value.where == str(path)
    copied = pickle.loads(pickle.dumps(caught.value))
    assert type(copied) is EntryNotFoundError and str(copied) == str(caught.value)
    not_on_branch = rf"^Entry aaaa0001 is not on the active branch in {path}$"
    with pytest.raises(InvalidContextEditError, match=not_on_branch):
        manager.reset_leaf()
        manager.append_context_edit("aaaa0001", None)
    with pytest.raises(EntryNotFoundError, match=rf"^Entry x not found in {path}$"):
        read_session(path).append_label_change("x", "l")
    with pytest.raises(EntryNotFoundError, match=r"^Entry x not found in an in-memory session$"):
        SessionManager.in_memory("/p").create_branched_session("x")
    manager.close()


def test_cli_entry_errors_name_the_file(path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pisession.cli import main

    assert main(["extract", str(path), "--leaf", "nope"]) == 1
    assert capsys.readouterr().err == f"pisession: error: entry nope not found in {path}\n"
    assert main(["compact", str(path), "--summary", "s", "--keep-from", "nope"]) == 1
    assert capsys.readouterr().err == f"pisession: error: entry nope not found in {path}\n"


def test_no_public_constructor_takes_a_private_parameter() -> None:
    import inspect

    from pisession.aio import AsyncSessionManager

    assert [p for p in inspect.signature(AsyncSessionManager).parameters if p.startswith("_")] == []
