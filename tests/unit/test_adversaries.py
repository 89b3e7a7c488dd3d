"""Adversaries that react to Harry's belief (issue 15): the belief models' predictive math
on hand-computed cases, the mirror and ambush Voldemorts, and the planner's private
randomisation."""

from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import pytest

import horcrux.agents.adversaries
import horcrux.agents.planner  # noqa: F401
from horcrux import engine, rng
from horcrux.agents import HARRY_BRAINS, VOLDEMORT_BRAINS
from horcrux.agents.adversaries import AmbushVoldemort, MirrorVoldemort, next_harry_view
from horcrux.agents.planner import PlannerHarry, PlannerParams, plan
from horcrux.belief import ties
from horcrux.belief.bayes import (
    AWARE_EXACT,
    MODES,
    AdversaryModel,
    BayesBelief,
    level_fill,
    race_attack,
)
from horcrux.errors import UnknownBrain
from horcrux.models import Attack, HarryRecord, Observation, PlantDecoy, Relocate, Search
from horcrux.rules import CLASSIC, RuleSet, Sensor
from horcrux.views import HarryView, harry_view, voldemort_view
from horcrux_tools.sim import play_game

MODES_AWARE = MODES["aware"]

# four locations, one Horcrux, one relocation, no decoy, d = 0.8, f = 0.2
TINY = RuleSet(
    name="tiny",
    locations=("a", "b", "c", "d"),
    horcruxes=1,
    max_turns=50,
    attacks=5,
    sensor=Sensor(d=0.8, f=0.2),
    relocations=1,
    decoys=0,
)


def _search(turn: int, loc: str, outcome: str) -> HarryRecord:
    return HarryRecord(
        turn=turn,
        action=Search(location=loc),
        observations=(Observation(location=loc, kind="search", outcome=outcome, sensor="harry"),),
    )


def _belief(model: AdversaryModel) -> BayesBelief:
    return BayesBelief(TINY, "custom", models=(model,))


# ---------------------------------------------------------------- the predictive step
def test_a_threshold_trigger_moves_the_crossing_location_to_the_lowest_ones() -> None:
    # after a positive at a: P(a) = 0.8 / (0.8 + 3 x 0.2) = 4/7 >= 0.5, so (one charge
    # left) the Horcrux at a moves, uniformly to b, c, d (all rated 1/7, the lowest)
    belief = _belief(AdversaryModel("b", "belief", threshold=0.5, destination="low"))
    belief.update(_search(1, "a", "positive"))
    np.testing.assert_allclose(belief.marginals(), [0.0, 1 / 3, 1 / 3, 1 / 3], atol=1e-12)


def test_below_the_threshold_nothing_moves() -> None:
    belief = _belief(AdversaryModel("b", "belief", threshold=0.6, destination="low"))
    belief.update(_search(1, "a", "positive"))  # 4/7 < 0.6
    np.testing.assert_allclose(belief.marginals(), [4 / 7, 1 / 7, 1 / 7, 1 / 7], atol=1e-12)


def test_a_spread_threshold_moves_with_the_probability_it_is_crossed() -> None:
    # the threshold uniform on 0.6 +- 0.1: P(crossed at 4/7) = (4/7 - 0.5) / 0.2 = 5/14
    belief = _belief(AdversaryModel("b", "belief", threshold=0.6, spread=0.1, destination="low"))
    belief.update(_search(1, "a", "positive"))
    fire = 5 / 14
    rest = 1 / 7 + (4 / 7) * fire / 3
    np.testing.assert_allclose(
        belief.marginals(), [(4 / 7) * (1 - fire), rest, rest, rest], atol=1e-12
    )


def test_a_low_destination_is_the_single_lowest_location() -> None:
    # a negative at d first: d is the unique lowest, so the move goes there only
    belief = _belief(AdversaryModel("b", "belief", threshold=0.5, destination="low"))
    belief.update(_search(1, "d", "negative"))
    belief.update(_search(2, "a", "positive"))
    # before the move: weights a 0.8, b 0.2, c 0.2, d 0.2 x 0.2/0.8 = 0.05 (up to a
    # common factor), so P(a) = 0.8 / 1.25 = 0.64 >= 0.5 and all of it lands on d
    expected = np.array([0.0, 0.2, 0.2, 0.05 + 0.8]) / 1.25
    np.testing.assert_allclose(belief.marginals(), expected, atol=1e-12)


