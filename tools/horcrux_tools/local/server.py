"""`horcrux serve`: the API Lambda's handler behind waitress, DynamoDB in its own process,
AI turns in a worker pool.

* HTTP: waitress serves `wsgi.ApiGatewayWsgi`, which turns each request into the API Gateway
  HTTP API (payload 2.0) event for the SAME handler as in AWS (`lambdas/api/handler.py`)
  and writes its proxy response back. Waitress parses HTTP (chunked bodies, Content-Length
  checks: a malformed or conflicting one is its 400), drops idle or half-sent connections
  (`channel_timeout`), caps connections and bodies, and keeps a real listen backlog.
* The handler runs in a pool of `threads` execution environments (one module load each),
  one request at a time per environment.
* DynamoDB: moto in a child process (`dynamo_process`), or the user's endpoint
  (`AWS_ENDPOINT_URL_DYNAMODB`: nothing started). `/healthz` checks it (DescribeTable,
  cached 1 s): 200, or 503 with `Retry-After` naming the problem; tables found missing
  (the local DynamoDB restarted empty) are created again, with a message.
* AI turns: `stream.StreamTail` tails the events table's stream (the committed events, in
  order, from a checkpoint) and hands each event that asks for an AI turn or ends a game
  to `ai_turns.AiTurns`, the stand-in for the turn and compaction Lambdas; nothing on the
  request path queues a turn.
* Limits: per-client token buckets (`wsgi.RateLimiter`), like the stack's throttling.
* SIGTERM/SIGINT: stop accepting, give running turns and requests up to 2 s, stop the
  DynamoDB child (SIGTERM, SIGKILL after 2 s): out within 5 s.
"""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any, TextIO

from horcrux.api.app import MAX_BODY_BYTES
from horcrux.api.errors import error_json
from horcrux.service import GameService
from horcrux_tools.local.ai_turns import (
    TURN_TIMEOUT_S,
    WORKERS,
    AiTurns,
    FakeLambdaContext,
    stream_record,
    waiting_for_ai,
)
from horcrux_tools.local.guard import (
    LOBBY_CACHE_S,
    PER_CLIENT_CONNECTIONS,
    READ_DEADLINE_S,
    ConnectionGuard,
    CostBudget,
    LobbyCache,
    guarded_channel,
)
from horcrux_tools.local.moto_server import DynamoWatch, LocalDynamo, start_dynamodb
from horcrux_tools.local.stream import StreamTail
from horcrux_tools.local.wsgi import (
    CREATE_RATE,
    HEALTH_PATH,
    PLAY_RATE,
    ApiGatewayWsgi,
    HandlerPool,
    Rate,
    RateLimiter,
    api_gateway_event,
    load_api_handler,
    response_body,
)

log = logging.getLogger(__name__)

DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8000
MAX_REQUEST_BYTES = 1 << 20
API_MAX_BODY_BYTES = MAX_BODY_BYTES
"""The API's own body limit: a body declared over it with `Expect: 100-continue` is refused
before it is sent."""
"""Bodies over this are refused by waitress (API Gateway's own cap is 10 MB; the API
refuses anything over 4 KB anyway)."""
STOP_GRACE_S = 2.0
CONNECTION_LIMIT = 4000
"""Room for 40 addresses at the per-client cap (100) before a new client waits in the
backlog: waitress keeps idle and slow connections in its event loop (a socket each, no
thread); a request reaches a thread only once it has arrived whole."""
READ_BUDGET = Rate(10.0, 20.0)
"""The lobby pages all clients together may have computed: 10 tokens a second (a page of
N games costs 1 + N/10: 2 pages of 40 games a second, about 1 of 100), burst 20. At 40
the local DynamoDB process, serialised, kept another client's reads waiting (p50 670 ms
under ten addresses' flood, bench_abuse.py); at 10, 7 ms."""


@dataclass(frozen=True)
class ServerOptions:
    """The knobs of `horcrux serve` (flags of the same names)."""

    threads: int = 8
    """waitress's request threads, and as many handler environments."""
    ai_workers: int = WORKERS
    backlog: int = 1024
    channel_timeout_s: int = 30
    """An idle or half-sent connection is closed after this many seconds."""
    connection_limit: int = CONNECTION_LIMIT
    """Connections open at once in all (idle ones hold a socket, never a thread)."""
    max_body_bytes: int = MAX_REQUEST_BYTES
    play_rate: Rate | None = PLAY_RATE
    """Per client, every route but POST /games (None: no limit)."""
    create_rate: Rate | None = CREATE_RATE
    """Per client, POST /games (None: no limit)."""
    read_deadline_s: float = READ_DEADLINE_S
    """A request's headers and body must all arrive within this many seconds of its first
    byte (else 408 and the connection is closed), however steadily they trickle."""
    per_client_connections: int = PER_CLIENT_CONNECTIONS
    """Connections open at once from one client address (one more: 429 and closed)."""
    lobby_cache_s: float = LOBBY_CACHE_S
    """`GET /games` pages are answered from a copy at most this old (0: never)."""
    read_budget: Rate | None = READ_BUDGET
    """Server-wide, the lobby pages computed (not from the cache), by cost (None: none)."""

    def guard(self) -> ConnectionGuard:
        return ConnectionGuard(self.read_deadline_s, self.per_client_connections)

    def limiter(self) -> RateLimiter | None:
        if self.play_rate is None and self.create_rate is None:
            return None
        unlimited = Rate(1e9, 1e9)
        return RateLimiter(self.play_rate or unlimited, self.create_rate or unlimited)


