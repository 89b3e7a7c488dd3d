"""The evaluation end to end (the slow part of tests/unit/test_evaluation.py): a small run
writes the markdown, the JSON and the figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from horcrux_tools.evaluation import report as report_mod

pytestmark = pytest.mark.slow


def test_evaluate_writes_markdown_json_and_png(tmp_path: Path) -> None:
    from horcrux_tools.cli import main

    out = tmp_path / "ev"
    code = main(
        [
            "evaluate",
            "--games",
            "6",
            "--harry",
            "naive,planner,gated",
            "--voldemort",
            "reference",
            "--workers",
            "1",
            "--out",
            str(out),
            "--no-progress",
        ]
    )
    assert code == 0
    data = json.loads((out / "evaluation.json").read_text())
    assert set(data) == set(report_mod.REPORT_KEYS)
    row = data["results"]["reference"]["gated"]
    for key in (
        "win_rate",
        "ci_low",
        "ci_high",
        "diff_vs_planner",
        "mean_turns_to_win",
        "wasted_attacks",
        "mean_destroyed",
        "calibration",
        "decisions",
        "failures",
    ):
        assert key in row
    assert set(row["failures"]) == {"stale", "retrieval", "overload", "decay"}
    assert data["results"]["reference"]["naive"]["calibration"] is None
    assert data["llm"]["run"] is False
    assert "not run" in data["llm"]["note"]
    md = (out / "EVALUATION.md").read_text()
    assert "6 games per architecture" in md and "## A real model plays\n\nNot run here" in md
    pngs = sorted(p.name for p in (out / "img").glob("*.png"))
    assert {"win-rates.png", "entropy-race-reference.png", "tokens-by-tier.png"} <= set(pngs)
