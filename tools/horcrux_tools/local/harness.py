"""A `horcrux serve` (or local DynamoDB) subprocess to drive from tests and benchmarks.

`ServeProcess` starts `python -m horcrux_tools.cli serve --port 0 --quiet ...`, reads the URL from
its banner, waits until `/healthz` answers, keeps its output (`output()`,
`wait_for_output()`), reads its RSS and its DynamoDB child's (Linux `/proc`), and stops it
with SIGTERM, timing the exit. `DynamoProcess` does the same for
`python -m horcrux_tools.local.dynamo_process` on a chosen port (the fault tests' "user's own
endpoint", killed, frozen and restarted under a running server).
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from horcrux_tools.local.dynamo_process import BANNER as DYNAMO_BANNER
from horcrux_tools.local.dynamo_process import FAULTS_PATH
from horcrux_tools.local.moto_server import child_environment

STARTUP_S = 60.0


def rss_bytes(pid: int) -> int:
    """The resident set size of a process (0 if it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    except OSError:
        return 0
    return 0


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of a process so far (0 if it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*/children"):
        try:
            found += [int(p) for p in task.read_text().split()]
        except OSError:
            continue
    return found


def get_json(url: str, timeout_s: float = 5.0) -> tuple[int, dict[str, str], Any]:
    """GET `url`: status, headers (lower-cased names), JSON body (None if not JSON)."""
    return request_json("GET", url, timeout_s=timeout_s)


def request_json(
    method: str,
    url: str,
    body: Any = None,
    *,
    headers: Mapping[str, str] | None = None,
    timeout_s: float = 5.0,
) -> tuple[int, dict[str, str], Any]:
    """One request (`body` sent as JSON): status, headers (lower-cased), JSON body or None."""
    data = None if body is None else json.dumps(body).encode()
    sent = {"content-type": "application/json"} if data is not None else {}
    request = urllib.request.Request(
        url, data=data, method=method, headers={**sent, **(headers or {})}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            status, got, raw = response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as exc:
        status, got, raw = exc.code, dict(exc.headers), exc.read()
    try:
        payload = json.loads(raw)
    except ValueError:
        payload = None
    return status, {k.lower(): v for k, v in got.items()}, payload


class _Output:
    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self.fresh: queue.Queue[str] = queue.Queue()
        self._lock = threading.Lock()
        threading.Thread(target=self._pump, args=(process,), daemon=True).start()

    def _pump(self, process: subprocess.Popen[str]) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            with self._lock:
                self.lines.append(line)
            self.fresh.put(line)

    def text(self) -> str:
        with self._lock:
            return "".join(self.lines)

    def wait_for(self, pattern: str, timeout_s: float) -> re.Match[str]:
        deadline = time.monotonic() + timeout_s
        while True:
            found = re.search(pattern, self.text())
            if found is not None:
                return found
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"no {pattern!r} in the output: {self.text()[-2000:]!r}")
            with contextlib.suppress(queue.Empty):
                self.fresh.get(timeout=min(left, 0.5))


class ServeProcess:
    """`horcrux serve --port 0 --quiet *args` in a subprocess."""

    def __init__(
        self,
        *args: str,
        env: Mapping[str, str] | None = None,
        own_dynamodb: bool = True,
        startup_s: float = STARTUP_S,
        unset: Iterable[str] = (),
    ) -> None:
        """`env` is added to this process's environment and `unset` removed from it."""
        unset = ["AWS_PROFILE", *unset]
        if own_dynamodb:  # never a real endpoint: the server starts its moto process
            unset += ["AWS_ENDPOINT_URL_DYNAMODB", "HORCRUX_DYNAMODB_ENDPOINT"]
        command = [sys.executable, "-m", "horcrux_tools.cli", "serve", "--port", "0", "--quiet"]
        self.process = subprocess.Popen(
            [*command, *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=child_environment(unset, env),
        )
        self._output = _Output(self.process)
        try:
            found = self._output.wait_for(
                r"listening on (http://[\d.]+:\d+) \(DynamoDB: [^)]* at (http://[\d.]+:\d+)\)",
                startup_s,
            )
            self.url, self.dynamodb = found.group(1), found.group(2)
            self.wait_healthy(startup_s)
        except BaseException:
            self.kill()
            raise

    @property
    def pid(self) -> int:
        return self.process.pid

    def dynamo_pid(self) -> int | None:
        kids = children(self.pid)
        return kids[0] if kids else None

    def rss(self) -> tuple[int, int]:
        """RSS of the server and of its DynamoDB child (0 if none), in bytes."""
        child = self.dynamo_pid()
        return rss_bytes(self.pid), rss_bytes(child) if child else 0

    def cpu(self) -> tuple[float, float]:
        """CPU seconds used by the server and by its DynamoDB child (0 if none)."""
        child = self.dynamo_pid()
        return cpu_seconds(self.pid), cpu_seconds(child) if child else 0.0

    def output(self) -> str:
        return self._output.text()

    def wait_for_output(self, pattern: str, timeout_s: float = 10.0) -> re.Match[str]:
        return self._output.wait_for(pattern, timeout_s)

    def health(self, timeout_s: float = 5.0) -> tuple[int, dict[str, str], Any]:
        return get_json(f"{self.url}/healthz", timeout_s)

    def wait_healthy(self, timeout_s: float = 30.0, want: int = 200) -> Any:
        """Poll /healthz (bounded back-off) until it answers `want`; its body."""
        deadline = time.monotonic() + timeout_s
        attempt = 0
        last: Any = None
        while True:
            if self.process.poll() is not None:
                raise RuntimeError(f"horcrux serve exited {self.process.returncode}")
            try:
                status, _, body = self.health()
                last = (status, body)
                if status == want:
                    return body
            except OSError as exc:
                last = exc
            if time.monotonic() >= deadline:
                raise TimeoutError(f"/healthz never answered {want}: {last}")
            time.sleep(min(0.02 * 1.5**attempt, 0.5))
            attempt += 1

    def terminate(self, timeout_s: float = 15.0) -> tuple[int, float]:
        """SIGTERM; the exit code and the seconds it took (kills it after `timeout_s`)."""
        start = time.monotonic()
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.process.returncode
        return code, time.monotonic() - start

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def __enter__(self) -> ServeProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        self.terminate()


class DynamoProcess:
    """`python -m horcrux_tools.local.dynamo_process` on `port` (0: a free one); `faults`:
    with its fault switch (`stall_commits`)."""

    def __init__(self, port: int = 0, *, startup_s: float = 30.0, faults: bool = False) -> None:
        command = [sys.executable, "-m", "horcrux_tools.local.dynamo_process", "--port", str(port)]
        self.process = subprocess.Popen(
            command + (["--faults"] if faults else []),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            env=child_environment(),
        )
        self._output = _Output(self.process)
        try:
            found = self._output.wait_for(rf"{DYNAMO_BANNER} (http://[\d.]+:(\d+))", startup_s)
        except BaseException:
            self.stop()
            raise
        self.endpoint, self.port = found.group(1), int(found.group(2))

    def signal(self, sig: int) -> None:
        os.kill(self.process.pid, sig)

    def stall_commits(self, seconds: float) -> Any:
        """Every TransactWriteItems from now on is applied and answered `seconds` late (0:
        on time again); the process's answer (the faults in force)."""
        status, _, body = request_json(
            "POST", f"{self.endpoint}{FAULTS_PATH}", {"stall_commits_s": seconds}
        )
        if status != 200:
            raise RuntimeError(f"the fault switch answered {status}: {body}")
        return body

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.kill()
        self.process.wait()


__all__ = [
    "DynamoProcess",
    "ServeProcess",
    "children",
    "cpu_seconds",
    "get_json",
    "request_json",
    "rss_bytes",
]
