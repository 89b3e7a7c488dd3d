"""The entropy gate: its measure, tiers, configuration, exploration and decision log."""

from __future__ import annotations

import json
import math
import random

import pytest
from pydantic import ValidationError

from horcrux.decisions import DecisionRecord
from horcrux.memory import (
    MEASURES,
    DecisionLog,
    EntropyGate,
    GateConfig,
    entropy_bits,
    exploration_target,
    format_summary,
    gate_measure,
    percentile,
    top_occupancy_floor,
)
from horcrux.rules import LOCATIONS

UNIFORM = dict.fromkeys(LOCATIONS, 3 / 15)
SURE = {loc: (0.999 if i < 3 else 0.003 / 12) for i, loc in enumerate(LOCATIONS)}


def random_valid_map(rng: random.Random, k: int) -> dict[str, float]:
    """A valid occupancy map: a random mixture of k-sets (each occupancy <= 1, sum k)."""
    occ = dict.fromkeys(LOCATIONS, 0.0)
    weights = [rng.random() ** 3 for _ in range(rng.randint(1, 6))]
    total = sum(weights)
    for w in weights:
        for loc in rng.sample(LOCATIONS, k):
            occ[loc] += w / total
    return occ


# ---------------------------------------------------------------- the measure
@pytest.mark.parametrize("measure", MEASURES)
def test_measure_near_zero_when_sure_of_all_three(measure: str) -> None:
    assert gate_measure(SURE, 3, measure) < 0.05  # type: ignore[arg-type]
    exact = {loc: (1.0 if i < 3 else 0.0) for i, loc in enumerate(LOCATIONS)}
    assert gate_measure(exact, 3, measure) == 0.0  # type: ignore[arg-type]


@pytest.mark.parametrize("measure", MEASURES)
def test_measure_is_maximal_when_uniform(measure: str) -> None:
    assert math.isclose(gate_measure(UNIFORM, 3, measure), math.log2(5))  # type: ignore[arg-type]
    one_left = dict.fromkeys(LOCATIONS, 1 / 15)
    assert math.isclose(gate_measure(one_left, 1, measure), math.log2(15))  # type: ignore[arg-type]
    assert gate_measure(UNIFORM, 3, measure) >= EntropyGate().config.high  # type: ignore[arg-type]


def test_measure_raw_entropy_would_not_reach_zero() -> None:
    """Why the excess: the plain entropy of a sure 3-Horcrux map is still log2(3)."""
    assert math.isclose(entropy_bits(SURE.values()), math.log2(3), abs_tol=0.02)
    assert entropy_bits(SURE.values()) > 1.0 > gate_measure(SURE, 3)


def test_measure_edge_cases() -> None:
    assert gate_measure(UNIFORM, 0) == 0.0
    assert gate_measure(dict.fromkeys(LOCATIONS, 0.0), 3) == 0.0
    assert gate_measure({}, 2) == 0.0
    over_cap = {"a": 2.0, "b": 1.0}  # invalid map (occupancy above 1): clipped at 0
    assert gate_measure(over_cap, 3, "shannon") == 0.0
    assert gate_measure(over_cap, 3, "min-entropy") == 0.0
    with pytest.raises(ValueError, match="unknown gate measure"):
        gate_measure(UNIFORM, 3, "renyi")  # type: ignore[arg-type]


def test_min_entropy_is_the_top_surprisal() -> None:
    occ = dict.fromkeys(LOCATIONS, 0.1)
    occ["hogwarts"] = 0.6
    occ["azkaban"] = 0.3
    total = sum(occ.values())
    k = round(total)
    assert math.isclose(gate_measure(occ, k), -math.log2(k * 0.6 / total))


def test_measure_bounds_on_random_valid_maps() -> None:
    rng = random.Random(7)
    for _ in range(500):
        k = rng.randint(1, 3)
        occ = random_valid_map(rng, k)
        e_min = gate_measure(occ, k, "min-entropy")
        e_sh = gate_measure(occ, k, "shannon")
        assert 0.0 <= e_min <= e_sh + 1e-9 <= math.log2(15 / k) + 1e-9
        top = max(occ.values())
        assert math.isclose(top, top_occupancy_floor(e_min), rel_tol=1e-9)
        assert top >= top_occupancy_floor(e_sh) - 1e-9


