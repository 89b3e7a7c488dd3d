"""Simulated games per second on one core, brains side by side in one run."""

from __future__ import annotations

import sys
import time

from horcrux.rules import CLASSIC
from horcrux_tools.sim import run_games

PAIRS = [("naive", "reference"), ("naive", "passive"), ("oracle", "reference")]


def games_per_second(harry: str, voldemort: str, games: int) -> float:
    start = time.perf_counter()
    for _ in run_games(CLASSIC, harry, voldemort, games, 0, workers=1):
        pass
    return games / (time.perf_counter() - start)


def main() -> None:
    games = int(sys.argv[1]) if len(sys.argv) > 1 else 400
    games_per_second("naive", "reference", 20)  # warm-up: imports and caches
    print(f"simulated games per second, classic rules, one core, {games} games each")
    base = games_per_second(*PAIRS[0], games)
    print(f"  {'naive vs reference':<24} {base:8.0f} games/s  (1.00x)")
    for harry, voldemort in PAIRS[1:]:
        rate = games_per_second(harry, voldemort, games)
        print(f"  {harry + ' vs ' + voldemort:<24} {rate:8.0f} games/s  ({rate / base:.2f}x)")


if __name__ == "__main__":
    main()
