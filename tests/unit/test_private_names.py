"""The runtime's modules talk through public names: a walk of shared/horcrux's syntax trees
fails on `from horcrux.X import _name` and on `obj._name` where `_name` is private to
another module (not defined in the module that reads it: a function, a class, a module
name or an attribute it assigns). A private name is one module's business; a name two
modules share is public, documented where it is defined."""

from __future__ import annotations

import ast
from pathlib import Path

RUNTIME = Path(__file__).resolve().parents[2] / "shared" / "horcrux"

ALLOWED: dict[tuple[str, str], str] = {
    ("belief/tables.py", "np._core"): (
        "numpy's own private module (`np._core.umath.clip`, the ufunc behind `clip` "
        "without its Python wrapper), not one of the runtime's: guarded by hasattr"
    ),
}
"""(file under shared/horcrux, the expression) -> why it may read another's private name."""


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _defined(tree: ast.Module) -> set[str]:
    """The private names a module defines: functions, classes, names it binds, attributes
    it assigns (`self._x = ...`, `copy._x = ...`)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            out.add(node.id)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            out.add(node.attr)
        elif isinstance(node, ast.arg):
            out.add(node.arg)
    return {name for name in out if _private(name)}


def violations(source: str) -> list[str]:
    """Where a module reads another module's private name (the expressions, sorted)."""
    tree = ast.parse(source)
    own = _defined(tree)
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("horcrux"):
            found += [f"from {node.module} import {a.name}" for a in node.names if _private(a.name)]
        elif isinstance(node, ast.Attribute) and _private(node.attr) and node.attr not in own:
            base = node.value
            if isinstance(base, ast.Name) and base.id in ("self", "cls"):
                continue
            if isinstance(base, ast.Call) and ast.unparse(base.func) == "super":
                continue
            found.append(ast.unparse(node))
    return sorted(set(found))


def test_no_runtime_module_reads_another_modules_private_name() -> None:
    bad: list[str] = []
    seen: set[tuple[str, str]] = set()
    for path in sorted(RUNTIME.rglob("*.py")):
        rel = path.relative_to(RUNTIME).as_posix()
        for expr in violations(path.read_text()):
            if (rel, expr) in ALLOWED:
                seen.add((rel, expr))
            else:
                bad.append(f"{rel}: {expr}")
    assert not bad, f"private names read across modules (make them public, or an API): {bad}"
    assert seen == set(ALLOWED), f"allow-list entries that match nothing: {set(ALLOWED) - seen}"


def test_the_walk_finds_what_it_forbids() -> None:
    source = (
        "from horcrux.belief.filter import _Filters, Filters\n"
        "from horcrux.belief import tables\n"
        "class Mine:\n"
        "    def __init__(self):\n"
        "        self._own = 1\n"
        "    def f(self, other, belief):\n"
        "        self._own += other._own + super()._base()\n"
        "        return tables._SUM, belief._filters, self._theirs\n"
    )
    assert violations(source) == [
        "belief._filters",
        "from horcrux.belief.filter import _Filters",
        "tables._SUM",
    ]
