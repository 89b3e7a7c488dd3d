"""Where Harry's attacks go against an adversary who runs his code (`mirror`).

For each game (classic preset, seeds 0..N-1) every attack of Harry's is classed by
whether the copy named that location the turn before (`MirrorVoldemort.predicted`:
"predicted") and by its outcome (destroyed, decoy, empty); Voldemort's relocations are
counted. Two variants of the same Voldemort separate his two weapons: `nomove` (mirror's
decoys, never a relocation) and `nodecoy` (mirror's relocations, never a decoy).
Figures are per game.

    .venv/bin/python benchmarks/mirror_anatomy.py [games] [harry] [mirror|nomove|nodecoy]
"""

from __future__ import annotations

import random
import sys
from collections import Counter

from horcrux import engine, rng
from horcrux.agents import HARRY_BRAINS
from horcrux.agents.adversaries import MirrorVoldemort
from horcrux.agents.base import HarryBrain, VoldemortMove
from horcrux.models import Pass, PlantDecoy, Relocate
from horcrux.rules import CLASSIC
from horcrux.views import VoldemortView, harry_view, voldemort_view


class NoMoveMirror(MirrorVoldemort):
    """Mirror's decoys, no relocation."""

    def decide(self, view: VoldemortView, rng: random.Random) -> VoldemortMove:
        move = super().decide(view, rng)
        return Pass() if isinstance(move, Relocate) else move


class NoDecoyMirror(MirrorVoldemort):
    """Mirror's relocations, no decoy."""

    def decide(self, view: VoldemortView, rng: random.Random) -> VoldemortMove:
        move = super().decide(view, rng)
        return Pass() if isinstance(move, PlantDecoy) else move


VARIANTS: dict[str, type[MirrorVoldemort]] = {
    "mirror": MirrorVoldemort,
    "nomove": NoMoveMirror,
    "nodecoy": NoDecoyMirror,
}


def play_counted(
    seed: int, brain: HarryBrain, voldemort: MirrorVoldemort, counts: Counter[str]
) -> None:
    """One game of `brain` against `voldemort` (a mirror), its attacks and moves counted."""
    state, _ = engine.new_game(CLASSIC, seed)
    predicted: str | None = None
    while not state.over:
        if state.phase == "harry":
            move = brain.decide(harry_view(state), rng.stream(seed, "harry", state.turn))
            state, event = engine.apply(state, move)
            for obs in getattr(event, "observations", ()):
                if obs.kind == "attack":
                    side = "predicted" if predicted == obs.location else "unpredicted"
                    counts[f"{side} {obs.outcome}"] += 1
        else:
            vmove = voldemort.decide(
                voldemort_view(state), rng.stream(seed, "voldemort", state.turn)
            )
            predicted = voldemort.predicted[-1][1]
            counts["relocations"] += isinstance(vmove, Relocate)
            state, _ = engine.apply(state, vmove)
    counts["wins"] += state.winner == "harry"
    counts["destroyed"] += state.destroyed


def anatomy(games: int, harry: str, variant: str) -> Counter[str]:
    """Counts over `games` games (seeds 0..games-1); the copy is of `harry`."""
    counts: Counter[str] = Counter()
    for seed in range(games):
        brain = HARRY_BRAINS.create(harry, CLASSIC)
        play_counted(seed, brain, VARIANTS[variant](CLASSIC, harry), counts)
    return counts


def main() -> None:
    games = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    harry = sys.argv[2] if len(sys.argv) > 2 else "planner"
    variant = sys.argv[3] if len(sys.argv) > 3 else "mirror"
    counts = anatomy(games, harry, variant)
    print(f"{harry} against {variant}, {games} games (per game):")
    for key, value in sorted(counts.items()):
        print(f"  {key:22s} {value / games:.2f}")


if __name__ == "__main__":
    main()
