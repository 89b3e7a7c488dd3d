"""The compressed tier's action space: the few moves worth weighing, computed in Layer 2.

A `make_move` tool whose schema is every legal move names the 15 locations once per kind
of move (search, attack, each ally): about 650 of the ~720 tokens a small model reads for
a ~40-token working memory. The compressed tier instead offers the moves the planner's
own computation singles out, as one string enum (`"attack Hogwarts"`, `"search Forest"`):

- the planner's move for this state;
- a search of each of the `TOP_N` likeliest locations and of the most informative one;
- an attack on the likeliest location (while attacks are left);
- Hermione or Dumbledore at the likeliest location, when ready.

They are listed in a fixed order (kind, then board order), never by the planner's
preference, so a model that always picks the first offer does not agree with the planner
by construction. Everything here is a pure function of the view and the planner's map;
the LLM only chooses among what the map computed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from horcrux.agents.legal import (
    TOOL_NAME,
    UnparsableMove,
    check_harry_move,
    legal_harry_actions,
)
from horcrux.belief import ties
from horcrux.errors import NotYourTurn
from horcrux.memory.context import location_name, resolve_location
from horcrux.models import Ally, Attack, Pass, PlantDecoy, Relocate, Search
from horcrux.views import HarryView

if TYPE_CHECKING:
    from horcrux.agents.planner import PlannerHarry

HarryMove = Search | Attack | Ally

TOP_N = 3
_KIND_ORDER = {"search": 0, "attack": 1, "hermione": 2, "ron": 3, "dumbledore": 4}


def move_label(move: HarryMove | Relocate | PlantDecoy | Pass) -> str:
    """A move as the prompts and traces write it: `search Hogwarts`, `ron Forest+Shack`,
    `relocate Forest>Shack`, `plant_decoy Azkaban`, `pass`."""
    if isinstance(move, Pass):
        return "pass"
    if isinstance(move, Relocate):
        return f"relocate {location_name(move.from_location)}>{location_name(move.to_location)}"
    if isinstance(move, PlantDecoy):
        return f"plant_decoy {location_name(move.location)}"
    if isinstance(move, Ally):
        return f"{move.ally} " + "+".join(location_name(loc) for loc in move.locations)
    return f"{move.type} {location_name(move.location)}"


def parse_label(label: str, locations: tuple[str, ...]) -> HarryMove:
    """The move a label stands for (any case, short names or slugs); `UnparsableMove` if none."""
    kind, _, where = label.strip().partition(" ")
    kind = kind.lower()
    names = [resolve_location(part.strip(), locations) for part in where.split("+")]
    if not where or any(n is None for n in names):
        raise UnparsableMove(f"not a move label: {label!r:.80}")
    slugs = tuple(n for n in names if n is not None)
    if kind in ("search", "attack") and len(slugs) == 1:
        return Search(location=slugs[0]) if kind == "search" else Attack(location=slugs[0])
    if kind in ("ron", "hermione", "dumbledore"):
        return Ally(ally=kind, locations=slugs)
    raise UnparsableMove(f"not a move label: {label!r:.80}")


def _order(move: HarryMove, locations: tuple[str, ...]) -> tuple[int, tuple[int, ...]]:
    kind = move.ally if isinstance(move, Ally) else move.type
    where = move.locations if isinstance(move, Ally) else (move.location,)
    return _KIND_ORDER[kind], tuple(locations.index(loc) for loc in where)


def candidate_moves(
    view: HarryView,
    marginals: dict[str, float],
    information: dict[str, float],
    planner_move: HarryMove,
    *,
    limit: int = 6,
) -> list[HarryMove]:
    """The offered moves (at most `limit`, the planner's always among them), in fixed order.

    `marginals` is the map's probability of a Horcrux per location, `information` the
    planner's value of searching each location.
    """
    legal = legal_harry_actions(view)
    if not legal.can_act:
        raise NotYourTurn(f"Harry cannot act now (phase {view.phase})", expected=view.phase)
    locs = legal.locations
    # near-equals in board order (`ties`): the same offer on every machine
    likely = ties.ranked_items(locs, {loc: marginals.get(loc, 0.0) for loc in locs})
    informative = ties.first_best(locs, {loc: information.get(loc, 0.0) for loc in locs})
    wanted: list[HarryMove] = [planner_move]
    if legal.attack:
        wanted.append(Attack(location=likely[0]))
    wanted += [Search(location=loc) for loc in likely[:TOP_N]]
    wanted.append(Search(location=informative))
    for name in ("hermione", "dumbledore"):
        if name in legal.allies:
            wanted.append(Ally(ally=name, locations=(likely[0],)))
    chosen: list[HarryMove] = []
    for move in wanted:
        if move not in chosen and len(chosen) < max(1, limit):
            chosen.append(move)
    return sorted(chosen, key=lambda m: _order(m, locs))


def candidates_tool(moves: list[HarryMove]) -> dict[str, Any]:
    """The `make_move` tool offering exactly `moves`, as one string enum."""
    return {
        "name": TOOL_NAME,
        "description": "Harry's move",
        "input_schema": {
            "type": "object",
            "properties": {"move": {"type": "string", "enum": [move_label(m) for m in moves]}},
            "required": ["move"],
        },
    }


def parse_candidate(tool_input: object, view: HarryView, moves: list[HarryMove]) -> HarryMove:
    """The offered move a candidates tool input names, checked legal for `view`.

    `UnparsableMove` for anything but `{"move": <label>}`, and for a label that names a
    move that was not offered (a model is held to its tool even without a grammar).
    """
    if not isinstance(tool_input, dict) or set(tool_input) != {"move"}:
        raise UnparsableMove(f"expected {{'move': <one offered move>}}, got {tool_input!r:.200}")
    label = tool_input["move"]
    if not isinstance(label, str):
        raise UnparsableMove(f"the move must be a string, got {label!r:.80}")
    move = parse_label(label, view.rules.locations)
    if move not in moves:
        offered = ", ".join(move_label(m) for m in moves)
        raise UnparsableMove(f"{label!r:.80} was not offered (offered: {offered})")
    return check_harry_move(move, view)


def planner_candidates(
    planner: PlannerHarry, view: HarryView, limit: int = 6
) -> tuple[list[HarryMove], HarryMove]:
    """The candidates of the planner's (synced) map for `view`, and the planner's move."""
    planner.sync(view)
    belief = planner.belief
    locs = view.rules.locations
    info_of = (
        belief.horcrux_information
        if planner.params.info_target == "horcrux"
        else belief.search_information
    )
    marginals = dict(zip(locs, (float(p) for p in belief.marginals()), strict=True))
    information = dict(zip(locs, (float(i) for i in info_of(view.rules.sensor)), strict=True))
    choice = planner.choose(view).move
    return candidate_moves(view, marginals, information, choice, limit=limit), choice


__all__ = [
    "TOP_N",
    "candidate_moves",
    "candidates_tool",
    "move_label",
    "parse_candidate",
    "parse_label",
    "planner_candidates",
]
