"""Seat brains. Importing this package registers every built-in brain."""

from horcrux.agents import adversaries, gated, harry_baselines, llm, planner, voldemort
from horcrux.agents.base import (
    HARRY_BRAINS,
    VOLDEMORT_BRAINS,
    BrainOptions,
    HarryBrain,
    HarryMove,
    Registry,
    VoldemortBrain,
    VoldemortMove,
)

__all__ = [
    "HARRY_BRAINS",
    "VOLDEMORT_BRAINS",
    "BrainOptions",
    "HarryBrain",
    "HarryMove",
    "Registry",
    "VoldemortBrain",
    "VoldemortMove",
    "adversaries",
    "gated",
    "harry_baselines",
    "llm",
    "planner",
    "voldemort",
]
