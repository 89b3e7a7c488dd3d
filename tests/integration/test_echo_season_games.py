"""The season-length halves of the ECHO unit files (`test_echo_decides.py`,
`test_echo_safety.py`, `test_echo_blind.py`, `test_echo_gate.py`): whole seasons of games,
a second or more each, so outside the unit tier's 30 s; their helpers come from those files."""

from __future__ import annotations

import json
import warnings

from test_echo_safety import CFG, _threshold_correction

from horcrux.belief.bayes import AdversaryModel, BayesBelief
from horcrux.echo import gate
from horcrux.echo.corrections import confirm_correction, retire_correction
from horcrux.echo.use import (
    MemoryPlan,
    joined_models,
    learned_rates,
    memory_line,
    memory_plan,
    models_plan,
)
from horcrux.models import HarryMoved, HarryRecord
from horcrux.rules import CLASSIC
from horcrux_tools.echo.ablation import BEGIN, END, render_section, run_ablation
from horcrux_tools.echo.season import play, run_season


def test_the_ablation_generator_runs_on_a_tiny_season() -> None:
    data = run_ablation(
        2,
        opponents=(("decoy-heavy", None),),
        corrections=(("late", "immediate", 0.0),),
        correction_games=2,
        correction_scopes=2,
        workers=1,
    )
    section = render_section(data)
    assert section.startswith(BEGIN) and section.endswith(END)
    assert "| full memory |" in section and "| `counter` baseline |" in section
    assert len(data["seasons"][0]["wins"]["no-style"]) == 2
    (c,) = data["corrections"]
    assert c["correction"] == {"subject": "immediate", "rate": 0.0}
    assert sorted(c["wins"]) == ["corrected", "no-beliefs", "on"]
    assert all(len(w) == 4 for w in c["wins"].values())  # 2 scopes of 2 games
    assert "| `late` | `immediate` = 0 |" in section


def test_compaction_folds_the_games_evidence_into_the_style_and_the_next_start_plays_it() -> None:
    from horcrux import compaction
    from horcrux.echo import persist
    from horcrux.service.ai import read_memory
    from horcrux.store import MemoryStore
    from horcrux.store.port import SeatInfo
    from horcrux_tools.selfplay import play_to_end, start_game

    store = MemoryStore()
    seats = {
        "harry": SeatInfo(kind="ai", brain="planner"),
        "voldemort": SeatInfo(kind="ai", brain="shadow"),
    }
    start_game(store, "g1", CLASSIC, 4, dict(seats))
    play_to_end(store, "g1")
    outcome = compaction.compact(store, "g1")
    assert outcome.memory is not None
    found = outcome.memory.memory.style()
    assert found is not None and found.games == 1
    assert set(found.scores) >= {"level0", "belief@0.5/naive", "rule", "early"}
    assert found.gate == 0.0  # no plan before the first game: nothing to score
    from collections import Counter

    # the gate holds the memory back until its plans out-predicted the default: the
    # start-up pins no models (the defaults play), only the line that says so
    start_game(store, "g2", CLASSIC, 5, dict(seats))
    read = read_memory(store, store.load("g2"), Counter())
    assert read.pin is not None
    body = json.loads(read.pin)
    assert body["models"] is None and "memory held back" in body["line"]
    seed = 5
    while models_plan(persist.load(store, "planner", "shadow")[0]) is None:
        game = f"g{seed - 3}"
        if seed > 5:
            start_game(store, game, CLASSIC, seed, dict(seats))
        play_to_end(store, game)
        assert compaction.compact(store, game).memory is not None
        seed += 1
        assert seed < 16, "the gate never opened against shadow (12 games)"
    # then the next game's start-up pins the style-weighted model set (pin v2)
    start_game(store, "next", CLASSIC, seed, dict(seats))
    read = read_memory(store, store.load("next"), Counter())
    assert read.pin is not None
    body = json.loads(read.pin)
    plan = models_plan(persist.load(store, "planner", "shadow")[0])
    assert plan is not None and body["v"] == 2
    assert [m["prior"] for m in body["models"]] == [m.prior for m in plan.models]


def test_a_right_threshold_correction_vs_shadow_raises_no_conflict() -> None:
    from horcrux_tools.echo.season import CORRECTED, Arm, play

    arm = Arm(CORRECTED, "shadow", CFG, ("threshold", 0.5))
    for g in range(12):
        arm.learn(play(CLASSIC, g, "shadow", arm.plan(), f"r{g}"))
        assert not _threshold_correction(arm.memory).conflict
    assert _threshold_correction(arm.memory).confidence > 0.9


