"""The operator's memory routes (`/memory...`) on a Powertools `Router`."""

from __future__ import annotations

from typing import Annotated, Any

from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from horcrux.api.http import ERRORS, Authorization, bearer
from horcrux.api.schemas import CorrectionRequest
from horcrux.service import GameService, InvalidRequest
from horcrux.settings import OperatorSettings
from horcrux.store.port import ScopeStore

AgentSpec = Annotated[str, Path(min_length=1, max_length=128, description="the AI Harry's spec")]
OpponentId = Annotated[
    str, Query(min_length=1, max_length=128, description="a Voldemort brain or player id")
]


def memory_router(service: GameService, operator: OperatorSettings) -> APIGatewayHttpRouter:
    """Inspect, correct and forget a scope's cross-game memory (operator token)."""
    router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]

    def scope_store() -> ScopeStore:
        store = service.scope_store
        if store is None:
            raise InvalidRequest("this store keeps no cross-game memory")
        return store

    @router.get(
        "/memory/<agent>",
        summary="a scope's cross-game memory, with validity intervals (operator token)",
        responses={200: {"description": "the memory"}, **ERRORS},
        tags=["memory"],
        security=[{"bearer": []}],
    )
    def get_memory(
        agent: AgentSpec, opponent: OpponentId, authorization: Authorization = None
    ) -> dict[str, Any]:
        from horcrux.echo import ops

        ops.authorize(bearer(authorization), agent, operator)
        return ops.inspect(scope_store(), agent, opponent)

    @router.post(
        "/memory/corrections",
        summary="add an operator correction or preference to a scope (operator token)",
        responses={200: {"description": "the scope after it"}, **ERRORS},
        tags=["memory"],
        security=[{"bearer": []}],
    )
    def post_correction(
        body: Annotated[CorrectionRequest, Body()], authorization: Authorization = None
    ) -> dict[str, Any]:
        from horcrux.echo import ops

        ops.authorize(bearer(authorization), body.agent, operator)
        return ops.correct(
            scope_store(),
            body.agent,
            body.opponent,
            wrong=body.wrong,
            right=body.right,
            text=body.text,
            subject=body.subject,
            rate=body.rate,
            kind=body.kind,
        )

    @router.delete(
        "/memory/<agent>",
        summary="forget a scope: its memory and recent results (operator token)",
        responses={200: {"description": "what was deleted"}, **ERRORS},
        tags=["memory"],
        security=[{"bearer": []}],
    )
    def delete_memory(
        agent: AgentSpec, opponent: OpponentId, authorization: Authorization = None
    ) -> dict[str, Any]:
        from horcrux.echo import ops

        ops.authorize(bearer(authorization), agent, operator)
        return ops.delete(scope_store(), agent, opponent)

    return router


__all__ = ["memory_router"]
