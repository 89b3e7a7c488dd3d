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
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import random
import struct
import zlib
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from functools import lru_cache
from itertools import combinations
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from horcrux.belief.base import BeliefPoint
from horcrux.models import HarryRecord, Observation
from horcrux.rules import RuleSet, Sensor

Motion = Literal["trigger", "hazard", "static", "belief"]
Placement = Literal["evidence", "random", "belief", "greedy"]
Destination = Literal["uniform", "low"]
Reads = Literal["own", "naive", "rule"]
FloatArray = NDArray[np.float64]
Maps = dict[str, FloatArray]  # Harry's maps a belief-reacting adversary may read, by `reads`
IntArray = NDArray[np.intp]
BoolArray = NDArray[np.bool_]

_TINY = 1e-300
_SERIALS = itertools.count()
_EVIDENCE_FLOOR = 1e-12
# The ufuncs behind `a.clip(lo, hi)`, `a.sum(axis)` and `a.max()` (numpy's methods call
# them through a Python wrapper, whose overhead is a fair share of a call at these sizes):
# the same operation, the same doubles.
_CLIP: Any = np.clip if not hasattr(np, "_core") else np._core.umath.clip
_SUM = np.add.reduce
_MAX = np.maximum.reduce
_MIN = np.minimum.reduce
_ANY = np.logical_or.reduce


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
    # his exact next map (after every model's move) rates highest, ties in board order
    # (no TOP_BAND grouping: the copy holds the same floats)
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


RULE_THRESHOLDS = (0.90, 0.75, 0.60, 0.50)
"""The planner's attack thresholds by spare attacks (`PlannerParams.thresholds`)."""
RULE_JITTER = 0.1
"""The planner's jitter: each turn's threshold is lowered by U(0, RULE_JITTER)."""
RULE_HESITATE = 0.5
"""The planner's hesitation before a threshold attack, at full weight of `rule` models."""


def race_attack(own: FloatArray, cost: float, rho: float, forced: bool) -> FloatArray:
    """P(Harry attacks j next turn) in the one-turn race against an adversary who draws
    Harry's own mixed strategy from his own stream and moves what it draws (docs/MEMORY.md).

    Attacking j with probability pi_j destroys a Horcrux with probability
    m_j (1 - rho pi_j) (rho: P(the adversary copies him and has a charge left)) and costs
    an attack, worth `cost` (the threshold for the spare attacks left). Maximising
    sum_j pi_j (m_j (1 - rho pi_j) - cost) over sum_j pi_j <= 1 gives
    pi_j = max(0, m_j - cost - mu) / (2 rho m_j), mu >= 0 the least making the sum at
    most 1 (a forced attack: cost 0 and the sum exactly 1). rho = 0 is the deterministic
    rule."""
    m = np.clip(own, 0.0, 1.0)
    out: FloatArray = np.zeros(len(m))
    if rho <= 1e-9:
        top = int(np.argmax(m))
        if forced or m[top] >= cost:
            out[top] = 1.0
        return out
    c = 0.0 if forced else cost
    live = m > 1e-12
    gain = m

    def share(mu: float) -> FloatArray:
        p: FloatArray = np.where(
            live, np.clip((gain - c - mu) / (2.0 * rho * np.maximum(m, 1e-12)), 0.0, 1.0), 0.0
        )
        return p

    pi = share(0.0)
    if float(pi.sum()) > 1.0:
        lo, hi = 0.0, float(gain.max())
        for _ in range(40):
            mid = 0.5 * (lo + hi)
            if float(share(mid).sum()) > 1.0:
                lo = mid
            else:
                hi = mid
        pi = share(hi)
    total = float(pi.sum())
    if forced and total > 0.0:
        pi = pi / total
    elif forced:
        pi[int(np.argmax(m))] = 1.0
    return pi


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
KEEP_FLOOR = 1e-6
"""`_Filters._keep_decoys`: below this P(no Horcrux at j), c_j is left as it was."""
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
EXACT_BAND = 1e-9
"""An `exact` model's `low` band (the one `shadow` and `mirror` use): a copy of Harry's
code reads his very floats."""

DEFAULT_MODE = "aware-copy"
"""The planner's default. With the planner's endgame it wins about as much as `robust`
against every scripted Voldemort, without `robust`'s probing attacks, which the
evaluation counts as failures, and more than `aware` (the default before it) against
every adversary that reads Harry's map or runs his code (docs/MEMORY.md)."""


# ---------------------------------------------------------------- precomputed tables
@dataclass(frozen=True)
class _Tables:
    """Index maps for the sets of size k over n locations."""

    n: int
    k: int
    sets: tuple[tuple[int, ...], ...]
    member: BoolArray  # (n_sets, n)
    member_t: BoolArray  # (n, n_sets): its transpose, contiguous (a location's sets)
    free: FloatArray  # (n_sets, n): 1 where the location is not in the set
    anywhere: FloatArray  # (n_sets, n): free / (n - k), uniform over the free locations
    memberf: FloatArray  # (n_sets, n) as floats, for marginals
    with_j: tuple[IntArray, ...]  # per j: rows whose set holds j
    without_j: tuple[IntArray, ...]  # per j: rows whose set lacks j
    # per j, (k, len(without_j)): for each row S' of without_j, the k sources
    # S' - {v} + {j} (v in S') as positions in with_j: where the mass arriving in S'
    # comes from when j's Horcrux moves
    move_src: tuple[IntArray, ...]
    # per j: for each row of with_j, the row of the size-(k-1) set S - {j}
    drop: tuple[IntArray, ...]
    # one uniform move S -> S - {v} + {u} as two gathers through the (k-1)-subsets T:
    # P(T) = sum of w over the supersets T + {u}; into S' comes sum_v P(S' - v) - k w(S')
    supersets: IntArray  # (n_{k-1}, n-k+1): rows of the supersets of each (k-1)-subset
    subsets: IntArray  # (n_sets, k): rows (among the (k-1)-subsets) of S - {v}
    up: FloatArray  # (n_{k-1}, n_sets) incidence T subset of S (sums by matmul: fast)
    down: FloatArray  # its transpose, contiguous
    ones: FloatArray  # (n_sets,)
    # swap[s, j, u]: the row of S - {j} + {u} (j in S, u not in S; else 0): where a
    # Horcrux moving from j to u takes set s
    swap: IntArray  # (n_sets, n, n)
    set_array: IntArray  # (n_sets, k): each set's locations, ascending
    set_cols: tuple[IntArray, ...]  # its k columns, each contiguous
    # a move's destinations restricted to the n-k free locations (a Horcrux never lands
    # in its own set: those columns only ever add exact zeros): free_cols[s] the free
    # locations of set s, ascending; swap_free[s * k + q] the rows S - {s_q} + {u} for u
    # in free_cols[s]; with_j_rows[j] the swap_free row of each set holding j, moving j
    free_cols: IntArray  # (n_sets, n-k)
    swap_free: IntArray  # (n_sets * k, n-k)
    with_j_rows: tuple[IntArray, ...]
    q_rows: tuple[IntArray, ...]  # per q: s * k + q for every set s (swap_free's rows)
    ones_free: FloatArray  # (n-k,)
    free_cols_j: tuple[IntArray, ...]  # per j: free_cols of the sets holding j (with_j[j])


@lru_cache(maxsize=64)
def _tables(n: int, k: int) -> _Tables:
    sets = tuple(combinations(range(n), k))
    index = {s: i for i, s in enumerate(sets)}
    member = np.zeros((len(sets), n), dtype=bool)
    for i, s in enumerate(sets):
        member[i, list(s)] = True
    smaller = {s: i for i, s in enumerate(combinations(range(n), k - 1))} if k >= 1 else {}
    with_j: list[IntArray] = []
    without_j: list[IntArray] = []
    move_src: list[IntArray] = []
    drop: list[IntArray] = []
    for j in range(n):
        w = np.flatnonzero(member[:, j])
        wo = np.flatnonzero(~member[:, j])
        pos_in_w = {int(r): p for p, r in enumerate(w)}
        src = np.zeros((len(wo), k), dtype=np.intp)
        for p, r in enumerate(wo):
            s = sets[r]
            for q, v in enumerate(s):
                source = tuple(sorted((*(x for x in s if x != v), j)))
                src[p, q] = pos_in_w[index[source]]
        with_j.append(w.astype(np.intp))
        without_j.append(wo.astype(np.intp))
        move_src.append(np.ascontiguousarray(src.T))
        drop.append(
            np.array([smaller[tuple(x for x in sets[r] if x != j)] for r in w], dtype=np.intp)
        )
    supersets = np.zeros((len(smaller), n - k + 1), dtype=np.intp)
    subsets = np.zeros((len(sets), k), dtype=np.intp)
    if k >= 1:
        for t, i in smaller.items():
            supersets[i] = [index[tuple(sorted((*t, u)))] for u in range(n) if u not in t]
        for i, s in enumerate(sets):
            subsets[i] = [smaller[tuple(x for x in s if x != v)] for v in s]
    up = np.zeros((len(smaller), len(sets)))
    for i, row in enumerate(supersets):
        up[i, row] = 1.0
    swap = np.zeros((len(sets), n, n), dtype=np.intp)
    for i, s in enumerate(sets):
        for j in s:
            rest = [x for x in s if x != j]
            for u in range(n):
                if u not in s:
                    swap[i, j, u] = index[tuple(sorted((*rest, u)))]
    free_cols = np.array(
        [[u for u in range(n) if u not in s] for s in sets], dtype=np.intp
    ).reshape(len(sets), n - k)
    swap_free = np.array(
        [[swap[i, j, u] for u in free_cols[i]] for i, s in enumerate(sets) for j in s],
        dtype=np.intp,
    ).reshape(len(sets) * k, n - k)
    return _Tables(
        n=n,
        k=k,
        sets=sets,
        member=member,
        member_t=np.ascontiguousarray(member.T),
        free=(~member).astype(np.float64),
        anywhere=(~member).astype(np.float64) * (1.0 / (n - k) if n > k else 0.0),
        memberf=member.astype(np.float64),
        with_j=tuple(with_j),
        without_j=tuple(without_j),
        move_src=tuple(move_src),
        drop=tuple(drop),
        supersets=supersets,
        subsets=subsets,
        up=up,
        down=np.ascontiguousarray(up.T),
        ones=np.ones(len(sets)),
        swap=swap,
        set_array=np.array(sets, dtype=np.intp).reshape(len(sets), k),
        set_cols=tuple(
            np.ascontiguousarray(np.array(sets, dtype=np.intp).reshape(len(sets), k)[:, q])
            for q in range(k)
        ),
        free_cols=free_cols,
        swap_free=swap_free,
        with_j_rows=tuple(
            np.array([r * k + sets[r].index(j) for r in with_j[j]], dtype=np.intp) for j in range(n)
        ),
        q_rows=tuple(np.arange(len(sets), dtype=np.intp) * k + q for q in range(k)),
        ones_free=np.ones(n - k),
        free_cols_j=tuple(free_cols.take(with_j[j], axis=0) for j in range(n)),
    )