WAITRESS_ERROR_CODES = {400: "bad_request", 413: "payload_too_large", 431: "headers_too_large"}
"""The API's error code for each refusal waitress makes itself, before the app (a malformed
or conflicting Content-Length, a bad chunk, a body over the limit, oversized headers)."""


def json_error_channel() -> type:
    """waitress's channel class, whose own refusals answer the API's JSON error body (with
    the status waitress chose) instead of its plain text, and whose parser

    * refuses a request at once, without "100 Continue", when its headers already show it
      refused (a `Content-Length` over the limit with `Expect: 100-continue`: waitress
      would send "100 Continue" and wait for a body it then refuses), and likewise one
      whose declared body is over the API's own limit (`API_MAX_BODY_BYTES`: the API
      would answer 413 once the body had been sent);
    * answers a transfer coding other than `chunked` (`gzip, chunked`) with a 400
      `unsupported_transfer_encoding` (the client's mistake), not waitress's 501."""
    from waitress.channel import HTTPChannel
    from waitress.parser import HTTPRequestParser
    from waitress.task import ErrorTask
    from waitress.utilities import BadRequest, RequestEntityTooLarge, ServerNotImplemented

    class UnsupportedTransferEncoding(BadRequest):  # type: ignore[misc]
        api_code = "unsupported_transfer_encoding"

    class JsonErrorParser(HTTPRequestParser):  # type: ignore[misc]
        def received(self, data: bytes) -> int:
            consumed = int(super().received(data))
            error: Any = getattr(self, "error", None)
            declared = int(getattr(self, "content_length", 0))
            if (
                error is None
                and getattr(self, "headers_finished", False)
                and getattr(self, "expect_continue", False)
                and declared > API_MAX_BODY_BYTES
            ):  # the API would refuse the body: say so now, before the client sends it
                self.error = error = RequestEntityTooLarge(
                    f"the body is {declared} bytes; the limit is {API_MAX_BODY_BYTES}"
                )
                self.completed = True
            if error is not None:
                self.expect_continue = False  # refused: answer now, never "100 Continue"
                if isinstance(error, ServerNotImplemented):
                    self.error = UnsupportedTransferEncoding(
                        "a Transfer-Encoding other than chunked (gzip, deflate, ...) is not "
                        "supported; send the body uncompressed, with Content-Length or "
                        "Transfer-Encoding: chunked"
                    )
            return consumed

    class JsonErrorTask(ErrorTask):  # type: ignore[misc]
        def execute(self) -> None:
            error = self.request.error
            code = getattr(error, "api_code", None) or WAITRESS_ERROR_CODES.get(
                int(error.code), "bad_request"
            )
            message = f"{error.reason}: {error.body}".strip().rstrip(":")
            body = error_json(code, message).encode()
            self.status = f"{error.code} {error.reason}"
            self.response_headers.extend(
                [
                    ("Content-Type", "application/json"),
                    ("Cache-Control", "no-store"),
                    ("X-Content-Type-Options", "nosniff"),
                ]
            )
            self.set_close_on_finish()
            self.content_length = len(body)
            self.write(body)

    class JsonErrorChannel(HTTPChannel):  # type: ignore[misc]
        error_task_class = JsonErrorTask
        parser_class = JsonErrorParser

    return JsonErrorChannel


def _open_file_room(wanted: int) -> None:
    """Raise this process's soft limit of open files towards `wanted` (one per connection),
    within its hard limit."""
    try:
        import resource

        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        if soft != resource.RLIM_INFINITY and soft < wanted:
            top = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
            resource.setrlimit(resource.RLIMIT_NOFILE, (top, hard))
    except (ImportError, ValueError, OSError):  # not POSIX, or not allowed: keep the limit
        return


