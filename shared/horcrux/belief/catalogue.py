"""The adversary models the exact filter averages over, and the planner's belief modes
(`MODES`): what Voldemort may be, with the priors each mode gives him (docs/MEMORY.md)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

from horcrux.belief import ties
from horcrux.belief.policy import RANDOMISED

Motion = Literal["trigger", "hazard", "static", "belief"]
Placement = Literal["evidence", "random", "belief", "greedy"]
Destination = Literal["uniform", "low"]
Reads = Literal["own", "naive", "rule"]


@dataclass(frozen=True)
class AdversaryModel:
    """One hypothesis about Voldemort: how he moves Horcruxes and plants decoys."""

    name: str
    motion: Motion
    trigger: float = 1.0  # P(relocate | positive at a real Horcrux, charges left)
    hazard: float = 0.03  # P(one relocation per turn | charges left)
    plant: float = 0.0  # P(plant a decoy this turn | it is possible)
    prior: float = 1.0
    placement: Placement = "evidence"  # where: the top-evidence free location (evidence
    # above 0), anywhere free, ("belief") the free location Harry's own map rates highest,
    # above k/N, or ("greedy") the top-evidence free location whatever its evidence: a
    # Voldemort who plants whenever he can, from turn 1
    threshold: float = 0.5  # `belief` motion: Harry's occupancy that triggers a move
    spread: float = 0.0  # `belief`: the threshold is uniform on threshold +- spread
    destination: Destination = "uniform"  # where a moved Horcrux goes: any free location,
    # or ("low") the free locations Harry's map rates lowest (within `LOW_BAND`)
    scatter: float = 0.0  # `belief`: the share of moves and decoys that go anywhere free
    reads: Reads = "own"  # `belief`: which map of Harry's the adversary reads: his own
    # (the whole mixture), or ("naive") the map of a Harry who models no belief-reacting
    # adversary (the mixture of this belief's other models: the level-0 public map), or
    # ("rule") Harry's own map through Harry's own rule: he moves the Horcrux at the
    # location the planner's rule would attack next turn, with the probability the rule
    # (its thresholds `rule`, jitter `spread`, hesitation `hesitate`) attacks it
    rule: tuple[float, ...] = ()
    hesitate: float = 0.0
    level0: bool = True  # part of the `naive` map (the level-0 Harry's models); `belief`
    # models never are
    race: float = 0.0  # `rule` models: Harry plays the one-turn race (`race_attack`) once
    # the exposure rho (`BayesBelief.race_exposure`) is at least this (0: never)
    exact: bool = False  # `belief` decoys of a copy of Harry's code: at the free location
    # his exact next map (after every model's move) rates highest, near-equals one group
    # (`ties`; no TOP_BAND grouping: the copy holds the same floats)
    race_cost: float = 1.0  # `rule` models playing the race: an attack's cost, as a share
    # of the thresholds for the spare attacks left (`race_attack`'s cost)
    fill: bool = False  # `belief` models reading Harry's own map (`own`, `rule`): the
    # moved Horcrux goes to the locations his map rates lowest *after this prediction*,
    # levelled (`level_fill`), not to the lowest before it (which the prediction itself
    # lifts off the bottom, so an adversary reading the final map never picks it)


REFERENCE_LIKE = AdversaryModel("trigger", "trigger", trigger=1.0, plant=1.0)
HAZARD = AdversaryModel("hazard", "hazard", hazard=0.03, plant=0.5)
STATIC = AdversaryModel("static", "static", plant=0.0)

MODES: dict[str, tuple[AdversaryModel, ...]] = {
    "trigger": (REFERENCE_LIKE,),
    "hazard": (HAZARD,),
    "static": (STATIC,),
    "mixture": (
        AdversaryModel("trigger", "trigger", trigger=1.0, plant=1.0, prior=0.7),
        AdversaryModel("hazard", "hazard", hazard=0.03, plant=0.5, prior=0.15),
        AdversaryModel("static", "static", plant=0.0, prior=0.15),
    ),
    "robust": (
        AdversaryModel("trigger", "trigger", trigger=1.0, plant=1.0, prior=0.6),
        AdversaryModel("hazard", "hazard", hazard=0.03, plant=0.5, prior=0.125),
        AdversaryModel("static", "static", plant=0.0, prior=0.125),
        AdversaryModel(
            "early", "hazard", hazard=1 / 3, plant=1 / 3, placement="random", prior=0.15
        ),
    ),
}
BELIEF_THRESHOLDS = (0.35, 0.5, 0.65, 0.8)
"""The prior's support for a belief-reacting adversary's trigger (Harry's occupancy)."""


def belief_models(
    total: float,
    thresholds: tuple[float, ...] = BELIEF_THRESHOLDS,
    *,
    spread: float = 0.02,
    plant: float = 1.0,
    scatter: float = 0.15,
    reads: tuple[Reads, ...] = ("naive", "own"),
) -> tuple[AdversaryModel, ...]:
    """Adversaries that react to Harry's own map (docs/MEMORY.md, "Belief-reacting
    adversaries"): for each threshold, one moving the Horcrux Harry rates highest to the
    locations he rates lowest once his occupancy there crosses it, and planting decoys
    at his top free location; `total` prior mass shared evenly."""
    each = total / (len(thresholds) * len(reads))
    return tuple(
        AdversaryModel(
            f"belief@{t:g}" + ("" if r == "own" else f"/{r}"),
            "belief",
            trigger=1.0,
            threshold=t,
            spread=spread,
            plant=plant,
            placement="belief",
            destination="low",
            scatter=scatter,
            reads=r,
            prior=each,
        )
        for r in reads
        for t in thresholds
    )


RULE_THRESHOLDS = RANDOMISED.thresholds
"""The planner's attack thresholds by spare attacks (`PlannerParams.thresholds`)."""
RULE_JITTER = RANDOMISED.jitter
"""The planner's jitter: each turn's threshold is lowered by U(0, RULE_JITTER)."""
RULE_HESITATE = RANDOMISED.exposed[3]
"""The planner's hesitation before a threshold attack, at full weight of `rule` models
(the hesitation of `RANDOMISED.exposed`)."""


def rule_model(prior: float, race: float = 0.0) -> AdversaryModel:
    """The adversary who runs Harry's own code on Harry's view (the `mirror` class): he
    moves the Horcrux that Harry's rule attacks next turn, with the probability that the
    rule, randomised from Harry's private stream, attacks it."""
    return AdversaryModel(
        "rule",
        "belief",
        trigger=1.0,
        plant=1.0,
        placement="belief",
        destination="low",
        scatter=0.15,
        reads="rule",
        rule=RULE_THRESHOLDS,
        spread=RULE_JITTER,
        hesitate=RULE_HESITATE,
        prior=prior,
        race=race,
    )


AWARE: tuple[AdversaryModel, ...] = (
    # `mixture`'s three models with its priors scaled by 6/7: their own mixture (the
    # `naive` map) is then exactly `mixture`'s map
    AdversaryModel("trigger", "trigger", trigger=1.0, plant=1.0, prior=0.6),
    AdversaryModel("hazard", "hazard", hazard=0.03, plant=0.5, prior=0.6 * 3 / 14),
    AdversaryModel("static", "static", plant=0.0, prior=0.6 * 3 / 14),
    *belief_models(0.3),
    rule_model(0.05),
    # `robust`'s early spender (the `random` style), outside the level-0 map
    AdversaryModel(
        "early",
        "hazard",
        hazard=1 / 3,
        plant=1 / 3,
        placement="random",
        prior=0.15,
        level0=False,
    ),
)
"""`mixture` plus the belief-reacting models, the `rule` model and `robust`'s early
spender (relative prior weights: 6/7 for `mixture`'s three, 0.3 shared by the eight
threshold models, 0.05 `rule`, 0.15 `early`), their decoys and destinations read in
bands (`TOP_BAND`, `LOW_BAND`)."""
AWARE_EXACT: tuple[AdversaryModel, ...] = tuple(
    replace(m, exact=True) if m.motion == "belief" else m for m in AWARE
)
"""`AWARE` with every belief-reacting model `exact` (an adversary who reads Harry's map
reads his very floats: decoys at its top free location, moves to its lowest, no bands):
what `AWARE_COPY` is built on (docs/MEMORY.md)."""
MODES["aware"] = AWARE  # the models, Harry's play randomised (the default before aware-copy)
COPY_RACE_COST = 0.7
"""`aware-copy`: the race's cost of an attack, as a share of the thresholds'."""
COPY_RACE_FROM = 0.3
"""`aware-copy`: the exposure (`BayesBelief.race_exposure`) from which the race plays."""


def _copy_model(model: AdversaryModel) -> AdversaryModel:
    if model.motion != "belief" or model.reads == "naive":
        return model
    model = replace(model, fill=True)
    if model.reads == "rule":
        model = replace(model, race=COPY_RACE_FROM, race_cost=COPY_RACE_COST)
    return model


AWARE_COPY: tuple[AdversaryModel, ...] = tuple(_copy_model(m) for m in AWARE_EXACT)
"""The planner's default models (`aware-copy`), built for an adversary who holds a copy
of Harry's code: the exact models, their own-map destinations levelled (`fill`), and the
race from rho >= 0.3 at 0.7 of the thresholds' cost (docs/MEMORY.md)."""
MODES["aware-copy"] = AWARE_COPY
LOW_BAND = 0.02
"""A `low` destination: the free locations within this much of Harry's lowest occupancy."""
TOP_BAND = 0.02
"""A `belief` decoy: the free locations within this much of Harry's top one are one group."""
EXACT_BAND = ties.TOL
"""An `exact` model's `low` band (the one `shadow` and `mirror` use): a copy of Harry's
code reads his very floats, near-equals tied (`horcrux.belief.ties`)."""

DEFAULT_MODE = "aware-copy"
"""The planner's default. With the planner's endgame it wins about as much as `robust`
against every scripted Voldemort, without `robust`'s probing attacks, which the
evaluation counts as failures, and more than `aware` (the default before it) against
every adversary that reads Harry's map or runs his code (docs/MEMORY.md)."""
