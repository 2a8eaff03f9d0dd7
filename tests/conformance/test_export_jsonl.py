"""``pisession.export.to_jsonl`` is Pi's ``serializeSessionBranch`` byte for byte, on every read
case (golden/export_jsonl.json, written by generate_export.py from the reference)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pisession import SessionManager
from pisession.export import to_jsonl, write_jsonl

GOLDEN = json.loads((Path(__file__).parent / "golden" / "export_jsonl.json").read_text(encoding="utf-8"))


class Frozen:
    def __init__(self, ms: int) -> None:
        self.ms = ms

    def now_ms(self) -> int:
        return self.ms


# Known differences of the reader, documented in test_read.py.
KNOWN = {"non_object_last_line.jsonl": "Pi keeps a trailing non-object JSON line as an id-less leaf"}


def opened(record: dict[str, Any], tmp_path: Path) -> SessionManager:
    path = tmp_path / record["name"]
    path.write_bytes(record["fileAfterOpen"].encode("utf-8", "surrogatepass"))
    return SessionManager.open(path, tmp_path)


@pytest.mark.parametrize("record", [c for c in GOLDEN["cases"] if "jsonl" in c], ids=lambda c: c["name"])
def test_to_jsonl_is_pis_export(
    record: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    if record["name"] in KNOWN:
        pytest.skip(KNOWN[record["name"]])
    monkeypatch.chdir("/")  # the reference ran there: a header without cwd exports "/"
    manager = opened(record, tmp_path)
    expected = record["jsonl"]
    if manager.get_session_id() != json.loads(expected.splitlines()[0])["id"]:
        pytest.skip("Pi made a new session in memory for this file (nothing written to reopen)")
    assert to_jsonl(manager, clock=Frozen(GOLDEN["clock"])) == expected


def test_write_jsonl_writes_a_private_file_atomically(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir("/")
    record = next(c for c in GOLDEN["cases"] if c["name"] == "all_entry_types.jsonl")
    manager = opened(record, tmp_path)
    target = tmp_path / "out" / "branch.jsonl"
    target.parent.mkdir()
    target.write_text("old")
    target.chmod(0o644)
    written = write_jsonl(manager, target, clock=Frozen(GOLDEN["clock"]))
    assert written == str(target)
    assert target.read_text(encoding="utf-8") == record["jsonl"]
    assert target.stat().st_mode & 0o777 == 0o600
    assert sorted(p.name for p in target.parent.iterdir()) == ["branch.jsonl"]  # no temp file left
