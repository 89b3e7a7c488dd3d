"""ECHO: memory across games, per AI Harry and per opponent (docs/ECHO.md).

Experiences are extracted from each game's `GameSummary` at its end and folded straight
into beliefs (Beta posteriors with validity intervals); each game's Bayes factors into
the style posterior over the planner's adversary models; decayed, capped, recalled (BM25
+ hashing vectors + recency), and used: the style and the beliefs set the Bayes filter's
adversary models, corrections and beliefs give the L1 context one memory line."""

from horcrux.echo.config import EchoConfig, default_config, load_config
from horcrux.echo.corrections import add_correction
from horcrux.echo.decay import reinforce, retention
from horcrux.echo.extract import extract
from horcrux.echo.lifecycle import Consolidation, check, consolidate, rebuild
from horcrux.echo.model import (
    MEMORY_SCHEMA,
    Belief,
    Correction,
    EchoMemory,
    Experience,
    Pattern,
    Skill,
)
from horcrux.echo.recall import mergeable, recall
from horcrux.echo.use import adversary_models, learned_rates, memory_line

__all__ = [
    "MEMORY_SCHEMA",
    "Belief",
    "Consolidation",
    "Correction",
    "EchoConfig",
    "EchoMemory",
    "Experience",
    "Pattern",
    "Skill",
    "add_correction",
    "adversary_models",
    "check",
    "consolidate",
    "default_config",
    "extract",
    "learned_rates",
    "load_config",
    "memory_line",
    "mergeable",
    "rebuild",
    "recall",
    "reinforce",
    "retention",
]
