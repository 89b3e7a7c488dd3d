"""The family evaluation's math on hand-made inputs (nearest-rank percentile, the
distributions by kind, the worst draw, the paired SE and its 2.5 SE flag, the seasons'
means across draws), its seeds and splits, its markdown sections, and the split guard."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from horcrux_tools.echo import family_seasons as fs
from horcrux_tools.evaluation import family, family_report

ROOT = Path(__file__).resolve().parents[2]


def params(copies: dict[int, bool]) -> dict[int, dict[str, object]]:
    return {
        d: {"params": {"seed": d}, "describe": f"draw {d}", "copy": c} for d, c in copies.items()
    }


def test_nearest_rank_is_the_ceil_p_n_over_100_th_smallest() -> None:
    assert family.nearest_rank([0.5, 0.1, 0.9, 0.3], 0) == 0.1
    assert family.nearest_rank(list(range(10, 0, -1)), 10) == 1  # ceil(1.0) = 1st
    assert family.nearest_rank(list(range(11)), 10) == 1  # ceil(1.1) = 2nd smallest of 0..10
    assert family.nearest_rank(list(range(50)), 10) == 4  # ceil(5.0) = 5th
    assert family.nearest_rank(list(range(30)), 10) == 2  # ceil(3.0) = 3rd
    assert family.nearest_rank([0.7], 10) == 0.7
    with pytest.raises(ValueError):
        family.nearest_rank([], 10)


def test_distribution_worst_p10_median_mean() -> None:
    values = [0.9, 0.2, 0.6, 0.4, 1.0, 0.8, 0.3, 0.5, 0.7, 0.1, 0.65, 0.55]
    d = family.distribution(values)
    assert d["n"] == 12 and d["worst"] == 0.1
    assert d["p10"] == 0.2  # ceil(1.2) = 2nd smallest
    assert d["median"] == pytest.approx((0.55 + 0.6) / 2)
    assert d["mean"] == pytest.approx(sum(values) / 12)
    assert family.distribution([]) == {
        "n": 0,
        "worst": None,
        "p10": None,
        "median": None,
        "mean": None,
    }


def test_summary_splits_copy_draws_and_names_the_worst() -> None:
    wins = {0: [1, 1, 0, 1], 1: [0, 0, 1, 0], 2: [1, 0, 0, 0], 3: [1, 1, 1, 1]}
    p = params({0: False, 1: True, 2: False, 3: False})
    s = family.summarise(wins, p)
    assert s["per_draw"] == {"0": 0.75, "1": 0.25, "2": 0.25, "3": 1.0}
    assert s["stats"]["copy"]["n"] == 1 and s["stats"]["copy"]["worst"] == 0.25
    assert s["stats"]["not_copy"]["n"] == 3
    assert s["stats"]["not_copy"]["worst"] == 0.25 and s["stats"]["not_copy"]["median"] == 0.75
    assert s["stats"]["all"]["mean"] == pytest.approx(0.5625)
    worst = s["worst_draw"]  # draws 1 and 2 tie at 25%: the lower seed
    assert worst["draw"] == 1 and worst["rate"] == 0.25 and worst["describe"] == "draw 1"
    assert worst["copy"] is True


def test_paired_difference_its_se_and_the_2_5_se_flag() -> None:
    base = {0: [1, 1, 1, 1], 1: [1] * 6 + [0] * 2, 2: [1] * 10, 3: [0, 1, 0, 1]}
    harry = {0: [1, 1, 0, 0], 1: [0] * 8, 2: [0] * 10, 3: [1, 0, 1, 0]}
    c = family.compare(harry, base, params({0: False, 1: False, 2: True, 3: False}))
    d0 = c["per_draw"]["0"]  # differences 0, 0, -1, -1: sd sqrt(1/3), se sd / 2
    assert d0["diff"] == pytest.approx(-50.0)
    assert d0["se"] == pytest.approx(100 * math.sqrt(1 / 3) / 2)
    assert d0["lower"] is False  # -50 is not below -2.5 * 28.9
    d1 = c["per_draw"]["1"]  # six -1 and two 0: mean -0.75, var 1.5 / 7
    assert d1["diff"] == pytest.approx(-75.0)
    assert d1["se"] == pytest.approx(100 * math.sqrt(1.5 / 7 / 8))
    assert d1["lower"] is True  # -75 < -2.5 * 16.4
    assert c["per_draw"]["2"] == {"diff": -100.0, "se": 0.0, "lower": True}
    d3 = c["per_draw"]["3"]  # +1, -1, +1, -1: mean 0
    assert d3["diff"] == 0.0 and d3["lower"] is False
    assert c["lower"] == {"not_copy": 1, "copy": 1, "all": 2}
    assert c["stats"]["all"]["worst"] == -100.0
    assert c["stats"]["not_copy"]["median"] == pytest.approx(-50.0)


def test_seeds_and_splits() -> None:
    assert family.draw_seeds("dev", 3) == [0, 1, 2]
    assert family.draw_seeds("holdout", 2) == [100_000, 100_001]
    assert family.game_seed(7, 42) == 7042 and family.game_seed(100_000, 999) == 100_000_999
    with pytest.raises(ValueError):
        family.game_seed(1, 1000)  # would be draw 2's game 0
    with pytest.raises(ValueError):
        family.draw_seeds("test", 3)
    with pytest.raises(ValueError):
        family.run_family(["planner"], "dev", 1, 1001, 1)


def test_sections_replace_insert_and_carry_over() -> None:
    section = f"{family_report.BEGIN}\nnew\n{family_report.END}"
    page = "# E\n\ntext\n\n## Definitions\n\n- x\n"
    once = family_report.SECTION.splice(page, section)
    assert once.index(section) < once.index("## Definitions") and once.count("new") == 1
    again = family_report.SECTION.splice(once, section.replace("new", "newer"))
    assert "newer" in again and "\nnew\n" not in again and again.count("## Definitions") == 1
    assert family_report.SECTION.splice("", section) == section + "\n"
    regenerated = "# E (rerun)\n\n## Definitions\n\n- y\n"  # the grid's page, written again
    kept = family_report.SECTION.keep(once, regenerated)
    assert section in kept and kept.startswith("# E (rerun)")
    assert family_report.SECTION.keep("# no section", regenerated) == regenerated
    assert family_report.SECTION.drop(once) == page  # splice's inverse
    assert family_report.SECTION.drop(family_report.SECTION.splice("# E\n", section)) == "# E\n"
    echo = fs.SECTION.splice("# ECHO\n\nbody\n", f"{fs.BEGIN}\na\n{fs.END}")
    again = fs.SECTION.splice(echo, f"{fs.BEGIN}\nb\n{fs.END}")
    assert again.endswith(f"{fs.BEGIN}\nb\n{fs.END}\n")


def season(draw: int | None, diff: float, se: float, below: bool) -> dict[str, object]:
    cell = {"diff": diff, "se": se, "below": below}
    return {"draw": draw, "on_off": cell, "on_counter": {"diff": -diff, "se": se, "below": False}}


def test_season_means_across_draws_leave_the_named_out() -> None:
    seasons = [season(0, 10.0, 3.0, False), season(1, -20.0, 5.0, True), season(2, 4.0, 2.0, False)]
    seasons.append(season(None, -90.0, 1.0, True))  # a named opponent: not a draw
    od = fs.over_draws(seasons)
    sd = math.sqrt((12**2 + 18**2 + 6**2) / 2)  # deviations from the mean -2
    assert od["on_off"]["n"] == 3 and od["on_off"]["mean"] == pytest.approx(-2.0)
    assert od["on_off"]["se"] == pytest.approx(sd / math.sqrt(3))
    assert od["on_off"]["below"] == 1 and od["on_counter"]["below"] == 0
    assert od["on_counter"]["mean"] == pytest.approx(2.0)
    assert fs.across([5.0]) == {"n": 1, "mean": 5.0, "se": 0.0}


def test_split_guard_only_the_report_module_gives_the_holdout_key() -> None:
    """The held-out key (`holdout=True`, `{"holdout": True}`) is written in the tools only
    where the report turns the holdout split into it (`evaluation.family.holdout_key` and
    the Voldemort settings it makes, the season's brains) and `horcrux family --list
    --holdout` passes its flag; everything else takes it as a parameter."""
    allowed = {
        "tools/horcrux_tools/evaluation/family.py": 3,  # voldemort_settings; its doc twice
        "tools/horcrux_tools/echo/season.py": 1,  # brains()
    }
    key = re.compile(r"holdout=True|\"holdout\": True")
    found = {
        path.relative_to(ROOT).as_posix(): len(key.findall(path.read_text(encoding="utf-8")))
        for path in (ROOT / "tools").rglob("*.py")
    }
    extra = {f: n for f, n in found.items() if n > allowed.get(f, 0)}
    assert not extra, f"the held-out key given outside the report path: {extra}"
    source = (ROOT / "tools/horcrux_tools/evaluation/family.py").read_text()
    assert 'return split == "holdout"' in source
    assert family.holdout_key("holdout") and not family.holdout_key("dev")
    assert family.voldemort_settings(True) == {"holdout": True}
    assert family.voldemort_settings(False) == {}
    with pytest.raises(ValueError, match="unknown split"):
        family.holdout_key("test")
    cli = (ROOT / "tools/horcrux_tools/family_cli.py").read_text()
    assert "draw(seed, holdout=args.holdout)" in cli


def committed(page: str, begin: str, end: str) -> str:
    text = (ROOT / "docs" / page).read_text()
    start = text.index(begin)
    return text[start : text.index(end, start) + len(end)]


def test_the_committed_sections_are_the_generators() -> None:
    """docs/EVALUATION.md's and docs/ECHO.md's family sections render again from the
    committed JSON (`horcrux evaluate --family`, `horcrux season --family`)."""
    data = json.loads((ROOT / "docs" / family_report.JSON_NAME).read_text())
    section = committed("EVALUATION.md", family_report.BEGIN, family_report.END)
    assert family_report.render_section(data, [family_report.IMAGE_NAME]) == section
    assert data["summary"] == family.analyse(data)["summary"]
    assert data["paired"] == family.analyse(data)["paired"]
    seasons = json.loads((ROOT / "docs" / fs.JSON_NAME).read_text())
    section = committed("ECHO.md", fs.BEGIN, fs.END)
    assert fs.render_section(seasons, [fs.IMAGE_NAME]) == section
    assert seasons["over_draws"] == fs.over_draws(seasons["seasons"])
    # the dev split's record (`make eval-family-dev`), in docs/family-dev
    dev = json.loads((ROOT / "docs" / "family-dev" / family_report.JSON_NAME).read_text())
    section = committed("family-dev/EVALUATION.md", family_report.BEGIN, family_report.END)
    assert family_report.render_section(dev, [family_report.IMAGE_NAME]) == section
    assert dev["split"] == "dev" and dev["harrys"] == [
        "planner",
        "planner:aware",
        "planner:mixture",
    ]
    dev_seasons = json.loads((ROOT / "docs" / "family-dev" / fs.JSON_NAME).read_text())
    section = committed("family-dev/ECHO.md", fs.BEGIN, fs.END)
    assert fs.render_section(dev_seasons, [fs.IMAGE_NAME]) == section
    assert dev_seasons["split"] == "dev"


def test_the_seasons_section_shows_what_memory_read_of_each_draw() -> None:
    """Item 5's table: the `on` arm's rate beliefs at the season's end beside the draw's
    parameters, the gate's last score and the second half's games played with memory;
    and the first half's on minus off beside the second's."""
    one = {
        **season(7, 4.0, 2.0, False),
        "opponent": "family:7",
        "describe": "trigger=positive+3 observer=tally:5",
        "second_half": {"on": 0.5, "off": 0.46, "counter": 0.5},
        "learned": {"relocates": 0.97, "immediate": 0.05, "plant_top": None, "plant_blind": 0.5},
        "gates": [0.0, 12.25],
        "planned": "0011",
        "on_off_first_half": {"diff": -2.0, "se": 1.0},
    }
    data = {
        "games": 4,
        "draws": [7],
        "named": [],
        "split": "dev",
        "arms": ["on", "off", "counter"],
        "rules": "classic",
        "workers": 1,
        "seconds": 1.0,
        "seasons": [one],
    }
    data["over_draws"] = fs.over_draws(data["seasons"])
    assert data["over_draws"]["on_off_first_half"] == {"n": 1, "mean": -2.0, "se": 0.0}
    text = fs.render_section(data)
    assert "| on minus off, games 1-2 (points) | **-2.0** ± 0.0 | |" in text
    row = "| `family:7` | 0.97 | 0.05 | - | 0.50 | 12.2 | 2 | trigger=positive+3 observer=tally:5 |"
    assert row in text
    assert f"memory plays once S > {fs.gate.MARGIN:g} nats" in text


def test_a_section_found_by_its_mark_and_a_strict_replace() -> None:
    from horcrux_tools.sections import Section

    s = Section("<!-- x:begin (generated by `a`) -->", "<!-- x:end -->")
    old = "# P\n\n<!-- x:begin (generated by `an older tool`) -->\nold\n<!-- x:end -->\n\ntail\n"
    new = s.replace(old, s.wrap("new"))
    assert new == "# P\n\n" + s.wrap("new") + "\n\ntail\n"
    with pytest.raises(ValueError, match="x:begin"):
        s.replace("# no markers\n", s.wrap("new"))
    assert s.drop(new) == "# P\n\ntail\n"
