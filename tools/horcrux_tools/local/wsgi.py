"""The HTTP side of `horcrux serve`: a WSGI app that turns each request into the API Gateway
HTTP API (payload 2.0) event and the Lambda proxy response back, for waitress to serve.

* `api_gateway_event` builds the event API Gateway would send; `response_body` reads a
  Lambda proxy response's body.
* `HandlerPool`: N separately loaded copies of `lambdas/api/handler.py` ("execution
  environments"), each called by one request at a time, as Lambda does; each has its own
  Powertools metric set (Powertools shares one across every `Metrics`, unsafe under threads).
* `RateLimiter`: per-client (source IP) token buckets like the stack's stage throttling,
  tighter for `POST /games` (each may start AI games); 429 `throttled` with `Retry-After`.
* `ApiGatewayWsgi`: the app: `/healthz` (DynamoDB checked, 200 or 503, with the AI
  workers' counts), the limits and the handler. AI turns are never queued here: the local
  stream plays them from the committed events (`stream.StreamTail`).
"""

from __future__ import annotations

import base64
import datetime as dt
import importlib.util
import itertools
import json
import logging
import math
import pathlib
import queue
import re
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from http import HTTPStatus
from types import ModuleType
from typing import Any, TextIO
from urllib.parse import parse_qsl, urlsplit

from horcrux.api.errors import error_json, status_for
from horcrux_tools.local.ai_turns import AiTurns, FakeLambdaContext
from horcrux_tools.local.guard import (
    CostBudget,
    LobbyCache,
    changes_lobby,
    is_lobby,
    route_cost,
)
from horcrux_tools.web import static_response

Handler = Callable[[dict[str, Any], Any], dict[str, Any]]
StartResponse = Callable[..., Any]

HEALTH_PATH = "/healthz"
API_TIMEOUT_S = 29.0
"""API Gateway's integration timeout."""
RETRY_AFTER_S = 1
_module_numbers = itertools.count()
log = logging.getLogger(__name__)


# ---------------------------------------------------------------- the Lambda side
def checkout_root() -> pathlib.Path:
    """The repository the package was installed from (editable install: `make venv`)."""
    return pathlib.Path(__file__).resolve().parents[3]


def _load_module(name: str, path: pathlib.Path) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:  # pragma: no cover
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _own_current_event(module: ModuleType) -> None:
    """Keep the event being resolved on the module's resolver instance, not process-wide.

    Powertools' resolver stores `current_event` and `lambda_context` on the `BaseRouter`
    CLASS (one Lambda invocation at a time); the routes read them through the app, so two
    environments resolving at once in two threads would each read the other's request
    (its body, its token, its path). An instance attribute set before `resolve` shadows
    the class attribute for this app and its routers, used by one request at a time."""
    app = getattr(module, "app", None)
    to_proxy = getattr(app, "_to_proxy_event", None)
    if app is None or to_proxy is None:
        return

    def own_proxy(event: dict[str, Any]) -> Any:
        # the event `resolve` itself converts (after the app's own rewriting of it)
        proxy = to_proxy(event)
        app.current_event = proxy
        return proxy

    resolve = app.resolve

    def own_resolve(event: dict[str, Any], context: Any) -> Any:
        app.lambda_context = context
        return resolve(event, context)

    app._to_proxy_event = own_proxy
    app.resolve = own_resolve


def own_metric_set(module: ModuleType) -> None:
    """Give the module's Powertools `Metrics` its own metric, dimension and metadata sets.

    Every `Metrics` shares class-level dicts; two environments used at once would add to
    and serialise (every 100 values) the same dicts from two threads ("dictionary changed
    size during iteration"). One set per environment, used by one request at a time."""
    metrics = getattr(module, "metrics", None)
    provider = getattr(metrics, "provider", None)
    if provider is None:
        return
    own: dict[str, dict[str, Any]] = {"metric_set": {}, "dimension_set": {}, "metadata_set": {}}
    for attribute, fresh in own.items():
        fresh.update(getattr(provider, attribute))
        setattr(provider, attribute, fresh)
        setattr(metrics, attribute, fresh)


class ApiEnvironment:
    """One execution environment: a module loaded from lambdas/api/handler.py, its own
    metric set and current event, its `lambda_handler` called by one request at a time
    (`HandlerPool`)."""

    def __init__(self, module: ModuleType) -> None:
        self.module = module
        _own_current_event(module)
        own_metric_set(module)
        self._handler: Handler = module.lambda_handler
        metrics = getattr(module, "metrics", None)
        self._clear: Callable[[], None] | None = getattr(metrics, "clear_metrics", None)

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        try:
            return self._handler(event, context)
        finally:
            if self._clear is not None:
                # POWERTOOLS_METRICS_DISABLED keeps what it does not print, and dumps the
                # set to stdout every 100 values: clear this environment's set per request
                self._clear()


