"""``pisession.usage``: reports over a Pi-written corpus, checked against what the oracle reads.

The expected figures come from ``tests/conformance/golden/usage.json`` (``generate_usage.py``):
the oracle's ``usage`` breakdown of each session's own entries of each day (copies from the
parent session left out), summed here per day, week, month, session and project."""

from __future__ import annotations

import io as io_module
import json
import math
import os
import shutil
import subprocess
import sys
import time
from collections import defaultdict
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import pytest

from pisession import SessionManager, UsageQueryError
from pisession.catalog import Catalog
from pisession.usage import MAX_FILE_SIZE, UsageReport, usage_report

HERE = Path(__file__).parent / "conformance"
CASES = HERE / "cases" / "usage"
GOLDEN = json.loads((HERE / "golden" / "usage.json").read_text(encoding="utf-8"))
ZONES = sorted(GOLDEN["pieces"])
Figures = dict[str, dict[str, tuple[float, float]]]  # row key -> model -> (cost, tokens)


@pytest.fixture
def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The corpus laid out as Pi's agent folder, its parentSession paths pointing at the copy."""
    root = tmp_path / "agent"
    for name in GOLDEN["corpus"]:
        source = CASES / "corpus" / name
        target = root / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(source.read_text(encoding="utf-8").replace("$CORPUS", str(root)), encoding="utf-8")
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(root))
    return root


def cwd_of(name: str) -> str:
    folder = Path(name).parent.name  # --work-proj-a--
    return "/" + folder.strip("-").replace("-", "/", 1)


def expected(zone: str, key_of: Any, files: list[str] | None = None) -> Figures:
    sums: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(lambda: [0.0, 0.0]))
    for name, days in GOLDEN["pieces"][zone].items():
        if files is not None and name not in files:
            continue
        for day, rows in days.items():
            for row in rows:
                cell = sums[key_of(name, day)][row["key"]]
                cell[0] += row["cost"]
                cell[1] += row["tokens"]
    out: Figures = {}
    for key, models in sums.items():
        kept = {m: (c, t) for m, (c, t) in models.items() if c > 0 or t > 0}
        if kept:
            out[key] = kept
    return out


def figures(report: UsageReport, agent: Path | None = None) -> Figures:
    out: Figures = {}
    for row in report.rows:
        key = row.key if agent is None else str(Path(row.key).relative_to(agent))
        out[key] = {m.model_name: (m.cost, float(m.total_tokens)) for m in row.models}
    return out


def assert_same(actual: Figures, wanted: Figures) -> None:
    assert actual.keys() == wanted.keys()
    for key, models in wanted.items():
        assert actual[key].keys() == models.keys(), key
        for model, (cost, tokens) in models.items():
            got_cost, got_tokens = actual[key][model]
            assert got_tokens == tokens, (key, model)
            assert math.isclose(got_cost, cost, rel_tol=1e-12, abs_tol=1e-15), (key, model, got_cost, cost)


def monday(day: str) -> str:
    moment = date.fromisoformat(day)
    return (moment - timedelta(days=moment.weekday())).isoformat()


KEYS = {
    "daily": lambda name, day: day,
    "weekly": lambda name, day: monday(day),
    "monthly": lambda name, day: day[:7],
    "project": lambda name, day: cwd_of(name),
}


@pytest.mark.parametrize("catalog", [True, False], ids=["catalog", "files"])
@pytest.mark.parametrize("zone", ZONES)
@pytest.mark.parametrize("group_by", ["daily", "weekly", "monthly", "project"])
def test_figures_equal_pis_attribution_with_copies_counted_once(
    agent: Path, zone: str, group_by: Any, catalog: bool
) -> None:
    report = usage_report(group_by, timezone=zone, catalog=catalog)
    assert_same(figures(report), expected(zone, KEYS[group_by]))
    assert not report.skipped


@pytest.mark.parametrize("catalog", [True, False], ids=["catalog", "files"])
def test_session_rows_show_only_what_was_spent_in_each_session(agent: Path, catalog: bool) -> None:
    report = usage_report("session", timezone="UTC", catalog=catalog)
    assert_same(figures(report, agent), expected("UTC", lambda name, day: name))
    by_file = {Path(row.key).name: row for row in report.rows}
    for name in GOLDEN["corpus"]:
        header = json.loads((agent / name).read_text(encoding="utf-8").split("\n")[0])
        row = by_file.get(Path(name).name)
        if row is None:
            continue
        assert (row.session_id, row.project_path, row.session_file) == (
            header["id"],
            header["cwd"],
            str(agent / name),
        )
        assert row.first_activity is not None and row.last_activity is not None
        assert row.first_activity <= row.last_activity


