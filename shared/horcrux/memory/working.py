"""The L1 context provider of the LLM brains: the tier's rendering of a planner's map."""

from __future__ import annotations

from typing import Protocol

from horcrux.belief.base import BeliefMap
from horcrux.decisions import Tier
from horcrux.memory.context import render_tier
from horcrux.views import HarryView


class SyncedBelief(Protocol):
    """What the provider needs of a planner (`agents.planner.PlannerHarry`, a layer above):
    its Bayes map, and a way to bring that map up to date from a view."""

    @property
    def belief(self) -> BeliefMap: ...

    def sync(self, view: HarryView) -> None: ...


class WorkingMemory:
    """A context provider: the tier's L1 rendering of a planner's (synced) Bayes map.

    The map is the planner's own, brought up to date from the view before rendering, so
    the LLM and its fallback always reason from the same Layer 2 state.
    """

    def __init__(
        self, planner: SyncedBelief, tier: Tier = "compressed", memory_line: str | None = None
    ) -> None:
        self.planner = planner
        self.tier: Tier = tier
        self.memory_line = memory_line

    def __call__(self, view: HarryView) -> str:
        self.planner.sync(view)
        return render_tier(self.tier, view, self.planner.belief, memory_line=self.memory_line)


__all__ = ["SyncedBelief", "WorkingMemory"]
