"""Automated forks: continue a project's newest session in another working directory, and turn
every entry labelled ``checkpoint`` into a session of its own.

``SessionManager.fork_from`` copies a whole session under a new header (``parentSession`` names
the source); ``create_branched_session`` keeps only the path to one entry. Both write new files
and never change the source.

    python docs/examples/auto_fork.py [PROJECT_DIR TARGET_DIR]

Without arguments it works on a sample project in a temporary agent folder.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time

import pisession


def make_sample_project(project: str) -> None:
    """A session with two labelled checkpoints, in Pi's folder for ``project``."""
    manager = pisession.SessionManager.create(project)
    for step in range(3):
        now = int(time.time() * 1000)
        user = manager.append_message({"role": "user", "content": f"Do step {step}.", "timestamp": now})
        manager.append_message(
            {
                "role": "assistant",
                "content": [{"type": "text", "text": f"Step {step} done."}],
                "api": "anthropic-messages",
                "provider": "anthropic",
                "model": "claude-sonnet-4-5",
                "usage": {
                    "input": 10,
                    "output": 5,
                    "cacheRead": 0,
                    "cacheWrite": 0,
                    "totalTokens": 15,
                    "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
                },
                "stopReason": "stop",
                "timestamp": now + 1,
            }
        )
        if step < 2:
            manager.append_label_change(user, "checkpoint")
    manager.append_session_info("Three steps")
    manager.close()


def main() -> int:
    if len(sys.argv) == 3:
        project, target = (os.path.abspath(p) for p in sys.argv[1:])
    else:
        # Keep the sample out of ~/.pi: a fresh agent folder, unless the caller chose one.
        os.environ.setdefault("PI_CODING_AGENT_DIR", tempfile.mkdtemp(prefix="pi-agent-"))
        base = tempfile.mkdtemp(prefix="pi-fork-")
        project, target = os.path.join(base, "project"), os.path.join(base, "worktree")
        make_sample_project(project)

    sessions = pisession.SessionManager.list(project)
    if not sessions:
        print(f"no sessions for {project}")
        return 1
    newest = sessions[0]
    print(f"newest session of {project}: {newest.id} ({newest.name or newest.first_message})")

    # 1. The whole session, continued in another working directory (e.g. a git worktree).
    fork = pisession.SessionManager.fork_from(newest.path, target)
    print(f"forked to {fork.get_session_file()} ({fork.get_entry_count()} entries, cwd {fork.get_cwd()})")
    fork.close()

    # 2. Each checkpoint as a session of its own: only the path to the labelled entry.
    source = pisession.SessionManager.open(newest.path)
    checkpoints = [e.id for e in source.get_entries() if source.get_label(e.id) == "checkpoint"]
    source.close()
    extracted = []
    for entry_id in checkpoints:
        manager = pisession.SessionManager.open(newest.path)  # create_branched_session replaces its session
        path = manager.create_branched_session(entry_id)
        extracted.append(path)
        print(f"checkpoint {entry_id} -> {path} ({manager.get_entry_count()} entries)")
        manager.close()

    # Pi's picker now lists the fork under the target folder, with its parent recorded.
    forks = pisession.SessionManager.list(target)
    ok = len(forks) == 1 and forks[0].parent_session_path == newest.path and all(extracted)
    print(f"sessions of {target}: {len(forks)}; parent recorded: {ok}")
    return 0 if ok and len(extracted) == len(checkpoints) else 1


if __name__ == "__main__":
    sys.exit(main())
