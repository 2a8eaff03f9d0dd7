from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from pisession import TreeIndex


def entry(eid: str, parent: str | None, kind: str = "message", **fields: Any) -> dict[str, Any]:
    out: dict[str, Any] = {
        "type": kind,
        "id": eid,
        "parentId": parent,
        "timestamp": "2024-12-03T14:00:00.000Z",
    }
    if kind == "message":
        out["message"] = {"role": "user", "content": eid, "timestamp": 1}
    out.update(fields)
    return out


def chain(n: int) -> list[dict[str, Any]]:
    return [entry(f"n{i}", f"n{i - 1}" if i else None) for i in range(n)]


def ids_of(index: TreeIndex, positions: list[int]) -> list[str]:
    return [index.entry_at(p)["id"] for p in positions]


def test_path_is_root_first() -> None:
    index = TreeIndex.from_entries(chain(4))
    assert ids_of(index, index.path_positions(3)) == ["n0", "n1", "n2", "n3"]


def test_snapshot_never_changes_after_append() -> None:
    first = TreeIndex.from_entries(chain(3))
    second = first.append([entry("x", "n2"), entry("y", "x")])
    assert len(first) == 3 and len(second) == 5
    assert first.get("x") is None and second.get("x") is not None
    assert first.children_positions("n2") == []
    assert ids_of(second, second.children_positions("n2")) == ["x"]


def test_appending_to_an_old_snapshot_forks_storage() -> None:
    base = TreeIndex.from_entries(chain(2))
    left = base.append([entry("l", "n1")])
    right = base.append([entry("r", "n1")])
    assert left.get("r") is None and right.get("l") is None
    assert len(left) == len(right) == 3


def test_labels_resolve_per_snapshot() -> None:
    index = TreeIndex.from_entries(chain(2))
    labelled = index.append([entry("l1", "n1", "label", targetId="n0", label="start")])
    cleared = labelled.append([entry("l2", "l1", "label", targetId="n0")])
    assert index.label("n0") is None
    assert labelled.label("n0") == "start"
    assert labelled.label_timestamp("n0") == "2024-12-03T14:00:00.000Z"
    assert cleared.label("n0") is None
    assert labelled.label("n0") == "start"


def test_session_name_is_latest_session_info() -> None:
    index = TreeIndex.from_entries(
        [
            *chain(1),
            entry("s1", "n0", "session_info", name=" first "),
            entry("s2", "s1", "session_info", name="  "),
        ]
    )
    assert index.session_name() is None
    shorter = TreeIndex.from_entries(index.wire_entries()[:2])
    assert shorter.session_name() == "first"


def test_forward_reference_resolves_like_pi() -> None:
    index = TreeIndex.from_entries([entry("child", "parent"), entry("parent", None)])
    assert ids_of(index, index.path_positions(0)) == ["parent", "child"]


def test_forward_reference_arriving_later_does_not_change_old_snapshot() -> None:
    orphaned = TreeIndex.from_entries([entry("child", "parent")])
    resolved = orphaned.append([entry("parent", None)])
    assert ids_of(orphaned, orphaned.path_positions(0)) == ["child"]
    assert ids_of(resolved, resolved.path_positions(0)) == ["parent", "child"]


def test_duplicate_ids_resolve_to_the_latest_holder() -> None:
    index = TreeIndex.from_entries([entry("a", None), entry("b", "a"), entry("a", "b")])
    assert index.position("a") == 2
    assert not index.is_regular


def test_cycle_walk_stops_and_is_reported() -> None:
    index = TreeIndex.from_entries([entry("a", "b"), entry("b", "a")])
    assert ids_of(index, index.path_positions(0)) == ["b", "a"]
    assert sorted(index.cycles[0]) == ["a", "b"]


def test_self_parent_is_a_root_and_a_reported_cycle() -> None:
    index = TreeIndex.from_entries([entry("a", "a")])
    assert ids_of(index, index.path_positions(0)) == ["a"]
    roots, _ = index.tree_order()
    assert roots == [0]
    assert index.cycles == (("a",),)


