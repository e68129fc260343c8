"""How the modules depend on each other, read from every import statement in the package
(module level, inside functions and under TYPE_CHECKING alike): no import circle, no module over
600 lines, no long function where changes land, and the Docker SDK imported by the engine module
alone."""

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


FUNCTION_LINES = {"tfbuild.cli": 50, "tfbuild.analysis": 80}
"""The longest a function may be (its def to its last line, docstring included) where the
changes land: a command is a short pipeline of named steps, the analysis a handful of them."""


def _long_functions(source: str, limit: int) -> list[str]:
    return [
        f"{node.name}: {n}"
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        and (n := (node.end_lineno or node.lineno) - node.lineno + 1) > limit
    ]


def test_no_command_or_analysis_function_is_long() -> None:
    long = {
        module: found
        for module, path in _sources().items()
        for place, limit in FUNCTION_LINES.items()
        if module.startswith(place + ".")
        and (found := _long_functions(path.read_text(encoding="utf-8"), limit))
    }
    assert long == {}


def test_the_length_check_counts_a_function_from_def_to_its_last_line() -> None:
    def lines(n: int) -> str:
        return "".join(f"    x{i} = {i}\n" for i in range(n))

    assert _long_functions(f"def f():\n{lines(50)}", 50) == ["f: 51"]
    assert _long_functions(f"@decorated\ndef f():\n{lines(49)}", 50) == []  # not the decorator


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
    ("tfbuild", "tfbuild.errors", "tfbuild.wording", "tfbuild.files", "tfbuild.progress",
     "tfbuild.resources", "tfbuild.stats", "tfbuild.sequential", "tfbuild.wheelfile",
     "tfbuild.jsonrecords",
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


STAGES = ("store", "fetch", "plan", "build", "audit", "runtime", "results", "bench", "analysis",
          "report")  # fmt: skip
"""The stages whose hand-offs are typed: what one of them calls in another says what it takes
and gives, never `Any` (nor `dict[str, Any]`)."""

UNTYPED: dict[str, str] = {
    "tfbuild.results.calibration.step_times": "reads a benchmark process's JSON line: the "
    "process boundary",
    "tfbuild.results.codec.benchmark_result": "reads a benchmark process's JSON line: the "
    "process boundary",
}
"""Hand-offs that still say `Any`, each with why: the list shrinks, it does not grow."""


def _stage(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "tfbuild" else ""


def _names_used(module: str, tree: ast.Module, modules: set[str]) -> set[tuple[str, str]]:
    """(module, name) of every tfbuild name `module` imports from another stage, or reads as
    an attribute of a module it imports from another stage."""
    used = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.ImportFrom) and (node.module or "").startswith("tfbuild")):
            continue
        for alias in node.names:
            source = f"{node.module}.{alias.name}"
            if source in modules:  # a module: the names taken from it as module.name
                local = alias.asname or alias.name
                used |= {(source, a.attr) for a in ast.walk(tree) if isinstance(a, ast.Attribute)
                         and isinstance(a.value, ast.Name) and a.value.id == local}  # fmt: skip
            else:
                used.add((str(node.module), alias.name))
    return {(m, n) for m, n in used if _stage(m) != _stage(module)}


def _untyped(node: ast.FunctionDef | ast.ClassDef) -> Iterator[str]:
    """The function, or the public methods of the class, whose signature says `Any`; readers
    and writers of JSON (to_json, from_json, *_json) are where documents become records and
    back, and are not hand-offs."""
    functions = [node] if isinstance(node, ast.FunctionDef) else [
        f for f in node.body if isinstance(f, ast.FunctionDef)
        and (not f.name.startswith("_") or f.name == "__init__")
    ]  # fmt: skip
    for f in functions:
        if f.name in ("to_json", "from_json") or f.name.endswith("_json"):
            continue
        annotations = [a.annotation for a in (*f.args.args, *f.args.kwonlyargs)]
        text = " ".join(ast.unparse(a) for a in (*annotations, f.returns) if a)
        if "Any" in text.replace("[", " ").replace("]", " ").replace(",", " ").split():
            yield node.name + (f".{f.name}" if f is not node else "")


def untyped_handoffs(texts: dict[str, str]) -> set[str]:
    """Every function or public method that a module of one stage uses from another stage
    whose signature says `Any`."""
    trees = {module: ast.parse(text) for module, text in texts.items()}
    used = {pair for m, tree in trees.items() for pair in _names_used(m, tree, set(trees))}
    return {
        f"{source}.{name}"
        for source, wanted in used
        if source in trees
        for node in trees[source].body
        if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name == wanted
        for name in _untyped(node)
    }


