"""Shared test helpers: states with known truth and seeds with known dice."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from horcrux import engine, rng
from horcrux.models import GameState
from horcrux.rules import CLASSIC, STANDARD, RuleSet


def make_state(
    rules: RuleSet = CLASSIC,
    seed: int = 0,
    horcruxes: tuple[str, ...] = ("azkaban", "gringotts", "hogwarts"),
    **changes: Any,
) -> GameState:
    """A fresh game whose truth is set by hand (the engine's rules still apply)."""
    state, _ = engine.new_game(rules, seed)
    return state.model_copy(update={"horcruxes": tuple(sorted(horcruxes)), **changes})


def seed_with(turn: int, index: int, wanted: Callable[[float], bool], start: int = 0) -> int:
    """The first seed whose sensor draw (turn, index) satisfies `wanted`."""
    seed = start
    while not wanted(rng.unit(seed, "sensor", turn, index)):
        seed += 1
    return seed


@pytest.fixture
def classic() -> RuleSet:
    return CLASSIC


@pytest.fixture
def standard() -> RuleSet:
    return STANDARD
