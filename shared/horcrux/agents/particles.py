"""Harry's belief as weighted particles over who Voldemort is and where everything is.

Each particle is one hypothesis: a policy of the generated family (`FamilyParams`: the
trigger, the observer, the destination, the decoys) and a full hidden state (where the
Horcruxes and the decoys are, the charges left, the policy's pending moves). The belief
is a `Prior` over policies made into particles, then, for each of Harry's turns:

1. *weigh*: each particle by the likelihood of what Harry saw (a search's sensor, or the
   exact outcome of an attack or a reveal, which also changes the state: a destroyed
   Horcrux or an attacked decoy is gone);
2. *resample* (systematic) when the effective number of particles falls below half;
3. *react*: each particle's Voldemort plays his turn with the family's own code
   (`FamilyReaction`), fed his observer's reading of Harry's record. The observer reads
   Harry's record alone, so one observer per distinct observer serves every particle.

A particle that contradicts an exact outcome (an attack that destroyed a Horcrux where
it holds none) is repaired, not dropped: the nearest consistent state (the Horcrux moved
there, say) with its weight times `REPAIR`. Consistent particles then dominate, and a
belief whose every particle was wrong recovers instead of dying.

The same machinery serves a Harry told his opponent's policy (`told`: one policy, the
ceiling of what knowing the opponent is worth) and a Harry who is not (`family_prior`: the
family's own distribution, sampled), so that knowing the opponent is a prior that
cross-game memory can supply. Every draw comes from streams keyed by the turn and
Harry's record (`random.Random` of a string), and every sum runs in Python floats in
particle order, so the belief is the same on every machine and after a replay.
"""

from __future__ import annotations

import hashlib
import math
import random
from dataclasses import dataclass

from horcrux.agents.base import VoldemortMove
from horcrux.agents.family import FamilyParams, FamilyReaction, LookTimes, draw, generate
from horcrux.agents.family_observers import CopyObserver, MapObserver, TallyObserver, make_observer
from horcrux.agents.voldemort import EvidenceFold
from horcrux.belief import ties
from horcrux.models import HarryRecord, Observation, PlantDecoy, Relocate
from horcrux.rules import RuleSet
from horcrux.views import HarryView, VoldemortView, public_view

REPAIR = 1e-3
"""The weight factor of a particle repaired to agree with an exact outcome."""

ObserverKey = tuple[str, int, str]
"""An observer's identity: (name, tally's window or 0, bayes-moving's motion or "")."""


@dataclass(frozen=True)
class Prior:
    """A prior over adversaries: family policies and their prior weights."""

    name: str
    policies: tuple[FamilyParams, ...]
    weights: tuple[float, ...]


def told(seed: int) -> Prior:
    """The prior of a Harry told that his opponent is `family:SEED` (the held-out guard
    applies: `draw`)."""
    return Prior(f"told:{seed}", (draw(seed),), (1.0,))


def family_prior(count: int = 256, key: str = "family-prior") -> Prior:
    """`count` policies drawn from the family's distribution (`generate`, a stream of its
    own: no draw of either split), each of equal weight."""
    rng = random.Random(f"horcrux-{key}")
    policies = tuple(generate(rng) for _ in range(count))
    return Prior(f"family-prior:{count}", policies, (1.0,) * count)


def observer_key(params: FamilyParams) -> ObserverKey:
    window = params.window if params.observer == "tally" else 0
    motion = params.motion if params.observer == "bayes-moving" else ""
    return (params.observer, window, motion)


def acts(params: FamilyParams) -> bool:
    """Whether this policy ever moves anything."""
    return params.trigger != "never" or params.decoys != "never"


