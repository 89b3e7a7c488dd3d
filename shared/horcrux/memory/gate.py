"""The entropy gate: how much working memory one of Harry's decisions deserves.

The measure
-----------
Let `occ[l]` be the map's occupancy, P(location l holds a real Horcrux), which sums to
k, the number of Horcruxes left, over n locations. Normalise it, `p[l] = occ[l] / sum(occ)`.
With k Horcruxes left no `p[l]` can exceed 1/k, so every entropy of `p` is at least
log2(k): the raw entropy of a map that is sure of all three Horcruxes is still
log2(3) = 1.58 bits, above a 1-bit gate. The gate therefore measures the
*excess* over log2(k), which reads 0 when Harry is sure, whatever k is. Two orders:

`min-entropy` (the default), the excess min-entropy (Renyi order infinity):

    E_min = H_inf(p) - log2(k) = -log2(k * max_l p[l]) = -log2(top occupancy)

`shannon`, the excess Shannon entropy:

    E_sh = H(p) - log2(k),   H(p) = -sum_l p[l] log2 p[l]   (0 log 0 = 0)

Both are clipped below at 0 (a map breaking the cap occ <= 1), are 0 when k = 0 or the
map is all zero, and lie in [0, log2(n/k)] for a valid map: 2.32 bits for k = 3 of 15
(a uniform map), 2.91 for k = 2, 3.91 for k = 1 (where E_sh is the map's plain entropy).
Always E_min <= E_sh (min-entropy never exceeds Shannon entropy).

Why `min-entropy` by default: the zero tier acts without thinking, and the act is to
attack the most likely location, which hits a real Horcrux with probability
`2^-E_min`. So E_min < 1 bit means exactly "the best attack succeeds more often than
not". E_sh measures the whole map instead, and stays high while Harry is sure of one
Horcrux but not of the other two: over seeded planner games with the Bayes map it put
under 1% of decisions in the zero tier, against about 15% for E_min. E_sh still bounds the
top occupancy (`q >= 2^-E_sh`, since every p[l] <= q/k gives H >= log2(k/q)); see
`top_occupancy_floor`.

The tiers
---------
`zero` (no LLM call; the caller's heuristic or planner acts) when E < `low`,
`compressed` (the ~55-token prompt) when `low` <= E < `high`, `full` (200-500 tokens)
when E >= `high`. The `narrative` tier (the whole turn log) is never chosen by the
measure; `force` pins every decision to one tier (for ablations). Defaults: low = 1.0 bit
(the top attack succeeds with p > 1/2), high = 2.0 bits (top occupancy below 1/4; not
the 2.5 first specified: with k = 3 neither measure can exceed 2.32, so 2.5
would make the full tier unreachable until a Horcrux falls), epsilon = 0.10.

Exploration: with probability epsilon a zero-tier decision explores instead: the caller
picks a location other than the top one (`exploration_target` draws one uniformly).
`route` always draws exactly one number from the caller's RNG, whatever the tier, so a
seeded game's stream of draws does not depend on the gate's thresholds.

Every setting is a field of `GateConfig` (defined with the other settings in
`horcrux.settings`, re-exported here); the Harry turn function reads HORCRUX_GATE_LOW,
HORCRUX_GATE_HIGH, HORCRUX_GATE_EPSILON, HORCRUX_GATE_MEASURE (`min-entropy` | `shannon`)
and HORCRUX_GATE_FORCE (a tier) once, at cold start, and passes the gate to its brains.
"""

from __future__ import annotations

import math
import random
import statistics
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict

from horcrux.belief import ties
from horcrux.decisions import DecisionRecord, Tier
from horcrux.settings import ENV_PREFIX, MEASURES, TIERS, GateConfig, Measure  # re-exported


def entropy_bits(weights: Iterable[float]) -> float:
    """Shannon entropy in bits of non-negative weights after normalising them."""
    values = [w for w in weights if w > 0.0]
    total = sum(values)
    if total <= 0.0:
        return 0.0
    return max(0.0, -sum((w / total) * math.log2(w / total) for w in values))


def gate_measure(
    occupancy: Mapping[str, float], k_left: int, measure: Measure = "min-entropy"
) -> float:
    """The gate's measure in bits: the excess entropy of the normalised map over log2(k).

    `min-entropy`: -log2(k_left * max p); `shannon`: H(p) - log2(k_left), with
    p = occupancy / sum(occupancy). Clipped at 0; 0 when k_left <= 0 or the map is all
    zero. See the module docstring.
    """
    if k_left <= 0:
        return 0.0
    values = [v for v in occupancy.values() if v > 0.0]
    total = sum(values)
    if total <= 0.0:
        return 0.0
    if measure == "min-entropy":
        return max(0.0, -math.log2(k_left * max(values) / total))
    if measure == "shannon":
        return max(0.0, entropy_bits(values) - math.log2(k_left))
    raise ValueError(f"unknown gate measure {measure!r}; known: {', '.join(MEASURES)}")


def top_occupancy_floor(measure: float) -> float:
    """The least the top occupancy can be for a valid map at this measure: 2^-E.

    Exact for `min-entropy` (the top occupancy *is* 2^-E_min), a lower bound for `shannon`.
    """
    return float(2.0 ** (-measure))


class GateDecision(BaseModel):
    """What the gate said about one decision."""

    model_config = ConfigDict(frozen=True)

    measure: float
    tier: Tier
    explore: bool


