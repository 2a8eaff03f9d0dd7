"""pisession.importers: Claude Code and Codex CLI sessions into Pi, one test per pitfall of
issue 32 (hand-made fixtures in tests/data/importers, written by make_fixtures.py)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pisession import SessionManager, SourceFormatError, to_wire
from pisession.cli.main import main
from pisession.importers import ImportResult, find_sources, import_all, import_file, import_session, sniff
from tests.conftest import ORACLE, needs_oracle

DATA = Path(__file__).parent / "data" / "importers"
CLAUDE = DATA / "claude"
CODEX = DATA / "codex"
ROLLOUT = CODEX / "rollout-2026-03-01T10-00-00-0199aaaa-bbbb-7ccc-8ddd-eeeeeeeeeeee.jsonl"
SID = "11111111-2222-4333-8444-555555555555"

PUBLIC = DATA / "public"
PUBLIC_CLAUDE = sorted(p for p in (PUBLIC / "claude").rglob("*.jsonl") if "subagents" not in p.parts)
PUBLIC_CODEX = sorted((PUBLIC / "codex").rglob("rollout-*.jsonl"))
PUBLIC_BRANCHES = {
    # "First attempt" and "Second attempt" are both prompts under the assistant record a1.
    "dag_compact_after_rewind.jsonl": 2,
    "dag_compact_after_rewind_preserved.jsonl": 2,
}


def one(path: Path, tmp_path: Path) -> SessionManager:
    paths = import_session(path, session_dir=tmp_path)
    assert paths and paths[0].parent == tmp_path
    return SessionManager.open(paths[0])


def leaves(manager: SessionManager) -> list[str]:
    entries = manager.get_entries()
    parents = {e.parent_id for e in entries}
    return [e.id for e in entries if e.id not in parents]


def context(manager: SessionManager) -> list[tuple[str, str]]:
    out = []
    for message in manager.build_session_context().messages:
        wire = to_wire(message)
        content = wire.get("content") if isinstance(wire, dict) else None
        if isinstance(content, list):
            text = " ".join(b.get("text", b.get("name", "")) for b in content if isinstance(b, dict))
        else:
            text = str(content if content is not None else wire.get("summary", ""))
        out.append((wire["role"], text))
    return out


def messages(manager: SessionManager, role: str) -> list[dict]:
    found = []
    for entry in manager.get_entries():
        if entry.type == "message":
            wire = to_wire(entry.message)
            if wire["role"] == role:
                found.append(wire)
    return found


# ---------------------------------------------------------------------------------- claude


def test_sibling_tool_call_forks_are_not_branches(tmp_path: Path) -> None:
    manager = one(CLAUDE / "forks.jsonl", tmp_path)
    assert len(leaves(manager)) == 1
    roles = [role for role, _ in context(manager)]
    assert roles == [
        "user",
        "assistant",
        "toolResult",
        "toolResult",
        "assistant",
        "user",
        "user",
        "assistant",
    ]
    calls = [b["id"] for m in messages(manager, "assistant") for b in m["content"] if b["type"] == "toolCall"]
    results = [m["toolCallId"] for m in messages(manager, "toolResult")]
    assert calls == ["t1", "t2"] and results == ["t1", "t2"]
    assert manager.get_session_name() == "Listing files"
    (attachment,) = [
        e for e in manager.get_entries() if e.type == "custom" and e.custom_type == "claude-code.attachment"
    ]
    assert attachment.data["attachment"]["type"] == "todo_reminder"
    notes = import_file(CLAUDE / "forks.jsonl", session_dir=tmp_path).notes
    assert "records outside the conversation tree, not copied: 1 file-history-snapshot" in notes


def test_split_api_message_counts_usage_once_with_the_most_output(tmp_path: Path) -> None:
    manager = one(CLAUDE / "forks.jsonl", tmp_path)
    first = messages(manager, "assistant")[0]
    assert [b["type"] for b in first["content"]] == ["thinking", "toolCall", "toolCall"]
    assert first["usage"]["output"] == 322 and first["usage"]["cacheWrite"] == 50
    assert first["content"][0]["thinkingSignature"] == "sig1"
    assert first["provider"] == "anthropic" and first["api"] == "anthropic-messages"
    assert first["model"] == "claude-sonnet-4-5-20250929" and first["stopReason"] == "toolUse"
    total = sum(m["usage"]["output"] for m in messages(manager, "assistant"))
    assert total == 322 + 12 + 5


def test_rewound_prompt_is_a_branch_and_the_newest_is_active(tmp_path: Path) -> None:
    manager = one(CLAUDE / "rewind.jsonl", tmp_path)
    assert len(leaves(manager)) == 2
    # Claude Code 1.0.x recorded the dollars: without a price table, that is the cost.
    assert messages(manager, "assistant")[0]["usage"]["cost"]["total"] == 0.0125
    assert [text for _, text in context(manager)] == [
        "write a haiku",
        "Old pond...",
        "make it about dogs",
        "Dog in the sun...",
    ]


def test_compact_boundary_with_a_missing_logical_parent(tmp_path: Path) -> None:
    manager = one(CLAUDE / "compact.jsonl", tmp_path)
    assert len(leaves(manager)) == 1
    (compaction,) = [e for e in manager.get_entries() if e.type == "compaction"]
    assert compaction.summary.startswith("This session is being continued")
    assert compaction.tokens_before == 12345 and compaction.first_kept_entry_id == compaction.id
    assert compaction.parent_id is not None  # hangs from the story before it, not a second root
    assert [role for role, _ in context(manager)] == ["compactionSummary", "user", "assistant"]


def test_old_compaction_as_a_second_root_and_a_missing_hook_parent(tmp_path: Path) -> None:
    manager = one(CLAUDE / "old-compact.jsonl", tmp_path)
    assert len(leaves(manager)) == 1
    assert [e.parent_id for e in manager.get_entries()].count(None) == 1
    assert [e.type for e in manager.get_entries()].count("compaction") == 1
    assert [role for role, _ in context(manager)] == ["compactionSummary", "user", "assistant"]
    (system,) = [
        e for e in manager.get_entries() if e.type == "custom" and e.custom_type == "claude-code.system"
    ]
    assert system.data["content"] == "hook ran"


def test_a_file_starting_mid_story_has_no_unpaired_tool_result(tmp_path: Path) -> None:
    manager = one(CLAUDE / "midstory.jsonl", tmp_path)
    assert messages(manager, "toolResult") == []
    orphans = [
        e
        for e in manager.get_entries()
        if e.type == "custom" and e.custom_type == "claude-code.orphan-tool-result"
    ]
    assert len(orphans) == 1
    assert [role for role, _ in context(manager)] == ["user", "assistant"]


def test_sidechains_become_sessions_linked_by_parent_session(tmp_path: Path) -> None:
    paths = import_session(CLAUDE / "sidechain.jsonl", session_dir=tmp_path)
    assert len(paths) == 2
    sub = SessionManager.open(paths[1])
    assert sub.get_header().parent_session == str(paths[0])
    assert messages(sub, "assistant")[0]["usage"]["input"] == 1000
    main = SessionManager.open(paths[0])
    assert context(main)[0] == ("user", "research this")
    assert all(m["usage"]["input"] != 1000 for m in messages(main, "assistant"))


def test_sub_agent_files_come_with_their_session(tmp_path: Path) -> None:
    paths = import_session(CLAUDE / "agents" / f"{SID}.jsonl", session_dir=tmp_path)
    assert len(paths) == 2
    sub = SessionManager.open(paths[1])
    assert sub.get_header().parent_session == str(paths[0])
    assert messages(sub, "assistant")[0]["usage"]["output"] == 700
    assert find_sources("claude", CLAUDE / "agents") == [CLAUDE / "agents" / f"{SID}.jsonl"]


def _claude_line(sid: str, uuid: str, parent: str | None, kind: str, second: int, **extra: object) -> str:
    content = extra.pop("content")
    message: dict[str, object] = {"role": kind, "content": content}
    if kind == "assistant":
        message.update(id=f"msg_{uuid}", model="claude-haiku-4-5-20251001", stop_reason="end_turn",
                       usage={"input_tokens": 10 + second, "output_tokens": 5, "cache_read_input_tokens": 0,
                              "cache_creation_input_tokens": 0})  # fmt: skip
        extra["requestId"] = f"req_{uuid}"
    record = {"parentUuid": parent, "isSidechain": False, "sessionId": sid, "cwd": "/work/app",
              "version": "2.0.64", "type": kind, "uuid": uuid, "message": message,
              "timestamp": f"2025-12-10T19:37:{second:02d}.000Z", **extra}  # fmt: skip
    return json.dumps(record) + "\n"


def test_claude_2_0_sub_agent_files_beside_their_session_come_with_it(tmp_path: Path) -> None:
    """Claude Code 2.0 (seen in a real 2.0.64 store) wrote a session's sub-agents beside its file,
    as agent-<id>.jsonl whose records carry the session's id (2.1 moved them into
    <session>/subagents/). They are the session's sub-agents, linked by parentSession, not
    sessions of their own; an agent file whose session file is not there stays one."""
    sid = "4c2ddfdc-0000-4000-8000-000000000001"
    project = tmp_path / "projects" / "-work-app"
    project.mkdir(parents=True)
    (project / f"{sid}.jsonl").write_text(
        _claude_line(sid, "u1", None, "user", 1, content="hello")
        + _claude_line(sid, "a1", "u1", "assistant", 2, content=[{"type": "text", "text": "hi"}])
    )
    agent = project / "agent-36541525.jsonl"
    agent.write_text(
        _claude_line(sid, "s1", None, "user", 0, content="Warmup", isSidechain=True, agentId="36541525")
        + _claude_line(
            sid,
            "s2",
            "s1",
            "assistant",
            3,
            content=[{"type": "text", "text": "ready"}],
            isSidechain=True,
            agentId="36541525",
        )
    )
    lone = "9e9e9e9e-0000-4000-8000-000000000002"  # its session file is not in the folder
    (project / "agent-50243ee8.jsonl").write_text(
        _claude_line(lone, "x1", None, "user", 0, content="Warmup", isSidechain=True, agentId="50243ee8")
        + _claude_line(
            lone,
            "x2",
            "x1",
            "assistant",
            4,
            content=[{"type": "text", "text": "ok"}],
            isSidechain=True,
            agentId="50243ee8",
        )
    )
    assert find_sources("claude", project) == [project / f"{sid}.jsonl", project / "agent-50243ee8.jsonl"]
    out = tmp_path / "out"
    first, alone = import_all("claude", project, session_dir=out)
    assert isinstance(first, ImportResult) and isinstance(alone, ImportResult)
    main_path, sub_path = first.written
    sub = SessionManager.open(sub_path)
    assert sub.get_header().parent_session == str(main_path)
    assert [m["usage"]["input"] for m in messages(sub, "assistant")] == [13]
    assert [t for r, t in context(sub) if r == "user"] == ["Warmup"]
    assert len(alone.written) == 1
    # the agent file imported on its own is the same Pi session, already there
    again = import_file(agent, session_dir=out)
    assert again.written == [] and again.existing == [sub_path]


def test_a_split_message_without_request_id_counts_once_where_ccusage_counts_each_record(
    tmp_path: Path,
) -> None:
    """Claude Code on Bedrock (real 2.0.64 to 2.1.7 files, message ids msg_bdrk_...) writes no
    requestId. One API message split over two records is one Pi message with its usage once.
    ccusage 20.0.24 dedupes only records that have both ids, so it counts each record: measured on
    these records written as Claude Code writes them, it reports input 20, output 409, cache read
    100, cache write 200 (a deliberate difference, docs/how-to/importing.md)."""
    sid = "b0000000-0000-4000-8000-000000000001"
    lines = [_claude_line(sid, "u1", None, "user", 1, content="list the tools")]
    for uuid, parent, second, block, output in (
        ("a1", "u1", 2, {"type": "thinking", "thinking": "hm", "signature": "s"}, 3),
        ("a2", "a1", 3, {"type": "text", "text": "Here they are."}, 406),
    ):
        record = json.loads(_claude_line(sid, uuid, parent, "assistant", second, content=[block]))
        del record["requestId"]
        record["message"]["id"] = "msg_bdrk_01"
        record["message"]["usage"] = {"input_tokens": 10, "cache_creation_input_tokens": 100,
                                      "cache_read_input_tokens": 50, "output_tokens": output}  # fmt: skip
        lines.append(json.dumps(record) + "\n")
    source = tmp_path / f"{sid}.jsonl"
    source.write_text("".join(lines))
    (reply,) = messages(one(source, tmp_path / "out"), "assistant")
    assert [b["type"] for b in reply["content"]] == ["thinking", "text"]
    usage = reply["usage"]
    assert (usage["input"], usage["output"], usage["cacheRead"], usage["cacheWrite"]) == (10, 406, 50, 100)


def test_torn_last_line_imports_what_is_readable_and_says_so(tmp_path: Path) -> None:
    for path in (CLAUDE / "torn.jsonl", CODEX / "rollout-torn.jsonl"):
        result = import_file(path, session_dir=tmp_path)
        assert len(result.written) == 1
        assert any("cut off" in note for note in result.notes)
        assert [role for role, _ in context(SessionManager.open(result.written[0]))] == ["user", "assistant"]


def test_a_second_import_writes_nothing(tmp_path: Path) -> None:
    for path in (CLAUDE / "sidechain.jsonl", ROLLOUT):
        first = import_file(path, session_dir=tmp_path)
        before = {p: p.read_bytes() for p in tmp_path.iterdir()}
        second = import_file(path, session_dir=tmp_path)
        assert second.written == [] and second.existing == first.written
        assert {p: p.read_bytes() for p in tmp_path.iterdir()} == before


DEEP = '{"type":"x","x":' + "[" * 3000 + "]" * 3000 + "}"


# A number json reads and int() cannot take (NaN, Infinity, 1e400 read as inf), and a line
# nested past Python's stack: each once ended the import in a traceback.
@pytest.mark.parametrize(
    ("source", "old", "new"),
    [
        (ROLLOUT, '"input_tokens":1000', '"input_tokens":Infinity'),
        (ROLLOUT, '"input_tokens":1000', '"input_tokens":NaN'),
        (ROLLOUT, '"num_turns":1', '"num_turns":NaN'),
        (ROLLOUT, "\n", "\n" + DEEP + "\n"),
        (
            DATA / "public/claude/spotter/tool_heavy.jsonl",
            '"ephemeral_1h_input_tokens":208',
            '"ephemeral_1h_input_tokens":1e400',
        ),
        (CLAUDE / "compact.jsonl", '"preTokens":12345', '"preTokens":Infinity'),
        (CLAUDE / "compact.jsonl", "\n", "\n" + DEEP + "\n"),
    ],
)
def test_numbers_no_int_holds_and_deep_lines_are_imported_past(
    tmp_path: Path, source: Path, old: str, new: str
) -> None:
    text = source.read_text(encoding="utf-8")
    assert old in text
    copy = tmp_path / "src" / source.name
    copy.parent.mkdir()
    copy.write_text(text.replace(old, new, 1), encoding="utf-8")
    result = import_file(copy, session_dir=tmp_path / "out")
    assert len(result.written) == 1
    assert SessionManager.open(result.written[0]).get_entries()


def test_foreign_files_are_clear_errors_that_write_nothing(tmp_path: Path) -> None:
    pi = tmp_path / "src" / "pi.jsonl"
    pi.parent.mkdir()
    pi.write_text(
        '{"type":"session","version":3,"id":"x","timestamp":"2026-01-01T00:00:00.000Z","cwd":"/"}\n'
    )
    target = tmp_path / "out"
    for path in (pi, DATA / "foreign.json"):
        with pytest.raises(SourceFormatError):
            import_session(path, session_dir=target)
    with pytest.raises(SourceFormatError, match="not codex"):
        import_session(CLAUDE / "rewind.jsonl", source="codex", session_dir=target)
    assert not target.exists()


def test_a_claude_file_with_no_conversation_is_nothing_to_import_not_a_foreign_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Claude Code 1.0 leaves summary-only files in the store (a real 1.0.17 store holds one
    beside its sessions: one `summary` record whose leafUuid is in another file), and 2.x files
    of snapshots only. They are Claude Code's own files with nothing to import: a note, not a
    "not a claude session" error that fails a one-file import."""
    store = tmp_path / "-work-app"
    store.mkdir()
    summary = store / "ff71dbed-0000-4000-8000-000000000001.jsonl"
    summary.write_text('{"type":"summary","summary":"AI Music Generation","leafUuid":"4c7d4d5a"}\n')
    snapshots = store / "ff71dbed-0000-4000-8000-000000000002.jsonl"
    snapshots.write_text(
        '{"type":"file-history-snapshot","messageId":"m1","snapshot":{"messageId":"m1",'
        '"trackedFileBackups":{},"timestamp":"2026-01-01T00:00:00.000Z"},"isSnapshotUpdate":false}\n'
    )
    for path in (summary, snapshots):
        assert sniff(path) == "claude"
        result = import_file(path, session_dir=tmp_path / "out")
        assert result.written == [] and any("nothing to import" in n for n in result.notes)
    capsys.readouterr()
    assert main(["import", "claude", "--session-dir", str(tmp_path / "out"), str(store)]) == 0
    assert "skipped" not in capsys.readouterr().err.replace("0 skipped", "")
    assert not (tmp_path / "out").exists()
    # a record of another tool with a "type" alone is still foreign
    other = tmp_path / "other.jsonl"
    other.write_text('{"type":"x","sessionId":"y"}\n')
    with pytest.raises(SourceFormatError):
        import_file(other, session_dir=tmp_path / "out")


