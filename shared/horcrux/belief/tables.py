"""The filter's arrays: their types, the numpy ufuncs it calls directly, and the
precomputed index tables over the Horcrux sets (which set holds which location, where
mass goes when a Horcrux moves), cached per (N, k)."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from itertools import combinations
from typing import Any

import numpy as np
from numpy.typing import NDArray

FloatArray = NDArray[np.float64]
Maps = dict[str, FloatArray]  # Harry's maps a belief-reacting adversary may read, by `reads`
IntArray = NDArray[np.intp]
BoolArray = NDArray[np.bool_]

TINY = 1e-300
EVIDENCE_FLOOR = 1e-12
# The ufuncs behind `a.clip(lo, hi)`, `a.sum(axis)` and `a.max()` (numpy's methods call
# them through a Python wrapper, whose overhead is a fair share of a call at these sizes):
# the same operation, the same doubles.
CLIP: Any = np.clip if not hasattr(np, "_core") else np._core.umath.clip
SUM = np.add.reduce
MAX = np.maximum.reduce
MIN = np.minimum.reduce
ANY = np.logical_or.reduce


# ---------------------------------------------------------------- precomputed tables
@dataclass(frozen=True)
class Tables:
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
def tables_of(n: int, k: int) -> Tables:
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
    return Tables(
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


@lru_cache(maxsize=64)
def level_offsets(rows: int, n_sets: int) -> IntArray:
    """(rows, 1, 1): the first flat position of each charge level's sets."""
    out: IntArray = (np.arange(rows) * n_sets)[:, None, None]
    out.setflags(write=False)
    return out


@lru_cache(maxsize=1024)
def row_positions(rows: int, models: int, sets: int, i: int) -> IntArray:
    """(sets, rows - 1): the flat position of model i's set s at r = 1..rows-1 charges."""
    out: IntArray = np.arange(sets)[:, None] + ((np.arange(1, rows) * models + i) * sets)[None, :]
    out.setflags(write=False)
    return out


@lru_cache(maxsize=1024)
def swap_bins(n: int, k: int, j: int, levels: int) -> IntArray:
    """Flat bins (level, set) where the sets holding j go when j's Horcrux moves to each
    of their free locations, for `levels` charge levels: (levels x len(with_j) x (n-k),)."""
    tab = tables_of(n, k)
    swaps = tab.swap_free.take(tab.with_j_rows[j], axis=0)
    out: IntArray = (swaps + level_offsets(levels, len(tab.sets))).reshape(-1)
    out.setflags(write=False)
    return out


@lru_cache(maxsize=4096)
def move_positions(
    n: int, k: int, rows: int, models: int, j: int, i: int
) -> tuple[IntArray, IntArray]:
    """Flat positions of model i's sets holding j at r >= 1 charges, and of the sets
    without j at r - 1 (a Horcrux moving from j spends a charge)."""
    tab = tables_of(n, k)
    s = len(tab.sets)
    start = (np.arange(rows - 1)[:, None] * models + i) * s  # (r - 1, model i, set 0)
    up: IntArray = (start + models * s + tab.with_j[j][None, :]).reshape(-1)
    down: IntArray = (start + tab.without_j[j][None, :]).reshape(-1)
    up.setflags(write=False)
    down.setflags(write=False)
    return up, down


@lru_cache(maxsize=4096)
def move_rows_of(n: int, k: int, rows: int, models: int, j: int, i: int) -> IntArray:
    """`move_positions`' first array as (sets holding j, rows - 1): w[1:, i, with_j[j]]."""
    out: IntArray = move_positions(n, k, rows, models, j, i)[0].reshape(rows - 1, -1).T
    return out


@lru_cache(maxsize=64)
def row_starts(n: int, count: int) -> IntArray:
    """(count, 1): the first flat position of each row of a (count, n) array."""
    out: IntArray = (np.arange(count) * n)[:, None]
    out.setflags(write=False)
    return out


def charge_sum(w: FloatArray) -> FloatArray:
    """`w.sum(0)`: the weights summed over the charge levels. On a C-contiguous array numpy
    adds the rows of the outer axis one after the other, so row by row additions give the
    same doubles, without the cost of its reduction machinery."""
    rows = w.shape[0]
    if rows > 8 or rows < 2 or not w.flags.c_contiguous:
        out: FloatArray = SUM(w, 0)
        return out
    out = w[0] + w[1]
    for r in range(2, rows):
        out += w[r]
    return out


@lru_cache(maxsize=64)
def scattered_share(n: int, k: int, scatter: float) -> FloatArray:
    """scatter x `anywhere` of the sets of size k over n: the uniform share of a `low`
    destination, per set."""
    out: FloatArray = scatter * tables_of(n, k).anywhere
    out.setflags(write=False)
    return out


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
