"""Analytics over every Pi session: per project, the sessions and messages, then tokens and cost
per day; and the sessions that mention a word. The session folder is the one Pi would use
(``$PI_CODING_AGENT_SESSION_DIR``, else the ``sessionDir`` setting, else Pi's default).

    python newcomer_analytics.py WORD [--cwd DIR] [--timezone ZONE]
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict

from pisession import SessionManager
from pisession.catalog import search_sessions
from pisession.settings import choose_session_dir
from pisession.usage import usage_report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Messages, tokens and cost per project; who mentions WORD.")
    parser.add_argument("word")
    parser.add_argument("--cwd", help="the folder whose Pi settings apply (default: the current one)")
    parser.add_argument("--timezone", default="UTC")
    args = parser.parse_args(argv)

    choice = choose_session_dir(args.cwd)
    folder = choice.path  # None: Pi's default folders
    print(f"session folder: {folder or '(Pi default)'} ({choice.source})")

    sessions = SessionManager.list_all(folder, catalog=True)
    by_project: dict[str, list[int]] = defaultdict(list)
    for info in sessions:
        by_project[info.cwd].append(info.message_count)
    print(f"{len(sessions)} sessions in {len(by_project)} projects")

    for project in sorted(by_project):
        counts = by_project[project]
        print(f"\n{project}: {len(counts)} sessions, {sum(counts)} messages")
        report = usage_report("daily", cwd=project, session_dir=folder, timezone=args.timezone)
        for row in report.rows:
            tokens = row.totals.input_tokens + row.totals.output_tokens
            tokens += row.totals.cache_read_tokens + row.totals.cache_creation_tokens
            print(f"  {row.key}  {tokens:>10,} tokens  ${row.totals.total_cost:.4f}")
        for skipped in report.skipped:
            print(f"  not counted: {skipped.path}: {skipped.reason}")

    everything = usage_report("daily", session_dir=folder, timezone=args.timezone)
    print(f"\nall projects: ${everything.totals.total_cost:.4f}")

    matches = search_sessions(args.word, session_dir=folder, all=folder is None)
    print(f"\nsessions mentioning {args.word!r}: {len(matches)}")
    for match in matches:
        print(f"  {match.session_id}  {match.hits} hits  newest {match.newest}  {match.session_path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
