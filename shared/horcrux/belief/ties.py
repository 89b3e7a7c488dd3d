"""Decisions on computed floats that do not hang on their last bits.

The filter's sums (`@` on small matrices, reductions) are computed by BLAS kernels whose
summation order depends on the machine (OpenBLAS picks a kernel per CPU; Lambda runs on
arm64), so two values that are mathematically equal can differ by a few units in the
last place, and differently on each machine. Every discontinuity a decision goes through
(a comparison of computed floats that picks a move, a tie group, a band membership, a
threshold crossing) compares through this module instead, so that the same game is
played on every machine:

* Tolerance: `TOL` = 1e-9, absolute (the values compared are probabilities, occupancies
  and bits of information, all of order 1; `scaled` widens it to `TOL * |x|` above 1).
  Rounding differences are of order 1e-16 (1e-14 after many turns), far below it.
* Thresholds: a value within TOL of a threshold counts as *on* it: `at_least(x, t)` and
  `at_most(x, t)` are true there, `above(x, t)` and `below(x, t)` false. A value
  mathematically equal to a threshold thus falls on a fixed side on every machine.
* Ties: values within TOL of the best are equal; among them the first in a documented
  order wins: the lowest rank of a given tie order (`tie_order`, the per-turn shuffle
  every planner and the belief-reacting models break ties by, itself
  machine-independent), else board order (the lowest index, or the order the caller
  lists its items in).
* Ranked sorts: `ranked` (indices) and `ranked_items` (keys of a mapping) order values
  best first (or lowest first) in groups of near-equals, each group in tie order; their
  first element is `argmax_first`'s (`first_best`'s) pick. Every sort of computed floats
  whose order reaches a decision or a rendered prompt goes through them.
* Sums: a value summed in Python in the order events arrived (evidence per location,
  a log-likelihood ratio per search) differs in its last bits with that order, so two
  mathematically equal sums can compare either way; compared through the functions
  above (never with `max(..., key=...)` or `<`), they tie, and the tie order decides.
  A sum whose own value is the result (a total shown or stored) uses `math.fsum`, exact
  whatever the order.

A decision can still differ between machines where a value lies within 1e-16 of
`threshold - TOL` (or of `best - TOL`): a boundary no mathematically exact quantity of
the game sits on, unlike the ties and thresholds above, which games hit every turn.
"""

from __future__ import annotations

import math
import random
from collections.abc import Hashable, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

K = TypeVar("K", bound=Hashable)

TOL = 1e-9
"""Values within this of each other (or of a threshold) are equal (see the module doc)."""


TIE_SEED = 0x9E3779B1
"""The tie order's seed: `tie_order(n, turn)` shuffles with `random.Random(TIE_SEED ^ turn)`."""


@lru_cache(maxsize=256)
def tie_order(n: int, turn: int) -> NDArray[np.float64]:
    """Tie-break ranks for the n locations at `turn`: a permutation drawn from the turn
    (read-only; `tie_ranks` as Python floats).

    Harry has no reason to prefer one of several equally good locations; a fixed board
    order would make a forgetful Harry (the memory window) cycle through the same few
    locations he keeps forgetting and never reach the others. Deterministic in the turn,
    so a decision stays a pure function of the view (snapshots, the gated brain's shadow,
    the belief-reacting models' prediction of Harry).
    """
    ranks = list(range(n))
    random.Random(TIE_SEED ^ turn).shuffle(ranks)
    out = np.array(ranks, dtype=np.float64)
    out.setflags(write=False)
    return out


@lru_cache(maxsize=256)
def tie_ranks(n: int, turn: int) -> list[float]:
    """`tie_order(n, turn)` as Python floats, cached (never to be written)."""
    ranks: list[float] = tie_order(n, turn).tolist()
    return ranks


def scaled(x: float) -> float:
    """The tolerance at magnitude |x|: TOL, or TOL * |x| above 1."""
    return TOL * max(1.0, abs(x))


def at_least(x: float, threshold: float) -> bool:
    """x >= threshold, a value within TOL of it included."""
    return x >= threshold - TOL