# ---------------------------------------------------------------- tiers
def test_tiers_at_default_thresholds() -> None:
    gate = EntropyGate()
    low, high = gate.config.low, gate.config.high
    assert (low, high, gate.config.epsilon) == (1.0, 2.0, 0.10)
    assert gate.tier(0.0) == "zero"
    assert gate.tier(math.nextafter(low, 0.0)) == "zero"
    assert gate.tier(low) == "compressed"
    assert gate.tier(math.nextafter(high, 0.0)) == "compressed"
    assert gate.tier(high) == "full"
    assert gate.tier(10.0) == "full"


def test_tiers_with_custom_thresholds_and_force() -> None:
    gate = EntropyGate(GateConfig(low=0.5, high=0.5))
    assert [gate.tier(x) for x in (0.49, 0.5, 3.0)] == ["zero", "full", "full"]
    forced = EntropyGate(GateConfig(force="narrative"))
    assert {forced.tier(x) for x in (0.0, 1.5, 9.0)} == {"narrative"}


def test_config_validation() -> None:
    with pytest.raises(ValidationError, match="low <= high"):
        GateConfig(low=2.0, high=1.0)
    with pytest.raises(ValidationError):
        GateConfig(epsilon=1.5)
    with pytest.raises(ValidationError):
        GateConfig(low=-0.1)


def test_config_from_env() -> None:
    env = {
        "HORCRUX_GATE_LOW": "0.5",
        "HORCRUX_GATE_HIGH": " 1.75 ",
        "HORCRUX_GATE_EPSILON": "0",
        "HORCRUX_GATE_MEASURE": "shannon",
        "HORCRUX_GATE_FORCE": "",
    }
    config = GateConfig.from_env(env)
    assert config == GateConfig(low=0.5, high=1.75, epsilon=0.0, measure="shannon")
    assert GateConfig.from_env(env, epsilon=0.2).epsilon == 0.2
    assert GateConfig.from_env({}) == GateConfig()
    assert EntropyGate.from_env({"HORCRUX_GATE_FORCE": "full"}).tier(0.0) == "full"
    with pytest.raises(ValueError, match="HORCRUX_GATE_HIGH must be a number"):
        GateConfig.from_env({"HORCRUX_GATE_HIGH": "lots"})
    with pytest.raises(ValueError, match="HORCRUX_GATE_FORCE must be one of"):
        GateConfig.from_env({"HORCRUX_GATE_FORCE": "huge"})
    with pytest.raises(ValidationError):
        GateConfig.from_env({"HORCRUX_GATE_LOW": "3.0"})  # above the default high


def test_config_from_process_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HORCRUX_GATE_LOW", "0.25")
    monkeypatch.setenv("HORCRUX_GATE_EPSILON", "0.3")
    monkeypatch.delenv("HORCRUX_GATE_HIGH", raising=False)
    config = GateConfig.from_env()
    assert (config.low, config.high, config.epsilon) == (0.25, 2.0, 0.3)


def test_measure_choice_changes_the_tier() -> None:
    """Sure of one Horcrux, clueless about two: an easy attack, a spread-out map."""
    occ = dict.fromkeys(LOCATIONS, 2 / 14)
    occ["hogwarts"] = 0.98
    total = sum(occ.values())
    occ = {loc: 3 * v / total for loc, v in occ.items()}
    assert EntropyGate().route(occ, 3, random.Random(1)).tier == "zero"
    shannon = EntropyGate(GateConfig(measure="shannon"))
    decision = shannon.route(occ, 3, random.Random(1))
    assert decision.tier == "compressed" and decision.measure > 1.8


# ---------------------------------------------------------------- exploration
@pytest.mark.parametrize("epsilon", [0.10, 0.25])
def test_epsilon_frequency(epsilon: float) -> None:
    gate = EntropyGate(GateConfig(epsilon=epsilon))
    rng = random.Random(20240611)
    share = sum(gate.explore(rng) for _ in range(10_000)) / 10_000
    assert abs(share - epsilon) < 4 * math.sqrt(epsilon * (1 - epsilon) / 10_000)


def test_epsilon_extremes_and_seeding() -> None:
    never = EntropyGate(GateConfig(epsilon=0.0))
    always = EntropyGate(GateConfig(epsilon=1.0))
    rng = random.Random(3)
    assert not any(never.explore(rng) for _ in range(1000))
    assert all(always.explore(rng) for _ in range(1000))
    gate = EntropyGate()
    a = [gate.explore(random.Random(s)) for s in range(200)]
    b = [gate.explore(random.Random(s)) for s in range(200)]
    assert a == b


