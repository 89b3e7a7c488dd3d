"""How likely each policy of the generated family made a finished game's Voldemort moves.

A family policy (`horcrux.agents.family`) decides each turn in three separate parts: the
*trigger* (which real Horcrux moves now, if any), given its parameter and the observer's
reading of Harry's record; the *destination* of a relocation; and, on a turn nothing
moved, the *decoy* (where, or none). Once a game is over its whole truth is known (where
the Horcruxes and decoys were each turn, every move Voldemort made), so each part's
probability of what Voldemort actually did is exact, and a game's log-likelihood under a
policy is a sum of three tables over the policy's dimensions:

    log P(moves | policy) = T[trigger, observer] + D[destination, observer]
                          + C[decoys, observer]

(`GameFit`). The dimensions are the family's own, each on a grid that holds every value
the family draws (`TRIGGERS`: `positive` with each delay 0..6, `threshold` at each of
0.30..0.80, `predicted`, `hazard` at each gain 0.10..1.00, `never`; `OBSERVERS`: `tally`
with each window 4..16, `bayes-static`, `bayes-moving` with each motion, `heuristic`,
`copy`; three destinations; `DECOYS`: each rule at each timing, and `never`), so a drawn
policy is exactly one cell. The observers are the family's (`make_observer`), fed the
game's record in order; the rules are `FamilyReaction`'s, read through the same helpers
(`ties`, `decoy_allowed`, `reference_decoy`, `top_evidence_free`, `LookTimes`).

Each part's probability is mixed with `EPS` of a uniform over that part's options (the
Horcruxes or none; the free locations; the free locations or none): no policy is ruled
out by one move it called impossible, and a move that no policy makes (a person's) costs
every policy alike. The named members fit their family equivalents (reference: `positive`
at once, uniform, `evidence-top` early; passive: `never`, `never`).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from horcrux.agents.family import (
    DECOYS,
    DESTINATIONS,
    IMMEDIATE_PERCENT,
    MAX_DELAY,
    MEMBERS,
    MOTIONS,
    OBSERVER_WEIGHTS,
    TIMINGS,
    TRIGGERS,
    WINDOW,
    FamilyParams,
    LookTimes,
    as_generated,
    decoy_allowed,
    positive_due,
)
from horcrux.agents.family_observers import make_observer
from horcrux.agents.voldemort import EvidenceFold, reference_decoy, top_evidence_free
from horcrux.belief import ties
from horcrux.engine import apply, new_game
from horcrux.models import GameStarted, HarryMoved, PlantDecoy, Relocate, VoldemortMoved
from horcrux.rules import RuleSet
from horcrux.store.port import AnyEvent
from horcrux.views import VoldemortView, voldemort_view

EPS = 1e-3
"""Each part's share spread uniformly over its options (a robust likelihood)."""

THRESHOLDS = tuple(t / 100 for t in range(30, 81))
GAINS = tuple(g / 100 for g in range(10, 101))


@dataclass(frozen=True)
class TriggerCell:
    trigger: str
    delay: int = 0
    threshold: float = 0.0
    gain: float = 0.0


@dataclass(frozen=True)
class ObserverCell:
    observer: str
    window: int = 0
    motion: str = ""


@dataclass(frozen=True)
class DecoyCell:
    decoys: str
    timing: str = ""


TRIGGER_CELLS: tuple[TriggerCell, ...] = (
    *(TriggerCell("positive", delay=d) for d in range(MAX_DELAY + 1)),
    *(TriggerCell("threshold", threshold=t) for t in THRESHOLDS),
    TriggerCell("predicted"),
    *(TriggerCell("hazard", gain=g) for g in GAINS),
    TriggerCell("never"),
)
OBSERVER_CELLS: tuple[ObserverCell, ...] = (
    *(ObserverCell("tally", window=w) for w in range(WINDOW[0], WINDOW[1] + 1)),
    ObserverCell("bayes-static"),
    *(ObserverCell("bayes-moving", motion=m) for m, _ in MOTIONS),
    ObserverCell("heuristic"),
    ObserverCell("copy"),
)
DESTINATION_CELLS: tuple[str, ...] = tuple(d for d, _ in DESTINATIONS)
DECOY_CELLS: tuple[DecoyCell, ...] = (
    *(DecoyCell(d, t) for d, _ in DECOYS if d != "never" for t, _ in TIMINGS),
    DecoyCell("never"),
)


def _share(table: Sequence[tuple[str, int]], value: str) -> float:
    return dict(table)[value] / sum(w for _, w in table)


def trigger_prior(cell: TriggerCell) -> float:
    """The family's probability of this trigger cell (a generated member's)."""
    base = _share(TRIGGERS, cell.trigger)
    if cell.trigger == "positive":
        at_once = IMMEDIATE_PERCENT / 100
        return base * (at_once if cell.delay == 0 else (1 - at_once) / MAX_DELAY)
    if cell.trigger == "threshold":
        return base / len(THRESHOLDS)
    if cell.trigger == "hazard":
        return base / len(GAINS)
    return base


def destination_prior(name: str) -> float:
    return _share(DESTINATIONS, name)


