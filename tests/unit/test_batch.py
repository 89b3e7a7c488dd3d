"""The batch engine's scheduler, chunk sizes, retries, result log and progress line, in
process (`LocalEngine(1)` plays inline; a subclass finishes chunks in reverse order), and
the refusal of `--engine ray` without Ray."""

from __future__ import annotations

import io
import json
import os
import sys
from pathlib import Path

import pytest

from horcrux.errors import HorcruxError
from horcrux.rules import preset
from horcrux_tools.batch import BatchFailed, Chunker, Job, LocalEngine, Progress, ResultLog
from horcrux_tools.batch.command import make_engine, stream
from horcrux_tools.batch.engine import Handle, Outcome
from horcrux_tools.batch.ray_engine import import_ray
from horcrux_tools.cli import main
from horcrux_tools.sim import run_games

FAILS: dict[str, int] = {}
INIT_CALLS: list[str] = []


def note(split: str) -> None:
    INIT_CALLS.append(split)


def square(x: int) -> int:
    return x * x


def flaky(args: tuple[str, int]) -> str:
    """Fails the first `n` times it is called for `key` (n < 0: always)."""
    key, n = args
    FAILS[key] = FAILS.get(key, 0) + 1
    if n < 0 or FAILS[key] <= n:
        raise RuntimeError(f"boom {key}")
    return key


class Reversed(LocalEngine):
    """Inline (never a pool), but hands back the most recent chunk first (out of
    submission order)."""

    def _open(self, job: Job) -> None:
        pass

    def _next(self) -> tuple[Handle, list[Outcome] | BaseException]:
        return self._inline.pop()


def test_every_task_is_yielded_once_whatever_the_completion_order() -> None:
    job = Job(square, [(str(i), i) for i in range(50)])
    first = list(LocalEngine(1).run(job))
    assert all(o.started > 0 and o.worker.endswith(f":{os.getpid()}") for o in first)
    for engine in (LocalEngine(1), Reversed(3)):
        got = {o.key: o.value for o in engine.run(job)}
        assert got == {str(i): i * i for i in range(50)}
    order = [o.key for o in Reversed(2).run(job)]
    assert order != sorted(order, key=int)  # really out of order
    assert [o.key for o in Reversed(2).run(job, skip={"1", "2"})].count("1") == 0


def test_run_games_yields_in_seed_order_from_any_completion_order() -> None:
    rules = preset("classic")
    inline = list(run_games(rules, "naive", "passive", 6, 10, engine=LocalEngine(1)))
    shuffled = list(run_games(rules, "naive", "passive", 6, 10, engine=Reversed(3)))
    assert [r.seed for r in shuffled] == list(range(10, 16))
    assert [(r.winner, r.turns) for r in shuffled] == [(r.winner, r.turns) for r in inline]


def test_chunks_hide_the_overhead_and_keep_the_tail_balanced() -> None:
    c = Chunker(workers=2, overhead_s=0.003)
    assert c.size(1000) == 1  # nothing measured: probe with one task
    for _ in range(10):
        c.observe(0.001)
    # a chunk of >= 0.003 / 0.05 = 0.06 s of work: 60 tasks of 1 ms
    assert c.size(1000) == 60
    assert c.size(40) == 5  # the tail: 40 / (4 x 2 workers)
    assert c.size(1) == 1 and c.size(0) == 0
    for gap in (0.010, 0.012, 0.500):  # measured idle gaps between a worker's chunks
        c.observe_gap(gap)
    assert c.overhead == 0.012  # their median, once 3 are measured
    assert c.size(10_000) == 240  # >= 0.012 / 0.05 = 0.24 s of 1 ms tasks
    slow = Chunker(workers=2, overhead_s=0.003)
    slow.observe(2.0)
    assert slow.size(1000) == 1  # a 2 s task hides the overhead alone


def test_a_failed_task_is_retried_then_reported_by_key_never_dropped() -> None:
    FAILS.clear()
    tasks = [("once", ("once", 1)), ("twice", ("twice", 2)), ("never", ("never", -1))]
    tasks += [(str(i), (str(i), 0)) for i in range(5)]
    done: list[str] = []
    with pytest.raises(BatchFailed) as raised:
        for o in LocalEngine(1).run(Job(flaky, tasks, retries=2)):
            done.append(o.key)
    assert sorted(done) == sorted(["once", "twice", "0", "1", "2", "3", "4"])
    assert raised.value.failures == {"never": "RuntimeError: boom never"}
    assert FAILS["never"] == 3 and FAILS["twice"] == 3  # 1 try + 2 retries at most
    assert "never" in str(raised.value) and isinstance(raised.value, HorcruxError)