def test_a_uniform_destination_ignores_the_map() -> None:
    belief = _belief(AdversaryModel("b", "belief", threshold=0.5, destination="uniform"))
    belief.update(_search(1, "d", "negative"))
    belief.update(_search(2, "a", "positive"))
    share = 0.8 / 3
    expected = np.array([0.0, 0.2 + share, 0.2 + share, 0.05 + share]) / 1.25
    np.testing.assert_allclose(belief.marginals(), expected, atol=1e-12)


def test_no_charge_left_means_no_move() -> None:
    belief = BayesBelief(
        TINY,
        "custom",
        models=(AdversaryModel("b", "belief", threshold=0.5, destination="low"),),
        charges=0,
    )
    belief.update(_search(1, "a", "positive"))
    np.testing.assert_allclose(belief.marginals(), [4 / 7, 1 / 7, 1 / 7, 1 / 7], atol=1e-12)


def test_the_rule_model_moves_what_harrys_rule_attacks_with_its_probability() -> None:
    # Harry's rule on this board: threshold 0.5 (spare 4), jitter 0.1, hesitation 1/2 x
    # the rule model's weight (1 here). At 4/7 the jittered threshold is always crossed
    # (4/7 > 0.5), so he attacks a with probability 1/2, and so the mirror moves it.
    model = AdversaryModel(
        "rule", "belief", reads="rule", rule=(0.5,), spread=0.1, hesitate=0.5, destination="low"
    )
    belief = _belief(model)
    assert belief.hesitation() == pytest.approx(0.5)
    belief.update(_search(1, "a", "positive"))
    moved = (4 / 7) * 0.5
    np.testing.assert_allclose(
        belief.marginals(), [4 / 7 - moved, 1 / 7 + moved / 3, 1 / 7 + moved / 3, 1 / 7 + moved / 3]
    )


def test_the_rule_model_is_sure_of_a_forced_attack() -> None:
    # 5 attacks left and 5 turns left: the endgame attacks the top location every turn
    model = AdversaryModel(
        "rule", "belief", reads="rule", rule=(0.99,), spread=0.0, hesitate=0.5, destination="low"
    )
    belief = _belief(model)
    for turn in range(1, 46):
        belief.update(_search(turn, "b" if turn < 45 else "a", "negative"))
    attack = belief._rule_attack(model, belief.marginals())
    assert attack.sum() == pytest.approx(1.0) and float(attack.max()) == 1.0


def test_the_naive_map_is_exactly_the_mixture_planners_map() -> None:
    """The level-0 map the belief models read is the old default's map (what `shadow`
    holds), bit for bit up to float error, on a real game's record."""
    result = play_game(CLASSIC, 7, "planner", "shadow", keep_events=True)
    assert result.events is not None
    aware = BayesBelief(CLASSIC, "aware")
    mixture = BayesBelief(CLASSIC, "mixture")
    state, _ = engine.new_game(CLASSIC, 7)
    checked = 0
    for record in _records(result.events):
        aware.update(record)
        mixture.update(record)
        maps = aware._maps()
        assert maps is not None
        # _maps() reads the maps after every model's move; the naive one has no belief
        # model in it, so it is the mixture's map after its own predictive step
        np.testing.assert_allclose(maps["naive"], mixture.marginals(), atol=1e-9)
        checked += 1
    assert checked > 10 and state is not None


def _records(events: list[object]) -> list[HarryRecord]:
    from horcrux.models import HarryMoved

    return [
        HarryRecord(turn=e.turn, action=e.action, observations=e.observations)
        for e in events
        if isinstance(e, HarryMoved)
    ]


