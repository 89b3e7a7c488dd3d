"""DynamoDB for local play: moto in a child process on 127.0.0.1, or the user's endpoint.

`start_dynamodb()` sets what boto3 needs in the environment (`AWS_ENDPOINT_URL_DYNAMODB`,
fake credentials, a region, the table names) and creates the games, events and
idempotency tables. If `AWS_ENDPOINT_URL_DYNAMODB` is already set (DynamoDB Local, a moto
server of your own), nothing is started and only missing tables are created. Nothing here
ever talks to AWS: the endpoint is always a local one.

Moto's TTL never deletes items (the store filters expired items on every read anyway).
"""

from __future__ import annotations

import contextlib
import os
import select
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from horcrux_tools.local.dynamo_process import BANNER

ENDPOINT_ENV = "AWS_ENDPOINT_URL_DYNAMODB"
STORE_ENDPOINT_ENV = "HORCRUX_DYNAMODB_ENDPOINT"
DEFAULT_IDEMPOTENCY_TABLE = "horcrux-idempotency"
STARTUP_S = 30.0
STOP_GRACE_S = 2.0

LOCAL_ENV: dict[str, str] = {
    "AWS_DEFAULT_REGION": "eu-west-1",
    "AWS_ACCESS_KEY_ID": "local",
    "AWS_SECRET_ACCESS_KEY": "local",
    "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",
    "HORCRUX_EVENTS_TABLE": "horcrux-events",
    "HORCRUX_GAMES_TABLE": "horcrux-games",
    "HORCRUX_IDEMPOTENCY_TABLE": DEFAULT_IDEMPOTENCY_TABLE,
    # the Lambdas' Powertools logging and EMF metrics would flood a terminal
    "POWERTOOLS_METRICS_DISABLED": "true",
    "POWERTOOLS_LOG_LEVEL": "WARNING",
    "POWERTOOLS_SERVICE_NAME": "horcrux-local",
}


@dataclass
class LocalDynamo:
    """The DynamoDB endpoint local play uses; `stop()` stops the child process, if any
    (`embedded`: started by us, `python -m horcrux_tools.local.dynamo_process`)."""

    endpoint: str
    embedded: bool
    tables: list[str] = field(default_factory=list)
    _process: subprocess.Popen[bytes] | None = None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    def stop(self, grace_s: float = STOP_GRACE_S) -> None:
        """SIGTERM the child, SIGKILL it after `grace_s`."""
        if self._process is not None:
            process, self._process = self._process, None
            stop_process(process, grace_s)
            if os.environ.get(ENDPOINT_ENV) == self.endpoint:
                del os.environ[ENDPOINT_ENV]


def stop_process(process: subprocess.Popen[Any], grace_s: float = STOP_GRACE_S) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(grace_s)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    for pipe in (process.stdin, process.stdout):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()


def child_environment(
    unset: Iterable[str] = (), extra: Mapping[str, str] | None = None
) -> dict[str, str]:
    """This process's environment for a child: `unset` removed, `extra` added, unbuffered."""
    env = {name: value for name, value in os.environ.items() if name not in set(unset)}
    env["PYTHONUNBUFFERED"] = "1"
    env.update(extra or {})
    return env


def spawn_dynamodb(
    host: str = "127.0.0.1", port: int = 0, *, startup_s: float = STARTUP_S, tied: bool = True
) -> tuple[subprocess.Popen[bytes], str]:
    """Start `python -m horcrux_tools.local.dynamo_process` and return it with its endpoint once
    it answers. `tied`: it exits when this process does (its stdin closes)."""
    command = [sys.executable, "-m", "horcrux_tools.local.dynamo_process", "--host", host]
    command += ["--port", str(port)] + (["--exit-with-stdin"] if tied else [])
    process = subprocess.Popen(
        command,
        stdin=subprocess.PIPE if tied else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        env=child_environment(),
    )
    try:
        endpoint = _read_banner(process, startup_s)
        _wait_answering(endpoint, time.monotonic() + startup_s)
    except BaseException:
        stop_process(process, 0)
        raise
    return process, endpoint