def test_a_fork_counts_less_than_pi_shows_for_its_whole_file(agent: Path) -> None:
    # Pi's /session in a fork shows the parent's spend too; the report files that under the parent.
    report = usage_report("session", timezone="UTC")
    for row in report.rows:
        name = str(Path(row.key).relative_to(agent))
        whole = sum(r["cost"] for r in GOLDEN["files"][f"corpus/{name}"]["breakdown"])
        header = json.loads(Path(row.key).read_text(encoding="utf-8").split("\n")[0])
        if "parentSession" in header:
            assert row.total_cost < whole - 1e-9
        else:
            assert math.isclose(row.total_cost, whole, rel_tol=1e-12)


def test_totals_are_the_sum_of_the_rows(agent: Path) -> None:
    report = usage_report("daily", timezone="Asia/Tokyo")
    assert math.isclose(report.totals.total_cost, sum(row.total_cost for row in report.rows), rel_tol=1e-12)
    assert report.totals.total_tokens == sum(row.total_tokens for row in report.rows)
    wire = report.to_wire()
    assert set(wire) == {"daily", "totals"}
    assert set(wire["totals"]) == {
        "inputTokens",
        "outputTokens",
        "cacheCreationTokens",
        "cacheReadTokens",
        "totalTokens",
        "totalCost",
    }
    row = wire["daily"][0]
    assert set(row) == {"date", *wire["totals"], "modelsUsed", "modelBreakdowns"}
    assert set(row["modelBreakdowns"][0]) == {
        "modelName",
        "inputTokens",
        "outputTokens",
        "cacheCreationTokens",
        "cacheReadTokens",
        "cost",
    }
    assert (
        row["totalTokens"]
        == row["inputTokens"] + row["outputTokens"] + row["cacheCreationTokens"] + row["cacheReadTokens"]
    )


def test_wire_keys_per_grouping(agent: Path) -> None:
    assert "week" in usage_report("weekly", timezone="UTC").to_wire()["weekly"][0]
    assert "month" in usage_report("monthly", timezone="UTC").to_wire()["monthly"][0]
    assert "projectPath" in usage_report("project", timezone="UTC").to_wire()["projects"][0]
    session = usage_report("session", timezone="UTC").to_wire()["sessions"][0]
    assert {"sessionId", "sessionFile", "projectPath", "firstActivity", "lastActivity"} <= set(session)


def test_cwd_narrows_to_one_project(agent: Path) -> None:
    files = [name for name in GOLDEN["corpus"] if cwd_of(name) == "/work/proj-c"]
    report = usage_report("daily", timezone="UTC", cwd="/work/proj-c")
    assert_same(figures(report), expected("UTC", KEYS["daily"], files))
    assert report.rows  # the fork of a fork spent something of its own


def test_since_and_until_are_inclusive_dates(agent: Path) -> None:
    every = expected("UTC", KEYS["daily"])
    report = usage_report("daily", timezone="UTC", since="2026-11-03", until=date(2026, 11, 5))
    assert_same(figures(report), {d: m for d, m in every.items() if "2026-11-03" <= d <= "2026-11-05"})
    assert usage_report("daily", timezone="UTC", since="20261103", until="20261105").rows == report.rows


def test_the_day_follows_the_time_zone(agent: Path) -> None:
    utc = {row.key for row in usage_report("daily", timezone="UTC").rows}
    tokyo = {row.key for row in usage_report("daily", timezone="Asia/Tokyo").rows}
    assert utc != tokyo
    assert "2026-11-02" in utc and "2026-11-02" not in tokyo  # 22:50 UTC is the next morning in Tokyo