class Particle:
    """One hypothesis (see the module doc); `reaction` is shared by the particles of a
    policy unless it keeps pending moves (the `positive` trigger), then it is its own."""

    __slots__ = (
        "arrived",
        "decoys",
        "decoys_left",
        "horcruxes",
        "occupied",
        "policy",
        "reaction",
        "relocations",
        "weight",
    )

    def __init__(
        self,
        policy: int,
        horcruxes: list[str],
        decoys: list[str],
        relocations: int,
        decoys_left: int,
        reaction: FamilyReaction,
        weight: float,
        arrived: list[int] | None = None,
        occupied: set[str] | None = None,
    ) -> None:
        self.policy = policy
        self.horcruxes = horcruxes
        self.arrived = arrived if arrived is not None else [0] * len(horcruxes)
        self.decoys = decoys
        self.relocations = relocations
        self.decoys_left = decoys_left
        self.reaction = reaction
        self.weight = weight
        self.occupied = occupied if occupied is not None else set(horcruxes)
        """Every location this hypothesis ever put something at."""

    def copy(self, weight: float) -> Particle:
        own = self.reaction.params.trigger == "positive"
        return Particle(
            self.policy,
            list(self.horcruxes),
            list(self.decoys),
            self.relocations,
            self.decoys_left,
            self.reaction.clone() if own else self.reaction,
            weight,
            list(self.arrived),
            set(self.occupied),
        )

    def remove_horcrux(self, loc: str) -> None:
        i = self.horcruxes.index(loc)
        del self.horcruxes[i]
        del self.arrived[i]


class _Counted(random.Random):
    """A `random.Random` that counts its draws (a move that drew none can be reused)."""

    draws = 0

    def random(self) -> float:
        self.draws += 1
        return super().random()

    def getrandbits(self, k: int, /) -> int:
        self.draws += 1
        return super().getrandbits(k)


def _record_key(record: HarryRecord) -> str:
    text = repr(
        (record.turn, [(o.location, o.kind, o.outcome, o.sensor) for o in record.observations])
    )
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


