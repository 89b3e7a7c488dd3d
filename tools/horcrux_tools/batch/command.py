"""What every batch command shares: `--engine local|ray`, `--address`, `--resume`, and
`stream`, which runs a job through an engine with its result log and its progress line."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from horcrux.errors import HorcruxError
from horcrux_tools.batch.engine import ENGINES, Engine, Job, LocalEngine
from horcrux_tools.batch.log import ResultLog
from horcrux_tools.batch.progress import Progress


def add_engine_args(p: argparse.ArgumentParser, *, resume: str | None = None) -> None:
    """`--engine`, `--address` and, where the command keeps a result log, `--resume`."""
    p.add_argument(
        "--engine",
        choices=ENGINES,
        default="local",
        help="local: a process pool on this machine (default); ray: Ray, started here or "
        "joined with --address (pip install -e 'tools[ray]')",
    )
    p.add_argument(
        "--address",
        default=None,
        metavar="ADDR",
        help="--engine ray: a running Ray cluster's address (HOST:PORT or auto); without it "
        "Ray starts on this machine",
    )
    if resume is not None:
        p.add_argument(
            "--resume",
            action="store_true",
            help=f"continue an interrupted batch from its results ({resume}); without it "
            "the batch starts afresh",
        )


def make_engine(name: str, *, workers: int | None = None, address: str | None = None) -> Engine:
    """The back end `name` (`local` or `ray`); `address` joins a running Ray cluster."""
    if name == "local":
        if address:
            raise HorcruxError("--address is Ray's cluster address: use it with --engine ray")
        return LocalEngine(workers)
    if name == "ray":
        from horcrux_tools.batch.ray_engine import RayEngine

        return RayEngine(workers=workers, address=address)
    raise HorcruxError(f"unknown engine {name!r}; known: {', '.join(ENGINES)}")


def engine_of(args: Any, workers: int | None) -> Engine:
    """The engine the arguments name (Ray's absence is an exit-2 error here, before any
    work)."""
    engine = make_engine(
        getattr(args, "engine", "local"), workers=workers, address=getattr(args, "address", None)
    )
    if engine.name == "ray":
        from horcrux_tools.batch.ray_engine import import_ray

        import_ray()
    return engine


def log_of(path: Path, meta: dict[str, Any], args: Any) -> ResultLog:
    return ResultLog(path, meta, resume=bool(getattr(args, "resume", False)))


def stream(
    engine: Engine,
    job: Job,
    *,
    log: ResultLog | None = None,
    progress: Progress | None = None,
    on_result: Callable[[int, int], None] | None = None,
    encode: Callable[[Any], Any] = lambda v: v,
    decode: Callable[[Any], Any] = lambda v: v,
) -> Iterator[tuple[str, Any]]:
    """(key, value) of every task: first those the log holds (decoded), then each new one
    as it finishes (appended to the log, encoded, before it is yielded)."""
    keys = {k for k, _ in job.tasks}
    resumed = {k: v for k, v in (log.done if log else {}).items() if k in keys}
    total = len(keys)
    count = 0
    for key, value in resumed.items():
        count += 1
        if on_result:
            on_result(count, total)
        yield key, decode(value)
    if progress is not None:
        progress.done = progress.resumed = len(resumed)
    for outcome in engine.run(job, skip=resumed.keys()):
        value = outcome.value
        if log is not None:
            encoded = json.loads(json.dumps(encode(value)))
            log.write(outcome.key, encoded)
            value = decode(encoded)  # what a resumed run reads back, exactly
        count += 1
        if progress is not None:
            progress.update()
        if on_result:
            on_result(count, total)
        yield outcome.key, value
    if progress is not None:
        progress.finish()


__all__ = ["add_engine_args", "engine_of", "log_of", "make_engine", "stream"]