def test_route_explores_only_in_zero_tier_and_draws_once() -> None:
    gate = EntropyGate(GateConfig(epsilon=1.0))
    for occ, tier in ((SURE, "zero"), (UNIFORM, "full")):
        rng, twin = random.Random(11), random.Random(11)
        decision = gate.route(occ, 3, rng)
        twin.random()
        assert rng.getstate() == twin.getstate()
        assert decision.tier == tier
        assert decision.explore == (tier == "zero")
        assert math.isclose(decision.measure, gate.measure(occ, 3))


def test_exploration_target_never_the_top() -> None:
    occ = dict(UNIFORM)
    occ["azkaban"] = 0.9
    rng = random.Random(5)
    picks = {exploration_target(occ, rng) for _ in range(2000)}
    assert "azkaban" not in picks
    assert picks == set(LOCATIONS) - {"azkaban"}
    assert exploration_target({"only": 1.0}, rng) == "only"
    with pytest.raises(ValueError):
        exploration_target({}, rng)


# ---------------------------------------------------------------- the decision log
def _records() -> list[DecisionRecord]:
    out = [DecisionRecord(turn=t, tier="zero", source="planner") for t in (1, 2)]
    for t, tokens in enumerate((40, 42, 44, 50, 60), start=3):
        out.append(
            DecisionRecord(
                turn=t,
                tier="compressed",
                source="llm",
                tokens_in=tokens + 100,
                tokens_out=20,
                context_tokens=tokens,
                latency_ms=500.0 + t,
                cost_usd=0.001,
            )
        )
    for t, tokens in enumerate((300, 320, 400), start=8):
        out.append(
            DecisionRecord(
                turn=t,
                tier="full",
                source="fallback" if t == 10 else "llm",
                tokens_in=tokens + 100,
                tokens_out=30,
                context_tokens=tokens,
                latency_ms=900.0,
                cost_usd=0.002,
                fallback_reason="timeout" if t == 10 else None,
            )
        )
    return out


def test_decision_log_summary() -> None:
    log = DecisionLog(_records()[:4])
    log.extend(_records()[4:9])
    log.add(_records()[9])
    assert len(log) == 10
    s = log.summary()
    json.dumps(s)  # JSON-able
    assert s["decisions"] == 10
    tiers = s["tiers"]
    assert {t: tiers[t]["share"] for t in tiers} == {
        "zero": 0.2,
        "compressed": 0.5,
        "full": 0.3,
        "narrative": 0.0,
    }
    assert tiers["compressed"]["context_tokens_median"] == 44.0
    assert tiers["compressed"]["context_tokens_p95"] == 60.0
    assert tiers["full"]["context_tokens_median"] == 320.0
    assert tiers["narrative"]["context_tokens_median"] is None
    # all ten: 0 0 40 42 44 50 60 300 320 400
    assert s["context_tokens"] == {"median": 47.0, "p95": 400.0, "max": 400.0}
    assert s["context_tokens_sent"] == {"median": 55.0, "p95": 400.0, "max": 400.0}
    assert s["tokens"] == {"in": 736 + 1320, "out": 5 * 20 + 3 * 30, "total": 2246}
    assert s["latency_ms"]["p95"] == 900.0
    assert math.isclose(s["cost_usd"], 0.011)
    assert s["sources"] == {"fallback": 1, "llm": 7, "planner": 2}
    assert s["fallbacks"] == {"timeout": 1}
    text = format_summary(s)
    assert "zero 20%, compressed 50%, full 30%" in text
    assert "compressed 44/60" in text and "full 320/400" in text


def test_empty_decision_log() -> None:
    s = DecisionLog().summary()
    json.dumps(s)
    assert s["decisions"] == 0 and s["context_tokens"]["median"] is None
    assert all(t["share"] == 0.0 for t in s["tiers"].values())
    assert "decisions 0: none" in format_summary(s)


def test_percentile_nearest_rank() -> None:
    values = list(range(1, 101))
    assert percentile(values, 95) == 95
    assert percentile(values, 100) == 100
    assert percentile([7.0], 95) == 7.0
    assert percentile([], 50) is None
    assert percentile([1, 2, 3, 4], 50) == 2


def test_exploration_target_ties_near_equal_tops_to_the_first_listed() -> None:
    # "b" is above "a" only in its last bits (0.1 + 0.2 = 0.30000000000000004): the top is
    # the first listed, "a", on every machine, and only the others are explored
    occ = {"a": 0.3, "b": 0.1 + 0.2, "c": 0.2}
    rng = random.Random(3)
    assert {exploration_target(occ, rng) for _ in range(200)} == {"b", "c"}
