"""How far the planner's policy gets against `mirror` when it knows mirror's rule exactly.

Harry's belief holds one adversary model, the exact `rule` model (the copy of his code
moves what his rule attacks, to the lowest location of his map, and plants its decoys
at his top free location), at full weight from turn 1; he plays the race (`race_attack`)
while his exposure is at least RACE_FROM (it is 1 until his map says mirror's charges
may be spent), and `mirror`'s copy is the same brain. This separates the
policy from the identification: the default planner must first learn, from the game,
that he faces `mirror` at all (docs/MEMORY.md, "What was tried against it").

    .venv/bin/python benchmarks/mirror_knows.py [games] [--no-fill] [--cost C] [--no-decoys]

`--no-fill` predicts the destination on the map before the move (the exact model before
`fill`); `--cost C` scales the race's cost of an attack (`race_cost`, default 1);
`--no-decoys` plays `mirror` without its decoys, and a Harry who expects none.
"""

from __future__ import annotations

import argparse
import random
from collections import Counter
from dataclasses import replace

from mirror_anatomy import play_counted  # the sibling script: run from the repository root

from horcrux.agents.adversaries import MirrorVoldemort
from horcrux.agents.base import VoldemortMove
from horcrux.agents.planner import RANDOMISED, PlannerHarry
from horcrux.belief.bayes import RACE_FROM, BayesBelief, rule_model
from horcrux.models import Pass, PlantDecoy
from horcrux.rules import CLASSIC
from horcrux.views import VoldemortView


def knowing_harry(fill: bool, cost: float, decoys: bool) -> PlannerHarry:
    model = replace(
        rule_model(1.0, race=RACE_FROM),
        exact=True,
        fill=fill,
        race_cost=cost,
        plant=1.0 if decoys else 0.0,
    )
    belief = BayesBelief(CLASSIC, "aware-race", models=(model,))
    return PlannerHarry(CLASSIC, "aware-race", RANDOMISED, belief=belief)


class KnownMirror(MirrorVoldemort):
    """`mirror` whose copy is the knowing Harry (optionally without decoys)."""

    def __init__(self, copy: PlannerHarry, decoys: bool) -> None:
        super().__init__(CLASSIC)
        self.copy = copy
        self.decoys = decoys

    def decide(self, view: VoldemortView, rng: random.Random) -> VoldemortMove:
        move = super().decide(view, rng)
        return Pass() if isinstance(move, PlantDecoy) and not self.decoys else move


def play(games: int, fill: bool, cost: float, decoys: bool) -> Counter[str]:
    counts: Counter[str] = Counter()
    for seed in range(games):
        voldemort = KnownMirror(knowing_harry(fill, cost, decoys), decoys)
        play_counted(seed, knowing_harry(fill, cost, decoys), voldemort, counts)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("games", nargs="?", type=int, default=200)
    parser.add_argument("--no-fill", action="store_true")
    parser.add_argument("--cost", type=float, default=1.0)
    parser.add_argument("--no-decoys", action="store_true")
    args = parser.parse_args()
    counts = play(args.games, not args.no_fill, args.cost, not args.no_decoys)
    label = (
        f"fill={'off' if args.no_fill else 'on'} cost={args.cost:g} "
        f"decoys={'off' if args.no_decoys else 'on'}"
    )
    print(
        f"a Harry who knows mirror's rule ({label}), {args.games} games, seeds 0-{args.games - 1}:"
    )
    print(f"  wins {100 * counts['wins'] / args.games:.1f}%")
    for key in sorted(k for k in counts if k != "wins"):
        print(f"  {key:22s} {counts[key] / args.games:.2f} a game")


if __name__ == "__main__":
    main()