class LocalHttpServer:
    """A waitress server whose loop `serve_forever()` runs until `stop()` (any thread)."""

    def __init__(
        self,
        app: Any,
        host: str,
        port: int,
        options: ServerOptions,
        guard: ConnectionGuard | None = None,
    ) -> None:
        from waitress.server import create_server

        _open_file_room(options.connection_limit + 256)
        # waitress warns "Task queue depth is N" whenever a request waits for a thread
        logging.getLogger("waitress.queue").setLevel(logging.ERROR)
        self._server: Any = create_server(
            app,
            host=host,
            port=port,
            threads=options.threads,
            backlog=options.backlog,
            channel_timeout=options.channel_timeout_s,
            cleanup_interval=max(1, min(30, options.channel_timeout_s // 2)),
            connection_limit=options.connection_limit,
            max_request_body_size=options.max_body_bytes,
            ident="horcrux-local",
            clear_untrusted_proxy_headers=True,
        )
        self.guard = guard or options.guard()
        self._server.channel_class = guarded_channel(json_error_channel(), self.guard)
        self._stop = threading.Event()
        self._stopped = threading.Event()
        self._closed = False

    @property
    def url(self) -> str:
        return f"http://{self._server.effective_host}:{self._server.effective_port}"

    @property
    def port(self) -> int:
        return int(self._server.effective_port)

    def serve_forever(self) -> None:
        from waitress import wasyncore

        server = self._server
        next_sweep = 0.0
        try:
            while not self._stop.is_set():
                wasyncore.loop(timeout=0.25, map=server._map, use_poll=True, count=1)
                now = time.monotonic()
                if now >= next_sweep:  # requests past their read deadline
                    next_sweep = now + 0.25
                    self.guard.sweep(server.active_channels.values())
        finally:
            self._close_sockets()
            self._stopped.set()

    def stop(self, timeout_s: float = STOP_GRACE_S) -> None:
        """Stop the loop (from any thread) and wait up to `timeout_s` for it to end."""
        self._stop.set()
        with contextlib.suppress(Exception):
            self._server.pull_trigger()
        self._stopped.wait(timeout_s)

    def _close_sockets(self) -> None:
        if self._closed:
            return
        self._closed = True
        server = self._server
        server.accepting = False
        for channel in list(server._map.values()):
            with contextlib.suppress(Exception):
                channel.close()
        with contextlib.suppress(Exception):
            server.close()

    def shutdown_threads(self, timeout_s: float = STOP_GRACE_S) -> None:
        """Wait up to `timeout_s` for requests in progress (waitress's threads are daemons)."""
        self._close_sockets()
        self._server.task_dispatcher.shutdown(cancel_pending=True, timeout=timeout_s)


# ---------------------------------------------------------------- the whole local stack
@dataclass
class LocalStack:
    """DynamoDB (a child process or the user's), its watch, the AI workers, the app and
    the server."""

    dynamo: LocalDynamo
    watch: DynamoWatch
    ai: AiTurns
    tail: StreamTail
    app: ApiGatewayWsgi
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

    def close(self, grace_s: float = STOP_GRACE_S) -> None:
        """Stop accepting, give turns and requests `grace_s`, stop DynamoDB."""
        if self._closed:
            return
        self._closed = True
        self.httpd.stop(grace_s)
        if self._thread is not None:
            self._thread.join(grace_s)
        self.tail.stop(grace_s / 2)
        self.ai.stop(grace_s)
        self.httpd.shutdown_threads(max(0.1, grace_s / 2))
        self.watch.stop()
        self.dynamo.stop()

    def __enter__(self) -> LocalStack:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _load_brains() -> None:
    """Load the brain registries before any request thread does: their lazy loading marks
    itself done before its imports finish, so a second thread racing the first would find
    no brain (`unknown_brain`). A Lambda environment is single-threaded; this server not."""
    from horcrux.agents import HARRY_BRAINS, VOLDEMORT_BRAINS

    HARRY_BRAINS.names()
    VOLDEMORT_BRAINS.names()


def health_of(watch: DynamoWatch) -> Callable[[], tuple[int, dict[str, Any]]]:
    def health() -> tuple[int, dict[str, Any]]:
        state = watch.check()
        if state.ok:
            return 200, {
                "ok": True,
                "dynamodb": state.endpoint,
                "tables_recreated": state.recreated,
            }
        return 503, {
            "ok": False,
            "error": "store_unavailable",
            "message": f"{state.problem} at {state.endpoint}: {state.detail}",
            "problem": state.problem,
            "dynamodb": state.endpoint,
        }

    return health


def start_stack(
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    *,
    log_to: TextIO | None = None,
    dynamo_host: str = "127.0.0.1",
    on_decision: Callable[[Any], None] | None = None,
    options: ServerOptions | None = None,
    notices: TextIO | None = None,
) -> LocalStack:
    """DynamoDB + tables, the API handler pool and the AI workers, bound to `host:port`
    (0: a free port). Call `serve_in_thread()` or `httpd.serve_forever()`, then `close()`.
    `on_decision` gets every LLM decision record of the AI seats (`play --local --trace`);
    `notices` (default stderr) gets the one-line messages (data lost, tables recreated)."""
    options = options or ServerOptions()
    _load_brains()
    dynamo = start_dynamodb(dynamo_host, 0)
    ai: AiTurns | None = None
    watch: DynamoWatch | None = None
    tail: StreamTail | None = None
    try:
        from horcrux.secrets import AnthropicKey
        from horcrux.settings import turn_settings
        from horcrux.store import DynamoDbStore
        from horcrux.store.stream import EventStream

        settings = turn_settings("harry")  # read once, after the local DynamoDB is set up
        key = AnthropicKey(settings.secret)

        def brain_settings() -> dict[str, Any]:
            values = dict(settings.brains.values(key()))
            if on_decision is not None:
                values["on_decision"] = on_decision
            return values

        def notice(message: str) -> None:
            print(f"horcrux serve: {message}", file=notices or sys.stderr, flush=True)

        watch = DynamoWatch(dynamo.endpoint, dynamo.tables, on_loss=notice).start()
        ai = AiTurns(
            GameService(DynamoDbStore.from_settings(settings.store), brain_settings=brain_settings),
            workers=options.ai_workers,
        )
        stream = EventStream(  # the streams client needs the endpoint named (boto3 reads
            # AWS_ENDPOINT_URL_DYNAMODB for DynamoDB only)
            settings.store.model_copy(update={"endpoint_url": dynamo.endpoint})
        )
        tail = stream_tail = StreamTail(stream, ai.enqueue).start()
        guard = options.guard()
        lobby = LobbyCache(options.lobby_cache_s) if options.lobby_cache_s > 0 else None
        budget = (
            CostBudget(options.read_budget.per_s, options.read_budget.burst)
            if options.read_budget is not None
            else None
        )

        def dropped() -> dict[str, Any]:
            extras: dict[str, Any] = {"dropped": guard.stats(), "stream": stream_tail.stats()}
            if lobby is not None:
                extras["lobby_cache"] = {"hits": lobby.hits, "misses": lobby.misses}
            if budget is not None:
                extras["read_budget"] = budget.stats()
            return extras

        app = ApiGatewayWsgi(
            HandlerPool(options.threads, load_api_handler),
            ai=ai,
            health=health_of(watch),
            limiter=options.limiter(),
            log_to=log_to,
            lobby_cache=lobby,
            health_extras=dropped,
            read_budget=budget,
        )
        httpd = LocalHttpServer(app, host, port, options, guard)
    except BaseException:
        if tail is not None:
            tail.stop(0)
        if ai is not None:
            ai.stop(0)
        if watch is not None:
            watch.stop()
        dynamo.stop()
        raise
    return LocalStack(dynamo=dynamo, watch=watch, ai=ai, tail=tail, app=app, httpd=httpd)


def serve(
    host: str = DEFAULT_HOST,
    port: int = DEFAULT_PORT,
    *,
    quiet: bool = False,
    options: ServerOptions | None = None,
) -> int:
    """`horcrux serve`: run until Ctrl-C or SIGTERM, then shut everything down (<= 5 s)."""
    try:
        stack = start_stack(host, port, log_to=None if quiet else sys.stderr, options=options)
    except OSError as exc:  # the port is taken, the address is not ours
        print(f"horcrux serve: cannot listen on {host}:{port}: {exc}", file=sys.stderr)
        return 1
    where = "moto process" if stack.dynamo.embedded else "your endpoint"
    print(
        f"horcrux serve: listening on {stack.url} (DynamoDB: {where} at {stack.dynamo.endpoint})",
        flush=True,
    )
    print(f"  play:  horcrux play --api {stack.url}", flush=True)

    def stop(signum: int, frame: FrameType | None) -> None:
        stack.httpd.stop(0)  # the loop ends within its poll timeout; close() does the rest

    previous = {sig: signal.signal(sig, stop) for sig in (signal.SIGTERM, signal.SIGINT)}
    started = time.monotonic()
    try:
        stack.httpd.serve_forever()
    finally:
        for sig, handler in previous.items():
            with contextlib.suppress(Exception):
                signal.signal(sig, handler)
        stack.close()
        log.debug("served for %.0f s", time.monotonic() - started)
        print("horcrux serve: stopped", flush=True)
    return 0


__all__ = [
    "CREATE_RATE",
    "DEFAULT_HOST",
    "DEFAULT_PORT",
    "HEALTH_PATH",
    "PLAY_RATE",
    "TURN_TIMEOUT_S",
    "AiTurns",
    "ApiGatewayWsgi",
    "FakeLambdaContext",
    "HandlerPool",
    "LocalHttpServer",
    "LocalStack",
    "Rate",
    "ServerOptions",
    "api_gateway_event",
    "load_api_handler",
    "response_body",
    "serve",
    "start_stack",
    "stream_record",
    "waiting_for_ai",
]
