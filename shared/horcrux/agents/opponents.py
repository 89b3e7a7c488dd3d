"""Voldemort styles the Bayes filter's defaults do not assume (the season's opponents).

* `late[:K]` (default K = 3): relocates a real Horcrux K turns after Harry's last
  positive search there (if it is still there and charges remain), never right after it;
  plants decoys like the reference otherwise. The default `mixture` filter expects the
  reference's immediate trigger, so it keeps believing a positive location is emptied
  at once, then is surprised when the Horcrux moves later.
* `decoy-heavy`: never relocates; plants every decoy as early as it can at the free
  location with the highest public evidence (even when that evidence is not above 0).

Both are deterministic given the game's RNG, like the reference. They are built-in brains:
`VOLDEMORT_BRAINS` imports this module on its first lookup (`agents.base.BUILTIN_MODULES`),
so `VOLDEMORT_BRAINS.create("late", ...)` works in a fresh interpreter whatever was
imported, with no entry point.
"""

from __future__ import annotations

import random

from horcrux.agents.base import VOLDEMORT_BRAINS, BrainOptions, VoldemortMove, int_param
from horcrux.agents.voldemort import reference_decoy, top_evidence_free
from horcrux.models import Pass, PlantDecoy, Relocate
from horcrux.rules import RuleSet
from horcrux.views import VoldemortView

LATE_DEFAULT_DELAY = 3


class LateVoldemort:
    """Relocates `delay` turns after Harry's last positive at a real Horcrux."""

    def __init__(self, rules: RuleSet, delay: int = LATE_DEFAULT_DELAY) -> None:
        self.rules = rules
        self.delay = delay
        self.name = f"late:{delay}" if delay != LATE_DEFAULT_DELAY else "late"

    def decide(self, view: VoldemortView, rng: random.Random) -> VoldemortMove:
        if view.relocations_left > 0:
            last_positive: dict[str, int] = {}
            for record in view.history:
                for obs in record.observations:
                    if obs.kind == "search" and obs.outcome == "positive":
                        last_positive[obs.location] = record.turn
            for loc in view.horcrux_locations:
                seen = last_positive.get(loc)
                if seen is not None and view.turn - seen == self.delay:
                    free = view.free_locations()
                    if free:
                        return Relocate(from_location=loc, to_location=rng.choice(free))
        return reference_decoy(self.rules, view) or Pass()


class DecoyHeavyVoldemort:
    """Never relocates; plants its decoys as early as possible at the top public evidence."""

    name = "decoy-heavy"

    def __init__(self, rules: RuleSet) -> None:
        self.rules = rules

    def decide(self, view: VoldemortView, rng: random.Random) -> VoldemortMove:
        if view.decoys_left > 0:
            top = top_evidence_free(self.rules, view)
            if top is not None:
                return PlantDecoy(location=top[0])
        return Pass()


@VOLDEMORT_BRAINS.register(
    "late", description="relocates K turns after Harry's positive (default 3), never at once"
)
def _late(options: BrainOptions) -> LateVoldemort:
    return LateVoldemort(options.rules, int_param(options, LATE_DEFAULT_DELAY, "late's delay"))


@VOLDEMORT_BRAINS.register("decoy-heavy", description="never relocates; decoys as early as it can")
def _decoy_heavy(options: BrainOptions) -> DecoyHeavyVoldemort:
    return DecoyHeavyVoldemort(options.rules)
