"""The games routes (`/games...`) on a Powertools `Router`: parse, call one service
method, return its typed response."""

from __future__ import annotations

import hashlib
import json
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import Response, content_types
from aws_lambda_powertools.event_handler.openapi.params import Body, Header, Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from horcrux.api.http import (
    DIGITS,
    ERRORS,
    Authorization,
    IfMatch,
    IfNoneMatch,
    bearer,
    etag,
    etag_versions,
)
from horcrux.api.idempotency import IdempotentMoves
from horcrux.api.schemas import (
    BeliefResponse,
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
    as_action,
)
from horcrux.models import Seat
from horcrux.service import (
    EVENTS_PAGE_MAX,
    GameService,
    InvalidRequest,
    Precondition,
    Unauthorized,
)
from horcrux.service.models import EVENTS_AFTER_MAX, VERSION_MAX, LobbyStatus

MAX_TURN_QUERY = 10_000
"""The largest `?turn=` the belief route parses (a game's own range is checked after)."""
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


def _json(model: MoveResponse | GameResponse) -> str:
    return json.dumps(model.as_json(), separators=(",", ":"))


PRECONDITION_ERRORS: dict[int, Any] = {
    412: {
        "description": "If-Match names another version (the body names the current "
        "`version`, `turn`, `to_move`); nothing written",
        "content": ERRORS[409]["content"],
    }
}


def _preconditions(if_match: str | None, expected_version: int | None) -> list[Precondition]:
    out: list[Precondition] = []
    if if_match is not None and if_match.strip():  # an empty list: no precondition
        out.append(Precondition("if_match", etag_versions(if_match)))
    if expected_version is not None:
        out.append(Precondition("expected_version", frozenset({expected_version})))
    return out


