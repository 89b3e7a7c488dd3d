"""Build the Lambda layers without Docker, from the locks and the `horcrux` wheel.

Two layers (Lambda puts each layer's `python/` on `sys.path`, merged under /opt/python):

- `core`: `locks/core.txt` (pydantic, aws-lambda-powertools, numpy and what they need) and the
  `horcrux` package installed from the runtime distribution's wheel (`horcrux-hunt`); attached
  to every function;
- `llm`: `locks/llm.txt` (the Anthropic SDK) less what the core already holds (the lock is
  resolved with the core's lock as constraints, so a shared package has one version),
  attached only to the AI turn functions (the only code that ever imports it, lazily, once a
  key exists).

    .venv/bin/python infra/build_layer.py           # build/layer/{core,llm} (linux arm64, py3.13)
    .venv/bin/python infra/build_layer.py --host    # build/layer-host/{core,llm} (this interpreter)
    .venv/bin/python infra/build_layer.py --lock    # regenerate locks/ (`make lock`, needs PyPI)

The locks are `uv pip compile` outputs for the Lambda platform (aarch64 manylinux 2.34, the
python3.13 runtime's Amazon Linux 2023; CPython 3.13) with every distribution's hashes. The
build runs `pip install --no-deps --require-hashes --only-binary=:all: -r <lock>` (plus
`--platform`/`--python-version` for Lambda): exactly the locked files or nothing, no
resolution, nothing compiled. `--host` installs the same locked versions for a CPython 3.13 on this
machine (`host_python()`; the lock carries every platform's hashes): the tests and the
benchmark import every handler in a clean interpreter of it from that copy.

`horcrux` is built as a wheel (`pip wheel`, setuptools, from a clean copy of pyproject.toml
and shared/horcrux, so nothing stale ships) and installed with `pip install --no-deps` from
that wheel's folder (by name, not path: pip records no build path), exactly as built: nothing
is removed after the fact. The tools (CLI, local server, evaluation, self-play, seasons) are
another distribution (`horcrux-tools`, tools/), so the layer holds none of them by
construction; tests/infra/test_layer.py imports every module of the layer's `horcrux` in a clean
interpreter and tests/integration/test_imports.py checks that no runtime module imports a tool.

The locked wheels are installed once per lock and platform (a stamp holds their hash); the
`horcrux` wheel is rebuilt when its sources change, so `cdk synth` always ships the current
code. Only the first build of a clone needs PyPI (or pip's cache). Files a Lambda never uses
are pruned: `__pycache__`, test suites, type stubs, C headers, console scripts, numpy's f2py
and numpy.random (see PRUNE_PATHS).
"""

from __future__ import annotations

import argparse
import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORE_REQUIREMENTS = ROOT / "requirements.txt"
LLM_REQUIREMENTS = ROOT / "infra" / "llm-requirements.txt"
DEV_REQUIREMENTS = ROOT / "requirements-dev.txt"
LOCKS = ROOT / "locks"
CORE_LOCK = LOCKS / "core.txt"
LLM_LOCK = LOCKS / "llm.txt"
DEV_LOCK = LOCKS / "dev.txt"
PACKAGE = ROOT / "shared" / "horcrux"
BUILD = ROOT / "build"
LOCK_COMMAND = "make lock"

LAMBDA_PYTHON = "3.13"
# the python3.13 runtime is Amazon Linux 2023: glibc 2.34 (uv's name for the platform)
LAMBDA_UV_PLATFORM = "aarch64-manylinux_2_34"
LAMBDA_PLATFORMS = (
    "manylinux_2_34_aarch64",
    "manylinux_2_28_aarch64",
    "manylinux2014_aarch64",
)
DEV_PYTHON = "3.11"  # the oldest Python the project supports (pyproject's requires-python)

