"""Voldemort's budgets as the memory-window rebuild forecasts them, against real games.

`planner-window:W` must guess how much of Voldemort's relocation charges and decoys the
turns it forgot have used (`horcrux.belief.bayes.forgotten_budgets`). This prints, for a
few turns, that forecast beside the distribution measured over games of the full-memory
trigger planner against the reference Voldemort (classic preset, seeds 0..N-1).

    .venv/bin/python benchmarks/window_budgets.py [games]
"""

from __future__ import annotations

import sys
from collections import defaultdict

from horcrux.belief.bayes import MODES, forgotten_budgets
from horcrux.models import GameState
from horcrux.rules import CLASSIC
from horcrux_tools.sim import play_game

TURNS = (5, 9, 17, 25)


def measured(games: int) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    """Per turn, counts of (charges left r) and (decoys used) at Harry's move."""
    left: dict[int, list[int]] = defaultdict(lambda: [0] * (CLASSIC.relocations + 1))
    used: dict[int, list[int]] = defaultdict(lambda: [0] * (CLASSIC.decoys + 1))

    def step(state: GameState, _event: object) -> None:
        if state.phase == "harry" and not state.over:
            left[state.turn][state.relocations_left] += 1
            used[state.turn][CLASSIC.decoys - state.decoys_left] += 1

    for seed in range(games):
        play_game(CLASSIC, seed, "planner-window:full", "reference", on_step=step)
    return left, used


def _fmt(weights: list[float] | tuple[float, ...]) -> str:
    total = sum(weights) or 1
    return " ".join(f"{w / total:4.2f}" for w in weights)


def main() -> None:
    games = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    left, used = measured(games)
    print(f"planner-window:full vs reference, classic, {games} games; columns 0..3")
    print(
        f"{'turn':>4}  {'charges left: forecast':<24}{'measured':<22}"
        f"{'decoys used: forecast':<24}measured"
    )
    for turn in TURNS:
        charges, decoys = forgotten_budgets(MODES["trigger"], CLASSIC, 3, turn - 1)
        print(
            f"{turn:>4}  {_fmt(charges[0]):<24}{_fmt(left[turn]):<22}"
            f"{_fmt(decoys[0]):<24}{_fmt(used[turn])}   ({sum(left[turn])} games running)"
        )


if __name__ == "__main__":
    main()
