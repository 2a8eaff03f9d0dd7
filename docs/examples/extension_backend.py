"""An extension backend that appends its own entries to a session while Pi is writing it.

Pi is simulated by a second ``SessionManager`` in a thread: it writes user, assistant and
tool-result messages. The backend follows the file (``follow``) and keeps its state, a count of
tool calls by tool, in ``custom`` entries (extension state that stays out of the model context):
for every tool call it sees, it reads the latest state and appends the next one, in a
transaction. Both write under the session's lock, so lines never interleave and every entry's
parent exists.

Run it as it is (it writes to a temporary folder) or give it a folder::

    python docs/examples/extension_backend.py [SESSION_DIR]
"""

from __future__ import annotations

import collections
import sys
import tempfile
import threading
import time

import pisession

TURNS = 15


def usage(tokens_in: int, tokens_out: int) -> dict[str, object]:
    cost_in, cost_out = tokens_in * 3e-6, tokens_out * 15e-6
    return {
        "input": tokens_in,
        "output": tokens_out,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": tokens_in + tokens_out,
        "cost": {
            "input": cost_in,
            "output": cost_out,
            "cacheRead": 0,
            "cacheWrite": 0,
            "total": cost_in + cost_out,
        },
    }


def run_pi(path: str, finished: threading.Event) -> None:
    """What Pi does during a conversation: one user turn, a tool call, its result, an answer."""
    pi = pisession.SessionManager.open(path)
    tools = ["read", "bash", "edit"]
    for turn in range(TURNS):
        now = int(time.time() * 1000)
        tool = tools[turn % len(tools)]
        pi.append_message({"role": "user", "content": f"Step {turn}: please continue", "timestamp": now})
        pi.append_message(
            {
                "role": "assistant",
                "content": [
                    {"type": "toolCall", "id": f"call_{turn}", "name": tool, "arguments": {"path": "x.py"}}
                ],
                "api": "anthropic-messages",
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "usage": usage(1000 + turn, 50),
                "stopReason": "toolUse",
                "timestamp": now + 1,
            }
        )
        pi.append_message(
            {
                "role": "toolResult",
                "toolCallId": f"call_{turn}",
                "toolName": tool,
                "content": [{"type": "text", "text": "ok"}],
                "isError": False,
                "timestamp": now + 2,
            }
        )
        time.sleep(0.005)
    pi.close()
    finished.set()


def main() -> int:
    directory = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="pi-extension-")
    # Pi creates the session; the file exists once it holds a user message.
    pi = pisession.SessionManager.create("/work/project", directory)
    pi.append_message({"role": "user", "content": "Let's start.", "timestamp": int(time.time() * 1000)})
    path = pi.get_session_file()
    assert path is not None
    pi.close()

    # The backend opens the file twice: a reader that follows it, and a writer that keeps the
    # state. refresh() reports each entry once per manager, so the writer's
    # refresh(move_leaf=True) finds what Pi appended only because it does not follow too.
    reader = pisession.SessionManager.open(path)
    writer = pisession.SessionManager.open(path)
    finished = threading.Event()
    pi_thread = threading.Thread(target=run_pi, args=(path, finished))
    pi_thread.start()

    seen: collections.Counter[str] = collections.Counter()

    def handle(entry: pisession.Entry) -> None:
        if isinstance(entry, pisession.MessageEntry) and isinstance(
            entry.message, pisession.AssistantMessage
        ):
            for block in entry.message.content:
                if isinstance(block, pisession.ToolCall):
                    seen[block.name] += 1
                    # Read the latest state and append the next one with no writer in between.
                    with writer.transaction():
                        # Put the leaf at the newest entry, so the state continues the
                        # conversation instead of starting a side branch.
                        writer.refresh(move_leaf=True)
                        counts = dict(writer.get_custom_data("tool-audit", {}, branch=False))
                        counts[block.name] = counts.get(block.name, 0) + 1
                        writer.append_custom_entry("tool-audit", counts)

    for entry in reader.follow(poll_interval=0.01, stop=finished):
        handle(entry)
    pi_thread.join()
    for entry in reader.refresh():  # whatever Pi wrote after our last look
        handle(entry)
    reader.close()
    writer.close()

    # Check the result the way Pi will read it.
    session = pisession.SessionManager.open(path)
    entries = session.get_entries()
    ids = {e.id for e in entries}
    kinds = collections.Counter(e.type for e in entries)
    parents_ok = all(e.parent_id is None or e.parent_id in ids for e in entries)
    audits = [e for e in session.get_entries_of_type(pisession.CustomEntry) if e.custom_type == "tool-audit"]
    print(f"session file: {path}")
    print(f"entries: {len(entries)} ({dict(kinds)})")
    print(f"tool calls seen by the backend: {dict(seen)}")
    print(f"custom entries written by the backend: {len(audits)}")
    state = session.get_custom_data("tool-audit", {})
    print(f"backend state at the leaf: {state}")
    print(f"every parent exists: {parents_ok}; cycles: {list(session.snapshot().cycles)}")
    messages = len(session.build_session_context().messages)
    print(f"model context at the leaf: {messages} messages (custom entries are not part of it)")
    complete = messages == 1 + 3 * TURNS  # the conversation is one unbroken path
    counted = state == dict(seen)  # no update lost: the state counts every tool call
    return 0 if parents_ok and complete and counted and len(audits) == TURNS else 1


if __name__ == "__main__":
    sys.exit(main())
