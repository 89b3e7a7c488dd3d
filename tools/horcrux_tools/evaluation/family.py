"""The generated Voldemort family as an evaluation: Harrys against many drawn opponents.

`horcrux.agents.family` draws a Voldemort from a seed (`family:SEED`). The evaluation plays
every Harry against every draw of a split, on the same seeds, and summarises the per-draw
win rates as a distribution (worst case first):

* Splits (`draw_seeds`): `dev` is draws 0..N-1, the one to develop against; `holdout` is
  draws `HOLDOUT_START`..`HOLDOUT_START + N - 1` (100000 onwards), which the family module
  refuses to draw (`HeldOutDraw`) unless its caller passes the key (`holdout=True`; the
  brain `family:SEED`: `settings={"holdout": True}`). `holdout_key` is the one place in the
  tools that turns a split into that key: true for the holdout split only, passed with
  every draw and every game's Voldemort (in the task, so in every worker); the dev split
  never passes it.
* Game seeds (`game_seed`): game g against draw d is played on seed `d * 1000 + g`, for
  every Harry (paired by seed); at most `MAX_GAMES` games a draw, so that no two draws
  share a seed.
* Statistics (`distribution`): over the per-draw win rates, the worst (lowest), the 10th
  percentile by nearest rank (`nearest_rank`: the ceil(10 n / 100)-th smallest of n), the
  median (the middle value, the mean of the two middle ones for even n) and the mean;
  separately for the draws whose observer is not `copy` and for the `copy` draws
  (`family.is_copy`), and over all draws.
* Paired comparison (`compare`, two or more Harrys; the first is the baseline): per draw,
  the difference in win rate in points (Harry minus baseline) with its paired standard
  error (`echo.ablation.paired`: the sd of the per-game differences / sqrt(n)); a draw is
  *lower* when the difference is below -2.5 SE (`horcrux.belief.ties.below`).
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from horcrux import play
from horcrux.agents import HARRY_BRAINS, VOLDEMORT_BRAINS
from horcrux.agents import family as fam
from horcrux.belief import ties
from horcrux.rules import preset
from horcrux_tools.batch.command import stream
from horcrux_tools.batch.engine import Engine, LocalEngine
from horcrux_tools.batch.engine import Job as Batch
from horcrux_tools.echo.ablation import paired
from horcrux_tools.evaluation.runner import ABLATIONS, make_harry

if TYPE_CHECKING:
    from horcrux_tools.batch.log import ResultLog
    from horcrux_tools.batch.progress import Progress

SPLITS = ("dev", "holdout")
MAX_GAMES = 1000
"""Games per draw at most: game seeds `d * 1000 + g` stay disjoint between draws."""
PERCENTILE = 10
LOWER_SE = 2.5
"""A paired difference below -LOWER_SE standard errors counts as lower."""
KINDS = ("not_copy", "copy", "all")


def draw_seeds(split: str, draws: int) -> list[int]:
    """The split's first `draws` draw seeds."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; known: {', '.join(SPLITS)}")
    start = fam.HOLDOUT_START if split == "holdout" else 0
    return list(range(start, start + draws))


def game_seed(draw: int, game: int) -> int:
    """Game `game` against draw `draw`: seed `draw * 1000 + game` (every Harry)."""
    if not 0 <= game < MAX_GAMES:
        raise ValueError(f"game {game} outside 0..{MAX_GAMES - 1}")
    return draw * MAX_GAMES + game


def spec_of(draw: int) -> str:
    return f"family:{draw}"


def holdout_key(split: str) -> bool:
    """The family's held-out key for `split`: True for the holdout split only (the one place
    in the tools that gives it); the dev split draws without it."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; known: {', '.join(SPLITS)}")
    return split == "holdout"


def voldemort_settings(holdout: bool) -> dict[str, Any]:
    """The settings of a game's `family:SEED` Voldemort: the held-out key, if given."""
    return {"holdout": True} if holdout else {}


