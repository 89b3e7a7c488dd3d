"""Long batches as users run them: an interrupted family evaluation resumed with `--resume`
gives the same report as an uninterrupted one, having played only what was missing; Ctrl-C
stops a local pool's workers (none is left running)."""

from __future__ import annotations

import json
import multiprocessing
import os
import re
import time
from pathlib import Path
from typing import Any

import pytest

from horcrux_tools.batch import Job, LocalEngine, Progress
from horcrux_tools.cli import main
from horcrux_tools.evaluation import family
from horcrux_tools.evaluation.family_report import LOG_NAME

ARGV = ["evaluate", "--family", "2", "--games", "4", "--harry", "planner,naive",
        "--workers", "1", "--no-plots"]  # fmt: skip


def report(out: Path) -> tuple[dict[str, Any], str]:
    """family.json without its wall time, and the page with the time blanked."""
    data = json.loads((out / "family.json").read_text())
    data.pop("seconds")
    page = re.sub(r"\d+ s\b", "N s", (out / "EVALUATION.md").read_text())
    return data, page


def test_an_interrupted_family_evaluation_resumes_to_the_same_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    assert main([*ARGV, "--out", str(whole)]) == 0
    assert not (whole / LOG_NAME).exists()  # reported: the log is gone
    played: list[tuple[Any, ...]] = []
    real_play = family._play

    def counting(job: Any) -> Any:
        played.append(job)
        return real_play(job)

    monkeypatch.setattr(family, "_play", counting)
    real_update = Progress.update

    def interrupt_after_5(self: Progress, n: int = 1) -> None:
        real_update(self, n)
        if self.done == 5:
            raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(Progress, "update", interrupt_after_5)
        with pytest.raises(KeyboardInterrupt):
            main([*ARGV, "--out", str(cut)])
    lines = (cut / LOG_NAME).read_text().splitlines()
    assert len(lines) == 1 + 5 and not (cut / "family.json").exists()
    played.clear()
    assert main([*ARGV, "--out", str(cut), "--resume"]) == 0
    assert len(played) == 2 * 4 * 2 - 5  # only the missing games
    assert report(cut) == report(whole)
    assert not (cut / LOG_NAME).exists()


def test_without_resume_a_batch_starts_afresh(tmp_path: Path) -> None:
    (tmp_path / LOG_NAME).write_text('{"batch": {"command": "other"}}\n')
    assert main([*ARGV, "--out", str(tmp_path), "--resume"]) == 2  # another batch's log
    assert main([*ARGV, "--out", str(tmp_path)]) == 0


def nap(seconds: float) -> float:
    time.sleep(seconds)
    return seconds


@pytest.mark.slow  # a process pool
def test_ctrl_c_stops_the_local_workers() -> None:
    engine = LocalEngine(2)
    job = Job(nap, [(str(i), 0.2) for i in range(40)])
    with pytest.raises(KeyboardInterrupt):
        for _ in engine.run(job):
            assert len(multiprocessing.active_children()) == 2
            raise KeyboardInterrupt
    assert multiprocessing.active_children() == []


def take_url(urls: Any) -> None:
    os.environ["BATCH_TEST_URL"] = urls.get()


def my_url(_: Any) -> tuple[int, str]:
    return os.getpid(), os.environ["BATCH_TEST_URL"]


@pytest.mark.slow  # a process pool and a manager
def test_each_local_worker_takes_one_server_url_and_keeps_it() -> None:
    """The real-model experiment's workers (`llm_experiment.run_jobs`): the initializer takes
    one URL from a shared queue once per worker process, never once per chunk."""
    with multiprocessing.get_context("spawn").Manager() as manager:
        urls = manager.Queue()
        for url in ("http://127.0.0.1:1", "http://127.0.0.1:2"):
            urls.put(url)
        job = Job(my_url, [(str(i), i) for i in range(30)], take_url, (urls,))
        seen = [o.value for o in LocalEngine(2, inline=False).run(job)]
    by_pid: dict[int, set[str]] = {}
    for pid, url in seen:
        by_pid.setdefault(pid, set()).add(url)
    assert len(seen) == 30 and all(len(u) == 1 for u in by_pid.values())
    assert len({next(iter(u)) for u in by_pid.values()}) == len(by_pid)  # distinct URLs


def test_an_interrupted_grid_resumes_to_the_same_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from horcrux_tools.evaluation.command import LOG_NAME as GRID_LOG

    argv = ["evaluate", "--harry", "naive,gated", "--voldemort", "passive", "--games", "3",
            "--workers", "1", "--no-plots", "--no-progress"]  # fmt: skip
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    assert main([*argv, "--out", str(whole)]) == 0
    real_update = Progress.update

    def interrupt_after_4(self: Progress, n: int = 1) -> None:
        real_update(self, n)
        if self.done == 4:
            raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(Progress, "update", interrupt_after_4)
        with pytest.raises(KeyboardInterrupt):
            main([*argv, "--out", str(cut)])
    assert len((cut / GRID_LOG).read_text().splitlines()) == 1 + 4
    assert main([*argv, "--out", str(cut), "--resume"]) == 0
    grids = [json.loads((d / "evaluation.json").read_text()) for d in (whole, cut)]
    for g in grids:
        g["meta"].pop("seconds")
    assert grids[0] == grids[1] and not (cut / GRID_LOG).exists()
