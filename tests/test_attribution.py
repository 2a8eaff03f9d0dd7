"""Per-entry attribution (``pisession._attribution``) against Pi's ``getUsageCostBreakdown``.

Golden data: ``tests/conformance/golden/usage.json``, written by
``tests/conformance/generate_usage.py`` from the oracle's ``usage`` mode."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from pisession import read_session_entries
from pisession._attribution import TOOLS_KEY, UsageItem, copied_entry_ids, usage_items

HERE = Path(__file__).parent / "conformance"
CASES = HERE / "cases" / "usage"
GOLDEN = json.loads((HERE / "golden" / "usage.json").read_text(encoding="utf-8"))


def breakdown(items: list[UsageItem]) -> list[dict[str, Any]]:
    """Pi's rows from per-entry items: summed per key in file order, empty rows dropped."""
    totals: dict[str, list[float]] = {}
    for item in items:
        row = totals.setdefault(item.model_key, [0, 0, 0, 0, 0])
        row[0] += item.input
        row[1] += item.output
        row[2] += item.cache_read
        row[3] += item.cache_write
        row[4] += item.cost
    rows = [{"key": key, "cost": t[4], "tokens": t[0] + t[1] + t[2] + t[3]} for key, t in totals.items()]
    return [row for row in rows if row["cost"] > 0 or row["tokens"] > 0]


def as_pi_prints(rows: list[dict[str, Any]]) -> dict[str, tuple[Any, Any]]:
    # JSON.stringify writes NaN as null; Pi's order (by cost, ties unstable on NaN) is not compared.
    def number(x: Any) -> Any:
        return None if isinstance(x, float) and math.isnan(x) else x

    return {row["key"]: (number(row["cost"]), number(row["tokens"])) for row in rows}


AGREED = sorted(name for name, result in GOLDEN["files"].items() if result["ok"])


@pytest.mark.parametrize("name", AGREED)
def test_per_session_sums_equal_pis_breakdown(name: str) -> None:
    items = usage_items(read_session_entries(CASES / name))
    assert as_pi_prints(breakdown(items)) == as_pi_prints(GOLDEN["files"][name]["breakdown"])


def test_the_corpus_holds_every_kind_of_usage_pi_counts() -> None:
    keys = {row["key"] for name in GOLDEN["corpus"] for row in GOLDEN["files"][f"corpus/{name}"]["breakdown"]}
    assert TOOLS_KEY in keys
    assert "anthropic/claude-sonnet-4-5-20250929" in keys  # responseModel over model
    assert "openai/gpt-5" in keys  # usage entries and tool results


THROWING = sorted(name for name, result in GOLDEN["files"].items() if not result["ok"])


@pytest.mark.parametrize("name", THROWING)
def test_an_entry_pis_breakdown_throws_on_is_left_out(name: str) -> None:
    # Pi's /session fails on these; pisession counts the rest of the session.
    assert "TypeError" in GOLDEN["files"][name]["error"]
    items = usage_items(read_session_entries(CASES / name))
    assert [(item.entry_id, item.model_key) for item in items] == [("odd00000", "p/kept")]


def test_odd_values_read_as_javascript_adds_them() -> None:
    items = {item.entry_id: item for item in usage_items(read_session_entries(CASES / "odd_values.jsonl"))}
    assert math.isnan(items["odd00010"].cache_write)  # missing: NaN
    assert items["odd00011"].input == 0 and items["odd00011"].cost == 0.0  # null: 0
    assert (items["odd00012"].input, items["odd00012"].output, items["odd00012"].cost) == (1, 0, 1.0)
    assert items["odd00007"].model_key == "null/5"
    assert items["odd00008"].model_key == "p/a,,2.5"
    assert items["odd00009"].model_key == "p/[object Object]"
    assert items["odd00004"].model_key == "p/"  # "" is not nullish: responseModel wins
    assert items["odd00003"].model_key == "p/plain"  # null is
    assert "odd00000" not in items  # a user message's usage is not counted
    assert "odd00033" not in items  # nor a custom message's
    assert items["odd00001"].timestamp == "2026-11-20T10:00:01.000Z"


def test_text_where_a_number_belongs_reads_as_nan() -> None:
    # JavaScript would concatenate it into a string; documented as a difference.
    entry = {
        "type": "usage",
        "id": "u1",
        "timestamp": "t",
        "provider": "p",
        "model": "m",
        "usage": {"input": "12", "output": [1], "cacheRead": {}, "cacheWrite": 1, "cost": {"total": "0.5"}},
    }
    (item,) = usage_items([entry])
    assert all(math.isnan(x) for x in (item.input, item.output, item.cache_read, item.cost))
    assert item.cache_write == 1


def corpus_entries(name: str) -> list[dict[str, Any]]:
    return read_session_entries(CASES / "corpus" / name)


def test_a_forks_copies_are_the_entries_it_shares_with_its_parent() -> None:
    files = GOLDEN["corpus"]
    by_name = {Path(name).name: name for name in files}
    for name in files:
        entries = corpus_entries(name)
        parent = entries[0].get("parentSession")
        if not parent:
            continue
        parent_entries = corpus_entries(by_name[Path(parent).name])
        copies = copied_entry_ids(entries, parent_entries)
        own = [e for e in entries[1:] if e["id"] not in copies]
        assert copies and own  # every fork in the corpus copied some and spent some
        parent_keys = {(e.get("id"), e.get("timestamp")) for e in parent_entries}
        assert all((e["id"], e["timestamp"]) not in parent_keys for e in own)
        assert entries[0]["id"] not in copies  # the header is never a copy


def test_same_id_with_another_timestamp_is_not_a_copy() -> None:
    mine = [
        {"type": "message", "id": "a", "timestamp": "t1"},
        {"type": "message", "id": "b", "timestamp": "t2"},
    ]
    theirs = [
        {"type": "message", "id": "a", "timestamp": "t1"},
        {"type": "message", "id": "b", "timestamp": "t9"},
    ]
    assert copied_entry_ids(mine, theirs) == frozenset({"a"})
    assert (
        copied_entry_ids([{"type": "message", "timestamp": "t1"}], [{"type": "message", "timestamp": "t1"}])
        == frozenset()
    )


def test_items_are_immutable() -> None:
    (item,) = usage_items(
        [
            {
                "type": "usage",
                "id": "u",
                "timestamp": "t",
                "provider": "p",
                "model": "m",
                "usage": {"input": 1, "output": 2, "cacheRead": 3, "cacheWrite": 4, "cost": {"total": 0.5}},
            }
        ]
    )
    assert item.tokens == 10
    with pytest.raises(AttributeError):
        item.cost = 1.0  # type: ignore[misc]
