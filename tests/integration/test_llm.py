"""The `llm` brains through the real anthropic SDK against a local fake Messages endpoint."""

from __future__ import annotations

import random
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest
from conftest import make_state
from fake_anthropic import (
    HANG,
    FakeAnthropic,
    Reply,
    schema_responder,
    serve,
    status_reply,
    text_reply,
    tool_reply,
)

from horcrux import engine
from horcrux.agents import HARRY_BRAINS, VOLDEMORT_BRAINS
from horcrux.agents.base import HarryMove
from horcrux.agents.legal import harry_tool_schema, voldemort_tool_schema
from horcrux.agents.llm import LLMHarry, LLMVoldemort
from horcrux.agents.llm_config import LLMConfig, LLMUnavailable, Price
from horcrux.agents.llm_prompts import render_harry_view
from horcrux.agents.planner import PlannerHarry
from horcrux.agents.voldemort import ReferenceVoldemort
from horcrux.belief.bayes import BayesBelief
from horcrux.errors import HorcruxError
from horcrux.memory.context import build_context, render_compressed
from horcrux.memory.tokens import estimate_tokens
from horcrux.models import (
    GameStarted,
    HarryMoved,
    PlantDecoy,
    Relocate,
    Search,
    VoldemortMoved,
)
from horcrux.rules import CLASSIC, STANDARD
from horcrux.views import HarryView, build_replay, harry_view, voldemort_view
from horcrux_tools import sim

PRICED = LLMConfig(
    model="claude-test",
    prices={"claude-test": Price(input_per_mtok=3.0, output_per_mtok=15.0)},
    max_tokens=200,
    timeout_margin_s=0.1,
)
DEADLINE = 1.0
SLACK = 0.3  # scheduling slack on top of the deadline


@pytest.fixture(autouse=True)
def no_real_api(monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing here may reach the real API: no key, and a base URL nobody listens on."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN", raising=False)
    monkeypatch.delenv("HORCRUX_LLM_MODEL", raising=False)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{closed_port()}")


@pytest.fixture
def fake() -> Iterator[FakeAnthropic]:
    with serve() as server:
        yield server


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def sdk(fake: FakeAnthropic) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="test", base_url=fake.url)


class FixedHarry:
    """A fallback whose move is easy to recognise."""

    name = "fixed"

    def __init__(self) -> None:
        self.calls = 0

    def decide(self, view: HarryView, rng: random.Random) -> HarryMove:
        self.calls += 1
        return Search(location="the-burrow")


def context(view: HarryView) -> str:
    return f"CONTEXT turn={view.turn} attacks={view.attacks_left}"


def harry(fake: FakeAnthropic, **kwargs: Any) -> LLMHarry:
    kwargs.setdefault("config", PRICED)
    kwargs.setdefault("context_provider", context)
    kwargs.setdefault("fallback", FixedHarry())
    kwargs.setdefault("deadline_s", DEADLINE)
    return LLMHarry(STANDARD, client=sdk(fake), **kwargs)


def built_client(brain: LLMHarry) -> object:
    return brain.llm._client


def search(location: str) -> dict[str, Any]:
    return {"move": {"type": "search", "location": location}}


# ---------------------------------------------------------------- the happy path
def test_tool_use_is_parsed_and_the_request_is_what_we_built(fake: FakeAnthropic) -> None:
    fake.script(
        tool_reply(search("hogsmeade"), usage=(321, 17)),
        tool_reply({"move": {"type": "ally", "ally": "ron", "locations": ["azkaban", "hogwarts"]}}),
    )
    brain = harry(fake)
    view = harry_view(make_state(STANDARD))
    assert brain.decide(view, random.Random(0)) == Search(location="hogsmeade")
    move = brain.decide(view, random.Random(0))
    assert move.type == "ally" and move.locations == ("azkaban", "hogwarts")

    sent = fake.requests[0]
    assert sent.path == "/v1/messages"
    assert sent.body["model"] == "claude-test"
    assert sent.body["max_tokens"] == 200
    assert sent.body["tools"] == [harry_tool_schema(view)]
    assert sent.body["tool_choice"] == {
        "type": "tool",
        "name": "make_move",
        "disable_parallel_tool_use": True,
    }
    assert sent.prompt == context(view) == "CONTEXT turn=1 attacks=7"
    assert "Horcrux" in sent.body["system"]
    assert sent.headers["x-stainless-retry-count"] == "0"

    record = brain.decisions[0]
    assert record.source == "llm" and record.fallback_reason is None
    assert (record.tokens_in, record.tokens_out) == (321, 17)
    assert record.cost_usd == (321 * 3.0 + 17 * 15.0) / 1e6
    assert record.turn == 1 and record.latency_ms > 0
    stats = brain.stats()
    assert stats["decisions"] == 2 and stats["llm_moves"] == 2 and stats["fallbacks"] == {}
    assert stats["tokens_in"] == 321 + 120 and stats["tokens_out"] == 17 + 30
    assert stats["cost_usd"] == pytest.approx(((321 + 120) * 3.0 + (17 + 30) * 15.0) / 1e6)


