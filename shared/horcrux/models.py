"""Actions, observations, events and the true game state (pydantic v2, immutable)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from horcrux.rules import AllyName, RuleSet

Seat = Literal["harry", "voldemort"]
Phase = Literal["harry", "voldemort", "over"]
Signal = Literal["positive", "negative"]
AttackResult = Literal["destroyed", "decoy", "empty"]
Reveal = Literal["horcrux", "decoy", "empty"]
Outcome = Literal["positive", "negative", "destroyed", "decoy", "empty", "horcrux"]


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


# ---------------------------------------------------------------- Harry's actions
class Search(_Frozen):
    type: Literal["search"] = "search"
    location: str


class Attack(_Frozen):
    type: Literal["attack"] = "attack"
    location: str


class Ally(_Frozen):
    """An ally acts instead of Harry: Ron searches two locations, the others one."""

    type: Literal["ally"] = "ally"
    ally: AllyName
    locations: tuple[str, ...] = Field(min_length=1, max_length=2)

    @model_validator(mode="after")
    def _arity(self) -> Ally:
        want = 2 if self.ally == "ron" else 1
        if len(self.locations) != want:
            raise ValueError(f"{self.ally} takes {want} location(s), got {len(self.locations)}")
        return self


HarryAction = Annotated[Search | Attack | Ally, Field(discriminator="type")]


# ---------------------------------------------------------------- Voldemort's actions
class Relocate(_Frozen):
    type: Literal["relocate"] = "relocate"
    from_location: str
    to_location: str


class PlantDecoy(_Frozen):
    type: Literal["plant_decoy"] = "plant_decoy"
    location: str


class Pass(_Frozen):
    type: Literal["pass"] = "pass"


VoldemortAction = Annotated[Relocate | PlantDecoy | Pass, Field(discriminator="type")]
AnyAction = Search | Attack | Ally | Relocate | PlantDecoy | Pass


# ---------------------------------------------------------------- results
class Observation(_Frozen):
    """What one look at one location told Harry.

    kind `search`: outcome positive/negative from `sensor` (`harry` or `hermione`);
    kind `attack`: destroyed/decoy/empty; kind `reveal` (Dumbledore): horcrux/decoy/empty.
    """

    location: str
    kind: Literal["search", "attack", "reveal"]
    outcome: Outcome
    sensor: Literal["harry", "hermione"] | None = None


class GameStarted(_Frozen):
    type: Literal["game_started"] = "game_started"
    seq: int = 0
    turn: int = 0
    rules: RuleSet
    seed: int
    horcruxes: tuple[str, ...]


class HarryMoved(_Frozen):
    type: Literal["harry_moved"] = "harry_moved"
    seq: int
    turn: int
    action: HarryAction
    observations: tuple[Observation, ...]
    winner: Seat | None = None
    end_reason: str | None = None


class VoldemortMoved(_Frozen):
    type: Literal["voldemort_moved"] = "voldemort_moved"
    seq: int
    turn: int
    action: VoldemortAction
    winner: Seat | None = None
    end_reason: str | None = None


Event = Annotated[GameStarted | HarryMoved | VoldemortMoved, Field(discriminator="type")]


class HarryRecord(_Frozen):
    """One of Harry's turns as Harry knows it: his action and what it told him."""

    turn: int
    action: HarryAction
    observations: tuple[Observation, ...]


class GameState(_Frozen):
    """The whole truth of one game at one moment. Only the engine changes it."""

    rules: RuleSet
    seed: int
    turn: int = 1
    phase: Phase = "harry"
    seq: int = 0
    horcruxes: tuple[str, ...]
    decoys: tuple[str, ...] = ()
    destroyed: int = 0
    attacks_left: int
    relocations_left: int
    decoys_left: int
    ally_ready_turn: dict[AllyName, int] = Field(default_factory=dict)
    ally_uses_left: dict[AllyName, int] = Field(default_factory=dict)
    history: tuple[HarryRecord, ...] = ()
    winner: Seat | None = None
    end_reason: str | None = None

    @property
    def over(self) -> bool:
        return self.phase == "over"

    @property
    def horcruxes_left(self) -> int:
        return self.rules.horcruxes - self.destroyed

    def ally_rest(self, ally: AllyName) -> int:
        """Harry's turns still to come on which `ally` cannot act (0: on his next turn, if
        uses remain). The same count in every phase, so both seats' views agree."""
        return ally_rest(self.ally_ready_turn.get(ally, 0), self.turn, self.phase)


def next_harry_turn(turn: int, phase: Phase) -> int:
    """The turn of Harry's next action: this one while it is his phase, else the next."""
    return turn if phase == "harry" else turn + 1


def ally_rest(ready_turn: int, turn: int, phase: Phase) -> int:
    """Harry's turns still to come before the turn `ready_turn` on which an ally acts again.

    An ally used on turn t with a rest of r is ready on turn t + r + 1: Harry's turns
    t + 1 .. t + r are its rest. Voldemort, who acts between Harry's turns t and t + 1,
    sees the same r as Harry on turn t + 1."""
    return max(0, ready_turn - next_harry_turn(turn, phase))