def test_belief_decoys_go_to_harrys_top_free_group() -> None:
    """A `belief` decoy is planted at Harry's top-rated free location: after a positive at
    a (which may hold the Horcrux) the decoy probability rises at a, not elsewhere."""
    rules = TINY.model_copy(update={"decoys": 1, "relocations": 0})
    model = AdversaryModel("b", "belief", threshold=1.0, plant=1.0, placement="belief")
    belief = BayesBelief(rules, "custom", models=(model,))
    belief.update(_search(1, "a", "positive"))
    decoy = belief.decoy_probability()
    assert decoy[0] > 0.0 and decoy[1:].sum() == pytest.approx(0.0)
    # P(decoy at a) = P(a free) x P(chosen | free) = (1 - P(a)) x 1
    assert decoy[0] == pytest.approx(1.0 - belief.marginals()[0])


def test_belief_snapshot_round_trips_the_new_models() -> None:
    belief = BayesBelief(CLASSIC, "aware")
    for turn, (loc, out) in enumerate(
        [("hogwarts", "positive"), ("azkaban", "negative"), ("hogwarts", "positive")], 1
    ):
        belief.update(_search(turn, loc, out))
    again = BayesBelief.restore(CLASSIC, belief.snapshot())
    assert again.models == belief.models
    np.testing.assert_array_equal(again.marginals(), belief.marginals())


# ---------------------------------------------------------------- the Voldemorts
def test_registry_names() -> None:
    for name, cls in (("mirror", MirrorVoldemort), ("ambush", AmbushVoldemort)):
        brain = VOLDEMORT_BRAINS.create(name, CLASSIC)
        assert isinstance(brain, cls) and brain.name == name and brain.spec == "planner"
        spec = VOLDEMORT_BRAINS.create(f"{name}:planner:mixture", CLASSIC)
        assert spec.name == f"{name}:planner:mixture"
        assert isinstance(spec.copy, PlannerHarry) and spec.copy.mode == "mixture"
        with pytest.raises(UnknownBrain, match=name):
            VOLDEMORT_BRAINS.create(f"{name}:no-such-harry", CLASSIC)
    assert VOLDEMORT_BRAINS.create("shadow", CLASSIC).shadow.mode == "mixture"


def test_shadow_reads_the_map_of_a_belief_mode_when_told() -> None:
    """`shadow:THRESHOLD:MODE` keeps MODE's map; bad parts are named."""
    own = VOLDEMORT_BRAINS.create("shadow:0.5:aware", CLASSIC)
    assert own.shadow.mode == "aware" and own.threshold == 0.5
    assert own.name == "shadow:0.5:aware"
    assert VOLDEMORT_BRAINS.create("shadow:0.65", CLASSIC).name == "shadow:0.65"
    assert VOLDEMORT_BRAINS.create("shadow:0.65", CLASSIC).shadow.mode == "mixture"
    with pytest.raises(UnknownBrain, match="unknown belief mode 'nope'"):
        VOLDEMORT_BRAINS.create("shadow:0.5:nope", CLASSIC)
    with pytest.raises(UnknownBrain, match="threshold must be a number, got 'x'"):
        VOLDEMORT_BRAINS.create("shadow:x:aware", CLASSIC)


def test_shadow_on_the_default_map_moves_when_harrys_own_map_crosses_it() -> None:
    """`shadow:0.5:aware-copy` holds the default planner's own map, float for float, and moves
    a real Horcrux exactly when Harry's own occupancy there is the highest of the real
    ones and at least 0.5 (charges and a free location left), near-equals tied (`ties`)."""
    moves = 0
    for seed in range(8):
        moves += _shadow_game(seed)
    assert moves >= 1


def _shadow_game(seed: int) -> int:
    """One game of `test_shadow_on_the_default_map...`, its checks made; shadow's moves."""
    state, _ = engine.new_game(CLASSIC, seed)
    harry = PlannerHarry(CLASSIC)
    vold = VOLDEMORT_BRAINS.create("shadow:0.5:aware-copy", CLASSIC)
    moves = 0
    while not state.over:
        if state.phase == "harry":
            move = harry.decide(harry_view(state), rng.stream(seed, "harry", state.turn))
            state, _ = engine.apply(state, move)
            continue
        view = voldemort_view(state)
        harry.sync(harry_view(state))  # Harry's map after this turn's result
        decision = vold.decide(view, rng.stream(seed, "voldemort", state.turn))
        m = harry.belief.occupancy()
        assert vold.shadow.occupancy() == m  # the very floats
        real = list(view.horcrux_locations)
        top = max(m[r] for r in real) if real else 0.0
        crossed = bool(real) and view.relocations_left > 0 and ties.at_least(top, 0.5)
        assert isinstance(decision, Relocate) == crossed
        if isinstance(decision, Relocate):
            assert decision.from_location == ties.first_best(real, m)
            moves += 1
        state, _ = engine.apply(state, decision)
    return moves


