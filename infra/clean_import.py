"""Import a handler in a clean interpreter that has only the layers and boto3 on its path.

What the Lambda runtime gives a function: its code directory, the layers' `python/`
directories and the runtime's boto3 (with botocore, s3transfer, jmespath, dateutil, six,
urllib3). `python3.13 -I -S` ignores PYTHON* variables, the user's and the virtual
environment's site-packages, so nothing else can be imported. The layers are the host build
(`build/layer-host`, infra/build_layer.py --host): the same locks, installed for a CPython
3.13 on this machine (`build_layer.host_python()`, the runtime's version); boto3 is this
environment's (pure Python). Used by tests/infra/test_layer.py and benchmarks/bench_infra.py.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from infra import build_layer
from infra.names import FunctionSpec

BOTO3_RUNTIME = ("boto3", "botocore", "s3transfer", "jmespath", "dateutil", "six", "urllib3")

FAKE_AWS_ENV = {
    "AWS_DEFAULT_REGION": "eu-west-1",
    "AWS_REGION": "eu-west-1",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_EC2_METADATA_DISABLED": "true",
    "HORCRUX_EVENTS_TABLE": "events",
    "HORCRUX_GAMES_TABLE": "games",
    "HORCRUX_IDEMPOTENCY_TABLE": "idempotency",
    "POWERTOOLS_METRICS_NAMESPACE": "HorcruxHunt",
}

PROBE = """
import sys, json, time
sys.path[:0] = json.loads(sys.argv[1])
start, cpu = time.perf_counter(), time.process_time()
import handler
seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
store = getattr(handler, "store", None) or getattr(handler, "_store", None)
if store is None and hasattr(handler, "service"):
    store = handler.service.store
print(json.dumps({
    "seconds": seconds,
    "cpu_seconds": cpu_seconds,
    "client_at_import": bool(store is not None and getattr(store, "_client", None) is not None),
    "entry": callable(getattr(handler, sys.argv[2], None)),
    "modules": sorted(m for m in sys.modules if "." not in m),
    "paths": sorted({getattr(m, "__file__", None) or "" for m in list(sys.modules.values())}),
}))
"""


def boto3_only(directory: Path) -> Path:
    """`directory` holding links to this environment's boto3 and its dependencies only."""
    directory.mkdir(parents=True, exist_ok=True)
    for name in BOTO3_RUNTIME:
        spec = importlib.util.find_spec(name)
        if spec is None or spec.origin is None:
            raise RuntimeError(f"{name} is not installed: pip install boto3")
        origin = Path(spec.origin)
        source = origin.parent if origin.name == "__init__.py" else origin
        link = directory / source.name
        if not link.exists():
            link.symlink_to(source, target_is_directory=source.is_dir())
    return directory


def layer_paths(spec: FunctionSpec, layers: dict[str, Path]) -> list[Path]:
    """The `python/` directories of the layers `spec`'s function gets (as infra/ wires them)."""
    chosen = ["core", "llm"] if spec.llm else ["core"]
    return [layers[name] / "python" for name in chosen]


@dataclass(frozen=True)
class ImportResult:
    spec: FunctionSpec
    seconds: float  # wall time of `import handler`
    cpu_seconds: float  # CPU time of it (this process): what an idle machine's wall time is
    client_at_import: bool
    entry_point: bool
    modules: tuple[str, ...]  # top-level modules loaded
    files: tuple[str, ...]  # where every loaded module came from
    importtime_us: int | None  # `-X importtime`'s cumulative figure for `handler`

    @property
    def anthropic_imported(self) -> bool:
        return "anthropic" in self.modules