class EntropyGate:
    """Routes each decision to a memory tier by the excess entropy of Harry's map."""

    config: GateConfig

    def __init__(self, config: GateConfig | None = None) -> None:
        self.config = config if config is not None else GateConfig()

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: Any) -> EntropyGate:
        return cls(GateConfig.from_env(env, **overrides))

    def measure(self, occupancy: Mapping[str, float], k_left: int) -> float:
        """`gate_measure` with this gate's configured order."""
        return gate_measure(occupancy, k_left, self.config.measure)

    def tier(self, measure: float) -> Tier:
        """`zero` below `low`, `compressed` below `high`, else `full` (or the forced tier)."""
        if self.config.force is not None:
            return self.config.force
        if measure < self.config.low:
            return "zero"
        if measure < self.config.high:
            return "compressed"
        return "full"

    def explore(self, rng: random.Random) -> bool:
        """One epsilon-greedy draw from the caller's RNG: True with probability epsilon."""
        return rng.random() < self.config.epsilon

    def route(
        self, occupancy: Mapping[str, float], k_left: int, rng: random.Random
    ) -> GateDecision:
        """Measure, tier and exploration of one decision (one RNG draw, always)."""
        measure = self.measure(occupancy, k_left)
        tier = self.tier(measure)
        drawn = self.explore(rng)
        return GateDecision(measure=measure, tier=tier, explore=drawn and tier == "zero")


def exploration_target(occupancy: Mapping[str, float], rng: random.Random) -> str:
    """A location drawn uniformly among all but the most likely one (the first listed of
    near-equals: `ties.first_best`)."""
    if not occupancy:
        raise ValueError("exploration needs a non-empty map")
    locations = list(occupancy)
    top = ties.first_best(locations, occupancy)
    others = [loc for loc in locations if loc != top]
    return rng.choice(others) if others else top


# ---------------------------------------------------------------- accounting
def percentile(values: Iterable[float], q: float) -> float | None:
    """The nearest-rank q-th percentile (0 < q <= 100), None for no values."""
    ordered = sorted(values)
    if not ordered:
        return None
    rank = max(1, math.ceil(q / 100.0 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


def _median(values: list[float]) -> float | None:
    return float(statistics.median(values)) if values else None


class DecisionLog:
    """Collects a brain's `DecisionRecord`s and summarises them as a JSON-able dict."""

    def __init__(self, records: Iterable[DecisionRecord] = ()) -> None:
        self._records: list[DecisionRecord] = list(records)

    def add(self, record: DecisionRecord) -> None:
        self._records.append(record)

    def extend(self, records: Iterable[DecisionRecord]) -> None:
        self._records.extend(records)

    @property
    def records(self) -> tuple[DecisionRecord, ...]:
        return tuple(self._records)

    def __len__(self) -> int:
        return len(self._records)

    def summary(self) -> dict[str, Any]:
        """Per-tier shares and context tokens, totals of tokens and cost, sources.

        `context_tokens` covers every decision (a zero-tier decision counts 0);
        `context_tokens_sent` only those that sent a prompt. Percentiles are nearest-rank;
        statistics of no values are None.
        """
        records = self._records
        n = len(records)
        per_tier: dict[str, dict[str, Any]] = {}
        for tier in TIERS:
            tokens = [float(r.context_tokens) for r in records if r.tier == tier]
            per_tier[tier] = {
                "count": len(tokens),
                "share": len(tokens) / n if n else 0.0,
                "context_tokens_median": _median(tokens),
                "context_tokens_p95": percentile(tokens, 95),
            }
        every = [float(r.context_tokens) for r in records]
        sent = [float(r.context_tokens) for r in records if r.tier != "zero"]
        latency = [r.latency_ms for r in records]
        tokens_in = sum(r.tokens_in for r in records)
        tokens_out = sum(r.tokens_out for r in records)
        return {
            "decisions": n,
            "tiers": per_tier,
            "context_tokens": {
                "median": _median(every),
                "p95": percentile(every, 95),
                "max": max(every) if every else None,
            },
            "context_tokens_sent": {
                "median": _median(sent),
                "p95": percentile(sent, 95),
                "max": max(sent) if sent else None,
            },
            "tokens": {"in": tokens_in, "out": tokens_out, "total": tokens_in + tokens_out},
            "cost_usd": round(sum(r.cost_usd for r in records), 6),
            "latency_ms": {"median": _median(latency), "p95": percentile(latency, 95)},
            "sources": dict(sorted(Counter(r.source for r in records).items())),
            "fallbacks": dict(
                sorted(Counter(r.fallback_reason for r in records if r.fallback_reason).items())
            ),
        }


def format_summary(summary: Mapping[str, Any]) -> str:
    """Two lines for a CLI: per-tier shares, then median / p95 context tokens per tier."""

    def num(value: float | None) -> str:
        return "-" if value is None else f"{value:g}"

    tiers: Mapping[str, Mapping[str, Any]] = summary["tiers"]
    shares = ", ".join(f"{t} {tiers[t]['share']:.0%}" for t in TIERS if tiers[t]["count"])
    tokens = ", ".join(
        f"{t} {num(tiers[t]['context_tokens_median'])}/{num(tiers[t]['context_tokens_p95'])}"
        for t in TIERS
        if tiers[t]["count"]
    )
    ctx = summary["context_tokens"]
    return (
        f"decisions {summary['decisions']}: {shares or 'none'}\n"
        f"context tokens median/p95: all {num(ctx['median'])}/{num(ctx['p95'])}"
        + (f"; {tokens}" if tokens else "")
    )


__all__ = [
    "ENV_PREFIX",
    "MEASURES",
    "TIERS",
    "DecisionLog",
    "EntropyGate",
    "GateConfig",
    "GateDecision",
    "Measure",
    "entropy_bits",
    "exploration_target",
    "format_summary",
    "gate_measure",
    "percentile",
    "top_occupancy_floor",
]