PRUNE_DIRS = frozenset({"__pycache__", "tests"})
# numpy/random (3.8 MB) too: numpy imports it lazily, on first use, and horcrux never does (its
# randomness is `horcrux.rng`; tests/infra/test_layer.py checks the source and plays the planner
# from the pruned layer). Without it the core layer stays under the 50 MiB goal.
PRUNE_PATHS = (
    "bin",
    "numpy/f2py",
    "numpy/_core/include",
    "numpy/_pyinstaller",
    "numpy/random",
)
PRUNE_SUFFIXES = frozenset({".pyc", ".pyi", ".pyx", ".pxd", ".h"})


HOST_PYTHON_ENV = "HORCRUX_LAYER_PYTHON"


@functools.cache
def host_python() -> str:
    """A CPython 3.13 on this machine (the Lambda runtime's version, which the locks are for).

    `HORCRUX_LAYER_PYTHON` if set, else this interpreter if it is 3.13, else `python3.13` on
    PATH or under pyenv. The host layer is installed for it and the clean-import checks run
    with it (tests/infra/test_layer.py, benchmarks/bench_infra.py)."""
    override = os.environ.get(HOST_PYTHON_ENV, "").strip()
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    candidates = (
        [override]
        if override
        else [
            sys.executable,
            shutil.which("python3.13"),
            *(str(p) for p in sorted(pyenv.glob("3.13*/bin/python3.13"), reverse=True)),
        ]
    )
    for candidate in candidates:
        if not candidate:
            continue
        done = subprocess.run(
            [candidate, "-c", "import sys; print('%d.%d' % sys.version_info[:2])"],
            capture_output=True,
            text=True,
            check=False,
        )
        if done.returncode == 0 and done.stdout.strip() == LAMBDA_PYTHON:
            return candidate
    raise RuntimeError(
        f"no CPython {LAMBDA_PYTHON} found (the Lambda runtime's, which locks/ are for): "
        f"install one or set {HOST_PYTHON_ENV}=/path/to/python{LAMBDA_PYTHON}"
    )


@dataclass(frozen=True)
class Platform:
    """Which interpreter the wheels are for: the Lambda runtime's, or this machine's 3.13."""

    name: str
    platforms: tuple[str, ...]  # () : the installing interpreter's own platform
    python_version: str | None  # None: the installing interpreter's
    host: bool = False  # installed by `host_python()` for itself, else by this pip for Lambda

    @property
    def root(self) -> Path:
        return BUILD / self.name

    @property
    def python(self) -> str:
        """The interpreter whose pip installs the wheels."""
        return host_python() if self.host else sys.executable


LAMBDA = Platform("layer", LAMBDA_PLATFORMS, LAMBDA_PYTHON)
HOST = Platform("layer-host", (), None, host=True)
LAYERS = ("core", "llm")


# ------------------------------------------------------------------ locks
def lock_commands(uv: str = "uv") -> list[list[str]]:
    """The `uv pip compile` runs that write locks/ (core first: llm is constrained by it)."""
    lambda_target = [
        "--python-platform",
        LAMBDA_UV_PLATFORM,
        "--python-version",
        LAMBDA_PYTHON,
    ]
    common = ["--generate-hashes", "--custom-compile-command", LOCK_COMMAND, "--quiet"]
    compile_ = [uv, "pip", "compile"]
    return [
        [*compile_, str(CORE_REQUIREMENTS), *lambda_target, *common, "-o", str(CORE_LOCK)],
        [
            *compile_,
            str(LLM_REQUIREMENTS),
            "-c",
            str(CORE_LOCK),
            *lambda_target,
            *common,
            "-o",
            str(LLM_LOCK),
        ],
        # the development environment, for every platform (`--universal`), for reproducing
        # CI; `make venv` installs requirements-dev.txt as is (docs/DEPLOY.md, Locks)
        [
            *compile_,
            str(DEV_REQUIREMENTS),
            "--universal",
            "--python-version",
            DEV_PYTHON,
            *common,
            "-o",
            str(DEV_LOCK),
        ],
    ]


def uv_executable() -> str:
    """uv from this environment (requirements-dev.txt installs it), else from PATH."""
    beside = Path(sys.executable).with_name("uv")
    if beside.exists():
        return str(beside)
    found = shutil.which("uv")
    if found is None:
        raise RuntimeError("uv is not installed: pip install uv (requirements-dev.txt has it)")
    return found


