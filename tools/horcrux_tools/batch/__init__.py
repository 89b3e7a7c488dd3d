"""One engine for every batch of games in the tools (`horcrux simulate`, `evaluate`,
`evaluate --family`, `season --family`, `season --ablation`, the real-model experiment).

A job is a list of independent, keyed tasks and a module-level function that plays one;
an `Engine` runs them and streams each result back as it finishes. Two back ends behind
the same scheduler (`engine.Engine.run`): `LocalEngine`, a process pool on this machine
(the default, no extra install), and `RayEngine`, Ray started on this machine or joined to
a running cluster by address (the `[ray]` extra; `ray` is imported lazily, in `ray_engine`
only). A task's result depends only on its arguments: callers place results by key, never
by completion order, so every back end and every number of workers gives the same report.
"""

from horcrux_tools.batch.command import make_engine
from horcrux_tools.batch.engine import (
    BatchFailed,
    Chunker,
    Engine,
    Job,
    LocalEngine,
    Outcome,
    RayMissing,
)
from horcrux_tools.batch.log import ResultLog
from horcrux_tools.batch.progress import Progress

__all__ = [
    "BatchFailed",
    "Chunker",
    "Engine",
    "Job",
    "LocalEngine",
    "Outcome",
    "Progress",
    "RayMissing",
    "ResultLog",
    "make_engine",
]
