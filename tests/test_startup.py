"""Start-up: ``import pisession`` and each command load only what they use (issue 14 item 1).

Which modules are loaded is checked in a fresh interpreter, never how long it takes: timings are
benchmarks (``benchmarks/run.py --startup``), not tests."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import pisession
import pisession._model

SAMPLE = Path(pisession.__file__).parent / "data" / "sample.jsonl"

# Machinery no plain reader needs: the cattrs converter, the export, compaction and catalog
# modules, the viewer, the asyncio wrappers and what they bring.
HEAVY = (
    "cattrs",
    "pisession.export",
    "pisession.compaction",
    "pisession.catalog",
    "pisession.usage",
    "pisession._viewer",
    "pisession.aio",
    "pisession.stats",
    "pisession.validate",
    "sqlite3",
    "asyncio",
)


def loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter holds after running ``code``."""
    probe = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, env=env)
    return set(json.loads(out.stdout.splitlines()[-1]))


def test_import_pisession_loads_only_the_package_and_its_errors() -> None:
    loaded = loaded_after("import pisession")
    ours = {m for m in loaded if m == "pisession" or m.startswith("pisession.")}
    assert ours == {"pisession", "pisession._errors"}
    for name in (*HEAVY, "typing", "attrs", "msgspec", "orjson", "ulid", "email.utils", "pathlib"):
        assert name not in loaded, name


def test_tree_command_loads_no_heavy_machinery() -> None:
    code = (
        "import contextlib, io\n"
        "from pisession.cli import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        f"    assert main(['tree', {str(SAMPLE)!r}]) == 0\n"
        "assert 'entries' in out.getvalue()\n"
    )
    loaded = loaded_after(code)
    assert "pisession._manager" in loaded  # the command did run
    for name in HEAVY:
        assert name not in loaded, name


# What `pisession tree` does without on a small session (issue 14: at most 3 x `python -c pass`):
# the model classes and attrs (tree walks the entries' JSON), msgspec (the whole lines are read)
# and orjson (a small file is parsed with the json module), and what those import; and typing
# (annotations only, for type checkers).
NOT_FOR_A_SMALL_TREE = (
    *HEAVY,
    "attrs",
    "pisession._model",
    "pisession._codec",
    "pisession._projection",
    "pisession._discovery",
    "pisession._lock",
    "pisession._ids",
    "msgspec",
    "orjson",
    "dataclasses",
    "inspect",
    "shutil",
    "threading",
    "datetime",
    "typing",
    "pisession.settings",  # a SESSION given as a path needs no session folder, so no Pi settings
)


@pytest.fixture(scope="module")
def demo_session(tmp_path_factory: pytest.TempPathFactory) -> str:
    from pisession.cli.demo import write_demo_session

    return write_demo_session(str(tmp_path_factory.mktemp("demo")))


@pytest.mark.parametrize("options", [[], ["--all"], ["--json"]], ids=["plain", "all", "json"])
def test_tree_of_a_small_session_creates_no_model_class(demo_session: str, options: list[str]) -> None:
    code = (
        "import contextlib, io, sys\n"
        f"sys.argv = ['pisession', 'tree', *{options!r}, {demo_session!r}]\n"
        "from pisession.cli import console_main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    assert console_main() == 0\n"  # as the console script calls it
        "assert 'entries' in out.getvalue() or '\"nodes\"' in out.getvalue()\n"
    )
    loaded = loaded_after(code)
    assert "pisession._manager" in loaded  # the command did run
    for name in NOT_FOR_A_SMALL_TREE:
        assert name not in loaded, name


def test_reading_a_small_session_and_its_tree_in_python_creates_no_model_class(demo_session: str) -> None:
    code = (
        "import pisession\n"
        "from pisession.views import tree_rows\n"
        f"manager = pisession.read_session({demo_session!r})\n"
        "rows = list(tree_rows(manager))\n"
        "assert rows and rows[0].entry['type']\n"
        "assert pisession.UNSET is not None and not pisession.UNSET\n"
    )
    loaded = loaded_after(code)
    for name in ("attrs", "pisession._model", "pisession._codec", "msgspec", "orjson", "typing"):
        assert name not in loaded, name


