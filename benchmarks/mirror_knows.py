"""How far the planner's policy gets against `mirror` when it knows mirror's rule exactly.

Harry's belief holds one adversary model, the exact `rule` model (the copy of his code
moves what his rule attacks, to the lowest location of his map, and plants its decoys
at his top free location), at full weight from turn 1; he plays the race (`race_attack`)
while his exposure is at least RACE_FROM (it is 1 until his map says mirror's charges
may be spent), and `mirror`'s copy is the same brain. This separates the
policy from the identification: the default planner must first learn, from the game,
that he faces `mirror` at all (docs/MEMORY.md, "What was tried against it").

    .venv/bin/python benchmarks/mirror_knows.py [games] [--no-fill] [--cost C] [--no-decoys]
        [--decoy-oracle] [--default]

`--no-fill` predicts the destination on the map before the move (the exact model before
`fill`); `--cost C` scales the race's cost of an attack (`race_cost`, default 1);
`--no-decoys` plays `mirror` without its decoys, and a Harry who expects none;
`--decoy-oracle` tells Harry (and mirror's copy of him) where every decoy stands, at the
start of each turn, as a reveal no seat can make: an upper bound on what inferring the
decoys could be worth; `--default` plays the default planner (and `mirror` a copy of it)
instead of the Harry who knows the rule.
"""

from __future__ import annotations

import argparse
import random
from collections import Counter
from dataclasses import replace

from mirror_anatomy import play_counted  # the sibling script: run from the repository root

from horcrux.agents.adversaries import MirrorVoldemort
from horcrux.agents.base import HarryMove, VoldemortMove
from horcrux.agents.planner import RANDOMISED, PlannerHarry
from horcrux.belief.bayes import RACE_FROM, BayesBelief, rule_model
from horcrux.models import Pass, PlantDecoy
from horcrux.rules import CLASSIC
from horcrux.views import HarryView, VoldemortView


class Oracle:
    """Where the decoys stand, as `KnownMirror` last saw them (and planted one)."""

    def __init__(self) -> None:
        self.decoys: tuple[str, ...] = ()


class OracleHarry(PlannerHarry):
    """A planner told where every decoy stands before he decides (a diagnostic: the
    reveal goes to the filters directly, and the next turn's race plan is rebuilt)."""

    oracle: Oracle

    def decide(self, view: HarryView, rng: random.Random) -> HarryMove:
        self.sync(view)
        belief = self.belief
        for location in self.oracle.decoys:
            belief._filters.reveal(belief._index[location], "decoy")
        belief._cache = None
        belief._maps()  # the race plan, on the map that knows the decoys
        return super().decide(view, rng)


def knowing_harry(
    fill: bool, cost: float, decoys: bool, oracle: Oracle | None = None
) -> PlannerHarry:
    model = replace(
        rule_model(1.0, race=RACE_FROM),
        exact=True,
        fill=fill,
        race_cost=cost,
        plant=1.0 if decoys else 0.0,
    )
    belief = BayesBelief(CLASSIC, "aware-race", models=(model,))
    if oracle is None:
        return PlannerHarry(CLASSIC, "aware-race", RANDOMISED, belief=belief)
    harry = OracleHarry(CLASSIC, "aware-race", RANDOMISED, belief=belief)
    harry.oracle = oracle
    return harry


def default_harry(oracle: Oracle | None) -> PlannerHarry:
    if oracle is None:
        return PlannerHarry(CLASSIC)
    harry = OracleHarry(CLASSIC)
    harry.oracle = oracle
    return harry


class KnownMirror(MirrorVoldemort):
    """`mirror` whose copy is the knowing Harry (optionally without decoys)."""

    def __init__(self, copy: PlannerHarry, decoys: bool, oracle: Oracle | None = None) -> None:
        super().__init__(CLASSIC)
        self.copy = copy
        self.decoys = decoys
        self.oracle = oracle

    def decide(self, view: VoldemortView, rng: random.Random) -> VoldemortMove:
        if self.oracle is not None:  # what the copy is told: the decoys standing now
            self.oracle.decoys = view.decoy_locations
        move = super().decide(view, rng)
        if isinstance(move, PlantDecoy) and not self.decoys:
            return Pass()
        if isinstance(move, PlantDecoy) and self.oracle is not None:  # Harry's next turn
            self.oracle.decoys = (*view.decoy_locations, move.location)
        return move


def play(
    games: int, fill: bool, cost: float, decoys: bool, told: bool = False, default: bool = False
) -> Counter[str]:
    counts: Counter[str] = Counter()
    for seed in range(games):
        oracle = Oracle() if told else None
        if default:
            harry, copy = default_harry(oracle), default_harry(oracle)
        else:
            harry = knowing_harry(fill, cost, decoys, oracle)
            copy = knowing_harry(fill, cost, decoys, oracle)
        play_counted(seed, harry, KnownMirror(copy, decoys, oracle), counts)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("games", nargs="?", type=int, default=200)
    parser.add_argument("--no-fill", action="store_true")
    parser.add_argument("--cost", type=float, default=1.0)
    parser.add_argument("--no-decoys", action="store_true")
    parser.add_argument("--decoy-oracle", action="store_true")
    parser.add_argument("--default", action="store_true")
    args = parser.parse_args()
    counts = play(
        args.games,
        not args.no_fill,
        args.cost,
        not args.no_decoys,
        args.decoy_oracle,
        args.default,
    )
    label = (
        f"fill={'off' if args.no_fill else 'on'} cost={args.cost:g} "
        f"decoys={'off' if args.no_decoys else 'on'}"
        f"{', told the decoys' if args.decoy_oracle else ''}"
    )
    who = f"a Harry who knows mirror's rule ({label})"
    if args.default:
        who = "the default planner" + (", told the decoys," if args.decoy_oracle else "")
    print(f"{who} against mirror, {args.games} games, seeds 0-{args.games - 1}:")
    print(f"  wins {100 * counts['wins'] / args.games:.1f}%")
    for key in sorted(k for k in counts if k != "wins"):
        print(f"  {key:22s} {counts[key] / args.games:.2f} a game")


if __name__ == "__main__":
    main()
