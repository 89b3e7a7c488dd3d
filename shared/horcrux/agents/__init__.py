"""Seat brains. The built-in brains register on a registry's first lookup (see `base`)."""

from horcrux.agents.base import (
    BUILTIN_MODULES,
    HARRY_BRAINS,
    VOLDEMORT_BRAINS,
    BrainOptions,
    HarryBrain,
    HarryMove,
    Registry,
    VoldemortBrain,
    VoldemortMove,
    load_builtin_brains,
)
from horcrux.lazy import lazy_attributes

__getattr__ = lazy_attributes(__name__, {m.rsplit(".", 1)[1]: m for m in BUILTIN_MODULES})
"""`horcrux.agents.planner` and the other brain modules, imported on first use."""


__all__ = [
    "BUILTIN_MODULES",
    "HARRY_BRAINS",
    "VOLDEMORT_BRAINS",
    "BrainOptions",
    "HarryBrain",
    "HarryMove",
    "Registry",
    "VoldemortBrain",
    "VoldemortMove",
    "load_builtin_brains",
]