def test_the_source_is_never_modified_and_dry_run_writes_nothing(tmp_path: Path) -> None:
    copy = tmp_path / "torn.jsonl"
    shutil.copy(CLAUDE / "torn.jsonl", copy)
    before = copy.read_bytes()
    result = import_file(copy, session_dir=tmp_path / "out", dry_run=True)
    assert len(result.written) == 1 and not (tmp_path / "out").exists()
    import_file(copy, session_dir=tmp_path / "out")
    assert copy.read_bytes() == before


# ----------------------------------------------------------------------------------- codex


def test_codex_usage_deltas_and_cached_input(tmp_path: Path) -> None:
    manager = one(ROLLOUT, tmp_path)
    assistant = messages(manager, "assistant")
    usage = [m["usage"] for m in assistant]
    # Totals end at 4000 input (2600 cached) and 170 output; a repeated total adds nothing.
    assert sum(u["input"] for u in usage) == 4000 - 2600
    assert sum(u["cacheRead"] for u in usage) == 2600
    assert sum(u["output"] for u in usage) == 170
    assert usage[0] == {**usage[0], "input": 200, "cacheRead": 800, "output": 50, "reasoning": 20}
    assert assistant[0]["provider"] == "openai-codex" and assistant[0]["model"] == "gpt-5-codex"


