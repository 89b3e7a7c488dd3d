"""The HTTP API: a Powertools `APIGatewayHttpResolver` (validation on) with two `Router`s.

* `horcrux.api.games_routes`: `/games...` (create, lobby, join, read, move, events, replay);
* `horcrux.api.memory_routes`: `/memory...` (the operator's cross-game memory routes).

Every error goes through the exception handlers below, which apply ONE map
(`horcrux.api.errors.STATUS_BY_CODE`). Before routing, the resolver refuses a body over
`MAX_BODY_BYTES` (413) and one that is not UTF-8 JSON (400), and reads a JSON body
whatever its `Content-Type` says (curl's `-d` sends `application/x-www-form-urlencoded`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Mapping
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.models import HTTPBearer
from aws_lambda_powertools.utilities.typing import LambdaContext

from horcrux.api import errors
from horcrux.api.games_routes import games_router
from horcrux.api.http import BadBody, error_response, json_text, proxy_error, raw_body
from horcrux.api.idempotency import IdempotentMoves
from horcrux.api.memory_routes import memory_router
from horcrux.api.meta_routes import meta_router
from horcrux.api.schemas import ErrorResponse
from horcrux.errors import HorcruxError, NotYourTurn
from horcrux.service import GameService, ServiceError
from horcrux.settings import OperatorSettings
from horcrux.store.port import StoreUnavailable

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 4096
API_TITLE = "Horcrux Hunt"
API_VERSION = "1.0.0"


def _field(loc: Any) -> str:
    parts = [str(p) for p in loc if p not in ("body", "query", "path", "header")]
    where = loc[0] if loc else "request"
    return f"{where}.{'.'.join(parts)}" if parts else str(where)


def as_json_request(event: Mapping[str, Any]) -> dict[str, Any]:
    """The event with its body as JSON text and `content-type: application/json`.

    BadBody if the body is not UTF-8 or not JSON. An event without a body is unchanged."""
    body = raw_body(event)
    if not body:
        return dict(event)
    text = json_text(body)
    headers = {k: v for k, v in (event.get("headers") or {}).items() if k.lower() != "content-type"}
    headers["content-type"] = content_types.APPLICATION_JSON
    return {**event, "headers": headers, "body": text, "isBase64Encoded": False}


class HorcruxResolver(APIGatewayHttpResolver):
    """The resolver, refusing an oversized or non-JSON body before routing or validation.

    `on_response` callbacks see every response, the early 413/400 ones included (the
    handler counts statuses with it)."""

    max_body_bytes = MAX_BODY_BYTES

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.on_response: list[Callable[[dict[str, Any]], None]] = []

    def resolve(self, event: Mapping[str, Any], context: LambdaContext) -> dict[str, Any]:
        response = self._guarded(event, context)
        for callback in self.on_response:
            callback(response)
        return response

    def _guarded(self, event: Mapping[str, Any], context: LambdaContext) -> dict[str, Any]:
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
) -> HorcruxResolver:
    """The API over `service`. Without `idempotency`, an `Idempotency-Key` is refused
    (422); without `operator` (no operator token configured) every memory call is 403."""
    app = HorcruxResolver(enable_validation=True)
    app.max_body_bytes = max_body_bytes
    # registered through the manager (the decorators are untyped for mypy)
    app.exception_handler_manager.update_exception_handlers(exception_handlers(app))
    app.include_router(games_router(service, idempotency))
    app.include_router(memory_router(service, operator or OperatorSettings()))
    app.include_router(meta_router())
    openapi_cache: dict[str, str] = {}

    @app.get("/openapi.json", include_in_schema=False)
    def openapi() -> Response[str]:
        if "doc" not in openapi_cache:
            text = app.get_openapi_json_schema(
                title=API_TITLE,
                version=API_VERSION,
                description="Harry hunts 3 Horcruxes; Voldemort hides them. See docs/API.md.",
                security_schemes={"bearer": HTTPBearer(bearerFormat="seat token")},
            )
            # the error body every route answers with (referenced by `http.ERRORS`)
            doc = json.loads(text)
            schemas = doc.setdefault("components", {}).setdefault("schemas", {})
            schemas["ErrorResponse"] = ErrorResponse.model_json_schema()
            openapi_cache["doc"] = json.dumps(doc, separators=(",", ":"))
        return Response(
            status_code=200, content_type=content_types.APPLICATION_JSON, body=openapi_cache["doc"]
        )

    return app


__all__ = [
    "MAX_BODY_BYTES",
    "HorcruxResolver",
    "as_json_request",
    "build_app",
    "exception_handlers",
]
