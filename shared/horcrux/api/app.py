"""The HTTP API's routes on a Powertools `APIGatewayHttpResolver` (validation on).

Thin on purpose: each route parses its inputs (pydantic models, `Annotated[..., Body()]`,
`Query()`, `Header()`), calls one `GameService` method and returns its payload; every
error goes through one exception handler that applies `horcrux.api.errors.STATUS_BY_CODE`.
A body over `MAX_BODY_BYTES` is refused before anything is parsed (413).
"""

from __future__ import annotations

import base64
import binascii
import json
import logging
from collections.abc import Mapping
from typing import Annotated, Any, Literal

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.models import HTTPBearer
from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Path, Query
from aws_lambda_powertools.utilities.idempotency.exceptions import (
    IdempotencyAlreadyInProgressError,
    IdempotencyValidationError,
)
from aws_lambda_powertools.utilities.typing import LambdaContext

from horcrux.api import errors
from horcrux.api.idempotency import IdempotentMoves
from horcrux.api.schemas import (
    CorrectionRequest,
    CreatedResponse,
    CreateGameRequest,
    ErrorResponse,
    EventsResponse,
    GameResponse,
    JoinedResponse,
    LobbyResponse,
    MoveRequest,
    MoveResponse,
    ReplayResponse,
)
from horcrux.errors import HorcruxError, NotYourTurn
from horcrux.models import Seat
from horcrux.service import (
    EVENTS_PAGE_MAX,
    GameService,
    InvalidRequest,
    ServiceError,
    Unauthorized,
)

log = logging.getLogger(__name__)

MAX_BODY_BYTES = 4096
API_TITLE = "Horcrux Hunt"
API_VERSION = "1.0.0"

GameId = Annotated[str, Path(min_length=1, max_length=128, description="the game's id")]
AgentSpec = Annotated[str, Path(min_length=1, max_length=128, description="the AI Harry's spec")]
OpponentId = Annotated[
    str, Query(min_length=1, max_length=128, description="a Voldemort brain or player id")
]

Authorization = Annotated[
    str | None,
    Header(max_length=512, description="`Bearer <token>` of a seat; omit to spectate"),
]
_ERRORS: dict[int, Any] = {
    status: {
        "description": description,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorResponse"}}},
    }
    for status, description in (
        (400, "malformed JSON"),
        (401, "missing or wrong token"),
        (403, "the other seat's action"),
        (404, "no such game (or it expired)"),
        (409, "not your turn / game over / conflict"),
        (413, "body over the limit"),
        (422, "invalid request or illegal move"),
        (429, "throttled"),
    )
}


def bearer(authorization: str | None) -> str | None:
    """The token of an `Authorization: Bearer <token>` header (None if there is none)."""
    if authorization is None:
        return None
    scheme, _, token = authorization.strip().partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise Unauthorized("expected 'Authorization: Bearer <token>'")
    return token.strip()


def body_size(event: Mapping[str, Any]) -> int:
    """The request body's size in bytes, decoded if API Gateway base64-encoded it."""
    body = event.get("body")
    if not body:
        return 0
    if event.get("isBase64Encoded"):
        try:
            return len(base64.b64decode(body, validate=False))
        except (binascii.Error, ValueError):
            return len(body)
    return len(str(body).encode())


def _json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> Response[Any]:
    return Response(
        status_code=status,
        content_type=content_types.APPLICATION_JSON,
        body=body,
        headers=headers,
    )


def error_response(code: str, message: str, **extra: Any) -> Response[Any]:
    status = errors.status_for(code)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    return _json_response(status, errors.error_body(code, message, **extra), headers)


def _field(loc: Any) -> str:
    parts = [str(p) for p in loc if p not in ("body", "query", "path", "header")]
    where = loc[0] if loc else "request"
    return f"{where}.{'.'.join(parts)}" if parts else str(where)


class HorcruxResolver(APIGatewayHttpResolver):
    """The resolver, refusing an oversized body before routing, validation or parsing."""

    max_body_bytes = MAX_BODY_BYTES

    def resolve(self, event: Mapping[str, Any], context: LambdaContext) -> dict[str, Any]:
        size = body_size(event)
        if size > self.max_body_bytes:
            return {
                "statusCode": 413,
                "headers": {"Content-Type": content_types.APPLICATION_JSON},
                "body": errors.error_json(
                    "payload_too_large",
                    f"the body is {size} bytes; the limit is {self.max_body_bytes}",
                ),
                "isBase64Encoded": False,
            }
        return super().resolve(event, context)


