"""The Ray back end of the batch engine: the only module of the tools that imports `ray`
(lazily, when a `RayEngine` opens), never the runtime (`horcrux`).

Without `address` it starts Ray on this machine (`ray.init()`, `workers` CPUs, no
dashboard, bound to 127.0.0.1: `RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0` unless set, since
Ray 2.60 otherwise binds a single-node Ray to the machine's network address) and shuts it
down after the batch; with `address` (`HOST:PORT` of a running head, or `auto`) it joins
that cluster and uses every CPU it has. A chunk is one Ray task (`run_chunk`, one CPU,
spread over the nodes).
"""

from __future__ import annotations

import contextlib
import os
from typing import Any

from horcrux_tools.batch.engine import Engine, Handle, Job, Outcome, RayMissing, run_chunk

OBJECT_STORE_BYTES = 100 * 1024 * 1024
"""A local Ray's object store: results are small, so 100 MiB (Ray's minimum is 75 MiB)."""


def import_ray() -> Any:
    """`ray`, or `RayMissing` (exit 2, naming the install) when it is not installed."""
    try:
        import ray
    except ImportError as exc:
        raise RayMissing() from exc
    return ray


class RayEngine(Engine):
    """Chunks as Ray tasks, on a local Ray or a cluster joined by address."""

    name = "ray"
    overhead_s = 0.005
    """Measured per task on one loaded 2-core machine (benchmarks/bench_batch.py): 2-3 ms;
    chunks are sized for 5 ms, a margin for busier machines and clusters."""

    def __init__(self, *, workers: int | None = None, address: str | None = None) -> None:
        super().__init__(workers or os.cpu_count() or 1)
        self.address = address
        self._requested = workers
        self._ray: Any = None
        self._remote: Any = None
        self._started = False
        self._refs: dict[Any, Handle] = {}
        self._count = 0

    def describe(self) -> str:
        where = f"cluster {self.address}" if self.address else "local Ray"
        return f"ray ({where}), {self.workers} worker(s){self.tally.nodes_line()}"

    def _open(self, job: Job) -> None:
        if not self.address:  # read when ray is first imported: set before it
            os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        ray = self._ray = import_ray()
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {
                "include_dashboard": False,
                "logging_level": "WARNING",
                "configure_logging": True,
            }
            if self.address:
                kwargs["address"] = self.address
            else:  # a new Ray of our own, even where `ray start` runs one on this machine
                kwargs["address"] = "local"
                kwargs["num_cpus"] = self.workers
                kwargs["object_store_memory"] = OBJECT_STORE_BYTES
            ray.init(**kwargs)
            self._started = True
        cpus = int(ray.cluster_resources().get("CPU", 1))
        self.workers = min(self._requested, cpus) if self._requested else cpus
        if self._remote is None:
            # SPREAD: chunks go to every node, not first to fill the driver's (games share
            # no data, so locality is worth nothing; short tasks otherwise stay on one
            # leased worker)
            remote = ray.remote(num_cpus=1, max_retries=2, scheduling_strategy="SPREAD")
            self._remote = remote(run_chunk)
        self._refs = {}

    def _submit(self, job: Job, items: list[tuple[str, Any]]) -> Handle:
        self._count += 1
        ref = self._remote.remote(job.fn, job.initializer, job.initargs, items)
        self._refs[ref] = self._count
        return self._count

    def _next(self) -> tuple[Handle, list[Outcome] | BaseException]:
        ray = self._ray
        (ref,), _ = ray.wait(list(self._refs), num_returns=1)
        handle = self._refs.pop(ref)
        try:
            result: list[Outcome] = ray.get(ref)
        except ray.exceptions.RayError as exc:  # a worker or node lost: retried
            return handle, exc
        return handle, result

    def _close(self, *, cancel: bool) -> None:
        ray = self._ray
        if ray is None:
            return
        if cancel:
            for ref in list(self._refs):
                with contextlib.suppress(Exception):  # already finished or gone
                    ray.cancel(ref, force=True)
        self._refs = {}
        self._remote = None
        if self._started:
            ray.shutdown()
            self._started = False


__all__ = ["OBJECT_STORE_BYTES", "RayEngine", "import_ray"]
