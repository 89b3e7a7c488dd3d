"""The batch engine: one scheduler, two back ends.

`Engine.run(job)` plays a job's tasks and yields an `Outcome` for each as it finishes (in
completion order: callers place results by key). The scheduler is the same for every back
end; a back end only submits a chunk of tasks to a worker and hands back finished chunks:

* **Chunks.** Tasks travel in chunks (`run_chunk`: a list of tasks played one after the
  other in one worker), sized by `Chunker` from the measured seconds of a task, so that a
  back end's fixed cost per submission (about 2 ms for Ray on one machine, less for the
  local pool) stays under 5% of a chunk's work, while the last chunks stay small enough
  to keep every worker busy to the end. Chunking never changes a result: every task is
  played alone on its own seed.
* **Retries.** A task that raises is sent again, at most `Job.retries` times; a chunk lost
  with its worker sends all of its tasks again. A task that still fails is reported by key
  in `BatchFailed` after every other task has finished: never silently dropped.
* **Initializer.** `Job.initializer(*initargs)` runs once in each worker process before
  its first task (the family's holdout split is opened there); it must be idempotent.
* **Ctrl-C.** Local workers ignore SIGINT; on KeyboardInterrupt the scheduler cancels what
  is in flight, terminates the pool (Ray: cancels the tasks and shuts down the Ray it
  started) and re-raises.
"""

from __future__ import annotations

import math
import multiprocessing
import os
import queue
import signal
import statistics
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Collection, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from horcrux.errors import HorcruxError

ENGINES = ("local", "ray")
RAY_INSTALL = "pip install -e 'tools[ray]' (or `make ray`)"


class RayMissing(HorcruxError):
    """`--engine ray` without Ray installed (the CLI exits 2 with this message)."""

    def __init__(self) -> None:
        super().__init__(f"--engine ray needs Ray, which the [ray] extra installs: {RAY_INSTALL}")


class BatchFailed(HorcruxError):
    """Tasks that failed on every try, by key (the CLI exits 2 and names them)."""

    def __init__(self, failures: dict[str, str]) -> None:
        self.failures = dict(sorted(failures.items()))
        shown = "; ".join(f"{k}: {e}" for k, e in list(self.failures.items())[:5])
        more = f" (and {len(failures) - 5} more)" if len(failures) > 5 else ""
        super().__init__(
            f"{len(failures)} task(s) failed on every try: {shown}{more}; the results of the "
            "others are kept (rerun with --resume to play only what is missing)"
        )


@dataclass(frozen=True)
class Job:
    """A batch: `fn(args)` for each `(key, args)` of `tasks` (keys unique), `fn` and
    `initializer` module-level functions (they travel to the workers by reference)."""

    fn: Callable[[Any], Any]
    tasks: Sequence[tuple[str, Any]]
    initializer: Callable[..., None] | None = None
    initargs: tuple[Any, ...] = ()
    retries: int = 2
    chunk: int | None = None
    """Tasks a chunk, fixed (benchmarks); None: `Chunker`'s adaptive size."""

    def __post_init__(self) -> None:
        keys = [k for k, _ in self.tasks]
        if len(set(keys)) != len(keys):
            raise ValueError("a batch's task keys must be unique")


@dataclass
class Outcome:
    """One task's result (`error` None) or its last failure; `seconds` of work."""

    key: str
    value: Any = None
    error: str | None = None
    seconds: float = 0.0
    worker: str = ""
    started: float = 0.0
    """The worker's wall clock (time.time()) when the task began."""


# -- the worker side -------------------------------------------------------------------

_INITIALISED: set[tuple[str, str, tuple[Any, ...]]] = set()


def run_chunk(
    fn: Callable[[Any], Any],
    initializer: Callable[..., None] | None,
    initargs: tuple[Any, ...],
    items: Sequence[tuple[str, Any]],
) -> list[Outcome]:
    """Play `items` one after the other in this worker (the initializer first, once per
    process); a task that raises becomes an Outcome with its error."""
    if initializer is not None:
        token = (initializer.__module__, initializer.__qualname__, _frozen(initargs))
        if token not in _INITIALISED:
            initializer(*initargs)
            _INITIALISED.add(token)
    worker = worker_id()
    out: list[Outcome] = []
    for key, args in items:
        wall = time.time()
        start = time.perf_counter()
        try:
            value = fn(args)
        except Exception as exc:  # reported, retried by the scheduler
            seconds = time.perf_counter() - start
            error = f"{type(exc).__name__}: {exc}"
            out.append(Outcome(key, None, error, seconds, worker, wall))
        else:
            out.append(Outcome(key, value, None, time.perf_counter() - start, worker, wall))
    return out


