"""The exact filters, one per adversary model, stacked: observations and Voldemort's
predicted moves (triggered, hazard, belief-reacting) and decoys (docs/MEMORY.md, "L2")."""

from __future__ import annotations

import copy
import itertools
from collections.abc import Callable
from functools import partial
from typing import TypeVar

import numpy as np

from horcrux.belief import ties
from horcrux.belief.budgets import Prior, prior_rows
from horcrux.belief.catalogue import EXACT_BAND, LOW_BAND, AdversaryModel
from horcrux.belief.planting import Planting
from horcrux.belief.reacting import BeliefPlan, exact_low_rows, level_fill
from horcrux.belief.reader import COMPUTED, Key
from horcrux.belief.tables import (
    ANY,
    CLIP,
    EVIDENCE_FLOOR,
    MAX,
    SUM,
    TINY,
    BoolArray,
    FloatArray,
    IntArray,
    Maps,
    charge_sum,
    level_offsets,
    move_positions,
    move_rows_of,
    row_positions,
    row_starts,
    swap_bins,
    tables_of,
)
from horcrux.rules import Sensor

SERIALS = itertools.count()
KEEP_FLOOR = 1e-6
"""`Filters._keep_decoys`: below this P(no Horcrux at j), c_j is left as it was."""

T = TypeVar("T")


