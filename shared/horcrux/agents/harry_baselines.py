"""Harry's baselines: `naive` (a short narrative memory: +1/-1 per signal) and `oracle`."""

from __future__ import annotations

import random
from collections.abc import Callable

from horcrux.agents.base import HARRY_BRAINS, BrainOptions, HarryMove, int_param
from horcrux.errors import HorcruxError
from horcrux.models import Attack, GameState, Observation, Search
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


__all__ = ["NaiveHarry", "OracleHarry", "Search", "recent_observations"]
