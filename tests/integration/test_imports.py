"""The package's import graph has no cycle: neither its module-level imports nor the lazy
ones inside functions (a lazy import that closes a cycle is a cycle deferred, not removed)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "shared"


def modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    for path in ROOT.rglob("*.py"):
        name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = path
    return out


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Every project module `name` imports, at module level or inside a function; names
    imported only for type checking (`if TYPE_CHECKING:`) are not imports at run time."""
    tree = ast.parse(path.read_text())
    typing_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            typing_only |= {id(n) for n in ast.walk(node)}
    out: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for alias in node.names:
                full = f"{node.module}.{alias.name}"
                out.add(full if full in known else node.module)
        elif isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
    return {m for m in out if m in known and m != name}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_import_graph_has_no_cycle() -> None:
    known = modules()
    graph = {name: imports(name, path, known) for name, path in known.items()}
    assert len(graph) > 80 and graph["horcrux.agents.gated"]  # the walk saw the package
    assert cycles(graph) == []


def test_the_cycle_finder_finds_one() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_the_api_function_starts_without_the_idempotency_package_or_boto3() -> None:
    import subprocess
    import sys

    root = ROOT.parent
    code = (
        "import sys; sys.path[:0] = [sys.argv[1], sys.argv[2]]\n"
        "import handler\n"
        "print(sorted(m for m in sys.modules if m == 'boto3' or 'idempotency' in m))\n"
    )
    env = {
        "HORCRUX_GAMES_TABLE": "g",
        "HORCRUX_EVENTS_TABLE": "e",
        "AWS_DEFAULT_REGION": "eu-west-1",
    }
    out = subprocess.run(
        [sys.executable, "-I", "-c", code, str(root / "lambdas" / "api"), str(ROOT)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout
    # imported at the first keyed move: boto3 alone costs about 80 ms of a cold start
    assert out.strip() == "['horcrux.api.idempotency']"
