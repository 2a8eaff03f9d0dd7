"""pisession.rpc: the client of ``pi --mode rpc`` and the handoff of edits to a running Pi.

Most tests drive ``tests/rpc_fake_pi.py``, a small Python stand-in speaking Pi's protocol (no
Node needed). The ``real Pi`` tests run Pi 1.6.0's own command line (``../shared/pi-oracle/pi.sh``,
Node 22) against the oracle's loopback fake model provider, whose request log shows what reached
the model; they skip, saying why, where that is not installed. Each Pi start costs seconds, so
they are few and each checks a whole story.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pisession import SessionManager
from pisession.rpc import (
    HandoffError,
    JsonlDecoder,
    PiExitedError,
    PiRpcClient,
    RpcCommandError,
    SyncPiRpcClient,
    encode_record,
)

HERE = Path(__file__).resolve().parent
FAKE_PI = [sys.executable, str(HERE / "rpc_fake_pi.py")]
ORACLE = Path(os.environ.get("PI_ORACLE_DIR", HERE.parents[1] / "shared" / "pi-oracle"))
ORACLE_HOME = Path(os.environ.get("PI_ORACLE_HOME", Path.home() / ".cache" / "pi-oracle"))
EXTENSION = HERE / "data" / "rpc" / "foreign_writer.js"


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of process group ``pgid``, read from /proc."""
    members = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] != "Z":
            members.append(int(name))
    return members


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


def make_session(path: Path) -> SessionManager:
    manager = SessionManager.create(str(path.parent), str(path.parent))
    manager.set_session_file(str(path))
    manager.append_message({"role": "user", "content": "hello", "timestamp": 1})
    manager.append_message(
        {
            "role": "assistant",
            "content": [{"type": "text", "text": "hi"}],
            "api": "anthropic-messages",
            "provider": "p",
            "model": "m",
            "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 2},
            "stopReason": "stop",
            "timestamp": 2,
        }
    )
    return manager


# -- framing ------------------------------------------------------------------------------------


def test_framing_splits_on_lf_only() -> None:
    stream = '{"a":"x\u2028y\u2029z\u0085w"}\n{"b":1}\r\n{"c":2}'.encode()
    for size in (1, 2, 3, 7, len(stream)):
        decoder = JsonlDecoder()
        lines: list[bytes] = []
        for start in range(0, len(stream), size):
            lines += decoder.feed(stream[start : start + size])
        lines += decoder.end()
        assert [json.loads(line) for line in lines] == [
            {"a": "x\u2028y\u2029z\u0085w"},
            {"b": 1},
            {"c": 2},
        ]
    # what str.splitlines() would have done: the record cut in pieces
    assert len(stream.decode().splitlines()) > 3


def test_framing_long_record_in_small_chunks() -> None:
    record = json.dumps({"blob": "\u2028" + "x" * 3_000_000}, ensure_ascii=False).encode() + b"\n"
    decoder = JsonlDecoder()
    lines: list[bytes] = []
    for start in range(0, len(record), 65536):
        lines += decoder.feed(record[start : start + 65536])
    assert len(lines) == 1 and json.loads(lines[0])["blob"][0] == "\u2028"
    assert decoder.end() == []


def test_encode_record_is_one_ascii_line() -> None:
    line = encode_record({"type": "prompt", "message": "a\u2028b\nc\ud800"})
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line) == {"type": "prompt", "message": "a\u2028b\nc\ud800"}


# -- the client against the fake Pi ---------------------------------------------------------------


def test_prompt_events_and_long_lines_with_fake_pi(tmp_path: Path) -> None:
    async def main() -> None:
        async with PiRpcClient.start(tmp_path / "s.jsonl", command=FAKE_PI) as client:
            async with client.events() as events:
                result = await client.prompt("hi\u2028there")
                kinds: list[str] = []
                while not kinds or kinds[-1] != "agent_settled":
                    kinds.append((await events.next(5))["type"])
            assert result.disposition == "started"
            assert kinds == [
                "agent_start",
                "message_start",
                "message_update",
                "message_end",
                "agent_end",
                "agent_settled",
            ]
            big = await client.request({"type": "big", "size": 5_000_000})
            assert big["blob"].startswith("\u2028\u2028\u2028x") and len(big["blob"]) == 5_000_003
            with pytest.raises(RpcCommandError, match="nope failed: Unknown command: nope"):
                await client.request({"type": "nope"})
            # concurrent requests are matched by id
            states = await asyncio.gather(*(client.get_state() for _ in range(20)))
            assert all(state["sessionId"] == "x" for state in states)
            pid = client.pid
        assert client.returncode == 0
        assert group_members(pid) == []

    run(main())


