"""Harry on a particle belief over who Voldemort is (`horcrux.agents.particles`).

* `told:SEED[:N]`: a Harry told his opponent's exact policy (the family's `family:SEED`):
  the ceiling of what knowing the opponent is worth.
* `untold[:N[:P[:hedged]]]`: the same Harry not told, whose belief holds P policies drawn
  from the family's distribution: the posterior over policies learns the opponent within
  the game. `hedged` keeps the default planner as the hypothesis "none of these" and plays
  it while its exact map predicts Harry's observations better.

N particles (default `PARTICLES`). Both play the planner's rule on the particles'
P(real Horcrux): attack the likeliest location once it reaches the threshold for the
spare attacks left, or when the attacks left must be spent (`forced_attack`); else search
where the information about the Horcruxes is greatest (`horcrux_information`). The
adversary's reaction to Harry's evidence is in the belief (each particle's Voldemort plays
his policy on Harry's record), not in a search over Harry's future moves.
"""

from __future__ import annotations

import math
import random
import time
from collections import Counter
from dataclasses import replace
from typing import Any

from horcrux.agents.base import HARRY_BRAINS, BrainOptions, HarryMove, int_param
from horcrux.agents.family import family_seed
from horcrux.agents.particles import ParticleBelief, Prior, family_prior, told
from horcrux.agents.planner import Choice, PlannerHarry, forced_attack
from horcrux.belief.policy import PlannerParams
from horcrux.belief.ties import argmax_first, at_least, below, tie_order
from horcrux.decisions import DecisionRecord
from horcrux.errors import UnknownBrain
from horcrux.models import Attack, Search
from horcrux.rules import RuleSet
from horcrux.views import HarryView

PARTICLES = 1024
"""The particle count of `untold` and `told`."""

PRIOR_POLICIES = 64
"""How many policies `untold`'s prior draws from the family's distribution."""


def _h2(p: float) -> float:
    if p <= 1e-12 or p >= 1.0 - 1e-12:
        return 0.0
    return -(p * math.log2(p) + (1.0 - p) * math.log2(1.0 - p))


def horcrux_information(m: list[float], decoy: list[float], d: float, f: float) -> list[float]:
    """Per location, the mutual information (bits) between one search there and whether it
    holds a real Horcrux, a decoy counting as noise (as the planner's)."""
    out = []
    hd = _h2(d)
    for mj, dj in zip(m, decoy, strict=True):
        free = 1.0 - mj
        c = dj / free if free > 1e-12 else 0.0
        g = c * d + (1.0 - c) * f
        p = mj * d + free * g
        out.append(_h2(p) - mj * hd - free * _h2(g))
    return out


