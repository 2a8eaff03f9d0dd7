"""Every read case: pisession must see exactly what the reference saw (golden/read)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path
from typing import Any

import pytest
from _dump import assert_same, dump
from conftest import OracleIds

import pisession
from pisession import SessionManager

HERE = Path(__file__).parent
CASES = sorted(p.stem for p in (HERE / "golden" / "read").glob("*.json"))

# Files pisession reads differently on purpose (docs/differences.md).
DIFFERENT = {
    "non_object_lines": (
        "Pi keeps non-object JSON lines (123, [], true) as entries without an id; pisession drops them"
    ),
    "non_object_last_line": "Pi keeps a trailing non-object JSON line as an id-less leaf; pisession drops it",
}


# Files whose rewrite must match the reference byte for byte while pisession's view differs on
# purpose: lines that are not objects, or nested deeper than the line scanner reads, stay out of
# the index but are kept by the migration rewrite.
FILE_ONLY = {
    "v1_unparsed_lines": "the array and the 1,200-level entry are not indexed",
    "v2_unparsed_lines": "the non-object lines and the 1,200-level entry are not indexed",
}


def golden(name: str) -> dict[str, Any]:
    text = (HERE / "golden" / "read" / f"{name}.json").read_text(encoding="utf-8")
    try:
        return json.loads(text)  # type: ignore[no-any-return]
    except RecursionError:  # entries nested 1,200 levels
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(10_000)
        try:
            return json.loads(text)  # type: ignore[no-any-return]
        finally:
            sys.setrecursionlimit(limit)


@pytest.mark.parametrize("low_memory", [False, True], ids=["default", "low_memory"])
@pytest.mark.parametrize("name", CASES)
def test_read_case_matches_reference(name: str, low_memory: bool, tmp_path: Path) -> None:
    if name in DIFFERENT:
        pytest.xfail(DIFFERENT[name])
    expected = golden(name)
    path = tmp_path / "session.jsonl"
    shutil.copyfile(HERE / "cases" / f"{name}.jsonl", path)
    before = path.read_bytes()
    if not expected["ok"]:
        with pytest.raises(pisession.InvalidSessionError):
            SessionManager.open(path, ids=OracleIds(name), low_memory=low_memory)
        assert path.read_bytes() == before, "a file that failed to open must be left untouched"
        return
    manager = SessionManager.open(path, ids=OracleIds(name), low_memory=low_memory)
    if low_memory and before.strip():
        # the lines stay in the (possibly migrated) file, which is the one kept open
        bodies = manager.snapshot().bodies
        assert bodies is not None and bodies.identity == (path.stat().st_dev, path.stat().st_ino)
    after = path.read_bytes().decode("utf-8", "replace")  # the oracle reads the file as UTF-8 text
    ours = dump(manager, all_leaves=True)
    want = expected["dump"]
    if "$NEW_ID" in json.dumps(want["header"]):
        # an empty file got a fresh header from the real clock: compare its shape only
        assert after.count("\n") == 1 and list(ours["header"]) == list(want["header"])
        return
    assert after == expected["fileAfterOpen"], "file after open"
    if name in FILE_ONLY:
        return
    for key in ("header", "entries", "leafId", "sessionName", "labels", "tree", "branch", "current"):
        assert_same(ours[key], want[key], key)
    for leaf, view in want["leaves"].items():
        assert_same(ours["leaves"][leaf], view, f"leaf {leaf}")


@pytest.mark.parametrize("name", CASES)
def test_read_session_low_memory_reads_every_case_as_the_default(name: str, tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    shutil.copyfile(HERE / "cases" / f"{name}.jsonl", path)
    before = path.read_bytes()
    try:
        default = pisession.read_session(path)
    except pisession.InvalidSessionError as error:
        with pytest.raises(type(error)):
            pisession.read_session(path, low_memory=True)
        return
    low = pisession.read_session(path, low_memory=True)
    assert path.read_bytes() == before, "read_session never writes"
    if pisession.read_session_entries(path)[0].get("version") != 3:
        return  # read in full either way; a version-1 file gets new ids on every read
    assert low.snapshot().bodies is not None
    ours, want = dump(low, all_leaves=True), dump(default, all_leaves=True)
    for key in ("header", "entries", "leafId", "sessionName", "labels", "tree", "branch", "current"):
        assert_same(ours[key], want[key], key)
    assert ours["leaves"] == want["leaves"]
