"""How well each adversary model predicted Voldemort's actual moves in a finished game
(pure; numpy comes with the belief package).

`move_logliks(rules, models, events)`: per model, log P(Voldemort's moves | model), each
of his turns given the public record so far and the true state (relocation charges
left, where the Horcruxes and decoys are, how many decoys he has used). The models'
motions are exactly those of the exact filter (`horcrux.belief.filter._Filters.predict`):

* a replayed `BayesBelief` over `models` folds Harry's records in, as in the game; its
  predictive step is recorded: Harry's maps (`_maps`), every whole-mixture map a model
  reads (`mixture`, keyed by the model and the sets it moves) and the mass a levelled
  (`fill`) destination shares out;
* a second stack of filters over the same models starts from a point mass at the true
  state (every model at the true Horcrux set and charges, c_j = 1 at the true decoys
  and 0 elsewhere, the true count of decoys used) and makes the same predictive step,
  fed the same positives, public evidence and recorded maps;
* after it, each model's mass at the true next state is the probability of the move:
  a relocation a -> b is the weight at the set with a replaced by b, one charge fewer;
  a decoy at j is (1 - m_j) c_j there (what its planting added at a free j); a pass is
  the mass that did not move less the decoys planted.

Each turn's probability is mixed with EPS of a uniform over the legal moves (pass,
every relocation, every decoy), so no model is ever ruled out by one move it called
impossible (a robust likelihood). A map the replay never built (its model had no
weight where the truth is) falls back to Harry's own map before the moves.

`unit_logliks` sums a model set's likelihoods into the style's units (`style.unit_of`:
the level-0 group mixes its models by their priors).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from horcrux.belief.bayes import (
    DEFAULT_MODE,
    AdversaryModel,
    BayesBelief,
    FloatArray,
    IntArray,
    Maps,
)
from horcrux.belief.filter import _Filters
from horcrux.belief.reacting import _BeliefPlan
from horcrux.engine import apply, new_game
from horcrux.models import (
    GameStarted,
    GameState,
    HarryMoved,
    Pass,
    PlantDecoy,
    Relocate,
    VoldemortMoved,
)

if TYPE_CHECKING:
    from horcrux.rules import RuleSet
    from horcrux.store.port import AnyEvent

EPS = 1e-3
"""The share of each turn's probability spread uniformly over the legal moves."""

_Key = tuple[Any, ...]


class _Keyed(_Filters):
    """The filters with the context of every map read: which model's move (or the
    decoys), which sets a levelled destination shares out, and the call's rank in it."""

    def __init__(self, models: tuple[AdversaryModel, ...], n: int, k: int, r: int, d: int):
        super().__init__(models, n, k, r, d)
        self.context: _Key = ("pre",)
        self.calls = 0

    def _mass(self, key: _Key, mass: float) -> float:
        """The mass a levelled destination shares out (the recording keeps it)."""
        return mass

    def _move_belief(self, i: int, model: AdversaryModel, plan: _BeliefPlan, harry: Maps) -> float:
        with _In(self, ("belief", i)):
            return super()._move_belief(i, model, plan, harry)

    def _filled(
        self,
        i: int,
        model: AdversaryModel,
        go: IntArray,
        mass: float,
        harry: Maps,
        cols: IntArray | None = None,
    ) -> FloatArray | None:
        key = ("fill", i, go.tobytes())
        with _In(self, key):
            return super()._filled(i, model, go, self._mass(key, mass), harry, cols)

    def _plant(
        self, p_no_move: list[float], evidence: FloatArray, harry: Maps | None = None
    ) -> None:
        with _In(self, ("plant",)):
            super()._plant(p_no_move, evidence, harry)


class _In:
    """A filter's map-reading context for the duration of one call."""

    def __init__(self, owner: _Keyed, key: _Key) -> None:
        self.owner, self.key = owner, key

    def __enter__(self) -> None:
        self.saved = (self.owner.context, self.owner.calls)
        self.owner.context, self.owner.calls = self.key, 0

    def __exit__(self, *exc: object) -> None:
        self.owner.context, self.owner.calls = self.saved


class _Recording(_Keyed):
    """The replayed belief's filters, recording what each predictive step read."""

    def __init__(self, models: tuple[AdversaryModel, ...], n: int, k: int, r: int, d: int):
        super().__init__(models, n, k, r, d)
        self.maps: Maps | None = None
        self.mixtures: dict[_Key, FloatArray] = {}
        self.masses: dict[_Key, float] = {}

    def predict(
        self,
        positives: list[int],
        evidence: FloatArray,
        maps: Callable[[], Maps | None] | None = None,
    ) -> None:
        self.maps, self.mixtures, self.masses = None, {}, {}
        self.context, self.calls = ("pre",), 0

        def kept() -> Maps | None:
            assert maps is not None
            self.maps = maps()
            return self.maps

        super().predict(positives, evidence, kept if maps is not None else None)

    def mixture(self, weights: FloatArray) -> FloatArray:
        out = super().mixture(weights)
        self.mixtures[(*self.context, self.calls)] = out
        self.calls += 1
        return out

    def _mass(self, key: _Key, mass: float) -> float:
        self.masses[key] = mass
        return mass