# ---------------------------------------------------------------- budget priors
Prior = tuple[float, ...] | tuple[tuple[float, ...], ...]


def _prior_rows(prior: Prior, count: int, budget: int, name: str, what: str) -> FloatArray:
    """`prior` as normalised weights over 0..budget, one row per model (shared or each its own)."""
    rows = np.array(prior, dtype=np.float64)
    if rows.ndim == 1:
        rows = np.broadcast_to(rows, (count, len(rows)))
    if rows.ndim != 2 or rows.shape[0] != count or rows.shape[1] != budget + 1:
        raise ValueError(
            f"{name} needs {budget + 1} weights ({what}{budget}), or such a row for each "
            f"of the {count} models"
        )
    total = rows.sum(axis=1, keepdims=True)
    if (rows < 0.0).any() or (total <= 0.0).any():
        raise ValueError(f"{name} needs non-negative weights with a positive sum")
    out: FloatArray = rows / total
    return out


def _plain(prior: Any) -> Prior | None:
    """A prior as plain floats (JSON lists back to tuples), shared or one row per model."""
    if prior is None:
        return None
    if len(prior) and isinstance(prior[0], (list, tuple)):
        return tuple(tuple(float(x) for x in row) for row in prior)
    return tuple(float(x) for x in prior)


def _spent(turns: int, rate: float, budget: int) -> list[float]:
    """P(j of a budget spent) after `turns` chances at `rate` each: Binomial, capped."""
    rate = min(1.0, max(0.0, rate))
    probs = [math.comb(turns, j) * rate**j * (1.0 - rate) ** (turns - j) for j in range(budget)]
    probs.append(max(0.0, 1.0 - sum(probs)))
    return probs


def forgotten_budgets(
    models: tuple[AdversaryModel, ...],
    rules: RuleSet,
    horcruxes: int,
    turns: int,
    trust: float = 1.0,
) -> tuple[tuple[tuple[float, ...], ...], tuple[tuple[float, ...], ...]]:
    """Each model's forecast of Voldemort's budgets after `turns` turns Harry cannot recall.

    What a Harry who forgot the start of the game should believe about the charges left
    (weights over r = 0..R) and the decoys already planted (over 0..D), model by model,
    from nothing but the model's own rates and the number of turns he forgot:

    * relocations: a `hazard` model moves with probability h per turn; a `trigger` model
      moves when a search hits a real Horcrux, which for a searcher who recalls nothing
      happens at the uninformed rate trigger * (k / N) * d per turn; `static` never moves;
    * decoys: the planting rule needs a location with positive public evidence, which
      a positive search creates: the model's `plant` rate times the uninformed chance of
      a positive, k/N d + (1 - k/N) f, on every turn without a relocation.

    Against the reference Voldemort these forecasts match what the full planner's games
    show (0.16 relocations and about 0.24 decoys a turn early on; docs/MEMORY.md).

    Counts are Binomial over the forgotten turns, capped at the budget. With nothing
    forgotten this is the game's start: R charges left, no decoy planted.

    `trust` in [0, 1] weighs the forecast against ignorance: each row becomes trust x
    forecast + (1 - trust) x uniform over the counts (1: the forecast; 0: every count
    equally likely). With nothing forgotten the start is known, whatever the trust.
    """
    if not 0.0 <= trust <= 1.0:
        raise ValueError(f"trust in the forecast must be in [0, 1], got {trust}")
    n = len(rules.locations)
    share = horcruxes / n
    hit = share * rules.sensor.d  # a search finds a real Horcrux
    positive = hit + (1.0 - share) * rules.sensor.f  # a search comes back positive
    charges: list[tuple[float, ...]] = []
    decoys: list[tuple[float, ...]] = []
    for model in models:
        move = {
            "trigger": model.trigger * hit,
            "belief": model.trigger * hit,  # a Harry who recalls nothing rarely crosses it
            "hazard": model.hazard,
            "static": 0.0,
        }[model.motion]
        used = _spent(turns, move, rules.relocations)
        charges.append(_blend(tuple(reversed(used)), trust if turns else 1.0))  # j used: R - j left
        plant = model.plant * (1.0 if model.placement == "greedy" else positive) * (1.0 - move)
        decoys.append(_blend(tuple(_spent(turns, plant, rules.decoys)), trust if turns else 1.0))
    return tuple(charges), tuple(decoys)


def _blend(row: tuple[float, ...], trust: float) -> tuple[float, ...]:
    """trust x the (normalised) row + (1 - trust) x uniform over its counts."""
    if trust == 1.0:
        return row
    total = sum(row)
    return tuple(trust * x / total + (1.0 - trust) / len(row) for x in row)


# ---------------------------------------------------------------- the filters
def level_fill(values: FloatArray, mass: float) -> FloatArray:
    """Where `mass` goes when it must leave the lowest of `values` level (water-filling):
    p_x = max(0, L - v_x) / mass, the level L the least with sum_x max(0, L - v_x) = mass.

    An adversary who reads Harry's map after Harry's own prediction of the move, and sends
    the Horcrux to its lowest location, picks among the locations this leaves tied at L:
    predicting "the lowest before the move" instead lifts that location by the predicted
    mass, and the real destination is one the map keeps at its bottom (docs/MEMORY.md)."""
    # in Python floats (15 values or so, where numpy's per-call cost dominates): the
    # same operations in the same order, `array_sum` being numpy's summation
    seen = values.tolist()
    low = sorted(seen)  # the values in numpy's stable argsort order
    level = low[-1] + mass / len(low)
    running = 0.0
    for c, v in enumerate(low, start=1):  # the first c lowest rise to the level
        running += v
        candidate = (mass + running) / c
        if c == len(low) or candidate <= low[c]:
            level = candidate
            break
    raised = [g if g > 0.0 else 0.0 for g in [level - v for v in seen]]  # max(0, L - v)
    total = array_sum(raised)
    out: FloatArray
    if total <= 0.0:  # no mass to place: the lowest location (the first of equals)
        out = np.zeros(len(values))
        out[seen.index(low[0])] = 1.0
        return out
    out = np.array([x / total for x in raised])
    return out


# Flat positions into a filter's weights w (shape (rows, models, sets)), shared by every
# filter of that shape (built once, not once a game; read-only: only ever indices)
@lru_cache(maxsize=64)
def _level_offsets(rows: int, n_sets: int) -> IntArray:
    """(rows, 1, 1): the first flat position of each charge level's sets."""
    out: IntArray = (np.arange(rows) * n_sets)[:, None, None]
    out.setflags(write=False)
    return out


@lru_cache(maxsize=1024)
def _row_positions(rows: int, models: int, sets: int, i: int) -> IntArray:
    """(sets, rows - 1): the flat position of model i's set s at r = 1..rows-1 charges."""
    out: IntArray = np.arange(sets)[:, None] + ((np.arange(1, rows) * models + i) * sets)[None, :]
    out.setflags(write=False)
    return out


@lru_cache(maxsize=1024)
def _swap_bins(n: int, k: int, j: int, levels: int) -> IntArray:
    """Flat bins (level, set) where the sets holding j go when j's Horcrux moves to each
    of their free locations, for `levels` charge levels: (levels x len(with_j) x (n-k),)."""
    tab = _tables(n, k)
    swaps = tab.swap_free.take(tab.with_j_rows[j], axis=0)
    out: IntArray = (swaps + _level_offsets(levels, len(tab.sets))).reshape(-1)
    out.setflags(write=False)
    return out


@lru_cache(maxsize=4096)
def _move_positions(
    n: int, k: int, rows: int, models: int, j: int, i: int
) -> tuple[IntArray, IntArray]:
    """Flat positions of model i's sets holding j at r >= 1 charges, and of the sets
    without j at r - 1 (a Horcrux moving from j spends a charge)."""
    tab = _tables(n, k)
    s = len(tab.sets)
    start = (np.arange(rows - 1)[:, None] * models + i) * s  # (r - 1, model i, set 0)
    up: IntArray = (start + models * s + tab.with_j[j][None, :]).reshape(-1)
    down: IntArray = (start + tab.without_j[j][None, :]).reshape(-1)
    up.setflags(write=False)
    down.setflags(write=False)
    return up, down


@lru_cache(maxsize=4096)
def _move_rows(n: int, k: int, rows: int, models: int, j: int, i: int) -> IntArray:
    """`_move_positions`' first array as (sets holding j, rows - 1): w[1:, i, with_j[j]]."""
    out: IntArray = _move_positions(n, k, rows, models, j, i)[0].reshape(rows - 1, -1).T
    return out


@lru_cache(maxsize=64)
def _row_starts(n: int, count: int) -> IntArray:
    """(count, 1): the first flat position of each row of a (count, n) array."""
    out: IntArray = (np.arange(count) * n)[:, None]
    out.setflags(write=False)
    return out


def _charge_sum(w: FloatArray) -> FloatArray:
    """`w.sum(0)`: the weights summed over the charge levels. On a C-contiguous array numpy
    adds the rows of the outer axis one after the other, so row by row additions give the
    same doubles, without the cost of its reduction machinery."""
    rows = w.shape[0]
    if rows > 8 or rows < 2 or not w.flags.c_contiguous:
        out: FloatArray = _SUM(w, 0)
        return out
    out = w[0] + w[1]
    for r in range(2, rows):
        out += w[r]
    return out


@lru_cache(maxsize=64)
def _scattered(n: int, k: int, scatter: float) -> FloatArray:
    """scatter x `anywhere` of the sets of size k over n: the uniform share of a `low`
    destination, per set."""
    out: FloatArray = scatter * _tables(n, k).anywhere
    out.setflags(write=False)
    return out


def _exact_low(
    tab: _Tables, harry: FloatArray, go: IntArray, free: IntArray, band: float, full: bool
) -> FloatArray:
    """0/1 as floats: the destinations `_BeliefPlan._low` gives the sets go on the map
    `harry` (the free locations within `band` of each set's lowest free one), on their
    free locations `free` ((len(go), n-k)), or with `full` on every location (0 on the
    set's own). The same minimum and comparisons as `_low`'s, so divided by their row
    count the same doubles."""
    # each set's minimum over its free locations, read through the transposed index
    # (a reduction across rows costs numpy far less than along a short axis)
    edge = _MIN(harry.take(free.T), 0) + band
    if full:
        low = harry[None, :] <= edge[:, None]
        low &= ~tab.member.take(go, axis=0)
        out: FloatArray = low.astype(np.float64)
    else:
        out = (harry.take(free) <= edge[:, None]).astype(np.float64)
    return out