def test_codex_prompt_as_event_and_item_is_taken_once(tmp_path: Path) -> None:
    manager = one(ROLLOUT, tmp_path)
    prompts = [m["content"] for m in messages(manager, "user")]
    assert prompts == ["fix the test", "fix it without running tests", "thanks"]
    (call,) = [b for m in messages(manager, "assistant") for b in m["content"] if b["type"] == "toolCall"]
    assert call["arguments"] == {"command": ["pytest", "-q"]}
    assert messages(manager, "toolResult")[0]["toolCallId"] == "call_1"


def test_codex_prompt_with_a_pasted_image_is_taken_once(tmp_path: Path) -> None:
    """Codex 0.93 (a real rollout) records a prompt with a pasted image as an item whose text
    parts wrap the image ("<image name=[Image #1]>", the image, "</image>", then the typed text)
    and as a user_message event holding the typed text alone: one prompt, with its image (it was
    taken twice, the second time without the image)."""
    png = "iVBORw0KGgo="
    typed = "why does the label break here? [Image #1]"
    envelopes = [
        ("session_meta", {"id": "0199eeee-0000-7000-8000-000000000001", "cwd": "/work/app",
                          "timestamp": "2026-02-01T10:00:00.000Z", "cli_version": "0.93.0"}),
        ("turn_context", {"cwd": "/work/app", "model": "gpt-5.2-codex"}),
        ("response_item", {"type": "message", "role": "user", "content": [
            {"type": "input_text", "text": "<image name=[Image #1]>"},
            {"type": "input_image", "image_url": f"data:image/png;base64,{png}"},
            {"type": "input_text", "text": "</image>"},
            {"type": "input_text", "text": typed}]}),
        ("event_msg", {"type": "user_message", "message": typed, "images": [],
                       "local_images": ["/tmp/shot.png"]}),
        ("response_item", {"type": "message", "role": "assistant",
                           "content": [{"type": "output_text", "text": "It wraps."}]}),
        ("event_msg", {"type": "user_message", "message": "thanks"}),
    ]  # fmt: skip
    rollout = tmp_path / "rollout-2026-02-01T10-00-00-0199eeee-0000-7000-8000-000000000001.jsonl"
    rollout.write_text(
        "".join(
            json.dumps({"timestamp": f"2026-02-01T10:00:0{n}.000Z", "type": kind, "payload": payload}) + "\n"
            for n, (kind, payload) in enumerate(envelopes)
        )
    )
    prompts = messages(one(rollout, tmp_path / "out"), "user")
    assert len(prompts) == 2
    assert [b.get("data") for b in prompts[0]["content"] if b["type"] == "image"] == [png]
    assert _text(prompts[0]).endswith(typed) and _text(prompts[1]) == "thanks"


