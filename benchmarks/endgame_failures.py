"""Stale-memory attacks before and inside the planner's endgame.

The endgame (`PlannerParams.endgame`) attacks the likeliest location once the attacks
left cover every turn left. Some of those attacks land where the Horcrux had moved
after Harry's last positive, which the evaluation counts as stale memory. This splits
each game's stale attacks at the first turn the endgame condition holds (from then on
every move is an attack), against the reference Voldemort, classic preset, seeds
0..N-1, for each Harry spec given.

    .venv/bin/python benchmarks/endgame_failures.py [games] [spec ...]
"""

from __future__ import annotations

import os
import sys
from multiprocessing import get_context

from horcrux.models import HarryMoved
from horcrux.rules import CLASSIC
from horcrux_tools.evaluation.metrics import GameEvent, stale_memory
from horcrux_tools.sim import play_game


def endgame_start(events: list[GameEvent]) -> int:
    """Index of the first Harry move made with attacks left >= turns left (else the end)."""
    attacks_left = CLASSIC.attacks
    for i, event in enumerate(events):
        if isinstance(event, HarryMoved):
            if attacks_left > 0 and attacks_left >= CLASSIC.max_turns - event.turn + 1:
                return i
            attacks_left -= sum(1 for obs in event.observations if obs.kind == "attack")
    return len(events)


def split(job: tuple[str, int]) -> tuple[int, int, bool]:
    """(stale attacks in the game, those before the endgame, whether it was reached)."""
    spec, seed = job
    events = play_game(CLASSIC, seed, spec, "reference", keep_events=True).events or []
    cut = endgame_start(events)
    return stale_memory(events), stale_memory(events[:cut]), cut < len(events)


def main() -> None:
    games = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    specs = sys.argv[2:] or ["planner"]
    print(f"stale-memory attacks against the reference, classic, seeds 0..{games - 1}")
    with get_context("spawn").Pool(os.cpu_count() or 1) as pool:
        for spec in specs:
            rows = pool.map(split, [(spec, seed) for seed in range(games)], chunksize=20)
            total = sum(r[0] for r in rows) / games
            before = sum(r[1] for r in rows) / games
            print(
                f"  {spec:<22} {total:.2f} a game ({100 * sum(r[0] > 0 for r in rows) / games:.1f}%"
                f" of games); before the endgame {before:.2f} "
                f"({100 * sum(r[1] > 0 for r in rows) / games:.1f}%), in it {total - before:.2f};"
                f" endgame reached in {100 * sum(r[2] for r in rows) / games:.1f}% of games"
            )


if __name__ == "__main__":
    main()