class _BeliefPlan:
    """What a belief-reacting adversary reads from one of Harry's maps, per Horcrux set:
    the top occupancy among its locations (what a trigger reads) and which of them holds
    it; for the sets that move, the rows they move to and the `low` destinations (the
    free locations within LOW_BAND of the lowest). Per-set tables are built once per map
    (when a model first needs them) and read with `take` (numpy's fancy indexing costs
    several times more at these sizes): the same numbers as set by set."""

    def __init__(self, tab: _Tables, harry: FloatArray, peak: float | None = None) -> None:
        self.tab = tab
        self.harry = harry
        if peak is None:
            peak = float(_MAX(harry, None))
        self.top_max = peak if tab.k else 0.0  # every location is in a set
        self._top: tuple[FloatArray, IntArray] | None = None
        self._band: FloatArray | None = None
        self._first: IntArray | None = None
        self._values: list[float] | None = None  # the map in Python floats

    def _tops(self) -> tuple[FloatArray, IntArray]:
        if self._top is None:  # built once, when a threshold model needs it
            # column by column (the q-th lowest location of every set): k vector ops
            # instead of reductions along a short axis, which cost numpy far more
            tab = self.tab
            values = [self.harry.take(c) for c in tab.set_cols]
            top = values[0]
            for v in values[1:]:
                top = np.maximum(top, v)
            # the first of equals (the lowest location), as its row of `swap_free`
            row = tab.q_rows[-1]
            for q in range(len(values) - 2, -1, -1):
                row = np.where(values[q] >= top, tab.q_rows[q], row)
            self._top = (top, row)
        return self._top

    @property
    def top(self) -> FloatArray:
        """Per set, the top occupancy among its locations."""
        return self._tops()[0]

    def only_firing(self, model: AdversaryModel) -> tuple[int, float] | None:
        """The one location whose occupancy fires a threshold model (above its threshold
        lowered by `spread`; at least the threshold without one) and the probability it
        fires, in Python floats (numpy's doubles); None when none or several can."""
        if self._values is None:
            self._values = self.harry.tolist()
        if model.spread > 0.0:
            lo = model.threshold - model.spread
            above = [j for j, v in enumerate(self._values) if v > lo]
        else:
            above = [j for j, v in enumerate(self._values) if v >= model.threshold]
        if len(above) != 1:
            return None
        j = above[0]
        if model.spread <= 0.0:
            return j, 1.0
        return j, min(1.0, max(0.0, (self._values[j] - lo) / (2.0 * model.spread)))

    @property
    def top_row(self) -> IntArray:
        """Per set s holding its top occupancy at its q-th location: s * k + q, the row of
        `swap_free` where that Horcrux's moves take the set."""
        return self._tops()[1]

    def free_dest(
        self,
        go: IntArray,
        destination: Destination,
        scatter: float,
        band: float = LOW_BAND,
        cols: IntArray | None = None,
    ) -> FloatArray:
        """`dest` on each set's free locations only (`free_cols`: (len(go), n-k); `cols`:
        those rows of it, when at hand), the same doubles: a moved Horcrux never lands in
        its own set, where `dest` is 0."""
        tab = self.tab
        n, k = tab.n, tab.k
        if cols is None:
            cols = tab.free_cols.take(go, axis=0)
        if destination != "low":  # uniform over the free ones: `anywhere`'s value
            return np.full((len(go), n - k), 1.0 / (n - k))
        if band != LOW_BAND:  # an exact model: `_low`'s rows, on the free locations
            low = self.exact_low(go, band, cols)
        else:
            self._low_tables()
            assert self._band is not None and self._first is not None
            # band[first[s], u] for the free u of each set: 0/1, its row sums (exact in any
            # order) the count of `low` destinations, 1 / count the same double as `low`'s
            cells = (self._first.take(go) * n)[:, None] + cols
            low = self._band.take(cells)
        low /= (low @ tab.ones_free)[:, None]
        if scatter > 0.0:  # (1 - scatter) low + scatter anywhere, as `dest` adds them
            low *= 1.0 - scatter
            low += scatter * (1.0 / (n - k))
        return low

    def _low_tables(self) -> None:
        """`low`'s per-map tables: `_band` (k+1, n), 1.0 where within LOW_BAND of the p-th
        lowest location (0/1 as floats: their products and row sums are exact, and
        1.0 / count is the same double), and per set `_first`, the first of those k+1
        lowest it lacks."""
        if self._band is None or self._first is None:
            tab = self.tab
            lowest = self.harry.argsort(kind="stable")[: tab.k + 1]
            edge = self.harry.take(lowest) + LOW_BAND
            self._band = (self.harry[None, :] <= edge[:, None]).astype(np.float64)
            # the first False of member[:, lowest], as k vector ops from the last one (a
            # reduction along that short axis costs numpy more)
            lows = lowest.tolist()
            first: IntArray = np.full(len(tab.sets), tab.k, dtype=np.intp)
            for p in range(tab.k - 1, -1, -1):
                first = np.where(tab.member_t[lows[p]], first, p)
            self._first = first

    def exact_low(self, go: IntArray, band: float, cols: IntArray | None = None) -> FloatArray:
        """`_exact_low` on this map: on the free locations `cols` ((len(go), n-k)), or on
        every location when None."""
        free = self.tab.free_cols.take(go, axis=0) if cols is None else cols
        return _exact_low(self.tab, self.harry, go, free, band, cols is None)

    def low(self, go: IntArray) -> FloatArray:
        """(len(go), n): the `low` destinations' probabilities for the sets go.

        Only the locations within LOW_BAND of the (k+1)-th lowest can be one: a set of k
        leaves one of the k+1 lowest free, so its lowest free location is no higher.
        Sorted by occupancy, the lowest free location of a set is the first of those k+1
        it lacks (at position p); its `low` destinations are the free ones among `band[p]`,
        the locations within LOW_BAND of that one (a table of k+1 rows per map)."""
        tab = self.tab
        self._low_tables()
        assert self._band is not None and self._first is not None
        low = self._band.take(self._first.take(go), axis=0)
        low *= tab.free.take(go, axis=0)
        low /= _SUM(low, 1, keepdims=True)
        return low

    def dest(
        self, go: IntArray, destination: Destination, scatter: float, band: float = LOW_BAND
    ) -> FloatArray:
        """(len(go), n): where a moved Horcrux of each set go[i] goes: uniform over the
        free locations, or `low` with a `scatter` share uniform (`band`: LOW_BAND, or an
        exact model's EXACT_BAND, read by `_low`)."""
        tab = self.tab
        if destination != "low":
            return tab.anywhere.take(go, axis=0)  # uniform over the free ones
        out = self.low(go) if band == LOW_BAND else self._low(go, band)  # a new array
        if scatter > 0.0:  # (1 - scatter) low + scatter anywhere, the same products and sum
            out *= 1.0 - scatter
            out += _scattered(tab.n, tab.k, scatter).take(go, axis=0)
        return out

    def _low(self, go: IntArray, band: float) -> FloatArray:
        """`low` within `band` (EXACT_BAND) of each set's lowest free location: an exact
        model's destinations, (len(go), n)."""
        low = self.exact_low(go, band)
        low /= _SUM(low, 1, keepdims=True)
        return low


