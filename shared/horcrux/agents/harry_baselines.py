"""Harry's baselines: `naive` (a short narrative memory: +1/-1 per signal), `oracle`, and
`seed-heuristic`: the seed heuristic's map and rule (attack the top location when the
map's entropy is below 1 bit, else search the top location; 10% of turns search a random
non-top location instead)."""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from horcrux.agents.base import HARRY_BRAINS, BrainOptions, HarryMove, int_param
from horcrux.belief.heuristic import HeuristicBelief
from horcrux.belief.ties import below
from horcrux.decisions import DecisionRecord, Source
from horcrux.errors import HorcruxError
from horcrux.models import Attack, GameState, Observation, Search
from horcrux.rules import RuleSet
from horcrux.views import HarryView


def recent_observations(view: HarryView, window: int) -> list[Observation]:
    """The last `window` things Harry learned, oldest first (Ron's use counts as two)."""
    flat = [obs for record in view.history for obs in record.observations]
    return flat[-window:] if window > 0 else []


class NaiveHarry:
    """Remembers his last W events and keeps a +1/-1 tally per location.

    A positive adds 1, a negative takes 1, an attack there resets it to 0 (a Dumbledore
    reveal sets 2 for a Horcrux, 0 otherwise). He attacks the best location at net >= 2,
    searches it again at net 1, and otherwise searches a location his memory does not
    mention (uniformly). Ties go to the location mentioned most recently.
    """

    name = "naive"

    def __init__(self, window: int = 8) -> None:
        self.window = window

    def tally(self, view: HarryView) -> dict[str, int]:
        """Net score per remembered location, in order of last mention."""
        net: dict[str, int] = {}
        for obs in recent_observations(view, self.window):
            before = net.pop(obs.location, 0)  # re-insert: the last mentioned goes last
            net[obs.location] = _tally_step(before, obs)
        return net

    def decide(self, view: HarryView, rng: random.Random) -> HarryMove:
        net = self.tally(view)
        if net:
            # max() keeps the first of equals: scan newest first so ties go to the freshest
            best = max(reversed(list(net)), key=lambda loc: net[loc])
            if net[best] >= 2 and view.attacks_left > 0:
                return Attack(location=best)
            if net[best] == 1:
                return Search(location=best)
        unmentioned = [loc for loc in view.rules.locations if loc not in net]
        return Search(location=rng.choice(unmentioned or list(view.rules.locations)))


def _tally_step(before: int, obs: Observation) -> int:
    if obs.kind == "search":
        return before + (1 if obs.outcome == "positive" else -1)
    if obs.kind == "reveal":
        return 2 if obs.outcome == "horcrux" else 0
    return 0  # an attack resets the location


@HARRY_BRAINS.register("naive", description="last-W-events tally (default W=8)")
def _naive(options: BrainOptions) -> NaiveHarry:
    return NaiveHarry(int_param(options, 8, "naive's memory window"))


class OracleHarry:
    """Knows the true positions and attacks them: the evaluation's upper bound only."""

    name = "oracle"

    def __init__(self, truth: Callable[[], GameState]) -> None:
        self._truth = truth

    def decide(self, view: HarryView, rng: random.Random) -> HarryMove:
        return Attack(location=self._truth().horcruxes[0])


@HARRY_BRAINS.register(
    "oracle", description="reads the truth (evaluation only)", seat_allowed=False
)
def _oracle(options: BrainOptions) -> OracleHarry:
    if options.truth is None:
        raise HorcruxError("the oracle reads the true state and is for simulation only")
    return OracleHarry(options.truth)


class SeedHeuristicHarry:
    """The seed heuristic's rule on its map: attack the top when H < 1 bit, else search it."""

    name = "seed-heuristic"
    EXPLORE = 0.10
    ATTACK_BELOW_BITS = 1.0

    def __init__(self, rules: RuleSet) -> None:
        self.rules = rules
        self.belief = HeuristicBelief(rules)
        self._turn = 0
        self.decisions: list[DecisionRecord] = []
        self.counts: Counter[str] = Counter()

    def decide(self, view: HarryView, rng: random.Random) -> HarryMove:
        start = time.perf_counter()
        for record in view.history:
            if record.turn > self._turn:
                self.belief.update(record)
                self._turn = record.turn
        ranked = self.belief.top(len(self.rules.locations))
        top = ranked[0][0]
        source: Source = "heuristic"
        move: HarryMove
        if rng.random() < self.EXPLORE:
            move, kind, source = Search(location=rng.choice(ranked[1:])[0]), "search", "explore"
        elif below(self.belief.entropy(), self.ATTACK_BELOW_BITS) and view.attacks_left > 0:
            move, kind = Attack(location=top), "attack"
        else:
            move, kind = Search(location=top), "search"
        self.counts[kind if source != "explore" else "explore"] += 1
        self.decisions.append(
            DecisionRecord(
                turn=view.turn,
                tier="zero",
                source=source,
                latency_ms=(time.perf_counter() - start) * 1000.0,
            )
        )
        return move

    def stats(self) -> dict[str, Any]:
        return {"decisions": len(self.decisions), "actions": dict(sorted(self.counts.items()))}


@HARRY_BRAINS.register(
    "seed-heuristic", description="the seed heuristic's belief map and rule, as first specified"
)
def _seed_heuristic(options: BrainOptions) -> SeedHeuristicHarry:
    return SeedHeuristicHarry(options.rules)


__all__ = ["NaiveHarry", "OracleHarry", "Search", "SeedHeuristicHarry", "recent_observations"]
