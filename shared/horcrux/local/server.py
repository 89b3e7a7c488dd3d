"""`horcrux serve`: the API Lambda's handler behind a local HTTP server, AI turns in process.

Each HTTP request becomes an API Gateway HTTP API (payload 2.0) event and goes to the SAME
handler as in AWS (`lambdas/api/handler.py`'s `lambda_handler`, loaded from the checkout;
without a checkout, the same `horcrux.api.build_app` it wraps), with a fake Lambda context;
its response (`statusCode`, `headers`, `body`) is written back. Handler calls are
serialised, as in one Lambda execution environment.

AI turns stand in for the events table's stream: after a response that shows an AI seat to
move (create, join, a person's move, or any read of a game that waits for an AI), the game
goes on a queue. One worker thread takes it, builds the stream record the event's INSERT
would carry (`pk`, `seq`, `next_ai`: what `codec.next_ai` marks) and runs it through
`process_partial_response` with the record handler the turn Lambdas run
(`horcrux.api.turns.turn_record_handler` -> `GameService.play_ai_turn`); a failed record is
retried with back-off like a stream retry. One turn per queue visit, so games share the
worker fairly; the game goes back on the queue while it waits for its AI.
"""

from __future__ import annotations

import base64
import collections
import contextlib
import datetime as dt
import importlib.util
import json
import logging
import pathlib
import signal
import sys
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import FrameType, ModuleType
from typing import Any, TextIO
from urllib.parse import parse_qsl, urlsplit

from horcrux.local.moto_server import LocalDynamo, start_dynamodb
from horcrux.models import Seat
from horcrux.service import GameService, TurnOutcome, TurnRequest
from horcrux.store.port import SEATS, NotFound
from horcrux.web import static_response

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
MAX_REQUEST_BYTES = 1 << 20
"""Bodies over this are refused by the adapter (API Gateway's own cap is 10 MB; the API
refuses anything over 4 KB anyway)."""
TURN_TIMEOUT_S = 30.0
"""The turn functions' timeout in the CDK stack (zero-token brains)."""
TURN_RETRIES = 4
HEALTH_PATH = "/healthz"

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]


# ---------------------------------------------------------------- the Lambda side
@dataclass
class FakeLambdaContext:
    """The LambdaContext attributes Powertools reads; the clock starts at creation."""

    function_name: str = "horcrux-local"
    timeout_s: float = TURN_TIMEOUT_S
    function_version: str = "$LATEST"
    memory_limit_in_mb: int = 1024
    invoked_function_arn: str = "arn:aws:lambda:local:000000000000:function:horcrux-local"
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    log_group_name: str = "/aws/lambda/horcrux-local"
    log_stream_name: str = "local"
    started: float = field(default_factory=time.monotonic)

    def get_remaining_time_in_millis(self) -> int:
        left = self.timeout_s - (time.monotonic() - self.started)
        return max(0, int(left * 1000))


def checkout_root() -> pathlib.Path:
    """The repository the package was installed from (editable install: `make venv`)."""
    return pathlib.Path(__file__).resolve().parents[3]


def load_api_handler(root: pathlib.Path | None = None) -> Handler:
    """`lambda_handler` of lambdas/api/handler.py, or, without a checkout, the same app."""
    path = (root or checkout_root()) / "lambdas" / "api" / "handler.py"
    if path.is_file():
        module = _load_module("horcrux_local_api_handler", path)
        handler: Handler = module.lambda_handler
        return handler
    return _packaged_api_handler()