class _Filters:
    """One exact filter per adversary model, stacked so each step is one numpy operation.

    `w[r, m, s]`: model m's weight of Horcrux set s with r relocation charges left (the
    sets last and contiguous: index maps gather along it and sums are matrix products,
    much faster than numpy reductions at this size); `c[m, j]`: P(decoy at j | no
    Horcrux at j); `used[m, i]`: P(i decoys planted so far).
    """

    def __init__(
        self,
        models: tuple[AdversaryModel, ...],
        n: int,
        k: int,
        charges: int,
        decoys: int,
        charge_prior: Prior | None = None,
        decoy_prior: Prior | None = None,
    ) -> None:
        self.models = models
        self.n = n
        self.tab = _tables(n, k)
        self.count = count = len(models)
        self.w: FloatArray = np.zeros((charges + 1, count, len(self.tab.sets)))
        if charge_prior is None:
            self.w[charges] = 1.0 / len(self.tab.sets)
        else:  # one row for every model, or one per model
            prior = _prior_rows(charge_prior, count, charges, "charge_prior", "r = 0..")
            self.w[:] = prior.T[:, :, None] / len(self.tab.sets)
        self.c: FloatArray = np.zeros((count, n))
        self.used: FloatArray = np.zeros((count, decoys + 1))
        if decoy_prior is None:
            self.used[:, 0] = 1.0
        else:  # decoys already planted, for the models that plant
            self.used[:] = _prior_rows(decoy_prior, count, decoys, "decoy_prior", "used 0..")
        self.log_evidence: FloatArray = np.zeros(count)
        self.restarts = 0  # models restarted after calling an observation impossible
        self.version = 0  # bumped whenever log_evidence changes (caches the model weights)
        self.serial = next(_SERIALS)  # which filter (a lookahead copy gets its own)
        self._trigger = [(i, m.trigger) for i, m in enumerate(models) if m.motion == "trigger"]
        self._hazard = [(i, m.hazard) for i, m in enumerate(models) if m.motion == "hazard"]
        self._trigger = [(i, p) for i, p in self._trigger if p > 0.0]
        self._hazard = [(i, p) for i, p in self._hazard if p > 0.0]
        self._belief = [(i, m) for i, m in enumerate(models) if m.motion == "belief"]
        self._belief = [(i, m) for i, m in self._belief if m.trigger > 0.0]
        # the vectorised steps: the hazard models as one stack, the threshold models as one
        # stack per map they read (one plan each), the `rule` models one by one
        self._hazard_idx: IntArray = np.array([i for i, _ in self._hazard], dtype=np.intp)
        self._hazard_list = [i for i, _ in self._hazard]
        self._hazard_rate: FloatArray = np.array([h for _, h in self._hazard], dtype=np.float64)
        self._hazard_rate3 = self._hazard_rate[None, :, None]
        # per belief model: the map its plan reads and the lowest top occupancy that can
        # fire it (a Python float: most turns no model can fire, and that costs one compare)
        self._belief_floor = [
            (
                i,
                m,
                "own" if m.reads == "rule" else m.reads,
                m.threshold - m.spread if m.spread > 0.0 else m.threshold,
            )
            for i, m in self._belief
        ]
        self.p_plant: FloatArray = np.array([m.plant for m in models])
        self._plant_rates = self.p_plant.tolist()
        # the models that may still plant (a rate above 0, decoys left), in model order;
        # replaced, never mutated (lookahead copies share it)
        self._planters = tuple(i for i, p in enumerate(self._plant_rates) if p > 0.0)
        self._placement = [m.placement for m in models]
        self.reads_harry = bool(self._belief) or "belief" in self._placement
        self._marginal: FloatArray | None = None
        self._mixed: tuple[FloatArray, FloatArray, FloatArray] | None = None  # `mixture`
        # belief models with no weight left at r >= 1 (no charge left in any set): their
        # moves move nothing until a restart (`_normalise`) gives them charges again
        self._spent: set[int] = set()

    @property
    def k(self) -> int:
        return self.tab.k

    def totals(self) -> FloatArray:
        """(models,): each model's total weight."""
        out: FloatArray = _SUM(self.w @ self.tab.ones, 0)
        return out

    def _normalise(self, total: FloatArray) -> None:
        self._marginal = None
        self.version += 1
        self.log_evidence += np.log(np.maximum(total, _EVIDENCE_FLOOR))
        if min(total.tolist()) <= _TINY:
            # a model said "impossible": restart it uniform over the sets
            dead = total <= _TINY
            self.restarts += int(dead.sum())
            for i in np.flatnonzero(dead):
                self.w[:, i] = 0.0
                self.w[-1, i] = 1.0 / self.w.shape[2]
                self._spent.discard(int(i))
            total = np.where(dead, 1.0, total)
        self.w /= total[None, :, None]

    def marginal(self) -> FloatArray:
        """(models, n): each model's P(real Horcrux at i)."""
        if self._marginal is None:
            self._marginal = _charge_sum(self.w) @ self.tab.memberf
        return self._marginal

    def mixture(self, weights: FloatArray) -> FloatArray:
        """Harry's whole map, clip(weights @ marginal()), never to be written: kept while
        the marginals and the weights are the same arrays (any change to the weights
        makes new marginals), so the readers between two moves share one product."""
        marginal = self.marginal()
        kept = self._mixed
        if kept is not None and kept[0] is marginal and kept[1] is weights:
            return kept[2]
        out: FloatArray = _CLIP(weights @ marginal, 0.0, 1.0)
        out.setflags(write=False)  # shared by its readers: a write would corrupt the cache
        self._mixed = (marginal, weights, out)
        return out

    # ------------------------------------------------------------ observations
    def search(self, j: int, positive: bool, sensor: Sensor) -> None:
        lr = sensor.d if positive else 1.0 - sensor.d
        le = sensor.f if positive else 1.0 - sensor.f
        cj = self.c[:, j].tolist()  # the models' c_j, in Python floats (the same doubles)
        absent = [c * lr + (1.0 - c) * le for c in cj]  # P(outcome | no Horcrux at j)
        factor = np.where(self.tab.member_t[j], lr, np.array(absent)[:, None])
        self.w *= factor[None]
        self._normalise(self.totals())
        self.c[:, j] = [c * lr / a for c, a in zip(cj, absent, strict=True)]

    def attack(self, j: int, outcome: str) -> None:
        tab = self.tab
        cj = self.c[:, j].copy()
        self.c[:, j] = 0.0
        if outcome == "destroyed":
            smaller = _tables(self.n, tab.k - 1)
            neww = np.zeros((*self.w.shape[:2], len(smaller.sets)))
            neww[:, :, tab.drop[j]] = self.w[:, :, tab.with_j[j]]
            self.tab = smaller
            self.w = neww
            self._normalise(self.totals())
            return
        like = cj if outcome == "decoy" else 1.0 - cj
        self.w[:, :, tab.with_j[j]] = 0.0
        self.w *= like[None, :, None]
        self._normalise(self.totals())

    def reveal(self, j: int, outcome: str) -> None:
        tab = self.tab
        cj = self.c[:, j].copy()
        if outcome == "horcrux":
            self.w[:, :, tab.without_j[j]] = 0.0
            self.c[:, j] = 0.0
        else:
            self.w[:, :, tab.with_j[j]] = 0.0
            like = cj if outcome == "decoy" else 1.0 - cj
            self.w *= like[None, :, None]
            self.c[:, j] = 1.0 if outcome == "decoy" else 0.0
        self._normalise(self.totals())

    # ------------------------------------------------------------ predictive step
    def predict(
        self,
        positives: list[int],
        evidence: FloatArray,
        maps: Callable[[], Maps | None] | None = None,
    ) -> None:
        """Voldemort's move after Harry's turn, per model. `maps()` gives Harry's maps
        once the other models have moved (`own`: the mixture's marginals; `naive`: those
        of the models that do not react to his map): what the `belief` models' triggers,
        destinations and decoys read."""
        harry: Maps | None = None
        tab = self.tab
        moved_total = [0.0] * self.count  # per model, P(a relocation this turn)
        w = self.w
        # P(decoy at j) per model before the moves: a relocation neither plants nor lifts
        # a decoy, so the moves keep it (`_keep_decoys`)
        decoys = (1.0 - self.marginal()) * self.c if self.c.any() else None
        if tab.k > 0 and w.shape[0] > 1:
            self._marginal = None
            flat = w.view()
            flat.shape = (-1,)  # a view of the weights, never a copy
            for i, p in self._trigger if positives else ():
                moved_total[i] += self._move_trigger(flat, i, [(j, p) for j in positives])
            if len(self._hazard_idx):  # every hazard model at once: (R, models, sets)
                share = 1.0 / (tab.k * (self.n - tab.k))
                hi = self._hazard_idx
                # one gather, one scatter back (the gather's memory order, indexed axis first,
                # is the order the per-model sums below add in)
                block: FloatArray = w[:, hi]
                moved3 = block[1:] * self._hazard_rate3
                for h, total in zip(self._hazard_list, _SUM(moved3, (0, 2)).tolist(), strict=True):
                    moved_total[h] += total
                flat3 = moved3.reshape(-1, moved3.shape[2])
                incoming = (flat3 @ tab.down) @ tab.up - tab.k * flat3
                block[1:] -= moved3
                block[:-1] += incoming.reshape(moved3.shape) * share
                w[:, hi] = block
            if self._belief and maps is not None:
                self._marginal = None
                harry = maps()
            if self._belief and harry is not None:
                plans: dict[str, _BeliefPlan] = {}
                peak: dict[str, float] = {}
                spent = self._spent
                for i, model, key, floor in self._belief_floor:
                    if i in spent:  # no charge left: its move would move nothing
                        continue
                    if model.reads != "rule":  # the plan's top_max is the map's maximum
                        if key not in peak:
                            peak[key] = float(_MAX(harry[key], None))
                        if peak[key] < floor:
                            continue  # the model cannot fire: nothing moves
                    if key not in plans:
                        plans[key] = self._belief_moves(harry[key], peak.get(key))
                    moved_total[i] += self._move_belief(i, model, plans[key], harry)
        if harry is None and maps is not None and self.reads_harry:
            self._marginal = None
            harry = maps()
        if decoys is not None and max(moved_total) > 0.0:
            self._keep_decoys(decoys)
        if self.used.shape[1] > 1 and self._planters:
            self._plant([1.0 - x for x in moved_total], evidence, harry)

    def _keep_decoys(self, decoys: FloatArray) -> None:
        """c after the moves, from each model's P(decoy at j) before them (`decoys`): a
        Horcrux leaves j or arrives at a free j, and no decoy appears or goes, so
        P(decoy at j) stays and c_j = P(decoy at j) / P(no Horcrux at j) on the moved
        weights. Without this the mass that moved off j would take j's c_j with it: a
        location that held the Horcrux, hence surely no decoy, would count as "a decoy
        if no Horcrux", and an empty attack there would be impossible to every model.
        (A destination that ignores decoys may move more into j than was decoy-free:
        c_j is then capped at 1. Where P(no Horcrux at j) is below KEEP_FLOOR, c_j is a
        ratio of rounding errors and stays as it was: it weighs nothing there.)"""
        self._marginal = None
        free = 1.0 - self.marginal()
        kept = np.minimum(decoys / np.maximum(free, KEEP_FLOOR), 1.0)
        self.c = np.where(free > KEEP_FLOOR, kept, self.c)

    def _move_trigger(self, flat: FloatArray, i: int, moves: list[tuple[int, float]]) -> float:
        """Model i moves the Horcrux at each j of `moves` with its probability (one charge)
        to a free location, uniformly; each Horcrux moves at most once a turn (Ron's two
        positives). Returns P(a relocation)."""
        tab = self.tab
        spread = 1.0 / (self.n - tab.k)
        several = len(moves) > 1
        base = flat.copy() if several else flat  # the weights before any move
        done: BoolArray | None = np.zeros(len(tab.sets), bool) if several else None
        total = 0.0
        for j, p in moves:
            rows = tab.with_j[j]
            up_idx, down_idx = self._move_index(j, i)
            moved = np.take(base, up_idx).reshape(-1, len(rows))  # w[1:, i, rows]
            if p != 1.0:
                moved *= p
            if done is not None:
                moved *= ~done[rows]
                done[rows] = True
            total += float(_SUM(moved, None))
            src = tab.move_src[j]
            incoming = np.take(moved, src[0], axis=1)
            for q in range(1, tab.k):
                incoming += np.take(moved, src[q], axis=1)
            incoming *= spread
            # w[1:, i, rows] -= moved; w[:-1, i, without_j] += incoming (`take` and
            # `put`: fancy indexing's operations, at a fraction of its cost)
            flat.put(up_idx, flat.take(up_idx) - moved.reshape(-1))
            flat.put(down_idx, flat.take(down_idx) + incoming.reshape(-1))
        return total

    def _belief_moves(self, harry: FloatArray, peak: float | None = None) -> _BeliefPlan:
        """What the belief-reacting models read from one of Harry's maps (`_BeliefPlan`;
        `peak`: the map's maximum, when known)."""
        return _BeliefPlan(self.tab, harry, peak)

    def _move_belief(self, i: int, model: AdversaryModel, plan: _BeliefPlan, harry: Maps) -> float:
        """Model i's belief-reacting move: each set whose top occupancy crosses the
        model's threshold moves that Horcrux (one charge) to its destinations; a `rule`
        model moves the Horcrux at the location Harry's rule attacks (`harry["attack"]`:
        P(the rule attacks j next turn)), from every set holding it.

        The weights are read and written through flat positions (`take` / `put`: the
        same values as fancy indexing, at a fraction of its cost)."""
        tab = self.tab
        # a copy of Harry's code sends the Horcrux to the lowest free location of the map
        # it holds: Harry's whole map after the other models' moves (its own move, the
        # last, is left out: the fixed point is cut there). Its plan is built only where
        # read (most turns the rule attacks nothing), always before this move
        whole = (
            harry["weights"]
            if model.reads == "rule" and model.exact and "weights" in harry
            else None
        )
        if model.reads == "rule" and model.race > 0.0 and "race" in harry:
            if whole is not None:
                plan = _BeliefPlan(tab, self.mixture(whole))
            return self._move_race(i, model, plan, harry)
        n_sets = len(tab.sets)
        if model.reads == "rule":
            attack = harry["attack"]
            j = int(attack.argmax())
            if attack[j] <= 0.0:
                return 0.0
            go = tab.with_j[j]
            fire_go: FloatArray | float = float(attack[j]) * model.trigger
            pos = self._move_rows(j, i)
            fixed: int | None = j
        elif (single := plan.only_firing(model)) is not None:
            # one location can fire the model: its sets are the ones holding it, every one
            # with the same probability and that Horcrux the one to move (the rule model's
            # tables; the same doubles as set by set below)
            j, fire_j = single
            go = tab.with_j[j]
            fire_go = fire_j * model.trigger if model.trigger != 1.0 else fire_j
            pos = self._move_rows(j, i)
            fixed = j
        else:
            lo = model.threshold - model.spread
            if plan.top_max < lo or (model.spread <= 0.0 and plan.top_max < model.threshold):
                return 0.0
            top = plan.top
            if model.spread > 0.0:
                fire = _CLIP((top - lo) / (2.0 * model.spread), 0.0, 1.0)
            else:
                fire = (top >= model.threshold).astype(np.float64)
            if model.trigger != 1.0:
                fire *= model.trigger
            go = fire.nonzero()[0]
            if not len(go):
                return 0.0
            fire_go = fire.take(go)[:, None]
            pos = self._row_base(i).take(go, axis=0)  # w[1:, i, go]: flat positions, (go, R)
            fixed = None
        # (moving sets, R): the memory order of the fancy-indexed w[1:, i, go] (numpy puts
        # the indexed axis first), which is the order its sum adds in
        flat = self.w.reshape(-1, copy=False)  # a view, never a copy
        before = flat.take(pos)
        moved = before * fire_go
        total = float(_SUM(moved, None))
        if total <= 0.0:  # no mass to move (no charge left, say): nothing changes
            if model.reads != "rule" and not _ANY(self.w[1:, i], None):
                self._spent.add(i)
            return 0.0
        band = EXACT_BAND if model.exact else LOW_BAND
        cols = None if fixed is None else tab.free_cols_j[fixed]
        dest: FloatArray | None = None
        if model.fill:  # levelled destinations, on each set's free locations
            if cols is None:
                cols = tab.free_cols.take(go, axis=0)
            dest = self._filled(i, model, go, total, harry, cols)
        if dest is None:
            if whole is not None:
                plan = _BeliefPlan(tab, self.mixture(whole))
            dest = plan.free_dest(go, model.destination, model.scatter, band, cols)  # (go, n-k)
        self._marginal = None  # the move below changes it
        flat.put(pos, before - moved)  # w[1:, i, go] -= moved
        # only the charge levels a..b-1 that move anything (a model's lower levels are
        # often still empty) and the free locations: every other contribution is an exact
        # 0 in its bin, so the bins add the same terms in the same order
        live = _ANY(moved, 0).tolist()
        a = live.index(True)
        b = len(live) - live[::-1].index(True)
        # (b - a, moving, n - k) contributions, laid out as moved[:, a:b, None] * dest
        contrib = moved.T[a:b, :, None] * dest
        if fixed is None:  # each set moves its own top location
            swaps = tab.swap_free.take(plan.top_row.take(go), axis=0)
            idx = (swaps + self._offsets(b - a, n_sets)).reshape(-1)
        else:  # every set holding j moves j: a table
            idx = _swap_bins(tab.n, tab.k, fixed, b - a)
        incoming = np.bincount(idx, weights=contrib.reshape(-1), minlength=(b - a) * n_sets)
        self.w[a:b, i] += incoming.reshape(b - a, n_sets)
        return total

    def _move_race(self, i: int, model: AdversaryModel, plan: _BeliefPlan, harry: Maps) -> float:
        """A `rule` model against a Harry playing the race: the copy draws one location j
        with P(attack j) = attack[j]; every set holding j moves that Horcrux (one charge)
        to its destinations. The draws are exclusive, so all read the weights before."""
        attack = harry["attack"]
        tab = self.tab
        w = self.w
        base = w[1:, i].copy()
        n_sets = len(tab.sets)
        total = 0.0
        for j in np.flatnonzero(attack > 0.0).tolist():
            go = tab.with_j[j]
            moved = base[:, go] * (float(attack[j]) * model.trigger)
            part = float(moved.sum())
            if part <= 0.0:
                continue
            total += part
            dest = self._filled(i, model, go, part, harry) if model.fill else None
            if dest is None:
                band = EXACT_BAND if model.exact else LOW_BAND
                dest = plan.dest(go, model.destination, model.scatter, band)
            w[1:, i][:, go] -= moved
            contrib = moved[:, :, None] * dest[None, :, :]
            offsets = (np.arange(moved.shape[0]) * n_sets)[:, None, None]
            idx = (tab.swap[go, j][None, :, :] + offsets).reshape(-1)
            incoming = np.bincount(
                idx, weights=contrib.reshape(-1), minlength=moved.shape[0] * n_sets
            )
            w[:-1, i] += incoming.reshape(moved.shape[0], n_sets)
            self._marginal = None  # the next draw's levelled map holds this one
        return total

    def _filled(
        self,
        i: int,
        model: AdversaryModel,
        go: IntArray,
        mass: float,
        harry: Maps,
        cols: IntArray | None = None,
    ) -> FloatArray | None:
        """(len(go), n): a `fill` model's destinations for the sets go, which move `mass`
        of model i's weight: `level_fill` on Harry's whole map as it stands (every move
        before this one made), the mixture's share of the move being model i's posterior
        weight times `mass`; each set's row keeps its free locations, and the `scatter`
        share goes anywhere free. None when there is nothing to level (no weights).
        With `cols` (each set's free locations, (len(go), n-k)): those columns only, the
        same doubles."""
        weights = harry.get("weights")
        if weights is None:
            return None
        share = float(weights[i]) * mass
        if share <= _TINY:
            return None
        tab = self.tab
        n = tab.n
        current = self.mixture(weights)
        level = level_fill(current, share)
        free = tab.free_cols.take(go, axis=0) if cols is None else cols
        hot = level.nonzero()[0]
        if len(hot) == 1:
            # one levelled location u, at exactly 1.0: each set without u has the row
            # free * level 1.0 at u alone, which sums to 1.0, so it sends it all to u;
            # the sets holding u fall back (below)
            u = int(hot[0])
            out: FloatArray = (free == u).astype(np.float64)
            bad = tab.member_t[u].take(go).nonzero()[0]
        else:
            rows = tab.free.take(go, axis=0) * level[None, :]
            sums = _SUM(rows, 1, keepdims=True)
            bad = (sums[:, 0] <= 0.0).nonzero()[0]
            sums[bad] = 1.0  # those rows are replaced below
            # the free columns, by flat position
            out = rows.reshape(-1).take(free + _row_starts(n, len(go))) / sums
        if len(bad):  # a set holding every levelled location: its lowest free one
            out[bad] = self._fallback(current, go.take(bad), free.take(bad, axis=0))
        if model.scatter > 0.0:  # `_scattered`'s share, on the free locations
            out *= 1.0 - model.scatter
            out += model.scatter * (1.0 / (n - tab.k))
        if cols is not None:
            return out
        whole: FloatArray = np.zeros((len(go), n))  # every location: 0 on the set's own
        whole.reshape(-1)[free + _row_starts(n, len(go))] = out
        return whole

    def _fallback(self, current: FloatArray, go: IntArray, free: IntArray) -> FloatArray:
        """(len(go), n-k): `_filled`'s rows for sets holding every levelled location, on
        their free locations `free`: `_low`'s row on the map `current` (each set's lowest
        free location, EXACT_BAND), divided by that row's own sum over every location."""
        lowest = _exact_low(self.tab, current, go, free, EXACT_BAND, True)
        lowest /= _SUM(lowest, 1, keepdims=True)
        sums = _SUM(lowest, 1, keepdims=True)
        cells = free + _row_starts(self.tab.n, len(go))
        out: FloatArray = lowest.reshape(-1).take(cells) / sums
        return out

    def _offsets(self, rows: int, n_sets: int) -> IntArray:
        """(rows, 1, 1): the first flat position of each charge level's sets."""
        return _level_offsets(rows, n_sets)

    def _row_base(self, i: int) -> IntArray:
        """(sets, R): the flat position in `w` of model i's set s at r = 1..R charges."""
        rows, m, sets = self.w.shape
        return _row_positions(rows, m, sets, i)

    def _move_rows(self, j: int, i: int) -> IntArray:
        """(sets holding j, R): the flat positions of w[1:, i, with_j[j]], as `_row_base`."""
        rows, m, _ = self.w.shape
        return _move_rows(self.n, self.tab.k, rows, m, j, i)

    def _move_index(self, j: int, i: int) -> tuple[IntArray, IntArray]:
        """Flat positions in `w` of model i's sets holding j at r >= 1 charges, and of the
        sets without j at r - 1 (a Horcrux moving from j spends a charge)."""
        rows, m, _ = self.w.shape
        return _move_positions(self.n, self.tab.k, rows, m, j, i)

    def _plant_on_map(
        self,
        c_row: list[float],
        marginal: list[float],
        groups: list[list[int]],
        scatter: float,
        chance: float,
    ) -> float:
        """A `belief` decoy: at the free location Harry's map rates highest. Locations
        within TOP_BAND of each other are one group (`groups`, best first), the decoy
        going to any free one of the first group with a free location (an adversary
        reading a slightly different map breaks near-ties his own way). `c_row` (the
        model's c_j) is updated in place; the `scatter` share, which goes anywhere free,
        is `_scatter`'s (one step for every model, after this one)."""
        planted = 0.0
        reach = 1.0  # P(every location of the better groups is taken)
        for group in groups:
            if reach <= 1e-9:
                break
            free = [(1.0 - marginal[j]) * (1.0 - c_row[j]) for j in group]  # P(j is free)
            expected = array_sum(free)
            if expected > 0.0:
                raise_by = min(1.0, reach * chance * (1 - scatter) / expected)
                for j in group:
                    c_row[j] += (1.0 - c_row[j]) * raise_by
                planted += reach * min(1.0, expected)
            taken = 1.0
            for x in free:
                taken *= 1.0 - x
            reach *= taken
        return planted

    def _scatter(
        self, rows: dict[int, list[float]], marginal: FloatArray, jobs: list[tuple[int, float]]
    ) -> None:
        """The `scatter` share of `belief` decoys, for every model at once: model i's
        decoy goes anywhere free with probability `share` (its chance x scatter), which
        raises each free location's c_j by (1 - c_j) min(1, share / E[free locations]).
        One numpy step over the models' rows (`rows`: their c, as updated so far),
        written back to `c`; row by row the same operations as one model at a time (the
        row sums add in numpy's order either way)."""
        index = [i for i, _ in jobs]
        c_rows = np.array([rows[i] for i in index])
        free = (1.0 - marginal.take(index, axis=0)) * (1.0 - c_rows)  # P(j is free)
        totals = _SUM(free, 1).tolist()
        raise_by = [
            min(1.0, share / total) if total > 0.0 else 0.0
            for (_, share), total in zip(jobs, totals, strict=True)
        ]
        c_rows += (1.0 - c_rows) * np.array(raise_by)[:, None]
        self.c[index] = c_rows

    def _plant(
        self, p_no_move: list[float], evidence: FloatArray, harry: Maps | None = None
    ) -> None:
        # in Python floats: the same doubles as the array expressions
        rates = self._plant_rates
        last = self.used[:, -1].tolist()
        planted_all = [0.0] * self.count
        marginal: FloatArray | None = None
        rows: dict[int, list[float]] = {}  # the rows of c this step writes, as floats
        scattered: list[tuple[int, float]] = []  # belief decoys' scatter shares, by model
        cand: list[int] | None = None
        rated: dict[str, list[list[int]]] = {}
        # scalar loops in Python floats (the same operations, in the same order, as numpy
        # on these short rows; `array_sum` is numpy's summation): a handful of candidates
        # and a few models, where numpy's per-call cost would dominate
        done: list[int] = []  # models whose decoys are all used, from now on
        for i in self._planters:
            x = p_no_move[i]
            go = rates[i] * (x if x > 0.0 else 0.0)  # p * max(0.0, x)
            left = 1.0 - last[i]
            if left <= 0.0:
                done.append(i)
                continue
            if go <= 0.0:
                continue
            placement = self._placement[i]
            if placement == "belief" and harry is None:
                continue
            if marginal is None:
                marginal = self.marginal()
            chance = go * left  # this model plants now
            c_row = rows[i] = self.c[i].tolist()
            m_row = marginal[i].tolist()
            if placement == "random":  # a uniformly drawn free location
                free = [(1.0 - m) * (1.0 - c) for m, c in zip(m_row, c_row, strict=True)]
                total = array_sum(free)
                if total <= 0.0:
                    continue
                raise_by = min(1.0, chance / total)  # P(j drawn | j free)
                c_row[:] = [c + (1.0 - c) * raise_by for c in c_row]
                planted = min(1.0, go)
            else:  # the free location with the highest public evidence, if above 0
                # (or, `belief`, the highest occupancy on Harry's map, if above k/N)
                reads = self.models[i].reads
                reads = "own" if reads == "rule" else reads
                if placement == "belief":
                    assert harry is not None
                    if self.models[i].exact and "weights" in harry:
                        # an exact model: near-ties not grouped; on Harry's whole next map
                        # (after every model's move), or the level-0 map for `naive`
                        key = "naive!" if reads == "naive" else "full!"
                        if key not in rated:
                            exact_map = (
                                harry["naive"]
                                if reads == "naive"
                                else self.mixture(harry["weights"])
                            )
                            rated[key] = _top_groups(exact_map, self.tab.k / self.n, 0.0)
                        groups = rated[key]
                    else:
                        if reads not in rated:
                            rated[reads] = _top_groups(harry[reads], self.tab.k / self.n)
                        groups = rated[reads]
                    if not groups:
                        continue
                    scatter = self.models[i].scatter
                    planted = self._plant_on_map(c_row, m_row, groups, scatter, chance)
                    if scatter > 0.0:
                        scattered.append((i, chance * scatter))
                    planted = min(1.0, planted * go)
                    planted_all[i] = planted
                    continue
                if placement == "greedy":  # every location, best evidence first
                    order = np.argsort(-evidence, kind="stable").tolist()
                else:
                    if cand is None:  # best evidence first, board order on ties
                        seen = evidence.tolist()
                        cand = sorted(
                            (j for j, e in enumerate(seen) if e > 0.0), key=lambda j: -seen[j]
                        )
                    order = cand
                if not order:
                    continue
                reach = 1.0  # P(every better candidate is taken)
                planted = 0.0  # P(a decoy now | charges left), before `go`
                for j in order:
                    c, m = c_row[j], m_row[j]
                    if c < 1.0:
                        c_row[j] = c + (1.0 - c) * reach * chance
                        planted += reach * (1.0 - m) * (1.0 - c)
                    reach *= m + (1.0 - m) * c
                planted = min(1.0, planted * go)
            planted_all[i] = planted
        for i, row in rows.items():
            self.c[i] = row
        if scattered:
            assert marginal is not None
            self._scatter(rows, marginal, scattered)
        if done:  # P(every decoy used) = 1 only grows: they never plant again
            self._planters = tuple(i for i in self._planters if i not in done)
        moving = [i for i in self._planters if planted_all[i]]
        used = self.used
        if len(moving) > 3:  # each model's count of decoys used moves up by `planted`
            shift = used[:, :-1] * np.array(planted_all)[:, None]
            used[:, :-1] -= shift
            used[:, 1:] += shift
        else:  # the same operations on the few rows that move, in Python floats
            for i in moving:
                planted = planted_all[i]
                row = used[i].tolist()
                shift_row = [x * planted for x in row[:-1]]
                for q, x in enumerate(shift_row):
                    row[q] -= x
                for q, x in enumerate(shift_row):
                    row[q + 1] += x
                used[i] = row


