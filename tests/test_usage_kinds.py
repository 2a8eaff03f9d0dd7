"""``usage_report(..., by_kind=True)`` and ``pisession usage --by-kind``: each model's share split
by the type of entry that spent it, checked against Pi's own breakdown of one kind at a time
(``tests/conformance/golden/usage_kinds.json``, ``generate_usage_kinds.py``)."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest
from test_usage import run_cli

from pisession.catalog import Catalog
from pisession.usage import UsageReport, usage_report

HERE = Path(__file__).parent / "conformance"
GOLDEN = json.loads((HERE / "golden" / "usage_kinds.json").read_text(encoding="utf-8"))
KINDS = ("message", "compaction", "branch_summary", "usage")


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    """A folder holding the session: a compaction, a branch summary, usage entries, messages."""
    out = tmp_path / "sessions"
    out.mkdir()
    source = HERE / "cases" / "usage" / GOLDEN["session"]
    shutil.copyfile(source, out / source.name)
    return out


def _report(folder: Path, catalog: bool | Catalog, by_kind: bool) -> UsageReport:
    return usage_report("session", session_dir=folder, timezone="UTC", catalog=catalog, by_kind=by_kind)


def test_each_kind_is_what_pi_counts_for_that_kind_alone(folder: Path, tmp_path: Path) -> None:
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        report = _report(folder, catalog, by_kind=True)
    (row,) = report.rows
    assert {model.kind for model in row.models} == set(KINDS)
    for kind in KINDS:
        got = {m.model_name: (m.cost, m.total_tokens) for m in row.models if m.kind == kind}
        pi = {item["key"]: (item["cost"], item["tokens"]) for item in GOLDEN["kinds"][kind]}
        assert got.keys() == pi.keys(), kind
        for name, (cost, tokens) in pi.items():
            assert math.isclose(got[name][0], cost, rel_tol=1e-12) and got[name][1] == tokens, (kind, name)
    # the summaries Pi files under one key, told apart
    tools = {m.kind: m.cost for m in row.models if m.model_name == "Tools/summaries"}
    assert set(tools) == {"message", "compaction", "branch_summary"}


def test_the_split_sums_to_the_unsplit_report_and_to_pi(folder: Path, tmp_path: Path) -> None:
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        whole = _report(folder, catalog, by_kind=False)
        split = _report(folder, catalog, by_kind=True)
    assert all(model.kind is None for row in whole.rows for model in row.models)
    sums: dict[str, list[float]] = {}
    for model in split.rows[0].models:
        figures = sums.setdefault(model.model_name, [0.0, 0])
        figures[0] += model.cost
        figures[1] += model.total_tokens
    unsplit = {m.model_name: (m.cost, m.total_tokens) for m in whole.rows[0].models}
    pi = {item["key"]: (item["cost"], item["tokens"]) for item in GOLDEN["all"]}
    assert sums.keys() == unsplit.keys() == pi.keys()
    for name, (cost, tokens) in pi.items():
        assert math.isclose(sums[name][0], cost, rel_tol=1e-12) and sums[name][1] == tokens
        assert math.isclose(unsplit[name][0], cost, rel_tol=1e-12) and unsplit[name][1] == tokens
    assert split.totals.total_tokens == whole.totals.total_tokens
    assert math.isclose(split.totals.total_cost, whole.totals.total_cost, rel_tol=1e-12)
    models = split.rows[0].models
    assert split.rows[0].models_used == tuple(dict.fromkeys(m.model_name for m in models))  # each once
    assert len(split.rows[0].models_used) < len(models)


@pytest.mark.parametrize("grouping", ["daily", "session", "project"])
def test_catalog_and_files_give_the_same_split(folder: Path, tmp_path: Path, grouping: str) -> None:
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        cold = usage_report(grouping, session_dir=folder, timezone="UTC", catalog=catalog, by_kind=True)
        warm = usage_report(grouping, session_dir=folder, timezone="UTC", catalog=catalog, by_kind=True)
    files = usage_report(grouping, session_dir=folder, timezone="UTC", catalog=False, by_kind=True)
    assert cold.to_wire() == warm.to_wire() == files.to_wire()
    assert files.catalog_error is None


def test_cli_by_kind(
    folder: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "120")
    code, out, err = run_cli(
        ["usage", "monthly", "--session-dir", str(folder), "--timezone", "UTC", "--by-kind", "--json"], capsys
    )
    assert code == 0, err
    items = json.loads(out)["monthly"][0]["modelBreakdowns"]
    assert {item["kind"] for item in items} == set(KINDS)
    compaction = [item for item in items if item["kind"] == "compaction"]
    assert [(i["modelName"], i["cost"]) for i in compaction] == [
        (g["key"], g["cost"]) for g in GOLDEN["kinds"]["compaction"]
    ]
    code, out, err = run_cli(
        ["usage", "monthly", "--session-dir", str(folder), "--timezone", "UTC", "--json"], capsys
    )
    assert all("kind" not in item for item in json.loads(out)["monthly"][0]["modelBreakdowns"])
    code, out, err = run_cli(
        ["usage", "monthly", "--session-dir", str(folder), "--timezone", "UTC", "--by-kind"], capsys
    )
    assert code == 0, err
    assert "  Tools/summaries [compaction]" in out and "  Tools/summaries [branch_summary]" in out
