"""The Lambda layers' size and each handler's cold import time.

- Layer size: `build/layer/{core,llm}` (the assets `cdk synth` uploads, built from locks/
  for Linux arm64, CPython 3.13), unzipped (bytes of the files) and zipped (deflate, as the
  asset is shipped). Goal: the core layer <= 50 MiB unzipped.
- Cold import: each handler imported in a fresh `python3.13 -I -S -X importtime` that has
  only the function's code, its layers (the host build, `build/layer-host`: the same locks
  for this machine's CPython 3.13) and boto3 on its path; the figure is `-X importtime`'s
  cumulative time of `import handler`, the median and the best of RUNS runs, and the
  median CPU time of the import (the process's own user + system time: what the wall time
  is on an idle machine, for the import reads only cached files; it moves far less than
  the wall time when other work shares the CPU). Goal: <= 250 ms for the API handler on an
  idle machine, judged on the CPU time. Also whether
  anthropic was imported (it must not be: the LLM brains import it lazily, only with a key),
  and, for the AI turn functions, what importing it costs once a key exists.

This machine's CPU is not a Lambda arm64 core: the times are indicative (Lambda gives a
function CPU in proportion to its memory: 1,769 MB = one vCPU).
"""

from __future__ import annotations

import io
import os
import statistics
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from infra import build_layer, names  # noqa: E402
from infra.clean_import import boto3_only, import_handler  # noqa: E402

MB = 1_000_000
MiB = 1024 * 1024
RUNS = 9
GOAL_MS = 250


def unzipped(directory: Path) -> int:
    return sum(p.stat().st_size for p in directory.rglob("*") if p.is_file())


def zipped(directory: Path) -> int:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(directory.rglob("*")):
            if path.is_file():
                archive.write(path, path.relative_to(directory))
    return buffer.tell()


def anthropic_import_ms(layers: dict[str, Path], boto3_dir: Path) -> float:
    """`import anthropic` from the layers in a clean interpreter (what a key's first use adds)."""
    path = [str(layers["core"] / "python"), str(layers["llm"] / "python"), str(boto3_dir)]
    code = (
        f"import sys, time; sys.path[:0] = {path!r}; "
        "t = time.perf_counter(); import anthropic; print(time.perf_counter() - t)"
    )
    runs = [
        float(
            subprocess.run(
                [build_layer.host_python(), "-I", "-S", "-c", code],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
        for _ in range(RUNS)
    ]
    return statistics.median(runs) * 1000


def main() -> int:
    lambda_layers = build_layer.build(build_layer.LAMBDA)
    host_layers = build_layer.build(build_layer.HOST)
    print("Lambda layers (linux arm64, CPython 3.13)")
    print(f"  {'layer':<6} {'unzipped':>22} {'zipped':>22}")
    for name, directory in lambda_layers.items():
        raw, packed = unzipped(directory), zipped(directory)
        print(
            f"  {name:<6} {raw / MB:>8.1f} MB ({raw / MiB:>5.1f} MiB)"
            f" {packed / MB:>8.1f} MB ({packed / MiB:>5.1f} MiB)"
        )
    core = unzipped(lambda_layers["core"])
    print(f"  core layer goal <= 50 MiB unzipped: {'met' if core <= 50 * MiB else 'MISSED'}")
    print()
    with tempfile.TemporaryDirectory() as tmp:
        boto3_dir = boto3_only(Path(tmp) / "boto3")
        load = os.getloadavg()[0]
        print(
            f"Cold import of each handler (python3.13 -X importtime, {RUNS} runs, this CPU, "
            f"load {load:.1f} on {os.cpu_count()} cores)"
        )
        print(
            f"  {'function':<15} {'layers':<9} {'median':>8} {'best':>8} {'cpu':>8}"
            "  anthropic imported"
        )
        api_cpu: float | None = None
        for spec in names.FUNCTIONS:
            results = [
                import_handler(spec, boto3_dir, layers=host_layers, importtime=True)
                for _ in range(RUNS)
            ]
            times = [(r.importtime_us or 0) / 1000 for r in results]
            median, best = statistics.median(times), min(times)
            cpu = statistics.median(r.cpu_seconds * 1000 for r in results)
            if spec.name == "api":
                api_cpu = cpu
            layers = "core+llm" if spec.llm else "core"
            verdict = "ok" if cpu <= GOAL_MS else f"over {GOAL_MS} ms"
            print(
                f"  {spec.name:<15} {layers:<9} {median:>5.0f} ms {best:>5.0f} ms {cpu:>5.0f} ms  "
                f"{'yes' if any(r.anthropic_imported for r in results) else 'no'}  ({verdict})"
            )
        if api_cpu is not None:
            print(
                f"  API handler goal <= {GOAL_MS} ms (the CPU time: an idle machine's wall time): "
                f"{'met' if api_cpu <= GOAL_MS else 'MISSED'} ({api_cpu:.0f} ms)"
            )
        print(
            "  import anthropic, once a key exists (AI turns only): "
            f"{anthropic_import_ms(host_layers, boto3_dir):.0f} ms"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
