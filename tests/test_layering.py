"""The package's import graph: layers point one way, and there are no cycles.

Every module under ``assessors/`` is parsed with :mod:`ast`; every ``import`` counts, including the
ones inside functions (a function-local import is still a dependency, only a later one). The
layers, lowest first, are the ones docs/architecture.md draws.

Only the task layer (and the ``train.py``/``predict.py`` entry points, outside the package) reads
the config: below ``assessors/tasks/`` no module imports Hydra or OmegaConf, names a config type in
code (``OmegaConf``, ``DictConfig``, ``ListConfig``, however it got hold of it), or has a function
that takes a parameter annotated as a config node.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "assessors"

#: Lowest first. A unit is a subpackage (``assessors/data/``) or a top-level module (``assessors/io.py``).
#: A unit may import units of its own layer or of lower ones, never of a higher one.
LAYERS: list[set[str]] = [
    {"errors", "io", "irt_math", "linalg", "threads", "secrets", "metrics", "tags", "dask_cluster", "memo"},  # foundation: no assessors imports but each other
    {"data"},
    {"features"},
    {"selection", "classifiers"},
    {"core"},
    {"task_calibration"},  # adapts a fitted latent model (core) to a new task; onboarding and the tasks use it
    {"trust"},
    {"routing", "estimation"},
    {"onboarding", "reporting"},
    {"tracking", "tracking_store", "tracking_server"},
    {"serving"},
    {"grid"},
    {"tasks"},
]
RANK = {unit: i for i, layer in enumerate(LAYERS) for unit in layer}
#: The only layer that may read the config (Hydra, OmegaConf).
CONFIG_LAYER = "tasks"
CONFIG_PACKAGES = ("hydra", "omegaconf")
CONFIG_NODES = ("DictConfig", "ListConfig")
#: Names of the config's types: code that uses them reads the config, imported or not.
CONFIG_TYPES = ("OmegaConf", *CONFIG_NODES)


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


def config_uses(source: str) -> list[str]:
    """What in ``source`` reads the config: imports of :data:`CONFIG_PACKAGES` (at any depth),
    function parameters annotated with a config node (``DictConfig``, ``omegaconf.DictConfig | None``, ...)
    and other code naming a config type (:data:`CONFIG_TYPES`; strings and comments do not count)."""
    found = []
    tree = ast.parse(source)
    in_annotation = {id(n) for a in ast.walk(tree) if isinstance(a, ast.arg) and a.annotation is not None
                     for n in ast.walk(a.annotation)}  # reported once, as the parameter that takes it
    for node in ast.walk(tree):
        name = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
        if name in CONFIG_TYPES and id(node) not in in_annotation:
            found.append(f"line {node.lineno}: uses {name}")
            continue
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            names = [node.module or ""] if not node.level else []
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            a = node.args
            for arg in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg]:
                if arg is not None and arg.annotation is not None and \
                        any(n in ast.unparse(arg.annotation) for n in CONFIG_NODES):
                    found.append(f"line {node.lineno}: {node.name}({arg.arg}: {ast.unparse(arg.annotation)})")
            continue
        else:
            continue
        found += [f"line {node.lineno}: import {n}" for n in names if n.split(".")[0] in CONFIG_PACKAGES]
    return found


def config_readers(root: Path = PACKAGE) -> dict[str, list[str]]:
    """Modules below the task layer that read the config, with what they use."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        mod = module_name(path, root)
        if unit(mod) == CONFIG_LAYER:
            continue
        found = config_uses(path.read_text())
        if found:
            out[mod] = found
    return out


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


def synthetic_package(root: Path, files: dict[str, str]) -> Path:
    """An ``assessors`` package under ``root`` with ``files`` (relative path -> source) and the
    ``__init__.py`` of every subpackage they are in."""
    pkg = root / "assessors"
    for rel, source in files.items():
        path = pkg / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        for d in [pkg, *path.relative_to(pkg).parents]:
            (pkg / d / "__init__.py").touch()
        path.write_text(source)
    return pkg


def test_function_local_imports_count(tmp_path):
    """A synthetic package whose low layer imports a task inside a function: the check must fail."""
    pkg = synthetic_package(tmp_path, {"tasks/train.py": "from assessors.data.load import load\n",
                                       "data/load.py": "def load():\n    from assessors.tasks.train import helper\n"})
    g = import_graph(pkg)
    assert g["assessors.data.load"] == {"assessors.tasks.train"}
    units = unit_graph(g)
    assert upward_edges(units) == ["data (layer 1) -> tasks (layer 12)"]
    assert find_cycle(units) == ["data", "tasks", "data"]
    assert find_cycle(g) == ["assessors.data.load", "assessors.tasks.train", "assessors.data.load"]


def test_relative_and_unlayered_imports_are_seen():
    src = "from .. import tasks\nfrom .sibling import x\nimport assessors.newthing\n"
    assert {"assessors.tasks", "assessors.core.sibling", "assessors.newthing"} <= imports_of(src, "assessors.core.mod", False)
    assert upward_edges({"core": {"newthing"}}) == ["core -> newthing (not in LAYERS: add it to the layer it belongs to)"]


def test_only_the_tasks_read_the_config():
    """Components take built objects and plain values; the tasks compose, convert and instantiate."""
    assert config_readers() == {}


def test_config_reads_below_the_tasks_are_seen(tmp_path):
    """A synthetic package: each way of reading the config below the tasks is caught, the tasks' own are not."""
    pkg = synthetic_package(tmp_path, {
        "core/a.py": "import hydra.utils\n",
        "core/b.py": "def f():\n    from omegaconf import OmegaConf\n",
        "core/c.py": "def g(x, cfg: 'DictConfig | None' = None, *, n: int = 1):\n    pass\n",
        "core/d.py": "from typing import Mapping\ndef h(cfg: Mapping, hydra_dir: str):\n    pass  # OmegaConf\n",
        "core/e.py": "import sys\ndef k(node):\n    return sys.modules['omegaconf'].OmegaConf.to_container(node)\n",
        "tasks/t.py": "from omegaconf import DictConfig\ndef run(cfg: DictConfig):\n    pass\n"})
    assert config_readers(pkg) == {
        "assessors.core.a": ["line 1: import hydra.utils"],
        "assessors.core.b": ["line 2: import omegaconf"],
        "assessors.core.c": ["line 1: g(cfg: 'DictConfig | None')"],
        "assessors.core.e": ["line 3: uses OmegaConf"],
    }
