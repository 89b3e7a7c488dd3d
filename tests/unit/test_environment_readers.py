"""`horcrux.settings` is the runtime's only reader of the environment: a walk over the
syntax trees of every runtime module (shared/horcrux) and every Lambda handler finds no
`os.environ`, `os.getenv`, `environ[...]` or `from os import environ/getenv` elsewhere."""

from __future__ import annotations

import ast
import pathlib

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "shared" / "horcrux"
READER = PACKAGE / "settings.py"
NAMES = frozenset({"environ", "getenv", "environb", "getenvb"})


def _named(node: ast.expr, name: str) -> bool:
    return isinstance(node, ast.Name) and node.id == name


def environment_reads(source: str) -> list[str]:
    """`line: what` for each read of the process environment in `source`."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute) and node.attr in NAMES:
            found.append((node.lineno, f".{node.attr}"))
        elif isinstance(node, ast.ImportFrom) and node.module in {"os", "posix", "nt"}:
            names = [a.name for a in node.names if a.name in NAMES]
            found.extend((node.lineno, f"from os import {name}") for name in names)
        elif isinstance(node, ast.Subscript) and _named(node.value, "environ"):
            found.append((node.lineno, "environ[...]"))
        elif isinstance(node, ast.Call) and _named(node.func, "getenv"):
            found.append((node.lineno, "getenv(...)"))
    return [f"{line}: {what}" for line, what in sorted(found)]


def _modules() -> list[pathlib.Path]:
    handlers = sorted((ROOT / "lambdas").glob("*/handler.py"))
    return [*sorted(PACKAGE.rglob("*.py")), *handlers]


def test_the_walk_finds_every_form_of_reading_the_environment() -> None:
    source = "\n".join(
        [
            "import os",
            "from os import environ, getenv",
            "a = os.environ.get('X')",
            "b = os.getenv('Y')",
            "c = environ['Z']",
            "d = getenv('W')",
            "e = {'environ': 1}['environ']",  # a string, not a read
        ]
    )
    assert environment_reads(source) == [
        "2: from os import environ",
        "2: from os import getenv",
        "3: .environ",
        "4: .getenv",
        "5: environ[...]",
        "6: getenv(...)",
    ]


def test_only_the_settings_module_reads_the_environment() -> None:
    modules = _modules()
    assert READER in modules and len(modules) > 50  # the walk sees the runtime
    assert environment_reads(READER.read_text()), "settings.py reads it (or the walk is blind)"
    readers = {
        path.relative_to(ROOT).as_posix(): reads
        for path in modules
        if path != READER and (reads := environment_reads(path.read_text()))
    }
    assert readers == {}
