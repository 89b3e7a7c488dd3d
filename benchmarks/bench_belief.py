"""Layer 2 speed: belief update p50 (seed-heuristic vs bayes), planner decision p50, games/s
of the default planner and of `planner:aware` (the default before it), side by side, and
the machine's pure-Python speed (games/s scale with it: compare machines through it).

Run: `.venv/bin/python benchmarks/bench_belief.py [games]` (one core, classic preset,
reference Voldemort). Games/s is measured on the process's CPU time (`time.process_time`),
which other load on a shared machine disturbs far less than the wall clock (also shown).
"""

from __future__ import annotations

import statistics
import sys
import time

import horcrux.agents.planner  # noqa: F401  (registers the brains)
from horcrux import play
from horcrux.agents.planner import PlannerHarry
from horcrux.belief.bayes import MODES, BayesBelief
from horcrux.belief.heuristic import HeuristicBelief
from horcrux.models import HarryMoved, HarryRecord
from horcrux.rules import CLASSIC
from horcrux_tools.sim import play_game


def _records(seeds: range) -> list[list[HarryRecord]]:
    games = []
    for seed in seeds:
        result = play_game(CLASSIC, seed, "planner", "reference", keep_events=True)
        assert result.events is not None
        games.append(
            [
                HarryRecord(turn=e.turn, action=e.action, observations=e.observations)
                for e in result.events
                if isinstance(e, HarryMoved)
            ]
        )
    return games


def _p50_update_us(games: list[list[HarryRecord]], make: object) -> float:
    times: list[float] = []
    for records in games:
        belief = make()  # type: ignore[operator]
        for record in records:
            start = time.perf_counter()
            belief.update(record)
            times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def _python_speed() -> float:
    """This machine's pure-Python speed: millions of loop additions a CPU second (best of
    five), so that games/s measured on different machines can be compared."""
    best = float("inf")
    for _ in range(5):
        start = time.process_time()
        total = 0
        for i in range(1_000_000):
            total += i
        best = min(best, time.process_time() - start)
    return 1.0 / best


def main(games: int = 200) -> None:
    print(f"machine: {_python_speed():.1f} M pure-Python loop additions per CPU second")
    sample = _records(range(20))
    print("belief update p50 (classic, 20 games of the planner vs reference):")
    print(f"  seed-heuristic   {_p50_update_us(sample, lambda: HeuristicBelief(CLASSIC)):8.1f} us")
    for mode in MODES:
        p50 = _p50_update_us(sample, lambda mode=mode: BayesBelief(CLASSIC, mode))
        print(f"  bayes:{mode:10s} {p50:8.1f} us")

    latencies: list[float] = []
    # the default and the default before it (`aware`), in turn a game at a time, so that
    # the machine's load falls on both alike and their ratio is measured side by side
    specs = ("planner", "planner:aware")
    cpu = dict.fromkeys(specs, 0.0)
    wall = dict.fromkeys(specs, 0.0)
    won = dict.fromkeys(specs, 0)
    for seed in range(games):
        for spec in specs:
            start = time.perf_counter()
            cpu_start = time.process_time()
            result = play_game(CLASSIC, seed, spec, "reference")
            cpu[spec] += time.process_time() - cpu_start
            wall[spec] += time.perf_counter() - start
            won[spec] += result.winner == "harry"
    brain_stats = []
    for seed in range(20):
        brain = play.play_game(CLASSIC, seed, "planner", "reference").harry
        assert isinstance(brain, PlannerHarry)
        latencies.extend(d.latency_ms for d in brain.decisions)
        brain_stats.append(len(brain.snapshot()))
    print(f"planner decision p50 (update + plan): {statistics.median(latencies) * 1000:8.1f} us")
    p99 = statistics.quantiles(latencies, n=100)[98]
    print(f"planner decision p99 (update + plan): {p99 * 1000:8.1f} us (budget 5 ms)")
    print(f"planner snapshot at game end: max {max(brain_stats)} bytes")
    for spec in specs:
        print(
            f"{spec} games/s on one core: {games / cpu[spec]:6.1f} by CPU time, "
            f"{games / wall[spec]:.1f} by the wall clock "
            f"({games} games, {won[spec] / games:.1%} wins vs reference)"
        )
    print(f"ratio planner / planner:aware by CPU time: {cpu['planner:aware'] / cpu['planner']:.2f}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 200)
