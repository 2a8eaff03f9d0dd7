from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from conftest import CountingIds, StepClock

import pisession
from pisession import SessionManager


def user(text: str, ts: int = 1) -> dict[str, Any]:
    return {"role": "user", "content": text, "timestamp": ts}


def assistant(text: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "text", "text": text}],
        "api": "anthropic-messages",
        "provider": "anthropic",
        "model": "claude",
        "usage": {
            "input": 1,
            "output": 2,
            "cacheRead": 0,
            "cacheWrite": 0,
            "totalTokens": 3,
            "cost": {
                "input": 0.000018,
                "output": 0.00002,
                "cacheRead": 0,
                "cacheWrite": 0,
                "total": 0.000038,
            },
        },
        "stopReason": "stop",
        "timestamp": 2,
    }


def lines(path: str | None) -> list[dict[str, Any]]:
    assert path is not None
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def make(tmp_path: Path, clock: StepClock, ids: CountingIds) -> SessionManager:
    return SessionManager.create("/project", tmp_path, clock=clock, ids=ids)


def test_nothing_written_before_first_conversation_message(
    tmp_path: Path, clock: StepClock, ids: CountingIds
) -> None:
    manager = make(tmp_path, clock, ids)
    manager.append_model_change("anthropic", "claude")
    manager.append_thinking_level_change("high")
    assert not os.path.exists(manager.get_session_file() or "")
    manager.append_message(user("hi"))
    written = lines(manager.get_session_file())
    assert [e["type"] for e in written] == ["session", "model_change", "thinking_level_change", "message"]
    assert stat.S_IMODE(os.stat(manager.get_session_file() or "").st_mode) == 0o600


def test_file_name_and_header_as_pi_forms_them(tmp_path: Path, clock: StepClock, ids: CountingIds) -> None:
    manager = make(tmp_path, clock, ids)
    manager.append_message(user("hi"))
    header = lines(manager.get_session_file())[0]
    assert list(header) == ["type", "version", "id", "timestamp", "cwd"]
    assert os.path.basename(manager.get_session_file() or "") == "2024-12-03T14-00-00-001Z_session-1.jsonl"


def test_reopen_gives_the_same_context(tmp_path: Path, clock: StepClock, ids: CountingIds) -> None:
    manager = make(tmp_path, clock, ids)
    first = manager.append_message(user("hi"))
    manager.append_message(assistant("hello"))
    manager.append_label_change(first, "start")
    manager.append_session_info("  my\r\n\nsession ")
    again = SessionManager.open(manager.get_session_file() or "")
    assert pisession.to_wire(again.build_session_context()) == pisession.to_wire(
        manager.build_session_context()
    )
    assert again.get_label(first) == "start"
    assert again.get_session_name() == "my session"
    assert again.get_leaf_id() == manager.get_leaf_id()


def test_undefined_and_null_are_different_lines(tmp_path: Path, clock: StepClock, ids: CountingIds) -> None:
    manager = make(tmp_path, clock, ids)
    manager.append_message(user("hi"))
    manager.append_custom_entry("state")
    manager.append_custom_entry("state", None)
    written = lines(manager.get_session_file())
    assert "data" not in written[2] and written[3]["data"] is None
    assert list(written[3]) == ["type", "customType", "data", "id", "parentId", "timestamp"]


def test_failed_write_is_rolled_back(
    tmp_path: Path, clock: StepClock, ids: CountingIds, monkeypatch: pytest.MonkeyPatch
) -> None:
    manager = make(tmp_path, clock, ids)
    first = manager.append_message(user("hi"))
    store = manager._file
    assert store is not None

    def broken(data: bytes, **_: Any) -> Any:
        raise OSError("disk full")

    monkeypatch.setattr(store, "append", broken)
    with pytest.raises(OSError):
        manager.append_message(user("lost"))
    assert manager.get_leaf_id() == first
    assert manager.get_entry_count() == 1
    monkeypatch.undo()
    second = manager.append_message(user("kept"))
    assert manager.get_entry(second).parent_id == first  # type: ignore[union-attr]