def observer_prior(cell: ObserverCell) -> float:
    base = _share(OBSERVER_WEIGHTS, cell.observer)
    if cell.observer == "tally":
        return base / (WINDOW[1] - WINDOW[0] + 1)
    if cell.observer == "bayes-moving":
        return base * _share(MOTIONS, cell.motion)
    return base


def decoy_prior(cell: DecoyCell) -> float:
    base = _share(DECOYS, cell.decoys)
    return base if cell.decoys == "never" else base * _share(TIMINGS, cell.timing)


def member_shares() -> dict[str, float]:
    """Each member's share of the family (generated, reference, passive)."""
    total = sum(w for _, w in MEMBERS)
    return {m: w / total for m, w in MEMBERS}


def params_of(trigger: int, observer: int, destination: int, decoys: int) -> FamilyParams:
    """The policy of one cell (its unused fields at the family's first values)."""
    t, o, c = TRIGGER_CELLS[trigger], OBSERVER_CELLS[observer], DECOY_CELLS[decoys]
    return FamilyParams(
        seed=-1,
        member="generated",
        trigger=t.trigger,  # type: ignore[arg-type]
        delay=t.delay,
        threshold=t.threshold or THRESHOLDS[0],
        gain=t.gain or GAINS[0],
        observer=o.observer,  # type: ignore[arg-type]
        window=o.window or WINDOW[0],
        motion=o.motion or MOTIONS[0][0],  # type: ignore[arg-type]
        destination=DESTINATION_CELLS[destination],  # type: ignore[arg-type]
        decoys=c.decoys,  # type: ignore[arg-type]
        timing=c.timing or TIMINGS[0][0],  # type: ignore[arg-type]
    )


def cell_of(params: FamilyParams) -> tuple[int, int, int, int]:
    """The grid cell of a drawn policy (a named member: its family equivalent)."""
    params = as_generated(params)
    kind = params.trigger
    t = TriggerCell(
        kind,
        delay=params.delay if kind == "positive" else 0,
        threshold=params.threshold if kind == "threshold" else 0.0,
        gain=params.gain if kind == "hazard" else 0.0,
    )
    o = ObserverCell(
        params.observer,
        window=params.window if params.observer == "tally" else 0,
        motion=params.motion if params.observer == "bayes-moving" else "",
    )
    c = DecoyCell("never") if params.decoys == "never" else DecoyCell(params.decoys, params.timing)
    return (
        TRIGGER_CELLS.index(t),
        OBSERVER_CELLS.index(o),
        DESTINATION_CELLS.index(params.destination),
        DECOY_CELLS.index(c),
    )


@dataclass(frozen=True)
class GameFit:
    """One game's log-likelihood tables (module doc): `trigger[t][o]`, `destination[d][o]`,
    `decoys[c][o]`, and how many of Voldemort's turns were read."""

    trigger: tuple[tuple[float, ...], ...]
    destination: tuple[tuple[float, ...], ...]
    decoys: tuple[tuple[float, ...], ...]
    turns: int

    def loglik(self, trigger: int, observer: int, destination: int, decoys: int) -> float:
        return (
            self.trigger[trigger][observer]
            + self.destination[destination][observer]
            + self.decoys[decoys][observer]
        )


def _floored(p: float, options: int) -> float:
    return math.log((1.0 - EPS) * p + EPS / options)


class _Positive:
    """A `positive` trigger's pending moves at one delay, replayed on the truth."""

    def __init__(self, delay: int) -> None:
        self.delay = delay
        self.pending: dict[str, int] = {}

    def source(self, view: VoldemortView) -> str | None:
        self.pending, moved = positive_due(self.pending, view, self.delay)
        return moved


def fit_game(rules: RuleSet, events: Sequence[AnyEvent]) -> GameFit:
    """`GameFit` of a finished game's events (module doc)."""
    replay = _Replay(rules)
    state = None
    for event in events:
        if isinstance(event, GameStarted):
            state, _ = new_game(event.rules, event.seed)
        elif isinstance(event, HarryMoved):
            assert state is not None
            state, _ = apply(state, event.action)
            if state.over:
                break
        elif isinstance(event, VoldemortMoved):
            assert state is not None
            replay.turn(voldemort_view(state), event.action)
            state, _ = apply(state, event.action)
    return replay.fit()


