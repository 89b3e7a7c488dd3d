"""Import a handler in a clean interpreter that has only the layers and boto3 on its path.

What the Lambda runtime gives a function: its code directory, the layers' `python/`
directories and the runtime's boto3 (with botocore, s3transfer, jmespath, dateutil, six,
urllib3). `python -I -S` ignores PYTHON* variables, the user's and the virtual
environment's site-packages, so nothing else can be imported. The layers are the host build
(`build/layer-host`, infra/build_layer.py --host): same requirements, this interpreter's
binaries. Used by tests/test_layer.py and benchmarks/bench_infra.py.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
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
start = time.perf_counter()
import handler
seconds = time.perf_counter() - start
store = getattr(handler, "store", None) or getattr(handler, "_store", None)
if store is None and hasattr(handler, "service"):
    store = handler.service.store
print(json.dumps({
    "seconds": seconds,
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
    command = [sys.executable, "-I", "-S"]
    if importtime:
        command += ["-X", "importtime"]
    entry = spec.handler.rsplit(".", 1)[1]
    command += ["-c", PROBE, json.dumps(path), entry]
    environment = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **FAKE_AWS_ENV, **(env or {})}
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
        client_at_import=bool(result["client_at_import"]),
        entry_point=bool(result["entry"]),
        modules=tuple(result["modules"]),
        files=tuple(result["paths"]),
        importtime_us=cumulative,
    )
