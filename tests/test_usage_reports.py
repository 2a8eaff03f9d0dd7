# ruff: noqa: F811  (the agent fixture, imported from test_usage)
"""What a ccusage user expects of ``pisession usage`` (issue 31, item 6): periods ending today,
a day x project grouping, merging a model's names, whole paths when piped, and clear errors for
``since`` after ``until`` and a misspelt time zone."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

import pytest
from test_usage import agent, run_cli  # noqa: F401  (the Pi-written corpus as an agent folder)

from pisession import UsageQueryError
from pisession.usage import _relative, usage_report


@pytest.mark.parametrize(
    ("text", "first"),
    [
        ("today", "2026-03-15"),
        ("1d", "2026-03-15"),
        ("7d", "2026-03-09"),
        ("2w", "2026-03-02"),
        ("this-week", "2026-03-09"),
        ("this-month", "2026-03-01"),
        ("1m", "2026-03-01"),
        ("3m", "2026-01-01"),
        ("14m", "2025-02-01"),
    ],
)
def test_periods_end_today(text: str, first: str) -> None:
    assert _relative(text, date(2026, 3, 15)) == first  # a Sunday


def test_a_period_reaches_the_corpus_and_a_date_still_reads(agent: Path) -> None:
    everything = usage_report("daily", timezone="UTC", catalog=False)
    assert usage_report("daily", since="99999d", timezone="UTC", catalog=False) == everything
    assert usage_report("daily", since="today", timezone="UTC", catalog=False).rows == ()
    with pytest.raises(UsageQueryError, match="period"):
        usage_report("daily", since="0d")


def test_since_after_until_is_an_error(agent: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(UsageQueryError, match=r"since \(2026-11-10\) is after until \(2026-11-01\)"):
        usage_report("daily", since="2026-11-10", until="2026-11-01")
    code, out, err = run_cli(["usage", "--since", "20261110", "--until", "20261101"], capsys)
    assert code == 2 and out == "" and "is after until" in err


@pytest.mark.parametrize(
    ("zone", "suggested"),
    [
        ("Europe/Berln", "Europe/Berlin"),
        ("europe/berlin", "Europe/Berlin"),
        ("Amrica/New_York", "America/New_York"),
    ],
)
def test_a_misspelt_zone_names_the_closest(
    zone: str, suggested: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(UsageQueryError, match=f"did you mean .*'{suggested}'"):
        usage_report("daily", timezone=zone)
    code, _, err = run_cli(["usage", "--timezone", zone], capsys)
    assert code == 2 and suggested in err


def test_day_by_project_splits_each_day_and_sums_to_it(
    agent: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    daily = usage_report("daily", timezone="UTC", catalog=False)
    split = usage_report("daily", timezone="UTC", catalog=False, by_project=True)
    assert len(split.rows) > len(daily.rows)
    assert all(row.project_path for row in split.rows)
    for day in daily.rows:
        parts = [row for row in split.rows if row.key == day.key]
        assert sum(row.total_cost for row in parts) == pytest.approx(day.total_cost)
        assert len({row.project_path for row in parts}) == len(parts)
    assert split.totals.total_cost == pytest.approx(daily.totals.total_cost)
    code, out, _ = run_cli(["usage", "daily", "--instances", "--json", "--timezone", "UTC"], capsys)
    assert code == 0
    assert {(r["date"], r["projectPath"]) for r in json.loads(out)["daily"]} == {
        (r.key, r.project_path) for r in split.rows
    }
    with pytest.raises(UsageQueryError, match="by_project"):
        usage_report("session", by_project=True)


def test_a_model_merged_into_another_is_one_row_with_the_same_total(
    agent: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = usage_report("monthly", timezone="UTC", catalog=False)
    names = sorted({m.model_name for row in report.rows for m in row.models})
    assert len(names) >= 2
    merge = {name: names[0] for name in names[1:]}
    merged = usage_report("monthly", timezone="UTC", catalog=False, merge_models=merge)
    assert {m.model_name for row in merged.rows for m in row.models} == {names[0]}
    assert merged.totals.total_cost == pytest.approx(report.totals.total_cost)
    argv = ["usage", "monthly", "--json", "--timezone", "UTC"]
    for source, target in merge.items():
        argv += ["--merge-model", f"{source}={target}"]
    code, out, _ = run_cli(argv, capsys)
    assert code == 0
    assert {m["modelName"] for row in json.loads(out)["monthly"] for m in row["modelBreakdowns"]} == {
        names[0]
    }
    code, _, err = run_cli(["usage", "--merge-model", "nothing"], capsys)
    assert code == 2 and "FROM=TO" in err


def test_piped_output_keeps_whole_project_paths(
    agent: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    long_cwd = "/work/" + "a-rather-long-folder-name/" * 6 + "proj"
    folder = agent / "sessions" / "--work-proj-b--"
    for path in folder.glob("*.jsonl"):
        path.write_text(path.read_text().replace('"cwd":"/work/proj-b"', f'"cwd":"{long_cwd}"'))
    monkeypatch.delenv("COLUMNS", raising=False)
    code, out, _ = run_cli(["usage", "project", "--timezone", "UTC"], capsys)  # capsys: not a terminal
    assert code == 0
    assert long_cwd in out and "…" not in out
    monkeypatch.setenv("COLUMNS", "80")  # asked for: the table fits it
    code, out, _ = run_cli(["usage", "project", "--timezone", "UTC"], capsys)
    assert long_cwd not in out and "…" in out


def test_the_ccusage_comparisons_pisession_figures(agent: Path) -> None:
    # docs/usage-and-cost.md, "Beside ccusage": the pisession column of the measured table
    report = usage_report("daily", timezone="UTC", catalog=False)
    assert round(report.totals.total_cost, 4) == 0.7418
    sessions = {row.session_id: row for row in usage_report("session", timezone="UTC", catalog=False).rows}
    assert round(sessions["01a1b15f-ad80-70c2-998f-3ab5b551e0cb"].total_cost, 4) == 0.0107
    assert round(sessions["01a1aaef-ba80-70c2-998f-3ab26ddc53b7"].total_cost, 4) == 0.0160
    assert {row.project_path for row in sessions.values()} == {"/work/proj-a", "/work/proj-b", "/work/proj-c"}