def test_pi_crash_fails_waiting_calls_clearly(tmp_path: Path) -> None:
    async def main() -> None:
        async with PiRpcClient.start(command=FAKE_PI) as client:
            events = client.events()
            with pytest.raises(PiExitedError, match=r"exit status 3.*crashing as asked") as caught:
                await client.request({"type": "crash"})
            assert caught.value.returncode == 3
            assert [event async for event in events] == []  # the stream ends
            with pytest.raises(PiExitedError):
                await client.get_state()
            pid = client.pid
        assert group_members(pid) == []

    run(main())


def test_close_escalates_and_ends_the_whole_group(tmp_path: Path) -> None:
    async def main() -> None:
        client = await PiRpcClient.start(command=FAKE_PI, args=["--ignore-eof", "--ignore-term", "--child"])
        pid = client.pid
        assert len(group_members(pid)) >= 2  # the fake and its sleep child
        returncode = await client.close(timeout=0.2)
        assert returncode == -signal.SIGKILL
        assert group_members(pid) == []

    run(main())


def test_cancelled_task_leaves_no_process(tmp_path: Path) -> None:
    pids: list[int] = []

    async def body() -> None:
        async with PiRpcClient.start(command=FAKE_PI, args=["--ignore-eof", "--child"]) as client:
            pids.append(client.pid)
            await asyncio.sleep(60)

    async def main() -> None:
        task = asyncio.create_task(body())
        while not pids:
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    run(main())
    assert group_members(pids[0]) == []


def test_start_failure_is_a_clear_error(tmp_path: Path) -> None:
    from pisession.rpc import RpcError

    async def start(command: list[str]) -> None:
        await PiRpcClient.start(command=command)

    with pytest.raises(RpcError, match="Cannot start Pi"):
        run(start([str(tmp_path / "no-such-pi")]))
    with pytest.raises(PiExitedError, match=r"exit status 1.*no pi here"):
        run(start([sys.executable, "-c", "import sys; sys.exit('no pi here')"]))