def array_sum(values: list[float]) -> float:
    """numpy's sum of a short contiguous float64 array, in Python floats: sequential below
    8 values, else 8 interleaved partial sums combined pairwise, then the tail (the same
    additions in the same order, so the same double; rows up to 128 values)."""
    n = len(values)
    if n > 128:  # numpy splits longer rows in halves: let it
        return float(np.array(values).sum())
    if n < 8:
        total = 0.0
        for x in values:
            total += x
        return total
    part = values[:8]
    end = n - n % 8
    for start in range(8, end, 8):
        for q in range(8):
            part[q] += values[start + q]
    low = (part[0] + part[1]) + (part[2] + part[3])
    total = low + ((part[4] + part[5]) + (part[6] + part[7]))
    for x in values[end:]:
        total += x
    return total


def _top_groups(seen: FloatArray, floor: float, band: float = TOP_BAND) -> list[list[int]]:
    """The locations Harry's map rates above `floor`, best first (board order on ties),
    in groups within `band` (TOP_BAND; 0 for an exact model) of each group's best: where
    a `belief` decoy goes."""
    # in Python floats (a handful of values): best first, board order on ties, as numpy's
    # stable argsort of the negated values orders them
    rated = seen.tolist()
    order = sorted((j for j, v in enumerate(rated) if v > floor), key=lambda j: -rated[j])
    values = [rated[j] for j in order]
    groups: list[list[int]] = []
    start = 0
    while start < len(order):
        head = values[start]
        stop = start
        while stop < len(order) and values[stop] >= head - band:
            stop += 1
        groups.append(order[start:stop])
        start = stop
    return groups


