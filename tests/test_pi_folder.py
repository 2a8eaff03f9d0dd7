"""Library calls given no folder look where the CLI (and Pi) looks: ``$PI_CODING_AGENT_SESSION_DIR``,
then the ``sessionDir`` setting, then Pi's default (issue 31, item 1). The home is the usage corpus
(written by Pi 1.6.0) laid flat in one ``sessionDir``, as the issue's newcomer had it."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pisession import SettingsError
from pisession._settings_files import configured_session_dir, pi_session_dir
from pisession.catalog import search, search_sessions
from pisession.settings import choose_session_dir
from pisession.usage import usage_report

CORPUS = Path(__file__).parent / "conformance" / "cases" / "usage" / "corpus" / "sessions"


def run_cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    from pisession.cli import main

    code = main(argv)
    out, _ = capsys.readouterr()
    return code, out


@pytest.fixture
def flat_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Pi home whose settings name a flat ``sessionDir`` holding every project's sessions."""
    agent = tmp_path / "agent"
    flat = tmp_path / "pi-sessions"
    flat.mkdir(parents=True)
    agent.mkdir()
    for path in sorted(CORPUS.glob("*/*.jsonl")):
        text = path.read_text(encoding="utf-8")
        text = text.replace("$CORPUS/sessions/" + path.parent.name, str(flat))
        for folder in CORPUS.iterdir():
            text = text.replace("$CORPUS/sessions/" + folder.name, str(flat))
        (flat / path.name).write_text(text, encoding="utf-8")
    (agent / "settings.json").write_text(json.dumps({"sessionDir": str(flat)}), encoding="utf-8")
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    monkeypatch.chdir(tmp_path)
    return flat


def test_the_corpus_has_usage_to_find(flat_home: Path) -> None:
    assert usage_report("daily", session_dir=flat_home).totals.total_cost > 0