def test_the_describe_aliases_are_made_on_first_use() -> None:
    """``NoteKind``, ``EntryLike`` and ``MessageLike`` need typing (and the latter two the model):
    made when first asked for, the same values type checkers read."""
    code = (
        "import sys, pisession.describe as describe\n"
        "assert 'typing' not in sys.modules and 'pisession._model' not in sys.modules\n"
        "from pisession.describe import EntryLike, MessageLike, NoteKind\n"
        "import json, typing, pisession\n"
        "assert pisession.MessageEntry in typing.get_args(EntryLike)\n"
        "assert pisession.UserMessage in typing.get_args(MessageLike)\n"
        "print(json.dumps(typing.get_args(NoteKind)))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    kinds = json.loads(out.stdout)
    assert kinds == ["label", "edit", "keep", "orphan", "leaf"]
    # the Literal type checkers read (under TYPE_CHECKING) says the same
    source = (Path(pisession.__file__).parent / "describe.py").read_text(encoding="utf-8")
    literals = re.findall(r"Literal\[([^\]]*)\]", source)
    assert literals and all(json.loads(f"[{text}]".replace("'", '"')) == kinds for text in literals)


def test_a_large_file_is_parsed_with_orjson_and_opening_scans_with_msgspec(tmp_path: Path) -> None:
    big = tmp_path / "big.jsonl"
    lines = SAMPLE.read_bytes().split(b"\n")
    big.write_bytes(b"\n".join([lines[0], *[line for line in lines[1:] if line] * 400, b""]))
    assert big.stat().st_size >= 1 << 20
    read = loaded_after(f"import pisession\npisession.read_session_entries({str(big)!r})")
    assert "orjson" in read
    opened = loaded_after(f"import pisession\npisession.SessionManager.open({str(SAMPLE)!r}).get_tree()")
    assert "msgspec" in opened


def test_unset_is_one_object_wherever_it_is_imported_from() -> None:
    code = (
        "import pickle, pisession, sys\n"
        "unset = pisession.UNSET\n"
        "assert 'pisession._model' not in sys.modules\n"
        "import pisession._model, pisession._js\n"
        "assert pisession._model.UNSET is unset and pickle.loads(pickle.dumps(unset)) is unset\n"
        "assert pisession._js.MISSING is not unset\n"
        "print(type(unset).__module__, type(pisession._model.freeze_json({})).__module__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["pisession._model", "pisession._model"]  # as pickles name them


def test_other_commands_import_their_modules_when_they_run() -> None:
    code = (
        "import contextlib, io\n"
        "from pisession.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main(['stats', {str(SAMPLE)!r}]) == 0\n"
    )
    loaded = loaded_after(code)
    assert "pisession.stats" in loaded
    assert "pisession.export" not in loaded


def test_reading_a_session_in_python_needs_no_cattrs() -> None:
    code = (
        "import pisession\n"
        f"manager = pisession.read_session({str(SAMPLE)!r})\n"
        "assert manager.build_session_context().messages\n"
        "assert pisession.to_wire(manager.get_entries()[0])['id']\n"
    )
    loaded = loaded_after(code)
    for name in HEAVY:
        assert name not in loaded, name


def test_every_public_name_is_importable() -> None:
    namespace: dict[str, object] = {}
    exec("from pisession import *", namespace)
    missing = [name for name in pisession.__all__ if name not in namespace]
    assert missing == []
    assert set(pisession.__all__) <= set(dir(pisession))
    assert set(pisession._model.__all__) <= set(pisession.__all__)


def test_public_modules_are_attributes() -> None:
    loaded = loaded_after("import pisession\nassert callable(pisession.export.to_markdown)")
    assert "pisession.export" in loaded


def test_unknown_attribute_raises_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        pisession.no_such_name  # type: ignore[attr-defined]  # noqa: B018


def test_the_converter_is_built_on_first_use() -> None:
    code = (
        "import pisession._codec as codec, sys\n"
        "assert 'cattrs' not in sys.modules\n"
        "from pisession import Usage\n"
        "usage = codec.converter.structure({'input': 1, 'output': 2, 'cacheRead': 0, 'cacheWrite': 0,"
        " 'totalTokens': 3, 'cost': {'input': 0, 'output': 0, 'cacheRead': 0, 'cacheWrite': 0, 'total': 0}},"
        " Usage)\n"
        "assert usage.input == 1\n"
    )
    assert "cattrs" in loaded_after(code)


def test_a_command_loads_only_its_own_group() -> None:
    code = (
        "import contextlib, io\n"
        "from pisession.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert main(['tree', {str(SAMPLE)!r}]) == 0\n"
    )
    loaded = loaded_after(code)
    assert "pisession.cli.reading" in loaded
    for group in ("demo", "checking", "editing", "export"):
        assert f"pisession.cli.{group}" not in loaded, group


# What a warm `pisession ls --all --json` does without (issue 19: at most 0.1 x Pi's listAll):
# attrs (the rows, the report and the settings are plain read-only values), orjson (the catalog
# keeps each row's JSON), the search and usage modules, the worker processes' code (a warm call
# reads no file in full), and what those import.
NOT_FOR_A_WARM_LISTING = (
    "attrs",
    "cattrs",
    "orjson",
    "msgspec",
    "inspect",
    "dataclasses",
    "uuid",
    "pisession._model",
    "pisession._manager",
    "pisession._attribution",
    "pisession.catalog._search",
    "pisession.catalog._usage",
    "pisession.catalog._words",
    "pisession.describe",
    "pathlib",
    "pickle",
    "pisession.catalog._workers",
    "signal",
)


def test_a_warm_json_listing_loads_neither_attrs_nor_orjson(tmp_path: Path) -> None:
    manager = pisession.SessionManager.create("/work/p", str(tmp_path / "agent" / "sessions" / "--work-p--"))
    manager.append_message({"role": "user", "content": "hello", "timestamp": 1735787045000})
    env = {
        **os.environ,
        "PI_CODING_AGENT_DIR": str(tmp_path / "agent"),
        "PISESSION_CATALOG": str(tmp_path / "c.db"),
    }
    env.pop("PI_CODING_AGENT_SESSION_DIR", None)
    code = (
        "import contextlib, io, json, sys\n"
        "sys.argv = ['pisession', 'ls', '--all', '--json']\n"
        "from pisession.cli import console_main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    assert console_main() == 0\n"
        "assert json.loads(out.getvalue())[0]['firstMessage'] == 'hello'\n"
        "print(json.dumps(sorted(sys.modules)))"
    )
    for _ in ("cold", "warm"):  # the second run finds the catalog built
        result = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
        )
        loaded = set(json.loads(result.stdout.splitlines()[-1]))
    assert "pisession.catalog._list" in loaded  # the catalog did list
    for name in NOT_FOR_A_WARM_LISTING:
        assert name not in loaded, name


def test_the_command_table_matches_what_the_groups_register() -> None:
    import argparse

    from pisession.cli import main as cli_main

    module = sys.modules["pisession.cli.main"]
    registered: dict[str, str] = {}
    for group in module.GROUPS:
        parser = module.build_parser((group,))
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        registered.update(dict.fromkeys(sub.choices, group))
    assert registered == module.COMMANDS
    assert callable(cli_main)


def test_version_loads_no_command() -> None:
    code = (
        "import contextlib, io\n"
        "from pisession.cli import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    assert main(['--version']) == 0\n"
        "assert out.getvalue().startswith('pisession ')\n"
    )
    loaded = loaded_after(code)
    assert "pisession._manager" not in loaded
    groups = ("demo", "reading", "searching", "checking", "editing", "export")
    assert [g for g in groups if f"pisession.cli.{g}" in loaded] == []


def test_the_tree_records_are_small_immutable_values(demo_session: str) -> None:
    from pisession import read_session
    from pisession.describe import Note
    from pisession.views import TreeRow, tree_rows

    note = Note("label", "[start]")
    assert note == Note("label", "[start]") and note != Note("leaf", "[start]")
    assert hash(note) == hash(Note("label", "[start]"))
    assert repr(note) == "Note(kind='label', text='[start]')"
    with pytest.raises(AttributeError):
        note.text = "changed"  # type: ignore[misc]
    match note:
        case Note(kind, text):
            assert (kind, text) == ("label", "[start]")
    row = next(tree_rows(read_session(demo_session)))
    assert isinstance(row, TreeRow) and row.entry == row.node.wire_entry
    assert row == TreeRow(row.node, row.prefix, row.depth, row.children, row.active)
    assert repr(row).startswith("TreeRow(node=TreeNode(id=")
    with pytest.raises(AttributeError):
        row.depth = 3  # type: ignore[misc]


def test_only_the_console_script_freezes_what_it_made(demo_session: str) -> None:
    """``console_main`` freezes start-up's objects (its process exits next); ``main``, which a
    process that goes on may call, leaves the garbage collector as it was."""
    code = (
        "import contextlib, gc, io, sys\n"
        f"sys.argv = ['pisession', 'tree', {demo_session!r}]\n"
        "from pisession.cli import console_main, main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert main() == 0 and main(sys.argv[1:]) == 0\n"
        "assert gc.get_freeze_count() == 0 and gc.isenabled()\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        "    assert console_main() == 0\n"
        "assert gc.get_freeze_count() > 0\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_a_usage_report_loads_no_attrs(tmp_path: Path) -> None:
    # its values are plain read-only records: importing attrs cost a usage run about 40 ms
    (tmp_path / "agent" / "sessions").mkdir(parents=True)
    code = (
        "import contextlib, io, os\n"
        f"os.environ['PI_CODING_AGENT_DIR'] = {str(tmp_path / 'agent')!r}\n"
        f"os.environ['PISESSION_CATALOG'] = {str(tmp_path / 'catalog.sqlite3')!r}\n"
        "from pisession.cli import main\n"
        "out = io.StringIO()\n"
        "with contextlib.redirect_stdout(out):\n"
        "    assert main(['usage', 'daily', '--json']) == 0\n"
        "assert 'daily' in out.getvalue()\n"
    )
    loaded = loaded_after(code)
    assert "pisession.usage" in loaded and "pisession.catalog._usage" in loaded  # the report ran
    assert "attrs" not in loaded and "attr" not in loaded
