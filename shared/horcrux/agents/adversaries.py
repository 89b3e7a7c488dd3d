"""Voldemorts stronger than the reference, for the evaluation (`horcrux evaluate`).

* `shadow` (`shadow:THRESHOLD`, default 0.5): Voldemort keeps a *shadow* of Harry's
  belief: the exact Bayes map (`BayesBelief`, model averaging) fed with Harry's own
  actions and results, which Voldemort sees. He saves his relocations for the moment they
  hurt: when Harry's inferred occupancy of a real Horcrux's location reaches THRESHOLD
  (Harry is about to attack it), he moves that Horcrux to the free location Harry believes
  least likely. Decoys go where Harry's inferred belief is highest among the free
  locations, once it is above the uninformed k/N. The reference instead spends a
  relocation on every early positive, often long before Harry would have attacked, and
  plants decoys by a cruder evidence score.
* `delayed` (`delayed:MAX`, default 6): the reference, except that after a positive at a
  real Horcrux he waits a delay drawn uniformly from 1..MAX turns before moving it (if it
  is still there), so that Harry's "it moves right after a positive" model is wrong twice:
  the positive sticks for a while, then goes stale. Decoys as the reference.

Both play only legal moves (free destinations, charges checked) and draw randomness from
the game's RNG only. Registered on `VOLDEMORT_BRAINS` when `horcrux.agents` is imported.
"""

from __future__ import annotations

import random

from horcrux.agents.base import VOLDEMORT_BRAINS, BrainOptions, VoldemortMove
from horcrux.agents.voldemort import public_evidence
from horcrux.belief.bayes import BayesBelief
from horcrux.errors import UnknownBrain
from horcrux.models import Pass, PlantDecoy, Relocate
from horcrux.rules import RuleSet
from horcrux.views import VoldemortView


class ShadowVoldemort:
    """Relocates when Harry's inferred belief says he is about to attack; decoys at his peak."""

    name = "shadow"

    def __init__(self, rules: RuleSet, threshold: float = 0.5) -> None:
        self.rules = rules
        self.threshold = threshold
        self.shadow = BayesBelief(rules)
        if threshold != 0.5:
            self.name = f"shadow:{threshold:g}"

    def _sync(self, view: VoldemortView) -> dict[str, float]:
        for record in view.history:
            if record.turn > self.shadow.turn:
                self.shadow.update(record)
        return self.shadow.occupancy()

    def decide(self, view: VoldemortView, rng: random.Random) -> VoldemortMove:
        m = self._sync(view)
        free = view.free_locations()
        if not free:
            return Pass()
        if view.relocations_left > 0 and view.horcrux_locations:
            exposed = max(view.horcrux_locations, key=lambda loc: m[loc])
            if m[exposed] >= self.threshold:
                low = min(m[loc] for loc in free)
                target = rng.choice([loc for loc in free if m[loc] <= low + 1e-9])
                return Relocate(from_location=exposed, to_location=target)
        if view.decoys_left > 0:
            prior = view.horcruxes_left / len(self.rules.locations)
            best = max(free, key=lambda loc: m[loc])
            if m[best] > prior:
                return PlantDecoy(location=best)
        return Pass()


class DelayedVoldemort:
    """The reference with a random delay between a positive and the relocation it triggers."""

    name = "delayed"

    def __init__(self, rules: RuleSet, max_delay: int = 6) -> None:
        self.rules = rules
        self.max_delay = max_delay
        self.pending: dict[str, int] = {}  # location -> turn at which to move it
        if max_delay != 6:
            self.name = f"delayed:{max_delay}"

    def decide(self, view: VoldemortView, rng: random.Random) -> VoldemortMove:
        last = view.last_harry
        if last is not None and last.turn == view.turn:
            for obs in last.observations:
                if (
                    obs.kind == "search"
                    and obs.outcome == "positive"
                    and obs.location in view.horcrux_locations
                    and obs.location not in self.pending
                ):
                    self.pending[obs.location] = view.turn + rng.randint(1, self.max_delay)
        self.pending = {
            loc: due for loc, due in self.pending.items() if loc in view.horcrux_locations
        }
        free = view.free_locations()
        if view.relocations_left > 0 and free:
            due_now = sorted(loc for loc, due in self.pending.items() if due <= view.turn)
            if due_now:
                source = due_now[0]
                del self.pending[source]
                return Relocate(from_location=source, to_location=rng.choice(free))
        if view.decoys_left > 0 and free:
            evidence = public_evidence(self.rules, view.history)
            best = max(free, key=lambda loc: evidence[loc])
            if evidence[best] > 0:
                return PlantDecoy(location=best)
        return Pass()


def _float_param(options: BrainOptions, default: float) -> float:
    if options.param is None:
        return default
    try:
        value = float(options.param)
    except ValueError:
        raise UnknownBrain(f"shadow's threshold must be a number, got {options.param!r}") from None
    if not 0.0 < value <= 1.0:
        raise UnknownBrain(f"shadow's threshold must be in (0, 1], got {value}")
    return value


@VOLDEMORT_BRAINS.register(
    "shadow", description="relocates when Harry's inferred belief peaks (shadow:THRESHOLD)"
)
def _shadow(options: BrainOptions) -> ShadowVoldemort:
    return ShadowVoldemort(options.rules, _float_param(options, 0.5))


@VOLDEMORT_BRAINS.register(
    "delayed", description="the reference, relocating 1..MAX turns after a positive"
)
def _delayed(options: BrainOptions) -> DelayedVoldemort:
    from horcrux.agents.base import int_param

    return DelayedVoldemort(options.rules, int_param(options, 6, "delayed's maximum delay"))


__all__ = ["DelayedVoldemort", "ShadowVoldemort"]
