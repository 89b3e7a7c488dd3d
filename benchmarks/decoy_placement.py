"""Where an adversary's decoys land, and what the filter's factorised decoy odds lose there.

Each model of Harry's filter keeps one decoy probability per location,
c_j = P(decoy at j | no Horcrux at j), the same for every Horcrux set. An adversary who
plants at the top *free* location of a ranking (Harry's map for `mirror` and `shadow`, the
public evidence for `reference`) puts the decoy where it does because of which better
locations hold a Horcrux, and that dependence is what the factorisation drops. For each
decoy planted (classic preset, seeds 0..N-1, the default planner as Harry) this counts:

* `loss-free`: every location ranked above the decoy's was surely taken (a Horcrux or a
  decoy with probability >= 0.95) under MODEL, the model of Harry's filter written for
  this adversary: the decoy went there in every set MODEL weighs, and c_j says it exactly;
* `set-dependent`: some location above was taken with probability between 0.05 and 0.95:
  where the decoy went depends on the set, and a per-set c could say more;

and how many of Harry's attacks a game end on a decoy of each kind.

    .venv/bin/python benchmarks/decoy_placement.py VOLDEMORT MODEL [games]

e.g. `mirror rule`, `shadow:0.5:aware-copy belief@0.5`, `reference trigger`.
"""

from __future__ import annotations

import sys
from collections import Counter

from horcrux import engine, rng
from horcrux.agents import HARRY_BRAINS, VOLDEMORT_BRAINS
from horcrux.agents.voldemort import public_evidence
from horcrux.belief.bayes import BayesBelief
from horcrux.models import PlantDecoy
from horcrux.rules import CLASSIC
from horcrux.views import harry_view, voldemort_view

SURE = 0.95


def _kind(side: BayesBelief, model: str, ranking: dict[str, float], planted: str) -> str:
    """`loss-free` or `set-dependent` for a decoy at `planted`, on `side`'s model `model`."""
    i = [m.name for m in side.models].index(model)
    m = side.model_marginals()[i].tolist()
    c = side.model_decoy_odds()[i].tolist()
    locs = CLASSIC.locations
    taken = {loc: m[j] + (1.0 - m[j]) * c[j] for j, loc in enumerate(locs)}
    order = sorted(locs, key=lambda loc: -ranking[loc])
    above = order[: order.index(planted)]
    unsure = [loc for loc in above if 1.0 - SURE < taken[loc] < SURE]
    return "set-dependent" if unsure else "loss-free"


def play(seed: int, voldemort: str, model: str, counts: Counter[str]) -> None:
    harry = HARRY_BRAINS.create("planner", CLASSIC)
    adversary = VOLDEMORT_BRAINS.create(voldemort, CLASSIC)
    side = BayesBelief(CLASSIC)  # Harry's own map, kept beside the game
    by_evidence = voldemort.startswith(("reference", "delayed"))
    kinds: dict[str, str] = {}
    state, _ = engine.new_game(CLASSIC, seed)
    while not state.over:
        if state.phase == "harry":
            move = harry.decide(harry_view(state), rng.stream(seed, "harry", state.turn))
            state, event = engine.apply(state, move)
            for obs in getattr(event, "observations", ()):
                if obs.kind == "attack" and obs.outcome == "decoy":
                    counts[f"attacks on {kinds.get(obs.location, 'unknown')} decoys"] += 1
            continue
        view = voldemort_view(state)
        vmove = adversary.decide(view, rng.stream(seed, "voldemort", state.turn))
        if isinstance(vmove, PlantDecoy):
            for record in view.history:
                if record.turn > side.turn:
                    side.update(record)
            ranking = public_evidence(CLASSIC, view.history) if by_evidence else side.occupancy()
            kinds[vmove.location] = kind = _kind(side, model, ranking, vmove.location)
            counts[f"{kind} decoys"] += 1
        state, _ = engine.apply(state, vmove)


def main() -> None:
    voldemort, model = sys.argv[1], sys.argv[2]
    games = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    counts: Counter[str] = Counter()
    for seed in range(games):
        play(seed, voldemort, model, counts)
    print(f"planner against {voldemort}, model {model}, {games} games (per game):")
    for key, value in sorted(counts.items()):
        print(f"  {key:34s} {value / games:.2f}")


if __name__ == "__main__":
    main()
