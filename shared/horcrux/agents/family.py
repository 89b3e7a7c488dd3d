"""The generated Voldemort family: each integer seed draws a complete adversary.

A distribution of adversaries instead of a handful of named ones (docs/FAMILY.md).
`draw(seed)` is a pure function of the seed (`random.Random(f"horcrux-family:{seed}")`,
integer draws only: the same on every machine and Python >= 3.11) and returns the
`FamilyParams` of one Voldemort; the brain spec `family:SEED` plays it.

The split: seeds 0..99,999 are the development split (tuning, tests, sweeps); seeds >=
`HOLDOUT_START` (100,000) are the held-out report split. `draw` refuses them
(`HeldOutDraw`, an `UnknownBrain`: the API answers 422 naming the split) unless its caller
passes `holdout=True`; the brain `family:SEED` is given the same key in its settings
(`settings={"holdout": True}`, which no function's settings carry). The report code passes
it, explicitly, for the holdout split; tuning code and tests never do. No process-wide
state: the same call draws the same Voldemort or refuses, whatever ran before.

Parameters (each drawn independently, in this order; docs/FAMILY.md has the table):

* member: `generated` (90%), or a named brain: `reference` (5%) or `passive` (5%), which
  `FamilyVoldemort` delegates to (`ReferenceVoldemort` / `PassiveVoldemort`). A member's
  behaviour fields are set to its equivalent in the family (reference: positive at once,
  uniform destination, evidence-top decoys at any turn; passive: never, never); its
  observer fields stay as drawn and are unused.
* observer (`horcrux.agents.family_observers`): how he models Harry's belief from
  Harry's record, giving a map m[loc] in [0, 1] and a predicted next attack.
* trigger, when a Horcrux moves (relocation charges allowing):
  - `positive`: after a positive search at a real Horcrux, at once (`delay` 0) or
    `delay` turns later (1..6) if it is still there;
  - `threshold`: the real Horcrux of highest m moves once its m >= `threshold` (0.3-0.8);
  - `predicted`: the Horcrux at the location the observer predicts Harry attacks next;
  - `hazard`: each turn the real Horcrux of highest m moves with probability
    min(1, `gain` * m);
  - `never`.
* destination of a move: `uniform` over the free locations; `least-likely` under m
  (near-equals tied by `ties`, one drawn uniformly among them); `far`: the free location
  Harry looked at least recently (never-looked first; ties drawn uniformly).
* decoys: `observer-top` (the free location of highest m, once above k/N, k the
  Horcruxes left), `evidence-top` (the reference's rule, `reference_decoy`),
  `blind-early` (the free location of highest public evidence, whenever it can, like
  `decoy-heavy`), `never`; timing, when a decoy may be planted: `early` (any turn),
  `spread` (the i-th decoy, from 0, not before turn 1 + 15 i), `late` (not before 25).

Each turn a relocation the trigger asks for comes first, else a decoy, else a pass. Moves
are legal (free destinations, charges checked); float comparisons that decide go through
`horcrux.belief.ties`; all randomness in a game comes from the `rng` argument.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from typing import Any, Literal

from horcrux.agents.base import VOLDEMORT_BRAINS, BrainOptions, VoldemortMove
from horcrux.agents.contract import MemoryAdopter
from horcrux.agents.family_observers import (
    OBSERVERS,
    ObserverName,
    make_observer,
)
from horcrux.agents.voldemort import (
    EvidenceFold,
    PassiveVoldemort,
    ReferenceVoldemort,
    reference_decoy,
    top_evidence_free,
)
from horcrux.belief import ties
from horcrux.belief.bayes import AdversaryModel
from horcrux.errors import UnknownBrain
from horcrux.models import Pass, PlantDecoy, Relocate
from horcrux.rules import RuleSet
from horcrux.views import VoldemortView

HOLDOUT_START = 100_000
"""The first seed of the held-out report split."""

Member = Literal["generated", "reference", "passive"]
Trigger = Literal["positive", "threshold", "predicted", "hazard", "never"]
Motion = Literal["trigger", "hazard"]
Destination = Literal["uniform", "least-likely", "far"]
Decoys = Literal["observer-top", "evidence-top", "blind-early", "never"]
Timing = Literal["early", "spread", "late"]

MEMBERS: tuple[tuple[Member, int], ...] = (("generated", 90), ("reference", 5), ("passive", 5))
TRIGGERS: tuple[tuple[Trigger, int], ...] = (
    ("positive", 25),
    ("threshold", 25),
    ("predicted", 20),
    ("hazard", 20),
    ("never", 10),
)
OBSERVER_WEIGHTS: tuple[tuple[ObserverName, int], ...] = (
    ("tally", 25),
    ("bayes-static", 20),
    ("bayes-moving", 20),
    ("heuristic", 15),
    ("copy", 20),
)
MOTIONS: tuple[tuple[Motion, int], ...] = (("trigger", 50), ("hazard", 50))
DESTINATIONS: tuple[tuple[Destination, int], ...] = (
    ("uniform", 34),
    ("least-likely", 33),
    ("far", 33),
)
DECOYS: tuple[tuple[Decoys, int], ...] = (
    ("observer-top", 30),
    ("evidence-top", 30),
    ("blind-early", 20),
    ("never", 20),
)
TIMINGS: tuple[tuple[Timing, int], ...] = (("early", 34), ("spread", 33), ("late", 33))
"""Each dimension's values and their draw probabilities in percent (docs/FAMILY.md)."""
IMMEDIATE_PERCENT = 40
"""A `positive` trigger's delay: 0 (at once) with this probability, else uniform 1..6."""
MAX_DELAY = 6
WINDOW = (4, 16)
"""tally's window W, uniform over these bounds (inclusive)."""
SPREAD_GAP = 15
LATE_FROM = 25


