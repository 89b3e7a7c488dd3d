"""Voldemorts stronger than the reference, for the evaluation (`horcrux evaluate`).

* `shadow` (`shadow:THRESHOLD[:MODE]`, default 0.5 and `mixture`): Voldemort keeps a
  *shadow* of Harry's belief: the exact Bayes map (`BayesBelief` in the belief mode MODE,
  model averaging) fed with Harry's own actions and results, which Voldemort sees. The
  default reads the map of the planner before the belief-reacting models (`mixture`);
  `shadow:0.5:aware-copy` reads the default planner's own map, float for float. He saves his
  relocations for the moment they hurt: when Harry's inferred occupancy of a real Horcrux's
  location reaches THRESHOLD (Harry is about to attack it), he moves that Horcrux to the
  free location Harry believes least likely. Decoys go where Harry's inferred belief is
  highest among the free locations, once it is above the uninformed k/N. The reference
  instead spends a relocation on every early positive, often long before Harry would have
  attacked, and plants decoys by a cruder evidence score.
* `delayed` (`delayed:MAX`, default 6): the reference, except that after a positive at a
  real Horcrux he waits a delay drawn uniformly from 1..MAX turns before moving it (if it
  is still there), so that Harry's "it moves right after a positive" model is wrong twice:
  the positive sticks for a while, then goes stale. Decoys as the reference.

* `mirror` (`mirror:HARRY_SPEC`, default the seat's default Harry): "the adversary has read
  your code". Each turn he runs a copy of Harry's brain on Harry's view of the next turn
  and relocates the Horcrux the copy attacks to the free location the copy believes least
  likely; decoys go to the copy's top free location (once above k/N). The copy has its own
  random stream, drawn from Voldemort's: it never sees Harry's (nobody can).
* `ambush` (`ambush:HARRY_SPEC`): mirror's trigger with what the new Harry does not model:
  the moved Horcrux goes to a free location drawn uniformly (not the least likely), and
  when the copy only searches, a Horcrux that the copy rates above `AMBUSH_LEVEL` still
  moves with probability `AMBUSH_HAZARD` a turn (random timing below any threshold).

All play only legal moves (free destinations, charges checked) and draw randomness from
the game's RNG only. Registered on `VOLDEMORT_BRAINS` when `horcrux.agents` is imported.
"""

from __future__ import annotations

import random
from collections.abc import Mapping

from horcrux.agents.base import (
    DEFAULT_HARRY,
    HARRY_BRAINS,
    VOLDEMORT_BRAINS,
    BrainOptions,
    VoldemortMove,
)
from horcrux.agents.contract import MemoryAdopter, belief_of
from horcrux.agents.voldemort import public_evidence
from horcrux.belief import ties
from horcrux.belief.bayes import MODES, AdversaryModel, BayesBelief
from horcrux.errors import UnknownBrain
from horcrux.models import Attack, Pass, PlantDecoy, Relocate
from horcrux.rules import RuleSet
from horcrux.views import AllyStatus, HarryView, VoldemortView

SHADOW_MODE = "mixture"
"""The belief mode whose map `shadow` reads unless told: the planner's before the
belief-reacting models."""


class ShadowVoldemort:
    """Relocates when Harry's inferred belief says he is about to attack; decoys at his peak."""

    name = "shadow"

    def __init__(self, rules: RuleSet, threshold: float = 0.5, mode: str = SHADOW_MODE) -> None:
        self.rules = rules
        self.threshold = threshold
        self.shadow = BayesBelief(rules, mode)  # the map it reads (default: the old planner's)
        if mode != SHADOW_MODE:
            self.name = f"shadow:{threshold:g}:{mode}"
        elif threshold != 0.5:
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
            exposed = ties.first_best(view.horcrux_locations, m)
            if ties.at_least(m[exposed], self.threshold):
                low = min(m[loc] for loc in free)
                target = rng.choice([loc for loc in free if ties.at_most(m[loc], low)])
                return Relocate(from_location=exposed, to_location=target)
        if view.decoys_left > 0:
            prior = view.horcruxes_left / len(self.rules.locations)
            best = ties.first_best(free, m)
            if ties.above(m[best], prior):
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
            best = ties.first_best(free, evidence)  # board order among near-equals
            if ties.above(evidence[best], 0.0):
                return PlantDecoy(location=best)
        return Pass()


def next_harry_view(view: VoldemortView) -> HarryView:
    """What Harry will see at the start of the next turn (Voldemort's move is hidden)."""
    allies = {
        name: AllyStatus(
            rest=max(0, a.rest - 1),
            uses_left=a.uses_left,
            available=max(0, a.rest - 1) == 0 and (a.uses_left is None or a.uses_left > 0),
        )
        for name, a in view.allies.items()
    }
    return HarryView(
        rules=view.rules,
        turn=view.turn + 1,
        phase="harry",
        attacks_left=view.attacks_left,
        horcruxes_destroyed=view.horcruxes_destroyed,
        horcruxes_left=view.horcruxes_left,
        allies=allies,
        history=view.history,
    )


AMBUSH_LEVEL = 0.3
AMBUSH_HAZARD = 0.25


