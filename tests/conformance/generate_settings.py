#!/usr/bin/env python3
# ruff: noqa: E501  (long string literals are test data)
"""Regenerate golden/settings.json: what Pi's SettingsManager resolves (pi-oracle `settings`).

    python tests/conformance/generate_settings.py

Each case writes a global ``AGENT/settings.json`` and a project ``CWD/.pi/settings.json`` (text
as given, ``None``: no file, a list of ints: raw bytes, "<dir>": a folder in its place) under a
fresh temporary folder and asks the oracle, with HOME set to a fixed fake home, optionally with
``--model``, ``--untrusted`` and ``$PI_CODING_AGENT_SESSION_DIR``. The temporary folder is written
``$ROOT`` in the golden data. Needs `node` and ../shared/pi-oracle/setup.sh. Stdlib only.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
PROJECT = HERE.parent.parent
GOLDEN = HERE / "golden" / "settings.json"
GOLDEN_SESSION = HERE / "golden" / "settings_session.json"
GOLDEN_FILE_URLS = HERE / "golden" / "settings_file_urls.json"
ORACLE = Path(os.environ.get("PI_ORACLE", str(PROJECT.parent / "shared" / "pi-oracle" / "oracle.mjs")))
ORACLE_HOME = os.environ.get("PI_ORACLE_HOME") or str(Path.home() / ".cache" / "pi-oracle")
FAKE_HOME = "/home/pi"

C = '{"compaction": %s}'
CASES: list[dict[str, Any]] = [
    {"name": "no_files"},
    {"name": "empty_files", "global": "", "project": ""},
    {
        "name": "global_only",
        "global": '{"compaction": {"keepRecentTokens": 40000, "reserveTokens": 8000, "enabled": false}, "branchSummary": {"reserveTokens": 9000, "skipPrompt": true}, "sessionDir": "/data/pi-sessions"}',
    },
    {
        "name": "project_wins_key_by_key",
        "global": '{"compaction": {"keepRecentTokens": 40000, "reserveTokens": 8000}, "branchSummary": {"skipPrompt": true}}',
        "project": '{"compaction": {"keepRecentTokens": 1000}, "branchSummary": {"reserveTokens": 5}}',
    },
    {
        "name": "project_sessiondir_wins",
        "global": '{"sessionDir": "/global"}',
        "project": '{"sessionDir": "/project"}',
    },
    {
        "name": "project_null_replaces_object",
        "global": '{"compaction": {"keepRecentTokens": 40000}}',
        "project": '{"compaction": null}',
    },
    {
        "name": "project_scalar_replaces_object",
        "global": '{"compaction": {"keepRecentTokens": 40000}}',
        "project": '{"compaction": 5}',
    },
    {
        "name": "project_object_replaces_scalar",
        "global": '{"compaction": "x"}',
        "project": '{"compaction": {"reserveTokens": 7}}',
    },
    {
        "name": "untrusted_project_ignored",
        "global": '{"compaction": {"keepRecentTokens": 40000}}',
        "project": '{"compaction": {"keepRecentTokens": 1000}, "sessionDir": "/project"}',
        "untrusted": True,
    },
    {"name": "untrusted_bad_project_no_error", "project": "{oops", "untrusted": True},
    {
        "name": "model_override",
        "global": C
        % '{"keepRecentTokens": 40000, "modelOverrides": {"anthropic/claude": {"keepRecentTokens": 9000}}}',
        "model": "anthropic/claude",
    },
    {
        "name": "model_override_other_model",
        "global": C
        % '{"keepRecentTokens": 40000, "modelOverrides": {"anthropic/claude": {"keepRecentTokens": 9000}}}',
        "model": "openai/gpt",
    },
    {
        "name": "model_override_reserve",
        "global": C % '{"modelOverrides": {"openai/gpt-5": {"reserveTokens": 1234}}}',
        "model": "openai/gpt-5",
    },
    {
        "name": "model_override_merged_from_both",
        "global": C % '{"modelOverrides": {"a/m": {"reserveTokens": 1}}}',
        "project": C % '{"modelOverrides": {"a/m": {"keepRecentTokens": 2}}}',
        "model": "a/m",
    },
    {
        "name": "model_override_id_with_slash",
        "global": C % '{"modelOverrides": {"openrouter/meta/llama": {"keepRecentTokens": 77}}}',
        "model": "openrouter/meta/llama",
    },
    {"name": "model_override_not_object", "global": C % '{"modelOverrides": {"a/m": 5}}', "model": "a/m"},
    {"name": "model_override_null", "global": C % '{"modelOverrides": {"a/m": null}}', "model": "a/m"},
    {"name": "model_override_array", "global": C % '{"modelOverrides": {"a/m": [1, 2]}}', "model": "a/m"},
    {
        "name": "model_override_negative",
        "global": C % '{"modelOverrides": {"a/m": {"keepRecentTokens": -5}}}',
        "model": "a/m",
    },
    {"name": "model_override_bad_unused_without_model", "global": C % '{"modelOverrides": {"a/m": 5}}'},
    {"name": "model_overrides_string", "global": C % '{"modelOverrides": "x"}', "model": "a/m"},
    {"name": "keep_negative", "global": C % '{"keepRecentTokens": -1}'},
    {"name": "reserve_negative", "global": C % '{"reserveTokens": -1}'},
    {
        "name": "both_invalid_reserve_reported_first",
        "global": C % '{"keepRecentTokens": "x", "reserveTokens": 1.5}',
    },
    {"name": "keep_float", "global": C % '{"keepRecentTokens": 1.5}'},
    {"name": "keep_integral_float", "global": C % '{"keepRecentTokens": 1e3}'},
    {"name": "keep_string", "global": C % '{"keepRecentTokens": "40000"}'},
    {"name": "keep_null", "global": C % '{"keepRecentTokens": null}'},
    {"name": "keep_bool", "global": C % '{"keepRecentTokens": true}'},
    {"name": "keep_object", "global": C % '{"keepRecentTokens": {"a": 1}}'},
    {"name": "keep_array", "global": C % '{"keepRecentTokens": [1, [2, null], "x"]}'},
    {"name": "keep_unsafe", "global": C % '{"keepRecentTokens": 9007199254740992}'},
    {"name": "keep_max_safe", "global": C % '{"keepRecentTokens": 9007199254740991}'},
    {"name": "keep_huge", "global": C % '{"keepRecentTokens": 1e21}'},
    {"name": "keep_infinite", "global": C % '{"keepRecentTokens": 1e400}'},
    {"name": "keep_negative_zero", "global": C % '{"keepRecentTokens": -0}'},
    {"name": "keep_zero", "global": C % '{"keepRecentTokens": 0, "reserveTokens": 0}'},
    {"name": "enabled_string", "global": C % '{"enabled": "no"}'},
    {"name": "enabled_zero", "global": C % '{"enabled": 0}'},
    {"name": "enabled_null", "global": C % '{"enabled": null}'},
    {
        "name": "branch_summary_null",
        "global": '{"branchSummary": {"reserveTokens": null, "skipPrompt": null}}',
    },
    {"name": "global_unparseable", "global": "{not json", "project": C % '{"keepRecentTokens": 5}'},
    {"name": "project_unparseable", "global": C % '{"keepRecentTokens": 5}', "project": '{"a": 1,}'},
    {"name": "both_unparseable", "global": "//comment\n{}", "project": "{'a': 1}"},
    {"name": "whitespace_only_is_error", "global": "  \n"},
    {"name": "comments_are_errors", "global": '{"compaction": {"keepRecentTokens": 5} /* c */}'},
    {"name": "nan_is_error", "global": '{"compaction": {"keepRecentTokens": NaN}}'},
    {"name": "bom_stripped", "global": '\ufeff{"compaction": {"keepRecentTokens": 321}}'},
    {"name": "double_bom_is_error", "global": '\ufeff\ufeff{"compaction": {"keepRecentTokens": 321}}'},
    {"name": "invalid_utf8_in_string", "global": list(b'{"sessionDir": "/d/\xff\xfe"}')},
    {
        "name": "duplicate_key_last_wins",
        "global": '{"compaction": {"keepRecentTokens": 1}, "compaction": {"reserveTokens": 2}}',
    },
    {"name": "top_level_array", "global": "[1, 2]", "project": C % '{"keepRecentTokens": 5}'},
    {"name": "top_level_number", "global": "5"},
    {"name": "top_level_string", "global": '"abc"'},
    {"name": "top_level_null", "global": "null"},
    {"name": "top_level_true", "global": "true"},
    {"name": "settings_is_a_folder", "global": "<dir>"},
    {"name": "sessiondir_tilde", "global": '{"sessionDir": "~"}'},
    {"name": "sessiondir_tilde_slash", "global": '{"sessionDir": "~/pi/../sessions/"}'},
    {"name": "sessiondir_tilde_only_slash", "global": '{"sessionDir": "~/"}'},
    {"name": "sessiondir_tilde_user_kept", "global": '{"sessionDir": "~other/x"}'},
    {"name": "sessiondir_relative_kept", "global": '{"sessionDir": "rel/../s"}'},
    {"name": "sessiondir_file_url", "global": '{"sessionDir": "file:///tmp/a%20b"}'},
    {"name": "sessiondir_empty", "global": '{"sessionDir": ""}'},
    {"name": "sessiondir_null", "global": '{"sessionDir": null}'},
    # `__proto__` keys: Pi's deepMergeObjects assigns `result["__proto__"] = ...`, which sets the
    # merged object's prototype (issue 27, item 14); `constructor` and `prototype` are plain keys.
    {"name": "proto_project_session_dir", "project": '{"__proto__": {"sessionDir": "/elsewhere"}}'},
    {
        "name": "proto_project_session_dir_untrusted",
        "project": '{"__proto__": {"sessionDir": "/elsewhere"}}',
        "untrusted": True,
    },
    {"name": "proto_global_only_no_effect", "global": '{"__proto__": {"sessionDir": "/elsewhere"}}'},
    {
        "name": "proto_global_with_empty_project",
        "global": '{"__proto__": {"sessionDir": "/elsewhere"}}',
        "project": "{}",
    },
    {
        "name": "proto_in_both_files_is_a_plain_key",
        "global": '{"__proto__": {"sessionDir": "/global"}}',
        "project": '{"__proto__": {"sessionDir": "/project"}}',
    },
    {
        "name": "proto_global_non_object_then_project",
        "global": '{"__proto__": 5}',
        "project": '{"__proto__": {"sessionDir": "/project"}}',
    },
    {
        "name": "proto_global_null_then_project",
        "global": '{"__proto__": null}',
        "project": '{"__proto__": {"sessionDir": "/project"}}',
    },
    {
        "name": "proto_own_value_wins",
        "global": '{"sessionDir": "/global"}',
        "project": '{"__proto__": {"sessionDir": "/project"}}',
    },
    {
        "name": "proto_compaction_keep",
        "global": '{"compaction": {}}',
        "project": '{"compaction": {"__proto__": {"keepRecentTokens": 5, "reserveTokens": 6, "enabled": false}}}',
    },
    {
        "name": "proto_compaction_without_global_compaction",
        "project": '{"compaction": {"__proto__": {"keepRecentTokens": 5}}}',
    },
    {
        "name": "proto_compaction_own_global_value_wins",
        "global": '{"compaction": {"keepRecentTokens": 1}}',
        "project": '{"compaction": {"__proto__": {"keepRecentTokens": 5, "reserveTokens": 6}}}',
    },
    {
        "name": "proto_compaction_invalid",
        "global": '{"compaction": {}}',
        "project": '{"compaction": {"__proto__": {"keepRecentTokens": -1}}}',
    },
    {
        "name": "proto_compaction_global_own_proto_plain",
        "global": '{"compaction": {"__proto__": {"keepRecentTokens": 1}}}',
        "project": '{"compaction": {"reserveTokens": 2}}',
    },
    {
        "name": "proto_compaction_both_own_proto",
        "global": '{"compaction": {"__proto__": {"keepRecentTokens": 1}}}',
        "project": '{"compaction": {"__proto__": {"keepRecentTokens": 2}}}',
    },
    {
        "name": "proto_branch_summary",
        "global": '{"branchSummary": {}}',
        "project": '{"branchSummary": {"__proto__": {"reserveTokens": 7, "skipPrompt": true}}}',
    },
    {
        "name": "proto_top_level_compaction",
        "project": '{"__proto__": {"compaction": {"keepRecentTokens": 9}, "branchSummary": {"reserveTokens": 3}}}',
    },
    {
        "name": "proto_top_level_shadowed_by_global_compaction",
        "global": '{"compaction": {"reserveTokens": 1}}',
        "project": '{"__proto__": {"compaction": {"keepRecentTokens": 2}}}',
    },
    {"name": "proto_null", "project": '{"__proto__": null, "compaction": {"keepRecentTokens": 4}}'},
    {"name": "proto_number", "project": '{"__proto__": 5}'},
    {"name": "proto_string", "project": '{"__proto__": "/elsewhere"}'},
    {"name": "proto_true", "project": '{"__proto__": true}'},
    {"name": "proto_array", "project": '{"__proto__": ["/elsewhere"]}'},
    {"name": "proto_empty_object", "project": '{"__proto__": {}}'},
    {"name": "proto_nested_proto", "project": '{"__proto__": {"__proto__": {"sessionDir": "/deep"}}}'},
    {
        "name": "proto_nested_proto_compaction",
        "project": '{"__proto__": {"__proto__": {"compaction": {"keepRecentTokens": 11}}}}',
    },
    {
        "name": "proto_with_default_tools_in_project",
        "project": '{"__proto__": {"sessionDir": "/elsewhere"}, "defaultTools": ["read"]}',
    },
    {
        "name": "proto_with_default_tools_in_global",
        "global": '{"defaultTools": null}',
        "project": '{"__proto__": {"sessionDir": "/elsewhere"}}',
    },
    {
        "name": "proto_nested_kept_with_default_tools",
        "global": '{"compaction": {}, "defaultTools": ["+x"]}',
        "project": '{"compaction": {"__proto__": {"keepRecentTokens": 8}}, "defaultTools": ["-x"]}',
    },
    {
        "name": "proto_model_overrides",
        "global": '{"compaction": {"modelOverrides": {}}}',
        "project": '{"compaction": {"modelOverrides": {"__proto__": {"a/m": {"keepRecentTokens": 3}}}}}',
        "model": "a/m",
    },
    {
        "name": "proto_model_override_entry",
        "global": '{"compaction": {"modelOverrides": {"a/m": {}}}}',
        "project": '{"compaction": {"modelOverrides": {"a/m": {"__proto__": {"reserveTokens": 4}}}}}',
        "model": "a/m",
    },
    {
        "name": "proto_model_override_entry_not_object",
        "global": '{"compaction": {"modelOverrides": {}}}',
        "project": '{"compaction": {"modelOverrides": {"__proto__": {"a/m": 5}}}}',
        "model": "a/m",
    },
    {
        "name": "proto_constructor_key_is_plain",
        "global": '{"compaction": {}}',
        "project": '{"constructor": {"prototype": {"sessionDir": "/c"}}, "compaction": {"constructor": {"keepRecentTokens": 1}}}',
    },
    {
        "name": "proto_constructor_in_both",
        "global": '{"constructor": {"sessionDir": "/g"}}',
        "project": '{"constructor": {"prototype": {"sessionDir": "/p"}}}',
    },
    {"name": "proto_prototype_key_is_plain", "project": '{"prototype": {"sessionDir": "/p"}}'},
    {
        "name": "proto_to_string_key",
        "global": '{"compaction": {}}',
        "project": '{"compaction": {"toString": 1, "valueOf": {"a": 1}, "__proto__": {"keepRecentTokens": 12}}}',
    },
    {
        "name": "proto_session_dir_file_url",
        "project": '{"__proto__": {"sessionDir": "file:///tmp/a%20b"}}',
    },
    {
        "name": "sessiondir_env",
        "global": '{"sessionDir": "/from-settings"}',
        "env": {"PI_CODING_AGENT_SESSION_DIR": "~/from-env"},
    },
]


# `sessionDir` values Pi's getSessionDir() turns into a path with normalizePath (Node's
# fileURLToPath for a `file://` URL), or throws for (issue 27, item 15): each one asked of the
# oracle as the global setting.
FILE_URLS: list[str] = [
    "file:///tmp/sessions",
    "file:///tmp/a%20b",
    "file://",
    "file:///",
    "file://localhost/x",
    "file://LOCALHOST/x",
    "file://localhost",
    "file://%6Cocalhost/x",
    "file://\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54/x",
    "file://evil.example/x",
    "file://EVIL.example/x",
    "file://[::1]/x",
    "file://[::1/x",
    "file://[fe80::1%25eth0]/x",
    "file://[1.2.3.4]/x",
    "file://1.2.3.4/x",
    "file://999.1.1.1/x",
    "file://0x7f.1/x",
    "file://1.2.3.4.5/x",
    "file://a b/x",
    "file://a%20b/x",
    "file://a%2Fb/x",
    "file://a%zzb/x",
    "file://user@host/x",
    "file://host:80/x",
    "file://.../x",
    "file://xn--nxasmq6b/x",
    "file://xn--a/x",
    "file://b\u00fccher/x",
    "file://local\u00adhost/x",
    "file://local\u200bhost/x",
    "file://local\ufe0fhost/x",
    "file://%C2%ADlocalhost/x",
    "file://local\u200chost/x",
    "file://local\u200ehost/x",
    "file://LOCAL\u0130/x",
    "file://local\u3002host/x",
    "file://localhost./x",
    "file://\uff2c\uff2f\uff23\uff21\uff2c\uff28\uff2f\uff33\uff34/x",
    "file://evil/C:/x",
    "file:///a%2Fb",
    "file:///a%2fb",
    "file:///a%252Fb",
    "file:///a%zz",
    "file:///a%",
    "file:///a%2",
    "file:///a%E2%82",
    "file:///a%E2%82%AC",
    "file:///a%C0%80",
    "file:///a%ED%A0%80",
    "file:///a%F4%90%80%80",
    "file:///a%FF",
    "file:///a%00b",
    "file:///tmp/a\\b",
    "file:///a%5Cb",
    "file:///a%3F%23b",
    "file:///a?query#fragment",
    "file:///a#frag/b",
    "file:///a/../../b",
    "file:///a/./b/.",
    "file:///a/..",
    "file:///a%2e%2e/b",
    "file:///a/%2e%2E/b",
    "file:///a/%2e/b",
    "file:///a/.%2e",
    "file:////x",
    "file://///x",
    "file:///C:/x",
    "file:///C|/x",
    "file://C:/x",
    "file://C|/x",
    "file:///C:/../x",
    "file:///x\ty\nz",
    "file:///x ",
    "file:///x\u0001",
    "file:///caf\u00e9/%C3%A9",
    "file:///\ud800",
    "file:///%F0%9F%98%80",
    "file:///a b<c>\"d`{}",
    "FILE:///x",
    "file:/x",
    " file:///x",
]


def write_setting_file(path: Path, content: Any) -> None:
    if content is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    if content == "<dir>":
        path.mkdir()
    elif isinstance(content, list):
        path.write_bytes(bytes(content))
    else:
        path.write_text(content, encoding="utf-8")


def run_case(case: dict[str, Any]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="pi-settings-") as tmp:
        root = Path(tmp)
        agent, cwd = root / "agent", root / "project"
        agent.mkdir()
        cwd.mkdir()
        write_setting_file(agent / "settings.json", case.get("global"))
        write_setting_file(cwd / ".pi" / "settings.json", case.get("project"))
        args = ["node", str(ORACLE), "settings", str(cwd), "--agent-dir", str(agent)]
        if case.get("model"):
            args += ["--model", case["model"]]
        if case.get("untrusted"):
            args.append("--untrusted")
        env = {k: v for k, v in os.environ.items() if not k.startswith("PI_CODING_AGENT")}
        env.update(HOME=FAKE_HOME, PI_ORACLE_HOME=ORACLE_HOME, **case.get("env", {}))
        out = subprocess.run(args, env=env, capture_output=True, text=True, check=True, cwd="/").stdout
        return json.loads(out.replace(str(root), "$ROOT"))


# A session Pi writes into a folder of its own (what `sessionDir` makes it do): the CLI tests put
# it in a configured folder and look for it by id prefix, listing and search.
SESSION_SCRIPT = {
    "cwd": "/project",
    "clock": 1733234400000,
    "ops": [
        {
            "op": "appendMessage",
            "args": [{"role": "user", "content": "where do the sessions live", "timestamp": 1}],
        },
        {
            "op": "appendMessage",
            "args": [
                {
                    "role": "assistant",
                    "content": [{"type": "text", "text": "in the configured folder"}],
                    "api": "x",
                    "provider": "p",
                    "model": "m",
                    "usage": {
                        "input": 1,
                        "output": 1,
                        "cacheRead": 0,
                        "cacheWrite": 0,
                        "totalTokens": 2,
                        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0},
                    },
                    "stopReason": "stop",
                    "timestamp": 2,
                }
            ],
        },
    ],
}


def run_session_script(folder: Path, script: dict[str, Any] = SESSION_SCRIPT) -> dict[str, Any]:
    """The oracle's `ops` run of ``script`` with ``--dir folder``: Pi's SessionManager.create(cwd, folder)."""
    script_path = folder.parent / "script.json"
    script_path.write_text(json.dumps(script), encoding="utf-8")
    env = {**os.environ, "PI_ORACLE_HOME": os.environ.get("PI_ORACLE_HOME") or ORACLE_HOME}
    args = ["node", str(ORACLE), "ops", str(script_path), "--dir", str(folder)]
    out = subprocess.run(args, env=env, capture_output=True, text=True, check=True).stdout
    script_path.unlink()
    return json.loads(out)


def run_file_url(value: str) -> dict[str, Any]:
    """The oracle's getSessionDir() for ``{"sessionDir": value}`` as the global settings."""
    with tempfile.TemporaryDirectory(prefix="pi-settings-") as tmp:
        root = Path(tmp)
        agent, cwd = root / "agent", root / "project"
        agent.mkdir()
        cwd.mkdir()
        (agent / "settings.json").write_text(json.dumps({"sessionDir": value}), encoding="utf-8")
        args = ["node", str(ORACLE), "settings", str(cwd), "--agent-dir", str(agent)]
        env = {k: v for k, v in os.environ.items() if not k.startswith("PI_CODING_AGENT")}
        env.update(HOME=FAKE_HOME, PI_ORACLE_HOME=ORACLE_HOME)
        out = json.loads(subprocess.run(args, env=env, capture_output=True, text=True, check=True, cwd="/").stdout)
        if out["ok"]:
            return {"ok": True, "path": out["settingsSessionDir"]}
        return {"ok": False, "error": out["error"]}


def main() -> None:
    urls = [{"value": value, "expected": run_file_url(value)} for value in FILE_URLS]
    GOLDEN_FILE_URLS.write_text(json.dumps(urls, indent=1) + "\n", encoding="utf-8")
    print(f"wrote {len(urls)} values to {GOLDEN_FILE_URLS.relative_to(PROJECT)}")
    golden = []
    for case in CASES:
        golden.append({**case, "expected": run_case(case)})
    GOLDEN.write_text(json.dumps(golden, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {len(golden)} cases to {GOLDEN.relative_to(PROJECT)}")
    with tempfile.TemporaryDirectory(prefix="pi-settings-") as tmp:
        result = run_session_script(Path(tmp) / "sessions")
    session = {"name": Path(result["file"]).name, "text": result["text"]}
    GOLDEN_SESSION.write_text(json.dumps(session, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"wrote {GOLDEN_SESSION.relative_to(PROJECT)}")


if __name__ == "__main__":
    main()