def prompt_after_a_decoy(brain: LLMHarry, fake: FakeAnthropic) -> tuple[HarryView, str]:
    """Harry searched Azkaban and Voldemort planted a decoy at Hogsmeade: Harry's view and
    the prompt `brain` sent to the fake deciding the next move."""
    state = make_state(CLASSIC)
    state, _ = engine.apply(state, Search(location="azkaban"))
    state, _ = engine.apply(state, PlantDecoy(location="hogsmeade"))
    view = harry_view(state)
    brain.decide(view, random.Random(0))
    return view, fake.requests[0].prompt


def test_default_context_is_the_l1_working_memory_of_the_planners_map(
    fake: FakeAnthropic,
) -> None:
    fake.script(tool_reply(search("hogwarts")))
    brain = LLMHarry(CLASSIC, client=sdk(fake), config=PRICED)
    assert isinstance(brain.fallback, PlannerHarry)
    view, prompt = prompt_after_a_decoy(brain, fake)
    belief = BayesBelief(CLASSIC)
    belief.update(view.history[0])
    assert prompt == render_compressed(build_context(view, belief))
    assert estimate_tokens(prompt) <= 64
    assert brain.decisions[-1].tier == "compressed"


def test_a_short_rendering_of_the_view_is_available(fake: FakeAnthropic) -> None:
    fake.script(tool_reply(search("hogwarts")))
    brain = LLMHarry(CLASSIC, client=sdk(fake), config=PRICED, context_provider=render_harry_view)
    view, prompt = prompt_after_a_decoy(brain, fake)
    assert prompt == render_harry_view(view)
    assert "Turn 2/50" in prompt and "t1 search: search azkaban" in prompt
    assert "hogsmeade" not in prompt  # Voldemort's decoy is not Harry's to see
    assert len(prompt) < 400


# ---------------------------------------------------------------- every fallback
ILLEGAL = tool_reply({"move": {"type": "attack", "location": "hogwarts"}})  # no attacks left
FALLBACKS: list[tuple[str, Reply, str]] = [
    ("illegal", ILLEGAL, "illegal"),
    ("unknown-location", tool_reply(search("narnia")), "illegal"),
    ("no-tool-use", text_reply(), "unparsable"),
    ("malformed-input", tool_reply({"where": "hogwarts"}), "unparsable"),
    ("wrong-tool", tool_reply(search("hogwarts"), name="other_tool"), "unparsable"),
    ("empty-json", Reply(body={}), "unparsable"),
    ("not-json", Reply(raw=b"<html>oops</html>"), "unparsable"),
    ("hang", HANG, "timeout"),
    ("429", status_reply(429, retry_after="30"), "rate_limited"),
    ("500", status_reply(500), "server_error"),
    ("529", status_reply(529), "server_error"),
    ("401", status_reply(401), "no_key"),
    ("400", status_reply(400), "client_error"),
]


@pytest.mark.parametrize(
    ("reply", "reason"), [f[1:] for f in FALLBACKS], ids=[f[0] for f in FALLBACKS]
)
def test_failures_fall_back_within_the_deadline(
    fake: FakeAnthropic, reply: Reply, reason: str
) -> None:
    fake.script(reply)
    fallback = FixedHarry()
    brain = harry(fake, fallback=fallback)
    view = harry_view(make_state(STANDARD, attacks_left=0))
    start = time.monotonic()
    move = brain.decide(view, random.Random(0))
    elapsed = time.monotonic() - start
    assert elapsed < DEADLINE + SLACK
    assert move == Search(location="the-burrow") and fallback.calls == 1
    record = brain.decisions[-1]
    assert record.source == "fallback" and record.fallback_reason == reason
    assert brain.stats()["fallbacks"] == {reason: 1}
    usage = (reply.body or {}).get("usage", {"input_tokens": 0, "output_tokens": 0})
    # a reply that came with usage is paid for, even when its move is not played
    assert (record.tokens_in, record.tokens_out) == (usage["input_tokens"], usage["output_tokens"])
    assert record.cost_usd == (record.tokens_in * 3.0 + record.tokens_out * 15.0) / 1e6