class HeldOutDraw(UnknownBrain):
    """A draw from the held-out report split while the holdout is closed."""


@dataclass(frozen=True)
class FamilyParams:
    """One drawn Voldemort (see the module doc for each field's meaning)."""

    seed: int
    member: Member
    trigger: Trigger
    delay: int
    threshold: float
    gain: float
    observer: ObserverName
    window: int
    motion: Motion
    destination: Destination
    decoys: Decoys
    timing: Timing

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)

    def describe(self) -> str:
        """One short line: the fields this Voldemort uses."""
        if self.member != "generated":
            return f"member={self.member}"
        trigger: str = self.trigger
        if self.trigger == "positive":
            trigger += f"+{self.delay}"
        elif self.trigger == "threshold":
            trigger += f"@{self.threshold:.2f}"
        elif self.trigger == "hazard":
            trigger += f"*{self.gain:.2f}"
        observer: str = self.observer
        if self.observer == "tally":
            observer += f":{self.window}"
        elif self.observer == "bayes-moving":
            observer += f":{self.motion}"
        decoys = "never" if self.decoys == "never" else f"{self.decoys}/{self.timing}"
        return f"trigger={trigger} observer={observer} dest={self.destination} decoys={decoys}"


def is_copy(params: FamilyParams) -> bool:
    """The "adversary read your code" class: a generated member whose observer is a copy
    of Harry's brain (reports show it separately)."""
    return params.member == "generated" and params.observer == "copy"


def _pick(rng: random.Random, table: tuple[tuple[Any, int], ...]) -> Any:
    """A value drawn with integer percent weights (no float arithmetic)."""
    roll = rng.randrange(sum(w for _, w in table))
    for value, weight in table:
        if roll < weight:
            return value
        roll -= weight
    raise AssertionError("unreachable")


def draw(seed: int, *, holdout: bool = False) -> FamilyParams:
    """The Voldemort of `seed` (pure: the same on every machine). Raises `HeldOutDraw` for
    a seed of the held-out split unless `holdout` (the report's key), ValueError for a
    negative seed."""
    if seed < 0:
        raise ValueError(f"family seeds are whole numbers >= 0, got {seed}")
    if seed >= HOLDOUT_START and not holdout:
        raise HeldOutDraw(
            f"family:{seed} is in the held-out report split (seeds >= {HOLDOUT_START:,}): "
            "only the report draws it"
        )
    return generate(random.Random(f"horcrux-family:{seed}"), seed)


def generate(rng: random.Random, seed: int = -1) -> FamilyParams:
    """A Voldemort drawn from the family's distribution with `rng` (`draw` is this with the
    seed's own stream; a prior over the family samples it with another, `seed` -1 naming
    no draw of the split)."""
    member: Member = _pick(rng, MEMBERS)
    trigger: Trigger = _pick(rng, TRIGGERS)
    delay = 0 if rng.randrange(100) < IMMEDIATE_PERCENT else rng.randint(1, MAX_DELAY)
    threshold = (30 + rng.randrange(51)) / 100  # 0.30 .. 0.80
    gain = (10 + rng.randrange(91)) / 100  # 0.10 .. 1.00
    params = FamilyParams(
        seed=seed,
        member=member,
        trigger=trigger,
        delay=delay,
        threshold=threshold,
        gain=gain,
        observer=_pick(rng, OBSERVER_WEIGHTS),
        window=rng.randint(*WINDOW),
        motion=_pick(rng, MOTIONS),
        destination=_pick(rng, DESTINATIONS),
        decoys=_pick(rng, DECOYS),
        timing=_pick(rng, TIMINGS),
    )
    return as_generated(params)


