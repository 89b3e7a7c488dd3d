"""Memory that decides (docs/ECHO.md): the `counter` baseline, the style posterior over
the planner's adversary models (the threshold of a `shadow`), skills and corrections
that change the planner's decision, and the generated season ablation table."""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path

import pytest

from horcrux import engine
from horcrux.agents.planner import PlannerHarry
from horcrux.echo import style
from horcrux.echo.corrections import add_correction
from horcrux.echo.model import EchoMemory, Style
from horcrux.echo.use import (
    ALL_LAYERS,
    Layers,
    MemoryPlan,
    full_plan,
    joined_models,
    memory_plan,
    models_plan,
    rate_models,
)
from horcrux.models import Attack, Pass, Search
from horcrux.rules import CLASSIC
from horcrux.store.results import DecoyRecord, GameSummary, RelocationRecord
from horcrux.views import HarryView, harry_view
from horcrux_tools.echo.ablation import BEGIN, END, paired, render_section
from horcrux_tools.echo.baseline import CounterBaseline
from horcrux_tools.echo.season import play

ROOT = Path(__file__).resolve().parents[2]


def fresh() -> EchoMemory:
    return EchoMemory(agent="planner", opponent="reference")


def summary(game_id: str, relocations: list[int | None], decoys: list[bool | None]) -> GameSummary:
    return GameSummary(
        game_id=game_id,
        rules="classic",
        harry="planner",
        voldemort="reference",
        harry_kind="ai",
        voldemort_kind="ai",
        winner="harry",
        end_reason="all_destroyed",
        turns=30,
        last_seq=60,
        destroyed=3,
        attacks_used=4,
        attacks_wasted_decoy=0,
        attacks_wasted_empty=0,
        belief=None,
        relocations=tuple(
            RelocationRecord(
                turn=5, from_location="azkaban", to_location="shack", turns_since_positive=t
            )
            for t in relocations
        ),
        decoys=tuple(
            DecoyRecord(
                turn=8, location="shack", at_harry_top=None, attacked_turn=None, at_rule_top=hit
            )
            for hit in decoys
        ),
    )


# ---------------------------------------------------------------- the counter baseline
def test_the_counter_baseline_counts_the_three_rates() -> None:
    counter = CounterBaseline()
    assert counter.rates() == {"relocates": None, "immediate": None, "plant_top": None}
    counter.add(summary("a", [0, 0, 3], [True, False]))
    counter.add(summary("b", [], [True, None]))  # a decoy without a rule verdict: not counted
    counter.add(summary("c", [None], []))
    assert counter.rates() == {"relocates": 2 / 3, "immediate": 2 / 4, "plant_top": 2 / 3}
    models = rate_models(counter.rates())
    assert models is not None
    trigger = {m.name: m for m in models}["trigger"]
    assert trigger.prior == round(max(0.1, 2 / 3 * 2 / 4), 4) and trigger.plant == round(2 / 3, 3)


# ---------------------------------------------------------------- the style posterior
def test_the_bayes_factors_recomputed_from_the_events_are_the_played_filters() -> None:
    plan = MemoryPlan(joined_models(rate_models({"relocates": 0.2, "immediate": 0.5})))
    played = play(CLASSIC, 11, "shadow", plan, "g")
    again = style.replay_factors(CLASSIC, plan.models, played.events)
    assert set(again) == set(played.factors) and "learned-trigger" in again
    assert all(abs(again[u] - played.factors[u]) < 1e-6 for u in again)


# ---------------------------------------------------------------- decisions
def constructed_view() -> HarryView:
    """Seed 3: three positive searches at a real Horcrux (azkaban), Voldemort passing."""
    state, started = engine.new_game(CLASSIC, 3)
    assert started.horcruxes[0] == "azkaban"
    for _ in range(3):
        state, _ = engine.apply(state, Search(location="azkaban"))
        state, _ = engine.apply(state, Pass())
    return harry_view(state)


def decided(memory: EchoMemory | None, layers: Layers = ALL_LAYERS) -> PlannerHarry:
    harry = PlannerHarry(CLASSIC)
    plan = memory_plan(memory, layers)
    if plan is not None and plan.models:
        harry.adopt_memory(plan.models, plan.params)
    harry.sync(constructed_view())
    return harry


