"""The rules engine: every result, every illegal action, the end conditions, determinism."""

from __future__ import annotations

import pytest
from conftest import make_state, seed_with
from pydantic import ValidationError

from horcrux import engine, errors, rng
from horcrux.models import Ally, Attack, Pass, PlantDecoy, Relocate, Search
from horcrux.rules import CLASSIC, STANDARD, RuleSet, display_name, preset


def test_new_game_places_distinct_horcruxes_from_the_seed() -> None:
    state, started = engine.new_game(CLASSIC, 7)
    again, _ = engine.new_game(CLASSIC, 7)
    assert len(set(state.horcruxes)) == 3
    assert set(state.horcruxes) <= set(CLASSIC.locations)
    assert state.horcruxes == again.horcruxes == started.horcruxes
    placements = {engine.new_game(CLASSIC, s)[0].horcruxes for s in range(50)}
    assert len(placements) > 40  # the seed really drives the draw
    assert (state.turn, state.phase, state.attacks_left) == (1, "harry", 7)
    assert (state.relocations_left, state.decoys_left) == (3, 3)


def test_placement_is_uniform_over_locations() -> None:
    counts = dict.fromkeys(CLASSIC.locations, 0)
    for seed in range(3000):
        for loc in engine.new_game(CLASSIC, seed)[0].horcruxes:
            counts[loc] += 1
    expected = 3000 * 3 / 15
    assert all(abs(c - expected) < 0.15 * expected for c in counts.values())


@pytest.mark.parametrize(
    ("at", "draw_ok", "outcome"),
    [
        ("hogwarts", lambda u: u < 0.80, "positive"),  # Horcrux: positive with d
        ("hogwarts", lambda u: u >= 0.80, "negative"),
        ("the-burrow", lambda u: u < 0.15, "positive"),  # nothing: false positive with f
        ("the-burrow", lambda u: u >= 0.15, "negative"),
    ],
)
def test_search_signal_follows_the_sensor(at: str, draw_ok: object, outcome: str) -> None:
    seed = seed_with(1, 0, draw_ok)  # type: ignore[arg-type]
    state = make_state(seed=seed)
    after, event = engine.apply(state, Search(location=at))
    assert event.observations[0].outcome == outcome
    assert event.observations[0].kind == "search"
    assert after.phase == "voldemort" and after.attacks_left == 7
    assert after.history[-1].observations == event.observations


def test_decoy_responds_to_a_search_like_a_horcrux() -> None:
    seed = seed_with(1, 0, lambda u: 0.15 <= u < 0.80)
    state = make_state(seed=seed, decoys=("the-burrow",))
    _, on_decoy = engine.apply(state, Search(location="the-burrow"))
    _, on_empty = engine.apply(state, Search(location="spinners-end"))
    assert on_decoy.observations[0].outcome == "positive"
    assert on_empty.observations[0].outcome == "negative"


def test_sensor_rates_over_many_seeds() -> None:
    hits_real = hits_empty = 0
    n = 4000
    for seed in range(n):
        state = make_state(seed=seed)
        hits_real += (
            engine.apply(state, Search(location="hogwarts"))[1].observations[0].outcome
            == "positive"
        )
        hits_empty += (
            engine.apply(state, Search(location="the-burrow"))[1].observations[0].outcome
            == "positive"
        )
    assert abs(hits_real / n - 0.80) < 0.025
    assert abs(hits_empty / n - 0.15) < 0.02


def test_attack_results_destroyed_decoy_empty() -> None:
    state = make_state(decoys=("the-burrow",))
    after, event = engine.apply(state, Attack(location="hogwarts"))
    assert event.observations[0].outcome == "destroyed"
    assert after.destroyed == 1 and "hogwarts" not in after.horcruxes and after.attacks_left == 6
    after, event = engine.apply(state, Attack(location="the-burrow"))
    assert event.observations[0].outcome == "decoy"
    assert after.decoys == () and after.destroyed == 0 and after.attacks_left == 6
    after, event = engine.apply(state, Attack(location="spinners-end"))
    assert event.observations[0].outcome == "empty"
    assert after.horcruxes == state.horcruxes and after.attacks_left == 6


def test_dumbledore_reveals_exactly_and_rests_ten_turns_twice_a_game() -> None:
    state = make_state(STANDARD, decoys=("the-burrow",))
    for loc, reveal in [("hogwarts", "horcrux"), ("the-burrow", "decoy"), ("hogsmeade", "empty")]:
        _, event = engine.apply(state, Ally(ally="dumbledore", locations=(loc,)))
        assert event.observations[0].kind == "reveal"
        assert event.observations[0].outcome == reveal
    after, _ = engine.apply(state, Ally(ally="dumbledore", locations=("hogwarts",)))
    after, _ = engine.apply(after, Pass())
    assert after.turn == 2 and after.ally_rest("dumbledore") == 10
    with pytest.raises(errors.AllyUnavailable, match="resting for 10 more turn"):
        engine.apply(after, Ally(ally="dumbledore", locations=("hogwarts",)))
    later = after.model_copy(update={"turn": 12})
    assert later.ally_rest("dumbledore") == 0
    used, _ = engine.apply(later, Ally(ally="dumbledore", locations=("hogwarts",)))
    assert used.ally_uses_left["dumbledore"] == 0
    exhausted = used.model_copy(update={"turn": 40, "phase": "harry"})
    with pytest.raises(errors.AllyUnavailable, match="no uses left"):
        engine.apply(exhausted, Ally(ally="dumbledore", locations=("hogwarts",)))


