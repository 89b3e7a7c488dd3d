"""How a generated Voldemort (`horcrux.agents.family`) models Harry's belief.

An observer is fed Harry's record only (the view's `history`: Harry's actions and their
results, which Voldemort sees) and answers, each turn:

* `m`: a map location -> [0, 1], its estimate of Harry's confidence that the location
  holds a Horcrux;
* `predicted`: the location it expects Harry to attack next, or None.

Records are fed incrementally (only those after the last turn seen), so a game costs one
update per turn. The five observers (docs/FAMILY.md):

* `tally` (window W): over Harry's last W observations, per location the count p of
  positive and n of negative looks; m = (p + k/N) / (p + n + 1), the mean of a
  Beta(k/N, 1 - k/N) prior of strength 1 (k Horcruxes, N locations) after the counts.
  A positive search or a Dumbledore `horcrux` counts as positive; a negative search, an
  attack (whatever its outcome: the location is empty afterwards) or a Dumbledore `decoy`
  / `empty` as negative. One unopposed positive gives 0.6, two 0.73, three 0.8; one
  positive and one negative 0.4: the family's threshold range 0.3-0.8 spans these.
* `bayes-static`, `bayes-moving`: the exact Bayes map `BayesBelief(rules, mode)`, mode
  `static` (no motion model) or the draw's `trigger` / `hazard` relocation model.
* `heuristic`: the seed heuristic's map (`horcrux.belief.heuristic`).
* `copy`: a copy of Harry's default brain run on Harry's view of the next turn, exactly as
  `MirrorVoldemort` does (`next_harry_view`, its own random stream seeded once from
  Voldemort's): predicted = the location the copy attacks, m = the copy's occupancy.

For every observer but `copy`, predicted = the top location of m (first in board order
among near-equals, `ties.first_best`) once its m is at least `PREDICT_LEVEL`, else None.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Mapping
from typing import Literal, Protocol

from horcrux.agents.adversaries import next_harry_view
from horcrux.agents.base import DEFAULT_HARRY, HARRY_BRAINS
from horcrux.agents.contract import MemoryAdopter, belief_of
from horcrux.belief import ties
from horcrux.belief.bayes import AdversaryModel, BayesBelief
from horcrux.belief.heuristic import HeuristicBelief
from horcrux.models import Attack, HarryRecord, Observation
from horcrux.rules import RuleSet
from horcrux.views import VoldemortView

ObserverName = Literal["tally", "bayes-static", "bayes-moving", "heuristic", "copy"]
OBSERVERS: tuple[ObserverName, ...] = ("tally", "bayes-static", "bayes-moving", "heuristic", "copy")

PREDICT_LEVEL = 0.7
"""A map observer predicts an attack at its top location once that location's m is at
least this (tally: two unopposed positives in the window)."""


class Observer(Protocol):
    def observe(
        self, view: VoldemortView, rng: random.Random
    ) -> tuple[dict[str, float], str | None]: ...


def _predict(m: dict[str, float], locations: tuple[str, ...]) -> str | None:
    top = ties.first_best(locations, m)
    return top if ties.at_least(m[top], PREDICT_LEVEL) else None


def _sign(obs: Observation) -> int:
    """+1 for a look that says "Horcrux here", -1 for one that says "nothing here"."""
    return 1 if obs.outcome in ("positive", "horcrux") else -1


class TallyObserver:
    """Counts over Harry's last W observations, turned into a Beta mean per location."""

    def __init__(self, rules: RuleSet, window: int) -> None:
        self.rules = rules
        self.prior = rules.horcruxes / len(rules.locations)
        self.recent: deque[tuple[str, int]] = deque(maxlen=window)
        self.turn = 0

    def feed(self, record: HarryRecord) -> None:
        for obs in record.observations:
            self.recent.append((obs.location, _sign(obs)))
        self.turn = record.turn

    def occupancy(self) -> dict[str, float]:
        pos = dict.fromkeys(self.rules.locations, 0)
        neg = dict.fromkeys(self.rules.locations, 0)
        for loc, sign in self.recent:
            if sign > 0:
                pos[loc] += 1
            else:
                neg[loc] += 1
        return {
            loc: (pos[loc] + self.prior) / (pos[loc] + neg[loc] + 1.0)
            for loc in self.rules.locations
        }

    def observe(
        self, view: VoldemortView, rng: random.Random
    ) -> tuple[dict[str, float], str | None]:
        for record in view.history:
            if record.turn > self.turn:
                self.feed(record)
        m = self.occupancy()
        return m, _predict(m, self.rules.locations)


class MapObserver:
    """A belief map of the package's (`BayesBelief`, `HeuristicBelief`) fed Harry's record."""

    def __init__(self, rules: RuleSet, belief: BayesBelief | HeuristicBelief) -> None:
        self.rules = rules
        self.belief = belief
        self.turn = 0

    def observe(
        self, view: VoldemortView, rng: random.Random
    ) -> tuple[dict[str, float], str | None]:
        for record in view.history:
            if record.turn > self.turn:
                self.belief.update(record)
                self.turn = record.turn
        m = self.belief.occupancy()
        return m, _predict(m, self.rules.locations)


class CopyObserver:
    """Harry's default brain run on Harry's next view (`MirrorVoldemort`'s copy)."""

    def __init__(self, rules: RuleSet) -> None:
        self.rules = rules
        self.copy = HARRY_BRAINS.create(DEFAULT_HARRY, rules)  # no truth: Harry's view only
        self.stream: random.Random | None = None

    def adopt_memory(
        self, models: tuple[AdversaryModel, ...], params: Mapping[str, float] | None = None
    ) -> None:
        """What Harry's cross-game memory gave Harry, given to the copy
        (`MirrorVoldemort.adopt_memory`)."""
        if isinstance(self.copy, MemoryAdopter):
            self.copy.adopt_memory(models, params)

    def observe(
        self, view: VoldemortView, rng: random.Random
    ) -> tuple[dict[str, float], str | None]:
        if self.stream is None:  # the copy's own stream: seeded once from Voldemort's
            self.stream = random.Random(rng.getrandbits(64))
        move = self.copy.decide(next_harry_view(view), self.stream)
        belief = belief_of(self.copy)
        m = belief.occupancy() if belief is not None else dict.fromkeys(self.rules.locations, 0.0)
        return m, (move.location if isinstance(move, Attack) else None)


def make_observer(
    rules: RuleSet, name: ObserverName, *, window: int, motion: Literal["trigger", "hazard"]
) -> TallyObserver | MapObserver | CopyObserver:
    """The observer `name` (tally's `window`, bayes-moving's `motion` model)."""
    if name == "tally":
        return TallyObserver(rules, window)
    if name == "bayes-static":
        return MapObserver(rules, BayesBelief(rules, "static"))
    if name == "bayes-moving":
        return MapObserver(rules, BayesBelief(rules, motion))
    if name == "heuristic":
        return MapObserver(rules, HeuristicBelief(rules))
    return CopyObserver(rules)


__all__ = [
    "OBSERVERS",
    "PREDICT_LEVEL",
    "CopyObserver",
    "MapObserver",
    "Observer",
    "ObserverName",
    "TallyObserver",
    "make_observer",
]
