"""The memory gate (docs/ECHO.md, "The gate"): the likelihood of Voldemort's actual moves
per adversary model (`echo.predictive`), the style's factors and the gate's score S
from it, and the gate itself: memory reaches the planner only once its plans have
out-predicted the default prior."""

from __future__ import annotations

import json
import math

import pytest

from horcrux import engine
from horcrux.belief.bayes import DEFAULT_MODE, MODES, AdversaryModel
from horcrux.echo import gate, persist, predictive
from horcrux.echo.model import EchoMemory, Style
from horcrux.echo.use import memory_line, memory_plan, models_plan
from horcrux.models import Pass, Relocate, Search
from horcrux.rules import CLASSIC
from horcrux_tools.echo.season import play, run_season


def logliks(opponent: str, seed: int) -> dict[str, float]:
    played = play(CLASSIC, seed, opponent, None, "g")
    return predictive.move_logliks(CLASSIC, MODES[DEFAULT_MODE], played.events)


# ---------------------------------------------------------------- the likelihood of the moves
@pytest.mark.parametrize("seed", [0, 1])
def test_the_reference_game_is_best_predicted_by_the_trigger_model(seed: int) -> None:
    got = logliks("reference", seed)
    assert max(got, key=lambda m: got[m]) == "trigger"
    assert got["trigger"] > got["hazard"] + 10.0 > got["static"]


@pytest.mark.parametrize("seed", [0, 1])
def test_a_passive_game_is_best_predicted_by_the_static_model(seed: int) -> None:
    got = logliks("passive", seed)
    assert max(got, key=lambda m: got[m]) == "static"  # plant = 0: every pass at 1
    assert got["static"] > -0.1 and got["trigger"] < -100.0


def test_a_tiny_game_by_hand() -> None:
    # seed 7: Horcruxes at hogsmeade, hogwarts, spinners-end. Harry searches azkaban
    # twice; Voldemort moves hogwarts -> azkaban, then passes. A hazard model (h = 0.5,
    # no decoys) gives the move h x 1/k x 1/(N - k) = 0.5 / 36 and the pass 1 - h; a
    # static one 0 and 1. Each mixed with EPS of a uniform over the 49 legal moves
    # (pass, 3 x 12 relocations, 12 decoys)
    state, started = engine.new_game(CLASSIC, 7)
    assert started.horcruxes == ("hogsmeade", "hogwarts", "spinners-end")
    events: list[object] = [started]
    for action in (
        Search(location="azkaban"),
        Relocate(from_location="hogwarts", to_location="azkaban"),
        Search(location="azkaban"),
        Pass(),
    ):
        state, event = engine.apply(state, action)
        events.append(event)
    models = (
        AdversaryModel("h", "hazard", hazard=0.5, plant=0.0),
        AdversaryModel("s", "static", plant=0.0),
    )
    got = predictive.move_logliks(CLASSIC, models, events)  # type: ignore[arg-type]
    eps, u = predictive.EPS, predictive.EPS / 49
    assert got["h"] == pytest.approx(
        math.log((1 - eps) * 0.5 / 36 + u) + math.log((1 - eps) * 0.5 + u), abs=1e-6
    )
    assert got["s"] == pytest.approx(math.log(u) + math.log((1 - eps) + u), abs=1e-6)


def test_unit_likelihoods_mix_the_level0_group_by_its_priors() -> None:
    models = MODES[DEFAULT_MODE]
    got = logliks("reference", 0)
    units = predictive.unit_logliks(models, got)
    level0 = [(m.prior, got[m.name]) for m in models if m.name in ("trigger", "hazard", "static")]
    assert units["level0"] == pytest.approx(predictive.mix_loglik(level0), abs=1e-6)
    assert units["rule"] == got["rule"] and "trigger" not in units


# ---------------------------------------------------------------- S, w and the factors
def test_the_gate_weight_and_score_on_hand_made_inputs() -> None:
    m = gate.MARGIN
    assert gate.weight(-5.0) == 0.0 and gate.weight(m) == 0.0
    assert gate.weight(m + 1e-12) == 0.0  # on the margin within the tolerance: closed
    assert gate.weight(m + 1.0) == round(1.0 - math.exp(-1.0), 6)
    assert gate.weight(m + 3.0) == round(1.0 - math.exp(-3.0), 6)
    assert gate.updated_score(2.0, 1.0, 0.9) == 2.8
    assert gate.updated_score(2.0, -3.0, 1.0) == -1.0
    assert predictive.mix_loglik([(1.0, math.log(0.2)), (3.0, math.log(0.6))]) == pytest.approx(
        math.log(0.25 * 0.2 + 0.75 * 0.6)
    )