# ---------------------------------------------------------------- the belief map
@lru_cache(maxsize=256)
def _tie_ranks(n: int, turn: int) -> list[float]:
    """`_tie_order` as Python floats, cached (never to be written)."""
    ranks: list[float] = _tie_order(n, turn).tolist()
    return ranks


@lru_cache(maxsize=256)
def _tie_order(n: int, turn: int) -> FloatArray:
    """The planner's tie-break ranks at `turn` (`horcrux.agents.planner.tie_order`)."""
    ranks = list(range(n))
    random.Random(0x9E3779B1 ^ turn).shuffle(ranks)
    out = np.array(ranks, dtype=np.float64)
    out.setflags(write=False)
    return out


def _h2(p: FloatArray) -> FloatArray:
    q = np.clip(p, 1e-12, 1.0 - 1e-12)
    out: FloatArray = -(q * np.log2(q) + (1.0 - q) * np.log2(1.0 - q))
    return out


def binary_entropy(p: float) -> float:
    """h2(p) in bits."""
    if p <= 0.0 or p >= 1.0:
        return 0.0
    return -(p * math.log2(p) + (1.0 - p) * math.log2(1.0 - p))


_KIND_CODE = {"search": 0, "attack": 1, "reveal": 2}
_OUTCOME_CODE = {
    "positive": 0,
    "negative": 1,
    "destroyed": 2,
    "decoy": 3,
    "empty": 4,
    "horcrux": 5,
}
_OUTCOMES = {v: k for k, v in _OUTCOME_CODE.items()}
_KINDS = {v: k for k, v in _KIND_CODE.items()}
_SNAPSHOT_VERSION = 1


_RETIRED_FIELDS = {"lag": 0, "race_charge": 0.0}
"""Fields of `AdversaryModel` that only retired modes set (`aware-lag`, `aware-charge`):
a snapshot carrying them at these values restores; any other value is a ValueError."""


def _model_of(saved: dict[str, Any]) -> AdversaryModel:
    """The `AdversaryModel` a snapshot saved (`asdict`), its tuples restored."""
    fields = dict(saved)
    for name, default in _RETIRED_FIELDS.items():
        if name in fields and fields.pop(name) != default:
            raise ValueError(f"belief snapshot of a retired model ({name}={saved[name]!r})")
    return AdversaryModel(**{**fields, "rule": tuple(fields.get("rule", ()))})


def _belief_point(turn: int, k: int, m: FloatArray, locations: tuple[str, ...]) -> BeliefPoint:
    """A turn's history point from its k and marginals: `entropy()` and `top(3)` on them."""
    entropy = 0.0
    if k > 0:
        p = m / k
        p = p[p > 0.0]
        entropy = float(-(p * np.log2(p)).sum())
    order = np.argsort(-m, kind="stable")[:3]
    top = tuple((locations[int(i)], round(float(m[i]), 6)) for i in order)
    return BeliefPoint(turn=turn, entropy=round(entropy, 6), top=top)


