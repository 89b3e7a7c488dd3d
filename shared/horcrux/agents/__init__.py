"""Seat brains. The built-in brains register on a registry's first lookup (see `base`)."""

from importlib import import_module
from typing import Any

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

_SUBMODULES = frozenset(m.rsplit(".", 1)[1] for m in BUILTIN_MODULES)


def __getattr__(name: str) -> Any:
    """`horcrux.agents.planner` and the other brain modules, imported on first use."""
    if name in _SUBMODULES:
        return import_module(f"horcrux.agents.{name}")
    raise AttributeError(f"module 'horcrux.agents' has no attribute {name!r}")


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
