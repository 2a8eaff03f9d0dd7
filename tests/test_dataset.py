"""pisession.dataset: the tables against what the reference reads (golden data from the oracle),
the Parquet folder read back by DuckDB, Polars and Spark, and incremental re-export.

Golden data: tests/conformance/golden/read/ (every read case) and golden/dataset.json (Pi's usage
breakdown per case, and a family of branched sessions written by Pi), made by
tests/conformance/generate_dataset.py.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

pa = pytest.importorskip("pyarrow", reason="pisession.dataset needs pyarrow (the test extra installs it)")
pq = pytest.importorskip("pyarrow.parquet")

import pisession  # noqa: E402
from pisession.cli.main import main as cli_main  # noqa: E402
from pisession.dataset import SCHEMAS, TABLES, DatasetError, _export, tables, write_parquet  # noqa: E402
from pisession.dataset._export import partition_name  # noqa: E402

SAMPLE_PROJECT = "/home/dev/todo-app"  # the sample session's cwd: its project
PROJECTS = {"/project", SAMPLE_PROJECT}  # the corpus's three folders hold two projects

HERE = Path(__file__).parent
CONFORMANCE = HERE / "conformance"
GOLDEN_READ = CONFORMANCE / "golden" / "read"


def _load(path: Path) -> Any:
    """JSON of a golden file; entries nested 1,200 levels need a deeper recursion limit, raised
    only while loading (left raised, deep-JSON tests elsewhere would overflow the C stack)."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 20_000))
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    finally:
        sys.setrecursionlimit(limit)


GOLDEN = _load(CONFORMANCE / "golden" / "dataset.json")
SAMPLE = Path(pisession.__file__).parent / "data" / "sample.jsonl"


def _golden_read(name: str) -> dict[str, Any]:
    return _load(GOLDEN_READ / f"{name}.json")  # type: ignore[no-any-return]


# Cases pisession reads differently on purpose (docs/differences.md, tests/conformance/test_read.py).
DIFFERENT = {"non_object_lines", "non_object_last_line", "v1_unparsed_lines", "v2_unparsed_lines"}
READ_CASES = [
    p.stem
    for p in sorted(GOLDEN_READ.glob("*.json"))
    if p.stem not in DIFFERENT and _golden_read(p.stem).get("ok") and "$NEW_ID" not in p.read_text()
]


def _rows(table: Any) -> list[dict[str, Any]]:
    return table.to_pylist()  # type: ignore[no-any-return]


def _positions(ids: list[Any], wanted: list[Any]) -> list[int]:
    where = {entry_id: i for i, entry_id in enumerate(ids)}
    return sorted(where[entry_id] for entry_id in wanted)


# --------------------------------------------------------------------------- against the reference


@pytest.mark.parametrize("name", READ_CASES)
def test_tables_agree_with_the_reference_on_every_read_case(name: str, tmp_path: Path) -> None:
    path = tmp_path / "session.jsonl"
    shutil.copyfile(CONFORMANCE / "cases" / f"{name}.jsonl", path)
    before = path.read_bytes()
    dump = _golden_read(name)["dump"]
    out = tables(paths=[path])
    assert path.read_bytes() == before, "reading never writes"
    entries = _rows(out["entries"])
    golden_ids = [e.get("id") for e in dump["entries"]]
    assert len(entries) == len(golden_ids)
    assert _rows(out["sessions"])[0]["entry_count"] == len(golden_ids)
    on_branch = [i for i, e in enumerate(entries) if e["on_leaf_branch"]]
    in_context = [i for i, e in enumerate(entries) if e["in_context"]]
    if len(set(golden_ids)) == len(golden_ids):
        # by position: a version-1 file gets fresh ids on every read, the reference's too
        assert on_branch == _positions(golden_ids, dump["branch"])
        assert in_context == _positions(golden_ids, dump["current"]["contextEntries"])
        leaf = _rows(out["sessions"])[0]["leaf_id"]
        assert (golden_ids.index(dump["leafId"]) if dump["leafId"] else None) == (
            [e["entry_id"] for e in entries].index(leaf) if leaf is not None else None
        )
        original = pisession.read_session_header(path) or {}
        if isinstance(original.get("version"), int) and original["version"] >= 2:
            assert [e["entry_id"] for e in entries] == golden_ids
            labels = {e["entry_id"]: e["label"] for e in entries if e["label"] is not None}
            assert labels == dump["labels"]
    else:  # duplicated ids: compare as multisets
        assert Counter(entries[i]["entry_id"] for i in on_branch) == Counter(dump["branch"])
        assert Counter(entries[i]["entry_id"] for i in in_context) == Counter(
            dump["current"]["contextEntries"]
        )
    messages = _rows(out["messages"])
    assert sum(m["in_context"] for m in messages) == len(dump["current"]["context"]["messages"])
    # the context's roles, in order, are those of the rows marked in_context, by context_index
    ordered = sorted((m for m in messages if m["in_context"]), key=lambda m: m["context_index"])
    assert [m["context_index"] for m in ordered] == list(range(len(ordered)))
    assert [m["role"] for m in ordered] == [m.get("role") for m in dump["current"]["context"]["messages"]]
    assert all(m["context_index"] is None for m in messages if not m["in_context"])
    _assert_usage_matches(name, out)


def _assert_usage_matches(name: str, out: dict[str, Any]) -> None:
    breakdown = GOLDEN["usage"][name]
    if isinstance(breakdown, dict):  # the reference throws on this file (a usage without cost)
        return
    cost: dict[str, float] = defaultdict(float)
    tokens: dict[str, Any] = defaultdict(int)
    for row in _rows(out["usage"]):
        key = row["model_key"]
        cost[key] = math.nan if row["cost"] is None else cost[key] + row["cost"]
        parts = [row[k] for k in ("input", "output", "cache_read", "cache_write")]
        tokens[key] = math.nan if None in parts else tokens[key] + sum(parts)
    assert set(cost) >= {row["key"] for row in breakdown}
    for row in breakdown:
        # Pi writes NaN as null: such a key is null (unknown) in the table too
        if row["cost"] is None:
            assert math.isnan(cost[row["key"]])
        else:
            assert cost[row["key"]] == pytest.approx(row["cost"], rel=1e-12, abs=1e-15)
        if row["tokens"] is None:
            assert math.isnan(tokens[row["key"]])
        else:
            assert tokens[row["key"]] == row["tokens"]


def _lay_family(root: Path) -> tuple[Path, dict[str, Path]]:
    """The parent, its branched session and the branch's branch, as Pi wrote them, in one folder."""
    folder = root / "sessions" / "--project--"
    folder.mkdir(parents=True)
    paths = {}
    for name, text in GOLDEN["family"]["files"].items():
        path = folder / name
        path.write_text(text.replace("$DIR", str(folder)), encoding="utf-8")
        paths[name] = path
    return folder, paths


