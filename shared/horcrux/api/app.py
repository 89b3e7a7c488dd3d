"""The HTTP API: a Powertools `APIGatewayHttpResolver` (validation on) with two `Router`s.

* `horcrux.api.games_routes`: `/games...` (create, lobby, join, read, move, events, replay);
* `horcrux.api.memory_routes`: `/memory...` (the operator's cross-game memory routes).

Every error goes through the exception handlers below, which apply ONE map
(`horcrux.api.errors.STATUS_BY_CODE`). Before routing, the resolver answers a method the
path does not have (405 with `Allow`) or a path no route has (404), and refuses a body over
`MAX_BODY_BYTES` (413), a declared content type that is not JSON (415: JSON is accepted
as `application/json`, `application/*+json`, curl's `application/x-www-form-urlencoded`,
`text/plain` or no type, with no charset but UTF-8) and a body that is not UTF-8 JSON or
nests deeper than `MAX_JSON_DEPTH` (400); nothing is written then. After routing it sets
`Cache-Control` on every response: `no-cache, private` (and `Vary: Authorization`) on a
successful GET, `no-store` on everything else (tokens, errors, moves).
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.utilities.typing import LambdaContext

from horcrux.api import errors
from horcrux.api.games_routes import games_router
from horcrux.api.http import (
    MAX_JSON_DEPTH,
    BadBody,
    check_content_type,
    error_response,
    header,
    json_text,
    proxy_error,
    raw_body,
    request_method,
    request_path,
)
from horcrux.api.idempotency import IdempotentMoves
from horcrux.api.memory_routes import memory_guard, memory_router
from horcrux.api.meta_routes import meta_router
from horcrux.api.player_routes import player_router
from horcrux.api.schemas import ErrorResponse
from horcrux.errors import HorcruxError, NotYourTurn
from horcrux.lazy import lazy_import
from horcrux.service import GameService, ServiceError
from horcrux.settings import OperatorSettings
from horcrux.store.budget import DEFAULT_REQUEST_BUDGET_S, request_budget
from horcrux.store.port import StoreUnavailable

if TYPE_CHECKING:
    from aws_lambda_powertools.event_handler.openapi import models as openapi_models
else:  # Powertools' OpenAPI models (~30 ms to build): for GET /openapi.json only
    openapi_models = lazy_import("aws_lambda_powertools.event_handler.openapi.models")

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 4096
API_TITLE = "Horcrux Hunt"
API_VERSION = "1.0.0"


def _field(loc: Any) -> str:
    parts = [str(p) for p in loc if p not in ("body", "query", "path", "header")]
    where = loc[0] if loc else "request"
    return f"{where}.{'.'.join(parts)}" if parts else str(where)


NO_STORE = "no-store"
PRIVATE_VIEW = "no-cache, private"


def as_json_request(event: Mapping[str, Any], *, max_depth: int = MAX_JSON_DEPTH) -> dict[str, Any]:
    """The event with its body as JSON text and `content-type: application/json`.

    BadBody if the declared content type is not a JSON one (415), the body is not UTF-8,
    nests deeper than `max_depth` or is not JSON (400). An event without a body is
    unchanged."""
    body = raw_body(event)
    if not body:
        return dict(event)
    check_content_type(header(event, "content-type"))
    text = json_text(body, max_depth=max_depth)
    headers = {k: v for k, v in (event.get("headers") or {}).items() if k.lower() != "content-type"}
    headers["content-type"] = content_types.APPLICATION_JSON
    return {**event, "headers": headers, "body": text, "isBase64Encoded": False}


class HorcruxResolver(APIGatewayHttpResolver):
    """The resolver, refusing an oversized or non-JSON body before routing or validation.

    `on_response` callbacks see every response, the early 413/400 ones included (the
    handler counts statuses with it)."""

    max_body_bytes = MAX_BODY_BYTES
    database_budget_s: float | None = DEFAULT_REQUEST_BUDGET_S
    """The database's time budget per request (`horcrux.store.budget`; None: none)."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.on_response: list[Callable[[dict[str, Any]], None]] = []
        self.guards: list[Callable[[Mapping[str, Any]], None]] = []
        """Checks run before a routed request's body and parameters are validated (the
        memory routes' operator token): a HorcruxError is the answer."""

    def resolve(self, event: Mapping[str, Any], context: LambdaContext) -> dict[str, Any]:
        with request_budget(self.database_budget_s):
            return self._resolve_request(event, context)

    def _resolve_request(self, event: Mapping[str, Any], context: LambdaContext) -> dict[str, Any]:
        method = _method(event)
        if method == "HEAD" and "GET" in self.allowed_methods(_path(event)):
            response = self._guarded(_as_method(event, "GET"), context)
            # HEAD: GET's status and headers, its Content-Length included, and no body
            body = str(response.get("body") or "")
            size = (
                len(base64.b64decode(body))
                if response.get("isBase64Encoded")
                else len(body.encode())
            )
            response.setdefault("headers", {})["Content-Length"] = str(size)
            response["body"] = ""
            response["isBase64Encoded"] = False
        else:
            response = self._guarded(event, context)
        _cache_headers(method, response)
        _security_headers(response)
        for callback in self.on_response:
            callback(response)
        return response

    def allowed_methods(self, path: str) -> list[str]:
        """The methods the routes of `path` serve it with (empty: no route has the path);
        HEAD wherever GET is. Where routes of several shapes match, the path is the most
        specific shape's (the most literal segments): `/memory/corrections` is that route's
        (POST), never `/memory/{agent}`'s; `/memory/a/items/b/history` is the history's
        (GET), never `/memory/{agent}/items/{item_id}/{verdict}`'s."""
        path = self._remove_prefix(path)
        routes = self._static_routes + self._dynamic_routes
        matching = [r for r in routes if r.rule.match(path)]
        best = max((_literal_segments(r.path) for r in matching), default=0)
        methods = {r.method for r in matching if _literal_segments(r.path) == best}
        if "GET" in methods:
            methods.add("HEAD")
        return sorted(methods)

    def _convert_matches_into_route_keys(self, match: Any) -> dict[str, str]:
        """Path parameters percent-decoded (`shadow%3A0.5` is `shadow:0.5`); `_guarded`
        has refused a path that does not decode."""
        return {k: unquote(v, errors="strict") for k, v in match.groupdict().items()}

    def _no_route(self, event: Mapping[str, Any]) -> dict[str, Any] | None:
        """405 (with `Allow`) or 404 if no route serves this method and path; else None."""
        method, path = _method(event), _path(event)
        allowed = self.allowed_methods(path)
        if method in allowed:
            return None
        if not allowed:
            return proxy_error("route_not_found", f"no route {method} {path}")
        return proxy_error(
            "method_not_allowed",
            f"{method} is not allowed on {path}; allowed: {', '.join(allowed)}",
            headers={"Allow": ", ".join(allowed)},
        )

    def _guarded(self, event: Mapping[str, Any], context: LambdaContext) -> dict[str, Any]:
        refused = self._no_route(event)
        if refused is not None:
            return refused
        path = _path(event)
        try:
            unquote(path, errors="strict")
        except UnicodeDecodeError:
            return proxy_error(
                "bad_request",
                f"the path {path[:200]!r} is not percent-encoded UTF-8; encode each "
                "segment's UTF-8 bytes",
            )
        for guard in self.guards:
            try:
                guard(event)
            except HorcruxError as exc:
                return proxy_error(exc.code, exc.message)
        size = len(raw_body(event))
        if size > self.max_body_bytes:
            return proxy_error(
                "payload_too_large", f"the body is {size} bytes; the limit is {self.max_body_bytes}"
            )
        try:
            request = as_json_request(event)
        except BadBody as exc:
            return proxy_error(exc.code, exc.message)
        return super().resolve(request, context)