def _load_module(name: str, path: pathlib.Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:  # pragma: no cover
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _packaged_api_handler() -> Handler:
    from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

    from horcrux.api import IdempotentMoves, build_app
    from horcrux.secrets import AnthropicKey
    from horcrux.settings import api_settings
    from horcrux.store import DynamoDbStore

    settings = api_settings()  # the environment, read once, as the API Lambda does
    key = AnthropicKey(settings.secret)

    def layer() -> DynamoDBPersistenceLayer:
        return DynamoDBPersistenceLayer(table_name=settings.idempotency_table)

    service = GameService(
        DynamoDbStore(settings.store.dynamo()),
        ttl_seconds=settings.store.ttl_seconds,
        brain_settings=lambda: settings.brains.values(key()),
    )
    app = build_app(service, idempotency=IdempotentMoves(layer), operator=settings.operator)

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return app.resolve(event, context)

    return handler


# ---------------------------------------------------------------- HTTP -> API Gateway v2
def api_gateway_event(
    method: str,
    target: str,
    headers: list[tuple[str, str]],
    body: bytes,
    *,
    source_ip: str = "127.0.0.1",
) -> dict[str, Any]:
    """The HTTP API (payload 2.0) event API Gateway would send for this request.

    Header names are lower-cased and repeated headers joined with commas, as API Gateway
    does; cookies go to `cookies`; `pathParameters` are left to the resolver's routes.
    """
    parts = urlsplit(target)
    raw_path = parts.path or "/"
    joined: dict[str, str] = {}
    cookies: list[str] = []
    for name, value in headers:
        key = name.lower()
        if key == "cookie":
            cookies.extend(c.strip() for c in value.split(";") if c.strip())
            continue
        joined[key] = f"{joined[key]},{value}" if key in joined else value
    now = dt.datetime.now(dt.UTC)
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": "$default",
        "rawPath": raw_path,
        "rawQueryString": parts.query,
        "headers": joined,
        "requestContext": {
            "accountId": "000000000000",
            "apiId": "local",
            "domainName": joined.get("host", "localhost"),
            "domainPrefix": "local",
            "http": {
                "method": method.upper(),
                "path": raw_path,
                "protocol": "HTTP/1.1",
                "sourceIp": source_ip,
                "userAgent": joined.get("user-agent", ""),
            },
            "requestId": uuid.uuid4().hex,
            "routeKey": "$default",
            "stage": "$default",
            "time": now.strftime("%d/%b/%Y:%H:%M:%S +0000"),
            "timeEpoch": int(now.timestamp() * 1000),
        },
        "isBase64Encoded": False,
    }
    if cookies:
        event["cookies"] = cookies
    query: dict[str, str] = {}
    for key, value in parse_qsl(parts.query, keep_blank_values=True):
        query[key] = f"{query[key]},{value}" if key in query else value
    if query:
        event["queryStringParameters"] = query
    if body:
        try:
            event["body"] = body.decode("utf-8")
        except UnicodeDecodeError:
            event["body"] = base64.b64encode(body).decode("ascii")
            event["isBase64Encoded"] = True
    return event


def response_body(response: Mapping[str, Any]) -> bytes:
    """The bytes of a Lambda proxy response's body (base64-decoded if it says so)."""
    body = response.get("body") or ""
    if response.get("isBase64Encoded"):
        return base64.b64decode(body)
    return str(body).encode("utf-8")


# ---------------------------------------------------------------- AI turns
def stream_record(request: TurnRequest, *, region: str = "local") -> dict[str, Any]:
    """The DynamoDB stream record (NEW_IMAGE, as Lambda receives it) of the event item that
    asks for `request`'s AI turn: the attributes the turn handler reads."""
    keys = {"pk": {"S": f"GAME#{request.game_id}"}, "seq": {"N": str(request.seq)}}
    return {
        "eventID": uuid.uuid4().hex,
        "eventName": "INSERT",
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": region,
        "dynamodb": {
            "ApproximateCreationDateTime": int(time.time()),
            "Keys": keys,
            "NewImage": {**keys, "next_ai": {"S": request.seat}},
            "SequenceNumber": str(time.time_ns()),
            "SizeBytes": 100,
            "StreamViewType": "NEW_IMAGE",
        },
        "eventSourceARN": "arn:aws:dynamodb:local:000000000000:table/horcrux-events/stream/local",
    }


def _matches(value: Any, pattern: Any) -> bool:
    """Lambda's event filtering for the exact-value patterns of `turns.filter_pattern`."""
    if isinstance(pattern, dict):
        return isinstance(value, dict) and all(
            key in value and _matches(value[key], inner) for key, inner in pattern.items()
        )
    return value in pattern