def _view_at(seed: int, turns: int) -> tuple[object, object]:
    """A game played `turns` Harry turns by the planner against the reference."""
    state, _ = engine.new_game(CLASSIC, seed)
    harry = HARRY_BRAINS.create("planner", CLASSIC)
    vold = VOLDEMORT_BRAINS.create("reference", CLASSIC)
    while state.turn <= turns and not state.over:
        if state.phase == "harry":
            state, _ = engine.apply(
                state, harry.decide(harry_view(state), rng.stream(seed, "harry", state.turn))
            )
        elif state.turn == turns:
            break
        else:
            move = vold.decide(voldemort_view(state), rng.stream(seed, "voldemort", state.turn))
            state, _ = engine.apply(state, move)
    return state, voldemort_view(state)


def test_mirror_never_reads_harrys_random_stream() -> None:
    """Harry's per-turn streams differ between seeds; the mirror gets the view and its own
    stream only, so on the same view its prediction and move are the same whatever Harry's
    stream: it predicts from a copy with its own stream."""
    state, view = _view_at(3, 12)
    assert state.phase == "voldemort"
    harry_streams = {rng.stream(seed, "harry", 13).random() for seed in (1, 2)}
    assert len(harry_streams) == 2  # Harry's streams do differ
    outcomes = set()
    for _seed in (1, 2):
        mirror = MirrorVoldemort(CLASSIC)
        move = mirror.decide(view, random.Random(99))
        outcomes.add((move.model_dump_json(), tuple(mirror.predicted)))
    assert len(outcomes) == 1
    # its copy's stream comes from Voldemort's, not Harry's
    mirror = MirrorVoldemort(CLASSIC)
    mirror.decide(view, random.Random(99))
    assert mirror.stream is not None
    assert mirror.stream.random() != rng.stream(3, "harry", 13).random()


def test_mirror_moves_the_horcrux_the_copy_attacks_to_its_least_likely_free_location() -> None:
    # `trigger` plays the deterministic rule: in the endgame it surely attacks its top
    state, _ = engine.new_game(CLASSIC, 5)
    harry = HARRY_BRAINS.create("planner:trigger", CLASSIC)
    mirror = MirrorVoldemort(CLASSIC, "planner:trigger")
    relocated = 0
    while not state.over:
        if state.phase == "harry":
            move = harry.decide(harry_view(state), rng.stream(5, "harry", state.turn))
            state, _ = engine.apply(state, move)
        else:
            view = voldemort_view(state)
            vmove = mirror.decide(view, rng.stream(5, "voldemort", state.turn))
            engine.check(state, vmove)
            turn, predicted = mirror.predicted[-1]
            copy = PlannerHarry(CLASSIC, "trigger")
            copy.sync(next_harry_view(view))
            expect = plan(copy.belief, next_harry_view(view), copy.params)
            assert turn == view.turn
            assert predicted == (expect.move.location if isinstance(expect.move, Attack) else None)
            if isinstance(vmove, Relocate):
                relocated += 1
                assert vmove.from_location == predicted
                m = copy.belief.occupancy()
                low = min(m[loc] for loc in view.free_locations())
                assert m[vmove.to_location] <= low + 1e-9
            state, _ = engine.apply(state, vmove)
    assert relocated >= 1


def test_ambush_moves_to_any_free_location_and_stays_legal() -> None:
    for seed in range(3):
        result = play_game(CLASSIC, seed, "planner:trigger", "ambush")
        assert result.turns >= 1  # every move was checked by the engine


def test_next_harry_view_is_the_view_harry_gets() -> None:
    state, view = _view_at(4, 9)
    after, _ = engine.apply(state, VOLDEMORT_BRAINS.create("passive", CLASSIC).decide(view, None))  # type: ignore[arg-type]
    assert next_harry_view(view) == harry_view(after)