def test_handoff_holds_commands_back_until_pi_reloaded(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    make_session(path).close()
    log = tmp_path / "log.jsonl"

    async def main() -> None:
        async with PiRpcClient.start(path, command=FAKE_PI, args=["--log", str(log)]) as client:
            async with client.handoff() as manager:
                waiting = asyncio.create_task(client.set_session_name("later"))
                await asyncio.sleep(0.2)
                assert not waiting.done()
                label = manager.append_label_change(manager.get_leaf_id() or "", "seen")
            with pytest.raises(RpcCommandError):  # the fake does not know set_session_name
                await waiting
            assert (await client.get_entries())["leafId"] == label

    run(main())
    kinds = [json.loads(line)["type"] for line in log.read_text().splitlines()]
    assert kinds.index("set_session_name") > kinds.index("switch_session")


def test_entries_written_before_the_handoff_are_no_conflict(tmp_path: Path) -> None:
    """A backend's custom entries appended while Pi ran (Pi does not hold them) are part of the
    file the edit starts from."""
    path = tmp_path / "s.jsonl"
    make_session(path).close()

    async def main() -> None:
        async with PiRpcClient.start(path, command=FAKE_PI) as client:
            with SessionManager.open(str(path)) as backend:
                backend.append_custom_entry("backend-state", {"n": 1})
            async with client.handoff() as manager:
                label = manager.append_label_change(manager.get_leaf_id() or "", "ok")
            assert (await client.get_entries())["leafId"] == label

    run(main())


def test_a_prompt_under_way_when_a_handoff_begins_waits_for_it(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    make_session(path).close()
    log = tmp_path / "log.jsonl"

    async def main() -> None:
        async with PiRpcClient.start(path, command=FAKE_PI, args=["--log", str(log)]) as client:
            prompt = asyncio.create_task(client.prompt("x"))
            await asyncio.sleep(0)  # the prompt has asked for the entries, not yet sent itself
            async with client.handoff() as manager:
                manager.append_label_change(manager.get_leaf_id() or "", "first")
            assert (await prompt).disposition == "started"

    run(main())
    kinds = [json.loads(line)["type"] for line in log.read_text().split("\n") if line]
    assert kinds.index("prompt") > kinds.index("switch_session"), kinds


def test_a_failing_handoff_block_still_lets_pi_see_what_it_wrote(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    make_session(path).close()

    async def main() -> None:
        async with PiRpcClient.start(path, command=FAKE_PI) as client:
            with pytest.raises(ValueError, match="backend bug"):
                async with client.handoff() as manager:
                    label = manager.append_label_change(manager.get_leaf_id() or "", "half")
                    raise ValueError("backend bug")
            # Pi reloaded: its view and the file agree, its next entry will not hide the label
            assert (await client.get_entries())["leafId"] == label

    run(main())


def test_a_write_on_top_of_the_edit_is_no_conflict(tmp_path: Path) -> None:
    """Another pisession writer that read the edit and continued from it loses nothing."""
    path = tmp_path / "s.jsonl"
    make_session(path).close()

    async def main() -> None:
        async with PiRpcClient.start(path, command=FAKE_PI) as client:
            async with client.handoff() as manager:
                label = manager.append_label_change(manager.get_leaf_id() or "", "mine")
                with SessionManager.open(str(path)) as other:
                    other.refresh(move_leaf=True)
                    assert other.get_leaf_id() == label
                    on_top = other.append_custom_entry("other", {"n": 1})
            assert (await client.get_entries())["leafId"] == on_top

    run(main())


def test_a_command_from_inside_the_handoff_block_is_refused_not_deadlocked(tmp_path: Path) -> None:
    from pisession.rpc import RpcError

    path = tmp_path / "s.jsonl"
    make_session(path).close()

    async def main() -> None:
        async with PiRpcClient.start(path, command=FAKE_PI) as client:
            async with client.handoff():
                # on this task (wait_for would make another): a deadlock would be cancelled
                guard = asyncio.get_running_loop().call_later(10, asyncio.current_task().cancel)  # type: ignore[union-attr]
                with pytest.raises(RpcError, match="inside a handoff block"):
                    await client.get_state()
                guard.cancel()
            assert (await client.get_state())["sessionId"] == "x"

    run(main())
    with SyncPiRpcClient.start(path, command=FAKE_PI) as client:
        with client.handoff(), pytest.raises(RpcError, match="inside a handoff block"):
            client.get_state()
        assert client.get_state()["sessionId"] == "x"


def foreign_line(manager: SessionManager, entry_id: str = "f0f0f0f0") -> str:
    """A custom entry as Pi would append it: under Pi's own (stale) leaf."""
    entries = manager.get_entries()
    parent = next(e.id for e in reversed(entries) if e.type == "message")
    return json.dumps(
        {
            "type": "custom",
            "id": entry_id,
            "parentId": parent,
            "timestamp": "2026-01-01T00:00:00.000Z",
            "customType": "foreign",
            "data": {},
        }
    )


def test_handoff_reports_a_write_pi_made_meanwhile(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    make_session(path).close()

    async def main() -> None:
        async with PiRpcClient.start(path, command=FAKE_PI) as client:
            first = (await client.get_entries())["entries"][0]["id"]
            with pytest.raises(HandoffError, match="Pi wrote f0f0f0f0") as caught:
                async with client.handoff() as manager:
                    manager.branch_with_summary(first, "a summary")
                    await client._send({"type": "write_line", "line": foreign_line(manager)})
            assert caught.value.foreign == ("f0f0f0f0",)
            assert caught.value.pi_leaf == "f0f0f0f0"  # Pi reloaded: nothing hidden from it
            ids = [e.id for e in SessionManager.open(str(path)).get_entries()]
            assert "f0f0f0f0" in ids and len(ids) == len(set(ids)) == 4

    run(main())


def test_edit_is_redone_on_top_of_a_write_pi_made(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    make_session(path).close()
    calls: list[str | None] = []

    async def main() -> None:
        async with PiRpcClient.start(path, command=FAKE_PI) as client:
            first = (await client.get_entries())["entries"][0]["id"]

            async def edit(manager: SessionManager) -> str:
                calls.append(manager.get_leaf_id())
                if len(calls) == 1:  # Pi writes while the summary is being made
                    await client._send({"type": "write_line", "line": foreign_line(manager)})
                return manager.branch_with_summary(first, f"summary {len(calls)}")

            summary_id = await client.edit(edit)
            assert calls[1] == "f0f0f0f0"  # the redo starts where Pi went
            assert (await client.get_entries())["leafId"] == summary_id
            entry = SessionManager.open(str(path)).get_entry(summary_id)
            assert entry is not None and entry.summary == "summary 2"  # type: ignore[union-attr]
            assert entry.from_id == "f0f0f0f0"  # type: ignore[union-attr]

    run(main())


def test_handoff_refuses_a_session_pi_has_not_written(tmp_path: Path) -> None:
    async def main() -> None:
        async with PiRpcClient.start(command=FAKE_PI) as client:  # no session file
            with pytest.raises(HandoffError, match="no session file"):
                async with client.handoff():
                    pass
            assert (await client.get_state())["sessionId"] == "x"  # the client is usable again

    run(main())


def test_sync_client(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    make_session(path).close()
    with SyncPiRpcClient.start(path, command=FAKE_PI) as client:
        assert client.prompt("x\u2028y").disposition == "started"
        with client.handoff() as manager:
            label = manager.append_label_change(manager.get_leaf_id() or "", "sync")
        assert client.get_entries()["leafId"] == label
        pid = client.pid
    assert group_members(pid) == []


# -- the real Pi ----------------------------------------------------------------------------------


def _real_pi_missing() -> str | None:
    if not (ORACLE / "pi.sh").exists():
        return f"the Pi oracle is not at {ORACLE}"
    if not list(ORACLE_HOME.glob("node22/node_modules/node-linux-*/bin/node")):
        return f"Node 22 is not installed in {ORACLE_HOME} (run {ORACLE}/setup.sh)"
    if not (ORACLE_HOME / "node_modules/@earendil-works/pi-coding-agent/package.json").exists():
        return f"Pi 1.6.0 is not installed in {ORACLE_HOME} (run {ORACLE}/setup.sh)"
    return None


real_pi = pytest.mark.skipif(_real_pi_missing() is not None, reason=_real_pi_missing() or "")


class RealPi:
    """An agent folder whose only model is the oracle's fake provider, and Pi's environment."""

    def __init__(self, root: Path, options: dict[str, Any]) -> None:
        sys.dont_write_bytecode = True  # nothing may land in the oracle's folder
        sys.path.insert(0, str(ORACLE))
        try:
            from fake_provider import FakeProvider  # type: ignore[import-not-found]
        finally:
            sys.path.remove(str(ORACLE))
        self.log = root / "requests.jsonl"
        self.fake = FakeProvider(options, str(self.log))
        self.fake.__enter__()
        self.agent, self.cwd, home = root / "agent", root / "project", root / "home"
        for folder in (self.agent, self.cwd, home):
            folder.mkdir()
        models = {
            "providers": {
                "fakeant": {
                    "baseUrl": self.fake.url,
                    "api": "anthropic-messages",
                    "apiKey": "sk-test",
                    "models": [
                        {"id": "claude-fake", "reasoning": False, "contextWindow": 200000, "maxTokens": 32000}
                    ],
                }
            }
        }
        (self.agent / "models.json").write_text(json.dumps(models))
        settings = {
            "compaction": {"keepRecentTokens": 60},
            "retry": {"enabled": False},
            "defaultProvider": "fakeant",
            "defaultModel": "claude-fake",
        }
        (self.agent / "settings.json").write_text(json.dumps(settings))
        # Only what Pi needs: no credential of this machine reaches it, nothing leaves loopback.
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(home),
            "PI_ORACLE_HOME": str(ORACLE_HOME),
            "PI_CODING_AGENT_DIR": str(self.agent),
            "HTTP_PROXY": "http://127.0.0.1:9",
            "HTTPS_PROXY": "http://127.0.0.1:9",
            "NO_PROXY": "127.0.0.1,localhost,::1",
        }
        self.session = root / "session.jsonl"

    def start(self, *args: str, **env: str) -> Any:
        return PiRpcClient.start(
            self.session,
            command=[str(ORACLE / "pi.sh")],
            cwd=self.cwd,
            env={**self.env, **env},
            args=args,
        )

    def requests(self) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        return [json.loads(json.loads(line)["body"]) for line in self.log.read_text().split("\n") if line]

    def close(self) -> None:
        self.fake.__exit__(None, None, None)


@pytest.fixture
def real(tmp_path: Path) -> Iterator[RealPi]:
    pi = RealPi(tmp_path, {"summary": "Answer\u2028{hash}"})
    yield pi
    pi.close()


def _user_ids(entries: list[dict[str, Any]]) -> list[str]:
    return [e["id"] for e in entries if e["type"] == "message" and e["message"]["role"] == "user"]


LONG = " ".join(["word"] * 300)  # enough tokens for keepRecentTokens 60 to leave something to compact


@real_pi
def test_real_pi_prompts_navigation_label_and_compaction(real: RealPi) -> None:
    summaries: list[str] = []

    async def branch_summary(request: Any) -> str:
        summaries.append(request.prompt)
        return "BRANCH-SUMMARY-7f3a"

    async def main() -> None:
        async with real.start() as client:
            pid = client.pid
            async with client.events() as events:
                first = await client.prompt("first\u2028question " + LONG)
                kinds: list[str] = []
                while not kinds or kinds[-1] != "agent_settled":
                    kinds.append((await events.next(10))["type"])
            # Pi's answer holds a raw U+2028 on its stdout: one record, one message
            assert first.text is not None and first.text.startswith("Answer\u2028")
            assert kinds[:2] == ["agent_start", "turn_start"]
            assert kinds[-3:] == ["turn_end", "agent_end", "agent_settled"]
            updates = [i for i, k in enumerate(kinds) if k == "message_update"]
            starts = [i for i, k in enumerate(kinds) if k == "message_start"]
            ends = [i for i, k in enumerate(kinds) if k == "message_end"]
            assert len(starts) == len(ends) >= 2 and all(s < e for s, e in zip(starts, ends, strict=True))
            assert updates and starts[-1] < updates[0] < ends[-1]
            second = await client.prompt("second " + LONG)
            assert second.text != first.text
            user = _user_ids(list(first.entries))[0]

            # navigate back to the first question with a branch summary, in one call
            nav = await client.navigate_tree(user, summarize=branch_summary, label="retry")
            assert nav.editor_text == "first\u2028question " + LONG
            assert nav.summary_entry is not None and "first\u2028question" not in summaries[0]
            state = await client.get_entries()
            assert state["leafId"] in {nav.summary_entry.id, *(e["id"] for e in state["entries"])}
            leaf_entry = next(e for e in state["entries"] if e["id"] == state["leafId"])
            assert state["leafId"] == nav.summary_entry.id or leaf_entry["parentId"] == nav.summary_entry.id
            third = await client.prompt("third " + LONG)
            request = real.requests()[-1]
            texts = json.dumps(request["messages"])
            assert "BRANCH-SUMMARY-7f3a" in texts and "second word" not in texts

            # a label through the handoff
            async with client.handoff() as manager:
                label_id = manager.append_label_change(third.leaf_id or "", "checkpoint")
            assert (await client.get_entries())["leafId"] == label_id
            tree = json.dumps((await client.get_tree())["tree"])
            assert '"label": "checkpoint"' in tree and '"label": "retry"' in tree

            # a compaction with a summary of ours
            compaction = await client.compact_with(lambda request: "COMPACTION-SUMMARY-91c2")
            assert (await client.get_entries())["leafId"] == compaction.id
            await client.prompt("fourth")
            texts = json.dumps(real.requests()[-1]["messages"])
            assert "COMPACTION-SUMMARY-91c2" in texts and "BRANCH-SUMMARY-7f3a" not in texts

            # the file reads back, in pisession and in Pi (reloading it), with every entry once
            leaf = (await client.get_entries())["leafId"]
            await client.switch_session(real.session)
            reloaded = await client.get_entries()
            pi_ids = [e["id"] for e in reloaded["entries"]]
            assert reloaded["leafId"] == leaf
        assert client.returncode == 0
        assert group_members(pid) == []
        ids = [e.id for e in SessionManager.open(str(real.session)).get_entries()]
        assert ids == pi_ids and len(set(ids)) == len(ids)

    run(main())


@real_pi
def test_real_pi_catch_up_after_reconnect(real: RealPi) -> None:
    async def first_run() -> str:
        async with real.start() as client:
            result = await client.prompt("hello")
            assert result.leaf_id is not None
            return str(result.leaf_id)

    cursor = run(first_run())
    # While no client is connected, another program appends to the session.
    with SessionManager.open(str(real.session)) as manager:
        custom = manager.append_custom_entry("backend", {"n": 1})
    with SyncPiRpcClient.start(
        real.session, command=[str(ORACLE / "pi.sh")], cwd=real.cwd, env=real.env
    ) as client:
        caught_up = client.get_entries(since=cursor)
        assert [e["id"] for e in caught_up["entries"]] == [custom]
        client.prompt("again")
        later = client.get_entries(since=cursor)["entries"]
        assert later[0]["id"] == custom and len(later) == 3
        with pytest.raises(RpcCommandError, match="Entry not found: nope"):
            client.get_entries(since="nope")
        pid = client.pid
    assert group_members(pid) == []


@real_pi
def test_real_pi_writing_during_the_handoff(real: RealPi, tmp_path: Path) -> None:
    trigger = tmp_path / "trigger"

    def pi_writes(what: str) -> None:
        """Make Pi (its extension) append a custom entry, and wait until it is in the file."""
        trigger.write_text(what)
        deadline = time.monotonic() + 20
        while what not in real.session.read_text():
            assert time.monotonic() < deadline, "the extension did not write"
            time.sleep(0.02)

    async def main() -> None:
        async with real.start("--extension", str(EXTENSION), PISESSION_TEST_TRIGGER=str(trigger)) as client:
            first = await client.prompt("one")
            await client.prompt("two")
            target = _user_ids(list(first.entries))[0]

            # 1. the one-call form: Pi writes while the summarizer runs; the navigation is
            #    redone on top of Pi's entry and taken up
            calls: list[int] = []

            async def summarize(request: Any) -> str:
                calls.append(1)
                if len(calls) == 1:
                    await asyncio.to_thread(pi_writes, "during-navigation")
                return f"SUMMARY-{len(calls)}"

            nav = await client.navigate_tree(target, summarize=summarize)
            # pisession's own flow sees the file change and summarizes again, then the handoff
            # sees Pi's entry off the summary's path and redoes the navigation from it
            assert len(calls) >= 2 and nav.summary_entry is not None
            entries = (await client.get_entries())["entries"]
            foreign = next(
                e for e in entries if e["type"] == "custom" and e["data"]["what"] == "during-navigation"
            )
            assert nav.summary_entry.from_id == foreign["id"]  # the redo summarized Pi's entry's branch
            await client.prompt("three")
            texts = json.dumps(real.requests()[-1]["messages"])
            assert f"SUMMARY-{len(calls)}" in texts and "SUMMARY-1" not in texts

            # 2. a handoff block: Pi writes after the edit; reported, not lost
            leaf_before = (await client.get_entries())["leafId"]
            with pytest.raises(HandoffError, match="Pi wrote") as caught:
                async with client.handoff() as manager:
                    manager.branch_with_summary(target, "LOST-SUMMARY")
                    await asyncio.to_thread(pi_writes, "after-edit")
            error = caught.value
            assert len(error.foreign) == 1 and error.pi_leaf == error.foreign[0]
            state = await client.get_entries()
            assert state["leafId"] == error.pi_leaf  # Pi reloaded and stands at its own write
            by_id = {e["id"]: e for e in state["entries"]}
            assert by_id[error.pi_leaf]["parentId"] == leaf_before
            assert any(e.get("summary") == "LOST-SUMMARY" for e in state["entries"])  # in Pi's tree too
            pid = client.pid
        assert group_members(pid) == []

    run(main())


@real_pi
def test_real_pi_killed_mid_prompt(tmp_path: Path) -> None:
    real = RealPi(tmp_path, {"delay": 5})
    try:

        async def main() -> None:
            async with real.start() as client:
                pid = client.pid
                async with client.events() as events:
                    prompt = asyncio.create_task(client.prompt("are you there?"))
                    while (await events.next(30))["type"] != "turn_start":
                        pass
                os.killpg(pid, signal.SIGKILL)
                with pytest.raises(PiExitedError, match="killed by signal 9"):
                    await prompt
                with pytest.raises(PiExitedError):
                    await client.get_state()
            assert group_members(pid) == []

        run(main())
    finally:
        real.close()
