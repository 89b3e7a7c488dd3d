"""How well each memory-window rebuild prior knows where the Horcruxes are, on the same games.

A prior's in-play log loss mixes two things: how good its belief is, and which games its
own decisions lead to (a Harry who loses plays longer, harder turns). This separates
them: the default `planner-window:W` plays every game against the reference Voldemort,
and at each of its turns past the first W, one shadow window brain per rebuild prior
rebuilds its belief from the same view; each shadow's occupancy is scored against the
true positions (mean binary log loss per location, in nats, as in the evaluation).
Classic preset, seeds 0..N-1.

    .venv/bin/python benchmarks/window_calibration.py [games] [W ...]
"""

from __future__ import annotations

import sys

from horcrux import engine, rng
from horcrux.agents import VOLDEMORT_BRAINS
from horcrux.agents.planner import REBUILD_PRIORS, WindowPlannerHarry
from horcrux.rules import CLASSIC
from horcrux.views import harry_view, voldemort_view
from horcrux_tools.evaluation.metrics import calibration_terms


def score(window: int, games: int) -> tuple[dict[str, float], int]:
    """Mean log loss per rebuild prior over the turns where the window forgot something."""
    totals = dict.fromkeys(REBUILD_PRIORS, 0.0)
    turns = 0
    for seed in range(games):
        state, _ = engine.new_game(CLASSIC, seed)
        holder = [state]
        actor = WindowPlannerHarry(CLASSIC, window)
        shadows = {p: WindowPlannerHarry(CLASSIC, window, prior=p) for p in REBUILD_PRIORS}
        voldemort = VOLDEMORT_BRAINS.create("reference", CLASSIC, truth=lambda h=holder: h[0])
        while not state.over:
            if state.phase == "harry":
                view = harry_view(state)
                move = actor.decide(view, rng.stream(seed, "harry", state.turn))
                if len(view.history) > window:
                    turns += 1
                    for prior, shadow in shadows.items():
                        shadow.sync(view)
                        occupancy = shadow.belief.occupancy()
                        terms = calibration_terms(occupancy, state.horcruxes, state.horcruxes_left)
                        totals[prior] += terms[1]
                state, _ = engine.apply(state, move)
            else:
                vmove = voldemort.decide(
                    voldemort_view(state), rng.stream(seed, "voldemort", state.turn)
                )
                state, _ = engine.apply(state, vmove)
            holder[0] = state
    return {p: v / max(1, turns) for p, v in totals.items()}, turns


def main() -> None:
    games = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    windows = [int(w) for w in sys.argv[2:]] or [8, 16, 32]
    print(f"log loss on the default window brain's games (classic, reference, {games} games)")
    print(f"{'W':>3} {'turns':>6}  " + "  ".join(f"{p:>9}" for p in REBUILD_PRIORS))
    for window in windows:
        losses, turns = score(window, games)
        print(f"{window:>3} {turns:>6}  " + "  ".join(f"{losses[p]:9.4f}" for p in REBUILD_PRIORS))


if __name__ == "__main__":
    main()