def above(x: float, threshold: float) -> bool:
    """x > threshold by more than TOL (a value within TOL of it is not above)."""
    return x > threshold + TOL


def at_most(x: float, threshold: float) -> bool:
    """x <= threshold, a value within TOL of it included."""
    return x <= threshold + TOL


def below(x: float, threshold: float) -> bool:
    """x < threshold by more than TOL (a value within TOL of it is not below)."""
    return x < threshold - TOL


def at_least_array(
    values: NDArray[np.float64], threshold: float | NDArray[np.float64]
) -> NDArray[np.bool_]:
    """`at_least` on every value of an array (against one threshold, or elementwise)."""
    out: NDArray[np.bool_] = values >= threshold - TOL
    return out


def argmax_first(values: Sequence[float], ranks: Sequence[float] | None = None) -> int:
    """The index of the best value; among the values within `scaled(best)` of it, the one
    of lowest rank in `ranks` (distinct), or the first in board order without them."""
    top = max(values)
    cut = top - scaled(top)
    if ranks is None:
        return next(i for i, v in enumerate(values) if v >= cut)
    best, rank = 0, math.inf
    for i, value in enumerate(values):
        if value >= cut and ranks[i] < rank:
            best, rank = i, ranks[i]
    return best


def first_best(items: Iterable[K], value: Mapping[K, float]) -> K:
    """`max(items, key=value)` with near-equals tied: the first item (in the iteration's
    order) whose value is within TOL of the best."""
    listed = list(items)
    return listed[argmax_first([value[x] for x in listed])]


def ranked(
    values: Sequence[float], ranks: Sequence[float] | None = None, *, lowest: bool = False
) -> list[int]:
    """The indices of `values` best first (`lowest`: lowest first), near-equals tied: each
    group of the values within `scaled` of the group's first (the best, or the lowest, of
    those left) is in the order of `ranks` (lowest rank first), else in board order. The
    first index is `argmax_first(values, ranks)` (best first)."""
    sign = 1.0 if lowest else -1.0
    order = sorted(range(len(values)), key=lambda j: sign * values[j])
    out: list[int] = []
    start = 0
    while start < len(order):
        head = values[order[start]]
        stop = start + 1
        if lowest:
            cut = head + scaled(head)
            while stop < len(order) and values[order[stop]] <= cut:
                stop += 1
        else:
            cut = head - scaled(head)
            while stop < len(order) and values[order[stop]] >= cut:
                stop += 1
        group = order[start:stop]
        out += sorted(group) if ranks is None else sorted(group, key=lambda j: ranks[j])
        start = stop
    return out


def ranked_items(items: Iterable[K], value: Mapping[K, float], *, lowest: bool = False) -> list[K]:
    """`ranked` on the items' values: best first (`lowest`: lowest first), near-equals in
    the order the items are listed (`first_best`'s pick first)."""
    listed = list(items)
    return [listed[i] for i in ranked([value[x] for x in listed], lowest=lowest)]


def tie_groups(values: Sequence[float], floor: float, band: float) -> list[list[int]]:
    """The indices whose value is `above` floor, best first, in groups: each group the
    values `at_least` its best minus `band` (band 0: its near-equals alone), in board
    order. Mathematically equal values share a group on every machine."""
    order = sorted((j for j, v in enumerate(values) if v > floor + TOL), key=lambda j: -values[j])
    groups: list[list[int]] = []
    start = 0
    while start < len(order):
        cut = values[order[start]] - band - TOL
        stop = start + 1
        while stop < len(order) and values[order[stop]] >= cut:
            stop += 1
        groups.append(sorted(order[start:stop]))
        start = stop
    return groups


__all__ = [
    "TIE_SEED",
    "TOL",
    "above",
    "argmax_first",
    "at_least",
    "at_least_array",
    "at_most",
    "below",
    "first_best",
    "ranked",
    "ranked_items",
    "scaled",
    "tie_groups",
    "tie_order",
    "tie_ranks",
]