def waiting_for_ai(game: Mapping[str, Any]) -> bool:
    """True if a game payload (as the API renders it) shows an AI seat to move."""
    seat = game.get("to_move")
    seats = game.get("seats")
    if game.get("status") == "over" or seat not in SEATS or not isinstance(seats, Mapping):
        return False
    info = seats.get(seat)
    return isinstance(info, Mapping) and info.get("kind") == "ai"


class AiTurns:
    """The local stand-in for the stream-driven turn Lambdas: a queue and one worker."""

    def __init__(
        self,
        service: GameService,
        *,
        timeout_s: float = TURN_TIMEOUT_S,
        retries: int = TURN_RETRIES,
        backoff_s: float = 0.05,
    ) -> None:
        from aws_lambda_powertools.utilities.batch import BatchProcessor, EventType

        from horcrux.api.turns import filter_pattern, turn_record_handler

        self.service = service
        self.timeout_s = timeout_s
        self.retries = retries
        self.backoff_s = backoff_s
        self.outcomes: collections.deque[TurnOutcome] = collections.deque(maxlen=1000)
        self._last: TurnOutcome | None = None
        self._patterns = {seat: filter_pattern(seat) for seat in SEATS}
        self._handlers = {
            seat: turn_record_handler(service, seat, on_outcome=self._outcome) for seat in SEATS
        }
        self._processor = BatchProcessor(
            event_type=EventType.DynamoDBStreams, raise_on_entire_batch_failure=False
        )
        self._queue: collections.deque[str] = collections.deque()
        self._queued: set[str] = set()
        self._busy = False
        self._stopping = False
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._run, name="horcrux-ai-turns", daemon=True)
        self._thread.start()

    # ------------------------------------------------------------ the queue
    def enqueue(self, game_id: str) -> None:
        with self._cond:
            if self._stopping or game_id in self._queued:
                return
            self._queued.add(game_id)
            self._queue.append(game_id)
            self._cond.notify_all()

    def notice(self, status: int, body: bytes) -> None:
        """Queue the game of a 2xx response if it shows an AI seat to move."""
        if not 200 <= status < 300 or not body.startswith(b"{"):
            return
        try:
            payload = json.loads(body)
        except ValueError:
            return
        game = payload.get("game") if isinstance(payload.get("game"), dict) else payload
        if isinstance(game, dict) and isinstance(game.get("game_id"), str) and waiting_for_ai(game):
            self.enqueue(game["game_id"])

    def pending(self) -> int:
        with self._cond:
            return len(self._queue) + int(self._busy)

    def wait_idle(self, timeout_s: float = 30.0) -> bool:
        """Block until no game waits for an AI turn (or the timeout); True if idle."""
        deadline = time.monotonic() + timeout_s
        with self._cond:
            while self._queue or self._busy:
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
        return True

    def stop(self, timeout_s: float = 10.0) -> None:
        """Finish the turn in progress, drop the rest, stop the worker."""
        with self._cond:
            self._stopping = True
            self._queue.clear()
            self._queued.clear()
            self._cond.notify_all()
        self._thread.join(timeout_s)

    # ------------------------------------------------------------ the worker
    def _outcome(self, outcome: TurnOutcome) -> None:
        self._last = outcome
        self.outcomes.append(outcome)

    def _played(self) -> bool:
        last = self._last
        return last is not None and last.status == "played"

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._stopping:
                    self._cond.wait()
                if self._stopping:
                    return
                game_id = self._queue.popleft()
                self._queued.discard(game_id)
                self._busy = True
            again = False
            try:
                again = self.step(game_id)
            except Exception:  # never let one game kill the worker
                log.exception("AI turn of game %s failed", game_id)
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()
            if again:
                self.enqueue(game_id)

    def step(self, game_id: str) -> bool:
        """Deliver the record of the game's pending AI turn, if any; True if one was played
        (the game may wait for its AI again)."""
        from aws_lambda_powertools.utilities.batch import process_partial_response

        try:
            request = self.service.pending_ai(game_id)
        except NotFound:
            return False
        if request is None:
            return False
        record = stream_record(request)
        seat: Seat = request.seat
        if not _matches(record, self._patterns[seat]):  # pragma: no cover - a bug
            raise AssertionError(f"record does not match the {seat} filter: {record}")
        for attempt in range(self.retries + 1):
            self._last = None
            context = FakeLambdaContext(
                function_name=f"horcrux-{seat}-turn", timeout_s=self.timeout_s
            )
            response = process_partial_response(
                event={"Records": [record]},
                record_handler=self._handlers[seat],
                processor=self._processor,
                context=context,  # type: ignore[arg-type]
            )
            if not response.get("batchItemFailures"):
                return self._played()
            if self._stopping:
                return False
            time.sleep(self.backoff_s * 2**attempt)
        log.error("the %s AI turn of game %s failed %d times", seat, game_id, self.retries + 1)
        return False


