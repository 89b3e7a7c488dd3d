"""The exact Bayes belief map, with adversary-model averaging (docs/MEMORY.md, "L2").

Hidden state
    The set S of locations holding a real Horcrux (all C(N, k) sets of size k, k the
    Horcruxes left) joined with Voldemort's remaining relocation charges r = 0..R: for the
    classic preset 455 x 4 = 1,820 weights. Beside it, per location j, the decoy
    probability c_j = P(decoy at j | no Horcrux at j), kept factorised.

Observations (all exact Bayes on the weights)
    * search at j with sensor (d, f) (Harry's, Ron's two, Hermione's own): sets with j
      get l_r (d or 1-d), sets without j get c_j l_r + (1-c_j) l_e, then c_j is updated;
    * attack at j: `destroyed` keeps the sets with j and drops j from them (k falls by one,
      the state space shrinks to the sets of size k-1 through precomputed index maps);
      `decoy` / `empty` keep the sets without j, weighted c_j / 1-c_j; c_j becomes 0;
    * Dumbledore's reveal: an exact observation of j's type.

Predictive step (what Voldemort may have done after Harry's turn), one per adversary model:
    * `trigger`: mass of the sets holding j moves when a positive arrived at j this turn
      and charges remain (probability `trigger`, one charge, uniform destination among the
      N-k locations without a Horcrux; the first positive of the turn at a real Horcrux,
      as the reference Voldemort of docs/RULES.md does);
    * `hazard`: any set with charges left moves one of its Horcruxes with probability h
      per turn (uniform Horcrux, uniform destination), using a charge;
    * `static`: nothing moves.
    Decoys never move, and a relocation neither plants nor lifts one: through the moves each
    model keeps P(decoy at j) = (1 - m_j) c_j, so c_j becomes that over the new P(no Horcrux
    at j). (The location a Horcrux left held none; without this, the moved weight would take
    j's c_j with it.) A model may also plant decoys (`plant` > 0): like the reference
    adversary, at the free location with the highest public evidence (the log-likelihood sum
    of Harry's searches there, reset by an attack) when that evidence is above 0 and no
    relocation happened. The chance that each candidate was the free one chosen raises its
    c_j, and the expected number of decoys used is tracked so planting stops once the
    charges are (probably) spent. (Destinations ignore decoys, an approximation.) A `greedy`
    placement drops "above 0": every location is a candidate, best evidence first (a
    Voldemort who plants whenever he can, from turn 1: what cross-game memory learns as
    `plant_blind`).

Model averaging (`mixture`)
    Each model runs its own exact filter; its posterior weight is its prior times the
    probability it gave to every observation of this game (Bayesian model averaging), so
    a passive adversary soon leaves the `static` model in charge and the reference one the
    `trigger` model. Marginals are the weighted average of the models' marginals.

Entropy
    `entropy()` is the entropy in bits of the normalised marginal map m / k. Because each
    m_i <= 1, it is at least log2(k) (reached when Harry is sure of all k locations);
    `decision_entropy()` = entropy() - log2(k) therefore reaches 0 when Harry is sure, and
    is what an entropy gate should use.

Snapshot
    The map is a deterministic function of its construction parameters and the
    observations fed to it, so `snapshot()` stores those (a few bytes per turn, zlib'd:
    about 200 bytes at turn 50) and `restore()` replays them through the same code: the
    restored map is bit-identical, hence so are the decisions taken from it. This is the
    layering of docs/MEMORY.md: Layer 2 is recomputed from the Layer 3 event record.

Modules
    `bayes_map` (`BayesBelief`), `catalogue` (the adversary models and the planner's belief
    modes), `tables` (array types and index tables), `budgets` (budget priors), `reacting`
    (what belief-reacting models read, Harry's race), `filter` and `planting` (the stacked
    exact filters, their moves and decoys), `information` and `codec` (the snapshot's
    codes). This module re-exports the names other modules import.
"""

from __future__ import annotations

from horcrux.belief.bayes_map import BayesBelief
from horcrux.belief.budgets import Prior, forgotten_budgets
from horcrux.belief.catalogue import (
    AWARE,
    AWARE_COPY,
    AWARE_EXACT,
    BELIEF_THRESHOLDS,
    COPY_RACE_COST,
    COPY_RACE_FROM,
    DEFAULT_MODE,
    EXACT_BAND,
    HAZARD,
    LOW_BAND,
    MODES,
    REFERENCE_LIKE,
    RULE_HESITATE,
    RULE_JITTER,
    RULE_THRESHOLDS,
    STATIC,
    TOP_BAND,
    AdversaryModel,
    Destination,
    Motion,
    Placement,
    Reads,
    belief_models,
    rule_model,
)
from horcrux.belief.filter import KEEP_FLOOR
from horcrux.belief.information import binary_entropy, h2
from horcrux.belief.reacting import level_fill, race_attack
from horcrux.belief.tables import BoolArray, FloatArray, IntArray, Maps, array_sum

__all__ = [
    "AWARE",
    "AWARE_COPY",
    "AWARE_EXACT",
    "BELIEF_THRESHOLDS",
    "COPY_RACE_COST",
    "COPY_RACE_FROM",
    "DEFAULT_MODE",
    "EXACT_BAND",
    "HAZARD",
    "KEEP_FLOOR",
    "LOW_BAND",
    "MODES",
    "REFERENCE_LIKE",
    "RULE_HESITATE",
    "RULE_JITTER",
    "RULE_THRESHOLDS",
    "STATIC",
    "TOP_BAND",
    "AdversaryModel",
    "BayesBelief",
    "BoolArray",
    "Destination",
    "FloatArray",
    "IntArray",
    "Maps",
    "Motion",
    "Placement",
    "Prior",
    "Reads",
    "array_sum",
    "belief_models",
    "binary_entropy",
    "forgotten_budgets",
    "h2",
    "level_fill",
    "race_attack",
    "rule_model",
]
