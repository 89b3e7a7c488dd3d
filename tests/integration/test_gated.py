"""The gated brain: entropy gate -> planner (zero tier) or the LLM with L1 memory."""

from __future__ import annotations

import statistics
from collections.abc import Iterator

import anthropic
import pytest
from fake_anthropic import FakeAnthropic, schema_responder, serve

from horcrux import engine, rng
from horcrux.agents import HARRY_BRAINS, VOLDEMORT_BRAINS
from horcrux.agents.gated import NO_KEY_NOTE, GatedHarry
from horcrux.agents.llm_config import LLMConfig, Price
from horcrux.agents.planner import PlannerHarry
from horcrux.memory.context import render_tier
from horcrux.memory.tokens import estimate_tokens
from horcrux.rules import CLASSIC, STANDARD, RuleSet
from horcrux.views import harry_view, voldemort_view
from horcrux_tools.sim import play_game, run_games

PRICED = LLMConfig(
    model="claude-test",
    prices={"claude-test": Price(input_per_mtok=3.0, output_per_mtok=15.0)},
    timeout_margin_s=0.1,
)


@pytest.fixture(autouse=True)
def no_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")  # nobody listens


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with serve() as server:
        yield server


def play(brain: GatedHarry, rules: RuleSet, seed: int) -> list[object]:
    """Drive one game by hand so the test holds the brain; returns Harry's moves."""
    state, _ = engine.new_game(rules, seed)
    voldemort = VOLDEMORT_BRAINS.create("reference", rules)
    moves: list[object] = []
    while not state.over:
        if state.phase == "harry":
            move = brain.decide(harry_view(state), rng.stream(seed, "harry", state.turn))
            moves.append(move)
            state, _ = engine.apply(state, move)
        else:
            vmove = voldemort.decide(
                voldemort_view(state), rng.stream(seed, "voldemort", state.turn)
            )
            state, _ = engine.apply(state, vmove)
    return moves


def test_without_a_key_the_planner_decides_every_tier_and_says_so() -> None:
    brain = HARRY_BRAINS.create("gated", CLASSIC)
    assert isinstance(brain, GatedHarry) and brain.llm is None
    for seed in range(6):
        brain = HARRY_BRAINS.create("gated", CLASSIC)
        assert isinstance(brain, GatedHarry)
        play(brain, CLASSIC, seed)
        stats = brain.stats()
        assert stats["notes"] == [NO_KEY_NOTE]
        for record in brain.decisions:
            assert record.tokens_in == 0 and record.cost_usd == 0.0
            if record.tier == "zero":
                assert record.context_tokens == 0 and record.fallback_reason is None
            else:
                assert record.source == "planner" and record.fallback_reason == "no_key"
                assert record.context_tokens > 0
    tiers = {r.tier for r in brain.decisions}
    assert "compressed" in tiers


def test_zero_tier_plays_the_planners_move_and_explores_at_epsilon() -> None:
    explored = zero = 0
    for seed in range(30):
        brain = HARRY_BRAINS.create("gated", CLASSIC)
        assert isinstance(brain, GatedHarry)
        shadow = PlannerHarry(CLASSIC)
        state, _ = engine.new_game(CLASSIC, seed)
        voldemort = VOLDEMORT_BRAINS.create("reference", CLASSIC)
        while not state.over:
            if state.phase == "harry":
                view = harry_view(state)
                shadow.sync(view)
                expected = shadow.choose(view).move
                move = brain.decide(view, rng.stream(seed, "harry", state.turn))
                record = brain.decisions[-1]
                if record.source == "explore":
                    explored += 1
                    assert move.type == "search" and move != expected  # type: ignore[union-attr]
                else:
                    assert move == expected  # without a key every tier plays the planner
                zero += record.tier == "zero"
                state, _ = engine.apply(state, move)
            else:
                vmove = voldemort.decide(
                    voldemort_view(state), rng.stream(seed, "voldemort", state.turn)
                )
                state, _ = engine.apply(state, vmove)
    assert zero > 50
    assert 0.03 < explored / zero < 0.2  # epsilon = 0.10


