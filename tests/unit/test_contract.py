"""The brain contract (`horcrux.agents.contract`) and the memory pin's codec (`echo.pin`).

Each built-in brain satisfies exactly the capability protocols listed here: a renamed
method (`sync`, `adopt_memory`, `memory_planner`, ...) fails this test instead of silently turning a
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
    MemoryReader,
    Planner,
    belief_of,
    capabilities,
    decisions_of,
)
from horcrux.echo.pin import MemoryPin, adopt_pin, decode_pin, encode_pin
from horcrux.echo.readers import memory_planner, reads_memory
from horcrux.models import Pass
from horcrux.rules import CLASSIC
from horcrux.service import ECHO_KEY, GameService, SeatRequest
from horcrux.store.memory import MemoryStore

ROOT = Path(__file__).resolve().parents[2]

PLANNER = frozenset(
    {
        "ViewSynced",
        "Planner",
        "MemoryAdopter",
        "MemoryReader",
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
    "gated": frozenset(
        {"MemoryLineReader", "MemoryReader", "DecisionRecorder", "BeliefHolder", "StatsReporter"}
    ),
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
    """A brain whose `memory_planner` was renamed, whose `adopt_memory` lost its name."""

    name = "half"

    def decide(self, view: object, rng: random.Random) -> Pass:
        return Pass()

    def memory_planners(self) -> None:  # the rename
        raise AssertionError("never called: not the protocol's name")

    def adopt_memories(self, models: tuple[Any, ...], params: Mapping[str, float]) -> None:
        raise AssertionError("never called: not the protocol's name")


def test_a_renamed_method_is_no_capability() -> None:
    brain = _Half()
    assert isinstance(brain, Brain) and capabilities(brain) == frozenset()
    assert not isinstance(brain, MemoryReader) and not isinstance(brain, MemoryAdopter)
    assert memory_planner(brain) is None
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
    """Records what `adopt_pin` gave it (a `MemoryAdopter`)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    def adopt_memory(self, models: tuple[Any, ...], params: Mapping[str, float] | None) -> None:
        self.calls.append(("memory", (models, dict(params or {}))))


def test_a_pin_round_trips_and_goes_to_adopt_memory() -> None:
    from horcrux.echo.use import MemoryPlan

    models = learned_models()
    pin = encode_pin(MemoryPlan(models, {"jitter": 0.25}), "relocates at once")
    assert pin is not None
    assert json.loads(pin)["v"] == 2
    assert decode_pin(pin) == MemoryPin(models, {"jitter": 0.25}, "relocates at once")
    brain = _Recorder()
    assert adopt_pin(brain, pin).line == "relocates at once"
    assert brain.calls == [("memory", (models, {"jitter": 0.25}))]
    assert encode_pin(None, None) is None
    line_only = encode_pin(None, "x")
    assert line_only is not None and decode_pin(line_only) == MemoryPin((), {}, "x")


@pytest.mark.parametrize("version", [None, 1, 3, "2"])
def test_a_pin_of_another_version_is_refused_and_given_to_nobody(version: object) -> None:
    models = learned_models()
    body: dict[str, Any] = {"models": [asdict(m) for m in models], "line": "x"}
    if version is not None:
        body["v"] = version
    brain = _Recorder()
    with pytest.raises(ValueError, match=f"version {version!r}: this runtime reads 2"):
        adopt_pin(brain, json.dumps(body).encode())
    assert brain.calls == []


@pytest.mark.parametrize(
    ("spec", "reads"),
    [
        ("planner", True),
        ("gated", True),
        ("planner:trigger", False),
        ("planner-window:8", False),
        ("planner-window:full", False),
        ("seed-heuristic", False),
        ("naive", False),
        ("told", False),
    ],
)
def test_memory_plays_through_what_the_brain_says(spec: str, reads: bool) -> None:
    """`MemoryReader` decides which Harrys cross-game memory is read, written and routed
    for: the planner in the default mode, itself or inside the gated brain."""
    brain = HARRY_BRAINS.create(spec, CLASSIC)
    planner = memory_planner(brain)
    assert (planner is not None) is reads
    assert reads_memory(spec) is reads
    if reads:
        assert isinstance(planner, MemoryAdopter) and isinstance(planner, Planner)
        assert planner is (brain.planner if spec == "gated" else brain)  # type: ignore[attr-defined]


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


def _brain_classes(root: Path) -> set[str]:
    """Every class of the runtime with a `decide` method: the brains, and what they wrap."""
    import ast

    names: set[str] = set()
    for path in root.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef) and any(
                isinstance(f, ast.FunctionDef) and f.name == "decide" for f in node.body
            ):
                names.add(node.name)
    return names


def test_no_runtime_module_tests_a_brain_by_its_class() -> None:
    """Capabilities are protocols: `isinstance(x, PlannerHarry)`, `type(x) is ...` or a
    `getattr` probe of a brain would make a feature depend on a class, not on what the
    brain offers (a subclass, a wrapper or a plugin would silently lose it)."""
    import ast

    root = ROOT / "shared" / "horcrux"
    brains = _brain_classes(root)
    assert {"PlannerHarry", "GatedHarry", "LLMHarry", "ParticleHarry"} <= brains
    found = []
    for path in sorted(root.rglob("*.py")):
        where = path.relative_to(root)
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare):  # type(x) is PlannerHarry
                named = [c.id for c in node.comparators if isinstance(c, ast.Name)]
                if isinstance(node.left, ast.Call) and set(named) & brains:
                    found.append(f"{where}:{node.lineno} compares a class")
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
                args = node.args
                probe = node.func.id in ("getattr", "hasattr") and len(args) >= 2
                if probe and isinstance(args[0], ast.Name) and args[0].id in {"brain", "planner"}:
                    found.append(f"{where}:{node.lineno} probes a brain")
                if node.func.id == "isinstance" and len(args) == 2:
                    named_kinds = args[1].elts if isinstance(args[1], ast.Tuple) else [args[1]]
                    hit = [k.id for k in named_kinds if isinstance(k, ast.Name) and k.id in brains]
                    if hit:
                        found.append(f"{where}:{node.lineno} isinstance {hit}")
    assert found == []
