"""Request models of the HTTP API, and the error body (the OpenAPI document's schemas).

The response models are the service's own (`horcrux.service.models`): the routes return
them as the service built them, re-exported here for the OpenAPI document.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from horcrux.models import Ally, Attack, Pass, PlantDecoy, Relocate, Search
from horcrux.service.models import (
    CreatedResponse,
    EventsResponse,
    GameResponse,
    JoinedResponse,
    JoinRequest,
    LobbyGame,
    LobbyResponse,
    MoveResponse,
    ReplayResponse,
    SeatPublic,
    SeatRequest,
)

MoveRequest = Annotated[
    Search | Attack | Ally | Relocate | PlantDecoy | Pass, Field(discriminator="type")
]
"""A move: one Harry action (search, attack, ally) or one Voldemort action (relocate,
plant_decoy, pass), exactly as in docs/RULES.md."""


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SeatsRequest(_Request):
    harry: SeatRequest = Field(description="who plays Harry")
    voldemort: SeatRequest = Field(description="who plays Voldemort")


class CreateGameRequest(_Request):
    seats: SeatsRequest
    rules: Literal["classic", "standard"] = "standard"
    seed: int | None = Field(
        default=None, ge=0, le=2**63 - 1, description="omit to draw one from `secrets`"
    )


class ErrorResponse(BaseModel):
    """Every error's body; a few codes add documented fields (`to_move`, `game`, `detail`)."""

    model_config = ConfigDict(extra="allow")

    error: str = Field(description="a stable code (docs/API.md, the error map)")
    message: str = Field(description="what is wrong, in words")


class CorrectionRequest(BaseModel):
    """`POST /memory/corrections`: an operator's correction (or preference) for a scope.

    Free text is stored as data: length-limited, and an LLM only ever sees it cleaned and
    labelled as memory inside its context, never as an instruction."""

    model_config = ConfigDict(extra="forbid")

    agent: str = Field(min_length=1, max_length=128, description="the AI Harry's spec")
    opponent: str = Field(min_length=1, max_length=128, description="Voldemort brain or player")
    wrong: str = Field(default="", max_length=200)
    right: str = Field(default="", max_length=200)
    text: str = Field(default="", max_length=200)
    kind: Literal["correction", "preference"] = "correction"
    subject: Literal["relocates", "immediate", "plant_top", "note"] = "note"
    rate: float | None = Field(default=None, ge=0, le=1, description="the rate it asserts")


__all__ = [
    "CorrectionRequest",
    "CreateGameRequest",
    "CreatedResponse",
    "ErrorResponse",
    "EventsResponse",
    "GameResponse",
    "JoinRequest",
    "JoinedResponse",
    "LobbyGame",
    "LobbyResponse",
    "MoveRequest",
    "MoveResponse",
    "ReplayResponse",
    "SeatPublic",
    "SeatRequest",
    "SeatsRequest",
]
