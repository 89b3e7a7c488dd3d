"""Layer 1 working memory: time and estimated tokens of the three renderings.

Plays seeded games (standard rules, `naive` Harry, reference Voldemort: naive games
mostly last past turn 40; naive Harry never calls an ally, so every narrative line is one
search or attack), feeds Harry's turns to the Bayes map, and at turn 40 of
every game renders the compressed, full and narrative contexts. Over every decision of
those games it also reports the compressed prompt's tokens (median / max against the
55 / 64 targets). Usage: `bench_memory.py [GAMES]` (default 40).
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from horcrux.belief.base import BeliefMap
from horcrux.memory import (
    COMPRESSED_FACTS_BUDGET,
    COMPRESSED_TARGET_MEDIAN,
    EntropyGate,
    build_context,
    estimate_tokens,
    render_compressed,
    render_full,
    render_narrative,
)
from horcrux.models import GameState, HarryMoved, HarryRecord
from horcrux.rules import STANDARD, RuleSet
from horcrux.views import HarryView, harry_view
from horcrux_tools.sim import play_game

TURN = 40
REPEATS = 200


def make_map(rules: RuleSet) -> BeliefMap:
    try:
        from horcrux.belief.bayes import BayesBelief
    except ImportError:  # the Bayes map is optional for this benchmark
        from horcrux.belief.heuristic import HeuristicBelief

        return HeuristicBelief(rules)
    return BayesBelief(rules)


def p50_us(fn: Callable[[], object], repeats: int = REPEATS) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter_ns()
        fn()
        samples.append(time.perf_counter_ns() - start)
    return statistics.median(samples) / 1000


def play(seed: int) -> tuple[list[int], HarryView | None]:
    """Compressed tokens at every decision of one game, and Harry's view at turn TURN."""
    belief = make_map(STANDARD)
    tokens: list[int] = []
    at_turn: list[HarryView] = []

    def on_step(state: GameState, event: Any) -> None:
        if isinstance(event, HarryMoved):
            belief.update(
                HarryRecord(turn=event.turn, action=event.action, observations=event.observations)
            )
        if state.phase == "harry" and not state.over:
            view = harry_view(state)
            tokens.append(estimate_tokens(render_compressed(build_context(view, belief))))
            if view.turn == TURN:
                at_turn.append(view)

    play_game(STANDARD, seed, "naive", "reference", on_step=on_step)
    return tokens, (at_turn[0] if at_turn else None)


def time_renderings(view: HarryView, belief: BeliefMap) -> dict[str, float]:
    """p50 microseconds of each rendering of one view."""
    ctx = build_context(view, belief)
    return {
        "compressed": p50_us(lambda: render_compressed(ctx)),
        "build+compressed": p50_us(lambda: render_compressed(build_context(view, belief))),
        "full": p50_us(lambda: render_full(view, belief)),
        "narrative": p50_us(lambda: render_narrative(view)),
    }


def main() -> None:
    games = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    every: list[int] = []
    tiers = ("compressed", "full", "narrative")
    rows: dict[str, list[int]] = {tier: [] for tier in tiers}
    times: dict[str, list[float]] = {tier: [] for tier in (*tiers, "build+compressed")}
    ratios: list[float] = []
    for seed in range(games):
        tokens, view = play(seed)
        every.extend(tokens)
        if view is None:
            continue
        belief = make_map(view.rules)  # the map as it stood at turn TURN
        for record in view.history:
            belief.update(record)
        ctx = build_context(view, belief)
        texts = {
            "compressed": render_compressed(ctx),
            "full": render_full(view, belief),
            "narrative": render_narrative(view),
        }
        for tier, text in texts.items():
            rows[tier].append(estimate_tokens(text))
        ratios.append(rows["narrative"][-1] / rows["compressed"][-1])
        for tier, p50 in time_renderings(view, belief).items():
            times[tier].append(p50)
    n = len(rows["compressed"])
    if n == 0:
        print(f"no game reached turn {TURN}")
        return
    print(
        f"Layer 1 contexts at turn {TURN}: standard rules, naive vs reference, "
        f"map {make_map(STANDARD).name}; {n} of {games} games reached turn {TURN}"
    )
    print("  estimated tokens (horcrux.memory.tokens); times are medians of per-game p50s")
    print(f"  {'context':<18}{'p50 us':>9}{'tokens median':>15}{'max':>6}")
    for tier in tiers:
        t = statistics.median(times[tier])
        print(f"  {tier:<18}{t:9.1f}{statistics.median(rows[tier]):15.0f}{max(rows[tier]):6d}")
    print(f"  {'build+compressed':<18}{statistics.median(times['build+compressed']):9.1f}")
    med_n, med_c = statistics.median(rows["narrative"]), statistics.median(rows["compressed"])
    print(
        f"  compression narrative -> compressed: {med_n:.0f} -> {med_c:.0f} tokens, "
        f"{1 - med_c / med_n:.0%} smaller ({statistics.median(ratios):.1f}x, median per game)"
    )
    print(
        f"compressed prompt at every decision of those games ({len(every)}): median "
        f"{statistics.median(every):.0f} (target <= {COMPRESSED_TARGET_MEDIAN}), max "
        f"{max(every)} (target <= {COMPRESSED_FACTS_BUDGET})"
    )
    print(f"gate defaults: {EntropyGate().config.model_dump()}")


if __name__ == "__main__":
    main()