def _read_banner(process: subprocess.Popen[bytes], timeout_s: float) -> str:
    assert process.stdout is not None
    deadline = time.monotonic() + timeout_s
    seen = b""
    fd = process.stdout.fileno()
    while b"\n" not in seen:
        left = deadline - time.monotonic()
        if left <= 0 or process.poll() is not None:
            raise RuntimeError(
                f"the local DynamoDB process did not start (exit {process.poll()}): {seen!r}"
            )
        ready, _, _ = select.select([fd], [], [], min(left, 0.5))
        if ready:
            chunk = os.read(fd, 4096)
            if not chunk:
                continue
            seen += chunk
    line = seen.split(b"\n", 1)[0].decode()
    if BANNER not in line:
        raise RuntimeError(f"unexpected output from the local DynamoDB process: {line!r}")
    return line.split(BANNER, 1)[1].strip()


def _wait_answering(endpoint: str, deadline: float) -> None:
    """Poll the endpoint (any HTTP answer will do) until it answers or the deadline."""
    attempt = 0
    while True:
        try:
            with urllib.request.urlopen(endpoint + "/", timeout=1):
                return
        except urllib.error.HTTPError:
            return  # it answered
        except OSError:
            if time.monotonic() >= deadline:
                raise
        time.sleep(min(0.01 * 2**attempt, 0.2))
        attempt += 1


def local_environment(*, override_credentials: bool) -> None:
    """Defaults for a local run; credentials are replaced only for the embedded server
    (a user's own endpoint may want theirs)."""
    for name, value in LOCAL_ENV.items():
        if override_credentials and name.startswith("AWS_"):
            os.environ[name] = value
        else:
            os.environ.setdefault(name, value)
    if override_credentials:
        # nothing may reach AWS: no profile, no session, no Secrets Manager lookup
        for name in (
            "AWS_PROFILE",
            "AWS_SESSION_TOKEN",
            "AWS_SECURITY_TOKEN",
            "HORCRUX_ANTHROPIC_SECRET_ARN",
        ):
            os.environ.pop(name, None)


def create_tables() -> list[str]:
    """The games and events tables (`DynamoDbStore.create_tables`) and the idempotency
    table (partition key `id`, TTL `expiration`), each only if missing."""
    from horcrux.store import DynamoDbStore
    from horcrux_tools.local.tables import create_tables as create_store_tables

    store = DynamoDbStore()
    create_store_tables(store)
    client = store.client
    table = os.environ.get("HORCRUX_IDEMPOTENCY_TABLE", DEFAULT_IDEMPOTENCY_TABLE)
    if table not in client.list_tables().get("TableNames", []):
        client.create_table(
            TableName=table,
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[{"AttributeName": "id", "AttributeType": "S"}],
            KeySchema=[{"AttributeName": "id", "KeyType": "HASH"}],
        )
        client.get_waiter("table_exists").wait(TableName=table)
        client.update_time_to_live(
            TableName=table,
            TimeToLiveSpecification={"Enabled": True, "AttributeName": "expiration"},
        )
    return [store.settings.games_table, store.settings.events_table, table]


def start_dynamodb(host: str = "127.0.0.1", port: int = 0) -> LocalDynamo:
    """Start moto's DynamoDB in a child process on `host:port` (0: a free port) unless the user set
    `AWS_ENDPOINT_URL_DYNAMODB` (or the store's `HORCRUX_DYNAMODB_ENDPOINT`); then create
    the missing tables."""
    existing = os.environ.get(ENDPOINT_ENV) or os.environ.get(STORE_ENDPOINT_ENV)
    if existing:
        local_environment(override_credentials=False)
        os.environ.setdefault(ENDPOINT_ENV, existing)  # the idempotency layer's boto3 too
        return LocalDynamo(endpoint=existing, embedded=False, tables=create_tables())

    local_environment(override_credentials=True)
    process, endpoint = spawn_dynamodb(host, port)
    os.environ[ENDPOINT_ENV] = endpoint
    try:
        tables = create_tables()
    except BaseException:
        stop_process(process)
        raise
    return LocalDynamo(endpoint=endpoint, embedded=True, tables=tables, _process=process)


# ---------------------------------------------------------------- health
UNREACHABLE = "dynamodb unreachable"
TABLES_MISSING = "tables missing"
BUSY = "dynamodb busy"
"""Connected, but no answer within the probe's timeout: overloaded or stalled (not down)."""


