"""A player's own memory (`/players/{player}/memory`) on a Powertools `Router`: what the AI
has learned about you as an opponent, and forgetting it (docs/API.md, "Your memory").

The caller is the player whose key is sent as `Authorization: Bearer <player key>` (the
`player_key` a create or join answered): `me` in the path is that player; a `player:<16
hex>` id in the path must be theirs (403 otherwise); no key, 401. Your memory is every
scope kept about you: one per AI Harry that reads memory (`agent`), opponent your player
id. GET shows each scope's items in the same sentences as the operator's view; DELETE
forgets every one of them (`ops.delete`: the memory and its recent results; the audit
trail records when and by whom, never what), so the next game starts from the default.
Nothing else is touched: no other player's scope, no game's events."""

from __future__ import annotations

import functools
import re
import time
from typing import TYPE_CHECKING, Annotated

from aws_lambda_powertools.event_handler.openapi.params import Header, Path
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from pydantic import Field

from horcrux.api.http import ERRORS, bearer
from horcrux.errors import HorcruxError
from horcrux.lazy import lazy_import
from horcrux.service import GameService
from horcrux.service.models import PLAYER_KEY_RULE, ServiceResponse, player_id

if TYPE_CHECKING:
    from horcrux.echo import ops
    from horcrux.store.port import ScopeStore
else:  # the memory code (toml config, models) loads at the first memory call
    ops = lazy_import("horcrux.echo.ops")

# a player key's shape, as the API's `player_key` (PLAYER_KEY_RULE)
KEY = re.compile(r"[A-Za-z0-9_-]{22,128}")
PlayerRef = Annotated[
    str,
    Path(
        pattern=r"^(me|player:[0-9a-f]{16})$",
        description="`me` (the player of the key sent), or your player id `player:<16 hex>`",
    ),
]
PlayerKeyHeader = Annotated[
    str | None,
    Header(description="`Bearer <your player key>`: the `player_key` a create or join answered"),
]
SECURITY: list[dict[str, list[str]]] = [{"bearer": []}]


class PlayerUnauthorized(HorcruxError):
    code = "unauthorized"


class PlayerForbidden(HorcruxError):
    code = "forbidden"


class MemoryItemWords(ServiceResponse):
    id: str = Field(description="the item's id")
    subject: str = Field(description="what it is about")
    text: str = Field(description="what the AI remembers, in a sentence")


class PlayerScope(ServiceResponse):
    agent: str = Field(description="the AI Harry that remembers (a brain that reads memory)")
    games: int = Field(description="games of yours it has learned from")
    last_game: str | None = Field(description="the last of them")
    items: list[MemoryItemWords]


class PlayerMemoryResponse(ServiceResponse):
    player: str = Field(description="your player id (`player:<16 hex>`)")
    scopes: list[PlayerScope] = Field(description="one per AI Harry that remembers you")


class ForgottenScope(ServiceResponse):
    agent: str
    deleted: int = Field(description="stored items deleted (0: there was nothing)")


class PlayerForgetResponse(ServiceResponse):
    player: str = Field(description="your player id (`player:<16 hex>`)")
    forgotten: list[ForgottenScope]


@functools.cache
def memory_agents() -> tuple[str, ...]:
    """The AI Harrys that keep memory of their opponents (their start-up reads it)."""
    from horcrux.agents import HARRY_BRAINS
    from horcrux.echo.persist import reads_memory

    return tuple(n for n in HARRY_BRAINS.names() if reads_memory(n))


def caller(authorization: str | None, player: str) -> str:
    """The caller's player id (`player:<16 hex>`): 401 without a player key (or with
    something that is no key), 403 when `player` names another player."""
    key = bearer(authorization)
    if not key:
        raise PlayerUnauthorized(
            "your memory needs your player key: Authorization: Bearer <player_key>"
        )
    if not KEY.fullmatch(key):
        raise PlayerUnauthorized(f"that is not a player key: {PLAYER_KEY_RULE}")
    mine = f"player:{player_id(key)}"
    if player not in ("me", mine):
        raise PlayerForbidden(f"this key is not {player}'s: it reads and forgets only {mine}")
    return mine


def player_router(service: GameService) -> APIGatewayHttpRouter:
    """Read and forget your own memory with your player key."""
    router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]

    def scope_store() -> ScopeStore | None:
        return service.scope_store

    @router.get(
        "/players/<player>/memory",
        summary="what the AI remembers about you (your player key)",
        responses={200: {"description": "your memory, in sentences"}, **ERRORS},
        tags=["players"],
        security=SECURITY,
    )
    def get_player_memory(
        player: PlayerRef, authorization: PlayerKeyHeader = None
    ) -> PlayerMemoryResponse:
        me = caller(authorization, player)
        store = scope_store()
        scopes = []
        for agent in memory_agents() if store is not None else ():
            view = ops.inspect(store, agent, me)  # type: ignore[arg-type]
            scopes.append(
                PlayerScope(
                    agent=agent,
                    games=view["games"],
                    last_game=view["last_game"],
                    items=[
                        MemoryItemWords(id=i["id"], subject=i["subject"], text=i["text"])
                        for i in view["items"]
                    ],
                )
            )
        return PlayerMemoryResponse(player=me, scopes=scopes)

    @router.delete(
        "/players/<player>/memory",
        summary="forget what the AI remembers about you (your player key)",
        responses={200: {"description": "what was forgotten"}, **ERRORS},
        tags=["players"],
        security=SECURITY,
    )
    def forget_player_memory(
        player: PlayerRef, authorization: PlayerKeyHeader = None
    ) -> PlayerForgetResponse:
        me = caller(authorization, player)
        store = scope_store()
        forgotten = []
        for agent in memory_agents() if store is not None else ():
            done = ops.delete(store, agent, me, who=me, at=time.time())  # type: ignore[arg-type]
            forgotten.append(ForgottenScope(agent=agent, deleted=done["deleted"]))
        return PlayerForgetResponse(player=me, forgotten=forgotten)

    return router


__all__ = [
    "PlayerForgetResponse",
    "PlayerMemoryResponse",
    "memory_agents",
    "player_router",
]