def decide(memory: EchoMemory | None, rng: random.Random | None) -> str:
    return decided(memory).choose(constructed_view(), rng).kind


def attack_chance(memory: EchoMemory | None, layers: Layers = ALL_LAYERS) -> float:
    """P(the planner attacks azkaban now), drawn from his private stream: the race plan's
    share when he plays the race, else 1 or 0 as the deterministic rule says."""
    harry = decided(memory, layers)
    choice = harry.choose(constructed_view(), None)
    race = harry.belief.race_plan()
    if race is not None:
        return float(race[CLASSIC.locations.index("azkaban")])
    return 1.0 if choice.move == Attack(location="azkaban") else 0.0


@pytest.mark.parametrize(
    ("subject", "rate"),
    [("threshold", 0.8), ("immediate", 0.0)],
)
def test_a_correction_changes_the_planners_decision(subject: str, rate: float) -> None:
    # without memory the rule searches again (occupancy 0.42, below its 0.5); told that
    # this opponent waits until Harry is surer (threshold 0.8) or does not move at once,
    # the filter keeps the Horcrux where the positives are, and the planner attacks (a
    # threshold attack, or, with the map-reading models now weighing 0.54 for the
    # threshold correction, the race's attack with its probability, 0.42)
    assert decide(None, None) == "search" and attack_chance(None) == 0.0
    corrected = add_correction(fresh(), wrong="", right="", subject=subject, rate=rate)
    assert attack_chance(corrected, replace(ALL_LAYERS, gate=False)) > 0.4
    # a correction is a claim about the opponent: for the style's models it passes the
    # memory gate like the evidence, so with no game scored yet (S = 0) the planner's
    # models are its defaults, and once the memory's plans have out-predicted the default
    # prior (S well above the margin) the correction reaches them; who memory says the
    # opponent is takes it at once (`echo.opponent`: the next game plays against it)
    assert models_plan(corrected) is None and attack_chance(corrected) == 0.0
    told = memory_plan(corrected)
    assert told is not None and told.models == () and told.opponent is not None
    scored = Style(
        id="style", subject="style", text="", created=0.0, last_access=0.0, life=50.0, gate=20.0
    )
    trusted = corrected.model_copy(update={"items": (*corrected.items, scored)})
    assert attack_chance(trusted) > 0.4


def test_a_preference_changes_the_planners_decision() -> None:
    assert decide(None, random.Random(0)) == "attack"
    prefers = add_correction(
        fresh(), wrong="", right="never rush", subject="hesitate", rate=1.0, kind="preference"
    )
    plan = memory_plan(prefers)
    assert plan is not None and plan.params == {"hesitate": 1.0}
    assert decide(prefers, random.Random(0)) == "search"


# ---------------------------------------------------------------- the generated table
def test_the_ablation_section_of_the_docs_is_the_generators() -> None:
    data = json.loads((ROOT / "docs" / "seasons.json").read_text())
    text = (ROOT / "docs" / "ECHO.md").read_text()
    section = text[text.index(BEGIN) : text.index(END) + len(END)]
    assert render_section(data) == section
    assert data["games"] == 200 and data["seed"] == 0
    assert [s["voldemort"] for s in data["seasons"]] == [
        "decoy-heavy",
        "late",
        "reference",
        "shadow",
        "shadow:0.35",
    ]
    assert [(s["switch_to"], s["switch_at"]) for s in data["seasons"]][-1] == ("shadow:0.8", 100)
    assert [(c["voldemort"], c["correction"]["subject"]) for c in data["corrections"]] == [
        ("late", "immediate"),
        ("decoy-heavy", "plant_blind"),
        ("shadow", "threshold"),
    ]
    assert data["correction_games"] == 5 and data["correction_scopes"] == 40
    assert all(len(c["wins"]["corrected"]) == 200 for c in data["corrections"])


def test_the_paired_standard_error_is_the_sd_of_the_differences_over_root_n() -> None:
    diff, se = paired([1, 1, 0, 1], [0, 1, 0, 0])  # differences 1, 0, 0, 1
    assert diff == pytest.approx(50.0)
    assert se == pytest.approx(100 * (1 / 3) ** 0.5 / 2)  # sd = sqrt(1/3), n = 4
    assert paired([1, 0], [1, 0]) == (0.0, 0.0)