def lock() -> list[Path]:
    """Regenerate the locks (needs PyPI). Paths in them are written relative to the repo."""
    LOCKS.mkdir(exist_ok=True)
    for command in lock_commands(uv_executable()):
        relative = [
            str(Path(a).relative_to(ROOT)) if a.startswith(str(ROOT)) else a for a in command
        ]
        subprocess.run(relative, check=True, cwd=ROOT)
    return [CORE_LOCK, LLM_LOCK, DEV_LOCK]


def locked(path: Path) -> dict[str, tuple[str, tuple[str, ...]]]:
    """A lock's pins: normalised name -> (version, sha256 hashes)."""
    pins: dict[str, tuple[str, tuple[str, ...]]] = {}
    text = path.read_text().replace("\\\n", " ")
    for raw in text.splitlines():
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        match = re.match(
            r"^([A-Za-z0-9][A-Za-z0-9._-]*)(\[[^\]]*\])?==(\S+?)(\s*;.*?)?((?:\s+--hash=\S+)*)$",
            line,
        )
        if match is None:
            raise ValueError(f"{path.name}: not a pinned requirement with hashes: {line!r}")
        hashes = tuple(h.removeprefix("sha256:") for h in re.findall(r"--hash=(\S+)", line))
        pins[normalise(match.group(1))] = (match.group(3), hashes)
    return pins


def normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


# ------------------------------------------------------------------ installing
def _pip_install(platform: Platform, site: Path, *args: str) -> None:
    command = [
        platform.python,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-compile",
        "--no-deps",
        "--root-user-action=ignore",
        "--target",
        str(site),
        *args,
    ]
    subprocess.run(command, check=True)


def _platform_args(platform: Platform) -> list[str]:
    args = ["--only-binary=:all:"]
    for tag in platform.platforms:
        args += ["--platform", tag]
    if platform.python_version is not None:
        args += ["--python-version", platform.python_version, "--implementation", "cp"]
    return args


def distributions(site: Path) -> dict[str, tuple[str, Path]]:
    """The distributions installed in `site`: normalised name -> (version, dist-info dir)."""
    found: dict[str, tuple[str, Path]] = {}
    for info in site.glob("*.dist-info"):
        name, _, version = info.name[: -len(".dist-info")].partition("-")
        found[normalise(name)] = (version, info)
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
    _remove_empty_dirs(site)


def _remove_empty_dirs(site: Path) -> None:
    for directory in sorted(site.rglob("*"), reverse=True):
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
    _rewrite_records(site)


def _rewrite_records(site: Path) -> None:
    """Drop the RECORD lines of files that are gone (pruned), so the metadata stays true."""
    for info in site.glob("*.dist-info"):
        record = info / "RECORD"
        if not record.exists():
            continue
        kept = [
            line
            for line in record.read_text().splitlines()
            if line and (site / line.split(",", 1)[0]).resolve().exists()
        ]
        record.write_text("".join(f"{line}\n" for line in kept))


def package_fingerprint() -> str:
    """A hash of what goes into the `horcrux` wheel: pyproject.toml, README.md, shared/horcrux."""
    digest = hashlib.sha256()
    for path in (ROOT / "pyproject.toml", ROOT / "README.md", Path(__file__)):
        digest.update(path.read_bytes())
    for path in sorted(PACKAGE.rglob("*")):
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc":
            digest.update(str(path.relative_to(PACKAGE)).encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()


def build_wheel(out: Path) -> Path:
    """The `horcrux-hunt` wheel, built from a clean copy of the sources into `out`."""
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="horcrux-wheel-") as tmp:
        source = Path(tmp) / "src"
        source.mkdir()
        for name in ("pyproject.toml", "README.md"):
            shutil.copy2(ROOT / name, source / name)
        shutil.copytree(
            PACKAGE,
            source / "shared" / PACKAGE.name,
            ignore=shutil.ignore_patterns("__pycache__", "*.pyc"),
        )
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "wheel",
                "--quiet",
                "--disable-pip-version-check",
                "--no-deps",
                "--no-build-isolation",
                "--wheel-dir",
                str(out),
                str(source),
            ],
            check=True,
        )
    (wheel,) = out.glob("horcrux_hunt-*.whl")
    return wheel


