"""Every code block in docs/ runs: the docs cannot drift from the library they describe.

Each page is one test. Its blocks run in document order in a fresh temporary folder (the
current directory, ``$HOME`` and Pi's agent and session folders all inside it), so a page reads
like a session at the prompt: a block sees the names earlier blocks defined.

- ```` ```python ```` blocks run in one namespace per page that starts with the names the pages
  take as given: ``path`` (a copy of ``pisession/data/sample.jsonl``, the session the CLI page
  shows, in the session folder so ``019ad95a`` finds it), ``manager`` (``SessionManager.open(path)``),
  ``writer`` (a second manager of ``path``), ``messages`` (its context's messages), ``folder``
  (the session folder), ``pisession``, ``SessionManager`` and ``os``. ``session.jsonl`` in the
  folder is a session written by ``pisession.cli.demo.write_demo_session``. Top-level ``await``
  works, as in ``python -m asyncio``.
- ```` ```console ```` blocks: each ``$ command`` runs in a shell; it must exit 0, or 1 when the
  output the page shows reports an error (``validate``). ``pisession tail`` follows until
  interrupted: it gets SIGINT (Ctrl-C) once it has printed, and must then exit 0.
- ```` ```sh ```` blocks: each line runs in a shell (``pipefail``) and must exit 0, except lines
  that set up an environment or run the benchmarks (``pip install``, ``python3 -m venv``, the
  oracle's ``setup.sh``, ``benchmarks/``): they download packages or run for minutes, and CI
  runs them as their own steps. ``python docs/examples/NAME.py ...`` lines name an example that
  tests/test_cli.py runs; here the file must exist.
- A block whose only line is a snippet (``--8<-- "NAME.py"``) includes docs/examples/NAME.py,
  which tests/test_cli.py runs.
- ```` ```text ```` blocks are output and pictures, not code.
- ``<!-- docs-test: skip: REASON -->`` on the line before a fence skips that block. Keep these
  few: each says why its block cannot run here.
"""

from __future__ import annotations

import ast
import asyncio
import inspect
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

