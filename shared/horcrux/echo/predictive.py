"""How well each adversary model predicted Voldemort's actual moves in a finished game
(pure; numpy comes with the belief package).

`move_logliks(rules, models, events)`: per model, log P(Voldemort's moves | model), each
of his turns given the public record so far and the true state (relocation charges
left, where the Horcruxes and decoys are, how many decoys he has used). The models'
motions are exactly those of the exact filter (`horcrux.belief.filter.Filters.predict`):

* a replayed `BayesBelief` over `models` folds Harry's records in, as in the game; its
  predictive step is recorded through the filter's public hook (`MapReader`, given with
  `BayesBelief.read_maps_with`): Harry's maps, every whole-mixture map a model reads
  (`mixture`, keyed by the model and the sets it moves) and the mass a levelled (`fill`)
  destination shares out;
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
from typing import TYPE_CHECKING, cast

import numpy as np

from horcrux.belief.bayes import (
    DEFAULT_MODE,
    AdversaryModel,
    BayesBelief,
    FloatArray,
    Maps,
)
from horcrux.belief.filter import Filters
from horcrux.belief.reader import Key, MapReader
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


class _Keyed(MapReader):
    """A replay's reader: where in the step a map is read (the section's key, and the
    read's rank in it)."""

    active = True

    def __init__(self) -> None:
        self.context: Key = ("pre",)
        self.calls = 0

    def enter(self, key: Key) -> object:
        saved = (self.context, self.calls)
        self.context, self.calls = key, 0
        return saved

    def leave(self, saved: object) -> None:
        self.context, self.calls = cast("tuple[Key, int]", saved)


class _Recording(_Keyed):
    """The replayed belief's reader: records what each predictive step read."""

    def __init__(self) -> None:
        super().__init__()
        self.maps: Maps | None = None
        self.mixtures: dict[Key, FloatArray] = {}
        self.masses: dict[Key, float] = {}

    def begin(self, maps: Callable[[], Maps | None] | None) -> Callable[[], Maps | None] | None:
        self.maps, self.mixtures, self.masses = None, {}, {}
        self.context, self.calls = ("pre",), 0
        if maps is None:
            return None
        read = maps

        def kept() -> Maps | None:
            self.maps = read()
            return self.maps

        return kept

    def mixture(self, compute: Callable[[], FloatArray]) -> FloatArray:
        out = compute()
        self.mixtures[(*self.context, self.calls)] = out
        self.calls += 1
        return out

    def mass(self, key: Key, mass: float) -> float:
        self.masses[key] = mass
        return mass


class _Serving(_Keyed):
    """A point filter's reader: the replay's maps where it read one, in the same place."""

    def __init__(self, rec: _Recording) -> None:
        super().__init__()
        self.rec = rec

    def begin(self, maps: Callable[[], Maps | None] | None) -> Callable[[], Maps | None] | None:
        self.context, self.calls = ("pre",), 0
        return maps

    def mixture(self, compute: Callable[[], FloatArray]) -> FloatArray:
        out = self.rec.mixtures.get((*self.context, self.calls))
        self.calls += 1
        if out is None:  # the replay built no such map: Harry's map before the moves
            maps = self.rec.maps
            return maps["own"] if maps is not None else compute()
        return out

    def mass(self, key: Key, mass: float) -> float:
        return self.rec.masses.get(key, mass)


class _Point:
    """The filters from a point mass at the true state, reading the replay's maps."""

    def __init__(self, models: tuple[AdversaryModel, ...], state: GameState, rec: _Recording):
        rules = state.rules
        index = {loc: i for i, loc in enumerate(rules.locations)}
        n, k = len(rules.locations), len(state.horcruxes)
        self.flt = flt = Filters(models, n, k, rules.relocations, rules.decoys)
        flt.reader = _Serving(rec)
        self.charges = state.relocations_left
        self.used_now = rules.decoys - state.decoys_left
        self.true_set = flt.tab.sets.index(tuple(sorted(index[h] for h in state.horcruxes)))
        flt.w[:] = 0.0
        flt.w[self.charges, :, self.true_set] = 1.0
        flt.c[:] = 0.0
        for d in state.decoys:
            flt.c[:, index[d]] = 1.0
        flt.used[:] = 0.0
        flt.used[:, self.used_now] = 1.0


def _move_probability(
    point: _Point, before: GameState, action: Relocate | PlantDecoy | Pass
) -> FloatArray:
    """(models,): each model's probability of `action` after its predictive step."""
    rules = before.rules
    index = {loc: i for i, loc in enumerate(rules.locations)}
    flt = point.flt
    r = point.charges
    stayed = flt.w[r] @ flt.tab.ones  # (models,): the mass that did not move
    planted = (
        flt.used[:, point.used_now + 1] if point.used_now + 1 < flt.used.shape[1] else 0.0 * stayed
    )
    if isinstance(action, Relocate):
        if r == 0:
            return np.zeros(flt.count)
        frm, to = index[action.from_location], index[action.to_location]
        s = tuple(sorted(to if x == frm else x for x in flt.tab.sets[point.true_set]))
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
    rec = _Recording()
    belief.read_maps_with(rec)
    total = np.zeros(len(stack))
    state: GameState | None = None
    point: _Point | None = None
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
            point = _Point(stack, state, rec)
            point.flt.predict(positives, belief.public_evidence, lambda: rec.maps)
        elif isinstance(event, VoldemortMoved):
            assert state is not None and point is not None
            p = np.clip(_move_probability(point, state, event.action), 0.0, 1.0)
            total += np.log((1.0 - eps) * p + eps / legal_moves(state))
            state, _ = apply(state, event.action)
            point = None
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
