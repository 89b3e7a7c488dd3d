"""Which AI Harrys read cross-game memory: memory is written, and the operator routes
reach, only for these (docs/ECHO.md)."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING

from horcrux.agents.contract import MemoryReader

if TYPE_CHECKING:
    from horcrux.agents.planner import PlannerHarry


def memory_planner(brain: object) -> PlannerHarry | None:
    """The planner cross-game memory plays through: a `MemoryReader`'s own answer (the
    planner, or the gated brain's, in the default mode), else None."""
    return brain.memory_planner() if isinstance(brain, MemoryReader) else None


@lru_cache(maxsize=256)
def reads_memory(agent: str, rules: str = "classic") -> bool:
    """Whether the AI Harry `agent` (a brain spec, as seated) reads cross-game memory at
    its start-up: a `planner` or `gated` in the default mode (`memory_planner`)."""
    from horcrux.agents import HARRY_BRAINS
    from horcrux.errors import HorcruxError
    from horcrux.rules import PRESETS

    preset = PRESETS.get(rules, PRESETS["classic"])
    try:
        brain = HARRY_BRAINS.create(agent, preset, for_seat=True, settings={})
    except (HorcruxError, ValueError):  # an unknown brain, a bad parameter, a brain needing a key
        return False
    return memory_planner(brain) is not None


__all__ = ["memory_planner", "reads_memory"]
