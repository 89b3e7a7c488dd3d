"""Play every (Harry, Voldemort) pair on the same seeds, through the batch engine, with
bookkeeping.

Game g of every pair uses seed `seed + g` (paired: the placement and the dice are the
same for every architecture). `play_traced` is the one game loop (`horcrux.play.play`, the
same engine calls and RNG streams as `horcrux_tools.sim.play_game`, so the same results) with a
`GameTrace` hook for what the report needs: the belief's calibration and entropy at each
decision, the failure modes from the events, and per-decision tier and context tokens.
Workers return compact `GameRecord`s.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any, cast

from horcrux import play
from horcrux.agents import HARRY_BRAINS, VOLDEMORT_BRAINS, HarryBrain
from horcrux.agents.contract import belief_of, decisions_of
from horcrux.agents.planner import RANDOMISED, PlannerHarry, PlannerParams
from horcrux.decisions import DecisionRecord, Tier
from horcrux.memory.context import render_tier
from horcrux.memory.tokens import estimate_tokens
from horcrux.models import HarryMoved, PlantDecoy, Relocate
from horcrux.play import Step
from horcrux.rules import RuleSet, preset
from horcrux.views import HarryView
from horcrux_tools.batch.command import stream
from horcrux_tools.batch.engine import Engine, LocalEngine
from horcrux_tools.batch.engine import Job as Batch
from horcrux_tools.evaluation.metrics import calibration_terms, failure_modes, map_entropy

if TYPE_CHECKING:
    from horcrux.belief.base import BeliefMap
    from horcrux_tools.batch.log import ResultLog

HARRY_ARCHITECTURES = (
    "naive",
    "seed-heuristic",
    "planner",
    "planner:aware",
    "planner:mixture",
    "planner:aware-fixed",
    "planner:aware-timing",
    "planner:aware-probe",
    "planner:trigger",
    "planner:hazard",
    "planner:static",
    "planner-window:8",
    "planner-window:16",
    "planner-window:32",
    "planner-window:full",
    "gated",
    "oracle",
)
VOLDEMORT_ADVERSARIES = (
    "reference",
    "passive",
    "random",
    "delayed",
    "shadow",
    "shadow:0.5:aware-copy",
    "mirror",
    "ambush",
)
"""The report's adversaries: the rules' reference, the controls (`passive`, `random`),
`delayed`, and the four that read Harry's belief (`shadow` a level-0 map of it,
`shadow:0.5:aware-copy` the default planner's own map, `mirror` a copy of his brain, `ambush`
mirror's trigger with what the planner does not model; `horcrux.agents.adversaries`)."""


ABLATIONS: dict[str, PlannerParams] = {
    "planner:aware-fixed": PlannerParams(),
    "planner:aware-timing": PlannerParams(timing=0.05),
    "planner:aware-probe": replace(
        RANDOMISED, probe_min=0.25, probe_spare=1, probe_after=1, probe_weight=0.5
    ),
}
"""The report's ablations of `planner:aware` (its models, other knobs), by row label: the
deterministic rule alone, attacks timed below the belief-reacting models' trigger, and
spare attacks spent as probes. Evaluation arms, not seat specs."""


def make_harry(spec: str, rules: RuleSet, **kwargs: Any) -> HarryBrain:
    """Harry's brain for a row: an ablation of `ABLATIONS`, else the registry's `spec`."""
    params = ABLATIONS.get(spec)
    if params is None:
        return HARRY_BRAINS.create(spec, rules, **kwargs)
    brain = PlannerHarry(rules, "aware", params)
    brain.name = spec
    return brain


def image_name(prefix: str, voldemort: str) -> str:
    """A figure's file name for one adversary: a spec's `:` becomes `-`
    (`entropy-race-shadow-0.5-aware-copy.png`), which every file system and URL takes."""
    return f"{prefix}-{voldemort.replace(':', '-')}.png"