def test_the_default_zone_is_the_local_one(agent: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if not hasattr(__import__("time"), "tzset"):
        pytest.skip("time.tzset is POSIX only")
    import time

    monkeypatch.setenv("TZ", "Asia/Tokyo")
    time.tzset()
    try:
        local = usage_report("daily")
    finally:
        monkeypatch.undo()
        time.tzset()
    assert local.timezone == "local"
    assert_same(figures(local), expected("Asia/Tokyo", KEYS["daily"]))


@pytest.mark.parametrize(
    "kwargs",
    [
        {"group_by": "yearly"},
        {"group_by": "daily", "since": "2026-13-01"},
        {"group_by": "daily", "until": "yesterday"},
        {"group_by": "daily", "timezone": "Mars/Olympus_Mons"},
        {"group_by": "daily", "timezone": "../../etc/passwd"},
    ],
)
def test_bad_arguments_raise_a_typed_error(agent: Path, kwargs: dict[str, Any]) -> None:
    with pytest.raises(UsageQueryError):
        usage_report(**kwargs)


def test_appended_lines_appear_on_the_next_call(agent: Path, tmp_path: Path) -> None:
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        before = usage_report("daily", timezone="UTC", catalog=catalog)
        name = next(n for n in GOLDEN["corpus"] if "proj-b" in n)
        manager = SessionManager.open(str(agent / name))
        manager.append_usage(
            "subagent",
            "openai",
            "gpt-5",
            {
                "input": 1000,
                "output": 10,
                "cacheRead": 0,
                "cacheWrite": 0,
                "totalTokens": 1010,
                "cost": {"input": 0.5, "output": 0.25, "cacheRead": 0, "cacheWrite": 0, "total": 0.75},
            },
        )
        after = usage_report("daily", timezone="UTC", catalog=catalog)
        assert catalog.last_report.appended == 1 and catalog.last_report.read == 0  # only the new line read
    assert math.isclose(after.totals.total_cost, before.totals.total_cost + 0.75, rel_tol=1e-12)
    assert after.totals.total_tokens == before.totals.total_tokens + 1010


def test_a_replaced_file_is_read_again_and_a_deleted_one_leaves(agent: Path, tmp_path: Path) -> None:
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        usage_report("session", timezone="UTC", catalog=catalog)
        name = next(n for n in GOLDEN["corpus"] if "2026-11-10" in n)
        path = agent / name
        lines = path.read_text(encoding="utf-8").split("\n")
        replacement = path.with_suffix(".tmp")
        replacement.write_text("\n".join(lines[:3]) + "\n", encoding="utf-8")  # header, user, assistant
        os.replace(replacement, path)
        shorter = {Path(r.key).name: r for r in usage_report("session", timezone="UTC", catalog=catalog).rows}
        (first_assistant,) = [json.loads(lines[2])]
        assert math.isclose(
            shorter[path.name].total_cost, first_assistant["message"]["usage"]["cost"]["total"]
        )
        path.unlink()
        gone = usage_report("session", timezone="UTC", catalog=catalog)
        assert path.name not in {Path(r.key).name for r in gone.rows}


def test_a_fork_whose_parent_is_gone_counts_its_copies(agent: Path) -> None:
    files = GOLDEN["corpus"]
    fork = next(n for n in files if "proj-c" in n)
    parent = json.loads((agent / fork).read_text(encoding="utf-8").split("\n")[0])["parentSession"]
    os.unlink(parent)
    rows = {Path(r.key).name: r for r in usage_report("session", timezone="UTC").rows}
    whole = sum(r["cost"] for r in GOLDEN["files"][f"corpus/{fork}"]["breakdown"])
    # the parent's own spend is now only on record here, and the grandparent's copies too
    assert math.isclose(rows[Path(fork).name].total_cost, whole, rel_tol=1e-12)


def test_parent_cycles_count_every_entry_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "flat"
    folder.mkdir()
    entry = {
        "type": "usage",
        "id": "u1",
        "parentId": None,
        "timestamp": "2026-11-20T10:00:00.000Z",
        "kind": "k",
        "provider": "p",
        "model": "m",
        "usage": {"input": 1, "output": 1, "cacheRead": 0, "cacheWrite": 0, "cost": {"total": 1.0}},
    }
    a, b = folder / "a.jsonl", folder / "b.jsonl"
    for path, other, stamp in ((a, b, "2026-11-20T09:00:00.000Z"), (b, a, "2026-11-20T09:30:00.000Z")):
        header = {
            "type": "session",
            "version": 3,
            "id": path.stem,
            "timestamp": stamp,
            "cwd": "/x",
            "parentSession": str(other),
        }
        path.write_text(json.dumps(header) + "\n" + json.dumps(entry) + "\n", encoding="utf-8")
    report = usage_report("session", session_dir=folder, timezone="UTC")
    assert [(Path(r.key).name, r.total_cost) for r in report.rows] == [("a.jsonl", 1.0)]  # the earlier one


def test_unreadable_files_are_named_and_the_rest_counts(agent: Path) -> None:
    project = agent / "sessions" / "--work-proj-b--"
    shutil.copy(CASES / "damaged.jsonl", project / "2026-11-12T00-00-00-000Z_damaged.jsonl")
    (project / "notes.jsonl").write_text('{"hello": "world"}\n', encoding="utf-8")
    (project / "empty.jsonl").write_bytes(b"")
    with open(project / "huge.jsonl", "wb") as handle:
        handle.truncate(MAX_FILE_SIZE + 1)  # sparse: nothing is written, nothing is read
    report = usage_report("session", timezone="UTC")
    skipped = {Path(s.path).name: s.reason for s in report.skipped}
    assert set(skipped) == {
        "2026-11-12T00-00-00-000Z_damaged.jsonl",
        "notes.jsonl",
        "empty.jsonl",
        "huge.jsonl",
    }
    assert "damaged line" in skipped["2026-11-12T00-00-00-000Z_damaged.jsonl"]
    assert "larger than" in skipped["huge.jsonl"]
    damaged = next(r for r in report.rows if r.key.endswith("_damaged.jsonl"))
    (pi_row,) = GOLDEN["files"]["damaged.jsonl"]["breakdown"]
    assert {m.model_name: m.cost for m in damaged.models} == {pi_row["key"]: pi_row["cost"]}


def test_a_catalog_that_cannot_be_used_falls_back_to_the_files(
    agent: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = tmp_path / "broken.sqlite3"
    broken.write_bytes(b"this is not a database" * 100)
    monkeypatch.setenv("PISESSION_CATALOG", str(broken))
    report = usage_report("daily", timezone="UTC")
    assert_same(figures(report), expected("UTC", KEYS["daily"]))
    assert report.catalog_error is not None


REPORT_SCRIPT = """
import json, sys
from pisession.usage import usage_report
r = usage_report("session", timezone="UTC")
print(json.dumps([[row.key, row.total_cost, row.total_tokens] for row in r.rows]))
"""


def test_several_processes_reporting_at_once_agree(agent: Path, tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PISESSION_CATALOG": str(tmp_path / "shared.sqlite3"),
        "PI_CODING_AGENT_DIR": str(agent),
    }
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", REPORT_SCRIPT], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        for _ in range(4)
    ]
    outputs = []
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
        outputs.append(json.loads(out))
    wanted = expected("UTC", lambda name, day: name)
    for rows in outputs:
        got = {str(Path(key).relative_to(agent)): cost for key, cost, _ in rows}
        assert got.keys() == wanted.keys()
        for name, models in wanted.items():
            assert math.isclose(got[name], sum(c for c, _ in models.values()), rel_tol=1e-12)


# ----------------------------------------------------------------------------------- command line


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    from pisession.cli import main

    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_table_fits_80_columns_with_a_totals_row(
    agent: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "80")
    for grouping in ("daily", "weekly", "monthly", "session", "project"):
        code, out, err = run_cli(["usage", grouping, "--timezone", "UTC", "--breakdown"], capsys)
        assert code == 0 and err == ""
        lines = out.splitlines()
        assert all(len(line) <= 80 for line in lines), grouping
        report = usage_report(grouping, timezone="UTC")  # type: ignore[arg-type]
        assert lines[-1].startswith("Total") and lines[-1].endswith(f"${report.totals.total_cost:,.2f}")
        for model in {m.model_name for row in report.rows for m in row.models}:
            assert any(line.strip().startswith(model) for line in lines), model


def test_cli_json_is_the_reports_wire_form(agent: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run_cli(
        ["usage", "session", "--json", "--timezone", "Asia/Tokyo", "--cwd", "/work/proj-a"], capsys
    )
    assert code == 0
    wanted = usage_report("session", timezone="Asia/Tokyo", cwd="/work/proj-a").to_wire()
    assert json.loads(out) == json.loads(json.dumps(wanted))


@pytest.mark.parametrize(
    "argv",
    [["--since", "2026-02-30"], ["--until", "soon"], ["--timezone", "Nowhere/Special"], ["yearly"]],
)
def test_cli_bad_dates_and_zones_exit_2_with_a_message(
    agent: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    code, out, err = run_cli(["usage", *argv], capsys)
    assert code == 2 and out == ""
    assert err.startswith(("pisession: error: ", "usage: ")) and "Traceback" not in err


def test_cli_names_what_it_could_not_read_and_exits_0(
    agent: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = agent / "sessions" / "--work-proj-b--"
    (project / "notes.jsonl").write_text("not json at all\n", encoding="utf-8")
    (project / "empty.jsonl").write_bytes(b"")
    code, out, err = run_cli(["usage", "--timezone", "UTC"], capsys)
    assert code == 0 and "Total" in out
    assert "notes.jsonl" in err and "empty.jsonl" in err


def test_cli_session_dir_reads_one_folder(agent: Path, capsys: pytest.CaptureFixture[str]) -> None:
    folder = agent / "sessions" / "--work-proj-b--"
    code, out, _ = run_cli(
        ["usage", "project", "--json", "--timezone", "UTC", "--session-dir", str(folder)], capsys
    )
    assert code == 0
    assert [row["projectPath"] for row in json.loads(out)["projects"]] == ["/work/proj-b"]


def test_the_csv_example_turns_the_json_into_one_line_per_model(agent: Path, tmp_path: Path) -> None:
    import csv
    import io

    report = usage_report("daily", timezone="UTC")
    (tmp_path / "report.json").write_text(json.dumps(report.to_wire()), encoding="utf-8")
    example = Path(__file__).parents[1] / "docs" / "examples" / "usage_csv.py"
    result = subprocess.run(
        [sys.executable, str(example), str(tmp_path / "report.json")],
        capture_output=True,
        text=True,
        check=True,
    )
    table = list(csv.reader(io.StringIO(result.stdout)))
    assert table[0] == [
        "date",
        "model",
        "inputTokens",
        "outputTokens",
        "cacheCreationTokens",
        "cacheReadTokens",
        "cost",
    ]
    assert len(table) - 1 == sum(len(row.models) for row in report.rows)
    assert math.isclose(sum(float(line[-1]) for line in table[1:]), report.totals.total_cost, rel_tol=1e-12)
    piped = subprocess.run(
        [sys.executable, str(example)],
        input=json.dumps(report.to_wire()),
        capture_output=True,
        text=True,
        check=True,
    )
    assert piped.stdout == result.stdout


@pytest.mark.parametrize("name", sorted(GOLDEN["files"]))
def test_the_catalogs_fast_read_gives_the_exact_reads_rows(name: str) -> None:
    # usage_rows decodes only the fields it needs (msgspec) and reads Pi's timestamps directly;
    # the exact path is the full JavaScript-exact parse and Date.
    from pisession import read_session_entries
    from pisession._attribution import usage_item
    from pisession._js import js_date_ms
    from pisession.catalog._usage import kind_key, usage_rows

    data = (CASES / name).read_bytes()
    rows, _ = usage_rows(data, None)
    header = read_session_entries(CASES / name)[0]
    exact = []
    for entry in read_session_entries(CASES / name):
        item = usage_item(entry) if isinstance(entry, dict) else None
        if item is None:
            continue
        ms = js_date_ms(item.timestamp) if item.timestamp else None
        ms = ms if ms is not None else (js_date_ms(header["timestamp"]) or 0)
        numbers = [
            None if v != v else v
            for v in (item.input, item.output, item.cache_read, item.cache_write, item.cost)
        ]
        exact.append((item.entry_id, item.timestamp, ms, kind_key(entry["type"], item.model_key), *numbers))
    assert rows == exact
    assert [tuple(map(type, r)) for r in rows] == [tuple(map(type, r)) for r in exact]  # ints stay ints


def test_odd_timestamps_are_read_as_javascript_reads_them() -> None:
    from pisession._js import js_date_ms
    from pisession.catalog._usage import timestamp_ms

    for stamp in (
        "2026-11-03T00:20:00.008Z",
        "2026-02-30T10:00:00.000Z",
        "2026-11-03T24:00:00.000Z",
        "2026-11-03T10:00:00Z",
        "2026-11-03T10:00:00.000+02:00",
        "2026-11-03",
        "yesterday",
        "\uff12\uff10\uff12\uff16-11-03T00:20:00.008Z",  # full-width digits: \d in a bytes pattern is ASCII
    ):
        assert timestamp_ms(stamp) == js_date_ms(stamp), stamp


def test_a_last_line_without_its_newline_counts_once(agent: Path, tmp_path: Path) -> None:
    # Pi reads a final line that lacks its "\n"; the catalog keeps it aside until it is finished.
    name = next(n for n in GOLDEN["corpus"] if "proj-b" in n)
    path = agent / name
    line = json.dumps(
        {
            "type": "usage",
            "id": "tail0001",
            "parentId": None,
            "timestamp": "2026-11-03T09:00:00.000Z",
            "kind": "k",
            "provider": "p",
            "model": "unfinished",
            "usage": {"input": 5, "output": 5, "cacheRead": 0, "cacheWrite": 0, "cost": {"total": 0.5}},
        }
    )
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        before = usage_report("daily", timezone="UTC", catalog=catalog).totals.total_cost
        with open(path, "a", encoding="utf-8") as handle:
            handle.write(line)
        unfinished = usage_report("daily", timezone="UTC", catalog=catalog)
        with open(path, "a", encoding="utf-8") as handle:
            handle.write("\n")
        finished = usage_report("daily", timezone="UTC", catalog=catalog)
    assert math.isclose(unfinished.totals.total_cost, before + 0.5, rel_tol=1e-12)
    assert math.isclose(finished.totals.total_cost, before + 0.5, rel_tol=1e-12)
    assert usage_report("daily", timezone="UTC", catalog=False).totals == finished.totals


def test_a_file_truncated_in_place_is_read_again(agent: Path, tmp_path: Path) -> None:
    name = next(n for n in GOLDEN["corpus"] if "2026-11-10" in n)
    path = agent / name
    with Catalog(tmp_path / "catalog.sqlite3") as catalog:
        usage_report("session", timezone="UTC", catalog=catalog)
        lines = path.read_bytes().split(b"\n")
        with open(path, "r+b") as handle:  # same inode, shorter
            handle.truncate(len(b"\n".join(lines[:3])) + 1)
        row = next(
            r for r in usage_report("session", timezone="UTC", catalog=catalog).rows if r.key == str(path)
        )
    assert math.isclose(
        row.total_cost, json.loads(lines[2])["message"]["usage"]["cost"]["total"], rel_tol=1e-12
    )


class FakeTerminal(io_module.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_shows_only_on_a_terminal_after_a_second(monkeypatch: pytest.MonkeyPatch) -> None:
    from pisession.cli import usage as usage_cli

    assert usage_cli._progress(io_module.StringIO()) is None  # not a terminal: never
    clock = [100.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    terminal = FakeTerminal()
    report = usage_cli._progress(terminal)
    assert report is not None
    report(10, 1000)
    assert terminal.getvalue() == ""  # a warm or quick build says nothing
    clock[0] += 1.5
    report(500, 1000)
    assert "500/1000" in terminal.getvalue()
    report(1000, 1000)
    assert terminal.getvalue().endswith("\r\033[K")  # the line is cleared when done


def test_without_time_zone_data_a_named_zone_says_what_to_install(
    agent: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import zoneinfo

    def missing(key: str) -> Any:
        raise zoneinfo.ZoneInfoNotFoundError(key)

    monkeypatch.setattr(zoneinfo, "ZoneInfo", missing)
    monkeypatch.setattr(zoneinfo, "available_timezones", lambda: set())
    with pytest.raises(UsageQueryError, match="tzdata"):
        usage_report("daily", timezone="Europe/Berlin")
    assert usage_report("daily", timezone="UTC").rows  # UTC needs no data


def test_nothing_found_says_which_sessions_were_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "nothing-here"
    empty.mkdir()
    code, out, _ = run_cli(["usage", "--session-dir", str(empty)], capsys)
    assert code == 0
    assert "No usage recorded" in out and str(empty) in out
