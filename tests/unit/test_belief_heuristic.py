"""The article's map, exactly as written (BELIEF.md section 1)."""

from __future__ import annotations

import math
import random

import pytest

import horcrux.agents.planner  # noqa: F401  (registers the brains)
from horcrux.agents.harry_baselines import SeedHeuristicHarry
from horcrux.belief.heuristic import HeuristicBelief
from horcrux.models import Attack, HarryRecord, Observation, Search
from horcrux.rules import CLASSIC
from horcrux_tools.sim import play_game


def _search(turn: int, loc: str, outcome: str) -> HarryRecord:
    obs = Observation(location=loc, kind="search", outcome=outcome, sensor="harry")
    return HarryRecord(turn=turn, action=Search(location=loc), observations=(obs,))


def _attack(turn: int, loc: str, outcome: str) -> HarryRecord:
    obs = Observation(location=loc, kind="attack", outcome=outcome)
    return HarryRecord(turn=turn, action=Attack(location=loc), observations=(obs,))


def test_positive_triples_and_negative_takes_a_tenth() -> None:
    b = HeuristicBelief(CLASSIC)
    b.update(_search(1, "hogwarts", "positive"))
    # 3 / (3 + 14) after renormalising a uniform map
    assert b.beliefs["hogwarts"] == pytest.approx(3 / 17)
    assert b.beliefs["azkaban"] == pytest.approx(1 / 17)
    b.update(_search(2, "azkaban", "negative"))
    total = 3 + 0.1 + 13
    assert b.beliefs["hogwarts"] == pytest.approx(3 / total)
    assert b.beliefs["azkaban"] == pytest.approx(0.1 / total)
    assert sum(b.beliefs.values()) == pytest.approx(1.0)


def test_destroyed_zeroes_and_k_drops() -> None:
    b = HeuristicBelief(CLASSIC)
    b.update(_attack(1, "gringotts", "destroyed"))
    assert b.beliefs["gringotts"] == 0.0
    assert b.horcruxes_left == 2
    assert sum(b.occupancy().values()) == pytest.approx(2.0)
    b.update(_search(2, "gringotts", "positive"))  # zero stays zero: x3 of 0
    assert b.beliefs["gringotts"] == 0.0


def test_stale_locations_decay_by_point_seven_after_ten_turns() -> None:
    b = HeuristicBelief(CLASSIC)
    b.update(_search(1, "hogwarts", "positive"))
    before = dict(b.beliefs)
    # turn 11: nothing is stale yet (last update 0 or 1, 11 - 10 = 1: 0 < 1 is stale!)
    b.update(_search(11, "hogwarts", "negative"))
    # never-updated locations (last_updated 0 < 1) took x0.7; hogwarts x0.1 (fresh)
    raw = {loc: p * (0.7 if loc != "hogwarts" else 0.1) for loc, p in before.items()}
    total = sum(raw.values())
    for loc, p in raw.items():
        assert b.beliefs[loc] == pytest.approx(p / total)


def test_entropy_and_occupancy() -> None:
    b = HeuristicBelief(CLASSIC)
    b.update(_search(1, "hogwarts", "negative"))
    assert b.entropy() == pytest.approx(-sum(p * math.log2(p) for p in b.beliefs.values()))
    occ = b.occupancy()
    assert sum(occ.values()) == pytest.approx(3.0)
    for _ in range(8):
        b.update(_search(2, "azkaban", "positive"))
    occ = b.occupancy()
    assert max(occ.values()) <= 1.0
    assert sum(occ.values()) == pytest.approx(3.0)


def test_snapshot_round_trip() -> None:
    b = HeuristicBelief(CLASSIC)
    for t in range(1, 15):
        b.update(_search(t, CLASSIC.locations[t % 4], "positive" if t % 3 else "negative"))
    again = HeuristicBelief.restore(CLASSIC, b.snapshot())
    assert again.beliefs == b.beliefs
    assert again.history == b.history


def test_seed_heuristic_brain_attacks_below_one_bit() -> None:
    brain = SeedHeuristicHarry(CLASSIC)
    for t in range(1, 8):
        brain.belief.update(_search(t, "hogwarts", "positive"))
        brain._turn = t
    assert brain.belief.entropy() < 1.0

    class _NoExplore(random.Random):
        def random(self) -> float:
            return 0.99

    from horcrux import engine
    from horcrux.views import harry_view

    state, _ = engine.new_game(CLASSIC, 1)
    move = brain.decide(harry_view(state), _NoExplore(0))
    assert move == Attack(location="hogwarts")


def test_seed_heuristic_plays_and_loses_mostly() -> None:
    results = [play_game(CLASSIC, s, "seed-heuristic", "reference") for s in range(20)]
    assert sum(r.winner == "harry" for r in results) <= 3
    assert all(r.brain_stats["decisions"] > 0 for r in results)
