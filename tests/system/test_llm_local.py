"""A real model plays: the `llm` and `gated` brains through the real anthropic SDK against
llama.cpp's `llama-server` running SmolLM2-135M-Instruct on this machine.

Needs `horcrux model build` first (.ci/run does it; the cache is reused); without the cache
these tests fail and say so. tests/integration/test_llm_backends.py covers the failure paths
against a fake endpoint.
"""

from __future__ import annotations

import random
from collections.abc import Iterator

import pytest

from horcrux import engine, rng
from horcrux.agents import HARRY_BRAINS, VOLDEMORT_BRAINS
from horcrux.agents.gated import GatedHarry
from horcrux.agents.llm import LLMHarry, LLMVoldemort
from horcrux.models import Pass, Search
from horcrux.rules import CLASSIC
from horcrux.views import harry_view, voldemort_view
from horcrux_tools.local.model_server import ModelServer, running_model_server
from horcrux_tools.sim import play_game

pytestmark = pytest.mark.model

COMPRESSED_CALL_BUDGET = 300
"""The most tokens a compressed-tier call may cost by the model's own count (system, tool
schema and context together)."""


@pytest.fixture(scope="module")
def server() -> Iterator[ModelServer]:
    with running_model_server(port=0, threads=1) as running:
        yield running


@pytest.fixture
def local(server: ModelServer, monkeypatch: pytest.MonkeyPatch) -> ModelServer:
    monkeypatch.setenv("HORCRUX_LOCAL_MODEL_URL", server.base_url)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    return server


def test_a_whole_game_of_llm_local_is_played_by_the_model(local: ModelServer) -> None:
    result = play_game(CLASSIC, 5, "llm:local", "reference", keep_events=True)
    decisions = result.decisions
    llm = [d for d in decisions if d.source == "llm"]
    assert decisions and len(llm) >= 0.8 * len(decisions)  # the model, not the fallback
    bad = [d for d in decisions if d.fallback_reason in ("unparsable", "illegal")]
    assert len(bad) <= 0.1 * len(decisions)
    assert result.events is not None and len(result.events) > 1  # every move was applied
    for d in llm:
        assert d.trace is not None and d.trace.llm_move == d.trace.played
        assert d.trace.tool == "candidates" and d.trace.played in d.trace.offered
        assert d.latency_ms > 0 and d.tokens_out > 0
        assert d.context_tokens < d.tokens_in <= COMPRESSED_CALL_BUDGET
    assert result.brain_stats["backend"] == "local" and result.brain_stats["cost_usd"] == 0.0


def test_the_same_state_gets_the_same_answer(local: ModelServer) -> None:
    state, _ = engine.new_game(CLASSIC, 11)
    state, _ = engine.apply(state, Search(location="azkaban"))
    state, _ = engine.apply(state, Pass())
    view = harry_view(state)
    moves = []
    for _ in range(2):
        brain = HARRY_BRAINS.create("llm:local", CLASSIC)
        moves.append(brain.decide(view, rng.stream(11, "harry", view.turn)))
        assert brain.decisions[-1].source == "llm"  # type: ignore[attr-defined]
    assert moves[0] == moves[1]  # greedy decoding: a game is reproducible


def test_the_full_and_narrative_tiers_cost_more_than_the_compressed_budget(
    local: ModelServer,
) -> None:
    state, _ = engine.new_game(CLASSIC, 7)
    for loc in ("azkaban", "hogwarts", "the-burrow"):
        state, _ = engine.apply(state, Search(location=loc))
        state, _ = engine.apply(state, Pass())
    view = harry_view(state)
    used = {}
    for tier in ("compressed", "full", "narrative"):
        brain = HARRY_BRAINS.create("llm:local", CLASSIC, settings={"tier": tier})
        assert isinstance(brain, LLMHarry)
        brain.decide(view, random.Random(0))
        record = brain.decisions[-1]
        assert record.source == "llm", record.fallback_reason
        assert record.trace is not None
        assert record.trace.tool == ("candidates" if tier == "compressed" else "legal")
        used[tier] = record.tokens_in
    assert used["compressed"] <= COMPRESSED_CALL_BUDGET < min(used["full"], used["narrative"])


def test_gated_local_calls_the_model_in_its_upper_tiers(local: ModelServer) -> None:
    state, _ = engine.new_game(CLASSIC, 2)
    brain = HARRY_BRAINS.create("gated:local", CLASSIC)
    assert isinstance(brain, GatedHarry) and brain.llm is not None
    for _ in range(6):
        if state.over:
            break
        if state.phase == "harry":
            move = brain.decide(harry_view(state), rng.stream(2, "harry", state.turn))
            state, _ = engine.apply(state, move)
        else:
            state, _ = engine.apply(state, Pass())
    upper = [d for d in brain.decisions if d.tier != "zero"]
    assert upper and all(d.source == "llm" for d in upper)  # the first turns are unsure
    assert brain.stats()["notes"] == []


def test_a_local_voldemort_moves_legally(local: ModelServer) -> None:
    state, _ = engine.new_game(CLASSIC, 4)
    state, _ = engine.apply(state, Search(location=state.horcruxes[0]))
    brain = VOLDEMORT_BRAINS.create("llm:local", CLASSIC)
    assert isinstance(brain, LLMVoldemort)
    move = brain.decide(voldemort_view(state), random.Random(0))
    engine.apply(state, move)  # raises if illegal
    record = brain.decisions[-1]
    assert record.tokens_in > 0 and record.latency_ms > 0
    assert record.source == "llm" or record.fallback_reason == "illegal"