def test_context_edit_checks_in_pi_order(tmp_path: Path, clock: StepClock, ids: CountingIds) -> None:
    manager = make(tmp_path, clock, ids)
    u = manager.append_message(user("hi"))
    change = manager.append_model_change("a", "b")
    with pytest.raises(pisession.InvalidContextEditError, match="must be null or contain"):
        manager.append_context_edit("missing", {"content": 5})
    with pytest.raises(pisession.EntryNotFoundError, match="Entry missing not found"):
        manager.append_context_edit("missing", None)
    with pytest.raises(pisession.InvalidContextEditError, match="does not contribute editable"):
        manager.append_context_edit(change, None)
    manager.branch(u)
    other = manager.append_message(user("other"))
    manager.branch(change)
    with pytest.raises(pisession.InvalidContextEditError, match="not on the active branch"):
        manager.append_context_edit(other, None)


def test_branch_with_summary_from_null_leaf_says_root(
    tmp_path: Path, clock: StepClock, ids: CountingIds
) -> None:
    manager = make(tmp_path, clock, ids)
    manager.append_message(user("hi"))
    manager.reset_leaf()
    sid = manager.branch_with_summary(None, "fresh start")
    entry = manager.get_entry(sid)
    assert entry is not None and entry.parent_id is None
    assert lines(manager.get_session_file())[-1]["fromId"] == "root"


def test_two_managers_append_to_one_file_without_forking(
    tmp_path: Path, clock: StepClock, ids: CountingIds
) -> None:
    one = make(tmp_path, clock, ids)
    one.append_message(user("hi"))
    two = SessionManager.open(one.get_session_file() or "")
    a = two.append_custom_entry("ext", {"n": 1})
    b = one.append_message(user("after"))
    entry_b = one.get_entry(b)
    assert entry_b is not None and entry_b.parent_id == a
    assert [e.id for e in two.refresh()] == [b]
    assert two.get_leaf_id() == a  # refresh does not move the leaf
    written = lines(one.get_session_file())
    assert [e.get("id") for e in written[1:]] == [e.id for e in one.get_entries()]


def test_snapshot_is_unchanged_by_later_appends(tmp_path: Path, clock: StepClock, ids: CountingIds) -> None:
    manager = make(tmp_path, clock, ids)
    manager.append_message(user("hi"))
    snapshot = manager.snapshot()
    manager.append_message(user("more"))
    assert len(snapshot) == 1 and manager.get_entry_count() == 2


def test_batch_appends_under_one_lock(tmp_path: Path, clock: StepClock, ids: CountingIds) -> None:
    manager = make(tmp_path, clock, ids)
    manager.append_message(user("hi"))
    with manager.batch():
        for i in range(50):
            manager.append_message(user(f"m{i}"))
    written = lines(manager.get_session_file())
    assert len(written) == 52
    assert all(written[i]["parentId"] == written[i - 1]["id"] for i in range(2, 52))


def test_open_non_session_file_fails_and_leaves_it(tmp_path: Path) -> None:
    path = tmp_path / "notes.jsonl"
    path.write_text('{"hello": 1}\n')
    with pytest.raises(pisession.InvalidSessionError):
        SessionManager.open(path)
    assert path.read_text() == '{"hello": 1}\n'


def test_open_empty_file_writes_a_header(tmp_path: Path) -> None:
    path = tmp_path / "empty.jsonl"
    path.write_text("")
    manager = SessionManager.open(path, cwd_override="/p")
    assert lines(str(path))[0]["type"] == "session"
    assert manager.get_cwd() == "/p"


def test_missing_final_newline_is_repaired(tmp_path: Path, clock: StepClock, ids: CountingIds) -> None:
    manager = make(tmp_path, clock, ids)
    manager.append_message(user("hi"))
    path = Path(manager.get_session_file() or "")
    path.write_bytes(path.read_bytes().rstrip(b"\n"))
    again = SessionManager.open(path)
    assert path.read_bytes().endswith(b"}\n")
    again.append_message(user("next"))
    assert len(lines(str(path))) == 3


def test_invalid_session_ids_rejected_before_any_path(tmp_path: Path) -> None:
    for bad in ["../x", "a/b", "", ".a", "a\x00b", "a\nb"]:
        with pytest.raises(pisession.InvalidSessionIdError):
            SessionManager.create("/p", tmp_path, id=bad)
    assert list(tmp_path.iterdir()) == []


def test_create_branched_session_drops_and_rebuilds_labels(
    tmp_path: Path, clock: StepClock, ids: CountingIds
) -> None:
    manager = make(tmp_path, clock, ids)
    u = manager.append_message(user("hi"))
    manager.append_label_change(u, "start")
    a = manager.append_message(assistant("hello"))
    old_file = manager.get_session_file()
    new_file = manager.create_branched_session(a)
    assert new_file != old_file
    written = lines(new_file)
    assert written[0]["parentSession"] == old_file
    assert [e["type"] for e in written[1:]] == ["message", "message", "label"]
    assert written[2]["parentId"] == u
    assert written[3]["parentId"] == a and written[3]["targetId"] == u