def import_handler(
    spec: FunctionSpec,
    boto3_dir: Path,
    *,
    layers: dict[str, Path] | None = None,
    importtime: bool = False,
    env: dict[str, str] | None = None,
    code_dir: Path | None = None,
) -> ImportResult:
    """Import `spec`'s handler in a fresh `python -I -S` with only its layers and boto3.

    `code_dir` replaces the function's directory (a probe handler in the tests)."""
    layers = layers or build_layer.build(build_layer.HOST)
    code = code_dir or spec.code_dir
    path = [str(code), *map(str, layer_paths(spec, layers)), str(boto3_dir)]
    command = [build_layer.host_python(), "-I", "-S"]
    if importtime:
        command += ["-X", "importtime"]
    entry = spec.handler.rsplit(".", 1)[1]
    command += ["-c", PROBE, json.dumps(path), entry]
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        **FAKE_AWS_ENV,
        **dict(spec.environment),
        **(env or {}),
    }
    done = subprocess.run(
        command, capture_output=True, text=True, check=False, cwd=code, env=environment
    )
    if done.returncode != 0:
        raise RuntimeError(f"importing {code}/handler.py failed:\n{done.stderr[-4000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    cumulative = None
    if importtime:
        for line in done.stderr.splitlines():
            match = re.match(r"import time:\s+\d+\s+\|\s+(\d+)\s+\|\s*handler$", line)
            if match:
                cumulative = int(match.group(1))
    return ImportResult(
        spec=spec,
        seconds=float(result["seconds"]),
        cpu_seconds=float(result["cpu_seconds"]),
        client_at_import=bool(result["client_at_import"]),
        entry_point=bool(result["entry"]),
        modules=tuple(result["modules"]),
        files=tuple(result["paths"]),
        importtime_us=cumulative,
    )


# ------------------------------------------------------------------ the static import walk
def _module_file(site: Path, module: str) -> Path | None:
    base = site.joinpath(*module.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def _is_import_module_call(node: ast.AST) -> str | None:
    """The literal name of an `import_module("...")` or `lazy_import("...")` (horcrux.lazy)
    call, else None."""
    if not isinstance(node, ast.Call) or not node.args:
        return None
    func = node.func
    called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    first = node.args[0]
    if called in ("import_module", "lazy_import") and isinstance(first, ast.Constant):
        return first.value if isinstance(first.value, str) else None
    return None


def _lazy_attribute_targets(node: ast.AST) -> list[str]:
    """The modules a `lazy_attributes(package, {...})` call (horcrux.lazy) names in its
    literal mapping (`module:attribute` or `module`), else none."""
    if not isinstance(node, ast.Call) or len(node.args) < 2:
        return []
    func = node.func
    called = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
    mapping = node.args[1]
    if called != "lazy_attributes" or not isinstance(mapping, ast.Dict):
        return []
    return [
        value.value.partition(":")[0]
        for value in mapping.values
        if isinstance(value, ast.Constant) and isinstance(value.value, str)
    ]


def imported_from(node: ast.ImportFrom, package: str) -> str:
    """The absolute module a `from ... import` in `package` reads (`from .x import y` in
    `a.b` is `a.b.x`; `from .. import y` in `a.b` is `a`)."""
    if not node.level:
        return node.module or ""
    parts = package.split(".")
    anchor = ".".join(parts[: len(parts) - node.level + 1])
    return f"{anchor}.{node.module}" if node.module else anchor


def _imported_names(path: Path, module: str, is_package: bool) -> tuple[set[str], set[str]]:
    """What the module at `path` may import, anywhere in it (function bodies too: the lazy
    imports): (modules it needs, names that are submodules if such a module exists)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    package = module if is_package else module.rpartition(".")[0]
    needed: set[str] = set()
    maybe: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            needed.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = imported_from(node, package)
            needed.add(base)
            maybe.update(f"{base}.{alias.name}" for alias in node.names)
        else:
            literal = _is_import_module_call(node)
            if literal is not None:
                needed.add(literal)
            needed.update(_lazy_attribute_targets(node))
    return needed, maybe


@dataclass(frozen=True)
class ImportWalk:
    modules: frozenset[str]  # the package's modules reachable from the roots, found in `site`
    missing: frozenset[str]  # modules imported (by `import` or as a `from` base) not in `site`


def walk_imports(
    site: Path, roots: list[Path], extra_modules: tuple[str, ...] = (), package: str = "horcrux"
) -> ImportWalk:
    """The `package` modules that the files `roots` (handlers) can ever import, read from the
    sources in `site` (statically: lazy imports inside functions count), plus `extra_modules`
    (modules imported by a computed name, like the registry's built-in brains)."""

    def ours(name: str) -> bool:
        return name == package or name.startswith(package + ".")

    missing: set[str] = set()
    seen: set[str] = set()
    queue: list[tuple[str, Path, bool]] = [(f"<{p}>", p, False) for p in roots]

    def reach(name: str, *, required: bool) -> None:
        parts = name.split(".")
        for depth in range(1, len(parts) + 1):  # importing a.b.c imports a and a.b first
            prefix = ".".join(parts[:depth])
            found = _module_file(site, prefix)
            if found is not None:
                queue.append((prefix, found, found.name == "__init__.py"))
            elif required or depth < len(parts):
                missing.add(prefix)
                return

    for name in extra_modules:
        reach(name, required=True)
    while queue:
        module, path, is_package = queue.pop()
        if module in seen:
            continue
        seen.add(module)
        needed, maybe = _imported_names(path, module, is_package)
        for name in sorted(n for n in needed if ours(n)):
            reach(name, required=True)
        for name in sorted(n for n in maybe if ours(n)):
            reach(name, required=False)
    modules = frozenset(m for m in seen if not m.startswith("<"))
    return ImportWalk(modules=modules, missing=frozenset(missing))


# ------------------------------------------------------------------ every module of a package
TOOL_IMPORTS = (
    "horcrux_tools",
    "moto",
    "waitress",
    "matplotlib",
    "pytest",
    "hypothesis",
    "schemathesis",
    "playwright",
)
"""Top-level packages only the tools or the checks install (tools/pyproject.toml,
requirements-dev.txt): no runtime module may import one, lazily or not."""

PACKAGE_PROBE = """
import importlib, json, sys, traceback
sys.path[:0] = json.loads(sys.argv[1])
names, forbidden, package = json.loads(sys.argv[2]), frozenset(json.loads(sys.argv[3])), sys.argv[4]

def importer():
    frame = sys._getframe(2)
    while frame is not None:
        name = frame.f_globals.get("__name__", "")
        if name == package or name.startswith(package + "."):
            return name
        frame = frame.f_back
    return None

attempts = []
class Watch:
    # records every attempt to import a tool package, caught or not; finds nothing itself
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in forbidden:
            attempts.append([name, importer()])
        return None

sys.meta_path.insert(0, Watch())
failed = {}
for name in names:
    try:
        importlib.import_module(name)
    except BaseException:
        failed[name] = traceback.format_exc(limit=-4)
print(json.dumps({
    "imported": sorted(n for n in names if n in sys.modules),
    "failed": failed,
    "attempts": attempts,
    "modules": sorted(m for m in sys.modules if "." not in m),
}))
"""


def package_modules(site: Path, package: str = "horcrux") -> list[str]:
    """Every module of `package` installed in `site`, from its files (packages first)."""
    root = site / package
    names = {
        ".".join(p.relative_to(site).with_suffix("").parts).removesuffix(".__init__")
        for p in root.rglob("*.py")
        if "__pycache__" not in p.parts
    }
    return sorted(names, key=lambda n: (n.count("."), n))


@dataclass(frozen=True)
class PackageImport:
    modules: tuple[str, ...]  # the package's modules, from the files in the site
    imported: tuple[str, ...]  # those in sys.modules after importing each
    failed: dict[str, str]  # module -> the end of its traceback
    tool_imports: tuple[tuple[str, str | None], ...]  # (tool module, the importer in package)
    top_level: tuple[str, ...]  # every top-level module loaded

    @property
    def tools_loaded(self) -> list[str]:
        return sorted(set(self.top_level) & set(TOOL_IMPORTS))


def import_every_module(
    site: Path,
    extra_paths: Sequence[Path] = (),
    *,
    package: str = "horcrux",
    env: dict[str, str] | None = None,
) -> PackageImport:
    """Import each module of `package` (as installed in `site`) in one fresh `python -I -S`
    of the runtime's version, with only `site` and `extra_paths` (the other layer, boto3)
    on its path; record what failed and every attempt to import a tool package."""
    names = package_modules(site, package)
    path = [str(site), *map(str, extra_paths)]
    command = [
        build_layer.host_python(),
        "-I",
        "-S",
        "-c",
        PACKAGE_PROBE,
        json.dumps(path),
        json.dumps(names),
        json.dumps(TOOL_IMPORTS),
        package,
    ]
    environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **FAKE_AWS_ENV, **(env or {})}
    done = subprocess.run(
        command, capture_output=True, text=True, check=False, cwd=site, env=environment
    )
    if done.returncode != 0:
        raise RuntimeError(f"the import probe failed:\n{done.stderr[-4000:]}")
    result = json.loads(done.stdout.strip().splitlines()[-1])
    return PackageImport(
        modules=tuple(names),
        imported=tuple(result["imported"]),
        failed=dict(result["failed"]),
        tool_imports=tuple((a, b) for a, b in result["attempts"]),
        top_level=tuple(result["modules"]),
    )
