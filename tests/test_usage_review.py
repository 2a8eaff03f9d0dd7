"""A hostile review of ``pisession usage``: inputs the first tests did not try."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from pisession.usage import usage_report

USAGE = {"input": 10, "output": 5, "cacheRead": 0, "cacheWrite": 0, "cost": {"total": 0.25}}


def entry(entry_id: str, stamp: str, cost: float = 0.25, parent: str | None = None) -> dict[str, Any]:
    return {
        "type": "usage",
        "id": entry_id,
        "parentId": parent,
        "timestamp": stamp,
        "kind": "k",
        "provider": "p",
        "model": "m",
        "usage": {**USAGE, "cost": {"total": cost}},
    }


def write_session(
    path: Path, stamp: str, entries: list[dict[str, Any]], parent: str | None = None, **extra: Any
) -> Path:
    header: dict[str, Any] = {
        "type": "session",
        "version": 3,
        "id": path.stem,
        "timestamp": stamp,
        "cwd": "/x",
    }
    if parent is not None:
        header["parentSession"] = parent
    header.update(extra)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e) + "\n" for e in [header, *entries]), encoding="utf-8")
    return path


def parent_and_fork(folder: Path, parent_path: str | None = None) -> tuple[Path, Path]:
    """A parent with one usage and a fork that copied it (parentSession as Pi's forkFrom writes
    it: the parent's path, absolute, symbolic links kept) and spent once more itself."""
    copied = entry("aaaa0001", "2026-11-20T10:00:00.000Z", 1.0)
    parent = write_session(
        folder / "2026-11-20T09-00-00-000Z_parent.jsonl", "2026-11-20T09:00:00.000Z", [copied]
    )
    fork = write_session(
        folder / "2026-11-21T09-00-00-000Z_fork.jsonl",
        "2026-11-21T09:00:00.000Z",
        [copied, entry("bbbb0002", "2026-11-21T10:00:00.000Z", 0.5, "aaaa0001")],
        parent=parent_path if parent_path is not None else str(parent),
    )
    return parent, fork


def session_costs(**kwargs: Any) -> dict[str, float]:
    report = usage_report("session", timezone="UTC", **kwargs)
    return {Path(row.key).name.split("_")[1]: row.total_cost for row in report.rows}


@pytest.mark.parametrize("catalog", [True, False], ids=["catalog", "files"])
def test_a_relative_session_dir_still_counts_a_forks_copies_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, catalog: bool
) -> None:
    parent_and_fork(tmp_path / "flat")
    monkeypatch.chdir(tmp_path)
    costs = session_costs(session_dir="flat", catalog=catalog)
    assert costs == {"parent.jsonl": 1.0, "fork.jsonl": 0.5}


@pytest.mark.parametrize("catalog", [True, False], ids=["catalog", "files"])
def test_a_session_dir_reached_through_a_symlink_counts_a_forks_copies_once(
    tmp_path: Path, catalog: bool
) -> None:
    parent_and_fork(tmp_path / "real")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert session_costs(session_dir=tmp_path / "link", catalog=catalog) == {
        "parent.jsonl": 1.0,
        "fork.jsonl": 0.5,
    }
    # and the other way round: Pi wrote the fork through the link, the report reads the real folder
    other = tmp_path / "other"
    parent_and_fork(other, str(tmp_path / "other-link" / "2026-11-20T09-00-00-000Z_parent.jsonl"))
    (tmp_path / "other-link").symlink_to(other)
    assert session_costs(session_dir=other, catalog=catalog) == {"parent.jsonl": 1.0, "fork.jsonl": 0.5}