def _frozen(initargs: tuple[Any, ...]) -> tuple[Any, ...]:
    """The initializer's arguments as a set member: each plain value (str, number, bool,
    None) as it is, any other (a queue's proxy, new in every chunk) by its type, so that an
    initializer runs once per process and per plain arguments, not once per chunk."""
    plain = (str, int, float, bool, type(None))
    return tuple(a if isinstance(a, plain) else type(a).__qualname__ for a in initargs)


def worker_id() -> str:
    """This worker: the Ray node's id where Ray runs it, else the host and process id."""
    node = os.environ.get("HORCRUX_BATCH_NODE")
    if node is None:
        try:
            import sys

            ray = sys.modules.get("ray")
            if ray is not None and ray.is_initialized():
                node = ray.get_runtime_context().get_node_id()
        except Exception:  # pragma: no cover - a Ray without a runtime context
            node = None
    return f"{node or os.uname().nodename}:{os.getpid()}"


def where(_: Any = None) -> str:
    """A task that returns the worker it ran on (`worker_id`): which nodes play a batch."""
    return worker_id()


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


# -- chunk sizes -----------------------------------------------------------------------


@dataclass
class Chunker:
    """Chunk sizes from the measured cost of a task.

    A chunk should take at least `overhead / OVERHEAD_SHARE` seconds of work (the back
    end's fixed cost per submission then is at most 5% of it) and at most
    `remaining / (BALANCE * workers)` tasks (so the tail spreads over every worker).
    Before any task is measured, chunks of `first` tasks probe the cost. The overhead is
    the back end's `overhead_s` until `MIN_GAPS` gaps are measured, then their median: a
    gap is the idle time of one worker between the end of a chunk and the start of its
    next (what submitting a chunk costs on this machine, under its load, or a cluster's)."""

    workers: int
    overhead_s: float
    first: int = 1
    measured: int = 0
    seconds: float = 0.0
    gaps: list[float] = field(default_factory=list)
    OVERHEAD_SHARE: float = 0.05
    BALANCE: int = 4
    MIN_GAPS: int = 3

    def observe(self, seconds: float) -> None:
        self.measured += 1
        self.seconds += seconds

    def observe_gap(self, seconds: float) -> None:
        self.gaps.append(max(0.0, seconds))

    @property
    def overhead(self) -> float:
        if len(self.gaps) < self.MIN_GAPS:
            return self.overhead_s
        return statistics.median(self.gaps)

    @property
    def task_s(self) -> float | None:
        return self.seconds / self.measured if self.measured else None

    def size(self, remaining: int) -> int:
        if remaining <= 0:
            return 0
        task_s = self.task_s
        if task_s is None:
            return min(self.first, remaining)
        want = math.ceil(self.overhead / self.OVERHEAD_SHARE / max(task_s, 1e-6))
        balanced = math.ceil(remaining / (self.BALANCE * max(1, self.workers)))
        return max(1, min(want, balanced, remaining))


# -- the scheduler ---------------------------------------------------------------------

Handle = int


