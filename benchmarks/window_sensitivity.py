"""What the memory-window figures depend on: the search rule's target and the rebuild prior.

The specification's memory ablation (the same Bayes Harry recalling only his last W events: 25.8% /
51.6% / 67.4% at W = 8 / 16 / 32, 81.5% with full memory) does not say how its Harry
scored a search, nor what his rebuild assumed about the turns he forgot. This plays, on
the same seeds against the reference Voldemort (classic preset), the memory-window brain
(the trigger filter, the reference threshold rule as written) with full memory and with
each window under:

* `horcrux` target, `reference` prior: the shipped `planner-window:W` (the expected
  information about where the *Horcruxes* are: a decoy's response is noise);
* `responds` target, `forecast` prior: the reference search score I_j (the information about
  whether the location *responds*, decoys included), with the unfitted forecast prior;
* `responds` target, `reference` prior.

    .venv/bin/python benchmarks/window_sensitivity.py [games] [workers]

The variants are registered as a third-party Harry brain (`window-variant:W/target/prior`,
W = 0 for full memory), so `horcrux_tools.sim.run_games` plays them in its worker processes.
"""

from __future__ import annotations

import os
import sys
import time
from dataclasses import replace

from horcrux.agents import HARRY_BRAINS, BrainOptions, HarryBrain
from horcrux.agents.planner import REFERENCE_RULE, WindowPlannerHarry
from horcrux.rules import CLASSIC
from horcrux_tools.sim import run_games

WINDOWS = (0, 8, 16, 32)
VARIANTS = (("horcrux", "reference"), ("responds", "forecast"), ("responds", "reference"))
REFERENCE = {
    0: 81.5,
    8: 25.8,
    16: 51.6,
    32: 67.4,
}  # the specification's figures, reference Voldemort


@HARRY_BRAINS.register("window-variant", description="benchmark only", seat_allowed=False)
def _variant(options: BrainOptions) -> HarryBrain:
    window, target, prior = (options.param or "0/horcrux/reference").split("/")
    params = replace(REFERENCE_RULE, info_target=target)
    return WindowPlannerHarry(options.rules, int(window) or None, "trigger", prior, params)


def win_rate(spec: str, games: int, workers: int) -> float:
    wins = sum(
        r.winner == "harry" for r in run_games(CLASSIC, spec, "reference", games, 0, workers)
    )
    return 100.0 * wins / games


def main() -> None:
    games = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    workers = int(sys.argv[2]) if len(sys.argv) > 2 else (os.cpu_count() or 1)
    start = time.perf_counter()
    print(f"trigger planner vs reference, classic, seeds 0..{games - 1}, win rate %")
    print(
        f"{'search target, prior':<24}"
        + "".join(f"{f'W = {w}' if w else 'full':>9}" for w in WINDOWS)
    )
    full: dict[str, float] = {}  # full memory does not depend on the rebuild prior
    for target, prior in VARIANTS:
        if target not in full:
            full[target] = win_rate(f"window-variant:0/{target}/{prior}", games, workers)
        rates = [full[target]] + [
            win_rate(f"window-variant:{w}/{target}/{prior}", games, workers) for w in WINDOWS[1:]
        ]
        print(f"{target + ', ' + prior:<24}" + "".join(f"{r:>9.1f}" for r in rates))
    print(f"{'reference figures':<24}" + "".join(f"{REFERENCE[w]:>9.1f}" for w in WINDOWS))
    print(f"({time.perf_counter() - start:.0f} s on {workers} workers)")


if __name__ == "__main__":
    main()