def test_a_move_the_planners_rule_forces_costs_no_tokens(fake: FakeAnthropic) -> None:
    fake.responder = schema_responder(3)
    client = anthropic.Anthropic(api_key="test", base_url=fake.url)
    settings = {"client": client, "config": PRICED, "deadline_s": 5.0, "gate": {"epsilon": 1}}
    brain = HARRY_BRAINS.create("gated", CLASSIC, settings=settings)
    assert isinstance(brain, GatedHarry) and brain.llm is not None
    # turn 46 of 50 with all 7 attacks and nothing known: the map is as unsure as it
    # gets (an upper tier), but the endgame attacks whatever it says
    state, _ = engine.new_game(CLASSIC, 0)
    view = harry_view(state).model_copy(update={"turn": 46})
    assert view.turns_left == 5 <= view.attacks_left
    move = brain.decide(view, rng.stream(0, "harry", 46))
    assert move.type == "attack"
    record = brain.decisions[-1]
    assert (record.tier, record.source, record.tokens_in) == ("zero", "planner", 0)
    assert fake.requests == []  # no LLM call, and epsilon = 1 explored nothing
    # a pinned tier wins over the rule: the LLM is asked
    pinned = HARRY_BRAINS.create(
        "gated", CLASSIC, settings={**settings, "gate": {"force": "compressed"}}
    )
    assert isinstance(pinned, GatedHarry)
    pinned.decide(view, rng.stream(0, "harry", 46))
    assert len(fake.requests) == 1 and pinned.decisions[-1].tier == "compressed"


def test_with_a_key_the_upper_tiers_call_the_llm_with_the_tiers_context(
    fake: FakeAnthropic,
) -> None:
    fake.responder = schema_responder(3)
    client = anthropic.Anthropic(api_key="test", base_url=fake.url)
    brain = HARRY_BRAINS.create(
        "gated",
        STANDARD,
        settings={"client": client, "config": PRICED, "deadline_s": 5.0},
    )
    assert isinstance(brain, GatedHarry) and brain.llm is not None
    play(brain, STANDARD, 4)
    called = [r for r in brain.decisions if r.tier != "zero"]
    assert len(fake.requests) == len(called) > 0
    assert all(r.source == "llm" for r in called)
    assert all(r.tokens_in > 0 and r.cost_usd > 0 for r in called)
    for request, record in zip(fake.requests, called, strict=True):
        tokens = estimate_tokens(request.prompt)
        assert tokens == record.context_tokens
        if record.tier == "compressed":
            assert tokens <= 64 and "Likely" in request.prompt
        else:
            assert record.tier == "full" and 150 <= tokens <= 500
    assert brain.stats()["notes"] == []


def test_a_forced_tier_from_settings() -> None:
    brain = HARRY_BRAINS.create(
        "gated", CLASSIC, settings={"gate": {"force": "full", "epsilon": 0}}
    )
    assert isinstance(brain, GatedHarry)
    play(brain, CLASSIC, 1)
    assert {r.tier for r in brain.decisions} == {"full"}
    assert min(r.context_tokens for r in brain.decisions) >= 150


def test_simulate_reports_tiers_for_gated() -> None:
    result = play_game(CLASSIC, 2, "gated", "reference")
    assert result.brain_stats["notes"] == [NO_KEY_NOTE]
    shares = [t["share"] for t in result.brain_stats["tiers"].values()]
    assert sum(shares) == pytest.approx(1.0)


def test_l1_context_is_within_budget_at_every_turn_of_200_games(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HORCRUX_GATE_FORCE", "compressed")  # render L1 at every decision
    tokens: list[int] = []
    for result in run_games(CLASSIC, "gated", "reference", 200, 1000):
        assert {d.tier for d in result.decisions} == {"compressed"}
        tokens.extend(d.context_tokens for d in result.decisions)
    assert len(tokens) > 200 * 20
    assert statistics.median(tokens) <= 55
    assert max(tokens) <= 64


def test_l1_context_is_97_percent_smaller_than_the_narrative_at_turn_40() -> None:
    ratios = []
    for seed in range(40):
        result = play_game(CLASSIC, seed, "naive", "reference", keep_events=True)
        assert result.events is not None
        state, _ = engine.new_game(CLASSIC, seed)
        planner = PlannerHarry(CLASSIC)
        for event in result.events[1:]:
            if state.phase == "harry" and state.turn == 40:
                view = harry_view(state)
                planner.sync(view)
                compressed = estimate_tokens(render_tier("compressed", view, planner.belief))
                narrative = estimate_tokens(render_tier("narrative", view, planner.belief))
                ratios.append(1 - compressed / narrative)
                break
            state, _ = engine.apply(state, event.action)  # type: ignore[union-attr]
    assert len(ratios) >= 10
    assert statistics.median(ratios) >= 0.97
