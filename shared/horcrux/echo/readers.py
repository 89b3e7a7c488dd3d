"""Which AI Harrys read cross-game memory: memory is written, and the operator routes
reach, only for these (docs/ECHO.md)."""

from __future__ import annotations

from functools import lru_cache
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from horcrux.agents.planner import PlannerHarry


def memory_planner(brain: Any) -> PlannerHarry | None:
    """The planner whose adversary models cross-game memory sets (default mode only)."""
    from horcrux.agents.gated import GatedHarry
    from horcrux.agents.planner import PlannerHarry
    from horcrux.belief.bayes import DEFAULT_MODE

    planner = brain.planner if isinstance(brain, GatedHarry) else brain
    if isinstance(planner, PlannerHarry) and type(planner) is PlannerHarry:
        return planner if planner.mode == DEFAULT_MODE else None
    return None


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