BASELINE = "planner"
WINDOW_FULL_MEMORY = "planner-window:full"
"""The memory-window brain remembering the whole game (the ablation's full-memory point):
the same trigger filter and the same decision rule as `planner-window:W`, the specification's
reference Bayes Harry."""
CONTEXT_SAMPLE_GAMES = 30
"""Games of `gated` per adversary whose every turn also renders the compressed, full and
narrative contexts (the tokens-by-turn comparison)."""

_COST_ORDER = {"planner-window:32": 0, "planner-window:16": 1, "planner-window:8": 2}
"""The slowest rows first, so that no worker is left with a long tail."""


@dataclass
class GameRecord:
    """One game, as the report needs it (picklable, small)."""

    harry: str
    voldemort: str
    seed: int
    win: bool
    turns: int
    destroyed: int
    wasted_decoy: int
    wasted_empty: int
    failures: dict[str, int]
    calibration: tuple[float, float, float, float, int] | None  # sums and turn count
    entropy: list[float]  # Harry's map entropy at each decision (bits)
    relocations: list[int]  # turns of Voldemort's relocations
    decoys: list[int]  # turns of Voldemort's decoys
    decisions: list[tuple[str, int]]  # (tier, context tokens)
    contexts: dict[Tier, list[int]] = field(default_factory=dict)  # tier -> tokens by turn
    seconds: float = 0.0


@contextmanager
def _offline() -> Iterator[None]:
    """Build brains as if no Anthropic key were set (the offline rows never call the API)."""
    saved = os.environ.pop("ANTHROPIC_API_KEY", None)
    try:
        yield
    finally:
        if saved is not None:
            os.environ["ANTHROPIC_API_KEY"] = saved


def system_tokens(rules_name: str) -> int:
    """Estimated tokens of Harry's system prompt (added to every LLM call's context)."""
    from horcrux.agents.llm_prompts import harry_system_prompt

    return estimate_tokens(harry_system_prompt(preset(rules_name)))


class GameTrace:
    """The evaluation's hook on `horcrux.play.play`: after each step, the belief's
    calibration and entropy at Harry's decisions (and the tiers' contexts rendered on his
    view, if asked), the attacks wasted, the turns of Voldemort's relocations and decoys."""

    def __init__(self, brain: HarryBrain, *, contexts: bool = False) -> None:
        self.brain = brain
        self.contexts = contexts
        self.cal = [0.0, 0.0, 0.0, 0.0]
        self.cal_turns = 0
        self.entropy: list[float] = []
        self.relocations: list[int] = []
        self.decoys: list[int] = []
        self.wasted = {"decoy": 0, "empty": 0}
        self.rendered: dict[Tier, list[int]] = {"compressed": [], "full": [], "narrative": []}

    def __call__(self, step: Step) -> None:
        before = step.before
        if isinstance(step.event, HarryMoved):
            belief = belief_of(self.brain)
            if belief is not None:
                occupancy = belief.occupancy()
                terms = calibration_terms(occupancy, before.horcruxes, before.horcruxes_left)
                for i, v in enumerate(terms):
                    self.cal[i] += v
                self.cal_turns += 1
                self.entropy.append(map_entropy(occupancy))
                if self.contexts:
                    assert isinstance(step.view, HarryView)
                    full = cast("BeliefMap", belief)  # the gated brain's: a whole map
                    for tier, tokens in self.rendered.items():
                        tokens.append(estimate_tokens(render_tier(tier, step.view, full)))
            for obs in step.event.observations:
                if obs.kind == "attack" and obs.outcome in self.wasted:
                    self.wasted[obs.outcome] += 1
        elif isinstance(step.move, Relocate):
            self.relocations.append(before.turn)
        elif isinstance(step.move, PlantDecoy):
            self.decoys.append(before.turn)


