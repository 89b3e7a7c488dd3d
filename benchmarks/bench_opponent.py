"""Who the opponent is: the end-of-game update's CPU and the memory-playing Harry's turn.

    .venv/bin/python benchmarks/bench_opponent.py [--games 6] [--budget-s 5] [--turn-ms 1000]

1. The end-of-game update (the compaction Lambda's): `consolidate` of a finished game with
   its events, whose new part is `agents.family_fit.fit_game` (every family policy's
   likelihood of the game's moves) and the posterior's fold (`echo.opponent.updated`),
   beside the rest of the consolidation (the style's replay), in CPU seconds per game,
   against the 5 s budget.
2. A turn of the AI Harry that memory sends against who the opponent is
   (`particle_harry.against`): built afresh and synced to the view (a cold process: a
   turn costs the whole game's particle updates so far plus the decision), per turn
   number, beside the default planner rebuilt the same way; and kept between turns by a
   warm process (`service.ai.WARM_GAMES`: one turn's update plus the decision).

One process, one core; the load average is printed: on a loaded machine the times grow.
"""

from __future__ import annotations

import argparse
import os
import random
import time

from horcrux import play as loop
from horcrux.agents import HARRY_BRAINS, VOLDEMORT_BRAINS
from horcrux.agents.family_fit import fit_game
from horcrux.agents.particle_harry import against
from horcrux.agents.planner import PlannerHarry
from horcrux.compaction import summarise_game
from horcrux.echo import opponent as who
from horcrux.echo.lifecycle import consolidate
from horcrux.echo.model import EchoMemory
from horcrux.models import Seat
from horcrux.rules import CLASSIC
from horcrux.store.port import SeatInfo
from horcrux.views import harry_view

DRAWS = (37, 9, 1)


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def end_of_game(games: int) -> dict[str, float]:
    fits: list[float] = []
    totals: list[float] = []
    seats: dict[Seat, SeatInfo] = {
        "harry": SeatInfo(kind="ai", brain="planner"),
        "voldemort": SeatInfo(kind="ai", brain="family"),
    }
    for d in DRAWS:
        memory = EchoMemory(agent="planner", opponent="family")
        for g in range(games):
            game = loop.new_game(CLASSIC, d * 1000 + g)
            loop.play(
                game,
                HARRY_BRAINS.create("planner", CLASSIC),
                VOLDEMORT_BRAINS.create(f"family:{d}", CLASSIC),
            )
            summary = summarise_game(game.events, game_id=f"b{d}-{g}", seats=seats)
            start = time.process_time()
            fit_game(CLASSIC, game.events)
            fits.append(time.process_time() - start)
            start = time.process_time()
            memory = consolidate(memory, summary, events=game.events).memory
            totals.append(time.process_time() - start)
    return {
        "fit_p50": percentile(fits, 0.5),
        "fit_max": max(fits),
        "all_p50": percentile(totals, 0.5),
        "all_max": max(totals),
    }


def turns(games: int) -> dict[str, dict[int, float]]:
    """Per turn number (10, 25, 40, 50): the mean wall ms of a fresh brain synced to the
    view and deciding, for the memory-playing Harry and the default planner."""
    out: dict[str, dict[int, float]] = {"against": {}, "planner": {}, "warm": {}}
    marks = (10, 25, 40, 50)
    for d in DRAWS:
        item = None
        for g in range(3):  # three games name him
            game = loop.new_game(CLASSIC, d * 1000 + 500 + g)
            loop.play(
                game,
                HARRY_BRAINS.create("planner", CLASSIC),
                VOLDEMORT_BRAINS.create(f"family:{d}", CLASSIC),
            )
            item = who.updated(item, fit_game(CLASSIC, game.events), -30.0, float(g + 1))
        prior = who.plan_prior(item)
        assert prior is not None
        for g in range(games):
            game = loop.new_game(CLASSIC, d * 1000 + g)
            states = []

            def keep(step: loop.Step) -> None:
                if step.seat == "harry" and step.before.turn in marks:
                    states.append(step.before)  # noqa: B023

            warm = against(PlannerHarry(CLASSIC), prior)
            loop.play(game, warm, VOLDEMORT_BRAINS.create(f"family:{d}", CLASSIC), on_step=keep)
            latencies = sorted(r.latency_ms for r in warm.decisions)
            for q, label in ((0.5, 50), (0.99, 99)):
                ms = latencies[min(len(latencies) - 1, int(q * len(latencies)))]
                out["warm"][label] = max(out["warm"].get(label, 0.0), ms)
            for state in states:
                view = harry_view(state)
                for name, row in out.items():
                    if name == "warm":
                        continue
                    brain = (
                        against(PlannerHarry(CLASSIC), prior)
                        if name == "against"
                        else PlannerHarry(CLASSIC)
                    )
                    start = time.perf_counter()
                    brain.decide(view, random.Random(0))
                    ms = (time.perf_counter() - start) * 1000.0
                    row[state.turn] = max(row.get(state.turn, 0.0), ms)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--games", type=int, default=6)
    parser.add_argument("--budget-s", type=float, default=5.0)
    parser.add_argument("--turn-ms", type=float, default=1000.0)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.2f}; {args.games} games x draws {DRAWS}")
    end = end_of_game(args.games)
    verdict = "within" if end["all_max"] <= args.budget_s else "OVER"
    print(
        f"end of game: fit p50 {end['fit_p50']:.2f} s, max {end['fit_max']:.2f} s; "
        f"the whole consolidation p50 {end['all_p50']:.2f} s, max {end['all_max']:.2f} s "
        f"CPU ({verdict} the {args.budget_s:g} s budget)"
    )
    worst = turns(max(1, args.games // 2))
    for name in ("against", "planner"):
        row = worst[name]
        cells = ", ".join(f"turn {t}: {ms:.0f} ms" for t, ms in sorted(row.items()))
        print(f"a turn rebuilt from the view, worst, {name:>8}: {cells}")
    warm = worst["warm"]
    print(
        f"a turn of the Harry a warm process keeps (WARM_GAMES), worst game's p50 "
        f"{warm[50]:.0f} ms, p99 {warm[99]:.0f} ms"
    )
    over = max(worst["against"].values()) > args.turn_ms
    print(f"the memory-playing turn's worst {'OVER' if over else 'within'} {args.turn_ms:g} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