def build_app(
    service: GameService,
    *,
    idempotency: IdempotentMoves | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
) -> HorcruxResolver:
    """The API over `service`. Without `idempotency`, an `Idempotency-Key` is refused (422)."""
    app = HorcruxResolver(enable_validation=True)
    app.max_body_bytes = max_body_bytes
    openapi_cache: dict[str, str] = {}

    # -------------------------------------------------------------- errors
    def _invalid(exc: RequestValidationError) -> Response[Any]:
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

    def _domain(exc: HorcruxError) -> Response[Any]:
        extra: dict[str, Any] = {}
        if isinstance(exc, ServiceError):
            extra.update(exc.details)
        if isinstance(exc, NotYourTurn):
            extra["to_move"] = exc.expected
        if errors.status_for(exc.code) >= 500:
            log.error("domain error %s: %s", exc.code, exc.message)
        return error_response(exc.code, exc.message, **extra)

    def _key_reused(exc: IdempotencyValidationError) -> Response[Any]:
        return error_response(
            "idempotency_key_reused",
            "this Idempotency-Key was used with a different move; use a new key per move",
        )

    def _key_busy(exc: IdempotencyAlreadyInProgressError) -> Response[Any]:
        return error_response(
            "idempotency_in_progress", "a request with this Idempotency-Key is still running"
        )

    def _no_route(exc: NotFoundError) -> Response[Any]:
        event = app.current_event
        return error_response(
            "route_not_found", f"no route {event.request_context.http.method} {event.path}"
        )

    def _unexpected(exc: Exception) -> Response[Any]:
        code = errors.aws_error_code(exc)
        if code in errors.THROTTLING_CODES:
            return error_response("throttled", f"the database is throttling ({code}); retry")
        log.exception("unhandled error")
        return error_response("internal_error", "internal error")

    # registered through the manager (the decorators are untyped for mypy)
    app.exception_handler_manager.update_exception_handlers(
        {
            RequestValidationError: _invalid,
            HorcruxError: _domain,
            IdempotencyValidationError: _key_reused,
            IdempotencyAlreadyInProgressError: _key_busy,
            NotFoundError: _no_route,
            Exception: _unexpected,
        }
    )

    # -------------------------------------------------------------- routes
    @app.post(
        "/games",
        status_code=201,
        summary="create a game; the creator takes the first human seat",
        responses={201: {"description": "created"}, **_ERRORS},
        tags=["games"],
    )
    def create_game(body: Annotated[CreateGameRequest, Body()]) -> CreatedResponse:
        payload = service.create_game(
            body.seats.harry, body.seats.voldemort, rules=body.rules, seed=body.seed
        )
        return CreatedResponse.model_validate(payload)

    @app.get(
        "/games",
        summary="the lobby: games with a free human seat, oldest first",
        responses={200: {"description": "a page of open games"}, **_ERRORS},
        tags=["games"],
    )
    def lobby(
        status: Annotated[Literal["open"], Query(description="only `open` is listed")] = "open",
        limit: Annotated[int, Query(ge=1, le=100)] = 20,
        cursor: Annotated[str | None, Query(max_length=200)] = None,
    ) -> LobbyResponse:
        return LobbyResponse.model_validate(service.lobby(limit=limit, cursor=cursor))

    @app.post(
        "/games/<game_id>/seats/<seat>",
        summary="join a free human seat; its token is shown once",
        responses={200: {"description": "joined"}, **_ERRORS},
        tags=["games"],
    )
    def join(game_id: GameId, seat: Annotated[Seat, Path()]) -> JoinedResponse:
        return JoinedResponse.model_validate(service.join(game_id, seat))

    @app.get(
        "/games/<game_id>",
        summary="the game as your seat sees it (a spectator without a token)",
        responses={200: {"description": "the game"}, **_ERRORS},
        tags=["games"],
        security=[{"bearer": []}, {}],
    )
    def get_game(game_id: GameId, authorization: Authorization = None) -> GameResponse:
        return GameResponse.model_validate(service.game(game_id, bearer(authorization)))

    @app.post(
        "/games/<game_id>/moves",
        summary="play your seat's move",
        responses={200: {"description": "the move was applied"}, **_ERRORS},
        tags=["games"],
        security=[{"bearer": []}],
    )
    def move(
        game_id: GameId,
        body: Annotated[MoveRequest, Body()],
        authorization: Authorization = None,
        idempotency_key: Annotated[
            str | None,
            Header(
                min_length=1,
                max_length=128,
                pattern=r"^[\x21-\x7e]+$",
                description="a retry with the same key returns the first response",
            ),
        ] = None,
    ) -> MoveResponse:
        token = bearer(authorization)
        if token is None:
            raise Unauthorized("a move needs 'Authorization: Bearer <token>' of a seat")
        auth = service.authenticate(game_id, token)
        if idempotency_key is None:
            return MoveResponse.model_validate(service.move_as(auth, body))
        if idempotency is None:
            raise InvalidRequest("Idempotency-Key is not enabled on this server; omit it")
        payload = idempotency.run(
            game_id=game_id,
            seat=str(auth.seat),
            key=idempotency_key,
            move=body.model_dump(mode="json"),
            run=lambda: service.move_as(auth, body),
            context=app.lambda_context,
        )
        return MoveResponse.model_validate(payload)

    @app.get(
        "/games/<game_id>/events",
        summary="the events your seat may see, paginated",
        responses={200: {"description": "a page of events"}, **_ERRORS},
        tags=["games"],
        security=[{"bearer": []}, {}],
    )
    def events(
        game_id: GameId,
        after: Annotated[int, Query(ge=-1, description="events with seq > after")] = -1,
        limit: Annotated[int, Query(ge=1, le=EVENTS_PAGE_MAX)] = 50,
        authorization: Authorization = None,
    ) -> EventsResponse:
        payload = service.events(game_id, bearer(authorization), after=after, limit=limit)
        return EventsResponse.model_validate(payload)

    @app.get(
        "/games/<game_id>/replay",
        summary="after the end: every event with the truth, and Harry's belief history",
        responses={200: {"description": "the replay"}, **_ERRORS},
        tags=["games"],
    )
    def replay(game_id: GameId) -> ReplayResponse:
        return ReplayResponse.model_validate(service.replay(game_id))

    # -------------------------------------------------------------- memory (operator)
    def _memory_store() -> Any:
        store = service.store
        if not callable(getattr(store, "put_scope_item", None)):
            raise InvalidRequest("this store keeps no cross-game memory")
        return store

    @app.get(
        "/memory/<agent>",
        summary="a scope's cross-game memory, with validity intervals (operator token)",
        responses={200: {"description": "the memory"}, **_ERRORS},
        tags=["memory"],
        security=[{"bearer": []}],
    )
    def get_memory(
        agent: AgentSpec, opponent: OpponentId, authorization: Authorization = None
    ) -> dict[str, Any]:
        from horcrux.echo import ops

        ops.authorize(bearer(authorization), agent)
        return ops.inspect(_memory_store(), agent, opponent)

    @app.post(
        "/memory/corrections",
        summary="add an operator correction or preference to a scope (operator token)",
        responses={200: {"description": "the scope after it"}, **_ERRORS},
        tags=["memory"],
        security=[{"bearer": []}],
    )
    def post_correction(
        body: Annotated[CorrectionRequest, Body()], authorization: Authorization = None
    ) -> dict[str, Any]:
        from horcrux.echo import ops

        ops.authorize(bearer(authorization), body.agent)
        return ops.correct(
            _memory_store(),
            body.agent,
            body.opponent,
            wrong=body.wrong,
            right=body.right,
            text=body.text,
            subject=body.subject,
            rate=body.rate,
            kind=body.kind,
        )

    @app.delete(
        "/memory/<agent>",
        summary="forget a scope: its memory and recent results (operator token)",
        responses={200: {"description": "what was deleted"}, **_ERRORS},
        tags=["memory"],
        security=[{"bearer": []}],
    )
    def delete_memory(
        agent: AgentSpec, opponent: OpponentId, authorization: Authorization = None
    ) -> dict[str, Any]:
        from horcrux.echo import ops

        ops.authorize(bearer(authorization), agent)
        return ops.delete(_memory_store(), agent, opponent)

    @app.get("/openapi.json", include_in_schema=False)
    def openapi() -> Response[str]:
        if "doc" not in openapi_cache:
            openapi_cache["doc"] = app.get_openapi_json_schema(
                title=API_TITLE,
                version=API_VERSION,
                description="Harry hunts 3 Horcruxes; Voldemort hides them. See docs/API.md.",
                security_schemes={"bearer": HTTPBearer(bearerFormat="seat token")},
            )
            # the error body every route answers with (referenced by `_ERRORS`)
            doc = json.loads(openapi_cache["doc"])
            schemas = doc.setdefault("components", {}).setdefault("schemas", {})
            schemas["ErrorResponse"] = ErrorResponse.model_json_schema()
            openapi_cache["doc"] = json.dumps(doc, separators=(",", ":"))
        return Response(
            status_code=200, content_type=content_types.APPLICATION_JSON, body=openapi_cache["doc"]
        )

    return app