def test_rate_limit_with_a_long_retry_after_is_not_waited_for(fake: FakeAnthropic) -> None:
    fake.script(status_reply(429, retry_after="30"), tool_reply(search("hogwarts")))
    brain = harry(fake, deadline_s=5.0)
    start = time.monotonic()
    brain.decide(harry_view(make_state(STANDARD)), random.Random(0))
    assert time.monotonic() - start < 1.0
    assert len(fake.requests) == 1
    assert brain.decisions[-1].fallback_reason == "rate_limited"


def test_a_server_error_is_retried_when_the_deadline_allows(fake: FakeAnthropic) -> None:
    fake.script(status_reply(500), tool_reply(search("hogwarts")))
    brain = harry(fake, deadline_s=3.0)
    assert brain.decide(harry_view(make_state(STANDARD)), random.Random(0)) == Search(
        location="hogwarts"
    )
    assert len(fake.requests) == 2
    assert brain.decisions[-1].source == "llm"
    assert brain.stats()["api_errors"] == {"500": 1}


def test_connection_refused_falls_back(monkeypatch: pytest.MonkeyPatch) -> None:
    client = anthropic.Anthropic(api_key="test", base_url=f"http://127.0.0.1:{closed_port()}")
    brain = LLMHarry(STANDARD, client=client, config=PRICED, fallback=FixedHarry())
    start = time.monotonic()
    brain.decide(harry_view(make_state(STANDARD)), random.Random(0), deadline_s=DEADLINE)
    assert time.monotonic() - start < DEADLINE + SLACK
    assert brain.decisions[-1].fallback_reason == "connection"


def test_default_fallback_is_the_planner_and_gets_the_same_rng(fake: FakeAnthropic) -> None:
    fake.script(text_reply())
    brain = LLMHarry(STANDARD, client=sdk(fake), config=PRICED, deadline_s=DEADLINE)
    assert isinstance(brain.fallback, PlannerHarry)
    view = harry_view(make_state(STANDARD))
    expected = PlannerHarry(STANDARD).decide(view, random.Random(42))
    assert brain.decide(view, random.Random(42)) == expected


def test_deadline_from_a_callable_or_the_call_and_too_short_to_try(fake: FakeAnthropic) -> None:
    fake.script(HANG)
    remaining = [0.6]
    brain = harry(fake, deadline_s=lambda: remaining[0])
    view = harry_view(make_state(STANDARD))
    start = time.monotonic()
    brain.decide(view, random.Random(0))
    assert time.monotonic() - start < 0.6 + SLACK
    assert brain.decisions[-1].fallback_reason == "timeout"

    remaining[0] = 0.05  # less than the margin: no call at all
    before = len(fake.requests)
    brain.decide(view, random.Random(0))
    assert len(fake.requests) == before
    assert brain.decisions[-1].fallback_reason == "timeout"

    fake.script(tool_reply(search("azkaban")))  # the call's own deadline wins
    assert brain.decide(view, random.Random(0), deadline_s=2.0) == Search(location="azkaban")


# ---------------------------------------------------------------- configuration
def test_refuses_to_start_without_a_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(LLMUnavailable, match="needs ANTHROPIC_API_KEY; use the planner") as err:
        HARRY_BRAINS.create("llm", STANDARD)
    assert isinstance(err.value, HorcruxError) and err.value.code == "llm_unavailable"
    with pytest.raises(LLMUnavailable, match="needs ANTHROPIC_API_KEY; use the reference"):
        VOLDEMORT_BRAINS.create("llm", STANDARD)