def _no_body_on_304(doc: dict[str, Any]) -> None:
    """A 304 has no body (Powertools documents the route's return type for every status)."""
    for operations in doc.get("paths", {}).values():
        for operation in operations.values():
            not_modified = operation.get("responses", {}).get("304")
            if isinstance(not_modified, dict):
                not_modified.pop("content", None)


def _no_null_parameters(doc: dict[str, Any]) -> None:
    """A parameter the route takes as `X | None` is documented as X: an optional header or
    query parameter is left out, never sent as the text `null` (which the route refuses)."""
    for operations in doc.get("paths", {}).values():
        for operation in operations.values():
            for parameter in operation.get("parameters", []):
                schema = parameter.get("schema", {})
                branches = schema.get("anyOf")
                if not isinstance(branches, list):
                    continue
                kept = [b for b in branches if b != {"type": "null"}]
                if len(kept) == 1 and len(kept) < len(branches):
                    del schema["anyOf"]
                    schema.update(kept[0])


def _literal_segments(route_path: str) -> int:
    """How many segments of a route's path are literal (`/memory/corrections`: 2,
    `/memory/<agent>`: 1)."""
    return sum(1 for part in route_path.split("/") if part and not part.startswith("<"))


_BOUND_KEYWORDS = {
    "ge": "minimum",
    "le": "maximum",
    "gt": "exclusiveMinimum",
    "lt": "exclusiveMaximum",
}