def test_the_corrected_arm_starts_from_the_operators_correction() -> None:
    from horcrux.echo.config import default_config
    from horcrux_tools.echo.season import CORRECTED, Arm

    arm = Arm(CORRECTED, "late", default_config(), ("immediate", 0.0))
    belief = arm.memory.active_beliefs()["immediate"]
    assert belief.source == "correction" and belief.corrected_rate == 0.0
    first = arm.plan()  # the style's models held back by the gate until games confirm
    assert first is not None and first.models == ()  # them; who he is steers at once
    assert first.opponent is not None
    assert all(p.trigger != "positive" or p.delay > 0 for p in first.opponent.policies[:3])
    plan = full_plan(arm.memory)
    assert plan is not None
    learned = {m.name: m for m in plan.models}["learned-trigger"]
    assert learned.prior < 0.1  # P(at once) = 0: the learned trigger model at its floor
    with pytest.raises(ValueError, match="needs a correction"):
        Arm(CORRECTED, "late", default_config())


# ---------------------------------------------------------------- a copy of Harry's brain
def _played_maps(voldemort: str, plan: MemoryPlan | None, turns: int) -> tuple[list, list]:
    """Harry's map and the copy's after each of Voldemort's first `turns` turns."""
    from horcrux import rng
    from horcrux.views import voldemort_view
    from horcrux_tools.echo.season import brains

    harry, vold = brains(CLASSIC, voldemort, plan)
    state, _ = engine.new_game(CLASSIC, 7)
    mine, copy = [], []
    while not state.over and state.turn <= turns:
        if state.phase == "harry":
            move = harry.decide(harry_view(state), rng.stream(7, "harry", state.turn))
            state, _ = engine.apply(state, move)
        else:
            vmove = vold.decide(voldemort_view(state), rng.stream(7, "voldemort", state.turn))
            harry.sync(harry_view(state))  # Harry folds the turn in as the copy did
            mine.append(harry.belief.marginals().tolist())
            copy.append(vold.copy.belief.marginals().tolist())
            state, _ = engine.apply(state, vmove)
    return mine, copy


@pytest.mark.parametrize("voldemort", ["mirror", "ambush"])
def test_a_copy_of_harrys_brain_in_a_season_holds_his_memory_too(voldemort: str) -> None:
    """The memory comes from past games Voldemort saw whole: his copy plays Harry's
    plan, and holds Harry's very map; a copy without it holds another one."""
    from horcrux.belief.bayes import MODES

    learned = rate_models({"relocates": 0.9, "immediate": 0.2, "plant_top": 0.8})
    plan = MemoryPlan(models=joined_models(learned), params={"jitter": 0.25})
    from horcrux_tools.echo.season import brains

    harry, vold = brains(CLASSIC, voldemort, plan)
    assert vold.copy.belief.models == harry.belief.models == plan.models
    assert vold.copy.params == harry.params and harry.params.jitter == 0.25
    assert plan.models != MODES["aware"]
    mine, copy = _played_maps(voldemort, plan, 12)
    assert len(mine) >= 10 and mine == copy  # bit for bit, every turn
    bare_mine, bare_copy = _played_maps(voldemort, None, 12)
    assert bare_mine == bare_copy  # no memory: the default brain on both sides
    assert mine != bare_mine  # the plan changed the map the copy reads


def test_a_voldemort_without_a_copy_plays_a_season_game_with_a_plan() -> None:
    from horcrux_tools.echo.season import brains

    plan = MemoryPlan(models=joined_models(rate_models({"relocates": 0.5})), params={})
    harry, vold = brains(CLASSIC, "reference", plan)
    assert harry.belief.models == plan.models and not hasattr(vold, "copy")


def test_an_asserted_threshold_midway_goes_to_the_lower_one_whatever_the_bits() -> None:
    from horcrux.echo.use import nearest_threshold

    # 0.5 + 0.075 is 0.5750000000000001: nearer 0.65 in its last bits, midway in fact;
    # near-equal distances tie, and the lower threshold wins (`ties`)
    assert nearest_threshold(0.5 + 0.075) == 0.5
    assert nearest_threshold(0.65 + 0.075) == 0.65
    assert nearest_threshold(0.575) == 0.5
    assert nearest_threshold(0.6) == 0.65
