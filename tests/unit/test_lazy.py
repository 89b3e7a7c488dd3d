"""`horcrux.lazy` is the runtime's one lazy loader: `lazy_import` for a module,
`lazy_attributes` for a package's names (PEP 562); no other runtime module defines a module
`__getattr__` or calls `import_module` (the registry's loader of the built-in brains, which
imports them all on a first lookup, is the one other caller: it registers, it does not
stand in for a name)."""

from __future__ import annotations

import ast
import pathlib
import sys

import pytest

from horcrux.lazy import lazy_attributes

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "shared" / "horcrux"
ALLOWED_IMPORT_MODULE = {
    "lazy.py": "the loader itself",
    "agents/base.py": "load_builtin_brains imports every built-in brain module to register it",
}


def loaders(source: str) -> list[str]:
    """What in `source` loads a module by its own mechanism: a module-level `__getattr__`
    or a call of `import_module` / `importlib.import_module`."""
    tree = ast.parse(source)
    found = [
        f"{node.lineno}: def __getattr__"
        for node in tree.body
        if isinstance(node, ast.FunctionDef) and node.name == "__getattr__"
    ]
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
            if name == "import_module":
                found.append(f"{node.lineno}: import_module()")
    return sorted(found)


def test_the_check_finds_both_mechanisms() -> None:
    source = "import importlib\ndef __getattr__(n): ...\nx = importlib.import_module('a')\n"
    assert loaders(source) == ["2: def __getattr__", "3: import_module()"]
    assert loaders("class A:\n    def __getattr__(self, n): ...\n") == []  # a class's own


def test_no_runtime_module_has_its_own_lazy_loader() -> None:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel not in ALLOWED_IMPORT_MODULE and (hits := loaders(path.read_text())):
            found[rel] = hits
    assert found == {}
    assert all((PACKAGE / rel).is_file() for rel in ALLOWED_IMPORT_MODULE)


def test_lazy_attributes_imports_a_name_or_a_module_on_first_use() -> None:
    getattr_ = lazy_attributes(
        "pkg", {"dumps": "json:dumps", "decoder": "json.decoder", "nothing": "json:nothing"}
    )
    import json
    import json.decoder

    assert getattr_("dumps") is json.dumps
    assert getattr_("decoder") is sys.modules["json.decoder"] is json.decoder
    with pytest.raises(AttributeError, match="'pkg' has no attribute 'other'"):
        getattr_("other")
    with pytest.raises(AttributeError, match="nothing"):
        getattr_("nothing")


def test_the_packages_bind_their_names_through_it() -> None:
    import horcrux.agents
    import horcrux.api

    assert horcrux.agents.planner.__name__ == "horcrux.agents.planner"
    assert horcrux.api.status_for.__module__ == "horcrux.api.errors"
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        getattr(horcrux.api, "nope")  # noqa: B009
