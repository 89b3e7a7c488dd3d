"""The runtime's import graph: no cycle, no upward import, no tool.

Neither its module-level imports nor the lazy ones inside functions may close a cycle (a
lazy import that closes a cycle is a cycle deferred, not removed). The runtime package
(`horcrux`, shared/) is layered, bottom-up; a module may import from its own layer and the
ones below it, never from one above (a module named by a string for `import_module`, like
the registry's built-in brains, counts as an import; `if TYPE_CHECKING:` imports too: an
annotation naming a layer above is the same dependency):

0. foundation: `horcrux`, `errors`, `rules`, `rng`, `decisions`, `operator_token`, `settings`
   (settings read the environment once and import nothing above this layer);
1. data: `models`, and the store's port (`store.port`, `store.results`): the types every
   layer above may name;
2. engine: `engine`, `views`;
3. belief: `belief`;
4. memory (L1 context and the gate): `memory`;
5. agents (the brains, the registry, the built-in opponents): `agents`;
6. ECHO (memory across games): `echo`;
7. adapters: the stores (`store`: DynamoDB, in memory, the stream codec), `secrets`;
8. services: `service`, `compaction`, `compaction_records`;
9. edges: the HTTP and stream adapters (`api`), the web client (`web`).

The tools (`horcrux_tools`, tools/) sit above all of it; no runtime module imports them
or a package only the tools install, lazily or not, and neither do the Lambda handlers.
"""

from __future__ import annotations

import ast
import sys
import tomllib
from pathlib import Path

from packaging.requirements import Requirement

REPO = Path(__file__).resolve().parents[2]
ROOT = REPO / "shared"
TOOLS = REPO / "tools"
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from infra.clean_import import imported_from  # noqa: E402

LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "foundation",
        (
            "horcrux",
            "horcrux.errors",
            "horcrux.lazy",
            "horcrux.rules",
            "horcrux.rng",
            "horcrux.decisions",
            "horcrux.operator_token",
            "horcrux.settings",
        ),
    ),
    ("data", ("horcrux.models", "horcrux.store.port", "horcrux.store.results")),
    ("engine", ("horcrux.engine", "horcrux.views")),
    ("belief", ("horcrux.belief",)),
    ("memory", ("horcrux.memory",)),
    ("agents", ("horcrux.agents",)),
    ("loop", ("horcrux.play",)),
    ("echo", ("horcrux.echo",)),
    ("adapters", ("horcrux.store", "horcrux.secrets")),
    ("services", ("horcrux.service", "horcrux.compaction", "horcrux.compaction_records")),
    ("edges", ("horcrux.api",)),
)
"""The runtime's layers, bottom-up: (name, module prefixes). A module belongs to the layer
of its longest matching prefix (`horcrux.store.port` is data, `horcrux.store.dynamodb` an
adapter; the package `horcrux` itself is the foundation, its subpackages are not)."""

RUNTIME_THIRD_PARTY = frozenset(
    {"pydantic", "pydantic_core", "aws_lambda_powertools", "numpy", "boto3", "botocore"}
    | {"anthropic", "mypy_boto3_dynamodb"}
)
"""What a runtime module may import besides itself and the standard library: the layer's
locked packages (requirements.txt), the runtime's boto3, the [llm] extra's SDK (the turn
functions' second layer) and boto3's type stubs (under `if TYPE_CHECKING:` only)."""


def modules(root: Path = ROOT, package: str = "horcrux") -> dict[str, Path]:
    """The modules of `package` (default: the runtime, under shared/) by dotted name."""
    out: dict[str, Path] = {}
    for path in (root / package).rglob("*.py"):
        name = ".".join(path.relative_to(root).with_suffix("").parts)
        out[name.removesuffix(".__init__")] = path
    return out


def layer_of(module: str) -> int:
    """The index in LAYERS of `module`'s layer (its longest matching prefix)."""
    best: tuple[int, int] | None = None  # (prefix length, layer)
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            exact = module == prefix
            inside = prefix != "horcrux" and module.startswith(prefix + ".")
            if (exact or inside) and (best is None or len(prefix) > best[0]):
                best = (len(prefix), index)
    if best is None:
        raise KeyError(f"{module} is in no layer: add it to LAYERS (tests/test_imports.py)")
    return best[1]


def runtime_imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Every project module `name` depends on: its imports at any depth, the ones under
    `if TYPE_CHECKING:` and modules named by a string constant (`import_module(...)`)."""
    tree = ast.parse(path.read_text())
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = imported_from(node, package)
            for alias in node.names:
                full = f"{base}.{alias.name}"
                out.add(full if full in known else base)
        elif isinstance(node, ast.Import):
            out |= {alias.name for alias in node.names}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            out.add(node.value)
    return {m for m in out if m in known and m != name}


def upward_imports(graph: dict[str, set[str]]) -> list[str]:
    """`importer -> imported` for every import of a module in a higher layer."""
    return sorted(
        f"{module} ({LAYERS[layer_of(module)][0]}) -> {target} ({LAYERS[layer_of(target)][0]})"
        for module, targets in graph.items()
        for target in targets
        if layer_of(target) > layer_of(module)
    )


def top_level_imports(path: Path) -> set[str]:
    """The top-level names of every absolute import in `path`, at any depth (lazy ones in
    functions, `try:` blocks and `if TYPE_CHECKING:` too) and of `import_module("...")`."""
    tree = ast.parse(path.read_text())
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and node.module:
            out.add(node.module.partition(".")[0])
        elif isinstance(node, ast.Import):
            out |= {alias.name.partition(".")[0] for alias in node.names}
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            out.add(node.args[0].value.partition(".")[0])
    return out


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Every project module `name` imports, at module level or inside a function; names
    imported only for type checking (`if TYPE_CHECKING:`) are not imports at run time."""
    tree = ast.parse(path.read_text())
    typing_only: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            # its body only: the `else:` of `if TYPE_CHECKING:` runs (a `lazy_import` there)
            typing_only |= {id(n) for statement in node.body for n in ast.walk(statement)}
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
        elif (lazy := lazy_import_of(node)) is not None:  # `lazy_import("horcrux.x")`
            out.add(lazy)
    return {m for m in out if m in known and m != name}