# ---------------------------------------------------------------- randomisation
def test_randomisation_is_reproducible_from_the_seed_and_differs_across_streams() -> None:
    belief = BayesBelief(CLASSIC, "aware")
    state, _ = engine.new_game(CLASSIC, 0)
    view = harry_view(state)
    params = PlannerParams(near=1.0)  # every search is near-equal at the start
    same = {plan(belief, view, params, random.Random(7)).move.model_dump_json() for _ in range(3)}
    assert len(same) == 1
    drawn = {
        plan(belief, view, params, random.Random(seed)).move.model_dump_json() for seed in range(30)
    }
    assert len(drawn) > 3
    # and without a stream the decision is the deterministic rule's
    assert plan(belief, view, params).move == plan(belief, view, PlannerParams()).move
    # whole games replay identically from their seed
    a = play_game(CLASSIC, 11, "planner", "mirror")
    b = play_game(CLASSIC, 11, "planner", "mirror")
    assert (a.winner, a.turns, a.destroyed) == (b.winner, b.turns, b.destroyed)


def test_hesitation_draws_from_the_private_stream() -> None:
    belief = BayesBelief(TINY, "custom", models=(AdversaryModel("s", "static"),))
    belief.update(_search(1, "a", "positive"))
    belief.update(_search(2, "a", "positive"))  # P(a) = 16 / 19 > 0.5: the rule attacks
    state, _ = engine.new_game(TINY, 0)
    view = harry_view(state).model_copy(update={"turn": 3})
    always = PlannerParams(thresholds=(0.5,))
    assert isinstance(plan(belief, view, always, random.Random(0)).move, Attack)
    halves = PlannerParams(thresholds=(0.5,), hesitate=0.5)
    kinds = {type(plan(belief, view, halves, random.Random(s)).move) for s in range(20)}
    assert kinds == {Attack, Search}


def test_learned_models_join_the_aware_mixture_without_replacing_it() -> None:
    learned = (
        AdversaryModel("trigger", "trigger", trigger=1.0, plant=0.4, prior=0.7),
        AdversaryModel("static", "static", plant=0.2, prior=0.3),
    )
    from horcrux.echo.use import joined_models

    brain = PlannerHarry(CLASSIC)
    before = brain.params
    brain.adopt_memory(joined_models(learned))  # what memory's plan gives the planner
    names = [m.name for m in brain.belief.models]
    assert names[: len(MODES_AWARE)] == [m.name for m in MODES_AWARE]
    assert names[len(MODES_AWARE) :] == ["learned-trigger", "learned-static"]
    joined = brain.belief.models[len(MODES_AWARE) :]
    assert all(not m.level0 for m in joined)
    share = sum(m.prior for m in joined) / sum(m.prior for m in brain.belief.models)
    assert share == pytest.approx(0.3)
    assert brain.params == before  # the randomised play stays
    # the level-0 map is still the mixture planner's
    record = _search(1, "hogwarts", "positive")
    brain.belief.update(record)
    mixture = BayesBelief(CLASSIC, "mixture")
    mixture.update(record)
    maps = brain.belief._maps()
    assert maps is not None
    np.testing.assert_allclose(maps["naive"], mixture.marginals(), atol=1e-9)
    again = PlannerHarry.restore(CLASSIC, brain.snapshot())
    assert again.belief.models == brain.belief.models


