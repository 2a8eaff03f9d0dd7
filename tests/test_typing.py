"""Users' code type-checks: the user-style module and the docs' examples pass ``mypy --strict``,
and the types mypy reveals at the marked lines are the narrowed ones."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
USER_CODE = ROOT / "tests" / "typing" / "user_code.py"
LIBRARY_CODE = ROOT / "tests" / "typing" / "library_code.py"
RPC_USER_CODE = ROOT / "tests" / "typing" / "rpc_user_code.py"
CHECKED = [USER_CODE, LIBRARY_CODE, RPC_USER_CODE, *sorted((ROOT / "docs" / "examples").glob("*.py"))]

needs_mypy = pytest.mark.skipif(importlib.util.find_spec("mypy") is None, reason="mypy is not installed")


@pytest.fixture(scope="module")
def mypy_output(tmp_path_factory: pytest.TempPathFactory) -> str:
    cache = tmp_path_factory.mktemp("mypy-cache")
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(cache), *map(str, CHECKED)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    return result.stdout


@needs_mypy
def test_user_code_and_docs_examples_pass_mypy_strict(mypy_output: str) -> None:
    assert "Success: no issues found" in mypy_output


@needs_mypy
def test_literal_tags_narrow_where_the_user_code_expects(mypy_output: str) -> None:
    revealed = {
        int(m.group(1)): m.group(2)
        for m in re.finditer(r"user_code\.py:(\d+): note: Revealed type is \"(.+)\"", mypy_output)
    }
    expected = {
        n: line.split("  # expect: ")[1].strip()
        for n, line in enumerate(USER_CODE.read_text(encoding="utf-8").splitlines(), start=1)
        if "  # expect: " in line
    }
    assert expected and revealed == expected


@pytest.mark.parametrize("code", [USER_CODE, LIBRARY_CODE], ids=lambda p: p.stem)
def test_the_user_code_runs(tmp_path: Path, code: Path) -> None:
    spec = importlib.util.spec_from_file_location(code.stem, code)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.main(str(tmp_path))
