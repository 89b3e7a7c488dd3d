"""The family evaluation and the family seasons end to end through `horcrux`'s main (tiny
runs: dev draws, a few games), and the split: a dev run never draws the holdout, the
holdout runs only through the report path, with the key it passes, and leaves nothing open
behind it (in fresh interpreters, as a user runs them)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from horcrux_tools.cli import main
from horcrux_tools.echo import family_seasons as fs
from horcrux_tools.evaluation import family

ROOT = Path(__file__).resolve().parents[2]


def python(script: str) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT / "shared"), str(ROOT / "tools"), env.get("PYTHONPATH", "")]
    )
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )


def test_evaluate_family_writes_json_and_markdown(tmp_path: Path) -> None:
    argv = ["evaluate", "--family", "2", "--games", "3", "--workers", "1", "--no-plots"]
    harrys = "planner,naive"
    assert main([*argv, "--harry", harrys, "--out", str(tmp_path), "--no-progress"]) == 0
    data = json.loads((tmp_path / "family.json").read_text())
    assert data["split"] == "dev" and data["draws"] == [0, 1] and data["games"] == 3
    assert data["harrys"] == ["planner", "naive"]
    for h in data["harrys"]:
        assert set(data["wins"][h]) == {"0", "1"}
        assert all(len(w) == 3 and set(w) <= {"0", "1"} for w in data["wins"][h].values())
    assert data["summary"] == family.analyse(data)["summary"]  # stored = recomputed
    assert set(data["paired"]) == {"naive"} and data["paired"]["naive"]["baseline"] == "planner"
    rate = data["wins"]["planner"]["0"].count("1") / 3
    assert data["summary"]["planner"]["per_draw"]["0"] == rate
    page = (tmp_path / "EVALUATION.md").read_text()
    assert page.startswith("<!-- family:begin") and page.rstrip().endswith("<!-- family:end -->")
    assert "Split **dev**: 2 draws `family:0`..`family:1`, 3 games each" in page
    assert "seed d * 1000 + g" in page and "| `naive` | all |" in page
    assert not (tmp_path / "img").exists()


def test_season_family_writes_json_and_markdown(tmp_path: Path) -> None:
    argv = ["season", "--family", "1", "--games", "2", "--workers", "1", "--no-plots"]
    assert main([*argv, "--out", str(tmp_path)]) == 0
    data = json.loads((tmp_path / "family-seasons.json").read_text())
    assert data["draws"] == [0] and data["named"] == [] and data["games"] == 2
    (s,) = data["seasons"]
    assert s["opponent"] == "family:0" and s["seed"] == 0
    assert set(s["wins"]) == {"on", "off", "counter"} and all(
        len(w) == 2 for w in s["wins"].values()
    )
    on, off = s["wins"]["on"][1:], s["wins"]["off"][1:]  # the second half: game 2
    assert s["on_off"]["diff"] == 100 * (int(on) - int(off)) and s["on_off"]["se"] == 0.0
    assert data["over_draws"]["on_off"]["n"] == 1
    page = (tmp_path / "ECHO.md").read_text()
    assert "<!-- family-seasons:begin" in page and "`family:0`" in page


def test_a_dev_run_never_opens_the_holdout(tmp_path: Path) -> None:
    done = python(
        f"""
        import json
        from pathlib import Path
        from horcrux.agents.family import HeldOutDraw, draw
        from horcrux_tools.cli import main
        out = {str(tmp_path)!r}
        common = ["--family", "1", "--games", "2", "--workers", "1", "--no-plots", "--out", out]
        assert main(["evaluate", *common, "--split", "dev", "--no-progress"]) == 0
        assert main(["season", *common, "--split", "dev"]) == 0
        print("draws:", json.loads((Path(out) / "family.json").read_text())["draws"])
        try:
            draw(100000)
        except HeldOutDraw:
            print("still refused")
        """
    )
    assert done.returncode == 0, done.stderr
    assert "draws: [0]" in done.stdout and "still refused" in done.stdout


@pytest.mark.slow  # a fresh interpreter or a process pool: about a second
def test_the_holdout_runs_only_through_the_report_path(tmp_path: Path) -> None:
    done = python(
        f"""
        import json
        from pathlib import Path
        from horcrux.agents import VOLDEMORT_BRAINS, family
        from horcrux.rules import preset
        from horcrux_tools.cli import main
        for attempt in (lambda: family.draw(100000),
                        lambda: VOLDEMORT_BRAINS.create("family:100000", preset("classic"))):
            try:
                attempt()
            except family.HeldOutDraw:
                print("refused")
        out = {str(tmp_path)!r}
        argv = ["evaluate", "--family", "2", "--split", "holdout", "--games", "2",
                "--workers", "2", "--no-plots", "--out", out, "--no-progress"]
        assert main(argv) == 0
        print("draws:", json.loads((Path(out) / "family.json").read_text())["draws"])
        try:  # the report passed the key to its own draws and games: nothing stays open
            family.draw(100000)
        except family.HeldOutDraw:
            print("refused")
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("refused") == 3
    assert "draws: [100000, 100001]" in done.stdout


@pytest.mark.slow  # a fresh interpreter or a process pool: about a second
def test_results_do_not_depend_on_the_workers() -> None:
    one = family.run_family(["planner"], "dev", 2, 3, 1)
    two = family.run_family(["planner"], "dev", 2, 3, 2)
    assert one["wins"] == two["wins"] and one["summary"] == two["summary"]


def test_named_seasons_are_listed_never_averaged_in() -> None:
    data = fs.run_family_seasons("dev", 1, 2, named=("passive",), workers=1)
    assert [(s["opponent"], s["draw"], s["seed"]) for s in data["seasons"]] == [
        ("family:0", 0, 0),
        ("passive", None, 0),
    ]
    assert data["over_draws"]["on_off"]["n"] == 1
    assert data["over_draws"]["on_off"]["mean"] == data["seasons"][0]["on_off"]["diff"]
