"""Every op script: the same operations through pisession give the reference's results, the
same errors and the same file, byte for byte (ids and clock replayed from the oracle's seed)."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

import pytest
from _dump import assert_same, dump
from conftest import OracleIds, StepClock

import pisession
from pisession import UNSET, SessionManager, to_wire

HERE = Path(__file__).parent
GOLDEN = HERE / "golden" / "ops"
SCRIPTS = sorted(p.stem for p in (HERE / "ops").glob("*.json"))
RUNS = [(name, False) for name in SCRIPTS] + [
    (name, True) for name in SCRIPTS if (GOLDEN / f"{name}.memory.json").exists()
]


# Scripts where pisession differs on purpose (docs/differences.md); each has its own test below.
DIFFERENT = {
    "system_replace_flag": "the seed's replace: true starts a fresh system baseline; Pi 1.6.0 ignores it",
}


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def wire(value: Any, directory: str) -> Any:
    if isinstance(value, list):
        return [wire(v, directory) for v in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value.replace(directory, "$DIR") if isinstance(value, str) else value
    return json.loads(json.dumps(to_wire(value)).replace(directory, "$DIR"))


def call(manager: SessionManager, op: str, args: list[Any]) -> Any:
    method = getattr(manager, snake(op))
    if op == "newSession":
        options = args[0] if args and args[0] is not UNSET else {}
        return method(id=options.get("id"), parent_session=options.get("parentSession"))
    while args and args[-1] is UNSET:  # a trailing undefined is an argument left out
        args = args[:-1]
    return method(*args)


def run(name: str, memory: bool, directory: Path) -> tuple[SessionManager, list[dict[str, Any]]]:
    script = json.loads((HERE / "ops" / f"{name}.json").read_text(encoding="utf-8"))
    clock = StepClock(script.get("clock", 1733234400000))
    ids = OracleIds(name)
    options = script.get("options") or {}
    kwargs = {
        "id": options.get("id"),
        "parent_session": options.get("parentSession"),
        "clock": clock,
        "ids": ids,
    }
    cwd = script.get("cwd", "/project")
    manager = (
        SessionManager.in_memory(cwd, **kwargs) if memory else SessionManager.create(cwd, directory, **kwargs)
    )
    results: list[dict[str, Any]] = []
    for step in script["ops"]:
        args = [
            (
                results[int(a[1:])].get("value", UNSET)
                if isinstance(a, str) and re.fullmatch(r"\$\d+", a)
                else a
            )
            for a in step.get("args", [])
        ]
        try:
            value = call(manager, step["op"], args)
        except pisession.PisessionError as error:
            results.append({"error": str(error.args[0])})  # Pi's text; str() also names the session
        else:
            results.append({"value": wire(value, str(directory))})
    return manager, results


@pytest.mark.parametrize(("name", "memory"), RUNS, ids=[f"{n}{'-memory' if m else ''}" for n, m in RUNS])
def test_ops_match_reference(name: str, memory: bool, tmp_path: Path) -> None:
    if name in DIFFERENT:
        pytest.xfail(DIFFERENT[name])
    golden = json.loads((GOLDEN / f"{name}{'.memory' if memory else ''}.json").read_text(encoding="utf-8"))
    directory = tmp_path / "sessions"
    manager, results = run(name, memory, directory)
    for i, (ours, want) in enumerate(zip(results, golden["results"], strict=True)):
        assert_same(ours, want, f"op {i}")
    file = manager.get_session_file()
    assert (file.replace(str(directory), "$DIR") if file else None) == golden["file"]
    if not memory:
        text = (
            Path(file).read_text(encoding="utf-8").replace(str(directory), "$DIR")
            if file and os.path.exists(file)
            else None
        )
        assert text == golden["text"]
        files = (
            {
                f"$DIR/{p.name}": p.read_text(encoding="utf-8").replace(str(directory), "$DIR")
                for p in sorted(directory.glob("*"))
                if not p.name.endswith(".lock")
            }
            if directory.exists()
            else {}
        )
        assert files == golden.get("dirFiles", files)
    ours = json.loads(json.dumps(dump(manager, all_leaves=True)).replace(str(directory), "$DIR"))
    for key, want in golden["dump"].items():
        if key == "leaves":
            for leaf, view in want.items():
                assert_same(ours["leaves"][leaf], view, f"leaf {leaf}")
        else:
            assert_same(ours[key], want, key)


def test_replace_flag_differs_only_by_the_seed_rule(tmp_path: Path) -> None:
    """Where Pi ignores ``replace: true``, pisession replays from the replacing message on."""
    manager, _ = run("system_replace_flag", False, tmp_path / "sessions")
    golden = json.loads((GOLDEN / "system_replace_flag.json").read_text(encoding="utf-8"))
    pi_system = golden["dump"]["current"]["context"]["messages"][0]
    ours = to_wire(manager.build_session_context())["messages"][0]
    assert "Old base." in pi_system["content"]
    assert ours["content"] == "New base."
    raw = [to_wire(e)["message"] for e in manager.get_branch() if e.type == "message"]
    assert to_wire(pisession.get_current_system_message(raw))["content"] == "New base."
    pi_rule = to_wire(pisession.get_current_system_message(raw, honour_replace=False))
    assert pi_rule["content"].startswith("Old base.")