def test_the_log_resumes_once_per_key_and_drops_a_cut_off_line(tmp_path: Path) -> None:
    path = tmp_path / "b.partial.jsonl"
    meta = {"command": "t", "n": 6}
    log = ResultLog(path, meta, resume=False)
    job = Job(square, [(str(i), i) for i in range(6)])
    first = dict(stream(LocalEngine(1), Job(square, job.tasks[:3]), log=log))
    log.close()
    with path.open("a") as fh:
        fh.write(json.dumps({"key": "1", "value": 1}) + "\n")  # a key written twice
        fh.write('{"key": "3", "val')  # cut off by the interrupt
    played: list[str] = []
    log = ResultLog(path, meta, resume=True)
    assert log.done == {"0": 0, "1": 1, "2": 4}
    for key, value in stream(LocalEngine(1), job, log=log):
        played.append(key)
        assert value == int(key) ** 2
    log.close()
    assert first == {"0": 0, "1": 1, "2": 4}
    assert sorted(played, key=int) == ["0", "1", "2", "3", "4", "5"]  # each once
    again = ResultLog(path, meta, resume=True)
    assert again.done == {str(i): i * i for i in range(6)}
    again.close()
    with pytest.raises(HorcruxError, match="another batch"):
        ResultLog(path, {"command": "t", "n": 7}, resume=True)
    fresh = ResultLog(path, {"command": "t", "n": 7}, resume=False)  # no --resume: afresh
    assert fresh.done == {}
    fresh.remove()
    assert not path.exists()


def test_progress_redraws_on_a_terminal_and_prints_plain_lines_otherwise() -> None:
    tty = io.StringIO()
    p = Progress(4, out=tty, tty=True)
    for _ in range(4):
        p.update()
    p.finish()
    assert "\r4/4 games" in tty.getvalue() and "/s" in tty.getvalue()
    assert "0:00 left" in tty.getvalue()
    plain = io.StringIO()
    q = Progress(10, out=plain, tty=False, every_s=0.0, resumed=4, unit="seasons")
    q.update()
    q.finish()
    lines = plain.getvalue().splitlines()
    assert lines[0].startswith("5/10 seasons") and "\r" not in plain.getvalue()
    assert lines[-1].startswith("5/10 seasons") and len(lines) == 2
    off = io.StringIO()
    Progress(3, out=off, enabled=False).finish()
    assert off.getvalue() == ""


def test_ray_missing_is_a_clear_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` raises ImportError
    with pytest.raises(HorcruxError, match=r"pip install -e 'tools\[ray\]'"):
        import_ray()
    for argv in (
        ["simulate", "--games", "2", "--engine", "ray"],
        ["evaluate", "--family", "1", "--games", "1", "--engine", "ray", "--no-plots"],
        ["season", "--family", "1", "--games", "2", "--engine", "ray", "--no-plots"],
    ):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "--engine ray needs Ray" in err and "make ray" in err
    assert main(["simulate", "--games", "2", "--json"]) == 0  # the local engine is unaffected


def test_address_is_refused_without_ray_and_an_unknown_engine_is_named() -> None:
    with pytest.raises(HorcruxError, match="--address"):
        make_engine("local", address="127.0.0.1:6379")
    with pytest.raises(HorcruxError, match="unknown engine 'dask'"):
        make_engine("dask")
    with pytest.raises(ValueError, match="unique"):
        Job(square, [("a", 1), ("a", 2)])


def test_an_initializer_runs_once_per_process_and_arguments() -> None:
    INIT_CALLS.clear()
    job = Job(square, [(str(i), i) for i in range(5)], initializer=note, initargs=("dev",))
    list(LocalEngine(1).run(job))
    list(LocalEngine(1).run(job))
    other = Job(square, [("x", 1)], initializer=note, initargs=("holdout",))
    list(LocalEngine(1).run(other))
    assert INIT_CALLS == ["dev", "holdout"]