def games_router(service: GameService, idempotency: IdempotentMoves | None) -> APIGatewayHttpRouter:
    """The games routes over `service`. Without `idempotency`, an `Idempotency-Key` is
    refused (422)."""
    router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]

    @router.post(
        "/games",
        status_code=201,
        summary="create a game; the creator takes the first human seat",
        responses={
            201: {
                "description": "created (`invite` only for a private game)",
                "content": {"application/json": {"model": CreatedResponse}},
            },
            **ERRORS,
        },
        tags=["games"],
    )
    def create_game(body: Annotated[CreateGameRequest, Body()]) -> Response[str]:
        created = service.create_game(
            body.seats.harry,
            body.seats.voldemort,
            rules=body.rules,
            seed=body.seed,
            private=body.private,
        )
        return Response(
            status_code=201,
            content_type=content_types.APPLICATION_JSON,
            body=json.dumps(created.as_json(), separators=(",", ":")),
            headers={"ETag": etag(created.game.version)},
        )

    @router.get(
        "/games",
        summary="the lobby (open games with a free human seat), the games being played, "
        "the abandoned ones or the game history",
        responses={
            200: {
                "description": "a page of games, oldest first (active and abandoned: by "
                "their last activity)"
            },
            **ERRORS,
        },
        tags=["games"],
    )
    def lobby(
        status: Annotated[
            LobbyStatus,
            Query(
                description="open (default), active (being played), abandoned (no move "
                "for 30 minutes) or over"
            ),
        ] = "open",
        limit: Annotated[int, DIGITS, Query(ge=1, le=100)] = 20,
        cursor: Annotated[
            str | None, Query(min_length=1, max_length=200, description="from the last page")
        ] = None,
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
        invite: Annotated[
            str | None,
            Query(
                min_length=1,
                max_length=64,
                description="a private game's invite code (from its create response)",
            ),
        ] = None,
        body: Annotated[JoinRequest | None, Body()] = None,
    ) -> JoinedResponse:
        name = body.name if body is not None else None
        key = body.player_key if body is not None else None
        return service.join(game_id, seat, invite=invite, name=name, player_key=key)

    @router.get(
        "/games/<game_id>",
        summary="the game as your seat sees it (a spectator without a token)",
        responses={
            200: {
                "description": "the game; `ETag` is its version",
                "content": {"application/json": {"model": GameResponse}},
            },
            304: {"description": "not modified: If-None-Match holds the game's ETag"},
            **ERRORS,
        },
        tags=["games"],
        security=[{"bearer": []}, {}],
    )
    def get_game(
        game_id: GameId,
        authorization: Authorization = None,
        if_none_match: IfNoneMatch = None,
    ) -> Response[str]:
        game = service.game(game_id, bearer(authorization))
        headers = {"ETag": etag(game.version)}
        if if_none_match is not None and if_none_match.strip():  # empty: no condition
            held = etag_versions(if_none_match, "If-None-Match")
            if held is None or game.version in held:
                return Response(status_code=304, body="", headers=headers)
        return Response(
            status_code=200,
            content_type=content_types.APPLICATION_JSON,
            body=_json(game),
            headers=headers,
        )

    @router.post(
        "/games/<game_id>/moves",
        summary="play your seat's move",
        responses={
            200: {
                "description": "the move was applied; `ETag` is the game's version after it",
                "content": {"application/json": {"model": MoveResponse}},
            },
            **ERRORS,
            **PRECONDITION_ERRORS,
        },
        tags=["games"],
        security=[{"bearer": []}],
    )
    def move(
        game_id: GameId,
        body: Annotated[MoveRequest, Body()],
        authorization: Authorization = None,
        idempotency_key: IdempotencyKey = None,
        if_match: IfMatch = None,
        expected_version: Annotated[
            int | None,
            DIGITS,
            Query(
                ge=0,
                le=VERSION_MAX,
                description="the version you last saw, for clients that cannot send "
                "If-Match: a move at any other version is refused (409 stale_version)",
            ),
        ] = None,
    ) -> Response[str]:
        token = bearer(authorization)
        if token is None:
            raise Unauthorized("a move needs 'Authorization: Bearer <token>' of a seat")
        preconditions = _preconditions(if_match, expected_version)
        auth = service.authenticate(game_id, token)
        action = as_action(body)

        # a keyed move's write is named by its key and move: a retry after a lost answer
        # (503 outcome_unknown) finds the move it already committed and answers it
        write_id = None
        if idempotency_key is not None:
            move_text = json.dumps(body.model_dump(mode="json"), sort_keys=True)
            named = "\n".join((game_id, str(auth.seat), idempotency_key, move_text))
            write_id = hashlib.sha256(named.encode()).hexdigest()[:32]

        def run() -> dict[str, Any]:
            moved = service.move_as(auth, action, preconditions, write_id=write_id)
            return {"body": _json(moved), "version": moved.game.version}

        if idempotency_key is None:
            stored = run()
        else:
            if idempotency is None:
                raise InvalidRequest("Idempotency-Key is not enabled on this server; omit it")
            # the stored result is the response's text: a replay answers the same bytes (its
            # preconditions are not checked again: the key wins, docs/API.md)
            stored = idempotency.run(
                game_id=game_id,
                seat=str(auth.seat),
                key=idempotency_key,
                move=body.model_dump(mode="json"),
                run=run,
                context=router.lambda_context,
            )
        text = str(stored["body"])
        version = int(stored["version"])  # every record carries it (records live 24 h)
        return Response(
            status_code=200,
            content_type=content_types.APPLICATION_JSON,
            body=text,
            headers={"ETag": etag(version)},
        )

    @router.get(
        "/games/<game_id>/events",
        summary="the events your seat may see, paginated",
        responses={200: {"description": "a page of events"}, **ERRORS},
        tags=["games"],
        security=[{"bearer": []}, {}],
    )
    def events(
        game_id: GameId,
        after: Annotated[
            int, DIGITS, Query(ge=-1, le=EVENTS_AFTER_MAX, description="events with seq > after")
        ] = -1,
        limit: Annotated[int, DIGITS, Query(ge=1, le=EVENTS_PAGE_MAX)] = 50,
        authorization: Authorization = None,
    ) -> EventsResponse:
        return service.events(game_id, bearer(authorization), after=after, limit=limit)

    @router.get(
        "/games/<game_id>/belief",
        summary="what an AI Harry believes on Harry's public evidence (any seat, spectators)",
        responses={200: {"description": "the belief map"}, **ERRORS},
        tags=["games"],
        security=[{"bearer": []}, {}],
    )
    def belief(
        game_id: GameId,
        turn: Annotated[
            int | None,
            DIGITS,
            Query(
                ge=1,
                le=MAX_TURN_QUERY,
                description="the map before Harry's move at this turn (a replay's step); none: now",
            ),
        ] = None,
        authorization: Authorization = None,
    ) -> BeliefResponse:
        return service.belief(game_id, bearer(authorization), turn)

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
