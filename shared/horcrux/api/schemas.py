"""Request and response models of the HTTP API (they are the OpenAPI document's schemas).

Views and events are typed loosely (`dict`) on purpose: what a seat may see is decided by
`horcrux.views` / `horcrux.service.project_event`, and a response model must never add or
drop a field of a view.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from horcrux.models import Ally, Attack, Pass, PlantDecoy, Relocate, Search, Seat
from horcrux.service import SeatRequest

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


class _Response(BaseModel):
    model_config = ConfigDict(extra="allow")


class ErrorResponse(_Response):
    error: str = Field(description="a stable code (docs/API.md, the error map)")
    message: str = Field(description="what is wrong, in words")


class SeatPublic(_Response):
    kind: Literal["human", "ai"]
    taken: bool
    brain: str | None = None


class GameResponse(_Response):
    game_id: str
    version: int
    status: Literal["open", "active", "over"]
    rules: str
    turn: int
    phase: Literal["harry", "voldemort", "over"]
    to_move: Seat | None
    your_seat: Seat | None
    seats: dict[str, SeatPublic]
    winner: Seat | None = None
    end_reason: str | None = None
    view: dict[str, Any] = Field(description="horcrux.views.view_for(state, your_seat)")
    legal: dict[str, Any] | None = Field(
        default=None, description="your legal action set, when it is your turn"
    )


class CreatedResponse(_Response):
    game_id: str
    seat: Seat | None = Field(description="the seat the creator holds (None: AI vs AI)")
    token: str | None = Field(description="the seat's bearer token, shown only this once")
    game: GameResponse


class JoinedResponse(CreatedResponse):
    seat: Seat
    token: str


class LobbyGame(_Response):
    game_id: str
    rules: str
    open_seats: list[Seat]
    created_at: float


class LobbyResponse(_Response):
    games: list[LobbyGame]
    cursor: str | None = Field(description="pass back as ?cursor= for the next page")


class MoveResponse(_Response):
    game_id: str
    seat: Seat
    event: dict[str, Any] | None = Field(description="your move's event, as you may see it")
    game: GameResponse


class EventsResponse(_Response):
    game_id: str
    your_seat: Seat | None
    events: list[dict[str, Any]]
    next_after: int | None = Field(description="pass back as ?after= (None: no more events)")


class ReplayResponse(_Response):
    game_id: str
    replay: dict[str, Any] = Field(description="horcrux.views.Replay: every event + the truth")
    belief_history: list[dict[str, Any]] = Field(
        description="AI Harry's belief per turn: entropy (bits) and the top-3 locations"
    )


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