def test_ron_searches_two_locations_with_harrys_sensor_and_rests_four() -> None:
    state = make_state(STANDARD)
    after, event = engine.apply(state, Ally(ally="ron", locations=("hogwarts", "the-burrow")))
    assert [o.location for o in event.observations] == ["hogwarts", "the-burrow"]
    assert all(o.kind == "search" and o.sensor == "harry" for o in event.observations)
    assert after.ally_ready_turn["ron"] == 1 + 4 + 1
    with pytest.raises(errors.DuplicateLocation, match="two different locations"):
        engine.apply(state, Ally(ally="ron", locations=("hogwarts", "hogwarts")))
    assert make_state(STANDARD, turn=5, ally_ready_turn={"ron": 6}).ally_rest("ron") == 1


def test_hermione_uses_her_sharper_sensor() -> None:
    seed = seed_with(1, 0, lambda u: 0.80 <= u < 0.95)  # Harry would miss, Hermione hits
    state = make_state(STANDARD, seed=seed)
    _, harry = engine.apply(state, Search(location="hogwarts"))
    _, hermione = engine.apply(state, Ally(ally="hermione", locations=("hogwarts",)))
    assert harry.observations[0].outcome == "negative"
    assert hermione.observations[0].outcome == "positive"
    assert hermione.observations[0].sensor == "hermione"


def test_ally_arity_is_validated_by_the_model() -> None:
    with pytest.raises(ValidationError, match="ron takes 2 location"):
        Ally(ally="ron", locations=("hogwarts",))
    with pytest.raises(ValidationError, match="hermione takes 1 location"):
        Ally(ally="hermione", locations=("hogwarts", "azkaban"))


def test_allies_are_absent_from_classic() -> None:
    with pytest.raises(errors.AllyUnavailable, match="does not play under the classic rules"):
        engine.apply(make_state(), Ally(ally="hermione", locations=("hogwarts",)))


@pytest.mark.parametrize(
    "action",
    [
        Search(location="hogwartz"),
        Attack(location="nowhere"),
        Ally(ally="ron", locations=("hogwarts", "mordor")),
    ],
)
def test_unknown_location_names_the_known_ones(action: object) -> None:
    with pytest.raises(errors.UnknownLocation, match=r"unknown location .*known: hogwarts"):
        engine.apply(make_state(STANDARD), action)  # type: ignore[arg-type]


def test_seats_must_wait_their_turn() -> None:
    state = make_state()
    with pytest.raises(errors.NotYourTurn, match="it is harry's turn") as caught:
        engine.apply(state, Pass())
    assert caught.value.expected == "harry"
    after, _ = engine.apply(state, Search(location="hogwarts"))
    with pytest.raises(errors.NotYourTurn, match="it is voldemort's turn"):
        engine.apply(after, Search(location="hogwarts"))


def test_no_attacks_left_is_illegal() -> None:
    with pytest.raises(errors.NoAttacksLeft):
        engine.check(make_state(attacks_left=0), Attack(location="hogwarts"))


def test_voldemort_relocates_and_plants() -> None:
    state = make_state(phase="voldemort")
    after, event = engine.apply(state, Relocate(from_location="hogwarts", to_location="the-burrow"))
    assert after.horcruxes == ("azkaban", "gringotts", "the-burrow")
    assert after.relocations_left == 2 and after.turn == 2 and after.phase == "harry"
    assert event.turn == 1 and event.seq == 1
    after, _ = engine.apply(state, PlantDecoy(location="the-burrow"))
    assert after.decoys == ("the-burrow",) and after.decoys_left == 2


@pytest.mark.parametrize(
    ("action", "error", "message"),
    [
        (
            Relocate(from_location="the-burrow", to_location="hogsmeade"),
            errors.InvalidRelocation,
            "no Horcrux at the-burrow",
        ),
        (
            Relocate(from_location="hogwarts", to_location="azkaban"),
            errors.OccupiedLocation,
            "azkaban already holds a Horcrux",
        ),
        (
            Relocate(from_location="hogwarts", to_location="spinners-end"),
            errors.OccupiedLocation,
            "spinners-end already holds a decoy",
        ),
        (PlantDecoy(location="spinners-end"), errors.OccupiedLocation, "already holds a decoy"),
        (PlantDecoy(location="gringotts"), errors.OccupiedLocation, "already holds a Horcrux"),
        (
            Relocate(from_location="hogwarts", to_location="atlantis"),
            errors.UnknownLocation,
            "unknown location",
        ),
    ],
)
def test_illegal_voldemort_moves(action: object, error: type[Exception], message: str) -> None:
    state = make_state(phase="voldemort", decoys=("spinners-end",))
    with pytest.raises(error, match=message):
        engine.apply(state, action)  # type: ignore[arg-type]