def test_codex_rollback_is_a_branch_and_empty_compacted_message(tmp_path: Path) -> None:
    manager = one(ROLLOUT, tmp_path)
    assert len(leaves(manager)) == 2
    (compaction,) = [e for e in manager.get_entries() if e.type == "compaction"]
    assert compaction.summary == "Summary: the test was fixed by reading the code."
    assert context(manager) == [
        ("compactionSummary", "Summary: the test was fixed by reading the code."),
        ("user", "thanks"),
        ("assistant", "Welcome."),
    ]


def test_codex_flat_old_layout(tmp_path: Path) -> None:
    assert sniff(CODEX / "rollout-2025-05-01-flat.jsonl") == "codex"
    manager = one(CODEX / "rollout-2025-05-01-flat.jsonl", tmp_path)
    assert context(manager) == [("user", "hello codex"), ("assistant", "hello")]
    # claude-code-log's legacy rollout: a meta line with only the id and the time (no
    # instructions, no git), then bare response items
    legacy = DATA / "public" / "codex" / "claude-code-log" / "sessions"
    legacy /= "rollout-44444444-4444-4444-8444-444444444444.jsonl"
    assert sniff(legacy) == "codex"
    assert context(one(legacy, tmp_path / "legacy")) == [
        ("user", "Open the synthetic legacy session."),
        ("assistant", "The synthetic legacy session is open."),
    ]


def test_import_all_walks_the_store_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "codex-home"
    shutil.copytree(CODEX, home / "sessions" / "2026" / "03" / "01")
    monkeypatch.setenv("CODEX_HOME", str(home))
    results = import_all("codex", session_dir=tmp_path / "out")
    assert len(results) == 7 and all(not isinstance(r, Exception) for r in results)
    assert len(list((tmp_path / "out").glob("*.jsonl"))) == 7


@pytest.mark.parametrize(
    "path", sorted((DATA / "public" / "codex").glob("*.jsonl")), ids=lambda p: p.name[:30]
)
def test_public_codex_rollouts_keep_every_token(tmp_path: Path, path: Path) -> None:
    """Real (sanitized) Codex 0.104 rollouts: the imported usage adds up to the last cumulative
    total, as ccusage counts it; every call pairs with its output."""
    total = None
    for line in path.read_text().splitlines():
        record = json.loads(line)
        info = record.get("payload", {}).get("info") if record.get("type") == "event_msg" else None
        if info:
            total = info["total_token_usage"]
    manager = one(path, tmp_path)
    usage = [m["usage"] for m in messages(manager, "assistant")]
    assert sum(u["input"] + u["cacheRead"] for u in usage) == total["input_tokens"]
    assert sum(u["cacheRead"] for u in usage) == total["cached_input_tokens"]
    assert sum(u["output"] for u in usage) == total["output_tokens"]
    calls = {b["id"] for m in messages(manager, "assistant") for b in m["content"] if b["type"] == "toolCall"}
    assert {m["toolCallId"] for m in messages(manager, "toolResult")} <= calls
    assert {m["model"] for m in messages(manager, "assistant")} == {"gpt-5.3-codex"}
    # agent_message events echo the reply items (sanitized differently here): taken once
    items = [
        part["text"]
        for line in path.read_text().splitlines()
        for record in [json.loads(line)]
        if record.get("type") == "response_item" and record["payload"].get("role") == "assistant"
        for part in record["payload"].get("content", [])
    ]
    texts = [b["text"] for m in messages(manager, "assistant") for b in m["content"] if b["type"] == "text"]
    assert texts == items


# -------------------------------------------------------------------------------- the CLI


