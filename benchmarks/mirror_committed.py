"""The default planner's models, committed to `rule` from turn 1, against a copy of itself.

`benchmarks/mirror_knows.py` plays a Harry who holds one adversary model, mirror's exact
`rule`. This script keeps every model of the default (`aware-copy`) and only moves the
priors: `rule` gets PRIOR and the others share 1 - PRIOR in their default proportions
(at PRIOR = 1 their filters still run, at weight 0). `mirror`'s copy is the same brain.
It prints the win rate and the `rule` model's mean posterior weight every ten turns:
how far a mixture that is sure of the adversary from the start gets, beside the Harry
who has nothing else to believe (docs/MEMORY.md, "What the knowing Harry has").

    .venv/bin/python benchmarks/mirror_committed.py [games] [--prior P] [--race R]
        [--keep NAMES] [--rule-copies N]

`--race R` starts the race at exposure R (the default's 0.3; the knowing Harry's 0.2);
`--keep rule` keeps the `rule` model alone (the knowing Harry of mirror_knows.py),
`--keep rule,static` beside one other model, at weight 0 when P is 1; `--rule-copies N`
adds N copies of `rule` at prior 0, which change nothing but the size of the arrays the
filters are stacked in (and so the last bits of their products). Seeds 0..games-1,
classic preset.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from dataclasses import replace

import numpy as np

from horcrux import engine, rng
from horcrux.agents.adversaries import MirrorVoldemort
from horcrux.agents.planner import RANDOMISED, PlannerHarry
from horcrux.belief.bayes import DEFAULT_MODE, MODES, AdversaryModel, BayesBelief
from horcrux.rules import CLASSIC
from horcrux.views import harry_view, voldemort_view


def committed_models(
    prior: float,
    race: float | None,
    keep: tuple[str, ...] | None = None,
    rule_copies: int = 0,
) -> tuple[AdversaryModel, ...]:
    """The default's models (only those named in `keep`, if given) with `rule` at `prior`
    (and its race start at `race`), the others sharing 1 - prior; then `rule_copies`
    copies of the `rule` model at prior 0 (inert but for the arrays they widen)."""
    base = [m for m in MODES[DEFAULT_MODE] if keep is None or m.name in keep]
    others = sum(m.prior for m in base if m.name != "rule") or 1.0
    models = [
        replace(m, prior=prior, race=m.race if race is None else race)
        if m.name == "rule"
        else replace(m, prior=(1.0 - prior) * m.prior / others)
        for m in base
    ]
    rule = next(m for m in models if m.name == "rule")
    models += [replace(rule, name=f"rule-copy-{i}", prior=0.0) for i in range(rule_copies)]
    return tuple(models)


def play(games: int, models: tuple[AdversaryModel, ...]) -> tuple[int, dict[int, float]]:
    """Wins over seeds 0..games-1, and the `rule` model's mean weight at turns 10, 20, ..."""

    def brain() -> PlannerHarry:
        with np.errstate(divide="ignore"):  # at prior 1 the others' log prior is -inf: weight 0
            belief = BayesBelief(CLASSIC, "custom", models=models)
        return PlannerHarry(CLASSIC, DEFAULT_MODE, RANDOMISED, belief=belief)

    weight: dict[int, float] = defaultdict(float)
    seen: dict[int, int] = defaultdict(int)
    wins = 0
    for seed in range(games):
        state, _ = engine.new_game(CLASSIC, seed)
        harry = brain()
        voldemort = MirrorVoldemort(CLASSIC)
        voldemort.copy = brain()
        while not state.over:
            if state.phase == "harry":
                view = harry_view(state)
                move = harry.decide(view, rng.stream(seed, "harry", state.turn))
                if state.turn % 10 == 0:  # the weights the decision was made on
                    names = [m.name for m in harry.belief.models]
                    weight[state.turn] += harry.belief.model_weights()[names.index("rule")]
                    seen[state.turn] += 1
                state, _ = engine.apply(state, move)
            else:
                vmove = voldemort.decide(
                    voldemort_view(state), rng.stream(seed, "voldemort", state.turn)
                )
                state, _ = engine.apply(state, vmove)
        wins += state.winner == "harry"
    return wins, {t: weight[t] / seen[t] for t in sorted(weight)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("games", nargs="?", type=int, default=200)
    parser.add_argument("--prior", type=float, default=0.98)
    parser.add_argument("--race", type=float, default=None)
    parser.add_argument("--keep", default=None, help="only these models (comma-separated)")
    parser.add_argument("--rule-copies", type=int, default=0)
    args = parser.parse_args()
    keep = tuple(args.keep.split(",")) if args.keep else None
    models = committed_models(args.prior, args.race, keep, args.rule_copies)
    wins, weights = play(args.games, models)
    print(
        f"{len(models)} of the default's models ({', '.join(m.name for m in models)}), "
        f"rule at prior {args.prior:g}, against a copy of that brain, "
        f"{args.games} games, seeds 0-{args.games - 1}:"
    )
    print(f"  wins {100 * wins / args.games:.1f}% ({wins})")
    print("  rule weight by turn: " + ", ".join(f"{t}: {w:.3f}" for t, w in weights.items()))


if __name__ == "__main__":
    main()