def test_voldemort_charges_run_out() -> None:
    state = make_state(phase="voldemort", relocations_left=0, decoys_left=0)
    with pytest.raises(errors.NoChargesLeft, match="relocation"):
        engine.apply(state, Relocate(from_location="hogwarts", to_location="the-burrow"))
    with pytest.raises(errors.NoChargesLeft, match="decoy"):
        engine.apply(state, PlantDecoy(location="the-burrow"))
    assert engine.apply(state, Pass())[0].turn == 2


def test_harry_wins_on_the_third_horcrux() -> None:
    state = make_state(horcruxes=("hogwarts",), destroyed=2)
    after, event = engine.apply(state, Attack(location="hogwarts"))
    assert after.over and after.winner == "harry" and event.winner == "harry"
    assert event.end_reason == "every Horcrux destroyed"
    with pytest.raises(errors.GameOver, match="harry won"):
        engine.apply(after, Pass())


def test_voldemort_wins_when_the_last_attack_misses() -> None:
    state = make_state(attacks_left=1)
    after, event = engine.apply(state, Attack(location="the-burrow"))
    assert after.winner == "voldemort" and "no attacks left" in (event.end_reason or "")


def test_voldemort_wins_when_the_turns_run_out() -> None:
    state = make_state(turn=50)
    after, event = engine.apply(state, Search(location="hogwarts"))
    assert (
        after.over
        and after.winner == "voldemort"
        and event.end_reason == "turn 50 ended with a Horcrux left"
    )
    not_yet, _ = engine.apply(make_state(turn=49), Search(location="hogwarts"))
    assert not not_yet.over


def test_a_destroying_last_attack_still_wins() -> None:
    state = make_state(horcruxes=("hogwarts",), destroyed=2, attacks_left=1, turn=50)
    after, _ = engine.apply(state, Attack(location="hogwarts"))
    assert after.winner == "harry"


def test_apply_never_mutates_its_input() -> None:
    state = make_state(STANDARD)
    before = state.model_dump()
    engine.apply(state, Ally(ally="ron", locations=("hogwarts", "azkaban")))
    engine.apply(state, Attack(location="hogwarts"))
    assert state.model_dump() == before


def test_an_illegal_action_changes_nothing() -> None:
    state = make_state(phase="voldemort")
    with pytest.raises(errors.IllegalAction):
        engine.apply(state, Relocate(from_location="hogwarts", to_location="azkaban"))
    assert state.horcruxes == ("azkaban", "gringotts", "hogwarts")


def _script() -> list[object]:
    return [
        Search(location="hogwarts"),
        Relocate(from_location="hogwarts", to_location="the-burrow"),
        Ally(ally="ron", locations=("the-burrow", "azkaban")),
        PlantDecoy(location="hogsmeade"),
        Attack(location="hogsmeade"),
        Pass(),
        Ally(ally="hermione", locations=("gringotts",)),
    ]


def test_seed_and_actions_replay_identical_events() -> None:
    rules = STANDARD
    seed = next(
        s
        for s in range(100)
        if "hogwarts" in engine.new_game(rules, s)[0].horcruxes
        and not {"the-burrow", "hogsmeade"} & set(engine.new_game(rules, s)[0].horcruxes)
    )
    first = engine.replay(rules, seed, _script())  # type: ignore[arg-type]
    second = engine.replay(rules, seed, _script())  # type: ignore[arg-type]
    assert [e.model_dump() for e in first[1]] == [e.model_dump() for e in second[1]]
    assert first[0] == second[0]
    assert len(first[1]) == 1 + len(_script())
    assert [e.seq for e in first[1]] == list(range(len(first[1])))


def test_sensor_draws_are_keyed_not_sequential() -> None:
    # the same turn and index give the same draw whatever happened before
    assert rng.unit(5, "sensor", 3, 0) == rng.unit(5, "sensor", 3, 0)
    assert rng.unit(5, "sensor", 3, 0) != rng.unit(5, "sensor", 3, 1)
    assert rng.unit(5, "sensor", 3, 0) != rng.unit(6, "sensor", 3, 0)


def test_rule_sets() -> None:
    assert preset("classic").allies == {}
    assert set(preset("standard").allies) == {"ron", "hermione", "dumbledore"}
    assert STANDARD.sensor_of("hermione").d == 0.95 and STANDARD.sensor_of("ron").d == 0.80
    with pytest.raises(KeyError, match="known: classic, standard"):
        preset("blitz")
    with pytest.raises(ValidationError, match="more locations than Horcruxes"):
        RuleSet(locations=("a", "b"), horcruxes=2)
    with pytest.raises(ValidationError, match="d > f"):
        RuleSet(sensor={"d": 0.1, "f": 0.5})  # type: ignore[arg-type]
    small = RuleSet(locations=("a", "b", "c", "d", "e", "f"), horcruxes=2, max_turns=10)
    assert len(engine.new_game(small, 1)[0].horcruxes) == 2
    assert display_name("godrics-hollow") == "Godric's Hollow"
    assert display_name("ministry-of-magic") == "Ministry of Magic"