def test_cli_imports_reports_and_writes_nothing_the_second_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert main(["import", "claude", str(CLAUDE), "--session-dir", str(out), "--dry-run"]) == 0
    captured = capsys.readouterr()
    assert captured.out.count("would write") == 13 and not out.exists()
    assert "13 session(s) would be written" in captured.err
    assert main(["import", "claude", str(CLAUDE), "--session-dir", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.out.count("wrote") == 13 and len(list(out.glob("*.jsonl"))) == 13
    assert "torn.jsonl: the last line is cut off" in captured.err
    assert main(["import", "claude", str(CLAUDE), "--session-dir", str(out)]) == 0
    assert "0 session(s) written, 13 already imported" in capsys.readouterr().err


def test_cli_foreign_file_is_an_error_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["import", "codex", str(DATA / "foreign.json"), "--session-dir", str(tmp_path / "o")]) == 1
    captured = capsys.readouterr()
    assert "not a Claude Code or Codex CLI session" in captured.err and "Traceback" not in captured.err
    assert main(["import", "codex", str(tmp_path / "missing.jsonl")]) == 1
    assert "no such file" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


# ------------------------------------------------------------------------------ the real Pi


ALL_SOURCES = [
    *sorted(CLAUDE.glob("*.jsonl")),
    CLAUDE / "agents" / f"{SID}.jsonl",
    *sorted(CODEX.glob("*.jsonl")),
    *sorted(p for p in (DATA / "public").rglob("*.jsonl") if "subagents" not in p.parts),
]


@contextlib.contextmanager
def _deep_trees() -> Iterator[None]:
    """Pi's trees nest one level per entry: a long session is deeper than Python's default
    recursion limit allows json (and a recursive walk) to go."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20000))
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


def _pi_read(path: Path, every_leaf: bool) -> dict:
    """The oracle's dump of ``path``. ``every_leaf``: the context at every entry too (its output
    grows with the square of the entries: 150 MB for the 1 MB public rollout)."""
    out = subprocess.run(
        ["node", str(ORACLE), "read", str(path), *(["--all-leaves"] if every_leaf else [])],
        capture_output=True,
        text=True,
        check=True,
    )
    with _deep_trees():
        dump = json.loads(out.stdout)
    assert dump["ok"], (path, dump)
    return dump["dump"]


@needs_oracle
@pytest.mark.parametrize("source", ALL_SOURCES, ids=lambda p: p.relative_to(DATA).as_posix())
def test_every_imported_file_opens_in_pi_at_every_leaf(tmp_path: Path, source: Path) -> None:
    for path in import_session(source, session_dir=tmp_path):
        ours = SessionManager.open(path)
        ours_leaves = leaves(ours)
        # A long linear session has one leaf, Pi's current one: read without every entry's context.
        dump = _pi_read(path, every_leaf=len(ours.get_entries()) <= 300 or len(ours_leaves) > 1)
        assert dump["leafId"] == ours.get_leaf_id()
        entries = dump["entries"]
        parents = {e.get("parentId") for e in entries}
        pi_leaves = [e["id"] for e in entries if e["id"] not in parents]
        assert sorted(pi_leaves) == sorted(ours_leaves)
        if "leaves" in dump:
            assert set(pi_leaves) <= set(dump["leaves"])
        assert os.path.getsize(path) > 0


def _real_pi_missing() -> str | None:
    home = Path.home() / ".cache" / "pi-oracle"
    if not (ORACLE.parent / "pi.sh").exists() or not list(
        home.glob("node22/node_modules/node-linux-*/bin/node")
    ):
        return "the real Pi CLI (../shared/pi-oracle/pi.sh, Node 22) is not installed"
    return None


def _branches(node: dict) -> int:
    return sum(_branches(child) for child in node["children"]) if node["children"] else 1


@pytest.mark.skipif(_real_pi_missing() is not None, reason=_real_pi_missing() or "")
@pytest.mark.parametrize("source", ALL_SOURCES, ids=lambda p: p.relative_to(DATA).as_posix())
def test_the_real_pi_resumes_an_import_with_the_same_branches(tmp_path: Path, source: Path) -> None:
    """Pi 1.6.0's CLI (RPC mode) resumes every session an import writes (sub-agents too) and its
    get_tree has as many branches as the source: as pisession counts them, and for the public
    fixtures as PUBLIC_BRANCHES says."""
    project = tmp_path / "project"  # Pi refuses a session whose cwd does not exist
    project.mkdir()
    paths = import_session(source, session_dir=tmp_path / "sessions", cwd=str(project))
    for number, path in enumerate(paths):
        done = subprocess.run(
            [str(ORACLE.parent / "pi.sh"), "--mode", "rpc", "--session", str(path)],
            input='{"type":"get_tree","id":"1"}\n',
            capture_output=True,
            text=True,
            cwd=project,
            env={**os.environ, "PI_CODING_AGENT_DIR": str(tmp_path / "agent")},
            timeout=180,
        )
        with _deep_trees():
            (response,) = [json.loads(line) for line in done.stdout.splitlines() if '"response"' in line]
            assert response["success"], response
            found = sum(_branches(root) for root in response["data"]["tree"])
        assert found == len(leaves(SessionManager.open(path)))
        if number == 0 and PUBLIC in source.parents:
            assert found == PUBLIC_BRANCHES.get(source.name, 1)
        elif number == 0 and source.name in ("rewind.jsonl", ROLLOUT.name):
            assert found == 2


def test_a_looping_logical_parent_and_a_compact_summary_root(tmp_path: Path) -> None:
    manager = one(CLAUDE / "loop.jsonl", tmp_path)
    assert len(leaves(manager)) == 1
    compactions = [e for e in manager.get_entries() if e.type == "compaction"]
    assert [c.summary for c in compactions] == ["Summary: an earlier file.", "Summary: we started."]
    assert compactions[0].parent_id is None and compactions[1].tokens_before == 900
    assert context(manager) == [
        ("compactionSummary", "Summary: we started."),
        ("user", "kept prompt"),
        ("assistant", "kept reply"),
    ]


def test_images_redacted_thinking_errors_and_unknown_blocks(tmp_path: Path) -> None:
    manager = one(CLAUDE / "blocks.jsonl", tmp_path)
    first = messages(manager, "user")[0]["content"]
    assert first[1] == {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"}
    reply, error = messages(manager, "assistant")
    assert reply["content"][0] == {
        "type": "thinking",
        "thinking": "",
        "thinkingSignature": "opaque",
        "redacted": True,
    }
    assert [b["type"] for b in reply["content"]] == ["thinking", "text"]
    (kept,) = [
        e for e in manager.get_entries() if e.type == "custom" and e.custom_type == "claude-code.content"
    ]
    assert kept.data["type"] == "server_tool_use"
    assert error["stopReason"] == "error" and error["errorMessage"].startswith("API Error")
    assert error["model"] == "claude-sonnet-4-5-20250929"  # <synthetic> names no model Pi knows


def test_import_all_counts_a_resumed_sessions_copied_usage_once(tmp_path: Path) -> None:
    store = tmp_path / "projects" / "-work-demo"
    store.mkdir(parents=True)
    shutil.copy(CLAUDE / "rewind.jsonl", store / "a.jsonl")
    shutil.copy(CLAUDE / "rewind.jsonl", store / "b.jsonl")  # a resumed copy: same message ids
    results = import_all("claude", tmp_path / "projects", session_dir=tmp_path / "out")
    totals = []
    for result in results:
        assert not isinstance(result, Exception)
        manager = SessionManager.open(result.written[0])
        totals.append(sum(m["usage"]["output"] for m in messages(manager, "assistant")))
    assert totals == [10 + 11 + 12, 0]
    alone = one(store / "b.jsonl", tmp_path / "alone")  # one file alone counts everything
    assert sum(m["usage"]["output"] for m in messages(alone, "assistant")) == 33


def _field_paths(value: object, prefix: tuple[object, ...] = ()) -> list[tuple[object, ...]]:
    found: list[tuple[object, ...]] = []
    items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else []
    for key, inner in items:
        found.append((*prefix, key))
        found.extend(_field_paths(inner, (*prefix, key)))
    return found


def test_records_of_unexpected_shapes_never_crash(tmp_path: Path) -> None:
    """Any field of any record replaced by a value of another JSON type: the import succeeds or
    raises a PisessionError, never anything else (seeded, so a failure repeats)."""
    import random

    from pisession import PisessionError

    rng = random.Random(32)
    sources = [*CLAUDE.glob("*.jsonl"), *CODEX.glob("rollout-2026*.jsonl")]
    values: list[object] = [None, "x", 1, 2.5, True, [], {}, [1, "a", None], {"a": 1}]
    for number in range(120):
        source = rng.choice(sorted(sources))
        records = [json.loads(line) for line in source.read_text().splitlines() if line.endswith("}")]
        record = rng.choice(records)
        path = rng.choice(_field_paths(record))
        holder = record
        for key in path[:-1]:
            holder = holder[key]
        holder[path[-1]] = rng.choice(values)
        mutated = tmp_path / f"src{number}" / source.name
        mutated.parent.mkdir()
        mutated.write_text("".join(json.dumps(r) + "\n" for r in records))
        with contextlib.suppress(PisessionError):
            import_file(mutated, session_dir=tmp_path / "out", dry_run=True)


def test_sessions_go_to_pis_folder_for_the_sources_cwd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR", raising=False)
    (path,) = import_session(CLAUDE / "rewind.jsonl")
    assert path.parent == tmp_path / "agent" / "sessions" / "--work-demo--"
    monkeypatch.setenv("PI_CODING_AGENT_SESSION_DIR", str(tmp_path / "env"))
    (path,) = import_session(ROLLOUT, cwd=str(tmp_path))
    assert path.parent == tmp_path / "env"
    assert SessionManager.open(path).get_cwd() == str(tmp_path)


def test_a_failed_import_leaves_nothing_behind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pisession.importers import _claude

    def broken(*args: object) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(_claude, "write_conversation", broken)
    with pytest.raises(OSError, match="disk full"):
        import_session(CLAUDE / "rewind.jsonl", session_dir=tmp_path / "out")
    assert not (tmp_path / "out").exists()


CCUSAGE = json.loads((DATA / "ccusage" / "daily.json").read_text())


def pi_daily(session_dir: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, list[int]]:
    capsys.readouterr()
    assert main(["usage", "--session-dir", str(session_dir), "--json", "--timezone", "UTC"]) == 0
    report = json.loads(capsys.readouterr().out)
    found = {}
    for row in report["daily"]:
        for m in row["modelBreakdowns"]:
            key = f"{row['date']} {m['modelName'].split('/')[-1]}"  # ccusage names the model alone
            found[key] = [m["inputTokens"], m["outputTokens"], m["cacheReadTokens"], m["cacheCreationTokens"]]
    return found


@pytest.mark.parametrize("name", sorted(CCUSAGE["files"]))
def test_usage_equals_ccusage_per_file(name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Golden data from ccusage 20.0.24 itself (tests/data/importers/ccusage/daily.json, one
    fixture alone in its store): `pisession usage` on the imported sessions (sub-agents included)
    gives the same input, output, cache read and cache write per day and model."""
    out = tmp_path / "out"
    import_session(DATA / name, session_dir=out)
    assert pi_daily(out, capsys) == CCUSAGE["files"][name]


