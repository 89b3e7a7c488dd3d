"""The batch engine's scaling: games per second against workers, local and Ray, on the
same games; Ray's overhead per task and the chunk size that hides it.

    .venv/bin/python benchmarks/bench_batch.py [--games 120] [--harry planner]

1. The same `--games` games (planner vs reference, seeds 0..N-1) through the local pool and
   a local Ray at 1, 2 and every core's workers: games/s, and the scaling efficiency
   (games/s at N workers / (N x games/s at 1 worker)); the per-game results' digest of every
   run must be the same (exit 1 otherwise).
2. Ray's fixed cost per task: 400 empty tasks one a chunk on a local Ray (the wall time per
   task times the workers), the mean seconds of one game, and the chunk size the engine
   picks for that cost (`Chunker`: at least overhead / 5% of work a chunk; in a batch it
   measures the overhead itself, as the idle gap between a worker's chunks) with the
   overhead's share of a chunk's work at that size (target: under 5%).

The machine's load average is printed first: other work on the cores lowers every figure.
Without Ray installed only the local rows run (pip install -e 'tools[ray]').
"""

from __future__ import annotations

import argparse
import hashlib
import importlib.util
import json
import math
import os
import time
from typing import Any

from horcrux.rules import preset
from horcrux_tools.batch.engine import Chunker, Engine, Job, LocalEngine, where
from horcrux_tools.sim import run_games


def digest(engine: Engine, games: int, harry: str) -> tuple[float, str, float]:
    """(games/s, digest of the sorted per-game records, wall seconds) on a warm engine (its
    workers started and their imports done by a first, untimed run of other seeds); one
    local worker plays in this process, more in a pool."""
    rules = preset("classic")
    list(run_games(rules, harry, "reference", 4 * engine.workers, 100_000, engine=engine))
    start = time.perf_counter()
    results = list(run_games(rules, harry, "reference", games, 0, engine=engine))
    wall = time.perf_counter() - start
    rows = sorted(
        json.dumps([r.seed, r.winner, r.end_reason, r.turns, r.destroyed]) for r in results
    )
    return games / wall, hashlib.sha256("\n".join(rows).encode()).hexdigest()[:16], wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--games", type=int, default=120)
    parser.add_argument("--harry", default="planner")
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    load = os.getloadavg()
    print(f"cores {cores}; load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"{args.games} games, {args.harry} vs reference, seeds 0..{args.games - 1}")
    has_ray = importlib.util.find_spec("ray") is not None
    counts = sorted({1, 2, cores})
    digests: set[str] = set()
    head = f"{'engine':<8}{'workers':>8}{'games/s':>10}{'efficiency':>12}{'digest':>18}"
    print(f"{head}{'chunks':>8}{'games a chunk':>15}{'measured gap':>14}")
    engines: list[tuple[str, Any]] = [("local", LocalEngine)]
    if has_ray:
        from horcrux_tools.batch.ray_engine import RayEngine

        engines.append(("ray", lambda n: RayEngine(workers=n)))
    for name, make in engines:
        base = 0.0
        for n in counts:
            with make(n) as engine:
                rate, dig, _ = digest(engine, args.games, args.harry)
            base = base or rate
            digests.add(dig)
            eff = rate / (n * base)
            gap = engine.overhead_measured
            gap_text = "-" if gap is None else f"{1000 * gap:.2f} ms"
            print(
                f"{name:<8}{n:>8}{rate:>10.1f}{eff:>12.2f}{dig:>18}{engine.chunks:>8}"
                f"{args.games / max(1, engine.chunks):>15.1f}{gap_text:>14}"
            )
    if not has_ray:
        print("Ray is not installed: pip install -e 'tools[ray]' for its rows")
    else:
        from horcrux_tools.batch.ray_engine import RayEngine

        tasks = 400
        with RayEngine(workers=cores) as engine:
            # the first run starts Ray and its workers: time a second run on a warm Ray
            list(engine.run(Job(where, [(str(i), i) for i in range(tasks)], chunk=1)))
            start = time.perf_counter()
            list(engine.run(Job(where, [(str(i), i) for i in range(tasks)], chunk=1)))
            overhead = (time.perf_counter() - start) * engine.workers / tasks
        _, _, wall = digest(LocalEngine(1), min(30, args.games), args.harry)
        game_s = wall / min(30, args.games)
        chunker = Chunker(workers=cores, overhead_s=RayEngine.overhead_s)
        chunker.observe(game_s)
        for _ in range(Chunker.MIN_GAPS):  # the engine measures the gaps as a batch runs
            chunker.observe_gap(overhead)
        chunk = chunker.size(10_000)
        share = overhead / (chunk * game_s)
        print(
            f"Ray overhead per task {1000 * overhead:.2f} ms (the engine's prior "
            f"{1000 * RayEngine.overhead_s:.1f} ms, then what it measures); one game "
            f"{1000 * game_s:.1f} ms; "
            f"chunk {chunk} game(s): overhead {100 * share:.1f}% of a chunk's work "
            f"(target < 5%; one game a task: {100 * overhead / game_s:.1f}%)"
        )
        ok_share = share < 0.05 or math.isclose(share, 0.05)
        if not ok_share:
            print("overhead share over 5%")
    if len(digests) != 1:
        print(f"the per-game results differ between runs: {sorted(digests)}")
        return 1
    print("every run: the same per-game results")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
