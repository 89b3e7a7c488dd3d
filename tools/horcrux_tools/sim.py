"""Play whole games between two brains, and summarise many of them.

Game g of a run uses seed `seed + g`; every brain gets a fresh RNG per turn derived from
the game's seed, so a run is reproducible whatever the number of worker processes and the
batch engine's back end (`horcrux_tools.batch`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from horcrux import play
from horcrux.agents.contract import StatsReporter, decisions_of
from horcrux.decisions import DecisionRecord
from horcrux.models import GameStarted, GameState, HarryMoved, VoldemortMoved
from horcrux.play import Step
from horcrux.rules import RuleSet

if TYPE_CHECKING:
    from horcrux_tools.batch.engine import Engine


@dataclass
class GameResult:
    """One finished game, as the statistics need it."""

    seed: int
    winner: str
    end_reason: str
    turns: int
    destroyed: int
    wasted_decoy: int
    wasted_empty: int
    brain_stats: dict[str, Any] = field(default_factory=dict)
    decisions: list[DecisionRecord] = field(default_factory=list)
    events: list[GameStarted | HarryMoved | VoldemortMoved] | None = None


def play_game(
    rules: RuleSet,
    seed: int,
    harry: str,
    voldemort: str,
    *,
    keep_events: bool = False,
    on_step: Callable[[GameState, HarryMoved | VoldemortMoved], None] | None = None,
) -> GameResult:
    """Play one game to its end with fresh brains built from their specs (`horcrux.play`)."""
    wasted = {"decoy": 0, "empty": 0}

    def tally(step: Step) -> None:
        if isinstance(step.event, HarryMoved):
            for obs in step.event.observations:
                if obs.kind == "attack" and obs.outcome in wasted:
                    wasted[obs.outcome] += 1
        if on_step is not None:
            on_step(step.state, step.event)

    played = play.play_game(rules, seed, harry, voldemort, on_step=tally)
    state, brain = played.game.state, played.harry
    return GameResult(
        seed=seed,
        winner=state.winner or "voldemort",
        end_reason=state.end_reason or "",
        turns=state.turn,
        destroyed=state.destroyed,
        wasted_decoy=wasted["decoy"],
        wasted_empty=wasted["empty"],
        brain_stats=brain.stats() if isinstance(brain, StatsReporter) else {},
        decisions=list(decisions_of(brain)),
        events=played.game.events if keep_events else None,
    )


def _play_args(args: tuple[RuleSet, int, str, str]) -> GameResult:
    return play_game(*args)


def run_games(
    rules: RuleSet,
    harry: str,
    voldemort: str,
    games: int,
    seed: int,
    workers: int = 1,
    *,
    engine: Engine | None = None,
    on_result: Callable[[int, int], None] | None = None,
) -> Iterator[GameResult]:
    """Yield the results of games seed .. seed+games-1, in seed order, played through the
    batch engine (`engine`, default `workers` local processes) in whatever order they
    finish (`on_result(done, total)` on each)."""
    from horcrux_tools.batch.command import stream
    from horcrux_tools.batch.engine import Job, LocalEngine

    engine = engine or LocalEngine(workers)
    tasks = [(str(seed + g), (rules, seed + g, harry, voldemort)) for g in range(games)]
    waiting: dict[int, GameResult] = {}
    following = seed
    for key, result in stream(engine, Job(_play_args, tasks), on_result=on_result):
        waiting[int(key)] = result
        while following in waiting:
            yield waiting.pop(following)
            following += 1


def wilson(successes: int, n: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score interval for a binomial proportion (95% by default)."""
    if n == 0:
        return 0.0, 1.0
    p = successes / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def outcome_figures(
    won: Sequence[bool],
    turns: Sequence[int],
    destroyed: Sequence[int],
    wasted: tuple[int, int],
    *,
    total: bool = False,
) -> dict[str, Any]:
    """Win rate (Wilson 95% interval), turns to win, Horcruxes destroyed and wasted attacks
    (decoy, empty) over a batch of games, one entry per game in each sequence."""
    n = len(won)
    wins = sum(won)
    low, high = wilson(wins, n)
    win_turns = [t for t, w in zip(turns, won, strict=True) if w]
    decoy, empty = wasted
    attacks: dict[str, Any] = {"decoy": decoy, "empty": empty}
    if total:
        attacks["total"] = decoy + empty
    attacks["per_game"] = (decoy + empty) / n if n else 0.0
    return {
        "games": n,
        "wins": wins,
        "win_rate": wins / n if n else 0.0,
        "ci_low": low,
        "ci_high": high,
        "mean_turns_to_win": statistics.fmean(win_turns) if win_turns else None,
        "mean_destroyed": statistics.fmean(destroyed) if n else 0.0,
        "wasted_attacks": attacks,
    }


def summarise(
    results: list[GameResult], *, harry: str, voldemort: str, rules: str
) -> dict[str, Any]:
    """The figures `horcrux simulate` prints (and `--json` emits)."""
    summary: dict[str, Any] = {
        "harry": harry,
        "voldemort": voldemort,
        "rules": rules,
        **outcome_figures(
            [r.winner == "harry" for r in results],
            [r.turns for r in results],
            [r.destroyed for r in results],
            (sum(r.wasted_decoy for r in results), sum(r.wasted_empty for r in results)),
            total=True,
        ),
    }
    records = [d for r in results for d in r.decisions]
    if records:
        summary["decisions"] = summarise_decisions(results)
    return summary


def summarise_decisions(results: list[GameResult]) -> dict[str, Any]:
    """Per-tier decision shares, context tokens, tokens and cost over every game's decisions."""
    from horcrux.memory.gate import DecisionLog

    log = DecisionLog(d for r in results for d in r.decisions).summary()
    notes = sorted({note for r in results for note in r.brain_stats.get("notes", [])})
    return {
        "count": log["decisions"],
        "tier_shares": {t: v["share"] for t, v in log["tiers"].items() if v["count"]},
        "context_tokens_median": log["context_tokens"]["median"],
        "context_tokens_p95": log["context_tokens"]["p95"],
        "tiers": log["tiers"],
        "tokens": log["tokens"],
        "cost_usd": log["cost_usd"],
        "cost_per_game_usd": log["cost_usd"] / len(results) if results else 0.0,
        "latency_ms": log["latency_ms"],
        "sources": log["sources"],
        "fallbacks": log["fallbacks"],
        "llm": llm_calls([d for r in results for d in r.decisions]),
        "notes": notes,
    }


def llm_calls(records: Sequence[DecisionRecord]) -> dict[str, Any] | None:
    """The decisions that called an LLM (those with a trace): how many, how many the
    model's own move decided, and what a call cost by the model's own count."""
    calls = [d for d in records if d.trace is not None]
    if not calls:
        return None
    n = len(calls)
    bad = sum(d.fallback_reason in ("unparsable", "illegal") for d in calls)

    def median(values: list[float]) -> float:
        return float(statistics.median(values))

    return {
        "calls": n,
        "from_model": sum(d.source == "llm" for d in calls) / n,
        "unparsable_or_illegal": bad / n,
        "latency_ms_median": median([d.latency_ms for d in calls]),
        "prompt_tokens_median": median([float(d.tokens_in) for d in calls]),
        "context_tokens_median": median([float(d.context_tokens) for d in calls]),
        "output_tokens_median": median([float(d.tokens_out) for d in calls]),
    }
