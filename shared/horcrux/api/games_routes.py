"""The games routes (`/games...`) on a Powertools `Router`: parse, call one service
method, return its typed response."""

from __future__ import annotations

import json
from typing import Annotated

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from horcrux.api.http import ERRORS, Authorization, bearer
from horcrux.api.idempotency import IdempotentMoves
from horcrux.api.schemas import (
    CreatedResponse,
    CreateGameRequest,
    EventsResponse,
    GameResponse,
    JoinedResponse,
    JoinRequest,
    LobbyResponse,
    MoveRequest,
    MoveResponse,
    ReplayResponse,
)
from horcrux.models import Seat
from horcrux.service import EVENTS_PAGE_MAX, GameService, InvalidRequest, Unauthorized
from horcrux.service.models import LobbyStatus

GameId = Annotated[str, Path(min_length=1, max_length=128, description="the game's id")]
IdempotencyKey = Annotated[
    str | None,
    Header(
        min_length=1,
        max_length=128,
        pattern=r"^[\x21-\x7e]+$",
        description="a retry with the same key returns the first response, byte for byte",
    ),
]


def _json(model: MoveResponse) -> str:
    return json.dumps(model.as_json(), separators=(",", ":"))


def games_router(service: GameService, idempotency: IdempotentMoves | None) -> APIGatewayHttpRouter:
    """The games routes over `service`. Without `idempotency`, an `Idempotency-Key` is
    refused (422)."""
    router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]

    @router.post(
        "/games",
        status_code=201,
        summary="create a game; the creator takes the first human seat",
        responses={201: {"description": "created"}, **ERRORS},
        tags=["games"],
    )
    def create_game(body: Annotated[CreateGameRequest, Body()]) -> CreatedResponse:
        return service.create_game(
            body.seats.harry, body.seats.voldemort, rules=body.rules, seed=body.seed
        )

    @router.get(
        "/games",
        summary="the lobby (open games with a free human seat) or the game history",
        responses={200: {"description": "a page of games, oldest first"}, **ERRORS},
        tags=["games"],
    )
    def lobby(
        status: Annotated[
            LobbyStatus, Query(description="open (default), active or over")
        ] = "open",
        limit: Annotated[int, Query(ge=1, le=100)] = 20,
        cursor: Annotated[str | None, Query(max_length=200)] = None,
    ) -> LobbyResponse:
        return service.lobby(limit=limit, cursor=cursor, status=status)

    @router.post(
        "/games/<game_id>/seats/<seat>",
        summary="join a free human seat; its token is shown once",
        responses={200: {"description": "joined"}, **ERRORS},
        tags=["games"],
    )
    def join(
        game_id: GameId,
        seat: Annotated[Seat, Path()],
        body: Annotated[JoinRequest | None, Body()] = None,
    ) -> JoinedResponse:
        return service.join(game_id, seat, body.name if body is not None else None)

    @router.get(
        "/games/<game_id>",
        summary="the game as your seat sees it (a spectator without a token)",
        responses={200: {"description": "the game"}, **ERRORS},
        tags=["games"],
        security=[{"bearer": []}, {}],
    )
    def get_game(game_id: GameId, authorization: Authorization = None) -> GameResponse:
        return service.game(game_id, bearer(authorization))

    @router.post(
        "/games/<game_id>/moves",
        summary="play your seat's move",
        responses={
            200: {
                "description": "the move was applied",
                "content": {"application/json": {"model": MoveResponse}},
            },
            **ERRORS,
        },
        tags=["games"],
        security=[{"bearer": []}],
    )
    def move(
        game_id: GameId,
        body: Annotated[MoveRequest, Body()],
        authorization: Authorization = None,
        idempotency_key: IdempotencyKey = None,
    ) -> Response[str]:
        token = bearer(authorization)
        if token is None:
            raise Unauthorized("a move needs 'Authorization: Bearer <token>' of a seat")
        auth = service.authenticate(game_id, token)
        if idempotency_key is None:
            text = _json(service.move_as(auth, body))
        else:
            if idempotency is None:
                raise InvalidRequest("Idempotency-Key is not enabled on this server; omit it")
            # the stored result is the response's text: a replay answers the same bytes
            stored = idempotency.run(
                game_id=game_id,
                seat=str(auth.seat),
                key=idempotency_key,
                move=body.model_dump(mode="json"),
                run=lambda: {"body": _json(service.move_as(auth, body))},
                context=router.lambda_context,
            )
            text = str(stored["body"])
        return Response(status_code=200, content_type=content_types.APPLICATION_JSON, body=text)

    @router.get(
        "/games/<game_id>/events",
        summary="the events your seat may see, paginated",
        responses={200: {"description": "a page of events"}, **ERRORS},
        tags=["games"],
        security=[{"bearer": []}, {}],
    )
    def events(
        game_id: GameId,
        after: Annotated[int, Query(ge=-1, description="events with seq > after")] = -1,
        limit: Annotated[int, Query(ge=1, le=EVENTS_PAGE_MAX)] = 50,
        authorization: Authorization = None,
    ) -> EventsResponse:
        return service.events(game_id, bearer(authorization), after=after, limit=limit)

    @router.get(
        "/games/<game_id>/replay",
        summary="after the end: every event with the truth, and Harry's belief history",
        responses={200: {"description": "the replay"}, **ERRORS},
        tags=["games"],
    )
    def replay(game_id: GameId) -> ReplayResponse:
        return service.replay(game_id)

    return router


__all__ = ["games_router"]