# ---------------------------------------------------------------- exact models, the race
def test_race_attack_is_the_threshold_rule_unexposed_and_a_mixed_strategy_exposed() -> None:
    m = np.array([1.0, 0.5, 0.0])
    # rho = 0: the deterministic rule (attack the top iff it reaches the cost)
    np.testing.assert_array_equal(race_attack(m, 0.5, 0.0, False), [1.0, 0.0, 0.0])
    np.testing.assert_array_equal(race_attack(m, 1.1, 0.0, False), [0.0, 0.0, 0.0])
    # rho = 1: pi_j = (m_j - cost) / (2 rho m_j) = 0.5 / 2 at the top, 0 at 0.5
    np.testing.assert_allclose(race_attack(m, 0.5, 1.0, False), [0.25, 0.0, 0.0])
    # two sure locations, cost 0.1, rho 0.4: (1 - 0.1) / 0.8 > 1 each, so the sum binds
    # at mu = 0.5: (1 - 0.1 - 0.5) / 0.8 = 1/2 each
    two = np.array([1.0, 1.0, 0.0])
    np.testing.assert_allclose(race_attack(two, 0.1, 0.4, False), [0.5, 0.5, 0.0], atol=1e-9)
    # forced (the endgame): cost 0 and the whole turn is an attack. rho = 1: 1/2 each
    # wherever anything may be (attacking the top surely is surely predicted); rho = 1/2:
    # pi_j = 1 - mu / m_j, mu = 1 / (1/0.9 + 1/0.3) = 0.225: 0.75 and 0.25
    near = np.array([0.9, 0.3, 0.0])
    np.testing.assert_allclose(race_attack(near, 0.5, 1.0, True), [0.5, 0.5, 0.0], atol=1e-9)
    np.testing.assert_allclose(race_attack(near, 0.5, 0.5, True), [0.75, 0.25, 0.0], atol=1e-9)


def _race_belief() -> tuple[BayesBelief, AdversaryModel]:
    model = AdversaryModel(
        "rule",
        "belief",
        reads="rule",
        rule=(0.5,),
        spread=0.1,
        hesitate=0.5,
        destination="low",
        race=0.01,
    )
    return BayesBelief(TINY, "custom", models=(model,)), model


def test_the_race_plan_is_what_the_rule_model_moves_and_what_harry_draws() -> None:
    # one model, exposure 1 with a charge left: after a positive at a, m_a = 4/7 and the
    # race attacks a with pi = (4/7 - 0.5) / (2 x 4/7) = 1/16; the copy draws the same,
    # so the Horcrux at a moves with probability 1/16 to b, c, d (tied lowest)
    belief, _ = _race_belief()
    belief.update(_search(1, "a", "positive"))
    plan_ = belief.race_plan()
    assert plan_ is not None
    np.testing.assert_allclose(plan_, [1 / 16, 0.0, 0.0, 0.0])
    moved = (4 / 7) / 16
    np.testing.assert_allclose(
        belief.marginals(), [4 / 7 - moved, 1 / 7 + moved / 3, 1 / 7 + moved / 3, 1 / 7 + moved / 3]
    )
    view = HarryView(
        rules=TINY,
        turn=2,
        phase="harry",
        attacks_left=5,
        horcruxes_destroyed=0,
        horcruxes_left=1,
        allies={},
        history=(),
    )

    class Draw(random.Random):
        def __init__(self, u: float) -> None:
            super().__init__(0)
            self.u = u

        def random(self) -> float:
            return self.u

    assert isinstance(plan(belief, view, PlannerParams(), Draw(0.06)).move, Attack)
    assert isinstance(plan(belief, view, PlannerParams(), Draw(0.07)).move, Search)
    # without the race the threshold rule attacks at 0.54 >= 0.5 whatever the draw
    assert isinstance(plan(belief, view, PlannerParams(race=False), Draw(0.99)).move, Attack)


def test_the_race_plan_survives_a_snapshot() -> None:
    belief, _ = _race_belief()
    belief.update(_search(1, "a", "positive"))
    again = BayesBelief.restore(TINY, belief.snapshot())
    assert again.models == belief.models
    plan_, replayed = belief.race_plan(), again.race_plan()
    assert plan_ is not None and replayed is not None
    np.testing.assert_array_equal(plan_, replayed)