class MirrorVoldemort:
    """Runs a copy of Harry's brain on Harry's next view and moves what it would attack."""

    name = "mirror"
    uniform_destination = False
    hazard = 0.0

    def __init__(self, rules: RuleSet, harry: str | None = None) -> None:
        self.rules = rules
        self.spec = harry or DEFAULT_HARRY
        self.copy = HARRY_BRAINS.create(self.spec, rules)  # no truth: Harry's view only
        self.stream: random.Random | None = None
        if harry is not None:
            self.name = f"{type(self).name}:{harry}"
        self.predicted: list[tuple[int, str | None]] = []  # (turn, location it attacks)

    def adopt_memory(
        self, models: tuple[AdversaryModel, ...], params: Mapping[str, float] | None = None
    ) -> None:
        """Give the copy what Harry's cross-game memory gave Harry this game
        (`PlannerHarry.adopt_memory`): the memory is built from past games, which
        Voldemort saw whole, by code he has read, so a copy of Harry's brain holds it too.
        A copy that is no planner keeps its own brain."""
        if isinstance(self.copy, MemoryAdopter):
            self.copy.adopt_memory(models, params)

    def _copy_rng(self, rng: random.Random) -> random.Random:
        """The copy's own random stream: seeded once from Voldemort's, never Harry's."""
        if self.stream is None:
            self.stream = random.Random(rng.getrandbits(64))
        return self.stream

    def decide(self, view: VoldemortView, rng: random.Random) -> VoldemortMove:
        free = view.free_locations()
        if not free:
            return Pass()
        copy_rng = self._copy_rng(rng)
        move = self.copy.decide(next_harry_view(view), copy_rng)
        belief = belief_of(self.copy)
        m = belief.occupancy() if belief is not None else dict.fromkeys(self.rules.locations, 0.0)
        target_loc = move.location if isinstance(move, Attack) else None
        self.predicted.append((view.turn, target_loc))
        if view.relocations_left > 0 and view.horcrux_locations:
            source = target_loc if target_loc in view.horcrux_locations else None
            if source is None and self.hazard > 0.0:
                exposed = ties.first_best(view.horcrux_locations, m)
                if ties.at_least(m[exposed], AMBUSH_LEVEL) and rng.random() < self.hazard:
                    source = exposed
            if source is not None:
                if self.uniform_destination:
                    return Relocate(from_location=source, to_location=rng.choice(free))
                low = min(m[loc] for loc in free)
                target = rng.choice([loc for loc in free if ties.at_most(m[loc], low)])
                return Relocate(from_location=source, to_location=target)
        if view.decoys_left > 0:
            prior = view.horcruxes_left / len(self.rules.locations)
            best = ties.first_best(free, m)
            if ties.above(m[best], prior):
                return PlantDecoy(location=best)
        return Pass()


class AmbushVoldemort(MirrorVoldemort):
    """Mirror's trigger, uniform destinations, and random-timed moves below any threshold."""

    name = "ambush"
    uniform_destination = True
    hazard = AMBUSH_HAZARD


def _harry_spec(options: BrainOptions, who: str) -> str | None:
    if options.param is None:
        return None
    try:
        HARRY_BRAINS.entry(options.param)
    except UnknownBrain as exc:
        raise UnknownBrain(f"{who}: {exc}") from None
    return options.param


def _shadow_params(options: BrainOptions) -> tuple[float, str]:
    """`shadow`'s THRESHOLD[:MODE] (defaults 0.5 and `SHADOW_MODE`), each checked."""
    if options.param is None:
        return 0.5, SHADOW_MODE
    text, _, mode = options.param.partition(":")
    try:
        value = float(text)
    except ValueError:
        raise UnknownBrain(f"shadow's threshold must be a number, got {text!r}") from None
    if not 0.0 < value <= 1.0:
        raise UnknownBrain(f"shadow's threshold must be in (0, 1], got {value}")
    mode = mode or SHADOW_MODE
    if mode not in MODES:
        raise UnknownBrain(f"shadow's map: unknown belief mode {mode!r}; known: {', '.join(MODES)}")
    return value, mode


@VOLDEMORT_BRAINS.register(
    "shadow",
    description="relocates when Harry's inferred belief peaks (shadow:THRESHOLD[:MODE])",
)
def _shadow(options: BrainOptions) -> ShadowVoldemort:
    return ShadowVoldemort(options.rules, *_shadow_params(options))


@VOLDEMORT_BRAINS.register(
    "delayed", description="the reference, relocating 1..MAX turns after a positive"
)
def _delayed(options: BrainOptions) -> DelayedVoldemort:
    from horcrux.agents.base import int_param

    return DelayedVoldemort(options.rules, int_param(options, 6, "delayed's maximum delay"))


@VOLDEMORT_BRAINS.register(
    "mirror",
    description="a copy of Harry's brain on his view; moves what it would attack (mirror:HARRY)",
)
def _mirror(options: BrainOptions) -> MirrorVoldemort:
    return MirrorVoldemort(options.rules, _harry_spec(options, "mirror"))


@VOLDEMORT_BRAINS.register(
    "ambush",
    description="mirror's trigger, uniform destinations, random-timed moves (ambush:HARRY)",
)
def _ambush(options: BrainOptions) -> AmbushVoldemort:
    return AmbushVoldemort(options.rules, _harry_spec(options, "ambush"))


__all__ = [
    "AmbushVoldemort",
    "DelayedVoldemort",
    "MirrorVoldemort",
    "ShadowVoldemort",
    "next_harry_view",
]
