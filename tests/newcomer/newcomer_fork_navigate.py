"""Fork a Pi session into a new one, go back to an earlier user message as Pi's ``/tree`` does
(with a branch summary of what is left behind), label the point, retry the message, and print
what the model receives on the new branch.

    python newcomer_fork_navigate.py SESSION [--cwd DIR] [--session-dir DIR] [--back N] [--label TEXT]

``--back N``: go back to the Nth user message before the leaf (default 2).
"""

from __future__ import annotations

import argparse
import os
import sys

import pisession
from pisession.compaction import SummaryRequest
from pisession.describe import describe_message


def summarize(request: SummaryRequest) -> str:
    """A plain-function summarizer: the user asks Pi quotes in the request, one line each."""
    asks = [line[len("[User]: ") :] for line in request.prompt.splitlines() if line.startswith("[User]: ")]
    return "## Abandoned branch\n" + "\n".join(f"- {ask[:80]}" for ask in asks)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Fork, navigate back with a branch summary, label.")
    parser.add_argument("session")
    parser.add_argument("--cwd", help="the fork's project folder (default: the source's)")
    parser.add_argument("--session-dir", help="where the fork is written (default: Pi's folder for --cwd)")
    parser.add_argument("--back", type=int, default=2)
    parser.add_argument("--label", default="retry")
    args = parser.parse_args(argv)

    source = pisession.SessionManager.open(args.session)
    cwd = args.cwd or source.get_cwd()
    source.close()
    fork = pisession.SessionManager.fork_from(args.session, cwd, args.session_dir)
    header = fork.get_header()
    assert header is not None  # a session file always has one
    print(f"fork: {fork.get_session_file()} (parent {header.parent_session})")

    users = [
        entry
        for entry in fork.get_branch()
        if isinstance(entry, pisession.MessageEntry) and isinstance(entry.message, pisession.UserMessage)
    ]
    if len(users) < args.back:
        print(f"only {len(users)} user messages on the branch")
        return 1
    target = users[-args.back]
    nav = fork.navigate_tree(target.id, summarize=summarize, label=args.label)
    print(f"went back to {target.id}; new branch starts at {nav.new_leaf_id}")
    print(f"editor text: {nav.editor_text!r}")
    if nav.summary_entry is not None:
        print(f"branch summary {nav.summary_entry.id}, label {fork.get_label(nav.summary_entry.id)!r}")
    fork.append_message(pisession.UserMessage(content=f"{nav.editor_text or ''} (try a smaller change)"))

    print("\ncontext on the new branch:")
    for message in fork.build_session_context().messages:
        line = " ".join(describe_message(message).split())  # a tool result's text keeps its newlines
        print(f"  {message.role:>14}: {line[:70]}")
    print(f"\nfile: {os.path.basename(fork.get_session_file() or '')}, entries {fork.get_entry_count()}")
    fork.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