class Filters:
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
        self.tab = tables_of(n, k)
        self.count = count = len(models)
        self.w: FloatArray = np.zeros((charges + 1, count, len(self.tab.sets)))
        if charge_prior is None:
            self.w[charges] = 1.0 / len(self.tab.sets)
        else:  # one row for every model, or one per model
            prior = prior_rows(charge_prior, count, charges, "charge_prior", "r = 0..")
            self.w[:] = prior.T[:, :, None] / len(self.tab.sets)
        self.c: FloatArray = np.zeros((count, n))
        self.used: FloatArray = np.zeros((count, decoys + 1))
        if decoy_prior is None:
            self.used[:, 0] = 1.0
        else:  # decoys already planted, for the models that plant
            self.used[:] = prior_rows(decoy_prior, count, decoys, "decoy_prior", "used 0..")
        self.log_evidence: FloatArray = np.zeros(count)
        self.restarts = 0  # models restarted after calling an observation impossible
        self.version = 0  # bumped whenever log_evidence changes (caches the model weights)
        self.serial = next(SERIALS)  # which filter (a lookahead copy gets its own)
        self.reader = COMPUTED  # a replay's hook (`MapReader`)
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
        self.planting = Planting(models)
        # the models that may still plant (a rate above 0, decoys left), in model order;
        # replaced, never mutated (lookahead copies share it)
        self.planters = tuple(i for i, p in enumerate(self.planting.rates) if p > 0.0)
        self.reads_harry = bool(self._belief) or "belief" in self.planting.placement
        self._marginal: FloatArray | None = None
        self._mixed: tuple[FloatArray, FloatArray, FloatArray] | None = None  # `mixture`
        # belief models with no weight left at r >= 1 (no charge left in any set): their
        # moves move nothing until a restart (`_normalise`) gives them charges again
        self._spent: set[int] = set()

    def lookahead(self) -> Filters:
        """A copy to step ahead on (a planner's preview): its own weights, decoys, decoy
        counts and evidence, the tables and the models shared, a serial of its own."""
        trial = copy.copy(self)
        trial.w = self.w.copy()
        trial.c = self.c.copy()
        trial.used = self.used.copy()
        trial.log_evidence = self.log_evidence.copy()
        trial._spent = set(self._spent)
        trial._marginal = None
        trial.serial = next(SERIALS)
        return trial

    @property
    def k(self) -> int:
        return self.tab.k

    def totals(self) -> FloatArray:
        """(models,): each model's total weight."""
        out: FloatArray = SUM(self.w @ self.tab.ones, 0)
        return out

    def _normalise(self, total: FloatArray) -> None:
        self._marginal = None
        self.version += 1
        self.log_evidence += np.log(np.maximum(total, EVIDENCE_FLOOR))
        if min(total.tolist()) <= TINY:
            # a model said "impossible": restart it uniform over the sets
            dead = total <= TINY
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
            self._marginal = charge_sum(self.w) @ self.tab.memberf
        return self._marginal

    def mixture(self, weights: FloatArray) -> FloatArray:
        """Harry's whole map, clip(weights @ marginal()), never to be written: kept while
        the marginals and the weights are the same arrays (any change to the weights
        makes new marginals), so the readers between two moves share one product.
        Through the `reader` when it is active."""
        if self.reader.active:
            return self.reader.mixture(lambda: self._mixture(weights))
        return self._mixture(weights)

    def _section(self, key: Key, call: Callable[[], T]) -> T:
        """`call()` within the reader's section `key`."""
        saved = self.reader.enter(key)
        try:
            return call()
        finally:
            self.reader.leave(saved)

    def _mixture(self, weights: FloatArray) -> FloatArray:
        marginal = self.marginal()
        kept = self._mixed
        if kept is not None and kept[0] is marginal and kept[1] is weights:
            return kept[2]
        out: FloatArray = CLIP(weights @ marginal, 0.0, 1.0)
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
            smaller = tables_of(self.n, tab.k - 1)
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
        hooked = self.reader.active
        if hooked:
            maps = self.reader.begin(maps)
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
                for h, total in zip(self._hazard_list, SUM(moved3, (0, 2)).tolist(), strict=True):
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
                plans: dict[str, BeliefPlan] = {}
                peak: dict[str, float] = {}
                spent = self._spent
                for i, model, key, floor in self._belief_floor:
                    if i in spent:  # no charge left: its move would move nothing
                        continue
                    if model.reads != "rule":  # the plan's top_max is the map's maximum
                        if key not in peak:
                            peak[key] = float(MAX(harry[key], None))
                        if ties.below(peak[key], floor):
                            continue  # the model cannot fire: nothing moves
                    if key not in plans:
                        plans[key] = self._belief_moves(harry[key], peak.get(key))
                    plan = plans[key]
                    moved_total[i] += (
                        self._section(
                            ("belief", i), partial(self._move_belief, i, model, plan, harry)
                        )
                        if hooked
                        else self._move_belief(i, model, plan, harry)
                    )
        if harry is None and maps is not None and self.reads_harry:
            self._marginal = None
            harry = maps()
        if decoys is not None and max(moved_total) > 0.0:
            self._keep_decoys(decoys)
        if self.used.shape[1] > 1 and self.planters:
            stay = [1.0 - x for x in moved_total]
            if hooked:
                self._section(("plant",), lambda: self.planting.plant(self, stay, evidence, harry))
            else:
                self.planting.plant(self, stay, evidence, harry)

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
            total += float(SUM(moved, None))
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

    def _belief_moves(self, harry: FloatArray, peak: float | None = None) -> BeliefPlan:
        """What the belief-reacting models read from one of Harry's maps (`BeliefPlan`;
        `peak`: the map's maximum, when known)."""
        return BeliefPlan(self.tab, harry, peak)

    def _move_belief(self, i: int, model: AdversaryModel, plan: BeliefPlan, harry: Maps) -> float:
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
                plan = BeliefPlan(tab, self.mixture(whole))
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
            if ties.below(plan.top_max, lo):  # (lo is the threshold without a spread)
                return 0.0
            top = plan.top
            if model.spread > 0.0:
                fire = CLIP((top - lo) / (2.0 * model.spread), 0.0, 1.0)
            else:
                fire = ties.at_least_array(top, model.threshold).astype(np.float64)
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
        total = float(SUM(moved, None))
        if total <= 0.0:  # no mass to move (no charge left, say): nothing changes
            if model.reads != "rule" and not ANY(self.w[1:, i], None):
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
                plan = BeliefPlan(tab, self.mixture(whole))
            dest = plan.free_dest(go, model.destination, model.scatter, band, cols)  # (go, n-k)
        self._marginal = None  # the move below changes it
        flat.put(pos, before - moved)  # w[1:, i, go] -= moved
        # only the charge levels a..b-1 that move anything (a model's lower levels are
        # often still empty) and the free locations: every other contribution is an exact
        # 0 in its bin, so the bins add the same terms in the same order
        live = ANY(moved, 0).tolist()
        a = live.index(True)
        b = len(live) - live[::-1].index(True)
        # (b - a, moving, n - k) contributions, laid out as moved[:, a:b, None] * dest
        contrib = moved.T[a:b, :, None] * dest
        if fixed is None:  # each set moves its own top location
            swaps = tab.swap_free.take(plan.top_row.take(go), axis=0)
            idx = (swaps + self._offsets(b - a, n_sets)).reshape(-1)
        else:  # every set holding j moves j: a table
            idx = swap_bins(tab.n, tab.k, fixed, b - a)
        incoming = np.bincount(idx, weights=contrib.reshape(-1), minlength=(b - a) * n_sets)
        self.w[a:b, i] += incoming.reshape(b - a, n_sets)
        return total

    def _move_race(self, i: int, model: AdversaryModel, plan: BeliefPlan, harry: Maps) -> float:
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
        """`_fill`, through the reader's section `("fill", i, go)` when it is active."""
        if not self.reader.active:
            return self._fill(i, model, go, mass, harry, cols)
        key = ("fill", i, go.tobytes())
        return self._section(
            key, lambda: self._fill(i, model, go, self.reader.mass(key, mass), harry, cols)
        )

    def _fill(
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
        if share <= TINY:
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
            sums = SUM(rows, 1, keepdims=True)
            bad = (sums[:, 0] <= 0.0).nonzero()[0]
            sums[bad] = 1.0  # those rows are replaced below
            # the free columns, by flat position
            out = rows.reshape(-1).take(free + row_starts(n, len(go))) / sums
        if len(bad):  # a set holding every levelled location: its lowest free one
            out[bad] = self._fallback(current, go.take(bad), free.take(bad, axis=0))
        if model.scatter > 0.0:  # `scattered_share`'s share, on the free locations
            out *= 1.0 - model.scatter
            out += model.scatter * (1.0 / (n - tab.k))
        if cols is not None:
            return out
        whole: FloatArray = np.zeros((len(go), n))  # every location: 0 on the set's own
        whole.reshape(-1)[free + row_starts(n, len(go))] = out
        return whole

    def _fallback(self, current: FloatArray, go: IntArray, free: IntArray) -> FloatArray:
        """(len(go), n-k): `_filled`'s rows for sets holding every levelled location, on
        their free locations `free`: `_low`'s row on the map `current` (each set's lowest
        free location, EXACT_BAND), divided by that row's own sum over every location."""
        lowest = exact_low_rows(self.tab, current, go, free, EXACT_BAND, True)
        lowest /= SUM(lowest, 1, keepdims=True)
        sums = SUM(lowest, 1, keepdims=True)
        cells = free + row_starts(self.tab.n, len(go))
        out: FloatArray = lowest.reshape(-1).take(cells) / sums
        return out

    def _offsets(self, rows: int, n_sets: int) -> IntArray:
        """(rows, 1, 1): the first flat position of each charge level's sets."""
        return level_offsets(rows, n_sets)

    def _row_base(self, i: int) -> IntArray:
        """(sets, R): the flat position in `w` of model i's set s at r = 1..R charges."""
        rows, m, sets = self.w.shape
        return row_positions(rows, m, sets, i)

    def _move_rows(self, j: int, i: int) -> IntArray:
        """(sets holding j, R): the flat positions of w[1:, i, with_j[j]], as `_row_base`."""
        rows, m, _ = self.w.shape
        return move_rows_of(self.n, self.tab.k, rows, m, j, i)

    def _move_index(self, j: int, i: int) -> tuple[IntArray, IntArray]:
        """Flat positions in `w` of model i's sets holding j at r >= 1 charges, and of the
        sets without j at r - 1 (a Horcrux moving from j spends a charge)."""
        rows, m, _ = self.w.shape
        return move_positions(self.n, self.tab.k, rows, m, j, i)
