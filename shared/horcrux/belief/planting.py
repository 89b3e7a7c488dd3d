"""Where the stacked filters' models plant decoys (`Planting`, one per `Filters`): at the
top public evidence, at random, on Harry's map, or wherever they can (`greedy`)."""

from __future__ import annotations

from typing import Protocol

import numpy as np

from horcrux.belief import ties
from horcrux.belief.catalogue import AdversaryModel, Placement
from horcrux.belief.reacting import (
    top_groups,
)
from horcrux.belief.tables import (
    SUM,
    FloatArray,
    Maps,
    Tables,
    array_sum,
)


class Planted(Protocol):
    """What planting reads and writes of a filter (`horcrux.belief.filter.Filters`): its
    tables (`tab`, replaced when a Horcrux is destroyed), its decoy state (`c`, `used`),
    the models that may still plant (`planters`, replaced, never mutated: a lookahead
    copy shares it) and Harry's maps."""

    n: int
    tab: Tables
    count: int
    c: FloatArray
    used: FloatArray
    planters: tuple[int, ...]

    def marginal(self) -> FloatArray: ...

    def mixture(self, weights: FloatArray) -> FloatArray: ...


class Planting:
    """Where a filter's models plant decoys (one per filter, over its models; read-only
    once built): `plant` makes the decoys' part of a predictive step on the filter."""

    def __init__(self, models: tuple[AdversaryModel, ...]) -> None:
        self.models = models
        self.rates: list[float] = [m.plant for m in models]
        """Each model's P(a decoy per turn), as Python floats."""
        self.placement: list[Placement] = [m.placement for m in models]

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
        self,
        flt: Planted,
        rows: dict[int, list[float]],
        marginal: FloatArray,
        jobs: list[tuple[int, float]],
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
        totals = SUM(free, 1).tolist()
        raise_by = [
            min(1.0, share / total) if total > 0.0 else 0.0
            for (_, share), total in zip(jobs, totals, strict=True)
        ]
        c_rows += (1.0 - c_rows) * np.array(raise_by)[:, None]
        flt.c[index] = c_rows

    def plant(
        self,
        flt: Planted,
        p_no_move: list[float],
        evidence: FloatArray,
        harry: Maps | None = None,
    ) -> None:
        """The decoys' part of `flt`'s predictive step, after the moves: each model that
        may still plant does so with its rate, where its placement says (`p_no_move`:
        per model, P(no relocation this turn); `evidence`: the public evidence)."""
        # in Python floats: the same doubles as the array expressions
        rates = self.rates
        last = flt.used[:, -1].tolist()
        planted_all = [0.0] * flt.count
        marginal: FloatArray | None = None
        rows: dict[int, list[float]] = {}  # the rows of c this step writes, as floats
        scattered: list[tuple[int, float]] = []  # belief decoys' scatter shares, by model
        cand: list[int] | None = None
        rated: dict[str, list[list[int]]] = {}
        # scalar loops in Python floats (the same operations, in the same order, as numpy
        # on these short rows; `array_sum` is numpy's summation): a handful of candidates
        # and a few models, where numpy's per-call cost would dominate
        done: list[int] = []  # models whose decoys are all used, from now on
        for i in flt.planters:
            x = p_no_move[i]
            go = rates[i] * (x if x > 0.0 else 0.0)  # p * max(0.0, x)
            left = 1.0 - last[i]
            if left <= 0.0:
                done.append(i)
                continue
            if go <= 0.0:
                continue
            placement = self.placement[i]
            if placement == "belief" and harry is None:
                continue
            if marginal is None:
                marginal = flt.marginal()
            chance = go * left  # this model plants now
            c_row = rows[i] = flt.c[i].tolist()
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
                                else flt.mixture(harry["weights"])
                            )
                            rated[key] = top_groups(exact_map, flt.tab.k / flt.n, 0.0)
                        groups = rated[key]
                    else:
                        if reads not in rated:
                            rated[reads] = top_groups(harry[reads], flt.tab.k / flt.n)
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
                    order = ties.ranked(evidence.tolist())  # near-equals in board order
                else:
                    if cand is None:  # best evidence first, board order on ties
                        seen = evidence.tolist()
                        cand = [j for j in ties.ranked(seen) if ties.above(seen[j], 0.0)]
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
            flt.c[i] = row
        if scattered:
            assert marginal is not None
            self._scatter(flt, rows, marginal, scattered)
        if done:  # P(every decoy used) = 1 only grows: they never plant again
            flt.planters = tuple(i for i in flt.planters if i not in done)
        moving = [i for i in flt.planters if planted_all[i]]
        used = flt.used
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
