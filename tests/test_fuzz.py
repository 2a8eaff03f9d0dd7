"""Fuzzing: whatever is in a file or passed as an argument, pisession raises only its own errors
(plus TypeError/ValueError for arguments of the wrong type, as the JSON writer documents), never
hangs on cycles, never recurses itself to death on deep chains, and never writes to a file it
only reads.

``pytest --fuzz tests/test_fuzz.py`` runs many more examples.
"""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pisession
from pisession import PisessionError, SessionManager, load_entries_from_file

HEADER = {
    "type": "session",
    "version": 3,
    "id": "fuzz",
    "timestamp": "2024-12-03T14:00:00.000Z",
    "cwd": "/project",
}
HEADER_LINE = json.dumps(HEADER, separators=(",", ":")).encode() + b"\n"
STAMP = "2024-12-03T14:00:00.000Z"


@pytest.fixture
def examples(request: pytest.FixtureRequest) -> int:
    return 3_000 if request.config.getoption("--fuzz", default=False) else 60


def fuzz(examples: int, *strategies: Any, **kw: Any) -> Callable[[Callable[..., None]], Callable[[], None]]:
    def wrap(test: Callable[..., None]) -> Callable[[], None]:
        return settings(  # type: ignore[no-any-return]
            max_examples=examples,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        )(given(*strategies, **kw)(test))

    return wrap


@pytest.fixture
def scratch(tmp_path: Path) -> Callable[[], Path]:
    counter = itertools.count()

    def fresh() -> Path:
        folder = tmp_path / f"case{next(counter)}"
        folder.mkdir()
        return folder

    return fresh


# -- strategies --------------------------------------------------------------------------------

scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=6), inner, max_size=4),
    max_leaves=10,
)
# Cheaper to draw, for the many optional fields of an entry.
small_json = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=2) | st.dictionaries(st.text(max_size=4), inner, max_size=2),
    max_leaves=3,
)
ENTRY_TYPES = [
    "message",
    "model_change",
    "thinking_level_change",
    "usage",
    "compaction",
    "context_edit",
    "branch_summary",
    "custom",
    "custom_message",
    "label",
    "session_info",
    "session",
    "mystery",
]
ROLES = [
    "system",
    "user",
    "assistant",
    "toolResult",
    "bashExecution",
    "custom",
    "branchSummary",
    "compactionSummary",
    "hookMessage",
    "alien",
]
ID_POOL = ["a", "b", "c", "d", "e", "", "root"]
ids = st.sampled_from(ID_POOL) | small_json
blocks = st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "image", "thinking", "toolCall", "odd"]) | small_json},
    optional={
        "text": small_json,
        "data": small_json,
        "mimeType": small_json,
        "thinking": small_json,
        "id": small_json,
        "name": small_json,
        "arguments": small_json,
    },
)
messages = st.fixed_dictionaries(
    {"role": st.sampled_from(ROLES) | small_json},
    optional={
        "content": st.text(max_size=8) | st.lists(blocks, max_size=3) | json_values,
        "timestamp": small_json,
        "provider": small_json,
        "model": small_json,
        "usage": small_json,
        "sections": small_json,
        "toolsAdded": small_json,
        "toolsRemoved": small_json,
        "replace": small_json,
        "summary": small_json,
    },
)
FIELDS = [
    "targetId",
    "label",
    "name",
    "summary",
    "firstKeptEntryId",
    "fromId",
    "replacement",
    "customType",
    "content",
    "display",
    "details",
    "data",
    "provider",
    "modelId",
    "thinkingLevel",
    "tokensBefore",
    "kind",
    "model",
    "usage",
    "systemMessage",
    "firstKeptEntryIndex",
]
entries = st.fixed_dictionaries(
    {
        "type": st.sampled_from(ENTRY_TYPES) | json_values,
        "id": ids,
        "parentId": ids | st.none(),
        "timestamp": st.sampled_from([STAMP, "2024-12-03T14:00:01.000Z", "nope"]) | json_values,
    },
    optional={
        "message": messages | json_values,
        "targetId": ids,
        "fromId": ids,
        "firstKeptEntryId": ids,
        "label": small_json,
        "name": small_json,
        "summary": small_json,
        "replacement": st.none() | st.fixed_dictionaries({"content": small_json}) | small_json,
        **{key: small_json for key in FIELDS[7:]},
    },
)