def test_usage_with_no_folder_reads_the_session_dir_setting_as_the_cli_does(
    flat_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    library = usage_report("daily", catalog=False).to_wire()
    assert library["totals"]["totalCost"] > 0
    code, out = run_cli(["usage", "daily", "--json"], capsys)
    assert code == 0
    assert json.loads(out) == library


def test_the_variable_wins_over_the_setting(
    flat_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "elsewhere"
    empty.mkdir()
    monkeypatch.setenv("PI_CODING_AGENT_SESSION_DIR", str(empty))
    assert pi_session_dir() == str(empty)
    assert usage_report("daily", catalog=False).rows == ()


def test_search_all_with_no_folder_finds_what_the_cli_finds(
    flat_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    hits = search("refactor", all=True)
    assert hits
    code, out = run_cli(["search", "refactor", "--all", "--json", "--limit", "50"], capsys)
    assert code == 0
    assert [h["entryId"] for h in json.loads(out)] == [h.entry_id for h in hits]
    assert search_sessions("refactor", all=True)


def test_search_without_all_keeps_to_the_current_folders_sessions(
    flat_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    project = flat_home.parent / "work" / "proj-a"
    project.mkdir(parents=True)
    monkeypatch.chdir(project)  # no session of the corpus has this cwd
    assert search("refactor") == []
    code, out = run_cli(["search", "refactor", "--json"], capsys)
    assert (code, json.loads(out)) == (0, [])


def test_dataset_with_no_folder_reads_the_session_dir_setting_as_the_cli_does(
    flat_home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("pyarrow")
    from pisession.dataset import tables, write_parquet

    sessions = tables()["sessions"]
    assert sessions.num_rows == len(list(flat_home.glob("*.jsonl")))
    library = write_parquet(tmp_path / "lib")
    code, _ = run_cli(["dataset", str(tmp_path / "cli"), "--json"], capsys)
    assert code == 0
    assert library.sessions == sessions.num_rows
    # bundles are named at random: the partitions and what they hold
    import pyarrow.parquet as pq

    def held(out: Path) -> list[tuple[str, str]]:
        return sorted(
            (p.parent.relative_to(out).as_posix(), r["session_id"])
            for p in out.rglob("*.parquet")
            for r in pq.read_table(p, columns=["session_id"]).to_pylist()
        )

    assert held(tmp_path / "cli") == held(tmp_path / "lib") and held(tmp_path / "lib")


@pytest.mark.parametrize(
    ("global_value", "project_value", "variable", "wanted"),
    [
        (None, None, None, (None, "default")),
        ("/g", None, None, ("/g", "global")),
        ("/g", "/p", None, ("/p", "project")),
        ("/g", "", None, (None, "default")),  # the project's empty value hides the global one
        ("/g", "/p", "/v", ("/v", "variable")),
        ("~/s", None, None, (os.path.expanduser("~/s"), "global")),
    ],
)
def test_one_rule_for_the_cli_and_the_library(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    global_value: str | None,
    project_value: str | None,
    variable: str | None,
    wanted: tuple[str | None, str],
) -> None:
    agent, project = tmp_path / "agent", tmp_path / "project"
    (project / ".pi").mkdir(parents=True)
    agent.mkdir()
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    if variable:
        monkeypatch.setenv("PI_CODING_AGENT_SESSION_DIR", variable)
    if global_value is not None:
        (agent / "settings.json").write_text(json.dumps({"sessionDir": global_value}))
    if project_value is not None:  # read whether or not the project is trusted, as Pi does
        (project / ".pi" / "settings.json").write_text(json.dumps({"sessionDir": project_value}))
    path, source, _ = configured_session_dir(str(project))
    assert (path, source) == wanted
    choice = choose_session_dir(str(project))
    assert (choice.path, choice.source) == wanted


def test_a_session_dir_that_is_not_a_string_is_a_typed_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    agent = tmp_path / "agent"
    agent.mkdir()
    (agent / "settings.json").write_text(json.dumps({"sessionDir": 42}))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    with pytest.raises(SettingsError, match="Invalid sessionDir setting: 42"):
        usage_report("daily", catalog=False)


def test_the_datasets_project_is_the_sessions_cwd_not_its_folder(flat_home: Path, tmp_path: Path) -> None:
    pytest.importorskip("pyarrow")
    duckdb = pytest.importorskip("duckdb")
    from pisession.dataset import tables, write_parquet

    cwds = {json.loads(p.read_text().splitlines()[0])["cwd"] for p in flat_home.glob("*.jsonl")}
    assert len(cwds) == 3  # three projects in one flat folder
    sessions = tables()["sessions"]
    assert set(sessions.column("project").to_pylist()) == cwds
    assert set(sessions.column("folder").to_pylist()) == {"pi-sessions"}
    assert sessions.column("project").to_pylist() == sessions.column("cwd").to_pylist()
    out = tmp_path / "out"
    write_parquet(out)
    assert len(list((out / "usage").iterdir())) == 3
    read = duckdb.sql(
        f"SELECT DISTINCT project FROM read_parquet('{out}/usage/**/*.parquet', hive_partitioning = true, "
        "hive_types = {'project': VARCHAR})"
    ).fetchall()
    assert {project for (project,) in read} == cwds  # the partition reads back as the cwd


def test_a_dataset_written_by_folder_name_is_refiled_by_project(
    flat_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("pyarrow")
    from pisession.dataset import _export, write_parquet

    out = tmp_path / "out"
    with monkeypatch.context() as patch:
        patch.setattr(_export, "OWN_FILE_BYTES", 0)  # a file for each session, as format 1 wrote
        write_parquet(out)
    manifest_path = out / _export.MANIFEST
    manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    # what the format-1 export wrote: every file under the folder's name
    manifest["format"] = 1
    for row in manifest["sessions"].values():
        for table in _export.TABLES:
            old = out / table / _export.partition_name("pi-sessions")
            old.mkdir(exist_ok=True)
            (out / table / _export.partition_name(row["project"]) / f"{row['stem']}.parquet").rename(
                old / f"{row['stem']}.parquet"
            )
        row["project"] = "pi-sessions"
        del row["folder"]
    manifest_path.write_text(json.dumps(manifest), encoding="utf-8")
    report = write_parquet(out)
    assert report.written == report.sessions
    assert not (out / "usage" / _export.partition_name("pi-sessions")).exists()
    assert len(list((out / "usage").iterdir())) == 3
