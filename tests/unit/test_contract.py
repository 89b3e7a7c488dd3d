"""The brain contract (`horcrux.agents.contract`) and the memory pin's codec (`echo.pin`).

Each built-in brain satisfies exactly the capability protocols listed here: a renamed
method (`snapshot`, `adopt_memory`, ...) fails this test instead of silently turning a
feature off in the service.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

import pytest

from horcrux import play
from horcrux.agents import HARRY_BRAINS, VOLDEMORT_BRAINS
from horcrux.agents.contract import (
    BeliefHolder,
    Brain,
    MemoryAdopter,
    MemoryLineReader,
    ModelAdopter,
    Persistent,
    belief_of,
    capabilities,
    decisions_of,
)
from horcrux.echo.pin import MemoryPin, adopt_pin, decode_pin, encode_pin
from horcrux.models import Pass
from horcrux.rules import CLASSIC, RuleSet
from horcrux.service import ECHO_KEY, GameService, SeatRequest
from horcrux.store.memory import MemoryStore

ROOT = Path(__file__).resolve().parents[2]

PLANNER = frozenset(
    {
        "Persistent",
        "ViewSynced",
        "MemoryAdopter",
        "ModelAdopter",
        "DecisionRecorder",
        "BeliefHolder",
        "StatsReporter",
    }
)
HARRY_CAPABILITIES: dict[str, frozenset[str]] = {
    "naive": frozenset(),
    "oracle": frozenset(),
    "planner": PLANNER,
    "planner-window": PLANNER,
    "seed-heuristic": frozenset({"DecisionRecorder", "BeliefHolder", "StatsReporter"}),
    "gated": frozenset({"MemoryLineReader", "DecisionRecorder", "BeliefHolder", "StatsReporter"}),
    "llm": frozenset({"DecisionRecorder", "StatsReporter"}),
    "told": frozenset({"ViewSynced", "DecisionRecorder", "BeliefHolder", "StatsReporter"}),
    "untold": frozenset({"ViewSynced", "DecisionRecorder", "BeliefHolder", "StatsReporter"}),
}
VOLDEMORT_CAPABILITIES: dict[str, frozenset[str]] = {
    "reference": frozenset(),
    "passive": frozenset(),
    "random": frozenset(),
    "delayed": frozenset(),
    "shadow": frozenset(),
    "late": frozenset(),
    "decoy-heavy": frozenset(),
    "mirror": frozenset({"MemoryAdopter"}),
    "ambush": frozenset({"MemoryAdopter"}),
    "family": frozenset({"MemoryAdopter"}),  # passed on to a copy observer's copy
    "llm": frozenset({"DecisionRecorder", "StatsReporter"}),
}


def build(seat: str, name: str) -> object:
    """A built-in brain as a game builds it (the LLM brains with a key: no call is made)."""
    registry = HARRY_BRAINS if seat == "harry" else VOLDEMORT_BRAINS
    game = play.new_game(CLASSIC, 0)
    settings = {"api_key": "test-key"} if name == "llm" else {}
    spec = "family:1" if name == "family" else name  # family needs its seed
    return registry.create(spec, CLASSIC, truth=game.truth, settings=settings)


def test_every_built_in_brain_is_listed() -> None:
    """A new built-in brain must say here which capabilities it has."""
    assert set(HARRY_BRAINS.names()) == set(HARRY_CAPABILITIES)
    assert set(VOLDEMORT_BRAINS.names()) == set(VOLDEMORT_CAPABILITIES)


@pytest.mark.parametrize(
    ("seat", "name", "expected"),
    [("harry", n, c) for n, c in HARRY_CAPABILITIES.items()]
    + [("voldemort", n, c) for n, c in VOLDEMORT_CAPABILITIES.items()],
)
def test_each_built_in_brain_satisfies_exactly_its_protocols(
    seat: str, name: str, expected: frozenset[str]
) -> None:
    brain = build(seat, name)
    assert isinstance(brain, Brain)
    assert capabilities(brain) == expected


class _Half:
    """A brain whose `restore` was renamed, whose `adopt_memory` lost its name."""

    name = "half"

    def decide(self, view: object, rng: random.Random) -> Pass:
        return Pass()

    def snapshot(self) -> bytes:
        return b""

    @classmethod
    def restor(cls, rules: RuleSet, data: bytes) -> _Half:  # the rename
        return cls()

    def adopt_memories(self, models: tuple[Any, ...], params: Mapping[str, float]) -> None:
        raise AssertionError("never called: not the protocol's name")


def test_a_renamed_method_is_no_capability() -> None:
    brain = _Half()
    assert isinstance(brain, Brain) and capabilities(brain) == frozenset()
    assert not isinstance(brain, Persistent) and not isinstance(brain, MemoryAdopter)
    assert belief_of(brain) is None and decisions_of(brain) == []


def test_the_service_checks_protocols_and_never_probes_or_tests_the_class() -> None:
    source = (ROOT / "shared" / "horcrux" / "service" / "ai.py").read_text()
    assert "getattr(" not in source
    assert "GatedHarry" not in source
    assert "horcrux.belief" not in source  # the pin is decoded by ECHO (`echo.pin`)
    for protocol in ("MemoryAdopter", "MemoryLineReader"):
        assert f"isinstance(brain, {protocol})" in source
    # no brain state is stored between turns: no snapshot taken, none restored
    assert "Persistent" not in source and ".restore(" not in source and ".snapshot()" not in source
    assert "type(" not in source and ".__class__" not in source


# ---------------------------------------------------------------- the memory pin
def learned_models() -> tuple[Any, ...]:
    from horcrux.echo.use import joined_models, rate_models

    models = joined_models(rate_models({"relocates": 0.9, "immediate": 0.2}))
    assert models
    return models


class _Recorder:
    """Records what `adopt_pin` gave it (a `MemoryAdopter` and a `ModelAdopter`)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def adopt_memory(self, models: tuple[Any, ...], params: Mapping[str, float] | None) -> None:
        self.calls.append(("memory", (models, dict(params or {}))))

    def adopt_models(self, models: tuple[Any, ...]) -> None:
        self.calls.append(("models", models))