def _install_package(core: Path, wheels: Path) -> None:
    """Replace the core's `horcrux` with the runtime wheel's, as built (nothing removed)."""
    existing = distributions(core).get("horcrux-hunt")
    if existing is not None:
        _remove_distribution(core, existing[1])
    if (core / PACKAGE.name).exists():
        shutil.rmtree(core / PACKAGE.name)
    if wheels.exists():
        shutil.rmtree(wheels)
    wheel = build_wheel(wheels)
    name, version = wheel.name.split("-")[:2]
    # by name from the wheel's folder, not by path: a path is a direct URL, which pip would
    # record (direct_url.json, the temporary build path). Pure Python: the same files for
    # every platform.
    _pip_install(
        LAMBDA, core, "--no-index", "--find-links", str(wheels), f"{normalise(name)}=={version}"
    )


def _install_locked(platform: Platform, root: Path) -> None:
    core = root / "core" / "python"
    llm = root / "llm" / "python"
    core.mkdir(parents=True)
    llm.mkdir(parents=True)
    platform_args = _platform_args(platform)
    _pip_install(platform, core, *platform_args, "--require-hashes", "-r", str(CORE_LOCK))
    _pip_install(platform, llm, *platform_args, "--require-hashes", "-r", str(LLM_LOCK))
    installed = distributions(core)
    for name, (version, info) in distributions(llm).items():
        if name in installed:  # the core's copy serves both (the same version: see the lock)
            if installed[name][0] != version:
                raise RuntimeError(f"{name}: core has {installed[name][0]}, llm {version}")
            _remove_distribution(llm, info)
    _prune(core)
    _prune(llm)


def fingerprint(platform: Platform) -> str:
    """A hash of what decides the installed wheels: the locks, the platform, this file."""
    digest = hashlib.sha256()
    for path in (CORE_LOCK, LLM_LOCK, Path(__file__)):
        digest.update(path.read_bytes())
    digest.update(json.dumps([platform.platforms, platform.python_version]).encode())
    if platform.host:
        digest.update(platform.python.encode())
    return digest.hexdigest()


def build(
    platform: Platform = LAMBDA, *, force: bool = False, root: Path | None = None
) -> dict[str, Path]:
    """Build (or refresh) the platform's layers; returns each layer's asset directory.

    `root` (default `build/<platform>`) lets a test build a second, independent copy."""
    root = root or platform.root
    stamp = root / ".locks.sha256"
    package_stamp = root / ".package.sha256"
    wanted = fingerprint(platform)
    current = stamp.read_text().strip() if stamp.exists() else None
    layers = {name: root / name for name in LAYERS}
    if force or current != wanted or not all((p / "python").is_dir() for p in layers.values()):
        if root.exists():
            shutil.rmtree(root)
        _install_locked(platform, root)
        stamp.write_text(wanted + "\n")
    package = package_fingerprint()
    core = layers["core"] / "python"
    if (
        force
        or not package_stamp.exists()
        or package_stamp.read_text().strip() != package
        or not (core / PACKAGE.name).is_dir()
    ):
        _install_package(core, root / "wheel")
        package_stamp.write_text(package + "\n")
    return layers


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build the Lambda layers without Docker.")
    parser.add_argument("--host", action="store_true", help="build for this interpreter")
    parser.add_argument("--force", action="store_true", help="reinstall the wheels")
    parser.add_argument("--lock", action="store_true", help="regenerate locks/ with uv")
    args = parser.parse_args(argv)
    if args.lock:
        for path in lock():
            print(f"locked: {path.relative_to(ROOT)}")
        return 0
    for name, path in build(HOST if args.host else LAMBDA, force=args.force).items():
        print(f"{name}: {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
