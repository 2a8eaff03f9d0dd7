"""The command line with the user's Pi settings: the ``sessionDir`` folder Pi writes sessions
into is where ``ls``, ``search`` and id lookup look (after ``--session-dir`` and
``$PI_CODING_AGENT_SESSION_DIR``), and ``compact`` / ``branch --summarize`` cut and budget with
the settings Pi's runtime would use for the session."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import ORACLE_HOME, needs_oracle

from pisession.cli import main

ROOT = Path(__file__).resolve().parents[1]
CONFORMANCE = ROOT / "tests" / "conformance"
SESSION = json.loads((CONFORMANCE / "golden" / "settings_session.json").read_text(encoding="utf-8"))
SESSION_ID = json.loads(SESSION["text"].splitlines()[0])["id"]
CODING = CONFORMANCE / "cases" / "compaction" / "coding.jsonl"
PI_COMPACT = json.loads((CONFORMANCE / "golden" / "compaction" / "compact.json").read_text(encoding="utf-8"))


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A user whose Pi lives in ``HOME/.pi/agent`` (no PI_CODING_AGENT_DIR), working in ``HOME/work``."""
    home = tmp_path / "home"
    (home / ".pi" / "agent").mkdir(parents=True)
    (home / "work").mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("PI_CODING_AGENT_DIR")
    monkeypatch.chdir(home / "work")
    yield home


def settings(home: Path, values: dict[str, Any] | str) -> None:
    text = values if isinstance(values, str) else json.dumps(values)
    (home / ".pi" / "agent" / "settings.json").write_text(text, encoding="utf-8")


