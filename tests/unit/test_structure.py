"""How the modules depend on each other, read from every import statement in the package
(module level, inside functions and under TYPE_CHECKING alike): no import circle, no module over
600 lines, and the Docker SDK imported by the engine module alone."""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.env import REPO

PACKAGE = REPO / "tfbuild"
MAX_LINES = 600
ENGINE = "tfbuild.engine"


def _module(path: Path) -> str:
    parts = path.relative_to(REPO).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _sources() -> dict[str, Path]:
    return {_module(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _imported(node: ast.AST, module: str, is_package: bool) -> Iterator[str]:
    """The dotted names an import statement loads: each `from X import a` may name a module
    X.a or a name in X."""
    if isinstance(node, ast.Import):
        yield from (alias.name for alias in node.names)
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            anchor = module.split(".")[
                : len(module.split(".")) - node.level + (1 if is_package else 0)
            ]
            base = ".".join([*anchor, base] if base else anchor)
        yield base
        yield from (f"{base}.{alias.name}" for alias in node.names)


def imports() -> dict[str, set[str]]:
    """tfbuild module -> the tfbuild modules it imports anywhere in its text."""
    sources = _sources()
    graph: dict[str, set[str]] = {}
    for module, path in sources.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found: set[str] = set()
        for node in ast.walk(tree):
            for imported in _imported(node, module, path.name == "__init__.py"):
                name = imported
                while name and name not in sources:
                    name = name.rpartition(".")[0]
                if name.startswith("tfbuild") and name != module:
                    found.add(name)
        graph[module] = found - {"tfbuild"}  # tfbuild.__version__
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected groups of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_no_import_circle_anywhere() -> None:
    graph = imports()
    assert len(graph) > 30  # the walk read the package
    assert circles(graph) == []


def test_the_circle_finder_sees_imports_inside_functions() -> None:
    """A circle closed by an import inside a function is still a circle."""
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    tree = ast.parse("def f():\n    from tfbuild.plan import make_plan\n")
    (node,) = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)]
    assert "tfbuild.plan" in set(_imported(node, "tfbuild.engine", False))


def test_no_module_is_over_600_lines() -> None:
    long = {
        module: n
        for module, path in _sources().items()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}


def test_only_the_engine_module_imports_the_docker_sdk() -> None:
    users = []
    for module, path in _sources().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = list(_imported(node, module, path.name == "__init__.py"))
            if any(n == "docker" or n.startswith("docker.") for n in names):
                users.append(module)
                break
    assert users == [ENGINE]


SDK_WORDS = (
    "cpuset_cpus", "mem_limit", "device_requests", "network_mode", "cap_drop",
    "security_opt", "pids_limit", '"tmpfs"', "volumes=", '"bind"', "DeviceRequest", ".containers.",
    "remove=True",
)  # fmt: skip
"""The docker SDK's words for a container (its keyword arguments, its types, its collection).
`nano_cpus` is tfbuild's own too: the CPU quota as results record it since their first version."""


def sdk_words(text: str) -> list[str]:
    return [word for word in SDK_WORDS if word in text]


def test_only_the_engine_module_speaks_the_docker_sdks_words() -> None:
    """Callers say what they want as an engine.ContainerSpec; engine.py alone turns it into
    the SDK's keyword arguments."""
    speakers = {
        module: words
        for module, path in _sources().items()
        if (words := sdk_words(path.read_text(encoding="utf-8")))
    }
    assert set(speakers) == {ENGINE}, speakers


def test_the_sdk_word_check_sees_a_keyword_argument() -> None:
    caller = 'engine.container(image, ["true"], volumes={v: {"bind": "/c"}}, mem_limit="1g")'
    assert sdk_words(caller) == ["mem_limit", "volumes=", '"bind"']


def classes() -> dict[str, list[str]]:
    """class name -> the modules that define a class of that name (at any depth)."""
    found: dict[str, list[str]] = {}
    for module, path in _sources().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, []).append(module)
    return found


def test_no_class_name_is_defined_twice() -> None:
    """A name means one thing: a recorded suite is a SuiteRecord, the matrix's a Suite."""
    twice = {name: modules for name, modules in classes().items() if len(modules) > 1}
    assert twice == {}