def lazy_import_of(node: ast.AST) -> str | None:
    """The module a `lazy_import("...")` call (horcrux.lazy) names, else None."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    called = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
    first = node.args[0]
    if called == "lazy_import" and isinstance(first, ast.Constant) and isinstance(first.value, str):
        return first.value
    return None


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
    """The runtime and the tools together (a cycle through both would be an upward import)."""
    known = {**modules(), **modules(TOOLS, "horcrux_tools")}
    graph = {name: imports(name, path, known) for name, path in known.items()}
    assert len(graph) > 100 and graph["horcrux.agents.gated"]  # the walk saw the packages
    assert graph["horcrux_tools.cli"]
    assert cycles(graph) == []


def test_a_lazy_import_is_an_import_for_the_cycle_check() -> None:
    known = modules()
    graph = imports("horcrux.api.memory_routes", known["horcrux.api.memory_routes"], known)
    assert "horcrux.echo.ops" in graph  # bound by `lazy_import`, typed under TYPE_CHECKING


def test_the_cycle_finder_finds_one() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_every_runtime_module_is_in_a_layer_and_none_imports_from_above() -> None:
    known = modules()
    graph = {name: runtime_imports(name, path, known) for name, path in known.items()}
    layers = {name: layer_of(name) for name in known}  # KeyError: a module in no layer
    assert len({LAYERS[i][0] for i in layers.values()}) == len(LAYERS)  # none is empty
    # the walk sees the lazy, the typing-only and the by-name dependencies
    assert "horcrux.agents.opponents" in graph["horcrux.agents.base"]  # BUILTIN_MODULES
    assert "horcrux.settings" in graph["horcrux.secrets"]  # under TYPE_CHECKING
    assert "horcrux.store.dynamodb_client" in graph["horcrux.api.idempotency"]
    assert upward_imports(graph) == []


def test_the_layer_check_finds_an_upward_import() -> None:
    assert layer_of("horcrux.store.port") < layer_of("horcrux.engine")
    assert layer_of("horcrux.store.dynamodb") > layer_of("horcrux.echo.lifecycle")
    assert layer_of("horcrux.settings") == 0 and layer_of("horcrux.api.app") == len(LAYERS) - 1
    graph = {"horcrux.settings": {"horcrux.store.dynamodb"}, "horcrux.agents.base": set()}
    assert upward_imports(graph) == [
        "horcrux.settings (foundation) -> horcrux.store.dynamodb (adapters)"
    ]


def test_no_runtime_module_or_handler_imports_a_tool_or_a_tools_package() -> None:
    """Every module of shared/horcrux and every Lambda handler imports, at any depth, only
    the standard library, `horcrux` and RUNTIME_THIRD_PARTY: never `horcrux_tools`, moto,
    waitress, matplotlib, ray (tools/pyproject.toml's extras) or a test package."""
    sources = [*sorted((ROOT / "horcrux").rglob("*.py")), *sorted(REPO.glob("lambdas/*/*.py"))]
    allowed = {"horcrux", *RUNTIME_THIRD_PARTY, *sys.stdlib_module_names, "__future__"}
    offenders = {
        str(path.relative_to(REPO)): sorted(found)
        for path in sources
        if (found := top_level_imports(path) - allowed)
    }
    assert len(sources) > 70 and offenders == {}
    # what the tools' distribution installs is outside the runtime's allowance
    tools = tomllib.loads((REPO / "tools" / "pyproject.toml").read_text())["project"]
    extras = {Requirement(r).name for v in tools["optional-dependencies"].values() for r in v}
    assert {"moto", "waitress", "matplotlib", "ray"} <= extras
    assert not {"horcrux_tools", "moto", "waitress", "matplotlib", "ray"} & allowed


def test_the_tool_check_sees_a_lazy_import_and_one_by_name(tmp_path: Path) -> None:
    module = tmp_path / "sneaky.py"
    module.write_text(
        "import importlib\n"
        "def serve():\n"
        "    from horcrux_tools.local import server\n"
        "    importlib.import_module('matplotlib.pyplot')\n"
        "try:\n"
        "    import waitress\n"
        "except ImportError:\n"
        "    waitress = None\n"
        "from .sibling import thing\n"
    )
    assert top_level_imports(module) == {"importlib", "horcrux_tools", "matplotlib", "waitress"}


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