# ---------------------------------------------------------------- the adapter
class LocalApi:
    """Calls the API handler with API Gateway v2 events, one at a time, and queues AI
    turns after each response."""

    def __init__(
        self,
        handler: Handler | None = None,
        *,
        ai: AiTurns | None = None,
        timeout_s: float = 29.0,
    ) -> None:
        self.handler = handler or load_api_handler()
        self.ai = ai
        self.timeout_s = timeout_s  # API Gateway's integration timeout
        self._lock = threading.Lock()
        from aws_lambda_powertools.metrics import Metrics

        # Powertools keeps metrics it does not print (POWERTOOLS_METRICS_DISABLED) and dumps
        # them every 100 values; every Metrics shares one set, so clear it per request
        self._metrics = Metrics()

    def invoke(self, event: dict[str, Any]) -> dict[str, Any]:
        context = FakeLambdaContext(function_name="horcrux-api", timeout_s=self.timeout_s)
        with self._lock:
            try:
                response = self.handler(event, context)
            finally:
                self._metrics.clear_metrics()
        if self.ai is not None:
            self.ai.notice(int(response.get("statusCode", 500)), response_body(response))
        return response


def _json(status: int, payload: Any) -> tuple[int, dict[str, str], bytes]:
    return status, {"Content-Type": "application/json"}, json.dumps(payload).encode()


class LocalHttpServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(
        self,
        address: tuple[str, int],
        api: LocalApi,
        *,
        dynamodb: str = "",
        log_to: TextIO | None = None,
    ) -> None:
        super().__init__(address, _RequestHandler)
        self.api = api
        self.dynamodb = dynamodb
        self.log_to = log_to

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host!s}:{port}"


class _RequestHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: LocalHttpServer
    server_version = "horcrux-local"

    def _handle(self) -> None:
        start = time.perf_counter()
        length_header = self.headers.get("content-length") or "0"
        try:
            length = int(length_header)
        except ValueError:
            length = -1
        if length < 0 or length > MAX_REQUEST_BYTES:
            self.close_connection = True
            status, headers, body = _json(
                413, {"error": "payload_too_large", "message": "the body is too large"}
            )
        else:
            raw = self.rfile.read(length) if length else b""
            status, headers, body = self._dispatch(raw)
        self.send_response(status)
        for name, value in headers.items():
            if name.lower() not in ("content-length", "connection", "transfer-encoding"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)
        if self.server.log_to is not None:
            ms = (time.perf_counter() - start) * 1000
            print(
                f"{self.command} {self.path} -> {status} ({ms:.0f} ms)",
                file=self.server.log_to,
                flush=True,
            )

    def _dispatch(self, raw: bytes) -> tuple[int, dict[str, str], bytes]:
        if self.command in ("GET", "HEAD"):  # the browser client at / (horcrux.web)
            page = static_response(self.command, self.path)
            if page is not None:
                return page
        if urlsplit(self.path).path == HEALTH_PATH and self.command in ("GET", "HEAD"):
            ai = self.server.api.ai
            return _json(
                200,
                {
                    "ok": True,
                    "dynamodb": self.server.dynamodb,
                    "ai_pending": ai.pending() if ai is not None else 0,
                },
            )
        event = api_gateway_event(
            self.command,
            self.path,
            list(self.headers.items()),
            raw,
            source_ip=self.client_address[0],
        )
        response = self.server.api.invoke(event)
        headers = {str(k): str(v) for k, v in (response.get("headers") or {}).items()}
        return int(response.get("statusCode", 500)), headers, response_body(response)

    do_GET = _handle  # noqa: N815 - http.server's method names
    do_POST = _handle  # noqa: N815
    do_PUT = _handle  # noqa: N815
    do_PATCH = _handle  # noqa: N815
    do_DELETE = _handle  # noqa: N815
    do_OPTIONS = _handle  # noqa: N815
    do_HEAD = _handle  # noqa: N815

    def log_message(self, format: str, *args: Any) -> None:
        return  # one line per request is printed by _handle when logging is on


