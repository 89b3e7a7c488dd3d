"""`horcrux ceiling`'s report (`horcrux_tools.evaluation.ceiling`): per-draw rates placed
by Harry, draw and game whatever the order, the headroom, the share the untold reaches,
and records missing or counted twice refused."""

from __future__ import annotations

import random

import pytest

from horcrux_tools.evaluation.ceiling import SECTION, render_section, report, spec, tasks

DRAWS = [0, 1, 5]  # the reference member, a positive trigger, positive+2 (docs/FAMILY.md)
GAMES = 4
THREE = ["planner", "told", "untold"]
WON = {  # wins of game g, per (harry, draw)
    ("planner", 0): 4,
    ("planner", 1): 1,
    ("planner", 5): 2,
    ("told", 0): 4,
    ("told", 1): 4,
    ("told", 5): 3,
    ("untold", 0): 3,
    ("untold", 1): 2,
    ("untold", 5): 3,
}


def _records() -> list[dict[str, object]]:
    return [
        {"harry": h, "draw": d, "game": g, "won": g < WON[(h, d)], "wasted": 0, "max_ms": 1.0}
        for h, d, g in tasks(DRAWS, GAMES, THREE)
    ]


def test_the_report_reads_every_game_in_any_order() -> None:
    records = _records()
    shuffled = list(records)
    random.Random(1).shuffle(shuffled)
    one = report(records, DRAWS, GAMES, THREE, 1.0)
    two = report(shuffled, DRAWS, GAMES, THREE, 1.0)
    assert one == two
    rates = {r["draw"]: r["rates"] for r in one["rows"]}
    assert rates[1] == {"planner": 0.25, "told": 1.0, "untold": 0.5}
    s = one["summary"]
    assert s["headroom"] == pytest.approx((0 + 0.75 + 0.25) / 3)
    assert s["headroom_by_trigger"]["reference"] == {"draws": 1, "mean": 0.0}
    # draws 1 and 5 open 10 points or more: untold reaches (0.25 + 0.25) of (0.75 + 0.25)
    assert s["wide_draws"] == 2 and s["share_reached"] == {"untold": pytest.approx(0.5)}
    assert one["wins"]["told"]["1"] == "1111"


def test_missing_or_doubled_games_are_refused() -> None:
    records = _records()
    with pytest.raises(ValueError, match="missing"):
        report(records[1:], DRAWS, GAMES, THREE, 1.0)
    with pytest.raises(ValueError, match="twice"):
        report(records + records[:1], DRAWS, GAMES, THREE, 1.0)


def test_the_section_and_the_specs() -> None:
    data = report(_records(), DRAWS, GAMES, THREE, 1.0)
    text = render_section(data, ["ceiling.png"])
    assert SECTION.present(text)
    assert "| 1 | trigger=positive+0" in text and "| +75 |" in text
    assert "`untold` **50%**" in text
    assert "| reference | 1 | 0 |" in text  # no headroom reads 0, never "+0" or "-0"
    assert "against three Harrys" in text
    assert spec("told", 37) == "told:37" and spec("planner", 37) == "planner"
    assert spec("hedged", 37) == "untold:1024:64:hedged"
