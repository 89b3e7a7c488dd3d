"""Who the opponent is, without playing: the family's grid prior, the words, the pin's
opponent, nothing learned (the games are in `integration/test_opponent_games.py`)."""

from __future__ import annotations

import numpy as np
import pytest

from horcrux.agents.family import draw
from horcrux.agents.family_fit import (
    DECOY_CELLS,
    DESTINATION_CELLS,
    OBSERVER_CELLS,
    TRIGGER_CELLS,
    cell_of,
    params_of,
)
from horcrux.agents.particles import Prior
from horcrux.belief.bayes import DEFAULT_MODE, MODES
from horcrux.echo import opponent as who
from horcrux.echo import opponent_words as words
from horcrux.echo.model import EchoMemory
from horcrux.echo.pin import decode_pin, encode_pin
from horcrux.echo.use import MemoryPlan, memory_plan


def test_the_family_prior_is_a_distribution_over_every_cell() -> None:
    p = np.exp(who.log_prior())
    shape = (len(TRIGGER_CELLS), len(OBSERVER_CELLS), len(DESTINATION_CELLS), len(DECOY_CELLS))
    assert p.shape == shape
    assert float(p.sum()) == pytest.approx(1.0, abs=1e-9)
    assert float(p.min()) > 0.0


def test_every_drawn_policy_is_one_cell_of_the_grid() -> None:
    for seed in range(200):
        params = draw(seed)
        cell = cell_of(params)
        back = params_of(*cell)
        if params.member == "generated":
            assert (back.trigger, back.observer, back.destination, back.decoys) == (
                params.trigger,
                params.observer,
                params.destination,
                params.decoys,
            )
            assert cell_of(back) == cell


def test_nothing_learned_plays_nothing() -> None:
    assert who.plan_prior(None) is None
    assert memory_plan(EchoMemory(agent="planner", opponent="family")) is None


def test_the_words_are_a_players_not_the_codes() -> None:
    for seed in range(40):
        text = words.describe(who.canonical(draw(seed)))
        assert not any(code in text for code in ("=", "bayes", "observer", "tally:", "*"))


def test_the_pin_carries_the_opponent_compactly_and_refuses_a_malformed_one() -> None:
    policies = tuple(who.canonical(draw(s)) for s in (37, 9, 1))
    prior = Prior("memory:3", policies, (0.7, 0.2, 0.1))
    pin = encode_pin(MemoryPlan(MODES[DEFAULT_MODE], {}, prior), None)
    bare = encode_pin(MemoryPlan(MODES[DEFAULT_MODE]), None)
    assert pin is not None and bare is not None and len(pin) - len(bare) < 40 * len(policies)
    got = decode_pin(pin).opponent
    assert got is not None and got.weights == prior.weights
    assert got.policies == policies
    for bad in (b'{"v": 2, "opponent": []}', b'{"v": 2, "opponent": [[0, 0, 0, 0, -1]]}'):
        with pytest.raises((ValueError, TypeError)):
            decode_pin(bad)


def test_the_identification_table_counts_classes_named_right() -> None:
    from horcrux_tools.echo.family_seasons import classes_of, identification_table

    assert classes_of("member=reference") == ("positive", "-")
    assert classes_of(draw(37).describe()) == ("threshold", "bayes-moving")
    seasons = [
        {
            "describe": draw(37).describe(),
            "identified": {"1": draw(9).describe(), "5": draw(37).describe()},
        },
        {
            "describe": draw(9).describe(),
            "identified": {"1": draw(9).describe(), "5": draw(9).describe()},
        },
    ]
    lines = identification_table(seasons)
    assert "| 1 | 1/2 | 1/2 | 1/2 (50%) |" in lines
    assert "| 5 | 2/2 | 2/2 | 2/2 (100%) |" in lines
    assert "| threshold | 0 | 1 | 0 | 0 | 0 |" in lines
