"""Build the Lambda layers without Docker: `pip install --platform` + a copy of `horcrux`.

Two layers (Lambda puts each layer's `python/` on `sys.path`, merged under /opt/python):

- `core`: the `shared/horcrux` package and `requirements.txt` (pydantic, aws-lambda-powertools,
  numpy), attached to every function;
- `llm`: the Anthropic SDK (`infra/llm-requirements.txt`) and those of its dependencies the
  core lacks, attached only to the AI turn functions (the only code that ever imports it,
  lazily, once a key exists). Its shared dependencies are pinned to the core's versions
  (a pip constraints file) so the merged /opt/python holds one version of each.

    .venv/bin/python infra/build_layer.py           # build/layer/{core,llm} (linux arm64, py3.13)
    .venv/bin/python infra/build_layer.py --host    # build/layer-host/{core,llm} (this interpreter)

The Lambda build takes binary wheels only (`--only-binary=:all:`, so nothing is compiled here)
for manylinux aarch64 up to glibc 2.34 (the python3.13 runtime is Amazon Linux 2023).
`--host` builds the same requirements for the interpreter running the script: the tests and
the benchmark import every handler in a clean interpreter from that copy (the pure-Python
packages are the same files; numpy, pydantic-core and jiter are the host's binaries).

Wheels are installed once per requirements and platform (a stamp holds their hash); the
`horcrux` copy is refreshed at every call, so `cdk synth` always ships the current code. Only
the first build of a clone needs PyPI (or pip's cache). Files a Lambda never uses are pruned:
`__pycache__`, test suites, type stubs, C headers, console scripts, numpy's f2py and
numpy.random (see PRUNE_PATHS).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE_REQUIREMENTS = ROOT / "requirements.txt"
LLM_REQUIREMENTS = ROOT / "infra" / "llm-requirements.txt"
PACKAGE = ROOT / "shared" / "horcrux"
BUILD = ROOT / "build"

LAMBDA_PYTHON = "3.13"
LAMBDA_PLATFORMS = (
    "manylinux_2_34_aarch64",
    "manylinux_2_28_aarch64",
    "manylinux2014_aarch64",
)
PRUNE_DIRS = frozenset({"__pycache__", "tests"})
# numpy/random (3.8 MB) too: numpy imports it lazily, on first use, and horcrux never does (its
# randomness is `horcrux.rng`; tests/test_layer.py checks the source and plays the planner from
# the pruned layer). Without it the core layer stays under the 50 MB goal.
PRUNE_PATHS = (
    "bin",
    "numpy/f2py",
    "numpy/_core/include",
    "numpy/_pyinstaller",
    "numpy/random",
)
PRUNE_SUFFIXES = frozenset({".pyc", ".pyi", ".pyx", ".pxd", ".h"})


@dataclass(frozen=True)
class Platform:
    """Which interpreter the wheels are for: the Lambda runtime's, or this one."""

    name: str
    platforms: tuple[str, ...]
    python_version: str | None  # None: the running interpreter's

    @property
    def root(self) -> Path:
        return BUILD / self.name

    def layer(self, name: str) -> Path:
        """A layer's asset directory (it holds `python/`)."""
        return self.root / name


LAMBDA = Platform("layer", LAMBDA_PLATFORMS, LAMBDA_PYTHON)
HOST = Platform("layer-host", (), None)
LAYERS = ("core", "llm")


def _pip(platform: Platform, site: Path, *args: str) -> None:
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-compile",
        "--only-binary=:all:",
        "--target",
        str(site),
        *args,
    ]
    for tag in platform.platforms:
        command += ["--platform", tag]
    if platform.python_version is not None:
        command += ["--python-version", platform.python_version, "--implementation", "cp"]
    subprocess.run(command, check=True)


def distributions(site: Path) -> dict[str, tuple[str, Path]]:
    """The distributions installed in `site`: normalised name -> (version, dist-info dir)."""
    found: dict[str, tuple[str, Path]] = {}
    for info in site.glob("*.dist-info"):
        name, _, version = info.name[: -len(".dist-info")].partition("-")
        found[re.sub(r"[-_.]+", "-", name).lower()] = (version, info)
    return found


def _remove_distribution(site: Path, info: Path) -> None:
    """Delete one installed distribution: every file its RECORD lists, then its dist-info."""
    record = info / "RECORD"
    if record.exists():
        for line in record.read_text().splitlines():
            relative = line.split(",", 1)[0]
            path = (site / relative).resolve()
            if path.is_file() and site.resolve() in path.parents:
                path.unlink()
    shutil.rmtree(info, ignore_errors=True)
    for directory in sorted(site.rglob("*"), reverse=True):  # the emptied package dirs
        if directory.is_dir() and not any(directory.iterdir()):
            directory.rmdir()


def _prune(site: Path) -> None:
    for relative in PRUNE_PATHS:
        target = site / relative
        if target.is_dir():
            shutil.rmtree(target)
    for path in sorted(site.rglob("*"), reverse=True):
        if path.is_dir() and path.name in PRUNE_DIRS:
            shutil.rmtree(path)
        elif path.is_file() and path.suffix in PRUNE_SUFFIXES:
            path.unlink()


def _copy_package(site: Path) -> None:
    destination = site / PACKAGE.name
    if destination.exists():
        shutil.rmtree(destination)
    shutil.copytree(PACKAGE, destination, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))


def fingerprint(platform: Platform) -> str:
    """A hash of what decides the installed wheels: the requirements, the platform, this file."""
    digest = hashlib.sha256()
    for path in (CORE_REQUIREMENTS, LLM_REQUIREMENTS, Path(__file__)):
        digest.update(path.read_bytes())
    digest.update(json.dumps([platform.platforms, platform.python_version]).encode())
    if platform.python_version is None:
        digest.update(sys.version.encode())
    return digest.hexdigest()


def _install(platform: Platform) -> None:
    core = platform.layer("core") / "python"
    llm = platform.layer("llm") / "python"
    core.mkdir(parents=True)
    llm.mkdir(parents=True)
    _pip(platform, core, "-r", str(CORE_REQUIREMENTS))
    installed = distributions(core)
    constraints = platform.root / "core-constraints.txt"
    constraints.write_text("".join(f"{n}=={v}\n" for n, (v, _) in sorted(installed.items())))
    _pip(platform, llm, "-r", str(LLM_REQUIREMENTS), "-c", str(constraints))
    for name, (_, info) in distributions(llm).items():
        if name in installed:  # the core's copy (same version) serves both
            _remove_distribution(llm, info)
    _prune(core)
    _prune(llm)


def build(platform: Platform = LAMBDA, *, force: bool = False) -> dict[str, Path]:
    """Build (or refresh) the platform's layers; returns each layer's asset directory."""
    stamp = platform.root / ".requirements.sha256"
    wanted = fingerprint(platform)
    current = stamp.read_text().strip() if stamp.exists() else None
    layers = {name: platform.layer(name) for name in LAYERS}
    if force or current != wanted or not all((p / "python").is_dir() for p in layers.values()):
        if platform.root.exists():
            shutil.rmtree(platform.root)
        _install(platform)
        stamp.write_text(wanted + "\n")
    _copy_package(layers["core"] / "python")
    return layers


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the Lambda layers without Docker.")
    parser.add_argument("--host", action="store_true", help="build for this interpreter")
    parser.add_argument("--force", action="store_true", help="reinstall the wheels")
    args = parser.parse_args(argv)
    for name, path in build(HOST if args.host else LAMBDA, force=args.force).items():
        print(f"{name}: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