def test_a_side_entry_from_another_writer_does_not_capture_the_leaf(
    tmp_path: Path, clock: StepClock, ids: CountingIds
) -> None:
    a = make(tmp_path, clock, ids)
    u1 = a.append_message(user("u1"))
    b = SessionManager.open(a.get_session_file() or "")
    a1 = a.append_message(assistant("a1"))
    b.refresh()
    side = b.append_custom_entry("ext", {"n": 1})  # b's leaf is still u1: a side branch
    assert b.get_entry(side).parent_id == u1  # type: ignore[union-attr]
    u2 = a.append_message(user("u2"))
    assert a.get_entry(u2).parent_id == a1  # type: ignore[union-attr]


def test_a_continuation_by_another_writer_is_followed(
    tmp_path: Path, clock: StepClock, ids: CountingIds
) -> None:
    a = make(tmp_path, clock, ids)
    a.append_message(user("u1"))
    b = SessionManager.open(a.get_session_file() or "")
    cont = b.append_message(assistant("continues a's conversation"))
    mine = a.append_message(user("next"))
    assert a.get_entry(mine).parent_id == cont  # type: ignore[union-attr]


def test_refresh_reports_entries_absorbed_during_an_append(
    tmp_path: Path, clock: StepClock, ids: CountingIds
) -> None:
    a = make(tmp_path, clock, ids)
    a.append_message(user("u1"))
    b = SessionManager.open(a.get_session_file() or "")
    x = a.append_message(user("x"))
    b.append_custom_entry("ext")  # absorbs x first
    assert [e.id for e in b.refresh()] == [x]
    assert b.refresh() == []


def test_opening_a_current_session_writes_nothing_not_even_a_lock_file(tmp_path: Path) -> None:
    source = Path(__file__).parents[1] / "pisession" / "data" / "sample.jsonl"
    path = tmp_path / "s.jsonl"
    path.write_bytes(source.read_bytes())
    manager = SessionManager.open(path)
    manager.build_session_context()
    manager.get_tree()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.jsonl"]
    assert path.read_bytes() == source.read_bytes()


def test_tree_nodes_read_their_snapshot_and_compare_by_content(
    tmp_path: Path, clock: StepClock, ids: CountingIds
) -> None:
    manager = make(tmp_path, clock, ids)
    root = manager.append_message(user("root"))
    first = manager.append_message(assistant("first"))
    manager.branch(root)
    second = manager.append_message(user("second", 2))
    manager.append_label_change(first, "keep")
    tree = manager.get_tree()
    [node] = tree
    assert node.entry.id == root and node.label is None and node.label_timestamp is None
    assert [c.entry.id for c in node.children] == [first, second]
    assert node.children[0].label == "keep" and node.children[0].label_timestamp is not None
    assert node.children[0].children == ()
    assert [c.entry.type for c in node.children[1].children] == ["label"]
    again = SessionManager.open(manager.get_session_file() or "").get_tree()
    assert again == tree
    assert (again != tree) is False  # __ne__ too
    manager.append_label_change(first, "changed")
    relabelled = manager.get_tree()
    assert relabelled != tree
    assert tree[0].children[0].label == "keep", "an earlier tree keeps its snapshot's labels"
    assert relabelled[0].to_wire()["children"][0]["label"] == "changed"


def test_get_branch_is_a_sequence_of_typed_entries(
    tmp_path: Path, clock: StepClock, ids: CountingIds
) -> None:
    manager = make(tmp_path, clock, ids)
    root = manager.append_message(user("root"))
    child = manager.append_message(assistant("child"))
    branch = manager.get_branch()
    assert len(branch) == 2 and [e.id for e in branch] == [root, child]
    assert branch[-1].id == child and [e.id for e in branch[:1]] == [root]
    assert isinstance(branch[0], pisession.MessageEntry)
    assert branch == list(manager.get_branch()) == manager.get_branch(child)
    assert manager.get_branch("no-such-id") == [] and len(manager.get_branch("no-such-id")) == 0
    manager.append_message(user("later"))
    assert len(branch) == 2, "a branch is read from its snapshot"
