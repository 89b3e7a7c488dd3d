"""Legal action sets and `make_move` schemas agree exactly with the engine on real states."""

from __future__ import annotations

import random
from itertools import product
from typing import Any

import pytest
from conftest import make_state
from fake_anthropic import sample_move, schema_accepts

from horcrux import engine
from horcrux.agents.legal import (
    UnparsableMove,
    harry_tool_schema,
    legal_harry_actions,
    legal_voldemort_actions,
    move_to_tool_input,
    parse_harry_move,
    parse_voldemort_move,
    voldemort_tool_schema,
)
from horcrux.errors import (
    AllyUnavailable,
    IllegalAction,
    NoAttacksLeft,
    NotYourTurn,
    OccupiedLocation,
    UnknownLocation,
)
from horcrux.models import Ally, AnyAction, Attack, GameState, Pass, PlantDecoy, Relocate, Search
from horcrux.rules import ALLY_NAMES, STANDARD, preset
from horcrux.views import harry_view, voldemort_view

LOCS = STANDARD.locations
ODD = "narnia"  # not a location


def harry_candidates() -> list[Any]:
    """Every Harry action of every shape, legal or not (an unknown location included)."""
    locs = (*LOCS, ODD)
    out: list[Any] = [Search(location=loc) for loc in locs]
    out += [Attack(location=loc) for loc in locs]
    for name in ALLY_NAMES:
        if name == "ron":
            out += [Ally(ally="ron", locations=(a, b)) for a, b in product(locs, repeat=2)]
        else:
            out += [Ally(ally=name, locations=(loc,)) for loc in locs]
    return out


HARRY_CANDIDATES = harry_candidates()


def voldemort_candidates(state: GameState) -> list[Any]:
    locs = (*LOCS, ODD)
    out: list[Any] = [Relocate(from_location=a, to_location=b) for a, b in product(locs, repeat=2)]
    out += [PlantDecoy(location=loc) for loc in locs]
    return [*out, Pass()]


def engine_accepts(state: GameState, move: AnyAction) -> bool:
    try:
        engine.check(state, move)
    except IllegalAction:
        return False
    return True


def walk(rules_name: str, seed: int) -> list[GameState]:
    """Every state of one random legal game (legality by the engine alone)."""
    state, _ = engine.new_game(preset(rules_name), seed)
    r = random.Random(seed)
    states = [state]
    while not state.over:
        pool = HARRY_CANDIDATES if state.phase == "harry" else voldemort_candidates(state)
        legal = [m for m in pool if engine_accepts(state, m)]
        kinds = sorted({(m.type, getattr(m, "ally", "")) for m in legal})
        kind = r.choice(kinds)  # a kind first, so that Ron's many pairs do not crowd out
        state, _ = engine.apply(
            state, r.choice([m for m in legal if (m.type, getattr(m, "ally", "")) == kind])
        )
        states.append(state)
    return states


def real_states(rules_name: str, games: int) -> list[GameState]:
    return [s for g in range(games) for s in walk(rules_name, seed=g)]


@pytest.mark.parametrize("rules_name", ["standard", "classic"])
def test_harry_schema_is_exactly_the_engines_legal_set(rules_name: str) -> None:
    checked = 0
    for state in real_states(rules_name, 3)[::3]:
        if state.phase != "harry":
            continue
        view = harry_view(state)
        tool = harry_tool_schema(view)
        schema = tool["input_schema"]
        legal = {m for m in HARRY_CANDIDATES if engine_accepts(state, m)}
        assert set(legal_harry_actions(view).moves()) == legal
        for move in HARRY_CANDIDATES:
            accepted = schema_accepts(move_to_tool_input(move), schema)
            assert accepted == (move in legal), (state.turn, move)
            if accepted:
                assert parse_harry_move(move_to_tool_input(move), view) == move
        checked += 1
    assert checked > 10


def test_everything_the_schema_allows_the_engine_applies() -> None:
    rng = random.Random(5)
    for state in real_states("standard", 4):
        if state.phase != "harry":
            continue
        view = harry_view(state)
        schema = harry_tool_schema(view)["input_schema"]
        for _ in range(5):
            tool_input = sample_move(schema, rng)
            assert schema_accepts(tool_input, schema)
            move = parse_harry_move(tool_input, view)
            engine.apply(state, move)  # raises if illegal


