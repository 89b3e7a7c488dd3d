"""Backend profiles, the candidates tool, whole-prompt counts and decision traces, through
the real anthropic SDK against the local fake Messages endpoint (the failure paths and the
exact requests); tests/system/test_llm_local.py drives a real local model."""

from __future__ import annotations

import json
import os
import random
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_anthropic import FakeAnthropic, Reply, serve, text_reply, tool_reply

from horcrux import engine
from horcrux.agents import HARRY_BRAINS, VOLDEMORT_BRAINS
from horcrux.agents.candidates import (
    candidate_moves,
    move_label,
    parse_candidate,
    parse_label,
    planner_candidates,
)
from horcrux.agents.gated import GatedHarry
from horcrux.agents.legal import UnparsableMove
from horcrux.agents.llm import LLMHarry, LLMVoldemort
from horcrux.agents.llm_config import (
    DEFAULT_LOCAL_URL,
    LOCAL_PREFILL,
    LLMConfig,
    LLMUnavailable,
    parse_llm_param,
)
from horcrux.agents.planner import PlannerHarry
from horcrux.models import Ally, Attack, Pass, PlantDecoy, Relocate, Search
from horcrux.rules import CLASSIC
from horcrux.views import HarryView, harry_view
from horcrux_tools.evaluation import llm_experiment as experiment
from horcrux_tools.evaluation.llm_report import render_section


@pytest.fixture(autouse=True)
def no_real_api(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-the-real-key")  # must never reach local
    monkeypatch.delenv("HORCRUX_LLM_MODEL", raising=False)
    monkeypatch.delenv("HORCRUX_LOCAL_MODEL", raising=False)
    monkeypatch.delenv("HORCRUX_LOCAL_MODEL_PREFILL", raising=False)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{port}")


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeAnthropic]:
    with serve() as server:
        monkeypatch.setenv("HORCRUX_LOCAL_MODEL_URL", server.url)
        yield server


def played_view(seed: int = 3, harry_turns: int = 6) -> HarryView:
    """Harry's view after `harry_turns` planner turns against a passing Voldemort."""
    state, _ = engine.new_game(CLASSIC, seed)
    planner = PlannerHarry(CLASSIC)
    while state.turn <= harry_turns:
        if state.phase == "harry":
            move: Any = planner.decide(harry_view(state), random.Random(0))
        else:
            move = Pass()
        state, _ = engine.apply(state, move)
    return harry_view(state)


def last_user(body: dict[str, Any]) -> str:
    users = [m for m in body["messages"] if m["role"] == "user"]
    content = users[-1]["content"]
    return content if isinstance(content, str) else "".join(p["text"] for p in content)


# ---------------------------------------------------------------- profiles
def test_spec_params_name_a_backend_and_a_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HORCRUX_LOCAL_MODEL_URL", "http://127.0.0.1:9999")
    local = parse_llm_param("local")
    assert local.backend.name == "local" and local.backend.base_url == "http://127.0.0.1:9999"
    assert not local.backend.requires_key and local.backend.prefill == LOCAL_PREFILL
    assert local.model == "smollm2-135m-instruct" and local.cost(10**6, 10**6) == 0.0
    assert parse_llm_param("local:qwen2.5-7b").model == "qwen2.5-7b"
    claude = parse_llm_param("anthropic:claude-sonnet-4-5")
    assert claude.backend.name == "anthropic" and claude.backend.requires_key
    assert claude.model == "claude-sonnet-4-5" and claude.backend.prefill is None
    assert parse_llm_param("claude-opus-4-5").model == "claude-opus-4-5"
    assert parse_llm_param(None).model == "claude-haiku-4-5"
    monkeypatch.delenv("HORCRUX_LOCAL_MODEL_URL")
    assert parse_llm_param("local").backend.base_url == DEFAULT_LOCAL_URL
    monkeypatch.setenv("HORCRUX_LOCAL_MODEL_PREFILL", "")
    assert parse_llm_param("local").backend.prefill is None  # a model that needs none
    with pytest.raises(LLMUnavailable, match="no price for model 'gpt-x'"):
        HARRY_BRAINS.create("llm:gpt-x", CLASSIC)  # an unknown model is refused, not free