import pisession
from pisession.cli import main
from pisession.cli.demo import write_demo_session
from pisession.validate import validate_file

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
PAGES = sorted(p for p in DOCS.rglob("*.md"))
SAMPLE = ROOT / "pisession" / "data" / "sample.jsonl"
SAMPLE_NAME = "2025-12-01T10-00-00-001Z_019ad95a-d500-71af-a98a-7f381bc12a7c.jsonl"
CASES = ROOT / "tests" / "conformance" / "cases"
EXAMPLES = DOCS / "examples"
DAMAGED = ("orphans.jsonl", "malformed_lines.jsonl", "old-session.jsonl")  # copies of test cases

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<ticks>```+)(?P<info>.*)$")
_SKIP = re.compile(r"<!--\s*docs-test:\s*skip:\s*(?P<reason>.+?)\s*-->")
_SETUP_LINE = re.compile(r"(pip install|python3? -m venv|setup\.sh|benchmarks/)")
_EXAMPLE_LINE = re.compile(r"^python3? docs/examples/(?P<name>[\w.]+\.py)\b")
_SNIPPET = re.compile(r'^--8<--\s+"(?P<name>[^"]+)"$')


@dataclass
class Block:
    page: Path
    line: int  # 1-based line of the opening fence
    language: str
    code: str
    skip: str | None  # the reason given by a docs-test: skip marker

    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def code_blocks(page: Path) -> list[Block]:
    """The fenced blocks of a Markdown page, indented ones (inside tabs) included."""
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opening = _FENCE.match(lines[i])
        if opening is None:
            i += 1
            continue
        indent, ticks, info = opening["indent"], opening["ticks"], opening["info"].strip()
        previous = lines[i - 1].strip() if i else ""
        marker = _SKIP.search(previous)
        body: list[str] = []
        j = i + 1
        while j < len(lines) and lines[j].strip() != ticks:
            body.append(lines[j][len(indent) :] if lines[j].startswith(indent) else lines[j].lstrip())
            j += 1
        assert j < len(lines), f"{page}:{i + 1}: unclosed code block"
        language = re.split(r"[\s{]", info.lstrip("{."), maxsplit=1)[0] if info else ""
        reason = marker["reason"] if marker else None
        blocks.append(Block(page, i + 1, language, "\n".join(body) + "\n", reason))
        i = j + 1
    return blocks


def test_the_parser_sees_indented_blocks_and_markers(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        '=== "Python"\n\n    ```python\n    x = 1\n        y = 2\n    ```\n\n'
        "<!-- docs-test: skip: needs a network -->\n```sh\ncurl example.org\n```\n",
        encoding="utf-8",
    )
    first, second = code_blocks(page)
    assert (first.language, first.code, first.skip) == ("python", "x = 1\n    y = 2\n", None)
    assert (second.language, second.skip) == ("sh", "needs a network")


# ---------------------------------------------------------------------------- the folder


@pytest.fixture
def docs_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder where the docs' examples find what they name, and write only inside it."""
    sessions = tmp_path / "pi-sessions"
    sessions.mkdir()
    shutil.copy(SAMPLE, sessions / SAMPLE_NAME)
    demo = write_demo_session(str(tmp_path / "demo-source"))
    shutil.copy(demo, tmp_path / "session.jsonl")
    cases = ("orphans.jsonl", "malformed_lines.jsonl", "v1_linear.jsonl")
    for name, case in zip(DAMAGED, cases, strict=True):
        shutil.copy(CASES / case, tmp_path / name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("PI_CODING_AGENT_DIR", str(tmp_path / "agent"))
    monkeypatch.setenv("PI_CODING_AGENT_SESSION_DIR", str(sessions))
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setenv("NO_COLOR", "1")
    # The pages on pisession.rpc start "pi": here a stand-in speaking Pi's RPC protocol, so
    # their code runs without Node (tests/test_rpc.py runs the real Pi).
    monkeypatch.setenv("PI_BIN", shlex.join([sys.executable, str(ROOT / "tests" / "rpc_fake_pi.py")]))
    # The shell blocks call `pisession`: the one installed beside this Python, venv active or not.
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    return tmp_path


def initial_namespace(folder: Path) -> dict[str, object]:
    path = str(folder / "pi-sessions" / SAMPLE_NAME)
    manager = pisession.SessionManager.open(path)
    return {
        "__name__": "__docs__",
        "os": os,
        "pisession": pisession,
        "SessionManager": pisession.SessionManager,
        "path": path,
        "folder": str(folder / "pi-sessions"),
        "manager": manager,
        "writer": pisession.SessionManager.open(path),
        "messages": manager.build_session_context().messages,
    }


# ---------------------------------------------------------------------------- running blocks


def run_python(block: Block, namespace: dict[str, object]) -> None:
    code = compile(block.code, block.where(), "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
    result = eval(code, namespace)
    if inspect.iscoroutine(result):
        asyncio.run(result)


def run_shell(command: str, where: str, expected: int) -> None:
    if re.match(r"^pisession tail\b", command):
        run_until_interrupted(command, where)
        return
    result = subprocess.run(
        ["bash", "-o", "pipefail", "-c", command], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == expected, f"{where}: {command}\n{result.stdout}{result.stderr}"
    assert "Traceback" not in result.stderr, f"{where}: {command}\n{result.stderr}"


def run_until_interrupted(command: str, where: str) -> None:
    """A following command: wait until it has printed, press Ctrl-C, expect a clean exit."""
    out = Path(f"follow-{time.monotonic_ns()}.out")
    with out.open("wb") as sink:
        process = subprocess.Popen(shlex.split(command), stdout=sink, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 120
            while out.stat().st_size == 0 and process.poll() is None and time.monotonic() < deadline:
                time.sleep(0.05)
            assert out.stat().st_size > 0, f"{where}: {command} printed nothing"
            process.send_signal(signal.SIGINT)
            _, err = process.communicate(timeout=60)
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    assert process.returncode == 0, f"{where}: {command}\n{err.decode()}"


def console_commands(block: Block) -> list[tuple[str, int]]:
    """Each ``$ command`` with the exit status the output shown after it implies."""
    commands: list[tuple[str, int]] = []
    for line in block.code.splitlines():
        if line.startswith("$ "):
            commands.append((line[2:], 0))
        elif commands and re.search(r"\berror:|\b\d+ errors?\b", line):  # validate's report, "error:" lines
            commands[-1] = (commands[-1][0], 1)
    return commands


def run_block(block: Block, namespace: dict[str, object]) -> None:
    snippet = _SNIPPET.match(block.code.strip())
    if snippet is not None:
        assert (EXAMPLES / snippet["name"]).is_file(), block.where()
        return
    if block.language == "python":
        run_python(block, namespace)
    elif block.language == "console":
        commands = console_commands(block)
        assert commands, f"{block.where()}: a console block without a $ command"
        for command, expected in commands:
            run_shell(command, block.where(), expected)
    elif block.language in ("sh", "bash"):
        for line in block.code.splitlines():
            command = line.split(" #")[0].strip()
            if not command or command.startswith("#") or _SETUP_LINE.search(command):
                continue
            example = _EXAMPLE_LINE.match(command)
            if example is not None:
                assert (EXAMPLES / example["name"]).is_file(), f"{block.where()}: {command}"
                continue
            run_shell(command, block.where(), 0)
    else:
        assert block.language in ("text", "pycon", ""), f"{block.where()}: language {block.language!r}"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(DOCS)))
def test_page_code_runs(page: Path, docs_folder: Path) -> None:
    namespace = initial_namespace(docs_folder)
    try:
        for block in code_blocks(page):
            if block.skip is None:
                run_block(block, namespace)
    finally:
        for value in list(namespace.values()):
            if isinstance(value, pisession.SessionManager):
                value.close()
    # Whatever the page wrote is still a session Pi can read (the damaged examples aside).
    for written in docs_folder.rglob("*.jsonl"):
        # The importing page writes Claude Code and Codex files: sources, not Pi sessions.
        if written.name not in DAMAGED and not {".claude", ".codex"} & set(written.parts):
            report = validate_file(str(written))
            assert report.ok, f"{page.name} left {written} damaged: {report.problems}"


def test_skips_are_few_and_explained() -> None:
    skipped = [b for p in PAGES for b in code_blocks(p) if b.skip is not None]
    assert all(len(b.skip or "") >= 10 for b in skipped), [b.where() for b in skipped]
    assert len(skipped) <= 5, [b.where() for b in skipped]


def test_every_page_is_in_the_nav() -> None:
    nav = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    listed = set(re.findall(r":\s*([\w/.-]+\.md)\s*$", nav, flags=re.M))
    pages = {str(p.relative_to(DOCS)) for p in PAGES}
    assert pages - listed == set()


def test_the_cli_page_pairs_every_command_with_its_python_call(capsys: pytest.CaptureFixture[str]) -> None:
    main(["--help"])
    listed = capsys.readouterr().out.split("commands:", 1)[1].split("\n\n", 1)[0]
    commands = re.findall(r"^    (\w[\w-]*)\s{2,}", listed, flags=re.M)
    assert len(commands) >= 16, listed
    sections = re.split(r"^## ", (DOCS / "cli.md").read_text(encoding="utf-8"), flags=re.M)
    by_name = {section.split("\n", 1)[0].strip(): section for section in sections}
    for command in commands:
        section = by_name.get(command, "")
        assert '=== "Command line"' in section and '=== "Python"' in section, command
        python = [b for b in section.split('=== "Python"', 1)[1].split("```")[1:2]]
        assert python and python[0].startswith("python"), command