def test_a_pin_round_trips_and_goes_to_adopt_memory() -> None:
    from horcrux.echo.use import MemoryPlan

    models = learned_models()
    pin = encode_pin(MemoryPlan(models, {"jitter": 0.25}), "relocates at once")
    assert pin is not None
    assert json.loads(pin)["v"] == 2
    assert decode_pin(pin) == MemoryPin(models, {"jitter": 0.25}, "relocates at once", 2)
    brain = _Recorder()
    assert adopt_pin(brain, pin).line == "relocates at once"
    assert brain.calls == [("memory", (models, {"jitter": 0.25}))]
    assert encode_pin(None, None) is None
    line_only = encode_pin(None, "x")
    assert line_only is not None and decode_pin(line_only) == MemoryPin((), {}, "x", 2)


def test_an_old_pin_is_joined_by_a_model_adopter_only() -> None:
    models = learned_models()
    old = json.dumps({"models": [asdict(m) for m in models]}).encode()  # no "v"
    brain = _Recorder()
    adopt_pin(brain, old)
    assert brain.calls == [("models", models)]
    mirror = build("voldemort", "mirror")  # a MemoryAdopter, no ModelAdopter
    assert isinstance(mirror, MemoryAdopter) and not isinstance(mirror, ModelAdopter)
    assert adopt_pin(mirror, old).models == models  # decoded, given to nobody


@pytest.mark.parametrize(
    ("pin", "error"),
    [
        (b"{not json", ValueError),
        (b"\xff\xfe", ValueError),
        (b"[1, 2]", TypeError),
        (b'{"v": 2, "models": [{"name": "x", "nonsense": 1}]}', TypeError),
    ],
)
def test_a_malformed_pin_is_a_value_or_type_error(pin: bytes, error: type[Exception]) -> None:
    with pytest.raises(error):
        adopt_pin(_Recorder(), pin)


def test_a_gated_harry_reads_the_pinned_memory_line() -> None:
    """The gated Harry's capability (`MemoryLineReader`): the line goes into its L1 context."""
    store = MemoryStore()
    service = GameService(store)
    created = service.create_game(
        SeatRequest(kind="ai", brain="gated"), SeatRequest(kind="human"), seed=5
    )
    snapshot = store.load(created.game_id)
    pin = json.dumps({"v": 2, "models": None, "line": "relocates at once"}).encode()
    pinned = snapshot.model_copy(update={"beliefs": {ECHO_KEY: pin}})
    made = service.make_brain(pinned, "harry")
    assert isinstance(made.brain, MemoryLineReader) and isinstance(made.brain, BeliefHolder)
    assert made.brain.memory.memory_line == "relocates at once"  # type: ignore[attr-defined]
    assert made.pin == pin
    bare = service.make_brain(snapshot, "harry").brain
    assert bare.memory.memory_line is None  # type: ignore[attr-defined]