def as_generated(params: FamilyParams) -> FamilyParams:
    """A named member's behaviour fields set to its equivalent in the family (reference:
    positive at once, uniform destination, evidence-top decoys at any turn; passive:
    never, never); a generated member as it is."""
    if params.member == "reference":
        return replace(
            params,
            trigger="positive",
            delay=0,
            destination="uniform",
            decoys="evidence-top",
            timing="early",
        )
    if params.member == "passive":
        return replace(params, trigger="never", decoys="never")
    return params


def decoy_allowed(params: FamilyParams, rules: RuleSet, view: VoldemortView) -> bool:
    """Whether `timing` lets a decoy be planted this turn."""
    if params.timing == "late":
        return view.turn >= LATE_FROM
    if params.timing == "spread":
        return view.turn >= 1 + SPREAD_GAP * (rules.decoys - view.decoys_left)
    return True


class LookTimes:
    """The turn Harry last looked at each location (0: never), folded in from his record
    (the `far` destination). It reads Harry's record alone, so every hypothesis about the
    truth may share one (`FamilyReaction.clone`)."""

    def __init__(self, rules: RuleSet) -> None:
        self.last: dict[str, int] = dict.fromkeys(rules.locations, 0)
        self.turn = 0

    def update(self, view: VoldemortView) -> dict[str, int]:
        for record in view.history:
            if record.turn > self.turn:
                for obs in record.observations:
                    self.last[obs.location] = record.turn
                self.turn = record.turn
        return self.last


def positive_due(
    pending: dict[str, int], view: VoldemortView, delay: int
) -> tuple[dict[str, int], str | None]:
    """The `positive` trigger on a turn: each positive search of Harry's last turn at a
    real Horcrux not yet pending is due `delay` turns later; what left is dropped; the
    first due location (in name order) moves now. Returns the pending moves after the
    turn and the Horcrux that moves (None: none)."""
    last = view.last_harry
    if last is not None and last.turn == view.turn:
        for obs in last.observations:
            if (
                obs.kind == "search"
                and obs.outcome == "positive"
                and obs.location in view.horcrux_locations
                and obs.location not in pending
            ):
                pending[obs.location] = view.turn + delay
    kept = {loc: due for loc, due in pending.items() if loc in view.horcrux_locations}
    due = sorted(loc for loc, turn in kept.items() if turn <= view.turn)
    if due:
        del kept[due[0]]
        return kept, due[0]
    return kept, None


class FamilyReaction:
    """What a generated Voldemort does on a turn once his observer has read Harry's record:
    the trigger, the destination and the decoys (the module doc), given the observer's map
    `m` and predicted attack.

    Its one state that depends on the truth is the `positive` trigger's pending moves; the
    public-evidence fold and the look times read Harry's record alone. So a reaction can be
    run on many hypotheses about the truth at once, one clone each sharing those two
    (Harry's particle belief, `horcrux.agents.particles`), with the family's own code."""

    def __init__(
        self,
        rules: RuleSet,
        params: FamilyParams,
        evidence: EvidenceFold | None = None,
        looked: LookTimes | None = None,
    ) -> None:
        self.rules = rules
        self.params = params
        self.evidence = evidence or EvidenceFold(rules)
        self.looked = looked or LookTimes(rules)
        self.pending: dict[str, int] = {}  # positive trigger: location -> turn it moves

    def clone(self) -> FamilyReaction:
        """The same reaction with its own copy of the pending moves (shared evidence and
        look times)."""
        twin = FamilyReaction(self.rules, self.params, self.evidence, self.looked)
        twin.pending = dict(self.pending)
        return twin

    def move(
        self, view: VoldemortView, m: dict[str, float], predicted: str | None, rng: random.Random
    ) -> VoldemortMove:
        """This turn's move: a relocation the trigger asks for, else a decoy, else a pass."""
        if view.relocations_left > 0 and view.horcrux_locations:
            source = self._source(view, m, predicted, rng)
            if source is not None:
                target = self._destination(view.free_locations(), m, rng, view)
                return Relocate(from_location=source, to_location=target)
        return self._decoy(view, m) or Pass()

    def _source(
        self, view: VoldemortView, m: dict[str, float], predicted: str | None, rng: random.Random
    ) -> str | None:
        """The real Horcrux the trigger moves this turn, if any."""
        p = self.params
        if p.trigger == "positive":
            self.pending, source = positive_due(self.pending, view, p.delay)
            return source
        if p.trigger == "predicted":
            return predicted if predicted in view.horcrux_locations else None
        if p.trigger in ("threshold", "hazard"):
            exposed = ties.first_best(view.horcrux_locations, m)
            if p.trigger == "threshold":
                return exposed if ties.at_least(m[exposed], p.threshold) else None
            chance = min(1.0, p.gain * m[exposed])
            return exposed if ties.below(rng.random(), chance) else None
        return None

    def _destination(
        self, free: list[str], m: dict[str, float], rng: random.Random, view: VoldemortView
    ) -> str:
        if self.params.destination == "least-likely":
            low = min(m[loc] for loc in free)
            return rng.choice([loc for loc in free if ties.at_most(m[loc], low)])
        if self.params.destination == "far":
            last = self.looked.update(view)
            oldest = min(last[loc] for loc in free)
            return rng.choice([loc for loc in free if last[loc] == oldest])
        return rng.choice(free)

    def _decoy(self, view: VoldemortView, m: dict[str, float]) -> PlantDecoy | None:
        p = self.params
        if p.decoys == "never" or view.decoys_left <= 0:
            return None
        if not decoy_allowed(p, self.rules, view):
            return None
        if p.decoys == "evidence-top":
            return reference_decoy(self.rules, view, self.evidence)
        if p.decoys == "blind-early":
            top = top_evidence_free(self.rules, view, self.evidence(view.history))
            return PlantDecoy(location=top[0]) if top is not None else None
        free = view.free_locations()
        best = ties.first_best(free, m)
        prior = view.horcruxes_left / len(self.rules.locations)
        return PlantDecoy(location=best) if ties.above(m[best], prior) else None