class _PointFilters(_Keyed):
    """The filters from a point mass at the true state, reading the replay's maps."""

    def __init__(self, models: tuple[AdversaryModel, ...], state: GameState, rec: _Recording):
        rules = state.rules
        index = {loc: i for i, loc in enumerate(rules.locations)}
        n, k = len(rules.locations), len(state.horcruxes)
        super().__init__(models, n, k, rules.relocations, rules.decoys)
        self.rec = rec
        self.charges = state.relocations_left
        self.used_now = rules.decoys - state.decoys_left
        self.true_set = self.tab.sets.index(tuple(sorted(index[h] for h in state.horcruxes)))
        self.w[:] = 0.0
        self.w[self.charges, :, self.true_set] = 1.0
        self.c[:] = 0.0
        for d in state.decoys:
            self.c[:, index[d]] = 1.0
        self.used[:] = 0.0
        self.used[:, self.used_now] = 1.0

    def mixture(self, weights: FloatArray) -> FloatArray:
        out = self.rec.mixtures.get((*self.context, self.calls))
        self.calls += 1
        if out is None:  # the replay built no such map: Harry's map before the moves
            maps = self.rec.maps
            return maps["own"] if maps is not None else super().mixture(weights)
        return out

    def _mass(self, key: _Key, mass: float) -> float:
        return self.rec.masses.get(key, mass)


def _move_probability(
    flt: _PointFilters, before: GameState, action: Relocate | PlantDecoy | Pass
) -> FloatArray:
    """(models,): each model's probability of `action` after its predictive step."""
    rules = before.rules
    index = {loc: i for i, loc in enumerate(rules.locations)}
    r = flt.charges
    stayed = flt.w[r] @ flt.tab.ones  # (models,): the mass that did not move
    planted = (
        flt.used[:, flt.used_now + 1] if flt.used_now + 1 < flt.used.shape[1] else 0.0 * stayed
    )
    if isinstance(action, Relocate):
        if r == 0:
            return np.zeros(flt.count)
        frm, to = index[action.from_location], index[action.to_location]
        s = tuple(sorted(to if x == frm else x for x in flt.tab.sets[flt.true_set]))
        out: FloatArray = flt.w[r - 1, :, flt.tab.sets.index(s)].copy()
        return out
    if isinstance(action, PlantDecoy):
        j = index[action.location]
        free = 1.0 - flt.marginal()[:, j]
        placed: FloatArray = free * flt.c[:, j]
        return placed
    passed: FloatArray = stayed - planted
    return passed


def legal_moves(state: GameState) -> int:
    """How many moves Voldemort has: pass, each relocation, each decoy."""
    free = len(state.rules.locations) - len(state.horcruxes) - len(state.decoys)
    moves = 1
    if state.relocations_left > 0:
        moves += len(state.horcruxes) * free
    if state.decoys_left > 0:
        moves += free
    return moves


def move_logliks(
    rules: RuleSet,
    models: Sequence[AdversaryModel],
    events: Sequence[AnyEvent],
    *,
    eps: float = EPS,
) -> dict[str, float]:
    """Per model (by name), log P(Voldemort's moves in `events` | model), robust (EPS)."""
    stack = tuple(models)
    belief = BayesBelief(rules, DEFAULT_MODE, models=stack)
    n = len(rules.locations)
    rec = belief._filters = _Recording(stack, n, rules.horcruxes, rules.relocations, rules.decoys)
    total = np.zeros(len(stack))
    state: GameState | None = None
    flt: _PointFilters | None = None
    index = {loc: i for i, loc in enumerate(rules.locations)}
    for event in events:
        if isinstance(event, GameStarted):
            state, _ = new_game(event.rules, event.seed)
        elif isinstance(event, HarryMoved):
            assert state is not None
            belief.update_observations(event.turn, event.observations, track=False)
            state, _ = apply(state, event.action)
            if state.over:
                break
            positives = [
                index[o.location]
                for o in event.observations
                if o.kind == "search" and o.outcome == "positive"
            ]
            flt = _PointFilters(stack, state, rec)
            flt.predict(positives, belief._evidence, lambda: rec.maps)
        elif isinstance(event, VoldemortMoved):
            assert state is not None and flt is not None
            p = np.clip(_move_probability(flt, state, event.action), 0.0, 1.0)
            total += np.log((1.0 - eps) * p + eps / legal_moves(state))
            state, _ = apply(state, event.action)
            flt = None
    return {m.name: round(float(v), 6) for m, v in zip(stack, total.tolist(), strict=True)}


def unit_logliks(
    models: Sequence[AdversaryModel], logliks: Mapping[str, float]
) -> dict[str, float]:
    """`move_logliks` per style unit: a unit of several models (the level-0 group)
    mixes them by their priors."""
    from horcrux.echo.style import unit_of

    groups: dict[str, list[tuple[float, float]]] = {}
    for m in models:
        groups.setdefault(unit_of(m), []).append((m.prior, logliks[m.name]))
    return {u: round(mix_loglik(g), 6) for u, g in groups.items()}


def mix_loglik(weighted: Sequence[tuple[float, float]]) -> float:
    """log sum_v p_v exp(l_v) / sum_v p_v: a mixture's log-likelihood (log-sum-exp)."""
    kept = [(p, x) for p, x in weighted if p > 0.0]
    if not kept:
        return -math.inf
    top = max(x for _, x in kept)
    total = sum(p for p, _ in kept)
    return top + math.log(sum(p * math.exp(x - top) for p, x in kept) / total)


__all__ = ["EPS", "legal_moves", "mix_loglik", "move_logliks", "unit_logliks"]
