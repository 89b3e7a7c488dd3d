"""Shared test helpers: states with known truth and seeds with known dice; the test tiers.

The tiers are folders (tests/README.md has the rule for each); a test's folder is its tier,
applied here as a marker of the folder's name (`unit`, `contract`, `integration`, `system`,
`infra`, registered in pyproject.toml). The older markers still work: `synth` is the infra
folder, `server` the system folder, `moto` any test on a moto fixture (below), `slow` a
test's own mark (a second or more on its own), `model` a test's own mark (the real local
model server). `make unit` runs tests/unit, `make test` every folder.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from tier_rules import forbidden_imports

from horcrux import engine, rng
from horcrux.models import GameStarted, GameState
from horcrux.rules import CLASSIC, STANDARD, RuleSet

if TYPE_CHECKING:
    from api_fixtures import ApiClient

    from horcrux.store import DynamoDbStore, MemoryStore
    from horcrux.store.port import AnyEvent


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


def commit_moves(store: Any, game_id: str, events: Sequence[AnyEvent] | None) -> None:
    """Commit a played game's moves (its `events` after `game_started`, as `sim.play_game`
    keeps them) to the stored game `game_id`, one turn after another, as its seats would."""
    assert events is not None
    snap = store.load(game_id)
    state = snap.state
    for event in events[1:]:
        assert not isinstance(event, GameStarted)
        state, stored = engine.apply(state, event.action)
        snap = store.commit_turn(snap.version, snap.advanced(state), stored)


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


@pytest.fixture(autouse=True)
def _private_player_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """`horcrux play`'s player key goes to the test's own folder, never ~/.config."""
    monkeypatch.setenv("HORCRUX_PLAYER_FILE", str(tmp_path / "player_key"))


@pytest.fixture
def classic() -> RuleSet:
    return CLASSIC


@pytest.fixture
def standard() -> RuleSet:
    return STANDARD


@pytest.fixture
def dynamo(monkeypatch: pytest.MonkeyPatch) -> Iterator[DynamoDbStore]:
    """mock_aws with the games, events (stream) and idempotency tables (api_fixtures'
    `moto_tables`): the store, to inspect what was written. A module's own `dynamo` wins."""
    from api_fixtures import moto_tables  # moto is imported only by the tests that use it

    yield from moto_tables(monkeypatch)


@pytest.fixture(params=["memory", "dynamodb"])
def store(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[DynamoDbStore | MemoryStore]:
    """Each adapter in turn: a `MemoryStore`, then a `DynamoDbStore` over moto's games and
    events tables (api_fixtures' `memory_or_moto`). A module's own `store` wins."""
    from api_fixtures import memory_or_moto

    yield from memory_or_moto(request.param, monkeypatch)


@pytest.fixture
def api(dynamo: DynamoDbStore) -> ApiClient:
    """The API Lambda's handler, loaded fresh over the `dynamo` tables."""
    from api_fixtures import ApiClient, load_handler

    return ApiClient(load_handler("api"))


# ---------------------------------------------------------------- tiers
TESTS = Path(__file__).resolve().parent
TIERS = ("unit", "contract", "integration", "system", "infra")
"""The tier folders under tests/, fastest first."""
TIER_MARKS = {"system": ("server",), "infra": ("synth",)}
"""The older markers each tier's folder implies (`-m server`, `-m synth` still select them)."""
SLOW_TESTS = {
    "test_compaction.py": {"test_a_corrupted_snapshot_is_repaired_from_the_events"},
    "test_gated.py": {"test_l1_context_is_within_budget_at_every_turn_of_200_games"},
}
"""Slow tests of files whose other tests are fast (a file's own `pytest.mark.slow` works
too). A name here that its file no longer has is a collection error, not a silent pass; a
slow test in tests/unit is one too (the unit tier is the fast one)."""
MOTO_FIXTURES = {"dynamo", "secrets"}
"""Fixtures that open `mock_aws` (and the fixtures built on them)."""
MOTO_PARAMS = {"store": "dynamodb"}
"""Fixtures parametrized over both adapters: the DynamoDB variant runs on moto."""


def tier_of(path: Path) -> str:
    """The tier of a test file: the tier folder it sits in under tests/."""
    parts = path.resolve().relative_to(TESTS).parts
    if len(parts) < 2 or parts[0] not in TIERS:
        raise pytest.UsageError(f"{path}: a test file belongs in a tier folder {TIERS}")
    return parts[0]


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> None:
    """The unit tier's rules at collection: a test file in tests/unit that imports
    `subprocess`, `socket` or `moto` is a collection error naming the import (tier_rules.py);
    such a test belongs in tests/integration."""
    if not (file_path.name.startswith("test_") and file_path.suffix == ".py"):
        return None
    if tier_of(file_path) != "unit":
        return None
    found = forbidden_imports(file_path.read_text(encoding="utf-8"))
    if found:
        raise pytest.UsageError(
            f"{file_path.name} breaks the unit tier's rules (tests/README.md): "
            f"{'; '.join(found)}; move the test to tests/integration"
        )
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    seen: dict[str, set[str]] = {}
    for item in items:
        path = Path(str(item.path))
        tier = tier_of(path)
        for mark in (tier, *TIER_MARKS.get(tier, ())):
            item.add_marker(mark)
        file = path.name
        name = getattr(item, "originalname", item.name)
        seen.setdefault(file, set()).add(name)
        if name in SLOW_TESTS.get(file, ()):
            item.add_marker("slow")
        if tier == "unit" and item.get_closest_marker("slow") is not None:
            raise pytest.UsageError(f"{item.nodeid} is marked slow: it belongs outside tests/unit")
        params = getattr(item, "callspec", None)
        on_moto = MOTO_FIXTURES & set(getattr(item, "fixturenames", ())) or any(
            params is not None and params.params.get(name) == value
            for name, value in MOTO_PARAMS.items()
        )
        if on_moto:
            item.add_marker("moto")
    for file, names in SLOW_TESTS.items():
        if file in seen and names - seen[file]:
            missing = sorted(names - seen[file])
            raise pytest.UsageError(f"conftest SLOW_TESTS: {file} has no {missing}")