class Engine(ABC):
    """Runs a `Job`'s tasks on `workers` workers; see the module's docstring."""

    name: str = "engine"
    overhead_s: float = 0.001
    """The back end's fixed cost per submitted chunk (what `Chunker` hides)."""

    def __init__(self, workers: int) -> None:
        self.workers = max(1, workers)
        self.tally = Tally()
        self.chunks = 0
        """Chunks submitted by the last run (with `tally`: its mean chunk size)."""
        self.overhead_measured: float | None = None
        """The last run's measured cost per chunk (the median idle gap; None: too few)."""
        self._held = False

    def __enter__(self) -> Engine:
        """Keep the workers (the pool, the Ray connection) up across runs until exit."""
        self._held = True
        return self

    def __exit__(self, *exc: object) -> None:
        self._held = False
        self._close(cancel=exc[0] is not None)

    def describe(self) -> str:
        return f"{self.name}, {self.workers} worker(s){self.tally.nodes_line()}"

    def run(self, job: Job, *, skip: Collection[str] = ()) -> Iterator[Outcome]:
        """Yield an Outcome per task not in `skip`, as each finishes; then raise
        `BatchFailed` if a task failed on every try."""
        pending: deque[tuple[str, Any]] = deque((k, a) for k, a in job.tasks if k not in skip)
        if not pending:
            return
        args = {k: a for k, a in pending}
        tries: dict[str, int] = {}
        failures: dict[str, str] = {}
        in_flight: dict[Handle, list[tuple[str, Any]]] = {}
        last_end: dict[str, float] = {}  # per worker: when its last chunk ended
        self.chunks, self.overhead_measured = 0, None
        self._open(job)
        chunker = Chunker(self.workers, self.overhead_s, first=self._first_chunk(len(pending)))
        ok = False
        try:
            while pending or in_flight:
                while pending and len(in_flight) < 2 * self.workers:
                    n = min(job.chunk, len(pending)) if job.chunk else chunker.size(len(pending))
                    items = [pending.popleft() for _ in range(n)]
                    in_flight[self._submit(job, items)] = items
                    self.chunks += 1
                handle, outcomes = self._next()
                items = in_flight.pop(handle)
                if isinstance(outcomes, BaseException):  # the chunk was lost with its worker
                    outcomes = [Outcome(k, None, f"lost: {outcomes!r}") for k, _ in items]
                elif outcomes and pending:  # a gap counts while work was waiting
                    worker, first, last = outcomes[0].worker, outcomes[0], outcomes[-1]
                    if worker in last_end:
                        chunker.observe_gap(first.started - last_end[worker])
                    last_end[worker] = last.started + last.seconds
                for o in outcomes:
                    if o.error is None:
                        chunker.observe(o.seconds)
                        self.tally.add(o)
                        yield o
                        continue
                    tries[o.key] = tries.get(o.key, 0) + 1
                    if tries[o.key] <= job.retries:
                        pending.append((o.key, args[o.key]))
                    else:
                        failures[o.key] = o.error
            ok = True
        finally:
            if len(chunker.gaps) >= chunker.MIN_GAPS:
                self.overhead_measured = chunker.overhead
            if not ok or not self._held:
                self._close(cancel=not ok)
        if failures:
            raise BatchFailed(failures)

    def _first_chunk(self, total: int) -> int:
        return 1

    @abstractmethod
    def _open(self, job: Job) -> None: ...

    @abstractmethod
    def _submit(self, job: Job, items: list[tuple[str, Any]]) -> Handle: ...

    @abstractmethod
    def _next(self) -> tuple[Handle, list[Outcome] | BaseException]:
        """Block until a submitted chunk finishes; its handle and outcomes (or the error
        that lost it)."""

    @abstractmethod
    def _close(self, *, cancel: bool) -> None: ...


class LocalEngine(Engine):
    """A process pool on this machine (`spawn`), or this process itself for one worker
    (unless `inline` is False: then always a pool, as the real-model experiment needs)."""

    name = "local"
    overhead_s = 0.0005

    def __init__(self, workers: int | None = None, *, inline: bool = True) -> None:
        super().__init__(workers or os.cpu_count() or 1)
        self.inline = inline
        self._pool: Any = None
        self._done: queue.SimpleQueue[tuple[Handle, list[Outcome] | BaseException]] = (
            queue.SimpleQueue()
        )
        self._inline: deque[tuple[Handle, list[Outcome]]] = deque()
        self._count = 0

    def _open(self, job: Job) -> None:
        if self._pool is None and (not self.inline or (self.workers > 1 and len(job.tasks) > 1)):
            ctx = multiprocessing.get_context("spawn")
            self._pool = ctx.Pool(self.workers, initializer=_ignore_sigint)

    def _submit(self, job: Job, items: list[tuple[str, Any]]) -> Handle:
        self._count += 1
        handle = self._count
        if self._pool is None:
            self._inline.append((handle, run_chunk(job.fn, job.initializer, job.initargs, items)))
            return handle
        done = self._done

        def ok(result: list[Outcome]) -> None:
            done.put((handle, result))

        def lost(exc: BaseException) -> None:
            done.put((handle, exc))

        self._pool.apply_async(
            run_chunk,
            (job.fn, job.initializer, job.initargs, items),
            callback=ok,
            error_callback=lost,
        )
        return handle

    def _next(self) -> tuple[Handle, list[Outcome] | BaseException]:
        if self._pool is None:
            return self._inline.popleft()
        return self._done.get()

    def _close(self, *, cancel: bool) -> None:
        pool, self._pool = self._pool, None
        self._inline.clear()
        if pool is None:
            return
        if cancel:
            pool.terminate()
        else:
            pool.close()
        pool.join()


@dataclass
class Tally:
    """Per-worker counts of the outcomes a run yielded (which nodes played)."""

    by_worker: dict[str, int] = field(default_factory=dict)

    def add(self, outcome: Outcome) -> None:
        self.by_worker[outcome.worker] = self.by_worker.get(outcome.worker, 0) + 1

    def nodes(self) -> set[str]:
        return {w.rsplit(":", 1)[0] for w in self.by_worker}

    def nodes_line(self) -> str:
        """`, on N nodes` where tasks ran on more than one machine (a Ray cluster)."""
        n = len(self.nodes())
        return f", on {n} nodes" if n > 1 else ""


__all__ = [
    "ENGINES",
    "RAY_INSTALL",
    "BatchFailed",
    "Chunker",
    "Engine",
    "Job",
    "LocalEngine",
    "Outcome",
    "RayMissing",
    "Tally",
    "run_chunk",
    "where",
    "worker_id",
]