@pytest.mark.parametrize("catalog", [True, False], ids=["catalog", "files"])
def test_token_counts_past_sqlites_integers_are_read_as_javascript_reads_them(
    tmp_path: Path, catalog: bool
) -> None:
    # the oracle's `usage` of this file: p/m0 1.1990383647911209e+21 tokens, p/m1
    # 9232379236109517000, p/m2 Infinity (10**400 is past the doubles), each $1
    header = {"type": "session", "version": 3, "id": "big", "timestamp": "2026-02-02T00:00:00.000Z"}
    lines = [json.dumps(header)]
    for i, value in enumerate([2**70, 2**63 - 1, 2**63 - 1, 2**64 + 1, 9007199254740993, 10**400]):
        lines.append(  # written by hand: json.dumps would not keep 10**400 an integer
            f'{{"type":"usage","id":"b{i}","parentId":null,"timestamp":"2026-01-01T00:00:00.000Z",'
            f'"kind":"k","provider":"p","model":"m{i % 3}","usage":{{"input":{value},"output":1,'
            '"cacheRead":0,"cacheWrite":0,"cost":{"total":0.5}}}'
        )
    folder = tmp_path / "flat"
    folder.mkdir()
    (folder / "big.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (row,) = usage_report("session", session_dir=folder, timezone="UTC", catalog=catalog).rows
    assert {m.model_name: (m.cost, m.total_tokens) for m in row.models} == {
        "p/m0": (1.0, 1.1990383647911209e21),
        "p/m1": (1.0, 9232379236109517000.0),
        "p/m2": (1.0, math.inf),
    }


@pytest.mark.parametrize(
    ("stamp", "iso"),
    [
        ("+010000-01-01T00:00:00.000Z", "+010000-01-01T00:00:00.000Z"),
        ("+275760-09-13T00:00:00.000Z", "+275760-09-13T00:00:00.000Z"),
        ("0000-03-01T12:00:00.000Z", "0000-03-01T12:00:00.000Z"),
        ("-000001-12-31T23:59:59.999Z", "-000001-12-31T23:59:59.999Z"),
        ("-271821-04-20T00:00:00.000Z", "-271821-04-20T00:00:00.000Z"),
    ],
)
def test_a_session_dated_outside_pythons_years_shows_its_time_as_javascript_writes_it(
    tmp_path: Path, stamp: str, iso: str
) -> None:
    folder = tmp_path / "flat"
    write_session(folder / "odd.jsonl", "2026-02-02T00:00:00.000Z", [entry("aaaa0001", stamp)])
    (row,) = usage_report("session", session_dir=folder, timezone="UTC").rows
    assert (row.first_activity, row.last_activity, row.total_cost) == (iso, iso, 0.25)


# new Date(ms).toISOString() and new Date(text).getTime() in Node, for years Python's datetime lacks
JS_DATES = {
    "0400-12-22T08:40:16.000Z": -49513648784000,
    "-000400-01-01T00:00:00.000Z": -74790000000000,
    "-000401-12-31T23:59:59.999Z": -74790000000001,
    "-001200-01-01T00:00:00.000Z": -100035561600000,
    "-271821-04-20T00:00:00.000Z": -8640000000000000,
    "+275760-09-13T00:00:00.000Z": 8640000000000000,
}


@pytest.mark.parametrize(("iso", "ms"), sorted(JS_DATES.items()))
def test_iso_times_of_any_javascript_year_read_and_write_as_javascript_does(iso: str, ms: int) -> None:
    from pisession._js import iso_from_ms, js_date_ms

    assert iso_from_ms(ms) == iso
    assert js_date_ms(iso) == ms


def test_minus_zero_is_not_a_year() -> None:
    from pisession._js import js_date_ms

    assert js_date_ms("-000000-01-01T00:00:00.000Z") is None  # Node: NaN


def test_json_never_holds_infinity(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pisession.cli.main import main

    folder = tmp_path / "flat"
    stamp = "2026-01-01T00:00:00.000Z"
    dear = [entry("aaaa0001", stamp, 1e308), entry("aaaa0002", stamp, 1e308)]
    write_session(folder / "inf.jsonl", stamp, dear)
    assert main(["usage", "session", "--json", "--timezone", "UTC", "--session-dir", str(folder)]) == 0

    def refuse(name: str) -> None:
        raise AssertionError(f"{name} is not JSON")

    wire = json.loads(capsys.readouterr().out, parse_constant=refuse)
    # JSON.stringify writes Infinity as null, as the report writes NaN
    assert wire["totals"]["totalCost"] is None
    assert wire["sessions"][0]["modelBreakdowns"][0]["cost"] is None


def test_the_table_shows_infinity_as_inf() -> None:
    from pisession.cli.usage import _dollars, _tokens

    assert (_tokens(math.inf), _dollars(math.inf), _dollars(-math.inf), _dollars(math.nan)) == (
        "Inf",
        "Inf",
        "-Inf",
        "NaN",
    )


@pytest.mark.parametrize("cost", [12_345.67, 999_999.49, 24_691_357.82, 5.2e12])
def test_a_dear_row_still_fits_80_columns(cost: float) -> None:
    from pisession.cli.usage import format_table
    from pisession.usage import ModelUsage, ReportRow, ReportTotals, UsageReport

    name = "openrouter/anthropic/claude-sonnet-4-5-20250929-thinking-extended-context"
    model = ModelUsage(name, 123_456_789, 98_765_432, 5, 1_234_567_890_123, cost)
    totals = ReportTotals(123_456_789, 98_765_432, 5, 1_234_567_890_123, cost)
    report = UsageReport("monthly", "UTC", (ReportRow("2026-02", totals, (model,)),), totals)
    lines = format_table(report, breakdown=True, columns=80)
    assert all(len(line) <= 80 for line in lines), lines
    assert lines[-1].startswith("Total")


@pytest.mark.parametrize("fork_stamp", ["2026-11-20T09:00:00.000Z", "not a time", None])
def test_a_fork_not_started_after_its_parent_still_counts_its_copies_once(
    tmp_path: Path, fork_stamp: str | None
) -> None:
    # the same millisecond as the parent (a frozen clock), or a header time that does not parse:
    # the order of the header times matters only to break a cycle of parentSession links
    folder = tmp_path / "flat"
    copied = entry("aaaa0001", "2026-11-20T10:00:00.000Z", 1.0)
    stamp = "2026-11-20T09:00:00.000Z"
    parent = write_session(folder / "2026-11-20T09-00-00-000Z_zparent.jsonl", stamp, [copied])
    fork = write_session(
        folder / "2026-11-20T09-00-00-000Z_afork.jsonl",
        "2026-11-20T09:00:00.000Z",
        [copied, entry("bbbb0002", "2026-11-21T10:00:00.000Z", 0.5, "aaaa0001")],
        parent=str(parent),
    )
    if fork_stamp != "2026-11-20T09:00:00.000Z":
        lines = fork.read_text(encoding="utf-8").split("\n")
        header = json.loads(lines[0])
        if fork_stamp is None:
            del header["timestamp"]
        else:
            header["timestamp"] = fork_stamp
        fork.write_text("\n".join([json.dumps(header), *lines[1:]]), encoding="utf-8")
    assert session_costs(session_dir=folder) == {"zparent.jsonl": 1.0, "afork.jsonl": 0.5}


@pytest.mark.parametrize("forked", [False, True], ids=["session", "fork"])
def test_sums_past_sqlites_integers_do_not_crash(tmp_path: Path, forked: bool) -> None:
    # 1,100 usages of 2**53 input tokens each: the oracle's `usage` gives p/m 9907919180215093000
    # tokens and $1,100 (JavaScript adds in doubles)
    folder = tmp_path / "flat"
    stamp = "2026-01-01T00:00:00.000Z"
    parent = write_session(folder / "p.jsonl", stamp, [])
    usages = [entry(f"u{i:05d}", stamp, 1.0) for i in range(1100)]
    for usage in usages:
        usage["usage"]["input"] = 2**53
        usage["usage"]["output"] = 1
        usage["usage"]["cacheRead"] = usage["usage"]["cacheWrite"] = 0
    fork_of = str(parent) if forked else None
    write_session(folder / "f.jsonl", "2026-01-02T00:00:00.000Z", usages, parent=fork_of)
    (row,) = usage_report("session", session_dir=folder, timezone="UTC").rows
    ((cost, tokens),) = [(m.cost, m.total_tokens) for m in row.models]
    assert (cost, tokens) == (1100.0, 9907919180215093000.0)