def test_a_wrong_threshold_correction_vs_shadow_is_flagged_within_30_games() -> None:
    """The played games' evidence (the filter's Bayes factors of the belief-reacting
    models, which the correction pushed towards 0.8) contradicts a `shadow`'s 0.8."""
    from horcrux_tools.echo.season import CORRECTED, Arm, play

    arm = Arm(CORRECTED, "shadow", CFG, ("threshold", 0.8))
    flagged_at = None
    for g in range(30):
        arm.learn(play(CLASSIC, g, "shadow", arm.plan(), f"t{g}"))
        if _threshold_correction(arm.memory).conflict:
            flagged_at = g
            break
    assert flagged_at is not None and flagged_at < 30
    c = _threshold_correction(arm.memory)
    assert c.confidence < CFG.conflict_below and "evidence favours 0.5" in c.text
    from horcrux.echo.ops import _item_view, _scope_view

    assert _scope_view(arm.memory)["conflicts"] == [c.id]
    view = _item_view(c, arm.memory.clock)
    assert view["conflict"] is True and view["evidence"]["games"] == flagged_at + 1
    confirmed = confirm_correction(arm.memory, c.id)
    again = _threshold_correction(confirmed)
    assert not again.conflict and again.confidence == 1.0 and again.evidence_games == 0
    assert again.confirmed == 1 and "contradicted" not in again.text
    retired = retire_correction(arm.memory, c.id)
    assert _threshold_correction(retired).valid_to is not None
    assert _scope_view(retired)["conflicts"] == []


def test_a_season_against_decoy_heavy_learns_the_rate_and_the_planner_plays_it() -> None:
    season = run_season("decoy-heavy", 6, seed=0, arms=("on", "no-beliefs"))
    memory = season.memory
    assert memory is not None
    blind = learned_rates(memory)["plant_blind"]
    assert blind is not None and blind > 0.5
    plan = memory_plan(memory)
    assert plan is not None
    names = {m.name: m for m in plan.models}
    assert "learned-greedy" in names and names["learned-greedy"].placement == "greedy"
    # the consumer changes Harry's map: a decoy-heavy game's blind decoy is rated a decoy
    played = play(CLASSIC, 100, "decoy-heavy", None, "g")
    where = CLASSIC.locations.index(played.summary.decoys[0].location)
    turn = played.summary.decoys[0].turn
    records = [
        HarryRecord(turn=e.turn, action=e.action, observations=e.observations)
        for e in played.events
        if isinstance(e, HarryMoved) and e.turn <= turn
    ]
    assert records

    def decoy_at(models: tuple[AdversaryModel, ...]) -> float:
        b = BayesBelief(CLASSIC, models=models)
        for r in records:
            b.update(r)
        return float(b.decoy_probability()[where])

    default = decoy_at(MemoryPlan(joined_models(None)).models)
    assert decoy_at(plan.models) > default + 0.1


def test_against_decoy_heavy_the_gate_opens_within_a_few_games() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        season = run_season("decoy-heavy", 6, seed=0, arms=("on", "off"))
    opened = next(g for g, s in enumerate(season.gates) if s > gate.MARGIN)
    assert opened <= 4
    assert season.planned[0] is False and all(season.planned[opened + 1 :])
    plan = memory_plan(season.memory)
    assert plan is not None
    assert season.memory is not None and memory_line(season.memory) is not None
    assert "held back" not in (memory_line(season.memory) or "")


def test_a_season_plays_every_arm_on_the_same_seeds() -> None:
    season = run_season("decoy-heavy", 3, seed=5, arms=("on", "off", "counter"))
    assert set(season.wins) == {"on", "off", "counter"}
    assert all(len(w) == 3 for w in season.wins.values())
    # the off arm is the plain planner on seeds 5..7; game 1 of every arm has no memory yet
    plain = [play(CLASSIC, 5 + g, "decoy-heavy", None, f"x{g}").summary.winner for g in range(3)]
    assert season.wins["off"] == [int(w == "harry") for w in plain]
    assert season.wins["on"][0] == season.wins["counter"][0] == season.wins["off"][0]
    data = season.as_dict()
    assert set(data["arms"]) == {"on", "off", "counter"}
    assert "second_half_over_counter_points" in data
