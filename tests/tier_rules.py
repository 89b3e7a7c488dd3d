"""The unit tier's forbidden imports (tests/README.md), read from a test file's syntax tree:
what tests/conftest.py checks at collection of tests/unit."""

from __future__ import annotations

import ast

FORBIDDEN = {
    "subprocess": "starts a process",
    "socket": "opens a network connection",
    "moto": "mocks AWS (boto3 over moto)",
}
"""Top-level modules a unit test file may not import, and why."""


def forbidden_imports(source: str) -> list[str]:
    """`line: module (why)` for each import in `source` of a module of FORBIDDEN (at any
    depth: a function's own import counts)."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
            names = [node.module]
        else:
            continue
        for name in names:
            top = name.split(".")[0]
            if top in FORBIDDEN:
                found.append((node.lineno, f"{name} ({FORBIDDEN[top]})"))
    return [f"{line}: {what}" for line, what in sorted(found)]
