"""`horcrux ceiling` as a user runs it (through the batch engine): the report of a small
dev batch, the held-out split never opened, and an interrupted run resumed with
`--resume` to the same report having played only what was missing."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from horcrux_tools.batch import Progress
from horcrux_tools.cli import main
from horcrux_tools.evaluation import ceiling

ARGV = ["ceiling", "--draws", "2", "--games", "2", "--harry", "planner,told",
        "--workers", "1", "--no-progress"]  # fmt: skip


def _report(out: Path) -> tuple[dict[str, Any], str]:
    data = json.loads((out / ceiling.JSON_NAME).read_text())
    for varies in ("seconds", "resumed"):  # this run's own: its time, what it read back
        data.pop(varies)
    page = re.sub(r"; \d+ games played in .*\.\n", "; N.\n", (out / "EVALUATION.md").read_text())
    return data, page


@pytest.mark.slow
def test_a_ceiling_run_resumes_to_the_same_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    whole, cut = tmp_path / "whole", tmp_path / "cut"
    assert main([*ARGV, "--out", str(whole)]) == 0
    data, page = _report(whole)
    assert data["draws"] == [0, 1] and data["harrys"] == ["planner", "told"]
    assert set(data["wins"]["told"]) == {"0", "1"}
    assert all(len(w) == 2 for w in data["wins"]["planner"].values())
    assert "## The value of knowing the opponent" in page
    assert not (whole / ceiling.LOG_NAME).exists()

    real_update = Progress.update

    def interrupt_after_3(self: Progress, n: int = 1) -> None:
        real_update(self, n)
        if self.done == 3:
            raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(Progress, "update", interrupt_after_3)
        with pytest.raises(KeyboardInterrupt):
            main([*ARGV, "--out", str(cut)])
    assert len((cut / ceiling.LOG_NAME).read_text().splitlines()) == 1 + 3
    played: list[Any] = []
    real_play = ceiling.play
    monkeypatch.setattr(ceiling, "play", lambda task: played.append(task) or real_play(task))
    assert main([*ARGV, "--out", str(cut), "--resume"]) == 0
    assert len(played) == 8 - 3
    assert _report(cut) == (data, page)


def test_a_bad_harry_list_is_refused_before_any_game(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for bad in ("untold", "planner,untold", "planner,told,oracle"):
        argv = ["ceiling", "--draws", "1", "--games", "1", "--harry", bad]
        assert main([*argv, "--out", str(tmp_path / "x")]) == 2
        assert "planner and told in it" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
