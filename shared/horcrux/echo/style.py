"""Which adversary models fit an opponent, across games: the `Style` posterior (pure).

The default planner's filter averages adversary models within a game (docs/MEMORY.md):
the level-0 models (`trigger`, `hazard`, `static`: their mixture is the public map a
`shadow` reads), eight belief-reacting models (a trigger threshold on Harry's occupancy,
on the level-0 map or on his own), `rule` (Harry's own rule), `early`, and what the rate
beliefs learned (`learned-trigger`, `learned-static`). At a game's end each *unit* (a
model, or the level-0 group as one: its internal ratios must stay those of the public
map) gets the game's factor r_u = log L_u - log sum_v P0_v L_v, clipped below at
FACTOR_MIN (-10): L_u the likelihood of Voldemort's actual moves under the unit
(`echo.predictive`), against that under the default mixture P0, the "no memory"
hypothesis (`echo.gate.game_evidence`). Across games:

    score_u <- DISCOUNT * score_u + TEMPER * r_u

(a model absent from a game keeps its discounted score; DISCOUNT is the decay's
`evidence_discount` of the clock since the last game: 0.9 a game by default, 1 with decay
off), and the next game starts from

    Q_u ∝ P0_u exp(score_u),   prior_u = (1 - FLOOR) Q_u + FLOOR P0_u,

P0 the default prior. TEMPER < 1 because the models are approximations and games vary
(one game's factors run to tens of nats); DISCOUNT < 1 so that a style switch is
followed (an effective window of about ten games); FLOOR (0.7) keeps most of the default
prior: memory shifts the prior and never replaces it (the restricted Nash response's
bounded exploitation, in prior form), so the game's own evidence can still overrule it.
Q is the posterior over the models Harry holds; when none describes the opponent it
concentrates on the least bad, and a planner that played 0.9 Q + 0.1 P0 lost up to 26
points against memory off (the family's hazard draws, docs/ECHO.md).
`threshold_posterior` is Q's marginal over the belief models' thresholds: against
`shadow` (threshold 0.5 on the public map) it concentrates on 0.5.

"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from horcrux.echo.model import Style

if TYPE_CHECKING:
    from horcrux.belief.bayes import AdversaryModel
    from horcrux.rules import RuleSet
    from horcrux.store.port import AnyEvent

DISCOUNT = 0.9
TEMPER = 0.25
FLOOR = 0.7
LEVEL0 = "level0"
CORRECTION_NATS = 5.0
"""An operator's threshold correction: this many nats of score for the belief models
at the corrected threshold (about two games of a clear fit; evidence can outweigh it)."""
FACTOR_MIN = -10.0
"""A game's log Bayes factor is clipped below at this: a model that one game's filter all
but ruled out (a move it called impossible, -690 nats) is strongly but boundedly
disfavoured, so one odd game cannot outweigh a season of good fits (robust evidence)."""
_LOG_TINY = math.log(1e-300)


def unit_of(model: AdversaryModel) -> str:
    """The style unit a model belongs to: the level-0 group, or the model itself."""
    return LEVEL0 if model.motion != "belief" and model.level0 else model.name


def units(models: Sequence[AdversaryModel]) -> dict[str, float]:
    """Each unit's share of the models' prior (normalised)."""
    total = sum(m.prior for m in models) or 1.0
    out: dict[str, float] = {}
    for m in models:
        out[unit_of(m)] = out.get(unit_of(m), 0.0) + m.prior / total
    return out


def bayes_factors(models: Sequence[AdversaryModel], weights: Sequence[float]) -> dict[str, float]:
    """A played filter's view of one game: per unit, log(posterior weight at the end /
    prior weight) (a diagnostic: the style learns from the moves, `echo.gate`)."""
    prior = units(models)
    post: dict[str, float] = {}
    for m, w in zip(models, weights, strict=True):
        post[unit_of(m)] = post.get(unit_of(m), 0.0) + float(w)
    return {
        u: round(
            max(FACTOR_MIN, (math.log(post[u]) if post[u] > 0.0 else _LOG_TINY) - math.log(p)), 6
        )
        for u, p in prior.items()
        if p > 0.0
    }


def replay_factors(
    rules: RuleSet, models: Sequence[AdversaryModel], events: Sequence[AnyEvent]
) -> dict[str, float]:
    """`bayes_factors` of a finished game recomputed from its events: Harry's records
    folded into a fresh filter over `models` (the ones the game's start-up played)."""
    from horcrux.belief.bayes import DEFAULT_MODE, BayesBelief
    from horcrux.models import HarryMoved

    belief = BayesBelief(rules, DEFAULT_MODE, models=tuple(models))
    for event in events:
        if isinstance(event, HarryMoved):
            belief.update_observations(event.turn, event.observations, track=False)
    return bayes_factors(models, belief.model_weights().tolist())


def updated(
    style: Style | None,
    factors: Mapping[str, float],
    clock: float,
    life: float,
    discount: float = DISCOUNT,
) -> Style:
    """The style after one more game's factors, its old scores times `discount` (the
    decay's `evidence_discount` of the clock since the last game)."""
    scores = dict(style.scores) if style else {}
    for u in set(scores) | set(factors):
        scores[u] = round(discount * scores.get(u, 0.0) + TEMPER * factors.get(u, 0.0), 6)
    base = style or Style(
        id="style", subject="style", text="", created=clock, last_access=clock, life=life
    )
    out = base.model_copy(update={"scores": scores, "games": base.games + 1, "last_access": clock})
    return out.model_copy(update={"text": describe(out)})


def posterior(
    scores: Mapping[str, float], default: Mapping[str, float], *, floor: float = 0.0
) -> dict[str, float]:
    """Q over the units of `default` (P0): P0_u exp(score_u), normalised, then mixed with
    P0 by `floor`."""
    logq = {u: math.log(p) + scores.get(u, 0.0) for u, p in default.items() if p > 0.0}
    if not logq:
        return {}
    top = max(logq.values())
    q = {u: math.exp(v - top) for u, v in logq.items()}
    total = sum(q.values())
    return {u: (1.0 - floor) * q[u] / total + floor * default[u] for u in q}


def threshold_posterior(q: Mapping[str, float]) -> dict[float, float]:
    """Q's marginal over the belief-reacting models' trigger thresholds (normalised)."""
    out: dict[float, float] = {}
    for u, p in q.items():
        if u.startswith("belief@"):
            t = float(u[len("belief@") :].split("/")[0])
            out[t] = out.get(t, 0.0) + p
    total = sum(out.values())
    return {t: p / total for t, p in sorted(out.items())} if total > 0 else {}


THRESHOLD_MIN_GAMES = 3
"""A threshold correction is the operator's word until this many games of evidence."""


def evidence_thresholds(evidence: Mapping[str, float]) -> dict[float, float]:
    """The threshold posterior of `evidence` (tempered log Bayes factors per unit) from
    the default prior P0: `threshold_posterior` of `posterior(evidence, P0)`."""
    from horcrux.belief.bayes import DEFAULT_MODE, MODES

    return threshold_posterior(posterior(evidence, units(MODES[DEFAULT_MODE])))


def threshold_support(evidence: Mapping[str, float], threshold: float) -> float:
    """How much a threshold correction's `evidence` supports `threshold`: the
    posterior's marginal at it (`evidence_thresholds`)."""
    return round(evidence_thresholds(evidence).get(threshold, 0.0), 4)


def describe(style: Style) -> str:
    from horcrux.belief import ties
    from horcrux.belief.bayes import DEFAULT_MODE, MODES

    q = posterior(style.scores, units(MODES[DEFAULT_MODE]))
    best = ties.ranked_items(q, q)[:3]
    return "fits: " + ", ".join(f"{u} {q[u]:.2f}" for u in best)


__all__ = [
    "CORRECTION_NATS",
    "DISCOUNT",
    "FLOOR",
    "LEVEL0",
    "TEMPER",
    "THRESHOLD_MIN_GAMES",
    "bayes_factors",
    "evidence_thresholds",
    "posterior",
    "replay_factors",
    "threshold_posterior",
    "threshold_support",
    "unit_of",
    "units",
    "updated",
]