class BayesBelief:
    """Exact Bayes filter over Horcrux sets x relocation charges, averaged over models.

    Works for any `RuleSet`. `mode` is one of `MODES` (`trigger`, `hazard`, `static`,
    `mixture`), or pass `models` explicitly (e.g. with priors from cross-game memory).
    `horcruxes` / `charges` override the starting k and R (the memory-window ablation
    rebuilds a map mid-game); `charge_prior` replaces "surely R charges" by weights over
    r = 0..R, and `decoy_prior` "surely no decoy planted yet" by weights over 0..D decoys
    used: what a Harry who forgot the start of the game should believe about Voldemort's
    budgets. `forgotten=t` sets both from each model's forecast for t forgotten turns
    (`forgotten_budgets`), weighed against ignorance by `trust`.
    """

    def __init__(
        self,
        rules: RuleSet,
        mode: str = DEFAULT_MODE,
        *,
        models: tuple[AdversaryModel, ...] | None = None,
        horcruxes: int | None = None,
        charges: int | None = None,
        charge_prior: Prior | None = None,
        decoy_prior: Prior | None = None,
        forgotten: int = 0,
        trust: float = 1.0,
    ) -> None:
        if models is None:
            if mode not in MODES:
                raise ValueError(f"unknown belief mode {mode!r}; known: {', '.join(MODES)}")
            models = MODES[mode]
        if not models:
            raise ValueError("a belief needs at least one adversary model")
        self.rules = rules
        self.mode = mode
        self.models = models
        self.name = f"bayes:{mode}"
        self._n = len(rules.locations)
        self._index = {loc: i for i, loc in enumerate(rules.locations)}
        self._start_k = rules.horcruxes if horcruxes is None else horcruxes
        self._start_r = rules.relocations if charges is None else charges
        if forgotten < 0:
            raise ValueError("forgotten must be >= 0 turns")
        if forgotten and (charge_prior is not None or decoy_prior is not None):
            raise ValueError("give either forgotten turns or explicit budget priors, not both")
        if not 0.0 <= trust <= 1.0:
            raise ValueError(f"trust in the forecast must be in [0, 1], got {trust}")
        self._forgotten = forgotten
        self._trust = float(trust) if forgotten else 1.0
        if forgotten:
            charge_prior, decoy_prior = forgotten_budgets(
                models, rules, self._start_k, forgotten, self._trust
            )
        self._charge_prior = _plain(charge_prior)
        self._decoy_prior = _plain(decoy_prior)
        self._filters = _Filters(
            models,
            self._n,
            self._start_k,
            self._start_r,
            rules.decoys,
            self._charge_prior,
            self._decoy_prior,
        )
        self._log_prior = np.log(np.array([m.prior for m in models], dtype=np.float64))
        self._evidence: FloatArray = np.zeros(self._n)  # public evidence, as Voldemort sees it
        self._log: list[tuple[int, int, int, int, int]] = []  # (turn, kind, loc, outcome, sensor)
        self._ends: list[int] = []  # index into _log where each update ended
        self._turns: list[int] = []  # the turn of each update
        self._history: list[BeliefPoint] = []
        # turns folded in whose history point is not built yet: (turn, marginals); the
        # point is a function of them alone, so building it when asked gives the same one
        self._pending: list[tuple[int, int, FloatArray]] = []
        self._attacks_used = 0
        self._plain: BoolArray = np.array([m.motion != "belief" and m.level0 for m in models])
        self._any_plain = bool(self._plain.any())
        self._rule_hesitate = [(i, m.hesitate) for i, m in enumerate(models) if m.reads == "rule"]
        self._rule = next((m for m in models if m.reads == "rule"), None)
        self._exact_plant = any(m.exact for m in models)
        self._exposed = [
            i for i, m in enumerate(models) if m.motion == "belief" and m.reads in ("own", "rule")
        ]
        self._turn = 0
        self._next_turn = 1  # the turn a predictive step prepares (Harry's next decision)
        self._attack_plan: tuple[int, FloatArray | None] | None = None  # (turn, race plan)
        self._cache: tuple[FloatArray, FloatArray, FloatArray] | None = None
        self._weights: tuple[tuple[int, int], FloatArray] | None = None
        self._weights_list: list[float] | None = None
        # functions of the posterior, kept with the list of weights they were read from
        self._exposure: tuple[list[float], float] | None = None
        self._hesitation: tuple[list[float], float] | None = None

    # ------------------------------------------------------------ protocol
    @property
    def horcruxes_left(self) -> int:
        return self._filters.k

    @property
    def history(self) -> list[BeliefPoint]:
        for turn, k, m in self._pending:
            self._history.append(_belief_point(turn, k, m, self.rules.locations))
        self._pending.clear()
        return self._history

    @property
    def turn(self) -> int:
        """The turn of the last record folded in (0 before any)."""
        return self._turn

    def update(self, record: HarryRecord) -> None:
        """Fold one of Harry's turns in, then apply the predictive step for Voldemort's move."""
        self.update_observations(record.turn, record.observations)

    def update_observations(
        self, turn: int, observations: tuple[Observation, ...], *, track: bool = True
    ) -> None:
        """Like `update`, from a turn's observations (a memory window may cut a turn).

        `track=False` skips the belief-history point (entropy and top 3) of this turn: a
        rebuild that replays many turns only needs the last one's.
        """
        positives: list[int] = []
        for obs in observations:
            self._observe(turn, obs)
            if obs.kind == "search" and obs.outcome == "positive":
                positives.append(self._index[obs.location])
        self._cache = None
        self._next_turn = turn + 1
        self._filters.predict(positives, self._evidence, self._maps)
        self._ends.append(len(self._log))
        self._turns.append(turn)
        self._turn = turn
        self._cache = None
        if not track:
            return
        self._pending.append((turn, self._filters.k, self.marginals().copy()))

    def occupancy(self) -> dict[str, float]:
        m = self.marginals()
        return {loc: float(m[i]) for i, loc in enumerate(self.rules.locations)}

    def entropy(self) -> float:
        """Entropy in bits of the normalised marginal map m / k (>= log2 k); 0 when k = 0."""
        k = self.horcruxes_left
        if k == 0:
            return 0.0
        p = self.marginals() / k
        p = p[p > 0.0]
        return float(-(p * np.log2(p)).sum())

    def decision_entropy(self) -> float:
        """entropy() - log2(k): 0 when Harry is sure of every remaining Horcrux."""
        k = self.horcruxes_left
        if k == 0:
            return 0.0
        return max(0.0, self.entropy() - math.log2(k))

    def top(self, n: int = 3) -> list[tuple[str, float]]:
        m = self.marginals()
        order = np.argsort(-m, kind="stable")[:n]
        return [(self.rules.locations[int(i)], round(float(m[i]), 6)) for i in order]

    def preview(self, location: str, positive: bool, sensor: Sensor | None = None) -> FloatArray:
        """The marginals Harry would hold after one more search at `location` with this
        outcome and Voldemort's move after it (nothing is changed: a planner's lookahead)."""
        saved = self._filters
        trial = copy.copy(saved)
        trial.w = saved.w.copy()
        trial.c = saved.c.copy()
        trial.used = saved.used.copy()
        trial.log_evidence = saved.log_evidence.copy()
        trial._spent = set(saved._spent)
        trial._marginal = None
        trial.serial = next(_SERIALS)
        cache = self._cache
        plan, next_turn = self._attack_plan, self._next_turn
        self._next_turn = self._turn + 1
        j = self._index[location]
        try:
            self._filters = trial
            self._cache = None
            trial.search(j, positive, sensor or self.rules.sensor)
            evidence = self._evidence.copy()
            evidence[j] += math.log(
                (sensor or self.rules.sensor).d / (sensor or self.rules.sensor).f
                if positive
                else (1.0 - (sensor or self.rules.sensor).d)
                / (1.0 - (sensor or self.rules.sensor).f)
            )
            self._cache = None
            trial.predict([j] if positive else [], evidence, self._maps)
            self._cache = None
            out = self.marginals().copy()
        finally:
            self._filters = saved
            self._cache = cache
            self._attack_plan, self._next_turn = plan, next_turn
        return out

    def _maps(self) -> Maps | None:
        """Harry's maps the belief-reacting models read, once the other models have made
        their predictive step: `naive` (the mixture of the models that do not read his
        map: what a Bayes Harry who ignores such adversaries holds after Voldemort's turn,
        exactly) and `own` (the whole mixture, its belief-reacting models before their
        own move: the fixed point is cut there)."""
        if not self._filters.reads_harry:
            return None
        self._cache = None
        weights = self._weights_view()
        marginal = self._filters.marginal()
        own = self._filters.mixture(weights)  # `marginals()`
        naive: FloatArray = own
        if self._any_plain:
            pi = np.where(self._plain, weights, 0.0)
            pi /= max(float(_SUM(pi, None)), _TINY)
            naive = _CLIP(pi @ marginal, 0.0, 1.0)
        maps = {"own": own, "naive": naive}
        rule = self._rule
        if self._exact_plant:
            maps["weights"] = weights
        if rule is not None:
            race = self._race_attack(rule, own) if rule.race > 0.0 else None
            if race is not None:
                maps["attack"] = maps["race"] = race
            else:
                maps["attack"] = self._rule_attack(rule, own)
            self._attack_plan = (self._next_turn, race)
        return maps

    def race_exposure(self) -> float:
        """rho: the posterior weight of the models that read Harry's own map (`exposure`),
        each times its P(a relocation charge is left): the chance that an attack drawn
        by a copy of Harry's rule is also a move."""
        weights = self._weights_view()
        w = self._filters.w
        return float(sum(weights[i] * float(w[1:, i].sum()) for i in self._exposed))

    def race_plan(self) -> FloatArray | None:
        """P(Harry attacks j) this turn when he plays the race (the distribution the `rule`
        model moved on, from his map before that move), else None."""
        plan = self._attack_plan
        if plan is None or plan[0] != self._turn + 1 or plan[1] is None:
            return None
        return plan[1]

    def _race_attack(self, rule: AdversaryModel, own: FloatArray) -> FloatArray | None:
        """`race_attack` for the next turn on `own`, or None while rho < `rule.race`."""
        k = self._filters.k
        attacks = self.attacks_left()
        if k == 0 or attacks <= 0:
            return None
        # rho is at most the exposed models' weight (each model's weights sum to 1, up to
        # rounding): most turns that alone is below the race's start, and the per-model
        # sums rho needs are skipped
        if self.exposure() < rule.race * (1.0 - 1e-9):
            return None
        rho = self.race_exposure()
        if rho < rule.race:
            return None
        turns_left = self.rules.max_turns - self._next_turn + 1
        forced = turns_left <= k or turns_left <= attacks
        thresholds = rule.rule or RULE_THRESHOLDS
        cost = rule.race_cost * thresholds[max(0, min(attacks - k, len(thresholds) - 1))]
        return race_attack(own, cost, min(1.0, rho), forced)

    def attacks_left(self) -> int:
        """Harry's attacks left, from the attacks he has folded in."""
        return self.rules.attacks - self._attacks_used

    def exposure(self) -> float:
        """The posterior weight of the belief-reacting models that read Harry's own map
        (`reads` own or rule): how exposed his own map is to the adversary."""
        weights = self._weights_floats()
        kept = self._exposure
        if kept is None or kept[0] is not weights:  # once per posterior (several readers)
            kept = self._exposure = (weights, float(sum(weights[i] for i in self._exposed)))
        return kept[1]

    def hesitation(self) -> float:
        """P(Harry searches instead of a threshold attack): the `rule` model's hesitation
        times that model's posterior weight (nothing to hide from other adversaries)."""
        if not self._rule_hesitate:
            return 0.0
        weights = self._weights_floats()
        kept = self._hesitation
        if kept is None or kept[0] is not weights:  # once per posterior (several readers)
            total = float(sum(h * weights[i] for i, h in self._rule_hesitate))
            kept = self._hesitation = (weights, total)
        return kept[1]

    def _rule_attack(self, rule: AdversaryModel, own: FloatArray) -> FloatArray:
        """P(the planner's rule attacks j next turn), per location, on `own`: the top
        location (ties by the turn's tie order) when its occupancy is above the spare
        attacks' threshold lowered by U(0, jitter), unless he hesitates; always when the
        attack is forced (no more turns than Horcruxes, or the endgame)."""
        out: FloatArray = np.zeros(self._n)
        k = self._filters.k
        attacks = self.attacks_left()
        if k == 0 or attacks <= 0:
            return out
        turn = self._turn + 1
        turns_left = self.rules.max_turns - turn + 1
        forced = turns_left <= k or turns_left <= attacks
        seen = own.tolist()
        top = max(seen)
        thresholds = rule.rule or RULE_THRESHOLDS
        threshold = thresholds[max(0, min(attacks - k, len(thresholds) - 1))]
        if not forced and (
            top <= threshold - rule.spread if rule.spread > 0.0 else top < threshold
        ):
            return out  # no attack: the top location is below every jittered threshold
        ranks = _tie_ranks(self._n, turn)
        cut = top - 1e-9 * max(1.0, abs(top))
        best, rank = 0, math.inf  # the lowest tie rank among the near-top (ranks distinct)
        for i, value in enumerate(seen):
            if value >= cut and ranks[i] < rank:
                best, rank = i, ranks[i]
        if forced:
            out[best] = 1.0
            return out
        m = seen[best]
        if rule.spread > 0.0:
            p = min(1.0, max(0.0, (m - (threshold - rule.spread)) / rule.spread))
        else:
            p = 1.0 if m >= threshold else 0.0
        out[best] = p * (1.0 - self.hesitation())
        return out

    # ------------------------------------------------------------ arrays for planners
    def model_weights(self) -> FloatArray:
        """Posterior weight of each adversary model (sums to 1)."""
        return self._weights_view().copy()

    def _weights_view(self) -> FloatArray:
        """`model_weights()` without the copy: the cached array, never to be written."""
        key = (self._filters.serial, self._filters.version)
        if self._weights is not None and self._weights[0] == key:
            return self._weights[1]
        logw = self._log_prior + self._filters.log_evidence
        logw -= _MAX(logw, None)
        w = np.exp(logw)
        out: FloatArray = w / _SUM(w, None)
        out.setflags(write=False)
        self._weights = (key, out)
        self._weights_list = None
        return out

    def _weights_floats(self) -> list[float]:
        """`model_weights()` as Python floats (the same doubles), cached with it."""
        weights = self._weights_view()
        if self._weights_list is None:
            self._weights_list = weights.tolist()
        return self._weights_list

    def _arrays(self) -> tuple[FloatArray, FloatArray, FloatArray]:
        if self._cache is None:
            pi = self._weights_view()
            mf = self._filters.marginal()
            decoys = (1.0 - mf) * self._filters.c
            m = pi @ mf
            decoy = pi @ decoys
            q = m + decoy
            self._cache = (_CLIP(m, 0.0, 1.0), _CLIP(q, 0.0, 1.0), decoy)
        return self._cache

    def model_marginals(self) -> FloatArray:
        """(models, N): each adversary model's own P(real Horcrux at i)."""
        return self._filters.marginal().copy()

    def model_decoy_odds(self) -> FloatArray:
        """(models, N): each adversary model's c_j = P(decoy at j | no Horcrux at j)."""
        return self._filters.c.copy()

    def marginals(self) -> FloatArray:
        """m_i = P(real Horcrux at i), in board order; sums to k."""
        return self._arrays()[0]

    def respond_probability(self) -> FloatArray:
        """q_i = P(i responds to a search) = m_i + (1 - m_i) c_i, in board order."""
        return self._arrays()[1]

    def decoy_probability(self) -> FloatArray:
        """P(decoy at i), in board order."""
        return self._arrays()[2]

    def real_given_responds(self) -> FloatArray:
        """P(real | responds) = m / q per location (decoy risk of a positive place)."""
        m, q, _ = self._arrays()
        out: FloatArray = np.where(q > 0.0, m / np.maximum(q, 1e-300), 0.0)
        return out

    def search_information(self, sensor: Sensor) -> FloatArray:
        """I_j = h2(q d + (1-q) f) - q h2(d) - (1-q) h2(f) per location, in bits."""
        q = self.respond_probability()
        out: FloatArray = (
            _h2(q * sensor.d + (1.0 - q) * sensor.f)
            - q * binary_entropy(sensor.d)
            - (1.0 - q) * binary_entropy(sensor.f)
        )
        return out

    def horcrux_information(self, sensor: Sensor) -> FloatArray:
        """Mutual information (bits) between a search at j and whether j holds a Horcrux.

        Like `search_information`, but a decoy counts as noise, not as something to learn:
        P(positive | Horcrux) = d, P(positive | none) = g_j = c_j d + (1 - c_j) f.
        """
        m, _, decoy = self._arrays()
        # elementwise, in the order the scalar formulas read (the same doubles), with one
        # numpy call for every logarithm: c_j = decoy_j / (1 - m_j) where m_j < 1, else 0
        # (below 1, 1 - m_j is at least 2^-53, so no floor is needed)
        d, f = sensor.d, sensor.f
        n = len(m)
        free = 1.0 - m  # each difference computed once, used where the formulas read it
        c = np.divide(decoy, free, out=np.zeros(n), where=m < 1.0)
        g = c * d + (1.0 - c) * f  # P(positive | no Horcrux)
        p = m * d + free * g  # P(positive)
        q = _CLIP(np.concatenate((p, g)), 1e-12, 1.0 - 1e-12)
        not_q = 1.0 - q
        logs = np.log2(np.concatenate((q, not_q)))
        h = -(q * logs[: 2 * n] + not_q * logs[2 * n :])  # h2 of p, then of g
        out: FloatArray = h[:n] - m * binary_entropy(d) - free * h[n:]
        return out

    def reveal_information(self) -> FloatArray:
        """Entropy (bits) of Dumbledore's exact reveal at each location."""
        m, _, decoy = self._arrays()
        empty = np.clip(1.0 - m - decoy, 0.0, 1.0)
        total: FloatArray = np.zeros(self._n)
        for p in (m, decoy, empty):
            pc = np.clip(p, 1e-300, 1.0)
            total -= np.where(p > 0.0, p * np.log2(pc), 0.0)
        return total

    # ------------------------------------------------------------ observations
    def _observe(self, turn: int, obs: Observation) -> None:
        j = self._index[obs.location]
        sensor_code = 1 if obs.sensor == "hermione" else 0
        self._log.append((turn, _KIND_CODE[obs.kind], j, _OUTCOME_CODE[obs.outcome], sensor_code))
        if obs.kind == "search":
            sensor = self.rules.sensor_of("hermione" if obs.sensor == "hermione" else None)
            positive = obs.outcome == "positive"
            self._filters.search(j, positive, sensor)
            if positive:
                self._evidence[j] += math.log(sensor.d / sensor.f)
            else:
                self._evidence[j] += math.log((1.0 - sensor.d) / (1.0 - sensor.f))
        elif obs.kind == "attack":
            self._attacks_used += 1
            self._filters.attack(j, obs.outcome)
            self._evidence[j] = 0.0
        else:
            self._filters.reveal(j, obs.outcome)

    # ------------------------------------------------------------ persistence
    def snapshot(self) -> bytes:
        """Construction parameters and the observation log, zlib'd (~200 B at turn 50)."""
        header: dict[str, object] = {
            "v": _SNAPSHOT_VERSION,
            "mode": self.mode,
            "models": [asdict(m) for m in self.models],
            "k": self._start_k,
            "r": self._start_r,
        }
        if self._forgotten:
            header["fg"] = self._forgotten
            if self._trust != 1.0:
                header["tr"] = self._trust
        else:
            if self._charge_prior is not None:
                header["cp"] = self._charge_prior
            if self._decoy_prior is not None:
                header["dp"] = self._decoy_prior
        head = json.dumps(header, separators=(",", ":")).encode()
        body = bytearray(struct.pack("<HH", len(head), len(self._ends)))
        body += head
        start = 0
        for end, turn in zip(self._ends, self._turns, strict=True):
            chunk = self._log[start:end]
            body += struct.pack("<HB", turn, len(chunk))
            for _t, kind, loc, outcome, sensor in chunk:
                body += struct.pack("<BBB", kind | sensor << 4, loc, outcome)
            start = end
        return zlib.compress(bytes(body), 9)

    @classmethod
    def restore(cls, rules: RuleSet, data: bytes) -> BayesBelief:
        """Rebuild the map `snapshot()` saved, by replaying its observations (bit-identical)."""
        raw = zlib.decompress(data)
        head_len, turns = struct.unpack_from("<HH", raw, 0)
        offset = 4
        header = json.loads(raw[offset : offset + head_len])
        offset += head_len
        if header.get("v") != _SNAPSHOT_VERSION:
            raise ValueError(f"unsupported belief snapshot version {header.get('v')!r}")
        models = tuple(_model_of(m) for m in header["models"])
        cp, dp = header.get("cp"), header.get("dp")
        belief = cls(
            rules,
            header["mode"],
            models=models,
            horcruxes=header["k"],
            charges=header["r"],
            charge_prior=_plain(cp),
            decoy_prior=_plain(dp),
            forgotten=int(header.get("fg", 0)),
            trust=float(header.get("tr", 1.0)),
        )
        for _ in range(turns):
            turn, count = struct.unpack_from("<HB", raw, offset)
            offset += 3
            observations = []
            for _ in range(count):
                code, loc, outcome = struct.unpack_from("<BBB", raw, offset)
                offset += 3
                kind = _KINDS[code & 0x0F]
                sensor = "hermione" if code >> 4 else "harry"
                observations.append(
                    Observation(
                        location=rules.locations[loc],
                        kind=kind,
                        outcome=_OUTCOMES[outcome],
                        sensor=sensor if kind == "search" else None,
                    )
                )
            belief.update_observations(turn, tuple(observations))
        return belief


__all__ = [
    "AWARE",
    "AWARE_COPY",
    "AWARE_EXACT",
    "DEFAULT_MODE",
    "HAZARD",
    "MODES",
    "REFERENCE_LIKE",
    "STATIC",
    "AdversaryModel",
    "BayesBelief",
    "binary_entropy",
    "level_fill",
    "race_attack",
]