def load_api_handler(root: pathlib.Path | None = None) -> Handler:
    """lambdas/api/handler.py loaded as a new module each call (a new execution
    environment, `ApiEnvironment`), or, without a checkout, the same app."""
    path = (root or checkout_root()) / "lambdas" / "api" / "handler.py"
    if path.is_file():
        return ApiEnvironment(
            _load_module(f"horcrux_local_api_handler_{next(_module_numbers)}", path)
        )
    return _packaged_api_handler()


def _packaged_api_handler() -> Handler:
    from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer

    from horcrux.api import IdempotentMoves, build_app
    from horcrux.secrets import AnthropicKey
    from horcrux.service import GameService
    from horcrux.settings import api_settings
    from horcrux.store import DynamoDbStore

    settings = api_settings()  # the environment, read once, as the API Lambda does
    key = AnthropicKey(settings.secret)

    def layer() -> DynamoDBPersistenceLayer:
        return DynamoDBPersistenceLayer(table_name=settings.idempotency_table)

    service = GameService(
        DynamoDbStore.from_settings(settings.store),
        ttl_seconds=settings.store.ttl_seconds,
        brain_settings=lambda: settings.brains.values(key()),
    )
    app = build_app(service, idempotency=IdempotentMoves(layer), operator=settings.operator)

    def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
        return app.resolve(event, context)

    return handler


class HandlerPool:
    """`size` execution environments of the API handler, each used by one call at a time."""

    def __init__(self, size: int, factory: Callable[[], Handler] = load_api_handler) -> None:
        self.size = size
        self._free: queue.Queue[Handler] = queue.Queue()
        for _ in range(size):
            self._free.put(factory())

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        handler = self._free.get()
        try:
            return handler(event, context)
        finally:
            self._free.put(handler)


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


def environ_headers(environ: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The request's headers from a WSGI environ (waitress joins repeated ones)."""
    headers: list[tuple[str, str]] = []
    for key, value in environ.items():
        if key.startswith("HTTP_"):
            headers.append((key[5:].replace("_", "-").lower(), str(value)))
        elif key in ("CONTENT_TYPE", "CONTENT_LENGTH") and value:
            headers.append((key.replace("_", "-").lower(), str(value)))
    return headers


def environ_target(environ: Mapping[str, Any]) -> str:
    """The request target as sent (path and query), from a WSGI environ."""
    uri = environ.get("REQUEST_URI")
    if isinstance(uri, str) and uri.startswith("/"):
        return uri
    path = str(environ.get("PATH_INFO") or "/").encode("latin-1").decode("utf-8", "replace")
    query = environ.get("QUERY_STRING") or ""
    return f"{path}?{query}" if query else path


def loggable_target(target: str) -> str:
    """The request target as the log shows it: the path, and the query's keys without
    their values (`/games/X/seats/harry?invite` for `...?invite=<code>`): an invite code
    or a token a client put in a URL never reaches the log."""
    parts = urlsplit(target)
    path = parts.path or "/"
    if not parts.query:
        return path
    keys = [field.partition("=")[0] for field in parts.query.split("&") if field]
    shown = [key if _LOGGABLE_KEY.fullmatch(key) else "*" for key in keys]
    return f"{path}?{'&'.join(shown)}" if shown else path


_LOGGABLE_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,31}")
"""A query key the log shows as is; any other (a token sent as a key) is shown as `*`."""


# ---------------------------------------------------------------- limits
@dataclass(frozen=True)
class Rate:
    """A token bucket: `per_s` tokens a second, up to `burst`."""

    per_s: float
    burst: float

    @classmethod
    def parse(cls, text: str) -> Rate:
        """`50/100`: 50 a second, burst 100 (`50`: burst = 2 x rate)."""
        rate, _, burst = text.partition("/")
        per_s = float(rate)
        value = cls(per_s, float(burst) if burst else max(1.0, 2 * per_s))
        if value.per_s <= 0 or value.burst < 1:
            raise ValueError(f"a rate is RATE[/BURST] with RATE > 0 and BURST >= 1: {text!r}")
        return value


PLAY_RATE = Rate(50.0, 100.0)
CREATE_RATE = Rate(1.0, 10.0)
MAX_CLIENTS = 10_000


