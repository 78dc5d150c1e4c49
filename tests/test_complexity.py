"""Function size limits for the package: length and cyclomatic complexity.

Every function and method in ``assessors/`` is measured, nested ones too: cyclomatic complexity
with ``radon`` (branches, loops, ``except`` clauses, boolean operators and comprehensions; a nested
function is measured on its own, not in the one that holds it) and length with ``ast`` (lines from
``def`` to the last line, less the docstring, so documenting a function never pushes it over). A function over either limit fails the test unless its docstring carries
the exemption marker followed by the reason, e.g. ``size-exempt: one flat table of options``.
"""
from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest
from radon.visitors import ComplexityVisitor

PACKAGE = Path(__file__).resolve().parent.parent / "assessors"
MAX_LINES = 60
MAX_COMPLEXITY = 15
# In a docstring, followed by the reason on the same line (at least a few words).
EXEMPT_MARKER = "size-exempt:"

ALLOWED: frozenset[str] = frozenset()



@dataclass(frozen=True)
class Finding:
    """One function: where, its qualified name, its length, its complexity, whether exempt."""

    path: str
    name: str
    lineno: int
    lines: int
    complexity: int
    exempt: bool = False

    @property
    def key(self) -> str:
        return f"{self.path}:{self.name}"

    def __str__(self) -> str:
        return f"{self.path}:{self.lineno} {self.name}: {self.lines} lines, complexity {self.complexity}"


def _docstring_lines(node: ast.AST) -> int:
    """Lines the function's docstring spans (0 without one)."""
    body = getattr(node, "body", [])
    if body and isinstance(body[0], ast.Expr) and isinstance(getattr(body[0], "value", None), ast.Constant) \
            and isinstance(body[0].value.value, str):
        return body[0].end_lineno - body[0].lineno + 1
    return 0


def _is_exempt(node: ast.AST) -> bool:
    """True when the docstring has the marker followed by a reason on the same line."""
    doc = ast.get_docstring(node) or ""
    for line in doc.splitlines():
        _, marker, reason = line.partition(EXEMPT_MARKER)
        if marker and len(reason.split()) >= 3:
            return True
    return False


def _complexity(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    """Radon's cyclomatic complexity of one function (its nested functions not included)."""
    return ComplexityVisitor.from_ast(node).functions[0].complexity


def measure(source: str, path: str = "<string>") -> list[Finding]:
    """Length and complexity of every function and method in ``source``, nested ones included."""
    findings = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            elif isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = child.end_lineno - child.lineno + 1 - _docstring_lines(child)
                findings.append(Finding(path, prefix + child.name, child.lineno, lines, _complexity(child),
                                        _is_exempt(child)))
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(source, filename=path), "")
    return findings


def over_limits(source: str, path: str = "<string>") -> list[Finding]:
    """The functions in ``source`` over a limit, with no exemption in their docstring."""
    return [f for f in measure(source, path)
            if not f.exempt and (f.lines > MAX_LINES or f.complexity > MAX_COMPLEXITY)]


def package_offenders(package: Path = PACKAGE) -> list[Finding]:
    """Every function in ``package`` over a limit without an exemption, largest first."""
    found = []
    for file in sorted(package.rglob("*.py")):
        rel = file.relative_to(package.parent).as_posix()
        found += over_limits(file.read_text(), rel)
    return sorted(found, key=lambda f: (-f.complexity, -f.lines))


def test_no_function_over_the_limits():
    offenders = [f for f in package_offenders() if f.key not in ALLOWED]
    assert not offenders, (
        f"functions over {MAX_LINES} lines or complexity {MAX_COMPLEXITY} (split them, or say why "
        f"in the docstring with '{EXEMPT_MARKER} <reason>'):\n" + "\n".join(map(str, offenders)))


def test_temporary_list_names_only_real_offenders():
    """The temporary list shrinks as functions are split: a stale entry fails here."""
    keys = {f.key for f in package_offenders()}
    assert not ALLOWED - keys, sorted(ALLOWED - keys)


LONG = "def long(x):\n" + "".join(f"    x = x + {i}\n" for i in range(MAX_LINES)) + "    return x\n"
BRANCHY = "def branchy(x):\n" + "".join(
    f"    if x == {i}:\n        return {i}\n" for i in range(MAX_COMPLEXITY)) + "    return -1\n"


@pytest.mark.parametrize("source, name, lines, complexity", [
    (LONG, "long", MAX_LINES + 2, 1),
    (BRANCHY, "branchy", 2 * MAX_COMPLEXITY + 2, MAX_COMPLEXITY + 1),
])
def test_checker_flags_long_and_branchy_functions(source, name, lines, complexity):
    (finding,) = over_limits(source)
    assert (finding.name, finding.lines, finding.complexity) == (name, lines, complexity)


def test_checker_measures_methods_and_closures_and_skips_docstrings():
    inner = "".join(f"            if y == {i}:\n                return {i}\n" for i in range(MAX_COMPLEXITY))
    doc = '        """' + "\n".join(["Doc."] * 80) + '"""\n'
    source = ("class A:\n    def method(self, x):\n" + doc
              + "        def inner(y):\n" + inner + "            return y\n        return inner(x)\n")
    found = {f.name: f for f in measure(source)}
    assert (found["A.method"].lines, found["A.method"].complexity) == (2 * MAX_COMPLEXITY + 4, 1)  # not the 80-line docstring
    assert (found["A.method.inner"].lines, found["A.method.inner"].complexity) == (2 * MAX_COMPLEXITY + 2, MAX_COMPLEXITY + 1)
    assert [f.name for f in over_limits(source)] == ["A.method.inner"]


def test_boolean_operators_and_comprehensions_count():
    conds = " and ".join(f"x[{i}]" for i in range(MAX_COMPLEXITY))
    (finding,) = measure(f"def f(x):\n    return [y for y in x if y] if {conds} else None\n")
    assert finding.complexity == 1 + 1 + (MAX_COMPLEXITY - 1) + 2  # if-expression, the `and`s, for + if


def test_exemption_needs_the_marker_and_a_reason():
    def with_doc(doc: str) -> str:
        return LONG.replace("def long(x):\n", f'def long(x):\n    """Sum.\n\n    {doc}\n    """\n', 1)

    assert over_limits(with_doc(f"{EXEMPT_MARKER} one flat table of options"), "m.py") == []
    assert len(over_limits(with_doc(f"{EXEMPT_MARKER}"), "m.py")) == 1
    assert len(over_limits(with_doc("long, but simple"), "m.py")) == 1


def test_functions_at_the_limits_pass():
    at_length = "def f(x):\n" + "".join(f"    x = x + {i}\n" for i in range(MAX_LINES - 2)) + "    return x\n"
    at_complexity = "def g(x):\n" + "".join(
        f"    if x == {i}:\n        return {i}\n" for i in range(MAX_COMPLEXITY - 1)) + "    return -1\n"
    assert [(f.lines, f.complexity) for f in measure(at_length + at_complexity)] == [
        (MAX_LINES, 1), (2 * MAX_COMPLEXITY, MAX_COMPLEXITY)]
    assert over_limits(at_length + at_complexity) == []


def test_package_scan_finds_an_offender_in_a_subpackage(tmp_path):
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "mod.py").write_text("class C:\n    pass\n\n\n" + BRANCHY)
    (found,) = package_offenders(pkg)
    assert found.key == "pkg/sub/mod.py:branchy" and found.lineno == 5