def pi_session_in(folder: Path) -> Path:
    """The session Pi wrote with SessionManager.create("/project", folder) (oracle `ops --dir`)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / SESSION["name"]
    path.write_text(SESSION["text"], encoding="utf-8")
    return path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def listed(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    code, out, err = run(capsys, "ls", "--json", *argv)
    assert code == 0, err
    return [info["path"] for info in json.loads(out)]


def test_session_dir_setting_is_where_sessions_are_found(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings(home, {"sessionDir": "~/pi-sessions"})
    path = pi_session_in(home / "pi-sessions")
    assert listed(capsys, "--cwd", "/project") == [str(path)]
    assert listed(capsys, "--all") == [str(path)]
    code, out, err = run(capsys, "tree", SESSION_ID[:13])
    assert code == 0, err
    assert "where do the sessions live" in out
    assert listed(capsys, "--cwd", "/project", "--no-catalog") == [str(path)]
    assert listed(capsys, "--all", "--no-catalog") == [str(path)]
    assert listed(capsys, "--cwd", "/elsewhere") == []  # a project's sessions: by their header's cwd
    for scope in (["--all"], ["--cwd", "/project"]):
        code, out, err = run(capsys, "search", "configured folder", "--json", *scope)
        assert code == 0, err
        assert [hit["sessionPath"] for hit in json.loads(out)] == [str(path)]


def test_project_settings_folder_wins_over_global(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    settings(home, {"sessionDir": str(home / "global-sessions")})
    (home / "work" / ".pi").mkdir()
    (home / "work" / ".pi" / "settings.json").write_text('{"sessionDir": "~/project-sessions"}')
    pi_session_in(home / "global-sessions")
    path = pi_session_in(home / "project-sessions")
    assert listed(capsys, "--all") == [str(path)]


def test_flag_then_variable_then_setting(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    settings(home, {"sessionDir": "~/from-setting"})
    from_setting = pi_session_in(home / "from-setting")
    from_variable = pi_session_in(home / "from-variable")
    from_flag = pi_session_in(home / "from-flag")
    assert listed(capsys, "--all") == [str(from_setting)]
    monkeypatch.setenv("PI_CODING_AGENT_SESSION_DIR", "~/from-variable")
    assert listed(capsys, "--all") == [str(from_variable)]
    assert listed(capsys, "--all", "--session-dir", "~/from-flag") == [str(from_flag)]


def test_without_the_setting_that_folder_is_not_searched(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pi_session_in(home / "pi-sessions")
    code, _, err = run(capsys, "tree", SESSION_ID[:13])
    assert code == 1
    assert "no session file or session id matching" in err


def test_unusable_settings_file_is_said_and_skipped(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    settings(home, "{not json")
    code, out, err = run(capsys, "ls", "--all")
    assert code == 0
    assert "No sessions found" in out
    assert f"settings file ignored, as Pi ignores it: {home / '.pi' / 'agent' / 'settings.json'}" in err
    assert err.count("settings file ignored") == 1


def test_session_dir_not_a_string_is_a_clear_error(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    settings(home, {"sessionDir": 5})
    code, _, err = run(capsys, "ls")
    assert code == 1
    assert err == "pisession: error: Invalid sessionDir setting: 5. Expected a string.\n"


@needs_oracle
def test_live_pi_writes_into_the_configured_folder(
    home: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PI_ORACLE_HOME", str(ORACLE_HOME))  # HOME is the test's own here
    monkeypatch.syspath_prepend(str(CONFORMANCE))
    from generate_settings import SESSION_SCRIPT, run_session_script

    settings(home, {"sessionDir": "~/pi-sessions"})
    written = run_session_script(home / "pi-sessions", {**SESSION_SCRIPT, "cwd": str(home / "work")})
    session_id = json.loads(written["text"].splitlines()[0])["id"]
    assert listed(capsys) == [written["file"]]
    code, _, err = run(capsys, "tree", session_id[:13])
    assert code == 0, err


# -- `__proto__` keys and file:// folders (issue 27, items 14 and 15) ------------------------------


def test_an_untrusted_projects_proto_key_moves_the_session_folder(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Pi reads the project file for sessionDir even when it does not trust the project, and
    # its merge makes `__proto__` the merged settings' prototype (golden settings.json,
    # proto_project_session_dir): the project chooses where Pi keeps, and we look for, sessions.
    (home / "work" / ".pi").mkdir()
    (home / "work" / ".pi" / "settings.json").write_text(
        json.dumps({"__proto__": {"sessionDir": str(home / "elsewhere")}})
    )
    path = pi_session_in(home / "elsewhere")
    assert listed(capsys, "--all") == [str(path)]
    code, out, err = run(capsys, "settings", "--json")
    assert code == 0, err
    data = json.loads(out)
    assert data["projectTrusted"] is False
    assert data["sessionDir"] == {"value": str(home / "elsewhere"), "source": "project"}


def test_compact_plan_uses_compaction_settings_a_proto_key_supplies(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # golden settings.json, proto_compaction_keep: keepRecentTokens through compaction.__proto__
    session = home / "work" / "coding.jsonl"
    shutil.copy(CODING, session)
    settings(home, {"compaction": {}, "defaultProjectTrust": "always"})
    (home / "work" / ".pi").mkdir()
    (home / "work" / ".pi" / "settings.json").write_text(
        json.dumps({"compaction": {"__proto__": {"keepRecentTokens": 3000}}})
    )
    text = session.read_text(encoding="utf-8")
    header = json.loads(text.splitlines()[0])
    header["cwd"] = str(home / "work")
    session.write_text(json.dumps(header) + "\n" + text.split("\n", 1)[1], encoding="utf-8")
    result = plan(capsys, session)
    assert result is not None and result["firstKeptEntryId"] == pi_cut(3000)


@pytest.mark.parametrize(
    ("where", "value", "pi_message"),
    [
        ("setting", "file://evil.example/x", 'File URL host must be "localhost" or empty on linux'),
        ("variable", "file://[::1]/x", 'File URL host must be "localhost" or empty on linux'),
        ("flag", "file:///tmp/a%2Fb", "File URL path must not include encoded / characters"),
        ("setting", "file:///tmp/%zz", "URI malformed"),
        ("variable", "file:///tmp/%E2%82", "URI malformed"),
    ],
)
def test_a_file_url_pi_refuses_is_pis_error(
    home: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    where: str,
    value: str,
    pi_message: str,
) -> None:
    # where Pi's getSessionDir() throws, no other folder is used in its place (golden
    # settings_file_urls.json holds Pi's answer for each of 72 values)
    argv = ["ls", "--all"]
    if where == "setting":
        settings(home, {"sessionDir": value})
        source = f"the sessionDir setting of {home / '.pi' / 'agent' / 'settings.json'}"
    elif where == "variable":
        monkeypatch.setenv("PI_CODING_AGENT_SESSION_DIR", value)
        source = "$PI_CODING_AGENT_SESSION_DIR"
    else:
        argv += ["--session-dir", value]
        source = "--session-dir"
    for command in (argv, ["search", "x"], ["usage"], ["settings"]):
        if where == "flag" and command[0] != "ls":
            command = [*command, "--session-dir", value]
        code, out, err = run(capsys, *command)
        assert (code, out) == (1, "")
        assert err == f"pisession: error: Invalid file URL {json.dumps(value)} ({source}): {pi_message}\n"


def test_file_urls_pi_accepts(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # `\` is `/` and `localhost` is no host for Node's fileURLToPath (golden settings_file_urls.json)
    path = pi_session_in(home / "a" / "b")
    for value in (f"file://{home}/a\\b", f"file://localhost{home}/a/b", f"file://{home}/a/%62"):
        settings(home, {"sessionDir": value})
        assert listed(capsys, "--all") == [str(path)]


# -- a relative sessionDir and --cwd (issue 27, item 16) -----------------------------------------


def project_with_relative_folder(home: Path, where: str = "project") -> tuple[Path, Path]:
    """PROJ whose sessionDir setting (in its own settings, or the global ones) is the relative
    `rel-sessions`, and Pi's session of PROJ in PROJ/rel-sessions: (PROJ, the session file)."""
    project = home / "proj"
    (project / ".pi").mkdir(parents=True)
    if where == "project":
        (project / ".pi" / "settings.json").write_text('{"sessionDir": "rel-sessions"}')
    else:
        settings(home, {"sessionDir": "rel-sessions"})
    lines = SESSION["text"].splitlines(keepends=True)
    header = json.loads(lines[0])
    header["cwd"] = str(project)
    folder = project / "rel-sessions"
    folder.mkdir()
    path = folder / SESSION["name"]
    path.write_text(json.dumps(header) + "\n" + "".join(lines[1:]), encoding="utf-8")
    return project, path