class ParticleHarry:
    """Harry on `ParticleBelief` (see the module doc)."""

    def __init__(
        self,
        rules: RuleSet,
        prior: Prior,
        count: int = PARTICLES,
        params: PlannerParams | None = None,
        name: str = "untold",
        hedge: bool = False,
        default: PlannerHarry | None = None,
    ) -> None:
        self.rules = rules
        self.belief = ParticleBelief(rules, prior, count)
        self.default = default if default is not None else (PlannerHarry(rules) if hedge else None)
        """The default planner, "none of these": played while its own belief predicts
        Harry's observations better than the particles do (`odds`)."""
        self.params = params or PlannerParams()
        self.name = name
        self.decisions: list[DecisionRecord] = []
        self.counts: Counter[str] = Counter()

    def decide(self, view: HarryView, rng: random.Random) -> HarryMove:
        start = time.perf_counter()
        self.sync(view)
        if self.default is not None and below(self.odds(), 0.0):
            choice = self.default.choose(view, rng)
            self.counts["default"] += 1
            self._record(view.turn, start)
            return choice.move
        choice = self.choose(view)
        self.counts[choice.kind] += 1
        self._record(view.turn, start)
        return choice.move

    def sync(self, view: HarryView) -> None:
        """Fold in what the view holds that the belief has not seen (a fresh brain synced
        to a view decides as the one that played the game: nothing needs storing)."""
        self.belief.sync(view)
        if self.default is not None:
            self.default.sync(view)

    def odds(self) -> float:
        """log of how much better the particles predicted Harry's observations than the
        default planner's belief (0 without a default)."""
        if self.default is None:
            return 0.0
        return self.belief.log_evidence - self.default.belief.log_evidence()

    def _record(self, turn: int, start: float) -> None:
        self.decisions.append(
            DecisionRecord(
                turn=turn,
                tier="zero",
                source="planner",
                latency_ms=(time.perf_counter() - start) * 1000.0,
            )
        )

    def choose(self, view: HarryView) -> Choice:
        locs = self.rules.locations
        m = self.belief.horcrux_marginals()
        ranks = tie_order(len(locs), view.turn).tolist()
        best = argmax_first(m, ranks)
        spare = view.attacks_left - view.horcruxes_left
        if forced_attack(view, self.params):
            return Choice(Attack(location=locs[best]), "attack", m[best])
        if view.attacks_left > 0 and at_least(m[best], self.params.threshold(spare)):
            return Choice(Attack(location=locs[best]), "attack", m[best])
        sensor = self.rules.sensor
        info = horcrux_information(m, self.belief.decoy_marginals(), sensor.d, sensor.f)
        j = argmax_first(info, ranks)
        return Choice(Search(location=locs[j]), "search", info[j])

    def stats(self) -> dict[str, Any]:
        weights = sorted(self.belief.policy_weights().items(), key=lambda kv: (-kv[1], kv[0]))
        return {
            "decisions": len(self.decisions),
            "actions": dict(sorted(self.counts.items())),
            "repaired": self.belief.repaired,
            "top_policies": [
                {"policy": self.belief.prior.policies[i].describe(), "weight": round(w, 4)}
                for i, w in weights[:3]
            ],
        }


def against(planner: PlannerHarry, prior: Prior, count: int = PARTICLES) -> ParticleHarry:
    """`planner` playing against who memory says the opponent is (`prior`, from
    `horcrux.echo.opponent`): the particles over those policies, hedged with `planner`
    itself as "none of these" (it plays while its own map predicts Harry's observations
    better)."""
    return ParticleHarry(planner.rules, prior, count, name=planner.name, default=planner)


def _whole(options: BrainOptions, text: str, default: int, what: str) -> int:
    """One part of a spec's parameter as a whole number >= 1 (`default` when empty)."""
    return int_param(replace(options, param=text or None), default, what)


@HARRY_BRAINS.register(
    "told",
    description=(
        "a Harry told his opponent is the generated family's draw SEED (told:SEED): the "
        "ceiling of what knowing the opponent is worth"
    ),
    seat_allowed=False,
)
def _told(options: BrainOptions) -> ParticleHarry:
    seed_text, _, count_text = (options.param or "").partition(":")
    seed = family_seed(seed_text or None)
    count = _whole(options, count_text, PARTICLES, "told's particle count")
    return ParticleHarry(options.rules, told(seed), count, name=f"told:{seed}")


@HARRY_BRAINS.register(
    "untold",
    description=(
        "a Harry whose belief holds the generated family's distribution of opponents and "
        "learns which one he plays within the game (untold[:N particles[:P policies[:hedged]]])"
    ),
    seat_allowed=False,
)
def _untold(options: BrainOptions) -> ParticleHarry:
    count_text, _, rest = (options.param or "").partition(":")
    policies_text, _, hedge = rest.partition(":")
    if hedge not in ("", "hedged"):
        raise UnknownBrain(f"untold's last part is 'hedged' or nothing, got {hedge!r}")
    count = _whole(options, count_text, PARTICLES, "untold's particle count")
    policies = _whole(options, policies_text, PRIOR_POLICIES, "untold's prior policies")
    return ParticleHarry(
        options.rules, family_prior(policies), count, name="untold", hedge=hedge == "hedged"
    )


__all__ = [
    "PARTICLES",
    "PRIOR_POLICIES",
    "ParticleHarry",
    "against",
    "horcrux_information",
]