def test_voldemort_schema_is_exactly_the_engines_legal_set() -> None:
    checked = 0
    for state in real_states("standard", 3):
        if state.phase != "voldemort":
            continue
        view = voldemort_view(state)
        schema = voldemort_tool_schema(view)["input_schema"]
        candidates = voldemort_candidates(state)
        legal = {m for m in candidates if engine_accepts(state, m)}
        assert set(legal_voldemort_actions(view).moves()) == legal
        for move in candidates:
            accepted = schema_accepts(move_to_tool_input(move), schema)
            assert accepted == (move in legal), (state.turn, move)
            if accepted:
                assert parse_voldemort_move(move_to_tool_input(move), view) == move
        checked += 1
    assert checked > 10


def test_schema_shape_is_what_the_messages_api_accepts() -> None:
    view = harry_view(make_state(STANDARD))
    tool = harry_tool_schema(view)
    assert tool["name"] == "make_move"
    schema = tool["input_schema"]
    assert schema["type"] == "object"
    assert not {"anyOf", "oneOf", "allOf"} & set(schema)  # refused at the top level
    variants = schema["properties"]["move"]["anyOf"]
    kinds = [(v["properties"]["type"]["const"], v["properties"].get("ally")) for v in variants]
    assert [k for k, _ in kinds] == ["search", "attack", "ally", "ally", "ally"]


def test_schema_follows_attacks_allies_and_charges() -> None:
    state = make_state(
        STANDARD,
        attacks_left=0,
        ally_ready_turn={"ron": 5},
        ally_uses_left={"dumbledore": 0},
    )
    legal = legal_harry_actions(harry_view(state))
    assert legal.types == ("search", "ally")
    assert legal.allies == {"hermione": 1}
    variants = harry_tool_schema(harry_view(state))["input_schema"]["properties"]["move"]["anyOf"]
    assert len(variants) == 2

    v_state = make_state(STANDARD, phase="voldemort", relocations_left=0, decoys=("hogsmeade",))
    v_legal = legal_voldemort_actions(voldemort_view(v_state))
    assert v_legal.types == ("plant_decoy", "pass")
    assert "hogsmeade" not in v_legal.decoy_at
    assert "azkaban" not in v_legal.decoy_at
    assert len(v_legal.decoy_at) == len(LOCS) - 4


def test_parse_raises_typed_errors() -> None:
    state = make_state(STANDARD, attacks_left=0, ally_ready_turn={"ron": 5})
    view = harry_view(state)
    with pytest.raises(NoAttacksLeft):
        parse_harry_move({"move": {"type": "attack", "location": "hogwarts"}}, view)
    with pytest.raises(UnknownLocation):
        parse_harry_move({"move": {"type": "search", "location": ODD}}, view)
    with pytest.raises(AllyUnavailable):
        parse_harry_move({"move": {"type": "ally", "ally": "ron", "locations": LOCS[:2]}}, view)
    for garbage in (
        None,
        "search hogwarts",
        {},
        {"type": "search", "location": "hogwarts"},  # not wrapped in `move`
        {"move": {"type": "fly", "location": "hogwarts"}},
        {"move": {"type": "search"}},
        {"move": {"type": "search", "location": "hogwarts", "why": "because"}},
        {"move": {"type": "ally", "ally": "ron", "locations": ["hogwarts"]}},
        {"move": {"type": "search", "location": "hogwarts"}, "note": 1},
    ):
        with pytest.raises(UnparsableMove):
            parse_harry_move(garbage, view)

    v_view = voldemort_view(make_state(STANDARD, phase="voldemort"))
    with pytest.raises(OccupiedLocation):
        parse_voldemort_move(
            {"move": {"type": "relocate", "from_location": "azkaban", "to_location": "hogwarts"}},
            v_view,
        )
    with pytest.raises(NotYourTurn):
        parse_harry_move(
            {"move": {"type": "search", "location": "hogwarts"}},
            harry_view(make_state(STANDARD, phase="voldemort")),
        )
    with pytest.raises(NotYourTurn):
        harry_tool_schema(harry_view(make_state(STANDARD, phase="voldemort")))