def test_the_local_backend_sends_prefill_stop_and_greedy_sampling_never_the_claude_key(
    fake: FakeAnthropic,
) -> None:
    view = played_view()
    brain = HARRY_BRAINS.create("llm:local", CLASSIC)
    assert isinstance(brain, LLMHarry)
    offered = planner_candidates(brain.fallback, view)[0]  # type: ignore[arg-type]
    fake.script(tool_reply({"move": move_label(offered[-1])}, usage=(40, 38)))
    move = brain.decide(view, random.Random(0))
    assert move == offered[-1]
    sent = fake.requests[0]
    # ANTHROPIC_API_KEY is set, and never sent to another endpoint
    assert not any("sk-ant-the-real-key" in v for v in sent.headers.values())
    assert "local" in (sent.headers.get("x-api-key", "") + sent.headers.get("authorization", ""))
    assert sent.body["messages"][-1] == {"role": "assistant", "content": LOCAL_PREFILL}
    assert sent.body["stop_sequences"] == ["</tool_call>"]
    assert sent.body["temperature"] == 0.0
    assert sent.body["model"] == "smollm2-135m-instruct"
    record = brain.decisions[-1]
    assert record.cost_usd == 0.0 and record.source == "llm"
    assert brain.stats()["backend"] == "local"