def test_deep_chain_has_no_recursion_limit() -> None:
    index = TreeIndex.from_entries(chain(100_000))
    assert len(index.path_positions(99_999)) == 100_000
    assert index.latest_compaction_on_path(99_999) is None


def test_children_sorted_by_timestamp_in_tree() -> None:
    late = entry("late", "root") | {"timestamp": "2024-12-03T15:00:00.000Z"}
    early = entry("early", "root") | {"timestamp": "2024-12-03T14:30:00.000Z"}
    index = TreeIndex.from_entries([entry("root", None), late, early])
    _, children = index.tree_order()
    assert ids_of(index, children[0]) == ["early", "late"]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(-1, 30)), min_size=1, max_size=40))
def test_incremental_append_equals_bulk_build(pairs: list[tuple[int, int]]) -> None:
    entries = [entry(f"i{i}", None if p < 0 else f"i{p}") for i, p in pairs]
    bulk = TreeIndex.from_entries(entries)
    step = TreeIndex()
    snapshots = []
    for e in entries:
        step = step.append([e])
        snapshots.append(step)
    for pos in range(len(entries)):
        assert step.path_positions(pos) == bulk.path_positions(pos)
        assert step.parent_position(pos) == bulk.parent_position(pos)
    # every intermediate snapshot still sees exactly its prefix
    for n, snap in enumerate(snapshots, start=1):
        prefix = TreeIndex.from_entries(entries[:n])
        for pos in range(n):
            assert snap.path_positions(pos) == prefix.path_positions(pos)


def test_index_built_while_lines_are_scanned_equals_one_built_from_entries() -> None:
    # Opening scans each line as the index takes it in, and an index that turns irregular
    # midway (here a repeated id) is rebuilt from what it took plus the rest.
    import json

    from pisession._store import ScannedLines

    entries = [
        *chain(5),
        entry("odd", "n4", kind=None),  # type: ignore[arg-type]  # a null type is an entry
        entry("n2", "n4"),  # repeats an id: the store stops being regular here
        entry("tail", "n2"),
    ]
    lines = [json.dumps(e).encode() for e in entries]
    lines.insert(3, b'{"type": "message", "id": "broken"')  # malformed: left out, as Pi does
    scanned = ScannedLines(lines)
    assert [r[0].id for r in scanned] == [r[0].id for r in scanned]  # scanned anew each time
    built = TreeIndex.from_records(scanned)
    expected = TreeIndex.from_entries(entries)
    assert len(built) == len(expected) == 8
    assert not built.is_regular
    assert [built.id_at(p) for p in range(8)] == [e["id"] for e in entries]
    assert built.type_at(5) is None
    for pos in range(8):
        assert built.path_positions(pos) == expected.path_positions(pos)
        assert built.entry_at(pos) == expected.entry_at(pos)
    assert built.tree_order() == expected.tree_order()


def test_a_second_child_arriving_leaves_older_snapshots_with_one() -> None:
    # A parent's single child is stored as its position, a list once a second one arrives;
    # the snapshot from before the second sees one child, in every view of the children.
    one = TreeIndex.from_entries(chain(3))
    two = one.append([entry("side", "n1", timestamp="2024-12-03T14:00:01.000Z")])
    three = two.append([entry("late", "n1", timestamp="2024-12-03T14:00:02.000Z")])
    for index, kids in ((one, ["n2"]), (two, ["n2", "side"]), (three, ["n2", "side", "late"])):
        assert ids_of(index, index.children_positions("n1")) == kids
        _, children = index.tree_order()
        assert ids_of(index, children[1]) == kids
        parts = index.regular_tree_parts()
        assert parts is not None
        assert ids_of(index, index.sort_children(_as_list(parts[2]["n1"]))) == kids
    assert one.children_positions("n2") == []
    assert ids_of(three, three.children_positions("n0")) == ["n1"]


def _as_list(found: int | list[int]) -> list[int]:
    return [found] if isinstance(found, int) else found