def test_an_exact_model_moves_to_the_very_lowest_location() -> None:
    # after b-, c+, c+, c+ the map is [0.0151, 0.0038, 0.966, 0.0151]: c crosses 0.95 and
    # its Horcrux moves to the lowest free location. b is lowest by 0.011 < LOW_BAND: the
    # banded model spreads the move over a, b and d, the exact one sends it to b
    seq = [("b", "negative"), ("c", "positive"), ("c", "positive"), ("c", "positive")]
    out = {}
    for exact in (False, True):
        model = AdversaryModel(
            "b", "belief", threshold=0.95, destination="low", plant=0.0, exact=exact
        )
        belief = BayesBelief(TINY, "custom", models=(model,))
        for turn, (loc, outcome) in enumerate(seq, 1):
            before = belief.marginals().copy()
            belief.update(_search(turn, loc, outcome))
        out[exact] = (before, belief.marginals().copy())
    before, after = out[True]
    assert float(before.max()) < 0.95  # nothing moved before the last turn
    np.testing.assert_allclose(after[[0, 3]], [0.0151, 0.0151], atol=1e-4)
    assert after[2] == pytest.approx(0.0) and after[1] == pytest.approx(1.0 - 2 * after[0])
    banded = out[False][1]
    assert banded[0] > 0.3 and banded[3] > 0.3 and banded[1] > 0.3


def test_an_exact_model_predicts_mirrors_decoy_where_a_band_cannot() -> None:
    """Turn 1 of real games against `mirror`: the copy plants at the top free location of
    Harry's exact map. Where a false positive raised one location above the rest (seed
    12), the exact `rule` model puts that decoy at that one location. Where a negative
    left the other locations tied (seed 3; the copy takes the first in board order),
    the banded model spreads it over the locations within TOP_BAND of the top, and the
    exact one over the tie (`ties`: near-equals are one group, as only bit-identical
    values were before, whose split hung on the BLAS kernel's last bits)."""
    from horcrux.models import VoldemortMoved

    chance = {}
    for seed, mode in ((12, "aware-exact"), (3, "aware")):
        result = play_game(CLASSIC, seed, "planner", "mirror", keep_events=True)
        assert result.events is not None
        first = _records(result.events)[0]
        planted = next(e for e in result.events if isinstance(e, VoldemortMoved))
        assert isinstance(planted.action, PlantDecoy)
        j = CLASSIC.locations.index(planted.action.location)
        belief = BayesBelief(CLASSIC, mode, models=AWARE_EXACT if mode == "aware-exact" else None)
        belief.update(first)
        rule = [m.reads for m in belief.models].index("rule")
        c = belief._filters.c[rule]
        chance[mode] = (float(c[j]), int(np.argmax(c)), j)
    assert chance["aware-exact"][1] == chance["aware-exact"][2]
    assert chance["aware-exact"][0] > 0.5
    assert chance["aware"][0] < 0.5


def test_level_fill_raises_the_lowest_locations_to_one_level() -> None:
    values = np.array([0.3, 0.1, 0.0, 0.5])
    # 0.25 fills 0.0 and 0.1 up to 0.175 (0.175 + 0.075 = 0.25), below the next, 0.3
    p = level_fill(values, 0.25)
    np.testing.assert_allclose(p, [0.0, 0.3, 0.7, 0.0])
    after = values + 0.25 * p
    assert after[1] == pytest.approx(after[2]) == pytest.approx(0.175)
    assert min(after[0], after[3]) > after[1]
    # a tiny mass goes to the lowest alone; a large one levels every location
    np.testing.assert_array_equal(level_fill(values, 1e-12) > 0.0, [False, False, True, False])
    everything = values + 2.0 * level_fill(values, 2.0)
    np.testing.assert_allclose(everything, [0.725] * 4)


_CROSS = [("b", "negative"), ("c", "positive"), ("c", "positive"), ("c", "positive")]


def _crossed(model: AdversaryModel) -> BayesBelief:
    """TINY after b-, c+, c+, c+: c reaches 0.966 >= 0.95 and the model moves it."""
    belief = BayesBelief(TINY, "custom", models=(model,))
    for turn, (loc, outcome) in enumerate(_CROSS, 1):
        belief.update(_search(turn, loc, outcome))
    return belief


