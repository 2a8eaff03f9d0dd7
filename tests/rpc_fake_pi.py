"""A tiny stand-in for ``pi --mode rpc`` (tests/test_rpc.py): reads LF-framed commands on
stdin, answers as Pi 1.6.0 does, so the client's framing, correlation and process handling are
tested without Node.

Arguments: ``--session FILE`` (get_entries reads it as Pi's entries), ``--log FILE`` (each command
received is appended as a JSON line), ``--ignore-eof`` (keeps running after stdin closes, to test
the SIGTERM/SIGKILL escalation), ``--ignore-term`` (ignores SIGTERM too), ``--child`` (starts a
``sleep`` in the process group, which close() must end too).

Commands besides Pi's: ``crash`` (exit 3 at once, after writing to stderr), ``big`` (a response of
``size`` bytes), ``write_line`` (append ``line`` to the session file, as Pi's own write).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time


def main() -> None:
    args = sys.argv[1:]
    session = args[args.index("--session") + 1] if "--session" in args else None
    log = args[args.index("--log") + 1] if "--log" in args else None
    if "--ignore-term" in args:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if "--child" in args:
        subprocess.Popen(["sleep", "300"])
    out = sys.stdout.buffer

    def emit(record: object) -> None:
        # As Pi's JSON.stringify: U+2028 and other non-ASCII characters go out raw.
        out.write(json.dumps(record, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n")
        out.flush()

    def entries() -> list[dict[str, object]]:
        if session is None or not os.path.exists(session):
            return []
        with open(session, "rb") as file:
            lines = [json.loads(line) for line in file.read().split(b"\n") if line.strip()]
        return [line for line in lines if line.get("type") != "session"]

    # As Pi: the file is read when the session is opened (and on switch_session), then Pi only
    # appends what it writes itself; its leaf is its own last entry.
    memory = entries()
    buffer = b""
    while True:
        chunk = os.read(0, 65536)
        if not chunk:
            break
        buffer += chunk
        while b"\n" in buffer:
            line, buffer = buffer.split(b"\n", 1)
            command = json.loads(line)
            if log:
                with open(log, "a", encoding="utf-8") as file:
                    file.write(json.dumps(command) + "\n")
            cid, kind = command.get("id"), command.get("type")

            def ok(data: object = None, cid: object = cid, kind: object = kind) -> None:
                record = {"id": cid, "type": "response", "command": kind, "success": True}
                if data is not None:
                    record["data"] = data
                emit(record)

            if kind == "get_state":
                ok(
                    {
                        "isStreaming": False,
                        "isCompacting": False,
                        "sessionFile": session,
                        "sessionId": "x",
                        "thinkingLevel": "off",
                        "steeringMode": "all",
                        "followUpMode": "all",
                        "autoCompactionEnabled": True,
                        "messageCount": 0,
                        "pendingMessageCount": 0,
                    }
                )
            elif kind == "get_entries":
                all_entries = list(memory)
                since = command.get("since")
                if since is not None:
                    ids = [e["id"] for e in all_entries]
                    if since not in ids:
                        emit(
                            {
                                "id": cid,
                                "type": "response",
                                "command": kind,
                                "success": False,
                                "error": f"Entry not found: {since}",
                            }
                        )
                        continue
                    all_entries = all_entries[ids.index(since) + 1 :]
                ok({"entries": all_entries, "leafId": memory[-1]["id"] if memory else None})
            elif kind == "prompt":
                ok({"disposition": "started"})
                text = command["message"]
                emit({"type": "agent_start"})
                emit({"type": "message_start", "message": {"role": "user", "content": text}})
                emit(
                    {
                        "type": "message_update",
                        "assistantMessageEvent": {"type": "text_delta", "delta": "a\u2028b"},
                    }
                )
                emit(
                    {
                        "type": "message_end",
                        "message": {
                            "role": "assistant",
                            "content": [{"type": "text", "text": "echo\u2028" + text}],
                        },
                    }
                )
                emit({"type": "agent_end", "messages": []})
                emit({"type": "agent_settled", "aborted": False})
            elif kind == "switch_session":
                memory = entries()
                ok({"cancelled": False})
            elif kind == "big":
                ok({"blob": "\u2028" * 3 + "x" * int(command["size"])})
            elif kind == "write_line":
                with open(session, "ab") as file:  # type: ignore[arg-type]
                    file.write(command["line"].encode("utf-8") + b"\n")
                memory.append(json.loads(command["line"]))
                ok()
            elif kind == "crash":
                sys.stderr.write("fake pi: crashing as asked\n")
                sys.stderr.flush()
                os._exit(3)
            else:
                emit(
                    {
                        "id": cid,
                        "type": "response",
                        "command": kind,
                        "success": False,
                        "error": f"Unknown command: {kind}",
                    }
                )
    if "--ignore-eof" in args:
        while True:
            time.sleep(1)


if __name__ == "__main__":
    main()
