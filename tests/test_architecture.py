"""The package's shape (docs/architecture.md): no import circle, no module too long to hold in mind.

The import graph is built from the source with ``ast``, as a reader follows it: every import
counts, also one inside a function or under ``if TYPE_CHECKING:``. ``lint-imports`` (run by CI)
checks the layers of ``.importlinter``; this test keeps the graph free of circles even among the
parts of one layer, which the layers contract allows to import each other.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "pisession"


def _modules() -> dict[str, tuple[Path, bool]]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        found[".".join(parts)] = (path, is_package)
    return found


MODULES = _modules()


def _targets(module: str, is_package: bool, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The package's modules an import statement loads (the nearest enclosing module of each name)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        if node.level:
            base = module.split(".") if is_package else module.split(".")[:-1]
            base = base[: len(base) - (node.level - 1)]
            origin = ".".join([*base, *([node.module] if node.module else [])])
        else:
            origin = node.module or ""
        names = [f"{origin}.{alias.name}" for alias in node.names]
        names = [name if name in MODULES else origin for name in names]
    targets = []
    for name in names:
        while name and name not in MODULES:
            name = name.rpartition(".")[0]
        if name:
            targets.append(name)
    return targets


def import_graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for module, (path, is_package) in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        graph[module] = {
            target
            for node in ast.walk(tree)
            if isinstance(node, (ast.Import, ast.ImportFrom))
            for target in _targets(module, is_package, node)
            if target != module
        }
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected parts of more than one module (Tarjan's algorithm, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                part = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    part.append(member)
                    if member == node:
                        break
                if len(part) > 1:
                    found.append(sorted(part))
    return found


def test_the_graph_sees_lazy_and_type_only_imports() -> None:
    graph = import_graph()
    assert "pisession._manager" in graph["pisession._arguments"]
    # under `if TYPE_CHECKING:` only
    assert "pisession._session" in graph["pisession.compaction._flows"]
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_package_has_no_import_circle() -> None:
    found = circles(import_graph())
    assert not found, "modules that import each other (lazily or for types included): " + "; ".join(
        " <-> ".join(part) for part in found
    )


def test_no_module_is_too_long_to_hold_in_mind() -> None:
    """About 800 lines is the aim for a module of the package; 900 the limit (issue 28)."""
    lengths = {
        module: len(path.read_text(encoding="utf-8").splitlines()) for module, (path, _) in MODULES.items()
    }
    assert not {module: n for module, n in lengths.items() if n > 900}


def contract_layers() -> list[str]:
    """The layers of the layers contract in ``.importlinter``, top first."""
    import configparser

    config = configparser.ConfigParser()
    config.read(PACKAGE.parent / ".importlinter", encoding="utf-8")
    contract = config["importlinter:contract:layers"]
    assert contract["type"] == "layers" and contract["containers"].split() == ["pisession"]
    assert "exclude_type_checking_imports" not in contract  # type-only imports count
    return [line.strip() for line in contract["layers"].splitlines() if line.strip()]


def page_layers() -> list[str]:
    """The numbered list under "## The layers" in docs/architecture.md, top first."""
    import re

    page = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = page.split("\n## The layers\n", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"^\d+\. `([^`]+)`", section, flags=re.M)


def test_the_architecture_page_lists_the_layers_of_the_contract() -> None:
    layers = contract_layers()
    assert len(layers) >= 5
    assert layers[0] == "cli" and "_json" in layers[-2].split(" | ")
    assert page_layers() == layers