@dataclass(frozen=True)
class DynamoHealth:
    """One DescribeTable round: `problem` is None, UNREACHABLE, BUSY or TABLES_MISSING."""

    endpoint: str
    problem: str | None = None
    detail: str = ""
    recreated: int = 0
    """How many times the tables were found missing and created again."""

    @property
    def ok(self) -> bool:
        return self.problem is None


class DynamoWatch:
    """DescribeTable on the tables with a short timeout, cached for `cache_s` so polling
    `/healthz` is cheap. With `recreate`, tables found missing (a local DynamoDB that came
    back empty) are created again and `on_loss` gets the message, once per loss.
    `start()` runs `check()` every `interval_s` in a thread (recovery needs no request)."""

    def __init__(
        self,
        endpoint: str,
        tables: list[str],
        *,
        timeout_s: float = 1.0,
        cache_s: float = 1.0,
        recreate: bool = True,
        on_loss: Any = None,
    ) -> None:
        self.endpoint = endpoint
        self.tables = list(tables)
        self.timeout_s = timeout_s
        self.cache_s = cache_s
        self.recreate = recreate
        self.on_loss = on_loss
        self.recreated = 0
        self._client: Any = None
        self._lock = threading.Lock()
        self._last: DynamoHealth | None = None
        self._at = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _describe(self) -> Any:
        if self._client is None:  # the store's client: short timeouts, one attempt
            from horcrux.settings import store_settings
            from horcrux.store import DynamoDbStore

            settings = store_settings().model_copy(
                update={
                    "endpoint_url": self.endpoint,
                    "connect_timeout_s": self.timeout_s,
                    "read_timeout_s": self.timeout_s,
                    "max_attempts": 1,
                }
            )
            self._client = DynamoDbStore(settings).client
        return self._client.describe_table

    def check(self) -> DynamoHealth:
        with self._lock:
            now = time.monotonic()
            if self._last is not None and now - self._at < self.cache_s:
                return self._last
            self._last = self._probe()
            self._at = time.monotonic()
            return self._last

    def _probe(self) -> DynamoHealth:
        missing: list[str] = []
        try:
            describe = self._describe()
            for table in self.tables:
                try:
                    describe(TableName=table)
                except Exception as exc:
                    if _aws_code(exc) != "ResourceNotFoundException":
                        raise
                    missing.append(table)
        except Exception as exc:
            from botocore.exceptions import ReadTimeoutError

            if isinstance(exc, ReadTimeoutError):  # it took the connection: slow, not gone
                return DynamoHealth(
                    self.endpoint,
                    BUSY,
                    f"connected, but DescribeTable did not answer within {self.timeout_s:g} s "
                    "(overloaded or stalled)",
                )
            return DynamoHealth(self.endpoint, UNREACHABLE, f"{type(exc).__name__}: {exc}")
        if not missing:
            return DynamoHealth(self.endpoint, recreated=self.recreated)
        if self.recreate:
            try:
                create_tables()
            except Exception as exc:
                return DynamoHealth(
                    self.endpoint, TABLES_MISSING, f"{', '.join(missing)}; recreating: {exc}"
                )
            self.recreated += 1
            if self.on_loss is not None:
                self.on_loss(
                    f"the local DynamoDB at {self.endpoint} lost its data (restarted?): "
                    "tables recreated; games from before are gone"
                )
            return DynamoHealth(self.endpoint, recreated=self.recreated)
        return DynamoHealth(self.endpoint, TABLES_MISSING, ", ".join(missing))

    def start(self, interval_s: float = 1.0) -> DynamoWatch:
        def run() -> None:
            while not self._stop.wait(interval_s):
                with contextlib.suppress(Exception):
                    self.check()

        self._thread = threading.Thread(target=run, name="horcrux-dynamo-watch", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(self.timeout_s * (len(self.tables) + 1) + 1)


def _aws_code(exc: BaseException) -> str | None:
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        code = response.get("Error", {}).get("Code")
        return str(code) if code is not None else None
    return None


__all__ = [
    "BUSY",
    "ENDPOINT_ENV",
    "STORE_ENDPOINT_ENV",
    "TABLES_MISSING",
    "UNREACHABLE",
    "DynamoHealth",
    "DynamoWatch",
    "LocalDynamo",
    "child_environment",
    "create_tables",
    "local_environment",
    "spawn_dynamodb",
    "start_dynamodb",
    "stop_process",
]
