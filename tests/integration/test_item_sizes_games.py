"""The hot path's items over whole games (the slow half of tests/unit/test_item_sizes.py):
the snapshot and the event under 1 KB at every turn of each kind of game, and the planner
rebuilt from its view deciding as the restored one over many games."""

from __future__ import annotations

import numpy as np
import pytest
from test_item_sizes import GAME_KINDS, ONE_KB, play_kind

from horcrux import engine, rng
from horcrux.agents import VOLDEMORT_BRAINS
from horcrux.agents.planner import PlannerHarry
from horcrux.belief.bayes import MODES
from horcrux.models import AnyAction
from horcrux.rules import CLASSIC, STANDARD, RuleSet
from horcrux.store import capacity, read_log
from horcrux.views import harry_view, voldemort_view

pytestmark = pytest.mark.slow


@pytest.mark.parametrize(("rules", "harry", "voldemort"), GAME_KINDS)
def test_the_snapshot_and_the_event_stay_under_one_kb_at_every_turn(
    rules: str, harry: str, voldemort: str
) -> None:
    for seed in (1, 2):
        store, gid = play_kind(rules, harry, voldemort, seed)
        items = store.raw_items(gid)
        started = items[1]
        assert started["type"] == {"S": "game_started"}
        assert capacity.item_size(started) < ONE_KB
        assert store.sizes and store.sizes[0][0] == 1
        for turn, seat, snap_bytes, event_bytes in store.sizes:
            where = f"seed {seed} turn {turn} {seat}: snapshot {snap_bytes} event {event_bytes}"
            assert snap_bytes < ONE_KB and event_bytes < ONE_KB, where
            assert capacity.read_units(snap_bytes) == 1.0, where
            units = capacity.write_units(snap_bytes, transactional=True) + capacity.write_units(
                event_bytes, transactional=True
            )
            assert units == 4.0, where
        if harry.startswith("ai:planner"):  # a point per Harry move, in the log
            history = read_log(store, gid)[1]
            harry_turns = [t for t, s, _, _ in store.sizes if s == "harry"]
            assert [p.turn for p in history] == harry_turns
            assert "harry" not in store.load(gid).beliefs


@pytest.mark.parametrize("rules", [CLASSIC, STANDARD], ids=["classic", "standard"])
@pytest.mark.parametrize("mode", MODES)
def test_the_planner_rebuilt_from_its_view_decides_as_the_restored_one(
    rules: RuleSet, mode: str
) -> None:
    voldemort = VOLDEMORT_BRAINS.create("reference", rules)
    decisions = 0
    for seed in range(3):
        state, _ = engine.new_game(rules, seed)
        blob = PlannerHarry(rules, mode).snapshot()
        while not state.over:
            if state.phase == "voldemort":
                move: AnyAction = voldemort.decide(
                    voldemort_view(state), rng.stream(seed, "voldemort", state.turn)
                )
            else:
                view = harry_view(state)
                restored = PlannerHarry.restore(rules, blob)  # the old path: blob per turn
                restored.sync(view)
                rebuilt = PlannerHarry(rules, mode)  # the new path: nothing stored
                rebuilt.sync(view)
                assert np.array_equal(restored.belief.marginals(), rebuilt.belief.marginals())
                assert restored.belief.entropy() == rebuilt.belief.entropy()
                move = restored.choose(view).move
                assert rebuilt.choose(view).move == move, f"seed {seed} turn {state.turn}"
                blob = restored.snapshot()
                decisions += 1
            state, _ = engine.apply(state, move)
    assert decisions >= 30