def test_env_key_and_base_url_build_the_client_lazily_once(
    fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test-env")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
    fake.responder = schema_responder(seed=1)
    brain = HARRY_BRAINS.create("llm:claude-opus-4-1", STANDARD, settings={"deadline_s": DEADLINE})
    assert isinstance(brain, LLMHarry)
    assert built_client(brain) is None  # nothing built before the first decision
    view = harry_view(make_state(STANDARD))
    brain.decide(view, random.Random(0))
    client = built_client(brain)
    brain.decide(view, random.Random(0))
    assert built_client(brain) is client is not None
    assert [r.body["model"] for r in fake.requests] == ["claude-opus-4-1"] * 2
    assert fake.requests[0].headers["authorization"] == "Bearer sk-test-env"
    assert brain.stats()["llm_moves"] == 2


def test_model_from_env_and_unpriced_models_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HORCRUX_LLM_MODEL", "claude-opus-4-5")
    assert LLMConfig().model == "claude-opus-4-5"
    monkeypatch.delenv("HORCRUX_LLM_MODEL")
    assert LLMConfig().model == "claude-haiku-4-5"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    with pytest.raises(LLMUnavailable, match="no price for model 'mystery'"):
        HARRY_BRAINS.create("llm:mystery", STANDARD)


def test_importing_the_module_does_not_import_the_sdk() -> None:
    code = "import sys, horcrux.agents.llm; sys.exit('anthropic' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0


# ---------------------------------------------------------------- Voldemort
def test_voldemort_relocate_is_parsed(fake: FakeAnthropic) -> None:
    state = make_state(STANDARD, phase="voldemort")
    view = voldemort_view(state)
    fake.script(
        tool_reply(
            {"move": {"type": "relocate", "from_location": "azkaban", "to_location": "the-burrow"}}
        )
    )
    brain = LLMVoldemort(STANDARD, client=sdk(fake), config=PRICED, deadline_s=DEADLINE)
    move = brain.decide(view, random.Random(0))
    assert move == Relocate(from_location="azkaban", to_location="the-burrow")
    assert fake.requests[0].body["tools"] == [voldemort_tool_schema(view)]
    assert "azkaban" in fake.requests[0].prompt  # Voldemort's context holds the truth
    assert brain.decisions[-1].source == "llm"


def test_voldemort_illegal_relocate_falls_back_to_the_reference(fake: FakeAnthropic) -> None:
    state = make_state(STANDARD, seed=3)
    state, _ = engine.apply(state, Search(location="azkaban"))
    view = voldemort_view(state)
    fake.script(
        tool_reply(  # onto another Horcrux: occupied
            {"move": {"type": "relocate", "from_location": "azkaban", "to_location": "hogwarts"}}
        )
    )
    brain = LLMVoldemort(STANDARD, client=sdk(fake), config=PRICED, deadline_s=DEADLINE)
    assert isinstance(brain.fallback, ReferenceVoldemort)
    expected = ReferenceVoldemort(STANDARD).decide(view, random.Random(9))
    assert brain.decide(view, random.Random(9)) == expected
    assert brain.decisions[-1].fallback_reason == "illegal"


# ---------------------------------------------------------------- whole games
def test_a_whole_game_of_llm_harry_and_llm_voldemort_is_legal(fake: FakeAnthropic) -> None:
    fake.responder = schema_responder(seed=7, usage=(150, 25))
    rules = STANDARD.model_copy(update={"max_turns": 12})
    harry_brain = LLMHarry(rules, client=sdk(fake), config=PRICED, deadline_s=5.0)
    voldemort_brain = LLMVoldemort(rules, client=sdk(fake), config=PRICED, deadline_s=5.0)
    state, started = engine.new_game(rules, 11)
    events: list[GameStarted | HarryMoved | VoldemortMoved] = [started]
    while not state.over:
        event: HarryMoved | VoldemortMoved
        if state.phase == "harry":
            move = harry_brain.decide(harry_view(state), random.Random(state.turn))
            state, event = engine.apply(state, move)  # raises if illegal
        else:
            vmove = voldemort_brain.decide(voldemort_view(state), random.Random(state.turn))
            state, event = engine.apply(state, vmove)
        events.append(event)
    build_replay(events)  # re-checks every event through the engine
    harry_turns = sum(isinstance(e, HarryMoved) for e in events)
    assert [d.turn for d in harry_brain.decisions] == list(range(1, harry_turns + 1))
    assert all(d.source == "llm" for d in harry_brain.decisions + voldemort_brain.decisions)
    stats = harry_brain.stats()
    assert stats["tokens_in"] == 150 * harry_turns and stats["tokens_out"] == 25 * harry_turns
    assert len(fake.requests) == len(events) - 1


def test_sim_plays_the_registered_llm_brain_from_the_environment(
    fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
    fake.responder = schema_responder(seed=3)
    rules = CLASSIC.model_copy(update={"max_turns": 10})
    result = sim.play_game(rules, 5, "llm", "reference", keep_events=True)
    assert result.events is not None
    build_replay(result.events)
    assert result.brain_stats["brain"] == "llm"
    assert result.brain_stats["decisions"] == result.brain_stats["llm_moves"] > 0
    assert result.brain_stats["fallbacks"] == {}
