"""How the modules depend on each other, read from their import statements: no cycle among
module-level imports, the host profile never loads the Docker engine module, and the runtime
interface never depends on its Docker implementation (at any level, deferred imports included)."""

from __future__ import annotations

import ast
from pathlib import Path

from conftest import REPO

PACKAGE = REPO / "tfbuild"


def _module(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(*, deferred: bool) -> dict[str, set[str]]:
    """Module -> the tfbuild modules it imports (module level only, or every import)."""
    graph: dict[str, set[str]] = {}
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        nodes = ast.walk(tree) if deferred else iter(tree.body)
        found: set[str] = set()
        for node in nodes:
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tfbuild"):
                assert node.module is not None
                if node.module == "tfbuild":
                    found |= {f"tfbuild.{alias.name}" for alias in node.names}
                else:
                    found.add(node.module)
            elif isinstance(node, ast.Import):
                found |= {a.name for a in node.names if a.name.startswith("tfbuild")}
        graph[_module(path)] = found - {"tfbuild.__version__"}
    return graph


def test_module_level_imports_have_no_cycle() -> None:
    graph = imports(deferred=False)
    state: dict[str, str] = {}

    def visit(module: str, path: list[str]) -> None:
        state[module] = "open"
        for dep in sorted(graph.get(module, ())):
            assert state.get(dep) != "open", " -> ".join([*path, dep])
            if dep not in state:
                visit(dep, [*path, dep])
        state[module] = "done"

    for module in sorted(graph):
        if module not in state:
            visit(module, [module])
    assert len(graph) > 30  # the walk read the package


def test_host_and_runtime_interface_do_not_load_the_engine() -> None:
    graph = imports(deferred=True)
    assert "tfbuild.engine" in graph and "tfbuild.engine" in graph["tfbuild.bench.runner"]
    for module in ("tfbuild.host", "tfbuild.runtime"):
        assert "tfbuild.engine" not in graph[module], module