def test_a_family_of_branched_sessions_counts_each_usage_once(tmp_path: Path) -> None:
    folder, _ = _lay_family(tmp_path)
    out = tables(session_dir=folder)
    family = GOLDEN["family"]
    sessions = {Path(r["session_file"]).name: r for r in _rows(out["sessions"])}
    assert set(sessions) == set(family["files"])
    entries = _rows(out["entries"])
    usage = _rows(out["usage"])
    by_session = {r["session_id"]: name for name, r in sessions.items()}
    for name, read in family["read"].items():
        own = [e for e in entries if by_session[e["session_id"]] == name]
        assert [e["entry_id"] for e in own] == read["entries"]
        assert sessions[name]["leaf_id"] == read["leafId"]
        assert [e["entry_id"] for e in own if e["on_leaf_branch"]] == read["branch"]
        assert sorted(e["entry_id"] for e in own if e["in_context"]) == sorted(read["contextEntries"])
        # every usage row, copied or not, is what Pi's breakdown of that one file counts
        rows = [u for u in usage if by_session[u["session_id"]] == name]
        totals: dict[str, float] = defaultdict(float)
        for u in rows:
            totals[u["model_key"]] += u["cost"]
        assert totals == pytest.approx({b["key"]: b["cost"] for b in family["usage"][name]})
    # copies: same id and timestamp in the parent session; the parent has none
    parent_of = {r["session_id"]: r["parent_session"] for r in sessions.values()}
    stamps = {(e["session_id"], e["entry_id"]): e["timestamp"] for e in entries}
    for e in entries:
        parent = parent_of[e["session_id"]]
        if parent is None:
            assert not e["copied"]
            continue
        parent_id = next(r["session_id"] for r in sessions.values() if r["session_file"] == parent)
        assert e["copied"] == (stamps.get((parent_id, e["entry_id"])) == e["timestamp"])
    assert sum(e["copied"] for e in entries) > 10
    # counted once: the branch of the branch holds everything, so it is the family's total
    last = max(family["read"], key=lambda n: len(family["read"][n]["entries"]))
    want = sum(b["cost"] for b in family["usage"][last])
    assert sum(u["cost"] for u in usage if u["counted"]) == pytest.approx(want)
    assert sum(u["cost"] for u in usage) > want * 2  # the copies are there, not counted


def test_counted_usage_equals_pisession_usage_per_session_and_model(agent: Path) -> None:
    from pisession.usage import usage_report

    report = usage_report("session", catalog=False)
    want: dict[tuple[str, str], tuple[float, int]] = {}
    for row in report.rows:
        for model in row.models:
            assert row.session_file is not None
            want[(row.session_file, model.model_name)] = (model.cost, int(model.total_tokens))
    out = tables()
    files = {r["session_id"]: r["session_file"] for r in _rows(out["sessions"])}
    got: dict[tuple[str, str], list[Any]] = defaultdict(lambda: [0.0, 0])
    for u in _rows(out["usage"]):
        if u["counted"]:
            key = (files[u["session_id"]], u["model_key"])
            got[key][0] += u["cost"]
            got[key][1] += u["input"] + u["output"] + u["cache_read"] + u["cache_write"]
    got = {k: v for k, v in got.items() if v != [0.0, 0]}
    assert set(got) == set(want) and len(want) > 5
    for key, (cost, tokens) in want.items():
        assert got[key][0] == pytest.approx(cost, rel=1e-12)
        assert got[key][1] == tokens
    assert sum(v[0] for v in got.values()) == pytest.approx(report.totals.total_cost)


def test_tool_calls_are_matched_with_their_results_on_every_branch(tmp_path: Path) -> None:
    folder, _ = _lay_family(tmp_path)
    calls = _rows(tables(session_dir=folder)["tool_calls"])
    assert {(c["tool_call_id"], c["name"], c["is_error"]) for c in calls} == {
        ("call-1", "read", False),
        ("call-2", "bash", True),
    }
    read = next(c for c in calls if c["tool_call_id"] == "call-1")
    assert json.loads(read["arguments"]) == {"path": "config.toml"}
    assert read["result_text"] == "[server]\nport = 80"
    assert len(calls) == 6  # each call in the parent and in both copies


def _first_result_by_walking(parents: list[int], call: int, candidates: list[int]) -> int | None:
    """The matching rule as it was first written (a walk up from every candidate): the reference."""
    for pos in candidates:
        node = parents[pos]
        seen = 0
        while node != -1 and node != call and seen <= len(parents):
            node = parents[node]
            seen += 1
        if node == call:
            return pos
    return None


def test_result_matching_agrees_with_walking_up_from_every_result() -> None:
    import random

    from pisession.dataset._rows import ResultMatcher

    outcomes: Counter[str] = Counter()
    for seed in range(300):
        rng = random.Random(seed)
        n = rng.randint(1, 120)
        parents = []
        for pos in range(n):
            roll = rng.random()
            if roll < 0.1 or pos == 0:
                parents.append(-1)  # another root
            elif roll < 0.15:
                parents.append(rng.randrange(n))  # anywhere: a later entry, a cycle, itself
            else:
                parents.append(rng.randrange(max(0, pos - 4), pos))  # chains with a few branches
        ids = [f"call_{k}" for k in range(rng.randint(1, 4))]
        kinds = [rng.choice(("call", "result", "other")) for _ in range(n)]
        results: dict[str, list[int]] = {}
        for pos in range(n):
            if kinds[pos] == "result":
                results.setdefault(rng.choice(ids), []).append(pos)
        walking = ResultMatcher(parents, results)  # walks while its budget lasts
        numbering = ResultMatcher(parents, results, walk_budget=seed % 3)  # numbers the tree at once
        for pos in range(n):
            if kinds[pos] != "call":
                continue
            for call_id in ids:
                want = _first_result_by_walking(parents, pos, results.get(call_id, []))
                assert walking(pos, call_id) == want, (seed, pos, call_id)
                assert numbering(pos, call_id) == want, (seed, pos, call_id)
                outcomes["matched" if want is not None else "none"] += 1
                if want is not None and _first_result_by_walking(parents, pos, [pos]) is not None:
                    outcomes["on a cycle"] += 1
    assert min(outcomes["matched"], outcomes["none"]) > 1000 and outcomes["on a cycle"] > 20, outcomes