def test_a_fill_model_sends_the_horcrux_where_the_map_it_predicts_is_lowest() -> None:
    """An adversary who reads Harry's map *after* Harry's prediction of the move sends the
    Horcrux to that map's lowest free location. The exact model predicts "the lowest
    before the move", b, and so lifts b to 0.97: the top of the map it predicts, the one
    place such an adversary would never pick. The `fill` model levels its destinations:
    a, b and d end equal, and whichever one the adversary picks is where Harry looks."""
    exact = AdversaryModel("x", "belief", threshold=0.95, destination="low", plant=0.0, exact=True)
    before = _crossed(exact).marginals()
    np.testing.assert_allclose(before, [0.0151, 0.9698, 0.0, 0.0151], atol=1e-4)
    assert int(np.argmax(before)) == 1  # the predicted destination is no longer low
    levelled = _crossed(replace(exact, fill=True)).marginals()
    np.testing.assert_allclose(levelled, [1 / 3, 1 / 3, 0.0, 1 / 3], atol=1e-12)


def test_a_set_holding_the_whole_level_moves_to_its_own_lowest_free_location() -> None:
    # two Horcruxes on a, b, c, d, all three sets holding a moving (weights 0.5, 0.3, 0.2
    # on {a,b}, {a,c}, {a,d}): the map is b 0.5, c 0.3, d 0.2, and a tiny mass levels d
    # alone. {a,b} and {a,c} send it to d; {a,d} holds d, so it takes its own lowest free
    # location, c (the exact model's destination), instead of nowhere
    rules = TINY.model_copy(update={"horcruxes": 2})
    model = AdversaryModel(
        "x", "belief", threshold=0.95, destination="low", plant=0.0, exact=True, fill=True
    )
    filters = BayesBelief(rules, "custom", models=(model,))._filters
    go = np.array([i for i, s in enumerate(filters.tab.sets) if 0 in s])
    filters.w[:] = 0.0
    filters.w[-1, 0, go] = [0.5, 0.3, 0.2]
    filters._marginal = None
    out = filters._filled(0, model, go, 1e-6, {"weights": np.array([1.0])})
    assert out is not None
    np.testing.assert_array_equal(out, [[0, 0, 0, 1], [0, 0, 0, 1], [0, 0, 1, 0]])


def test_a_fill_model_survives_a_snapshot() -> None:
    model = AdversaryModel(
        "x", "belief", threshold=0.95, destination="low", plant=0.0, exact=True, fill=True
    )
    belief = _crossed(model)
    again = BayesBelief.restore(TINY, belief.snapshot())
    assert again.models == belief.models and again.models[0].fill
    np.testing.assert_array_equal(again.marginals(), belief.marginals())


@pytest.mark.parametrize(
    ("change", "pi_a"),
    [
        # an attack costs 0.5 x 0.5: pi_a = (4/7 - 1/4) / (8/7)
        ({"race_cost": 0.5}, 9 / 32),
    ],
)
def test_the_race_cost_sets_the_attack_the_rule_model_predicts(
    change: dict[str, float], pi_a: float
) -> None:
    # as in the race test above (m_a = 4/7, rho = 1, cost 0.5, pi_a = 1/16), and the rule
    # model moves the Horcrux at a with the probability Harry attacks it
    _, model = _race_belief()
    belief = BayesBelief(TINY, "custom", models=(replace(model, **change),))
    belief.update(_search(1, "a", "positive"))
    plan_ = belief.race_plan()
    assert plan_ is not None
    np.testing.assert_allclose(plan_, [pi_a, 0.0, 0.0, 0.0])
    moved = (4 / 7) * pi_a
    np.testing.assert_allclose(
        belief.marginals(), [4 / 7 - moved, 1 / 7 + moved / 3, 1 / 7 + moved / 3, 1 / 7 + moved / 3]
    )


def test_aware_copy_is_the_exact_models_levelled_with_a_cheaper_race() -> None:
    copy = MODES["aware-copy"]
    assert [m.name for m in copy] == [m.name for m in AWARE_EXACT]
    for mine, exact in zip(copy, AWARE_EXACT, strict=True):
        reads_own = mine.motion == "belief" and mine.reads != "naive"
        assert mine.fill is reads_own
        if mine.reads == "rule":
            assert (mine.race, mine.race_cost) == (0.3, 0.7)
            assert replace(mine, fill=False, race=0.0, race_cost=1.0) == exact
        else:
            assert replace(mine, fill=False) == exact
    brain = HARRY_BRAINS.create("planner:aware-copy", CLASSIC)
    assert isinstance(brain, PlannerHarry) and brain.belief.models == copy
