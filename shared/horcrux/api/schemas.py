"""Request models of the HTTP API, and the error body (the OpenAPI document's schemas).

The response models are the service's own (`horcrux.service.models`): the routes return
them as the service built them, re-exported here for the OpenAPI document.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    TypeAdapter,
)

from horcrux.models import Ally, AnyAction, Attack, Pass, PlantDecoy, Relocate, Search
from horcrux.rules import ALLY_NAMES, LOCATIONS
from horcrux.service.models import (
    MAX_SEED,
    BeliefResponse,
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

# The engine's actions default `type` (so `Search(location=...)` works); a request must
# name it, and the OpenAPI document says so: one request model per action, `type` required.
# The document also states what the engine checks itself (its own 422 names the problem):
# a location is one of the map's, and an ally takes its own number of distinct locations.
LocationName = Annotated[
    str,
    Field(json_schema_extra={"enum": list(LOCATIONS)}, description="a location of the map"),
]


def _ally_arity(schema: dict[str, Any]) -> None:
    """Ron searches two different locations, Hermione and Dumbledore one."""
    schema["oneOf"] = [
        {
            "properties": {
                "ally": {"const": "ron"},
                "locations": {"minItems": 2, "maxItems": 2, "uniqueItems": True},
            }
        },
        {
            "properties": {
                "ally": {"enum": [a for a in ALLY_NAMES if a != "ron"]},
                "locations": {"minItems": 1, "maxItems": 1},
            }
        },
    ]


class SearchMove(Search):
    type: Literal["search"]
    location: LocationName


class AttackMove(Attack):
    type: Literal["attack"]
    location: LocationName


class AllyMove(Ally):
    model_config = ConfigDict(json_schema_extra=_ally_arity)

    type: Literal["ally"]
    locations: tuple[LocationName, ...] = Field(min_length=1, max_length=2)


class RelocateMove(Relocate):
    type: Literal["relocate"]
    from_location: LocationName
    to_location: LocationName


class PlantDecoyMove(PlantDecoy):
    type: Literal["plant_decoy"]
    location: LocationName


class PassMove(Pass):
    type: Literal["pass"]


MoveRequest = Annotated[
    SearchMove | AttackMove | AllyMove | RelocateMove | PlantDecoyMove | PassMove,
    Field(discriminator="type"),
]
"""A move: one Harry action (search, attack, ally) or one Voldemort action (relocate,
plant_decoy, pass), exactly as in docs/RULES.md; `type` is required."""

_ACTION: TypeAdapter[Any] = TypeAdapter(
    Annotated[Search | Attack | Ally | Relocate | PlantDecoy | Pass, Field(discriminator="type")]
)


def as_action(move: BaseModel) -> AnyAction:
    """The engine's action for a validated move request (its own class, not the request's)."""
    action: AnyAction = _ACTION.validate_python(move.model_dump())
    return action


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


HARRY_SEAT_BRAINS = ("gated", "naive", "planner", "planner-window", "seed-heuristic")
"""The Harry brains a seat may name without an LLM key (`llm` needs one; a test keeps this
list equal to the registry's)."""
VOLDEMORT_SEAT_BRAINS = (
    "ambush",
    "decoy-heavy",
    "delayed",
    "family",
    "late",
    "mirror",
    "passive",
    "random",
    "reference",
    "shadow",
)
"""The Voldemort brains a seat may name without an LLM key."""


def _given(field: str) -> dict[str, Any]:
    """The schema of an object whose `field` is there and not null."""
    return {"required": [field], "properties": {field: {"type": "string"}}}


def _seat_kinds(schema: dict[str, Any]) -> None:
    """A person's seat names no brain; an AI's seat takes no name and no player key."""
    schema["oneOf"] = [
        {"properties": {"kind": {"const": "human"}}, "not": _given("brain")},
        {
            "properties": {"kind": {"const": "ai"}},
            "not": {"anyOf": [_given("name"), _given("player_key")]},
        },
    ]


def _brain_field(names: tuple[str, ...]) -> Any:
    return Field(
        default=None,
        min_length=1,
        max_length=64,
        pattern=r"^[A-Za-z0-9_.:-]+$",
        description="an AI seat's brain: one of the names the pattern lists (default planner "
        "for Harry, reference for Voldemort); a brain's parameter as NAME:PARAM (`naive:16`) "
        "and the LLM brains (with a key configured) are accepted too (docs/API.md)",
        json_schema_extra={"pattern": f"^(?:{'|'.join(names)})$"},
    )


class HarrySeatRequest(SeatRequest):
    model_config = ConfigDict(json_schema_extra=_seat_kinds)

    brain: str | None = _brain_field(HARRY_SEAT_BRAINS)


class VoldemortSeatRequest(SeatRequest):
    model_config = ConfigDict(json_schema_extra=_seat_kinds)

    brain: str | None = _brain_field(VOLDEMORT_SEAT_BRAINS)


def _free_seat(schema: dict[str, Any]) -> None:
    """With two people, the creator takes Harry's seat: Voldemort's is free, and its name
    and player key are the joining player's (not the creator's to give)."""
    human = {"properties": {"kind": {"const": "human"}}}
    schema["not"] = {
        "properties": {
            "harry": human,
            "voldemort": {**human, "anyOf": [_given("name"), _given("player_key")]},
        }
    }


class SeatsRequest(_Request):
    model_config = ConfigDict(json_schema_extra=_free_seat)

    harry: HarrySeatRequest = Field(description="who plays Harry")
    voldemort: VoldemortSeatRequest = Field(description="who plays Voldemort")


def _whole_number(value: Any) -> Any:
    """A JSON number with no fraction as the integer it is (`7.0` is JSON Schema's integer
    7); anything else as given, for the strict check."""
    if isinstance(value, float) and value.is_integer() and abs(value) <= 2**63:
        return int(value)
    return value


class CreateGameRequest(_Request):
    seats: SeatsRequest
    rules: Literal["classic", "standard"] = "standard"
    seed: Annotated[StrictInt | None, BeforeValidator(_whole_number)] = Field(
        default=None,
        ge=0,
        le=MAX_SEED,
        description="an integer up to 2**53-1 (a JSON number with no fraction, as JSON "
        "Schema's `integer`: 7 or 7.0; never a string or a boolean); omit to draw one "
        "from `secrets`",
    )
    private: StrictBool = Field(
        default=False,
        description="true: the game is not listed; joining a seat needs the `invite` code "
        "the create response shows once",
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
    subject: str = Field(
        default="note",
        max_length=32,
        description="what it acts on: relocates, immediate, plant_top, plant_blind, threshold, "
        "jitter, "
        "near, hesitate, attack_near, timing (anything else is a 422 not_actionable)",
    )
    rate: StrictFloat | None = Field(
        default=None,
        ge=0,
        le=1,
        description="the rate, threshold or knob value it asserts (a number, not a boolean)",
    )


__all__ = [
    "AllyMove",
    "AttackMove",
    "BeliefResponse",
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
    "PassMove",
    "PlantDecoyMove",
    "RelocateMove",
    "ReplayResponse",
    "SearchMove",
    "SeatPublic",
    "SeatRequest",
    "SeatsRequest",
    "as_action",
]
