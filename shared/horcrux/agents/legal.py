"""The legal action set of each seat, as data, as a tool's JSON schema, and as a parser.

The `make_move` tool given to an LLM has an input schema that IS the legal action set of
this turn: `{"move": <one of the legal variants>}`. The Messages API refuses `anyOf` at
the top level of a tool's input schema, hence the one `move` property holding the union.
Its variants use the field names of `horcrux.models` (`type`, `location`, `ally`,
`locations`, `from_location`, `to_location`), so a valid input is a model dump.

Legality is not re-implemented: `parse_*_move` validates the shape with pydantic, then
runs `horcrux.engine.check` on a shadow `GameState` built from the seat's view (Harry's
view holds every public counter the engine checks for Harry; Voldemort's holds the truth).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import permutations
from typing import Any

from pydantic import TypeAdapter, ValidationError

from horcrux import engine
from horcrux.errors import HorcruxError, IllegalAction, NotYourTurn
from horcrux.models import (
    Ally,
    Attack,
    GameState,
    HarryAction,
    Pass,
    PlantDecoy,
    Relocate,
    Search,
    VoldemortAction,
    next_harry_turn,
)
from horcrux.rules import ALLY_NAMES, AllyName
from horcrux.views import HarryView, VoldemortView

TOOL_NAME = "make_move"
ALLY_ARITY: dict[AllyName, int] = {"ron": 2, "hermione": 1, "dumbledore": 1}

HarryMove = Search | Attack | Ally
VoldemortMove = Relocate | PlantDecoy | Pass

_HARRY_ADAPTER: TypeAdapter[HarryMove] = TypeAdapter(HarryAction)
_VOLDEMORT_ADAPTER: TypeAdapter[VoldemortMove] = TypeAdapter(VoldemortAction)


class UnparsableMove(HorcruxError):
    """A tool input that is not a move at all (wrong shape, missing or unknown fields)."""

    code = "unparsable_move"


# ---------------------------------------------------------------- the legal sets
@dataclass(frozen=True)
class LegalHarryActions:
    """What Harry may do now. Empty (`can_act` False) when it is not his turn."""

    can_act: bool
    locations: tuple[str, ...]
    attack: bool
    allies: dict[AllyName, int] = field(default_factory=dict)  # available ally -> arity

    @property
    def types(self) -> tuple[str, ...]:
        if not self.can_act:
            return ()
        return (
            ("search",) + (("attack",) if self.attack else ()) + (("ally",) if self.allies else ())
        )

    def moves(self) -> list[HarryMove]:
        """Every concrete legal move (Ron's two locations in both orders)."""
        if not self.can_act:
            return []
        out: list[HarryMove] = [Search(location=loc) for loc in self.locations]
        if self.attack:
            out += [Attack(location=loc) for loc in self.locations]
        for name, arity in self.allies.items():
            out += [Ally(ally=name, locations=p) for p in permutations(self.locations, arity)]
        return out


@dataclass(frozen=True)
class LegalVoldemortActions:
    """What Voldemort may do now. `pass` is always legal on his turn."""

    can_act: bool
    relocate_from: tuple[str, ...]
    relocate_to: tuple[str, ...]
    decoy_at: tuple[str, ...]

    @property
    def types(self) -> tuple[str, ...]:
        if not self.can_act:
            return ()
        kinds: list[str] = []
        if self.relocate_from and self.relocate_to:
            kinds.append("relocate")
        if self.decoy_at:
            kinds.append("plant_decoy")
        return (*kinds, "pass")

    def moves(self) -> list[VoldemortMove]:
        if not self.can_act:
            return []
        out: list[VoldemortMove] = [
            Relocate(from_location=a, to_location=b)
            for a in self.relocate_from
            for b in self.relocate_to
        ]
        out += [PlantDecoy(location=loc) for loc in self.decoy_at]
        out.append(Pass())
        return out


def legal_harry_actions(view: HarryView) -> LegalHarryActions:
    """Harry's legal action set given the public counters of his view."""
    can_act = view.phase == "harry" and not view.over
    allies = {
        name: ALLY_ARITY[name]
        for name in ALLY_NAMES
        if name in view.allies and view.allies[name].available
    }
    return LegalHarryActions(
        can_act=can_act,
        locations=tuple(view.rules.locations),
        attack=view.attacks_left > 0,
        allies=allies if can_act else {},
    )


def legal_voldemort_actions(view: VoldemortView) -> LegalVoldemortActions:
    """Voldemort's legal action set: relocate a Horcrux / plant a decoy onto a free location."""
    can_act = view.phase == "voldemort" and not view.over
    free = tuple(view.free_locations())
    has_reloc = can_act and view.relocations_left > 0 and bool(free)
    return LegalVoldemortActions(
        can_act=can_act,
        relocate_from=tuple(view.horcrux_locations) if has_reloc else (),
        relocate_to=free if has_reloc else (),
        decoy_at=free if can_act and view.decoys_left > 0 else (),
    )


# ---------------------------------------------------------------- tool schemas
def _const(value: str) -> dict[str, Any]:
    return {"type": "string", "const": value}


def _enum(values: tuple[str, ...], description: str) -> dict[str, Any]:
    return {"type": "string", "enum": list(values), "description": description}


def _variant(
    description: str, props: dict[str, dict[str, Any]], required: list[str]
) -> dict[str, Any]:
    return {
        "type": "object",
        "description": description,
        "properties": props,
        "required": required,
        "additionalProperties": False,
    }


_ALLY_HELP: dict[AllyName, str] = {
    "ron": "Ron searches two different locations with Harry's sensor (then rests)",
    "hermione": "Hermione searches one location with a sharper sensor (then rests)",
    "dumbledore": "Dumbledore reveals exactly horcrux/decoy/empty at one location (then rests)",
}


def _tool(description: str, variants: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "name": TOOL_NAME,
        "description": description,
        "input_schema": {
            "type": "object",
            "properties": {
                "move": {"anyOf": variants, "description": "exactly one of the legal moves"}
            },
            "required": ["move"],
            "additionalProperties": False,
        },
    }


def harry_tool_schema(view: HarryView) -> dict[str, Any]:
    """The `make_move` tool whose input schema is Harry's legal action set right now."""
    legal = legal_harry_actions(view)
    if not legal.can_act:
        raise NotYourTurn(f"Harry cannot act now (phase {view.phase})", expected=view.phase)
    locs = legal.locations
    variants = [
        _variant(
            "search one location with Harry's sensor",
            {"type": _const("search"), "location": _enum(locs, "where to search")},
            ["type", "location"],
        )
    ]
    if legal.attack:
        variants.append(
            _variant(
                f"attack one location (uses 1 of {view.attacks_left} attacks left)",
                {"type": _const("attack"), "location": _enum(locs, "where to attack")},
                ["type", "location"],
            )
        )
    for name, arity in legal.allies.items():
        items: dict[str, Any] = {
            "type": "array",
            "items": _enum(locs, "a location"),
            "minItems": arity,
            "maxItems": arity,
        }
        if arity > 1:
            items["uniqueItems"] = True
        variants.append(
            _variant(
                _ALLY_HELP[name],
                {"type": _const("ally"), "ally": _const(name), "locations": items},
                ["type", "ally", "locations"],
            )
        )
    return _tool("Make Harry's move for this turn: exactly one legal action.", variants)


def voldemort_tool_schema(view: VoldemortView) -> dict[str, Any]:
    """The `make_move` tool whose input schema is Voldemort's legal action set right now."""
    legal = legal_voldemort_actions(view)
    if not legal.can_act:
        raise NotYourTurn(f"Voldemort cannot act now (phase {view.phase})", expected=view.phase)
    variants: list[dict[str, Any]] = []
    if "relocate" in legal.types:
        variants.append(
            _variant(
                f"move a real Horcrux to a free location ({view.relocations_left} charges left)",
                {
                    "type": _const("relocate"),
                    "from_location": _enum(legal.relocate_from, "a location holding a Horcrux"),
                    "to_location": _enum(legal.relocate_to, "a free location"),
                },
                ["type", "from_location", "to_location"],
            )
        )
    if "plant_decoy" in legal.types:
        variants.append(
            _variant(
                f"plant a decoy at a free location ({view.decoys_left} charges left)",
                {
                    "type": _const("plant_decoy"),
                    "location": _enum(legal.decoy_at, "a free location"),
                },
                ["type", "location"],
            )
        )
    variants.append(_variant("do nothing this turn", {"type": _const("pass")}, ["type"]))
    return _tool("Make Voldemort's move for this turn: exactly one legal action.", variants)


# ---------------------------------------------------------------- parsing + legality
def _shadow_harry(view: HarryView) -> GameState:
    """A state that agrees with `view` on everything `engine.check` reads for Harry."""
    return GameState(
        rules=view.rules,
        seed=0,
        turn=view.turn,
        phase=view.phase,
        horcruxes=(),
        attacks_left=view.attacks_left,
        relocations_left=0,
        decoys_left=0,
        ally_ready_turn={
            n: next_harry_turn(view.turn, view.phase) + s.rest for n, s in view.allies.items()
        },
        ally_uses_left={n: s.uses_left for n, s in view.allies.items() if s.uses_left is not None},
        winner=view.winner,
        end_reason=view.end_reason,
    )


def _shadow_voldemort(view: VoldemortView) -> GameState:
    return _shadow_harry(view).model_copy(
        update={
            "horcruxes": view.horcrux_locations,
            "decoys": view.decoy_locations,
            "relocations_left": view.relocations_left,
            "decoys_left": view.decoys_left,
        }
    )


def _move_payload(tool_input: object) -> object:
    if not isinstance(tool_input, dict) or "move" not in tool_input:
        raise UnparsableMove(f"expected an object with a 'move' property, got {tool_input!r:.200}")
    extra = set(tool_input) - {"move"}
    if extra:
        raise UnparsableMove(f"unexpected properties beside 'move': {sorted(extra)}")
    return tool_input["move"]


def parse_harry_move(tool_input: object, view: HarryView) -> HarryMove:
    """The move in a `make_move` tool input, checked legal for `view`.

    Raises `UnparsableMove` if it is not a Harry action, or the engine's `IllegalAction`
    subclass (unknown location, no attacks left, ally unavailable, ...) if it is illegal.
    """
    try:
        move = _HARRY_ADAPTER.validate_python(_move_payload(tool_input))
    except ValidationError as exc:
        raise UnparsableMove(f"not a Harry move: {exc.errors(include_url=False)!r:.300}") from exc
    engine.check(_shadow_harry(view), move)
    return move


def parse_voldemort_move(tool_input: object, view: VoldemortView) -> VoldemortMove:
    """As `parse_harry_move`, for Voldemort (occupied target, no charges, ... are illegal)."""
    try:
        move = _VOLDEMORT_ADAPTER.validate_python(_move_payload(tool_input))
    except ValidationError as exc:
        raise UnparsableMove(
            f"not a Voldemort move: {exc.errors(include_url=False)!r:.300}"
        ) from exc
    engine.check(_shadow_voldemort(view), move)
    return move


def check_harry_move(move: HarryMove, view: HarryView) -> HarryMove:
    """`move` if the engine accepts it from Harry in `view`, else its `IllegalAction`."""
    engine.check(_shadow_harry(view), move)
    return move


def move_to_tool_input(move: HarryMove | VoldemortMove) -> dict[str, Any]:
    """The `make_move` input that stands for `move` (what a well-behaved model sends)."""
    return {"move": move.model_dump(mode="json")}


__all__ = [
    "TOOL_NAME",
    "IllegalAction",
    "LegalHarryActions",
    "LegalVoldemortActions",
    "UnparsableMove",
    "check_harry_move",
    "harry_tool_schema",
    "legal_harry_actions",
    "legal_voldemort_actions",
    "move_to_tool_input",
    "parse_harry_move",
    "parse_voldemort_move",
    "voldemort_tool_schema",
]