class _Replay:
    """The tables being summed over one game's Voldemort turns, and what the family's
    rules read while they are: each observer of the grid (fed the record in order), the
    `positive` trigger's pending moves at each delay, the public evidence, the look times."""

    def __init__(self, rules: RuleSet) -> None:
        self.rules = rules
        width = len(OBSERVER_CELLS)
        self.trigger = [[0.0] * width for _ in TRIGGER_CELLS]
        self.destination = [[0.0] * width for _ in DESTINATION_CELLS]
        self.decoys = [[0.0] * width for _ in DECOY_CELLS]
        self.observers = [
            make_observer(
                rules,
                o.observer,  # type: ignore[arg-type]
                window=o.window or WINDOW[0],
                motion=o.motion or "trigger",  # type: ignore[arg-type]
            )
            for o in OBSERVER_CELLS
        ]
        self.stream = random.Random("horcrux-family-fit")
        self.positives = [_Positive(d) for d in range(MAX_DELAY + 1)]
        self.evidence = EvidenceFold(rules)
        self.looked = LookTimes(rules)
        self.turns = 0

    def fit(self) -> GameFit:
        return GameFit(
            tuple(tuple(r) for r in self.trigger),
            tuple(tuple(r) for r in self.destination),
            tuple(tuple(r) for r in self.decoys),
            self.turns,
        )

    def turn(self, view: VoldemortView, action: object) -> None:
        """Fold in Voldemort's `action` in the true `view` before it."""
        self.turns += 1
        free = view.free_locations()
        if not free or (view.relocations_left <= 0 and view.decoys_left <= 0):
            return  # every policy passes (GeneratedVoldemort's short cut): nothing to weigh
        readings = [obs.observe(view, self.stream) for obs in self.observers]
        can_move = view.relocations_left > 0 and bool(view.horcrux_locations)
        actual = action.from_location if isinstance(action, Relocate) else None
        if can_move:
            options = len(view.horcrux_locations) + 1
            sources = [p.source(view) for p in self.positives]
            for oi, (m, predicted) in enumerate(readings):
                exposed = ties.first_best(view.horcrux_locations, m)
                read = _Reading(m[exposed], exposed, predicted, view.horcrux_locations)
                for ti, cell in enumerate(TRIGGER_CELLS):
                    p = _source_probability(cell, read, sources, actual)
                    self.trigger[ti][oi] += _floored(p, options)
        if isinstance(action, Relocate):
            last = self.looked.update(view)
            oldest = min(last[loc] for loc in free)
            far = [loc for loc in free if last[loc] == oldest]
            for di, name in enumerate(DESTINATION_CELLS):
                row = self.destination[di]
                for oi, (m, _) in enumerate(readings):
                    if name == "uniform":
                        p = 1.0 / len(free)
                    elif name == "far":
                        p = 1.0 / len(far) if action.to_location in far else 0.0
                    else:
                        low = min(m[loc] for loc in free)
                        lows = [loc for loc in free if ties.at_most(m[loc], low)]
                        p = 1.0 / len(lows) if action.to_location in lows else 0.0
                    row[oi] += _floored(p, len(free))
            return
        planted = action.location if isinstance(action, PlantDecoy) else None
        scores = self.evidence(view.history)
        blind = top_evidence_free(self.rules, view, scores)
        ref = reference_decoy(self.rules, view, self.evidence)
        prior = view.horcruxes_left / len(self.rules.locations)
        for ci, decoy in enumerate(DECOY_CELLS):
            row = self.decoys[ci]
            for oi, (m, _) in enumerate(readings):
                choice: str | None
                if (
                    decoy.decoys == "never"
                    or view.decoys_left <= 0
                    or not decoy_allowed(_timing(decoy), self.rules, view)
                ):
                    choice = None
                elif decoy.decoys == "evidence-top":
                    choice = ref.location if ref is not None else None
                elif decoy.decoys == "blind-early":
                    choice = blind[0] if blind is not None else None
                else:
                    best = ties.first_best(free, m)
                    choice = best if ties.above(m[best], prior) else None
                row[oi] += _floored(1.0 if choice == planted else 0.0, len(free) + 1)


def _timing(cell: DecoyCell) -> FamilyParams:
    return params_of(0, 0, 0, DECOY_CELLS.index(cell))


@dataclass(frozen=True)
class _Reading:
    """What a trigger reads of one observer's reading on a turn: the highest m among the
    real Horcruxes (`exposed`, the first on near-equals) and the predicted attack."""

    m: float
    exposed: str
    predicted: str | None
    horcruxes: tuple[str, ...]


def _source_probability(
    cell: TriggerCell, read: _Reading, sources: list[str | None], actual: str | None
) -> float:
    """P(the trigger moves `actual` this turn: a location, or None for nothing)."""
    if cell.trigger == "positive":
        return 1.0 if sources[cell.delay] == actual else 0.0
    if cell.trigger == "never":
        return 1.0 if actual is None else 0.0
    if cell.trigger == "predicted":
        src = read.predicted if read.predicted in read.horcruxes else None
        return 1.0 if src == actual else 0.0
    if cell.trigger == "threshold":
        src = read.exposed if ties.at_least(read.m, cell.threshold) else None
        return 1.0 if src == actual else 0.0
    chance = min(1.0, cell.gain * read.m)
    if actual is None:
        return 1.0 - chance
    return chance if actual == read.exposed else 0.0


__all__ = [
    "DECOY_CELLS",
    "DESTINATION_CELLS",
    "EPS",
    "OBSERVER_CELLS",
    "TRIGGER_CELLS",
    "DecoyCell",
    "GameFit",
    "ObserverCell",
    "TriggerCell",
    "cell_of",
    "decoy_prior",
    "destination_prior",
    "fit_game",
    "member_shares",
    "observer_prior",
    "params_of",
    "trigger_prior",
]