FLOW: tuple[tuple[str, ...], ...] = (
    # the ground floor: what every stage may use, and the one module per outside system that
    # has no stage of its own (the Docker engine)
    ("tfbuild", "tfbuild.errors", "tfbuild.text", "tfbuild.files", "tfbuild.progress",
     "tfbuild.resources", "tfbuild.stats", "tfbuild.wheelfile", "tfbuild.records",
     "tfbuild.engine"),
    ("tfbuild.machine",),
    ("tfbuild.config",),
    ("tfbuild.pip",),
    ("tfbuild.plan",),
    ("tfbuild.store", "tfbuild.fetch"),
    ("tfbuild.build",),
    ("tfbuild.audit",),
    ("tfbuild.runtime",),
    ("tfbuild.results",),
    ("tfbuild.bench",),
    ("tfbuild.analysis",),
    ("tfbuild.report",),
    ("tfbuild.ci",),
    ("tfbuild.cli", "tfbuild.__main__"),
)  # fmt: skip
"""The places in the order data flows through them (ARCHITECTURE.md): a module imports its own
place and the places above it, never one below."""


def place(module: str) -> int:
    """The floor of a module: that of the longest place its name starts with."""
    found = [
        (len(name), floor)
        for floor, names in enumerate(FLOW)
        for name in names
        if module == name or (name != "tfbuild" and module.startswith(name + "."))
    ]
    assert found, f"{module} is in no place of the flow; add it to FLOW"
    return max(found)[1]


def backwards(graph: dict[str, set[str]]) -> list[str]:
    """Every import that points up the flow: a place importing one below it."""
    return sorted(
        f"{module} -> {target}"
        for module, targets in graph.items()
        for target in targets
        if place(target) > place(module)
    )


def test_imports_follow_the_flow() -> None:
    assert backwards(imports()) == []


def test_the_flow_check_sees_an_import_pointing_up() -> None:
    """The bench session asking the analysis directly would be an import pointing up the
    flow (it is handed the analysis's looks as a function instead)."""
    graph = {"tfbuild.bench.schedule": {"tfbuild.analysis.looks", "tfbuild.results.model"}}
    assert backwards(graph) == ["tfbuild.bench.schedule -> tfbuild.analysis.looks"]
    assert place("tfbuild.cli.app") > place("tfbuild.plan.make") > place("tfbuild.machine.cpu")
    with pytest.raises(AssertionError, match="in no place of the flow"):
        place("tfbuild.somewhere")


def test_the_runtime_interface_does_not_depend_on_its_docker_implementation() -> None:
    graph = imports()
    assert "tfbuild.runtime.container" in graph["tfbuild.runtime.make"]
    for module in ("tfbuild.runtime.base", "tfbuild.runtime.venv", "tfbuild.machine.profile"):
        assert not graph[module] & {"tfbuild.runtime.container"}, module
    assert "tfbuild.engine" not in graph["tfbuild.runtime.base"]


WHOLE = {"test_structure", "test_lint", "test_readme", "test_golden_files", "test_injection"}
"""Unit tests of the repository as a whole, not of one module."""


def test_unit_tests_mirror_the_package() -> None:
    """The test of tfbuild/<place>/<module>.py is tests/unit/<place>/test_<module>.py (a longer
    name may follow: test_<module>_fuzz.py); a ground-floor module's test is in tests/unit/."""
    tests = REPO / "tests" / "unit"
    modules = {m for m, path in _sources().items() if path.name != "__init__.py"}
    strays = []
    for path in sorted(tests.rglob("test_*.py")):
        place = path.parent.relative_to(tests).parts
        name = path.stem.removeprefix("test_")
        if not place and path.stem in WHOLE:
            continue
        candidates = [".".join(["tfbuild", *place, name.rsplit("_", k)[0]]) for k in range(3)]
        if not any(c in modules for c in candidates):
            strays.append(str(path.relative_to(REPO)))
    assert strays == []
    assert len(list(tests.rglob("test_*.py"))) > 40
    assert "tfbuild.bench" not in modules and "tfbuild.bench.session" in modules
