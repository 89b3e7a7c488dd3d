"""Decision time of the particle-belief Harrys beside the default planner, the same games.

    .venv/bin/python benchmarks/bench_particles.py [--games 8] [--budget-ms 100]

Each Harry (`planner`, `told:D`, `untold`) plays the same seeds against the same
Voldemorts (dev draws of the generated family and `reference`), one process, one core.
Per Harry: every decision's wall time (the brain's own `DecisionRecord.latency_ms`), its
p50 and p99, the CPU seconds per game, and the p99 against the per-turn budget
(`--budget-ms`, 100 ms: the AI turn's Lambda). The load average is printed: on a loaded
machine the wall times grow, the ratios between Harrys much less.
"""

from __future__ import annotations

import argparse
import os
import time

from horcrux.rules import CLASSIC
from horcrux_tools.sim import play_game

DRAWS = (37, 9, 0)
"""Dev draws: a threshold trigger on a moving map, a predicted attack, the reference member."""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure(harry: str, games: int) -> dict[str, float]:
    latencies: list[float] = []
    cpu = time.process_time()
    for d in DRAWS:
        spec = harry.replace("D", str(d))
        for g in range(games):
            result = play_game(CLASSIC, d * 1000 + g, spec, f"family:{d}")
            latencies += [x.latency_ms for x in result.decisions]
    cpu = time.process_time() - cpu
    return {
        "decisions": len(latencies),
        "p50": percentile(latencies, 0.5),
        "p99": percentile(latencies, 0.99),
        "cpu_per_game": cpu / (games * len(DRAWS)),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--games", type=int, default=8)
    parser.add_argument("--budget-ms", type=float, default=100.0)
    args = parser.parse_args()
    play_game(CLASSIC, 10**6, "told:0:64", "family:0")  # imports and caches warm, not timed
    print(f"load average {os.getloadavg()[0]:.2f}; {args.games} games x draws {DRAWS}")
    base = None
    for harry in ("planner", "told:D", "untold"):
        row = measure(harry, args.games)
        base = base or row
        verdict = "within" if row["p99"] <= args.budget_ms else "OVER"
        ratio = row["cpu_per_game"] / base["cpu_per_game"]
        print(
            f"{harry:10s} decisions {row['decisions']:5.0f}  p50 {row['p50']:7.1f} ms  "
            f"p99 {row['p99']:7.1f} ms ({verdict} {args.budget_ms:.0f} ms)  "
            f"{row['cpu_per_game']:.2f} CPU s/game ({ratio:.0f}x the planner)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