def play_traced(
    rules_name: str,
    seed: int,
    harry: str,
    voldemort: str,
    *,
    contexts: bool = False,
    settings: dict[str, Any] | None = None,
    offline: bool = True,
    sink: list[DecisionRecord] | None = None,
) -> GameRecord:
    """Play one game like `sim.play_game` (`horcrux.play.play` with a `GameTrace`) and
    measure it; `sink` gets the brain's records."""
    start = time.perf_counter()
    rules = preset(rules_name)
    game = play.new_game(rules, seed)
    with _offline() if offline else nullcontext():
        brain = make_harry(harry, rules, truth=game.truth, settings=settings)
    vbrain = VOLDEMORT_BRAINS.create(voldemort, rules, truth=game.truth)
    trace = GameTrace(brain, contexts=contexts)
    play.play(game, brain, vbrain, on_step=trace)
    state = game.state
    records: list[DecisionRecord] = list(decisions_of(brain))
    if sink is not None:
        sink.extend(records)
    decisions: list[tuple[str, int]] = [(d.tier, d.context_tokens) for d in records]
    cal, cal_turns = trace.cal, trace.cal_turns
    return GameRecord(
        harry=harry,
        voldemort=voldemort,
        seed=seed,
        win=state.winner == "harry",
        turns=state.turn,
        destroyed=state.destroyed,
        wasted_decoy=trace.wasted["decoy"],
        wasted_empty=trace.wasted["empty"],
        failures=failure_modes(game.events, decisions, system_tokens=system_tokens(rules_name)),
        calibration=(cal[0], cal[1], cal[2], cal[3], cal_turns) if cal_turns else None,
        entropy=trace.entropy,
        relocations=trace.relocations,
        decoys=trace.decoys,
        decisions=decisions,
        contexts=trace.rendered if contexts else {},
        seconds=time.perf_counter() - start,
    )


def record_of(row: dict[str, Any]) -> GameRecord:
    """A `GameRecord` from its JSON form (`dataclasses.asdict`, as the result log holds it)."""
    cal = row["calibration"]
    return GameRecord(
        **{
            **row,
            "calibration": None if cal is None else tuple(cal),
            "decisions": [(t, n) for t, n in row["decisions"]],
        }
    )


Job = tuple[str, int, str, str, bool]


def _run_job(job: Job) -> GameRecord:
    rules_name, seed, harry, voldemort, contexts = job
    return play_traced(rules_name, seed, harry, voldemort, contexts=contexts)


def jobs_for(
    rules_name: str, harrys: tuple[str, ...], voldemorts: tuple[str, ...], games: int, seed: int
) -> list[Job]:
    """Every game of the grid, the slowest architectures first (for load balance)."""
    jobs: list[Job] = []
    for v in voldemorts:
        for h in harrys:
            for g in range(games):
                jobs.append((rules_name, seed + g, h, v, h == "gated" and g < CONTEXT_SAMPLE_GAMES))
    jobs.sort(key=lambda j: _COST_ORDER.get(j[2], 9))
    return jobs


def run_grid(
    rules_name: str,
    harrys: tuple[str, ...],
    voldemorts: tuple[str, ...],
    games: int,
    seed: int,
    workers: int,
    on_result: Callable[[int, int], None] | None = None,
    *,
    engine: Engine | None = None,
    log: ResultLog | None = None,
) -> list[GameRecord]:
    """Play the grid through `engine` (default: `workers` local processes; `log` keeps each
    game's record as it finishes and holds an interrupted run's); results sorted by
    (voldemort, harry, seed), whatever order they finished in."""
    jobs = jobs_for(rules_name, harrys, voldemorts, games, seed)
    engine = engine or LocalEngine(workers)
    tasks = [(f"{j[3]}|{j[2]}|{j[1]}", j) for j in jobs]
    batch = Batch(_run_job, tasks)
    results = stream(engine, batch, log=log, on_result=on_result, encode=asdict, decode=record_of)
    out = [record for _, record in results]
    order_h = {h: i for i, h in enumerate(harrys)}
    order_v = {v: i for i, v in enumerate(voldemorts)}
    out.sort(key=lambda r: (order_v[r.voldemort], order_h[r.harry], r.seed))
    return out


__all__ = [
    "ABLATIONS",
    "BASELINE",
    "HARRY_ARCHITECTURES",
    "VOLDEMORT_ADVERSARIES",
    "GameRecord",
    "GameTrace",
    "image_name",
    "jobs_for",
    "make_harry",
    "play_traced",
    "record_of",
    "run_grid",
    "system_tokens",
]