@pytest.mark.parametrize("where", ["project", "global"])
def test_relative_session_dir_is_the_projects_whatever_folder_the_command_runs_in(
    home: Path, capsys: pytest.CaptureFixture[str], where: str
) -> None:
    # Pi started in PROJ hands `rel-sessions` to the file system as it is: PROJ/rel-sessions.
    project, path = project_with_relative_folder(home, where)
    assert Path.cwd() == home / "work"
    assert listed(capsys, "--cwd", str(project)) == [str(path)]
    assert listed(capsys, "--cwd", str(project), "--no-catalog") == [str(path)]
    code, out, err = run(capsys, "search", "configured folder", "--json", "--cwd", str(project))
    assert code == 0, err
    assert [hit["sessionPath"] for hit in json.loads(out)] == [str(path)]
    code, out, err = run(capsys, "settings", "--json", "--cwd", str(project))
    assert json.loads(out)["sessionDir"] == {"value": str(project / "rel-sessions"), "source": where}


def test_usage_with_cwd_reads_that_projects_settings(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    project, _ = project_with_relative_folder(home)
    code, out, err = run(capsys, "usage", "session", "--json", "--cwd", str(project))
    assert code == 0, err
    assert [row["sessionId"] for row in json.loads(out)["sessions"]] == [SESSION_ID]


def test_dataset_with_cwd_reads_that_projects_settings(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("pyarrow")
    project, _ = project_with_relative_folder(home)
    code, out, err = run(capsys, "dataset", str(home / "out"), "--json", "--cwd", str(project))
    assert code == 0, err
    assert json.loads(out)["sessions"] == 1


def test_fork_writes_where_pi_started_in_the_target_keeps_sessions(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project, path = project_with_relative_folder(home)
    code, out, err = run(capsys, "fork", str(path), "--cwd", str(project), "--json")
    assert code == 0, err
    assert Path(json.loads(out)["path"]).parent == project / "rel-sessions"
    assert len(listed(capsys, "--cwd", str(project))) == 2


@needs_oracle
def test_pi_opens_a_relative_session_dir_from_its_working_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # What the tests above rely on: Pi's SessionManager.create(cwd, "rel-sessions") (the value
    # getSessionDir() gives, unchanged: golden settings.json `sessiondir_relative_kept`) writes
    # under the working folder of the process, whatever cwd the session is for.
    monkeypatch.syspath_prepend(str(CONFORMANCE))
    from generate_settings import ORACLE, SESSION_SCRIPT

    started_in = tmp_path / "started-in"
    started_in.mkdir()
    script = tmp_path / "script.json"
    script.write_text(json.dumps({**SESSION_SCRIPT, "cwd": str(tmp_path / "elsewhere")}))
    env = {**os.environ, "PI_ORACLE_HOME": str(ORACLE_HOME)}
    args = ["node", str(ORACLE), "ops", str(script), "--dir", "rel-sessions"]
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=True, cwd=started_in)
    written = json.loads(done.stdout)["file"]
    assert Path(started_in, written).resolve().parent == started_in / "rel-sessions"
    assert list((started_in / "rel-sessions").glob("*.jsonl"))


# -- compaction and branch summaries with the user's settings -------------------------------------


def pi_cut(keep_recent_tokens: int) -> str | None:
    """Where Pi's /compact cuts the `coding` case with these settings (golden compact.json)."""
    wanted = {"keepRecentTokens": keep_recent_tokens}
    for run_ in PI_COMPACT:
        if run_["case"] == "coding" and run_["options"]["settings"] == wanted:
            preparation = run_["result"].get("preparation")
            return None if preparation is None else str(preparation["firstKeptEntryId"])
    raise AssertionError(f"no golden run with keepRecentTokens {keep_recent_tokens}")


def plan(capsys: pytest.CaptureFixture[str], path: Path, *flags: str) -> dict[str, Any] | None:
    code, out, err = run(capsys, "compact", str(path), "--plan", "--json", *flags)
    assert code == 0, err
    result: dict[str, Any] | None = json.loads(out)
    return result


def test_compact_plan_cuts_where_pi_cuts_with_the_users_settings(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert pi_cut(20000) is None and pi_cut(3000) is not None and pi_cut(3000) != pi_cut(1000)
    assert plan(capsys, CODING) is None  # Pi's defaults: nothing to compact
    settings(home, {"compaction": {"keepRecentTokens": 3000, "reserveTokens": 999}})
    with_settings = plan(capsys, CODING)
    assert with_settings is not None
    assert with_settings["firstKeptEntryId"] == pi_cut(3000)
    assert with_settings["settings"] == {"enabled": True, "reserveTokens": 999, "keepRecentTokens": 3000}
    overridden = plan(capsys, CODING, "--keep-recent-tokens", "1000", "--reserve-tokens", "7")
    assert overridden is not None and overridden["firstKeptEntryId"] == pi_cut(1000)
    assert overridden["settings"] == {"enabled": True, "reserveTokens": 7, "keepRecentTokens": 1000}


def test_manual_compact_runs_with_compaction_disabled(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # Pi's /compact does not look at compaction.enabled (only its automatic compaction does).
    settings(home, {"compaction": {"enabled": False, "keepRecentTokens": 3000}})
    result = plan(capsys, CODING)
    assert result is not None and result["firstKeptEntryId"] == pi_cut(3000)
    assert result["settings"]["enabled"] is False


def test_compact_uses_the_model_override_of_the_sessions_model(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings(
        home,
        {
            "compaction": {
                "keepRecentTokens": 3000,
                "modelOverrides": {"anthropic/claude-sonnet-4-5": {"keepRecentTokens": 1000}},
            }
        },
    )
    result = plan(capsys, CODING)
    assert result is not None and result["firstKeptEntryId"] == pi_cut(1000)


def test_compact_uses_the_project_settings_of_the_sessions_own_folder_when_pi_trusts_it(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    project = tmp_path / "elsewhere"
    (project / ".pi").mkdir(parents=True)
    (project / ".pi" / "settings.json").write_text('{"compaction": {"keepRecentTokens": 3000}}')
    lines = CODING.read_text(encoding="utf-8").splitlines(keepends=True)
    header = json.loads(lines[0])
    copy = tmp_path / "coding.jsonl"
    copy.write_text(json.dumps({**header, "cwd": str(project)}) + "\n" + "".join(lines[1:]), encoding="utf-8")
    assert plan(capsys, copy) is None  # a folder Pi was never told to trust: its settings do not count
    trust = home / ".pi" / "agent" / "trust.json"
    trust.write_text(json.dumps({str(tmp_path): True}))  # trusted through its parent, as Pi offers
    result = plan(capsys, copy)
    assert result is not None and result["firstKeptEntryId"] == pi_cut(3000)
    trust.write_text(json.dumps({str(tmp_path): True, str(project): False}))
    assert plan(capsys, copy) is None
    trust.unlink()
    settings(home, {"defaultProjectTrust": "always"})
    result = plan(capsys, copy)
    assert result is not None and result["firstKeptEntryId"] == pi_cut(3000)
    trust.write_text("[]")
    code, _, err = run(capsys, "compact", str(copy), "--plan")
    assert (code, err) == (1, f"pisession: error: Invalid trust store {trust}: expected an object\n")


def test_invalid_compaction_setting_is_pis_message(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    settings(home, {"compaction": {"keepRecentTokens": -1}})
    code, out, err = run(capsys, "compact", str(CODING), "--plan")
    assert (code, out) == (1, "")
    assert err == (
        "pisession: error: Invalid compaction.keepRecentTokens setting: -1. "
        "Expected a non-negative safe integer.\n"
    )


def test_branch_summary_budget_comes_from_the_settings(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def prompt_size(*flags: str) -> int:
        copy = tmp_path / "branch.jsonl"
        shutil.copyfile(CODING, copy)
        prompt = tmp_path / "prompt.txt"
        first = json.loads(CODING.read_text(encoding="utf-8").splitlines()[1])["id"]
        command = f"cat > {prompt}; echo SUMMARY"
        code, _, err = run(
            capsys, "branch", str(copy), first, "--summarize", "--summarizer-command", command, *flags
        )
        assert code == 0, err
        return len(prompt.read_text(encoding="utf-8"))

    full = prompt_size()
    settings(home, {"branchSummary": {"reserveTokens": 127000}})  # a 1000-token budget
    assert prompt_size() < full
    assert prompt_size("--reserve-tokens", "16384") == full


# -- pisession settings ---------------------------------------------------------------------------


def test_settings_command_says_what_comes_from_where(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    settings(
        home,
        {
            "sessionDir": "~/pi-sessions",
            "compaction": {"keepRecentTokens": 40000, "modelOverrides": {"a/m": {"reserveTokens": 5}}},
        },
    )
    (home / "work" / ".pi").mkdir()
    (home / "work" / ".pi" / "settings.json").write_text('{"branchSummary": {"skipPrompt": true}}')
    code, out, err = run(capsys, "settings")
    assert (code, err) == (0, "")
    assert "(project not trusted by Pi: only its sessionDir counts)" in out
    assert re.search(r"branchSummary.skipPrompt +false +Pi's default", out)
    (home / ".pi" / "agent" / "trust.json").write_text(json.dumps({str(home / "work"): True}))
    code, out, err = run(capsys, "settings", "--json", "--model", "a/m")
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert data["projectTrusted"] is True
    assert data["sessionDir"] == {"value": str(home / "pi-sessions"), "source": "global"}
    assert {name: (s["value"], s["source"], s["modelOverride"]) for name, s in data["settings"].items()} == {
        "compaction.enabled": (True, "default", False),
        "compaction.reserveTokens": (5, "global", True),
        "compaction.keepRecentTokens": (40000, "global", False),
        "branchSummary.reserveTokens": (16384, "default", False),
        "branchSummary.skipPrompt": (True, "project", False),
    }
    assert data["errors"] == []
    code, out, _ = run(capsys, "settings", "--session-dir", "/flag")
    assert code == 0
    assert "session folder               /flag" in out and "--session-dir" in out
    assert "compaction.keepRecentTokens  40000" in out


def test_settings_command_reports_bad_files_and_invalid_values(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    settings(home, {"compaction": {"reserveTokens": "big"}, "defaultProjectTrust": "always"})
    (home / "work" / ".pi").mkdir()
    (home / "work" / ".pi" / "settings.json").write_text("{oops")
    code, out, err = run(capsys, "settings")
    assert code == 1
    assert f"project settings: {home / 'work' / '.pi' / 'settings.json'} (ignored, as Pi ignores it" in out
    assert err == (
        "pisession: error: Invalid compaction.reserveTokens setting: big. "
        "Expected a non-negative safe integer.\n"
    )
    code, out, _ = run(capsys, "settings", "--json")
    assert code == 1
    data = json.loads(out)
    assert [e["scope"] for e in data["errors"]] == ["project"]
    assert data["settings"]["compaction.reserveTokens"]["value"] is None
    settings(home, {})  # not trusted now: Pi still reads the file for sessionDir, and says so
    code, out, _ = run(capsys, "settings", "--json")
    assert (code, json.loads(out)["projectTrusted"]) == (0, False)
    assert [e["scope"] for e in json.loads(out)["errors"]] == ["project"]


@needs_oracle
def test_pi_lists_nothing_in_a_folder_with_a_nul_byte_and_cannot_create_there(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # What docs/differences.md says: Pi's list and listAll give [], its create fails with
    # Node's ERR_INVALID_ARG_VALUE; pisession says so for every command (one line, status 1).
    monkeypatch.syspath_prepend(str(CONFORMANCE))
    from generate_settings import ORACLE

    folder = f"{tmp_path}/a\0b"
    env = {**os.environ, "PI_ORACLE_HOME": str(ORACLE_HOME)}
    answers = []
    calls = (("list", [str(tmp_path), folder]), ("listAll", [folder]), ("create", [str(tmp_path), folder]))
    for name, args in calls:
        command = ["node", str(ORACLE), "static", name, json.dumps(args)]
        done = subprocess.run(command, env=env, capture_output=True, text=True, check=True)
        answers.append(json.loads(done.stdout))
    assert [answer.get("value") for answer in answers[:2]] == [[], []]
    assert answers[2]["ok"] is False and "without null bytes" in answers[2]["error"]
    code, out, err = run(capsys, "ls", "--session-dir", f"file://{tmp_path}/a%00b")
    assert (code, out) == (1, "") and "holds a NUL byte" in err
