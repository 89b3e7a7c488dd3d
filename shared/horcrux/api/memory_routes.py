"""The operator's memory routes (`/memory...`) on a Powertools `Router` (docs/ECHO.md).

Reads (GET) take the operator's or the read-only operator's token; writes take the
operator's. Every route names a scope (`agent` in the path, `?opponent=`), checked by
`ops.check_scope` (422 `unknown_scope`); every error is a 4xx naming the problem."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter

from horcrux.api.http import (
    ERRORS,
    Authorization,
    bearer,
    header,
    request_method,
    request_path,
)
from horcrux.api.schemas import CorrectionRequest
from horcrux.lazy import lazy_import
from horcrux.service import GameService, InvalidRequest
from horcrux.settings import OperatorSettings
from horcrux.store.port import ScopeStore

if TYPE_CHECKING:
    from horcrux.echo import ops
else:  # the memory code (toml config, models) loads at the first memory call
    ops = lazy_import("horcrux.echo.ops")

AgentSpec = Annotated[str, Path(min_length=1, max_length=128, description="the AI Harry's spec")]
ItemId = Annotated[str, Path(min_length=1, max_length=64, description="a memory item's id")]
OpponentId = Annotated[
    str, Query(min_length=1, max_length=128, description="a Voldemort brain or player id")
]
SearchQuery = Annotated[
    str, Query(min_length=1, max_length=200, description="your query (hybrid recall, top 10)")
]
SECURITY: list[dict[str, list[str]]] = [{"bearer": []}]
F = TypeVar("F", bound=Callable[..., Any])


def memory_guard(operator: OperatorSettings) -> Callable[[Mapping[str, Any]], None]:
    """The check the resolver runs before validating a `/memory...` request: the
    operator's token first (401 without one, 403 with another), so that a caller without
    it learns nothing of a route's body or parameters (a bad body is then a 422)."""

    def guard(event: Mapping[str, Any]) -> None:
        path = request_path(event)
        if path != "/memory" and not path.startswith("/memory/"):
            return
        write = request_method(event) not in ("GET", "HEAD")
        ops.authenticate(bearer(header(event, "authorization")), operator, write=write)

    return guard


def memory_router(service: GameService, operator: OperatorSettings) -> APIGatewayHttpRouter:
    """Inspect, search, export, correct and forget a scope's cross-game memory."""
    router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]

    def scope_store() -> ScopeStore:
        store = service.scope_store
        if store is None:
            raise InvalidRequest("this store keeps no cross-game memory")
        return store

    def writer(authorization: str | None, agent: str) -> dict[str, Any]:
        token = bearer(authorization)
        ops.authorize(token, agent, operator, write=True)
        return {"who": ops.actor(token), "at": time.time()}

    def reader(authorization: str | None, agent: str) -> None:
        ops.authorize(bearer(authorization), agent, operator)

    def route(method: str, path: str, summary: str) -> Callable[[F], F]:
        decorator: Callable[[F], F] = getattr(router, method)(
            path,
            summary=summary,
            responses={200: {"description": "the answer"}, **ERRORS},
            tags=["memory"],
            security=SECURITY,
        )
        return decorator

    @route("get", "/memory/<agent>", "a scope's memory, quarantine, counters, conflicts")
    def get_memory(
        agent: AgentSpec, opponent: OpponentId, authorization: Authorization = None
    ) -> dict[str, Any]:
        reader(authorization, agent)
        return ops.inspect(scope_store(), agent, opponent)

    @route("get", "/memory/<agent>/search", "hybrid recall with your query: top 10, scored")
    def search_memory(
        agent: AgentSpec, opponent: OpponentId, q: SearchQuery, authorization: Authorization = None
    ) -> dict[str, Any]:
        reader(authorization, agent)
        return ops.search(scope_store(), agent, opponent, q)

    @route("get", "/memory/<agent>/export", "the whole scope as stored, with its audit trail")
    def export_memory(
        agent: AgentSpec, opponent: OpponentId, authorization: Authorization = None
    ) -> dict[str, Any]:
        reader(authorization, agent)
        return ops.export(scope_store(), agent, opponent)

    @route("get", "/memory/<agent>/audit", "the audit trail of the operator's writes")
    def audit_memory(
        agent: AgentSpec, opponent: OpponentId, authorization: Authorization = None
    ) -> dict[str, Any]:
        reader(authorization, agent)
        ops.check_scope(agent, opponent)
        return ops.audit_trail(scope_store(), agent, opponent)

    @route("get", "/memory/<agent>/items/<item_id>", "one item (or a quarantined one)")
    def get_item(
        agent: AgentSpec, item_id: ItemId, opponent: OpponentId, authorization: Authorization = None
    ) -> dict[str, Any]:
        reader(authorization, agent)
        return ops.get_item(scope_store(), agent, opponent, item_id)

    @route("get", "/memory/<agent>/items/<item_id>/history", "an item's lineage and audit")
    def item_history(
        agent: AgentSpec, item_id: ItemId, opponent: OpponentId, authorization: Authorization = None
    ) -> dict[str, Any]:
        reader(authorization, agent)
        return ops.history(scope_store(), agent, opponent, item_id)

    @route("delete", "/memory/<agent>/items/<item_id>", "delete one item (operator)")
    def delete_item(
        agent: AgentSpec, item_id: ItemId, opponent: OpponentId, authorization: Authorization = None
    ) -> dict[str, Any]:
        return ops.delete_item(
            scope_store(), agent, opponent, item_id, **writer(authorization, agent)
        )

    @route(
        "post",
        "/memory/<agent>/items/<item_id>/<verdict>",
        "confirm or retire a correction the evidence contradicts (operator)",
    )
    def judge_correction(
        agent: AgentSpec,
        item_id: ItemId,
        verdict: Annotated[Literal["confirm", "retire"], Path()],
        opponent: OpponentId,
        authorization: Authorization = None,
    ) -> dict[str, Any]:
        done = ops.confirm if verdict == "confirm" else ops.retire
        return done(scope_store(), agent, opponent, item_id, **writer(authorization, agent))

    @route(
        "post",
        "/memory/<agent>/quarantine/<item_id>/<action>",
        "restore a quarantined item into the memory, or purge it (operator)",
    )
    def review_quarantine(
        agent: AgentSpec,
        item_id: ItemId,
        action: Annotated[Literal["restore", "purge"], Path()],
        opponent: OpponentId,
        authorization: Authorization = None,
    ) -> dict[str, Any]:
        return ops.review_quarantine(
            scope_store(), agent, opponent, item_id, action, **writer(authorization, agent)
        )

    @route("post", "/memory/corrections", "add a correction or preference (operator)")
    def post_correction(
        body: Annotated[CorrectionRequest, Body()], authorization: Authorization = None
    ) -> dict[str, Any]:
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
            **writer(authorization, body.agent),
        )

    @route("delete", "/memory/<agent>", "forget a scope: memory and recent results (operator)")
    def delete_memory(
        agent: AgentSpec, opponent: OpponentId, authorization: Authorization = None
    ) -> dict[str, Any]:
        return ops.delete(scope_store(), agent, opponent, **writer(authorization, agent))

    return router


__all__ = ["memory_guard", "memory_router"]
