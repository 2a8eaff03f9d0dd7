"""Regenerate pisession/data/collation.json: how Node's ICU (Pi's ``localeCompare``) weighs each
character that session file and folder names are likely to hold; and golden/list_order.json: the
order Pi's ``listAll`` gives sessions that differ only by their file names (and mtimes).

    python tests/conformance/generate_collation.py

Characters are taken after canonical decomposition (NFD), as ICU compares them; characters with
no weight at all (controls, format characters) are left out and skipped when comparing.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
import unicodedata
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
TARGET = HERE.parents[1] / "pisession" / "data" / "collation.json"
GOLDEN = HERE / "golden" / "list_order.json"
ORACLE = HERE.parents[2] / "shared" / "pi-oracle" / "oracle.mjs"
ALPHABET = [*"abcxyzABCXYZ0129_-. ~+@()[]'!,;", *"éÉèñÑöøłçάαΒжЖ—€中😀★", "e\u0301"]
SPECIAL = ["A", "b", "a", "B", "é", "e", "E", "É", "_", "-", "_a", "-a", "a_", "a-", "1", "10", "9", "z", "Z"]
RANGES = [
    (0x20, 0x7E),  # ASCII
    (0xA0, 0x24F),  # Latin-1, Latin Extended A and B
    (0x300, 0x36F),  # combining diacritical marks
    (0x370, 0x3FF),  # Greek
    (0x400, 0x4FF),  # Cyrillic
    (0x2010, 0x205E),  # general punctuation
    (0x20A0, 0x20C0),  # currency signs
    (0x2100, 0x2BFF),  # letterlike, arrows, mathematical and technical signs, shapes, dingbats
    (0x1F000, 0x1FAFF),  # emoji and pictographs
]


def main() -> None:
    points = [
        p
        for start, end in RANGES
        for p in range(start, end + 1)
        if unicodedata.category(chr(p)) != "Cn" and unicodedata.normalize("NFD", chr(p)) == chr(p)
    ]
    result = subprocess.run(
        ["node", str(HERE / "collation.mjs")],
        input=json.dumps(points),
        capture_output=True,
        text=True,
        check=True,
    )
    table = json.loads(result.stdout)
    rows = table["weights"]
    document = {
        "locale": table["locale"],
        "icu": table["icu"],
        "ranges": RANGES,
        "points": [row[0] for row in rows],
        "weights": [weight for row in rows for weight in row[1:]],  # primary, secondary, tertiary per point
    }
    TARGET.write_text(json.dumps(document, separators=(",", ":")) + "\n")
    print(f"{len(rows)} characters -> {TARGET}", file=sys.stderr)


def session(sid: str) -> str:
    header = {
        "type": "session",
        "version": 3,
        "id": sid,
        "timestamp": "2025-01-02T03:04:05.678Z",
        "cwd": "/p",
    }
    message = {
        "type": "message",
        "id": "m",
        "parentId": None,
        "timestamp": "2025-01-02T03:04:06.000Z",
        "message": {"role": "user", "content": "same time", "timestamp": 1735787046000},
    }
    return json.dumps(header) + "\n" + json.dumps(message) + "\n"


def list_order() -> None:
    """Files that tie on ``modified`` (and mostly on mtime): Pi's order of them, in one folder and
    across a sessions root's folders."""
    rng = random.Random(19)
    names = set(SPECIAL)
    while len(names) < 300:
        names.add("".join(rng.choice(ALPHABET) for _ in range(rng.randint(1, 5))))
    files: list[dict[str, Any]] = []
    for n, name in enumerate(sorted(names)):
        folder = rng.choice(["--one--", "--two--"])
        files.append(
            {
                "folder": folder,
                "name": name + ".jsonl",
                "mtime": rng.choice([1e9, 1e9, 1e9, 2e9]),
                "id": f"s{n}",
            }
        )
    with tempfile.TemporaryDirectory() as tmp:
        agent = Path(tmp) / "agent"
        for file in files:
            path = agent / "sessions" / file["folder"] / file["name"]
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(session(file["id"]))
            os.utime(path, (file["mtime"], file["mtime"]))
        env = {**os.environ, "PI_CODING_AGENT_DIR": str(agent)}

        def pi(*args: str) -> list[str]:
            out = subprocess.run(
                ["node", str(ORACLE), "static", "listAll", json.dumps(list(args))],
                capture_output=True,
                text=True,
                check=True,
                env=env,
            ).stdout
            return [os.path.relpath(info["path"], agent / "sessions") for info in json.loads(out)["value"]]

        golden = {"files": files, "root": pi(), "one": pi(str(agent / "sessions" / "--one--"))}
    GOLDEN.write_text(json.dumps(golden, indent=1, ensure_ascii=False) + "\n")
    print(f"{len(files)} files -> {GOLDEN}", file=sys.stderr)


if __name__ == "__main__":
    main()
    list_order()