# ---------------------------------------------------------------- the whole local stack
@dataclass
class LocalStack:
    """DynamoDB (embedded moto or the user's), the API adapter, the AI worker, the server."""

    dynamo: LocalDynamo
    api: LocalApi
    ai: AiTurns
    httpd: LocalHttpServer
    _thread: threading.Thread | None = None
    _closed: bool = False

    @property
    def url(self) -> str:
        return self.httpd.url

    def serve_in_thread(self) -> LocalStack:
        self._thread = threading.Thread(
            target=self.httpd.serve_forever, name="horcrux-http", daemon=True
        )
        self._thread.start()
        return self

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._thread is not None:
            self.httpd.shutdown()
            self._thread.join(10)
        self.httpd.server_close()
        self.ai.stop()
        self.dynamo.stop()

    def __enter__(self) -> LocalStack:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def start_stack(
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    *,
    log_to: TextIO | None = None,
    dynamo_host: str = "127.0.0.1",
    on_decision: Callable[[Any], None] | None = None,
) -> LocalStack:
    """DynamoDB + tables, the API handler and the AI worker, bound to `host:port` (0: a
    free port). Call `serve_in_thread()` or `httpd.serve_forever()`, then `close()`.
    `on_decision` gets every LLM decision record of the AI seats (`play --local --trace`)."""
    dynamo = start_dynamodb(dynamo_host, 0)
    try:
        from horcrux.secrets import AnthropicKey
        from horcrux.settings import turn_settings
        from horcrux.store import DynamoDbStore

        settings = turn_settings("harry")  # read once, after the local DynamoDB is set up
        key = AnthropicKey(settings.secret)

        def brain_settings() -> dict[str, Any]:
            values = dict(settings.brains.values(key()))
            if on_decision is not None:
                values["on_decision"] = on_decision
            return values

        ai = AiTurns(
            GameService(DynamoDbStore(settings.store.dynamo()), brain_settings=brain_settings)
        )
        api = LocalApi(ai=ai)
        try:
            httpd = LocalHttpServer((host, port), api, dynamodb=dynamo.endpoint, log_to=log_to)
        except BaseException:
            ai.stop()
            raise
    except BaseException:
        dynamo.stop()
        raise
    return LocalStack(dynamo=dynamo, api=api, ai=ai, httpd=httpd)


def serve(host: str = DEFAULT_HOST, port: int = DEFAULT_PORT, *, quiet: bool = False) -> int:
    """`horcrux serve`: run until Ctrl-C or SIGTERM, then shut everything down."""
    try:
        stack = start_stack(host, port, log_to=None if quiet else sys.stderr)
    except OSError as exc:  # the port is taken, the address is not ours
        print(f"horcrux serve: cannot listen on {host}:{port}: {exc}", file=sys.stderr)
        return 1
    where = "embedded moto" if stack.dynamo.embedded else "your endpoint"
    print(
        f"horcrux serve: listening on {stack.url} (DynamoDB: {where} at {stack.dynamo.endpoint})",
        flush=True,
    )
    print(f"  play:  horcrux play --api {stack.url}", flush=True)

    def stop(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        stack.httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        with contextlib.suppress(Exception):
            signal.signal(signal.SIGTERM, previous)
        stack.close()
        print("horcrux serve: stopped", flush=True)
    return 0


__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "HEALTH_PATH",
    "AiTurns",
    "FakeLambdaContext",
    "LocalApi",
    "LocalHttpServer",
    "LocalStack",
    "api_gateway_event",
    "load_api_handler",
    "serve",
    "start_stack",
    "stream_record",
    "waiting_for_ai",
]
