"""Memory over whole seasons (docs/ECHO.md, "The style" and "The gate"): the style's
threshold posterior converges to a `shadow`'s threshold, and against an opponent no style
describes the gate never opens, so memory on plays memory off game for game. Seasons of
12-16 games: the integration tier."""

from __future__ import annotations

import warnings

import pytest

from horcrux.echo import gate
from horcrux.echo.config import default_config
from horcrux.echo.use import full_plan, joined_models, memory_plan
from horcrux.rules import CLASSIC
from horcrux_tools.echo.season import Arm, play, run_season


@pytest.mark.parametrize("threshold", [0.35, 0.5, 0.8])
def test_the_threshold_learned_across_games_converges_to_shadows(threshold: float) -> None:
    spec = "shadow" if threshold == 0.5 else f"shadow:{threshold:g}"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # the style layer alone (`no-opponent`): with who the opponent is, Harry attacks
        # before shadow's threshold is reached, and shadow rarely shows it
        season = run_season(spec, 12, seed=0, arms=("no-opponent",))
    last = season.thresholds[-1]
    assert max(last, key=lambda t: last[t]) == f"{threshold:g}" and last[f"{threshold:g}"] > 0.8
    # and the next game's filter starts from it: the fitting models carry most of the
    # belief-reacting models' prior, and more than four times their default share of the
    # whole (0.31 against 0.055: the style's floor keeps 70% of the default prior, so the
    # game's own evidence can still overrule memory)
    plan = memory_plan(season.memory)
    assert plan is not None
    prior = {m.name: m.prior for m in plan.models}
    total = sum(prior.values())
    fit = sum(p for name, p in prior.items() if name.startswith(f"belief@{threshold:g}"))
    reacting = sum(p for name, p in prior.items() if name.startswith("belief@"))
    assert fit / reacting > 0.75
    default = {m.name: m.prior for m in joined_models(None)}
    default_fit = sum(p for n, p in default.items() if n.startswith(f"belief@{threshold:g}"))
    assert fit / total > 4 * default_fit / sum(default.values())


def test_against_an_opponent_no_style_describes_the_gate_never_opens() -> None:
    # an opponent who switches style every game (reference, then random): what the
    # memory learned from one game is wrong about the next, so its plans predict the
    # moves worse than the default prior (llr < 0 on most games), S stays below the
    # margin, every plan is None and memory on plays exactly memory off, game for game
    cfg = default_config()
    on, off, ungated = (Arm(name, "switcher", cfg) for name in ("on", "off", "no-gate"))
    llrs, scores = [], []
    for g in range(16):
        opponent = ("reference", "random")[g % 2]
        plans = {arm.name: arm.plan() for arm in (on, off, ungated)}
        assert plans["on"] is None and plans["off"] is None
        if g:  # the memory itself has learned something: only the gate holds it back
            assert full_plan(on.memory) is not None and plans["no-gate"] is not None
        games = {name: play(CLASSIC, 40 + g, opponent, p, f"s{g}") for name, p in plans.items()}
        assert games["on"].summary == games["off"].summary
        assert games["on"].events == games["off"].events
        for arm in (on, off, ungated):
            arm.learn(games[arm.name])
        found = on.memory.style()
        assert found is not None
        llrs.append(found.gate_last)
        scores.append(found.gate)
    assert all(s <= gate.MARGIN for s in scores)
    assert sum(x < 0.0 for x in llrs[1:]) >= 10 and sum(llrs) < -5.0
