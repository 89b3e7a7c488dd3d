"""The memory gate: does what memory learned predict the opponent better than no memory?

Two hypotheses about the next game's opponent: the memory's plan (`use.memory_plan`
without the gate: its models and priors Q, the learned models, the style posterior and
the threshold corrections in it) and "no memory" (the planner's default models and
priors P0). Each finished game scores them by the prequential log-likelihood of
Voldemort's actual moves (`echo.predictive`): the plan made *before* the game against
the default, both as mixtures over the union of their models (P0 gives the learned
models no weight):

    llr = log sum_m Q_m L_m - log sum_m P0_m L_m,   S <- DISCOUNT * S + llr

(L_m = P(the game's moves | model m); DISCOUNT the style's, 0.9 a game). S is kept on
the `Style` item (`gate`; `gate_last` the last game's llr). The planner then plays

    prior = w Q + (1 - w) P0,   w = 0 if S <= MARGIN, else 1 - exp(-(S - MARGIN)),

so while memory has not out-predicted the default by MARGIN nats (10: about a nat a
game, sustained) the game is exactly a memory-off game (`memory_plan` returns None), and
past it memory takes over smoothly (w = 0.63 one nat above MARGIN, 0.95 three nats
above). The exponential is the posterior
weight a log Bayes factor of S - MARGIN gives the plan over an even start, kept
continuous at MARGIN (no jump from memory off to fully on). The operator's parameter
preferences (`PARAM_SUBJECTS`) are settings of the planner, not claims about the
opponent: they are outside the gate.

The same step gives the style its evidence: per unit u (`style.unit_of`), the game's
factor r_u = max(FACTOR_MIN, log L_u - log sum_v P0_v L_v), the unit's likelihood
relative to the default mixture (the "no memory" hypothesis).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from horcrux.belief.bayes import AdversaryModel
    from horcrux.rules import RuleSet
    from horcrux.store.port import AnyEvent

MARGIN = 10.0
"""Nats by which memory's plan must have out-predicted the default prior (discounted)
before it reaches the planner. At DISCOUNT 0.9 a steady per-game ratio l settles at
S = 10 l, so memory plays only while its plan out-predicts the default by more than
about 1 nat a game (over a game's ~50 moves of Voldemort's). Measured on the family's
dev split: the opponents memory helps give 2-10 nats a game (shadow about 3,
decoy-heavy about 10), while plans that hurt play gave about 0.4 a game, which a
margin of 3 let through within 20 games (docs/ECHO.md, "The memory gate")."""
ABSENT_PRIOR = 1e-9
"""The prior of a model the game's planner did not hold, in the replay that reads the
game's maps (it then weighs nothing in them)."""


def weight(score: float, margin: float = MARGIN) -> float:
    """w: the plan's share of the prior at gate score S (0 at or below MARGIN)."""
    from horcrux.belief import ties

    if ties.at_most(score, margin):
        return 0.0
    return round(1.0 - math.exp(-(score - margin)), 6)


def updated_score(score: float, llr: float, discount: float) -> float:
    """S after one more game's log-likelihood ratio."""
    return round(discount * score + llr, 6)


def mixed_models(
    plan: Sequence[AdversaryModel], default: Sequence[AdversaryModel], w: float
) -> tuple[AdversaryModel, ...]:
    """The plan's models with priors w Q + (1 - w) P0 (each normalised; P0 zero on the
    models the default lacks), in the plan's order."""
    q = _normalised(plan)
    p0 = _normalised(default)
    return tuple(replace(m, prior=w * q[m.name] + (1.0 - w) * p0.get(m.name, 0.0)) for m in plan)


def _normalised(models: Sequence[AdversaryModel]) -> dict[str, float]:
    total = sum(m.prior for m in models) or 1.0
    return {m.name: m.prior / total for m in models}


@dataclass(frozen=True)
class GameEvidence:
    """One finished game's evidence: the style's factors per unit, the gate's llr, and
    the log-likelihood of Voldemort's moves under the default mixture ("no memory": the
    opponent posterior's "none of these", `echo.opponent`)."""

    factors: dict[str, float]
    llr: float
    default: float = 0.0


def game_evidence(
    rules: RuleSet,
    events: Sequence[AnyEvent],
    plan: Sequence[AdversaryModel] | None,
    played: Sequence[AdversaryModel] | None,
) -> GameEvidence:
    """The evidence of a game whose moves are `events`: `plan` the memory's models
    before it without the gate (None: nothing learned, the default), `played` the
    models the game's planner held (None: the default). The likelihoods are read on
    maps replayed over the played models, with the plan's other models at ABSENT_PRIOR."""
    from horcrux.belief.bayes import DEFAULT_MODE, MODES
    from horcrux.echo import predictive
    from horcrux.echo.style import FACTOR_MIN

    default = MODES[DEFAULT_MODE]
    held = list(played or default)
    names = {m.name for m in held}
    held += [replace(m, prior=ABSENT_PRIOR) for m in (plan or ()) if m.name not in names]
    logliks = predictive.move_logliks(rules, held, events)
    base = predictive.mix_loglik([(m.prior, logliks[m.name]) for m in default])
    by_name = {m.name: m for m in default}
    # units over the default priors (the level-0 group keeps the public map's ratios),
    # the learned models each a unit of its own
    unit_models = [by_name.get(m.name, m) for m in held]
    units = predictive.unit_logliks(unit_models, logliks)
    factors = {u: round(max(FACTOR_MIN, lu - base), 6) for u, lu in units.items()}
    llr = 0.0
    if plan is not None:
        llr = predictive.mix_loglik([(m.prior, logliks[m.name]) for m in plan]) - base
    return GameEvidence(factors, round(llr, 6), round(base, 6))


def line(score: float, margin: float = MARGIN) -> str | None:
    """The memory line's note while the gate holds memory back (None: it does not)."""
    if weight(score, margin) > 0.0:
        return None
    return f"memory held back (gate {score:.1f} <= {margin:g} nats)"


__all__ = [
    "ABSENT_PRIOR",
    "MARGIN",
    "GameEvidence",
    "game_evidence",
    "line",
    "mixed_models",
    "updated_score",
    "weight",
]
