"""Turn ``pisession usage --json`` (or ccusage's JSON, same shape) into CSV, one line per model
per row, for a spreadsheet or a chart:

    pisession usage daily --json | python docs/examples/usage_csv.py > usage.csv
    python docs/examples/usage_csv.py report.json

Standard library only.
"""

from __future__ import annotations

import csv
import json
import sys
from typing import Any

GROUPINGS = {
    "daily": "date",
    "weekly": "week",
    "monthly": "month",
    "sessions": "sessionId",
    "projects": "projectPath",
}
FIELDS = ["inputTokens", "outputTokens", "cacheCreationTokens", "cacheReadTokens", "cost"]


def rows(report: dict[str, Any]) -> tuple[str, list[list[Any]]]:
    """The report's key column name and its lines: (key, model, tokens..., cost)."""
    for grouping, key in GROUPINGS.items():
        if grouping in report:
            lines = [
                [row[key], model["modelName"], *(model[field] for field in FIELDS)]
                for row in report[grouping]
                for model in row["modelBreakdowns"]
            ]
            return key, lines
    raise SystemExit("not a usage report: expected one of " + ", ".join(GROUPINGS))


def main(argv: list[str]) -> int:
    if len(argv) > 1:
        with open(argv[1], encoding="utf-8") as handle:
            report = json.load(handle)
    else:
        report = json.load(sys.stdin)
    key, lines = rows(report)
    writer = csv.writer(sys.stdout, lineterminator="\n")
    writer.writerow([key, "model", *FIELDS])
    writer.writerows(lines)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