def test_the_anthropic_backend_sends_no_prefill_and_needs_a_key(
    fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", fake.url)
    fake.script(tool_reply({"move": {"type": "search", "location": "azkaban"}}))
    brain = HARRY_BRAINS.create("llm:anthropic:claude-haiku-4-5", CLASSIC)
    brain.decide(harry_view(engine.new_game(CLASSIC, 1)[0]), random.Random(0))
    body = fake.requests[0].body
    assert [m["role"] for m in body["messages"]] == ["user"]
    assert "stop_sequences" not in body and "temperature" not in body
    headers = fake.requests[0].headers
    assert "sk-ant-the-real-key" in headers.get("x-api-key", "") + headers.get("authorization", "")
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    with pytest.raises(LLMUnavailable, match="llm:local"):
        HARRY_BRAINS.create("llm:anthropic", CLASSIC)


def test_the_whole_prompt_is_the_models_count_with_its_cache(fake: FakeAnthropic) -> None:
    body = tool_reply({"move": "x"}).body
    assert body is not None
    body = {
        **body,
        "usage": {"input_tokens": 7, "cache_read_input_tokens": 230, "output_tokens": 38},
    }
    view = played_view()
    brain = HARRY_BRAINS.create("llm:local", CLASSIC)
    assert isinstance(brain, LLMHarry)
    offered = planner_candidates(brain.fallback, view)[0]  # type: ignore[arg-type]
    body["content"][0]["input"] = {"move": move_label(offered[0])}
    fake.script(Reply(body=body))
    brain.decide(view, random.Random(0))
    record = brain.decisions[-1]
    assert (record.tokens_in, record.tokens_out) == (237, 38)
    assert record.trace is not None and record.trace.tokens_cached == 230
    assert record.context_tokens < record.tokens_in


# ---------------------------------------------------------------- candidates
def test_candidates_hold_the_planners_move_in_a_fixed_order_not_its_preference() -> None:
    view = played_view()
    planner = PlannerHarry(CLASSIC)
    moves, choice = planner_candidates(planner, view)
    assert choice in moves and 3 <= len(moves) <= 6
    likely = planner.belief.top(1)[0][0]
    assert Attack(location=likely) in moves and Search(location=likely) in moves
    kinds = [m.ally if isinstance(m, Ally) else m.type for m in moves]
    order = ["search", "attack", "hermione", "ron", "dumbledore"]
    assert kinds == sorted(kinds, key=order.index)
    # the same candidates whichever move the planner prefers: its choice only joins the set
    m = {loc: 0.0 for loc in CLASSIC.locations}
    m["azkaban"] = 0.9
    info = {loc: 1.0 if loc == "hogwarts" else 0.0 for loc in CLASSIC.locations}
    a = candidate_moves(view, m, info, Search(location="azkaban"))
    b = candidate_moves(view, m, info, Attack(location="azkaban"))
    assert a == b and a[0] == Search(location="hogwarts")  # board order, not preference
    assert candidate_moves(view, m, info, Search(location="the-burrow"), limit=2)[0] == Search(
        location="the-burrow"
    )


def test_a_candidate_reply_must_name_an_offered_move() -> None:
    view = played_view()
    moves = planner_candidates(PlannerHarry(CLASSIC), view)[0]
    label = move_label(moves[0])
    assert parse_candidate({"move": label.upper()}, view, moves) == moves[0]
    not_offered = next(
        Search(location=loc) for loc in CLASSIC.locations if Search(location=loc) not in moves
    )
    with pytest.raises(UnparsableMove, match="was not offered"):
        parse_candidate({"move": move_label(not_offered)}, view, moves)
    for bad in ({"move": 3}, {"moves": label}, "search Hogwarts", {"move": "fly Hogwarts"}):
        with pytest.raises(UnparsableMove):
            parse_candidate(bad, view, moves)
    assert parse_label("ron Forest+Shack", CLASSIC.locations) == Ally(
        ally="ron", locations=("forbidden-forest", "shrieking-shack")
    )
    assert move_label(Relocate(from_location="azkaban", to_location="hogwarts")) == (
        "relocate Azkaban>Hogwarts"
    )
    assert move_label(PlantDecoy(location="the-burrow")) == "plant_decoy Burrow"


def test_the_compressed_call_is_short_and_the_full_tier_offers_every_legal_move(
    fake: FakeAnthropic,
) -> None:
    view = played_view()
    fake.responder = lambda body: tool_reply(
        {"move": body["tools"][0]["input_schema"]["properties"]["move"].get("enum", ["?"])[0]}
        if body["tools"][0]["input_schema"]["properties"]["move"].get("type") == "string"
        else {"move": {"type": "search", "location": "hogwarts"}}
    )
    compressed = HARRY_BRAINS.create("llm:local", CLASSIC)
    full = HARRY_BRAINS.create("llm:local", CLASSIC, settings={"tier": "full"})
    compressed.decide(view, random.Random(0))
    full.decide(view, random.Random(0))
    short, long = fake.requests[0].body, fake.requests[1].body
    assert short["tools"][0]["input_schema"]["properties"]["move"]["type"] == "string"
    assert "anyOf" in long["tools"][0]["input_schema"]["properties"]["move"]
    assert len(json.dumps(short["tools"]) + short["system"]) * 3 < len(
        json.dumps(long["tools"]) + long["system"]
    )
    assert "Likely:" in last_user(short) and "Recent signals" in last_user(long)
    # with compressed_tool="legal" the compressed tier offers every legal move again
    config = LLMConfig.for_backend("local").model_copy(update={"compressed_tool": "legal"})
    HARRY_BRAINS.create("llm:local", CLASSIC, settings={"config": config}).decide(
        view, random.Random(0)
    )
    assert fake.requests[2].body["tools"] == long["tools"]


# ---------------------------------------------------------------- traces
def test_a_trace_keeps_what_was_sent_and_said_and_the_planners_move(fake: FakeAnthropic) -> None:
    view = played_view()
    brain = HARRY_BRAINS.create("llm:local", CLASSIC)
    assert isinstance(brain, LLMHarry)
    moves, choice = planner_candidates(PlannerHarry(CLASSIC), view)
    other = next(m for m in moves if m != choice)
    fake.script(tool_reply({"move": move_label(other)}), text_reply("I think Hogwarts."))
    brain.decide(view, random.Random(0))
    brain.decide(view, random.Random(0))
    ok, failed = (d.trace for d in brain.decisions[-2:])
    assert ok is not None and failed is not None
    assert ok.tool == "candidates" and ok.offered == tuple(move_label(m) for m in moves)
    assert ok.llm_move == ok.played == move_label(other)
    assert ok.planner_move == move_label(choice) and ok.prefill == LOCAL_PREFILL
    assert ok.prompt == last_user(fake.requests[0].body)
    assert ok.system == fake.requests[0].body["system"]
    assert json.loads(ok.reply)["input"] == {"move": move_label(other)}
    assert failed.llm_move is None and failed.reply == "I think Hogwarts."
    # the planner's move was played instead: its decision with the stream the brain got
    # (the default planner randomises from Harry's private stream)
    assert failed.played == move_label(PlannerHarry(CLASSIC).decide(view, random.Random(0)))
    assert brain.decisions[-1].fallback_reason == "unparsable"


def test_tracing_can_be_turned_off(fake: FakeAnthropic) -> None:
    config = LLMConfig.for_backend("local").model_copy(update={"trace": False})
    fake.script(text_reply())
    brain = HARRY_BRAINS.create("llm:local", CLASSIC, settings={"config": config})
    brain.decide(played_view(), random.Random(0))
    assert brain.decisions[-1].trace is None


# ---------------------------------------------------------------- gated and Voldemort
def test_gated_local_calls_the_model_without_any_key(
    fake: FakeAnthropic, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    brain = HARRY_BRAINS.create("gated:local", CLASSIC)
    assert isinstance(brain, GatedHarry) and brain.llm is not None
    assert brain.llm.config.backend.name == "local"
    assert brain.stats()["notes"] == []
    assert HARRY_BRAINS.create("gated", CLASSIC).llm is None  # type: ignore[attr-defined]


def test_a_local_voldemort_plays_through_the_same_profile(fake: FakeAnthropic) -> None:
    from horcrux.views import voldemort_view

    state, _ = engine.new_game(CLASSIC, 2)
    state, _ = engine.apply(state, Search(location="azkaban"))
    brain = VOLDEMORT_BRAINS.create("llm:local", CLASSIC)
    assert isinstance(brain, LLMVoldemort)
    fake.script(tool_reply({"move": {"type": "pass"}}))
    assert brain.decide(voldemort_view(state), random.Random(0)) == Pass()
    assert fake.requests[0].body["messages"][-1]["content"] == LOCAL_PREFILL
    trace = brain.decisions[-1].trace
    assert trace is not None and trace.played == "pass" and trace.planner_move is None


# ---------------------------------------------------------------- the experiment's figures
def test_the_line_fit_and_its_predictions() -> None:
    xs = [100.0, 500.0, 1000.0, 2000.0]
    a, b = experiment.fit_line(xs, [0.5 + 0.004 * x for x in xs])
    assert a == pytest.approx(0.5) and b == pytest.approx(0.004)
    fit = experiment.latency_fit([(int(x) + 50, 50, 30, 0.5 + 0.004 * x) for x in xs])
    assert fit["predict_s"]["6000"] == pytest.approx(0.5 + 24.0)
    assert fit["tokens_max"] == 2000


def answer(
    context: str, llm: str | None, planner: str, top: str, outcome: str
) -> experiment.Answer:
    return experiment.Answer(context, 1, 3, outcome, llm, planner, top, 240, 100, 38, 40, 1.5)


def test_state_figures_count_agreement_top_picks_and_outcomes() -> None:
    answers = [
        answer("compressed", "search Hogwarts", "search Hogwarts", "Azkaban", "llm"),
        answer("compressed", "attack Azkaban", "search Hogwarts", "Azkaban", "llm"),
        answer("compressed", None, "search Hogwarts", "Azkaban", "unparsable"),
        answer("compressed", "ron Azkaban+Forest", "search Forest", "Azkaban", "llm"),
        answer("narrative", "search Shack", "search Forest", "Azkaban", "llm"),
    ]
    s = experiment.summarise_states(answers)
    assert s["compressed"]["states"] == 4
    assert s["compressed"]["agreement"] == 0.25
    assert s["compressed"]["top_location"] == 0.5
    assert s["compressed"]["outcomes"]["unparsable"] == 0.25
    assert s["narrative"]["agreement"] == 0.0 and "full" not in s


def test_an_interrupted_experiment_resumes_from_its_checkpoint(tmp_path: Path) -> None:
    done = [
        ("sweep:0", "sweep", [900, 0, 40, 5.0]),
        ("game:compressed:0", "game", {
            "label": "compressed", "seed": 0, "win": True, "turns": 20, "destroyed": 3,
            "failures": {"stale": 0, "retrieval": 1, "overload": 0, "decay": 0},
            "tiers": ["compressed"] * 20, "calls": [[240, 100, 38, 1.2, "llm"]] * 20,
        }),
    ]  # fmt: skip
    checkpoint = tmp_path / "run.jsonl"
    checkpoint.write_text("".join(json.dumps(list(d)) + "\n" for d in done))
    jobs: list[experiment.Job] = [
        ("sweep:0", "sweep", "classic", None),
        ("game:compressed:0", "game", "classic", None),
    ]
    seen: list[tuple[int, int]] = []
    results = experiment.run_jobs(
        jobs, [None], checkpoint=checkpoint, on_result=lambda d, t: seen.append((d, t))
    )
    assert seen == [(2, 2)]  # nothing was run again: no worker could have answered None jobs
    answers, games, sweep = experiment.collect(results)
    assert answers == [] and sweep == [(900, 0, 40, 5.0)]
    data = experiment.build(answers, games, sweep, meta={
        "rules": "classic", "voldemort": "reference", "seed": 0, "state_seed": 9, "games": 1,
        "states": 0, "legal_states": 0, "workers": 1, "seconds": 61.0, "backend": "local",
        "model": "m", "price": {"input_per_mtok": 0.0, "output_per_mtok": 0.0},
    })  # fmt: skip
    assert data["games"]["compressed"]["win_rate"] == 1.0
    assert data["games"]["compressed"]["failures_per_game"]["retrieval"] == 1.0
    assert data["latency"]["points"] == 21
    md = "\n".join(render_section(data, ["llm-latency.png"]))
    assert "| `llm (compressed)` | 1 | 100.0%" in md
    assert "its cost is 0" in md and "![llm-latency.png](img/llm-latency.png)" in md
    assert "The 21 model calls took 29 s in all" in md  # 20 of 1.2 s, one of 5 s
    only = experiment.report_from_checkpoint(
        checkpoint,
        rules_name="classic",
        voldemort="reference",
        seed=0,
        states=0,
        legal_states=None,
        workers=1,
    )
    assert only["meta"]["games"] == 1 and only["meta"]["from_checkpoint"]
    assert only["games"] == data["games"] and only["latency"] == data["latency"]


def test_replay_shows_each_llm_decision_and_play_refuses_trace_without_local(
    fake: FakeAnthropic, capsys: pytest.CaptureFixture[str]
) -> None:
    from fake_anthropic import schema_responder

    from horcrux_tools.cli import main

    fake.responder = schema_responder(seed=4)
    assert main(["replay", "--seed", "3", "--harry", "llm:local"]) == 0
    out = capsys.readouterr().out
    assert "-- turn 1, tier compressed: the model's move" in out
    assert "| Turn 1/50, 7 attacks, 3 Horcruxes left." in out
    assert out.count("offered: ") == out.count("model said: ") > 1
    assert "the planner: search" in out
    assert main(["replay", "--seed", "3", "--harry", "llm:local", "--no-trace"]) == 0
    assert "model said" not in capsys.readouterr().out
    assert main(["play", "--trace", "--api", "http://127.0.0.1:1"]) == 2
    assert "--trace needs --local" in capsys.readouterr().err


def test_an_on_decision_callback_sees_every_llm_record(fake: FakeAnthropic) -> None:
    from fake_anthropic import schema_responder

    seen: list[Any] = []
    fake.responder = schema_responder(seed=1)
    brain = HARRY_BRAINS.create("llm:local", CLASSIC, settings={"on_decision": seen.append})
    view = played_view()
    brain.decide(view, random.Random(0))
    brain.decide(view, random.Random(1))
    assert seen == brain.decisions[-2:]  # type: ignore[attr-defined]


def test_the_functions_model_setting_names_the_claude_model(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HORCRUX_LLM_MODEL", "claude-opus-4-1")  # read by no brain given a model
    brain = HARRY_BRAINS.create("llm", CLASSIC, settings={"model": "claude-sonnet-4-5"})
    assert isinstance(brain, LLMHarry) and brain.config.model == "claude-sonnet-4-5"
    local = HARRY_BRAINS.create("llm:local", CLASSIC, settings={"model": "claude-sonnet-4-5"})
    assert isinstance(local, LLMHarry) and local.config.backend.name == "local"


def test_play_local_trace_gets_the_ai_seats_decisions_as_they_are_made(
    fake: FakeAnthropic,
) -> None:
    import threading

    from fake_anthropic import schema_responder

    from horcrux_tools.local.client import HorcruxClient
    from horcrux_tools.local.server import start_stack

    fake.responder = schema_responder(seed=2)
    seen: list[Any] = []
    first = threading.Event()

    def on_decision(record: Any) -> None:
        seen.append(record)
        first.set()

    saved = dict(os.environ)  # the local stack sets its environment for the process
    try:
        with start_stack("127.0.0.1", 0, on_decision=on_decision) as stack:
            stack.serve_in_thread()
            client = HorcruxClient(stack.url, timeout_s=20)
            client.create_game({"kind": "ai", "brain": "llm:local"}, {"kind": "human"}, seed=1)
            assert first.wait(timeout=60)  # AI Harry moves first, in the stack's worker
    finally:
        os.environ.clear()
        os.environ.update(saved)
    record = seen[0]
    assert record.turn == 1 and record.source == "llm" and record.trace is not None
    assert record.trace.played in record.trace.offered


def test_simulate_reports_the_llm_calls_by_the_models_own_count(
    fake: FakeAnthropic, capsys: pytest.CaptureFixture[str]
) -> None:
    from fake_anthropic import schema_responder

    from horcrux_tools.cli import main

    fake.responder = schema_responder(seed=3, usage=(230, 38))
    assert main(["simulate", "--harry", "llm:local", "--games", "1", "--json"]) == 0
    llm = json.loads(capsys.readouterr().out)["decisions"]["llm"]
    assert llm["calls"] > 0 and llm["from_model"] == 1.0 and llm["unparsable_or_illegal"] == 0
    assert llm["prompt_tokens_median"] == 230 and llm["output_tokens_median"] == 38
    assert 0 < llm["context_tokens_median"] < 230 and llm["latency_ms_median"] > 0
    assert main(["simulate", "--harry", "llm:local", "--games", "1"]) == 0
    assert "100% the model's move" in capsys.readouterr().out


def test_chance_levels_are_a_uniform_pick_among_the_offers() -> None:
    levels = experiment.chance_levels("classic", "reference", 100_000, 5)
    states = experiment.decision_states("classic", "reference", 100_000, 5)
    assert sorted(levels) == sorted((s.seed, s.turn) for s in states)
    for s in states:
        moves, _ = planner_candidates(PlannerHarry(CLASSIC), experiment.view_of("classic", s))
        agree, top = levels[(s.seed, s.turn)]
        assert agree == 1 / len(moves)
        assert top >= 2 / len(moves)  # an attack and a search of the likeliest location