def dump_line(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")


def write(folder: Path, data: bytes, name: str = "s.jsonl") -> Path:
    path = folder / name
    path.write_bytes(data)
    return path


def exercise_reads(manager: SessionManager) -> None:
    """Every read operation; none may raise for any content of the file."""
    all_ids = [e.id for e in manager.get_entries()]
    manager.get_tree()
    manager.build_session_context()
    manager.build_session_projection()
    manager.build_context_entries()
    manager.get_branch()
    manager.get_leaf_entry()
    manager.get_session_name()
    manager.get_header()
    for entry_id in all_ids[:12]:
        manager.get_branch(entry_id)
        manager.get_children(entry_id)
        manager.get_label(entry_id)
        manager.get_entry(entry_id)
    for entry in manager.get_entries():
        pisession.to_wire(entry)
    pisession.build_session_context(manager.get_entries())
    pisession.to_wire(manager.get_tree())
    manager.refresh()


def only_our_errors(action: Callable[[], Any], *also: type[BaseException]) -> Any:
    try:
        return action()
    except PisessionError:
        return None
    except also:
        return None


# -- files ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("low_memory", [False, True], ids=["default", "low_memory"])
def test_random_bytes(examples: int, scratch: Callable[[], Path], low_memory: bool) -> None:
    @fuzz(examples, st.binary(max_size=400), st.booleans())
    def check(data: bytes, with_header: bool) -> None:
        folder = scratch()
        path = write(folder, (HEADER_LINE if with_header else b"") + data)
        load_entries_from_file(path)
        SessionManager.list("/project", str(folder))
        manager = only_our_errors(lambda: SessionManager.open(path, low_memory=low_memory))
        if with_header:
            assert manager is not None, "a file starting with a valid header always opens"
        if manager is not None:
            exercise_reads(manager)

    check()


@pytest.mark.parametrize("low_memory", [False, True], ids=["default", "low_memory"])
def test_random_json_lines(examples: int, scratch: Callable[[], Path], low_memory: bool) -> None:
    lines = st.lists(
        json_values.map(dump_line) | entries.map(dump_line) | st.binary(max_size=20), max_size=12
    )

    @fuzz(examples, lines)
    def check(body: list[bytes]) -> None:
        folder = scratch()
        path = write(folder, HEADER_LINE + b"\n".join(body) + b"\n")
        manager = SessionManager.open(path, low_memory=low_memory)
        exercise_reads(manager)
        SessionManager.list("/project", str(folder))

    check()


@pytest.mark.parametrize("low_memory", [False, True], ids=["default", "low_memory"])
def test_random_entries_with_cycles_and_duplicates(
    examples: int, scratch: Callable[[], Path], low_memory: bool
) -> None:
    @fuzz(examples, st.lists(entries, max_size=14))
    def check(body: list[dict[str, Any]]) -> None:
        folder = scratch()
        path = write(folder, HEADER_LINE + b"".join(dump_line(e) + b"\n" for e in body))
        manager = SessionManager.open(path, low_memory=low_memory)
        exercise_reads(manager)
        memory = SessionManager.in_memory("/project", entries=[HEADER, *body])
        exercise_reads(memory)
        # Appending to whatever the file holds works and is read back.
        new_id = manager.append_message({"role": "user", "content": "after", "timestamp": 1})
        assert new_id in [e.id for e in SessionManager.open(path, low_memory=low_memory).get_entries()]

    check()


@pytest.mark.parametrize(
    "body",
    [
        b"{}",  # no id, no parentId: was listed as its own child in get_tree
        b'{"type":"message","id":[],"parentId":"","timestamp":"x"}',  # unhashable id
        b'{"type":"message","id":[],"parentId":null,"timestamp":"x"}',
        b'{"type":"context_edit","id":[],"parentId":null,"timestamp":"x"}',  # unhashable id in projection
        b'{"type":"label","id":{"k":1},"parentId":null,"targetId":[],"label":"x","timestamp":"x"}',
        b'{"type":"message","id":null,"parentId":null,"timestamp":"x"}\n{"type":"message","id":"b","parentId":null}',
        b'{"type":"compaction","id":"c","parentId":"c","firstKeptEntryId":"c","summary":"s","timestamp":"x"}',
    ],
    ids=[
        "empty",
        "list-id",
        "list-id-null-parent",
        "list-id-context-edit",
        "dict-id-label",
        "null-id",
        "self-parent",
    ],
)
def test_fuzz_findings_stay_fixed(tmp_path: Path, body: bytes) -> None:
    path = write(tmp_path, HEADER_LINE + body + b"\n")
    manager = SessionManager.open(path)
    exercise_reads(manager)
    exercise_reads(SessionManager.in_memory("/project", entries=[json.loads(x) for x in body.split(b"\n")]))
    manager.append_message({"role": "user", "content": "after", "timestamp": 1})


@pytest.mark.parametrize("length", [1, 2, 3, 7, 50])
def test_parent_cycles_of_any_length_terminate(tmp_path: Path, length: int) -> None:
    body = [
        {
            "type": "message",
            "id": f"c{i}",
            "parentId": f"c{(i + 1) % length}",
            "timestamp": STAMP,
            "message": {"role": "user", "content": f"m{i}", "timestamp": i},
        }
        for i in range(length)
    ]
    tail = {
        "type": "message",
        "id": "tail",
        "parentId": "c0",
        "timestamp": STAMP,
        "message": {"role": "user", "content": "t", "timestamp": 9},
    }
    path = write(tmp_path, HEADER_LINE + b"".join(dump_line(e) + b"\n" for e in [*body, tail]))
    manager = SessionManager.open(path)
    exercise_reads(manager)
    branch = [e.id for e in manager.get_branch()]
    assert branch[-1] == "tail" and len(branch) == length + 1  # the walk stops before a repeat
    manager.append_message({"role": "user", "content": "more", "timestamp": 10})


# -- operations -----------------------------------------------------------------------------------


class Ref:
    """An argument that names the k-th id the session holds when the operation runs."""

    def __init__(self, k: int) -> None:
        self.k = k

    def __repr__(self) -> str:
        return f"Ref({self.k})"


def id_args(valid_types: bool) -> st.SearchStrategy[Any]:
    refs = st.integers(0, 40).map(Ref)
    return refs | st.text(max_size=8) if valid_types else refs | json_values


def op_strategy(valid_types: bool) -> st.SearchStrategy[tuple[str, tuple[Any, ...]]]:
    text = st.text(max_size=10) if valid_types else json_values
    target = id_args(valid_types)
    optional = st.just(pisession.UNSET) | json_values
    contents = st.text(max_size=8) | st.lists(blocks, max_size=2) | json_values
    return st.one_of(
        # a message without a string role is a ValueError (issue 21): well-typed means it has one
        st.tuples(
            st.just("append_message"),
            st.tuples(
                messages.filter(lambda m: isinstance(m["role"], str))
                if valid_types
                else messages | json_values
            ),
        ),
        st.tuples(st.just("append_thinking_level_change"), st.tuples(text)),
        st.tuples(st.just("append_model_change"), st.tuples(text, text)),
        st.tuples(st.just("append_usage"), st.tuples(text, text, text, json_values, st.none() | text)),
        st.tuples(
            st.just("append_compaction"),
            st.tuples(
                text,
                st.none() | target,
                st.integers(0, 10**6) if valid_types else json_values,
                optional,
                optional,
                optional,
            ),
        ),
        st.tuples(st.just("append_custom_entry"), st.tuples(text, optional)),
        st.tuples(
            st.just("append_custom_message_entry"),
            st.tuples(text, contents, st.just(pisession.UNSET) | st.booleans(), optional),
        ),
        st.tuples(st.just("append_session_info"), st.tuples(text)),
        st.tuples(
            st.just("append_context_edit"),
            st.tuples(target, st.none() | st.fixed_dictionaries({"content": contents}) | json_values),
        ),
        st.tuples(
            st.just("append_label_change"), st.tuples(target, st.just(pisession.UNSET) | st.none() | text)
        ),
        st.tuples(st.just("branch"), st.tuples(target)),
        st.tuples(st.just("reset_leaf"), st.just(())),
        st.tuples(
            st.just("branch_with_summary"), st.tuples(st.none() | target, text, optional, optional, optional)
        ),
        st.tuples(st.just("create_branched_session"), st.tuples(target)),
        st.tuples(st.just("refresh"), st.just(())),
        st.tuples(st.just("get_branch"), st.tuples(st.none() | target)),
        st.tuples(st.just("get_children"), st.tuples(target)),
        st.tuples(st.just("get_label"), st.tuples(target)),
    )


def apply(manager: SessionManager, name: str, args: tuple[Any, ...]) -> None:
    known = [e.id for e in manager.get_entries()]
    resolved = [(known[a.k % len(known)] if known else "missing") if isinstance(a, Ref) else a for a in args]
    getattr(manager, name)(*resolved)


def run_operations(
    folder: Path, operations: list[tuple[str, tuple[Any, ...]]], *also: type[BaseException]
) -> None:
    manager = SessionManager.create("/project", folder)
    manager.append_message({"role": "user", "content": "hi", "timestamp": 1})
    for name, args in operations:
        only_our_errors(lambda: apply(manager, name, args), *also)  # noqa: B023
        exercise_reads(manager)
        path = manager.get_session_file()
        if path and os.path.exists(path):
            # What the manager holds is what the file says.
            on_disk = SessionManager.open(path)
            assert [e.id for e in on_disk.get_entries()] == [e.id for e in manager.get_entries()]


def test_random_operations_with_well_typed_arguments(examples: int, scratch: Callable[[], Path]) -> None:
    @fuzz(examples, st.lists(op_strategy(valid_types=True), max_size=12))
    def check(operations: list[tuple[str, tuple[Any, ...]]]) -> None:
        run_operations(scratch(), operations)

    check()


def test_random_operations_with_arguments_of_any_json_type(
    examples: int, scratch: Callable[[], Path]
) -> None:
    # Arguments outside the annotated types may also raise TypeError / ValueError (the JSON
    # writer documents both), nothing else.
    @fuzz(examples, st.lists(op_strategy(valid_types=False), max_size=12))
    def check(operations: list[tuple[str, tuple[Any, ...]]]) -> None:
        run_operations(scratch(), operations, TypeError, ValueError)

    check()


@pytest.mark.parametrize("bad", [object(), {1, 2}, float("nan"), b"bytes", {"k": object()}, [1, [2, {3: 4}]]])
def test_unserialisable_arguments_fail_cleanly_and_write_nothing(tmp_path: Path, bad: Any) -> None:
    manager = SessionManager.create("/project", tmp_path)
    first = manager.append_message({"role": "user", "content": "hi", "timestamp": 1})
    path = manager.get_session_file()
    assert path is not None
    before = Path(path).read_bytes()
    for call in (
        lambda: manager.append_message({"role": "user", "content": bad, "timestamp": 1}),
        lambda: manager.append_custom_entry("x", bad),
        lambda: manager.append_custom_message_entry("x", bad, True),
    ):
        try:
            call()
        except (PisessionError, TypeError, ValueError):
            assert Path(path).read_bytes() == before, "a failed append left bytes behind"
            assert manager.get_leaf_id() == first and manager.get_entry_count() == 1
        else:
            before = Path(path).read_bytes()  # JSON-compatible after all: it was written
            first = manager.get_leaf_id() or ""
            manager.branch(first)


# -- depth --------------------------------------------------------------------------------------

DEEP = 100_000


def deep_chain(path: Path, reverse: bool = False, cycle: bool = False) -> None:
    lines = []
    for i in range(DEEP):
        parent = "null" if i == 0 and not cycle else f'"{(i - 1) % DEEP:08x}"'
        role = "user" if i % 2 == 0 else "assistant"
        lines.append(
            f'{{"type":"message","id":"{i:08x}","parentId":{parent},"timestamp":"{STAMP}",'
            f'"message":{{"role":"{role}","content":"m{i}","timestamp":{i}}}}}\n'
        )
    if reverse:
        lines.reverse()
    path.write_bytes(HEADER_LINE + "".join(lines).encode())


@pytest.fixture(scope="module")
def deep_files(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("deep")
    files = {}
    for shape in ("chain", "reversed", "cycle"):
        files[shape] = folder / f"{shape}.jsonl"
        deep_chain(files[shape], reverse=shape == "reversed", cycle=shape == "cycle")
    return files


def test_a_chain_of_100000_entries_needs_no_recursion(deep_files: dict[str, Path]) -> None:
    manager = SessionManager.open(deep_files["chain"])
    assert manager.get_entry_count() == DEEP
    tree = manager.get_tree()
    assert len(tree) == 1 and tree[0].entry.id == f"{0:08x}"
    branch = manager.get_branch()
    assert len(branch) == DEEP and branch[-1].id == manager.get_leaf_id()
    assert len(manager.build_session_context().messages) == DEEP
    assert len(manager.get_branch(f"{DEEP // 2:08x}")) == DEEP // 2 + 1
    manager.append_message({"role": "user", "content": "deeper", "timestamp": 1})
    assert len(manager.get_branch()) == DEEP + 1


def test_a_deep_tree_converts_to_wire_without_recursion(deep_files: dict[str, Path]) -> None:
    manager = SessionManager.open(deep_files["chain"])  # another test may have appended to it
    tree = manager.get_tree()
    assert tree == SessionManager.open(deep_files["chain"]).get_tree()  # compared without recursion
    wire = pisession.to_wire(tree)
    depth, node = 0, wire[0]
    while node["children"]:
        node, depth = node["children"][0], depth + 1
    assert depth == manager.get_entry_count() - 1 >= DEEP - 1


def test_a_deep_chain_written_children_first_needs_no_recursion(deep_files: dict[str, Path]) -> None:
    manager = SessionManager.open(deep_files["reversed"])
    tree = manager.get_tree()
    assert len(tree) == 1 and tree[0].entry.id == f"{0:08x}"
    assert [e.id for e in manager.get_branch()] == [f"{0:08x}"]  # the last line is the root
    deepest = f"{DEEP - 1:08x}"
    assert len(manager.get_branch(deepest)) == DEEP
    manager.branch(deepest)
    assert len(manager.build_session_context().messages) == DEEP


def test_a_cycle_of_100000_entries_terminates(deep_files: dict[str, Path]) -> None:
    manager = SessionManager.open(deep_files["cycle"])
    assert manager.get_entry_count() == DEEP
    assert manager.get_tree() == []  # every entry has a parent: none is a root, as in Pi
    assert len(manager.get_branch()) == DEEP  # once round the loop, then the walk stops
    manager.build_session_context()
    manager.build_session_projection()


# -- read-only operations leave files alone -----------------------------------------------------


def snapshot(folder: Path) -> dict[str, tuple[bytes, int, int]]:
    out = {}
    for path in sorted(folder.rglob("*")):
        if path.is_file() and not path.name.endswith(".lock"):
            info = path.stat()
            out[str(path)] = (path.read_bytes(), info.st_ino, info.st_mtime_ns)
    return out


def test_reading_never_writes(examples: int, scratch: Callable[[], Path]) -> None:
    non_session = st.lists(
        json_values.map(dump_line) | st.binary(max_size=30), min_size=1, max_size=6
    ).filter(lambda lines: any(line.strip() for line in lines))

    @fuzz(examples, non_session, st.lists(entries, max_size=8))
    def check(junk: list[bytes], body: list[dict[str, Any]]) -> None:
        folder = scratch()
        # A non-session file (first parsed line not a header) and a v3 session with final newline.
        first = next((json.loads(line) for line in junk if _parses(line)), None)
        junk_path = write(folder, b"\n".join(junk), "junk.jsonl")
        session_path = write(folder, HEADER_LINE + b"".join(dump_line(e) + b"\n" for e in body), "v3.jsonl")
        before = snapshot(folder)
        is_session = (
            isinstance(first, dict) and first.get("type") == "session" and isinstance(first.get("id"), str)
        )
        if not is_session:
            with pytest.raises(PisessionError):
                SessionManager.open(junk_path)
        assert load_entries_from_file(session_path)[0]["id"] == "fuzz"
        SessionManager.list("/project", str(folder))
        SessionManager.list_all(str(folder))
        SessionManager.find_by_id("/project", "fuzz", str(folder))
        SessionManager.open(session_path)
        after = snapshot(folder)
        if is_session:  # a junk file that happens to be a session may get its newline repaired
            before.pop(str(junk_path)), after.pop(str(junk_path))
        assert after == before

    check()


def _parses(line: bytes) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


def test_list_and_find_do_not_touch_a_session_missing_its_final_newline(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        HEADER_LINE
        + dump_line(
            {
                "type": "message",
                "id": "a",
                "parentId": None,
                "timestamp": STAMP,
                "message": {"role": "user", "content": "x", "timestamp": 1},
            }
        ),
    )
    before = snapshot(tmp_path)
    SessionManager.list("/project", str(tmp_path))
    SessionManager.list_all(str(tmp_path))
    assert SessionManager.find_by_id("/project", "fuzz", str(tmp_path)) == str(path)
    assert snapshot(tmp_path) == before