STORES = {
    "claude": sorted(p for p in CLAUDE.rglob("*.jsonl") if "subagents" not in p.parts),
    "public_claude": sorted(
        p for p in (DATA / "public" / "claude").rglob("*.jsonl") if "subagents" not in p.parts
    ),
    "codex": [*sorted(CODEX.glob("*.jsonl")), *sorted((DATA / "public" / "codex").glob("rollout-*.jsonl"))],
    "public_codex": sorted((DATA / "public" / "codex").rglob("rollout-*.jsonl")),
}


@pytest.mark.parametrize("store_name", sorted(STORES))
def test_import_all_usage_equals_ccusage_on_the_whole_store(
    store_name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every fixture of a set in one store, as ccusage read it (make_ccusage.py): an API message
    copied into several files (the hand-made Claude fixtures reuse msg_1/req_1, claude-code-log's
    two dag files share msg_a1/req_a1) counts once, in the file whose copy has the most output
    tokens (forks.jsonl's 322, not the first file's), as ccusage 20 does."""
    store = tmp_path / "store"
    source = "claude" if "claude" in store_name else "codex"
    for path in STORES[store_name]:
        folder = store / "-proj" if source == "claude" else store
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, folder / path.name)
        agents = path.parent / path.stem
        if agents.is_dir():
            shutil.copytree(agents, folder / path.stem)
    out = tmp_path / "out"
    assert not [r for r in import_all(source, store, session_dir=out) if isinstance(r, Exception)]
    assert pi_daily(out, capsys) == CCUSAGE["stores"][store_name]
    if store_name == "claude":  # the same tokens at the same prices
        capsys.readouterr()
        assert main(["usage", "--session-dir", str(out), "--json", "--timezone", "UTC"]) == 0
        cost = json.loads(capsys.readouterr().out)["totals"]["totalCost"]
        assert cost == pytest.approx(CCUSAGE["store_costs"]["claude"])


def test_a_usage_only_codex_run_is_written_with_its_usage_outside_the_context(tmp_path: Path) -> None:
    """A rollout with token counts and no message (Pi would never write such a session) is kept
    as usage entries, so its tokens are not lost; the model's context stays empty, and a second
    import writes nothing new."""
    source = CODEX / "rollout-2026-03-01T10-00-00-0199cccc-dddd-7eee-8fff-000000000000.jsonl"
    manager = one(source, tmp_path)
    usage = [to_wire(e)["usage"] for e in manager.get_entries() if e.type == "usage"]
    assert [(u["input"], u["output"], u["cacheRead"]) for u in usage] == [(300, 40, 600), (200, 50, 900)]
    assert manager.build_session_context().messages == []
    assert import_file(source, session_dir=tmp_path).written == []
    assert len(list(tmp_path.glob("*.jsonl"))) == 1


FORK = CODEX / "rollout-2026-03-01T11-00-00-0199bbbb-cccc-7ddd-8eee-ffffffffffff.jsonl"


def test_a_codex_fork_counts_only_its_own_turns_and_links_its_parent(tmp_path: Path) -> None:
    """A forked rollout opens with its parent's history copied in one burst: that history stays
    in the fork's context, but its tokens are the parent's (counted there, as ccusage counts
    them); the new turn's tokens are the difference from the copied cumulative total. Imported
    after its parent, the fork names the parent's Pi session as parentSession."""
    parent = import_session(ROLLOUT, session_dir=tmp_path)[0]
    fork = SessionManager.open(import_session(FORK, session_dir=tmp_path)[0])
    assert to_wire(fork.get_header())["parentSession"] == str(parent)
    usage = [m["usage"] for m in messages(fork, "assistant")]
    assert sum(u["input"] for u in usage) == 200 and sum(u["cacheRead"] for u in usage) == 500
    assert sum(u["output"] for u in usage) == 60
    said = [text for role, text in context(fork) if role == "user"]
    assert "thanks" in said and said[-1] == "now try another way"  # the copy stays in context


def test_a_codex_fork_imported_alone_has_no_parent_link(tmp_path: Path) -> None:
    fork = SessionManager.open(import_session(FORK, session_dir=tmp_path)[0])
    assert "parentSession" not in to_wire(fork.get_header())


def test_a_partial_compaction_keeps_its_preserved_segment_in_context(tmp_path: Path) -> None:
    """Newer Claude Code keeps a preserved segment (compactMetadata.preservedSegment, written
    before the boundary) after the summary, and the next prompt chains off the segment's tail.
    In Pi the compaction's firstKeptEntryId is the segment's head and the next prompt follows
    the compaction, so Pi's context is Claude's after compacting, on one branch."""
    manager = one(CLAUDE / "partial.jsonl", tmp_path)
    assert len(leaves(manager)) == 1
    assert context(manager) == [
        ("compactionSummary", "Summary: the first prompt was answered."),
        ("user", "second prompt"),
        ("assistant", "second answer"),
        ("user", "third prompt"),
        ("assistant", "third answer"),
    ]
    compaction = next(e for e in manager.get_entries() if e.type == "compaction")
    kept = manager.get_entry(compaction.first_kept_entry_id)
    assert to_wire(kept.message)["content"] == "second prompt"


def test_cli_takes_paths_after_its_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # argparse ends a nargs="*" list at the first option: `import claude --dry-run PATH` failed
    # with "unrecognized arguments"
    out = tmp_path / "out"
    assert main(["import", "claude", "--session-dir", str(out), "--dry-run", str(CLAUDE)]) == 0
    assert capsys.readouterr().out.count("would write") == 13 and not out.exists()
    assert main(["import", "claude", "--dry-run", str(CLAUDE), "--no-such-flag"]) == 2
    assert "unrecognized arguments: --no-such-flag" in capsys.readouterr().err
    assert main(["ls", "stray-word"]) == 2  # a command that names no list keeps argparse's rule


# ------------------------------------------------------------------------ public fixtures
# Real or public files of other projects (tests/data/importers/LICENSES.md). Each is checked for
# what issue 32's "How it will be checked" lists; the expected branch counts follow the rule in
# pisession/importers/_claude.py (only a second prompt under one parent, a rewind, is a branch).


def _public_id(path: Path) -> str:
    return path.relative_to(PUBLIC).as_posix()


def _claude_source_facts(path: Path) -> tuple[set[str], list[str]]:
    """The models of a Claude session's assistant records (its sub-agent files and the
    sub-agent messages copied into progress records too); its compactions' summary texts."""
    models, summaries = set(), []
    files = [path, *sorted((path.parent / path.stem / "subagents").glob("*.jsonl"))]
    for number, file in enumerate(files):
        for line in file.read_text().splitlines():
            record = json.loads(line)
            copied = (record.get("data") or {}).get("message") if record.get("type") == "progress" else None
            for found in (record, copied if isinstance(copied, dict) else {}):
                message = found.get("message") or {}
                if found.get("type") == "assistant" and message.get("model") not in (None, "<synthetic>"):
                    models.add(message["model"])
            if number == 0 and record.get("isCompactSummary"):
                content = record["message"]["content"]
                if isinstance(content, list):
                    content = "\n".join(b["text"] for b in content if b.get("type") == "text")
                summaries.append(content)
    return models, summaries


def _codex_source_facts(path: Path) -> tuple[set[str], list[str]]:
    models, summaries = set(), []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        payload = record.get("payload") or {}
        if record.get("type") == "turn_context" and payload.get("model"):
            models.add(payload["model"])
        if record.get("type") == "compacted":
            text = payload.get("message") or ""
            for item in reversed(payload.get("replacement_history") or []):
                if not text and item.get("role") == "user":
                    text = "\n".join(c.get("text", "") for c in item.get("content", [])).strip()
            summaries.append(text)
    return models or {"unknown"}, summaries


def _unpaired_results(manager: SessionManager) -> list[str]:
    """toolResult messages whose call is not in an assistant message before them on their branch."""
    unpaired = []
    for entry in manager.get_entries():
        if entry.type != "message" or to_wire(entry.message)["role"] != "toolResult":
            continue
        calls = {
            block["id"]
            for e in manager.get_branch(entry.id)
            if e.type == "message" and to_wire(e.message)["role"] == "assistant"
            for block in to_wire(e.message)["content"]
            if block["type"] == "toolCall"
        }
        if to_wire(entry.message)["toolCallId"] not in calls:
            unpaired.append(entry.id)
    return unpaired


@pytest.mark.parametrize("path", [*PUBLIC_CLAUDE, *PUBLIC_CODEX], ids=_public_id)
def test_public_fixture_keeps_branches_pairs_models_and_compactions(tmp_path: Path, path: Path) -> None:
    result = import_file(path, session_dir=tmp_path)
    assert result.written, result.notes
    models, summaries = (_claude_source_facts if path in PUBLIC_CLAUDE else _codex_source_facts)(path)
    seen_models: set[str] = set()
    for number, written in enumerate(result.written):
        manager = SessionManager.open(written)
        assert _unpaired_results(manager) == []
        seen_models |= {m["model"] for m in messages(manager, "assistant")}
        if number == 0:
            assert len(leaves(manager)) == PUBLIC_BRANCHES.get(path.name, 1)
            compactions = [e for e in manager.get_entries() if e.type == "compaction"]
            assert [c.summary for c in compactions] == summaries
    assert seen_models == models
    again = import_file(path, session_dir=tmp_path)
    assert again.written == [] and again.existing == result.written


def test_public_claude_rewind_then_compaction_keeps_the_active_branch(tmp_path: Path) -> None:
    """claude-code-log's dag_compact_after_rewind: the second attempt is the active branch, the
    compaction carries the source's summary and Pi's context after it is Claude's."""
    base = PUBLIC / "claude" / "claude-code-log"
    summary = (
        "This session is being continued from a previous conversation that ran out of context. "
        "Summary: the user asked for a plan."
    )
    manager = one(base / "dag_compact_after_rewind.jsonl", tmp_path / "a")
    branch = [to_wire(e.message) for e in manager.get_branch() if e.type == "message"]
    assert [_text(m) for m in branch] == [
        "Start", "Ready", "Second attempt", "Second answer", "Keep going", "Kept going",
        "After compaction", "Final answer",
    ]  # fmt: skip
    assert context(manager) == [
        ("compactionSummary", summary),
        ("user", "After compaction"),
        ("assistant", "Final answer"),
    ]
    # A partial compaction: Claude kept "Second answer", "Keep going", "Kept going" after the
    # summary (compactMetadata.preservedSegment); "Kept going" is written after the boundary.
    manager = one(base / "dag_compact_after_rewind_preserved.jsonl", tmp_path / "b")
    assert context(manager) == [
        ("compactionSummary", summary),
        ("assistant", "Second answer"),
        ("user", "Keep going"),
        ("assistant", "Kept going"),
        ("user", "After compaction"),
        ("assistant", "Final answer"),
    ]


def _text(message: dict) -> str:
    content = message["content"]
    if isinstance(content, str):
        return content
    return " ".join(b["text"] for b in content if b["type"] == "text")


def test_public_claude_sub_agent_files_and_sidechains_become_linked_sessions(tmp_path: Path) -> None:
    base = PUBLIC / "claude" / "claude-code-log"
    main_path, *agents = import_session(
        base / "minimal_showcase" / "55550000-0000-4000-8000-000000000001.jsonl", session_dir=tmp_path
    )
    assert len(agents) == 2
    for agent, prompt in zip(agents, ["Survey src/web", "Survey src/jobs"], strict=True):
        sub = SessionManager.open(agent)
        assert sub.get_header().parent_session == str(main_path)
        assert context(sub)[0][1].startswith(prompt)
    main_session = SessionManager.open(main_path)
    assert [m["toolCallId"] for m in messages(main_session, "toolResult")] == [
        "toolu_sc_inspect", "toolu_sc_refresh", "toolu_sc_wake", "toolu_sc_showcol1", "toolu_sc_showcol2",
    ]  # fmt: skip
    # A real 2.0.46 file with its sidechain inline: the sub-agent's two records of one API
    # message are one Pi message, in a session of its own.
    main_path, side = import_session(base / "sidechain_integrated.jsonl", session_dir=tmp_path / "s")
    sub = SessionManager.open(side)
    assert sub.get_header().parent_session == str(main_path)
    (reply,) = messages(sub, "assistant")
    assert [b["type"] for b in reply["content"]] == ["text", "toolCall"]
    assert reply["usage"]["output"] == 183 and reply["usage"]["cacheWrite"] == 19830


def test_a_sub_agent_known_only_from_progress_records_becomes_its_session(tmp_path: Path) -> None:
    """Claude Code 2.1 copies a running sub-agent's messages into agent_progress records of the
    main file. spotter's subagent.jsonl came without its subagents/ folder: the sub-agent's
    conversation (and its Haiku usage, which ccusage counts) is only there. It becomes a
    sub-agent session linked by parentSession; with the agent's own file present the progress
    copies are not imported a second time (spotter's ae4a77f8 file)."""
    base = PUBLIC / "claude" / "spotter"
    main_path, agent = import_session(base / "subagent.jsonl", session_dir=tmp_path)
    sub = SessionManager.open(agent)
    assert sub.get_header().parent_session == str(main_path)
    replies = messages(sub, "assistant")
    assert {m["model"] for m in replies} == {"claude-haiku-4-5-20251001"}
    assert sum(m["usage"]["output"] for m in replies) == 7
    assert sum(m["usage"]["cacheRead"] for m in replies) == 95343
    assert context(sub)[0][1].startswith("Draft bead content for setting up Credo")
    assert _unpaired_results(sub) == []
    paths = import_session(base / "ae4a77f8-aedd-4bc1-888f-c94edc91af04.jsonl", session_dir=tmp_path / "b")
    assert len(paths) == 3  # the main session and its two agent files, no progress copy


CCL_CODEX = PUBLIC / "codex" / "claude-code-log" / "sessions" / "2026" / "01"


def test_codex_sub_agent_thread_links_its_parent_and_keeps_an_event_only_reply(tmp_path: Path) -> None:
    """claude-code-log's spawn_agent pair: the sub-agent's rollout names its parent in
    session_meta.source.subagent.thread_spawn.parent_thread_id (imported after the parent, it
    links the parent's Pi session), and its reply exists only as an agent_message event (no
    response item repeats it): the reply is kept, not dropped as an echo."""
    parent = import_session(
        CCL_CODEX / "03" / "rollout-2026-01-03T04-05-06-22222222-2222-4222-8222-222222222222.jsonl",
        session_dir=tmp_path,
    )[0]
    child_path = CCL_CODEX / "03" / "rollout-2026-01-03T04-05-10-33333333-3333-4333-8333-333333333333.jsonl"
    child = SessionManager.open(import_session(child_path, session_dir=tmp_path)[0])
    assert child.get_header().parent_session == str(parent)
    assert context(child)[-2:] == [
        ("user", "Inspect fixtures."),
        ("assistant", "The fixtures are fully synthetic."),
    ]
    # a reply written both as an event and as a response item is taken once
    both = SessionManager.open(
        import_session(
            CCL_CODEX / "02" / "rollout-2026-01-02T03-04-05-11111111-1111-4111-8111-111111111111.jsonl",
            session_dir=tmp_path,
        )[0]
    )
    said = [text for role, text in context(both) if role == "assistant"]
    assert said.count("The synthetic files are alpha.txt and beta.txt.") == 1


SPAWNED = CODEX / "rollout-2026-03-02T10-00-07-0199dddd-0000-7000-8000-000000000002.jsonl"
SPAWNER = CODEX / "rollout-2026-03-02T10-00-00-0199dddd-0000-7000-8000-000000000001.jsonl"


def test_a_codex_sub_agent_replays_its_parents_tokens_only_where_the_parent_is(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A spawned thread starts with its parent's lines replayed. Imported with its parent (one
    store), the replayed token counts are the parent's and only the sub-agent's own turn counts;
    imported alone, every token in it counts. Both as ccusage 20.0.24 counts them (golden data:
    the codex store and each file alone)."""
    store = tmp_path / "store"
    store.mkdir()
    for path in (SPAWNER, SPAWNED):
        shutil.copy(path, store)
    results = import_all("codex", store, session_dir=tmp_path / "both")
    assert not [r for r in results if isinstance(r, Exception)]
    day = "2026-03-02 gpt-5-codex"
    parent, child = (CCUSAGE["files"][f"codex/{p.name}"][day] for p in (SPAWNER, SPAWNED))
    assert parent == [1500, 200, 3000, 0] and child == [900, 130, 900, 0]
    # the sub-agent's own turn: 1800 input (900 cached) and 130 output, less the replayed 1000
    # (400 cached) and 100
    assert pi_daily(tmp_path / "both", capsys) == {day: [1500 + 300, 200 + 30, 3000 + 500, 0]}
    sub = SessionManager.open(results[1].written[0])  # type: ignore[union-attr]
    assert sub.get_header().parent_session == str(results[0].written[0])  # type: ignore[union-attr]
    assert [t for r, t in context(sub) if r == "user"] == ["plan it", "look"]  # the replay stays
    import_session(SPAWNED, session_dir=tmp_path / "alone")
    assert pi_daily(tmp_path / "alone", capsys) == {day: child}


def _said_on_chain(path: Path) -> tuple[list[str], list[str]]:
    """The user texts and assistant texts of a Claude file's active chain, walked up from its
    newest conversation record by parentUuid (logicalParentUuid across a compaction): what
    Claude Code shows when it resumes the file."""
    records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    by_id = {r["uuid"]: r for r in records if isinstance(r.get("uuid"), str)}
    talk = [r for r in records if r.get("type") in ("user", "assistant") and not r.get("isSidechain")]
    chain, record, seen = [], talk[-1], set()
    while record is not None and record["uuid"] not in seen:
        seen.add(record["uuid"])
        chain.append(record)
        record = by_id.get(record.get("parentUuid")) or by_id.get(record.get("logicalParentUuid"))
    users, replies = [], []
    for record in reversed(chain):
        if record.get("type") not in ("user", "assistant"):
            continue  # a compact boundary, a progress record: no text of the conversation
        content = record["message"]["content"]
        text = _text({"content": content if isinstance(content, str) else [
            b for b in content if isinstance(b, dict) and b.get("type") == "text"
        ]})  # fmt: skip
        if text.strip() and not record.get("isCompactSummary"):
            (users if record["type"] == "user" else replies).append(text)
    return users, replies


@pytest.mark.parametrize(
    "path",
    # the preserved-segment file loops back under its boundary (a walk up cannot read it):
    # test_public_claude_rewind_then_compaction_keeps_the_active_branch checks it
    [p for p in PUBLIC_CLAUDE if p.name != "dag_compact_after_rewind_preserved.jsonl"],
    ids=_public_id,
)
def test_public_claude_active_branch_texts_come_through_in_order(tmp_path: Path, path: Path) -> None:
    users, replies = _said_on_chain(path)
    manager = SessionManager.open(import_session(path, session_dir=tmp_path)[0])
    branch = [to_wire(e.message) for e in manager.get_branch() if e.type == "message"]
    assert [t for m in branch if m["role"] == "user" for t in [_text(m)] if t.strip()] == users
    said = iter(" ".join(b["text"] for b in m["content"] if b["type"] == "text") for m in branch
                if m["role"] == "assistant")  # fmt: skip
    assert all(any(reply in text for text in said) for reply in replies)  # in order, each kept