def _integral_bounds(node: Any) -> None:
    """Integer bounds as JSON integers (Powertools writes `maximum: 9007199254740991.0`),
    under JSON Schema's names: a parameter with a validator of its own (`http.DIGITS`)
    comes out with pydantic's `ge`/`le`, which are moved onto its number's schema."""
    if isinstance(node, dict):
        schema = isinstance(node.get("type"), str) or isinstance(node.get("anyOf"), list)
        found = {k: node.pop(k) for k in list(node) if schema and k in _BOUND_KEYWORDS}
        if found:
            numbers = [
                branch
                for branch in node.get("anyOf", [])
                if isinstance(branch, dict) and branch.get("type") in ("integer", "number")
            ]
            target = numbers[0] if numbers else node
            for key, value in found.items():
                target[_BOUND_KEYWORDS[key]] = value
        for key, value in node.items():
            if key in ("maximum", "minimum") and isinstance(value, float) and value.is_integer():
                node[key] = int(value)
            else:
                _integral_bounds(value)
    elif isinstance(node, list):
        for value in node:
            _integral_bounds(value)


_method = request_method
_path = request_path


def _as_method(event: Mapping[str, Any], method: str) -> dict[str, Any]:
    """The event with another HTTP method (HEAD is answered as GET)."""
    context = dict(event.get("requestContext") or {})
    context["http"] = {**(context.get("http") or {}), "method": method}
    out = {**event, "requestContext": context}
    if "httpMethod" in out:
        out["httpMethod"] = method
    return out


def _security_headers(response: dict[str, Any]) -> None:
    """`X-Content-Type-Options: nosniff` on every response: a browser never reads an
    answer as another type than it declares."""
    headers = response.get("headers")
    if not isinstance(headers, dict):
        headers = response["headers"] = {}
    if not any(k.lower() == "x-content-type-options" for k in headers):
        headers["X-Content-Type-Options"] = "nosniff"


def _cache_headers(method: str, response: dict[str, Any]) -> None:
    """`Cache-Control` on every response (unless the route set one): a successful GET is a
    view for one caller (`no-cache, private`, `Vary: Authorization`); anything else (a
    token, an error, a move) is `no-store`."""
    headers = response.get("headers")
    if not isinstance(headers, dict):
        headers = response["headers"] = {}
    if any(k.lower() == "cache-control" for k in headers):
        return
    if method in ("GET", "HEAD") and int(response.get("statusCode", 500)) in (200, 304):
        headers["Cache-Control"] = PRIVATE_VIEW
        headers["Vary"] = "Authorization"
    else:
        headers["Cache-Control"] = NO_STORE