def test_stages_hand_each_other_typed_records() -> None:
    """A stage never reads another's dict keys: what crosses between stages is a typed record
    (Manifest, AuditReport, Results, HostReport, ContainerSpec...)."""
    texts = {m: p.read_text(encoding="utf-8") for m, p in _sources().items()}
    in_stages = {m: t for m, t in texts.items() if _stage(m) in STAGES}
    assert untyped_handoffs(in_stages) == set(UNTYPED)


def test_the_handoff_check_sees_an_untyped_signature() -> None:
    texts = {
        "tfbuild.audit.inspect": "from typing import Any\n"
        "def inspect_wheel(path: str) -> dict[str, Any]: ...\n"
        "def to_json() -> dict[str, Any]: ...\n"
        "class Report:\n    def lines(self, extra: Any) -> list[str]: ...\n",
        "tfbuild.bench.prepare": "from tfbuild.audit.inspect import inspect_wheel, to_json, Report",
        "tfbuild.audit.verdict": "from tfbuild.audit import inspect\ninspect.inspect_wheel('x')",
    }
    found = untyped_handoffs(texts)
    assert found == {"tfbuild.audit.inspect.inspect_wheel", "tfbuild.audit.inspect.Report.lines"}


def test_the_runtime_interface_does_not_depend_on_its_docker_implementation() -> None:
    graph = imports()
    assert "tfbuild.runtime.container" in graph["tfbuild.runtime.make"]
    for module in ("tfbuild.runtime.base", "tfbuild.runtime.venv", "tfbuild.machine.profile"):
        assert not graph[module] & {"tfbuild.runtime.container"}, module
    assert "tfbuild.engine" not in graph["tfbuild.runtime.base"]


WHOLE = {"test_structure", "test_readme", "test_golden_files", "test_injection", "test_lock",
         "test_warm"}  # fmt: skip
"""Unit tests of the repository as a whole, not of one module (test_warm: of the tests' own
way of running tfbuild, support/warm.py)."""


TESTED_ELSEWHERE: dict[str, tuple[str, str, str]] = {
    # module: (the test file that exercises it, its assertion about the module, why there)
    "tfbuild.audit.qemu": (
        "tests/integration/test_isa_emulation.py",
        'assert code == 6 and "Haswell-v1: dies with SIGILL" in out',
        "needs qemu-user and real wheels: `tfbuild verify`",
    ),
    "tfbuild.bench.zygote": (
        "tests/integration/test_forked.py",
        'assert all(r is not None and r["forked"] is True for r in results)',
        "runs in a runtime beside the payload: forked processes of real TensorFlow",
    ),
    "tfbuild.bench.workload_payload": (
        "tests/integration/test_workload.py",
        'assert "workload stock: loaded in" in proc.stderr + proc.stdout',
        "runs inside TensorFlow: the user's model, real TensorFlow",
    ),
    "tfbuild.build.base": (
        "tests/integration/test_base_image.py",
        'assert _labels(tag)["org.tfbuild.base.from"] == pinned',
        "makes an image on a real engine",
    ),
    "tfbuild.machine.remote": (
        "tests/integration/test_remote_engine.py",
        "assert topology.cgroup is not None and topology.cgroup.quota_cpus == 1.0",
        "the machine of another engine: a real remote engine",
    ),
}
"""Modules without a unit test of their own name, each with where it is tested and why."""


def _own_test(module: str) -> bool:
    place, _, name = module.removeprefix("tfbuild").lstrip(".").rpartition(".")
    folder = REPO / "tests" / "unit" / Path(*place.split(".")) if place else REPO / "tests" / "unit"
    return any(folder.glob(f"test_{name}.py")) or any(folder.glob(f"test_{name}_*.py"))


def test_every_module_has_a_test_of_its_name_or_says_where_it_is_tested() -> None:
    """A new module without a test of its name fails here until it has one or an entry; an
    entry whose module got a test of its own, or whose test no longer shows it, fails too."""
    entry_points = ("__init__.py", "__main__.py")
    modules = {m for m, path in _sources().items() if path.name not in entry_points}
    untested = {m for m in modules if not _own_test(m)}
    assert untested == set(TESTED_ELSEWHERE)
    assert len(TESTED_ELSEWHERE) <= 15
    for module, (test, shows, why) in TESTED_ELSEWHERE.items():
        assert shows.startswith("assert "), (module, shows)  # an assertion, not a mention
        assert why and shows in (REPO / test).read_text(encoding="utf-8"), (module, test, shows)


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
