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


TEST_AWS_ENV = {
    "AWS_DEFAULT_REGION": "eu-west-1",
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_SECURITY_TOKEN": "testing",
    "AWS_SESSION_TOKEN": "testing",
    "AWS_ACCOUNT_ID_ENDPOINT_MODE": "disabled",  # moto's in-process streams need it
    "HORCRUX_EVENTS_TABLE": "test-events",
    "HORCRUX_GAMES_TABLE": "test-games",
    "HORCRUX_IDEMPOTENCY_TABLE": "test-idempotency",
    "POWERTOOLS_METRICS_NAMESPACE": "HorcruxHuntTest",
    "POWERTOOLS_LOG_LEVEL": "WARNING",
}
TEST_AWS_UNSET = ("AWS_PROFILE", "HORCRUX_DYNAMODB_ENDPOINT", "HORCRUX_TTL_DAYS")


def set_aws_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fake credentials and a region, so nothing can reach AWS; test table names."""
    for name, value in TEST_AWS_ENV.items():
        monkeypatch.setenv(name, value)
    for name in TEST_AWS_UNSET:
        monkeypatch.delenv(name, raising=False)


class Clock:
    """A settable clock for the store's TTL arithmetic."""

    def __init__(self, now: float = 1_700_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def classic() -> RuleSet:
    return CLASSIC


@pytest.fixture
def standard() -> RuleSet:
    return STANDARD