def test_a_call_id_reused_every_turn_is_matched_in_linear_steps(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pisession.dataset import _rows

    turns = 3000
    folder = tmp_path / "s"
    folder.mkdir()
    lines = [
        {"type": "session", "version": 3, "id": "reuse", "timestamp": "2025-01-01T00:00:00.000Z", "cwd": "/w"}
    ]
    parent = None
    for turn in range(turns):
        call = {
            "type": "message",
            "id": f"c{turn:05d}",
            "parentId": parent,
            "timestamp": "2025-01-01T00:00:01.000Z",
            "message": {
                "role": "assistant",
                "content": [{"type": "toolCall", "id": "call_0", "name": "bash", "arguments": {"n": turn}}],
                "timestamp": 1735689601000,
            },
        }
        result = {
            "type": "message",
            "id": f"r{turn:05d}",
            "parentId": call["id"],
            "timestamp": "2025-01-01T00:00:01.000Z",
            "message": {
                "role": "toolResult",
                "toolCallId": "call_0",
                "content": [{"type": "text", "text": f"out {turn}"}],
                "isError": False,
                "timestamp": 1735689601000,
            },
        }
        lines += [call, result]
        parent = result["id"]
    (folder / "s.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    _settle(tmp_path)
    matchers: list[Any] = []

    class Counted(_rows.ResultMatcher):
        def __init__(self, *args: Any) -> None:
            super().__init__(*args)
            matchers.append(self)

    monkeypatch.setattr(_rows, "ResultMatcher", Counted)
    out = tmp_path / "out"
    assert write_parquet(out, session_dir=folder).written == 1
    calls = pq.read_table(out / "tool_calls" / partition_name("/w") / "reuse.parquet").to_pylist()
    assert [c["result_entry_id"] for c in calls] == [f"r{turn:05d}" for turn in range(turns)]
    assert [c["result_text"] for c in calls[:2]] == ["out 0", "out 1"]
    (matcher,) = matchers
    entries = 2 * turns
    # n log n: the old walk took about turns * turns * turns / 6 steps (4.5e9 here); the budget
    # spent walking, the numbering of the entries, the table of the results, one step a call
    assert matcher.steps <= (4 * entries + 64) + entries + turns * 13 + turns


def test_sample_session_tables_hold_pi_context(tmp_path: Path) -> None:
    context = pisession.read_session(SAMPLE).build_session_context()
    out = tables(paths=[SAMPLE])
    messages = _rows(out["messages"])
    assert sum(m["in_context"] for m in messages) == len(context.messages)
    ordered = sorted((m for m in messages if m["in_context"]), key=lambda m: m["context_index"])
    assert [m["context_index"] for m in ordered] == list(range(len(context.messages)))
    assert [m["role"] for m in ordered] == [m.role for m in context.messages]
    assert all(
        t.schema.remove_metadata() == SCHEMAS[n].append(_project()).remove_metadata() for n, t in out.items()
    )
    entries = _rows(out["entries"])
    lines = [line for line in SAMPLE.read_text(encoding="utf-8").split("\n")[1:] if line]
    assert [e["json"] for e in entries] == lines


def _project() -> Any:
    from pisession.dataset._schema import PROJECT

    return PROJECT


@pytest.mark.parametrize(
    ("name", "replaced_count", "removed"),
    [
        ("context_edits", 1, None),
        ("context_edits_handwritten", 3, None),  # and a bash run an edit names, which Pi leaves as it is
        ("context_edit_compaction", 0, "ffd5406e"),
    ],
)
def test_context_edits_replace_or_remove_messages_in_context(
    name: str, replaced_count: int, removed: str | None
) -> None:
    out = tables(paths=[CONFORMANCE / "cases" / f"{name}.jsonl"])
    dump = _golden_read(name)["dump"]
    messages = _rows(out["messages"])
    context = dump["current"]["context"]["messages"]
    in_context = sorted((m for m in messages if m["in_context"]), key=lambda m: m["context_index"])
    assert len(in_context) == len(context)
    for row, message in zip(in_context, context, strict=True):
        content = message.get("content")
        if row["context_text"] is not None:  # replaced: the row keeps the text as written
            seen = (
                content
                if isinstance(content, str)
                else "\n".join(b["text"] for b in content if b.get("type") == "text")
            )
            assert row["context_text"] == seen != row["text"]
    assert sum(m["context_text"] is not None for m in messages) == replaced_count
    if removed is not None:  # a context edit with replacement null: on the branch, out of the context
        row = next(m for m in messages if m["entry_id"] == removed)
        assert row["on_leaf_branch"] and not row["in_context"]


# --------------------------------------------------------------------------- the Parquet folder


def _corpus(root: Path) -> Path:
    """An agent dir with three projects: the family, the sample, and read cases."""
    _lay_family(root)
    sample = root / "sessions" / "--sample--"
    sample.mkdir()
    shutil.copyfile(SAMPLE, sample / "sample.jsonl")
    cases = root / "sessions" / "--cases--"
    cases.mkdir()
    for name in ("context_edits", "multiple_compactions", "branched_labels", "all_roles", "lone_surrogate"):
        shutil.copyfile(CONFORMANCE / "cases" / f"{name}.jsonl", cases / f"{name}.jsonl")
    _settle(root)
    return root


def _settle(root: Path) -> None:
    """Files written a minute ago: one changed within ~50 ms of being read is read again next
    time (it might have changed without its size or mtime showing it), which a test that writes
    and exports at once would otherwise see."""
    past = time.time() - 60
    for path in root.rglob("*.jsonl"):
        os.utime(path, (past, past))


@pytest.fixture
def agent(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = _corpus(tmp_path / "agent")
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(root))
    monkeypatch.delenv("PI_CODING_AGENT_SESSION_DIR", raising=False)
    return root


@pytest.fixture
def own_files(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every session in files of its own, as a large one is (the file names under test)."""
    monkeypatch.setattr(_export, "OWN_FILE_BYTES", 0)


def _partition(out: Path, table: str, project: str) -> pa.Table:
    """A table's rows in a project's partition, whichever files (bundles) hold them."""
    files = sorted((out / table / partition_name(project)).glob("*.parquet"))
    return pa.concat_tables([pq.read_table(p) for p in files])


def _content(out: Path) -> dict[str, list[str]]:
    """Each partition's rows (as JSON, sorted; a row twice shows), whatever files hold them."""
    found: dict[str, list[str]] = {}
    for path in sorted(out.rglob("*.parquet")):
        rows = found.setdefault(str(path.parent.relative_to(out)), [])
        rows += [json.dumps(row, sort_keys=True, default=str) for row in pq.read_table(path).to_pylist()]
    return {where: sorted(rows) for where, rows in found.items()}


def _files(out: Path) -> dict[str, tuple[int, int]]:
    return {
        str(p.relative_to(out)): (p.stat().st_ino, p.stat().st_mtime_ns)
        for p in sorted(out.rglob("*.parquet"))
    }


def test_every_file_has_its_table_schema_and_the_hive_layout(agent: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    report = write_parquet(out)
    # the small sessions of each project share a bundle: one file per table and project
    assert report.sessions == 9 and report.written == 9 and report.files_written == 10
    assert not report.skipped
    for table in TABLES:
        files = sorted((out / table).glob("project=*/*.parquet"))
        assert len(files) == 2 and all(p.name.startswith("bundle-") for p in files)
        for path in files:
            assert pq.read_schema(path).remove_metadata() == SCHEMAS[table].remove_metadata()
    assert {p.name for p in (out / "usage").iterdir()} == {partition_name(p) for p in PROJECTS}
    assert {p.name for p in (out / "usage").iterdir()} == {
        "project=%2Fproject",
        "project=%2Fhome%2Fdev%2Ftodo-app",
    }


def test_duckdb_and_polars_read_the_folder_as_the_tables(agent: Path, tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb").connect()  # not the shared default: the docs' examples make views
    pl = pytest.importorskip("polars")
    out = tmp_path / "out"
    write_parquet(out)
    memory = tables()
    for table in TABLES:
        glob = f"{out}/{table}/**/*.parquet"
        count = duckdb.sql(
            f"SELECT count(*) FROM read_parquet('{glob}', hive_partitioning = true)"
        ).fetchall()[0]
        assert count == (memory[table].num_rows,)
        assert (
            pl.scan_parquet(f"{out}/{table}/", hive_partitioning=True).collect().height
            == memory[table].num_rows
        )
    usage = memory["usage"]  # noqa: F841  (DuckDB reads the Arrow table by its name)
    in_memory = duckdb.sql(
        "SELECT project, model_key, round(sum(cost), 9), sum(input) FROM usage WHERE counted "
        "GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    on_disk = duckdb.sql(
        "SELECT project, model_key, round(sum(cost), 9), sum(input) "
        f"FROM read_parquet('{out}/usage/**/*.parquet', hive_partitioning = true) "
        "WHERE counted GROUP BY ALL ORDER BY ALL"
    ).fetchall()
    assert on_disk == in_memory and len(on_disk) > 3
    polars = (
        pl.scan_parquet(f"{out}/usage/", hive_partitioning=True)
        .filter(pl.col("counted"))
        .group_by("project", "model_key")
        .agg(pl.col("cost").sum().round(9), pl.col("input").sum())
        .sort("project", "model_key")
        .collect()
        .rows()
    )
    assert [tuple(r) for r in polars] == [tuple(r) for r in in_memory]
    # DuckDB and the oracle: the context of every session, and the leaf branch
    for name, read in GOLDEN["family"]["read"].items():
        found = duckdb.sql(
            f"SELECT count(*) FILTER (WHERE m.in_context) FROM read_parquet('{out}/messages/**/*.parquet') m "
            f"JOIN read_parquet('{out}/sessions/**/*.parquet') s USING (session_id) "
            f"WHERE s.session_file LIKE '%{name}'"
        ).fetchall()[0]
        assert found == (read["contextMessages"],)


def test_spark_reads_the_folder_and_sums_the_usage(agent: Path, tmp_path: Path) -> None:
    pytest.importorskip("pyspark")
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        pytest.skip("pyspark needs Java 17 or later (no java on PATH, JAVA_HOME unset)")
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    from pisession.dataset._export import MANIFEST

    out = tmp_path / "out"
    write_parquet(out)
    want = sum(r["cost"] for r in _rows(tables()["usage"]) if r["counted"])
    typed = {}  # folder names Spark would read as numbers, dates or null: one dataset each
    for name in TYPED_LOOKING:
        folder = tmp_path / "typed" / str(len(typed))
        _typed_looking(folder, [name])
        _settle(folder)
        typed[name] = tmp_path / "typed-out" / str(len(typed))
        write_parquet(typed[name], session_dir=folder)
    spark = (
        SparkSession.builder.master("local[1]")
        .appName("pisession-dataset-test")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "1")
        .config("spark.sql.sources.partitionColumnTypeInference.enabled", "false")  # as the docs read it
        .getOrCreate()
    )
    try:
        usage = spark.read.parquet(str(out / "usage"))
        assert "project" in usage.columns
        got = usage.where(F.col("counted")).agg(F.sum("cost")).first()[0]
        projects = {r[0] for r in usage.select("project").distinct().collect()}
        entries = spark.read.parquet(str(out / "entries")).count()
        read_back = {}
        for name, typed_out in typed.items():
            frame = spark.read.parquet(str(typed_out / "sessions"))
            assert frame.schema["project"].dataType.typeName() == "string"
            read_back[name] = [r[0] for r in frame.select("project").collect()]
    finally:
        spark.stop()
    assert got == pytest.approx(want)
    assert projects == PROJECTS
    assert entries == tables()["entries"].num_rows
    for name, values in read_back.items():
        partitions = json.loads((typed[name] / MANIFEST).read_text(encoding="utf-8")).get("partitions", {})
        assert [partitions.get(v, v) for v in values] == [name]


# --------------------------------------------------------------------------- incremental


def test_re_export_rewrites_only_changed_sessions_and_removes_deleted_ones(
    agent: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    write_parquet(out)
    first = _files(out)
    again = write_parquet(out)
    assert (again.written, again.unchanged, again.removed) == (0, 9, 0)
    assert _files(out) == first
    sample = agent / "sessions" / "--sample--" / "sample.jsonl"
    last = json.loads(sample.read_text(encoding="utf-8").rstrip("\n").rsplit("\n", 1)[-1])
    line = {
        "type": "message",
        "id": "feedf00d",
        "parentId": last["id"],
        "timestamp": "2025-01-01T00:00:00.000Z",
        "message": {"role": "user", "content": "one more", "timestamp": 1735689600000},
    }
    with sample.open("a", encoding="utf-8") as handle:
        handle.write(json.dumps(line, separators=(",", ":")) + "\n")
    past = time.time() - 30
    os.utime(sample, (past, past))
    report = write_parquet(out)
    assert (report.written, report.unchanged, report.files_written) == (1, 8, 5)
    now = _files(out)
    changed = {name for name in first if now.get(name) != first[name]}
    sample_part = partition_name(SAMPLE_PROJECT)
    assert changed == {name for name in first if name.startswith(tuple(TABLES)) and sample_part in name}
    assert len(changed) == 5  # the sample's bundle: its five tables
    assert "feedf00d" in _partition(out, "entries", SAMPLE_PROJECT).column("entry_id").to_pylist()
    ids = set(_partition(out, "sessions", "/project").column("session_id").to_pylist())
    gone = agent / "sessions" / "--cases--" / "context_edits.jsonl"
    gone_id = json.loads(gone.read_text(encoding="utf-8").splitlines()[0])["id"]
    assert gone_id in ids
    gone.unlink()
    report = write_parquet(out)
    assert (report.written, report.removed, report.files_written) == (0, 1, 5)
    for table in TABLES:  # its bundle written again without it
        assert gone_id not in _partition(out, table, "/project").column("session_id").to_pylist()
    assert set(_partition(out, "sessions", "/project").column("session_id").to_pylist()) == ids - {gone_id}
    assert len(_files(out)) == 10
    assert all("--cases--" not in n or "context_edits" not in n for n in _files(out))
    full = write_parquet(out, full=True)
    assert full.written == 8


def test_progress_is_reported_up_to_the_last_session(agent: Path, tmp_path: Path) -> None:
    calls: list[tuple[int, int]] = []
    write_parquet(tmp_path / "out", on_progress=lambda done, total: calls.append((done, total)))
    assert calls[-1] == (9, 9) and [d for d, _ in calls] == sorted(d for d, _ in calls)
    calls.clear()
    write_parquet(tmp_path / "out", on_progress=lambda done, total: calls.append((done, total)))
    assert calls == [(9, 9)]  # nothing to write: done at once


def test_worker_processes_write_the_same_folder(agent: Path, tmp_path: Path) -> None:
    alone, pooled = tmp_path / "alone", tmp_path / "pooled"
    assert write_parquet(alone, workers=1).written == 9
    report = write_parquet(pooled, workers=2)
    assert (report.written, report.files_written) == (9, 10)
    assert _content(pooled) == _content(alone)
    assert not [p for p in pooled.rglob("*") if p.name.endswith(".tmp")]
    assert write_parquet(pooled, workers=2).unchanged == 9


def test_a_changed_parent_rewrites_its_forks_copied_column(agent: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_parquet(out)
    folder = agent / "sessions" / "--project--"
    parent = next(p for p in folder.iterdir() if "parentSession" not in p.read_text().split("\n", 1)[0])
    parent.unlink()
    report = write_parquet(out)
    assert report.removed == 1
    assert report.written == 1  # the branch whose parent is gone: its copies are now its own
    usage = duckdb_sum(out)
    assert usage == pytest.approx(sum(r["cost"] for r in _rows(tables()["usage"]) if r["counted"]))


def test_a_parent_changed_while_its_fork_is_read_is_read_again(
    agent: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pisession.dataset import _export

    out = tmp_path / "out"
    write_parquet(out)
    changed: list[str] = []
    read = _export.read_identities

    def read_then_change(path: str) -> Any:
        result = read(path)
        if not changed:  # the parent changes after the fork read it, before the fork is recorded
            changed.append(path)
            with open(path, "a", encoding="utf-8") as handle:
                handle.write("\n")
        return result

    monkeypatch.setattr(_export, "read_identities", read_then_change)
    _export._parent_identities.cache_clear()  # the first run read the parents already
    assert write_parquet(out, full=True).written == 9
    monkeypatch.undo()
    assert changed
    # the forks recorded their parent as they read it: the change shows, they are read again
    rows = json.loads((out / _export.MANIFEST).read_text())["sessions"]
    now = list(_export._fingerprint(changed[0]) or ())
    forks = [row for row in rows.values() if row["parent"] == changed[0]]
    assert forks and len(now) == 5
    assert all([*row["parent_fp"], row["parent_ctime"]] != now for row in forks)


def duckdb_sum(out: Path) -> float:
    duckdb = pytest.importorskip("duckdb")
    row = duckdb.sql(
        f"SELECT sum(cost) FROM read_parquet('{out}/usage/**/*.parquet') WHERE counted"
    ).fetchall()[0]
    assert row is not None
    return float(row[0])


def test_a_session_rewritten_in_place_with_its_size_and_mtime_put_back_is_written_again(
    tmp_path: Path,
) -> None:
    """``rsync --inplace -t``, a restore, a redaction script: same size, same mtime, new bytes."""
    folder = tmp_path / "s"
    folder.mkdir()
    path = folder / "a.jsonl"
    _session(path, "a1")
    with path.open("a", encoding="utf-8") as handle:
        handle.write(
            json.dumps(
                {
                    "type": "message",
                    "id": "aaaa0002",
                    "parentId": "aaaa0001",
                    "timestamp": "2025-01-01T00:00:02.000Z",
                    "message": {
                        "role": "user",
                        "content": "my password is hunter2",
                        "timestamp": 1735689602000,
                    },
                }
            )
            + "\n"
        )
    _settle(tmp_path)
    out = tmp_path / "out"
    assert write_parquet(out, session_dir=folder).written == 1
    before = path.stat()
    data = path.read_bytes()
    with path.open("r+b") as handle:  # in place: same inode, same size
        handle.write(data.replace(b"hunter2", b"[redac]"))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = path.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )
    report = write_parquet(out, session_dir=folder)
    assert (report.written, report.unchanged) == (1, 0)
    texts = _partition(out, "messages", "/work").column("text").to_pylist()
    assert "my password is [redac]" in texts
    assert not [p for p in out.rglob("*.parquet") if b"hunter2" in p.read_bytes()]
    assert write_parquet(out, session_dir=folder).unchanged == 1


def test_a_session_written_as_it_was_read_is_checked_by_its_bytes(tmp_path: Path) -> None:
    """Racily clean (written in the tick it was read in): the checksum of the bytes decides, as
    the catalog decides it; once they match, the file counts as settled."""
    from pisession.dataset import _export

    folder = tmp_path / "s"
    folder.mkdir()
    _session(folder / "a.jsonl", "a1")
    out = tmp_path / "out"
    assert write_parquet(out, session_dir=folder).written == 1
    manifest = out / _export.MANIFEST

    def read_when_written(crc_flip: int = 0) -> dict[str, Any]:
        data = json.loads(manifest.read_text(encoding="utf-8"))
        (row,) = data["sessions"].values()
        row["checked"] = row["fp"][3]  # read in the very tick the file was last written
        row["crc"] ^= crc_flip
        manifest.write_text(json.dumps(data), encoding="utf-8")
        return dict(row)

    row = read_when_written()
    assert set(row) >= {"fp", "ctime", "crc", "parent_ctime"} and len(row["fp"]) == 4
    assert write_parquet(out, session_dir=folder).unchanged == 1  # the bytes are those read
    (again,) = json.loads(manifest.read_text(encoding="utf-8"))["sessions"].values()
    assert again["checked"] > row["checked"] and again["crc"] == row["crc"]
    assert write_parquet(out, session_dir=folder).unchanged == 1
    read_when_written(crc_flip=1)  # bytes that differ from those read: read again
    assert write_parquet(out, session_dir=folder).written == 1


def test_a_failed_write_leaves_the_old_file_and_no_temporary(
    agent: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pisession.dataset import _export

    out = tmp_path / "out"
    write_parquet(out)
    before = {p: p.read_bytes() for p in out.rglob("*.parquet")}
    real = _export._write_parquet

    def half_then_fail(table: Any, path: str) -> None:
        real(table, path)
        with open(path, "r+b") as handle:
            handle.truncate(100)
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_export, "_write_parquet", half_then_fail)
    with pytest.raises(OSError):
        write_parquet(out, full=True)
    assert {p: p.read_bytes() for p in out.rglob("*.parquet")} == before
    assert not [p for p in out.rglob("*") if p.name.endswith(".tmp")]
    monkeypatch.setattr(_export, "_write_parquet", real)
    assert write_parquet(out).unchanged == 9  # the manifest was not advanced past what was written


@pytest.mark.usefixtures("own_files")
def test_one_folder_reached_by_two_spellings_is_exported_once(
    agent: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pisession.dataset import _export

    link = tmp_path / "link-to-agent"
    link.symlink_to(agent, target_is_directory=True)
    out = tmp_path / "out"
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(link))
    assert write_parquet(out).written == 9
    first = _files(out)
    assert len(first) == 45
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(agent))
    report = write_parquet(out)
    assert (report.written, report.unchanged, report.removed) == (0, 9, 0)
    assert _files(out) == first  # no s1-<hash>.parquet beside s1.parquet
    assert write_parquet(out, session_dir=link / "sessions" / "--sample--").unchanged == 1
    # a session deleted is removed whichever spelling the next run is given
    (agent / "sessions" / "--cases--" / "all_roles.jsonl").unlink()
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(link))
    assert write_parquet(out).removed == 1
    assert len(_files(out)) == 40
    keys = set(json.loads((out / _export.MANIFEST).read_text(encoding="utf-8"))["sessions"])
    assert keys == {os.path.realpath(p) for p in agent.rglob("*.jsonl")}


@pytest.mark.usefixtures("own_files")
def test_a_session_file_linked_beside_itself_is_exported_once(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    folder.mkdir()
    _session(folder / "a.jsonl", "a1")
    (folder / "b.jsonl").symlink_to(folder / "a.jsonl")
    _settle(tmp_path)
    out = tmp_path / "out"
    report = write_parquet(out, session_dir=folder)
    assert (report.sessions, report.written) == (1, 1)
    assert sorted(p.name for p in (out / "sessions" / partition_name("/work")).iterdir()) == ["a1.parquet"]
    assert write_parquet(out, session_dir=folder).unchanged == 1


@pytest.mark.usefixtures("own_files")
def test_a_renamed_sessions_folder_is_exported_under_the_same_names(
    agent: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The sessions folder moved (renamed, restored elsewhere): its files are gone under the old
    paths, so the files now exported take their names over instead of a hashed second copy."""
    out = tmp_path / "out"
    write_parquet(out)
    clean = sorted(_files(out))
    moved = tmp_path / "moved"
    agent.rename(moved)
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(moved))
    assert write_parquet(out).written == 9
    assert sorted(_files(out)) == clean  # no s1-<hash>.parquet beside s1.parquet
    assert write_parquet(out).unchanged == 9


@pytest.mark.usefixtures("own_files")
def test_a_session_file_hard_linked_beside_itself_is_exported_once(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    folder.mkdir()
    _session(folder / "a.jsonl", "a1")
    os.link(folder / "a.jsonl", folder / "b.jsonl")
    _settle(tmp_path)
    out = tmp_path / "out"
    report = write_parquet(out, session_dir=folder)
    assert (report.sessions, report.written) == (1, 1)
    assert sorted(p.name for p in (out / "sessions" / partition_name("/work")).iterdir()) == ["a1.parquet"]
    assert write_parquet(out, session_dir=folder).unchanged == 1
    # what an earlier release left: the second name exported too, under a hashed name
    (folder / "b.jsonl").unlink()
    _session(folder / "b.jsonl", "a1")
    _settle(tmp_path)
    write_parquet(out, session_dir=folder)
    assert len(list((out / "sessions" / partition_name("/work")).iterdir())) == 2
    (folder / "b.jsonl").unlink()
    os.link(folder / "a.jsonl", folder / "b.jsonl")
    assert write_parquet(out, session_dir=folder).removed == 1
    assert sorted(p.name for p in (out / "sessions" / partition_name("/work")).iterdir()) == ["a1.parquet"]


@pytest.mark.usefixtures("own_files")
def test_a_dataset_exported_twice_through_two_spellings_is_mended(
    agent: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What an earlier release left: each session's rows under both spellings, and its files
    twice (the second with a hashed name). The next export keeps one of each."""
    from pisession.dataset import _export

    link = tmp_path / "link-to-agent"
    link.symlink_to(agent, target_is_directory=True)
    out = tmp_path / "out"
    write_parquet(out)
    clean = _files(out)
    manifest = json.loads((out / _export.MANIFEST).read_text(encoding="utf-8"))
    for key, row in list(manifest["sessions"].items()):
        twin = dict(row, stem=row["stem"] + "-0123456789ab")
        manifest["sessions"][str(link / Path(key).relative_to(agent))] = twin
        for table in TABLES:
            folder = out / table / _export.partition_name(row["project"])
            shutil.copyfile(folder / f"{row['stem']}.parquet", folder / f"{twin['stem']}.parquet")
    (out / _export.MANIFEST).write_text(json.dumps(manifest), encoding="utf-8")
    assert len(_files(out)) == 90
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(link))
    report = write_parquet(out)
    assert (report.written, report.unchanged) == (0, 9)
    assert _files(out) == clean
    assert len(json.loads((out / _export.MANIFEST).read_text(encoding="utf-8"))["sessions"]) == 9


def test_leftover_temporaries_are_removed(agent: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    write_parquet(out)
    stale = out / "usage" / partition_name(SAMPLE_PROJECT) / ".session.parquet.123.0123456789ab.tmp"
    stale.write_bytes(b"PAR1 partial")
    manifest_tmp = out / "..pisession-dataset.json.123.0123456789ab.tmp"
    manifest_tmp.write_text("{", encoding="utf-8")
    mine = out / "usage" / partition_name(SAMPLE_PROJECT) / ".notes.tmp"  # not pisession's name: kept
    mine.write_text("mine", encoding="utf-8")
    write_parquet(out)
    assert not stale.exists() and not manifest_tmp.exists()
    assert mine.read_text(encoding="utf-8") == "mine"


# --------------------------------------------------------------------------- hostile input


def _session(path: Path, session_id: str, cwd: str = "/work") -> None:
    header = {
        "type": "session",
        "version": 3,
        "id": session_id,
        "timestamp": "2025-01-01T00:00:00.000Z",
        "cwd": cwd,
    }
    entry = {
        "type": "message",
        "id": "aaaa0001",
        "parentId": None,
        "timestamp": "2025-01-01T00:00:01.000Z",
        "message": {"role": "user", "content": "hi", "timestamp": 1735689601000},
    }
    path.write_text(json.dumps(header) + "\n" + json.dumps(entry) + "\n", encoding="utf-8")


@pytest.mark.usefixtures("own_files")
def test_hostile_session_ids_and_folder_names_stay_inside_the_output(tmp_path: Path) -> None:
    duckdb = pytest.importorskip("duckdb")
    pl = pytest.importorskip("polars")
    root = tmp_path / "agent" / "sessions"
    odd = root / "--a=b%2F c#d--"
    odd.mkdir(parents=True)
    project = "/a=b%2F c#d/../x"  # the project is the cwd: escaped, never a path
    _session(odd / "1.jsonl", "../../../escape", project)
    _session(odd / "2.jsonl", "same-id", project)
    _session(odd / "3.jsonl", "same-id", project)  # a copied file: two sessions, one id
    _session(odd / "4.jsonl", "SAME-ID", project)  # equal but for case
    _session(odd / "5.jsonl", "", project)
    (odd / "6.jsonl").write_text('{"type":"message"}\nnot json\n', encoding="utf-8")
    out = tmp_path / "out"
    os.environ["PI_CODING_AGENT_DIR"] = str(tmp_path / "agent")
    try:
        report = write_parquet(out)
    finally:
        del os.environ["PI_CODING_AGENT_DIR"]
    assert report.written == 5 and [Path(s.path).name for s in report.skipped] == ["6.jsonl"]
    made = sorted(p.relative_to(out) for p in out.rglob("*.parquet"))
    assert len(made) == 25
    assert all(len(p.parts) == 3 for p in made), made  # table / project=... / file: nothing escaped
    stems = {p.name for p in made}
    assert "same-id.parquet" in stems and len(stems) == 5
    assert not (tmp_path / "escape.parquet").exists()
    projects = duckdb.sql(
        f"SELECT DISTINCT project FROM read_parquet('{out}/sessions/**/*.parquet', hive_partitioning = true)"
    ).fetchall()
    assert projects == [(project,)]
    ids = pl.scan_parquet(f"{out}/sessions/", hive_partitioning=True).collect()["session_id"].to_list()
    assert sorted(ids) == sorted(["../../../escape", "same-id", "same-id", "SAME-ID", ""])


def test_a_project_folder_name_too_long_for_a_partition_is_cut_and_mapped_back(tmp_path: Path) -> None:
    from pisession.dataset._export import MANIFEST, PARTITION_MAX

    duckdb = pytest.importorskip("duckdb").connect()
    root = tmp_path / "agent" / "sessions"
    names = ["a" * 255, "é" * 127, "=" * 250, "b" * 192, "--short--"]  # 255 bytes, 254, 750 escaped, fits
    for number, name in enumerate(names):
        (root / name).mkdir(parents=True)
        _session(root / name / "s.jsonl", f"s{number}", name)  # a project (cwd) of that name
    _settle(tmp_path)
    out = tmp_path / "out"
    report = write_parquet(out, session_dir=root)
    assert (report.written, report.skipped) == (5, ())
    for path in out.rglob("*"):
        assert all(len(part.encode()) <= PARTITION_MAX for part in path.relative_to(out).parts)
    assert (out / "sessions" / ("project=" + "b" * 192)).is_dir()
    manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    read = duckdb.sql(
        f"SELECT session_id, project FROM read_parquet('{out}/sessions/**/*.parquet', "
        "hive_partitioning = true, hive_types = {'project': VARCHAR}) ORDER BY session_id"
    ).fetchall()
    # the project column reads back as the name, or as a cut value the manifest maps to the name
    back = [manifest.get("partitions", {}).get(project, project) for _, project in read]
    assert back == names
    assert len(manifest["partitions"]) == 3
    assert write_parquet(out, session_dir=root).unchanged == 5


# a cwd as Pi keeps an escaped lone surrogate in a header's JSON: short, and too long (cut, hashed)
@pytest.mark.parametrize("cwd", ["/home/\ud800x", "/home/" + "\udfff" * 100])
def test_a_cwd_holding_a_lone_surrogate_is_exported_as_the_replacement_character(
    cwd: str, tmp_path: Path
) -> None:
    from pisession.dataset._export import MANIFEST

    duckdb = pytest.importorskip("duckdb").connect()
    root = tmp_path / "s" / "--p--"
    root.mkdir(parents=True)
    _session(root / "s.jsonl", "s0", cwd)
    _settle(tmp_path)
    out = tmp_path / "out"
    report = write_parquet(out, session_dir=root)
    assert (report.written, report.skipped) == (1, ())
    manifest = json.loads((out / MANIFEST).read_text(encoding="utf-8"))
    read = duckdb.sql(
        f"SELECT cwd, project FROM read_parquet('{out}/sessions/**/*.parquet', "
        "hive_partitioning = true, hive_types = {'project': VARCHAR})"
    ).fetchall()
    cleaned = "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in cwd)
    ((column, project),) = read
    assert column == cleaned
    assert manifest.get("partitions", {}).get(project, project) in (cleaned, cwd)
    assert write_parquet(out, session_dir=root).unchanged == 1  # the manifest reads back
    direct = tables(session_dir=root)["sessions"]
    assert direct.column("cwd").to_pylist() == direct.column("project").to_pylist() == [cleaned]


# What a header or an entry may hold that the first export took and the next must take too
# (each once broke the export: a traceback, or a manifest its own check refused).
@pytest.mark.parametrize(
    ("session_id", "cwd", "odd_type"),
    [
        ("s1", "/work", []),  # an entry whose type is a list: unhashable
        ("s1", "/work", {"a": 1}),
        ("a\x00b", "/work", None),  # a NUL in the id (kept in the manifest)
        ("s1", "/" + "a" * 200 + "\x00", None),  # a NUL in a cwd cut for its folder name
    ],
)
def test_an_odd_header_or_entry_type_is_exported_and_exported_again(
    session_id: str, cwd: str, odd_type: Any, tmp_path: Path
) -> None:
    root = tmp_path / "s" / "--p--"
    root.mkdir(parents=True)
    _session(root / "odd.jsonl", session_id, cwd)
    _session(root / "plain.jsonl", "plain")
    if odd_type is not None:
        entry = {"type": odd_type, "id": "b2", "parentId": "aaaa0001", "timestamp": "2025-01-01T00:00:02Z"}
        with (root / "odd.jsonl").open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(entry) + "\n")
    _settle(tmp_path)
    before = (root / "odd.jsonl").read_bytes()
    out = tmp_path / "out"
    report = write_parquet(out, session_dir=root)
    assert (report.written, report.skipped) == (2, ())
    assert write_parquet(out, session_dir=root).unchanged == 2
    assert write_parquet(out, session_dir=root, full=True).written == 2
    entries = tables(session_dir=root)["entries"]
    kinds = sorted(str(kind) for kind in entries.column("type").to_pylist())
    assert kinds == (["None", "message", "message"] if odd_type is not None else ["message", "message"])
    assert (root / "odd.jsonl").read_bytes() == before


def _typed_looking(root: Path, names: list[str]) -> None:
    for number, name in enumerate(names):
        (root / name).mkdir(parents=True)
        _session(root / name / "s.jsonl", f"s{number}", name)


# Project names an engine would read as a number, a boolean, a date, or null: each its own dataset,
# since one folder name that is plain text makes the whole column text.
TYPED_LOOKING = ["0123", "12", "true", "1e5", "2024-01-01", "__HIVE_DEFAULT_PARTITION__"]


@pytest.mark.parametrize("name", TYPED_LOOKING)
def test_duckdb_and_polars_read_a_number_like_folder_name_as_text(name: str, tmp_path: Path) -> None:
    from pisession.dataset._export import MANIFEST

    duckdb = pytest.importorskip("duckdb").connect()
    pl = pytest.importorskip("polars")
    _typed_looking(tmp_path / "s", [name])
    _settle(tmp_path)
    out = tmp_path / "out"
    write_parquet(out, session_dir=tmp_path / "s")
    partitions = json.loads((out / MANIFEST).read_text(encoding="utf-8")).get("partitions", {})
    # the docs' recipes (docs/dataset.md)
    got = duckdb.sql(
        f"SELECT project FROM read_parquet('{out}/sessions/**/*.parquet', hive_partitioning = true, "
        "hive_types = {'project': VARCHAR})"
    ).fetchall()
    assert [partitions.get(v, v) for (v,) in got] == [name]
    frame = pl.scan_parquet(f"{out}/sessions/", hive_partitioning=True, hive_schema={"project": pl.String})
    column = frame.collect()["project"]
    assert column.dtype == pl.String
    assert [partitions.get(v, v) for v in column.to_list()] == [name]


def test_an_output_folder_that_is_not_a_dataset_is_refused_untouched(tmp_path: Path) -> None:
    out = tmp_path / "home"
    out.mkdir()
    (out / "notes.txt").write_text("mine", encoding="utf-8")
    with pytest.raises(DatasetError, match="not empty"):
        write_parquet(out, session_dir=tmp_path)
    assert [p.name for p in out.iterdir()] == ["notes.txt"]
    (tmp_path / "file").write_text("x", encoding="utf-8")
    with pytest.raises(DatasetError, match="not a folder"):
        write_parquet(tmp_path / "file", session_dir=tmp_path)


def test_a_second_export_into_the_same_folder_waits_then_says_so(
    agent: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import filelock

    from pisession.dataset import _export

    out = tmp_path / "out"
    write_parquet(out)
    monkeypatch.setattr(_export, "LOCK_TIMEOUT", 0.2)
    with (
        filelock.FileLock(str(out / ".pisession-dataset.lock")),
        pytest.raises(DatasetError, match="another export"),
    ):
        write_parquet(out, full=True)


def test_file_and_folder_names_that_are_not_utf8_are_skipped(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    folder.mkdir()
    _session(folder / "ok.jsonl", "ok")
    _session(Path(os.fsdecode(bytes(folder) + b"/bad-\xff.jsonl")), "bad")
    out = tmp_path / "out"
    report = write_parquet(out, session_dir=folder)
    assert (report.sessions, report.written) == (1, 1)
    assert _partition(out, "sessions", "/work").column("session_id").to_pylist() == ["ok"]


def test_a_path_that_is_not_a_session_raises_a_typed_error(tmp_path: Path) -> None:
    bad = tmp_path / "x.jsonl"
    bad.write_text('{"type":"message"}\n', encoding="utf-8")
    with pytest.raises(pisession.InvalidSessionError):
        tables(paths=[bad])


def test_a_session_with_no_entries_writes_typed_empty_tables(tmp_path: Path) -> None:
    folder = tmp_path / "s"
    folder.mkdir()
    (folder / "h.jsonl").write_text(
        '{"type":"session","version":3,"id":"h1","timestamp":"2025-01-01T00:00:00.000Z","cwd":"/w"}\n'
    )
    out = tmp_path / "out"
    write_parquet(out, session_dir=folder)
    for table in TABLES:
        read = _partition(out, table, "/w")
        assert read.schema.remove_metadata() == SCHEMAS[table].remove_metadata()
        assert read.num_rows == (1 if table == "sessions" else 0)


def test_a_session_dir_holding_project_folders_is_read_as_a_sessions_root(agent: Path) -> None:
    by_root = tables(session_dir=agent / "sessions")["sessions"]
    assert by_root.num_rows == 9
    assert set(by_root.column("project").to_pylist()) == PROJECTS
    assert set(by_root.column("folder").to_pylist()) == {"--project--", "--sample--", "--cases--"}


def test_cwd_selects_one_project(agent: Path) -> None:
    folder = agent / "sessions" / "--elsewhere--"
    folder.mkdir()
    _session(folder / "a.jsonl", "a1", cwd="/elsewhere")
    _session(folder / "b.jsonl", "b1", cwd="/other")
    assert [r["session_id"] for r in _rows(tables(cwd="/elsewhere")["sessions"])] == ["a1", "b1"]
    # another folder (Pi's --session-dir): only the sessions whose header names the cwd, as Pi lists them
    shared = agent / "shared"
    shutil.copytree(folder, shared)
    assert [r["session_id"] for r in _rows(tables(cwd="/elsewhere", session_dir=shared)["sessions"])] == [
        "a1"
    ]


# --------------------------------------------------------------------------- command line


def test_cli_writes_the_folder_and_reports(
    agent: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    assert cli_main(["dataset", str(out)]) == 0
    assert "9 sessions, 9 written (10 files)" in capsys.readouterr().out
    assert cli_main(["dataset", str(out), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["unchanged"] == 9
    assert cli_main(["dataset", str(out), "--cwd", str(tmp_path / "nowhere")]) == 2
    assert "no such folder" in capsys.readouterr().err
    (tmp_path / "file").write_text("x")
    assert cli_main(["dataset", str(tmp_path / "file")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("pisession: error:") and "Traceback" not in err


def test_cli_without_pyarrow_says_how_to_install_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in [m for m in sys.modules if m == "pyarrow" or m.startswith(("pyarrow.", "pisession.dataset"))]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow raises ImportError
    assert cli_main(["dataset", str(tmp_path / "out"), "--session-dir", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert 'pip install "pisession[data]"' in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


def test_import_pisession_and_pisession_tree_do_not_import_the_dataset() -> None:
    code = (
        "import sys, pisession; from pisession.cli.main import main; "
        f"main(['tree', {str(SAMPLE)!r}]); "
        "print('pyarrow' in sys.modules, 'pisession.dataset' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "False False"


@pytest.mark.parametrize(
    "stamp",
    [
        "2025-01-01T00:00:00.000Z",
        "2025-01-01T00:00:00Z",
        "2025-01-01T00:00:00.5Z",
        "2025-01-01T00:00:00.000Z\n",  # a regex's `$` would let the newline through
        "\u0662\u0660\u0662\u0665-01-01T00:00:00.000Z",  # digits, but not ASCII ones
        "2025-01-01T00:00:00.000+01:00",
        "2025-02-30T00:00:00.000Z",  # a day JavaScript rolls over into March
        "Wed, 01 Jan 2025 00:00:00 GMT",
        None,
    ],
)
def test_timestamps_read_as_javascript_reads_them_whichever_path_converts_them(stamp: str | None) -> None:
    from pisession._js import js_date_ms
    from pisession.dataset._schema import to_table

    columns = {name: [None] for name in SCHEMAS["entries"].names}
    columns.update(session_id=["s"], json=["{}"], timestamp=[stamp])
    got = to_table("entries", columns).column("timestamp")[0].value
    assert got == (None if stamp is None else js_date_ms(stamp))
