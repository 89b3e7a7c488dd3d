"""Seat views: Harry and spectators never see the truth while the game runs."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from horcrux import engine
from horcrux.errors import IllegalAction
from horcrux.models import Ally, Attack, GameState, Pass, PlantDecoy, Relocate, Search
from horcrux.rules import STANDARD, preset
from horcrux.views import (
    HarryView,
    build_replay,
    harry_view,
    spectator_view,
    view_for,
    voldemort_view,
)

PUBLIC_FIELDS = {
    "seat", "rules", "turn", "phase", "attacks_left", "horcruxes_destroyed",
    "horcruxes_left", "allies", "history", "winner", "end_reason",
}  # fmt: skip


def random_legal_move(state: GameState, r: random.Random) -> object:
    """A uniformly chosen legal move for whichever seat is to play."""
    locs = list(state.rules.locations)
    if state.phase == "harry":
        options: list[object] = [Search(location=r.choice(locs)), Attack(location=r.choice(locs))]
        for name in state.rules.allies:
            n = 2 if name == "ron" else 1
            options.append(Ally(ally=name, locations=tuple(r.sample(locs, n))))
    else:
        free = [loc for loc in locs if loc not in state.horcruxes and loc not in state.decoys]
        options = [Pass(), PlantDecoy(location=r.choice(free))]
        if state.horcruxes:
            options.append(
                Relocate(from_location=r.choice(state.horcruxes), to_location=r.choice(free))
            )
    r.shuffle(options)
    for move in options:
        try:
            engine.check(state, move)  # type: ignore[arg-type]
        except IllegalAction:
            continue
        return move
    return Search(location=locs[0])


def walk(rules_name: str, seed: int, walk_seed: int) -> list[GameState]:
    """Every state of one random legal game, start to end."""
    state, _ = engine.new_game(preset(rules_name), seed)
    r = random.Random(walk_seed)
    states = [state]
    while not state.over:
        state, _ = engine.apply(state, random_legal_move(state, r))  # type: ignore[arg-type]
        states.append(state)
    return states


def with_other_truth(state: GameState, r: random.Random) -> GameState:
    """The same public record with a different hidden truth and seed."""
    locs = list(state.rules.locations)
    horcruxes = tuple(sorted(r.sample(locs, len(state.horcruxes))))
    free = [loc for loc in locs if loc not in horcruxes]
    return state.model_copy(
        update={
            "horcruxes": horcruxes,
            "decoys": tuple(sorted(r.sample(free, r.randint(0, 3)))),
            "seed": state.seed + 1 + r.randint(0, 10**6),
            "relocations_left": r.randint(0, 3),
            "decoys_left": r.randint(0, 3),
        }
    )


@settings(max_examples=60, deadline=None)
@given(
    rules_name=st.sampled_from(["classic", "standard"]),
    seed=st.integers(0, 10**6),
    walk_seed=st.integers(0, 10**6),
)
def test_harry_and_spectators_never_see_the_truth(
    rules_name: str, seed: int, walk_seed: int
) -> None:
    r = random.Random(walk_seed)
    for state in walk(rules_name, seed, walk_seed):
        if state.over:
            continue
        for build in (harry_view, spectator_view):
            view = build(state)
            assert set(type(view).model_fields) == PUBLIC_FIELDS
            # the view is a function of the public record only: other truth, same view
            assert build(with_other_truth(state, r)) == view
            dumped = view.model_dump_json()
            for secret in ('"relocate"', '"plant_decoy"', '"pass"', "horcrux_locations", "seed"):
                assert secret not in dumped


def test_voldemort_sees_everything_but_the_seed() -> None:
    state = walk("standard", 3, 4)[5]
    view = voldemort_view(state)
    assert view.horcrux_locations == state.horcruxes
    assert view.decoy_locations == state.decoys
    assert view.relocations_left == state.relocations_left
    assert "seed" not in view.model_dump()
    assert view.free_locations() == [
        loc for loc in state.rules.locations if loc not in state.horcruxes + state.decoys
    ]


def test_views_by_seat() -> None:
    state = walk("standard", 1, 1)[3]
    assert view_for(state, "harry").seat == "harry"
    assert view_for(state, None).seat == "spectator"
    assert view_for(state, "voldemort").seat == "voldemort"
    harry = view_for(state, "harry")
    assert isinstance(harry, HarryView)
    assert harry.attacks_left == state.attacks_left
    assert harry.history == state.history
    assert set(harry.allies) == {"ron", "hermione", "dumbledore"}


def test_ally_status_in_the_view() -> None:
    state, _ = engine.new_game(STANDARD, 0)
    state, _ = engine.apply(state, Ally(ally="dumbledore", locations=("hogwarts",)))
    state, _ = engine.apply(state, Pass())
    status = harry_view(state).allies["dumbledore"]
    assert (status.rest, status.uses_left, status.available) == (10, 1, False)
    assert harry_view(state).allies["ron"].available


def test_both_seats_count_an_allys_rest_alike_turn_by_turn() -> None:
    """Voldemort acts between Harry's turns t and t + 1: he must see the rests Harry sees
    on turn t + 1 (Ron rests 4: used on turn 2, he is back on turn 7)."""
    state, _ = engine.new_game(STANDARD, 4)
    harry_seen: dict[int, dict[str, tuple[int, bool]]] = {}
    voldemort_seen: dict[int, dict[str, tuple[int, bool]]] = {}
    plan = {2: Ally(ally="ron", locations=("hogwarts", "azkaban"))}
    plan[3] = Ally(ally="hermione", locations=("gringotts",))
    plan[7] = Ally(ally="ron", locations=("hogsmeade", "the-burrow"))
    while state.turn <= 12:
        view = harry_view(state) if state.phase == "harry" else voldemort_view(state)
        seen = harry_seen if state.phase == "harry" else voldemort_seen
        seen[state.turn] = {n: (a.rest, a.available) for n, a in view.allies.items()}
        if state.phase == "harry":
            state, _ = engine.apply(state, plan.get(state.turn, Search(location="hogwarts")))
        else:
            state, _ = engine.apply(state, Pass())
    for turn in range(1, 12):
        assert voldemort_seen[turn] == harry_seen[turn + 1], turn
    ron = [harry_seen[t]["ron"] for t in range(1, 13)]
    rests = [0, 0, 4, 3, 2, 1, 0, 4, 3, 2, 1, 0]  # turns 1-12
    assert ron == [(r, r == 0) for r in rests]
    assert harry_seen[4]["hermione"] == (STANDARD.allies["hermione"].rest, False)
    assert voldemort_seen[2]["ron"] == (4, False)  # right after Ron's search: rests 4


def test_replay_only_after_the_end_and_carries_the_truth() -> None:
    states = walk("classic", 11, 12)
    state, started = engine.new_game(preset("classic"), 11)
    r = random.Random(12)
    events: list[object] = [started]
    while not state.over:
        state, event = engine.apply(state, random_legal_move(state, r))  # type: ignore[arg-type]
        events.append(event)
        if not state.over:
            with pytest.raises(IllegalAction, match="only after the game is over"):
                build_replay(events)  # type: ignore[arg-type]
    replay = build_replay(events)  # type: ignore[arg-type]
    assert replay.seed == 11 and replay.winner == state.winner
    assert replay.steps[0].horcruxes == states[0].horcruxes
    assert [s.horcruxes for s in replay.steps] == [s.horcruxes for s in states]
    assert [s.decoys for s in replay.steps] == [s.decoys for s in states]