# ---------------------------------------------------------------------------- the API reference

TOOLING = DOCS / "tooling" / "griffe_pisession.py"
PUBLIC_MODULES = ("pisession", "pisession.export", "pisession.stats", "pisession.validate",
                  "pisession.describe", "pisession.views", "pisession.aio", "pisession.settings",
                  "pisession.rpc", "pisession.importers")  # fmt: skip
HIDDEN_INIT = {"SessionManager", "TreeIndex", "AsyncSessionManager"}  # the reference hides these


def load_tooling() -> object:
    import importlib.util

    spec = importlib.util.spec_from_file_location("griffe_pisession", TOOLING)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docstrings_become_markdown() -> None:
    pytest.importorskip("griffe")
    markdown_docstring = load_tooling().markdown_docstring  # type: ignore[attr-defined]
    text = "See :class:`UnknownEntry` and :meth:`~pisession.SessionManager.open`::\n\n    x = 1\n\nAfter."
    assert markdown_docstring(text) == ("See `UnknownEntry` and `open`:\n\n```python\nx = 1\n```\n\nAfter.")
    assert markdown_docstring(">>> f()\n1") == "```pycon\n>>> f()\n1\n```"


def test_public_signatures_name_public_types_only() -> None:
    griffe = pytest.importorskip("griffe")
    extension = load_tooling().PisessionDocs()  # type: ignore[attr-defined]
    private = re.compile(r"(?<![\w.])_[A-Za-z]\w*")
    leaks = []
    for module_name in PUBLIC_MODULES:
        module = griffe.load(
            module_name, extensions=griffe.load_extensions(extension), search_paths=[str(ROOT)]
        )
        for name in module.exports or []:
            obj = module[name]
            obj = obj.final_target if obj.is_alias else obj
            functions = [obj] if obj.is_function else []
            if obj.is_class:
                shown_init = obj.name not in HIDDEN_INIT
                functions += [
                    m
                    for n, m in obj.all_members.items()
                    if m.is_function and (not n.startswith("_") or (n == "__init__" and shown_init))
                ]
            for function in functions:
                parts = [function.returns, *(p.annotation for p in function.parameters)]
                parts += [p.name for p in function.parameters]
                for part in parts:
                    if part is not None and private.search(str(part)):
                        leaks.append(f"{module_name}.{name}: {function.name}: {part}")
    assert leaks == []


def test_the_docs_build_strictly_from_any_folder(tmp_path: Path) -> None:
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings_handlers.python")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-f", str(ROOT / "mkdocs.yml"),
         "-d", str(tmp_path / "site")],
        cwd=tmp_path, capture_output=True, text=True, env=env, timeout=600,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    reference = (tmp_path / "site" / "reference" / "session-manager" / "index.html").read_text()
    assert "get_entries_of_type" in reference and "_Entries" not in reference
