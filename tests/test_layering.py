"""The package's import graph: layers point one way, and there are no cycles.

Every module under ``assessors/`` is parsed with :mod:`ast`; every ``import`` counts, including the
ones inside functions (a function-local import is still a dependency, only a later one). The
layers, lowest first, are the ones docs/architecture.md draws.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "assessors"

#: Lowest first. A unit is a subpackage (``assessors/data/``) or a top-level module (``assessors/io.py``).
#: A unit may import units of its own layer or of lower ones, never of a higher one.
LAYERS: list[set[str]] = [
    {"errors", "io", "irt_math", "threads", "secrets", "metrics", "tags", "dask_cluster", "memo"},  # foundation: no assessors imports but each other
    {"data"},
    {"features"},
    {"selection", "classifiers"},
    {"core"},
    {"trust"},
    {"routing", "estimation"},
    {"onboarding", "reporting"},
    {"tracking", "tracking_store", "tracking_server"},
    {"serving"},
    {"grid"},
    {"tasks"},
]
RANK = {unit: i for i, layer in enumerate(LAYERS) for unit in layer}


def module_name(path: Path, root: Path = PACKAGE) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports_of(source: str, module: str, is_package: bool) -> set[str]:
    """Absolute names of everything ``source`` imports, at any depth (functions, classes, branches)."""
    out: set[str] = set()
    package = module if is_package else module.rpartition(".")[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            out.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: resolve against the importing package
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            out.add(name)
            out.update(f"{name}.{alias.name}" for alias in node.names)  # submodules imported by name
    return out


def import_graph(root: Path = PACKAGE) -> dict[str, set[str]]:
    """Module -> the package's modules it imports (names that are not modules map to their module)."""
    files = {module_name(p, root): p for p in root.rglob("*.py")}
    graph = {}
    for mod, path in files.items():
        targets = set()
        for name in imports_of(path.read_text(), mod, path.name == "__init__.py"):
            while name and name not in files:  # `from a.b import func`: the module is a.b
                name = name.rpartition(".")[0]
            if name and name != mod:
                targets.add(name)
        graph[mod] = targets
    return graph


def unit(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else None


def unit_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The graph between units (subpackages and top-level modules); the root package is left out."""
    out: dict[str, set[str]] = {}
    for mod, targets in graph.items():
        u = unit(mod)
        if u is None:
            continue
        out.setdefault(u, set()).update(t for t in map(unit, targets) if t is not None and t != u)
    return out


def upward_edges(units: dict[str, set[str]], rank: dict[str, int] = RANK) -> list[str]:
    """``a -> b`` for every import of a higher layer's unit (or of a unit in no layer)."""
    bad = []
    for a, targets in sorted(units.items()):
        for b in sorted(targets):
            if a not in rank or b not in rank:
                bad.append(f"{a} -> {b} (not in LAYERS: add it to the layer it belongs to)")
            elif rank[b] > rank[a]:
                bad.append(f"{a} (layer {rank[a]}) -> {b} (layer {rank[b]})")
    return bad


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as ``[a, b, ..., a]``, or None."""
    state: dict[str, int] = {}  # 1 on the stack, 2 done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph()


def test_every_unit_has_a_layer(graph):
    assert set(unit_graph(graph)) - set(RANK) == set(), "add new subpackages to LAYERS (and docs/architecture.md)"


def test_no_import_points_to_a_higher_layer(graph):
    assert upward_edges(unit_graph(graph)) == []


def test_no_cycle_between_units(graph):
    assert find_cycle(unit_graph(graph)) is None


def test_no_cycle_between_modules(graph):
    assert find_cycle(graph) is None


def test_function_local_imports_count(tmp_path):
    """A synthetic package whose low layer imports a task inside a function: the check must fail."""
    pkg = tmp_path / "assessors"
    for sub in ("data", "tasks"):
        (pkg / sub).mkdir(parents=True)
        (pkg / sub / "__init__.py").write_text("")
    (pkg / "__init__.py").write_text("")
    (pkg / "tasks" / "train.py").write_text("from assessors.data.load import load\n")
    (pkg / "data" / "load.py").write_text("def load():\n    from assessors.tasks.train import helper\n")
    g = import_graph(pkg)
    assert g["assessors.data.load"] == {"assessors.tasks.train"}
    units = unit_graph(g)
    assert upward_edges(units) == ["data (layer 1) -> tasks (layer 11)"]
    assert find_cycle(units) == ["data", "tasks", "data"]
    assert find_cycle(g) == ["assessors.data.load", "assessors.tasks.train", "assessors.data.load"]


def test_relative_and_unlayered_imports_are_seen():
    src = "from .. import tasks\nfrom .sibling import x\nimport assessors.newthing\n"
    assert {"assessors.tasks", "assessors.core.sibling", "assessors.newthing"} <= imports_of(src, "assessors.core.mod", False)
    assert upward_edges({"core": {"newthing"}}) == ["core -> newthing (not in LAYERS: add it to the layer it belongs to)"]