class GeneratedVoldemort:
    """A generated member of the family, playing its `FamilyParams`: his observer reads
    Harry's record, then his `FamilyReaction` moves."""

    def __init__(self, rules: RuleSet, params: FamilyParams) -> None:
        self.rules = rules
        self.params = params
        self.name = f"family:{params.seed}"
        self.observer = make_observer(
            rules, params.observer, window=params.window, motion=params.motion
        )
        self.reaction = FamilyReaction(rules, params)

    def adopt_memory(
        self, models: tuple[AdversaryModel, ...], params: Mapping[str, float] | None = None
    ) -> None:
        """His observer, if it runs a copy of Harry's brain (a `MemoryAdopter`), plays
        that copy with what Harry's memory gave Harry."""
        if isinstance(self.observer, MemoryAdopter):
            self.observer.adopt_memory(models, params)

    def decide(self, view: VoldemortView, rng: random.Random) -> VoldemortMove:
        if not view.free_locations() or (view.relocations_left <= 0 and view.decoys_left <= 0):
            return Pass()  # nothing he can do now or later: the observer need not run
        m, predicted = self.observer.observe(view, rng)
        return self.reaction.move(view, m, predicted, rng)


class FamilyVoldemort:
    """`family:SEED`: the drawn Voldemort of SEED (a generated one, or a named member)."""

    def __init__(self, rules: RuleSet, seed: int, *, holdout: bool = False) -> None:
        self.params = draw(seed, holdout=holdout)
        self.name = f"family:{seed}"
        self.inner: GeneratedVoldemort | ReferenceVoldemort | PassiveVoldemort
        if self.params.member == "reference":
            self.inner = ReferenceVoldemort(rules)
        elif self.params.member == "passive":
            self.inner = PassiveVoldemort()
        else:
            self.inner = GeneratedVoldemort(rules, self.params)

    def adopt_memory(
        self, models: tuple[AdversaryModel, ...], params: Mapping[str, float] | None = None
    ) -> None:
        """A copy observer's copy gets what Harry's memory gave Harry (`MirrorVoldemort`)."""
        if isinstance(self.inner, MemoryAdopter):
            self.inner.adopt_memory(models, params)

    def decide(self, view: VoldemortView, rng: random.Random) -> VoldemortMove:
        return self.inner.decide(view, rng)


DEFAULT_SEED = 0
"""The draw a bare `family` seat plays (the dev split's first)."""


def family_seed(param: str | None) -> int:
    """The SEED of a `family:SEED` spec, checked (`UnknownBrain` naming what is wrong);
    a bare `family` is draw 0 (`DEFAULT_SEED`), as the brain list offers it."""
    if param is None:
        return DEFAULT_SEED
    try:
        seed = int(param)
    except ValueError:
        raise UnknownBrain(f"family's seed must be a whole number, got {param!r}") from None
    if seed < 0:
        raise UnknownBrain(f"family's seed must be >= 0, got {seed}")
    return seed


@VOLDEMORT_BRAINS.register(
    "family",
    description="the generated Voldemort of a seed (family:SEED, default 0; docs/FAMILY.md)",
)
def _family(options: BrainOptions) -> FamilyVoldemort:
    holdout = options.settings.get("holdout") is True  # the report's key (module doc)
    return FamilyVoldemort(options.rules, family_seed(options.param), holdout=holdout)


__all__ = [
    "HOLDOUT_START",
    "OBSERVERS",
    "FamilyParams",
    "FamilyReaction",
    "FamilyVoldemort",
    "GeneratedVoldemort",
    "HeldOutDraw",
    "LookTimes",
    "as_generated",
    "draw",
    "family_seed",
    "generate",
    "is_copy",
    "positive_due",
]
