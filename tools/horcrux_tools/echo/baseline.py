"""The named baseline every memory layer must beat: `counter`, a ten-line tally.

It counts the end-of-game events ECHO extracted for the old hierarchy's three adversary
rates (games with a relocation, relocations that came at once after Harry's positive,
decoys planted where the filter's planting rule expects; not the later `plant_blind`)
over every game so far, and hands the planner the
same three rates through the same mapping as the memory (`use.rate_models`). No
beliefs, style, decay, recall, corrections: what the hierarchy adds over this
is what `horcrux season` measures (its `counter` arm)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from horcrux.store.port import AnyEvent
from horcrux.store.results import GameSummary


@dataclass
class CounterBaseline:
    """Per rate: [successes, trials], cumulative over the scope's games."""

    counts: dict[str, list[int]] = field(
        default_factory=lambda: {"relocates": [0, 0], "immediate": [0, 0], "plant_top": [0, 0]}
    )

    def add(self, summary: GameSummary, events: Sequence[AnyEvent] | None = None) -> None:
        from horcrux.echo.extract import decoy_placements

        c = self.counts
        c["relocates"][0] += bool(summary.relocations)
        c["relocates"][1] += 1
        c["immediate"][0] += sum(r.turns_since_positive == 0 for r in summary.relocations)
        c["immediate"][1] += len(summary.relocations)
        hits = [d.at_rule_top for d in summary.decoys]
        if events and any(h is None for h in hits):
            hits = [p.rule_top for p in decoy_placements(events)]
        c["plant_top"][0] += sum(bool(h) for h in hits if h is not None)
        c["plant_top"][1] += sum(h is not None for h in hits)

    def rates(self) -> dict[str, float | None]:
        return {k: (s / t if t else None) for k, (s, t) in self.counts.items()}


__all__ = ["CounterBaseline"]