def draw_params(draws: Sequence[int], *, holdout: bool = False) -> dict[int, dict[str, Any]]:
    """Each draw's parameters, its description and whether its observer is `copy`."""
    out: dict[int, dict[str, Any]] = {}
    for d in draws:
        params = fam.draw(d, holdout=holdout)
        out[d] = {
            "params": params.as_dict(),
            "describe": params.describe(),
            "copy": bool(fam.is_copy(params)),
        }
    return out


# -- statistics ------------------------------------------------------------------------


def nearest_rank(values: Sequence[float], p: int) -> float:
    """The p-th percentile by nearest rank: the ceil(p n / 100)-th smallest of the n values
    (the smallest for p = 0)."""
    if not values:
        raise ValueError("no values")
    ordered = sorted(values)
    rank = max(1, -(-p * len(ordered) // 100))
    return ordered[rank - 1]


def distribution(values: Sequence[float]) -> dict[str, Any]:
    """n, worst (lowest), p10 (nearest rank), median and mean of `values` (None when empty)."""
    if not values:
        return {"n": 0, "worst": None, "p10": None, "median": None, "mean": None}
    return {
        "n": len(values),
        "worst": min(values),
        "p10": nearest_rank(values, PERCENTILE),
        "median": statistics.median(values),
        "mean": statistics.fmean(values),
    }


def rate(wins: Sequence[int]) -> float:
    return sum(wins) / len(wins) if wins else 0.0


def by_kind(values: Mapping[int, float], copies: Mapping[int, bool]) -> dict[str, dict[str, Any]]:
    """`distribution` of the per-draw values for non-copy draws, copy draws, and all."""
    return {
        "not_copy": distribution([v for d, v in values.items() if not copies[d]]),
        "copy": distribution([v for d, v in values.items() if copies[d]]),
        "all": distribution(list(values.values())),
    }


def summarise(
    wins: Mapping[int, Sequence[int]], params: Mapping[int, dict[str, Any]]
) -> dict[str, Any]:
    """One Harry's summary: the per-draw win rates, their distributions by kind, and the
    worst draw (the lowest rate; the lowest draw seed among equal rates) with its
    parameters."""
    rates = {d: rate(w) for d, w in wins.items()}
    copies = {d: bool(params[d]["copy"]) for d in rates}
    worst = min(rates, key=lambda d: (rates[d], d))
    return {
        "per_draw": {str(d): r for d, r in rates.items()},
        "stats": by_kind(rates, copies),
        "worst_draw": {"draw": worst, "rate": rates[worst], **params[worst]},
    }


def compare(
    harry: Mapping[int, Sequence[int]],
    baseline: Mapping[int, Sequence[int]],
    params: Mapping[int, dict[str, Any]],
) -> dict[str, Any]:
    """Harry minus the baseline per draw (points, paired SE, lower by more than 2.5 SE),
    the distributions of the differences and the counts of lower draws, by kind."""
    per_draw: dict[str, dict[str, Any]] = {}
    diffs: dict[int, float] = {}
    lower: dict[int, bool] = {}
    for d, wins in harry.items():
        diff, se = paired(wins, baseline[d])
        lower[d] = ties.below(diff, -LOWER_SE * se)
        diffs[d] = diff
        per_draw[str(d)] = {"diff": diff, "se": se, "lower": lower[d]}
    copies = {d: bool(params[d]["copy"]) for d in diffs}
    counts = {
        "not_copy": sum(1 for d, low in lower.items() if low and not copies[d]),
        "copy": sum(1 for d, low in lower.items() if low and copies[d]),
        "all": sum(lower.values()),
    }
    return {"per_draw": per_draw, "stats": by_kind(diffs, copies), "lower": counts}


# -- the run ---------------------------------------------------------------------------

Job = tuple[str, str, int, int, bool]


def _play(job: Job) -> tuple[str, int, int, int]:
    rules_name, harry, draw, g, holdout = job
    rules = preset(rules_name)
    game = play.new_game(rules, game_seed(draw, g))
    brain = make_harry(harry, rules, truth=game.truth)
    settings = voldemort_settings(holdout)
    vold = VOLDEMORT_BRAINS.create(spec_of(draw), rules, truth=game.truth, settings=settings)
    play.play(game, brain, vold)
    return harry, draw, g, int(game.state.winner == "harry")


def check_specs(harrys: Sequence[str]) -> None:
    """Fail fast on an unknown Harry (before any worker starts)."""
    for h in harrys:
        if h not in ABLATIONS:
            HARRY_BRAINS.entry(h)
    if len(set(harrys)) != len(harrys):
        raise ValueError(f"a Harry is named twice: {', '.join(harrys)}")


def task_key(harry: str, draw: int, game: int) -> str:
    """A game's key in the batch and its result log."""
    return f"{harry}|{draw}|{game}"


def run_family(
    harry_specs: Sequence[str],
    split: str,
    draws: int,
    games: int,
    workers: int,
    rules: str = "classic",
    on_result: Callable[[int, int], None] | None = None,
    *,
    engine: Engine | None = None,
    log: ResultLog | None = None,
    progress: Progress | None = None,
) -> dict[str, Any]:
    """Every (Harry, draw) pair on the same seeds through the batch engine (`engine`, by
    default a local pool of `workers` processes; `log` keeps each game's result as it
    finishes and holds those of an interrupted run); the report's data: meta, each
    draw's parameters, the wins (a string of 0/1 per game, game 0 first), each Harry's
    summary and, for every Harry after the first, the paired comparison with the first."""
    if not 1 <= games <= MAX_GAMES:
        raise ValueError(f"games must be 1..{MAX_GAMES} (seeds d * 1000 + g), got {games}")
    harrys = tuple(harry_specs)
    check_specs(harrys)
    seeds = draw_seeds(split, draws)
    holdout = holdout_key(split)
    params = draw_params(seeds, holdout=holdout)
    preset(rules)
    engine = engine or LocalEngine(workers)
    tasks = [
        (task_key(h, d, g), (rules, h, d, g, holdout))
        for d in seeds
        for h in harrys
        for g in range(games)
    ]
    job = Batch(_play, tasks)
    wins = {h: {d: [0] * games for d in seeds} for h in harrys}
    start = time.monotonic()
    for _, (h, d, g, won) in stream(engine, job, log=log, progress=progress, on_result=on_result):
        wins[h][d][g] = won
    seconds = time.monotonic() - start
    data: dict[str, Any] = {
        "split": split,
        "rules": rules,
        "draws": seeds,
        "games": games,
        "seed_rule": "game g against draw d: seed d * 1000 + g, every Harry",
        "harrys": list(harrys),
        "workers": engine.workers,
        "seconds": round(seconds, 1),
        "draw_params": {str(d): p for d, p in params.items()},
        "wins": {
            h: {str(d): "".join(map(str, w)) for d, w in ws.items()} for h, ws in wins.items()
        },
    }
    data.update(analyse(data))
    return data


def wins_of(data: dict[str, Any], harry: str) -> dict[int, list[int]]:
    """A Harry's per-draw wins from the report's data (the 0/1 strings decoded)."""
    return {int(d): [int(c) for c in w] for d, w in data["wins"][harry].items()}


def analyse(data: dict[str, Any]) -> dict[str, Any]:
    """`summary` per Harry and `paired` per Harry after the first, from the data's wins."""
    params = {int(d): p for d, p in data["draw_params"].items()}
    harrys = data["harrys"]
    summary = {h: summarise(wins_of(data, h), params) for h in harrys}
    base = harrys[0]
    comparisons = {
        h: {"baseline": base, **compare(wins_of(data, h), wins_of(data, base), params)}
        for h in harrys[1:]
    }
    return {"summary": summary, "paired": comparisons}


def default_workers() -> int:
    return os.cpu_count() or 1


__all__ = [
    "KINDS",
    "LOWER_SE",
    "MAX_GAMES",
    "SPLITS",
    "analyse",
    "compare",
    "default_workers",
    "distribution",
    "draw_params",
    "draw_seeds",
    "game_seed",
    "holdout_key",
    "nearest_rank",
    "run_family",
    "spec_of",
    "summarise",
    "task_key",
    "voldemort_settings",
    "wins_of",
]
