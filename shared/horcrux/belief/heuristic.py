"""The `seed-heuristic` belief map: the seed heuristic's map, as first specified.

Update rule (the whole of it; docs/MEMORY.md, "The reference this page measures against"):
  * a `positive` multiplies the searched location by 3, a `negative` by 0.1;
  * a `destroyed` sets it to 0;
  * then every location not updated for more than 10 turns is multiplied by 0.7;
  * then the map is renormalised to sum to 1.
The heuristic names no rule for the other outcomes; the project's choices, kept as close
to it as it allows: a wasted attack (`decoy`, "destroyed, but it was a decoy!", or
`empty`) also sets the location to 0 (the heuristic counts the decoy among its
"destroyed" signals), and Dumbledore's reveal counts as a positive (`horcrux`) or a
destroyed (`decoy` / `empty`). Zeroes are permanent, as the heuristic has them.

Why it loses (0.2% against the reference Voldemort, worse calibrated than knowing nothing):
  * x3 / x0.1 is exact Bayes for a sensor with d = 0.93, f = 0.31, not ours (0.80 /
    0.15, whose factors are x5.33 / x0.235): one miss cancels two hits;
  * x0.7 on stale locations is not a motion model: when Harry last looked somewhere says
    nothing about where the Horcruxes are; it drives unvisited and cleared locations to 0
    where relocation should raise them;
  * one map normalised to 1 for k = 3 Horcruxes cannot fall below log2(3) = 1.58 bits
    once all three are found, so "attack when H < 1 bit" fires only when a single
    location dominates, which against a relocating adversary rarely happens in time;
  * it cannot tell a decoy from a Horcrux, nor a relocation from a false positive.

`entropy()` is the entropy in bits of the normalised map (the heuristic's gate quantity).
`occupancy()` is the map scaled to sum to the Horcruxes left, capped at 1 per location
(the excess is spread over the others in proportion, so the Protocol's [0, 1] holds).
"""

from __future__ import annotations

import json
import math
import zlib

from horcrux.belief import ties
from horcrux.belief.base import BeliefPoint
from horcrux.models import HarryRecord, Observation
from horcrux.rules import RuleSet

POSITIVE = 3.0
NEGATIVE = 0.1
STALE_FACTOR = 0.7
STALE_TURNS = 10


class HeuristicBelief:
    """The seed heuristic's multiplicative map over locations (a named baseline, not a filter)."""

    name = "seed-heuristic"

    def __init__(self, rules: RuleSet) -> None:
        self.rules = rules
        n = len(rules.locations)
        self.beliefs: dict[str, float] = dict.fromkeys(rules.locations, 1.0 / n)
        self.last_updated: dict[str, int] = dict.fromkeys(rules.locations, 0)
        self._left = rules.horcruxes
        self._history: list[BeliefPoint] = []

    @property
    def horcruxes_left(self) -> int:
        return self._left

    @property
    def history(self) -> list[BeliefPoint]:
        return self._history

    def update(self, record: HarryRecord) -> None:
        for obs in record.observations:
            self._signal(obs, record.turn)
        turn = record.turn
        for loc in self.beliefs:
            if self.last_updated[loc] < turn - STALE_TURNS:
                self.beliefs[loc] *= STALE_FACTOR
        self._normalise()
        self._history.append(BeliefPoint(turn=turn, entropy=self.entropy(), top=tuple(self.top(3))))

    def _signal(self, obs: Observation, turn: int) -> None:
        loc = obs.location
        if obs.outcome in ("positive", "horcrux"):
            self.beliefs[loc] *= POSITIVE
        elif obs.outcome == "negative":
            self.beliefs[loc] *= NEGATIVE
        else:  # destroyed, decoy, empty
            self.beliefs[loc] = 0.0
            if obs.outcome == "destroyed":
                self._left = max(0, self._left - 1)
        self.last_updated[loc] = turn

    def _normalise(self) -> None:
        total = sum(self.beliefs.values())
        if total <= 0.0:  # everything zeroed: back to uniform (the heuristic does not say)
            n = len(self.beliefs)
            self.beliefs = dict.fromkeys(self.beliefs, 1.0 / n)
            return
        for loc in self.beliefs:
            self.beliefs[loc] /= total

    def normalised(self) -> dict[str, float]:
        return dict(self.beliefs)

    def entropy(self) -> float:
        """Shannon entropy in bits of the normalised map."""
        return -sum(p * math.log2(p) for p in self.beliefs.values() if p > 0.0)

    def occupancy(self) -> dict[str, float]:
        """The map scaled to sum to the Horcruxes left, capped at 1 (water-filling)."""
        k = float(self._left)
        out = dict.fromkeys(self.beliefs, 0.0)
        free = {loc: p for loc, p in self.beliefs.items() if p > 0.0}
        budget = k
        while free and budget > 1e-12:
            total = sum(free.values())
            scale = budget / total
            capped = {loc for loc, p in free.items() if p * scale >= 1.0}
            if not capped:
                for loc, p in free.items():
                    out[loc] = p * scale
                break
            for loc in capped:
                out[loc] = 1.0
                budget -= 1.0
                del free[loc]
        return out

    def top(self, n: int = 3) -> list[tuple[str, float]]:
        best = ties.ranked_items(self.beliefs, self.beliefs)[:n]  # near-equals listed first
        return [(loc, round(self.beliefs[loc], 6)) for loc in best]

    def snapshot(self) -> bytes:
        data = {
            "b": [self.beliefs[loc] for loc in self.rules.locations],
            "u": [self.last_updated[loc] for loc in self.rules.locations],
            "k": self._left,
            "h": [[p.turn, p.entropy, [list(t) for t in p.top]] for p in self._history],
        }
        return zlib.compress(json.dumps(data, separators=(",", ":")).encode(), 9)

    @classmethod
    def restore(cls, rules: RuleSet, data: bytes) -> HeuristicBelief:
        raw = json.loads(zlib.decompress(data))
        belief = cls(rules)
        belief.beliefs = dict(zip(rules.locations, map(float, raw["b"]), strict=True))
        belief.last_updated = dict(zip(rules.locations, map(int, raw["u"]), strict=True))
        belief._left = int(raw["k"])
        belief._history = [
            BeliefPoint(turn=t, entropy=e, top=tuple((str(a), float(b)) for a, b in top))
            for t, e, top in raw["h"]
        ]
        return belief


__all__ = ["NEGATIVE", "POSITIVE", "STALE_FACTOR", "STALE_TURNS", "HeuristicBelief"]