class RateLimiter:
    """Per-client token buckets: `create` for `POST /games`, `play` for everything else
    (`/healthz` is never limited). `take()` answers 0 (go on) or the seconds to wait."""

    def __init__(
        self, play: Rate = PLAY_RATE, create: Rate = CREATE_RATE, *, clock: Any = time.monotonic
    ) -> None:
        self.rates = {"play": play, "create": create}
        self._clock = clock
        self._buckets: dict[tuple[str, str], tuple[float, float]] = {}
        self._lock = threading.Lock()

    def refund(self, client: str, kind: str, cost: float = 1.0) -> None:
        """Give back `cost` tokens a request took (up to the burst)."""
        rate = self.rates[kind]
        with self._lock:
            found = self._buckets.get((client, kind))
            if found is not None:
                tokens, at = found
                self._buckets[(client, kind)] = (min(rate.burst, tokens + cost), at)

    def take(self, client: str, kind: str, cost: float = 1.0) -> float:
        """Take `cost` tokens (an expensive route takes more; at most the burst)."""
        rate = self.rates[kind]
        cost = min(max(cost, 0.0), rate.burst)
        now = self._clock()
        with self._lock:
            tokens, at = self._buckets.get((client, kind), (rate.burst, now))
            tokens = min(rate.burst, tokens + (now - at) * rate.per_s)
            if tokens >= cost:
                self._buckets[(client, kind)] = (tokens - cost, now)
                wait = 0.0
            else:
                self._buckets[(client, kind)] = (tokens, now)
                wait = (cost - tokens) / rate.per_s
            if len(self._buckets) > MAX_CLIENTS:  # forget the fullest (idle) buckets
                self._buckets = dict(list(self._buckets.items())[-MAX_CLIENTS // 2 :])
            return wait


def limit_kind(method: str, path: str) -> str | None:
    if path == HEALTH_PATH:
        return None
    return "create" if method == "POST" and path.rstrip("/") == "/games" else "play"


# ---------------------------------------------------------------- the app
class ApiGatewayWsgi:
    """The WSGI app `horcrux serve` runs under waitress."""

    def __init__(
        self,
        handler: Handler,
        *,
        ai: AiTurns | None = None,
        health: Callable[[], tuple[int, dict[str, Any]]] | None = None,
        limiter: RateLimiter | None = None,
        log_to: TextIO | None = None,
        timeout_s: float = API_TIMEOUT_S,
        lobby_cache: LobbyCache | None = None,
        health_extras: Callable[[], dict[str, Any]] | None = None,
        read_budget: CostBudget | None = None,
    ) -> None:
        self.handler = handler
        self.ai = ai
        self.health = health
        self.limiter = limiter
        self.log_to = log_to
        self.timeout_s = timeout_s
        self.throttled = 0
        self.lobby_cache = lobby_cache
        self.health_extras = health_extras
        self.read_budget = read_budget
        """The server-wide budget the lobby pages computed draw on (None: none)."""
        self._log_lock = threading.Lock()

    def _log(self, line: str) -> None:
        """One whole line per request: one write under a lock (`print` writes the text and
        its newline apart, so lines of concurrent requests merged and left blanks)."""
        assert self.log_to is not None
        with self._log_lock:
            self.log_to.write(line)
            self.log_to.flush()

    def _expensive(self, event: dict[str, Any], cost: float) -> dict[str, Any]:
        """`invoke(event)` if the server's read budget has `cost` left, else a 429 (never
        cached: only a 200 is)."""
        if self.read_budget is not None:
            wait = self.read_budget.take(cost)
            if wait > 0:
                self.throttled += 1
                message = (
                    f"the server is answering as many lobby pages as it can (at most "
                    f"{self.read_budget.per_s:g} tokens a second for all clients; this page "
                    f"costs {cost:g}); retry after {wait:.2f} s, or ask for fewer games"
                )
                return {
                    "statusCode": status_for("throttled"),
                    "headers": {
                        "Content-Type": "application/json",
                        "Retry-After": str(max(1, math.ceil(wait))),
                    },
                    "body": error_json("throttled", message),
                }
        return self.invoke(event)

    def invoke(self, event: dict[str, Any]) -> dict[str, Any]:
        """The handler's response to `event`. Nothing here queues an AI turn: the local
        stream (`stream.StreamTail`) plays them from the committed events, whatever the
        answer was."""
        context = FakeLambdaContext(function_name="horcrux-api", timeout_s=self.timeout_s)
        return self.handler(event, context)

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        start = time.perf_counter()
        method = str(environ.get("REQUEST_METHOD", "GET")).upper()
        target = environ_target(environ)
        path = urlsplit(target).path or "/"
        status, headers, body = self._respond(environ, method, target, path)
        try:
            reason = HTTPStatus(status).phrase
        except ValueError:
            reason = ""
        out = [(k, v) for k, v in headers.items() if k.lower() not in _HOP_BY_HOP]
        if not any(k.lower() == "x-content-type-options" for k, _ in out):
            out.append(("X-Content-Type-Options", "nosniff"))  # /healthz, 429s, 500s too
        length = str(len(body))
        if method == "HEAD":  # the API's HEAD answer carries its GET's length
            length = next((v for k, v in headers.items() if k.lower() == "content-length"), length)
        out.append(("Content-Length", length))
        start_response(f"{status} {reason}".rstrip(), out)
        if self.log_to is not None:
            ms = (time.perf_counter() - start) * 1000
            self._log(f"{method} {loggable_target(target)} -> {status} ({ms:.0f} ms)\n")
        return [b""] if method == "HEAD" else [body]

    def _respond(
        self, environ: dict[str, Any], method: str, target: str, path: str
    ) -> tuple[int, dict[str, str], bytes]:
        if path == HEALTH_PATH and method in ("GET", "HEAD"):
            status, payload = self.health() if self.health is not None else (200, {"ok": True})
            if self.ai is not None:
                payload = {
                    **payload,
                    "ai_pending": self.ai.pending(),
                    "ai_retrying": self.ai.retrying(),
                    "ai_failures": self.ai.failures,
                }
            if self.health_extras is not None:
                payload = {**payload, **self.health_extras()}
            headers = {"Content-Type": "application/json", "Cache-Control": "no-store"}
            if status == 503:
                headers["Retry-After"] = str(RETRY_AFTER_S)
            return status, headers, json.dumps(payload).encode()
        page = static_response(method, path)  # the browser client at / (horcrux_tools.web)
        if page is not None:
            return page
        client = str(environ.get("REMOTE_ADDR") or "unknown")
        kind = limit_kind(method, path)
        if self.limiter is not None and kind is not None:
            cost = route_cost(method, path, urlsplit(target).query)
            wait = self.limiter.take(client, kind, cost)
            if wait > 0:
                self.throttled += 1
                rate = self.limiter.rates[kind]
                what = "new games" if kind == "create" else "requests"
                costs = f"; this request costs {cost:g}" if cost != 1 else ""
                message = (
                    f"too many {what} from {client}: at most {rate.per_s:g}/s "
                    f"(burst {rate.burst:g}{costs}); retry after {wait:.2f} s"
                )
                return (
                    status_for("throttled"),
                    {
                        "Content-Type": "application/json",
                        "Retry-After": str(max(1, math.ceil(wait))),
                    },
                    error_json("throttled", message).encode(),
                )
        body = environ["wsgi.input"].read() if environ.get("wsgi.input") is not None else b""
        event = api_gateway_event(method, target, environ_headers(environ), body, source_ip=client)
        try:
            if is_lobby(method, path):
                query = urlsplit(target).query

                def computed() -> dict[str, Any]:  # not from the cache: it draws on the budget
                    return self._expensive(event, route_cost(method, path, query))

                cache = self.lobby_cache
                response = computed() if cache is None else cache.get(query, computed)
            else:
                response = self.invoke(event)
                status = int(response.get("statusCode", 500))
                if self.lobby_cache is not None and changes_lobby(method, path, status):
                    self.lobby_cache.clear()
                if self.limiter is not None and kind == "create" and status in REFUSED_UNREAD:
                    # refused for what it said, nothing started: the create budget counts
                    # valid requests only (a client's 4xx keeps naming its mistake)
                    self.limiter.refund(client, kind)
        except Exception:  # a bug in the handler: a JSON 500, logged, never a torn connection
            log.exception("the API handler failed on %s %s", method, loggable_target(target))
            return (
                500,
                {"Content-Type": "application/json"},
                error_json("internal_error", "internal error").encode(),
            )
        headers = {str(k): str(v) for k, v in (response.get("headers") or {}).items()}
        return int(response.get("statusCode", 500)), headers, response_body(response)


REFUSED_UNREAD = frozenset({400, 413, 415, 422})
"""A create refused for its own content (bad JSON, too large, not JSON, invalid): no game
was started, so it takes nothing from the create budget."""
_HOP_BY_HOP = frozenset(("content-length", "connection", "transfer-encoding", "keep-alive"))

__all__ = [
    "CREATE_RATE",
    "HEALTH_PATH",
    "PLAY_RATE",
    "ApiEnvironment",
    "ApiGatewayWsgi",
    "HandlerPool",
    "Rate",
    "RateLimiter",
    "api_gateway_event",
    "checkout_root",
    "environ_headers",
    "load_api_handler",
    "loggable_target",
    "own_metric_set",
    "response_body",
]
