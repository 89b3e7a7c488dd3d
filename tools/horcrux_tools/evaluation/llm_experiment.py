"""The memory experiment with a real model: the same LLM Harry fed each context.

Two parts, both through the production code path (`LLMHarry`, the `anthropic` SDK, a
Messages API endpoint):

1. **Fixed decision states.** `decision_states` plays the planner against a Voldemort and
   keeps every state in which Harry was to move, until there are `n`. Every context answers
   the same states, so the contexts are compared on the same questions: does the model
   pick the planner's move, the likeliest location; how often is its reply playable; what
   does the whole prompt cost by the model's own count; how long does it take.
2. **Whole games.** `play_traced` (the evaluation's game loop) with the LLM Harry in each
   context and `gated` with the LLM in its upper tiers: win rate, the four failure modes,
   tier shares, tokens and latency per decision.

A latency sweep adds calls whose prompt cannot come from the server's prompt cache (a
fresh first line), from a few hundred to a few thousand tokens, so the fit
`seconds = a + b * tokens` covers the range the documented latency model speaks of.

Work is spread over one worker process per server URL (`urls`); each server should run
one thread (`horcrux model serve --threads 1`) so that two of them use the two cores.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from multiprocessing import get_context
from pathlib import Path
from typing import Any

from horcrux import engine, play, rng
from horcrux.agents import HARRY_BRAINS
from horcrux.agents.candidates import move_label, planner_candidates
from horcrux.agents.llm import LLMHarry
from horcrux.agents.llm_config import LLMConfig
from horcrux.agents.planner import PlannerHarry
from horcrux.decisions import DecisionRecord, Tier
from horcrux.rules import preset
from horcrux.views import HarryView, harry_view
from horcrux_tools.evaluation.metrics import percentile
from horcrux_tools.sim import wilson

CONTEXTS: dict[str, dict[str, Any]] = {
    "compressed": {"tier": "compressed", "compressed_tool": "candidates"},
    "compressed-legal": {"tier": "compressed", "compressed_tool": "legal"},
    "full": {"tier": "full"},
    "narrative": {"tier": "narrative"},
}
"""The contexts compared: L1 compressed (with the candidates tool, what ships), L1
compressed with every legal move in the tool (the tool's ablation), the full tier, and the
narrative (every turn re-sent: the naive setup)."""
GAME_CONTEXTS = ("compressed", "full", "narrative")
OUTCOMES = ("llm", "unparsable", "illegal", "timeout", "other")
URL_ENV = "HORCRUX_LOCAL_MODEL_URL"
BACKEND_ENV = "HORCRUX_EVAL_BACKEND"


# ---------------------------------------------------------------- states
@dataclass(frozen=True)
class State:
    """One state Harry had to move in, from a planner game: replayed by seed and moves."""

    seed: int
    turn: int
    moves: tuple[str, ...]  # the game's actions up to here, as JSON (both seats)


def decision_states(
    rules_name: str, voldemort: str, seed: int, n: int, *, every: int = 1
) -> list[State]:
    """`n` states from planner games with seeds `seed`, `seed + 1`, ... (every `every`-th
    of Harry's turns), in game and turn order."""
    from horcrux.agents import VOLDEMORT_BRAINS

    rules = preset(rules_name)
    out: list[State] = []
    g = 0
    while len(out) < n:
        game_seed = seed + g
        game = play.new_game(rules, game_seed)
        harry = PlannerHarry(rules)
        vbrain = VOLDEMORT_BRAINS.create(voldemort, rules, truth=game.truth)
        moves: list[str] = []
        harry_turns = 0
        while not game.state.over and len(out) < n:
            state = game.state
            if state.phase == "harry":
                if harry_turns % every == 0:
                    out.append(State(game_seed, state.turn, tuple(moves)))
                harry_turns += 1
            step = play.play_turn(state, harry, vbrain)  # the one game loop's turn
            moves.append(step.move.model_dump_json())
            game.state = step.state
        g += 1
    return out


def view_of(rules_name: str, s: State) -> HarryView:
    """Harry's view of a state, replayed from its seed and moves."""
    from pydantic import TypeAdapter

    from horcrux.models import AnyAction

    adapter: TypeAdapter[Any] = TypeAdapter(AnyAction)
    state, _ = engine.new_game(preset(rules_name), s.seed)
    for raw in s.moves:
        state, _ = engine.apply(state, adapter.validate_json(raw))
    assert state.phase == "harry" and state.turn == s.turn
    return harry_view(state)


def _location(label: str) -> str:
    return label.split(" ", 1)[1].split("+", maxsplit=1)[0] if " " in label else ""


@dataclass
class Answer:
    """One context's answer to one state."""

    context: str
    seed: int
    turn: int
    outcome: str
    llm_move: str | None
    planner_move: str
    top_location: str
    tokens_in: int
    tokens_cached: int
    tokens_out: int
    context_tokens: int
    latency_s: float

    @property
    def agrees(self) -> bool:
        return self.llm_move == self.planner_move

    @property
    def picks_top(self) -> bool:
        return self.llm_move is not None and _location(self.llm_move) == self.top_location


def backend() -> str:
    """The backend of this worker's brains: `HORCRUX_EVAL_BACKEND` (default `local`)."""
    return os.environ.get(BACKEND_ENV, "local")


def _brain(rules_name: str, context: str, settings: dict[str, Any] | None = None) -> LLMHarry:
    spec = dict(CONTEXTS[context])
    tier: Tier = spec.pop("tier")
    config = LLMConfig.for_backend(backend()).model_copy(update=spec)
    brain = HARRY_BRAINS.create(
        "llm",
        preset(rules_name),
        settings={"config": config, "tier": tier, **(settings or {})},
    )
    assert isinstance(brain, LLMHarry)
    return brain


def _outcome(record: DecisionRecord) -> str:
    if record.source == "llm":
        return "llm"
    reason = record.fallback_reason or "other"
    return reason if reason in OUTCOMES else "other"


def answer_state(rules_name: str, context: str, s: State) -> Answer:
    """Ask the model in `context` for its move in state `s` (a fresh brain per state)."""
    view = view_of(rules_name, s)
    brain = _brain(rules_name, context)
    brain.decide(view, rng.stream(s.seed, "harry", s.turn))
    record = brain.decisions[-1]
    trace = record.trace
    assert trace is not None
    planner = brain.fallback
    assert isinstance(planner, PlannerHarry)
    planner.sync(view)
    top = planner.belief.top(1)[0][0]
    planner_move = trace.planner_move or move_label(planner.choose(view).move)
    from horcrux.memory.context import location_name

    return Answer(
        context=context,
        seed=s.seed,
        turn=s.turn,
        outcome=_outcome(record),
        llm_move=trace.llm_move,
        planner_move=planner_move,
        top_location=location_name(top),
        tokens_in=record.tokens_in,
        tokens_cached=trace.tokens_cached,
        tokens_out=record.tokens_out,
        context_tokens=record.context_tokens,
        latency_s=record.latency_ms / 1000.0,
    )


# ---------------------------------------------------------------- games
@dataclass
class LLMGame:
    """One whole game of an LLM row: outcome, failure modes and every LLM call."""

    label: str
    seed: int
    win: bool
    turns: int
    destroyed: int
    failures: dict[str, int]
    tiers: list[str]
    calls: list[tuple[int, int, int, float, str]] = field(default_factory=list)
    # (tokens_in, tokens_cached, tokens_out, latency_s, outcome) per LLM call


def play_llm_game(rules_name: str, label: str, seed: int, voldemort: str) -> LLMGame:
    """One game of row `label`: the LLM Harry in a context, or `gated` (the LLM in its
    upper tiers)."""
    from horcrux_tools.evaluation.runner import play_traced

    if label == "gated":
        spec, settings = f"gated:{backend()}", {}
    else:
        spec = "llm"
        cfg = dict(CONTEXTS[label])
        tier = cfg.pop("tier")
        settings = {
            "config": LLMConfig.for_backend(backend()).model_copy(update=cfg),
            "tier": tier,
        }
    records: list[DecisionRecord] = []
    record = play_traced(
        rules_name, seed, spec, voldemort, settings=settings, offline=False, sink=records
    )
    calls = [
        (
            d.tokens_in,
            d.trace.tokens_cached if d.trace else 0,
            d.tokens_out,
            d.latency_ms / 1000.0,
            _outcome(d),
        )
        for d in records
        if d.tier != "zero" and d.trace is not None
    ]
    return LLMGame(
        label=label,
        seed=seed,
        win=record.win,
        turns=record.turns,
        destroyed=record.destroyed,
        failures=record.failures,
        tiers=[t for t, _ in record.decisions],
        calls=calls,
    )


# ---------------------------------------------------------------- the latency sweep
def sweep_call(rules_name: str, s: State, nonce: int) -> tuple[int, int, int, float]:
    """One narrative call no prompt cache can serve (a fresh first line): tokens in,
    cached, out, seconds."""
    brain = _brain(rules_name, "narrative")
    brain.system = f"Call {nonce}. " + brain.system
    view = view_of(rules_name, s)
    brain.decide(view, random.Random(nonce))
    d = brain.decisions[-1]
    return d.tokens_in, d.trace.tokens_cached if d.trace else 0, d.tokens_out, d.latency_ms / 1e3


# ---------------------------------------------------------------- workers
Job = tuple[str, str, str, Any]  # (id, kind, rules, argument)


def _init_worker(urls: Any, backend_name: str) -> None:
    url = urls.get()
    if url:
        os.environ[URL_ENV] = url
    os.environ[BACKEND_ENV] = backend_name


def _run(job: Job) -> tuple[str, str, Any]:
    key, kind, rules_name, arg = job
    if kind == "states":
        context, states = arg
        return key, kind, [asdict(answer_state(rules_name, context, s)) for s in states]
    if kind == "game":
        label, seed, voldemort = arg
        return key, kind, asdict(play_llm_game(rules_name, label, seed, voldemort))
    s, nonce = arg
    return key, kind, list(sweep_call(rules_name, s, nonce))


def run_jobs(
    jobs: Sequence[Job],
    urls: Sequence[str | None],
    *,
    backend_name: str = "local",
    checkpoint: Path | None = None,
    on_result: Callable[[int, int], None] | None = None,
) -> list[tuple[str, str, Any]]:
    """Run `jobs` on one worker process per server URL (`None`: the backend's default).

    With a `checkpoint` file every result is appended as one JSON line when it arrives, and
    the jobs already there are not run again: an interrupted run resumes where it stopped.
    """
    done: dict[str, tuple[str, str, Any]] = {}
    if checkpoint is not None and checkpoint.exists():
        for line in checkpoint.read_text().splitlines():
            if line.strip():
                key, kind, value = json.loads(line)
                done[key] = (key, kind, value)
    todo = [j for j in jobs if j[0] not in done]
    out = [done[j[0]] for j in jobs if j[0] in done]
    if on_result:
        on_result(len(out), len(jobs))
    if not todo:
        return out
    # The batch engine's local back end, never Ray: each worker process takes one server
    # URL from the queue (the initializer, once per process) and keeps it, and the servers
    # are processes on this machine (a worker on another node could not reach them). No
    # retries: a model call is not free, and a failure is reported by key (the checkpoint
    # keeps every other result for the next run).
    from horcrux_tools.batch.engine import Job as Batch
    from horcrux_tools.batch.engine import LocalEngine

    engine = LocalEngine(len(urls), inline=False)
    with get_context("spawn").Manager() as manager:
        queue = manager.Queue()
        for url in urls:
            queue.put(url or "")
        batch = Batch(_run, [(j[0], j) for j in todo], _init_worker, (queue, backend_name), 0)
        for outcome in engine.run(batch):
            result = outcome.value
            out.append(result)
            if checkpoint is not None:
                with checkpoint.open("a") as fh:
                    fh.write(json.dumps(list(result)) + "\n")
            if on_result:
                on_result(len(out), len(jobs))
    return out


# ---------------------------------------------------------------- figures
def fit_line(xs: Sequence[float], ys: Sequence[float]) -> tuple[float, float]:
    """Least squares `y = a + b x`."""
    n = len(xs)
    if n < 2:
        return (ys[0] if ys else 0.0), 0.0
    mx, my = statistics.fmean(xs), statistics.fmean(ys)
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return my, 0.0
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    return my - b * mx, b


def _shares(outcomes: Sequence[str]) -> dict[str, float]:
    n = len(outcomes)
    counts = Counter(outcomes)
    return {k: counts[k] / n if n else 0.0 for k in OUTCOMES}


def _median(values: Sequence[float]) -> float | None:
    return float(statistics.median(values)) if values else None


def chance_levels(
    rules_name: str, voldemort: str, state_seed: int, states: int
) -> dict[tuple[int, int], tuple[float, float]]:
    """Per state (seed, turn): what a uniform pick among the candidates tool's offers would
    score, (P(the planner's move), P(a move naming the likeliest location)). Recomputed
    from the states (a pure function of the planner's map), no model call."""
    rules = preset(rules_name)
    out: dict[tuple[int, int], tuple[float, float]] = {}
    for s in decision_states(rules_name, voldemort, state_seed, states):
        view = view_of(rules_name, s)
        planner = PlannerHarry(rules)
        moves, _ = planner_candidates(planner, view)
        from horcrux.memory.context import location_name

        top = location_name(planner.belief.top(1)[0][0])
        naming = sum(_location(move_label(m)) == top for m in moves)
        out[(s.seed, s.turn)] = (1 / len(moves), naming / len(moves))
    return out


def summarise_states(
    answers: Sequence[Answer], chance: dict[tuple[int, int], tuple[float, float]] | None = None
) -> dict[str, Any]:
    """Per context: agreement, top-location picks, outcome shares, tokens and latency; for
    the candidates tool, beside what a uniform pick among its offers would score."""
    out: dict[str, Any] = {}
    for context, spec in CONTEXTS.items():
        rows = [a for a in answers if a.context == context]
        if not rows:
            continue
        n = len(rows)
        known = chance or {}
        levels = [known[(a.seed, a.turn)] for a in rows if (a.seed, a.turn) in known]
        uniform = None
        if spec.get("compressed_tool") == "candidates" and len(levels) == n:
            uniform = {
                "agreement": statistics.fmean(p for p, _ in levels),
                "top_location": statistics.fmean(t for _, t in levels),
            }
        agree = sum(a.agrees for a in rows)
        top = sum(a.picks_top for a in rows)
        lo, hi = wilson(agree, n)
        out[context] = {
            "states": n,
            "agreement": agree / n,
            "agreement_ci": [lo, hi],
            "top_location": top / n,
            "outcomes": _shares([a.outcome for a in rows]),
            "prompt_tokens_median": _median([float(a.tokens_in) for a in rows]),
            "prompt_tokens_max": max(a.tokens_in for a in rows),
            "context_tokens_median": _median([float(a.context_tokens) for a in rows]),
            "output_tokens_median": _median([float(a.tokens_out) for a in rows]),
            "latency_s_median": _median([a.latency_s for a in rows]),
            "latency_s_p95": percentile([a.latency_s for a in rows], 95),
            "uniform_pick": uniform,
        }
    return out


def summarise_games(games: Sequence[LLMGame]) -> dict[str, Any]:
    """Per row: win rate with its interval, failure modes, tiers, outcome shares, tokens."""
    out: dict[str, Any] = {}
    for label in (*GAME_CONTEXTS, "gated"):
        rows = [g for g in games if g.label == label]
        if not rows:
            continue
        n = len(rows)
        wins = sum(g.win for g in rows)
        lo, hi = wilson(wins, n)
        calls = [c for g in rows for c in g.calls]
        tiers = Counter(t for g in rows for t in g.tiers)
        decisions = sum(tiers.values())
        modes = sorted({m for g in rows for m in g.failures})
        out[label] = {
            "games": n,
            "wins": wins,
            "win_rate": wins / n,
            "ci": [lo, hi],
            "mean_turns": statistics.fmean(g.turns for g in rows),
            "mean_destroyed": statistics.fmean(g.destroyed for g in rows),
            "failures_per_game": {m: sum(g.failures.get(m, 0) for g in rows) / n for m in modes},
            "tier_shares": {t: c / decisions for t, c in sorted(tiers.items())},
            "llm_calls": len(calls),
            "outcomes": _shares([c[4] for c in calls]),
            "prompt_tokens_median": _median([float(c[0]) for c in calls]),
            "output_tokens_median": _median([float(c[2]) for c in calls]),
            "latency_s_median": _median([c[3] for c in calls]),
            "latency_s_p95": percentile([c[3] for c in calls], 95),
        }
    return out


def latency_fit(points: Sequence[tuple[int, int, int, float]]) -> dict[str, Any]:
    """`seconds = a + b * prompt tokens evaluated` (the prompt less what the server's
    cache served) over every measured call, and what it predicts at 2,000 and 6,000."""
    xs = [float(tin - cached) for tin, cached, _, _ in points]
    ys = [s for *_, s in points]
    a, b = fit_line(xs, ys)
    return {
        "points": len(points),
        "a_s": a,
        "b_s_per_token": b,
        "predict_s": {"2000": a + b * 2000, "6000": a + b * 6000},
        "tokens_max": max(xs) if xs else 0,
        "output_tokens_median": _median([float(o) for _, _, o, _ in points]),
    }


def build(
    answers: Sequence[Answer],
    games: Sequence[LLMGame],
    sweep: Sequence[tuple[int, int, int, float]],
    *,
    meta: dict[str, Any],
) -> dict[str, Any]:
    """The experiment's JSON: meta, per-context state figures, game rows, latency fit."""
    calls = [(a.tokens_in, a.tokens_cached, a.tokens_out, a.latency_s) for a in answers]
    calls += [(c[0], c[1], c[2], c[3]) for g in games for c in g.calls]
    spent = sum(c[3] for c in calls) + sum(p[3] for p in sweep)
    chance = (
        chance_levels(meta["rules"], meta["voldemort"], meta["state_seed"], meta["states"])
        if answers
        else None
    )
    return {
        "meta": {**meta, "call_seconds": spent, "calls": len(calls) + len(sweep)},
        "states": summarise_states(answers, chance),
        "games": summarise_games(games),
        "latency": latency_fit([*calls, *sweep]),
        "sweep": [list(p) for p in sweep],
        "answers": [asdict(a) for a in answers],
        "game_rows": [asdict(g) for g in games],
    }


def experiment_jobs(
    rules_name: str,
    voldemort: str,
    *,
    states: int,
    games: int,
    seed: int,
    state_seed: int,
    legal_states: int | None,
    sweep: int,
) -> list[Job]:
    """Every job of the experiment: the sweep, then the states (one job per context and
    game, in turn order, so a server's prompt cache serves what it can), then the games:
    the cheap rows (L1 compressed and gated) seed by seed, then the costly ones (full and
    narrative), so that a run stopped early has every row's first seeds, paired."""
    pool = decision_states(rules_name, voldemort, state_seed, states)
    jobs: list[Job] = []
    longest = sorted(pool, key=lambda s: s.turn)
    for i in range(sweep):
        s = longest[min(len(longest) - 1, (i + 1) * len(longest) // max(1, sweep) - 1)]
        jobs.append((f"sweep:{i}", "sweep", rules_name, (s, 1_000_003 + i)))
    for context in CONTEXTS:
        chosen = pool if context != "compressed-legal" else pool[: legal_states or len(pool)]
        for game_seed in sorted({s.seed for s in chosen}):
            group = [s for s in chosen if s.seed == game_seed]
            jobs.append((f"states:{context}:{game_seed}", "states", rules_name, (context, group)))
    for rows in (("compressed", "gated"), ("full", "narrative")):
        for g in range(games):
            for label in rows:
                key = f"game:{label}:{seed + g}"
                jobs.append((key, "game", rules_name, (label, seed + g, voldemort)))
    return jobs


def collect(
    results: Sequence[tuple[str, str, Any]],
) -> tuple[list[Answer], list[LLMGame], list[tuple[int, int, int, float]]]:
    """Answers, games and sweep points out of the jobs' results (or a checkpoint's)."""
    answers = [Answer(**a) for _, kind, value in results if kind == "states" for a in value]
    played = [LLMGame(**g) for _, kind, g in results if kind == "game"]
    for game in played:
        game.calls = [tuple(c) for c in game.calls]  # type: ignore[misc]
    sweep = [
        (int(v[0]), int(v[1]), int(v[2]), float(v[3])) for _, kind, v in results if kind == "sweep"
    ]
    answers.sort(key=lambda a: (list(CONTEXTS).index(a.context), a.seed, a.turn))
    played.sort(key=lambda g: ((*GAME_CONTEXTS, "gated").index(g.label), g.seed))
    return answers, played, sweep


def run_experiment(
    rules_name: str,
    voldemort: str,
    *,
    states: int,
    games: int,
    seed: int,
    urls: Sequence[str | None],
    backend_name: str = "local",
    state_seed: int = 100_000,
    legal_states: int | None = None,
    sweep: int = 6,
    checkpoint: Path | None = None,
    on_result: Callable[[int, int], None] | None = None,
) -> dict[str, Any]:
    """The whole experiment; `legal_states` limits the compressed-legal ablation."""
    start = time.monotonic()
    jobs = experiment_jobs(
        rules_name,
        voldemort,
        states=states,
        games=games,
        seed=seed,
        state_seed=state_seed,
        legal_states=legal_states,
        sweep=sweep,
    )
    results = run_jobs(
        jobs, urls, backend_name=backend_name, checkpoint=checkpoint, on_result=on_result
    )
    answers, played, points = collect(results)
    config = LLMConfig.for_backend(backend_name)
    meta = {
        "rules": rules_name,
        "voldemort": voldemort,
        "seed": seed,
        "state_seed": state_seed,
        "games": games,
        "states": states,
        "legal_states": legal_states or states,
        "workers": len(urls),
        "seconds": time.monotonic() - start,
        "backend": backend_name,
        "model": config.model,
        "price": config.price().model_dump(),
    }
    return build(answers, played, points, meta=meta)


def report_from_checkpoint(
    checkpoint: Path,
    *,
    rules_name: str,
    voldemort: str,
    seed: int,
    states: int,
    legal_states: int | None,
    workers: int,
    backend_name: str = "local",
    state_seed: int = 100_000,
) -> dict[str, Any]:
    """The experiment's JSON from what a checkpoint holds, running nothing: the report of an
    interrupted run (each row says how many games it has)."""
    rows = [json.loads(line) for line in checkpoint.read_text().splitlines() if line.strip()]
    answers, played, points = collect([(k, kind, v) for k, kind, v in rows])
    config = LLMConfig.for_backend(backend_name)
    per_row = Counter(g.label for g in played)
    meta = {
        "rules": rules_name,
        "voldemort": voldemort,
        "seed": seed,
        "state_seed": state_seed,
        "games": max(per_row.values(), default=0),
        "states": states,
        "legal_states": legal_states or states,
        "workers": workers,
        "seconds": 0.0,
        "backend": backend_name,
        "model": config.model,
        "price": config.price().model_dump(),
        "from_checkpoint": True,
    }
    return build(answers, played, points, meta=meta)


__all__ = [
    "CONTEXTS",
    "GAME_CONTEXTS",
    "Answer",
    "LLMGame",
    "State",
    "answer_state",
    "build",
    "collect",
    "decision_states",
    "experiment_jobs",
    "fit_line",
    "latency_fit",
    "play_llm_game",
    "report_from_checkpoint",
    "run_experiment",
    "summarise_games",
    "summarise_states",
    "view_of",
]
