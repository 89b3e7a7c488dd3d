"""What the belief-reacting adversary models read from Harry's map: levelled and banded
destinations, the groups their decoys go to (`BeliefPlan`), the planner's tie order,
and Harry's one-turn race against a copy of his code (`race_attack`)."""

from __future__ import annotations

import numpy as np

from horcrux.belief import ties
from horcrux.belief.catalogue import (
    LOW_BAND,
    TOP_BAND,
    AdversaryModel,
    Destination,
)
from horcrux.belief.tables import (
    MAX,
    MIN,
    SUM,
    FloatArray,
    IntArray,
    Tables,
    array_sum,
    scattered_share,
)


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


def exact_low_rows(
    tab: Tables, harry: FloatArray, go: IntArray, free: IntArray, band: float, full: bool
) -> FloatArray:
    """0/1 as floats: the destinations `BeliefPlan._low` gives the sets go on the map
    `harry` (the free locations within `band` of each set's lowest free one), on their
    free locations `free` ((len(go), n-k)), or with `full` on every location (0 on the
    set's own). The same minimum and comparisons as `_low`'s, so divided by their row
    count the same doubles."""
    # each set's minimum over its free locations, read through the transposed index
    # (a reduction across rows costs numpy far less than along a short axis)
    edge = MIN(harry.take(free.T), 0) + band
    if full:
        low = harry[None, :] <= edge[:, None]
        low &= ~tab.member.take(go, axis=0)
        out: FloatArray = low.astype(np.float64)
    else:
        out = (harry.take(free) <= edge[:, None]).astype(np.float64)
    return out


class BeliefPlan:
    """What a belief-reacting adversary reads from one of Harry's maps, per Horcrux set:
    the top occupancy among its locations (what a trigger reads) and which of them holds
    it; for the sets that move, the rows they move to and the `low` destinations (the
    free locations within LOW_BAND of the lowest). Per-set tables are built once per map
    (when a model first needs them) and read with `take` (numpy's fancy indexing costs
    several times more at these sizes): the same numbers as set by set."""

    def __init__(self, tab: Tables, harry: FloatArray, peak: float | None = None) -> None:
        self.tab = tab
        self.harry = harry
        if peak is None:
            peak = float(MAX(harry, None))
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
            # the first of (near-)equals (the lowest location), as its row of `swap_free`
            row = tab.q_rows[-1]
            for q in range(len(values) - 2, -1, -1):
                row = np.where(ties.at_least_array(values[q], top), tab.q_rows[q], row)
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
            above = [j for j, v in enumerate(self._values) if ties.at_least(v, model.threshold)]
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
            # the k+1 lowest, near-equals in board order (`ties.ranked`, lowest first)
            lowest = np.array(ties.ranked(self.harry.tolist(), lowest=True)[: tab.k + 1])
            edge = self.harry.take(lowest) + (LOW_BAND + ties.TOL)  # the band's edge included
            self._band = (self.harry[None, :] <= edge[:, None]).astype(np.float64)
            # the first False of member[:, lowest], as k vector ops from the last one (a
            # reduction along that short axis costs numpy more)
            lows = lowest.tolist()
            first: IntArray = np.full(len(tab.sets), tab.k, dtype=np.intp)
            for p in range(tab.k - 1, -1, -1):
                first = np.where(tab.member_t[lows[p]], first, p)
            self._first = first

    def exact_low(self, go: IntArray, band: float, cols: IntArray | None = None) -> FloatArray:
        """`exact_low_rows` on this map: on the free locations `cols` ((len(go), n-k)), or on
        every location when None."""
        free = self.tab.free_cols.take(go, axis=0) if cols is None else cols
        return exact_low_rows(self.tab, self.harry, go, free, band, cols is None)

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
        low /= SUM(low, 1, keepdims=True)
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
            out += scattered_share(tab.n, tab.k, scatter).take(go, axis=0)
        return out

    def _low(self, go: IntArray, band: float) -> FloatArray:
        """`low` within `band` (EXACT_BAND) of each set's lowest free location: an exact
        model's destinations, (len(go), n)."""
        low = self.exact_low(go, band)
        low /= SUM(low, 1, keepdims=True)
        return low


def top_groups(seen: FloatArray, floor: float, band: float = TOP_BAND) -> list[list[int]]:
    """The locations Harry's map rates above `floor`, best first (board order on ties),
    in groups within `band` (TOP_BAND; 0 for an exact model) of each group's best: where
    a `belief` decoy goes."""
    # in Python floats (a handful of values); near-equals tied (`ties`: the same groups
    # on every machine), each group in board order
    return ties.tie_groups(seen.tolist(), floor, band)


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
        top = ties.argmax_first(m.tolist())
        if forced or ties.at_least(float(m[top]), cost):
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
        pi[ties.argmax_first(m.tolist())] = 1.0
    return pi
