"""Voldemort's brains: `reference` (the rules' fixed adversary), `passive`, `random`."""

from __future__ import annotations

import math
import random

from horcrux.agents.base import VOLDEMORT_BRAINS, BrainOptions, VoldemortMove
from horcrux.belief import ties
from horcrux.models import HarryRecord, Pass, PlantDecoy, Relocate
from horcrux.rules import RuleSet
from horcrux.views import VoldemortView


def public_evidence(rules: RuleSet, history: tuple[HarryRecord, ...]) -> dict[str, float]:
    """Per location, the log-likelihood ratio of Harry's searches there (reset by an attack).

    A positive adds log(d/f), a negative log((1-d)/(1-f)), with the sensor that searched.
    """
    score = dict.fromkeys(rules.locations, 0.0)
    for record in history:
        _fold(rules, score, record)
    return score


def _fold(rules: RuleSet, score: dict[str, float], record: HarryRecord) -> None:
    """Add one of Harry's turns to `public_evidence`'s scores, in place."""
    for obs in record.observations:
        if obs.kind == "attack":
            score[obs.location] = 0.0
        elif obs.kind == "search":
            s = rules.sensor_of("hermione" if obs.sensor == "hermione" else None)
            if obs.outcome == "positive":
                score[obs.location] += math.log(s.d / s.f)
            else:
                score[obs.location] += math.log((1 - s.d) / (1 - s.f))


class EvidenceFold:
    """`public_evidence`, folded in record by record while a game's history grows: the
    same additions in the same order (the same floats) without re-reading the whole
    history every turn. A history that does not extend the last one starts over."""

    def __init__(self, rules: RuleSet) -> None:
        self.rules = rules
        self._seen: tuple[HarryRecord, ...] = ()
        self._score = dict.fromkeys(rules.locations, 0.0)

    def __call__(self, history: tuple[HarryRecord, ...]) -> dict[str, float]:
        n = len(self._seen)
        if len(history) < n or history[:n] != self._seen:
            n = 0
            self._score = dict.fromkeys(self.rules.locations, 0.0)
        for record in history[n:]:
            _fold(self.rules, self._score, record)
        self._seen = history
        return dict(self._score)


def top_evidence_free(
    rules: RuleSet, view: VoldemortView, evidence: dict[str, float] | None = None
) -> tuple[str, float] | None:
    """The free location with the highest public evidence (first in board order among
    near-equals: the sums' last bits follow the order of the searches, `ties`);
    `evidence`: `public_evidence` of the view's history, when already at hand."""
    free = view.free_locations()
    if not free:
        return None
    if evidence is None:
        evidence = public_evidence(rules, view.history)
    best = ties.first_best(free, evidence)
    return best, evidence[best]


def reference_decoy(
    rules: RuleSet, view: VoldemortView, evidence: EvidenceFold | None = None
) -> PlantDecoy | None:
    """Rule 2 of the reference: a decoy at the top-evidence free location, if above 0
    (`evidence`: a fold of this game's history, to read it from)."""
    if view.decoys_left <= 0:
        return None
    scores = evidence(view.history) if evidence is not None else None
    top = top_evidence_free(rules, view, scores)
    return PlantDecoy(location=top[0]) if top is not None and ties.above(top[1], 0.0) else None


class ReferenceVoldemort:
    """The evaluation's fixed adversary, deterministic given the game's RNG.

    1. A positive this turn at a real Horcrux, with relocation charges left: move that
       Horcrux to a free location drawn uniformly.
    2. Else, with decoy charges left: plant a decoy at the free location with the highest
       public evidence (first in board order on ties), if that evidence is above 0.
    3. Else pass.
    """

    name = "reference"

    def __init__(self, rules: RuleSet) -> None:
        self.rules = rules
        self.evidence = EvidenceFold(rules)

    def decide(self, view: VoldemortView, rng: random.Random) -> VoldemortMove:
        last = view.last_harry
        if last is not None and last.turn == view.turn and view.relocations_left > 0:
            for obs in last.observations:
                if (
                    obs.kind == "search"
                    and obs.outcome == "positive"
                    and obs.location in view.horcrux_locations
                ):
                    target = rng.choice(view.free_locations())
                    return Relocate(from_location=obs.location, to_location=target)
        decoy = reference_decoy(self.rules, view, self.evidence)
        if decoy is not None:
            return decoy
        return Pass()


class PassiveVoldemort:
    """Never acts: the control for adversary-overfitting."""

    name = "passive"

    def decide(self, view: VoldemortView, rng: random.Random) -> VoldemortMove:
        return Pass()


class RandomVoldemort:
    """Each turn picks uniformly among pass, a relocation and a decoy (when charges allow)."""

    name = "random"

    def decide(self, view: VoldemortView, rng: random.Random) -> VoldemortMove:
        free = view.free_locations()
        options = ["pass"]
        if view.relocations_left > 0 and view.horcrux_locations and free:
            options.append("relocate")
        if view.decoys_left > 0 and free:
            options.append("decoy")
        choice = rng.choice(options)
        if choice == "relocate":
            return Relocate(
                from_location=rng.choice(view.horcrux_locations), to_location=rng.choice(free)
            )
        if choice == "decoy":
            return PlantDecoy(location=rng.choice(free))
        return Pass()


@VOLDEMORT_BRAINS.register(
    "reference",
    description="the rules' fixed adversary: relocates after a positive, decoys at the evidence",
)
def _reference(options: BrainOptions) -> ReferenceVoldemort:
    return ReferenceVoldemort(options.rules)


@VOLDEMORT_BRAINS.register("passive", description="never acts")
def _passive(options: BrainOptions) -> PassiveVoldemort:
    return PassiveVoldemort()


@VOLDEMORT_BRAINS.register("random", description="random legal actions")
def _random(options: BrainOptions) -> RandomVoldemort:
    return RandomVoldemort()
