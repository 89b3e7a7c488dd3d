"""Routes about the API itself (`/brains`) on a Powertools `Router`: what a client needs to
offer its choices (the browser client's new-game form)."""

from __future__ import annotations

from aws_lambda_powertools.event_handler.router import APIGatewayHttpRouter
from pydantic import Field

from horcrux.agents.base import HARRY_BRAINS, VOLDEMORT_BRAINS, Registry
from horcrux.api.http import ERRORS
from horcrux.service.models import (
    DEFAULT_HARRY_BRAIN,
    DEFAULT_VOLDEMORT_BRAIN,
    ServiceResponse,
)


class BrainInfo(ServiceResponse):
    name: str = Field(description="the spec's name (`name` or `name:param` on create)")
    description: str = Field(description="one line: what the brain does")
    default: bool = Field(description="the brain an AI seat gets when the request names none")


class BrainsResponse(ServiceResponse):
    harry: list[BrainInfo]
    voldemort: list[BrainInfo]


def _listed(registry: Registry[object], default: str) -> list[BrainInfo]:
    out = []
    for name in registry.names(seat_only=True):  # evaluation-only brains (oracle) are not
        entry, _ = registry.entry(name, for_seat=True)
        out.append(BrainInfo(name=name, description=entry.description, default=name == default))
    return out


def brain_catalogue() -> BrainsResponse:
    """The brains `POST /games` accepts for each seat (from the registries), one line each."""
    return BrainsResponse(
        harry=_listed(HARRY_BRAINS, DEFAULT_HARRY_BRAIN),  # type: ignore[arg-type]
        voldemort=_listed(VOLDEMORT_BRAINS, DEFAULT_VOLDEMORT_BRAIN),  # type: ignore[arg-type]
    )


def meta_router() -> APIGatewayHttpRouter:
    router = APIGatewayHttpRouter()  # type: ignore[no-untyped-call]

    @router.get(
        "/brains",
        summary="the AI brains an AI seat may take, per seat, with a one-line description",
        responses={200: {"description": "the brains"}, **ERRORS},
        tags=["meta"],
    )
    def brains() -> BrainsResponse:
        return brain_catalogue()

    return router


__all__ = ["BrainInfo", "BrainsResponse", "brain_catalogue", "meta_router"]