class ParticleBelief:
    """Particles over (policy, hidden state); see the module doc."""

    def __init__(self, rules: RuleSet, prior: Prior, count: int = 512) -> None:
        if count < 1:
            raise ValueError(f"a particle belief needs at least 1 particle, got {count}")
        self.rules = rules
        self.prior = prior
        self.count = count
        self.turn = 0
        self.evidence = EvidenceFold(rules)
        self.looked = LookTimes(rules)
        self.shared = [FamilyReaction(rules, p, self.evidence, self.looked) for p in prior.policies]
        self.observers: dict[ObserverKey, TallyObserver | MapObserver | CopyObserver] = {}
        self.repaired = 0
        self.moved = 0
        self.log_evidence = 0.0
        """log P(Harry's observations so far) under this belief (the product of each
        turn's mean particle likelihood): comparable with another belief's."""
        self.looks: dict[str, list[tuple[int, float, bool]]] = {loc: [] for loc in rules.locations}
        """Per location, each search there: (turn, its log-likelihood ratio of something
        there against nothing, whether it was positive)."""
        self.probed: set[str] = set()
        """Locations an attack or a reveal told exactly about."""
        self.readings: dict[ObserverKey, dict[int, tuple[dict[str, float], str | None]]] = {}
        """Each observer's reading after each of Harry's turns it was read at."""
        rng = random.Random(f"horcrux-particles:{prior.name}:{count}")
        total = sum(prior.weights)
        cumulative: list[float] = []
        running = 0.0
        for w in prior.weights:
            running += w / total
            cumulative.append(running)
        locations = list(rules.locations)
        self.particles: list[Particle] = []
        for _ in range(count):
            u = rng.random()
            index = next((i for i, c in enumerate(cumulative) if u < c), len(cumulative) - 1)
            base = self.shared[index]
            own = base.params.trigger == "positive"
            self.particles.append(
                Particle(
                    index,
                    rng.sample(locations, rules.horcruxes),
                    [],
                    rules.relocations,
                    rules.decoys,
                    base.clone() if own else base,
                    1.0 / count,
                )
            )

    # ------------------------------------------------------------ reading
    def horcrux_marginals(self) -> list[float]:
        """P(a real Horcrux at each location), in board order."""
        index = {loc: i for i, loc in enumerate(self.rules.locations)}
        out = [0.0] * len(index)
        for p in self.particles:
            for loc in p.horcruxes:
                out[index[loc]] += p.weight
        return out

    def decoy_marginals(self) -> list[float]:
        """P(a decoy at each location), in board order."""
        index = {loc: i for i, loc in enumerate(self.rules.locations)}
        out = [0.0] * len(index)
        for p in self.particles:
            for loc in p.decoys:
                out[index[loc]] += p.weight
        return out

    def occupancy(self) -> dict[str, float]:
        """P(a real Horcrux) per location (the belief map the game's code reads)."""
        return dict(zip(self.rules.locations, self.horcrux_marginals(), strict=True))

    def entropy(self) -> float:
        """Entropy in bits of the normalised map m / k, as the Bayes map's; 0 when k = 0."""
        m = self.horcrux_marginals()
        k = math.fsum(m)
        if k <= 0.0:
            return 0.0
        return -math.fsum(v / k * math.log2(v / k) for v in m if v > 0.0)

    def top(self, n: int = 3) -> list[tuple[str, float]]:
        """The `n` likeliest locations, best first (near-equals in board order)."""
        m = self.horcrux_marginals()
        left = list(range(len(m)))
        out: list[tuple[str, float]] = []
        while left and len(out) < n:
            best = left[ties.argmax_first([m[i] for i in left])]
            left.remove(best)
            out.append((self.rules.locations[best], round(m[best], 6)))
        return out

    def policy_weights(self) -> dict[int, float]:
        """The posterior weight of each policy of the prior still held by a particle."""
        out: dict[int, float] = {}
        for p in self.particles:
            out[p.policy] = out.get(p.policy, 0.0) + p.weight
        return out

    def effective(self) -> float:
        """The effective number of particles, 1 / sum of squared weights."""
        return 1.0 / sum(p.weight * p.weight for p in self.particles)

    # ------------------------------------------------------------ updating
    def sync(self, view: HarryView) -> None:
        """Fold in every record of `view.history` not yet seen (Voldemort's move after each)."""
        history = view.history
        for i, record in enumerate(history):
            if record.turn > self.turn:
                self.update(record, public_view(view, history[: i + 1]))

    def update(self, record: HarryRecord, public: VoldemortView) -> None:
        """Harry's turn `record`, then Voldemort's move after it; `public` is Voldemort's
        view of that moment without the truth."""
        rng = _Counted(f"horcrux-particles:{record.turn}:{_record_key(record)}")
        self._note(record)
        for p in self.particles:
            for obs in record.observations:
                self._observe(p, obs, rng)
        total = math.fsum(p.weight for p in self.particles)
        if total <= 0.0:  # cannot happen with repairs; kept as the safe reset
            for p in self.particles:
                p.weight = 1.0
            total = float(len(self.particles))
        else:
            self.log_evidence += math.log(total)
        for p in self.particles:
            p.weight /= total
        if self.effective() < 0.5 * self.count:
            self._rejuvenate(self._resample(rng), rng)
        self._react(public, rng)
        self.turn = record.turn

    def _note(self, record: HarryRecord) -> None:
        for obs in record.observations:
            if obs.kind != "search":
                self.probed.add(obs.location)
                continue
            sensor = self.rules.sensor_of("hermione" if obs.sensor == "hermione" else None)
            positive = obs.outcome == "positive"
            ratio = (
                math.log(sensor.d / sensor.f)
                if positive
                else math.log((1.0 - sensor.d) / (1.0 - sensor.f))
            )
            self.looks[obs.location].append((record.turn, ratio, positive))

    def _rejuvenate(self, copies: list[Particle], rng: random.Random) -> None:
        """One Metropolis-Hastings sweep after a resampling (resample-move): each Horcrux
        that never moved, or arrived by a uniform draw, is proposed at a location this
        hypothesis never used and no attack or reveal looked at, and moves there with the
        ratio of the searches' likelihoods since it arrived (times, for a trigger that
        reads the observer's map, whether the move keeps the policy's past decisions:
        a location it would have moved from is refused, a hazard's survival is weighed).
        Without it, resampling leaves a few configurations where the truth never moved.
        `copies`: the particles the resampling duplicated (each source's first copy is
        left as it was)."""
        allowed = [loc for loc in self.rules.locations if loc not in self.probed]
        since: dict[tuple[str, int], float] = {}
        keeps: dict[tuple[int, int, str, str], float | None] = {}

        def llr(loc: str, turn: int) -> float:
            key = (loc, turn)
            if key not in since:
                since[key] = sum(r for t, r, _ in self.looks[loc] if t > turn)
            return since[key]

        for p in copies:
            params = p.reaction.params
            readings = self.readings.get(observer_key(params), {})
            for i in range(len(p.horcruxes)):
                here = p.horcruxes[i]
                arrived = p.arrived[i]
                if here in self.probed or here in p.reaction.pending:
                    continue
                if arrived > 0 and params.destination != "uniform":
                    continue
                options = [loc for loc in allowed if loc not in p.occupied]
                if not options:
                    continue
                there = options[int(rng.random() * len(options))]
                ratio = llr(there, arrived) - llr(here, arrived)
                key = (p.policy, arrived, here, there)
                if key not in keeps:
                    keeps[key] = _kept(params, readings, arrived, here, there, self.looks[there])
                kept = keeps[key]
                if kept is None:
                    continue
                ratio += kept
                # the ratio sums logs of the observer's map, whose last bits are the BLAS
                # kernel's: "at least as likely" goes through the ties' tolerance
                if ties.at_least(ratio, 0.0) or rng.random() < math.exp(ratio):
                    p.horcruxes[i] = there
                    p.occupied.discard(here)
                    p.occupied.add(there)
                    self.moved += 1

    def _observe(self, p: Particle, obs: Observation, rng: random.Random) -> None:
        loc = obs.location
        if obs.kind == "search":
            sensor = self.rules.sensor_of("hermione" if obs.sensor == "hermione" else None)
            occupied = loc in p.horcruxes or loc in p.decoys
            if obs.outcome == "positive":
                p.weight *= sensor.d if occupied else sensor.f
            else:
                p.weight *= (1.0 - sensor.d) if occupied else (1.0 - sensor.f)
            return
        outcome = obs.outcome
        real = loc in p.horcruxes
        decoy = loc in p.decoys
        if outcome in ("destroyed", "horcrux"):
            if not real:
                self._repair_real(p, loc, rng)
            if outcome == "destroyed":
                p.remove_horcrux(loc)
        elif outcome == "decoy":
            if not decoy:
                self._repair_decoy(p, loc, rng)
            if obs.kind == "attack":
                p.decoys.remove(loc)
        elif real or decoy:  # empty, where this hypothesis held something
            self._repair_empty(p, loc, rng)

    def _free(self, p: Particle, but: str) -> list[str]:
        """Where a repair may put what it moves: a free location no attack or reveal looked
        at (any free one if none)."""
        taken = set(p.horcruxes) | set(p.decoys)
        free = [loc for loc in self.rules.locations if loc not in taken and loc != but]
        unseen = [loc for loc in free if loc not in self.probed]
        return unseen or free

    def _repair_real(self, p: Particle, loc: str, rng: random.Random) -> None:
        """A Horcrux at `loc`: one of the particle's moves there (a decoy there goes)."""
        self.repaired += 1
        p.weight *= REPAIR
        if loc in p.decoys:
            p.decoys.remove(loc)
        i = rng.randrange(len(p.horcruxes))
        p.horcruxes[i] = loc
        p.arrived[i] = self.turn
        p.occupied.add(loc)

    def _repair_decoy(self, p: Particle, loc: str, rng: random.Random) -> None:
        """A decoy at `loc`: a Horcrux there moves to a free location; a decoy appears."""
        self.repaired += 1
        p.weight *= REPAIR
        if loc in p.horcruxes:
            self._displace(p, loc, rng)
        p.occupied.add(loc)
        if p.decoys_left > 0:
            p.decoys_left -= 1
            p.decoys.append(loc)
        elif p.decoys:
            p.decoys[rng.randrange(len(p.decoys))] = loc
        else:
            p.decoys.append(loc)

    def _repair_empty(self, p: Particle, loc: str, rng: random.Random) -> None:
        """Nothing at `loc`: what the particle held there moves to a free location."""
        self.repaired += 1
        p.weight *= REPAIR
        if loc in p.horcruxes:
            self._displace(p, loc, rng)
        if loc in p.decoys:
            p.decoys.remove(loc)

    def _displace(self, p: Particle, loc: str, rng: random.Random) -> None:
        i = p.horcruxes.index(loc)
        target = rng.choice(self._free(p, loc))
        p.horcruxes[i] = target
        p.arrived[i] = self.turn
        p.occupied.add(target)

    def _resample(self, rng: random.Random) -> list[Particle]:
        """Systematic resampling: `count` particles, each a copy, weight 1 / count.
        Returns the copies beyond each source's first (the ones to rejuvenate)."""
        n = self.count
        step = 1.0 / n
        u = rng.random() * step
        out: list[Particle] = []
        extra: list[Particle] = []
        running = 0.0
        particles = self.particles
        i = -1
        last = -1
        for j in range(n):
            target = u + j * step
            while running <= target and i + 1 < len(particles):
                i += 1
                running += particles[i].weight
            twin = particles[i].copy(step)
            out.append(twin)
            if i == last:
                extra.append(twin)
            last = i
        self.particles = out
        return extra

    def _react(self, public: VoldemortView, rng: _Counted) -> None:
        """Each particle's Voldemort plays his move after Harry's turn. A move that drew
        no randomness is the same for every particle in the same state: it is computed
        once per state (the copies a resampling made share it)."""
        readings: dict[ObserverKey, tuple[dict[str, float], str | None]] = {}
        known: dict[tuple[object, ...], tuple[VoldemortMove, dict[str, int]]] = {}
        locations = self.rules.locations
        for p in self.particles:
            reaction = p.reaction
            params = reaction.params
            if not acts(params) or (p.relocations <= 0 and p.decoys_left <= 0):
                continue
            if len(p.horcruxes) + len(p.decoys) >= len(locations):
                continue
            key = observer_key(params)
            reading = readings.get(key)
            if reading is None:
                reading = self._observer(key, params).observe(public, rng)
                readings[key] = reading
                self.readings.setdefault(key, {})[public.turn] = reading
            state = (
                p.policy,
                tuple(p.horcruxes),
                tuple(p.decoys),
                p.relocations,
                p.decoys_left,
                tuple(sorted(reaction.pending.items())),
            )
            hit = known.get(state)
            if hit is not None:
                move, pending = hit
                if reaction.pending or pending:
                    reaction.pending = dict(pending)
            else:
                truth = {
                    "horcrux_locations": state[1],
                    "decoy_locations": state[2],
                    "relocations_left": p.relocations,
                    "decoys_left": p.decoys_left,
                }
                draws = rng.draws
                move = reaction.move(public.model_copy(update=truth), reading[0], reading[1], rng)
                if rng.draws == draws:
                    known[state] = (move, dict(reaction.pending))
            if isinstance(move, Relocate):
                i = p.horcruxes.index(move.from_location)
                p.horcruxes[i] = move.to_location
                p.arrived[i] = public.turn
                p.occupied.add(move.to_location)
                p.relocations -= 1
            elif isinstance(move, PlantDecoy):
                p.decoys.append(move.location)
                p.occupied.add(move.location)
                p.decoys_left -= 1

    def _observer(
        self, key: ObserverKey, params: FamilyParams
    ) -> TallyObserver | MapObserver | CopyObserver:
        observer = self.observers.get(key)
        if observer is None:
            observer = make_observer(
                self.rules, params.observer, window=params.window, motion=params.motion
            )
            self.observers[key] = observer
        return observer


