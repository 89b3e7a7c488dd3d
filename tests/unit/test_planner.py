"""The zero-token planners: thresholds, allies, persistence, the memory window."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

import horcrux.agents.planner  # noqa: F401  (registers the brains)
from horcrux import engine, rng
from horcrux.agents import HARRY_BRAINS, VOLDEMORT_BRAINS
from horcrux.agents.planner import (
    RANDOMISED,
    REFERENCE_RULE,
    REFERENCE_TRUST,
    PlannerHarry,
    PlannerParams,
    WindowPlannerHarry,
    plan,
    tie_order,
)
from horcrux.belief.bayes import MODES, BayesBelief, forgotten_budgets
from horcrux.errors import UnknownBrain
from horcrux.models import Ally, Attack, HarryRecord, Observation, Search
from horcrux.rules import CLASSIC, STANDARD, RuleSet
from horcrux.views import AllyStatus, HarryView, build_replay, harry_view, voldemort_view
from horcrux_tools.sim import play_game


class FixedBelief(BayesBelief):
    """A Bayes map whose marginals and decoy probabilities are set by the test."""

    def __init__(self, rules: RuleSet, m: list[float], decoy: list[float] | None = None) -> None:
        super().__init__(rules, "static")
        mm = np.array(m, dtype=np.float64)
        dd = np.zeros_like(mm) if decoy is None else np.array(decoy, dtype=np.float64)
        self._fixed = (mm, mm + dd, dd)

    def _arrays(self) -> tuple[Any, Any, Any]:
        return self._fixed


def _view(
    rules: RuleSet,
    *,
    turn: int = 10,
    attacks_left: int = 7,
    left: int = 3,
    allies: dict[str, AllyStatus] | None = None,
) -> HarryView:
    return HarryView(
        rules=rules,
        turn=turn,
        phase="harry",
        attacks_left=attacks_left,
        horcruxes_destroyed=rules.horcruxes - left,
        horcruxes_left=left,
        allies=allies or {},
        history=(),
    )


def _occ(top: float, rest_total: float = 2.0, n: int = 15, at: int = 4) -> list[float]:
    m = [rest_total / (n - 1)] * n
    m[at] = top
    return m


@pytest.mark.parametrize(
    ("spare", "theta"), [(0, 0.90), (1, 0.75), (2, 0.60), (3, 0.50), (4, 0.50)]
)
def test_attack_thresholds_by_spare_attacks(spare: int, theta: float) -> None:
    view = _view(CLASSIC, attacks_left=3 + spare)
    params = PlannerParams()
    loc = CLASSIC.locations[4]
    above = plan(FixedBelief(CLASSIC, _occ(theta + 0.01)), view, params)
    below = plan(FixedBelief(CLASSIC, _occ(theta - 0.01)), view, params)
    assert above.move == Attack(location=loc)
    assert isinstance(below.move, Search)


def test_attacks_when_turns_left_do_not_exceed_horcruxes_left() -> None:
    belief = FixedBelief(CLASSIC, _occ(0.3))
    view = _view(CLASSIC, turn=CLASSIC.max_turns - 1, left=3)  # 2 turns left, 3 to go
    assert plan(belief, view, REFERENCE_RULE).move == Attack(location=CLASSIC.locations[4])
    view = _view(CLASSIC, turn=CLASSIC.max_turns - 5, left=3)
    assert isinstance(plan(belief, view, REFERENCE_RULE).move, Search)


@pytest.mark.parametrize(
    ("turns_left", "attacks_left", "attacks"),
    [(6, 5, False), (5, 5, True), (4, 5, True), (20, 7, False), (7, 7, True)],
)
def test_endgame_attacks_once_attacks_cover_every_turn_left(
    turns_left: int, attacks_left: int, attacks: bool
) -> None:
    belief = FixedBelief(CLASSIC, _occ(0.3))  # far below every threshold
    view = _view(CLASSIC, turn=CLASSIC.max_turns + 1 - turns_left, attacks_left=attacks_left)
    assert view.turns_left == turns_left
    choice = plan(belief, view, PlannerParams())
    assert (choice.move == Attack(location=CLASSIC.locations[4])) is attacks
    # BELIEF.md's rule as written has no endgame: it searches
    assert isinstance(plan(belief, view, REFERENCE_RULE).move, Search)


def test_searches_the_most_informative_location() -> None:
    # q = 0.5 is where a (0.80, 0.15) search says the most; 0.99 and 0.01 say little
    m = [(3 - 0.99 - 0.99 - 0.45) / 12] * 15
    m[0], m[2], m[7] = 0.99, 0.99, 0.45
    belief = FixedBelief(CLASSIC, m)
    choice = plan(belief, _view(CLASSIC, attacks_left=3), PlannerParams(thresholds=(1.1,)))
    assert choice.move == Search(location=CLASSIC.locations[7])


def test_a_likely_decoy_is_not_attacked() -> None:
    # responds surely, but most of that is a decoy: P(real) = 0.3
    m = _occ(0.3)
    decoy = [0.0] * 15
    decoy[4] = 0.7
    belief = FixedBelief(CLASSIC, m, decoy)
    assert not isinstance(plan(belief, _view(CLASSIC), PlannerParams()).move, Attack)
    assert belief.real_given_responds()[4] == pytest.approx(0.3)


ready = AllyStatus(rest=0, uses_left=None, available=True)
resting = AllyStatus(rest=2, uses_left=None, available=False)


def test_allies_ron_beats_a_single_search_and_rests_are_respected() -> None:
    belief = FixedBelief(STANDARD, _occ(0.3))
    view = _view(STANDARD, allies={"ron": ready, "hermione": resting, "dumbledore": resting})
    move = plan(belief, view, PlannerParams()).move
    assert isinstance(move, Ally)
    assert move.ally == "ron"
    assert len(set(move.locations)) == 2
    view = _view(STANDARD, allies={"ron": resting, "hermione": resting, "dumbledore": resting})
    assert isinstance(plan(belief, view, PlannerParams()).move, Search)


def test_hermione_sharper_sensor_beats_harry() -> None:
    belief = FixedBelief(STANDARD, _occ(0.3))
    view = _view(STANDARD, allies={"hermione": ready})
    move = plan(belief, view, PlannerParams()).move
    assert isinstance(move, Ally)
    assert move.ally == "hermione"


def test_dumbledore_is_asked_about_a_likely_location_only() -> None:
    no_uses = AllyStatus(rest=0, uses_left=0, available=False)
    strong = FixedBelief(STANDARD, _occ(0.6))
    view = _view(STANDARD, attacks_left=3, allies={"dumbledore": ready})
    move = plan(strong, view, PlannerParams()).move
    assert move == Ally(ally="dumbledore", locations=(STANDARD.locations[4],))
    weak = FixedBelief(STANDARD, [0.2] * 15)
    assert isinstance(plan(weak, view, PlannerParams()).move, Search)
    view = _view(STANDARD, attacks_left=3, allies={"dumbledore": no_uses})
    assert isinstance(plan(strong, view, PlannerParams()).move, Search)


def _play_with_restore(rules: RuleSet, seed: int, every: int) -> tuple[list[Any], list[Any]]:
    """Play one game twice: straight, and restoring the brain from bytes every turn."""
    moves: list[list[Any]] = [[], []]
    for variant in (0, 1):
        state, _ = engine.new_game(rules, seed)
        brain = PlannerHarry(rules)
        vold = VOLDEMORT_BRAINS.create("reference", rules)
        while not state.over:
            if state.phase == "harry":
                if variant and state.turn % every == 0:
                    data = brain.snapshot()
                    assert len(data) <= 8192
                    brain = PlannerHarry.restore(rules, data)
                move = brain.decide(harry_view(state), rng.stream(seed, "harry", state.turn))
                moves[variant].append(move)
                state, _ = engine.apply(state, move)
            else:
                state, _ = engine.apply(
                    state, vold.decide(voldemort_view(state), rng.stream(seed, "v", state.turn))
                )
    return moves[0], moves[1]


def test_a_snapshot_keeps_every_knob() -> None:
    tuned = PlannerParams(endgame=False, jitter=0.25, exposed=(0.3, 0.3, 0.25, 0.5))
    again = PlannerHarry.restore(CLASSIC, PlannerHarry(CLASSIC, params=tuned).snapshot())
    assert again.params == tuned
    assert PlannerHarry.restore(CLASSIC, PlannerHarry(CLASSIC).snapshot()).params.endgame


def test_planner_stats_and_decision_records() -> None:
    result = play_game(STANDARD, 3, "planner", "reference")
    stats = result.brain_stats
    assert stats["decisions"] == result.turns or stats["decisions"] == result.turns - 1 + 1
    assert sum(stats["actions"].values()) == stats["decisions"]
    assert set(stats["model_weights"]) == {m.name for m in MODES["aware"]}
    brain = PlannerHarry(CLASSIC)
    state, _ = engine.new_game(CLASSIC, 0)
    brain.decide(harry_view(state), random.Random(0))
    record = brain.decisions[-1]
    assert (record.tier, record.source, record.turn) == ("zero", "planner", 1)
    assert record.latency_ms >= 0.0


def test_window_uses_only_the_last_w_observations() -> None:
    def search(turn: int, loc: str, outcome: str) -> HarryRecord:
        obs = Observation(location=loc, kind="search", outcome=outcome, sensor="harry")
        return HarryRecord(turn=turn, action=Search(location=loc), observations=(obs,))

    old = [search(t, "hogwarts", "positive") for t in range(1, 6)]
    recent = [search(t, "azkaban", "negative") for t in range(6, 10)]
    view = _view(CLASSIC).model_copy(update={"history": tuple(old + recent), "turn": 10})
    brain = WindowPlannerHarry(CLASSIC, 4)
    brain.sync(view)
    # turns 1-5 forgotten: the rebuild starts from the forecast of 5 turns, trusted 2/3
    fresh = BayesBelief(CLASSIC, "trigger", forgotten=5, trust=REFERENCE_TRUST)
    for record in recent:
        fresh.update(record)
    assert (brain.belief.marginals() == fresh.marginals()).all()
    occ = brain.belief.occupancy()
    assert occ["hogwarts"] == pytest.approx(occ["hogsmeade"])  # forgot the positives
    full = PlannerHarry(CLASSIC, "trigger")
    full.sync(view)
    assert abs(full.belief.occupancy()["hogwarts"] - occ["hogwarts"]) > 0.05


def test_window_counts_destroyed_horcruxes_it_still_remembers() -> None:
    hit = Observation(location="gringotts", kind="attack", outcome="destroyed")
    history = (HarryRecord(turn=1, action=Attack(location="gringotts"), observations=(hit,)),)
    view = _view(CLASSIC, left=2).model_copy(update={"history": history, "turn": 2})
    brain = WindowPlannerHarry(CLASSIC, 8)
    brain.sync(view)
    assert brain.belief.horcruxes_left == 2
    assert brain.belief.occupancy()["gringotts"] < 0.01  # only the hazard model's drift
    brain = WindowPlannerHarry(CLASSIC, 1)
    brain.sync(view.model_copy(update={"history": history}))
    assert brain.belief.horcruxes_left == 2


@pytest.mark.parametrize("spec", ["planner", "planner:trigger", "planner:hazard", "planner:static"])
def test_brains_play_legal_games(spec: str) -> None:
    """Every move of the game is legal (the replay re-runs each through the engine) and the
    result is the one the rules give: Harry wins exactly when every Horcrux is destroyed."""
    for seed in range(2):
        result = play_game(STANDARD, seed, spec, "random", keep_events=True)
        assert result.events is not None
        replay = build_replay(result.events)
        harry_moves = [s for s in replay.steps if s.actor == "harry"]
        assert (replay.winner, replay.end_reason) == (result.winner, result.end_reason)
        assert len(harry_moves) == result.turns <= STANDARD.max_turns
        assert replay.steps[-1].destroyed == result.destroyed
        assert (result.winner == "harry") == (result.destroyed == STANDARD.horcruxes)
        if result.winner == "voldemort":
            assert result.turns == STANDARD.max_turns or replay.steps[-1].attacks_left == 0


def test_planner_wins_most_classic_games_against_the_reference() -> None:
    wins = sum(play_game(CLASSIC, s, "planner", "reference").winner == "harry" for s in range(30))
    assert wins >= 18


def test_unknown_mode_is_refused() -> None:
    with pytest.raises(UnknownBrain, match="unknown planner mode 'nope'; known: ") as caught:
        HARRY_BRAINS.create("planner:nope", CLASSIC)
    assert caught.value.code == "unknown_brain"
    assert set(str(caught.value).rpartition("known: ")[2].split(", ")) == set(MODES)


def _searches(outcomes: list[tuple[str, str]]) -> tuple[HarryRecord, ...]:
    out = []
    for turn, (loc, outcome) in enumerate(outcomes, start=1):
        obs = Observation(location=loc, kind="search", outcome=outcome, sensor="harry")
        out.append(HarryRecord(turn=turn, action=Search(location=loc), observations=(obs,)))
    return tuple(out)


def test_window_rebuild_prior_knows_the_start_and_forgets_the_budgets() -> None:
    brain = WindowPlannerHarry(CLASSIC, 8)
    assert brain.trust == REFERENCE_TRUST == pytest.approx(2 / 3)
    assert brain.rebuild_prior(1, 3) == {"horcruxes": 3}  # the game's own start
    assert brain.rebuild_prior(12, 2) == {"horcruxes": 2, "forgotten": 11, "trust": 2 / 3}
    for prior, trust in (("forecast", 1.0), ("hedged", 0.5), ("uniform", 0.0), (0.8, 0.8)):
        got = WindowPlannerHarry(CLASSIC, 8, prior=prior).rebuild_prior(12, 2)
        assert got == {"horcruxes": 2, "forgotten": 11, "trust": trust}
    assert WindowPlannerHarry(CLASSIC, 8, prior="fresh").rebuild_prior(12, 2) == {"horcruxes": 2}
    # ignorance is every count equally likely; the default leans two to one on the forecast
    (charges, *_), (decoys, *_) = forgotten_budgets(MODES["trigger"], CLASSIC, 2, 11)
    (ignorant, *_), _ = forgotten_budgets(MODES["trigger"], CLASSIC, 2, 11, 0.0)
    assert ignorant == pytest.approx((0.25,) * 4)
    (default, *_), (default_decoys, *_) = forgotten_budgets(
        MODES["trigger"], CLASSIC, 2, 11, REFERENCE_TRUST
    )
    assert default == pytest.approx([2 / 3 * p + 1 / 12 for p in charges])
    assert default_decoys == pytest.approx([2 / 3 * p + 1 / 12 for p in decoys])


@pytest.mark.parametrize(
    ("spec", "window", "prior", "name"),
    [
        ("planner-window:8", 8, "reference", "planner-window:8"),
        ("planner-window:8:reference", 8, "reference", "planner-window:8"),
        ("planner-window:8:forecast", 8, "forecast", "planner-window:8:forecast"),
        ("planner-window:16:uniform", 16, "uniform", "planner-window:16:uniform"),
        ("planner-window:4:fresh", 4, "fresh", "planner-window:4:fresh"),
        ("planner-window:8:hedged", 8, "hedged", "planner-window:8:hedged"),
        ("planner-window:8:0.8", 8, "0.8", "planner-window:8:0.8"),
        ("planner-window", 16, "reference", "planner-window:16"),
        ("planner-window:full", None, "reference", "planner-window:full"),
        ("planner-window:full:forecast", None, "forecast", "planner-window:full:forecast"),
    ],
)
def test_window_spec_names_the_window_and_the_rebuild_prior(
    spec: str, window: int | None, prior: str, name: str
) -> None:
    brain = HARRY_BRAINS.create(spec, CLASSIC)
    assert isinstance(brain, WindowPlannerHarry)
    assert (brain.window, brain.prior, brain.name) == (window, prior, name)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        (
            "planner-window:8:hopeful",
            "one of reference, forecast, hedged, uniform, fresh or a trust in",
        ),
        ("planner-window:8:1.5", r"trust must be in \[0, 1\], got '1.5'"),
        ("planner-window:eight", "is a whole number or 'full', got 'eight'"),
        ("planner-window:0", "at least 1"),
    ],
)
def test_window_spec_errors_name_the_problem(spec: str, message: str) -> None:
    with pytest.raises(UnknownBrain, match=message):
        HARRY_BRAINS.create(spec, CLASSIC)


def test_window_covering_the_whole_game_is_the_full_planner() -> None:
    history = _searches([("hogwarts", "positive"), ("azkaban", "negative")] * 3)
    view = _view(CLASSIC, turn=7).model_copy(update={"history": history})
    window, full = WindowPlannerHarry(CLASSIC, 8), PlannerHarry(CLASSIC, "trigger")
    window.sync(view)
    full.sync(view)
    assert np.allclose(window.belief.marginals(), full.belief.marginals(), atol=1e-12)
    short = WindowPlannerHarry(CLASSIC, 4)
    short.sync(view)
    assert not np.allclose(short.belief.marginals(), full.belief.marginals(), atol=1e-3)
    never = WindowPlannerHarry(CLASSIC, None)  # planner-window:full
    never.sync(view)
    assert np.allclose(never.belief.marginals(), full.belief.marginals(), atol=1e-12)
    assert never.params == REFERENCE_RULE and never.name == "planner-window:full"


def test_window_plays_the_reference_rule_unless_given_another() -> None:
    assert WindowPlannerHarry(CLASSIC, 8).params == REFERENCE_RULE
    assert PlannerParams(endgame=False) == REFERENCE_RULE
    responds = PlannerParams(info_target="responds")
    brain = WindowPlannerHarry(CLASSIC, 8, params=responds)
    assert brain.params is responds
    # the rebuilt belief is the same; only the search rule's target differs
    history = _searches([("hogwarts", "positive"), ("azkaban", "negative")] * 6)
    view = _view(CLASSIC, turn=13).model_copy(update={"history": history})
    default = WindowPlannerHarry(CLASSIC, 8)
    brain.sync(view)
    default.sync(view)
    assert np.array_equal(brain.belief.marginals(), default.belief.marginals())
    assert brain.choose(view) == plan(brain.belief, view, responds)


def test_window_positive_sticks_more_once_charges_may_be_spent() -> None:
    # the same remembered positive, at the start (Voldemort surely holds R charges: the
    # trigger model moves it) and after forgotten turns (charges uncertain): the second
    # Harry believes it more
    positive = _searches([("hogwarts", "positive")])[0]
    start = BayesBelief(CLASSIC, "trigger")
    start.update(positive)
    later = BayesBelief(CLASSIC, "trigger", charge_prior=(1.0,) * 4, decoy_prior=(1.0,) * 4)
    later.update(positive.model_copy(update={"turn": 20}))
    assert later.occupancy()["hogwarts"] > start.occupancy()["hogwarts"] + 0.1


def test_ties_are_broken_by_a_per_turn_order_not_the_board() -> None:
    orders = {tuple(tie_order(15, t)) for t in range(1, 30)}
    assert len(orders) > 20
    assert all(sorted(o) == list(range(15)) for o in orders)
    belief = FixedBelief(CLASSIC, [0.2] * 15)  # nothing to choose between
    picks = {
        plan(belief, _view(CLASSIC, turn=t), PlannerParams()).move.location  # type: ignore[union-attr]
        for t in range(1, 40)
    }
    assert len(picks) > 5
    board = PlannerParams(ties="board")
    assert plan(belief, _view(CLASSIC), board).move == Search(location=CLASSIC.locations[0])


def test_forgotten_budget_forecast_tracks_real_games_early_on() -> None:
    # the rebuild's forecast of Voldemort's spent budgets against what 60 real games of
    # the full-memory trigger planner show at turn 9 (classic, reference Voldemort)
    left: list[int] = []
    used: list[int] = []

    def step(state: Any, _event: Any) -> None:
        if state.phase == "harry" and state.turn == 9:
            left.append(state.relocations_left)
            used.append(CLASSIC.decoys - state.decoys_left)

    for seed in range(60):
        play_game(CLASSIC, seed, "planner:trigger", "reference", on_step=step)
    charges, decoys = forgotten_budgets(MODES["trigger"], CLASSIC, 3, 8)
    forecast_left = sum(r * p for r, p in enumerate(charges[0]))
    forecast_used = sum(n * p for n, p in enumerate(decoys[0]))
    assert len(left) == 60
    assert abs(forecast_left - sum(left) / 60) < 0.4
    assert abs(forecast_used - sum(used) / 60) < 0.4


def test_robust_planner_keeps_its_thresholds_and_its_early_random_model() -> None:
    robust = HARRY_BRAINS.create("planner:robust", CLASSIC)
    assert isinstance(robust, PlannerHarry)
    assert robust.params.thresholds == (0.80, 0.60, 0.45, 0.35)
    assert robust.params.endgame
    assert PlannerHarry(CLASSIC, "robust").params == robust.params  # built directly too
    assert PlannerHarry(CLASSIC, "mixture").params == PlannerParams()  # the mixture's own
    assert PlannerHarry(CLASSIC).params == RANDOMISED  # the default: randomised play
    assert [m.name for m in robust.belief.models][-1] == "early"
    assert (
        sum(play_game(CLASSIC, s, "planner:robust", "random").winner == "harry" for s in range(40))
        >= 20
    )


def test_the_filters_copy_of_harrys_rule_is_the_default_planners_policy() -> None:
    """The `rule` adversary model runs Harry's own rule: its thresholds, jitter and
    hesitation are the default planner's knobs (`horcrux.belief.policy`, one source), so a
    change to the planner's policy is a change to the model, never a silent mismatch."""
    from horcrux.agents.planner import MODE_PARAMS
    from horcrux.belief.bayes import DEFAULT_MODE, RULE_HESITATE, RULE_JITTER, RULE_THRESHOLDS

    harry = PlannerHarry(CLASSIC)
    assert harry.mode == DEFAULT_MODE and harry.params == MODE_PARAMS[DEFAULT_MODE]
    params = harry.params
    assert RULE_THRESHOLDS == params.thresholds == PlannerParams().thresholds
    assert RULE_JITTER == params.jitter > 0.0
    assert RULE_HESITATE == params.exposed[3] > 0.0
    for mode in ("aware", DEFAULT_MODE):
        (rule,) = [m for m in MODES[mode] if m.reads == "rule"]
        assert (rule.rule, rule.spread, rule.hesitate) == (
            params.thresholds,
            params.jitter,
            params.exposed[3],
        )


def test_the_threshold_by_spare_attacks_and_the_forced_attack_are_written_once() -> None:
    from horcrux.belief import policy

    ladder = (0.9, 0.75, 0.6, 0.5)
    assert [policy.spare_threshold(ladder, s) for s in (-2, 0, 1, 3, 7)] == [
        0.9,
        0.9,
        0.75,
        0.5,
        0.5,
    ]
    assert PlannerParams(thresholds=ladder).threshold(2) == 0.6
    # no attack left: never forced; no more turns than Horcruxes: forced; the endgame
    assert not policy.forced_attack(1, 3, 0, endgame=True)
    assert policy.forced_attack(3, 3, 4, endgame=False)
    assert not policy.forced_attack(4, 3, 4, endgame=False)
    assert policy.forced_attack(4, 3, 4, endgame=True)
