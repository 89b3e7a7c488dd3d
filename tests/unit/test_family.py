"""The generated Voldemort family (docs/FAMILY.md): the draw, the held-out guard, games
against drawn members, one behavioural check per trigger, and `horcrux family --list`.
The held-out key is a parameter (no process-wide state), so a test that passes it opens
nothing for any other."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from typing import get_args, get_type_hints

import pytest

from horcrux import play
from horcrux.agents import HARRY_BRAINS, VOLDEMORT_BRAINS
from horcrux.agents.family import (
    HOLDOUT_START,
    FamilyParams,
    FamilyVoldemort,
    GeneratedVoldemort,
    HeldOutDraw,
    draw,
    is_copy,
)
from horcrux.agents.family_observers import PREDICT_LEVEL, TallyObserver
from horcrux.belief import ties
from horcrux.errors import UnknownBrain
from horcrux.models import Attack, HarryRecord, Observation, PlantDecoy, Relocate, Search
from horcrux.rules import CLASSIC
from horcrux.views import VoldemortView
from horcrux_tools import family_cli

DEV = range(2000)


def dev_draws() -> list[FamilyParams]:
    return [draw(seed) for seed in DEV]


def generated(**fields: object) -> FamilyParams:
    """A generated member with the given fields (seed 1's draw otherwise)."""
    return replace(draw(1), member="generated", **fields)  # type: ignore[arg-type]


def voldemort_steps(params: FamilyParams, seeds: range) -> list[play.Step]:
    """Every Voldemort step of games seeds vs the planner against `params`' Voldemort."""
    steps: list[play.Step] = []
    for seed in seeds:
        game = play.new_game(CLASSIC, seed)
        harry = HARRY_BRAINS.create("planner", CLASSIC)
        voldemort = GeneratedVoldemort(CLASSIC, params)
        play.play(
            game,
            harry,
            voldemort,
            on_step=lambda s: steps.append(s) if s.seat == "voldemort" else None,
        )
    return steps


def vview(step: play.Step) -> VoldemortView:
    assert isinstance(step.view, VoldemortView)
    return step.view


def tally_map(window: int, view: VoldemortView) -> dict[str, float]:
    observer = TallyObserver(CLASSIC, window)
    for record in view.history:
        observer.feed(record)
    return observer.occupancy()


# --- the draw -------------------------------------------------------------------------


def test_the_draw_is_pure_and_pinned() -> None:
    assert draw(7) == draw(7) and draw(7) != draw(8)
    # pinned: the same on every machine and Python >= 3.11 (integer draws from a str seed)
    assert draw(0).member == "reference" and draw(6).member == "passive"
    assert draw(7).describe() == (
        "trigger=hazard*0.79 observer=bayes-static dest=least-likely decoys=evidence-top/spread"
    )
    assert draw(14).describe() == (
        "trigger=threshold@0.71 observer=tally:10 dest=least-likely decoys=observer-top/early"
    )


@pytest.mark.parametrize(
    "field",
    ["member", "trigger", "observer", "motion", "destination", "decoys", "timing"],
)
def test_every_value_of_every_dimension_is_drawn_over_the_dev_seeds(field: str) -> None:
    values = set(get_args(get_type_hints(FamilyParams)[field]))
    assert {getattr(p, field) for p in dev_draws()} == values


def test_numeric_parameters_span_their_ranges() -> None:
    draws = [p for p in dev_draws() if p.member == "generated"]
    assert {p.delay for p in draws if p.trigger == "positive"} == set(range(7))
    assert {p.window for p in draws} == set(range(4, 17))
    thresholds = {p.threshold for p in draws}
    assert min(thresholds) == 0.3 and max(thresholds) == 0.8
    gains = {p.gain for p in draws}
    assert min(gains) == 0.1 and max(gains) == 1.0
    members = [p.member for p in dev_draws()]
    assert 0.03 < members.count("reference") / len(members) < 0.08
    assert 0.03 < members.count("passive") / len(members) < 0.08


def test_members_carry_their_equivalent_behaviour_and_are_never_copies() -> None:
    for p in dev_draws():
        if p.member == "reference":
            assert (p.trigger, p.delay, p.destination, p.decoys) == (
                "positive",
                0,
                "uniform",
                "evidence-top",
            )
        if p.member == "passive":
            assert (p.trigger, p.decoys) == ("never", "never")
        assert is_copy(p) == (p.member == "generated" and p.observer == "copy")
    assert any(is_copy(p) for p in dev_draws())


def test_as_dict_round_trips() -> None:
    assert FamilyParams(**draw(3).as_dict()) == draw(3)


# --- the guard and the spec -----------------------------------------------------------


def test_the_holdout_is_closed_without_the_key() -> None:
    with pytest.raises(HeldOutDraw, match="held-out report split"):
        draw(HOLDOUT_START)
    with pytest.raises(HeldOutDraw, match="held-out report split"):
        VOLDEMORT_BRAINS.create("family:100000", CLASSIC)
    with pytest.raises(HeldOutDraw):  # a key that is not True is no key
        VOLDEMORT_BRAINS.create("family:100000", CLASSIC, settings={"holdout": "yes"})
    assert issubclass(HeldOutDraw, UnknownBrain)
    draw(HOLDOUT_START - 1)  # the last dev seed


def test_the_key_is_a_parameter_and_opens_nothing_for_the_next_call() -> None:
    assert draw(HOLDOUT_START, holdout=True).seed == HOLDOUT_START
    brain = VOLDEMORT_BRAINS.create("family:100001", CLASSIC, settings={"holdout": True})
    assert brain.name == "family:100001"
    assert draw(HOLDOUT_START + 1, holdout=True) == brain.params  # type: ignore[attr-defined]
    with pytest.raises(HeldOutDraw):  # no process-wide state: the next call without it
        draw(HOLDOUT_START)
    with pytest.raises(HeldOutDraw):
        VOLDEMORT_BRAINS.create("family:100001", CLASSIC)


@pytest.mark.parametrize(
    ("spec", "words"),
    [("family:x", "whole number"), ("family:-3", ">= 0")],
)
def test_a_bad_spec_names_what_is_wrong(spec: str, words: str) -> None:
    with pytest.raises(UnknownBrain, match=words):
        VOLDEMORT_BRAINS.create(spec, CLASSIC)
    with pytest.raises(ValueError, match=">= 0"):
        draw(-1)


# --- games ----------------------------------------------------------------------------


def first_of_each_observer() -> list[int]:
    found: dict[str, int] = {}
    for p in dev_draws():
        if p.member == "generated":
            found.setdefault(p.observer, p.seed)
    return sorted(found.values())


@pytest.mark.parametrize("family_seed", first_of_each_observer())
def test_a_game_plays_legally_to_its_end_and_replays_from_its_seed(family_seed: int) -> None:
    spec = f"family:{family_seed}"
    first = play.play_game(CLASSIC, 11, "planner", spec)
    again = play.play_game(CLASSIC, 11, "planner", spec)
    assert first.game.state.over  # the engine refuses an illegal move: every move was legal
    assert first.game.events == again.game.events
    assert first.voldemort.name == spec


def test_a_member_plays_as_its_named_brain() -> None:
    reference = next(p.seed for p in dev_draws() if p.member == "reference")
    passive = next(p.seed for p in dev_draws() if p.member == "passive")
    for seed in (3, 4):
        a = play.play_game(CLASSIC, seed, "planner", f"family:{reference}")
        b = play.play_game(CLASSIC, seed, "planner", "reference")
        assert a.game.events == b.game.events
        c = play.play_game(CLASSIC, seed, "planner", f"family:{passive}")
        d = play.play_game(CLASSIC, seed, "planner", "passive")
        assert c.game.events == d.game.events
    assert isinstance(VOLDEMORT_BRAINS.create(f"family:{reference}", CLASSIC), FamilyVoldemort)


# --- one behavioural check per trigger ------------------------------------------------


def positive_at_horcrux(view: VoldemortView, turn: int) -> set[str]:
    record = next(r for r in view.history if r.turn == turn)
    return {
        o.location for o in record.observations if o.kind == "search" and o.outcome == "positive"
    }


def test_positive_with_delay_moves_exactly_delay_turns_after_the_positive() -> None:
    params = generated(trigger="positive", delay=2, decoys="never")
    moved = 0
    for seed in range(6):
        steps = voldemort_steps(params, range(seed, seed + 1))
        by_turn = {vview(s).turn: vview(s) for s in steps}
        for s in steps:
            if isinstance(s.move, Relocate):
                moved += 1
                view, earlier = vview(s), by_turn[vview(s).turn - 2]
                assert s.move.from_location in positive_at_horcrux(view, view.turn - 2)
                assert s.move.from_location in earlier.horcrux_locations
                assert s.move.to_location in view.free_locations()
    assert moved


def test_positive_at_once_moves_in_the_turn_of_the_positive() -> None:
    steps = voldemort_steps(generated(trigger="positive", delay=0, decoys="never"), range(4))
    moves = [s for s in steps if isinstance(s.move, Relocate)]
    assert moves
    for s in moves:
        assert isinstance(s.move, Relocate)
        assert s.move.from_location in positive_at_horcrux(vview(s), vview(s).turn)


def test_never_never_relocates() -> None:
    steps = voldemort_steps(generated(trigger="never", decoys="evidence-top"), range(4))
    assert not any(isinstance(s.move, Relocate) for s in steps)
    assert any(isinstance(s.move, PlantDecoy) for s in steps)  # decoys still come


def test_threshold_moves_the_top_horcrux_exactly_when_it_reaches_the_threshold() -> None:
    params = generated(trigger="threshold", threshold=0.6, observer="tally", window=8)
    params = replace(params, decoys="never")
    steps = voldemort_steps(params, range(4))
    moved = 0
    for s in steps:
        view = vview(s)
        if view.relocations_left == 0 or not view.horcrux_locations:
            continue
        m = tally_map(8, view)
        top = ties.first_best(view.horcrux_locations, m)
        if isinstance(s.move, Relocate):
            moved += 1
            assert s.move.from_location == top and ties.at_least(m[top], 0.6)
        else:
            assert ties.below(m[top], 0.6)
    assert moved


def test_predicted_moves_the_horcrux_the_observer_expects_attacked() -> None:
    params = generated(trigger="predicted", observer="tally", window=12, decoys="never")
    steps = voldemort_steps(params, range(6))
    moved = 0
    for s in steps:
        view = vview(s)
        if view.relocations_left == 0:
            continue
        m = tally_map(12, view)
        top = ties.first_best(CLASSIC.locations, m)
        predicted = top if ties.at_least(m[top], PREDICT_LEVEL) else None
        if isinstance(s.move, Relocate):
            moved += 1
            assert s.move.from_location == predicted
        else:
            assert predicted not in view.horcrux_locations
    assert moved


class FixedRandom(random.Random):
    """A stream whose `random()` is fixed (the hazard's coin)."""

    def __init__(self, value: float) -> None:
        super().__init__(0)
        self.value = value

    def random(self) -> float:
        return self.value


def test_hazard_moves_the_top_horcrux_with_probability_gain_times_m() -> None:
    params = generated(trigger="hazard", gain=0.5, observer="tally", window=8, decoys="never")
    # a turn-2 view: a positive at the one Horcrux Harry searched, so m = 0.6 there
    game = play.new_game(CLASSIC, 5)
    where = game.state.horcruxes[0]
    harry = play.view_of(game.state, "harry")
    state = play.apply(game.state, "harry", harry, Search(location=where)).state
    view = play.view_of(state, "voldemort")
    assert isinstance(view, VoldemortView)
    m = tally_map(8, view)
    exposed = ties.first_best(view.horcrux_locations, m)
    chance = 0.5 * m[exposed]
    assert 0.05 < chance < 0.5
    below = GeneratedVoldemort(CLASSIC, params).decide(view, FixedRandom(chance - 0.01))
    above = GeneratedVoldemort(CLASSIC, params).decide(view, FixedRandom(chance + 0.01))
    assert isinstance(below, Relocate) and below.from_location == exposed
    assert not isinstance(above, Relocate)


def test_spread_timing_holds_the_ith_decoy_until_turn_1_plus_15i() -> None:
    params = generated(trigger="never", decoys="blind-early", timing="spread")
    for seed in range(2):
        steps = voldemort_steps(params, range(seed, seed + 1))
        planted = [vview(s).turn for s in steps if isinstance(s.move, PlantDecoy)]
        assert planted and planted == [1, 16, 31][: len(planted)]


def test_far_goes_to_the_free_location_looked_at_least_recently() -> None:
    params = generated(trigger="positive", delay=0, destination="far", decoys="never")
    steps = voldemort_steps(params, range(4))
    moves = [s for s in steps if isinstance(s.move, Relocate)]
    assert moves
    for s in moves:
        view = vview(s)
        assert isinstance(s.move, Relocate)
        last = dict.fromkeys(CLASSIC.locations, 0)
        for record in view.history:
            for obs in record.observations:
                last[obs.location] = record.turn
        free = view.free_locations()
        assert last[s.move.to_location] == min(last[loc] for loc in free)


# --- the CLI --------------------------------------------------------------------------


def test_family_list_prints_one_row_per_draw(capsys: pytest.CaptureFixture[str]) -> None:
    assert family_cli.main(["--list", "0..3"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.strip()]
    assert len(rows) == 5  # a header and four draws
    assert rows[1].split()[:2] == ["0", "reference"]
    assert family_cli.main(["--list", "7", "--json"]) == 0
    (one,) = json.loads(capsys.readouterr().out)
    assert one == {**draw(7).as_dict(), "describe": draw(7).describe(), "copy": False}


def test_family_list_refuses_the_holdout_without_the_flag(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert family_cli.main(["--list", "99999..100000"]) == 2
    assert "held-out" in capsys.readouterr().err
    assert family_cli.main(["--list", "100000", "--holdout", "--json"]) == 0
    (one,) = json.loads(capsys.readouterr().out)
    assert one["seed"] == HOLDOUT_START
    with pytest.raises(HeldOutDraw):  # the flag opened nothing beyond that listing
        draw(HOLDOUT_START)


def test_observation_signs_count_attacks_as_negative() -> None:
    observer = TallyObserver(CLASSIC, 4)
    loc = CLASSIC.locations[0]
    observer.feed(
        HarryRecord(
            turn=1,
            action=Search(location=loc),
            observations=(Observation(location=loc, kind="search", outcome="positive"),),
        )
    )
    assert observer.occupancy()[loc] == pytest.approx((1 + 0.2) / 2)
    observer.feed(
        HarryRecord(
            turn=2,
            action=Attack(location=loc),
            observations=(Observation(location=loc, kind="attack", outcome="empty"),),
        )
    )
    assert observer.occupancy()[loc] == pytest.approx((1 + 0.2) / 3)


def test_a_bare_family_seat_plays_draw_zero() -> None:
    brain = VOLDEMORT_BRAINS.create("family", CLASSIC)
    assert brain.name == "family:0"