def _kept(
    params: FamilyParams,
    readings: dict[int, tuple[dict[str, float], str | None]],
    arrived: int,
    here: str,
    there: str,
    looks: list[tuple[int, float, bool]],
) -> float | None:
    """The log factor by which a Horcrux at `there` instead of `here` since `arrived` keeps
    the policy's past decisions: None where the policy would have moved it from `there`
    (refused), the hazard's survival ratio, else 0."""
    if params.trigger == "positive":
        return None if any(t > arrived and positive for t, _, positive in looks) else 0.0
    if params.trigger not in ("predicted", "threshold", "hazard"):
        return 0.0
    factor = 0.0
    for turn, (m, predicted) in readings.items():
        if turn <= arrived:
            continue
        if params.trigger == "predicted":
            if predicted == there:
                return None
        elif params.trigger == "threshold":
            if ties.at_least(m[there], params.threshold):
                return None
        else:
            stay_there = 1.0 - min(1.0, params.gain * m[there])
            stay_here = 1.0 - min(1.0, params.gain * m[here])
            if stay_there <= 0.0:
                return None
            if stay_here > 0.0:
                factor += math.log(stay_there) - math.log(stay_here)
    return factor


__all__ = [
    "REPAIR",
    "Particle",
    "ParticleBelief",
    "Prior",
    "acts",
    "family_prior",
    "observer_key",
    "told",
]