def test_the_played_prior_is_w_q_plus_one_minus_w_p0() -> None:
    plan = (
        AdversaryModel("a", "static", prior=3.0),
        AdversaryModel("learned-b", "static", prior=1.0),
    )
    default = (AdversaryModel("a", "static", prior=0.5),)
    a, b = gate.mixed_models(plan, default, 0.25)
    assert (a.name, b.name) == ("a", "learned-b")
    assert a.prior == pytest.approx(0.25 * 0.75 + 0.75 * 1.0)
    assert b.prior == pytest.approx(0.25 * 0.25)  # the default gives it nothing


def test_the_factors_are_each_units_likelihood_over_the_default_mixtures() -> None:
    played = play(CLASSIC, 0, "reference", None, "g")
    models = MODES[DEFAULT_MODE]
    found = gate.game_evidence(CLASSIC, played.events, None, None)
    assert found.llr == 0.0  # no plan: nothing to compare
    got = predictive.move_logliks(CLASSIC, models, played.events)
    base = predictive.mix_loglik([(m.prior, got[m.name]) for m in models])
    units = predictive.unit_logliks(models, got)
    assert found.factors["level0"] == pytest.approx(units["level0"] - base, abs=1e-5)
    assert found.factors["level0"] > 0.0 > found.factors["early"]
    assert min(found.factors.values()) >= -10.0  # clipped at FACTOR_MIN


# ---------------------------------------------------------------- the gate in a season
def test_the_memory_line_says_when_the_gate_holds_memory_back() -> None:
    season = run_season("decoy-heavy", 1, seed=0, arms=("on",))
    assert season.memory is not None and models_plan(season.memory) is None
    line = memory_line(season.memory)
    assert line is not None and "memory held back (gate 0.0 <= 10 nats)" in line


# ---------------------------------------------------------------- stored items
def style_memory(scores: dict[str, float], games: int, gate_score: float = 0.0) -> EchoMemory:
    """A scope whose only item is a style with these scores, games and gate score S."""
    found = Style(
        id="style",
        subject="style",
        text="fits",
        created=1.0,
        last_access=1.0,
        life=50.0,
        scores=scores,
        games=games,
        gate=gate_score,
    )
    return EchoMemory(agent="planner", opponent="x").model_copy(update={"items": (found,)})


def test_a_style_stored_before_the_gate_still_loads() -> None:
    memory = style_memory({"level0": 1.5}, 3)
    data = json.loads(memory.model_dump_json())
    for item in data["items"]:
        del item["gate"], item["gate_last"]  # the shape stored before the gate
    old = EchoMemory.model_validate(data)
    found = old.style()
    assert found is not None and (found.gate, found.gate_last, found.games) == (0.0, 0.0, 3)
    # and through the store's codec
    item = persist.encode_memory(old)
    again = persist.decode_memory(item)
    assert again == old and memory_plan(again) is None  # S = 0: held back


# ---------------------------------------------------------------- the style's floor
@pytest.mark.parametrize("unit", ["early", "belief@0.5", "level0"])
def test_memory_shifts_the_default_prior_and_never_replaces_it(unit: str) -> None:
    # a style sure of one unit (score 50 nats), the gate wide open: the planner's prior is
    # (1 - FLOOR) Q + FLOOR P0, so that unit takes at most 1 - FLOOR + FLOOR * P0_u and
    # every other unit keeps FLOOR of its default share (docs/ECHO.md, "The floor")
    from horcrux.echo import style

    plan = memory_plan(style_memory({unit: 50.0}, 20, gate.MARGIN + 30.0))
    assert plan is not None
    p0 = style.units(MODES[DEFAULT_MODE])
    played = style.units(plan.models)
    assert style.FLOOR == 0.7
    assert played[unit] == pytest.approx(1 - style.FLOOR + style.FLOOR * p0[unit], abs=1e-6)
    for other, share in p0.items():
        if other != unit:
            assert played[other] == pytest.approx(style.FLOOR * share, abs=1e-6)