def exception_handlers(app: APIGatewayHttpResolver) -> dict[type[Exception], Callable[..., Any]]:
    """Every exception the routes may raise -> an error response (one map of codes)."""

    def invalid(exc: RequestValidationError) -> Response[Any]:
        errs = exc.errors()
        bad_json = [e for e in errs if e.get("type") == "json_invalid"]
        if bad_json:
            detail = bad_json[0].get("ctx", {}).get("error", "JSON decode error")
            return error_response("invalid_json", f"the body is not valid JSON: {detail}")
        problems = [f"{_field(e.get('loc', ()))}: {e.get('msg', e.get('type'))}" for e in errs]
        return error_response(
            "validation_error",
            "; ".join(problems)[:1000],
            detail=[{"loc": list(e.get("loc", ())), "type": e.get("type")} for e in errs],
        )

    def domain(exc: HorcruxError) -> Response[Any]:
        extra: dict[str, Any] = {}
        if isinstance(exc, ServiceError):
            extra.update(exc.details)
        if isinstance(exc, NotYourTurn):
            extra["to_move"] = exc.expected
        if isinstance(exc, StoreUnavailable):
            log.warning("database unavailable (%s): %s", exc.reason, exc.message)
            return error_response(
                exc.code, exc.message, retry_after_s=exc.retry_after_s, reason=exc.reason
            )
        if errors.status_for(exc.code) >= 500:
            log.error("domain error %s: %s", exc.code, exc.message)
        retry_after = getattr(exc, "retry_after_s", None)
        if isinstance(retry_after, int):  # a lock held by an earlier request
            return error_response(exc.code, exc.message, retry_after_s=retry_after, **extra)
        return error_response(exc.code, exc.message, **extra)

    def no_route(exc: NotFoundError) -> Response[Any]:
        event = app.current_event
        return error_response(
            "route_not_found", f"no route {event.request_context.http.method} {event.path}"
        )

    def unexpected(exc: Exception) -> Response[Any]:
        code = errors.aws_error_code(exc)
        if code in errors.THROTTLING_CODES:
            return error_response("throttled", f"the database is throttling ({code}); retry")
        log.exception("unhandled error")
        return error_response("internal_error", "internal error")

    return {
        RequestValidationError: invalid,
        HorcruxError: domain,
        NotFoundError: no_route,
        Exception: unexpected,
    }


def build_app(
    service: GameService,
    *,
    idempotency: IdempotentMoves | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    operator: OperatorSettings | None = None,
    database_budget_s: float | None = DEFAULT_REQUEST_BUDGET_S,
) -> HorcruxResolver:
    """The API over `service`. Without `idempotency`, an `Idempotency-Key` is refused
    (422); without `operator` (no operator token configured) every memory call is 403.
    Each request's database calls share `database_budget_s` (`horcrux.store.budget`)."""
    app = HorcruxResolver(enable_validation=True)
    app.max_body_bytes = max_body_bytes
    app.database_budget_s = database_budget_s
    # registered through the manager (the decorators are untyped for mypy)
    app.exception_handler_manager.update_exception_handlers(exception_handlers(app))
    app.include_router(games_router(service, idempotency))
    operator = operator or OperatorSettings()
    app.include_router(memory_router(service, operator))
    app.guards.append(memory_guard(operator))
    app.include_router(meta_router())
    app.include_router(player_router(service))
    openapi_cache: dict[str, str] = {}

    @app.get("/openapi.json", include_in_schema=False)
    def openapi() -> Response[str]:
        if "doc" not in openapi_cache:
            text = app.get_openapi_json_schema(
                title=API_TITLE,
                version=API_VERSION,
                description="Harry hunts 3 Horcruxes; Voldemort hides them. See docs/API.md.",
                security_schemes={"bearer": openapi_models.HTTPBearer(bearerFormat="seat token")},
            )
            # the error body every route answers with (referenced by `http.ERRORS`)
            doc = json.loads(text)
            schemas = doc.setdefault("components", {}).setdefault("schemas", {})
            schemas["ErrorResponse"] = ErrorResponse.model_json_schema()
            _integral_bounds(doc)
            _no_body_on_304(doc)
            _no_null_parameters(doc)
            openapi_cache["doc"] = json.dumps(doc, separators=(",", ":"))
        return Response(
            status_code=200, content_type=content_types.APPLICATION_JSON, body=openapi_cache["doc"]
        )

    return app


__all__ = [
    "MAX_BODY_BYTES",
    "NO_STORE",
    "PRIVATE_VIEW",
    "HorcruxResolver",
    "as_json_request",
    "build_app",
    "exception_handlers",
]
